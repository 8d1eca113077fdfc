#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The image deploy/image/build.sh makes, run under podman the way the DaemonSet runs it.

  test-image.py --source-root DIR --build-root DIR --mksysfs PY --proto PROTO   (TAP)

0. Reads what the manifests run from the image: every container (and probe) under
   deploy/kubernetes whose image is localhost/rdma-cdi; the image must hold each command
   and, for `rdma-cdi SUB`, the daemon executable rdma-cdi execs for it.
1. Builds the image from the build dir's binaries (buildah, offline, from scratch) into a
   private containers-storage; a second build gives the same image (fixed times, owners).
2. Looks inside: exactly those binaries (plus rdma-cdi-watch for podman hosts), the
   libraries ldd names for them and for the verbs libraries doctor dlopens (every symlink
   name included) and the loader, nothing else; the host hook bundle's loader and RPATH
   point into /opt/rdma-cdi/lib; the config says root and the entrypoint; labels and OCI
   annotations carry the version and commit --version prints, the license and the source;
   packages.txt names each library's Debian package and version, each with its dpkg
   status entry (what scanners read) and copyright. Each manifest command's
   `CMD SUB --help` runs in the image.
3. `discover --json` in the container (non-root, no capabilities, read-only root) on the dgx
   fixture mounted at /host prints exactly what it prints on the host.
4. The init containers' command installs the hook bundle into a host dir; bind-mounted at
   /opt/rdma-cdi (privately), that hook runs on the host with the bundle's own loader and
   libraries and raises a process's RLIMIT_MEMLOCK.
5. Every daemon a manifest runs, in the container with its DaemonSet's args, mounts and
   security context: the bridge registers with the kubelet double through the bind-mounted
   plugin dir and answers Allocate with a name the spec defines; its startup command and
   its liveness probe (GET /healthz, from the container's network namespace as the
   kubelet would) pass, fail while the bridge is SIGSTOPped, pass after SIGCONT. The DRA
   driver, in
   cluster (a service account token and CA, KUBERNETES_SERVICE_HOST) against the
   API-server double, registers with the kubelet plugin watcher double through the host
   path of plugins_registry, publishes the node's HCAs as ResourceSlices and prepares a
   claim, and its liveness probe passes and fails the same way; every call it made is one
   its ClusterRole or Roles grant. `podman stop` ends each
   cleanly. A manifest daemon without a scenario here FAILs.
Everything runs in a private mount namespace with a tmpfs on /run and podman/buildah storage
in a temp dir: the host's storage, /etc/cdi, /var/run/cdi, /opt and /var/lib/kubelet
are never touched.
Needs root; a missing tool FAILs.
"""
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402
import e2e_util as eu  # noqa: E402
from e2e_util import must, run, show  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
import kubelet_double as kd  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "dra"))
import apiserver_double as asd  # noqa: E402
import kubelet_dra_double as kdd  # noqa: E402

PY = "/usr/bin/python3"
BUNDLE = "/opt/rdma-cdi"
MAX_IMAGE_BYTES = 40 << 20
ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
DGX_NAMES = {"0000:1a:00.0": "mlx5_0", "0000:9a:00.0": "mlx5_4"}
DRA_NODE = "node-1"
DOC_DIR = "/usr/share/doc/rdma-cdi"
SOURCE_URL = "https://example.org/rdma-cdi.git"
DPKG_DIR = "/var/lib/dpkg"
HOST_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi", "/var/lib/containers", "/run/containers",
             "/run/libpod", "/opt", "/var/lib/kubelet")


# ---- outer: TAP ------------------------------------------------------------------------

def outer(a):
    tap = Tap()
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (mount namespaces, rootful podman and buildah)")
        return 0
    for tool in ("buildah", "podman", "runc", "patchelf", "unshare", "ldd"):
        if not shutil.which(tool):
            print("Bail out! %s not found: run .ci/install-deps" % tool)
            return 1
    before = eu.host_snapshot(HOST_DIRS)
    with eu.work_dir("rdma-cdi-image-", hidden=("/run", "/opt")) as work:
        rc, out = eu.run_inner([PY, os.path.abspath(__file__), "--inner", "--work", work,
                                "--source-root", a.source_root, "--build-root", a.build_root,
                                "--mksysfs", a.mksysfs, "--proto", a.proto], timeout=540)
        _, _, done = eu.relay(tap, os.path.join(work, "results.jsonl"))
        tap.ok(rc == 0 and done, "the run in the private mount namespace completed",
               "inner exit %s\n%s" % (rc, out[-6000:]))
    after = eu.host_snapshot(HOST_DIRS)
    tap.ok(after == before,
           "the host's /etc/cdi, /var/run/cdi, /opt and container storage are untouched",
           "%s -> %s" % (before, after))
    return tap.done()


# ---- inner: private mount namespace ----------------------------------------------------

def with_hops(p):
    """p and every path its symlinks lead through."""
    out, hops = set(), 0
    while p and p.startswith("/") and hops < 16:
        out.add(p)
        if not os.path.islink(p):
            break
        t = os.readlink(p)
        p = t if t.startswith("/") else os.path.join(os.path.dirname(p), t)
        hops += 1
    return out


def ldd_closure(binary):
    """Every path the loader may open for binary: ldd's paths and each symlink hop."""
    out = set()
    r = run(["ldd", binary])
    for line in r.stdout.splitlines():
        f = line.split()
        p = f[2] if len(f) >= 3 and f[1] == "=>" else f[0] if f and f[0].startswith("/") else None
        out |= with_hops(p)
    return out


