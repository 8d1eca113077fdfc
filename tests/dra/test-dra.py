#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scenario tests: the real `rdma-cdi dra` against the kubelet DRA double
(kubelet_dra_double.py, python3-grpcio) and the API-server double (apiserver_double.py,
HTTPS with a test CA).

  test-dra.py --rdma-cdi BIN --mksysfs mksysfs.py --proto-dir proto --hook HOOK SCENARIO

Each scenario builds its own fixture sysfs (mksysfs.py), API server, registry, plugin and
spec dirs and kubeconfig in a temp dir, runs the driver as a process and prints TAP. The
host's /var/run/cdi and /var/lib/kubelet are never touched (the podman scenario sees the
specs through a private mount namespace).
"""

import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import apiserver_double as asd  # noqa: E402
import kubelet_dra_double as kdd  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402
from rescan import RESCAN_WAIT, sleep_one_rescan  # noqa: E402
import spec_files  # noqa: E402
from spec_files import block_spec, write_foreign_spec  # noqa: E402
from metrics_scrape import (check_build, free_port, healthz_stuck, http_get, metric,  # noqa: E402
                            parse_exposition, series, settle)

PYTHON = "/usr/bin/python3"
DRIVER = "rdma.example"
NODE = "node-1"
KIND = "rdma.example/hca"
CLAIM_KIND = DRIVER + "/claim"
# The dgx fixture (mksysfs.py): 8 InfiniBand HCAs in pairs behind PCIe switches under the
# roots pci0000:17, :38, :97, :b7, and two RoCE functions; mlx5_9's port is DOWN.
DGX = {  # RDMA name: (PCI address, PCIe root, NUMA node, uverbs index)
    "mlx5_0": ("0000:1a:00.0", "pci0000:17", 0, 0),
    "mlx5_1": ("0000:1b:00.0", "pci0000:17", 0, 1),
    "mlx5_2": ("0000:3b:00.0", "pci0000:38", 0, 2),
    "mlx5_3": ("0000:3c:00.0", "pci0000:38", 0, 3),
    "mlx5_4": ("0000:9a:00.0", "pci0000:97", 1, 4),
    "mlx5_5": ("0000:9b:00.0", "pci0000:97", 1, 5),
    "mlx5_6": ("0000:ba:00.0", "pci0000:b7", 1, 6),
    "mlx5_7": ("0000:bb:00.0", "pci0000:b7", 1, 7),
    "mlx5_8": ("0000:5e:00.0", "pci0000:5d", 0, 8),
    "mlx5_9": ("0000:d8:00.0", "pci0000:d7", 1, 9),
}
IB = ["mlx5_%d" % i for i in range(8)]
ROCE = ["mlx5_8", "mlx5_9"]


def dev_name(rdma):
    """The DNS label of an HCA (inventory.h): its PCI address."""
    return "pci-" + DGX[rdma][0].replace(":", "-").replace(".", "-")


def cdi_id(rdma):
    return "%s=%s" % (KIND, DGX[rdma][0])


def result(rdma, request="nic", driver=DRIVER, pool=NODE):
    return {"request": request, "driver": driver, "pool": pool, "device": dev_name(rdma)}


def set_port_state(sysfs, dev, state):
    with open(os.path.join(sysfs, "class", "infiniband", dev, "ports", "1", "state"), "w") as f:
        f.write(state + "\n")


class Hca:
    """Takes one HCA out of the fixture and puts it back, as hot-unplug and re-plug do:
    its class entries vanish from sysfs and devtmpfs removes its device node."""

    def __init__(self, c, name):
        uverbs = "uverbs%d" % DGX[name][3]
        self.links = [os.path.join(c.sysfs, "class", "infiniband", name),
                      os.path.join(c.sysfs, "class", "infiniband_verbs", uverbs)]
        self.targets = [os.readlink(p) for p in self.links]
        self.node = os.path.join(c.dev, "infiniband", uverbs)
        st = os.stat(self.node)
        self.rdev, self.mode = st.st_rdev, st.st_mode

    def unplug(self):
        for p in self.links:
            os.unlink(p)
        os.unlink(self.node)

    def replug(self):
        for p, t in zip(self.links, self.targets):
            os.symlink(t, p)
        os.mknod(self.node, self.mode, self.rdev)


def write_kubeconfig(path, api, token_file=True):
    user = ("    tokenFile: %s\n" % api.token_file) if token_file else \
        ("    token: %s\n" % api.token)
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\n"
                "clusters:\n- name: double\n  cluster:\n    server: %s\n"
                "    certificate-authority: %s\n"
                "users:\n- name: driver\n  user:\n%s"
                "contexts:\n- name: double\n  context:\n    cluster: double\n"
                "    user: driver\n"
                "current-context: double\n" % (api.url, api.ca_path, user))


class Driver:
    """A real `rdma-cdi dra` process with the scenario's private dirs."""

    def __init__(self, c, extra=()):
        self.c = c
        self.log_path = os.path.join(c.work, "dra-%d.log" % time.monotonic_ns())
        self.argv = [c.args.rdma_cdi, "dra", "--node-name", NODE, "--kubeconfig", c.kubeconfig,
                     "--registry-dir", c.registry_dir, "--plugin-dir", c.plugin_dir,
                     "--spec-dir", c.spec_dir, "--sysfs-root", c.sysfs, "--dev-root", c.dev,
                     "--hook-path", c.args.hook, "--config", c.config] + list(extra)
        self.proc = None
        self.log = None

    def start(self, prefix=(), env=None):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(list(prefix) + self.argv, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        return self

    def log_text(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def wait_log(self, text, timeout=5.0, count=1):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_text().count(text) >= count:
                return True
            time.sleep(0.02)
        return False

    def wait(self, timeout=10.0):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.log = None

    def stop(self):
        rc = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.wait(10)
            if rc is None:
                self.proc.kill()
                self.proc.wait()
        elif self.proc:
            rc = self.proc.returncode
        if self.log:
            self.log.close()
            self.log = None
        return rc


class Ctx:
    """One scenario's world: fixture, API server, plugin watcher, driver."""

    def __init__(self, args, tap, profile="dgx"):
        self.args = args
        self.tap = tap
        tmp = os.path.realpath(tempfile.gettempdir())
        # The podman scenario hides /run and /etc behind private mounts: work elsewhere.
        if any(tmp == d or tmp.startswith(d + "/") for d in ("/run", "/etc")):
            tmp = "/var/tmp"
        self.work = tempfile.mkdtemp(prefix="rdma-cdi-dra-", dir=tmp)
        os.chmod(self.work, 0o755)
        self.sysfs = os.path.join(self.work, "sys")
        self.dev = os.path.join(self.work, "dev")
        subprocess.run([PYTHON, args.mksysfs, "build", profile, self.sysfs], check=True)
        subprocess.run([PYTHON, args.mksysfs, "mkdev", self.sysfs, self.dev], check=True)
        self.api = asd.ApiServer(os.path.join(self.work, "api")).start()
        self.kubeconfig = os.path.join(self.work, "kubeconfig")
        write_kubeconfig(self.kubeconfig, self.api)
        self.registry_dir = os.path.join(self.work, "kubelet", "plugins_registry")
        os.makedirs(self.registry_dir)
        self.plugin_dir = os.path.join(self.work, "kubelet", "plugins", DRIVER)
        self.spec_dir = os.path.join(self.work, "cdi")
        os.makedirs(self.spec_dir)
        self.config = os.path.join(self.work, "etc", "config.yaml")
        os.makedirs(os.path.dirname(self.config))
        open(self.config, "w").close()  # the defaults; never the host's file
        self.protos = kdd.load_protos(args.proto_dir)
        self.watcher = kdd.PluginWatcher(self.registry_dir, self.protos, driver=DRIVER).start()
        self.drivers = []
        self.clients = []
        self.n_reg = 0

    def driver(self, extra=(), start=True):
        d = Driver(self, extra)
        self.drivers.append(d)
        if start:
            d.start()
        return d

    def registered(self, timeout=10.0):
        self.n_reg += 1
        reg = self.watcher.wait_registrations(self.n_reg, timeout)
        if not self.tap.ok(reg is not None and reg.ok, "driver registered (%d)" % self.n_reg,
                           "%r\n%s" % (reg, self.log())):
            raise SystemExit(self.close())
        return reg

    def client(self, reg, version=None):
        cl = kdd.DRAClient(reg.info.endpoint, self.protos, version=version or reg.dra_version)
        self.clients.append(cl)
        return cl

    def health(self, reg, version="v1"):
        h = kdd.HealthStream(reg.info.endpoint, self.protos, version=version)
        self.clients.append(h)
        return h

    def devices(self):
        return self.api.devices(DRIVER, NODE)

    def wait_devices(self, pred, timeout=5.0):
        """Waits until pred(devices) holds; the devices then, or None."""
        deadline = time.monotonic() + timeout
        while True:
            devs = self.devices()
            if pred(devs):
                return devs
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def up(self, extra=(), n_devices=10):
        """Driver up, registered, its slices on the API server: (driver, reg, client)."""
        d = self.driver(extra)
        reg = self.registered()
        devs = self.wait_devices(lambda ds: len(ds) == n_devices, 10)
        if not self.tap.ok(devs is not None, "slices published (%d devices)" % n_devices,
                           "%s\n%s" % (sorted(self.devices()), self.log())):
            raise SystemExit(self.close())
        return d, reg, self.client(reg)

    def claim_spec(self, uid):
        return os.path.join(self.spec_dir, "%s-claim_%s.json" % (DRIVER, uid))

    def checkpoint(self):
        try:
            with open(os.path.join(self.plugin_dir, "checkpoint.json")) as f:
                return f.read()
        except OSError:
            return ""

    def log(self):
        return "\n".join(d.log_text() for d in self.drivers)

    def close(self):
        for cl in self.clients:
            try:
                cl.cancel() if isinstance(cl, kdd.HealthStream) else cl.close()
            except Exception:
                pass
        bad = []
        for d in self.drivers:
            running = d.proc is not None and d.proc.poll() is None
            rc = d.stop()
            if running and rc != 0:
                bad.append("a driver stopped by SIGTERM exited %s" % rc)
        # Sanitizer builds: any report (ASan, LSan at exit, UBSan) in any driver's log.
        for d in self.drivers:
            text = d.log_text()
            for needle in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
                if needle in text:
                    bad.append(text[text.index(needle) - 200:][:3000])
        if self.drivers:
            self.tap.ok(not bad, "every driver stopped cleanly (exit 0 on SIGTERM, no "
                        "sanitizer report)", "\n".join(bad))
        self.watcher.stop()
        self.api.stop()
        shutil.rmtree(self.work, ignore_errors=True)
        return self.tap.done()


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def spec_env(spec):
    """The env of the one device of a per-claim spec, as a dict."""
    out = {}
    for d in (spec or {}).get("devices") or []:
        for e in (d.get("containerEdits") or {}).get("env") or []:
            k, _, v = e.partition("=")
            out[k] = v
    return out


def health_of(lst, device):
    return next((h for h in lst or [] if h.device == device), None)


# ---- scenarios ------------------------------------------------------------------------


def sc_registration(c):
    tap = c.tap
    d = c.driver()
    reg = c.registered()
    info = reg.info
    tap.ok(info.type == "DRAPlugin" and info.name == DRIVER, "GetInfo: type DRAPlugin, name",
           "%s %s" % (info.type, info.name))
    tap.ok(info.endpoint == os.path.join(c.plugin_dir, "dra.sock"),
           "GetInfo: endpoint <plugin-dir>/dra.sock", info.endpoint)
    want = {"v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
            "v1alpha1.DRAResourceHealth"}
    tap.ok(want <= set(info.supported_versions), "GetInfo: the DRA and health versions",
           list(info.supported_versions))
    tap.ok(reg.notified and d.wait_log("registered with the kubelet"),
           "NotifyRegistrationStatus reached the driver and is logged", d.log_text())
    st = os.stat(c.plugin_dir)
    tap.ok(stat.S_IMODE(st.st_mode) == 0o750, "the plugin dir is created 0750",
           oct(st.st_mode))
    for p in (os.path.join(c.registry_dir, DRIVER + "-reg.sock"), info.endpoint):
        st = os.lstat(p)
        tap.ok(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
               "%s is a socket, mode 0600" % os.path.basename(p), oct(st.st_mode))
    # The kubelet (or anyone) removes the registration socket: served again within 1 s,
    # and the watcher registers the plugin again.
    os.unlink(os.path.join(c.registry_dir, DRIVER + "-reg.sock"))
    t0 = time.monotonic()
    reg2 = c.watcher.wait_registrations(2, 3)
    dt = time.monotonic() - t0
    tap.ok(reg2 is not None and reg2.ok and dt < 1.5,
           "registration socket served again and re-registered (%.2f s)" % dt, c.log())
    # An unknown method is refused, not hung.
    cl = c.client(reg)
    try:
        cl.raw("NoSuchMethod", b"", timeout=5)
        tap.ok(False, "unknown method refused")
    except kdd.grpc.RpcError as e:
        tap.ok(e.code() == kdd.grpc.StatusCode.UNIMPLEMENTED, "unknown method: UNIMPLEMENTED",
               str(e.code()))
    rc = d.stop()
    tap.ok(rc == 0 and "stopped" in d.log_text(), "SIGTERM: clean stop, exit 0",
           "rc %s\n%s" % (rc, d.log_text()[-2000:]))
    tap.ok(not os.path.exists(info.endpoint) and
           not os.path.exists(os.path.join(c.registry_dir, DRIVER + "-reg.sock")),
           "both sockets removed at stop", str(os.listdir(c.registry_dir)))
    tap.ok(len(c.api.slices(DRIVER, NODE)) > 0,
           "the slices stay at stop (the kubelet removes them after deregistration)")
    # Usage errors: exit 2 with the reason, before anything is started.
    env = {k: v for k, v in os.environ.items() if k != "NODE_NAME"}
    base = [c.args.rdma_cdi, "dra", "--kubeconfig", c.kubeconfig, "--config", c.config]
    for argv, env_, needle, what in (
            (base, env, "no node name", "no --node-name and no NODE_NAME"),
            (base + ["--node-name", "Node_1"], env, "not a DNS subdomain", "a bad node name"),
            (base + ["--node-name", "a..b"], env, "not a DNS subdomain",
             "a node name with an empty label"),
            (base, dict(env, NODE_NAME="-x"), "NODE_NAME", "a bad NODE_NAME"),
            (base + ["--node-name", NODE, "--driver-name", "x" * 64], env, "63",
             "a driver name over 63 characters"),
            (base + ["--node-name", NODE, "--plugin-dir", "rel"], env, "absolute",
             "a relative --plugin-dir")):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env_)
        tap.ok(r.returncode == 2 and needle in r.stderr, "usage error: %s (exit 2)" % what,
               "rc %d: %s" % (r.returncode, r.stderr))
    r = subprocess.run([c.args.rdma_cdi, "dra", "--node-name", NODE, "--kubeconfig",
                        os.path.join(c.work, "nonexistent"), "--config", c.config,
                        "--registry-dir", c.registry_dir, "--plugin-dir", c.plugin_dir,
                        "--spec-dir", c.spec_dir, "--sysfs-root", c.sysfs, "--dev-root", c.dev],
                       capture_output=True, text=True, timeout=30)
    tap.ok(r.returncode == 1 and "nonexistent" in r.stderr,
           "unusable credentials: exit 1 naming the kubeconfig", r.stderr[-1500:])


def sc_slices(c):
    tap = c.tap
    d, reg, cl = c.up()
    devs = c.devices()
    tap.ok(set(devs) == {dev_name(n) for n in DGX}, "one device per HCA, named by its PCI "
           "address", sorted(devs))
    slices = c.api.slices(DRIVER, NODE)
    pools = {(s["spec"]["pool"]["name"], s["spec"]["pool"]["resourceSliceCount"]) for s in slices}
    tap.ok(pools == {(NODE, len(slices))}, "one pool named after the node, slice count right",
           pools)
    tap.ok(all(s["spec"]["nodeName"] == NODE and s["spec"]["driver"] == DRIVER for s in slices),
           "spec.nodeName and spec.driver")
    bad = {}
    for name, (pci, root, numa, _) in DGX.items():
        a = devs[dev_name(name)].get("attributes", {})
        want = {"resource.kubernetes.io/pcieRoot": {"string": root},
                "resource.kubernetes.io/pciBusID": {"string": pci},
                "resource.kubernetes.io/numaNode": {"int": numa},
                DRIVER + "/rdmaDevice": {"string": name},
                DRIVER + "/linkLayer": {"string": "InfiniBand" if name in IB else "Ethernet"},
                DRIVER + "/pool": {"string": "rdma.example/hca"}}
        for k, v in want.items():
            if a.get(k) != v:
                bad[name + " " + k] = a.get(k)
    tap.ok(not bad, "attributes: pcieRoot, pciBusID, numaNode, RDMA name, link layer, pool",
           bad)
    a = devs[dev_name("mlx5_8")]["attributes"]
    tap.ok(a.get(DRIVER + "/netdev") == {"string": "ens1np0"} and
           a.get(DRIVER + "/virtualFunction") == {"bool": False} and
           a.get(DRIVER + "/firmware") == {"string": "22.41.1000"},
           "attributes: netdev, PF/VF, firmware", a)
    down = devs[dev_name("mlx5_9")].get("taints") or []
    tap.ok(len(down) == 1 and down[0]["key"] == DRIVER + "/unhealthy" and
           down[0]["effect"] == "NoSchedule", "the DOWN-port HCA carries the NoSchedule taint",
           down)
    tap.ok(all(not devs[dev_name(n)].get("taints") for n in DGX if n != "mlx5_9"),
           "the healthy HCAs carry no taint")
    spec = load_json(os.path.join(c.spec_dir, "rdma.example-hca.json"))
    names = {dv["name"] for dv in (spec or {}).get("devices") or []}
    tap.ok(spec is not None and {DGX[n][0] for n in DGX} <= names,
           "the shared spec in --spec-dir defines every HCA's PCI-address name",
           sorted(names))
    h = c.health(reg)
    lst = h.wait(lambda ls: len(ls) > 0, 5)
    tap.ok(lst is not None and {x.device for x in lst} == {dev_name(n) for n in DGX} and
           all(x.pool == NODE for x in lst), "health stream: every device, pool = node name",
           lst)
    down = health_of(lst, dev_name("mlx5_9"))
    tap.ok(down is not None and down.health == "UNHEALTHY" and "DOWN" in down.message and
           all(x.health == "HEALTHY" for x in lst if x.device != dev_name("mlx5_9")),
           "health stream: the DOWN one UNHEALTHY with its reason, the rest HEALTHY",
           lst)
    h1 = c.health(reg, "v1alpha1")
    lst1 = h1.wait(lambda ls: len(ls) > 0, 5)
    tap.ok(lst1 is not None and len(lst1) == 10, "health stream v1alpha1 too", lst1)


def sc_slices_wiped(c):
    tap = c.tap
    d, reg, cl = c.up()
    before = c.devices()
    gen = max(s["spec"]["pool"]["generation"] for s in c.api.slices(DRIVER, NODE))
    n = c.api.delete_all_slices(NODE, DRIVER)
    t0 = time.monotonic()
    devs = c.wait_devices(lambda ds: set(ds) == set(before), 5)
    dt = time.monotonic() - t0
    tap.ok(n > 0 and devs is not None, "slices wiped (%d) are re-created within 5 s (%.2f s)"
           % (n, dt), c.log()[-3000:])
    gen2 = max([s["spec"]["pool"]["generation"] for s in c.api.slices(DRIVER, NODE)] or [0])
    tap.ok(gen2 >= gen, "the generation does not go back (%d -> %d)" % (gen, gen2))
    # A restart never goes back either.
    d.stop()
    c.driver()
    c.registered()
    time.sleep(0.5)
    gens = [s["spec"]["pool"]["generation"] for s in c.api.slices(DRIVER, NODE)]
    tap.ok(gens and min(gens) >= gen2, "after a restart the generation is not lower (%s)" % gens)


def sc_prepare(c):
    tap = c.tap
    d, reg, cl = c.up()
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0"), result("mlx5_1")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    a = ans.get(uid, {})
    tap.ok(a.get("error") == "" and len(a.get("devices", [])) == 2,
           "Prepare of a claim of 2 HCAs succeeds", "%s\n%s" % (ans, c.log()[-2000:]))
    by = {x["device_name"]: x for x in a.get("devices", [])}
    want = {dev_name(n): [cdi_id(n), "%s=%s" % (CLAIM_KIND, uid)] for n in ("mlx5_0", "mlx5_1")}
    tap.ok({k: v["cdi_device_ids"] for k, v in by.items()} == want,
           "CDI IDs: the HCA's name in the shared spec, then the claim's device", by)
    tap.ok(all(v["pool_name"] == NODE and v["request_names"] == ["nic"] for v in by.values()),
           "pool = node name, request names")
    spec = load_json(os.path.join(c.spec_dir, "rdma.example-hca.json"))
    names = {dv["name"] for dv in (spec or {}).get("devices") or []}
    tap.ok(all(i.split("=", 1)[1] in names for v in want.values() for i in v[:1]),
           "the HCA names resolve in the spec on disk")
    cs = load_json(c.claim_spec(uid))
    tap.ok(cs is not None and cs.get("kind") == CLAIM_KIND and
           [x["name"] for x in cs.get("devices", [])] == [uid],
           "per-claim spec %s: kind %s, one device named by the UID" % (
               os.path.basename(c.claim_spec(uid)), CLAIM_KIND), cs)
    tap.ok(spec_env(cs).get("RDMA_CDI_DEVICES") == "mlx5_0,mlx5_1",
           "per-claim spec: RDMA_CDI_DEVICES lists the claim's HCAs", spec_env(cs))
    tap.ok("NCCL_IB_HCA" not in spec_env(cs), "no NCCL env without ncclEnv")
    ck = os.path.join(c.plugin_dir, "checkpoint.json")
    tap.ok(uid in c.checkpoint() and stat.S_IMODE(os.stat(ck).st_mode) == 0o600,
           "the checkpoint (0600) holds the claim")
    gets = len(c.api.requests_matching("GET", "/apis/resource.k8s.io/v1/namespaces/default/"))
    again = cl.prepare([("default", "c1", uid)])
    tap.ok(again == ans, "Prepare again: the same answer (idempotent)", again)
    tap.ok(len(c.api.requests_matching("GET", "/apis/resource.k8s.io/v1/namespaces/default/"))
           == gets, "... from the checkpoint, without asking the API server")
    b1 = c.client(reg, "v1beta1")
    ab = b1.prepare([("default", "c1", uid)])
    tap.ok(ab.get(uid, {}).get("error") == "" and
           {x["device_name"] for x in ab[uid]["devices"]} == set(want),
           "the v1beta1 service answers the same", ab)
    un = cl.unprepare([("default", "c1", uid)])
    tap.ok(un == {uid: ""}, "Unprepare succeeds", un)
    tap.ok(not os.path.exists(c.claim_spec(uid)), "Unprepare removes the per-claim spec")
    tap.ok(uid not in c.checkpoint(), "... and the checkpoint entry", c.checkpoint())
    un = cl.unprepare([("default", "c1", uid), ("default", "never", "uid-never-prepared")])
    tap.ok(un == {uid: "", "uid-never-prepared": ""},
           "Unprepare again, and of a claim never prepared: success", un)
    # The device is free again for another claim.
    c2 = c.api.add_claim("default", "c2", results=[result("mlx5_0")])
    a2 = cl.prepare([("default", "c2", c2["metadata"]["uid"])])
    tap.ok(a2[c2["metadata"]["uid"]]["error"] == "", "the freed HCA can be prepared again", a2)


def sc_bad_claims(c):
    tap = c.tap
    d, reg, cl = c.up()
    held = c.api.add_claim("default", "holder", results=[result("mlx5_1")])
    hu = held["metadata"]["uid"]
    tap.ok(cl.prepare([("default", "holder", hu)])[hu]["error"] == "", "a first claim holds mlx5_1")
    good = c.api.add_claim("default", "good", results=[result("mlx5_0")])
    other = c.api.add_claim("default", "other", results=[result("mlx5_2", driver="gpu.example")])
    unalloc = c.api.add_claim("default", "unalloc")
    mismatch = c.api.add_claim("default", "mismatch", results=[result("mlx5_3")])
    busy = c.api.add_claim("ns2", "busy", results=[result("mlx5_1")])
    gone = c.api.add_claim("default", "gone", results=[result("mlx5_4")])
    c.api.delete_claim("default", "gone")
    ghost = c.api.add_claim("default", "ghost", results=[{
        "request": "nic", "driver": DRIVER, "pool": NODE, "device": "pci-0000-ee-00-0"}])
    batch = {
        "good": ("default", "good", good["metadata"]["uid"]),
        "other": ("default", "other", other["metadata"]["uid"]),
        "unalloc": ("default", "unalloc", unalloc["metadata"]["uid"]),
        "mismatch": ("default", "mismatch", str(uuid.uuid4())),
        "busy": ("ns2", "busy", busy["metadata"]["uid"]),
        "gone": ("default", "gone", gone["metadata"]["uid"]),
        "ghost": ("default", "ghost", ghost["metadata"]["uid"]),
    }
    ans = cl.prepare(list(batch.values()))
    tap.ok(set(ans) == {v[2] for v in batch.values()}, "every claim of the batch is answered",
           ans)

    def err(k):
        return ans.get(batch[k][2], {}).get("error", "<missing>")

    g = ans.get(batch["good"][2], {})
    tap.ok(g.get("error") == "" and [x["device_name"] for x in g.get("devices", [])] ==
           [dev_name("mlx5_0")], "the good claim in the batch is prepared", g)
    expect = {
        "other": "no device of driver",
        "unalloc": "not allocated",
        "mismatch": "UID",
        "busy": hu,
        "gone": "not found",
        "ghost": "pci-0000-ee-00-0",
    }
    for k, needle in expect.items():
        e = err(k)
        tap.ok(e not in ("", "<missing>") and needle in e and
               not ans[batch[k][2]].get("devices"),
               "%s: refused with its own message (%s)" % (k, needle), e)
    left = sorted(f for f in os.listdir(c.spec_dir) if "-claim_" in f)
    tap.ok(left == sorted(os.path.basename(c.claim_spec(u)) for u in (hu, batch["good"][2])),
           "refused claims leave no spec behind", left)
    ck = c.checkpoint()
    tap.ok(all(batch[k][2] not in ck for k in expect), "... and nothing in the checkpoint")
    # A claim whose namespace is no DNS label makes the request malformed: refused whole,
    # before it reaches the driver, and nothing is asked of the API server.
    try:
        cl.prepare([("Bad_NS", "x", str(uuid.uuid4()))])
        tap.ok(False, "a request with a bad namespace is refused")
    except kdd.grpc.RpcError as e:
        tap.ok(e.code() == kdd.grpc.StatusCode.INVALID_ARGUMENT and "Bad_NS" in e.details(),
               "a request with a namespace that is no DNS label: INVALID_ARGUMENT",
               e.details())
    tap.ok(not c.api.requests_matching("GET", "/apis/resource.k8s.io/v1/namespaces/Bad_NS"),
           "... and no request reaches the API server")
    # API server trouble: a 500 for the claim is that claim's error, not a hang.
    late = c.api.add_claim("default", "late", results=[result("mlx5_5")])
    c.api.fail_next(1, 500, "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/late")
    ans = cl.prepare([("default", "late", late["metadata"]["uid"])])
    e = ans.get(late["metadata"]["uid"], {}).get("error", "")
    tap.ok("500" in e, "an API server 500 is the claim's error (the kubelet retries)", e)
    ans = cl.prepare([("default", "late", late["metadata"]["uid"])])
    tap.ok(ans[late["metadata"]["uid"]]["error"] == "", "... and the retry succeeds", ans)


def sc_restart(c):
    tap = c.tap
    d, reg, cl = c.up()
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_2"), result("mlx5_3")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    tap.ok(ans[uid]["error"] == "" and os.path.exists(c.claim_spec(uid)), "claim prepared")
    d.kill()  # SIGKILL: no chance to clean anything up
    c.api.delete_claim("default", "c1")
    cl.close()
    d2 = c.driver()
    reg2 = c.registered()
    cl2 = c.client(reg2)
    tap.ok(os.path.exists(c.claim_spec(uid)), "the claim spec survived the restart")
    rival = c.api.add_claim("default", "rival", results=[result("mlx5_2")])
    ru = rival["metadata"]["uid"]
    ans = cl2.prepare([("default", "rival", ru)])
    tap.ok(uid in ans[ru]["error"], "after the restart the HCA is still held by the claim",
           ans)
    un = cl2.unprepare([("default", "c1", uid)])
    tap.ok(un == {uid: ""}, "Unprepare after SIGKILL and the claim's deletion succeeds",
           "%s\n%s" % (un, d2.log_text()[-2000:]))
    tap.ok(not os.path.exists(c.claim_spec(uid)) and uid not in c.checkpoint(),
           "... and removes the claim spec and the checkpoint entry")
    ans = cl2.prepare([("default", "rival", ru)])
    tap.ok(ans[ru]["error"] == "", "the HCA is free for the rival claim now", ans)
    d2.stop()
    # A corrupt checkpoint: the driver refuses to start, names the file, keeps it.
    ck = os.path.join(c.plugin_dir, "checkpoint.json")
    with open(ck, "w") as f:
        f.write("{ not json")
    d3 = c.driver()
    rc = d3.wait(15)
    tap.ok(rc == 1 and "checkpoint" in d3.log_text() and "corrupt" in d3.log_text(),
           "a corrupt checkpoint: exit 1, the log names it", "rc %s\n%s" % (rc, d3.log_text()))
    with open(ck) as f:
        tap.ok(f.read() == "{ not json", "the corrupt checkpoint is left in place")
    # An orphan claim spec (a SIGKILL between the spec and the checkpoint) goes at start.
    os.unlink(ck)
    orphan_uid = str(uuid.uuid4())
    c4 = c.api.add_claim("default", "c4", results=[result("mlx5_4")])
    d4 = c.driver()
    reg4 = c.registered()
    cl4 = c.client(reg4)
    u4 = c4["metadata"]["uid"]
    cl4.prepare([("default", "c4", u4)])
    spec4 = c.claim_spec(u4)
    orphan = c.claim_spec(orphan_uid)
    with open(spec4) as f:
        text = f.read().replace(u4, orphan_uid)
    d4.kill()
    with open(orphan, "w") as f:
        f.write(text)
    c.driver()
    c.registered()
    tap.ok(not os.path.exists(orphan) and os.path.exists(spec4),
           "at start, a claim spec of ours that no checkpoint entry holds is removed; the "
           "prepared claim's stays", str(os.listdir(c.spec_dir)))


def sc_hotplug(c):
    tap = c.tap
    d, reg, cl = c.up(["--rescan-interval", "0"])  # inotify alone
    h = c.health(reg)
    h.wait(lambda ls: len(ls) > 0, 5)
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_3")])
    uid = claim["metadata"]["uid"]
    tap.ok(cl.prepare([("default", "c1", uid)])[uid]["error"] == "", "mlx5_3 prepared")
    hca = Hca(c, "mlx5_3")
    name = dev_name("mlx5_3")
    n = len(h.lists)
    t0 = time.monotonic()
    hca.unplug()
    devs = c.wait_devices(lambda ds: name not in ds and len(ds) == 9, 3)
    dt = time.monotonic() - t0
    tap.ok(devs is not None and dt < 1.0, "unplugged HCA leaves the slices within 1 s (%.3f s)"
           % dt, c.log()[-2000:])
    lst = h.wait(lambda ls: len(ls) > n and health_of(ls[-1], name) is not None and
                 health_of(ls[-1], name).health == "UNHEALTHY", 2)
    tap.ok(lst is not None, "health stream: the prepared, unplugged HCA is UNHEALTHY",
           h.lists[-1] if h.lists else None)
    tap.ok(os.path.exists(c.claim_spec(uid)) and uid in c.checkpoint(),
           "its claim stays prepared until Unprepare")
    rival = c.api.add_claim("default", "rival", results=[result("mlx5_3")])
    ans = cl.prepare([("default", "rival", rival["metadata"]["uid"])])
    tap.ok(ans[rival["metadata"]["uid"]]["error"] != "", "Prepare of the unplugged HCA is "
           "refused", ans)
    t0 = time.monotonic()
    hca.replug()
    devs = c.wait_devices(lambda ds: name in ds and len(ds) == 10, 3)
    dt = time.monotonic() - t0
    tap.ok(devs is not None and dt < 1.0, "re-plugged HCA is back in the slices within 1 s "
           "(%.3f s)" % dt)
    lst = h.wait(lambda ls: health_of(ls[-1], name) is not None and
                 health_of(ls[-1], name).health == "HEALTHY", 2)
    tap.ok(lst is not None, "health stream: HEALTHY again")
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""}, "Unprepare")


