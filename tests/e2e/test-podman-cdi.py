#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: podman applies a spec written by `rdma-cdi generate`, with runc and crun.

  test-podman-cdi.py --rdma-cdi BIN --hook BIN --probe BIN --mksysfs PY     (TAP on stdout)

1. Builds the `dgx` fixture (mksysfs.py: mlx5_0..7 InfiniBand, uverbs0..7 = 231:192..199,
   RoCE mlx5_8/9 = uverbs8/9, rdma_cm 10:57) and its device nodes (mknod) in a temp dir, and
   runs `rdma-cdi generate` on it with --hook-path pointing at the built hook. A second spec
   of kind rdma.example/nohook points its hook at a path that does not exist.
2. For each runtime, re-runs itself as `--inner RUNTIME` under `unshare -m` (private mount
   propagation): an overlay over /etc and a tmpfs over /run give podman an empty /etc/cdi and
   /var/run/cdi the host never sees; the specs are copied in; crun additionally gets
   /sys/fs/cgroup/unified unmounted (crun 1.8.1 refuses the hybrid cgroup layout).
3. Starts containers from a busybox-static rootfs with every capability dropped, running
   mlock-probe, and checks the device nodes, the soft RLIMIT_MEMLOCK and mlock(4 MiB).
   podman is started with a soft RLIMIT_MEMLOCK of 64 KiB (the kernel default before 5.16,
   hard limit untouched) so that the control container, which has no hook, cannot mlock
   4 MiB; the hook raises the soft limit to the hard limit (unlimited needs
   CAP_SYS_RESOURCE, which no process has on CI machines).
4. A container of mlx5_3 restarts in place after the device was lent to another network
   namespace (mksysfs.py lend) and the spec generated again: its CDI name still resolves.
5. A spec of kind rdma.example/netns written with `generate --netns-move` (valid CDI by the
   upstream schema, podman 4.3.1 accepts it): its device's hook would move the RDMA device
   into the container's network namespace. This machine's fixture devices are not the
   kernel's, so the container must fail to start with the hook's one line naming the device
   and why; the same device from the spec without --netns-move starts (above).
