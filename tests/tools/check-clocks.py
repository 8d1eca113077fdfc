#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every timer of the daemons runs on the monotonic clock: a wall-clock step (NTP, an
operator's date -s) must neither fire them in a burst nor stall them for hours.

Scans the C sources the daemons are built from for the ways a timer or a deadline can be
put on CLOCK_REALTIME (an sd-event time source or its "now", a gRPC deadline, a timed join
or wait with a realtime absolute time, a realtime timerfd). Reading the wall clock to print
or publish a time is fine and not flagged. The kubelet-clock-jump scenario checks the
running bridge; this check covers the timers that scenario cannot reach (retry backoffs,
settle timers, shutdown waits)."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from tap import Tap  # noqa: E402

DIRS = ["bridge", "common", "config", "discovery", "specs", "cdi", "hooks"]
MONOTONIC = ("CLOCK_MONOTONIC", "CLOCK_BOOTTIME")
# (regex, what is wrong); the first group, where there is one, is the clock argument.
RULES = [
    (re.compile(r"sd_event_add_time(?:_relative)?\s*\(\s*[^,]+,\s*[^,]+,\s*(\w+)"),
     "an sd-event timer on %s"),
    (re.compile(r"sd_event_now\s*\(\s*[^,]+,\s*(\w+)"), "sd_event_now() of %s"),
    (re.compile(r"timerfd_create\s*\(\s*(\w+)"), "a timerfd on %s"),
    (re.compile(r"gpr_now\s*\(\s*(GPR_CLOCK_REALTIME)"), "a gRPC deadline on %s"),
    (re.compile(r"\b(pthread_timedjoin_np|pthread_cond_timedwait|sem_timedwait|"
                r"pthread_mutex_timedlock)\s*\("), "%s (an absolute CLOCK_REALTIME time)"),
]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def findings(root):
    for d in DIRS:
        top = os.path.join(root, d)
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, errors="replace") as f:
                    text = strip_comments(f.read())
                flat = re.sub(r"\s+", " ", text)
                for rx, what in RULES:
                    for m in rx.finditer(flat):
                        arg = m.group(1)
                        if arg in MONOTONIC or arg == "clock":
                            continue
                        yield os.path.relpath(path, root), what % arg, m.group(0)[:80]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    args = ap.parse_args()
    tap = Tap()
    # The rules must see what they are about: the daemons' known timers are found.
    flat = ""
    for d in DIRS:
        for dirpath, _, files in os.walk(os.path.join(args.source_root, d)):
            for name in files:
                if name.endswith(".c"):
                    with open(os.path.join(dirpath, name), errors="replace") as f:
                        flat += f.read()
    n = len(re.findall(r"sd_event_add_time(?:_relative)?\s*\(", flat))
    tap.ok(n >= 6, "the scan sees the daemons' sd-event timers (%d)" % n)
    bad = list(findings(args.source_root))
    tap.ok(not bad, "no timer or deadline on the wall clock",
           "\n".join("%s: %s: %s" % b for b in bad))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
