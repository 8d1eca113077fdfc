# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi generate --watch`: the spec follows hotplug and renames, health changes are
logged, a blocked spec dir is retried, systemd hears READY=1, SIGTERM exits 0; the config
file is followed live (a valid edit applied, an invalid one refused in one line with the
previous config staying in force)."""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402
from rescan import RESCAN_WAIT  # noqa: E402

PY = "/usr/bin/python3"
tap = Tap()


def names(path):
    try:
        with open(path) as f:
            return {d["name"] for d in json.load(f)["devices"]}
    except (OSError, ValueError):
        return None


def wait(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--mksysfs", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rdma-cdi-watch-")
    try:
        run(args, work)
        run_reload(args, os.path.join(work, "reload"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.done()


def run(args, work):
    sysfs, dev, spec_dir = (os.path.join(work, d) for d in ("sys", "dev", "cdi"))
    subprocess.run([PY, args.mksysfs, "build", "dgx", sysfs], check=True)
    subprocess.run([PY, args.mksysfs, "mkdev", sysfs, dev], check=True)
    spec = os.path.join(spec_dir, "rdma.example-hca.json")
    notify_path = os.path.join(work, "notify")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(10)
    log_path = os.path.join(work, "log")
    log = open(log_path, "w")
    p = subprocess.Popen([args.rdma_cdi, "generate", "--watch", "--sysfs-root", sysfs,
                          "--dev-root", dev, "--spec-dir", spec_dir, "--rescan-interval", "1"],
                         stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, NOTIFY_SOCKET=notify_path))
    text = lambda: open(log_path).read()  # noqa: E731
    try:
        msg = notify.recv(4096).decode()
    except socket.timeout:
        msg = ""
    tap.ok("READY=1" in msg, "systemd hears READY=1 (NOTIFY_SOCKET)", msg)
    tap.ok(names(spec) is not None and "mlx5_3" in names(spec) and "0000:3c:00.0" in names(spec),
           "the spec is written first", text())

    links = [os.path.join(sysfs, "class", "infiniband", "mlx5_3"),
             os.path.join(sysfs, "class", "infiniband_verbs", "uverbs3")]
    targets = [os.readlink(x) for x in links]
    node = os.path.join(dev, "infiniband", "uverbs3")
    st = os.stat(node)
    for x in links:
        os.unlink(x)
    t0 = time.monotonic()
    os.unlink(node)
    tap.ok(wait(lambda: names(spec) is not None and "mlx5_3" not in names(spec), 1.0),
           "hot-unplug: the spec loses the HCA within 1 s (%.0f ms)" %
           ((time.monotonic() - t0) * 1000), text())
    tap.ok(wait(lambda: "mlx5_3 (0000:3c:00.0): removed" in text(), 2), "and says so", text())
    for x, t in zip(links, targets):
        os.symlink(t, x)
    os.mknod(node, st.st_mode, st.st_rdev)
    tap.ok(wait(lambda: "mlx5_3" in (names(spec) or ()), 1.0), "re-plugged: back in the spec",
           text())

    state = os.path.join(sysfs, "class", "infiniband", "mlx5_2", "ports", "1", "state")
    with open(state, "w") as f:
        f.write("1: DOWN\n")
    tap.ok(wait(lambda: "mlx5_2 (0000:3b:00.0): Unhealthy: port 1 DOWN" in text(), 3),
           "port DOWN is logged with device, PCI address and reason", text())
    with open(state, "w") as f:
        f.write("4: ACTIVE\n")
    tap.ok(wait(lambda: "mlx5_2 (0000:3b:00.0): Healthy again" in text(), 3),
           "and its recovery", text())

    # A renamed HCA (rdma dev set mlx5_2 name mlx5_20): the kernel renames its device
    # directory and class link and its uverbs device's ibdev; no device node changes, so
    # only the periodic rescan can see it.
    cls = os.path.join(sysfs, "class", "infiniband")
    target = os.readlink(os.path.join(cls, "mlx5_2"))
    real = os.path.normpath(os.path.join(cls, target))
    os.rename(real, real[:-len("mlx5_2")] + "mlx5_20")
    os.symlink(target[:-len("mlx5_2")] + "mlx5_20", os.path.join(cls, "mlx5_20"))
    os.unlink(os.path.join(cls, "mlx5_2"))
    with open(os.path.join(sysfs, "class", "infiniband_verbs", "uverbs2", "ibdev"), "w") as f:
        f.write("mlx5_20\n")
    tap.ok(wait(lambda: "mlx5_20" in (names(spec) or ()) and "mlx5_2" not in names(spec),
                RESCAN_WAIT),
           "a rename is picked up by the periodic rescan", text())

    # A foreign file in the way: the error says what to do, the retry writes once it is gone.
    os.unlink(spec)
    with open(spec, "w") as f:
        json.dump({"cdiVersion": "0.5.0", "kind": "other.example/x", "devices": []}, f)
    os.unlink(node)
    tap.ok(wait(lambda: "move the file that is in the way" in text(), 3),
           "a blocked write is logged with its fix", text())
    os.unlink(spec)
    tap.ok(wait(lambda: "written again after failures" in text() and
                "mlx5_20" in (names(spec) or ()), 5),
           "and retried until it succeeds", text())

    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    tap.ok(rc == 0, "SIGTERM: exit 0 (%s)" % rc, text())
    tap.ok(not [f for f in os.listdir(spec_dir) if f.startswith(".")],
           "no temporary file left in the spec dir", os.listdir(spec_dir))


def edit(path, text):
    """An editor's save: the new file renamed over the old one."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def has_mad(path):
    try:
        with open(path) as f:
            return "/dev/infiniband/umad" in f.read()
    except OSError:
        return None


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        return None


