#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What the rdma-cdi binary loads (TAP): a podman host's one-shot commands must not pay
for the daemons or the verbs probe at start-up.

- rdma-cdi's NEEDED entries and its whole ldd closure hold no gRPC, gpr, Abseil, upb,
  protobuf-c, C++ runtime, libsystemd, libinotifytools, libibverbs, librdmacm or libnl:
  the bridge and `generate --watch` are executables of their own (rdma-cdi-bridge,
  rdma-cdi-watch) and doctor dlopens the verbs libraries.
- `generate` and `doctor` as run, seen by the dynamic loader (LD_DEBUG=files): generate
  opens none of those; doctor opens libibverbs and librdmacm (its probe is real).
- rdma-cdi-watch links libsystemd, rdma-cdi-bridge gRPC (so the checks above can see
  them), and `rdma-cdi generate --watch` / `rdma-cdi bridge` become them in the same
  process, global options handed on. Without the bridge (-Dbridge=disabled):
  `rdma-cdi bridge` exits 1 saying how it was built.
"""
import os
import shutil
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI = os.environ["RDMA_CDI"]
BRIDGE = os.environ.get("RDMA_CDI_BRIDGE", "")
WATCH = os.environ["RDMA_CDI_WATCH"]
HAVE_BRIDGE = os.environ["RDMA_CDI_HAVE_BRIDGE"] == "1"
DATA_DIR = os.environ["DATA_DIR"]
BRIDGE_LIBS = re.compile(r"^lib(grpc|gpr|absl|upb|protobuf-c|address_sorting|stdc\+\+)")
VERBS_LIBS = re.compile(r"^lib(ibverbs|rdmacm|nl-)")
LOOP_LIBS = re.compile(r"^lib(systemd|inotifytools|gcrypt|lz4|zstd|lzma)")

tap = Tap()


def run(*cmd, env=None):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


def needed(binary):
    r = run("readelf", "-d", binary)
    return r.returncode, re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", r.stdout)


def ldd_names(binary):
    r = run("ldd", binary)
    return r.returncode, [os.path.basename(line.split()[0]) for line in r.stdout.splitlines()
                          if line.strip()]


def loaded(cmd):
    """The libraries the loader opened for cmd (LD_DEBUG=files), by file name."""
    r = run(*cmd, env={"LD_DEBUG": "files"})
    return r, sorted({os.path.basename(m) for m in
                      re.findall(r"file=(\S+) \[0\];\s+(?:needed by|dynamically loaded by)",
                                 r.stderr)})


def bad(names, *pats):
    return [n for n in names if any(p.match(n) for p in pats)]


rc, ne = needed(RDMA_CDI)
# A sanitizer build links libasan/libubsan, which bring the C++ runtime themselves.
if any(n.startswith(("libasan", "libubsan")) for n in ne):
    BRIDGE_LIBS = re.compile(r"^lib(grpc|gpr|absl|upb|protobuf-c|address_sorting)")
tap.ok(rc == 0 and "libc.so.6" in ne and not bad(ne, BRIDGE_LIBS, VERBS_LIBS, LOOP_LIBS),
       "rdma-cdi NEEDED: %s (no gRPC/Abseil/protobuf-c/libsystemd/verbs)" % " ".join(ne), "%s" % ne)
rc, closure = ldd_names(RDMA_CDI)
tap.ok(rc == 0 and len(closure) > 2 and not bad(closure, BRIDGE_LIBS, VERBS_LIBS, LOOP_LIBS),
       "rdma-cdi's ldd closure: %d objects, none of the daemons' or verbs'" % len(closure),
       "%s" % closure)

with tempfile.TemporaryDirectory(prefix="rdma-cdi-linkage.") as tmp:
    sysfs = os.path.join(DATA_DIR, "dgx", "sys")
    r, libs = loaded([RDMA_CDI, "generate", "--sysfs-root", sysfs, "--output",
                      os.path.join(tmp, "spec.json")])
    tap.ok(r.returncode == 0 and "libc.so.6" in libs and not bad(libs, BRIDGE_LIBS, VERBS_LIBS, LOOP_LIBS),
           "generate loads %d libraries, none of the daemons' or verbs'" % len(libs),
           "exit %s\n%s\n%s" % (r.returncode, libs, r.stderr[-2000:]))
    r, libs = loaded([RDMA_CDI, "doctor", "--sysfs-root", sysfs])
    tap.ok("libibverbs.so.1" in libs and "librdmacm.so.1" in libs and
           not bad(libs, BRIDGE_LIBS),
           "doctor loads libibverbs and librdmacm for its probe, not the bridge's libraries",
           "exit %s\n%s" % (r.returncode, libs))



def becomes(cmd, comm):
    """Starts cmd and reads its /proc comm until it is comm: the same pid exec'd it."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = ""
    for _ in range(250):
        try:
            with open("/proc/%d/comm" % p.pid) as f:
                seen = f.read().strip()
        except OSError:
            break
        if seen == comm:
            break
        subprocess.run(["sleep", "0.02"])
    p.kill()
    p.wait()
    return p.pid, seen


