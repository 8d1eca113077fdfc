# SPDX-License-Identifier: Apache-2.0
"""Plumbing of the tests that run real container runtimes (tests/e2e, tests/deploy/test-image.py).

Each such test runs in two halves: the outer half (TAP on stdout) re-runs its own script under
`unshare -m --propagation private`; the inner half mounts what it needs in that private mount
namespace and writes its results as JSON lines, which the outer half relays as TAP. Nothing
here asserts anything: the checks stay in the tests.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    import e2e_util as eu
"""
import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import traceback

INF = resource.RLIM_INFINITY
MEMLOCK = resource.RLIMIT_MEMLOCK
MIB = 1 << 20
# The soft RLIMIT_MEMLOCK the runtimes start with (the kernel default before 5.16): only the
# hook can raise it, so a container that mlocks 4 MiB proves the hook ran.
CONTROL_MEMLOCK = 64 << 10

# The dgx fixture (tests/fixtures/mksysfs.py) as mlock-probe sees it: uverbsN is 231:192+N.
N_UVERBS = 10
RDMA_CM = "c 10:57"
PROBE_NODES = ["/dev/infiniband/uverbs%d" % n for n in range(N_UVERBS)] + \
    ["/dev/infiniband/rdma_cm"]


def run(cmd, timeout=120, **kw):
    """subprocess.run with text output; a timeout is returned as returncode "timeout"."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        out, err = e.stdout or "", e.stderr or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
        return subprocess.CompletedProcess(cmd, "timeout", out, "timed out: " + err)


def must(cmd, **kw):
    """Runs cmd (60 s at most); raises RuntimeError naming it and its stderr on failure."""
    r = run(cmd, timeout=60, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))
    return r


def show(r):
    """A finished command for a diagnostic: exit, command line, the tails of its output."""
    return "exit %s\ncmd: %s\nstdout:\n%s\nstderr:\n%s" % (
        r.returncode, " ".join(r.args) if isinstance(r.args, list) else r.args,
        (r.stdout or "")[-3000:], (r.stderr or "")[-3000:])


def bail(msg):
    print("Bail out! " + msg)
    raise SystemExit(1)


def unescape(s):
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and i + 4 <= len(s) and s[i + 1:i + 4].isdigit():
            out += chr(int(s[i + 1:i + 4], 8))
            i += 4
        else:
            out += s[i]
            i += 1
    return out


def mounts_under(prefix):
    """The mount points at or below prefix in this mount namespace."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = unescape(line.split()[4])
            if mp == prefix or mp.startswith(prefix.rstrip("/") + "/"):
                out.append(mp)
    return out


def host_snapshot(dirs):
    """The listing of each dir (None when absent): what a test must leave as it found it."""
    return {d: sorted(os.listdir(d)) if os.path.isdir(d) else None for d in dirs}


@contextlib.contextmanager
def work_dir(prefix, hidden=("/run",)):
    """A world-readable temp dir outside the dirs the inner half hides behind private mounts;
    removed afterwards unless something is still mounted below it."""
    tmp = os.path.realpath(tempfile.gettempdir())
    if any(tmp == d or tmp.startswith(d + "/") for d in hidden):
        tmp = "/var/tmp"
    work = tempfile.mkdtemp(prefix=prefix, dir=tmp)
    os.chmod(work, 0o755)
    try:
        yield work
    finally:
        left = mounts_under(work)
        if left:
            print("# not removing %s: still mounted: %s" % (work, " ".join(left)))
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_inner(argv, timeout):
    """Runs argv under `unshare -m --propagation private` in its own session; on timeout the
    whole session is killed. Returns (exit status or "timeout after N s", stdout+stderr)."""
    cmd = ["unshare", "-m", "--propagation", "private"] + list(argv)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out or ""
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "timeout after %d s" % timeout, out or ""


class Results:
    """The inner half's results, one JSON object a line, flushed as they come."""

    def __init__(self, path):
        self.f = open(path, "a")

    def _w(self, obj):
        self.f.write(json.dumps(obj) + "\n")
        self.f.flush()

    def ok(self, cond, desc, diag=""):
        self._w({"type": "test", "ok": bool(cond), "desc": desc, "diag": str(diag)})
        return bool(cond)

    def skip(self, desc, why):
        self._w({"type": "skip", "desc": desc, "why": why})

    def note(self, msg):
        self._w({"type": "note", "msg": msg})

    def ns(self, ino):
        self._w({"type": "ns", "ino": ino})

    def done(self):
        self._w({"type": "done"})


def relay(tap, path, prefix=""):
    """Replays the inner half's results file as TAP (descriptions and notes prefixed).
    Returns (lines, the mount namespace inode the inner half reported or None, done)."""
    lines, ns = [], None
    if os.path.exists(path):
        with open(path) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    for res in lines:
        if res["type"] == "note":
            tap.diag(prefix + res["msg"])
        elif res["type"] == "ns":
            ns = res["ino"]
        elif res["type"] == "skip":
            tap.skip(prefix + res["desc"], res["why"])
        elif res["type"] == "test":
            tap.ok(res["ok"], prefix + res["desc"], res.get("diag", ""))
    return lines, ns, any(l["type"] == "done" for l in lines)