def dlopened(soname):
    """The path the loader finds a library doctor dlopens under (ldconfig -p)."""
    for line in run(["ldconfig", "-p"]).stdout.splitlines():
        f = line.split()
        if f and f[0] == soname and "x86-64" in line:
            return f[-1]
    return None


def image_tree(root):
    files = set()
    for d, _, fs in os.walk(root):
        for n in fs:
            files.add("/" + os.path.relpath(os.path.join(d, n), root))
        if os.path.islink(d):
            files.add("/" + os.path.relpath(d, root))
    return files


# ---- what the manifests run from the image -----------------------------------------------

IMAGE_NAME = "localhost/rdma-cdi"
WORKLOADS = ("DaemonSet", "Deployment", "StatefulSet", "Job", "Pod")


def manifest_objects(source_root):
    """Every object of every YAML file under deploy/kubernetes, as (path, object)."""
    top = os.path.join(source_root, "deploy", "kubernetes")
    out = []
    for d, _, fs in sorted(os.walk(top)):
        for n in sorted(fs):
            if n.endswith((".yaml", ".yml")):
                with open(os.path.join(d, n)) as f:
                    out += [(os.path.join(d, n), o) for o in yaml.safe_load_all(f) if o]
    return out


def pod_spec(obj):
    if obj.get("kind") == "Pod":
        return obj.get("spec") or {}
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def image_runs(objs, source_root):
    """Every container any manifest runs from the rdma-cdi image: dicts with the file, the
    object, the pod spec, the container, whether it is an init container, and the commands
    it runs (its own and its probes' exec commands)."""
    out = []
    for path, o in objs:
        if o.get("kind") not in WORKLOADS:
            continue
        ps = pod_spec(o)
        for init, key in ((True, "initContainers"), (False, "containers")):
            for c in ps.get(key) or []:
                if not (c.get("image") or "").startswith(IMAGE_NAME + ":"):
                    continue
                cmds = [list(c.get("command") or []) + list(c.get("args") or [])]
                for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                    ex = ((c.get(probe) or {}).get("exec") or {}).get("command")
                    if ex:
                        cmds.append(list(ex))
                out.append({"file": os.path.relpath(path, source_root), "obj": o, "pod": ps, "c": c,
                            "init": init, "cmds": cmds})
    return out


def daemon_of(cmd):
    """The subcommand of `rdma-cdi SUB ...` (bridge, dra), else None."""
    return cmd[1] if len(cmd) > 1 and os.path.basename(cmd[0]) == "rdma-cdi" else None


def expected_bins(runs, build_root):
    """The executables the image must hold for the manifests: every command they run, and
    for `rdma-cdi SUB` the daemon executable rdma-cdi execs when the build has one."""
    bins = set()
    for r in runs:
        for cmd in r["cmds"]:
            bins.add(cmd[0])
            sub = daemon_of(cmd)
            if sub and os.path.exists(os.path.join(build_root, "rdma-cdi-" + sub)):
                bins.add("/usr/libexec/rdma-cdi/rdma-cdi-" + sub)
    return bins


