#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes manifests in deploy/kubernetes are complete and agree with the binaries.

  test-manifests.py --source-root DIR --rdma-cdi BIN --rdma-cdi-node BIN    (TAP on stdout)

Every manifest parses; each object has what the API server requires; the DaemonSet's
selector matches its pods; every container has an image, a command and bounded resources;
every path a bridge flag points at is a mount of the host path the flag means (--spec-dir,
the plugin dir, --host-root's sys and dev, the --hook-path directory the init container
fills, the --config ConfigMap); every flag used exists in the binaries' --help; the
config files use the issue-6 format; the kustomizations reference what exists and,
where kustomize is installed (`kustomize` or `kubectl kustomize`), build; --metrics-address
has its containerPort. The DRA driver's files (dra/, overlays/dra-*, examples/dra-*) are
test-dra-manifests.py's.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

DNS1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
RESOURCE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
CDI_KIND = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$")
# The config format of issue 6 (rdma-cdi.yaml(5)).
CONFIG_KEYS = {"kind", "specDir", "withMad", "memlock", "pools"}
POOL_KEYS = {"resourceName", "mode", "sharedSlots", "ncclEnv", "selectors"}
SELECTOR_KEYS = {"linkLayers", "vendors", "deviceIDs", "drivers", "names", "netdevs",
                 "pciAddresses", "pfNames", "vf", "numaNodes"}
# Flags the bridge gains in parallel work (issue 6 item 1, issue 7 item 1): named in the
# diagnostics so a failure before they land is not mistaken for a manifest bug.
PENDING_FLAGS = {"--config": "issue 6 item 1", "--host-root": "issue 7 item 1"}


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def help_flags(cmd):
    """Flags a --help page names, and the page."""
    r = run(cmd + ["--help"])
    text = r.stdout + r.stderr
    return (set(re.findall(r"--[a-z][a-z0-9-]*", text)) if r.returncode == 0 else set()), text


def quantity(q, cpu):
    """Kubernetes quantity -> float (cores or bytes)."""
    q = str(q)
    units = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1 << 10, "Mi": 1 << 20,
             "Gi": 1 << 30}
    m = re.fullmatch(r"([0-9.]+)(m|k|M|G|Ki|Mi|Gi|)", q)
    if not m or (m.group(2) == "m" and not cpu):
        raise ValueError("bad quantity %r" % q)
    return float(m.group(1)) * units[m.group(2)]


def parse_args(args):
    """['bridge', '--a', 'x', '--b'] -> {'--a': 'x', '--b': None}; positional first."""
    flags, pos, i = {}, [], 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a.split("=", 1)
                flags[k] = v
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                flags[a] = args[i + 1]
                i += 1
            else:
                flags[a] = None
        else:
            pos.append(a)
        i += 1
    return pos, flags


def is_dra(rel):
    """A file of the DRA driver's deployment (test-dra-manifests.py checks those)."""
    return rel.startswith(("dra/", "overlays/dra-")) or os.path.basename(rel).startswith("dra-")


def is_canary(rel):
    """A canary overlay (overlays/canary, overlays/dra-canary): a second DaemonSet made by
    nameSuffix and patches, which only a real kustomize renders; test-kustomize.py checks
    it rendered by Debian's kubectl."""
    return rel.startswith(("overlays/canary/", "overlays/dra-canary/"))


def is_monitoring(rel):
    """The Prometheus/Grafana bundle (monitoring/): test-monitoring.py checks it against
    the series the daemons export."""
    return rel.startswith("monitoring/")


def resources_ok(res):
    """CPU and memory requests, a memory limit at or above its request and no CPU limit (a
    node-critical agent is not throttled: the DaemonSets say why). (ok, what to show)."""
    try:
        ok = (0 < quantity(res["requests"]["cpu"], True) and
              0 < quantity(res["requests"]["memory"], False) <=
              quantity(res["limits"]["memory"], False))
        return ok and "cpu" not in res["limits"], res
    except (KeyError, TypeError, ValueError) as e:
        return False, "%s: %s" % (e, res)