def sc_port_down(c):
    tap = c.tap
    d, reg, cl = c.up(["--rescan-interval", "1"])
    h = c.health(reg)
    h.wait(lambda ls: len(ls) > 0, 5)
    name = dev_name("mlx5_2")
    set_port_state(c.sysfs, "mlx5_2", "1: DOWN")
    t0 = time.monotonic()
    devs = c.wait_devices(lambda ds: (ds.get(name) or {}).get("taints"), RESCAN_WAIT)
    dt = time.monotonic() - t0
    t = (devs or {}).get(name, {}).get("taints") or []
    tap.ok(len(t) == 1 and t[0]["key"] == DRIVER + "/unhealthy" and
           t[0]["effect"] == "NoSchedule",
           "port DOWN: the device gets the NoSchedule taint within a rescan (%.2f s)" % dt, t)
    lst = h.wait(lambda ls: getattr(health_of(ls[-1], name), "health", "") == "UNHEALTHY",
                 RESCAN_WAIT)
    x = health_of(lst, name)
    tap.ok(x is not None and "DOWN" in x.message and x.last_updated > 0,
           "health stream: UNHEALTHY with the reason", x)
    others = [y for y in lst or [] if y.device != name and y.device != dev_name("mlx5_9")]
    tap.ok(others and all(y.health == "HEALTHY" for y in others), "the others stay HEALTHY")
    set_port_state(c.sysfs, "mlx5_2", "4: ACTIVE")
    devs = c.wait_devices(lambda ds: name in ds and not ds[name].get("taints"), RESCAN_WAIT)
    tap.ok(devs is not None, "ACTIVE again: the taint is removed")
    lst = h.wait(lambda ls: getattr(health_of(ls[-1], name), "health", "") == "HEALTHY",
                 RESCAN_WAIT)
    tap.ok(lst is not None, "health stream: HEALTHY again")
    # The kubelet reports a device Unknown once its last report is older than the
    # timeout it carries: the driver says 60 s and repeats the list every 20 s.
    tap.ok(lst and all(y.timeout == 60 for y in lst),
           "every device carries health_check_timeout_seconds 60", lst)
    with h.cond:
        n, t_last = len(h.lists), h.times[-1]
    again = h.wait(lambda ls: len(ls) > n, 25)
    with h.cond:
        gap = h.times[n] - t_last if len(h.times) > n else None
    tap.ok(again == lst and gap is not None and 18 < gap < 23,
           "unchanged, the list is sent again about 20 s later, within the timeout",
           "gap %s" % gap)


