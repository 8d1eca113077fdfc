#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Concurrent `rdma-cdi generate` runs on one spec dir (issue 8): writers of the same
content all succeed; writers of two node states all succeed and leave one complete spec,
byte for byte one of the two; never a temp file left behind.

Rounds: ROUNDS_SAME (default 200) of 20 runs writing identical content, then ROUNDS_MIXED
(default 100) of 10 + 10 runs writing two fixtures. Each round starts from no file, from
the other state's spec or (mixed) from one of the two, so the runs race to create and to
replace. A time budget (TIME_BUDGET, default 50 s) stops early on a slow machine; the
rounds run are reported, and fewer than MIN_ROUNDS (5) of either kind fails the test.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

tap = Tap()
HOOK = "/usr/libexec/rdma-cdi/rdma-cdi-hook"
NAME = "rdma.example-hca.json"
WRITERS = 20
MIN_ROUNDS = 5  # an ASan build on two shared cores manages about 9 in the budget


def generate_cmd(rdma_cdi, sysfs, spec_dir):
    return [rdma_cdi, "generate", "--sysfs-root", sysfs, "--spec-dir", spec_dir,
            "--hook-path", HOOK, "--dev-root", "/nonexistent"]


def reference(rdma_cdi, sysfs, work, tag):
    d = os.path.join(work, "ref-" + tag)
    subprocess.run(generate_cmd(rdma_cdi, sysfs, d), check=True, capture_output=True)
    with open(os.path.join(d, NAME), "rb") as f:
        return f.read()


def put(spec_dir, content):
    """The round's starting state: no file (None) or a spec of ours."""
    path = os.path.join(spec_dir, NAME)
    if content is None:
        if os.path.exists(path):
            os.unlink(path)
        return
    tmp = os.path.join(spec_dir, ".seed")
    with open(tmp, "wb") as f:
        f.write(content)
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)


def run_round(cmds):
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for c in cmds]
    out = []
    for p in procs:
        _, err = p.communicate(timeout=60)
        out.append((p.returncode, err.decode(errors="replace")))
    return out


def check_dir(spec_dir, allowed):
    """None when spec_dir holds exactly our file with one of the allowed contents."""
    names = sorted(os.listdir(spec_dir))
    if names != [NAME]:
        return "spec dir holds %r" % names
    with open(os.path.join(spec_dir, NAME), "rb") as f:
        got = f.read()
    if got not in allowed:
        return "final spec (%d bytes) is none of the expected ones" % len(got)
    try:
        json.loads(got)
    except ValueError as e:
        return "final spec does not parse: %s" % e
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--data", required=True)
    args = ap.parse_args()
    rounds_same = int(os.environ.get("ROUNDS_SAME", "200"))
    rounds_mixed = int(os.environ.get("ROUNDS_MIXED", "100"))
    budget = float(os.environ.get("TIME_BUDGET", "50"))
    work = tempfile.mkdtemp(prefix="rdma-cdi-concurrent-")
    try:
        run(args, work, rounds_same, rounds_mixed, budget)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tap.done()


def run(args, work, rounds_same, rounds_mixed, budget):
    sys_a = os.path.join(args.data, "dgx", "sys")
    sys_b = os.path.join(args.data, "sriov", "sys")
    spec_a = reference(args.rdma_cdi, sys_a, work, "a")
    spec_b = reference(args.rdma_cdi, sys_b, work, "b")
    tap.ok(spec_a != spec_b, "the two fixtures give different specs")
    spec_dir = os.path.join(work, "cdi")
    os.makedirs(spec_dir)
    deadline = time.monotonic() + budget
    half = budget / 2

    # Same content: every run succeeds, the file is that content.
    fails, bad, done = [], [], 0
    start = time.monotonic()
    for i in range(rounds_same):
        if time.monotonic() - start > half:
            break
        put(spec_dir, None if i % 2 == 0 else spec_b)
        res = run_round([generate_cmd(args.rdma_cdi, sys_a, spec_dir)] * WRITERS)
        fails += [(i, rc, err) for rc, err in res if rc != 0]
        problem = check_dir(spec_dir, (spec_a,))
        if problem:
            bad.append((i, problem))
        done += 1
    tap.diag("identical content: %d of %d rounds of %d runs in %.1f s" %
             (done, rounds_same, WRITERS, time.monotonic() - start))
    tap.ok(done >= min(MIN_ROUNDS, rounds_same), "identical content: %d rounds ran" % done)
    tap.ok(not fails, "identical content: all %d runs exit 0 (%d failed)" %
           (done * WRITERS, len(fails)), fails[0][2] if fails else None)
    tap.ok(not bad, "identical content: the spec is complete and no temp file is left",
           bad[:3])

    # Two node states: every run succeeds, one complete winner.
    fails, bad, done, seen = [], [], 0, set()
    start = time.monotonic()
    starts = (None, spec_a, spec_b)
    for i in range(rounds_mixed):
        if time.monotonic() > deadline:
            break
        put(spec_dir, starts[i % 3])
        cmds = [generate_cmd(args.rdma_cdi, sys_a if k % 2 else sys_b, spec_dir)
                for k in range(WRITERS)]
        res = run_round(cmds)
        fails += [(i, rc, err) for rc, err in res if rc != 0]
        problem = check_dir(spec_dir, (spec_a, spec_b))
        if problem:
            bad.append((i, problem))
        else:
            with open(os.path.join(spec_dir, NAME), "rb") as f:
                seen.add(f.read() == spec_a)
        done += 1
    tap.diag("two node states: %d of %d rounds of %d runs in %.1f s (winners seen: %s)" %
             (done, rounds_mixed, WRITERS, time.monotonic() - start,
              ", ".join(sorted("dgx" if s else "sriov" for s in seen))))
    tap.ok(done >= min(MIN_ROUNDS, rounds_mixed), "two node states: %d rounds ran" % done)
    tap.ok(not fails, "two node states: all %d runs exit 0 (%d failed)" %
           (done * WRITERS, len(fails)), fails[0][2] if fails else None)
    tap.ok(not bad, "two node states: the spec is one of the two, complete, no temp file",
           bad[:3])


if __name__ == "__main__":
    sys.exit(main())