def config_map_data(objs, ps, c):
    """The ConfigMap the container's config volume names: its data."""
    vols = {v["name"]: v for v in ps.get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        name = (vols[m["name"]].get("configMap") or {}).get("name")
        for _, o in objs:
            if name and o.get("kind") == "ConfigMap" and o["metadata"]["name"] == name:
                return o["data"]
    return {}


def bridge_help_flags(rdma_cdi):
    r = run([rdma_cdi, "bridge", "--help"])
    return set(re.findall(r"--[a-z][a-z0-9-]*", r.stdout + r.stderr))


def container_env(c, node):
    """The container's env as podman -e flags: fieldRef spec.nodeName is node."""
    out = []
    for e in c.get("env") or []:
        ref = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        val = node if ref == "spec.nodeName" else e.get("value")
        if val is not None:
            out += ["-e", "%s=%s" % (e["name"], val)]
    return out


class World:
    """What every scenario shares: the image, podman, the fixture and the work dirs."""

    def __init__(self, a, res, env, podman, image, base):
        self.a, self.res, self.env, self.podman = a, res, env, podman
        self.image, self.base, self.work = image, base, a.work
        self.rdma_cdi = os.path.join(a.build_root, "rdma-cdi")
        self.sysfs = os.path.join(a.work, "sys")
        self.dev = os.path.join(a.work, "dev")
        self.hook_host = os.path.join(a.work, "host-opt-rdma-cdi")
        self.specs = os.path.join(a.work, "cdi")
        os.makedirs(self.hook_host)
        os.makedirs(self.specs)

    def pm(self, args, timeout=120):
        return run(self.podman + args, timeout=timeout, env=self.env)

    def mounts(self, ps, c, host_of, cfgdir):
        """podman -v flags for the container's volumeMounts: hostPath volumes from host_of
        (a host path the test does not map is refused), the rest the config dir."""
        vols = {v["name"]: v for v in ps["volumes"]}
        out = []
        for m in c.get("volumeMounts") or []:
            v = vols[m["name"]]
            src = host_of[v["hostPath"]["path"]] if "hostPath" in v else cfgdir
            out += ["-v", "%s:%s%s" % (src, m["mountPath"], ":ro" if m.get("readOnly") else "")]
        return out

    def start(self, name, c, args, mounts, extra, log_path):
        log = open(log_path, "w")
        cmd = self.podman + self.base + extra + ["--name", name, "--user", "0:0",
                                                 "--entrypoint", c["command"][0]] + \
            mounts + [self.image] + args
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        log.close()
        return proc

    def finish(self, name, proc):
        if proc.poll() is None:
            self.pm(["rm", "--force", "--time", "0", name])
            proc.kill()
            proc.wait()


def tail(path):
    with open(path) as f:
        return f.read()[-4000:]


def check_contents(w, mnt, runs, bins):
    a, res = w.a, w.res
    have = image_tree(mnt)
    want = set()
    for b in bins:
        if b.startswith("/usr/libexec/rdma-cdi/"):
            want |= ldd_closure(os.path.join(a.build_root, os.path.basename(b)))
        elif b == "/usr/bin/rdma-cdi":
            want |= ldd_closure(w.rdma_cdi)
        elif b == "/usr/bin/rdma-cdi-node":
            want |= ldd_closure(os.path.join(a.build_root, "deploy", "rdma-cdi-node"))
    for soname in ("libibverbs.so.1", "librdmacm.so.1"):
        p = dlopened(soname)
        res.ok(p is not None, "ldconfig finds %s (doctor dlopens it)" % soname)
        if p:
            want |= ldd_closure(p) | with_hops(p)
    hook = os.path.join(a.build_root, "hooks", "rdma-cdi-hook")
    hook_sonames = set()
    for line in run(["ldd", hook]).stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] == "=>" and f[2].startswith("/"):
            hook_sonames.add(os.path.basename(f[2]))
        elif f and f[0].startswith("/"):
            hook_sonames.add(os.path.basename(f[0]))
    bundle = {BUNDLE + "/bin/rdma-cdi-hook"} | {BUNDLE + "/lib/" + s for s in hook_sonames}
    docs = {d for d in have if d.startswith("/usr/share/doc/") or d.startswith(DPKG_DIR + "/")}
    extra = sorted(have - want - bins - bundle - docs)
    missing = sorted((want | bins | bundle) - have)
    res.ok(not extra and not missing,
           "the image is what the manifests run (%s), exactly ldd's %d library paths for them "
           "(symlink names included, verbs' for doctor), the hook bundle and the package list and "
           "licenses"
           % (", ".join(sorted(bins)), len(want)),
           "extra: %s\nmissing: %s" % (extra, missing))
    return docs


def check_bundle(w, mnt):
    res = w.res
    bh = mnt + BUNDLE + "/bin/rdma-cdi-hook"
    interp = run(["patchelf", "--print-interpreter", bh]).stdout.strip()
    rpath = run(["patchelf", "--print-rpath", bh]).stdout.strip()
    res.ok(interp.startswith(BUNDLE + "/lib/ld-linux") and rpath == BUNDLE + "/lib" and
           os.path.isfile(mnt + interp),
           "the bundled hook's loader %s and RPATH %s are the bundle's own" % (interp, rpath))
    rd = run(["readelf", "-d", bh]).stdout if shutil.which("readelf") else ""
    if rd:
        res.ok("(RPATH)" in rd and "(RUNPATH)" not in rd,
               "RPATH (inherited by libcjson's own lookups), not RUNPATH", rd)


def check_commands(w, runs):
    """Each command a manifest runs from the image starts there: `CMD SUB --help`."""
    seen = set()
    for r in runs:
        for cmd in r["cmds"]:
            key = tuple(cmd[:2])
            if key in seen:
                continue
            seen.add(key)
            p = w.pm(w.base + ["--network", "none", "--entrypoint", cmd[0], w.image] +
                     cmd[1:2] + ["--help"])
            w.res.ok(p.returncode == 0 and "Usage:" in p.stdout + p.stderr,
                     "%s (%s): `%s --help` runs in the image" % (
                         r["file"], r["c"]["name"], " ".join(key)), show(p))


