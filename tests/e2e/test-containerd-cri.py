#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end: real containerd 1.7 (CDI enabled) driven through the CRI API as the kubelet does,
with CDI names from the real `rdma-cdi bridge`'s Allocate answers.

  test-containerd-cri.py --containerd-dir DIR --rdma-cdi BIN --hook BIN --probe BIN
                         --mksysfs PY --proto deviceplugin.proto          (TAP on stdout)

DIR is what tests/e2e/fetch-containerd.sh made (Debian 13's containerd, shim, ctr and the CRI
protos, unpacked under DIR/root; .ci/install-deps fetches it). Without it the test is skipped,
naming the command that fetches it.

Re-runs itself under `unshare -m` (private mount propagation) with a tmpfs on /run (containerd
1.7 puts shim sockets under /run/containerd whatever its config says), its own root, state,
socket and CDI dir in a temp dir: the host's containerd state, /etc/cdi and /var/run/cdi are
never touched. In there:
1. the dgx fixture (mksysfs.py, with device nodes), the kubelet double and `rdma-cdi bridge`
   writing its spec into containerd's CDI dir with the built hook (--hook-path);
2. containerd with CRI config v2: enable_cdi, cdi_spec_dirs = [that dir], cgroupfs, overlayfs,
   runc from Debian 12, a sandbox image built here as an OCI archive (busybox-static and
   mlock-probe) and imported with ctr; containerd starts with a soft RLIMIT_MEMLOCK of 64 KiB
   (containers inherit it: containerd sets no rlimits) so that only the hook can raise it;
3. a host-network pod (RunPodSandbox) and containers created with what the Allocate answer
   gave: the CRI CDIDevices field, the cdi.k8s.io annotations only, both; the envs always, as
   the kubelet passes them. Every capability is dropped. Inside, the probe reports the device
   nodes, RLIMIT_MEMLOCK (and /proc/self/limits), CapEff, mlock(4 MiB) and the env.