def sc_spec_blocked(c):
    """The shared spec cannot be written: the driver publishes and prepares the devices of
    the current scan whose names the spec on disk defines, the spec of the last write that
    succeeded (docs/dra.md; the bridge's twin is tests/bridge/test-kubelet.py)."""
    tap = c.tap
    new = Hca(c, "mlx5_3")
    new.unplug()  # it arrives while the spec is blocked
    path = os.path.join(c.spec_dir, "rdma.example-hca.json")
    write_foreign_spec(path)  # at our path from the start
    d = c.driver(["--rescan-interval", "0"])  # hotplug and retries alone
    reg = c.registered()
    cl = c.client(reg)
    tap.ok(c.api.wait_for(lambda: c.api.slices(DRIVER, NODE), 10) and c.devices() == {},
           "started while the spec cannot be written: an empty slice, no device",
           "%s\n%s" % (sorted(c.devices()), c.log()[-2000:]))
    os.unlink(path)
    devs = c.wait_devices(lambda ds: len(ds) == 9, 10)
    tap.ok(devs is not None and d.log_text().count("written again after failures") == 1,
           "the retry writes the spec, then the 9 HCAs are published", c.log()[-2000:])
    blocked = block_spec(path)
    gone = Hca(c, "mlx5_2")
    gone.unplug()
    devs = c.wait_devices(lambda ds: dev_name("mlx5_2") not in ds and len(ds) == 8, 3)
    tap.ok(devs is not None, "spec blocked: the device that left leaves the slices at once",
           "%s\n%s" % (sorted(c.devices()), c.log()[-2000:]))
    tap.ok(d.wait_log("writing the CDI spec into") and "move the file" in d.log_text(),
           "the write fails: a file not ours is at our path", d.log_text()[-2000:])
    k2 = c.api.add_claim("default", "c2", results=[result("mlx5_2")])
    k3 = c.api.add_claim("default", "c3", results=[result("mlx5_3")])
    u2, u3 = k2["metadata"]["uid"], k3["metadata"]["uid"]
    ans = cl.prepare([("default", "c2", u2)])
    tap.ok(ans[u2]["error"] != "", "Prepare of the device that left is refused", ans)
    gone.replug()
    new.replug()
    devs = c.wait_devices(lambda ds: dev_name("mlx5_2") in ds, 3)
    tap.ok(devs is not None and len(devs) == 9, "back while writes still fail: mlx5_2 is "
           "published again, the file on disk defines it", sorted(c.devices()))
    time.sleep(1.0)
    tap.ok(dev_name("mlx5_3") not in c.devices(), "mlx5_3, which arrived, is not: the file "
           "on disk does not define it", d.log_text()[-2000:])
    ans = cl.prepare([("default", "c2", u2), ("default", "c3", u3)])
    ids = [x["cdi_device_ids"][0] for x in ans[u2].get("devices", [])]
    names = {x["name"] for x in json.loads(blocked)["devices"]}
    tap.ok(ans[u2]["error"] == "" and ids == [cdi_id("mlx5_2")] and
           DGX["mlx5_2"][0] in names, "Prepare hands mlx5_2 out under a name the file on "
           "disk defines", ans)
    tap.ok(ans[u3]["error"] != "", "Prepare of mlx5_3 is refused", ans)
    tap.ok(open(path).read() == blocked and
           d.log_text().count("written again after failures") == 1,
           "no write succeeded meanwhile: the file on disk is the blocked copy")
    os.unlink(path)
    devs = c.wait_devices(lambda ds: dev_name("mlx5_3") in ds and len(ds) == 10, 35)
    spec = load_json(path)
    tap.ok(devs is not None and d.log_text().count("written again after failures") == 2 and
           DGX["mlx5_3"][0] in {x["name"] for x in (spec or {}).get("devices") or []},
           "the way cleared: the retry writes the spec, then mlx5_3 is published",
           d.log_text()[-2000:])
    ans = cl.prepare([("default", "c3", u3)])
    tap.ok(ans[u3]["error"] == "", "and prepared", ans)


