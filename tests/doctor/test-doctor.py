#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi doctor` as an operator runs it: on this machine (no RDMA in the kernel) and
against fake host roots (--host-root) built from the fixture sysfs trees, with device
nodes made by mknod, fake containerd/CRI-O configs, containerd units and spec dirs.

Environment (set by meson): RDMA_CDI (the binary), MKSYSFS (fixture builder), DATA_DIR
(tests/data). Needs root (mknod, setpriv). TAP on stdout.

Oracles are independent of the code under test: the fixture's own sysfs dev files, Python's
tomllib for what is valid TOML, /proc/self/status for capabilities, Python's socket() for
NETLINK_RDMA, and the bytes `rdma-cdi generate` writes.
"""
import errno
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI = os.environ["RDMA_CDI"]
MKSYSFS = os.environ["MKSYSFS"]
DATA = os.environ["DATA_DIR"]
KIND = "rdma.example/hca"
SPEC_FILE = "rdma.example-hca.json"
NO_DEVICES = ("the kernel has no RDMA devices: load ib_uverbs and your HCA's driver "
              "(mlx5_ib ...)")
CAP_IPC_LOCK = 14
CHECK_KEYS = {"id", "status", "message", "fix", "data"}
TOP_KEYS = {"doctor_version", "rdma_cdi_version", "host_root", "mr_size", "verdict",
            "failed", "warnings", "checks"}
STATUSES = {"ok", "info", "warn", "fail", "skip"}

T = Tap()
ok = T.ok
tmpdirs = []
fixless = []  # failures without a fix, over every run
bad_json = []  # --json outputs a strict reader refuses, over every run


def doctor(*args, prefix=(), env=None, raw=False):
    p = subprocess.run([*prefix, RDMA_CDI, "doctor", *args], capture_output=True,
                       text=not raw, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def unique_keys(pairs):
    keys = [k for k, _ in pairs]
    dups = sorted({k for k in keys if keys.count(k) > 1})
    if dups:
        raise ValueError(f"duplicate keys {dups}")
    return dict(pairs)


def parse_strict(out, args=()):
    """--json's stdout bytes as a strict reader takes them: UTF-8, JSON, each key once in
    its object (Python's json would silently keep the last of two). None, noted, if not."""
    try:
        return json.loads(out.decode("utf-8"), object_pairs_hook=unique_keys)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        # Nothing at all: doctor did not run (prlimit refused to raise the hard limit).
        if out:
            bad_json.append((args, str(e)[:200]))
        return None


def doctor_json(*args, prefix=(), env=None):
    rc, out, err = doctor("--json", *args, prefix=prefix, env=env, raw=True)
    j = parse_strict(out, args)
    err = err.decode("utf-8", "replace")
    for c in (j or {}).get("checks", []):
        if c["status"] == "fail" and not c["fix"]:
            fixless.append((args, c["id"], c["message"]))
    return rc, j, err


def check(j, cid):
    for c in (j or {}).get("checks", []):
        if c["id"] == cid:
            return c
    return {"id": cid, "status": "absent", "message": "", "fix": None, "data": {}}


def show(c):
    return json.dumps(c)[:1500]


def cap_eff(status_text):
    for line in status_text.splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def make_host(profile="dgx", modules=("ib_uverbs", "rdma_ucm"), omit=()):
    """A host root: sys (a copy of the fixture, plus /sys/module entries), dev (mknod)."""
    host = tempfile.mkdtemp(prefix="rdma-cdi-doctor-")
    tmpdirs.append(host)
    os.chmod(host, 0o755)
    shutil.copytree(os.path.join(DATA, profile, "sys"), os.path.join(host, "sys"),
                    symlinks=True)
    for m in modules:
        os.makedirs(os.path.join(host, "sys", "module", m))
    args = ["/usr/bin/python3", MKSYSFS, "mkdev", os.path.join(host, "sys"),
            os.path.join(host, "dev")]
    for o in omit:
        args += ["--omit", o]
    subprocess.run(args, check=True, capture_output=True)
    return host


def write(host, path, text, mode=0o644):
    full = host + path
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    os.chmod(full, mode)
    return full


def generate(host, *extra):
    p = subprocess.run([RDMA_CDI, "generate", "--sysfs-root", host + "/sys", "--spec-dir",
                        host + "/etc/cdi", *extra], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"generate failed: {p.stderr}")


def uverbs_of(host):
    """uverbsN -> (major, minor) from the fixture's sysfs dev files."""
    d = os.path.join(host, "sys", "class", "infiniband_verbs")
    out = {}
    for name in os.listdir(d):
        if name.startswith("uverbs"):
            with open(os.path.join(d, name, "dev")) as f:
                ma, mi = f.read().strip().split(":")
            out[name] = (int(ma), int(mi))
    return out


# Root holds CAP_IPC_LOCK here; the memlock failure needs it dropped.
NOCAP = ["setpriv", "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", "--"]


def test_this_machine():
    """No --host-root: what this machine really has."""
    rc, out, err = doctor()
    if os.path.exists("/sys/class/infiniband"):
        T.skip("this machine: no RDMA devices", "this machine has RDMA devices")
        return
    ok(rc == 1 and NO_DEVICES in out and "verdict: FAIL" in out,
       "no RDMA in the kernel: says so plainly, verdict FAIL, exit 1",
       f"rc={rc}\n{out}\n{err}")
    ok("modprobe ib_uverbs" in out.split("to fix:")[-1],
       "the fix list names the module to load", out)
    rc, j, err = doctor_json()
    v = check(j, "verbs")
    ok(rc == 1 and v["status"] == "fail" and NO_DEVICES in v["message"]
       and v["data"]["devices"] == [] and v["data"]["list_error"],
       "verbs: ibv_get_device_list sees no device, with the library's reason", show(v))
    d = check(j, "devices")
    ok(d["status"] == "fail" and NO_DEVICES in d["message"] and d["data"]["devices"] == [],
       "devices: the sysfs view agrees", show(d))

    # NETLINK_RDMA, asked independently.
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20).close()
        have_nl = True
    except OSError as e:
        have_nl = e.errno != errno.EPROTONOSUPPORT
    n = check(j, "netns")
    if have_nl:
        ok(n["data"]["mode"] in ("shared", "exclusive", "unknown"), "netns: a mode", show(n))
    else:
        ok(n["status"] == "warn" and n["data"]["mode"] == "unknown"
           and "the kernel has no RDMA netlink" in n["data"]["reason"],
           "netns: unknown, because the kernel has no RDMA netlink", show(n))
    c = check(j, "rdma_cm")
    ok(c["status"] == "warn" and c["data"]["error"], "rdma_cm: the event channel fails, a "
       "warning with the reason", show(c))


