#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every kustomization under deploy/kubernetes rendered by a real `kubectl kustomize`
(Debian 13's kubectl, unpacked by fetch-kubectl.sh; never the host's), the objects checked:

  test-kustomize.py --kubectl PATH --source-root DIR --rdma-cdi PATH   (TAP)

- each renders, and what its DaemonSets name (ConfigMaps, ServiceAccounts, the
  namespace) is in the same render or in the base it is applied beside;
- each DaemonSet: RollingUpdate with maxUnavailable a percentage and maxSurge 0,
  system-node-critical, no CPU limit on any container, a memory request at least the Rss
  docs/benchmarks.md measured for its daemon at 2,000 devices and a limit above it;
- the canary overlays: a second DaemonSet with its own selector and ConfigMap on exactly
  the nodes labelled rdma.example/config=canary, which the main DaemonSet's affinity
  excludes; its config passes `rdma-cdi config check`;
- the DRA ClusterRole and Role grant exactly the calls the driver makes (what dra/ and kube/
  call: the request lines in the sources), nothing on nodes.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402

CANARY = ("rdma.example/config", "canary")


def render(kubectl, path):
    r = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True,
                       timeout=120)
    objs = [o for o in yaml.safe_load_all(r.stdout) if o] if r.returncode == 0 else []
    return r, objs


def kustomizations(source_root):
    top = os.path.join(source_root, "deploy", "kubernetes")
    return sorted(os.path.relpath(d, source_root) for d, _, fs in os.walk(top)
                  if "kustomization.yaml" in fs)


def measured_rss(source_root):
    """{daemon: MiB} from docs/benchmarks.md: the DRA table's Rss row (dra, bridge)."""
    with open(os.path.join(source_root, "docs", "benchmarks.md")) as f:
        text = f.read()
    m = re.search(r"^\| Rss \(with shared libraries\) \| ([\d.]+) MiB \| ([\d.]+) MiB \|",
                  text, re.M)
    return {"dra": float(m.group(1)), "bridge": float(m.group(2))} if m else {}


def mib(q):
    m = re.fullmatch(r"(\d+)(Mi|Gi)", str(q or ""))
    return int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1) if m else 0


def daemon_of(c):
    args = c.get("args") or []
    return args[0] if args and c.get("command", [""])[0].endswith("/rdma-cdi") else None