def sc_wrong_ca(c):
    """A kubeconfig whose CA did not sign the server's certificate: the driver serves the
    kubelet, but no request (and so no bearer token) reaches the server."""
    tap = c.tap
    with open(c.kubeconfig) as f:
        text = f.read()
    with open(c.kubeconfig, "w") as f:
        f.write(text.replace(c.api.ca_path, c.api.other_ca()))
    d = c.driver()
    reg = c.registered()
    cl = c.client(reg)
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    e = ans.get(uid, {}).get("error", "")
    tap.ok(e != "" and ("certificate" in e.lower() or "tls" in e.lower()),
           "Prepare fails with the TLS reason", e)
    time.sleep(1)
    tap.ok(c.api.requests_matching() == [] and c.api.tls_failures > 0,
           "no request reached the server (%d handshakes refused)" % c.api.tls_failures)
    tap.ok(c.devices() == {}, "no slice is published")
    tap.ok(not os.path.exists(c.claim_spec(uid)) and uid not in c.checkpoint(),
           "the failed claim leaves nothing behind")


POOLS_IB = """pools:
  - resourceName: rdma.example/ib
    ncclEnv: true
    selectors:
      linkLayers: [InfiniBand]
"""
POOLS_ROCE = """pools:
  - resourceName: rdma.example/roce
    selectors:
      linkLayers: [Ethernet]
"""