4. an unknown CDI name (field, then annotation) refused at CreateContainer.
Afterwards the outer run checks that no process of that mount namespace is left and that the
host's containerd and CDI dirs did not change.
"""
import hashlib
import io
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
from tap import Tap  # noqa: E402
import e2e_util as eu  # noqa: E402
from e2e_util import (CONTROL_MEMLOCK, INF, MEMLOCK, MIB, PROBE_NODES, bail,  # noqa: E402
                      fmt_limit, must, run)

PYTHON = "/usr/bin/python3"
RUNC = "/usr/sbin/runc"
API_PROTO = "usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto"
IMAGE = "localhost/rdma-cdi-e2e:1"
KIND = "rdma.example/hca"
# The whole run, inner part included, stays well inside meson's timeout.
INNER_TIMEOUT = 160
HOST_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi", "/run/containerd", "/var/lib/containerd",
             "/etc/containerd")


def pids_in_mnt_ns(ino):
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if os.stat("/proc/%s/ns/mnt" % p).st_ino == ino:
                pids.append(int(p))
        except OSError:
            pass
    return pids


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


# ---- outer: checks, the private namespace, TAP -------------------------------------------

def outer(a):
    tap = Tap()
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (mknod, mount namespaces, containerd)")
        return 0
    root = os.path.join(a.containerd_dir, "root")
    have = [os.path.join(root, f) for f in ("usr/bin/containerd", "usr/bin/containerd-shim-runc-v2",
                                            "usr/bin/ctr", API_PROTO)]
    if not all(os.path.isfile(f) for f in have):
        if os.environ.get("CI") == "true":
            bail("no extracted containerd in %s: .ci/install-deps runs "
                 "tests/e2e/fetch-containerd.sh %s, CI must not skip this test"
                 % (a.containerd_dir, a.containerd_dir))
        print("1..0 # SKIP no extracted containerd in %s: run tests/e2e/fetch-containerd.sh %s "
              "(.ci/install-deps does)" % (a.containerd_dir, a.containerd_dir))
        return 0
    for tool in ("unshare", "mount", "umount"):
        if not shutil.which(tool):
            bail("%s not found: install util-linux" % tool)
    if not os.access(RUNC, os.X_OK):
        bail("%s not found: install runc (Debian 12)" % RUNC)
    if not os.path.isfile("/bin/busybox"):
        bail("/bin/busybox not found: install busybox-static")
    for f in (a.rdma_cdi, a.hook, a.probe, a.mksysfs, a.proto):
        if not os.path.isfile(f):
            bail("%s does not exist" % f)

    before = eu.host_snapshot(HOST_DIRS)
    t0 = time.monotonic()
    # /run is hidden by the inner tmpfs on /run.
    with eu.work_dir("rdma-cdi-cri-", hidden=("/run",)) as work:
        return outer_in(a, tap, work, before, t0)


def outer_in(a, tap, work, before, t0):
    results = os.path.join(work, "results.jsonl")
    rc, out = eu.run_inner([PYTHON, os.path.abspath(__file__), "--inner", "--work", work,
                            "--containerd-dir", a.containerd_dir, "--rdma-cdi", a.rdma_cdi,
                            "--hook", a.hook, "--probe", a.probe, "--mksysfs", a.mksysfs,
                            "--proto", a.proto], timeout=INNER_TIMEOUT)
    _, ns, done = eu.relay(tap, results)
    tap.ok(rc == 0 and done, "the containerd run completed",
           "inner exit %s\n%s" % (rc, out[-6000:]))

    # Shims daemonize: one left running would keep the namespace and its mounts alive.
    left = []
    if ns is not None:
        deadline = time.monotonic() + 5
        while True:
            left = pids_in_mnt_ns(ns)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    tap.ok(ns is not None and not left,
           "no process of the private mount namespace is left (containerd, shims, runc, bridge)",
           "left: %s" % ", ".join("%d %s" % (p, comm(p)) for p in left))
    after = eu.host_snapshot(HOST_DIRS)
    tap.ok(after == before,
           "the host's containerd and CDI dirs are untouched (%s)" % " ".join(HOST_DIRS),
           "%s -> %s" % (before, after))
    cg = leftover_cgroups(os.path.basename(work))
    tap.ok(not cg, "no cgroup of the pod is left", " ".join(cg))
    took = time.monotonic() - t0
    tap.ok(took < 180, "the whole test took %.1f s (< 180 s)" % took)
    return tap.done()


def cgroup_parent(work_name):
    return "/" + work_name


def pod_cgroup_dirs(work_name):
    """The pod's cgroup dirs (under cgroup_parent) in every hierarchy, deepest first."""
    out = []
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if not os.path.isdir(base):
            continue
        for h in [os.path.join(base, h) for h in os.listdir(base)] + [base]:
            d = os.path.join(h, work_name)
            if os.path.isdir(d) and not os.path.islink(h):
                out += [t[0] for t in os.walk(d)]
    return sorted(set(out), key=lambda d: -d.count("/"))


def leftover_cgroups(work_name):
    """Kills what still runs in the pod's cgroups, removes them; reports what was left."""
    left = []
    for d in pod_cgroup_dirs(work_name):
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids = [int(x) for x in f.read().split()]
        except OSError:
            pids = []
        for pid in pids:
            left.append("%s: pid %d %s" % (d, pid, comm(pid)))
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except OSError as e:
                err = e
                if not pids:
                    left.append("%s (%s)" % (d, e.strerror))
                    break
                time.sleep(0.1)
        else:
            left.append("%s (%s)" % (d, err.strerror))
    return left


# ---- inner: private mount namespace, bridge, containerd, CRI -------------------------------

def load_cri(containerd_root, work):
    """Compiles the CRI api.proto (without its gogoproto Go-only options) with grpc_tools."""
    src, out = os.path.join(work, "cri-proto"), os.path.join(work, "cri-py")
    os.makedirs(src)
    os.makedirs(out)
    with open(os.path.join(containerd_root, API_PROTO)) as f:
        text = [l for l in f if not l.startswith('import "github.com/gogo/')
                and not l.startswith("option (gogoproto.")]
    with open(os.path.join(src, "api.proto"), "w") as f:
        f.writelines(text)
    must([PYTHON, "-m", "grpc_tools.protoc", "-I" + src, "--python_out=" + out,
          "--grpc_python_out=" + out, os.path.join(src, "api.proto")])
    sys.path.insert(0, out)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


