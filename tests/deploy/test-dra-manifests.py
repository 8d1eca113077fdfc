#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The DRA driver's Kubernetes manifests are complete and agree with `rdma-cdi dra`.

  test-dra-manifests.py --source-root DIR --rdma-cdi BIN    (TAP on stdout)

Files: deploy/kubernetes/dra/ (the base), overlays/dra-*/ and examples/dra-*.yaml. Checked:
every file parses; the RBAC is exactly resourceslices list/watch/create/update/delete,
resourceclaims get (what the driver calls), bound to the DaemonSet's ServiceAccount, whose token is
mounted, plus a Role in "default" (where the API server keeps Events about a Node) granting
events create and nothing else, bound to that ServiceAccount; the DaemonSet runs `rdma-cdi dra` with flags of its contract (and of its --help
once the command is built), the node name from the downward API, every path a flag names
mounted from the same host path (the kubelet dials the plugin socket by the name the
driver gives it), unprivileged as the device plugin; it never shares a node with the
device plugin's DaemonSet; each config passes `rdma-cdi config check`, and its pools and
the DeviceClasses correspond one to one (the CEL selects driver and pool, the
extendedResourceName is the pool's); the example claim template aligns its two requests
on pcieRoot and the example Pod uses it; the kustomizations build (where kustomize is).
"""
import argparse
import importlib.util
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402

_spec = importlib.util.spec_from_file_location("manifests", os.path.join(HERE,
                                                                          "test-manifests.py"))
M = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(M)

# `rdma-cdi dra`'s options (issue 9 item 1): what the DaemonSet may pass.
DRA_FLAGS = {"--driver-name", "--node-name", "--registry-dir", "--plugin-dir", "--kubeconfig",
             "--rescan-interval", "--host-root", "--sysfs-root", "--dev-root", "--spec-dir",
             "--config", "--kind", "--with-mad", "--hook-path", "--memlock", "--log-level",
             "--log-format", "--metrics-address"}
DRA_DEFAULTS = {"--driver-name": "rdma.example",
                "--registry-dir": "/var/lib/kubelet/plugins_registry",
                "--spec-dir": "/var/run/cdi"}
PLUGIN_ROOT = "/var/lib/kubelet/plugins"
# The minimal RBAC of a node DRA driver: (API group, resource, verb).
RBAC = {("resource.k8s.io", "resourceslices", v)
        for v in ("list", "watch", "create", "update", "delete")} | \
    {("resource.k8s.io", "resourceclaims", "get")}
# The Node events (dra/events.h): created in "default", never read or changed.
EVENTS_RBAC = {("", "events", "create")}
EVENTS_NAMESPACE = "default"
DRA_NODE_LABEL = "rdma.example/dra"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
CEL = re.compile(r'device\.driver == "([^"]+)" && device\.attributes\["([^"]+)"\]\.pool == '
                 r'"([^"]+)"$')


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def by_kind(objs, kind):
    return [o for o in objs if o.get("kind") == kind]


def rbac_rules(role):
    """The rule set of a ClusterRole, and what makes it not plain (wildcards, names)."""
    got, odd = set(), []
    for r in role.get("rules") or []:
        extra = set(r) - {"apiGroups", "resources", "verbs"}
        if extra:
            odd.append("rule with %s" % sorted(extra))
        for g in r.get("apiGroups") or []:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    if "*" in (g, res, v):
                        odd.append("wildcard in %s" % r)
                    got.add((g, res, v))
    return got, odd


def check_events_rbac(tap, base, sa, nsname):
    """The Role for the Node events: in "default", events create only, bound to the pod's
    ServiceAccount by a RoleBinding of the same namespace."""
    roles, rbs = by_kind(base, "Role"), by_kind(base, "RoleBinding")
    if not tap.ok(len(roles) == 1 and len(rbs) == 1, "dra/ has one Role and one RoleBinding "
                  "(the Node events)", (len(roles), len(rbs))):
        return
    role, rb = roles[0], rbs[0]
    got, odd = rbac_rules(role)
    tap.ok(role["metadata"].get("namespace") == EVENTS_NAMESPACE and got == EVENTS_RBAC and
           not odd, "the Role is exactly events create, in the namespace default",
           "%s: extra %s, missing %s %s" % (role["metadata"].get("namespace"),
                                            sorted(got - EVENTS_RBAC),
                                            sorted(EVENTS_RBAC - got), odd))
    tap.ok(rb["metadata"].get("namespace") == EVENTS_NAMESPACE and
           rb.get("roleRef") == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": role["metadata"]["name"]} and
           rb.get("subjects") == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                   "namespace": nsname}],
           "the RoleBinding gives that Role to the ServiceAccount only", rb)


def cel_of(dc):
    """(driver, attribute domain, pool) a DeviceClass's one CEL selector names, or None."""
    sels = (dc.get("spec") or {}).get("selectors") or []
    if len(sels) != 1:
        return None
    expr = " ".join((((sels[0] or {}).get("cel") or {}).get("expression") or "").split())
    m = CEL.match(expr)
    return m.groups() if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--rdma-cdi", required=True)
    a = ap.parse_args()
    tap = Tap()
    kdir = os.path.join(a.source_root, "deploy", "kubernetes")

    # 1. The files parse.
    files = {}
    for dirpath, _, names in sorted(os.walk(kdir)):
        for f in sorted(names):
            rel = os.path.relpath(os.path.join(dirpath, f), kdir)
            if not (f.endswith((".yaml", ".yml")) and M.is_dra(rel)) or M.is_canary(rel):
                continue
            try:
                objs = load(os.path.join(kdir, rel))
                good = bool(objs) and all(isinstance(o, dict) for o in objs)
                tap.ok(good, "%s parses as YAML mappings" % rel)
                files[rel] = objs if good else []
            except yaml.YAMLError as e:
                tap.ok(False, "%s parses as YAML" % rel, str(e))
                files[rel] = []
    base = [o for rel, objs in files.items() if rel.startswith("dra/") for o in objs]
    if not tap.ok(base, "deploy/kubernetes/dra/ has manifests"):
        return tap.done()
    for rel, objs in files.items():
        for o in objs:
            if o.get("kind") == "Kustomization" or "apiVersion" not in o:
                continue
            name = (o.get("metadata") or {}).get("name")
            tap.ok(isinstance(name, str) and M.DNS1123.match(name) and len(name) <= 63,
                   "%s %s: metadata.name %r is a DNS-1123 name" % (rel, o.get("kind"), name))

    one = {}
    for kind in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                 "DaemonSet"):
        found = by_kind(base, kind)
        one[kind] = found[0] if len(found) == 1 else None
    if not tap.ok(all(one.values()), "dra/ has one Namespace, ServiceAccount, ClusterRole, "
                  "ClusterRoleBinding, ConfigMap and DaemonSet",
                  {k: len(by_kind(base, k)) for k in one}):
        return tap.done()
    ns, sa, role, crb, cm, ds = (one[k] for k in ("Namespace", "ServiceAccount", "ClusterRole",
                                                 "ClusterRoleBinding", "ConfigMap",
                                                 "DaemonSet"))
    nsname = ns["metadata"]["name"]
    dp_objs = load(os.path.join(kdir, "device-plugin", "namespace.yaml")) + \
        load(os.path.join(kdir, "device-plugin", "daemonset.yaml"))
    dp_ns, dp_ds = by_kind(dp_objs, "Namespace")[0], by_kind(dp_objs, "DaemonSet")[0]
    tap.ok(ns == dp_ns, "the Namespace is the device plugin's, identical (applying both bases "
           "changes nothing)", "%s vs %s" % (ns, dp_ns))
    tap.ok(all(o["metadata"].get("namespace") == nsname for o in (sa, cm, ds)),
           "ServiceAccount, ConfigMap and DaemonSet live in the namespace %s" % nsname)

    # 2. RBAC: exactly the minimal set, bound to the pod's service account.
    got, odd = rbac_rules(role)
    tap.ok(got == RBAC and not odd, "the ClusterRole is exactly resourceslices list/watch/"
           "create/update/delete, resourceclaims get",
           "extra %s, missing %s %s" % (sorted(got - RBAC), sorted(RBAC - got), odd))
    tap.ok(crb.get("roleRef") == {"apiGroup": "rbac.authorization.k8s.io",
                                  "kind": "ClusterRole", "name": role["metadata"]["name"]}
           and crb.get("subjects") == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                        "namespace": nsname}],
           "the ClusterRoleBinding gives that role to the ServiceAccount only", crb)
    check_events_rbac(tap, base, sa, nsname)
    pod = M.Pod(ds)
    ps = pod.spec
    tap.ok(ps.get("serviceAccountName") == sa["metadata"]["name"] and
           ps.get("automountServiceAccountToken") is not False and
           sa.get("automountServiceAccountToken") is not False,
           "the pod runs as that ServiceAccount, its token mounted (in-cluster credentials)")

    # 3. The DaemonSet's pod.
    sel = (ds["spec"].get("selector") or {}).get("matchLabels") or {}
    labels = ds["spec"]["template"]["metadata"].get("labels") or {}
    tap.ok(sel and all(labels.get(k) == v for k, v in sel.items()),
           "DaemonSet selector %s matches the pod template's labels" % sel)
    dp_sel = dp_ds["spec"]["selector"]["matchLabels"]
    dp_labels = dp_ds["spec"]["template"]["metadata"]["labels"]
    tap.ok(not all(dp_labels.get(k) == v for k, v in sel.items()) and
           not all(labels.get(k) == v for k, v in dp_sel.items()),
           "its selector and the device plugin's DaemonSet's select only their own pods")
    tap.ok(ps.get("priorityClassName") == "system-node-critical",
           "priorityClassName system-node-critical")
    tap.ok(any(t.get("operator") == "Exists" for t in ps.get("tolerations") or []),
           "tolerations let it run on tainted GPU/RDMA nodes")
    version = M.run([a.rdma_cdi, "--version"]).stdout.split()[1]
    for role_, c in pod.containers():
        n = c.get("name")
        tap.ok(c.get("image") == "localhost/rdma-cdi:" + version,
               "%s container %s: the image build.sh makes, localhost/rdma-cdi:%s"
               % (role_, n, version), c.get("image"))
        ok, res = M.resources_ok(c.get("resources") or {})
        tap.ok(ok, "%s container %s: cpu and memory requests, memory within its limit, no CPU "
               "limit" % (role_, n), res)
        sc = c.get("securityContext") or {}
        caps = sc.get("capabilities") or {}
        tap.ok(sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False
               and "ALL" in (caps.get("drop") or []) and not caps.get("add")
               and sc.get("readOnlyRootFilesystem") is True,
               "%s container %s: unprivileged, every capability dropped, read-only root, as "
               "the device plugin" % (role_, n), sc)
        for m in c.get("volumeMounts") or []:
            tap.ok(m["name"] in pod.volumes, "%s container %s: mount %s names a volume"
                   % (role_, n, m["mountPath"]))
    mounted = {m["name"] for _, c in pod.containers() for m in c.get("volumeMounts") or []}
    tap.ok(mounted == set(pod.volumes), "every volume is mounted somewhere",
           sorted(set(pod.volumes) ^ mounted))

    dra = [c for c in ps.get("containers") or [] if (c.get("command") or [""])[0] ==
           "/usr/bin/rdma-cdi" and (c.get("args") or [""])[0] == "dra"]
    if not tap.ok(len(dra) == 1, "one container runs rdma-cdi dra"):
        return tap.done()
    dc = dra[0]
    pos, fl = M.parse_args(dc["args"])
    tap.ok(pos == ["dra"], "dra args: only flags after 'dra'", pos)
    tap.ok(set(fl) <= DRA_FLAGS, "every flag is one of rdma-cdi dra's (issue 9)",
           sorted(set(fl) - DRA_FLAGS))
    help_flags, help_text = M.help_flags([a.rdma_cdi, "dra"])
    if help_flags:
        tap.ok(set(fl) <= help_flags, "every flag is in `rdma-cdi dra --help`",
               sorted(set(fl) - help_flags))
    else:
        tap.skip("the flags are in `rdma-cdi dra --help`",
                 "this rdma-cdi has no dra command yet: %s" % help_text.strip()[:200])
    M.check_metrics_liveness(tap, dc, fl, "dra", a.source_root)
    valued = [f for f in fl if f not in ("--with-mad",)]
    tap.ok(all(fl[f] for f in valued), "every flag that takes a value has one", fl)

    env = {e.get("name"): e for e in dc.get("env") or []}
    node_src = (((env.get("NODE_NAME") or {}).get("valueFrom") or {}).get("fieldRef") or {})
    tap.ok(node_src.get("fieldPath") == "spec.nodeName" and
           fl.get("--node-name") in (None, "$(NODE_NAME)"),
           "the node name is $NODE_NAME from the downward API (spec.nodeName)", env)
    driver = fl.get("--driver-name") or DRA_DEFAULTS["--driver-name"]
    tap.ok(M.DNS1123.match(driver) and len(driver) <= 63,
           "driver name %s is a DNS subdomain of at most 63 characters" % driver)

    def same_host_path(path, what, writable=True):
        hp, m = pod.host_path_of(dc, path)
        tap.ok(hp == path and m is not None and (not writable or not m.get("readOnly")),
               "%s %s is the host's own %s%s" % (what, path, path,
                                                ", writable" if writable else ""),
               "%s via %s" % (hp, m))

    same_host_path(fl.get("--spec-dir") or DRA_DEFAULTS["--spec-dir"], "--spec-dir")
    same_host_path(fl.get("--registry-dir") or DRA_DEFAULTS["--registry-dir"], "--registry-dir")
    plugin_dir = fl.get("--plugin-dir") or "%s/%s" % (PLUGIN_ROOT, driver)
    same_host_path(plugin_dir, "--plugin-dir (the kubelet dials <plugin-dir>/dra.sock)")
    host_root = fl.get("--host-root")
    tap.ok(host_root and host_root != "/", "--host-root names the host's mount point")
    for d in ("sys", "dev"):
        hp, mt = pod.host_path_of(dc, os.path.join(host_root or "/", d))
        tap.ok(hp == "/" + d and mt is not None and mt.get("readOnly") is True,
               "--host-root %s: %s is the host's /%s, read-only" % (host_root, d, d),
               "%s via %s" % (hp, mt))
    hook = fl.get("--hook-path")
    init = [c for c in ps.get("initContainers") or []
            if (c.get("command") or [""])[0] == "/usr/bin/rdma-cdi-node"]
    if tap.ok(hook and os.path.isabs(hook) and len(init) == 1,
              "--hook-path %s is a host path an init container installs" % hook):
        _, ifl = M.parse_args(init[0].get("args") or [])
        ihp, imt = pod.host_path_of(init[0], ifl.get("--to") or "/nonexistent")
        bhp, bmt = pod.host_path_of(dc, os.path.join(host_root or "/", hook.lstrip("/")))
        tap.ok(ihp and M.under(hook, ihp) and imt and not imt.get("readOnly") and
               bhp == hook and bmt and bmt.get("readOnly") is True,
               "the init container installs into the host's %s; the driver sees the hook at "
               "--host-root's %s (read-only)" % (ihp, hook), "%s %s / %s %s"
               % (ihp, imt, bhp, bmt))
    cfg_path = fl.get("--config")
    if tap.ok(cfg_path, "--config names the config file"):
        mt = pod.mount_for(dc, cfg_path)
        vol = pod.volumes.get(mt["name"]) if mt else None
        tap.ok(mt and vol and (vol.get("configMap") or {}).get("name") ==
               cm["metadata"]["name"] and not mt.get("subPath") and mt.get("readOnly") and
               os.path.dirname(cfg_path) == mt["mountPath"] and
               os.path.basename(cfg_path) in (cm.get("data") or {}),
               "--config %s is the key of the ConfigMap %s, mounted as a directory"
               % (cfg_path, cm["metadata"]["name"]), mt)

    # 4. Never on the same node as the device plugin.
    nsel = ps.get("nodeSelector") or {}
    dp_terms = ((((dp_ds["spec"]["template"]["spec"].get("affinity") or {}).get(
        "nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        .get("nodeSelectorTerms") or [])

    def excludes(term, key, value):
        return any(e.get("key") == key and ((e.get("operator") == "NotIn" and
                                             value in (e.get("values") or [])) or
                                            e.get("operator") == "DoesNotExist")
                   for e in term.get("matchExpressions") or [])

    dra_value = nsel.get(DRA_NODE_LABEL)
    tap.ok(dra_value is not None and dp_terms and
           all(excludes(t, DRA_NODE_LABEL, dra_value) for t in dp_terms),
           "the DRA DaemonSet needs %s=%s, which every term of the device plugin's required "
           "node affinity excludes: never both on one node" % (DRA_NODE_LABEL, dra_value),
           "%s vs %s" % (nsel, dp_terms))

    # 5. Configs and DeviceClasses: one class per pool, selecting it.
    configs = [("dra/configmap.yaml", (cm.get("data") or {}).get("config.yaml"),
                by_kind(base, "DeviceClass"), None)]
    for rel in files:
        if rel.startswith("overlays/dra-") and rel.endswith("/config.yaml"):
            odir = os.path.dirname(rel)
            with open(os.path.join(kdir, rel)) as f:
                text = f.read()
            configs.append((rel, text, None, odir))
    base_classes = {}
    for where, text, classes, odir in configs:
        try:
            c = yaml.safe_load(text or "")
        except yaml.YAMLError as e:
            tap.ok(False, "%s: valid YAML" % where, str(e))
            continue
        pools = [p.get("resourceName") for p in (c or {}).get("pools") or []
                 if isinstance(p, dict)]
        tap.ok(isinstance(c, dict) and c.get("specDir") == (fl.get("--spec-dir") or
                                                           DRA_DEFAULTS["--spec-dir"])
               and pools, "%s: pools %s, specDir the DaemonSet's --spec-dir" % (where, pools))
        tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "rdma-cdi-dra-%d.yaml" % os.getpid())
        with open(tmp, "w") as f:
            f.write(text)
        r = M.run([a.rdma_cdi, "config", "check", tmp])
        os.unlink(tmp)
        tap.ok(r.returncode == 0, "%s: rdma-cdi config check accepts it" % where,
               r.stdout + r.stderr)
        if odir is not None:
            built, err = M.kustomize_build(os.path.join(kdir, odir))
            if built is None:
                tap.skip("%s: its DeviceClasses (kustomize build)" % odir, err)
                continue
            tap.ok(not err, "%s builds" % odir, err)
            classes = by_kind(built, "DeviceClass")
            bds = by_kind(built, "DaemonSet")
            tap.ok(len(bds) == 1 and (bds[0]["spec"]["template"]["spec"].get("nodeSelector")
                                      or {}).get(DRA_NODE_LABEL) == dra_value,
                   "%s: its DaemonSet still needs %s=%s" % (odir, DRA_NODE_LABEL, dra_value))
            cms = by_kind(built, "ConfigMap")
            tap.ok(len(cms) == 1 and cms[0]["metadata"]["name"] == cm["metadata"]["name"] and
                   yaml.safe_load(cms[0]["data"].get("config.yaml") or "") == c,
                   "%s: the ConfigMap the DaemonSet mounts holds this config" % odir)
        named = {}
        for dc_ in classes:
            sel_ = cel_of(dc_)
            name = dc_["metadata"]["name"]
            ext = (dc_.get("spec") or {}).get("extendedResourceName")
            good = (sel_ is not None and sel_[0] == driver and sel_[1] == driver and
                    sel_[2] in pools and ext == sel_[2] and dc_.get("apiVersion") ==
                    "resource.k8s.io/v1")
            tap.ok(good, "%s: DeviceClass %s selects driver %s, pool %s of the config, and "
                   "serves the extended resource %s" % (where, name, driver,
                                                        sel_[2] if sel_ else None, ext),
                   "CEL %s, pools %s" % (sel_, pools))
            if sel_:
                named.setdefault(sel_[2], []).append(name)
        tap.ok(sorted(named) == sorted(pools) and all(len(v) == 1 for v in named.values()),
               "%s: exactly one DeviceClass per pool" % where, "%s vs %s" % (named, pools))
        if odir is None:
            base_classes = {dc_["metadata"]["name"]: dc_ for dc_ in classes}
    if M.kustomize_cmd():
        built, err = M.kustomize_build(os.path.join(kdir, "dra"))
        tap.ok(not err and sorted(o["kind"] for o in built) ==
               sorted(o["kind"] for o in base if o.get("kind") != "Kustomization"),
               "dra/ builds into its objects", err)
    else:
        tap.skip("dra/ builds", "neither kustomize nor kubectl is installed")

    # 6. The examples: the claim template aligns a GPU and an HCA; the pod uses it; the
    # device plugin's example pod is served by a DeviceClass too.
    ex = [o for rel, objs in files.items() if rel.startswith("examples/") for o in objs]
    rcts = by_kind(ex, "ResourceClaimTemplate")
    if tap.ok(len(rcts) == 1, "one example ResourceClaimTemplate"):
        t = rcts[0]
        dev = ((t.get("spec") or {}).get("spec") or {}).get("devices") or {}
        reqs = {r.get("name"): (r.get("exactly") or {}) for r in dev.get("requests") or []}
        classes_ = sorted(r.get("deviceClassName") for r in reqs.values())
        ours = [n for n, r in reqs.items() if r.get("deviceClassName") in base_classes]
        gpu = [n for n, r in reqs.items() if r.get("deviceClassName") == "gpu.nvidia.com"]
        tap.ok(t.get("apiVersion") == "resource.k8s.io/v1" and len(reqs) == 2 and
               len(ours) == 1 and len(gpu) == 1 and
               all(r.get("count", 1) == 1 for r in reqs.values()),
               "the template requests one GPU (gpu.nvidia.com) and one HCA of a DeviceClass "
               "of dra/", classes_)
        cons = dev.get("constraints") or []
        tap.ok(len(cons) == 1 and cons[0].get("matchAttribute") == PCIE_ROOT and
               sorted(cons[0].get("requests") or []) == sorted(reqs),
               "its constraint names both requests and matches %s" % PCIE_ROOT, cons)
        pods = [p for p in by_kind(ex, "Pod")]
        tap.ok(len(pods) == 1, "one example Pod beside it")
        for p in pods:
            prc = {r.get("name"): r for r in p["spec"].get("resourceClaims") or []}
            used = {c_.get("name") for ctr in p["spec"].get("containers") or []
                    for c_ in ((ctr.get("resources") or {}).get("claims") or [])}
            tap.ok(p["metadata"].get("namespace") == t["metadata"].get("namespace") and
                   any(r.get("resourceClaimTemplateName") == t["metadata"]["name"]
                       for r in prc.values()) and used and used <= set(prc),
                   "the Pod claims from the template and its container uses the claim",
                   "%s %s" % (prc, used))
    dp_pod = load(os.path.join(kdir, "examples", "rdma-pod.yaml"))[0]
    asked = {k for ctr in dp_pod["spec"]["containers"]
             for k in ((ctr.get("resources") or {}).get("limits") or {}) if "/" in k}
    served = {(d.get("spec") or {}).get("extendedResourceName") for d in base_classes.values()}
    tap.ok(asked and asked <= served, "the device plugin's example pod (%s) is served by a "
           "DeviceClass of dra/ unchanged" % ", ".join(sorted(asked)), served)
    check_admission_policy(tap, ex, sa, fl.get("--driver-name") or DRA_DEFAULTS["--driver-name"])
    return tap.done()


def check_admission_policy(tap, ex, sa, driver):
    """The example ValidatingAdmissionPolicy that pins the driver to its own node's slices:
    bound with Deny, on every write of resourceslices, for exactly the DaemonSet's
    ServiceAccount, comparing the slices with the token's node name and the driver's name.
    (Its CEL is not evaluated here: no CEL interpreter; the API server checks it on apply.)"""
    vaps, bindings = by_kind(ex, "ValidatingAdmissionPolicy"), by_kind(
        ex, "ValidatingAdmissionPolicyBinding")
    if not tap.ok(len(vaps) == 1 and len(bindings) == 1, "one example "
                  "ValidatingAdmissionPolicy and its binding"):
        return
    vap, b = vaps[0], bindings[0]
    spec = vap.get("spec") or {}
    tap.ok(b["spec"].get("policyName") == vap["metadata"]["name"] and
           b["spec"].get("validationActions") == ["Deny"] and spec.get("failurePolicy") == "Fail",
           "the binding applies it with Deny; failurePolicy Fail", b.get("spec"))
    rules = (spec.get("matchConstraints") or {}).get("resourceRules") or []
    tap.ok(any(r.get("apiGroups") == ["resource.k8s.io"] and "resourceslices" in r.get(
        "resources", []) and {"CREATE", "UPDATE", "DELETE"} <= set(r.get("operations", []))
        for r in rules), "it matches every create, update and delete of resourceslices", rules)
    user = "system:serviceaccount:%s:%s" % (sa["metadata"].get("namespace"),
                                            sa["metadata"]["name"])
    conds = [c.get("expression", "") for c in spec.get("matchConditions") or []]
    tap.ok(len(conds) == 1 and ('== "%s"' % user) in conds[0],
           "it holds exactly the driver's ServiceAccount %s" % user, conds)
    text = " ".join(str(v.get("expression", "")) for v in (spec.get("variables") or []) +
                    (spec.get("validations") or []))
    tap.ok("authentication.kubernetes.io/node-name" in text and "spec.nodeName" in text and
           "oldObject" in text and ("'%s'" % driver) in text,
           "it compares the slices (old and new) with the token's node name and the driver "
           "name %s" % driver, text)


if __name__ == "__main__":
    sys.exit(main())