def sc_pools(c):
    tap = c.tap
    with open(c.config, "w") as f:
        f.write(POOLS_IB)
    d, reg, cl = c.up(n_devices=8)
    devs = c.devices()
    tap.ok(set(devs) == {dev_name(n) for n in IB}, "--config: only the IB pool's HCAs are "
           "published", sorted(devs))
    tap.ok(all(dv["attributes"].get(DRIVER + "/pool") == {"string": "rdma.example/ib"}
               for dv in devs.values()), "their pool attribute")
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0"), result("mlx5_1")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    tap.ok(ans[uid]["error"] == "", "Prepare in the ncclEnv pool", ans)
    env = spec_env(load_json(c.claim_spec(uid)))
    tap.ok(env.get("RDMA_CDI_DEVICES") == "mlx5_0,mlx5_1", "RDMA_CDI_DEVICES", env)
    tap.ok(set((env.get("NCCL_IB_HCA") or "").lstrip("=^").split(",")) >= {"mlx5_0", "mlx5_1"}
           and set((env.get("UCX_NET_DEVICES") or "").split(",")) == {"mlx5_0:1", "mlx5_1:1"},
           "ncclEnv reaches the per-claim spec: NCCL_IB_HCA, UCX_NET_DEVICES", env)
    roce = c.api.add_claim("default", "roce", results=[result("mlx5_8")])
    ans = cl.prepare([("default", "roce", roce["metadata"]["uid"])])
    tap.ok(ans[roce["metadata"]["uid"]]["error"] != "", "an HCA no pool takes is refused", ans)
    # A live config edit (a ConfigMap's atomic swap is a rename too) changes what is published.
    tmp = c.config + ".new"
    with open(tmp, "w") as f:
        f.write(POOLS_ROCE)
    os.replace(tmp, c.config)
    devs = c.wait_devices(lambda ds: set(ds) == {dev_name(n) for n in ROCE}, 5)
    tap.ok(devs is not None, "config edited: the slices follow (the RoCE pool now)",
           "%s\n%s" % (sorted(c.devices()), d.log_text()[-2000:]))
    tap.ok(uid in c.checkpoint() and os.path.exists(c.claim_spec(uid)),
           "claims prepared before stay prepared")
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""}, "... and unprepare")
    with open(tmp, "w") as f:
        f.write("pools: [oops\n")
    os.replace(tmp, c.config)
    tap.ok(d.wait_log("rejected, the previous config stays"), "an invalid edit is refused")
    time.sleep(0.3)
    tap.ok(set(c.devices()) == {dev_name(n) for n in ROCE}, "... and the slices stay")


POOLS_SHARED = """pools:
  - resourceName: rdma.example/shared
    mode: shared
    sharedSlots: 4
    selectors:
      names: [mlx5_0]
  - resourceName: rdma.example/hca
"""
SHARE_A = "11111111-2222-4333-8444-555555555555"
SHARE_B = "66666666-7777-4888-9999-aaaaaaaaaaaa"


def move_hooks(path):
    """The args of every netns-move hook in a spec file, in order."""
    spec = load_json(path) or {}
    edits = [spec.get("containerEdits") or {}] + [d.get("containerEdits") or {}
                                                  for d in spec.get("devices") or []]
    return [h.get("args") for e in edits for h in e.get("hooks") or []
            if any(a.startswith("--netns-move") for a in h.get("args") or [])]


def sc_admin_share(c):
    """A shared pool's device: allowMultipleAllocations (dropped by a server without the
    feature, and then not published again and again), shares prepared side by side with
    their shareID echoed; adminAccess reaches a held device and holds none."""
    tap = c.tap
    with open(c.config, "w") as f:
        f.write(POOLS_SHARED + "    netns: move\n")
    c.api.consumable_capacity = False  # 1.34/1.35 default
    d, reg, cl = c.up()
    shared = dev_name("mlx5_0")
    tap.ok(all("allowMultipleAllocations" not in dv for dv in c.devices().values()),
           "a server without DRAConsumableCapacity drops allowMultipleAllocations",
           c.devices().get(shared))
    puts = len(c.api.requests_matching("PUT", "/apis/resource.k8s.io/v1/resourceslices"))
    c.api.close_watches()  # a fresh list: the driver compares again
    time.sleep(3)
    tap.ok(len(c.api.requests_matching("PUT", "/apis/resource.k8s.io/v1/resourceslices"))
           == puts, "... and the driver does not count that as a difference to publish again",
           d.log_text()[-1500:])
    c.api.consumable_capacity = True
    c.api.delete_all_slices()
    devs = c.wait_devices(lambda ds: len(ds) == 10, 8)
    tap.ok(devs and devs[shared].get("allowMultipleAllocations") is True and
           all("allowMultipleAllocations" not in v for k, v in devs.items() if k != shared),
           "with the feature: the shared pool's device allows multiple allocations, no other",
           devs and devs.get(shared))

    # Two claims with a share each of the shared device, prepared side by side.
    s1 = c.api.add_claim("default", "s1", results=[dict(result("mlx5_0"), shareID=SHARE_A)])
    s2 = c.api.add_claim("default", "s2", results=[dict(result("mlx5_0"), shareID=SHARE_B)])
    u1, u2 = s1["metadata"]["uid"], s2["metadata"]["uid"]
    ans = cl.prepare([("default", "s1", u1), ("default", "s2", u2)])
    tap.ok([x.get("share_id") for x in ans.get(u1, {}).get("devices", [])] == [SHARE_A] and
           [x.get("share_id") for x in ans.get(u2, {}).get("devices", [])] == [SHARE_B],
           "each share prepared, its shareID in Device.share_id", ans)
    tap.ok(SHARE_A in c.checkpoint() and SHARE_B in c.checkpoint(),
           "the checkpoint keeps the share IDs")
    again = cl.prepare([("default", "s1", u1)])
    tap.ok(again.get(u1) == ans.get(u1), "Prepare again: the same share_id", again)
    bad = c.api.add_claim("default", "bad", results=[dict(result("mlx5_0"), shareID="../x")])
    ab = cl.prepare([("default", "bad", bad["metadata"]["uid"])])
    tap.ok("shareID: not a UUID" in ab.get(bad["metadata"]["uid"], {}).get("error", ""),
           "a shareID that is no UUID: the claim is refused, saying why", ab)

    # adminAccess on an exclusive device another claim holds.
    h = c.api.add_claim("default", "holder", results=[result("mlx5_1")])
    hu = h["metadata"]["uid"]
    mon = c.api.add_claim("monitoring", "mon", results=[dict(result("mlx5_1", "mon"),
                                                            adminAccess=True)])
    mu = mon["metadata"]["uid"]
    n1 = c.api.add_claim("default", "n1", results=[result("mlx5_1")])
    nu = n1["metadata"]["uid"]
    ans = cl.prepare([("default", "holder", hu), ("monitoring", "mon", mu)])
    tap.ok(ans.get(hu, {}).get("error") == "" and ans.get(mu, {}).get("error") == "",
           "an admin claim reaches a device another claim holds", ans)
    # The exclusive pool has `netns: move`: the holder's container moves mlx5_1 into its
    # namespace, the admin claim's container must not take it away from there.
    tap.ok(move_hooks(c.claim_spec(hu)) == [["rdma-cdi-hook", "--netns-move=mlx5_1"]] and
           move_hooks(c.claim_spec(mu)) == [],
           "netns: move: the holder's claim spec moves mlx5_1, the admin claim's does not",
           (move_hooks(c.claim_spec(hu)), move_hooks(c.claim_spec(mu))))
    tap.ok(move_hooks(os.path.join(c.spec_dir, "rdma.example-hca.json")) == [],
           "the node spec has no move hook (a claim gets its devices' by its own spec)")
    ans = cl.prepare([("default", "n1", nu)])
    tap.ok(hu in ans.get(nu, {}).get("error", ""),
           "a second normal claim is still refused, naming the holder", ans)
    tap.ok(cl.unprepare([("default", "holder", hu)]) == {hu: ""}, "the holder unprepared")
    ans = cl.prepare([("default", "n1", nu)])
    tap.ok(ans.get(nu, {}).get("error") == "",
           "the admin claim holds nothing: a normal claim gets the device", ans)
    ck = json.loads(c.checkpoint() or "{}")
    adm = [x for cl_ in ck.get("claims", []) if cl_["uid"] == mu for x in cl_["devices"]]
    tap.ok(adm and all(x.get("adminAccess") is True for x in adm),
           "the checkpoint records the admin entry", adm)