def test_json_shape():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    ok(j is not None and set(j) == TOP_KEYS, "JSON: exactly the documented top-level keys",
       f"{sorted(j or {})} {err}")
    if not j:
        return
    ok(j["doctor_version"] == 1 and j["host_root"] == host and j["mr_size"] == 64 << 20,
       "JSON: doctor_version 1, host_root echoed, default MR 64 MiB", json.dumps(
           {k: j[k] for k in ("doctor_version", "host_root", "mr_size")}))
    bad = [c for c in j["checks"] if set(c) != CHECK_KEYS or c["status"] not in STATUSES
           or not isinstance(c["data"], dict) or not c["message"]
           or not (c["fix"] is None or isinstance(c["fix"], str))]
    ok(not bad, "JSON: every check has id, status, message, fix, data", show(bad[:3]))
    fails = [c for c in j["checks"] if c["status"] == "fail"]
    warns = [c for c in j["checks"] if c["status"] == "warn"]
    ok(j["failed"] == len(fails) and j["warnings"] == len(warns)
       and j["verdict"] == ("fail" if fails else "ok") and rc == (1 if fails else 0),
       "JSON: verdict, counts and exit status agree", f"rc={rc} {j['failed']} {j['verdict']}")
    ok(all(c["fix"] for c in fails),
       "every failure carries a fix", show([c for c in fails if not c["fix"]]))
    v = check(j, "verbs")
    if not os.path.exists("/sys/class/infiniband"):
        ok(v["status"] == "fail" and "this process cannot reach them" in v["message"]
           and "/sys/class/infiniband_verbs has 10" in v["message"] and "CDI" in v["fix"],
           "verbs sees nothing while the host's sysfs has 10 devices: cannot reach them",
           show(v))
    ids = [c["id"] for c in j["checks"]]
    ok(len(ids) == len(set(ids)), "check ids are unique", ids)
    rc2, out, _ = doctor("--host-root", host)
    n_lines = [l for l in out.splitlines() if l.startswith("[")]
    ok(len(n_lines) == len(j["checks"]) and rc2 == rc,
       "the text output has one line per check and the same exit status", out)


def test_devices_and_nodes():
    host = make_host(omit=("uverbs5",))
    want = uverbs_of(host)
    # uverbs2 with the wrong numbers, uverbs4 a plain file, uverbs5 missing.
    os.unlink(host + "/dev/infiniband/uverbs2")
    os.mknod(host + "/dev/infiniband/uverbs2", 0o20666, os.makedev(231, 250))
    os.unlink(host + "/dev/infiniband/uverbs4")
    write(host, "/dev/infiniband/uverbs4", "")
    rc, j, err = doctor_json("--host-root", host)
    d = check(j, "devices")
    usable = [x["uverbs"] for x in d["data"].get("devices", []) if x["usable"]]
    ok(d["status"] == "ok" and sorted(usable) == sorted(want),
       "devices: every RDMA device of the fixture, usable ones with their uverbs",
       show(d))
    c = check(j, "node.uverbs0")
    ok(c["status"] == "ok" and (c["data"]["major"], c["data"]["minor"]) == want["uverbs0"]
       and c["data"]["path"] == "/dev/infiniband/uverbs0",
       "node.uverbs0: char device with the sysfs numbers, accessible, path as on the host",
       show(c))
    c = check(j, "node.uverbs2")
    ok(c["status"] == "fail" and "is 231:250 but the kernel says %d:%d" % want["uverbs2"]
       in c["message"] and "mknod" in c["fix"],
       "node.uverbs2 with other numbers: fail naming both, mknod fix", show(c))
    c = check(j, "node.uverbs4")
    ok(c["status"] == "fail" and "not a character device" in c["message"],
       "node.uverbs4 a regular file: fail", show(c))
    c = check(j, "node.uverbs5")
    ok(c["status"] == "fail" and "No such file" in c["message"]
       and "mknod -m 0666 /dev/infiniband/uverbs5 c %d %d" % want["uverbs5"] in c["fix"],
       "node.uverbs5 missing: fail, the exact mknod command as fix", show(c))
    c = check(j, "node.rdma_cm")
    ok(c["status"] == "ok", "node.rdma_cm: ok", show(c))

    # Access: a node only root may open, doctor run as nobody.
    os.chmod(host + "/dev/infiniband/uverbs0", 0o600)
    rc, j, err = doctor_json("--host-root", host, prefix=[
        "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
        "--bounding-set=-all", "--"])
    c = check(j, "node.uverbs0")
    ok(c["status"] == "fail" and "Permission denied" in c["message"] and "root" in c["fix"],
       "node.uverbs0 mode 0600, doctor as nobody: not accessible, fix names root or udev",
       show(c) + err)
    c = check(j, "node.uverbs1")
    ok(c["status"] == "ok", "node.uverbs1 mode 0666 as nobody: accessible", show(c))


