# SPDX-License-Identifier: Apache-2.0
"""Guest steps for the long-running modes on the real kernel (guest_checks.py runs them):
the bridge under the kubelet double, `generate --watch`, the DRA driver under the
API-server and kubelet DRA doubles, and the benchmark figures.

Real events: `rdma link delete/add rxe1` (the device and its uverbs node vanish and come
back, as on hot-unplug) and `ip link set veth0 down/up` (rxe0's port follows the carrier).
Timing is bounded by what the daemon says: TCG is 10-50x slower than the host, and the
daemons stretch their periodic rescan to stay under 0.1 % of a core, and log the period.
"""

import contextlib
import ctypes
import importlib.util
import statistics
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
sys.path.insert(0, os.path.join(HERE, "..", "dra"))

KIND = "rdma.example/hca"
# How long a hotplug event may take to reach the kubelet double in the VM (inotify; the
# host's suite asks for 1 s, TCG is up to 50x slower and shares the host's 2 cores).
EVENT_BOUND = 30.0
STRETCHED = re.compile(r"running it every (\d+) s")


def load_test_dra():
    """tests/dra/test-dra.py as a module: its Driver and kubeconfig writer."""
    spec = importlib.util.spec_from_file_location(
        "test_dra", os.path.join(HERE, "..", "dra", "test-dra.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    """{(name, ((label, value), ...)): value} of GET /metrics, or {} when it fails."""
    import http.client
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics")
        body = conn.getresponse().read().decode()
        conn.close()
    except OSError:
        return {}
    out = {}
    for line in body.splitlines():
        m = re.match(r'^([a-z_:]+)(?:\{(.*)\})? (\S+)$', line)
        if m:
            labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def devices_metric(port, health):
    return scrape(port).get(("rdma_cdi_devices", (("health", health), ("resource", KIND))))


def ids_health(lst):
    return {d.ID: d.health for d in lst or []}


def spec_devices(path):
    try:
        with open(path) as f:
            return {d["name"] for d in json.load(f)["devices"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def rescan_bound(log, base):
    """The periodic rescan's period as the daemon logged it (base when it did not stretch
    it), plus one period for the scan in flight and TCG's jitter."""
    periods = [int(p) for p in STRETCHED.findall(log)]
    period = periods[-1] if periods else base
    return 2 * period + 5, period


def hotplug(g, before, after, wait_gone, wait_back):
    """rdma link delete rxe1, then add it again: (seconds to gone, seconds to back), or
    None for one that did not happen within EVENT_BOUND. before/after run around each."""
    before()
    t0 = time.monotonic()
    g.must(["rdma", "link", "delete", "rxe1"], "rdma link delete rxe1")
    gone = wait_gone(EVENT_BOUND)
    gone_s = time.monotonic() - t0 if gone else None
    after()
    before()
    t0 = time.monotonic()
    g.add_rxe("rxe1")
    back = wait_back(EVENT_BOUND)
    back_s = time.monotonic() - t0 if back else None
    after()
    return gone_s, back_s


# ---- the bridge ---------------------------------------------------------------------


@contextlib.contextmanager
def running_bridge(g, name):
    """The kubelet double and `rdma-cdi bridge` on the real /sys and /dev, with metrics:
    yields (kubelet double, bridge, metrics port); both stopped on the way out."""
    import kubelet_double as kd
    work = os.path.join(g.work, name)
    plugin_dir = os.path.join(work, "plugins")
    os.makedirs(plugin_dir)
    k = kd.Kubelet(plugin_dir, os.path.join(g.args.proto_dir, "deviceplugin.proto")).start()
    port = free_port()
    b = kd.Bridge(g.rdma_cdi, work, "/sys", "/dev", plugin_dir=plugin_dir,
                  extra=["--hook-path", g.args.hook, "--rescan-interval", "2",
                         "--metrics-address", "127.0.0.1:%d" % port]).start()
    try:
        yield k, b, port
    finally:
        b.stop()
        k.stop()


def step_bridge(g):
    with running_bridge(g, "bridge") as (k, b, port):
        bridge_checks(g, k, b, port)
    g.tap.ok(b.proc.returncode == 0, "the bridge exits 0 on SIGTERM", b.log_text()[-3000:])


def bridge_checks(g, k, b, port):
    tap = g.tap
    if not tap.ok(k.wait_registrations(1, 90) is not None, "the bridge registered",
                  b.log_text()):
        return
    # The kernel's default mode, from RDMA netlink: the start line and the metric.
    tap.ok("RDMA netns mode: shared" in b.log_text() and
           scrape(port).get(("rdma_cdi_netns_mode", (("mode", "shared"),))) == 1,
           "the bridge logs 'RDMA netns mode: shared' at start and exports "
           "rdma_cdi_netns_mode{mode=\"shared\"} 1", b.log_text())
    stream = k.latest_stream()
    lst = stream.wait(timeout=60)
    tap.ok(ids_health(lst) == {"rxe0": "Healthy", "rxe1": "Healthy"},
           "ListAndWatch: rxe0 and rxe1 by RDMA name (no PCI address), Healthy",
           "%s\n%s" % (ids_health(lst), b.log_text()))
    stub = k.plugin_stub()
    resp = stub.Allocate(k.pb.AllocateRequest(container_requests=[
        k.pb.ContainerAllocateRequest(devices_ids=["rxe0"])]), timeout=30)
    tap.ok([d.name for d in resp.container_responses[0].cdi_devices] == [KIND + "=rxe0"],
           "Allocate of rxe0 answers the CDI name %s=rxe0" % KIND, resp)
    spec = b.spec_path()
    n = [0]

    def mark():
        n[0] = len(stream.lists)

    # Removal: the list without rxe1 first, then the spec without it; addition: the
    # spec first, then the list (docs: a kubelet never gets an ID the spec lacks).
    gone_s, back_s = hotplug(
        g, mark, lambda: None,
        lambda t: stream.wait(lambda ls: len(ls) > n[0] and "rxe1" not in ids_health(ls[-1]),
                              t) and wait_spec(spec, lambda s: "rxe1" not in s, t),
        lambda t: stream.wait(lambda ls: len(ls) > n[0] and "rxe1" in ids_health(ls[-1]), t))
    log = b.log_text()
    tap.ok(gone_s is not None and "rxe1 (no PCI address): removed" in log,
           "rdma link delete rxe1: the kubelet's list and the spec lose it (%s), logged" %
           ("%.0f ms" % (gone_s * 1000) if gone_s else "never"), log)
    adv, wrote = log.find("advertising 1 device IDs"), log.find("(1 usable devices)")
    tap.ok(0 <= adv < wrote, "removal: the list without rxe1 went out before the spec lost it",
           log)
    log = b.log_text()
    adv2 = log.rfind("advertising 2 device IDs")
    wrote2 = log.rfind("(2 usable devices)")
    tap.ok(back_s is not None and 0 <= wrote2 < adv2 and "rxe1" in (spec_devices(spec) or ()),
           "rdma link add rxe1: spec written, then advertised again (%s)" %
           ("%.0f ms" % (back_s * 1000) if back_s else "never"), log)
    g.figures["bridge_removal_ms"] = gone_s and round(gone_s * 1000)
    g.figures["bridge_addition_ms"] = back_s and round(back_s * 1000)
    port_flap(g, b, stream, port)


def wait_spec(path, pred, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = spec_devices(path)
        if s is not None and pred(s):
            return True
        time.sleep(0.05)
    return False


def port_flap(g, b, stream, port):
    """veth0's carrier: rxe0's port DOWN and ACTIVE again, seen by the periodic rescan."""
    tap = g.tap
    bound, period = rescan_bound(b.log_text(), 2)
    t0 = time.monotonic()
    g.must(["ip", "link", "set", "veth0", "down"], "ip link set veth0 down")
    lst = stream.wait(lambda ls: ids_health(ls[-1]).get("rxe0") == "Unhealthy", bound)
    down_s = time.monotonic() - t0
    tap.ok(lst is not None and ids_health(lst).get("rxe1") == "Healthy",
           "veth0 down: rxe0 Unhealthy in %.1f s (rescan every %d s as logged, bound %d s), "
           "rxe1 stays Healthy" % (down_s, period, bound), b.log_text())
    tap.ok(b.wait_log("rxe0 (no PCI address): Unhealthy: port 1 DOWN", 10),
           "the reason is logged: port 1 DOWN", b.log_text())
    tap.ok(devices_metric(port, "unhealthy") == 1 and devices_metric(port, "healthy") == 1,
           "the metrics endpoint agrees: 1 healthy, 1 unhealthy", scrape(port))
    bound, period = rescan_bound(b.log_text(), 2)
    t0 = time.monotonic()
    g.must(["ip", "link", "set", "veth0", "up"], "ip link set veth0 up")
    lst = stream.wait(lambda ls: ids_health(ls[-1]).get("rxe0") == "Healthy", bound)
    tap.ok(lst is not None and b.wait_log("rxe0 (no PCI address): Healthy again", 10),
           "veth0 up: rxe0 Healthy again in %.1f s, logged" % (time.monotonic() - t0),
           b.log_text())
    tap.ok(devices_metric(port, "healthy") == 2 and devices_metric(port, "unhealthy") == 0,
           "the metrics endpoint agrees: 2 healthy", scrape(port))
    g.figures["carrier_loss_unhealthy_s"] = round(down_s, 1) if lst is not None else None
    g.figures["rescan_period_s"] = period


# ---- generate --watch ---------------------------------------------------------------


def step_watch(g):
    tap = g.tap
    spec_dir = os.path.join(g.work, "watch")
    path = os.path.join(spec_dir, "rdma.example-hca.json")
    log = open(os.path.join(g.work, "watch.log"), "w+")
    p = subprocess.Popen([g.rdma_cdi, "generate", "--watch", "--spec-dir", spec_dir,
                          "--hook-path", g.args.hook, "--rescan-interval", "2"],
                         stdout=log, stderr=subprocess.STDOUT)

    def text():
        log.flush()
        with open(log.name) as f:
            return f.read()

    try:
        tap.ok(wait_spec(path, lambda s: {"rxe0", "rxe1"} <= s, 60),
               "generate --watch writes the spec of rxe0 and rxe1", text())
        gone_s, back_s = hotplug(
            g, lambda: None, lambda: None,
            lambda t: wait_spec(path, lambda s: "rxe1" not in s and "rxe0" in s, t),
            lambda t: wait_spec(path, lambda s: "rxe1" in s, t))
        tap.ok(gone_s is not None, "rdma link delete rxe1: the spec loses it (%s)" %
               ("%.0f ms" % (gone_s * 1000) if gone_s else "never"), text())
        tap.ok(back_s is not None, "rdma link add rxe1: the spec has it again (%s)" %
               ("%.0f ms" % (back_s * 1000) if back_s else "never"), text())
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
    tap.ok(rc == 0, "generate --watch exits 0 on SIGTERM", text()[-3000:])
    log.close()


# ---- the DRA driver -----------------------------------------------------------------


def step_dra(g):
    import apiserver_double as asd
    import kubelet_dra_double as kdd
    tap = g.tap
    td = load_test_dra()
    work = os.path.join(g.work, "dra")
    c = types.SimpleNamespace(work=work, args=types.SimpleNamespace(rdma_cdi=g.rdma_cdi,
                                                                    hook=g.args.hook),
                              sysfs="/sys", dev="/dev", spec_dir="/var/run/cdi",
                              registry_dir=os.path.join(work, "plugins_registry"),
                              plugin_dir=os.path.join(work, "plugins", td.DRIVER),
                              config=os.path.join(work, "config.yaml"),
                              kubeconfig=os.path.join(work, "kubeconfig"))
    os.makedirs(c.registry_dir)
    os.makedirs(c.spec_dir, exist_ok=True)
    open(c.config, "w").close()
    api = asd.ApiServer(os.path.join(work, "api")).start()
    td.write_kubeconfig(c.kubeconfig, api)
    protos = kdd.load_protos(g.args.proto_dir)
    watcher = kdd.PluginWatcher(c.registry_dir, protos, driver=td.DRIVER).start()
    d = td.Driver(c).start()
    try:
        dra_checks(g, td, kdd, c, api, watcher, protos, d)
    finally:
        rc = d.stop()
        watcher.stop()
        api.stop()
    tap.ok(rc == 0, "the DRA driver exits 0 on SIGTERM", d.log_text()[-3000:])


def dra_checks(g, td, kdd, c, api, watcher, protos, d):
    tap = g.tap
    reg = watcher.wait_registrations(1, 90)
    if not tap.ok(reg is not None and reg.ok, "the DRA driver registered", d.log_text()):
        return
    deadline = time.monotonic() + 60
    devs = {}
    while time.monotonic() < deadline and len(devs) < 2:
        devs = api.devices(td.DRIVER, td.NODE)
        time.sleep(0.2)
    tap.ok(sorted(devs) == ["rdma-rxe0", "rdma-rxe1"],
           "ResourceSlice: rdma-rxe0 and rdma-rxe1 (no PCI address: the RDMA name)",
           "%s\n%s" % (sorted(devs), d.log_text()))
    a = (devs.get("rdma-rxe0") or {}).get("attributes", {})
    tap.ok(a.get(td.DRIVER + "/rdmaDevice") == {"string": "rxe0"} and
           a.get(td.DRIVER + "/linkLayer") == {"string": "Ethernet"} and
           a.get(td.DRIVER + "/netdev") == {"string": "veth0"} and
           "resource.kubernetes.io/pciBusID" not in a, "rdma-rxe0's attributes: rxe0, "
           "Ethernet, netdev veth0, no PCI bus ID", a)
    claim = api.add_claim("default", "c1", results=[
        {"request": "nic", "driver": td.DRIVER, "pool": td.NODE, "device": "rdma-rxe0"}])
    uid = claim["metadata"]["uid"]
    cl = kdd.DRAClient(reg.info.endpoint, protos, version=reg.dra_version)
    ans = cl.prepare([("default", "c1", uid)]).get(uid, {})
    ids = [i for x in ans.get("devices", []) for i in x["cdi_device_ids"]]
    tap.ok(ans.get("error") == "" and ids[:1] == [KIND + "=rxe0"],
           "Prepare of a claim for rdma-rxe0: CDI names %s" % ids, ans)
    uverbs = os.stat("/dev/infiniband/uverbs0").st_rdev
    script = ("cd /dev/infiniband && /bin/busybox ls && /bin/busybox stat -c 'rdev=%t:%T' "
              "uverbs0 && echo env=$RDMA_CDI_DEVICES")
    argv = g.podman_base() + [a for i in ids for a in ("--device", i)] + \
        ["--rootfs", g.rootfs(), "/bin/busybox", "sh", "-c", script]
    r = g.run(argv, 120)
    want = "rdev=%x:%x" % (os.major(uverbs), os.minor(uverbs))
    tap.ok(r.returncode == 0 and r.stdout.split()[:2] == ["rdma_cm", "uverbs0"] and
           want in r.stdout and "env=rxe0" in r.stdout,
           "podman resolves Prepare's names: the real uverbs0 (%s), rdma_cm, "
           "RDMA_CDI_DEVICES=rxe0" % want, r.stdout + r.stderr)
    tap.ok(cl.unprepare([("default", "c1", uid)]) == {uid: ""}, "Unprepare succeeds")
    cl.close()


# ---- benchmark: real events, each beside its floor ----------------------------------

IN_CREATE, IN_DELETE = 0x100, 0x200


class Inotify:
    """The floor of any hotplug watcher: the kernel's inotify event for a device node."""

    def __init__(self, path, mask):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, path.encode(), mask) < 0:
            raise OSError(ctypes.get_errno(), "inotify on " + path)

    def wait(self, name, timeout):
        """time.monotonic() when an event names name (it may have come already), or None
        after timeout seconds."""
        import select
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not select.select([self.fd], [], [], timeout)[0]:
                return None
            if name.encode() in os.read(self.fd, 4096):
                return time.monotonic()
        return None

    def close(self):
        os.close(self.fd)


def step_bench_events(g, rounds=5):
    """rdma link delete/add rxe1 and veth0's carrier, timed to the kubelet double's list,
    each next to its floor: inotify's event for uverbs1, sysfs's port state."""
    tap = g.tap
    fig = {"removal": [], "removal_floor": [], "addition": [], "addition_floor": [],
           "unhealthy": [], "unhealthy_floor": []}
    with running_bridge(g, "bench") as (k, b, port):
        if k.wait_registrations(1, 90) is None or k.latest_stream().wait(timeout=60) is None:
            tap.ok(False, "the bridge registered for the benchmark", b.log_text())
            return
        stream = k.latest_stream()
        for _ in range(rounds):
            for what, mask, argv, pred in (
                    ("removal", IN_DELETE, ["rdma", "link", "delete", "rxe1"],
                     lambda ls: "rxe1" not in ids_health(ls[-1])),
                    ("addition", IN_CREATE, None, lambda ls: "rxe1" in ids_health(ls[-1]))):
                n = len(stream.lists)
                ino = Inotify("/dev/infiniband", mask)
                t0 = time.monotonic()
                # The event is read after the command returns, but its time is taken
                # in a thread that waits while the command runs.
                seen = []
                th = threading.Thread(target=lambda: seen.append(
                    ino.wait("uverbs1", EVENT_BOUND)))
                th.start()
                g.must(argv, what) if argv else g.add_rxe("rxe1")
                th.join()
                ino.close()
                got = stream.wait(lambda ls: len(ls) > n and pred(ls), EVENT_BOUND)
                fig[what].append(time.monotonic() - t0 if got else None)
                fig[what + "_floor"].append(seen[0] - t0 if seen and seen[0] else None)
        bound, period = rescan_bound(b.log_text(), 2)
        for _ in range(max(2, rounds // 2)):
            state = "/sys/class/infiniband/rxe0/ports/1/state"
            t0 = time.monotonic()
            g.must(["ip", "link", "set", "veth0", "down"], "veth0 down")
            wait_for_file(state, "DOWN", bound)
            fig["unhealthy_floor"].append(time.monotonic() - t0)
            got = stream.wait(lambda ls: ids_health(ls[-1]).get("rxe0") == "Unhealthy", bound)
            fig["unhealthy"].append(time.monotonic() - t0 if got else None)
            g.must(["ip", "link", "set", "veth0", "up"], "veth0 up")
            stream.wait(lambda ls: ids_health(ls[-1]).get("rxe0") == "Healthy", bound)
        bound, period = rescan_bound(b.log_text(), 2)
    complete = all(None not in v for v in fig.values())
    tap.ok(complete, "every timed event reached the kubelet double (%d rounds)" % rounds,
           json.dumps(fig))
    if complete:
        for key, v in fig.items():
            g.figures[key + "_ms"] = round(statistics.median(v) * 1000, 1)
        g.figures["rescan_period_s"] = period
        g.figures["rounds"] = rounds


def wait_for_file(path, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if text in f.read():
                    return True
        except OSError:
            pass
        time.sleep(0.01)
    return False