def oci_arch():
    m = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le",
            "s390x": "s390x"}.get(m, m)


def tar_add(t, name, data=None, mode=0o755, kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.mtime, ti.linkname = kind, mode, 0, link
    if data is not None:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)


def build_image(probe, path):
    """An OCI image archive (one uncompressed layer: busybox-static and the probe) for both
    the sandbox (its command sleeps) and the containers (their command runs the probe)."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in ("bin", "dev", "etc", "proc", "sys", "tmp", "var"):
            tar_add(t, d, kind=tarfile.DIRTYPE)
        with open("/bin/busybox", "rb") as f:
            tar_add(t, "bin/busybox", f.read())
        for applet in ("sh", "cat", "grep", "sleep", "echo"):
            tar_add(t, "bin/" + applet, kind=tarfile.SYMTYPE, link="busybox", mode=0o777)
        with open(probe, "rb") as f:
            tar_add(t, "probe", f.read())
    layer = layer.getvalue()
    blobs = {}

    def blob(data):
        h = hashlib.sha256(data).hexdigest()
        blobs[h] = data
        return {"digest": "sha256:" + h, "size": len(data)}

    ld = blob(layer)
    config = json.dumps({
        "architecture": oci_arch(), "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sleep", "3600"]},
        "rootfs": {"type": "layers", "diff_ids": [ld["digest"]]},
    }).encode()
    cd = blob(config)
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(cd, mediaType="application/vnd.oci.image.config.v1+json"),
        "layers": [dict(ld, mediaType="application/vnd.oci.image.layer.v1.tar")],
    }).encode()
    md = blob(manifest)
    index = json.dumps({"schemaVersion": 2, "manifests": [dict(
        md, mediaType="application/vnd.oci.image.manifest.v1+json",
        platform={"architecture": oci_arch(), "os": "linux"},
        annotations={"io.containerd.image.name": IMAGE,
                     "org.opencontainers.image.ref.name": IMAGE.rsplit(":", 1)[1]})]}).encode()
    with tarfile.open(path, "w") as t:
        tar_add(t, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}', mode=0o644)
        tar_add(t, "index.json", index, mode=0o644)
        tar_add(t, "blobs", kind=tarfile.DIRTYPE)
        tar_add(t, "blobs/sha256", kind=tarfile.DIRTYPE)
        for h, data in blobs.items():
            tar_add(t, "blobs/sha256/" + h, data, mode=0o644)


def containerd_config(work, cdi_dir):
    cd = os.path.join(work, "containerd")
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return """version = 2
root = "{cd}/root"
state = "{cd}/state"
# Plugins that would look at the host (/opt/containerd, other snapshotters) or need CNI.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{cd}/containerd.sock"
[ttrpc]
  address = "{cd}/containerd.sock.ttrpc"
[debug]
  level = "info"

[{cri}]
  sandbox_image = "{image}"
  enable_cdi = true
  cdi_spec_dirs = ["{cdi}"]
  # Nothing here has CAP_SYS_RESOURCE: the sandbox's oom_score_adj -998 would fail.
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{cd}/cni-bin"
    conf_dir = "{cd}/cni-conf"