def test_sysfs_root():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host, "--sysfs-root", "/")
    c = check(j, "devices")
    ok(c["status"] == "fail" and "did you mean --sysfs-root /sys " in c["message"]
       and c["fix"] == "--sysfs-root /sys",
       "--sysfs-root pointing at the host's /: 'did you mean .../sys?'", show(c))
    rc, j, err = doctor_json("--host-root", host, "--sysfs-root", "/dev")
    c = check(j, "devices")
    ok(c["status"] == "fail" and NO_DEVICES in c["message"]
       and "nothing in /dev/class/infiniband" in c["message"],
       "--sysfs-root at a tree without RDMA: no devices, naming the path", show(c))
    rc, j, err = doctor_json("--host-root", host, "--sysfs-root", "/missing")
    c = check(j, "devices")
    ok(c["status"] == "fail" and "cannot read sysfs at " + host + "/missing" in c["message"],
       "--sysfs-root that does not exist: fail naming it", show(c))


def test_container():
    """Inside a container (here: $container set, as podman and systemd-nspawn do), nodes
    of devices it was not given are expected to be missing."""
    host = make_host(omit=[f"uverbs{i}" for i in range(1, 10)])
    env = dict(os.environ, container="podman")
    env.pop("KUBERNETES_SERVICE_HOST", None)
    args = ["--sysfs-root", host + "/sys", "--dev-root", host + "/dev",
            "--spec-dir", host + "/etc/cdi"]
    rc, j, err = doctor_json(*args, env=env)
    c = check(j, "context")
    files = [f for f in ("/run/.containerenv", "/.dockerenv") if os.path.exists(f)]
    want = files[0] + " exists" if files else "$container is set"
    ok(c["data"] == {"container": True, "evidence": want} and
       "inside a container" in c["message"], "$container set: inside a container", show(c))
    ok(check(j, "node.uverbs0")["status"] == "ok"
       and check(j, "node.uverbs3")["status"] == "info"
       and "not given to this container" in check(j, "node.uverbs3")["message"],
       "the given node is checked, the others are 'not given', not failures",
       show(check(j, "node.uverbs3")))
    c = check(j, "container.devices")
    ok(c["status"] == "ok" and "given 1 of the node's 10" in c["message"],
       "container.devices: 1 of 10 given", show(c))
    # spec_dirs lists what exists: an empty /var/run/cdi (another test's mount point) is "ok".
    sd = check(j, "spec_dirs")
    ok(check(j, "spec")["status"] == "skip" and
       (sd["status"] == "skip" or (sd["status"] == "ok" and
                                   not any(d["files"] for d in sd["data"]["dirs"]))),
       "no spec inside the container: skipped, not failed",
       show([check(j, "spec"), check(j, "spec_dirs")]))
    os.unlink(host + "/dev/infiniband/uverbs0")
    rc, j, err = doctor_json(*args, env=env)
    c = check(j, "container.devices")
    ok(rc == 1 and c["status"] == "fail" and "given none of the node's 10" in c["message"]
       and "--device rdma.example/hca=NAME" in c["fix"],
       "a container given no RDMA device: fail, how to ask for one", show(c))
    rc, j, err = doctor_json("--host-root", "/", *args, env=env)
    ok(check(j, "context")["data"] == {"container": False, "evidence": None}
       and check(j, "node.uverbs3")["status"] == "fail"
       and check(j, "container.devices")["status"] == "absent",
       "--host-root / given: the host, where the same missing nodes are failures",
       show(check(j, "node.uverbs3")))
    if files:
        T.skip("no evidence: the host", "this test itself runs in a container (" +
               ", ".join(files) + ")")
    else:
        env.pop("container")
        rc, j, err = doctor_json(*args, env=env)
        ok(check(j, "context")["data"]["container"] is False,
           "no evidence of a container: the host")


def test_modules():
    host = make_host(modules=("ib_uverbs",))
    shutil.rmtree(host + "/sys/class/misc")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "module.ib_uverbs")
    ok(c["status"] == "ok" and c["data"]["state"] == "loaded", "ib_uverbs in /sys/module: "
       "loaded", show(c))
    c = check(j, "module.rdma_ucm")
    ok(c["status"] == "warn" and c["data"]["state"] == "missing"
       and c["fix"].startswith("modprobe rdma_ucm"),
       "rdma_ucm absent: warning with modprobe rdma_ucm", show(c))
    ok(check(j, "node.rdma_cm")["status"] == "absent",
       "no rdma_cm in sysfs: no rdma_cm node check")

    host = make_host(modules=())
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "module.ib_uverbs")
    ok(c["status"] == "ok" and c["data"]["state"] == "builtin",
       "no /sys/module/ib_uverbs but class/infiniband_verbs: built in", show(c))
    shutil.rmtree(host + "/sys/class/infiniband_verbs")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "module.ib_uverbs")
    ok(c["status"] == "fail" and c["fix"].startswith("modprobe ib_uverbs"),
       "no ib_uverbs at all: fail, modprobe ib_uverbs", show(c))
    c = check(j, "devices")
    ok(c["status"] == "fail" and "none has a uverbs device" in c["message"],
       "devices without uverbs: fail naming the cause", show(c))


