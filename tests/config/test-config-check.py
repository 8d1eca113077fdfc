# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi config check`: the command operators run before they roll out a ConfigMap."""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI, DATA = sys.argv[1], sys.argv[2]
DGX = os.path.join(DATA, "dgx", "sys")
tap = Tap()


def check(text, *extra):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([RDMA_CDI, "config", "check", "--sysfs-root", DGX, *extra, f.name],
                           capture_output=True, text=True, timeout=60)
        return p, f.name
    finally:
        os.unlink(f.name)


p, name = check("pools:\n  - resourceName: rdma.example/ib\n    selectors: {linkLayers: [ib]}\n"
                "  - resourceName: rdma.example/roce\n    selectors: {linkLayers: [eth]}\n")
tap.ok(p.returncode == 0 and p.stdout.startswith(name + ": valid"), "a valid file: exit 0",
       p.stdout + p.stderr)
tap.ok("pool rdma.example/ib: exclusive, 8 HCAs" in p.stdout and
       "pool rdma.example/roce: exclusive, 2 HCAs" in p.stdout,
       "the pools it makes on this node, with their devices", p.stdout)
tap.ok("mlx5_8" in p.stdout.split("pool rdma.example/roce")[1], "RoCE HCAs in the RoCE pool")

p, _ = check("pools:\n  - resourceName: rdma.example/ib\n    selectors: {numaNodes: [7]}\n")
tap.ok(p.returncode == 0 and "matches no usable device" in p.stdout + p.stderr,
       "a pool matching nothing here is a warning, not an error", p.stdout + p.stderr)

p, name = check("pools:\n  - resourceName: rdma.example/ib\n    mode: sideways\n")
tap.ok(p.returncode == 1 and (name + ":3:11") in p.stderr and "mode" in p.stderr,
       "an invalid file: exit 1 naming file:line:column and key", p.stderr)

p = subprocess.run([RDMA_CDI, "config", "check", "/nonexistent/config.yaml"],
                   capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 1 and "/nonexistent/config.yaml" in p.stderr, "a missing file: exit 1",
       p.stderr)
p = subprocess.run([RDMA_CDI, "config", "frobnicate"], capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 2, "an unknown subcommand: exit 2", p.stderr)
sys.exit(tap.done())
