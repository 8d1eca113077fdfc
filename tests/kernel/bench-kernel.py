#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark on the real kernel: one boot of the kernel suite's VM (test-kernel.py) with
the plan rdma,bench-events,bench; prints the markdown section of docs/benchmarks.md.

  bench-kernel.py --source-root SRC --build-dir BUILD --rdma-cdi BIN --hook BIN
                  --proto-dir DIR

Each figure stands beside its floor measured in the same boot: the kernel's own inotify
event for the device node (hotplug), the port state in sysfs (carrier loss), the sysfs
floor program (generate). Absolute times are TCG's, 10-50x slower than the host.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def row(what, fig, key, floor_what, note=""):
    v, f = fig[key + "_ms"], fig[key + "_floor_ms"]
    return "| %s | **%.1fx** | %.0f ms | %s %.0f ms | %s |" % (what, v / f if f else 0, v,
                                                              floor_what, f, note)


def main():
    ap = argparse.ArgumentParser()
    for a in ("--source-root", "--build-dir", "--rdma-cdi", "--hook", "--proto-dir"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    argv = [sys.executable, os.path.join(HERE, "test-kernel.py"), "--plan",
            "rdma,bench-events,bench", "--timeout", "600"]
    for a in ("source_root", "build_dir", "rdma_cdi", "hook", "proto_dir"):
        argv += ["--" + a.replace("_", "-"), getattr(args, a)]
    load = open("/proc/loadavg").read().split()[:3]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=1500)
    m = re.search(r"^# figures (.*)$", r.stdout, re.M)
    boot = re.search(r"^# boot: (.*)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        sys.stderr.write(r.stdout + r.stderr)
        return 1
    fig = json.loads(m.group(1))
    kernel = re.search(r"kernel ([^)]*)", boot.group(1)).group(1) if boot else "?"
    print("## Real kernel (soft-RoCE under TCG)\n")
    print("`tests/kernel/bench-kernel.py` (`meson test -C BUILD --benchmark kernel`): one boot "
          "of the kernel suite's VM, Debian's kernel %s under qemu without KVM (TCG, 2 vCPUs), "
          "two rxe devices on their own veth pairs, the bridge (`--rescan-interval 2`) under "
          "the kubelet double, all inside the guest. %d rounds of `rdma link delete rxe1` / "
          "`rdma link add rxe1`, timed from the command's start to the kubelet double's new "
          "ListAndWatch list; %d rounds of `ip link set veth0 down`, to rxe0 Unhealthy. "
          "**Floor**, in the same boot: the kernel's inotify event for `uverbs1` in "
          "`/dev/infiniband` (hotplug), `ports/1/state` reading DOWN in sysfs (carrier); "
          "for `generate`, `sysfs-floor` on the real `/sys`, 20 runs each in turn "
          "(tests/bench/timeit.c). Medians.\n" % (kernel, fig["rounds"],
                                                  max(2, fig["rounds"] // 2)))
    print("- Date: %s; host load average at the start: %s" %
          (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), " ".join(load)))
    print("- TCG runs code 10-50x slower than the host: the ratios carry over, the "
          "milliseconds do not. Carrier loss has no event to follow: it waits for the "
          "periodic rescan, whose period the daemon stretches under TCG.")
    print("- Printed by bench-kernel.py and pasted here (report.sh does not boot the VM).\n")
    print("| figure | **ratio** | measured | floor | note |")
    print("|---|---:|---:|---:|---|")
    print(row("removal -> kubelet's new list", fig, "removal", "inotify IN_DELETE"))
    print(row("addition -> kubelet's new list", fig, "addition", "inotify IN_CREATE",
              "spec written first"))
    print(row("carrier loss -> Unhealthy", fig, "unhealthy", "sysfs state DOWN",
              "periodic rescan, stretched to every %d s in TCG" % fig["rescan_period_s"]))
    print("| `generate` on the real node (2 devices) | **%.2fx** | %.1f ms | sysfs-floor %.1f ms "
          "| whole process |" % (fig["generate_ms"] / fig["floor_ms"], fig["generate_ms"],
                                 fig["floor_ms"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