rc, ne = needed(WATCH)
tap.ok(rc == 0 and "libsystemd.so.0" in ne, "rdma-cdi-watch links libsystemd", "%s" % ne)
with tempfile.TemporaryDirectory(prefix="rdma-cdi-linkage.") as tmp:
    pid, comm = becomes([RDMA_CDI, "generate", "--watch", "--sysfs-root",
                         os.path.join(DATA_DIR, "dgx", "sys"), "--spec-dir", tmp],
                        "rdma-cdi-watch")
    tap.ok(comm == "rdma-cdi-watch",
           "rdma-cdi generate --watch becomes rdma-cdi-watch in the same process (pid %d: %s)"
           % (pid, comm))
r = run(RDMA_CDI, "--log-format", "json", "generate", "--watch", "--output", "x")
tap.ok(r.returncode == 2 and r.stderr.startswith("{") and "--output" in r.stderr and
       len(r.stderr.splitlines()) == 1,
       "rdma-cdi --log-format json generate --watch --output x: one usage error, in JSON, "
       "exit 2", "exit %s\n%s" % (r.returncode, r.stderr))

if HAVE_BRIDGE:
    rc, ne = needed(BRIDGE)
    tap.ok(rc == 0 and [n for n in ne if n.startswith("libgrpc")],
           "rdma-cdi-bridge links gRPC (%s)" % " ".join(n for n in ne if BRIDGE_LIBS.match(n)),
           "%s" % ne)
    # The daemon runs in the same process: its comm is the daemon's, its pid the one we
    # started; a bad option is rejected by it with the global log format applied.
    r = run(RDMA_CDI, "--log-format", "json", "bridge", "--shared", "0")
    tap.ok(r.returncode == 2 and r.stderr.startswith("{") and "--shared 0" in r.stderr,
           "rdma-cdi --log-format json bridge --shared 0: the daemon's usage error, "
           "in JSON, exit 2", "exit %s\n%s" % (r.returncode, r.stderr))
    # Private plugin and spec dirs: the daemon is killed mid-start, nothing of the host's
    # (/var/run/cdi, the default spec dir) may be written.
    scratch = tempfile.mkdtemp(prefix="rdma-cdi-linkage-")
    pid, comm = becomes([RDMA_CDI, "bridge", "--plugin-dir", os.path.join(scratch, "plugins"),
                         "--spec-dir", os.path.join(scratch, "cdi"),
                         "--sysfs-root", os.path.join(DATA_DIR, "dgx", "sys")],
                        "rdma-cdi-bridge")
    shutil.rmtree(scratch, ignore_errors=True)
    tap.ok(comm == "rdma-cdi-bridge",
           "rdma-cdi bridge becomes rdma-cdi-bridge in the same process (pid %d: %s)"
           % (pid, comm))
else:
    r = run(RDMA_CDI, "bridge", "--help")
    tap.ok(r.returncode == 1 and "built without" in r.stderr and not r.stdout,
           "a build without the bridge: rdma-cdi bridge exits 1 and says so",
           "exit %s\n%s" % (r.returncode, r.stderr))
    r = run(RDMA_CDI, "--help")
    tap.ok(r.returncode == 0 and re.search(r"^  bridge ", r.stdout, re.M),
           "... and still lists it in --help", r.stdout)
tap.done()
