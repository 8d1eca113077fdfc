#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""rdma-cdi-node, the DaemonSet's init container and liveness probe, outside any container.

  test-node.py --rdma-cdi BIN --rdma-cdi-node BIN --mksysfs PY --proto PROTO   (TAP)

probe: answers 0 for a serving bridge (found in the plugin dir, or named), 1 within its
timeout for a bridge that is stopped (SIGSTOP: the socket still accepts connections), 0
again once it continues, 1 for an empty plugin dir, a stale socket, a regular file; the
kubelet's restart (sockets deleted, bridge serves again) passes.
install: copies a bundle (files with their modes, symlinks as symlinks), replaces changed
files, leaves no temporary files, refuses what is not a file, dir or symlink.
"""
import argparse
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import kubelet_double as kd  # noqa: E402
from tap import Tap  # noqa: E402


def run(cmd, timeout=60):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def show(r):
    return "exit %d\nstdout: %s\nstderr: %s" % (r.returncode, r.stdout, r.stderr)


def test_probe(a, tap, work):
    sysfs, dev = kd.make_fixture(a.mksysfs, "dgx", work)
    plugins = os.path.join(work, "plugins")
    os.makedirs(plugins)
    kubelet = kd.Kubelet(plugins, a.proto).start()
    b = kd.Bridge(a.rdma_cdi, work, sysfs, dev, plugin_dir=plugins).start()
    try:
        if not tap.ok(kubelet.wait_registrations(1, 15) is not None, "the bridge registered",
                      b.log_text()):
            return
        probe = [a.rdma_cdi_node, "probe", "--plugin-dir", plugins]
        r, dt = run(probe)
        tap.ok(r.returncode == 0, "probe of a serving bridge: exit 0 (%.0f ms)" % (dt * 1000),
               show(r))
        r, _ = run(probe + ["--socket", kd.DEFAULT_SOCKET])
        tap.ok(r.returncode == 0, "probe --socket <the default pool's socket>: exit 0", show(r))

        b.signal(signal.SIGSTOP)
        tap.ok(stat.S_ISSOCK(os.lstat(b.socket()).st_mode),
               "a stopped bridge still has its socket (what a file check would accept)")
        r, dt = run(probe + ["--timeout", "1"])
        tap.ok(r.returncode == 1 and "no answer in time" in r.stderr and dt < 4,
               "probe of a stopped bridge: exit 1 after %.1f s, naming the cause" % dt, show(r))
        b.signal(signal.SIGCONT)
        r, _ = run(probe)
        tap.ok(r.returncode == 0, "after SIGCONT: exit 0 again", show(r))

        kubelet.restart()
        reg = kubelet.wait_registrations(1, 10)
        r, _ = run(probe)
        tap.ok(reg is not None and r.returncode == 0,
               "after a kubelet restart (sockets deleted) the re-created socket passes",
               show(r))
    finally:
        b.stop()
        kubelet.stop()

    empty = os.path.join(work, "empty")
    os.makedirs(empty)
    r, _ = run([a.rdma_cdi_node, "probe", "--plugin-dir", empty])
    tap.ok(r.returncode == 1 and "no rdma-cdi*.sock" in r.stderr,
           "empty plugin dir: exit 1, says the bridge is not serving", show(r))
    open(os.path.join(empty, "rdma-cdi.sock"), "w").close()
    r, _ = run([a.rdma_cdi_node, "probe", "--plugin-dir", empty])
    tap.ok(r.returncode == 1 and "no rdma-cdi*.sock" in r.stderr,
           "a regular file named rdma-cdi.sock is not a bridge", show(r))
    stale = os.path.join(empty, "rdma-cdi-stale.sock")
    s = socket.socket(socket.AF_UNIX)
    s.bind(stale)
    s.close()
    r, dt = run([a.rdma_cdi_node, "probe", "--plugin-dir", empty, "--timeout", "5"])
    tap.ok(r.returncode == 1 and "rdma-cdi-stale.sock" in r.stderr and dt < 5,
           "a stale socket (no listener): exit 1 at once (%.1f s), naming it" % dt, show(r))
    for bad in (["--timeout", "0"], ["--timeout", "x"], ["--socket", "../x"], ["extra"]):
        r, _ = run([a.rdma_cdi_node, "probe", "--plugin-dir", empty] + bad)
        tap.ok(r.returncode == 2 and r.stderr.strip(), "probe %s: usage error 2" % " ".join(bad),
               show(r))


def tree(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir",)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", stat.S_IMODE(st.st_mode), f.read())
    return out


def test_install(a, tap, work):
    src = os.path.join(work, "bundle")
    os.makedirs(os.path.join(src, "bin"))
    os.makedirs(os.path.join(src, "lib"))
    with open(os.path.join(src, "bin", "rdma-cdi-hook"), "w") as f:
        f.write("#!/bin/true\n")
    os.chmod(os.path.join(src, "bin", "rdma-cdi-hook"), 0o755)
    with open(os.path.join(src, "lib", "libx.so.1.2.3"), "w") as f:
        f.write("lib")
    os.chmod(os.path.join(src, "lib", "libx.so.1.2.3"), 0o644)
    os.symlink("libx.so.1.2.3", os.path.join(src, "lib", "libx.so.1"))
    dst = os.path.join(work, "host", "opt-rdma-cdi")
    os.makedirs(os.path.dirname(dst))
    cmd = [a.rdma_cdi_node, "install", "--from", src, "--to", dst]
    old = os.umask(0o077)
    try:
        r, _ = run(cmd)
    finally:
        os.umask(old)
    tap.ok(r.returncode == 0 and tree(dst) == tree(src),
           "install copies files with their modes (whatever the umask) and symlinks as symlinks",
           "%s\n%s\nvs\n%s" % (show(r), tree(dst), tree(src)))
    with open(os.path.join(src, "lib", "libx.so.1.2.3"), "w") as f:
        f.write("lib v2")
    os.unlink(os.path.join(src, "lib", "libx.so.1"))
    os.symlink("libx.so.1.2.3", os.path.join(src, "lib", "libx.so.1"))
    ino = os.stat(os.path.join(dst, "lib", "libx.so.1.2.3")).st_ino
    r, _ = run(cmd)
    tap.ok(r.returncode == 0 and tree(dst) == tree(src) and
           os.stat(os.path.join(dst, "lib", "libx.so.1.2.3")).st_ino != ino,
           "a second install replaces changed files by rename (a new inode, never rewritten "
           "in place under a running hook)", show(r))
    left = [n for _, _, fs in os.walk(dst) for n in fs if n.startswith(".#")]
    tap.ok(not left, "no temporary files left", left)
    os.mkfifo(os.path.join(src, "lib", "fifo"))
    r, _ = run(cmd, timeout=10)
    tap.ok(r.returncode == 1 and "lib/fifo" in r.stderr and "not a file" in r.stderr,
           "a FIFO in the bundle: exit 1 naming it (never blocks on it)", show(r))
    r, _ = run([a.rdma_cdi_node, "install", "--from", "relative", "--to", dst])
    tap.ok(r.returncode == 2, "relative --from: usage error", show(r))
    r, _ = run([a.rdma_cdi_node, "install", "--from", os.path.join(work, "nope"), "--to", dst])
    tap.ok(r.returncode == 1 and "nope" in r.stderr, "missing --from: exit 1 naming it",
           show(r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--rdma-cdi-node", required=True)
    ap.add_argument("--mksysfs", required=True)
    ap.add_argument("--proto", required=True)
    a = ap.parse_args()
    tap = Tap()
    work = tempfile.mkdtemp(prefix="rdma-cdi-node-")
    try:
        for sub, fn in (("p", test_probe), ("i", test_install)):
            os.makedirs(os.path.join(work, sub))
            fn(a, tap, os.path.join(work, sub))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
