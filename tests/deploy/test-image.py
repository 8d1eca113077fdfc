#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The image deploy/image/build.sh makes, run under podman the way the DaemonSet runs it.

  test-image.py --source-root DIR --build-root DIR --mksysfs PY --proto PROTO   (TAP)

1. Builds the image from the build dir's binaries (buildah, offline, from scratch) into a
   private containers-storage; a second build gives the same image (fixed times, owners).
2. Looks inside: the binaries (the daemons in /usr/libexec/rdma-cdi), exactly the
   libraries ldd names for them and for the verbs libraries doctor dlopens (every symlink
   name included) and the loader, nothing else; the host hook bundle's loader and RPATH point into
   /opt/rdma-cdi/lib; the config says root, the entrypoint, the version.
3. `discover --json` in the container (non-root, no capabilities, read-only root) on the dgx
   fixture mounted at /host prints exactly what it prints on the host.
4. The init container's command installs the hook bundle into a host dir; bind-mounted at
   /opt/rdma-cdi (privately), that hook runs on the host with the bundle's own loader and
   libraries and raises a process's RLIMIT_MEMLOCK.
5. The bridge in the container, with the DaemonSet's mounts and security context (and its
   exact args once this build knows all their flags), registers with the kubelet double
   through the bind-mounted plugin dir and answers Allocate with a name the spec defines;
   the DaemonSet's liveness command passes, fails while the bridge is SIGSTOPped, passes
   after SIGCONT; `podman stop` ends it cleanly.
Everything runs in a private mount namespace with a tmpfs on /run and podman/buildah storage
in a temp dir: the host's storage, /etc/cdi, /var/run/cdi and /opt are never touched.
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

PY = "/usr/bin/python3"
BUNDLE = "/opt/rdma-cdi"
MAX_IMAGE_BYTES = 40 << 20
ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]
DGX_NAMES = {"0000:1a:00.0": "mlx5_0", "0000:9a:00.0": "mlx5_4"}
HOST_DIRS = ("/etc/cdi", "/var/run/cdi", "/run/cdi", "/var/lib/containers", "/run/containers",
             "/run/libpod", "/opt")


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


def bridge_help_flags(rdma_cdi):
    r = run([rdma_cdi, "bridge", "--help"])
    return set(re.findall(r"--[a-z][a-z0-9-]*", r.stdout + r.stderr))