def main(paths, inner, outer, inner_choices=None, env=None):
    """Parses the script's options: each of paths (e.g. "--rdma-cdi") is required and made
    absolute, after env {attribute: variable} overrides; --inner (a flag, or one of
    inner_choices) and --work are the inner half's. Runs outer(a) or inner(a); an exception
    in the inner half is printed (the outer half shows its output) and exits 1."""
    ap = argparse.ArgumentParser()
    for opt in paths:
        ap.add_argument(opt, required=True)
    if inner_choices:
        ap.add_argument("--inner", choices=inner_choices)
    else:
        ap.add_argument("--inner", action="store_true")
    ap.add_argument("--work")
    a = ap.parse_args()
    for k, var in (env or {}).items():
        setattr(a, k, os.environ.get(var, getattr(a, k)))
    for opt in paths:
        k = opt.lstrip("-").replace("-", "_")
        setattr(a, k, os.path.abspath(getattr(a, k)))
    if not a.inner:
        return outer(a)
    try:
        return inner(a)
    except Exception:
        traceback.print_exc()
        return 1


def private_dir_over(path, scratch, source, mode="0755"):
    """Gives `path` an empty tmpfs in this mount namespace, creating the mount point (via an
    overlay over its parent) when the host has no such directory. scratch is a private
    tmpfs dir of the caller's; source names the mounts in mountinfo."""
    if not os.path.isdir(path):
        parent = os.path.dirname(path)
        # Mounts below the parent (e.g. /etc/hosts bind mounts in CI containers) would be
        # hidden by the overlay: park them and put them back.
        subs = [m for m in mounts_under(parent) if m != parent]
        parked = []
        for i, m in enumerate(subs):
            tgt = os.path.join(scratch, "park-%d" % i)
            if os.path.isdir(m):
                os.mkdir(tgt)
            else:
                open(tgt, "w").close()
            must(["mount", "--bind", m, tgt])
            parked.append((tgt, m))
        up, wk = os.path.join(scratch, "up"), os.path.join(scratch, "work")
        os.mkdir(up)
        os.mkdir(wk)
        must(["mount", "-t", "overlay", source, "-o",
              "lowerdir=%s,upperdir=%s,workdir=%s" % (parent, up, wk), parent])
        for tgt, m in parked:
            if not os.path.exists(m):
                if os.path.isdir(tgt):
                    os.makedirs(m)
                else:
                    open(m, "w").close()
            must(["mount", "--bind", tgt, m])
        os.mkdir(path)
    must(["mount", "-t", "tmpfs", "-o", "mode=" + mode, source, path])


def podman_conf(work, runtime=None):
    """containers.conf and storage.conf in work (vfs storage there, cgroupfs, file events) so
    that the host's (default_ulimits, hooks, drivers) stay out; returns the env naming them."""
    with open(os.path.join(work, "containers.conf"), "w") as f:
        f.write("[containers]\n[engine]\ncgroup_manager = \"cgroupfs\"\n"
                "events_logger = \"file\"\n" +
                ("runtime = \"%s\"\n" % runtime if runtime else ""))
    with open(os.path.join(work, "storage.conf"), "w") as f:
        f.write("[storage]\ndriver = \"vfs\"\ngraphroot = \"%s/storage\"\n"
                "runroot = \"%s/runroot\"\n" % (work, work))
    return dict(os.environ, CONTAINERS_CONF=os.path.join(work, "containers.conf"),
                CONTAINERS_STORAGE_CONF=os.path.join(work, "storage.conf"))


def fmt_limit(v):
    return "unlimited" if v == INF else "?" if v is None else str(v)


def parse_probe(out):
    """mlock-probe's report (and the e2e scripts' `env`, `open` and /proc/self/limits lines)
    as a dict; what the output lacks stays None (or empty)."""
    p = {"nodes": {}, "dir": None, "soft": None, "hard": None, "capeff": None, "mlock": None,
         "env": None, "limits": None, "open": {}}
    for line in out.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "node" and len(f) >= 3:
            p["nodes"][f[1]] = " ".join(f[2:])
        elif f[0] == "dir" and len(f) >= 2:
            p["dir"] = None if f[2:] == ["absent"] else f[2:]
        elif f[0] in ("memlock_soft", "memlock_hard") and len(f) == 2:
            v = INF if f[1] == "unlimited" else int(f[1]) if f[1].isdigit() else None
            p["soft" if f[0] == "memlock_soft" else "hard"] = v
        elif f[0] == "capeff" and len(f) == 2:
            p["capeff"] = int(f[1], 16)
        elif f[0] == "mlock":
            p["mlock"] = " ".join(f[1:])
        elif f[0] == "env" and len(f) == 2:
            p["env"] = f[1]
        elif f[0] == "open" and len(f) >= 2:
            p["open"][f[1]] = " ".join(f[2:])
        elif line.startswith("Max locked memory"):
            # "Max locked memory   8388608   8388608   bytes"
            v = line[len("Max locked memory"):].split()
            if len(v) >= 2:
                p["limits"] = tuple(INF if x == "unlimited" else int(x) if x.isdigit() else None
                                    for x in v[:2])
    return p


def expected_nodes(uverbs):
    """What mlock-probe must see for a container given the dgx fixture's uverbs numbers:
    (the sorted /dev/infiniband listing, {node: "c MAJ:MIN" or "absent"})."""
    want_dir = sorted(["rdma_cm"] + ["uverbs%d" % n for n in uverbs])
    want_nodes = {"/dev/infiniband/uverbs%d" % n: ("c 231:%d" % (192 + n) if n in uverbs
                                                   else "absent")
                  for n in range(N_UVERBS)}
    want_nodes["/dev/infiniband/rdma_cm"] = RDMA_CM
    return want_dir, want_nodes


def describe_nodes(want_dir, want_nodes):
    """"rdma_cm=10:57 uverbs3=231:195" for a test description."""
    return " ".join("%s=%s" % (n, want_nodes["/dev/infiniband/" + n][2:]) for n in want_dir)