def affinity_exprs(ps):
    terms = (((ps.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    return [e for t in terms for e in t.get("matchExpressions") or []]


def check_daemonset(tap, where, ds, rss):
    name = "%s: DaemonSet %s" % (where, ds["metadata"]["name"])
    spec = ds["spec"]
    ps = spec["template"]["spec"]
    ru = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    tap.ok(spec["updateStrategy"].get("type") == "RollingUpdate" and
           re.fullmatch(r"\d+%", str(ru.get("maxUnavailable", ""))) and
           str(ru.get("maxSurge")) == "0",
           "%s: rolls maxUnavailable %s (a percentage), maxSurge 0" % (
               name, ru.get("maxUnavailable")), spec.get("updateStrategy"))
    tap.ok(ps.get("priorityClassName") == "system-node-critical",
           "%s: priorityClassName system-node-critical" % name)
    cs = (ps.get("initContainers") or []) + ps["containers"]
    cpu = [c["name"] for c in cs if "cpu" in ((c.get("resources") or {}).get("limits") or {})]
    tap.ok(not cpu, "%s: no CPU limit on any container" % name, cpu)
    for c in ps["containers"]:
        d = daemon_of(c)
        res = c.get("resources") or {}
        req, lim = mib(res.get("requests", {}).get("memory")), mib(
            res.get("limits", {}).get("memory"))
        tap.ok(d in rss and rss[d] <= req < lim,
               "%s: %s requests %d Mi (measured Rss at 2,000 devices %.1f MiB), limit %d Mi"
               % (name, d, req, rss.get(d, 0), lim), res)


def check_references(tap, where, objs, base_objs):
    """What the DaemonSets name exists in this render or the base's."""
    have = {(o["kind"], o["metadata"]["name"]) for o in objs + base_objs}
    missing = []
    for ds in [o for o in objs if o["kind"] == "DaemonSet"]:
        ps = ds["spec"]["template"]["spec"]
        want = [("Namespace", ds["metadata"].get("namespace"))]
        want += [("ConfigMap", v["configMap"]["name"]) for v in ps.get("volumes") or []
                 if "configMap" in v]
        if ps.get("serviceAccountName"):
            want.append(("ServiceAccount", ps["serviceAccountName"]))
        missing += [w for w in want if w not in have]
    tap.ok(not missing, "%s: every Namespace, ConfigMap and ServiceAccount its DaemonSets "
           "name is rendered (here or in its base)" % where, missing)


def check_canary(tap, where, objs, base_objs, rdma_cdi):
    canary = [o for o in objs if o["kind"] == "DaemonSet"]
    mains = [o for o in base_objs if o["kind"] == "DaemonSet"]
    if not tap.ok(len(canary) == 1 and len(mains) == 1, "%s: one canary DaemonSet beside "
                  "the base's one" % where):
        return
    c, m = canary[0], mains[0]
    ce = affinity_exprs(c["spec"]["template"]["spec"])
    me = affinity_exprs(m["spec"]["template"]["spec"])
    want_in = {"key": CANARY[0], "operator": "In", "values": [CANARY[1]]}
    want_out = {"key": CANARY[0], "operator": "NotIn", "values": [CANARY[1]]}
    tap.ok(want_in in ce and want_out in me and want_out not in ce,
           "%s: the canary runs on exactly the nodes labelled %s=%s, which the main "
           "DaemonSet excludes" % (where, CANARY[0], CANARY[1]), (ce, me))
    sel_c = c["spec"]["selector"]["matchLabels"]
    sel_m = m["spec"]["selector"]["matchLabels"]
    tap.ok(sel_c != sel_m and not set(sel_c.items()) <= set(
        m["spec"]["template"]["metadata"]["labels"].items()),
           "%s: its selector does not match the main DaemonSet's pods" % where, (sel_c, sel_m))
    cms = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ConfigMap"}
    vol = [v["configMap"]["name"] for v in c["spec"]["template"]["spec"]["volumes"]
           if "configMap" in v]
    mvol = [v["configMap"]["name"] for v in m["spec"]["template"]["spec"]["volumes"]
            if "configMap" in v]
    ok = len(vol) == 1 and vol[0] in cms and vol != mvol
    if tap.ok(ok, "%s: it mounts its own ConfigMap %s" % (where, vol), (vol, mvol)):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
            f.write(cms[vol[0]]["data"]["config.yaml"])
            f.flush()
            r = subprocess.run([rdma_cdi, "config", "check", f.name], capture_output=True,
                               text=True, timeout=60)
        tap.ok(r.returncode == 0, "%s: the canary config passes rdma-cdi config check" % where,
               r.stdout + r.stderr)


def driver_calls(source_root):
    """{(resource, verb)} the DRA driver's sources call: kube_call(..., "METHOD", ...) on
    DRA_SLICE_API paths (a GET with watch=true is watch, else list) and the claims' GET."""
    calls = set()
    for d in ("dra", "kube"):
        for n in os.listdir(os.path.join(source_root, d)):
            if not n.endswith(".c"):
                continue
            with open(os.path.join(source_root, d, n)) as f:
                text = f.read()
            if "resourceclaims/%s" in text and '"GET"' in text:
                calls.add(("resourceclaims", "get"))
            if re.search(r'"/api/v1/namespaces/" [A-Z_]+ "/events"', text) and \
                    re.search(r'kube_call\([^,]+, "POST"', text):
                calls.add(("events", "create"))
            if "DRA_SLICE_API" in text:
                verbs = {"POST": "create", "PUT": "update", "DELETE": "delete"}
                for m in re.findall(r'kube_call\([^,]+, "([A-Z]+)"', text):
                    if m in verbs:
                        calls.add(("resourceslices", verbs[m]))
                    elif m == "GET":
                        calls.add(("resourceslices", "list"))
                if "watch=true" in text:
                    calls.add(("resourceslices", "watch"))
    return calls


def check_rbac(tap, objs, source_root):
    roles = [o for o in objs if o["kind"] in ("ClusterRole", "Role")]
    grants = {(r, v) for o in roles for rule in o.get("rules") or []
              for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
    calls = driver_calls(source_root)
    tap.ok(calls and grants == calls, "the DRA ClusterRole and Role grant exactly what the "
           "driver calls: %s" % ", ".join("%s %s" % c for c in sorted(calls)),
           "granted, not called: %s\ncalled, not granted: %s" % (
               sorted(grants - calls), sorted(calls - grants)))
    tap.ok(not any(r == "nodes" for r, _ in grants), "nothing on nodes", sorted(grants))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--rdma-cdi", required=True)
    a = ap.parse_args()
    tap = Tap()
    if not os.access(a.kubectl, os.X_OK):
        print("Bail out! %s not found: run .ci/install-deps (tests/deploy/fetch-kubectl.sh)"
              % a.kubectl)
        return 1
    rss = measured_rss(a.source_root)
    tap.ok(set(rss) == {"bridge", "dra"}, "docs/benchmarks.md gives the daemons' Rss at "
           "2,000 devices: %s" % rss)
    rendered = {}
    for k in kustomizations(a.source_root):
        r, objs = render(a.kubectl, os.path.join(a.source_root, k))
        tap.ok(r.returncode == 0 and objs, "%s renders (%d objects)" % (k, len(objs)),
               r.stderr[-2000:])
        rendered[k] = objs
    base = {"canary": "deploy/kubernetes/device-plugin",
            "dra-canary": "deploy/kubernetes/dra"}
    for k, objs in rendered.items():
        canary_of = base.get(os.path.basename(k)) if "/overlays/" in k else None
        check_references(tap, k, objs, rendered.get(canary_of, []))
        for ds in [o for o in objs if o["kind"] == "DaemonSet"]:
            check_daemonset(tap, k, ds, rss)
        if canary_of:
            check_canary(tap, k, objs, rendered.get(canary_of, []), a.rdma_cdi)
    tap.ok(all(os.path.join("deploy/kubernetes/overlays", n) in rendered for n in base),
           "both canary overlays are there")
    check_rbac(tap, rendered.get("deploy/kubernetes/dra", []), a.source_root)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
