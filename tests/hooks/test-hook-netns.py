#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rdma-cdi-hook --netns-move as a runtime runs it, down to the last layer this machine can
show (its kernel has no RDMA netlink): a container in the host's network namespace is left
alone (exit 0, one warning); a container in its own namespace gets exit 4 with one line
naming the device and the cause; a pid whose namespace is gone, garbage on stdin and bad
device names are refused with their own exit status. The move itself on a real kernel is
tests/kernel's."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

HOOK = sys.argv[1]
t = Tap()


def run(args, stdin):
    p = subprocess.run([HOOK] + args, input=stdin.encode(), capture_output=True, timeout=30)
    return p.returncode, p.stderr.decode(errors="replace")


def state(pid):
    return '{"ociVersion":"1.0.2","id":"c0ffee","status":"creating","pid":%d}' % pid


def one_line(err):
    return len([line for line in err.splitlines() if line.strip()]) == 1


# The host's namespace: this process's own pid shares it.
sleeper = subprocess.Popen(["sleep", "30"])
rc, err = run(["--netns-move=mlx5_0"], state(sleeper.pid))
t.ok(rc == 0 and "shares the host's network namespace" in err and "mlx5_0" in err
     and one_line(err), f"host namespace: left alone, one warning (rc={rc}: {err!r})")
sleeper.kill()
sleeper.wait()

# A container in a network namespace of its own.
boxed = subprocess.Popen(["unshare", "--net", "sleep", "30"])
time.sleep(0.3)
rc, err = run(["--netns-move=mlx5_0"], state(boxed.pid))
t.ok(rc == 4 and "mlx5_0" in err and "RDMA netlink" in err and one_line(err),
     f"own namespace, no RDMA netlink here: exit 4, the device and the cause ({rc}: {err!r})")
rc, err = run(["--netns-move-roce=mlx5_0", "--netns-move=mlx5_1"], state(boxed.pid))
t.ok(rc == 4 and "mlx5_0" in err and one_line(err),
     f"several devices: stops at the first that cannot move ({rc}: {err!r})")
boxed.kill()
boxed.wait()

# The pid is gone (its namespace with it).
rc, err = run(["--netns-move=mlx5_0"], state(boxed.pid))
t.ok(rc == 1 and "not a live process" in err, f"a pid whose namespace is gone: exit 1 ({err!r})")

# Garbage on stdin.
for name, data in [("empty", ""), ("not json", "nope"), ("pid 1", state(1)),
                   ("pid a string", '{"pid": "7"}')]:
    rc, err = run(["--netns-move=mlx5_0"], data)
    t.ok(rc == 1 and one_line(err), f"OCI state {name}: exit 1, one line ({rc}: {err!r})")

# Bad device names never reach the kernel.
for bad in ["", "a/b", "x" * 64, "mlx5_0\nforged"]:
    rc, err = run(["--netns-move=" + bad], state(os.getpid()))
    t.ok(rc == 2 and one_line(err), f"device name {bad!r}: exit 2 ({rc}: {err!r})")

rc, err = run(["--help"], "")
t.ok(rc == 0 and "--netns-move" in subprocess.run([HOOK, "--help"], capture_output=True,
                                                   text=True).stdout, "--help names --netns-move")
sys.exit(t.done())