def check_install(w, runs):
    """The init containers' command installs the hook bundle; the hook then runs on the
    host from the bundle and raises a process's RLIMIT_MEMLOCK."""
    res = w.res
    inits = [r for r in runs if r["init"]]
    if not res.ok(inits, "the DaemonSets have an init container from the image"):
        return
    for r in inits:
        ic = r["c"]
        mount = "%s:%s" % (w.hook_host, ic["volumeMounts"][0]["mountPath"])
        r2 = w.pm(w.base + ["--network", "none", "-v", mount, "--entrypoint", ic["command"][0],
                            w.image] + ic["args"])
        installed = os.path.isfile(os.path.join(w.hook_host, "bin", "rdma-cdi-hook"))
        res.ok(r2.returncode == 0 and installed,
               "%s: the init container's command installs the hook bundle" % r["file"], show(r2))
    if not os.path.isfile(os.path.join(w.hook_host, "bin", "rdma-cdi-hook")):
        return
    if not os.path.isdir("/opt"):
        res.skip("the installed hook runs on the host", "no /opt to mount the bundle over")
        return
    must(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-image", "/opt"])
    os.makedirs(BUNDLE)
    must(["mount", "--bind", w.hook_host, BUNDLE])
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    low, target = min(64 << 10, hard), min(1 << 20, hard)
    p = subprocess.Popen(["prlimit", "--memlock=%d:%d" % (low, hard), "sleep", "30"])
    time.sleep(0.3)
    st = json.dumps({"ociVersion": "1.0.2", "id": "test", "status": "creating",
                     "pid": p.pid, "bundle": "/", "annotations": {}})
    r = run([BUNDLE + "/bin/rdma-cdi-hook", "--memlock=%d" % target], input=st,
            env={"LD_DEBUG": "libs", "PATH": "/usr/bin:/bin"})
    with open("/proc/%d/limits" % p.pid) as f:
        lim = [line for line in f if line.startswith("Max locked memory")]
    p.kill()
    p.wait()
    loaded = re.findall(r"calling init: (\S+)", r.stderr)
    res.ok(r.returncode == 0 and lim and lim[0].split()[3] == str(target),
           "the installed hook runs on the host and sets RLIMIT_MEMLOCK to %d" % target,
           "%s\n%s" % (lim, show(r)))
    res.ok(loaded and all(i.startswith(BUNDLE + "/lib/") for i in loaded),
           "... loading only the bundle's libraries (%s)" % " ".join(
               os.path.basename(i) for i in loaded), "\n".join(loaded))


def bridge_args(w, c):
    """The DaemonSet's args, less the flags this build does not have yet (other work)."""
    res = w.res
    flags = bridge_help_flags(w.rdma_cdi)
    args, dropped, i = [c["args"][0]], [], 1
    while i < len(c["args"]):
        flag, val = c["args"][i], c["args"][i + 1:i + 2]
        i += 1 + len(val)
        if flag in flags:
            args += [flag] + val
        else:
            dropped.append(flag)
    if dropped:
        res.skip("the bridge runs with the DaemonSet's exact args",
                 "this build lacks %s (expected from other work)" % ", ".join(dropped))
        if "--host-root" in dropped:
            args += ["--sysfs-root", "/host/sys", "--dev-root", "/host/dev"]
    res.note("the bridge runs with: %s" % " ".join(args))
    return args


HTTP_PROBE = """
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=float(sys.argv[3]))
try:
    c.request("GET", sys.argv[2])
    r = c.getresponse()
    print(r.status, r.read().decode().strip())
except Exception as e:
    print("none", e)
"""


def probe_once(w, name, pid, c, probe):
    """One run of the container's probe: its exec command in the container, or its
    httpGet in the container's network namespace (nsenter), as the kubelet would, bounded
    by timeoutSeconds. (passed, what it said, seconds taken)."""
    p = c[probe]
    t0 = time.monotonic()
    if "exec" in p:
        r = w.pm(["exec", name] + p["exec"]["command"], timeout=60)
        return r.returncode == 0, show(r), time.monotonic() - t0
    get = p["httpGet"]
    port = get["port"]
    if isinstance(port, str):
        port = next(x["containerPort"] for x in c.get("ports") or [] if x.get("name") == port)
    r = run(["nsenter", "-t", str(pid), "-n", sys.executable, "-c", HTTP_PROBE, str(port),
             get["path"], str(p.get("timeoutSeconds") or 1)], timeout=60)
    said = (r.stdout or r.stderr).strip()
    return said.startswith("200 "), said, time.monotonic() - t0


def check_liveness(w, name, c):
    """The container's startup and liveness probes pass, fail while the daemon is stopped
    (within timeoutSeconds), pass again after SIGCONT."""
    res = w.res
    pid = int(w.pm(["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip() or 0)
    if not res.ok(pid > 0, "the container's daemon pid on the host: %d" % pid):
        return
    for probe in ("startupProbe", "livenessProbe"):
        if probe not in c:
            continue
        good, said, _ = probe_once(w, name, pid, c, probe)
        res.ok(good, "%s passes while the daemon serves" % probe, said)
        os.kill(pid, signal.SIGSTOP)
        try:
            good, said, dt = probe_once(w, name, pid, c, probe)
        finally:
            os.kill(pid, signal.SIGCONT)
        res.ok(not good and dt < c[probe]["timeoutSeconds"] + 1,
               "%s fails (%.1f s: by its timeoutSeconds) while the daemon is stopped"
               % (probe, dt), said)
        good, said, _ = probe_once(w, name, pid, c, probe)
        res.ok(good, "%s passes again after SIGCONT" % probe, said)


def read_spec(specs):
    for f in sorted(os.listdir(specs)):
        if f.endswith(".json") and "claim_" not in f:
            with open(os.path.join(specs, f)) as fp:
                return json.load(fp)
    return {}


def check_spec_hooks(res, spec, args):
    hooks = [h for d in [spec.get("containerEdits") or {}] + [
        x.get("containerEdits") or {} for x in spec.get("devices", [])]
        for h in d.get("hooks") or []]
    res.ok(hooks and all(h["path"] == BUNDLE + "/bin/rdma-cdi-hook" for h in hooks),
           "the spec's hook is the host path the init container installed to",
           json.dumps(hooks)[:500])
    nodes = [n.get("hostPath") or n.get("path") for d in spec.get("devices", [])
             for n in (d.get("containerEdits") or {}).get("deviceNodes") or []]
    if "--host-root" in args:
        res.ok(nodes and all(n.startswith("/dev/") for n in nodes),
               "with --host-root the spec's device nodes are host paths (/dev/...)", nodes[:4])
    else:
        res.skip("with --host-root the spec's device nodes are host paths",
                 "--host-root is not in this build (issue 7 item 1)")


def run_bridge(w, objs, r):
    """`rdma-cdi bridge` as its DaemonSet runs it, against the kubelet double."""
    res, c, ps = w.res, r["c"], r["pod"]
    args = bridge_args(w, c)
    plugins, cfgdir = (os.path.join(w.work, d) for d in ("plugins", "bridge-config"))
    os.makedirs(plugins)
    os.makedirs(cfgdir)
    with open(os.path.join(cfgdir, "config.yaml"), "w") as f:
        f.write(config_map_data(objs, ps, c)["config.yaml"])
    host_of = {"/var/lib/kubelet/device-plugins": plugins, "/var/run/cdi": w.specs,
               "/sys": w.sysfs, "/dev": w.dev, BUNDLE: w.hook_host}
    kubelet = kd.Kubelet(plugins, w.a.proto).start()
    log_path = os.path.join(w.work, "bridge.log")
    name = "rdma-cdi-image-bridge"
    proc = w.start(name, c, args, w.mounts(ps, c, host_of, cfgdir), ["--network", "none"],
                   log_path)
    try:
        reg = kubelet.wait_registrations(1, 60)
        if not res.ok(reg is not None, "the bridge in the container registers with the kubelet "
                      "double through the bind-mounted plugin dir", tail(log_path)):
            raise RuntimeError("no registration")
        _, req, opts = reg
        res.ok(req.resource_name == "rdma.example/hca" and opts is not None,
               "Register: resource %s, the kubelet double dialled back into the container"
               % req.resource_name)
        s = kubelet.latest_stream()
        lst = s.wait(timeout=10) if s else None
        res.ok(lst is not None and len(lst) == 10, "ListAndWatch: the 10 HCAs",
               [d.ID for d in lst or []])
        pb = kubelet.pb
        resp = kubelet.plugin_stub(req.endpoint).Allocate(pb.AllocateRequest(
            container_requests=[pb.ContainerAllocateRequest(devices_ids=["0000:1a:00.0"])]))
        names = [d.name for d in resp.container_responses[0].cdi_devices]
        spec = read_spec(w.specs)
        defined = {spec.get("kind", "") + "=" + d["name"] for d in spec.get("devices", [])}
        res.ok(names == ["rdma.example/hca=mlx5_0"] and names[0] in defined,
               "Allocate answers rdma.example/hca=mlx5_0, defined in the spec it wrote to the "
               "host's /var/run/cdi", "%s vs %s" % (names, sorted(defined)[:5]))
        check_spec_hooks(res, spec, args)
        check_liveness(w, name, c)
        stop_daemon(w, name, proc, log_path, "the bridge", [os.path.join(plugins, req.endpoint)])
    except Exception as e:
        res.ok(False, "bridge scenario", "%s\n%s\n%s" % (e, traceback.format_exc(),
                                                         tail(log_path)))
    finally:
        w.finish(name, proc)
        kubelet.stop()


def stop_daemon(w, name, proc, log_path, what, sockets):
    r = w.pm(["stop", "--time", "10", name], timeout=60)
    rc = proc.wait(30)
    left = [s for s in sockets if os.path.exists(s)]
    w.res.ok(r.returncode == 0 and rc == 0 and not left,
             "podman stop: %s exits 0 and removes its sockets" % what,
             "%s rc %s left %s\n%s" % (show(r), rc, left, tail(log_path)))


def api_verb(req):
    """The RBAC verb, resource and namespace ("" when cluster-scoped) of one request the
    driver made (a recorded request)."""
    path, _, query = req["path"].partition("?")
    parts = path.strip("/").split("/")
    # /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME]
    rest = parts[3:] if parts[0] == "apis" else parts[2:]
    ns = ""
    if len(rest) >= 2 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    named = len(rest) > 1
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if named else "deletecollection"}.get(req["method"])
    if req["method"] == "GET":
        verb = "get" if named else "watch" if "watch=true" in query else "list"
    return verb, rest[0] if rest else "", ns


def rbac_grants(objs):
    """{(namespace, resource, verb)} the DRA driver's ClusterRole (namespace None: every
    namespace) and its Roles (their namespace) grant."""
    out = set()
    for _, o in objs:
        name = o.get("metadata", {}).get("name", "")
        if o.get("kind") == "ClusterRole" and name == "rdma-cdi-dra":
            ns = None
        elif o.get("kind") == "Role" and name.startswith("rdma-cdi-dra"):
            ns = o["metadata"].get("namespace", "")
        else:
            continue
        for rule in o.get("rules") or []:
            out |= {(ns, res, v) for res in rule.get("resources", []) for v in rule["verbs"]}
    return out


def service_account_dir(w, api):
    sa = os.path.join(w.work, "serviceaccount")
    os.makedirs(sa)
    shutil.copy(api.token_file, os.path.join(sa, "token"))
    shutil.copy(api.ca_path, os.path.join(sa, "ca.crt"))
    return sa


def dra_world(w, r):
    """The kubelet's dirs at their host paths (a private tmpfs over /var/lib/kubelet: the
    driver names its endpoint by host path) and the mounts of the DRA DaemonSet."""
    scratch = os.path.join(w.work, "ns", "kubelet")
    os.makedirs(scratch)
    eu.private_dir_over("/var/lib/kubelet", scratch, "rdma-cdi-image")
    host_of = {"/var/run/cdi": w.specs, "/sys": w.sysfs, "/dev": w.dev, BUNDLE: w.hook_host}
    for v in r["pod"]["volumes"]:
        p = (v.get("hostPath") or {}).get("path", "")
        if p.startswith("/var/lib/kubelet/"):
            os.makedirs(p, exist_ok=True)
            host_of[p] = p
    return host_of


def run_dra(w, objs, r):
    """`rdma-cdi dra` as its DaemonSet runs it, in-cluster (service account token and CA,
    KUBERNETES_SERVICE_HOST) against the API-server double, registered by the kubelet
    plugin watcher double, publishing slices and preparing a claim."""
    res, c, ps = w.res, r["c"], r["pod"]
    args = list(c["args"])
    driver = args[args.index("--driver-name") + 1]
    registry = args[args.index("--registry-dir") + 1]
    host_of = dra_world(w, r)
    cfgdir = os.path.join(w.work, "dra-config")
    os.makedirs(cfgdir)
    with open(os.path.join(cfgdir, "config.yaml"), "w") as f:
        f.write(config_map_data(objs, ps, c)["config.yaml"])
    api = asd.ApiServer(os.path.join(w.work, "api")).start()
    watcher = kdd.PluginWatcher(registry, kdd.load_protos(os.path.join(
        w.a.source_root, "proto")), driver=driver).start()
    extra = ["--network", "host", "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1",
             "-e", "KUBERNETES_SERVICE_PORT=%d" % api.port, "-v", "%s:%s:ro" % (
                 service_account_dir(w, api), "/var/run/secrets/kubernetes.io/serviceaccount")]
    extra += container_env(c, DRA_NODE)
    log_path = os.path.join(w.work, "dra.log")
    name = "rdma-cdi-image-dra"
    proc = w.start(name, c, args, w.mounts(ps, c, host_of, cfgdir), extra, log_path)
    try:
        dra_checks(w, api, watcher, driver, log_path)
        check_liveness(w, name, c)
        check_rbac(w, objs, api)
        stop_daemon(w, name, proc, log_path, "the DRA driver",
                    [os.path.join(registry, f) for f in os.listdir(registry)])
    except Exception as e:
        res.ok(False, "DRA scenario", "%s\n%s\n%s" % (e, traceback.format_exc(),
                                                      tail(log_path)))
    finally:
        w.finish(name, proc)
        watcher.stop()
        api.stop()


def dra_checks(w, api, watcher, driver, log_path):
    res = w.res
    reg = watcher.wait_registrations(1, 60)
    if not res.ok(reg is not None and reg.ok, "the DRA driver in the container registers with "
                  "the kubelet plugin watcher double through the host's plugins_registry",
                  "%r\n%s" % (reg, tail(log_path))):
        raise RuntimeError("no registration")
    devs = api.wait_for(lambda: len(api.devices(driver, DRA_NODE)) == 10 and
                        api.devices(driver, DRA_NODE), 30)
    if not res.ok(devs, "in-cluster (service account token and CA) it publishes the node's "
                  "10 HCAs as ResourceSlices of node %s" % DRA_NODE, tail(log_path)):
        raise RuntimeError("no slices")
    dev = sorted(devs)[0]
    claim = api.add_claim("default", "c1", results=[
        {"request": "nic", "driver": driver, "pool": DRA_NODE, "device": dev}])
    uid = claim["metadata"]["uid"]
    cl = kdd.DRAClient(reg.info.endpoint, watcher.pb, version=reg.dra_version)
    try:
        ans = cl.prepare([("default", "c1", uid)]).get(uid, {})
    finally:
        cl.close()
    ids = [i for d in ans.get("devices", []) for i in d["cdi_device_ids"]]
    spec = read_spec(w.specs)
    defined = {spec.get("kind", "") + "=" + d["name"] for d in spec.get("devices", [])}
    claim_spec = os.path.join(w.specs, "%s-claim_%s.json" % (driver, uid))
    res.ok(ans.get("error") == "" and ids and ids[0] in defined and os.path.isfile(claim_spec),
           "Prepare of a claim of %s answers %s, defined in the specs it wrote to the host's "
           "/var/run/cdi" % (dev, ", ".join(ids)), "%s\n%s" % (ans, tail(log_path)))
    check_spec_hooks(res, spec, ["--host-root"])


def check_rbac(w, objs, api):
    grants = rbac_grants(objs)
    used = sorted({api_verb(q) for q in api.requests_matching()})
    missing = [u for u in used if (None, u[1], u[0]) not in grants and
               (u[2], u[1], u[0]) not in grants]
    w.res.ok(used and not missing, "every call the driver made (%s) is one its ClusterRole "
             "or Roles grant" % ", ".join("%s %s" % u[:2] + (" in " + u[2] if u[2] else "")
                                          for u in used), "not granted: %s" % missing)


DAEMONS = {"bridge": run_bridge, "dra": run_dra}


def build_twice(w, build_sh):
    res, a = w.res, w.a
    t0 = time.monotonic()
    r = run([build_sh, "-B", a.build_root, "-s", SOURCE_URL], timeout=300, env=w.env)
    dt = time.monotonic() - t0
    if not res.ok(r.returncode == 0 and ("built " + w.image) in r.stdout,
                  "build.sh builds %s from the build dir offline (%.1f s)" % (w.image, dt),
                  show(r)):
        return False
    r2 = run([build_sh, "-B", a.build_root, "-s", SOURCE_URL, "-t", "localhost/rdma-cdi:again"],
             timeout=300, env=w.env)
    ids = [w.pm(["image", "inspect", "--format", "{{.Id}}", i]).stdout.strip()
           for i in (w.image, "localhost/rdma-cdi:again")]
    res.ok(r2.returncode == 0 and ids[0] and ids[0] == ids[1],
           "a second build of the same binaries is the same image (%s)" % ids[0][:12],
           "%s\n%s" % (ids, show(r2)))
    r = run([build_sh, "-B", os.path.join(w.work, "nope")], env=w.env)
    res.ok(r.returncode != 0 and "meson compile" in r.stderr,
           "build.sh on a dir without binaries: fails and says what to run", show(r))
    return True


def check_config(w, version, commit):
    res = w.res
    cfg = json.loads(w.pm(["image", "inspect", w.image]).stdout or "[{}]")[0]
    c = cfg.get("Config") or {}
    res.ok(c.get("User") == "0:0" and c.get("Entrypoint") == ["/usr/bin/rdma-cdi"],
           "config: user 0:0, entrypoint /usr/bin/rdma-cdi", json.dumps(c)[:2000])
    want = {"org.opencontainers.image.version": version,
            "org.opencontainers.image.revision": commit,
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.source": SOURCE_URL}
    for what, got in (("labels", c.get("Labels") or {}),
                      ("annotations", cfg.get("Annotations") or {})):
        res.ok(commit and all(got.get(k) == v for k, v in want.items()),
               "%s: version %s, revision %s (what --version prints), licenses, source"
               % (what, version, commit), "%s\nwant %s" % (json.dumps(got)[:2000], want))
    size = cfg.get("Size") or 0
    res.ok(0 < size <= MAX_IMAGE_BYTES, "image size %.1f MiB (at most %d MiB)"
           % (size / 1048576, MAX_IMAGE_BYTES >> 20))


def host_packages(paths):
    """{path: "package version architecture"} of the host's Debian packages of library
    paths (by the path or its target; one dpkg-query -S for all: each reads every list)."""
    both = sorted({p for x in paths for p in (x, os.path.realpath(x))})
    owner = {}
    for line in run(["dpkg-query", "-S"] + both).stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        owner[path] = pkgs.split(", ")[0]
    names = sorted(set(owner.values()))
    fmt = "${Package} ${Version} ${Architecture}\n"
    out = run(["dpkg-query", "-W", "-f", fmt] + names).stdout.splitlines()
    by_name = {line.split()[0]: line for line in out}
    desc = {n: by_name.get(n.split(":")[0]) for n in names}
    return {x: desc.get(owner.get(x) or owner.get(os.path.realpath(x))) for x in paths}


def check_packages(w, mnt):
    """Every library file in the image is listed with its host package and version in
    packages.txt, with a dpkg status entry a scanner reads and the package's copyright."""
    res = w.res
    libs = [p for p in image_tree(mnt) if re.search(r"/lib[^/]*\.so(\.[0-9.]+)?$", p) and
            not os.path.islink(mnt + p) and not p.startswith(BUNDLE)]
    try:
        with open(mnt + DOC_DIR + "/packages.txt") as f:
            listed = set(f.read().splitlines())
    except OSError as e:
        listed = set()
        res.ok(False, DOC_DIR + "/packages.txt", str(e))
    want = host_packages(libs)
    unlisted = sorted("%s (%s)" % (p, k) for p, k in want.items() if k not in listed)
    res.ok(libs and not unlisted, "packages.txt names the Debian package and version of each "
           "of the image's %d library files (%d packages)" % (len(libs), len(listed)),
           "unlisted: %s\nlisted: %s" % (unlisted, sorted(listed)))
    bad = []
    for line in sorted(listed):
        name, version, _ = line.split(" ")
        try:
            with open("%s%s/status.d/%s" % (mnt, DPKG_DIR, name)) as f:
                st = f.read()
        except OSError:
            st = ""
        if ("Package: %s\n" % name not in st or "Version: %s\n" % version not in st or
                "Status: install ok installed" not in st or
                not os.path.isfile("%s/usr/share/doc/%s/copyright" % (mnt, name))):
            bad.append(name)
    res.ok(listed and not bad, "each package has its dpkg status entry in %s/status.d "
           "(what scanners read) and its copyright" % DPKG_DIR, "bad: %s" % bad)


def setup_podman(work):
    """Private /run (podman's and runc's state, locks), storage in the work dir; buildah
    keeps its blob-info cache in /var/lib/containers/cache whatever storage.conf says: a
    private one. Returns (env, podman argv)."""
    must(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-image", "/run"])
    scratch = os.path.join(work, "ns")
    os.mkdir(scratch)
    must(["mount", "-t", "tmpfs", "-o", "mode=0700", "rdma-cdi-image", scratch])
    os.mkdir(os.path.join(scratch, "containers"))
    eu.private_dir_over("/var/lib/containers", os.path.join(scratch, "containers"),
                        "rdma-cdi-image", mode="0700")
    os.makedirs(os.path.join(work, "tmp"))
    env = dict(eu.podman_conf(work, runtime="runc"), TMPDIR=os.path.join(work, "tmp"))
    return env, ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs",
                 "--events-backend", "file"]


def inner(a):
    res = eu.Results(os.path.join(a.work, "results.jsonl"))
    env, podman = setup_podman(a.work)
    rdma_cdi = os.path.join(a.build_root, "rdma-cdi")
    vline = run([rdma_cdi, "--version"]).stdout
    version = vline.split()[1]
    commit = (re.findall(r"\(commit ([^)]+)\)", vline) or [""])[0]
    base = ["run", "--rm", "--read-only", "--cap-drop", "all",
            "--security-opt", "no-new-privileges"] + ULIMITS
    w = World(a, res, env, podman, "localhost/rdma-cdi:" + version, base)
    objs = manifest_objects(a.source_root)
    runs = image_runs(objs, a.source_root)
    bins = expected_bins(runs, a.build_root)
    res.ok(any(not r["init"] for r in runs), "the manifests run %d containers from %s: %s" % (
        len(runs), IMAGE_NAME, ", ".join(sorted(bins))))
    # 1. Build, twice; 2. inside.
    if not build_twice(w, os.path.join(a.source_root, "deploy", "image", "build.sh")):
        res.done()
        return 0
    check_config(w, version, commit)
    r = w.pm(["image", "mount", w.image])
    mnt = r.stdout.strip()
    if res.ok(r.returncode == 0 and os.path.isdir(mnt), "podman image mount", show(r)):
        # rdma-cdi-watch: `generate --watch` for podman hosts, run by no manifest.
        check_contents(w, mnt, runs, bins | {"/usr/libexec/rdma-cdi/rdma-cdi-watch"})
        check_bundle(w, mnt)
        check_packages(w, mnt)
        w.pm(["image", "unmount", w.image])
    check_commands(w, runs)
    run_fixture(w)
    # 4. The init containers; 5. every daemon a manifest runs, as it runs it.
    check_install(w, runs)
    for r in runs:
        if r["init"]:
            continue
        sub = daemon_of(r["cmds"][0])
        scenario = DAEMONS.get(sub)
        if res.ok(scenario is not None, "%s runs `rdma-cdi %s`: a scenario here starts it"
                  % (r["file"], sub)):
            scenario(w, objs, r)
    w.pm(["rm", "--all", "--force", "--time", "0"])
    run(["buildah", "rm", "--all"], env=env)
    r = w.pm(["ps", "--all", "--quiet"])
    res.ok(r.returncode == 0 and not r.stdout.strip(), "no container left behind", show(r))
    res.done()
    return 0


def run_fixture(w):
    """The dgx fixture with device nodes, as the host would have them; discover --json in
    the container (non-root, no capabilities, read-only root) equals the host's."""
    res, a = w.res, w.a
    r = run([PY, a.mksysfs, "build", "dgx", w.sysfs])
    r2 = run([PY, a.mksysfs, "mkdev", w.sysfs, w.dev])
    if not res.ok(r.returncode == 0 and r2.returncode == 0, "dgx fixture with device nodes",
                  show(r) + show(r2)):
        raise SystemExit(res.done())
    host = run([w.rdma_cdi, "discover", "--json", "--sysfs-root", w.sysfs, "--dev-root", w.dev])
    r = w.pm(w.base + ["--network", "none", "--user", "65534:65534",
                       "-v", w.sysfs + ":/host/sys:ro", "-v", w.dev + ":/host/dev:ro", w.image,
                       "discover", "--json", "--sysfs-root", "/host/sys", "--dev-root",
                       "/host/dev"])
    ok = r.returncode == 0 and r.stdout == host.stdout and host.returncode == 0
    n = len((json.loads(r.stdout) if ok else {}).get("devices", []))
    res.ok(ok and n == 10,
           "discover --json in the container (uid 65534, no capabilities) equals the host's: "
           "%d devices" % n, show(r) + "\nhost:\n" + show(host))


def main():
    return eu.main(("--source-root", "--build-root", "--mksysfs", "--proto"), inner, outer)


if __name__ == "__main__":
    sys.exit(main())
