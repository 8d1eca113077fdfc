#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Process-level tests of rdma-cdi-hook: real child processes, real prlimit(2), and the
syslog messages the hook sends to a /dev/log we listen on in a private mount namespace.

Usage: test-hook-process.py PATH-TO-rdma-cdi-hook     (TAP on stdout)

The hook cannot raise a hard limit without CAP_SYS_RESOURCE. Machines differ (CI has no
CAP_SYS_RESOURCE and a hard RLIMIT_MEMLOCK of 8 MiB), so the ceiling is read at test time
and, when this process does hold CAP_SYS_RESOURCE, the hook is run with it removed
(setpriv) for the fallback cases and with it for the one case that needs it.
"""
import json
import os
import resource
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

HOOK = os.path.abspath(sys.argv[1])
MEMLOCK = resource.RLIMIT_MEMLOCK
INF = resource.RLIM_INFINITY
CAP_SYS_RESOURCE = 24

children = []
TAP = Tap()
tap = TAP.ok
skip = TAP.skip


def cap_eff(status_path="/proc/self/status"):
    with open(status_path) as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def fmt(v):
    return "unlimited" if v == INF else str(v)


def spawn(soft, hard):
    """A child whose RLIMIT_MEMLOCK is (soft, hard)."""
    p = subprocess.Popen(["sleep", "60"],
                         preexec_fn=lambda: resource.setrlimit(MEMLOCK, (soft, hard)))
    children.append(p)
    return p


def proc_limits(pid):
    """Soft and hard RLIMIT_MEMLOCK as the kernel reports them in /proc, not via prlimit."""
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max locked memory"):
                soft, hard = line.split()[3:5]
                return (INF if soft == "unlimited" else int(soft),
                        INF if hard == "unlimited" else int(hard))
    raise RuntimeError("no 'Max locked memory' line")


def state(pid, cid="4b2f8a1c9d0e11223344556677889900aabbccddeeff00112233445566778899"):
    """The OCI state document as runc/crun write it for a createRuntime hook."""
    return json.dumps({"ociVersion": "1.0.2", "id": cid, "status": "creating", "pid": pid,
                       "bundle": "/run/containers/b/userdata", "annotations": {}})


def run_hook(args, stdin, prefix=None):
    cmd = (prefix or NOCAP) + [HOOK] + args
    if isinstance(stdin, str):
        stdin = stdin.encode()
    r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=30)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


# syslog(3) priority: facility LOG_DAEMON (3) * 8 + severity.
DAEMON_ERR = 3 * 8 + 3
DAEMON_WARNING = 3 * 8 + 4
SYSLOG_RE = re.compile(r"^<(\d+)>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d rdma-cdi-hook\[(\d+)\]: (.*)$",
                       re.S)


def run_hook_syslog(args, stdin, prefix=None):
    """Runs the hook in a private mount namespace whose /dev is a directory holding only a
    datagram socket "log" that this process reads: what syslog(3) sends lands here and never
    in the host's journal. Returns rc, stderr and the list of (priority, pid, text)."""
    d = tempfile.mkdtemp(prefix="rdma-cdi-hook-syslog-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "log")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o666)
        cmd = ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
               'mount --bind "$0" /dev && exec "$@"', d] + (prefix or NOCAP) + [HOOK] + args
        if isinstance(stdin, str):
            stdin = stdin.encode()
        r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=30)
        msgs = []
        sock.setblocking(False)
        while True:
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                break
            m = SYSLOG_RE.match(data.decode(errors="replace"))
            msgs.append((int(m.group(1)), int(m.group(2)), m.group(3)) if m else
                        (None, None, data))
        return r.returncode, r.stderr.decode(errors="replace"), msgs
    finally:
        sock.close()
        shutil.rmtree(d)


def same_as_stderr(msgs, err, prio):
    """One syslog message of priority prio whose text is the stderr line's."""
    line = err.rstrip("\n").split(": ", 2)[-1] if err else None
    return len(msgs) == 1 and msgs[0][0] == prio and msgs[0][2] == line


def one_line(err, *needles):
    lines = err.splitlines()
    return len(lines) == 1 and err.endswith("\n") and lines[0].startswith("rdma-cdi-hook: ") \
        and all(n in lines[0] for n in needles)