def test_memlock():
    host = make_host()
    have_cap = bool(cap_eff(open("/proc/self/status").read()) & (1 << CAP_IPC_LOCK))
    nocap_status = subprocess.run(NOCAP + ["cat", "/proc/self/status"], capture_output=True,
                                  text=True).stdout
    if cap_eff(nocap_status) & (1 << CAP_IPC_LOCK):
        ok(False, "setpriv drops CAP_IPC_LOCK", nocap_status)
        return
    low = ["prlimit", "--memlock=65536:131072", "--"]
    rc, j, err = doctor_json("--host-root", host, prefix=low + NOCAP)
    m, c = check(j, "memlock"), check(j, "capability.ipc_lock")
    ok(m["status"] == "fail" and m["data"]["soft"] == 65536 and m["data"]["hard"] == 131072
       and m["data"]["mr_size"] == 64 << 20 and "65536" in m["message"] and m["fix"]
       and "memlock" in m["fix"],
       "memlock 64K:128K without CAP_IPC_LOCK: fail, soft and hard reported, a fix",
       show(m))
    ok(c["data"]["cap_ipc_lock"] is False and c["status"] == "info",
       "CAP_IPC_LOCK dropped: reported as not held", show(c))
    rc, j, err = doctor_json("--host-root", host, "--mr-size", "64K", prefix=low + NOCAP)
    m = check(j, "memlock")
    ok(m["status"] == "ok" and m["data"]["mr_size"] == 65536,
       "--mr-size 64K fits a 64K soft limit: ok", show(m))
    rc, j, err = doctor_json("--host-root", host, "--mr-size", "65537", prefix=low + NOCAP)
    ok(check(j, "memlock")["status"] == "fail", "one byte more than the soft limit: fail")
    rc, j, err = doctor_json("--host-root", host, prefix=["prlimit", "--memlock=unlimited",
                                                          "--"] + NOCAP)
    m = check(j, "memlock")
    if m["status"] == "absent" or "Operation not permitted" in err:
        T.skip("memlock unlimited", "raising the hard limit needs CAP_SYS_RESOURCE")
    else:
        ok(m["status"] == "ok" and m["data"]["soft"] == "unlimited", "unlimited: ok",
           show(m))
    if have_cap:
        rc, j, err = doctor_json("--host-root", host, prefix=low)
        m, c = check(j, "memlock"), check(j, "capability.ipc_lock")
        ok(m["status"] == "ok" and "CAP_IPC_LOCK lifts" in m["message"]
           and c["data"]["cap_ipc_lock"] is True,
           "low memlock but CAP_IPC_LOCK held: ok, says why", show(m))
    else:
        T.skip("low memlock with CAP_IPC_LOCK", "this process has no CAP_IPC_LOCK")


CRI = 'plugins."io.containerd.grpc.v1.cri"'
CRI3 = 'plugins."io.containerd.cri.v1.runtime"'
CONTAINERD_CASES = [
    # (name, config, status, needle in message or fix)
    ("1.7 with enable_cdi", f"""version = 2
root = "/var/lib/containerd"   # comment
[plugins]
  [{CRI}]
    sandbox_image = "registry.k8s.io/pause:3.9"
    enable_cdi = true
    cdi_spec_dirs = [
      "/etc/cdi",   # the static dir
      '/var/run/cdi',
    ]
    [{CRI}.containerd]
      default_runtime_name = "runc"
      [{CRI}.containerd.runtimes.runc.options]
        SystemdCgroup = true
        inline = {{ a = 1, b = "x" }}
""", "ok", "enable_cdi = true"),
    ("1.7 without enable_cdi", f"""version = 2
[{CRI}]
  sandbox_image = "pause"
""", "fail", 'set enable_cdi = true under [plugins."io.containerd.grpc.v1.cri"]'),
    ("enable_cdi = false", f"""version = 2
[{CRI}]

  enable_cdi = false
""", "fail", "config.toml:4: enable_cdi = false"),
    ("dotted key at the top level", f"""version = 2
{CRI}.enable_cdi = true
""", "ok", "enable_cdi = true"),
    ("2.x config version 3, default on", """version = 3
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
""", "ok", "the 2.x default"),
    ("2.x with enable_cdi = false", f"""version = 3
[{CRI3}]
  enable_cdi = false
""", "fail", f"under [{CRI3}]"),
    ("spec dir not in cdi_spec_dirs", f"""version = 2
[{CRI}]
  enable_cdi = true
  cdi_spec_dirs = ["/var/run/cdi"]
""", "fail", 'add "/etc/cdi" to cdi_spec_dirs'),
    ("multi-line strings and dates are skipped", f'''version = 2
motd = """
enable_cdi = false
"""
when = 1979-05-27T07:32:00Z
[{CRI}]
  enable_cdi = true
''', "ok", "enable_cdi = true"),
]


def test_containerd():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "skip" and c["data"]["exists"] is False,
       "containerd: no config, not installed: skipped", show(c))
    write(host, "/usr/bin/containerd", "#!/bin/sh\n", 0o755)
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "warn" and "CDI off" in c["message"] and "enable_cdi = true" in c["fix"],
       "containerd installed without a config: warning, CDI off in 1.7", show(c))

    for name, text, status, needle in CONTAINERD_CASES:
        tomllib.loads(text)  # the fixture itself is valid TOML
        write(host, "/etc/containerd/config.toml", text)
        rc, j, err = doctor_json("--host-root", host)
        c = check(j, "containerd.config")
        ok(c["status"] == status and needle in (c["message"] + " " + (c["fix"] or "")),
           f"containerd {name}: {status}", show(c) + err)
    c = check(j, "containerd.config")

    write(host, "/etc/containerd/config.toml", CONTAINERD_CASES[0][1])
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["data"].get("enable_cdi") is True and c["data"].get("config_version") == 2
       and c["data"].get("cdi_spec_dirs") == ["/etc/cdi", "/var/run/cdi"]
       and c["data"].get("section") == f"[{CRI}]",
       "containerd: the JSON data carries version, section, enable_cdi, cdi_spec_dirs",
       show(c))

    for bad, where in (('version = 2\n[plugins\n', "2:9"),
                       ('version = 2\nenable_cdi = tru e\n', "2:18"),
                       ('x = "unterminated\n', "1:"),
                       ('a = [1, 2\nb = 3\n', "2:")):
        try:
            tomllib.loads(bad)
            valid = True
        except tomllib.TOMLDecodeError:
            valid = False
        write(host, "/etc/containerd/config.toml", bad)
        rc, j, err = doctor_json("--host-root", host)
        c = check(j, "containerd.config")
        ok(not valid and c["status"] == "fail"
           and c["message"].startswith(host + "/etc/containerd/config.toml:" + where),
           f"containerd config {bad!r}: invalid TOML, fail at file:line:column", show(c))
    write(host, "/etc/containerd/config.toml", "a = 1\0\n")
    rc, j, err = doctor_json("--host-root", host)
    ok(check(j, "containerd.config")["status"] == "fail", "a NUL byte in the config: fail")