def inner(a):
    sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
    import kubelet_double as kd

    work = a.work
    res = eu.Results(os.path.join(work, "results.jsonl"))
    rdma_cdi = os.path.join(a.build_root, "rdma-cdi")
    bridge = os.path.join(a.build_root, "rdma-cdi-bridge")
    watch = os.path.join(a.build_root, "rdma-cdi-watch")
    hook = os.path.join(a.build_root, "hooks", "rdma-cdi-hook")
    node = os.path.join(a.build_root, "deploy", "rdma-cdi-node")

    # Private /run (podman's and runc's state, locks), storage in the work dir.
    must(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-image", "/run"])
    # buildah keeps its blob-info cache in /var/lib/containers/cache whatever storage.conf
    # says: give it a private one.
    scratch = os.path.join(work, "ns")
    os.mkdir(scratch)
    must(["mount", "-t", "tmpfs", "-o", "mode=0700", "rdma-cdi-image", scratch])
    eu.private_dir_over("/var/lib/containers", scratch, "rdma-cdi-image", mode="0700")
    os.makedirs(os.path.join(work, "tmp"))
    env = dict(eu.podman_conf(work, runtime="runc"), TMPDIR=os.path.join(work, "tmp"))
    podman = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs",
              "--events-backend", "file"]

    def pm(args, timeout=120):
        return run(podman + args, timeout=timeout, env=env)

    # 1. Build, twice.
    build_sh = os.path.join(a.source_root, "deploy", "image", "build.sh")
    t0 = time.monotonic()
    r = run([build_sh, "-B", a.build_root], timeout=300, env=env)
    dt = time.monotonic() - t0
    version = run([rdma_cdi, "--version"]).stdout.split()[-1]
    image = "localhost/rdma-cdi:" + version
    if not res.ok(r.returncode == 0 and ("built " + image) in r.stdout,
                  "build.sh builds %s from the build dir offline (%.1f s)" % (image, dt),
                  show(r)):
        res.done()
        return 0
    r2 = run([build_sh, "-B", a.build_root, "-t", "localhost/rdma-cdi:again"], timeout=300,
             env=env)
    ids = [pm(["image", "inspect", "--format", "{{.Id}}", i]).stdout.strip()
           for i in (image, "localhost/rdma-cdi:again")]
    res.ok(r2.returncode == 0 and ids[0] and ids[0] == ids[1],
           "a second build of the same binaries is the same image (%s)" % ids[0][:12],
           "%s\n%s" % (ids, show(r2)))
    r = run([build_sh, "-B", os.path.join(work, "nope")], env=env)
    res.ok(r.returncode != 0 and "meson compile" in r.stderr,
           "build.sh on a dir without binaries: fails and says what to run", show(r))

    # 2. Inside.
    cfg = json.loads(pm(["image", "inspect", image]).stdout or "[{}]")[0]
    c = cfg.get("Config") or {}
    res.ok(c.get("User") == "0:0" and c.get("Entrypoint") == ["/usr/bin/rdma-cdi"] and
           (c.get("Labels") or {}).get("org.opencontainers.image.version") == version,
           "config: user 0:0, entrypoint /usr/bin/rdma-cdi, version label %s" % version,
           json.dumps(c)[:2000])
    size = cfg.get("Size") or 0
    res.ok(0 < size <= MAX_IMAGE_BYTES, "image size %.1f MiB (at most %d MiB)"
           % (size / 1048576, MAX_IMAGE_BYTES >> 20))
    r = pm(["image", "mount", image])
    mnt = r.stdout.strip()
    if res.ok(r.returncode == 0 and os.path.isdir(mnt), "podman image mount", show(r)):
        have = image_tree(mnt)
        want = (ldd_closure(rdma_cdi) | ldd_closure(bridge) | ldd_closure(watch) |
                ldd_closure(node))
        for soname in ("libibverbs.so.1", "librdmacm.so.1"):
            p = dlopened(soname)
            res.ok(p is not None, "ldconfig finds %s (doctor dlopens it)" % soname)
            if p:
                want |= ldd_closure(p) | with_hops(p)
        bins = {"/usr/bin/rdma-cdi", "/usr/bin/rdma-cdi-node",
                "/usr/libexec/rdma-cdi/rdma-cdi-bridge", "/usr/libexec/rdma-cdi/rdma-cdi-watch"}
        hook_sonames = set()
        for line in run(["ldd", hook]).stdout.splitlines():
            f = line.split()
            if len(f) >= 3 and f[1] == "=>" and f[2].startswith("/"):
                hook_sonames.add(os.path.basename(f[2]))
            elif f and f[0].startswith("/"):
                hook_sonames.add(os.path.basename(f[0]))
        bundle = {BUNDLE + "/bin/rdma-cdi-hook"} | {BUNDLE + "/lib/" + s for s in hook_sonames}
        extra = sorted(have - want - bins - bundle)
        missing = sorted((want | bins | bundle) - have)
        res.ok(not extra and not missing,
               "the image is the binaries (the daemons in /usr/libexec/rdma-cdi), exactly "
               "ldd's %d library paths (symlink names included, verbs' for doctor) and the "
               "hook bundle" % len(want),
               "extra: %s\nmissing: %s" % (extra, missing))
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
        pm(["image", "unmount", image])

    # Fixture: the dgx node with device nodes, as the host would have them.
    sysfs, dev = os.path.join(work, "sys"), os.path.join(work, "dev")
    r = run([PY, a.mksysfs, "build", "dgx", sysfs])
    r2 = run([PY, a.mksysfs, "mkdev", sysfs, dev])
    if not res.ok(r.returncode == 0 and r2.returncode == 0, "dgx fixture with device nodes",
                  show(r) + show(r2)):
        res.done()
        return 0
    base = ["run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all",
            "--security-opt", "no-new-privileges"] + ULIMITS

    # 3. discover, non-root.
    host = run([rdma_cdi, "discover", "--json", "--sysfs-root", sysfs, "--dev-root", dev])
    r = pm(base + ["--user", "65534:65534", "-v", sysfs + ":/host/sys:ro",
                   "-v", dev + ":/host/dev:ro", image, "discover", "--json",
                   "--sysfs-root", "/host/sys", "--dev-root", "/host/dev"])
    ok = r.returncode == 0 and r.stdout == host.stdout and host.returncode == 0
    n = len((json.loads(r.stdout) if ok else {}).get("devices", []))
    res.ok(ok and n == 10,
           "discover --json in the container (uid 65534, no capabilities) equals the host's: "
           "%d devices" % n, show(r) + "\nhost:\n" + show(host))

    # 4. The init container's install, then the hook on the host from the bundle.
    with open(os.path.join(a.source_root, "deploy", "kubernetes", "device-plugin",
                           "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    ps = ds["spec"]["template"]["spec"]
    ic = ps["initContainers"][0]
    hook_host = os.path.join(work, "host-opt-rdma-cdi")
    os.makedirs(hook_host)
    init_mount = ic["volumeMounts"][0]["mountPath"]
    r = pm(base + ["-v", "%s:%s" % (hook_host, init_mount), "--entrypoint",
                   ic["command"][0], image] + ic["args"])
    installed = os.path.isfile(os.path.join(hook_host, "bin", "rdma-cdi-hook"))
    res.ok(r.returncode == 0 and installed,
           "the DaemonSet's init container command installs the hook bundle", show(r))
    if installed and os.path.isdir("/opt"):
        must(["mount", "-t", "tmpfs", "-o", "mode=0755", "rdma-cdi-image", "/opt"])
        os.makedirs(BUNDLE)
        must(["mount", "--bind", hook_host, BUNDLE])
        soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
        low = min(64 << 10, hard)
        target = min(1 << 20, hard)
        p = subprocess.Popen(["prlimit", "--memlock=%d:%d" % (low, hard), "sleep", "30"])
        time.sleep(0.3)
        st = json.dumps({"ociVersion": "1.0.2", "id": "test", "status": "creating",
                         "pid": p.pid, "bundle": "/", "annotations": {}})
        r = run([BUNDLE + "/bin/rdma-cdi-hook", "--memlock=%d" % target], input=st,
                env={"LD_DEBUG": "libs", "PATH": "/usr/bin:/bin"})
        with open("/proc/%d/limits" % p.pid) as f:
            lim = [l for l in f if l.startswith("Max locked memory")]
        p.kill()
        p.wait()
        inits = re.findall(r"calling init: (\S+)", r.stderr)
        res.ok(r.returncode == 0 and lim and lim[0].split()[3] == str(target),
               "the installed hook runs on the host and sets RLIMIT_MEMLOCK to %d" % target,
               "%s\n%s" % (lim, show(r)))
        res.ok(inits and all(i.startswith(BUNDLE + "/lib/") for i in inits),
               "... loading only the bundle's libraries (%s)" % " ".join(
                   os.path.basename(i) for i in inits), "\n".join(inits))
    else:
        res.skip("the installed hook runs on the host", "no /opt to mount the bundle over")

    # 5. The bridge, as the DaemonSet runs it.
    bc = [c for c in ps["containers"] if "bridge" in (c.get("args") or [])][0]
    flags = bridge_help_flags(rdma_cdi)
    # The DaemonSet's args, less the flags this build does not have yet (other work).
    args, dropped, i = [bc["args"][0]], [], 1
    while i < len(bc["args"]):
        flag, val = bc["args"][i], bc["args"][i + 1:i + 2]
        i += 1 + len(val)
        if flag in flags:
            args += [flag] + val
        else:
            dropped.append(flag)
    if not dropped:
        res.note("the bridge runs with the DaemonSet's args: %s" % " ".join(args))
    else:
        res.skip("the bridge runs with the DaemonSet's exact args",
                 "this build lacks %s (expected from other work)" % ", ".join(dropped))
        if "--host-root" in dropped:
            args += ["--sysfs-root", "/host/sys", "--dev-root", "/host/dev"]
        res.note("the bridge runs with: %s" % " ".join(args))
    plugins, specs, cfgdir = (os.path.join(work, d) for d in ("plugins", "cdi", "config"))
    for d in (plugins, specs, cfgdir):
        os.makedirs(d)
    with open(os.path.join(a.source_root, "deploy", "kubernetes", "device-plugin",
                           "configmap.yaml")) as f:
        cm = yaml.safe_load(f)
    with open(os.path.join(cfgdir, "config.yaml"), "w") as f:
        f.write(cm["data"]["config.yaml"])
    host_of = {"/var/lib/kubelet/device-plugins": plugins, "/var/run/cdi": specs,
               "/sys": sysfs, "/dev": dev, BUNDLE: hook_host}
    vols = {v["name"]: v for v in ps["volumes"]}
    mounts = []
    for m in bc["volumeMounts"]:
        v = vols[m["name"]]
        src = host_of[v["hostPath"]["path"]] if "hostPath" in v else cfgdir
        mounts += ["-v", "%s:%s%s" % (src, m["mountPath"], ":ro" if m.get("readOnly") else "")]
    kubelet = kd.Kubelet(plugins, a.proto).start()
    log_path = os.path.join(work, "bridge.log")
    log = open(log_path, "w")
    name = "rdma-cdi-image-test"
    cmd = podman + base + ["--name", name, "--user", "0:0", "--entrypoint",
                           bc["command"][0]] + mounts + [image] + args
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)

    def blog():
        with open(log_path) as f:
            return f.read()[-4000:]

    try:
        reg = kubelet.wait_registrations(1, 60)
        if not res.ok(reg is not None, "the bridge in the container registers with the kubelet "
                      "double through the bind-mounted plugin dir", blog()):
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
        stub = kubelet.plugin_stub(req.endpoint)
        resp = stub.Allocate(pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=["0000:1a:00.0"])]))
        names = [d.name for d in resp.container_responses[0].cdi_devices]
        spec_files = [f for f in os.listdir(specs) if f.endswith(".json")]
        spec = {}
        if spec_files:
            with open(os.path.join(specs, spec_files[0])) as f:
                spec = json.load(f)
        defined = {spec.get("kind", "") + "=" + d["name"] for d in spec.get("devices", [])}
        res.ok(names == ["rdma.example/hca=mlx5_0"] and names[0] in defined,
               "Allocate answers rdma.example/hca=mlx5_0, defined in the spec it wrote to the "
               "host's /var/run/cdi", "%s vs %s" % (names, sorted(defined)[:5]))
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
                   "with --host-root the spec's device nodes are host paths (/dev/...)",
                   nodes[:4])
        else:
            res.skip("with --host-root the spec's device nodes are host paths",
                     "--host-root is not in this build (issue 7 item 1)")

        # Liveness, with the DaemonSet's own probe command.
        probe = bc["livenessProbe"]["exec"]["command"]
        r = pm(["exec", name] + probe, timeout=60)
        res.ok(r.returncode == 0, "liveness command passes while the bridge serves", show(r))
        pid = int(pm(["inspect", "--format", "{{.State.Pid}}", name]).stdout.strip() or 0)
        if res.ok(pid > 0, "the container's bridge pid on the host: %d" % pid):
            os.kill(pid, signal.SIGSTOP)
            t0 = time.monotonic()
            r = pm(["exec", name] + probe, timeout=60)
            dt = time.monotonic() - t0
            os.kill(pid, signal.SIGCONT)
            res.ok(r.returncode not in (0, "timeout") and "no answer in time" in r.stderr and
                   dt < bc["livenessProbe"]["timeoutSeconds"],
                   "liveness command fails (%.1f s, within timeoutSeconds) while the bridge is "
                   "stopped" % dt, show(r))
            r = pm(["exec", name] + probe, timeout=60)
            res.ok(r.returncode == 0, "and passes again after SIGCONT", show(r))
        r = pm(["stop", "--time", "10", name], timeout=60)
        rc = proc.wait(30)
        res.ok(r.returncode == 0 and rc == 0 and not os.path.exists(
            os.path.join(plugins, req.endpoint)),
            "podman stop: the bridge exits 0 and removes its socket", "%s rc %s\n%s"
            % (show(r), rc, blog()))
    except Exception as e:
        res.ok(False, "bridge scenario", "%s\n%s\n%s" % (e, traceback.format_exc(), blog()))
    finally:
        if proc.poll() is None:
            pm(["rm", "--force", "--time", "0", name])
            proc.kill()
            proc.wait()
        log.close()
        kubelet.stop()
    pm(["rm", "--all", "--force", "--time", "0"])
    run(["buildah", "rm", "--all"], env=env)
    r = pm(["ps", "--all", "--quiet"])
    res.ok(r.returncode == 0 and not r.stdout.strip(), "no container left behind", show(r))
    res.done()
    return 0


def main():
    return eu.main(("--source-root", "--build-root", "--mksysfs", "--proto"), inner, outer)


if __name__ == "__main__":
    sys.exit(main())