# Run the fallback cases without CAP_SYS_RESOURCE even where the runner has it.
NOCAP = []
have_cap = bool(cap_eff() & (1 << CAP_SYS_RESOURCE))
if have_cap:
    setpriv = shutil.which("setpriv")
    if not setpriv:
        print("Bail out! CAP_SYS_RESOURCE held and no setpriv to drop it")
        sys.exit(1)
    NOCAP = [setpriv, "--inh-caps=-sys_resource", "--bounding-set=-sys_resource", "--"]
    check = subprocess.run(NOCAP + ["cat", "/proc/self/status"], capture_output=True, text=True)
    if "CapEff" not in check.stdout or any(
            l.startswith("CapEff:") and int(l.split()[1], 16) & (1 << CAP_SYS_RESOURCE)
            for l in check.stdout.splitlines()):
        print("Bail out! setpriv did not drop CAP_SYS_RESOURCE")
        sys.exit(1)

host_soft, host_hard = resource.getrlimit(MEMLOCK)
# The ceiling is the host's hard limit; lowering a child's hard limit needs no privilege,
# so an unlimited host is brought down to 8 MiB to keep the fallback path testable.
CEIL = host_hard if host_hard != INF else 8 << 20
if CEIL < 256 << 10:
    print(f"Bail out! hard RLIMIT_MEMLOCK {CEIL} is below 256 KiB; cannot test raising it")
    sys.exit(1)
LOW = 64 << 10
BELOW = CEIL // 2
print(f"# host RLIMIT_MEMLOCK {fmt(host_soft)}:{fmt(host_hard)}, ceiling {CEIL}, "
      f"CAP_SYS_RESOURCE {'held (dropped for fallback cases)' if have_cap else 'absent'}")