def kustomize_cmd():
    """The command that builds a kustomization dir (DIR appended), or None."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def kustomize_build(d):
    """(objects, error): what `kustomize build d` makes; (None, reason) without kustomize."""
    cmd = kustomize_cmd()
    if not cmd:
        return None, "neither kustomize nor kubectl is installed"
    r = run(cmd + [d])
    if r.returncode != 0:
        return [], r.stderr.strip() or "exit %d" % r.returncode
    return [o for o in yaml.safe_load_all(r.stdout) if o], None


def under(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


class Pod:
    """The DaemonSet's pod template, with helpers to follow a path to its volume."""

    def __init__(self, ds):
        self.spec = ds["spec"]["template"]["spec"]
        self.volumes = {v["name"]: v for v in self.spec.get("volumes") or []}

    def containers(self):
        return [("init", c) for c in self.spec.get("initContainers") or []] + \
               [("main", c) for c in self.spec.get("containers") or []]

    def mount_for(self, c, path):
        """The mount that holds path in container c (the longest mountPath prefix)."""
        best = None
        for m in c.get("volumeMounts") or []:
            if under(path, m["mountPath"]) and (best is None or
                                                len(m["mountPath"]) > len(best["mountPath"])):
                best = m
        return best

    def host_path_of(self, c, path):
        """(host path, mount) that a path in container c resolves to, or (None, mount)."""
        m = self.mount_for(c, path)
        if not m:
            return None, None
        hp = (self.volumes.get(m["name"]) or {}).get("hostPath")
        if not hp:
            return None, m
        rel = os.path.relpath(path, m["mountPath"])
        return os.path.normpath(os.path.join(hp["path"], rel)) if rel != "." else hp["path"], m


def healthz_wait_sec(source_root):
    """How long /healthz waits for the daemon's loop (daemon/metrics.h), in seconds."""
    with open(os.path.join(source_root, "daemon", "metrics.h")) as f:
        m = re.search(r"#define METRICS_HEALTHZ_WAIT_MSEC ([0-9]+)", f.read())
    return int(m.group(1)) / 1000 if m else None