""".format(cd=cd, cri=cri, image=IMAGE, cdi=cdi_dir, runc=RUNC)


class Containerd:
    def __init__(self, a, work, cdi_dir):
        self.root = os.path.join(a.containerd_dir, "root")
        self.dir = os.path.join(work, "containerd")
        for d in ("", "cni-bin", "cni-conf"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.config = os.path.join(self.dir, "config.toml")
        with open(self.config, "w") as f:
            f.write(containerd_config(work, cdi_dir))
        self.sock = os.path.join(self.dir, "containerd.sock")
        self.log_path = os.path.join(self.dir, "containerd.log")
        # The shim is found on PATH; runc is named in the config.
        self.env = dict(os.environ, PATH=os.path.join(self.root, "usr/bin") + ":" +
                        os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"))
        self.proc = None

    def start(self):
        soft, hard = resource.getrlimit(MEMLOCK)

        def limits():
            # Containers inherit containerd's rlimits (the CRI plugin sets none).
            resource.setrlimit(MEMLOCK, (min(soft, CONTROL_MEMLOCK), hard))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [os.path.join(self.root, "usr/bin/containerd"), "--config", self.config],
            stdout=self.log, stderr=subprocess.STDOUT, env=self.env, preexec_fn=limits)
        return self

    def ctr(self, args, timeout=60):
        return run([os.path.join(self.root, "usr/bin/ctr"), "--address", self.sock,
                    "--namespace", "k8s.io"] + args, timeout=timeout, env=self.env)

    def log_text(self, tail=4000):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-tail:]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
            self.log = None


def read_cri_log(path):
    """The container's stdout from a CRI log file: `TIME STREAM P|F TEXT` lines."""
    out = []
    if not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if len(parts) == 4 and parts[1] == "stdout":
                out.append(parts[3] + ("\n" if parts[2] == "F" else ""))
    return "".join(out)


class Pod:
    """One host-network pod, CRI calls made with the fields the kubelet fills."""

    def __init__(self, pb, rt, work, name):
        self.pb, self.rt = pb, rt
        self.logdir = os.path.join(work, "pods", name)
        os.makedirs(self.logdir)
        self.cfg = pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(name=name, uid="uid-" + name, namespace="default",
                                           attempt=0),
            log_directory=self.logdir,
            labels={"io.kubernetes.pod.name": name},
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=cgroup_parent(os.path.basename(work)) + "/pod-" + name,
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(
                        network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))))
        self.id = None
        self.containers = []

    def run(self):
        self.id = self.rt.RunPodSandbox(self.pb.RunPodSandboxRequest(config=self.cfg),
                                        timeout=60).pod_sandbox_id
        return self.id

    def create(self, name, cmd, envs=None, annotations=None, cdi=None):
        pb = self.pb
        cfg = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=0),
            image=pb.ImageSpec(image=IMAGE),
            command=cmd,
            envs=[pb.KeyValue(key=k, value=v) for k, v in sorted((envs or {}).items())],
            annotations=annotations or {},
            log_path=name + ".log",
            CDI_devices=[pb.CDIDevice(name=n) for n in (cdi or [])],
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(
                    capabilities=pb.Capability(drop_capabilities=["ALL"]),
                    namespace_options=pb.NamespaceOption(
                        network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD))))
        cid = self.rt.CreateContainer(pb.CreateContainerRequest(
            pod_sandbox_id=self.id, config=cfg, sandbox_config=self.cfg), timeout=60).container_id
        self.containers.append(cid)
        return cid

    def run_to_exit(self, cid, timeout=30):
        pb = self.pb
        self.rt.StartContainer(pb.StartContainerRequest(container_id=cid), timeout=60)
        deadline = time.monotonic() + timeout
        while True:
            st = self.rt.ContainerStatus(pb.ContainerStatusRequest(container_id=cid),
                                         timeout=10).status
            if st.state == pb.CONTAINER_EXITED or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return st

    def close(self):
        pb = self.pb
        for cid in self.containers:
            try:
                self.rt.RemoveContainer(pb.RemoveContainerRequest(container_id=cid), timeout=30)
            except Exception:
                pass
        if self.id:
            self.rt.StopPodSandbox(pb.StopPodSandboxRequest(pod_sandbox_id=self.id), timeout=60)
            self.rt.RemovePodSandbox(pb.RemovePodSandboxRequest(pod_sandbox_id=self.id),
                                     timeout=60)


def grpc_error(f):
    import grpc
    try:
        f()
        return None
    except grpc.RpcError as e:
        return "%s: %s" % (e.code().name, e.details())