def sc_valgrind(c):
    """The driver under valgrind through a short busy life: registration, slices, a batch of
    good and bad claims, Unprepare, a wiped slice, hotplug, a port going DOWN, a config edit,
    scrapes and liveness probes, SIGHUP, SIGTERM. Exit 0 means no error and no leak."""
    tap = c.tap
    # "possibly lost" is left out, as for the bridge: abseil's random pool (gRPC's backoff)
    # is a process-lifetime static seen only through interior pointers.
    # --trace-children: `rdma-cdi dra` execs rdma-cdi-dra, the daemon under test.
    vg = ["valgrind", "--trace-children=yes", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99", "--track-fds=no",
          "--quiet"]
    port = free_port()
    d = Driver(c, ["--rescan-interval", "1", "--metrics-address", "127.0.0.1:%d" % port])
    c.drivers.append(d)
    d.start(prefix=vg)
    reg = c.registered(timeout=90)
    tap.ok(c.wait_devices(lambda ds: len(ds) == 10, 60) is not None, "slices under valgrind")
    cl = c.client(reg)
    h = c.health(reg)
    tap.ok(h.wait(lambda ls: len(ls) > 0, 30) is not None, "health stream under valgrind")
    good = c.api.add_claim("default", "good", results=[result("mlx5_0"), result("mlx5_1")])
    other = c.api.add_claim("default", "other", results=[result("mlx5_2", driver="x.example")])
    gu, ou = good["metadata"]["uid"], other["metadata"]["uid"]
    ans = cl.prepare([("default", "good", gu), ("default", "other", ou),
                      ("default", "missing", str(uuid.uuid4()))], timeout=60)
    tap.ok(ans[gu]["error"] == "" and ans[ou]["error"] != "", "a mixed batch under valgrind",
           ans)
    tap.ok(cl.unprepare([("default", "good", gu)], timeout=60) == {gu: ""},
           "Unprepare under valgrind")
    c.api.delete_all_slices(NODE, DRIVER)
    tap.ok(c.wait_devices(lambda ds: len(ds) == 10, 30) is not None,
           "wiped slices re-created under valgrind")
    hca = Hca(c, "mlx5_3")
    hca.unplug()
    tap.ok(c.wait_devices(lambda ds: len(ds) == 9, 30) is not None, "hotplug under valgrind")
    hca.replug()
    set_port_state(c.sysfs, "mlx5_2", "1: DOWN")
    tap.ok(c.wait_devices(lambda ds: len(ds) == 10 and ds[dev_name("mlx5_2")].get("taints"),
                          30) is not None, "port DOWN under valgrind")
    with open(c.config, "w") as f:
        f.write(POOLS_IB)
    tap.ok(c.wait_devices(lambda ds: len(ds) == 8, 30) is not None,
           "config edit under valgrind")
    status, _, body = http_get(port, "/metrics", timeout=30)
    samples, errors = parse_exposition(body)
    tap.ok(status == 200 and not errors and len(series(samples, "rdma_cdi_device_healthy")) == 8,
           "metrics scraped under valgrind: the 8 devices of the new config", errors[:5])
    # valgrind runs one thread at a time: the loop may miss a 2 s bound once under load.
    answers = []
    while len(answers) < 5 and 200 not in answers:
        answers.append(http_get(port, "/healthz", timeout=30)[0])
    tap.ok(200 in answers, "/healthz 200 under valgrind (%s)" % answers)
    d.proc.send_signal(signal.SIGHUP)
    time.sleep(1)
    d.proc.send_signal(signal.SIGTERM)
    rc = d.wait(120)
    tap.ok(rc == 0, "exit 0 under valgrind: no error, no leak", "rc %s\n%s" % (
        rc, d.log_text()[-6000:]))


# ---- podman: the CDI names Prepare returns, injected for real --------------------------

def sc_podman(c):
    tap = c.tap
    if os.geteuid() != 0:
        tap.skip("podman injects Prepare's CDI names", "needs root")
        return
    for tool in ("podman", "runc", "unshare"):
        if not shutil.which(tool):
            tap.ok(False, "%s found (install podman runc)" % tool)
            return
    if not os.path.isfile("/bin/busybox"):
        tap.ok(False, "/bin/busybox found (install busybox-static)")
        return
    host_before = host_cdi_dirs()
    d, reg, cl = c.up()
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0"), result("mlx5_8")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    ids = []
    for x in ans.get(uid, {}).get("devices", []):
        ids += [i for i in x["cdi_device_ids"] if i not in ids]
    tap.ok(ans.get(uid, {}).get("error") == "" and len(ids) == 3,
           "Prepare: two HCAs and the claim device", ans)
    rootfs = os.path.join(c.work, "rootfs")
    for sub in ("bin", "dev", "proc", "sys", "etc", "tmp"):
        os.makedirs(os.path.join(rootfs, sub))
    shutil.copy2("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    os.symlink("busybox", os.path.join(rootfs, "bin", "sh"))
    with open(os.path.join(c.work, "containers.conf"), "w") as f:
        f.write("[containers]\n[engine]\ncgroup_manager = \"cgroupfs\"\n"
                "events_logger = \"file\"\n")
    with open(os.path.join(c.work, "storage.conf"), "w") as f:
        f.write("[storage]\ndriver = \"vfs\"\ngraphroot = \"%s/storage\"\n"
                "runroot = \"%s/runroot\"\n" % (c.work, c.work))
    out = os.path.join(c.work, "podman.json")
    cmd = ["unshare", "-m", "--propagation", "private", PYTHON, os.path.abspath(__file__),
           "--inner-podman", c.work, "--spec-dir", c.spec_dir, "--out", out] + ids
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        rc, err = r.returncode, r.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = "timeout", str(e.stderr or "")
    res = load_json(out) or {}
    tap.ok(rc == 0 and res.get("rc") == 0, "podman runs a container with Prepare's CDI names "
           "from the spec dir", "inner %s\n%s\n%s" % (rc, err[-3000:], res))
    nodes = set(res.get("nodes") or [])
    tap.ok({"uverbs0", "uverbs8", "rdma_cm"} <= nodes and "uverbs1" not in nodes,
           "the container has exactly the claim's uverbs nodes (and rdma_cm)", sorted(nodes))
    tap.ok(res.get("env") == "mlx5_0,mlx5_8", "RDMA_CDI_DEVICES from the per-claim spec",
           res.get("env"))
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""} and
           not os.path.exists(c.claim_spec(uid)), "Unprepare removes the claim spec")
    tap.ok(host_cdi_dirs() == host_before, "the host's /etc/cdi and /var/run/cdi are untouched",
           "%s -> %s" % (host_before, host_cdi_dirs()))


def host_cdi_dirs():
    return {d: sorted(os.listdir(d)) if os.path.isdir(d) else None
            for d in ("/etc/cdi", "/var/run/cdi", "/var/lib/kubelet")}


def inner_podman(a):
    """In a private mount namespace: a tmpfs /run (so /var/run/cdi is ours alone) with the
    driver's spec dir copied in, then one podman run with the CDI names."""
    work = a.inner_podman
    res = {"rc": None}
    try:
        for dname in ("/run", "/var/run"):
            if not os.path.islink(dname) and os.path.isdir(dname):
                subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-dra",
                                dname], check=True)
        os.makedirs("/var/run/cdi", exist_ok=True)
        # /etc/cdi too: podman reads it as well, and the host's must not interfere.
        if os.path.isdir("/etc/cdi"):
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-dra",
                            "/etc/cdi"], check=True)
        for f in os.listdir(a.spec_dir):
            shutil.copy(os.path.join(a.spec_dir, f), "/var/run/cdi/")
        env = dict(os.environ, CONTAINERS_CONF=os.path.join(work, "containers.conf"),
                   CONTAINERS_STORAGE_CONF=os.path.join(work, "storage.conf"))
        cmd = ["podman", "--root", os.path.join(work, "storage"), "--runroot",
               os.path.join(work, "runroot"), "--tmpdir", os.path.join(work, "podman-tmp"),
               "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file",
               "run", "--rm", "--network", "none", "--ulimit", "nofile=20000:20000",
               "--ulimit", "nproc=32768:32768", "--cap-drop", "all"]
        for i in a.ids:
            cmd += ["--device", i]
        cmd += ["--rootfs", os.path.join(work, "rootfs"), "/bin/sh", "-c",
                'ls /dev/infiniband; echo "ENV=$RDMA_CDI_DEVICES"']
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        res["rc"] = r.returncode
        res["stderr"] = r.stderr[-2000:]
        lines = r.stdout.split()
        res["nodes"] = [x for x in lines if not x.startswith("ENV=")]
        res["env"] = next((x[4:] for x in lines if x.startswith("ENV=")), None)
    except Exception as e:  # reported by the outer process
        res["error"] = repr(e)
    with open(a.out, "w") as f:
        json.dump(res, f)
    return 0


def slice_writes(c):
    return [r for r in c.api.requests_matching(None, "/apis/resource.k8s.io/v1/resourceslices")
            if r["method"] != "GET"]


