#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi discover` and `generate` with a device lent to another network namespace
(mksysfs.py lend on the sriov fixture): listed and said to be lent, not a warning, and
still in the spec generate writes, with its uverbs node.
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
t = Tap()


def mksysfs(*args):
    subprocess.run([sys.executable, MKSYSFS, *args], check=True)


def main(tmp):
    sysroot, dev, stash = (os.path.join(tmp, d) for d in ("sys", "dev", "stash"))
    mksysfs("build", "sriov", sysroot)
    mksysfs("mkdev", sysroot, dev)
    mksysfs("lend", sysroot, "mlx5_2", stash, "--with-netdev")
    roots = ["--sysfs-root", sysroot, "--dev-root", dev]

    p = subprocess.run([RDMA_CDI, "discover", *roots], capture_output=True, text=True)
    row = [l for l in p.stdout.splitlines() if " mlx5_2 " in l]
    t.ok(p.returncode == 0 and len(row) == 1 and "0000:3b:00.3" in row[0] and
         "uverbs2" in row[0], "discover lists the lent mlx5_2 with its PCI address and uverbs2",
         p.stdout + p.stderr)
    t.ok("mlx5_2: lent to another network namespace" in p.stdout,
         "discover says it is lent to another network namespace", p.stdout)
    t.ok("mlx5_2" not in p.stderr and "uverbs2" not in p.stderr and "umad2" not in p.stderr,
         "and warns about none of it", p.stderr)

    p = subprocess.run([RDMA_CDI, "discover", "--json", *roots], capture_output=True,
                       text=True)
    devs = {d["name"]: d for d in json.loads(p.stdout)["devices"]}
    t.ok(devs["mlx5_2"]["lent"] is True and devs["mlx5_1"]["lent"] is False,
         "discover --json: \"lent\" true for mlx5_2 only", devs.get("mlx5_2"))

    spec_dir = os.path.join(tmp, "cdi")
    p = subprocess.run([RDMA_CDI, "generate", *roots, "--spec-dir", spec_dir],
                       capture_output=True, text=True)
    with open(os.path.join(spec_dir, "rdma.example-hca.json")) as f:
        spec = {d["name"]: d for d in json.load(f)["devices"]}
    nodes = [n["path"] for n in spec.get("mlx5_2", {}).get("containerEdits", {})
             .get("deviceNodes", [])]
    t.ok(p.returncode == 0 and "/dev/infiniband/uverbs2" in nodes,
         "generate keeps the lent mlx5_2 in the spec with its uverbs2 node", spec.get("mlx5_2"))


if __name__ == "__main__":
    tmp = tempfile.mkdtemp(prefix="rdma-cdi-lent-")
    try:
        main(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(t.done())