def inner(a):
    work = a.work
    res = eu.Results(os.path.join(work, "results.jsonl"))
    res.ns(os.stat("/proc/self/ns/mnt").st_ino)
    # /run (and /var/run, a symlink to it on Debian) gets a tmpfs only this namespace sees:
    # shim sockets, runc state and /var/run/cdi land there.
    for d in ("/run", "/var/run"):
        if not os.path.islink(d) and os.path.isdir(d):
            must(["mount", "-t", "tmpfs", "-o", "mode=0755,size=64m", "rdma-cdi-cri", d])
    cleanups = []
    crashed = None
    try:
        inner_in(a, res, work, cleanups)
    except Exception:
        crashed = traceback.format_exc()
    finally:
        for c in reversed(cleanups):
            try:
                c()
            except Exception as e:
                res.note("cleanup: %s" % e)
    # Only a run that got to its end counts as complete: the checks it never reached fail.
    if crashed:
        res.ok(False, "the test ran to its end", crashed)
        return 1
    res.done()
    return 0


def restart_lent(a, res, sysfs, work, bridge, start, check):
    """Lends mlx5_3 (mksysfs lend), waits for the bridge to see it, starts the container
    again (start, check: inner_in's), gives the device back."""
    stash = os.path.join(work, "stash")
    r = run([sys.executable, a.mksysfs, "lend", sysfs, "mlx5_3", stash, "--with-netdev"])
    if not res.ok(r.returncode == 0, "lent: mlx5_3 moved away (mksysfs lend)", r.stderr):
        return
    bridge.signal(signal.SIGHUP)  # a rescan now, not after the periodic interval
    seen = bridge.wait_log("mlx5_3 (0000:3c:00.0): lent to another network namespace", 10)
    with open(bridge.spec_path()) as f:
        names = {d["name"] for d in json.load(f)["devices"]}
    res.ok(seen and "mlx5_3" in names, "lent: the bridge logs it and its spec keeps mlx5_3",
           bridge.log_text()[-2000:])
    ok, p, diag = start()
    if res.ok(ok, "lent: the container created again in the same sandbox runs (restart in "
              "place)", diag):
        check(p, diag)
    run([sys.executable, a.mksysfs, "unlend", sysfs, stash])


