#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi discover` and `generate` on hostile sysfs trees, as a user runs them.

A FIFO where an attribute should be used to hang both commands forever (issue 6); a
class/infiniband the caller may not read used to look like "no devices" (issue 8).
Environment (set by meson): RDMA_CDI (the binary), MKSYSFS (fixture builder).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI = os.environ["RDMA_CDI"]
MKSYSFS = os.environ["MKSYSFS"]
FN = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00."
FIFOS = [FN + "0/infiniband/mlx5_0/ports/1/state", FN + "2/infiniband/mlx5_1/node_guid",
         FN + "3/infiniband_verbs/uverbs2/dev", FN + "4/numa_node"]
TIMEOUT = 20
t = Tap()


def run(args, prefix=()):
    """Runs rdma-cdi; None when it did not finish within TIMEOUT seconds."""
    try:
        return subprocess.run([*prefix, RDMA_CDI, *args], capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def build(tmp):
    sysroot, dev = os.path.join(tmp, "sys"), os.path.join(tmp, "dev")
    subprocess.run(["/usr/bin/python3", MKSYSFS, "build", "sriov", sysroot], check=True)
    subprocess.run(["/usr/bin/python3", MKSYSFS, "mkdev", sysroot, dev], check=True)
    return sysroot, dev


def test_fifos(tmp):
    sysroot, dev = build(tmp)
    for rel in FIFOS:
        os.unlink(os.path.join(sysroot, rel))
        os.mkfifo(os.path.join(sysroot, rel))
    roots = ["--sysfs-root", sysroot, "--dev-root", dev]

    p = run(["discover", *roots])
    t.ok(p is not None, "discover finishes on a tree with FIFOs")
    if p:
        t.ok(p.returncode == 0, "discover exits 0", p.stderr)
        t.ok("class/infiniband/mlx5_0/ports/1/state: not a regular file, ignoring" in p.stderr,
             "discover warns about the FIFO state file", p.stderr)
        t.ok("mlx5_3" in p.stdout, "discover lists the devices", p.stdout)

    p = run(["discover", "--json", *roots])
    t.ok(p is not None, "discover --json finishes")
    if p:
        j = json.loads(p.stdout)
        t.ok(any("class/infiniband_verbs/uverbs2/dev: not a regular file" in s
                 for s in j["problems"]), "the FIFO dev file is a problem", j["problems"])
        by = {d["name"]: d for d in j["devices"]}
        t.ok(by["mlx5_3"]["numa_node"] is None, "FIFO numa_node -> null")
        t.ok(by["mlx5_0"]["ports"][0]["state"] is None, "FIFO state -> null")

    p = run(["generate", *roots, "--output", "-"])
    t.ok(p is not None, "generate --output - finishes on a tree with FIFOs")
    if p:
        t.ok(p.returncode == 0, "generate exits 0", p.stderr)
        names = {d["name"] for d in json.loads(p.stdout)["devices"]} if p.stdout else set()
        t.ok("mlx5_1" in names and "mlx5_2" not in names,
             "spec keeps mlx5_1, leaves out mlx5_2 (its uverbs dev is a FIFO)", names)


def test_unreadable_class(tmp):
    sysroot, dev = build(tmp)
    cls = os.path.join(sysroot, "class/infiniband")
    os.chmod(cls, 0)
    # Root passes mode checks through these two capabilities: run without them.
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
            "--inh-caps", "-dac_override,-dac_read_search"]
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        drop = []
    probe = subprocess.run([*drop, "/usr/bin/test", "-r", cls])
    if probe.returncode == 0:
        t.skip("unreadable class/infiniband is an error", "cannot drop CAP_DAC_OVERRIDE")
        os.chmod(cls, 0o755)
        return
    for args in (["discover"], ["generate", "--output", "-"]):
        p = run([*args, "--sysfs-root", sysroot, "--dev-root", dev], prefix=drop)
        what = " ".join(args)
        t.ok(p is not None and p.returncode != 0,
             "%s fails when class/infiniband is unreadable" % what, p and p.stderr)
        t.ok(p is not None and "Permission denied" in p.stderr,
             "%s says why" % what, p and p.stderr)
    os.chmod(cls, 0o755)


def main():
    for test in (test_fifos, test_unreadable_class):
        tmp = tempfile.mkdtemp(prefix="rdma-cdi-test-hostile-")
        try:
            test(tmp)
        finally:
            shutil.rmtree(tmp)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
