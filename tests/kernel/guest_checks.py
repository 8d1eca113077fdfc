#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The checks that run inside the soft-RoCE VM (guest.sh starts this), TAP on stdout.

  guest_checks.py BASE64-JSON   (from test-kernel.py: paths, the plan A,B,...)

Each plan step is a function below; they share one Guest (the kernel modules loaded so
far, the rxe devices, a work dir). Every command runs under a timeout: a step that hangs
fails with what it printed, and the next step still runs.
"""

import argparse
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402
sys.path.insert(0, HERE)
import guest_daemons  # noqa: E402
import guest_netns  # noqa: E402

# The RDMA stack rxe needs, in the order the notes found (crc32_generic first, or rxe
# fails "failed to init crc32 algorithm"); modprobe adds the rest from modules.dep.
RDMA_MODULES = ["crc32_generic", "rdma_rxe", "rdma_ucm", "veth"]
# Each rxe device on its own veth pair: one carrier per device, so taking veth0 down
# changes rxe0 alone.
RXE = {"rxe0": ("veth0", "veth0p", "10.20.0.1"), "rxe1": ("veth1", "veth1p", "10.20.1.1")}


class Guest:
    def __init__(self, args, tap):
        self.args = args
        self.tap = tap
        self.src = args.source_root
        self.kdir = args.kernel_dir
        with open(os.path.join(self.kdir, "VERSION")) as f:
            self.kver = f.read().strip()
        self.rdma_cdi = args.rdma_cdi
        self.work = tempfile.mkdtemp(prefix="rdma-cdi-kernel-")
        self.figures = {}
        self._rootfs = None

    def run(self, argv, timeout=60, **kw):
        """argv under a timeout: a CompletedProcess; a timeout is returncode 124 with
        what was printed so far, never an exception."""
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
            return subprocess.CompletedProcess(argv, 124, out or "",
                                               (err or "") + "\n[timed out after %ss]" % timeout)

    def must(self, argv, what, timeout=60):
        """A set-up command that has to work: a failed TAP line with its output if not."""
        r = self.run(argv, timeout)
        if r.returncode != 0:
            self.tap.ok(False, what, "%s: exit %d\n%s%s" % (" ".join(argv), r.returncode,
                                                            r.stdout, r.stderr))
        return r.returncode == 0

    def modprobe(self, *names):
        ok = True
        for n in names:
            ok &= self.must(["modprobe", "-d", self.kdir, "-S", self.kver, n], "modprobe " + n)
        return ok

    def cli(self, *args, timeout=60):
        return self.run([self.rdma_cdi] + list(args), timeout)

    def podman_base(self):
        """podman run for the guest: every capability dropped, the guest's network."""
        return PODMAN + ["run", "--rm", "--cap-drop", "all", "--network", "host"]

    def rootfs(self):
        if not self._rootfs:
            self._rootfs = make_rootfs(self)
        return self._rootfs

    def add_rxe(self, name):
        veth, peer, addr = RXE[name]
        if not os.path.exists("/sys/class/net/" + veth):
            self.must(["ip", "link", "add", veth, "type", "veth", "peer", "name", peer],
                      "veth pair " + veth)
            self.must(["ip", "addr", "add", addr + "/24", "dev", veth], "address on " + veth)
            self.must(["ip", "link", "set", peer, "up"], peer + " up")
            self.must(["ip", "link", "set", veth, "up"], veth + " up")
        return self.must(["rdma", "link", "add", name, "type", "rxe", "netdev", veth],
                         "rdma link add " + name)