def test_containerd_imports():
    """containerd reads config.toml's `imports` too (relative to the importing file, '*'
    globbed, nested, each file once) and a file that has a plugin's section replaces that
    whole section: doctor follows them the same way and names the file in force."""
    host = make_host()
    main = f'version = 2\nimports = ["conf.d/*.toml"]\n[{CRI}]\n  enable_cdi = false\n'
    write(host, "/etc/containerd/config.toml", main)
    write(host, "/etc/containerd/conf.d/10-cdi.toml",
          f'imports = ["/etc/containerd/extra.toml", "../config.toml"]\n'
          f'[{CRI}]\n  enable_cdi = true\n')
    write(host, "/etc/containerd/extra.toml", '[plugins."io.containerd.gc.v1.scheduler"]\n'
          "  pause_threshold = 0.02\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "ok" and "/etc/containerd/conf.d/10-cdi.toml" in c["message"]
       and c["data"]["files"] == ["/etc/containerd/config.toml",
                                  "/etc/containerd/conf.d/10-cdi.toml",
                                  "/etc/containerd/extra.toml"]
       and c["data"]["section_file"] == "/etc/containerd/conf.d/10-cdi.toml",
       "an import turns CDI on over config.toml's false; nested import read once, a cycle "
       "back to config.toml ignored", show(c) + err)

    write(host, "/etc/containerd/conf.d/20-mirror.toml",
          f'[{CRI}]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n')
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "fail" and "20-mirror.toml, an import, which replaces the whole "
       "section" in c["message"] and "in /etc/containerd/conf.d/20-mirror.toml" in c["fix"]
       and c["data"]["enable_cdi"] is None,
       "a later import with the CRI section but no enable_cdi replaces the section: CDI "
       "off in 1.7, the file named", show(c))
    os.unlink(host + "/etc/containerd/conf.d/20-mirror.toml")

    write(host, "/etc/containerd/conf.d/15-dirs.toml",
          f'[{CRI}]\n  enable_cdi = true\n  cdi_spec_dirs = ["/var/run/cdi"]\n')
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "fail" and "does not include /etc/cdi" in c["message"]
       and "15-dirs.toml" in c["fix"] and c["data"]["cdi_spec_dirs"] == ["/var/run/cdi"],
       "imports in lexical order: 15-dirs.toml's spec dirs are in force", show(c))
    os.unlink(host + "/etc/containerd/conf.d/15-dirs.toml")

    write(host, "/etc/containerd/conf.d/30-bad.toml", f"[{CRI}\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "fail" and "/etc/containerd/conf.d/30-bad.toml:1:" in c["message"],
       "a broken import: fail at its file:line:column", show(c))
    os.unlink(host + "/etc/containerd/conf.d/30-bad.toml")

    write(host, "/etc/containerd/config.toml",
          main.replace('"conf.d/*.toml"', '"conf.d/*.toml", "/etc/containerd/gone.toml"'))
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "fail" and "imports /etc/containerd/gone.toml, which does not exist"
       in c["message"], "an import that does not exist (no '*'): containerd refuses to "
       "start, fail", show(c))

    write(host, "/etc/containerd/config.toml",
          f'version = 2\nimports = ["many/*.toml"]\n[{CRI}]\n  enable_cdi = true\n')
    for n in range(70):
        write(host, f"/etc/containerd/many/{n:02d}.toml", f"# {n}\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.config")
    ok(c["status"] == "warn" and "more than 64 files" in c["message"]
       and len(c["data"]["files"]) == 64,
       "70 imported files: bounded at 64, said so", show(c))


