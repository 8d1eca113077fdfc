"""The RDMA netns mode and the hook's move on the real kernel (guest_checks.py's steps).

mode_seen(g, mode): `discover` (text and JSON) and a daemon's start line (the daemon core,
  run as `generate --watch`) say the mode the kernel has; step netns calls it per mode.
step_netns_move(g): after step podman (rxe0, rxe1, /etc/cdi): a `generate --netns-move`
  spec; in shared mode the hook refuses with the documented line, a container in the
  host's network namespace is left alone (starts; the hook run directly warns once); in
  exclusive mode the move request for rxe0 is well formed and the kernel answers
  EOPNOTSUPP (rxe cannot change namespace; a malformed request would be EINVAL), and a
  container given rxe0 from that spec does not start. The mode is shared again after.
"""

import json
import os
import subprocess
import tempfile
import time

NETNS_KIND = "rdma.example/netns"


def mode_seen(g, mode):
    tap = g.tap
    t = g.cli("discover")
    j = g.cli("discover", "--json")
    try:
        jm = json.loads(j.stdout).get("netnsMode")
    except ValueError:
        jm = None
    tap.ok(("RDMA netns mode: %s" % mode) in t.stdout.splitlines() and jm == mode,
           "netns %s: discover says 'RDMA netns mode: %s', --json netnsMode %s" % (mode, mode, jm),
           t.stdout + t.stderr + j.stderr)
    spec_dir = tempfile.mkdtemp(dir=g.work)
    r = g.run(["timeout", "-s", "TERM", "10", g.rdma_cdi, "generate", "--watch",
               "--spec-dir", spec_dir, "--hook-path", g.args.hook], timeout=40)
    lines = [line for line in r.stderr.splitlines() if "RDMA netns mode: " in line]
    tap.ok(len(lines) == 1 and lines[0].split("RDMA netns mode: ")[1].startswith(mode),
           "netns %s: the daemon core's start line says it once (%s)"
           % (mode, lines[0].strip() if lines else "none"), r.stderr[-3000:])


def set_mode(g, mode, timeout=30):
    """rdma system set netns MODE; the kernel refuses (EBUSY) while other network
    namespaces exist, and a removed container's namespace goes away asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        r = g.run(["rdma", "system", "set", "netns", mode])
        if r.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return g.tap.ok(r.returncode == 0, "rdma system set netns %s" % mode, r.stdout + r.stderr)


def netns_podman(g, network, timeout=120):
    argv = ["podman", "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
            "--events-backend", "file", "--runtime", "runc", "run", "--rm", "--cap-drop", "all",
            "--network", network, "--device", NETNS_KIND + "=rxe0",
            "--rootfs", g.rootfs(), "/bin/busybox", "true"]
    return g.run(argv, timeout)


def hook_direct(g, netns):
    """The hook on a state whose pid is a sleep in a new network namespace (netns True) or
    in this one: the CompletedProcess."""
    argv = (["unshare", "--net"] if netns else []) + ["sleep", "60"]
    sleeper = subprocess.Popen(argv)
    try:
        time.sleep(0.5)
        state = json.dumps({"ociVersion": "1.0.2", "id": "kernel-netns", "pid": sleeper.pid,
                            "status": "creating", "bundle": "/"})
        return g.run([g.args.hook, "--netns-move-roce=rxe0"], input=state, timeout=30)
    finally:
        sleeper.kill()
        sleeper.wait()


def make_spec(g):
    spec_dir = "/etc/cdi"
    r = g.cli("generate", "--spec-dir", spec_dir, "--hook-path", g.args.hook,
              "--kind", NETNS_KIND, "--netns-move")
    path = os.path.join(spec_dir, "rdma.example-netns.json")
    try:
        with open(path) as f:
            spec = json.load(f)
    except (OSError, ValueError):
        spec = None
    dev = next((d for d in (spec or {}).get("devices", []) if d["name"] == "rxe0"), {})
    args = [h.get("args") for h in (dev.get("containerEdits") or {}).get("hooks") or []]
    return g.tap.ok(r.returncode == 0 and args == [["rdma-cdi-hook", "--netns-move-roce=rxe0"]],
                    "generate --netns-move: rxe0 (RoCE) runs rdma-cdi-hook --netns-move-roce=rxe0",
                    r.stderr + json.dumps(args))


def step_netns_move(g):
    tap = g.tap
    if not make_spec(g):
        return
    r = netns_podman(g, "none")
    tap.ok(r.returncode != 0 and "rxe0: cannot move it into the container's network namespace "
           "(mode shared): the RDMA netns mode is shared" in r.stderr,
           "shared mode: the container does not start, the hook's line names rxe0, the mode "
           "and the fix", r.stderr[-2000:])
    r = netns_podman(g, "host")
    tap.ok(r.returncode == 0, "a container in the host's network namespace starts",
           r.stderr[-2000:])
    r = hook_direct(g, netns=False)
    warned = [line for line in r.stderr.splitlines()
              if "shares the host's network namespace: rxe0 stays there" in line]
    tap.ok(r.returncode == 0 and len(warned) == 1 and "rxe0" in g.run(["rdma", "dev"]).stdout,
           "the hook leaves rxe0 in the host's namespace: exit 0, one warning", r.stderr)

    if not set_mode(g, "exclusive"):
        return
    try:
        mode_seen(g, "exclusive")
        r = hook_direct(g, netns=True)
        tap.ok(r.returncode == 4 and "rxe0: the kernel refused to move it into the container's "
               "network namespace (mode exclusive): Operation not supported" in r.stderr,
               "exclusive mode: the move request for rxe0 is well formed, the kernel answers "
               "EOPNOTSUPP (not EINVAL); the hook exits 4 with the documented line", r.stderr)
        r = netns_podman(g, "none")
        tap.ok(r.returncode != 0 and "(mode exclusive): Operation not supported" in r.stderr
               and "rxe and siw cannot" in r.stderr,
               "exclusive mode: a container given rxe0 of the netns: move spec does not start, "
               "with the documented line", r.stderr[-2000:])
    finally:
        set_mode(g, "shared")
        os.unlink("/etc/cdi/rdma.example-netns.json")