def sc_lent(c):
    """A device moved into a pod's network namespace (exclusive mode) stays in the
    ResourceSlice with its last known health, a claim for it still prepares and its CDI name
    resolves; its return rewrites nothing."""
    tap = c.tap
    d, reg, cl = c.up(["--rescan-interval", "1"])
    h = c.health(reg)
    h.wait(lambda ls: len(ls) > 0, 5)
    name, stash = dev_name("mlx5_3"), os.path.join(c.work, "stash")
    before, writes = c.devices(), len(slice_writes(c))
    spec_path = os.path.join(c.spec_dir, "rdma.example-hca.json")
    spec_before = os.stat(spec_path).st_mtime_ns
    subprocess.run([PYTHON, c.args.mksysfs, "lend", c.sysfs, "mlx5_3", stash], check=True)
    tap.ok(d.wait_log("mlx5_3 (0000:3c:00.0): lent to another network namespace", RESCAN_WAIT),
           "the move is logged", c.log()[-2000:])
    sleep_one_rescan(d.log_text())  # nothing may follow
    tap.ok(c.devices() == before and len(slice_writes(c)) == writes,
           "lent: the ResourceSlice keeps the device, not rewritten",
           "%s\n%s" % (c.devices().get(name), slice_writes(c)[writes:]))
    x = health_of(h.lists[-1], name)
    tap.ok(x is not None and x.health == "HEALTHY", "health stream: HEALTHY as before", x)
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_3")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    a = ans.get(uid, {})
    tap.ok(a.get("error") == "" and [x["cdi_device_ids"][0] for x in a.get("devices", [])]
           == [cdi_id("mlx5_3")], "Prepare of a claim for the lent device works", ans)
    spec = load_json(spec_path)
    names = {dv["name"] for dv in (spec or {}).get("devices") or []}
    tap.ok("mlx5_3" in names and os.stat(spec_path).st_mtime_ns == spec_before,
           "its CDI name resolves in the spec on disk, not rewritten")
    subprocess.run([PYTHON, c.args.mksysfs, "unlend", c.sysfs, stash], check=True)
    tap.ok(d.wait_log("mlx5_3 (0000:3c:00.0): back from another network namespace", RESCAN_WAIT),
           "the return is logged", d.log_text()[-3000:])
    sleep_one_rescan(d.log_text())
    tap.ok(c.devices() == before and len(slice_writes(c)) == writes and
           os.stat(spec_path).st_mtime_ns == spec_before,
           "back: no slice or spec write, no flap")
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""}, "Unprepare")



# ---- metrics (--metrics-address, daemon/metrics.h) ---------------------------------------

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def scrape(c, port):
    status, _, body = http_get(port, "/metrics")
    samples, errors = parse_exposition(body)
    c.tap.ok(status == 200 and not errors, "GET /metrics: 200 and every line valid "
             "exposition format", "\n".join(errors[:10]) + "\n" + body[:2000])
    return samples


def settle_where(port, pred, timeout=5.0):
    """Scrapes until pred(samples) holds; the last samples."""
    deadline = time.monotonic() + timeout
    while True:
        samples = parse_exposition(http_get(port, "/metrics")[2])[0]
        if pred(samples) or time.monotonic() >= deadline:
            return samples
        time.sleep(0.05)


def metrics_start(c, port):
    """The driver's start: build, liveness, registration, devices, slices."""
    tap = c.tap
    d, reg, cl = c.up(["--rescan-interval", "1", "--metrics-address", "127.0.0.1:%d" % port])
    tap.ok(d.wait_log("serving metrics on http://127.0.0.1:%d/metrics" % port),
           "the address is logged", d.log_text())
    m = scrape(c, port)
    check_build(tap, m, c.args.rdma_cdi, "dra", d.log_text())
    status, _, body = http_get(port, "/healthz")
    tap.ok(status == 200 and body == "ok\n", "a healthy driver: /healthz 200 ok (%s)" % status)
    m = settle(port, m, 1, "rdma_cdi_kubelet_registered", resource=DRIVER)
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=DRIVER) == 1 and
           metric(m, "rdma_cdi_registrations_total", resource=DRIVER, result="ok") == 1,
           "registered: rdma_cdi_kubelet_registered{resource=%s} 1, one registration ok" %
           DRIVER, series(m, "rdma_cdi_kubelet_registered"))
    health = series(m, "rdma_cdi_device_healthy")
    pools = {dict(k)["pool"] for k in health}
    pool = pools.pop() if len(pools) == 1 else None
    by_dev = {dict(k)["device"]: (v, dict(k)) for k, v in health.items()}
    tap.ok(len(health) == 10 and pool and by_dev.get("mlx5_2", (0, {}))[0] == 1 and
           by_dev["mlx5_2"][1]["pci"] == "0000:3b:00.0" and by_dev["mlx5_2"][1]["reason"] == "",
           "rdma_cdi_device_healthy: the 10 devices published, mlx5_2 1 with its PCI address",
           health)
    n_ok = sum(1 for v in health.values() if v == 1)
    tap.ok(metric(m, "rdma_cdi_devices", resource=pool, health="healthy") == n_ok and
           metric(m, "rdma_cdi_devices", resource=pool, health="unhealthy") == 10 - n_ok,
           "rdma_cdi_devices{resource=%s}: %d healthy, %d unhealthy" % (pool, n_ok, 10 - n_ok))
    tap.ok(metric(m, "rdma_cdi_rescans_total", reason="start", result="ok") == 1 and
           len(series(m, "rdma_cdi_netns_mode")) == 1,
           "the first scan counted, the netns mode exported")
    m = settle_where(port, lambda s: (metric(s, "rdma_cdi_dra_slice_publish_total",
                                             result="ok") or 0) >= 1)
    tap.ok((metric(m, "rdma_cdi_dra_slice_publish_total", result="ok") or 0) >= 1 and
           metric(m, "rdma_cdi_dra_slice_publish_total", result="failed") == 0,
           "the slice writes counted, none failed")
    return d, reg, cl, pool


def metrics_health_change(c, port, pool):
    """A port goes DOWN in the fixture sysfs; the slice write that follows fails once."""
    tap = c.tap
    key = dict(device="mlx5_2", pci="0000:3b:00.0", pool=pool)
    before = parse_exposition(http_get(port, "/metrics")[2])[0]
    t_before = metric(before, "rdma_cdi_device_health_last_change_timestamp_seconds", **key)
    time.sleep(1.1)  # the timestamp is in seconds
    c.api.fail_next(1, 500, method="PUT", path_prefix=SLICES)
    set_port_state(c.sysfs, "mlx5_2", "1: DOWN")
    m = settle_where(port, lambda s: series(s, "rdma_cdi_device_healthy", device="mlx5_2") and
                     list(series(s, "rdma_cdi_device_healthy", device="mlx5_2").values())[0] == 0)
    down = series(m, "rdma_cdi_device_healthy", device="mlx5_2")
    tap.ok(len(down) == 1 and list(down.values())[0] == 0 and
           "DOWN" in dict(list(down)[0])["reason"],
           "port DOWN: rdma_cdi_device_healthy of mlx5_2 0, the reason says DOWN", down)
    t_after = metric(m, "rdma_cdi_device_health_last_change_timestamp_seconds", **key)
    tap.ok(t_before and t_after and t_after > t_before,
           "its last change time moves (%s -> %s)" % (t_before, t_after))
    m = settle_where(port, lambda s: metric(s, "rdma_cdi_dra_slice_publish_total",
                                            result="failed") == 1)
    tap.ok(metric(m, "rdma_cdi_dra_slice_publish_total", result="failed") == 1,
           "the refused slice update counted as failed")


def metrics_claims(c, port, cl):
    tap = c.tap
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0")])
    uid = claim["metadata"]["uid"]
    tap.ok(cl.prepare([("default", "c1", uid)])[uid]["error"] == "", "Prepare of c1")
    tap.ok(cl.prepare([("default", "gone", "uid-gone")])["uid-gone"]["error"] != "",
           "Prepare of a claim the API server does not have fails")
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""}, "Unprepare of c1")
    m = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_dra_prepare_total", result="ok") == 1 and
           metric(m, "rdma_cdi_dra_prepare_total", result="failed") == 1 and
           metric(m, "rdma_cdi_dra_unprepare_total", result="ok") == 1 and
           metric(m, "rdma_cdi_dra_unprepare_total", result="failed") == 0,
           "claims: prepare 1 ok 1 failed, unprepare 1 ok",
           series(m, "rdma_cdi_dra_prepare_total"))
    tap.ok(not series(m, "rdma_cdi_allocate_total"), "no bridge series in the driver")


def metrics_config(c, port, d):
    tap = c.tap
    with open(c.config, "w") as f:
        f.write("pools: [ {resourceName: rdma.example/ib, mode: sideways} ]\n")
    tap.ok(d.wait_log("rejected, the previous config stays in force"), "invalid config rejected")
    m = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_config_rejected") == 1 and
           metric(m, "rdma_cdi_config_reloads_total", result="rejected") == 1,
           "rdma_cdi_config_rejected 1, one reload rejected")
    with open(c.config, "w") as f:
        f.write("")
    tap.ok(d.wait_log("config %s applied" % c.config), "the defaults again: applied")
    m = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_config_rejected") == 0 and
           metric(m, "rdma_cdi_config_reloads_total", result="applied") == 1,
           "rdma_cdi_config_rejected 0, one reload applied")


def metrics_registration_lost(c, port):
    """The registration socket goes while no kubelet looks: 0 until registered again."""
    tap = c.tap
    c.watcher.stop()
    os.unlink(os.path.join(c.registry_dir, DRIVER + "-reg.sock"))
    m = settle_where(port, lambda s: metric(s, "rdma_cdi_kubelet_registered",
                                            resource=DRIVER) == 0)
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=DRIVER) == 0,
           "registration socket removed: rdma_cdi_kubelet_registered 0")
    c.watcher.start()
    m = settle(port, m, 2, "rdma_cdi_registrations_total", resource=DRIVER, result="ok")
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=DRIVER) == 1 and
           metric(m, "rdma_cdi_registrations_total", resource=DRIVER, result="ok") == 2,
           "the kubelet registers it again: 1, two registrations ok")


def sc_metrics(c):
    """--metrics-address on the DRA driver: the same endpoint and names as the bridge's,
    values that follow the driver's events, and its own series."""
    port = free_port()
    d, reg, cl, pool = metrics_start(c, port)
    metrics_health_change(c, port, pool)
    metrics_claims(c, port, cl)
    metrics_config(c, port, d)
    metrics_registration_lost(c, port)
    status, _, _ = http_get(port, "/nope")
    c.tap.ok(status == 404, "GET /nope is 404")