def test_containerd_unit():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    ok(check(j, "containerd.unit")["status"] == "skip", "no containerd unit: skipped")
    unit = "[Unit]\nDescription=containerd\n[Service]\nExecStart=/usr/bin/containerd\n"
    write(host, "/lib/systemd/system/containerd.service", unit)
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "warn" and "no LimitMEMLOCK" in c["message"]
       and c["data"]["limit_memlock"] is None
       and c["data"]["unit"] == "/lib/systemd/system/containerd.service"
       and "LimitMEMLOCK=infinity" in c["fix"] and "daemon-reload" in c["fix"],
       "unit without LimitMEMLOCK: warning, the drop-in as fix", show(c))
    write(host, "/lib/systemd/system/containerd.service",
          unit + "LimitNOFILE=infinity\n  LimitMEMLOCK = infinity\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "ok" and c["data"]["limit_memlock"] == "infinity"
       and "/lib/systemd/system/containerd.service:6" in c["message"],
       "LimitMEMLOCK=infinity in the unit: ok, with file:line", show(c))
    # Drop-ins apply in name order across dirs; /etc masks a same-named one in /lib.
    write(host, "/lib/systemd/system/containerd.service.d/10-low.conf",
          "[Service]\nLimitMEMLOCK=64K\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "warn" and "LimitMEMLOCK=64K is below" in c["message"]
       and "10-low.conf:2" in c["message"],
       "a drop-in lowering it to 64K: warning naming the drop-in", show(c))
    write(host, "/etc/systemd/system/containerd.service.d/10-low.conf",
          "[Service]\nLimitMEMLOCK=infinity\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "ok" and "/etc/systemd/system/containerd.service.d/10-low.conf" in
       c["message"], "a same-named drop-in in /etc masks /lib's", show(c))
    write(host, "/etc/systemd/system/containerd.service.d/20-x.conf",
          "[Install]\nLimitMEMLOCK=1K\n[Service]\nLimitMEMLOCK=1G:2G\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "ok" and c["data"]["limit_memlock"] == "1G:2G",
       "the last drop-in wins, only [Service] counts, SOFT:HARD understood", show(c))
    write(host, "/etc/systemd/system/containerd.service.d/30-bad.conf",
          "[Service]\nLimitMEMLOCK=lots\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "containerd.unit")
    ok(c["status"] == "warn" and "not a limit systemd understands" in c["message"],
       "LimitMEMLOCK=lots: warning", show(c))


def test_netns_isolation():
    """netns.isolation: devices lent to pods (mksysfs lend), and what moves them there."""
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "netns.isolation")
    exclusive = check(j, "netns")["data"]["mode"] == "exclusive"
    ok(c["data"]["away"] == [] and (exclusive or c["status"] == "skip"),
       "netns.isolation: no device away, not exclusive here: nothing to check", show(c))

    stash = tempfile.mkdtemp(prefix="rdma-cdi-doctor-stash-")
    tmpdirs.append(stash)
    subprocess.run(["/usr/bin/python3", MKSYSFS, "lend", host + "/sys", "mlx5_3",
                    os.path.join(stash, "s")], check=True, capture_output=True)
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "netns.isolation")
    ok(c["status"] == "warn" and c["data"]["away"] == ["mlx5_3"]
       and "mlx5_3" in c["message"] and "netns: move" in c["fix"] and "rdma-cni" in c["fix"]
       and "/etc/cni/net.d" in c["fix"],
       "a device lent away and nothing moves devices: a warning naming it, both fixes", show(c))

    # A CNI chain without rdma-cni does not count; one with it does.
    write(host, "/etc/cni/net.d/10-sriov.conflist",
          json.dumps({"cniVersion": "0.4.0", "name": "sriov",
                      "plugins": [{"type": "sriov"}, {"type": "tuning"}]}))
    c = check(doctor_json("--host-root", host)[1], "netns.isolation")
    ok(c["status"] == "warn" and c["data"]["rdma_cni"] == [],
       "a conflist without an rdma plugin: still a warning", show(c))
    write(host, "/etc/cni/net.d/20-sriov-rdma.conflist",
          json.dumps({"cniVersion": "0.4.0", "name": "sriov-rdma",
                      "plugins": [{"type": "sriov"}, {"type": "rdma"}]}))
    write(host, "/etc/cni/net.d/30-garbage.conflist", "{not json")
    c = check(doctor_json("--host-root", host)[1], "netns.isolation")
    ok(c["status"] == "ok" and c["data"]["rdma_cni"] == ["/etc/cni/net.d/20-sriov-rdma.conflist"]
       and "rdma-cni in /etc/cni/net.d/20-sriov-rdma.conflist" in c["message"],
       "a conflist chaining rdma-cni: ok, the file named (garbage ignored)", show(c))

    os.unlink(host + "/etc/cni/net.d/20-sriov-rdma.conflist")
    write(host, "/etc/rdma-cdi/config.yaml",
          "pools:\n  - resourceName: rdma.example/ib\n    netns: move\n"
          "  - resourceName: rdma.example/plain\n")
    c = check(doctor_json("--host-root", host)[1], "netns.isolation")
    ok(c["status"] == "ok" and c["data"]["move_pools"] == ["rdma.example/ib"]
       and "netns: move in pools rdma.example/ib" in c["message"],
       "a pool with netns: move: ok, the pool named", show(c))