def run_reload(args, work):
    sysfs, dev, spec_dir = (os.path.join(work, d) for d in ("sys", "dev", "cdi"))
    subprocess.run([PY, args.mksysfs, "build", "dgx", sysfs], check=True)
    subprocess.run([PY, args.mksysfs, "mkdev", sysfs, dev], check=True)
    cfg = os.path.join(work, "config.yaml")
    edit(cfg, "withMad: false\n")
    spec = os.path.join(spec_dir, "rdma.example-hca.json")
    log_path = os.path.join(work, "log")
    log = open(log_path, "w")
    p = subprocess.Popen([args.rdma_cdi, "generate", "--watch", "--sysfs-root", sysfs,
                          "--dev-root", dev, "--spec-dir", spec_dir, "--config", cfg,
                          "--rescan-interval", "0"],
                         stdout=log, stderr=subprocess.STDOUT)
    text = lambda: open(log_path).read()  # noqa: E731
    try:
        tap.ok(wait(lambda: has_mad(spec) is False, 5), "reload: the spec of the config at start",
               text())
        edit(cfg, "withMad: true\n")
        tap.ok(wait(lambda: has_mad(spec), 5) and p.poll() is None,
               "a valid config edit is applied at once: the spec gains the umad nodes", text())
        edit(cfg, "withMad: maybe\n")
        tap.ok(wait(lambda: "rejected, the previous config stays in force" in text(), 5),
               "an invalid config edit is refused", text())
        line = [x for x in text().splitlines() if "rejected" in x]
        tap.ok(len(line) == 1 and "config.yaml:1:" in line[0] and "withMad" in line[0],
               "in one line naming file, line, column and key", line)
        os.kill(p.pid, signal.SIGHUP)  # a rewrite now would use the config in force
        time.sleep(0.5)
        tap.ok(has_mad(spec) and p.poll() is None,
               "the previous config stays in force, the watch keeps running", text())
        edit(cfg, "withMad: false\n")
        tap.ok(wait(lambda: has_mad(spec) is False, 5),
               "the next valid edit is applied again", text())
        # A file with two errors: still one line, the first error and the count of the other.
        edit(cfg, "withMad: maybe\nmemlock: lots\n")
        tap.ok(wait(lambda: text().count("rejected") == 2, 5), "a file with two errors is refused",
               text())
        line = [x for x in text().splitlines() if "rejected" in x]
        tap.ok(len(line) == 2 and "config.yaml:1:10: withMad" in line[1]
               and line[1].rstrip().endswith("(and 1 more error)") and "memlock" not in line[1],
               "two errors: one line, the first error and the count of the other", line)
    finally:
        rc = stop(p)
    tap.ok(rc == 0, "SIGTERM after the reloads: exit 0 (%s)" % rc, text())


if __name__ == "__main__":
    sys.exit(main())