Needs root. Missing tools or a runtime that cannot start containers FAIL, loudly.
"""
import glob
import json
import os
import resource
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402
import e2e_util as eu  # noqa: E402
from e2e_util import (CONTROL_MEMLOCK, INF, MEMLOCK, MIB, N_UVERBS, PROBE_NODES,  # noqa: E402
                      bail, fmt_limit, mounts_under, must, run, show)

KIND = "rdma.example/hca"
BROKEN_KIND = "rdma.example/nohook"
ONEMEG_KIND = "rdma.example/memlock1m"
NETNS_KIND = "rdma.example/netns"
TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
RUNTIMES = ("runc", "crun")
# The dgx fixture: index order is PCI-address order, in which the RoCE function mlx5_8
# (bus 0x5e) comes fifth, between mlx5_3 (0x3c) and mlx5_4 (0x9a).
# The host's CDI dirs and podman's default state dirs, which the test must not touch.
# Every probe container: no network, limits a runtime may set here, no capability.
CONTAINER_OPTS = ["--network", "none", "--ulimit", "nofile=20000:20000",
                  "--ulimit", "nproc=32768:32768", "--cap-drop", "all"]
HOST_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi", "/var/lib/containers", "/run/containers",
             "/run/libpod")


# ---- outer: fixtures, specs, TAP ---------------------------------------------------------

def generate(a, work, spec_dir, hook_path, kind=None, extra=()):
    cmd = [a.rdma_cdi, "generate", "--sysfs-root", os.path.join(work, "sys"),
           "--dev-root", os.path.join(work, "dev"), "--spec-dir", spec_dir,
           "--hook-path", hook_path]
    if kind:
        cmd += ["--kind", kind]
    cmd += list(extra)
    os.makedirs(spec_dir, exist_ok=True)
    return run(cmd, timeout=60)


def find_hooks(spec):
    hooks = list((spec.get("containerEdits") or {}).get("hooks") or [])
    for d in spec.get("devices") or []:
        hooks += (d.get("containerEdits") or {}).get("hooks") or []
    return hooks


def outer(a):
    tap = Tap()
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (mknod, mount namespaces, rootful podman)")
        return 0
    for tool in ("podman", "runc", "crun", "unshare", "mount", "umount"):
        if not shutil.which(tool):
            bail("%s not found: install podman runc crun (see README)" % tool)
    if not os.path.isfile("/bin/busybox"):
        bail("/bin/busybox not found: install busybox-static")
    for f in (a.rdma_cdi, a.hook, a.probe, a.mksysfs):
        if not os.path.isfile(f):
            bail("%s does not exist" % f)

    host_before = eu.host_snapshot(HOST_DIRS)
    # The inner run hides /run and /etc behind private mounts: keep the work dir elsewhere.
    with eu.work_dir("rdma-cdi-e2e-", hidden=("/run", "/etc")) as work:
        return outer_in(a, tap, work, host_before)


def outer_in(a, tap, work, host_before):
    py = sys.executable
    sysroot, devroot = os.path.join(work, "sys"), os.path.join(work, "dev")
    r = run([py, a.mksysfs, "build", "dgx", sysroot], timeout=120)
    if r.returncode != 0:
        bail("mksysfs build dgx failed: " + r.stderr.strip().replace("\n", " | "))
    r = run([py, a.mksysfs, "mkdev", sysroot, devroot], timeout=60)
    if r.returncode != 0:
        bail("mksysfs mkdev failed: " + r.stderr.strip().replace("\n", " | "))

    # The spec podman will use, exactly as a user would generate it.
    spec_etc = os.path.join(work, "spec-etc")
    r = generate(a, work, spec_etc, a.hook)
    spec_file = os.path.join(spec_etc, "rdma.example-hca.json")
    tap.ok(r.returncode == 0 and os.path.isfile(spec_file),
           "rdma-cdi generate writes %s for the dgx fixture" % os.path.basename(spec_file),
           "exit %s\n%s" % (r.returncode, r.stderr))
    if not os.path.isfile(spec_file):
        bail("no spec to test with")
    with open(spec_file) as f:
        spec = json.load(f)
    hooks = find_hooks(spec)
    tap.ok(len(hooks) == 1 and hooks[0].get("hookName") == "createRuntime"
           and hooks[0].get("path") == a.hook
           and os.path.basename((hooks[0].get("args") or [""])[0]) == "rdma-cdi-hook",
           "the spec declares one createRuntime hook running the built rdma-cdi-hook",
           json.dumps(hooks))

    # Same devices, a different kind, and a hook that does not exist.
    spec_run = os.path.join(work, "spec-run")
    missing_hook = os.path.join(work, "no-such-dir", "rdma-cdi-hook")
    r = generate(a, work, spec_run, missing_hook, kind=BROKEN_KIND)
    broken = os.path.join(spec_run, "rdma.example-nohook.json")
    # The hook may be installed later (or live on the host of a containerised generator):
    # generate accepts the path and only warns.
    if not tap.ok(r.returncode == 0 and os.path.isfile(broken) and "does not exist" in r.stderr,
                  "rdma-cdi generate --hook-path <missing> writes the spec and warns",
                  "exit %s\n%s" % (r.returncode, r.stderr)):
        bail("no spec with a missing hook to test with")
    # A finite target below the hard limit: the hook sets it exactly, no privilege needed.
    r = generate(a, work, spec_run, a.hook, kind=ONEMEG_KIND, extra=["--memlock", "1M"])
    tap.ok(r.returncode == 0 and os.path.isfile(os.path.join(spec_run,
                                                             "rdma.example-memlock1m.json")),
           "rdma-cdi generate --memlock 1M --kind %s" % ONEMEG_KIND,
           "exit %s\n%s" % (r.returncode, r.stderr))

    netns_spec(a, tap, work, spec_run)

    # A busybox-static rootfs with the probe.
    rootfs = os.path.join(work, "rootfs")
    for d in ("bin", "dev", "proc", "sys", "etc", "tmp"):
        os.makedirs(os.path.join(rootfs, d))
    shutil.copy2("/bin/busybox", os.path.join(rootfs, "bin", "busybox"))
    os.symlink("busybox", os.path.join(rootfs, "bin", "sh"))
    shutil.copy2(a.probe, os.path.join(rootfs, "probe"))
    os.chmod(os.path.join(rootfs, "probe"), 0o755)

    # Keep the host's containers.conf / storage.conf (default_ulimits, hooks, drivers) out.
    eu.podman_conf(work)

    for rt in RUNTIMES:
        results = os.path.join(work, "results-%s.jsonl" % rt)
        rc, out = eu.run_inner([py, os.path.abspath(__file__), "--inner", rt, "--work", work,
                                "--rdma-cdi", a.rdma_cdi, "--hook", a.hook, "--probe", a.probe,
                                "--mksysfs", a.mksysfs], timeout=240)
        _, _, done = eu.relay(tap, results, prefix="%s: " % rt)
        tap.ok(rc == 0 and done, "%s: the podman run completed" % rt,
               "inner exit %s\n%s" % (rc, out[-4000:]))

    host_after = eu.host_snapshot(HOST_DIRS)
    tap.ok(host_after == host_before,
           "the host's /etc/cdi, /var/run/cdi and podman state dirs are untouched",
           "%s -> %s" % (host_before, host_after))
    return tap.done()


def netns_spec(a, tap, work, spec_run):
    """generate --netns-move: each device's own edits run the move hook; valid CDI."""
    r = generate(a, work, spec_run, a.hook, kind=NETNS_KIND, extra=["--netns-move"])
    path = os.path.join(spec_run, "rdma.example-netns.json")
    if not tap.ok(r.returncode == 0 and os.path.isfile(path),
                  "rdma-cdi generate --netns-move --kind %s" % NETNS_KIND,
                  "exit %s\n%s" % (r.returncode, r.stderr)):
        bail("no --netns-move spec to test with")
    with open(path) as f:
        spec = json.load(f)
    dev = next((d for d in spec["devices"] if d["name"] == "mlx5_3"), {})
    hooks = (dev.get("containerEdits") or {}).get("hooks") or []
    tap.ok([h.get("args") for h in hooks] == [["rdma-cdi-hook", "--netns-move=mlx5_3"]]
           and all(h.get("hookName") == "createRuntime" and h.get("path") == a.hook
                   for h in hooks),
           "--netns-move: mlx5_3's own edits run rdma-cdi-hook --netns-move=mlx5_3",
           json.dumps(hooks))
    r = run([sys.executable, os.path.join(TESTS, "tools", "validate-cdi-schema.py"),
             "--max-version", "0.5.0", os.path.join(TESTS, "data", "cdi-schema"), path],
            timeout=60)
    tap.ok(r.returncode == 0, "--netns-move: the spec is valid by the upstream CDI schema",
           r.stdout + r.stderr)


