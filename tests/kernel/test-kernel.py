#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""One boot of the soft-RoCE VM as a meson test: relays the guest's TAP.

  test-kernel.py --source-root SRC --build-dir BUILD --plan STEP,STEP,... [--timeout S]

setup.sh first (idempotent: packages, and Debian's kernel into the cache), then one boot
running guest_checks.py with the plan. The guest's results are renumbered into this
test's TAP; a guest that does not boot, hangs or stops before its plan line is a failure
with the console shown. A guest kernel that locks up (about once in 20 boots under TCG)
is booted once more, and the TAP says so.
"""

import argparse
import base64
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import vm  # noqa: E402
from tap import Tap  # noqa: E402

# The guest mounts its own file systems there (guest.sh): the host's files are hidden.
GUEST_MOUNTS = ("/run", "/var/run", "/dev", "/proc", "/sys", "/var/lib/containers", "/etc/cdi")
RESULT = re.compile(r"^(not )?ok \d+(?: - )?(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)$")


def relay(tap, text):
    """Re-emits the guest's TAP lines; returns (results seen, the guest's plan or None)."""
    seen, plan = 0, None
    for line in text.splitlines():
        m = RESULT.match(line)
        if m:
            seen += 1
            what, _, directive = m.group(2).partition(" # ")
            if directive.upper().startswith("SKIP"):
                tap.skip(what, directive[4:].strip() or "skipped in the guest")
            else:
                tap.ok(m.group(1) is None, what)
        elif PLAN.match(line):
            plan = int(PLAN.match(line).group(1))
        elif line.startswith("#"):
            print(line)
    sys.stdout.flush()
    return seen, plan


def console_tail(b, lines=80):
    return "\n".join(b.console.splitlines()[-lines:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--kernel-cache", default="/var/cache/rdma-cdi-test/kernel")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--hook", required=True)
    ap.add_argument("--proto-dir", required=True)
    args = ap.parse_args()
    # meson's timeout sends SIGTERM: unwind, so that vm.boot() stops the VM.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("test-kernel.py: terminated"))
    tap = Tap()
    t0 = time.monotonic()
    setup = subprocess.run([os.path.join(HERE, "setup.sh"), args.kernel_cache],
                           capture_output=True, text=True, timeout=900)
    print("# setup.sh: %.1f s" % (time.monotonic() - t0))
    kdir = os.path.join(args.kernel_cache, "current")
    if not tap.ok(setup.returncode == 0, "setup.sh: packages and Debian's kernel in %s" % kdir,
                  setup.stdout + setup.stderr):
        return tap.done()
    # The guest sees the host's paths as they are (the 9p share is the host's /).
    guest = {"source_root": os.path.abspath(args.source_root),
             "build_dir": os.path.abspath(args.build_dir),
             "kernel_dir": os.path.realpath(kdir), "plan": args.plan.split(","),
             "rdma_cdi": os.path.abspath(args.rdma_cdi), "hook": os.path.abspath(args.hook),
             "proto_dir": os.path.abspath(args.proto_dir)}
    params = {"RDMA_CDI_VM_SRC": guest["source_root"],
              "RDMA_CDI_VM_ARGS": base64.b64encode(json.dumps(guest).encode()).decode(),
              "RDMA_CDI_VM_GUEST_TIMEOUT": str(int(args.timeout - 30))}
    hidden = [p for p in (guest["source_root"], guest["build_dir"]) for d in GUEST_MOUNTS
              if p == d or p.startswith(d + "/")]
    if not tap.ok(not hidden, "source and build dir visible in the guest (not under %s)" %
                  ", ".join(GUEST_MOUNTS), hidden):
        return tap.done()
    work = tempfile.mkdtemp(prefix="rdma-cdi-vm-")
    try:
        b = vm.boot(kdir, params, args.timeout, work)
        if b.ended == "lockup":
            print("# the guest kernel locked up (%.0f s in): booting once more" % b.seconds)
            print("\n".join("#   " + l for l in console_tail(b, 30).splitlines()))
            b = vm.boot(kdir, params, args.timeout, work)
        print("# boot: %s after %.1f s (kernel %s)" % (b.ended, b.seconds,
                                                      vm.kernel_version(kdir)))
        seen, plan = relay(tap, b.tap)
        tap.ok(b.ended == "poweroff" and plan is not None and plan == seen and seen > 0,
               "the guest booted, ran its plan (%s) and powered off" % args.plan,
               "ended: %s after %.0f s; %d results, plan %s\n--- console ---\n%s" %
               (b.ended, b.seconds, seen, plan, console_tail(b)))
    finally:
        subprocess.run(["rm", "-rf", work])
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