try:
    # 1. A target under the hard limit needs no privilege: full success, silent.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook([f"--memlock={BELOW}"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and err == "" and lim == (BELOW, CEIL),
        f"target {BELOW} below the hard limit: soft raised, hard kept, silent",
        f"rc={rc} limits={lim} stderr={err!r}")

    # Same with a K suffix, and the target given as a separate argument.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook(["--memlock", "128K"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and err == "" and lim == (128 << 10, CEIL),
        "--memlock 128K: soft limit becomes 131072", f"rc={rc} limits={lim} stderr={err!r}")

    # 2. Default target unlimited, no CAP_SYS_RESOURCE: soft raised to the hard limit + note.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook([], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and lim == (CEIL, CEIL)
        and one_line(err, "container 4b2f8a1c9d0e", f"(pid {p.pid})",
                     f"raised from {LOW} to {CEIL} (the hard limit)",
                     "unlimited needs CAP_SYS_RESOURCE"),
        "unlimited without CAP_SYS_RESOURCE: soft raised to the hard limit, one-line note",
        f"rc={rc} limits={lim} stderr={err!r}")

    # The exact createRuntime invocation the CDI spec declares.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook(["--memlock=unlimited"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and lim == (CEIL, CEIL) and one_line(err, "CAP_SYS_RESOURCE"),
        "--memlock=unlimited (as in the spec) behaves like the default",
        f"rc={rc} limits={lim} stderr={err!r}")

    # 3. --strict refuses the fallback and leaves the limits as they were.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook(["--strict"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 3 and lim == (LOW, CEIL)
        and one_line(err, "error", f"hard limit is {CEIL}", "CAP_SYS_RESOURCE", "--strict"),
        "--strict with an unreachable target: exit 3, one line, limits untouched",
        f"rc={rc} limits={lim} stderr={err!r}")

    # --strict with a reachable target is plain success.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook(["--strict", f"--memlock={BELOW}"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and err == "" and lim == (BELOW, CEIL),
        "--strict with a target under the hard limit succeeds",
        f"rc={rc} limits={lim} stderr={err!r}")

    # 4. Soft already at the hard limit: nothing can be done, say so, succeed.
    p = spawn(CEIL, CEIL)
    rc, out, err = run_hook([], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and lim == (CEIL, CEIL) and one_line(err, f"stays at {CEIL} (the hard limit)"),
        "soft already at the hard limit: unchanged, one-line note",
        f"rc={rc} limits={lim} stderr={err!r}")

    # 5. Never lower.
    p = spawn(CEIL, CEIL)
    rc, out, err = run_hook([f"--memlock={LOW}"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and err == "" and lim == (CEIL, CEIL),
        "a soft limit above the target is never lowered", f"rc={rc} limits={lim} err={err!r}")

    p = spawn(BELOW, CEIL)
    rc, out, err = run_hook([f"--memlock={BELOW}"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and err == "" and lim == (BELOW, CEIL),
        "a soft limit equal to the target is left alone", f"rc={rc} limits={lim} err={err!r}")

    # Fallback never lowers the hard limit either: target between soft and hard.
    p = spawn(LOW, CEIL)
    rc, out, err = run_hook(["--memlock=16G"], state(p.pid))
    lim = proc_limits(p.pid)
    tap(rc == 0 and lim == (CEIL, CEIL) and one_line(err, "17179869184 needs CAP_SYS_RESOURCE"),
        "finite target above the hard limit: raised to the hard limit",
        f"rc={rc} limits={lim} stderr={err!r}")

    # 6. A reaped child: its pid is gone.
    p = subprocess.Popen(["true"])
    p.wait()
    rc, out, err = run_hook([], state(p.pid))
    tap(rc == 1 and one_line(err, f"pid {p.pid} is not a live process"),
        "dead (reaped) pid: exit 1, one line", f"rc={rc} stderr={err!r}")

    # 7. A zombie still has a pid, but will never run a workload.
    p = subprocess.Popen(["true"])
    children.append(p)
    for _ in range(200):
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    rc, out, err = run_hook([], state(p.pid))
    tap(rc == 1 and one_line(err, f"pid {p.pid} is not a live process"),
        "zombie pid: exit 1, one line", f"rc={rc} stderr={err!r}")

    # 8. Bad input through the real binary: one line naming the cause, exit 1.
    bad = [
        ("", "stdin: empty"),
        ("\n", "stdin: empty"),
        ('{"ociVersion":"1.0.2","id":"x","status":"creating","pid":', "stdin: not valid JSON at byte"),
        ("garbage\nwith\nlines", "stdin: not valid JSON at byte 1"),
        ('{"id":"abc"}', "stdin: 'pid' missing"),
        ('{"pid":0}', "must be positive"),
        ('{"pid":-5}', "must be positive, got -5"),
        # Issue 8: pid 1 of the runtime's namespace is never a container process.
        ('{"pid":1}', "'pid' 1 is the init of the runtime's pid namespace"),
        ('{"pid":1.5}', "'pid' is not an integer"),
        ('{"pid":"12"}', "'pid' is not a number"),
        ('{"pid":1099511627776}', "'pid' 1099511627776 out of range"),
        (b'{"pid":1}' + b" " * (2 << 20), "stdin: larger than 1048576 bytes"),
    ]
    for data, needle in bad:
        rc, out, err = run_hook([], data)
        shown = data[:40] if isinstance(data, str) else "2 MiB of input"
        tap(rc == 1 and one_line(err, needle) and out == "",
            f"stdin {shown!r}: exit 1, one line with {needle!r}", f"rc={rc} stderr={err!r}")

    # 9. Command line.
    for args in (["--memlock=bogus"], ["--memlock=0"], ["--memlock=-1"], ["--memlock"],
                 ["--frobnicate"], ["extra-arg"]):
        rc, out, err = run_hook(args, "{}")
        tap(rc == 2 and one_line(err), f"{' '.join(args)}: exit 2, one line",
            f"rc={rc} stderr={err!r}")
    rc, out, err = run_hook(["--help"], "")
    tap(rc == 0 and out.startswith("Usage: rdma-cdi-hook") and "--strict" in out and err == "",
        "--help prints usage on stdout", f"rc={rc} out={out!r}")
    rc, out, err = run_hook(["--version"], "")
    tap(rc == 0 and out.startswith("rdma-cdi-hook ") and len(out.splitlines()) == 1,
        "--version prints one line", f"rc={rc} out={out!r}")

    # 10. A process we may not touch: root's child, hook as nobody.
    if os.geteuid() == 0 and shutil.which("setpriv"):
        p = spawn(LOW, CEIL)
        rc, out, err = run_hook([], state(p.pid),
                                prefix=["setpriv", "--reuid=65534", "--regid=65534",
                                        "--clear-groups", "--inh-caps=-all",
                                        "--bounding-set=-all", "--"])
        lim = proc_limits(p.pid)
        tap(rc == 3 and lim == (LOW, CEIL) and one_line(err, "Operation not permitted"),
            "another user's process: exit 3, one line, limits untouched",
            f"rc={rc} limits={lim} stderr={err!r}")
    else:
        skip("another user's process: exit 3", "needs root and setpriv")

    # 12. pid 1 through the real binary: refused, and the init's limits untouched.
    before = proc_limits(1)
    rc, out, err = run_hook([f"--memlock={LOW}"], state(1))
    tap(rc == 1 and one_line(err, "'pid' 1 is the init", "refusing") and proc_limits(1) == before,
        "pid 1: exit 1, one line, the init's limits untouched", f"rc={rc} stderr={err!r}")

    # 13. syslog: every warning and error also reaches the journal, as LOG_DAEMON with the
    # ident rdma-cdi-hook, the same text as on stderr; success stays silent.
    if os.geteuid() != 0 or not shutil.which("unshare"):
        skip("syslog messages", "needs root and unshare for a private /dev/log")
    else:
        p = spawn(LOW, CEIL)
        rc, err, msgs = run_hook_syslog([], state(p.pid))
        tap(rc == 0 and proc_limits(p.pid) == (CEIL, CEIL)
            and one_line(err, "raised from", "(the hard limit)")
            and same_as_stderr(msgs, err, DAEMON_WARNING)
            and "container 4b2f8a1c9d0e" in msgs[0][2],
            "memlock raised only to the hard limit: daemon.warning in syslog, as on stderr",
            f"rc={rc} stderr={err!r} syslog={msgs!r}")

        p = spawn(CEIL, CEIL)
        rc, err, msgs = run_hook_syslog([], state(p.pid))
        tap(rc == 0 and same_as_stderr(msgs, err, DAEMON_WARNING)
            and "stays at" in msgs[0][2],
            "memlock stuck at the hard limit: daemon.warning in syslog",
            f"rc={rc} stderr={err!r} syslog={msgs!r}")

        p = spawn(LOW, CEIL)
        rc, err, msgs = run_hook_syslog(["--strict"], state(p.pid))
        tap(rc == 3 and same_as_stderr(msgs, err, DAEMON_ERR) and "--strict" in msgs[0][2],
            "--strict failure: daemon.err in syslog", f"rc={rc} stderr={err!r} syslog={msgs!r}")

        p = subprocess.Popen(["true"])
        p.wait()
        rc, err, msgs = run_hook_syslog([], state(p.pid))
        tap(rc == 1 and same_as_stderr(msgs, err, DAEMON_ERR)
            and f"pid {p.pid} is not a live process" in msgs[0][2],
            "dead pid: daemon.err in syslog", f"rc={rc} stderr={err!r} syslog={msgs!r}")

        rc, err, msgs = run_hook_syslog([], state(1))
        tap(rc == 1 and same_as_stderr(msgs, err, DAEMON_ERR) and "'pid' 1" in msgs[0][2],
            "pid 1 refused: daemon.err in syslog", f"rc={rc} stderr={err!r} syslog={msgs!r}")

        rc, err, msgs = run_hook_syslog([], '{"id":"x\\u001b[31m\\nforged","pid":"7"}')
        tap(rc == 1 and same_as_stderr(msgs, err, DAEMON_ERR),
            "bad OCI state: daemon.err in syslog", f"rc={rc} stderr={err!r} syslog={msgs!r}")

        rc, err, msgs = run_hook_syslog(["--memlock=x\x1b[2J\u009b\x7f\nforged"], "{}")
        tap(rc == 2 and same_as_stderr(msgs, err, DAEMON_ERR)
            and "\x1b" not in msgs[0][2] and "\n" not in msgs[0][2] and "\x9b" not in msgs[0][2]
            and "\x7f" not in msgs[0][2] and "\\x1b[2J\\xc2\\x9b\\x7f\\nforged" in msgs[0][2],
            "bad --memlock with escapes: one daemon.err line, C0, DEL and C1 escaped as on "
            "stderr",
            f"rc={rc} stderr={err!r} syslog={msgs!r}")

        p = spawn(LOW, CEIL)
        rc, err, msgs = run_hook_syslog([f"--memlock={BELOW}"], state(p.pid))
        tap(rc == 0 and err == "" and msgs == [] and proc_limits(p.pid) == (BELOW, CEIL),
            "target reached: nothing in syslog", f"rc={rc} stderr={err!r} syslog={msgs!r}")

    # 11. With CAP_SYS_RESOURCE the hook reaches the real target.
    if have_cap:
        p = spawn(LOW, CEIL)
        rc, out, err = run_hook([], state(p.pid), prefix=[])
        lim = proc_limits(p.pid)
        tap(rc == 0 and err == "" and lim == (INF, INF),
            "with CAP_SYS_RESOURCE: unlimited reached, silent",
            f"rc={rc} limits={lim} stderr={err!r}")
    else:
        skip("with CAP_SYS_RESOURCE: unlimited reached", "no process here has CAP_SYS_RESOURCE")
finally:
    for c in children:
        if c.poll() is None:
            c.kill()
        c.wait()

sys.exit(TAP.done())