def wait_for(pred, timeout, step=0.05):
    """Polls pred until it is true or timeout seconds pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


# ---- steps --------------------------------------------------------------------------


def doctor_json(g):
    """(exit status, {check id: check}) of `doctor --json`; None for checks when the
    output is not JSON."""
    r = g.cli("doctor", "--json", "--host-root", "/", timeout=120)
    try:
        doc = json.loads(r.stdout)
        return r, {c["id"]: c for c in doc["checks"]}, doc
    except (ValueError, KeyError, TypeError):
        return r, None, None


def step_no_uverbs(g):
    """ib_core alone (no ib_uverbs, so no rxe either: rdma_rxe needs it): doctor fails and
    names the fix."""
    tap = g.tap
    if not g.modprobe("ib_core"):
        return
    r, checks, _ = doctor_json(g)
    if not tap.ok(checks is not None, "doctor --json without ib_uverbs: JSON", r.stdout + r.stderr):
        return
    mod = checks.get("module.ib_uverbs", {})
    tap.ok(r.returncode == 1 and mod.get("status") == "fail" and
           "modprobe ib_uverbs" in (mod.get("fix") or ""),
           "ib_uverbs not loaded: doctor fails, module.ib_uverbs names 'modprobe ib_uverbs'",
           json.dumps(mod))
    dev = checks.get("devices", {})
    tap.ok(dev.get("status") == "fail" and "ib_uverbs" in (dev.get("fix") or ""),
           "and the devices check says the kernel has none, fix: load ib_uverbs",
           json.dumps(dev))
    r = g.cli("doctor", "--host-root", "/", timeout=120)
    tap.ok(r.returncode == 1 and "modprobe ib_uverbs" in r.stdout and
           "verdict: FAIL" in r.stdout, "doctor's text report: verdict FAIL, the fix printed",
           r.stdout + r.stderr)


def step_netns(g):
    """The RDMA netns mode as the kernel has it, set before any RDMA device exists."""
    tap = g.tap
    for mode, status in (("exclusive", "warn"), ("shared", "ok")):
        if not g.must(["rdma", "system", "set", "netns", mode], "rdma system set netns " + mode):
            continue
        shown = g.run(["rdma", "system", "show"]).stdout
        r, checks, _ = doctor_json(g)
        c = (checks or {}).get("netns", {})
        tap.ok("netns %s" % mode in shown and c.get("status") == status and
               (c.get("data") or {}).get("mode") == mode,
               "netns %s (the kernel: %s): doctor reports %s, %s" % (mode, shown.strip(), mode,
                                                                     status),
               json.dumps(c) + "\n" + r.stderr)
        guest_netns.mode_seen(g, mode)


def step_rdma(g):
    """The RDMA stack and two rxe devices, each on its own veth pair."""
    tap = g.tap
    ok = g.modprobe(*RDMA_MODULES)
    ok = ok and g.add_rxe("rxe0") and g.add_rxe("rxe1")
    nodes = ["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"]
    ok = ok and wait_for(lambda: all(os.path.exists(n) for n in nodes), 20)
    tap.ok(ok and sorted(os.listdir("/sys/class/infiniband")) == ["rxe0", "rxe1"],
           "the kernel has rxe0 and rxe1, their uverbs nodes and rdma_cm",
           g.run(["ls", "-l", "/dev/infiniband", "/sys/class/infiniband"]).stdout)


def kernel_view(g):
    """What the kernel says of each rxe device, read without rdma-cdi: sysfs for the GUID
    and link layer, `rdma link` (netlink) for netdev and port state, stat() for nodes."""
    view = {}
    links = g.run(["rdma", "-j", "link", "show"]).stdout
    for link in json.loads(links or "[]"):
        view.setdefault(link["ifname"], {})["port"] = link
    for verbs in os.listdir("/sys/class/infiniband_verbs"):
        ibdev = read("/sys/class/infiniband_verbs/%s/ibdev" % verbs)
        if ibdev and ibdev in view:
            st = os.stat("/dev/infiniband/" + verbs)
            view[ibdev]["uverbs"] = (verbs, os.major(st.st_rdev), os.minor(st.st_rdev))
    for name in view:
        base = "/sys/class/infiniband/" + name
        view[name]["link_layer"] = read(base + "/ports/1/link_layer")
    st = os.stat("/dev/infiniband/rdma_cm")
    return view, (os.major(st.st_rdev), os.minor(st.st_rdev))


def step_discover(g):
    tap = g.tap
    view, cm = kernel_view(g)
    r = g.cli("discover", "--json")
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        tap.ok(False, "discover --json parses", r.stdout + r.stderr)
        return
    devs = {d["name"]: d for d in doc["devices"]}
    tap.ok(sorted(devs) == sorted(view) == ["rxe0", "rxe1"],
           "discover --json: the kernel's two devices, by name", sorted(devs))
    tap.ok(doc["problems"] == [], "no problem reported on the real kernel", doc["problems"])
    for name, k in sorted(view.items()):
        d = devs.get(name, {})
        port = (d.get("ports") or [{}])[0]
        uv = d.get("uverbs") or {}
        # The kernel's layout of a software device: the class entry is the device itself
        # (devices/virtual/infiniband/NAME), with no `device` link to a parent.
        virtual = (os.path.realpath("/sys/class/infiniband/" + name) ==
                   "/sys/devices/virtual/infiniband/" + name and
                   not os.path.lexists("/sys/class/infiniband/%s/device" % name))
        tap.ok(virtual and d.get("pci") is None and d.get("dev_path") is None and
               d.get("numa_node") is None and not d.get("pf") and not d.get("vf"),
               "%s: a virtual device without a parent: no PCI address, parent path or NUMA "
               "node" % name, json.dumps(d))
        base = "/sys/class/infiniband/%s/" % name
        # An empty attribute (rxe's fw_ver) is null in the JSON, never "".
        sysfs = [read(base + f) or None
                 for f in ("node_guid", "node_type", "fw_ver", "ports/1/rate")]
        tap.ok([d.get("node_guid"), d.get("node_type"), d.get("fw_ver"), port.get("rate")] ==
               sysfs, "%s: node GUID, node type, firmware, rate as sysfs has them (%s)" %
               (name, ", ".join(map(str, sysfs))), json.dumps(d))
        tap.ok((uv.get("name"), uv.get("major"), uv.get("minor")) == k["uverbs"] and
               uv.get("present"), "%s: %s %d:%d as stat() of its node says" %
               ((name,) + k["uverbs"]), json.dumps(uv))
        want_state = k["port"]["state"]
        tap.ok(port.get("link_layer") == k["link_layer"] == "Ethernet" and
               port.get("netdev") == k["port"].get("netdev") == RXE[name][0] and
               port.get("state") == want_state == "ACTIVE" and d.get("healthy") and
               d.get("usable"),
               "%s: Ethernet, netdev %s, port ACTIVE as `rdma link` says" % (name, RXE[name][0]),
               json.dumps(port) + "\n" + json.dumps(k["port"]))
    rc = doc.get("rdma_cm") or {}
    tap.ok((rc.get("major"), rc.get("minor")) == cm and rc.get("present"),
           "rdma_cm %d:%d as stat() says (its minor is dynamic)" % cm, json.dumps(rc))
    r = g.cli("discover")
    rows = {line.split()[1]: line.split() for line in r.stdout.splitlines()[1:]
            if line[:1].isdigit()}
    tap.ok(r.returncode == 0 and sorted(rows) == ["rxe0", "rxe1"] and
           all(rows[n][2] == "-" and RXE[n][0] in rows[n] and "ACTIVE" in rows[n]
               for n in rows),
           "discover's table: each device by its RDMA name, no PCI address, its netdev, ACTIVE",
           r.stdout + r.stderr)


def generate_spec(g, spec_dir="/etc/cdi"):
    r = g.cli("generate", "--spec-dir", spec_dir, "--hook-path", g.args.hook)
    path = os.path.join(spec_dir, "rdma.example-hca.json")
    try:
        with open(path) as f:
            return r, path, json.load(f)
    except (OSError, ValueError):
        return r, path, None


def spec_nodes(spec, name):
    """{node: (major, minor)} a container given name gets: its own and the spec-wide."""
    edits = [d["containerEdits"] for d in spec["devices"] if d["name"] == name]
    nodes = {}
    for e in edits + [spec.get("containerEdits") or {}]:
        for n in e.get("deviceNodes") or []:
            nodes[os.path.basename(n["path"])] = (n.get("major"), n.get("minor"))
    return nodes if edits else None


def step_generate(g):
    tap = g.tap
    view, cm = kernel_view(g)
    r, path, spec = generate_spec(g)
    if not tap.ok(r.returncode == 0 and spec, "generate writes %s" % path, r.stdout + r.stderr):
        return
    v = g.run(["/usr/bin/python3", os.path.join(g.src, "tests", "tools", "validate-cdi-schema.py"),
               os.path.join(g.src, "tests", "data", "cdi-schema"), path])
    tap.ok(v.returncode == 0, "the spec validates against the CDI schema", v.stdout + v.stderr)
    names = sorted(d["name"] for d in spec["devices"])
    tap.ok(names == ["0", "1", "all", "rxe0", "rxe1"],
           "spec devices: rxe0, rxe1 by RDMA name (no PCI address), indexes, all", names)
    for name, k in sorted(view.items()):
        nodes = spec_nodes(spec, name) or {}
        verbs, major, minor = k["uverbs"]
        tap.ok(nodes == {verbs: (major, minor), "rdma_cm": cm},
               "%s's edits: %s %d:%d and rdma_cm %d:%d, the real numbers" %
               (name, verbs, major, minor, cm[0], cm[1]), nodes)


PODMAN = ["podman", "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
          "--events-backend", "file", "--runtime", "runc"]
# What the containers run: perftest and ibverbs-utils, with the rxe provider.
ROOTFS_BINARIES = ["/usr/bin/ib_write_bw", "/usr/bin/ibv_devinfo"]
PERFTEST_PORT = 18515


def copy_with_libs(root, paths):
    """Copies each file and the shared libraries ldd names for it into root, same paths."""
    todo, done = list(paths), set()
    while todo:
        p = todo.pop()
        if p in done:
            continue
        done.add(p)
        dst = os.path.join(root, p.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(os.path.realpath(p), dst)
        out = subprocess.run(["ldd", p], capture_output=True, text=True).stdout
        todo += re.findall(r"(/\S+) \(0x", out)


def make_rootfs(g):
    root = os.path.join(g.work, "rootfs")
    for d in ("bin", "dev", "proc", "sys", "etc/libibverbs.d", "tmp"):
        os.makedirs(os.path.join(root, d))
    shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    providers = glob.glob("/usr/lib/*/libibverbs/librxe-rdmav*.so")
    copy_with_libs(root, ROOTFS_BINARIES + providers)
    shutil.copy("/etc/libibverbs.d/rxe.driver", os.path.join(root, "etc", "libibverbs.d"))
    return root


def podman_run(g, script, device=True, timeout=120, popen=False):
    argv = g.podman_base()
    if device:
        argv += ["--device", "rdma.example/hca=rxe0"]
    argv += ["--rootfs", g.rootfs(), "/bin/busybox", "sh", "-c", script]
    if popen:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return g.run(argv, timeout)


def listening(port):
    with open("/proc/net/tcp") as f:
        return any(":%04X" % port in line.split()[1] and line.split()[3] == "0A"
                   for line in f.readlines()[1:])


def step_podman(g):
    """Containers given rxe0 through CDI (the spec of step generate), all caps dropped."""
    tap = g.tap
    probe = ("cd /dev/infiniband 2>/dev/null && /bin/busybox ls; echo limit=$(ulimit -l); "
             "/bin/busybox grep CapEff /proc/self/status; ibv_devinfo -d rxe0 | "
             "/bin/busybox grep -E 'hca_id|state'; true")
    r = podman_run(g, probe)
    out = r.stdout
    tap.ok(r.returncode == 0 and out.split("limit=")[0].split() == ["rdma_cm", "uverbs0"],
           "a container given rdma.example/hca=rxe0 has exactly uverbs0 and rdma_cm",
           out + r.stderr)
    tap.ok("limit=unlimited" in out and re.search(r"CapEff:\s+0+\n", out),
           "every capability dropped, and ulimit -l unlimited through the hook", out)
    tap.ok("hca_id:\trxe0" in out and "PORT_ACTIVE" in out,
           "ibv_devinfo in it opens rxe0, port ACTIVE", out)
    r = podman_run(g, probe, device=False)
    tap.ok(r.returncode == 0 and r.stdout.split("limit=")[0].split() == [] and
           "limit=unlimited" not in r.stdout and "hca_id" not in r.stdout,
           "a control container without the device: no RDMA device, no raised limit (%s)" %
           r.stdout.partition("limit=")[2].split("\n")[0], r.stdout + r.stderr)
    # One device for both ends: rxe0 to rxe1 inside one namespace never crosses the veth.
    bw = "ib_write_bw -F -d rxe0 -s 65536 -n 200"
    server = podman_run(g, "exec " + bw, popen=True)
    up = wait_for(lambda: listening(PERFTEST_PORT) or server.poll() is not None, 60, 0.2)
    client = podman_run(g, "exec %s 127.0.0.1" % bw, timeout=120) if up else None
    try:
        sout = server.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        server.kill()
        sout = server.communicate()[0] + "\n[server timed out]"
    cout = client.stdout + client.stderr if client else "[the server never listened]"
    row = re.search(r"^\s*65536\s+200\s+([\d.]+)\s+([\d.]+)\s+[\d.]+\s*$", cout, re.M)
    tap.ok(client and client.returncode == 0 and server.returncode == 0 and row and
           "BW average[MB/sec]" in cout,
           "ib_write_bw between two containers given rxe0 through CDI: %s MB/s average" %
           (row.group(2) if row else "no"), "client:\n%s\nserver:\n%s" % (cout, sout))
    if row:
        table = [line for line in cout.splitlines() if "#bytes" in line or line == row.group(0)]
        print("\n".join("# " + line for line in table))
        g.figures["ib_write_bw_MBps"] = float(row.group(2))


def step_bench(g):
    """`generate` on the real node next to the sysfs floor (tests/bench/floor.c: only the
    reads any discovery needs), timed in turn by tests/bench/timeit.c."""
    tap = g.tap
    bench = os.path.join(g.args.build_dir, "tests", "bench")
    spec = os.path.join(g.work, "bench.json")
    r = g.run([os.path.join(bench, "timeit"), "20", "--unlink", spec, "--",
               os.path.join(bench, "sysfs-floor"), "/sys", "--", g.rdma_cdi, "generate",
               "--hook-path", g.args.hook, "--output", spec], timeout=240)
    times = r.stdout.split()
    ok = r.returncode == 0 and len(times) == 2
    tap.ok(ok, "generate and the sysfs floor timed on the real node (20 runs each)",
           r.stdout + r.stderr)
    if ok:
        floor, gen = float(times[0]) / 1000, float(times[1]) / 1000
        print("# generate %.1f ms, sysfs floor %.1f ms (medians), ratio %.2f" %
              (gen, floor, gen / floor))
        g.figures.update(generate_ms=round(gen, 1), floor_ms=round(floor, 1))


def step_doctor(g):
    tap = g.tap
    r = g.cli("doctor", "--host-root", "/", timeout=180)
    verdict = [l for l in r.stdout.splitlines() if l.startswith("verdict:")]
    tap.ok(r.returncode == 0 and verdict and verdict[0].startswith("verdict: OK"),
           "doctor on the real kernel: %s" % (verdict[0] if verdict else "no verdict"),
           r.stdout + r.stderr)
    r, checks, doc = doctor_json(g)
    if not tap.ok(checks is not None, "doctor --json parses", r.stdout + r.stderr):
        return
    for name in ("rxe0", "rxe1"):
        c = checks.get("verbs." + name, {})
        tap.ok(c.get("status") == "ok" and
               "67108864-byte memory region registered" in c.get("message", ""),
               "%s: a real memory registration (%s)" % (name, c.get("message")), json.dumps(c))
    tap.ok(checks.get("rdma_cm", {}).get("status") == "ok", "rdma_cm: an event channel opened",
           json.dumps(checks.get("rdma_cm")))


STEPS = {
    "no-uverbs": step_no_uverbs,
    "netns": step_netns,
    "rdma": step_rdma,
    "discover": step_discover,
    "generate": step_generate,
    "podman": step_podman,
    "doctor": step_doctor,
    "netns-move": guest_netns.step_netns_move,
    "bridge": guest_daemons.step_bridge,
    "watch": guest_daemons.step_watch,
    "dra": guest_daemons.step_dra,
    "bench-events": guest_daemons.step_bench_events,
    "bench": step_bench,
}


def main():
    # One argument: the host's base64 JSON (test-kernel.py): paths and the plan.
    args = argparse.Namespace(**json.loads(base64.b64decode(sys.argv[1])))
    tap = Tap()
    g = Guest(args, tap)
    for name in args.plan:
        t0 = time.monotonic()
        try:
            STEPS[name](g)
        except Exception as e:  # one step's bug must not hide the others' results
            tap.ok(False, "step %s ran to its end" % name, "%s: %s" % (type(e).__name__, e))
        print("# step %s: %.1f s" % (name, time.monotonic() - t0))
    if g.figures:
        print("# figures " + json.dumps(g.figures))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