def test_crio():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    ok(check(j, "crio.config")["status"] == "skip", "no CRI-O config: skipped")
    write(host, "/etc/crio/crio.conf", '[crio.runtime]\ncdi_spec_dirs = ["/etc/cdi"]\n')
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "crio.config")
    ok(c["status"] == "ok" and c["data"]["cdi_spec_dirs"] == ["/etc/cdi"],
       "CRI-O reading /etc/cdi: ok", show(c))
    write(host, "/etc/crio/crio.conf.d/50-cdi.conf",
          '[crio.runtime]\ncdi_spec_dirs = ["/var/run/cdi"]\n')
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "crio.config")
    ok(c["status"] == "fail" and 'add "/etc/cdi" to cdi_spec_dirs under [crio.runtime]' in
       c["fix"] and c["data"]["files"] == ["/etc/crio/crio.conf",
                                           "/etc/crio/crio.conf.d/50-cdi.conf"],
       "a drop-in overriding cdi_spec_dirs without /etc/cdi: fail", show(c))
    rc, j, err = doctor_json("--host-root", host, "--spec-dir", "/var/run/cdi")
    ok(check(j, "crio.config")["status"] == "ok", "with --spec-dir /var/run/cdi: ok")
    write(host, "/etc/crio/crio.conf.d/60-bad.conf", "[crio.runtime\n")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "crio.config")
    ok(c["status"] == "fail" and "60-bad.conf:1:" in c["message"],
       "a broken CRI-O drop-in: fail at file:line:column", show(c))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_spec():
    host = make_host()
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "fail" and c["data"]["state"] == "missing"
       and c["fix"] == "rdma-cdi generate --spec-dir /etc/cdi",
       "no spec on disk: fail, fix rdma-cdi generate", show(c))
    s = check(j, "spec_dirs")
    ok(s["status"] == "warn" and not any(d["exists"] for d in s["data"]["dirs"]),
       "no spec dir at all: warning", show(s))

    generate(host)
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "ok" and c["data"]["state"] == "match"
       and c["data"]["path"] == "/etc/cdi/" + SPEC_FILE,
       "spec written by generate: matches", show(c))
    s = check(j, "spec_dirs")
    files = [f for d in s["data"]["dirs"] for f in d["files"]]
    ok(s["status"] == "ok" and [f["file"] for f in files] == [SPEC_FILE]
       and f"{KIND}=all" in files[0]["names"] and files[0]["kind"] == KIND,
       "spec_dirs lists the spec with its names", show(s))

    h = check(j, "hook")
    ok(h["status"] == "fail" and "does not exist" in h["message"] and h["fix"].startswith(
        "install rdma-cdi-hook at " + h["data"]["path"]),
       "the spec's default hook is not installed in the host root: fail", show(h))

    generate(host, "--with-mad", "--memlock", "1G", "--hook-path", "/opt/rdma/rdma-cdi-hook")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "ok", "generated with --with-mad --memlock --hook-path: still matches "
       "(options read back from the spec)", show(c))
    write(host, "/opt/rdma/rdma-cdi-hook", "#!/bin/sh\n", 0o644)
    rc, j, err = doctor_json("--host-root", host)
    h = check(j, "hook")
    ok(h["status"] == "fail" and "not an executable file" in h["message"]
       and h["data"]["path"] == "/opt/rdma/rdma-cdi-hook",
       "the spec's hook present but not executable: fail", show(h))
    os.chmod(host + "/opt/rdma/rdma-cdi-hook", 0o755)
    rc, j, err = doctor_json("--host-root", host)
    h = check(j, "hook")
    ok(h["status"] == "ok", "the spec's hook installed in the host root: ok", show(h))

    # One byte changed.
    path = host + "/etc/cdi/" + SPEC_FILE
    data = read(path)
    with open(path, "wb") as f:
        f.write(data.replace(b'"minor": 192', b'"minor": 199', 1))
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "fail" and c["data"]["state"] == "differs"
       and "device numbers or edits changed" in c["message"]
       and c["fix"] == "rdma-cdi generate --spec-dir /etc/cdi --with-mad --hook-path "
       "/opt/rdma/rdma-cdi-hook --memlock 1G",
       "a changed minor: differs, the generate command that restores it", show(c))

    # A spec from another node: names the devices that differ.
    other = make_host("sriov")
    generate(other)
    names = lambda p: {d["name"] for d in json.loads(read(p))["devices"]}
    generate(host)
    missing = names(path) - names(other + "/etc/cdi/" + SPEC_FILE)
    gone = names(other + "/etc/cdi/" + SPEC_FILE) - names(path)
    shutil.copy(other + "/etc/cdi/" + SPEC_FILE, path)
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    listed = set(c["data"].get("new_devices", []))
    ok(c["status"] == "fail" and "not in it: " in c["message"] and listed == missing
       and set(c["data"]["gone_devices"]) == gone,
       "a spec from another node: differs, naming devices it lacks and has", show(c))

    # YAML spec.
    os.unlink(path)
    generate(host, "--format", "yaml")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "ok" and c["data"]["path"].endswith(".yaml"), "YAML spec: matches",
       show(c))

    # Invalid spec file of ours.
    ypath = host + "/etc/cdi/rdma.example-hca.yaml"
    os.unlink(ypath)
    write(host, "/etc/cdi/" + SPEC_FILE, "{ not json")
    rc, j, err = doctor_json("--host-root", host)
    c, s = check(j, "spec"), check(j, "spec_dirs")
    ok(c["status"] == "fail" and c["data"]["state"] == "invalid", "garbage spec: fail",
       show(c))
    ok(s["status"] == "warn" and "invalid" in s["message"], "spec_dirs: invalid file warned",
       show(s))

    # A second file defining one of our names: runtimes refuse it.
    os.unlink(path)
    generate(host)
    dup = json.loads(read(path))
    dup["devices"] = [d for d in dup["devices"] if d["name"] == "mlx5_0"]
    write(host, "/etc/cdi/other.json", json.dumps(dup))
    rc, j, err = doctor_json("--host-root", host)
    s = check(j, "spec_dirs")
    ok(s["status"] == "fail" and any("mlx5_0" in x for x in s["data"]["conflicts"]),
       "our names defined twice in /etc/cdi: fail", show(s))

    # --spec-dir and --kind.
    os.unlink(host + "/etc/cdi/other.json")
    subprocess.run([RDMA_CDI, "generate", "--sysfs-root", host + "/sys", "--spec-dir",
                    host + "/var/run/cdi", "--kind", "example.com/nic"], check=True,
                   capture_output=True)
    rc, j, err = doctor_json("--host-root", host, "--spec-dir", "/var/run/cdi", "--kind",
                             "example.com/nic")
    c = check(j, "spec")
    ok(c["status"] == "ok" and c["data"]["path"] == "/var/run/cdi/example.com-nic.json",
       "--spec-dir /var/run/cdi --kind example.com/nic: matches", show(c))

    # No devices on the node, a spec on disk: stale.
    shutil.rmtree(host + "/sys/class/infiniband_verbs")
    rc, j, err = doctor_json("--host-root", host)
    c = check(j, "spec")
    ok(c["status"] == "fail" and c["data"]["state"] == "stale"
       and "rm /etc/cdi/" + SPEC_FILE in c["fix"], "spec but no usable device: stale", show(c))


def escaped(b):
    """The documented escaping of text from disk (common/quote.c), written again here as
    the oracle: printable UTF-8 kept; \\n \\t \\r; \\xNN for every other byte of a
    control (C0, DEL, C1) or of what is not UTF-8. Backslashes and quotes stay."""
    out, i = [], 0
    while i < len(b):
        n = 1 if b[i] < 0x80 else 2 if 0xc2 <= b[i] < 0xe0 else 3 if 0xe0 <= b[i] < 0xf0 \
            else 4 if 0xf0 <= b[i] <= 0xf4 else 0
        try:
            ch = b[i:i + n].decode("utf-8") if n else None
        except UnicodeDecodeError:
            ch = None
        if ch is not None and len(ch) == 1 and not (ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f):
            out.append(ch)
            i += n
            continue
        out.append({0x0a: "\\n", 0x09: "\\t", 0x0d: "\\r"}.get(b[i], "\\x%02x" % b[i]))
        i += 1
    return "".join(out)


