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

# Every error of a file in one run, each on a line of its own, in file order.
p, name = check("withMad: yes\n"
                "pools:\n"
                "  - resourceName: rdma.example/ib\n"
                "    mode: sideways\n"
                "    selectors: {vendors: [\"15b3x\"], numaNode: [0]}\n"
                "  - resourceName: rdma.example/ib\n")
errors = [line.split(" error: ", 1)[1] for line in p.stderr.splitlines() if " error: " in line]
tap.ok(p.returncode == 1 and errors == [
    name + ':1:10: withMad: expected true or false, got "yes"',
    name + ':4:11: pools[0].mode: expected exclusive or shared, got "sideways"',
    name + ':5:27: pools[0].selectors.vendors[0]: invalid vendor ID "15b3x": expected 1 to 4 '
    'hex digits such as 15b3, optionally with 0x, not 0',
    name + ':5:37: pools[0].selectors: unknown key "numaNode" (did you mean numaNodes?)',
    name + ':6:19: pools[1].resourceName: "rdma.example/ib" is already the resource of '
    'pools[0] (line 3): each pool needs its own'], "five errors: each reported, in file order",
    p.stderr)
# A YAML syntax error ends the reading: the one error, and a line that says so.
p, name = check("pools:\n  - {resourceName: a.io/b, mode: x}\nkind: a/b: c\n")
errors = [line for line in p.stderr.splitlines() if " error: " in line]
tap.ok(p.returncode == 1 and len(errors) == 1 and (name + ":3:10: invalid YAML") in errors[0]
       and "a syntax error ends the reading" in p.stderr,
       "a syntax error: only it, and the note that the reading stopped there", p.stderr)
# More than 100 errors: the first 100 and how many more.
p, name = check("pools:\n- resourceName: a.io/p\n  selectors:\n    vendors:\n" +
                "    - zz\n" * 130)
errors = [line for line in p.stderr.splitlines() if " error: " in line]
tap.ok(p.returncode == 1 and len(errors) == 101 and "... and 30 more errors" in errors[-1]
       and (name + ":5:") in errors[0] and (name + ":104:") in errors[99],
       "130 errors: the first 100 in file order, then the count of the rest", p.stderr[-500:])

# --strict: a pool that gets no device makes the exit status 5, with the warning as without.
MATCHES_NOTHING = ("pools:\n  - resourceName: rdma.example/ib\n    selectors: {linkLayers: [ib]}\n"
                   "  - resourceName: rdma.example/far\n    selectors: {numaNodes: [7]}\n")
p, name = check(MATCHES_NOTHING, "--strict")
tap.ok(p.returncode == 5 and "warning: pool rdma.example/far matches no usable device" in p.stdout
       and "--strict: 1 pool gets no device on this node" in p.stderr,
       "--strict: a pool matching nothing here is exit 5", p.stdout + p.stderr)
p, name = check("pools:\n  - resourceName: rdma.example/all\n"
                "  - resourceName: rdma.example/ib\n    selectors: {linkLayers: [ib]}\n",
                "--strict")
tap.ok(p.returncode == 5 and "pool rdma.example/ib gets no device: the 8 usable devices it "
       "matches went to earlier pools" in p.stdout,
       "--strict: a pool whose devices all went to earlier pools is exit 5", p.stdout + p.stderr)
# A device two pools match is a warning, not a failure: a catch-all last pool is a way of
# writing a config (docs/config.md).
p, name = check("pools:\n  - resourceName: rdma.example/ib\n    selectors: {linkLayers: [ib]}\n"
                "  - resourceName: rdma.example/rest\n", "--strict")
tap.ok(p.returncode == 0 and "matches pools rdma.example/ib and rdma.example/rest" in p.stdout,
       "--strict: overlapping pools that each get a device pass", p.stdout + p.stderr)
p, name = check(MATCHES_NOTHING)
tap.ok(p.returncode == 0, "without --strict the same file is exit 0", p.stderr)
p, name = check("pools: [{resourceName: a.io/b, mode: x}]\n", "--strict")
tap.ok(p.returncode == 1, "--strict on an invalid file: exit 1, not 5", p.stderr)

p = subprocess.run([RDMA_CDI, "config", "check", "/nonexistent/config.yaml"],
                   capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 1 and "/nonexistent/config.yaml" in p.stderr, "a missing file: exit 1",
       p.stderr)
p = subprocess.run([RDMA_CDI, "config", "frobnicate"], capture_output=True, text=True, timeout=60)
tap.ok(p.returncode == 2, "an unknown subcommand: exit 2", p.stderr)
sys.exit(tap.done())