def check_metrics_liveness(tap, c, fl, what, source_root):
    """The daemon serves --metrics-address on a containerPort named metrics that is
    reachable from outside the pod, and its livenessProbe is GET /healthz on that port,
    with a timeout longer than /healthz waits for the loop."""
    maddr = fl.get("--metrics-address") or ""
    mport = re.search(r":([0-9]+)$", maddr)
    ports = [p for p in c.get("ports") or [] if mport and
             p.get("containerPort") == int(mport.group(1))]
    tap.ok(len(ports) == 1 and ports[0].get("name") == "metrics" and
           ports[0].get("protocol", "TCP") == "TCP" and
           not maddr.startswith(("127.", "[::1]")),
           "%s --metrics-address %s: reachable from outside the pod, its port a containerPort "
           "named metrics" % (what, maddr), c.get("ports"))
    probe = c.get("livenessProbe") or {}
    get = probe.get("httpGet") or {}
    target = [p for p in c.get("ports") or [] if get.get("port") is not None and
              get.get("port") in (p.get("name"), p.get("containerPort"))]
    tap.ok(get.get("path") == "/healthz" and target and target[0] in ports and
           get.get("scheme", "HTTP") == "HTTP" and not get.get("host"),
           "%s livenessProbe: GET /healthz on the port --metrics-address serves" % what, probe)
    wait = healthz_wait_sec(source_root)
    tap.ok(wait and (probe.get("timeoutSeconds") or 1) > wait,
           "%s livenessProbe: timeoutSeconds %s exceeds the %s s /healthz waits for the loop"
           % (what, probe.get("timeoutSeconds"), wait))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--rdma-cdi-node", required=True)
    a = ap.parse_args()
    tap = Tap()
    kdir = os.path.join(a.source_root, "deploy", "kubernetes")

    # 1. Everything parses; collect the objects.
    docs = {}   # path -> [objects]
    for dirpath, _, files in sorted(os.walk(kdir)):
        for f in sorted(files):
            if not f.endswith((".yaml", ".yml")):
                continue
            p = os.path.join(dirpath, f)
            rel = os.path.relpath(p, kdir)
            if is_dra(rel) or is_canary(rel) or is_monitoring(rel):
                continue
            try:
                with open(p) as fh:
                    objs = [d for d in yaml.safe_load_all(fh) if d is not None]
                good = objs and all(isinstance(d, dict) for d in objs)
                tap.ok(good, "%s parses as YAML mappings" % rel)
                docs[rel] = objs if good else []
            except yaml.YAMLError as e:
                tap.ok(False, "%s parses as YAML" % rel, str(e))
                docs[rel] = []
    if not docs:
        print("Bail out! no manifests under %s" % kdir)
        return 1

    def objects(kind):
        return [(rel, o) for rel, objs in docs.items() for o in objs if o.get("kind") == kind]

    # 2. API objects: apiVersion, kind, a valid metadata.name.
    api = [(rel, o) for rel, objs in docs.items() for o in objs
           if o.get("kind") not in (None, "Kustomization") and "apiVersion" in o]
    for rel, o in api:
        md = o.get("metadata") or {}
        tap.ok(isinstance(o.get("apiVersion"), str) and "/" in o["apiVersion"] or
               o.get("apiVersion") == "v1",
               "%s %s: apiVersion %s" % (rel, o.get("kind"), o.get("apiVersion")))
        tap.ok(isinstance(md.get("name"), str) and DNS1123.match(md["name"]) and
               len(md["name"]) <= 63,
               "%s %s: metadata.name %r is a DNS-1123 name" % (rel, o.get("kind"), md.get("name")))

    nss = objects("Namespace")
    dss = objects("DaemonSet")
    cms = objects("ConfigMap")
    if not (len(nss) == 1 and len(dss) == 1 and len(cms) == 1):
        print("Bail out! expected one Namespace, one DaemonSet, one ConfigMap: %d %d %d"
              % (len(nss), len(dss), len(cms)))
        return 1
    ns = nss[0][1]["metadata"]["name"]
    ds, cm = dss[0][1], cms[0][1]
    tap.ok(ds["metadata"].get("namespace") == ns and cm["metadata"].get("namespace") == ns,
           "DaemonSet and ConfigMap live in the namespace %s" % ns)
    tap.ok((nss[0][1]["metadata"].get("labels") or {}).get(
        "pod-security.kubernetes.io/enforce") == "privileged",
        "the namespace admits hostPath volumes (Pod Security level privileged)")

    # 3. The DaemonSet.
    sel = (ds["spec"].get("selector") or {}).get("matchLabels") or {}
    labels = ds["spec"]["template"]["metadata"].get("labels") or {}
    tap.ok(sel and all(labels.get(k) == v for k, v in sel.items()),
           "DaemonSet selector %s matches the pod template's labels" % sel, labels)
    pod = Pod(ds)
    ps = pod.spec
    tap.ok(ps.get("priorityClassName") == "system-node-critical",
           "priorityClassName system-node-critical")
    tap.ok(ps.get("nodeSelector"), "a nodeSelector restricts it to RDMA nodes")
    tap.ok(any(t.get("operator") == "Exists" for t in ps.get("tolerations") or []),
           "tolerations let it run on tainted GPU/RDMA nodes")
    node_flags = {}
    for sub in ("install", "probe"):
        node_flags[sub], _ = help_flags([a.rdma_cdi_node, sub])
    bridge_flags, bridge_help = help_flags([a.rdma_cdi, "bridge"])
    if not tap.ok(bridge_flags, "rdma-cdi bridge --help lists flags", bridge_help):
        return tap.done()

    mounted = set()
    for role, c in pod.containers():
        n = c.get("name")
        tap.ok(c.get("image") and (c.get("args") or c.get("command")),
               "%s container %s: image and command" % (role, n))
        ok, res = resources_ok(c.get("resources") or {})
        tap.ok(ok, "%s container %s: cpu and memory requests, memory within its limit, no CPU "
               "limit" % (role, n), res)
        sc = c.get("securityContext") or {}
        caps = sc.get("capabilities") or {}
        tap.ok(sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False
               and "ALL" in (caps.get("drop") or []) and not caps.get("add")
               and sc.get("readOnlyRootFilesystem") is True,
               "%s container %s: unprivileged, every capability dropped, read-only root"
               % (role, n), sc)
        for m in c.get("volumeMounts") or []:
            mounted.add(m["name"])
            tap.ok(m["name"] in pod.volumes,
                   "%s container %s: mount %s names a volume" % (role, n, m["mountPath"]))
        for probe in ("startupProbe",):
            if role != "main":
                continue
            cmd = ((c.get(probe) or {}).get("exec") or {}).get("command") or []
            pos, fl = parse_args(cmd[1:])
            good = (cmd[:1] == ["/usr/bin/rdma-cdi-node"] and pos == ["probe"]
                    and set(fl) <= node_flags["probe"] and node_flags["probe"])
            tap.ok(good, "%s: rdma-cdi-node probe with flags it knows %s"
                   % (probe, sorted(fl)), "%s vs %s" % (cmd, sorted(node_flags["probe"])))
            pd = fl.get("--plugin-dir")
            tap.ok(pd and pod.host_path_of(c, pd)[0] == "/var/lib/kubelet/device-plugins",
                   "%s probes the kubelet's plugin dir" % probe, pd)
            tap.ok((c[probe].get("timeoutSeconds") or 1) > int(fl.get("--timeout") or 5),
                   "%s: timeoutSeconds exceeds the probe's own --timeout" % probe)
    tap.ok(mounted == set(pod.volumes), "every volume is mounted somewhere",
           sorted(set(pod.volumes) - mounted))

    bridge = [c for c in ps.get("containers") or [] if (c.get("command") or [""])[0] ==
              "/usr/bin/rdma-cdi" and "bridge" in (c.get("args") or [])]
    if not tap.ok(len(bridge) == 1, "one container runs rdma-cdi bridge"):
        return tap.done()
    bc = bridge[0]
    pos, fl = parse_args(bc["args"])
    tap.ok(pos == ["bridge"], "bridge args: only flags after 'bridge'", pos)
    unknown = sorted(set(fl) - bridge_flags)
    tap.ok(not unknown, "every bridge flag the DaemonSet uses is in `rdma-cdi bridge --help`",
           "missing: %s%s" % (", ".join(unknown), "".join(
               "\n%s is expected from %s" % (f, PENDING_FLAGS[f]) for f in unknown
               if f in PENDING_FLAGS)))

    check_metrics_liveness(tap, bc, fl, "bridge", a.source_root)

    def writable_host_mount(c, path, host, what):
        hp, m = pod.host_path_of(c, path)
        tap.ok(hp == host and m is not None and not m.get("readOnly"),
               "%s %s is the host's %s, writable" % (what, path, host), "%s via %s" % (hp, m))

    spec_dir = fl.get("--spec-dir")
    tap.ok(spec_dir, "--spec-dir is given (the bridge's default may change; be explicit)")
    if spec_dir:
        writable_host_mount(bc, spec_dir, spec_dir, "--spec-dir")
    m = re.search(r"--plugin-dir\b(?:(?!--).)*?\(default\s+(/[^)\s;]+)", bridge_help, re.S)
    plugin_dir = fl.get("--plugin-dir") or (m.group(1) if m else None)
    tap.ok(plugin_dir, "the plugin dir is known (flag or --help default)", bridge_help)
    if plugin_dir:
        writable_host_mount(bc, plugin_dir, "/var/lib/kubelet/device-plugins", "plugin dir")
    host_root = fl.get("--host-root")
    tap.ok(host_root and host_root != "/", "--host-root names the host's mount point")
    if host_root:
        for d in ("sys", "dev"):
            hp, mt = pod.host_path_of(bc, os.path.join(host_root, d))
            tap.ok(hp == "/" + d and mt is not None and mt.get("readOnly") is True,
                   "--host-root %s: %s/%s is the host's /%s, read-only" % (host_root,
                                                                          host_root, d, d),
                   "%s via %s" % (hp, mt))
    hook = fl.get("--hook-path")
    tap.ok(hook and os.path.isabs(hook), "--hook-path is an absolute host path", hook)
    init = [c for c in ps.get("initContainers") or []
            if (c.get("command") or [""])[0] == "/usr/bin/rdma-cdi-node"]
    if hook and tap.ok(len(init) == 1, "an init container runs rdma-cdi-node install"):
        ic = init[0]
        ipos, ifl = parse_args(ic.get("args") or [])
        tap.ok(ipos == ["install"] and set(ifl) <= node_flags["install"] and
               node_flags["install"], "init container: rdma-cdi-node install with known flags",
               "%s vs %s" % (ic.get("args"), sorted(node_flags["install"])))
        to, frm = ifl.get("--to"), ifl.get("--from")
        hp, mt = pod.host_path_of(ic, to) if to else (None, None)
        tap.ok(hp is not None and mt is not None and not mt.get("readOnly")
               and under(hook, hp),
               "init container installs into the host's %s, which holds --hook-path %s"
               % (hp, hook), "%s via %s" % (hp, mt))
        # The image's bundle (build.sh's hook_dir) lands at the same path on the host.
        with open(os.path.join(a.source_root, "deploy", "image", "build.sh")) as f:
            bm = re.search(r"^hook_dir=(\S+)$", f.read(), re.M)
        bundle = bm.group(1) if bm else None
        tap.ok(frm == bundle and hp == bundle and hook == bundle + "/bin/rdma-cdi-hook",
               "--from, the host dir and --hook-path agree with the image's bundle %s "
               "(its loader path is fixed at build time)" % bundle,
               "from %s host %s hook %s" % (frm, hp, hook))
        if host_root and hp:
            hp2, mt2 = pod.host_path_of(bc, os.path.join(host_root, hp.lstrip("/")))
            tap.ok(hp2 == hp and mt2 is not None and mt2.get("readOnly") is True,
                   "the bridge sees the installed hook at --host-root's %s%s (read-only)"
                   % (host_root, hp))

    # 4. The config file: issue 6's format, consistent with the flags.
    cfg_path = fl.get("--config")
    tap.ok(cfg_path, "--config names the config file")
    if cfg_path:
        mt = pod.mount_for(bc, cfg_path)
        vol = pod.volumes.get(mt["name"]) if mt else None
        tap.ok(mt and vol and (vol.get("configMap") or {}).get("name") ==
               cm["metadata"]["name"] and not mt.get("subPath") and mt.get("readOnly")
               and os.path.dirname(cfg_path) == mt["mountPath"],
               "--config %s is in the ConfigMap's directory mount (no subPath: updates reach "
               "it)" % cfg_path, mt)
        tap.ok(os.path.basename(cfg_path) in (cm.get("data") or {}),
               "the ConfigMap has the key %s" % os.path.basename(cfg_path))

    have_check = run([a.rdma_cdi, "config", "--help"]).returncode == 0
    configs = [("ConfigMap", (cm.get("data") or {}).get("config.yaml"))]
    for rel in docs:
        if rel.startswith("overlays/") and rel.endswith("config.yaml"):
            with open(os.path.join(kdir, rel)) as f:
                configs.append((rel, f.read()))
    pool_names = set()
    for where, text in configs:
        try:
            c = yaml.safe_load(text or "")
        except yaml.YAMLError as e:
            tap.ok(False, "%s: config.yaml is valid YAML" % where, str(e))
            continue
        tap.ok(isinstance(c, dict) and set(c) <= CONFIG_KEYS and c.get("pools"),
               "%s: config keys are the issue-6 keys, with pools" % where,
               sorted(c) if isinstance(c, dict) else c)
        if not isinstance(c, dict):
            continue
        tap.ok(isinstance(c.get("kind"), str) and CDI_KIND.match(c["kind"]),
               "%s: kind %r is a CDI kind" % (where, c.get("kind")))
        tap.ok(c.get("specDir") == spec_dir,
               "%s: specDir %s is the DaemonSet's --spec-dir" % (where, c.get("specDir")))
        names = []
        for p in c.get("pools") or []:
            good = (isinstance(p, dict) and set(p) <= POOL_KEYS and
                    isinstance(p.get("resourceName"), str) and RESOURCE.match(p["resourceName"])
                    and p.get("mode", "exclusive") in ("exclusive", "shared")
                    and set(p.get("selectors") or {}) <= SELECTOR_KEYS
                    and ("sharedSlots" not in p or p.get("mode") == "shared"))
            tap.ok(good, "%s: pool %s is well-formed" % (where, p.get("resourceName")
                                                         if isinstance(p, dict) else p), p)
            if isinstance(p, dict):
                names.append(p.get("resourceName"))
        tap.ok(len(names) == len(set(names)), "%s: resource names are unique" % where, names)
        if where == "ConfigMap":
            pool_names = set(names)
        if have_check:
            tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                               "rdma-cdi-config-%d.yaml" % os.getpid())
            with open(tmp, "w") as f:
                f.write(text)
            r = run([a.rdma_cdi, "config", "check", tmp])
            os.unlink(tmp)
            tap.ok(r.returncode == 0, "%s: rdma-cdi config check accepts it" % where,
                   r.stdout + r.stderr)
        else:
            tap.skip("%s: rdma-cdi config check" % where,
                     "this rdma-cdi has no 'config check' yet (issue 6 item 1)")

    # 5. The example workload asks for a resource the ConfigMap defines.
    pods = objects("Pod")
    tap.ok(len(pods) == 1, "one example workload pod")
    for rel, p in pods:
        lims = [(c.get("resources") or {}).get("limits") or {} for c in p["spec"]["containers"]]
        asked = {k: v for l in lims for k, v in l.items() if "/" in k}
        tap.ok(asked == {"rdma.example/hca": 1}, "%s requests rdma.example/hca: 1" % rel, asked)
        tap.ok(set(asked) <= pool_names, "%s: the resource is a pool of the ConfigMap" % rel,
               "%s vs %s" % (sorted(asked), sorted(pool_names)))

    # 6. The image: one name for both containers, the version of this build.
    version = run([a.rdma_cdi, "--version"]).stdout.split()[1]
    images = {c["image"] for _, c in pod.containers()}
    tap.ok(images == {"localhost/rdma-cdi:" + version},
           "both containers run build.sh's default image localhost/rdma-cdi:%s" % version,
           images)

    # 7. Kustomizations reference what exists.
    for rel, objs in docs.items():
        for k in objs:
            if k.get("kind") != "Kustomization":
                continue
            base = os.path.dirname(os.path.join(kdir, rel))
            for r in k.get("resources") or []:
                p = os.path.normpath(os.path.join(base, r))
                tap.ok(os.path.isfile(p) or os.path.isfile(os.path.join(p, "kustomization.yaml")),
                       "%s: resource %s exists" % (rel, r))
            for img in k.get("images") or []:
                tap.ok(any(i.rsplit(":", 1)[0] == img.get("name") for i in images),
                       "%s: image override %s matches the containers' image" % (rel,
                                                                               img.get("name")))
            for g in k.get("configMapGenerator") or []:
                for f in g.get("files") or []:
                    tap.ok(os.path.isfile(os.path.join(base, f.split("=")[-1])),
                           "%s: configMapGenerator file %s exists" % (rel, f))
                tap.ok(g.get("behavior") != "replace" or
                       (g.get("name") == cm["metadata"]["name"] and
                        g.get("namespace", ns) == ns),
                       "%s: the generator replaces the base's ConfigMap" % rel)
                if g.get("behavior") == "replace":
                    tap.ok((k.get("generatorOptions") or {}).get("disableNameSuffixHash") is True,
                           "%s: no hash suffix (the bridge reloads the config in place)" % rel)
            for pt in k.get("patches") or []:
                tgt = pt.get("target") or {}
                tap.ok(tgt.get("kind") == "DaemonSet" and tgt.get("name") ==
                       ds["metadata"]["name"], "%s: patch targets the DaemonSet" % rel)
                for op in yaml.safe_load(pt.get("patch") or "[]") or []:
                    node, parts = ds, op["path"].strip("/").split("/")
                    for part in parts:
                        node = node.get(part) if isinstance(node, dict) else None
                    tap.ok(op["op"] != "replace" or node is not None,
                           "%s: patch path %s exists in the DaemonSet" % (rel, op["path"]))

    # 8. Every kustomization builds, into one Namespace, ConfigMap and DaemonSet.
    for rel, objs in docs.items():
        if not any(k.get("kind") == "Kustomization" for k in objs):
            continue
        built, err = kustomize_build(os.path.dirname(os.path.join(kdir, rel)))
        if built is None:
            tap.skip("%s builds" % rel, err)
            continue
        kinds = sorted(o.get("kind") for o in built)
        tap.ok(not err and kinds == ["ConfigMap", "DaemonSet", "Namespace"],
               "%s builds: %s" % (rel, ", ".join(kinds)), err)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