# Raw control bytes a terminal would act on: C0 but tab and newline (the JSON indents
# with tabs), DEL, C1 (UTF-8 encoded).
RAW_CONTROLS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def test_hostile():
    """File names and config values are the host's, maybe an attacker's: C1 controls
    (U+009B is a CSI), ESC, BEL, quotes, newlines, bytes that are not UTF-8. --json stays
    UTF-8 JSON with unique keys; the text stays one line per check, with no raw control."""
    host = make_host()
    generate(host)
    cdi = (host + "/etc/cdi/").encode()
    utf8_name = b'c1\xc2\x9b[2J"q\\ \n[FAIL] forged.json'  # valid UTF-8, hostile
    bad_name = b"bad\xff\xc2\x85\x1b[31m.json"  # not UTF-8
    for name in (utf8_name, bad_name):
        with open(cdi + name, "wb") as f:
            f.write(b"{ not json")
    unit = "[Service]\nExecStart=/usr/bin/containerd\n"
    write(host, "/lib/systemd/system/containerd.service", unit)
    dropin = b"/etc/systemd/system/containerd.service.d/x\xc2\x9b\n[ ok ] y\xff.conf"
    value = b'1\xc2\x85"\x1b[31m\x07\xfe'
    os.makedirs(os.path.dirname(host.encode() + dropin), exist_ok=True)
    with open(host.encode() + dropin, "wb") as f:
        f.write(b"[Service]\nLimitMEMLOCK=" + value + b"\n")
    crio_dir = b'/x\xc2\x9b"y\xfe'
    with open(write(host, "/etc/crio/crio.conf", ""), "wb") as f:
        f.write(b'[crio.runtime]\ncdi_spec_dirs = ["' + crio_dir.replace(b'"', b'\\"')
                + b'"]\n')

    rc, out, err = doctor("--json", "--host-root", host, raw=True)
    ok(not RAW_CONTROLS.search(out) and b"\\u009b" in out,
       "hostile names: no raw control byte in --json (C1 as \\u009b)",
       repr(RAW_CONTROLS.findall(out)[:5]))
    j = parse_strict(out, ("hostile",))
    ok(j is not None, "hostile names: --json is UTF-8 JSON with unique keys",
       out[:300].decode("utf-8", "replace") + err.decode("utf-8", "replace"))
    files = {f["file"]: f for d in check(j, "spec_dirs")["data"].get("dirs", [])
             for f in d["files"]}
    ok(utf8_name.decode() in files and files[utf8_name.decode()]["error"],
       "a UTF-8 file name with C1, quotes and a newline comes back byte for byte",
       show(sorted(files)))
    ok(escaped(bad_name) in files, "a file name that is not UTF-8 comes back escaped",
       show(sorted(files)))
    u = check(j, "containerd.unit")
    ok(u["status"] == "warn" and u["data"].get("limit_memlock") == escaped(value)
       and escaped(dropin + b":2: LimitMEMLOCK=" + value) in u["message"]
       and u["data"].get("dropins") == [escaped(dropin)],
       "a hostile LimitMEMLOCK value and drop-in name: escaped in data and message", show(u))
    c = check(j, "crio.config")
    ok(c["data"].get("cdi_spec_dirs") == [escaped(crio_dir)],
       "a hostile CRI-O config value: escaped", show(c))

    rc2, text, err = doctor("--host-root", host, raw=True)
    lines = text.split(b"\n")
    ok(not RAW_CONTROLS.search(text) and rc2 == rc,
       "hostile names: no raw control byte in the text", repr(RAW_CONTROLS.findall(text)[:5]))
    ok(len([x for x in lines if x.startswith(b"[")]) == len(j["checks"])
       and not any(x.startswith((b"[ ok ] y", b"[FAIL] forged")) for x in lines),
       "hostile names: one text line per check, none forged", text.decode("utf-8", "replace"))
    want = ("[WARN] containerd.unit: " + escaped(dropin + b":2: LimitMEMLOCK=" + value)).encode()
    ok(any(x.startswith(want) for x in lines), "the text escapes as common/quote.c does",
       f"want {want!r}")


def test_usage():
    for args, needle in ((["--bogus"], "unknown"), (["--mr-size", "0"], "--mr-size"),
                         (["--mr-size", "unlimited"], "--mr-size"),
                         (["--mr-size", "2T"], "--mr-size"), (["--mr-size"], "needs a value"),
                         (["--host-root", "rel"], "absolute"),
                         (["--host-root", "/nonexistent-dir"], "not a directory"),
                         (["--spec-dir", "/a/../b"], "'..'"), (["--kind", "x"], "kind"),
                         (["extra"], "unexpected argument")):
        rc, out, err = doctor(*args)
        ok(rc == 2 and needle in err and len(err.splitlines()) == 1 and out == "",
           f"doctor {' '.join(args)}: exit 2, one line", f"rc={rc} err={err!r}")
    rc, out, err = doctor("--help")
    ok(rc == 0 and out.startswith("Usage: rdma-cdi doctor") and "--host-root" in out
       and "--mr-size" in out and err == "", "doctor --help: usage on stdout, exit 0", out)


try:
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (mknod, setpriv)")
        sys.exit(0)
    test_this_machine()
    test_json_shape()
    test_devices_and_nodes()
    test_sysfs_root()
    test_container()
    test_modules()
    test_memlock()
    test_containerd()
    test_containerd_imports()
    test_containerd_unit()
    test_crio()
    test_netns_isolation()
    test_spec()
    test_hostile()
    test_usage()
    ok(not fixless, "every failure of every run above carries a fix", fixless[:5])
    ok(not bad_json, "every --json of every run above is UTF-8 JSON, each key once",
       bad_json[:5])
finally:
    for d in tmpdirs:
        shutil.rmtree(d, ignore_errors=True)
sys.exit(T.done())