def inner_in(a, res, work, cleanups):
    import grpc
    import kubelet_double as kd

    pb, pb_grpc = load_cri(os.path.join(a.containerd_dir, "root"), work)
    sysfs, dev = kd.make_fixture(a.mksysfs, "dgx", work)
    cdi_dir = os.path.join(work, "cdi")
    os.makedirs(cdi_dir)

    # The bridge, writing into containerd's CDI dir, with the hook built here.
    plugin_dir = os.path.join(work, "plugins")
    os.makedirs(plugin_dir)
    kubelet = kd.Kubelet(plugin_dir, a.proto).start()
    cleanups.append(kubelet.stop)
    bridge = kd.Bridge(a.rdma_cdi, work, sysfs, dev, plugin_dir=plugin_dir)
    bridge.spec_dir = cdi_dir
    bridge.argv[bridge.argv.index("--spec-dir") + 1] = cdi_dir
    bridge.argv[bridge.argv.index("--hook-path") + 1] = a.hook
    bridge.start()
    cleanups.append(bridge.stop)
    if not res.ok(kubelet.wait_registrations(1, 15) is not None,
                  "rdma-cdi bridge registers with the kubelet double", bridge.log_text()):
        return
    with open(bridge.spec_path()) as f:
        spec = json.load(f)
    hooks = list((spec.get("containerEdits") or {}).get("hooks") or [])
    res.ok(spec.get("kind") == KIND and [h.get("path") for h in hooks] == [a.hook]
           and hooks[0].get("hookName") == "createRuntime",
           "the bridge's spec in containerd's CDI dir runs the built hook at createRuntime",
           json.dumps(hooks))

    kpb = kubelet.pb
    stub = kubelet.plugin_stub()

    def allocate(ids):
        # As the kubelet does: one Allocate per container, container_responses[0] used.
        r = stub.Allocate(kpb.AllocateRequest(container_requests=[
            kpb.ContainerAllocateRequest(devices_ids=ids)]), timeout=10)
        return r.container_responses[0]

    answers = {
        "field": (["0000:1a:00.0", "0000:3c:00.0"], ["mlx5_0", "mlx5_3"], [0, 3]),
        "annotations": (["0000:5e:00.0"], ["mlx5_8"], [8]),
        "both": (["0000:1b:00.0"], ["mlx5_1"], [1]),
    }
    alloc = {}
    for case, (ids, names, _) in answers.items():
        cr = allocate(ids)
        alloc[case] = cr
        want = ["%s=%s" % (KIND, n) for n in names]
        res.ok([d.name for d in cr.cdi_devices] == want and len(cr.annotations) == 1
               and sorted(",".join(cr.annotations.values()).split(",")) == sorted(want)
               and dict(cr.envs).get("RDMA_CDI_DEVICES") == ",".join(names),
               "Allocate %s: cdi_devices %s, one cdi.k8s.io annotation, env RDMA_CDI_DEVICES"
               % (" ".join(ids), " ".join(want)),
               "%s %s %s" % ([d.name for d in cr.cdi_devices], dict(cr.annotations),
                             dict(cr.envs)))

    # containerd, private everything; a soft memlock only the hook can raise.
    soft, hard = resource.getrlimit(MEMLOCK)
    if not res.ok(hard == INF or hard >= 4 * MIB,
                  "hard RLIMIT_MEMLOCK %s allows mlock of 4 MiB" % fmt_limit(hard),
                  "the hook raises the soft limit only up to the hard limit; raise the hard "
                  "RLIMIT_MEMLOCK of the test runner to at least 4 MiB"):
        return
    cd = Containerd(a, work, cdi_dir).start()
    cleanups.append(cd.stop)
    ch = grpc.insecure_channel("unix:" + cd.sock)
    cleanups.append(ch.close)
    rt = pb_grpc.RuntimeServiceStub(ch)
    img = pb_grpc.ImageServiceStub(ch)
    deadline, ver, err = time.monotonic() + 30, None, None
    while time.monotonic() < deadline and cd.proc.poll() is None:
        try:
            ver = rt.Version(pb.VersionRequest(version="v1"), timeout=2)
            break
        except grpc.RpcError as e:
            err = e
            time.sleep(0.2)
    if not res.ok(ver is not None, "containerd serves the CRI v1 API on its private socket",
                  "%s\n%s" % (err, cd.log_text())):
        return
    with open(os.path.join(a.containerd_dir, "root", "VERSIONS")) as f:
        pkgs = ", ".join(l.strip() for l in f if l.strip())
    res.note("CRI runtime %s %s, API %s (%s; %s)" % (
        ver.runtime_name, ver.runtime_version, ver.runtime_api_version, pkgs,
        run([RUNC, "--version"]).stdout.splitlines()[0]))
    st = rt.Status(pb.StatusRequest(verbose=True), timeout=10)
    cfg = json.loads(st.info.get("config", "{}"))
    res.ok(cfg.get("enableCDI") is True and cfg.get("cdiSpecDirs") == [cdi_dir],
           "CRI status: enableCDI true, cdiSpecDirs = [the private dir]",
           {k: cfg.get(k) for k in ("enableCDI", "cdiSpecDirs")})

    tarball = os.path.join(work, "image.tar")
    build_image(a.probe, tarball)
    r = cd.ctr(["images", "import", tarball])
    if not res.ok(r.returncode == 0, "ctr -n k8s.io images import of the OCI archive built here",
                  r.stdout + r.stderr):
        return
    deadline = time.monotonic() + 10
    while True:
        ist = img.ImageStatus(pb.ImageStatusRequest(image=pb.ImageSpec(image=IMAGE)),
                              timeout=10)
        if ist.image.id or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if not res.ok(bool(ist.image.id), "the CRI image service sees %s" % IMAGE, cd.log_text()):
        return

    pod = Pod(pb, rt, work, "rdma-e2e")
    try:
        pod.run()
    except grpc.RpcError as e:
        res.ok(False, "RunPodSandbox: a host-network pod", "%s\n%s" % (e, cd.log_text()))
        return
    cleanups.append(pod.close)
    pst = rt.PodSandboxStatus(pb.PodSandboxStatusRequest(pod_sandbox_id=pod.id),
                              timeout=10).status
    res.ok(pst.state == pb.SANDBOX_READY
           and pst.linux.namespaces.options.network == pb.NODE,
           "RunPodSandbox: a host-network pod is ready", str(pst))
    # The cgroup_parent is honoured, so the outer run's "no cgroup left" check means something.
    cgs = [d for d in pod_cgroup_dirs(os.path.basename(work)) if d.endswith("/" + pod.id)]
    res.ok(cgs, "the sandbox runs in cgroups under the pod's cgroup_parent",
           pod_cgroup_dirs(os.path.basename(work)))

    # open(2) of each node: the devices cgroup refuses with EPERM before any driver is asked;
    # here, with no RDMA in the kernel, an allowed node ends in ENXIO/ENODEV instead.
    script = ("/probe %s; echo env ${RDMA_CDI_DEVICES-unset}; "
              "grep 'Max locked memory' /proc/self/limits; "
              "for n in /dev/infiniband/*; do [ -e \"$n\" ] && "
              "echo \"open $n $(cat \"$n\" 2>&1 >/dev/null </dev/null)\"; done; true"
              % " ".join(PROBE_NODES))
    cmd = ["/bin/sh", "-c", script]

    def start(name, **kw):
        """Create, start, wait; returns (ok, parsed probe, diag text)."""
        try:
            cid = pod.create(name, cmd, **kw)
        except grpc.RpcError as e:
            return False, None, "CreateContainer: %s: %s\n%s" % (e.code().name, e.details(),
                                                                cd.log_text())
        try:
            st = pod.run_to_exit(cid)
        except grpc.RpcError as e:
            return False, None, "StartContainer: %s: %s\n%s" % (e.code().name, e.details(),
                                                               cd.log_text())
        out = read_cri_log(os.path.join(pod.logdir, name + ".log"))
        diag = "state %s exit %s reason %s %s\nstdout:\n%s" % (
            st.state, st.exit_code, st.reason, st.message, out)
        return (st.state == pb.CONTAINER_EXITED and st.exit_code == 0), eu.parse_probe(out), diag

    # Control: no devices. Proves containers run and the memlock starts low.
    ok, p, diag = start("control")
    if not res.ok(ok and p["mlock"] is not None, "control container (no devices) runs", diag):
        return
    res.ok(p["dir"] is None and all(v == "absent" for v in p["nodes"].values()),
           "control: no /dev/infiniband", diag)
    res.ok(p["soft"] is not None and p["soft"] < 4 * MIB and p["mlock"] != "ok"
           and p["capeff"] == 0 and p["env"] == "unset",
           "control: soft RLIMIT_MEMLOCK %s < 4 MiB, mlock(4 MiB) fails (%s), CapEff 0, "
           "no RDMA_CDI_DEVICES" % (fmt_limit(p["soft"]), p["mlock"]), diag)
    control = p

    def check(case, p, diag):
        _, names, uverbs = answers[case]
        want_dir, want_nodes = eu.expected_nodes(uverbs)
        res.ok(p["dir"] == want_dir and p["nodes"] == want_nodes,
               "%s: /dev/infiniband is exactly %s with the fixture's major:minor"
               % (case, eu.describe_nodes(want_dir, want_nodes)),
               "got dir %s nodes %s\n%s" % (p["dir"], p["nodes"], diag))
        soft, hard = p["soft"], p["hard"]
        res.ok(soft is not None and soft >= 4 * MIB and (soft == hard or soft == INF)
               and soft > control["soft"] and p["limits"] == (soft, hard),
               "%s: the hook raised the soft RLIMIT_MEMLOCK from %s to %s (hard %s; "
               "/proc/self/limits agrees)" % (case, fmt_limit(control["soft"]),
                                             fmt_limit(soft), fmt_limit(hard)), diag)
        res.ok(p["mlock"] == "ok" and p["capeff"] == 0,
               "%s: mlock(4 MiB) succeeds with every capability dropped (CapEff 0)" % case,
               diag)
        # busybox cat: "cat: can't open 'PATH': No such device or address"
        refused = {n: e for n, e in p["open"].items()
                   if "No such device" not in e or "not permitted" in e}
        res.ok(sorted(p["open"]) == sorted("/dev/infiniband/" + n for n in want_dir)
               and not refused,
               "%s: the devices cgroup lets the container open every node (ENXIO/ENODEV from "
               "the kernel without RDMA, not EPERM)" % case, "%s\n%s" % (p["open"], diag))
        res.ok(p["env"] == ",".join(names),
               "%s: RDMA_CDI_DEVICES=%s in the container" % (case, ",".join(names)), diag)

    # The CRI CDIDevices field only (kubelet >= 1.29 with the answer's cdi_devices).
    cr = alloc["field"]
    ok, p, diag = start("cdi-field", envs=dict(cr.envs),
                        cdi=[d.name for d in cr.cdi_devices])
    if res.ok(ok, "CreateContainer with CDIDevices %s (no annotation): the container runs"
              % " ".join(d.name for d in cr.cdi_devices), diag):
        check("field", p, diag)

    # Restart in place while mlx5_3 is lent to another network namespace (exclusive mode,
    # mksysfs lend): the kubelet creates the container again in the same sandbox with the
    # same answer; the bridge kept the device in its spec, so the CDI names resolve.
    restart_lent(a, res, sysfs, work, bridge, lambda: start(
        "cdi-field-restart", envs=dict(cr.envs), cdi=[d.name for d in cr.cdi_devices]),
                 lambda p, diag: check("field", p, diag))

    # The annotations only (what older kubelets pass: the answer's annotations).
    cr = alloc["annotations"]
    ok, p, diag = start("cdi-annotations", envs=dict(cr.envs), annotations=dict(cr.annotations))
    if res.ok(ok, "CreateContainer with only the annotation %s: the container runs"
              % " ".join("%s=%s" % kv for kv in cr.annotations.items()), diag):
        check("annotations", p, diag)

    # The whole default answer, field and annotation: containerd de-duplicates.
    cr = alloc["both"]
    ok, p, diag = start("cdi-both", envs=dict(cr.envs), annotations=dict(cr.annotations),
                        cdi=[d.name for d in cr.cdi_devices])
    if res.ok(ok, "CreateContainer with the full answer (CDIDevices and annotation): runs",
              diag):
        check("both", p, diag)

    # Names the spec does not define are refused before anything starts.
    bad = "%s=mlx5_99" % KIND
    err = grpc_error(lambda: pod.create("unknown-field", cmd, cdi=[bad]))
    res.ok(err is not None and "mlx5_99" in err,
           "CreateContainer with CDIDevices %s is refused, naming it" % bad, err)
    if err:
        res.note("unknown CDI name -> %s" % err)
    err = grpc_error(lambda: pod.create("unknown-annotation", cmd,
                                        annotations={"cdi.k8s.io/rdma-cdi_bogus": bad}))
    res.ok(err is not None and "mlx5_99" in err,
           "CreateContainer with the annotation cdi.k8s.io/rdma-cdi_bogus=%s is refused" % bad,
           err)

    # Tear down through CRI, as the kubelet would, and check nothing is left.
    cleanups.remove(pod.close)
    try:
        pod.close()
        closed = None
    except grpc.RpcError as e:
        closed = e
    lp = rt.ListPodSandbox(pb.ListPodSandboxRequest(), timeout=10).items
    lc = rt.ListContainers(pb.ListContainersRequest(), timeout=10).containers
    r = cd.ctr(["tasks", "list", "--quiet"])
    res.ok(closed is None and not lp and not lc and r.returncode == 0 and not r.stdout.strip(),
           "StopPodSandbox, RemovePodSandbox: no pod, container or task left",
           "%s pods %d containers %d tasks %r" % (closed, len(lp), len(lc), r.stdout))


def main():
    return eu.main(("--containerd-dir", "--rdma-cdi", "--hook", "--probe",
                    "--mksysfs", "--proto"), inner, outer,
                   env={"containerd_dir": "RDMA_CDI_CONTAINERD_DIR"})


if __name__ == "__main__":
    sys.exit(main())