# ---- inner: private mount namespace, podman ------------------------------------------------

def inner(a):
    rt, work = a.inner, a.work
    res = eu.Results(os.path.join(work, "results-%s.jsonl" % rt))

    scratch = os.path.join(work, "ns-%s" % rt)
    os.mkdir(scratch)
    # Everything mounted here lives and dies with this private mount namespace.
    must(["mount", "-t", "tmpfs", "-o", "mode=0700", "rdma-cdi-e2e", scratch])
    eu.private_dir_over("/etc/cdi", scratch, "rdma-cdi-e2e")
    # /run holds podman's and the runtimes' default state dirs too: a private tmpfs keeps
    # all of it off the host. /var/run is a symlink to /run on Debian.
    for d in ("/run", "/var/run"):
        if not os.path.islink(d) and os.path.isdir(d):
            must(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-e2e", d])
    os.makedirs("/var/run/cdi", exist_ok=True)
    res.ok(os.listdir("/etc/cdi") == [] and os.listdir("/var/run/cdi") == [],
           "private, empty /etc/cdi and /var/run/cdi in the mount namespace")
    shutil.copy(os.path.join(work, "spec-etc", "rdma.example-hca.json"), "/etc/cdi/")
    for f in glob.glob(os.path.join(work, "spec-run", "*.json")):
        shutil.copy(f, "/var/run/cdi/")

    if rt == "crun" and "/sys/fs/cgroup/unified" in mounts_under("/sys/fs/cgroup/unified"):
        must(["umount", "/sys/fs/cgroup/unified"])
        res.note("unmounted /sys/fs/cgroup/unified in the private namespace "
                 "(crun 1.8.1 refuses the hybrid cgroup v1 + v2 layout)")

    soft, hard = resource.getrlimit(MEMLOCK)
    if hard != INF and hard < 4 * MIB:
        res.ok(False, "hard RLIMIT_MEMLOCK %d allows mlock of 4 MiB" % hard,
               "the hook can raise the soft limit only up to the hard limit; raise the hard "
               "RLIMIT_MEMLOCK of the test runner to at least 4 MiB")
        res.done()
        return 0
    resource.setrlimit(MEMLOCK, (min(soft, CONTROL_MEMLOCK), hard))
    res.note("podman runs with RLIMIT_MEMLOCK %s:%s (host %s:%s)"
             % (fmt_limit(min(soft, CONTROL_MEMLOCK)), fmt_limit(hard), fmt_limit(soft),
                fmt_limit(hard)))

    env = eu.podman_conf(work)
    base = ["podman", "--root", os.path.join(work, "storage"),
            "--runroot", os.path.join(work, "runroot"),
            "--tmpdir", os.path.join(work, "podman-tmp-%s" % rt),
            "--runtime", rt, "--cgroup-manager", "cgroupfs", "--events-backend", "file"]

    def podman(args, timeout=90):
        return run(base + args, timeout=timeout, env=env)

    def probe(devices):
        args = ["run", "--rm"] + CONTAINER_OPTS
        for d in devices:
            args += ["--device", d]
        args += ["--rootfs", os.path.join(work, "rootfs"), "/probe"] + PROBE_NODES
        r = podman(args)
        return r, eu.parse_probe(r.stdout)

    # Control: no --device. Also proves the runtime can start containers at all.
    r, p = probe([])
    if not res.ok(r.returncode == 0 and p["mlock"] is not None,
                  "%s starts a plain container (control)" % rt, show(r)):
        res.note("%s CANNOT RUN CONTAINERS ON THIS MACHINE: %s"
                 % (rt, r.stderr.strip().splitlines()[-1:] or ["(no message)"]))
    else:
        res.ok(p["dir"] is None and all(v == "absent" for v in p["nodes"].values()),
               "control: no /dev/infiniband", show(r))
        res.ok(p["soft"] is not None and p["soft"] < 4 * MIB and p["mlock"] != "ok"
               and p["capeff"] == 0,
               "control: soft RLIMIT_MEMLOCK %s < 4 MiB, mlock(4 MiB) fails (%s), CapEff 0"
               % (fmt_limit(p["soft"]), p["mlock"]),
               show(r))
    control_soft, control_hard = p["soft"], p["hard"]

    cases = [
        ("%s=mlx5_3" % KIND, [3], "by name"),
        # The device ID the bridge gives the kubelet, as a CDI name (issue 6 item 5).
        ("%s=0000:3c:00.0" % KIND, [3], "by PCI address, the kubelet's device ID"),
        ("%s=0000:5e:00.0" % KIND, [8], "by PCI address: the RoCE mlx5_8"),
        ("%s=0" % KIND, [0], "by index 0"),
        ("%s=4" % KIND, [8], "by index 4 (PCI order: the RoCE mlx5_8)"),
        ("%s=all" % KIND, list(range(N_UVERBS)), "all"),
    ]
    for dev, uverbs, what in cases:
        r, p = probe([dev])
        if not res.ok(r.returncode == 0 and p["mlock"] is not None,
                      "--device %s (%s): container runs" % (dev, what), show(r)):
            continue
        want_dir, want_nodes = eu.expected_nodes(uverbs)
        res.ok(p["dir"] == want_dir and p["nodes"] == want_nodes,
               "--device %s: /dev/infiniband is exactly %s with the fixture's major:minor"
               % (dev, eu.describe_nodes(want_dir, want_nodes)),
               "got dir %s nodes %s\n%s" % (p["dir"], p["nodes"], show(r)))
        soft, hard = p["soft"], p["hard"]
        res.ok(soft is not None and soft >= 4 * MIB and (soft == hard or soft == INF)
               and (control_soft is None or soft > control_soft),
               "--device %s: the hook raised the soft RLIMIT_MEMLOCK to %s (hard %s)"
               % (dev, fmt_limit(soft), fmt_limit(hard)), show(r))
        res.ok(p["mlock"] == "ok" and p["capeff"] == 0,
               "--device %s: mlock(4 MiB) succeeds with CapEff 0" % dev, show(r))

    # The spec's hook arguments reach the hook: --memlock 1M gives exactly 1 MiB, the hard
    # limit stays where it was, and 4 MiB no longer fit.
    r, p = probe(["%s=mlx5_3" % ONEMEG_KIND])
    res.ok(r.returncode == 0 and p["soft"] == MIB and p["hard"] == control_hard
           and p["mlock"] not in (None, "ok")
           and p["dir"] == ["rdma_cm", "uverbs3"],
           "--device %s=mlx5_3 (hook --memlock=1M): soft RLIMIT_MEMLOCK exactly 1048576, hard "
           "limit kept, mlock(4 MiB) fails" % ONEMEG_KIND, show(r))

    # The hook is really run: a spec whose hook does not exist stops the container.
    r, p = probe(["%s=mlx5_3" % BROKEN_KIND])
    res.note("missing hook -> %s" % (r.stderr.strip().splitlines()[-1:] or ["(no message)"])[0])
    res.ok(r.returncode not in (0, "timeout") and p["mlock"] is None
           and "no-such-dir/rdma-cdi-hook" in r.stderr,
           "a spec whose hook path does not exist: podman refuses to start the container, "
           "naming the hook", show(r))

    # The move hook really runs and stops the container with its one line: the fixture's
    # mlx5_3 is no device of this kernel (nor, here, is there RDMA netlink).
    r, p = probe(["%s=mlx5_3" % NETNS_KIND])
    res.note("netns move -> %s" % (r.stderr.strip().splitlines()[-1:] or ["(no message)"])[0])
    # runc relays the hook's stderr; crun 1.8.1 only its exit status (the line is in the
    # journal, syslog ident rdma-cdi-hook).
    said = ("mlx5_3: " in r.stderr and "network namespace" in r.stderr
            and ("no RDMA netlink" in r.stderr or "no such RDMA device" in r.stderr))
    if rt == "crun":
        said = said or "exit code: 4" in r.stderr
    res.ok(r.returncode not in (0, "timeout") and p["mlock"] is None and said,
           "--device %s=mlx5_3 (hook --netns-move): the container does not start; %s"
           % (NETNS_KIND, "exit status 4 (EXIT_NETNS)" if rt == "crun"
              else "the hook's line names the device and the cause"), show(r))

    restart_lent(a, res, podman, work, rt)

    podman(["rm", "--all", "--force", "--time", "0"])
    r = podman(["ps", "--all", "--quiet"])
    res.ok(r.returncode == 0 and r.stdout.strip() == "", "no container left behind", show(r))
    res.done()
    return 0


def restart_lent(a, res, podman, work, rt):
    """A container of a device that is then lent to another network namespace (exclusive
    mode: the host loses its class/infiniband entry) restarts in place: the spec written
    again by `generate` still defines the device, so the CDI name resolves at the start of
    the stopped container and the container gets its uverbs node."""
    name, stash = "lent-%s" % rt, os.path.join(work, "stash-%s" % rt)
    sysroot = os.path.join(work, "sys")
    dev = "%s=mlx5_3" % KIND
    want_dir, want_nodes = eu.expected_nodes([3])
    r = podman(["create", "--name", name] + CONTAINER_OPTS +
               ["--device", dev, "--rootfs", os.path.join(work, "rootfs"), "/probe"] +
               PROBE_NODES)
    if not res.ok(r.returncode == 0, "lent: create a container of %s" % dev, show(r)):
        return

    def start(what):
        r = podman(["start", "--attach", name])
        p = eu.parse_probe(r.stdout)
        res.ok(r.returncode == 0 and p["dir"] == want_dir and p["nodes"] == want_nodes,
               "lent: %s, the container gets %s" % (what, eu.describe_nodes(want_dir,
                                                                            want_nodes)),
               show(r))

    start("first start")
    r = run([sys.executable, a.mksysfs, "lend", sysroot, "mlx5_3", stash, "--with-netdev"])
    if res.ok(r.returncode == 0, "lent: mlx5_3 moved away (mksysfs lend)", show(r)):
        try:
            r = generate(a, work, "/etc/cdi", a.hook)
            with open("/etc/cdi/rdma.example-hca.json") as f:
                names = {d["name"] for d in json.load(f)["devices"]}
            res.ok(r.returncode == 0 and "mlx5_3" in names,
                   "lent: generate again, the spec still defines mlx5_3", show(r))
            start("restart in place while lent (the CDI name resolves)")
        finally:
            run([sys.executable, a.mksysfs, "unlend", sysroot, stash])
    podman(["rm", "--force", "--time", "0", name])


def main():
    return eu.main(("--rdma-cdi", "--hook", "--probe", "--mksysfs"), inner, outer, inner_choices=RUNTIMES)


if __name__ == "__main__":
    sys.exit(main())
