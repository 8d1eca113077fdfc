#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A release tarball: `meson dist` makes one that builds and passes its quick tests.

  test-dist.py --build-root DIR --source-root DIR   (TAP)

1. `meson dist --no-tests --allow-dirty --formats gztar` in the build dir: the tarball of
   the committed tree (what a release is; local changes are not in it).
2. Its contents: LICENSE, CHANGELOG.md, meson.build, the dist script's .tarball-commit
   naming HEAD; no .git, no build dir.
3. Unpacked in a temp dir outside any git tree, configured with the default options (the
   daemons found as here) and an unoptimised build type to keep it short, it compiles the
   programs and the tests of the quick suites (QUICK) and passes them; its
   `rdma-cdi --version` prints the version and the commit from .tarball-commit.
The whole build is bounded by TIMEOUT; the temp dir is removed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402

QUICK = ["common", "config", "cdi"]
TIMEOUT = 900


def run(cmd, timeout=TIMEOUT, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, "timeout", e.stdout or "", e.stderr or "")


def show(r):
    return "$ %s\nexit %s\n%s\n%s" % (" ".join(r.args), r.returncode, r.stdout[-3000:],
                                      r.stderr[-3000:])


def make_tarball(tap, a):
    r = run(["meson", "dist", "-C", a.build_root, "--no-tests", "--allow-dirty",
             "--formats", "gztar"], timeout=300)
    found = re.findall(r"Created (\S+\.tar\.gz)", r.stdout + r.stderr)
    if not tap.ok(r.returncode == 0 and found and os.path.isfile(found[-1]),
                  "meson dist makes a tarball", show(r)):
        return None
    return found[-1]


def check_contents(tap, a, tarball, version):
    head = run(["git", "-C", a.source_root, "rev-parse", "--short=12", "HEAD"]).stdout.strip()
    with tarfile.open(tarball) as t:
        names = t.getnames()
        top = "rdma-cdi-%s/" % version
        commit = t.extractfile(top + ".tarball-commit").read().decode().strip() \
            if top + ".tarball-commit" in names else ""
    need = [top + f for f in ("LICENSE", "CHANGELOG.md", "meson.build")]
    tap.ok(all(n in names for n in need), "the tarball has LICENSE, CHANGELOG.md, meson.build "
           "under %s" % top, [n for n in need if n not in names])
    stray = [n for n in names if "/.git/" in n or n.endswith("/.git") or "/build/" in n]
    tap.ok(not stray, "no .git and no build dir in it", stray[:10])
    tap.ok(head and commit == head, ".tarball-commit names HEAD (%s)" % head, commit)
    return head


def quick_targets(bdir):
    """The build files the QUICK suites' tests run (the tests' programs and depends)."""
    tests = json.loads(run(["meson", "introspect", "--tests", bdir]).stdout or "[]")
    targets = json.loads(run(["meson", "introspect", "--targets", bdir]).stdout or "[]")
    by_id = {t["id"]: t for t in targets}
    out = set()
    for t in tests:
        if not set(t["suite"]) & ({"rdma-cdi:" + s for s in QUICK} | set(QUICK)):
            continue
        for dep in t.get("depends") or []:
            out |= set(by_id.get(dep, {}).get("filename") or [])
        if t["cmd"] and t["cmd"][0].startswith(bdir):
            out.add(t["cmd"][0])
    return sorted(os.path.relpath(f, bdir) for f in out)


def build_tarball(tap, tarball, version, head):
    with tempfile.TemporaryDirectory(prefix="rdma-cdi-dist-", dir="/var/tmp") as tmp:
        with tarfile.open(tarball) as t:
            t.extractall(tmp)
        src = os.path.join(tmp, "rdma-cdi-%s" % version)
        bdir = os.path.join(tmp, "build")
        r = run(["meson", "setup", "--buildtype=plain", bdir, src], timeout=300)
        if not tap.ok(r.returncode == 0 and re.search(r"dra\s*: /", r.stdout),
                      "the tarball configures with the daemons found", show(r)):
            return
        targets = ["rdma-cdi", "rdma-cdi-bridge", "rdma-cdi-dra"] + quick_targets(bdir)
        r = run(["ninja", "-C", bdir] + targets)
        if not tap.ok(r.returncode == 0, "the tarball builds the programs and the tests of "
                      "the %s suites (%d targets)" % (", ".join(QUICK), len(targets)), show(r)):
            return
        r = run([os.path.join(bdir, "rdma-cdi"), "--version"])
        tap.ok(r.stdout == "rdma-cdi %s (commit %s)\n" % (version, head),
               "its rdma-cdi --version names the version and the commit", show(r))
        cmd = ["meson", "test", "-C", bdir, "--no-rebuild", "--num-processes", "1",
               "--print-errorlogs"]
        for s in QUICK:
            cmd += ["--suite", s]
        r = run(cmd)
        n = re.search(r"^Ok:\s+(\d+)", r.stdout, re.M)
        tap.ok(r.returncode == 0 and n and int(n.group(1)) > 0,
               "its %s suites pass (%s tests)" % (", ".join(QUICK), n.group(1) if n else "?"),
               show(r))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-root", required=True)
    ap.add_argument("--source-root", required=True)
    a = ap.parse_args()
    tap = Tap()
    for tool in ("meson", "ninja", "git"):
        if not shutil.which(tool):
            print("Bail out! %s not found: run .ci/install-deps" % tool)
            return 1
    version = run([os.path.join(a.build_root, "rdma-cdi"), "--version"]).stdout.split()[1]
    tarball = make_tarball(tap, a)
    if tarball:
        head = check_contents(tap, a, tarball, version)
        build_tarball(tap, tarball, version, head)
        os.unlink(tarball)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