def sc_healthz(c):
    """/healthz is answered by the driver's loop: stuck in the rename of the spec's temp
    file, 503 while /metrics answers; released, 200 again and the driver goes on."""
    tap = c.tap
    port = free_port()
    mark, release = os.path.join(c.work, "paused"), os.path.join(c.work, "release")
    d = c.driver(["--metrics-address", "127.0.0.1:%d" % port], start=False)
    d.start(env=spec_files.paused_writer_env(c.args.pause_rename, "rdma.example-hca.json",
                                             mark, release))
    deadline = time.monotonic() + 10
    while not os.path.exists(mark) and time.monotonic() < deadline:
        time.sleep(0.02)
    if not tap.ok(os.path.exists(mark), "the driver's loop stops at the rename of its spec "
                  "temp", d.log_text()):
        return
    healthz_stuck(tap, port, "stuck DRA driver")
    open(release, "w").close()
    deadline, status = time.monotonic() + 10, None
    while status != 200 and time.monotonic() < deadline:
        status, _, body = http_get(port, "/healthz")
    tap.ok(status == 200 and body == "ok\n", "released: /healthz 200 ok again")
    c.registered()
    tap.ok(c.wait_devices(lambda ds: len(ds) == 10, 10) is not None,
           "and the driver publishes its slices")


EVENTS_PATH = "/api/v1/namespaces/default/events"


def events_of(c, rdma):
    """The Node events about one RDMA device, oldest first."""
    return [e for e in c.api.node_events(NODE) if (" %s (" % rdma) in e.get("message", "")]


def check_event(tap, ev, rdma, healthy, what):
    """One Event's fields as docs/dra.md promises them."""
    pci = DGX[rdma][0]
    want = {"type": "Normal" if healthy else "Warning",
            "reason": "RdmaDeviceHealthy" if healthy else "RdmaDeviceUnhealthy",
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE},
            "source": {"component": DRIVER, "host": NODE},
            "reportingComponent": DRIVER, "reportingInstance": NODE, "count": 1}
    got = {k: ev.get(k) for k in want}
    msg = ev.get("message", "")
    tap.ok(got == want and ev["metadata"]["namespace"] == "default" and
           ev["metadata"]["name"].startswith(NODE + ".") and
           all(x in msg for x in (rdma, dev_name(rdma), pci, "pool rdma.example/hca")) and
           (("healthy again (was: port 1 DOWN)" in msg) if healthy else
            msg.endswith("is unhealthy: port 1 DOWN")) and
           ev.get("firstTimestamp") == ev.get("lastTimestamp") is not None,
           what, json.dumps(ev, indent=1))


def sc_events(c):
    """Node events: a device going unhealthy, then healthy, makes exactly two events with
    the documented fields; a flapping device is held to one event per 10 s, its state at
    the end of the interval coalesced."""
    tap = c.tap
    d, reg, cl = c.up(["--rescan-interval", "1"])
    h = c.health(reg)
    h.wait(lambda ls: len(ls) > 0, 5)
    time.sleep(1.5)
    tap.ok(c.api.node_events() == [], "no event at start (mlx5_9 was DOWN already: the "
           "slices say so)", c.api.node_events())
    set_port_state(c.sysfs, "mlx5_2", "1: DOWN")
    t0 = time.monotonic()
    evs = c.api.wait_for(lambda: events_of(c, "mlx5_2"), RESCAN_WAIT)
    tap.ok(len(evs or []) == 1, "port DOWN: one event within %.1f s" % (time.monotonic() - t0),
           evs)
    if evs:
        check_event(tap, evs[0], "mlx5_2", False, "... Warning RdmaDeviceUnhealthy on the "
                    "Node, naming the device, its PCI address, pool and reason")
    set_port_state(c.sysfs, "mlx5_2", "4: ACTIVE")
    evs = c.api.wait_for(lambda: len(events_of(c, "mlx5_2")) >= 2 and events_of(c, "mlx5_2"),
                         16)
    dt = time.monotonic() - t0
    tap.ok(evs and len(evs) == 2 and 9 < dt < 16,
           "ACTIVE again: the second event, 10 s after the first (the per-device interval: "
           "%.1f s)" % dt, evs)
    if evs:
        check_event(tap, evs[1], "mlx5_2", True, "... Normal RdmaDeviceHealthy, saying what "
                    "it was")
    tap.ok([e["message"] for e in c.api.node_events()] ==
           [e["message"] for e in events_of(c, "mlx5_2")],
           "no event about any other device", c.api.node_events())

    # Flapping: six transitions within a few seconds (each made seen at once by SIGHUP's
    # rescan, whatever the rescan period under a sanitizer); the Node gets two events.
    name, seen = dev_name("mlx5_3"), 0
    for i in range(6):
        want = "UNHEALTHY" if i % 2 == 0 else "HEALTHY"
        set_port_state(c.sysfs, "mlx5_3", "1: DOWN" if want == "UNHEALTHY" else "4: ACTIVE")
        d.proc.send_signal(signal.SIGHUP)
        seen += h.wait(lambda ls: getattr(health_of(ls[-1], name), "health", "") == want,
                       3) is not None
    t1 = time.monotonic()
    tap.ok(seen == 6, "the device flapped: the health stream saw %d of 6 transitions" % seen)
    evs = c.api.wait_for(lambda: len(events_of(c, "mlx5_3")) >= 2, 14)
    time.sleep(1.5)
    evs = events_of(c, "mlx5_3")
    tap.ok([e["reason"] for e in evs] == ["RdmaDeviceUnhealthy", "RdmaDeviceHealthy"],
           "... and the Node got two events: the first DOWN at once, then its state 10 s "
           "later (the flaps in between coalesced; %.1f s after the last flap)"
           % (time.monotonic() - t1), [e["message"] for e in evs])


def sc_events_refused(c):
    """An API server that refuses events (403: no RBAC for them) disturbs nothing: slices
    follow health, Prepare works; the failure is logged once, and the recovery."""
    tap = c.tap
    c.api.fail_next(-1, 403, method="POST", path_prefix=EVENTS_PATH,
                    message='events is forbidden: User "system:serviceaccount:rdma-cdi:'
                    'rdma-cdi-dra" cannot create resource "events" in API group "" in the '
                    'namespace "default"')
    d, reg, cl = c.up(["--rescan-interval", "1"])
    for n, rdma in enumerate(("mlx5_2", "mlx5_3")):
        set_port_state(c.sysfs, rdma, "1: DOWN")
        devs = c.wait_devices(lambda ds: (ds.get(dev_name(rdma)) or {}).get("taints"),
                              RESCAN_WAIT)
        posts = c.api.wait_for(lambda: len(c.api.requests_matching("POST", EVENTS_PATH)) > n,
                               5)
        tap.ok(devs is not None and posts, "%s DOWN: tainted in the slices while its event is "
               "refused" % rdma)
    claim = c.api.add_claim("default", "c1", results=[result("mlx5_0")])
    uid = claim["metadata"]["uid"]
    ans = cl.prepare([("default", "c1", uid)])
    tap.ok(ans[uid]["error"] == "" and os.path.exists(c.claim_spec(uid)),
           "Prepare answers and writes the claim spec", ans)
    log = d.log_text()
    tap.ok(log.count("recording a Node event failed") == 1 and "forbidden" in log,
           "the refusal is logged once, with the server's reason", log[-3000:])
    tap.ok(c.api.node_events() == [], "no event stored")
    c.api.clear_faults()
    set_port_state(c.sysfs, "mlx5_4", "1: DOWN")
    evs = c.api.wait_for(lambda: events_of(c, "mlx5_4"), RESCAN_WAIT)
    tap.ok(evs and d.wait_log("Node events are recorded again"),
           "events allowed again: the next one is stored, and the log says so")


SCENARIOS = {
    "metrics": sc_metrics,
    "healthz": sc_healthz,
    "registration": sc_registration,
    "slices": sc_slices,
    "slices-wiped": sc_slices_wiped,
    "prepare": sc_prepare,
    "bad-claims": sc_bad_claims,
    "restart": sc_restart,
    "hotplug": sc_hotplug,
    "port-down": sc_port_down,
    "lent": sc_lent,
    "spec-blocked": sc_spec_blocked,
    "pools": sc_pools,
    "admin-share": sc_admin_share,
    "wrong-ca": sc_wrong_ca,
    "podman": sc_podman,
    "valgrind": sc_valgrind,
    "events": sc_events,
    "events-refused": sc_events_refused,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi")
    ap.add_argument("--mksysfs")
    ap.add_argument("--proto-dir")
    ap.add_argument("--hook")
    ap.add_argument("--pause-rename", help="tests/tools/pause-rename.c as a shared library")
    ap.add_argument("--inner-podman")
    ap.add_argument("--spec-dir")
    ap.add_argument("--out")
    ap.add_argument("scenario", nargs="*")
    args = ap.parse_args()
    if args.inner_podman:
        args.ids = args.scenario
        return inner_podman(args)
    if len(args.scenario) != 1 or args.scenario[0] not in SCENARIOS:
        ap.error("one scenario of %s" % ", ".join(sorted(SCENARIOS)))
    # meson passes build-relative paths; the driver wants an absolute hook path.
    args.rdma_cdi, args.hook = os.path.abspath(args.rdma_cdi), os.path.abspath(args.hook)
    tap = Tap()
    c = Ctx(args, tap)
    try:
        SCENARIOS[args.scenario[0]](c)
    except SystemExit:
        raise
    except Exception as e:  # a crash of the scenario is a failure, with the driver log
        import traceback
        tap.ok(False, "scenario raised %r" % e, traceback.format_exc() + c.log()[-4000:])
    return c.close()


if __name__ == "__main__":
    sys.exit(main())
