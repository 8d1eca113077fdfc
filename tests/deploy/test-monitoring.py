#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/kubernetes/monitoring against the daemons and a real promtool:

  test-monitoring.py --source-root DIR --promtool PATH --kubectl PATH --rdma-cdi BIN
                     --mksysfs PY --proto FILE --proto-dir DIR --hook HOOK          (TAP)

- `kubectl kustomize` renders the directory (the dashboard as the ConfigMap Grafana's
  sidecar loads);
- the Service selects both DaemonSets' pods and targets the port their --metrics-address
  serves; the ServiceMonitor selects the Service and its port;
- promtool (Debian's, unpacked by fetch-promtool.sh) accepts the PrometheusRule's groups,
  and each alert fires on recorded series that should fire it and stays quiet on series
  that should not (promtool test rules);
- every series the rules and the Grafana dashboard query (panels and variables), with
  every label they match or group by, is one the daemons export: both daemons are started
  (the bridge under the kubelet double, the DRA driver under its doubles) and scraped.
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(TESTS, "tools"))
sys.path.insert(0, os.path.join(TESTS, "bridge"))
from tap import Tap  # noqa: E402
import kubelet_double as kd  # noqa: E402
from metrics_scrape import free_port, http_get, parse_exposition  # noqa: E402

# Labels a series has in Prometheus beyond the daemon's own: the ServiceMonitor's
# relabelings (node, component) and what the Prometheus Operator and Prometheus add.
TARGET_LABELS = {"node", "component", "namespace", "service", "pod", "container",
                 "endpoint", "job", "instance"}
# Series Prometheus makes itself.
PROMETHEUS_SERIES = {"up": set()}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset",
                "bool", "and", "or", "unless", "inf", "nan", "le"}


def load(path):
    with open(path) as f:
        return f.read()


def promql_refs(expr):
    """[(metric, {label names it matches or groups by})] of one PromQL expression; label
    names in by/without clauses are given to every metric of the expression."""
    expr = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', expr)  # strings
    expr = re.sub(r"\$\{?\w+\}?", "1", expr)  # Grafana variables ($__rate_interval)
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range selectors [5m]
    grouped = set()
    for m in re.finditer(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)",
                         expr):
        grouped |= {x.strip() for x in m.group(2).split(",") if x.strip()}
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    refs = []
    for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?", expr):
        name, sel, call = m.group(1), m.group(2), m.group(3)
        if call and not sel or name in PROMQL_WORDS:
            continue
        labels = set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", sel or ""))
        refs.append((name, labels | grouped))
    return refs


def dashboard_exprs(dash):
    out = []
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            out.append(("panel %r" % p.get("title"), t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", q or "")
        if m:
            out.append(("variable %s" % v["name"], "%s{%s=\"\"}" % (m.group(1), m.group(2))))
        elif v.get("type") == "query":
            out.append(("variable %s" % v["name"], q))
    return out


def manifests(root):
    """{(kind, name): object} of the monitoring directory and both DaemonSets."""
    objs = {}
    for rel in ("monitoring/service.yaml", "monitoring/servicemonitor.yaml",
                "monitoring/prometheusrule.yaml", "device-plugin/daemonset.yaml",
                "dra/daemonset.yaml"):
        for o in yaml.safe_load_all(load(os.path.join(root, "deploy", "kubernetes", rel))):
            if o:
                objs[(o["kind"], o["metadata"]["name"])] = o
    return objs


def selected(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def metrics_port(ds):
    """(containerPort of the port named "metrics", the port --metrics-address serves) of a
    DaemonSet's daemon container; None where missing."""
    for ctr in ds["spec"]["template"]["spec"]["containers"]:
        args = ctr.get("args", []) + ctr.get("command", [])
        addr = None
        for i, a in enumerate(args):
            if a == "--metrics-address" and i + 1 < len(args):
                addr = args[i + 1]
            elif a.startswith("--metrics-address="):
                addr = a.split("=", 1)[1]
        ports = {p.get("name"): p.get("containerPort") for p in ctr.get("ports", [])}
        if addr or "metrics" in ports:
            served = int(addr.rsplit(":", 1)[1]) if addr and ":" in addr else None
            return ports.get("metrics"), served
    return None, None


def check_wiring(tap, objs):
    svc = objs.get(("Service", "rdma-cdi-metrics"))
    sm = objs.get(("ServiceMonitor", "rdma-cdi"))
    if not tap.ok(svc and sm, "the Service rdma-cdi-metrics and the ServiceMonitor rdma-cdi"):
        return
    sel = svc["spec"]["selector"]
    port = {p["name"]: p for p in svc["spec"]["ports"]}.get("metrics", {})
    for ds_name in ("rdma-cdi", "rdma-cdi-dra"):
        ds = objs[("DaemonSet", ds_name)]
        labels = ds["spec"]["template"]["metadata"]["labels"]
        tap.ok(selected(sel, labels) and ds["metadata"]["namespace"] ==
               svc["metadata"]["namespace"],
               "the Service selects the pods of DaemonSet %s, in its namespace" % ds_name,
               (sel, labels))
        cport, served = metrics_port(ds)
        tap.ok(port.get("targetPort") == "metrics" and cport is not None and cport == served,
               "%s: the Service's target port \"metrics\" is container port %s, where "
               "--metrics-address serves (%s)" % (ds_name, cport, served))
        comp = [r for e in sm["spec"]["endpoints"] for r in e.get("relabelings", [])
                if r.get("targetLabel") == "component"]
        src = comp[0]["sourceLabels"][0] if comp else ""
        key = src.replace("__meta_kubernetes_pod_label_", "")
        tap.ok(comp and any(re.sub(r"[^a-zA-Z0-9_]", "_", k) == key and v
                            for k, v in labels.items()),
               "%s: the ServiceMonitor's component label comes from a label its pods have "
               "(%s)" % (ds_name, src))
    tap.ok(selected(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]) and
           svc["metadata"]["namespace"] in sm["spec"]["namespaceSelector"]["matchNames"],
           "the ServiceMonitor selects the Service, in its namespace")
    tap.ok([e["port"] for e in sm["spec"]["endpoints"]] == ["metrics"] and
           all(e.get("path", "/metrics") == "/metrics" for e in sm["spec"]["endpoints"]),
           "the ServiceMonitor scrapes the Service's port \"metrics\" at /metrics")


def check_render(tap, kubectl, root):
    if not tap.ok(os.access(kubectl, os.X_OK), "kubectl at %s (tests/deploy/fetch-kubectl.sh "
                  "from .ci/install-deps)" % kubectl):
        return
    r = subprocess.run([kubectl, "kustomize", os.path.join(root, "deploy", "kubernetes",
                                                           "monitoring")],
                       capture_output=True, text=True, timeout=120)
    objs = [o for o in yaml.safe_load_all(r.stdout) if o] if r.returncode == 0 else []
    kinds = sorted("%s/%s" % (o["kind"], o["metadata"]["name"]) for o in objs)
    tap.ok(kinds == ["ConfigMap/rdma-cdi-dashboard", "PrometheusRule/rdma-cdi",
                     "Service/rdma-cdi-metrics", "ServiceMonitor/rdma-cdi"] and
           all(o["metadata"].get("namespace") == "rdma-cdi" for o in objs),
           "kubectl kustomize renders the Service, ServiceMonitor, PrometheusRule and the "
           "dashboard's ConfigMap, all in rdma-cdi", r.stderr + str(kinds))
    cm = [o for o in objs if o["kind"] == "ConfigMap"]
    dash = load(os.path.join(root, "deploy", "kubernetes", "monitoring",
                             "grafana-dashboard.json"))
    tap.ok(cm and cm[0]["metadata"].get("labels", {}).get("grafana_dashboard") == "1" and
           cm[0].get("data", {}).get("rdma-cdi.json") == dash,
           "the ConfigMap carries the dashboard JSON, labelled for Grafana's sidecar")


# ---- the rules under promtool ---------------------------------------------------------

def render(template, labels):
    """An annotation as Prometheus expands it for these labels ({{ $labels.x }} only)."""
    return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""),
                  template)


def alert_case(rules, alert, at, labels):
    """promtool's expectation: alert fires at `at` with these series labels."""
    rule = rules[alert]
    full = dict(labels, **rule.get("labels", {}))
    return {"eval_time": at, "alertname": alert,
            "exp_alerts": [{"exp_labels": full,
                            "exp_annotations": {k: render(v, labels) for k, v in
                                                rule.get("annotations", {}).items()}}]}


def quiet(alert, at):
    return {"eval_time": at, "alertname": alert, "exp_alerts": []}


def promtool_tests(rules):
    """Recorded series and what each alert must do on them."""
    node = {"node": "gpu-17", "component": "device-plugin"}
    dev = dict(node, device="mlx5_2", pci="0000:3b:00.0", pool="rdma.example/hca")
    dev2 = dict(node, device="mlx5_3", pci="0000:5e:00.0", pool="rdma.example/hca")
    dev3 = dict(node, device="mlx5_4", pci="0000:86:00.0", pool="rdma.example/hca")
    lent = dict(node, device="mlx5_5", pci="0000:af:00.0", pool="rdma.example/hca")
    ok_dev = dict(node, device="mlx5_0", pci="0000:0c:00.0", pool="rdma.example/hca")

    def s(name, labels, values, **extra):
        lab = ",".join('%s="%s"' % (k, v) for k, v in sorted(dict(labels, **extra).items()))
        return {"series": "%s{%s}" % (name, lab), "values": values}

    res = dict(node, resource="rdma.example/hca")
    res2 = dict(node, resource="rdma.example/roce")
    up_labels = dict(node, service="rdma-cdi-metrics", pod="rdma-cdi-x7k2p")
    series = [
        # DOWN from the start.
        s("rdma_cdi_device_healthy", dev, "0x10", reason="port 1 DOWN"),
        # DOWN, then its reason changes at 3m: still one alert, still 5m since it began.
        s("rdma_cdi_device_healthy", dev2, "0 0 0 stale", reason="port 1 DOWN"),
        s("rdma_cdi_device_healthy", dev2, "_ _ _ 0x8", reason="uverbs node missing"),
        # Unhealthy for 3 minutes only.
        s("rdma_cdi_device_healthy", dev3, "0 0 0 1x8", reason="port 1 INIT"),
        # Lent to a pod's namespace since before the daemon started: not a fault.
        s("rdma_cdi_device_healthy", lent, "0x10", reason="lent to another network namespace"),
        s("rdma_cdi_device_healthy", ok_dev, "1x10", reason=""),
        # Failing every 30 s from the start; one failure repaired by the next retry.
        s("rdma_cdi_spec_write_failures_total", node, "0+2x20"),
        s("rdma_cdi_spec_write_failures_total", dict(node, node="gpu-18"), "0 1x20"),
        # Registration lost at 2m for good; another lost for 2 minutes only.
        s("rdma_cdi_kubelet_registered", res, "1 1 0x10"),
        s("rdma_cdi_kubelet_registered", res2, "1 0 0 1x10"),
        s("rdma_cdi_config_rejected", node, "0 1x10"),
        s("rdma_cdi_config_rejected", dict(node, node="gpu-18"), "1 0x10"),
        s("up", up_labels, "1 0x10"),
        s("up", dict(up_labels, pod="rdma-cdi-ab3cd"), "1x10"),
    ]
    dev_alert = {k: v for k, v in dev.items()}
    cases = [
        quiet("RdmaCdiDeviceUnhealthy", "4m"),
        {"eval_time": "6m", "alertname": "RdmaCdiDeviceUnhealthy",
         "exp_alerts": alert_case(rules, "RdmaCdiDeviceUnhealthy", "6m", dev_alert)
         ["exp_alerts"] + alert_case(rules, "RdmaCdiDeviceUnhealthy", "6m", dev2)["exp_alerts"]},
        quiet("RdmaCdiSpecWritesFailing", "9m"),
        alert_case(rules, "RdmaCdiSpecWritesFailing", "12m", node),
        quiet("RdmaCdiRegistrationLost", "6m"),
        alert_case(rules, "RdmaCdiRegistrationLost", "8m", res),
        quiet("RdmaCdiConfigRefused", "2m"),
        alert_case(rules, "RdmaCdiConfigRefused", "4m", node),
        quiet("RdmaCdiDown", "5m"),
        alert_case(rules, "RdmaCdiDown", "7m", up_labels),
    ]
    return {"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": cases}]}


def check_rules(tap, promtool, objs, work):
    groups = objs[("PrometheusRule", "rdma-cdi")]["spec"]["groups"]
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    tap.ok(sorted(rules) == ["RdmaCdiConfigRefused", "RdmaCdiDeviceUnhealthy", "RdmaCdiDown",
                             "RdmaCdiRegistrationLost", "RdmaCdiSpecWritesFailing"] and
           rules["RdmaCdiDeviceUnhealthy"]["for"] == "5m",
           "the PrometheusRule's alerts: a device unhealthy for 5m, spec writes failing, "
           "registration lost, config refused, the daemon down", sorted(rules))
    if not tap.ok(os.access(promtool, os.X_OK), "promtool at %s (tests/deploy/"
                  "fetch-promtool.sh from .ci/install-deps)" % promtool):
        return rules
    with open(os.path.join(work, "rules.yaml"), "w") as f:
        yaml.safe_dump({"groups": groups}, f)
    r = subprocess.run([promtool, "check", "rules", "rules.yaml"], cwd=work,
                       capture_output=True, text=True, timeout=60)
    tap.ok(r.returncode == 0, "promtool check rules: the groups are valid",
           r.stdout + r.stderr)
    with open(os.path.join(work, "rules-test.yaml"), "w") as f:
        yaml.safe_dump(promtool_tests(rules), f, sort_keys=False)
    r = subprocess.run([promtool, "test", "rules", "rules-test.yaml"], cwd=work,
                       capture_output=True, text=True, timeout=60)
    tap.ok(r.returncode == 0, "promtool test rules: each alert fires after its 'for' on the "
           "series that should fire it, with its annotations filled, and on no other (a "
           "device lent to a pod, a reason that changed, a failure repaired, a short "
           "registration loss)", r.stdout + r.stderr)
    # The test above must be able to fail: the same series against a rule that never
    # waits would fire early.
    broken = [dict(g, rules=[dict(x, **{"for": "0m"}) for x in g["rules"]]) for g in groups]
    with open(os.path.join(work, "rules.yaml"), "w") as f:
        yaml.safe_dump({"groups": broken}, f)
    r = subprocess.run([promtool, "test", "rules", "rules-test.yaml"], cwd=work,
                       capture_output=True, text=True, timeout=60)
    tap.ok(r.returncode != 0, "... and rules without their 'for' fail that test",
           r.stdout[-1500:])
    return rules


# ---- the series the daemons export ----------------------------------------------------

def exported_bridge(args, work):
    """{metric name: label names} a running bridge exports under the kubelet double."""
    port = free_port()
    sysfs, dev, k, b, stream = kd.up(args.rdma_cdi, args.mksysfs, args.proto,
                                     os.path.join(work, "bridge"),
                                     extra=["--metrics-address", "127.0.0.1:%d" % port])
    try:
        return scrape(port)
    finally:
        b.stop()
        k.stop()


def exported_dra(args, tap, work):
    """The same for a running DRA driver under its kubelet and API-server doubles."""
    spec = importlib.util.spec_from_file_location("test_dra", os.path.join(TESTS, "dra",
                                                                         "test-dra.py"))
    dra = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dra)
    ns = argparse.Namespace(rdma_cdi=args.rdma_cdi, mksysfs=args.mksysfs,
                            proto_dir=args.proto_dir, hook=os.path.abspath(args.hook),
                            pause_rename=None)
    c = dra.Ctx(ns, tap)
    port = free_port()
    try:
        c.up(["--metrics-address", "127.0.0.1:%d" % port])
        return scrape(port)
    finally:
        for d in c.drivers:
            d.stop()
        c.watcher.stop()
        c.api.stop()
        import shutil
        shutil.rmtree(c.work, ignore_errors=True)


def scrape(port):
    status, _, body = http_get(port, "/metrics")
    samples, errors = parse_exposition(body)
    if status != 200 or errors:
        raise RuntimeError("GET /metrics: %s %s" % (status, errors[:5]))
    out = {}
    for name, labels in samples:
        out.setdefault(name, set()).update(k for k, _ in labels)
    return out


def check_refs(tap, what, exprs, exported):
    for where, expr in exprs:
        bad = []
        for name, labels in promql_refs(expr):
            have = exported.get(name, PROMETHEUS_SERIES.get(name))
            if have is None:
                bad.append("%s is not exported" % name)
            elif labels - have - TARGET_LABELS:
                bad.append("%s has no label %s" % (name, ", ".join(sorted(labels - have -
                                                                          TARGET_LABELS))))
        tap.ok(not bad, "%s %s: every series and label it uses is exported" % (what, where),
               "%s\n%s" % (expr, "\n".join(bad)))


def main():
    ap = argparse.ArgumentParser()
    for a in ("--source-root", "--promtool", "--kubectl", "--rdma-cdi", "--mksysfs",
              "--proto", "--proto-dir", "--hook"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    args.rdma_cdi = os.path.abspath(args.rdma_cdi)
    tap = Tap()
    root = args.source_root
    objs = manifests(root)
    check_wiring(tap, objs)
    check_render(tap, args.kubectl, root)
    with tempfile.TemporaryDirectory(prefix="rdma-cdi-monitoring-") as work:
        rules = check_rules(tap, args.promtool, objs, work)
        exported = {}
        for daemon, get in (("bridge", lambda: exported_bridge(args, work)),
                            ("dra", lambda: exported_dra(args, tap, work))):
            try:
                got = get()
            except Exception as e:  # noqa: BLE001 - the daemon's failure is the test's
                got = {}
                tap.ok(False, "the %s serves /metrics" % daemon, repr(e))
                continue
            tap.ok("rdma_cdi_device_healthy" in got and "rdma_cdi_build_info" in got,
                   "the %s serves /metrics: %d series names" % (daemon, len(got)))
            for name, labels in got.items():
                exported.setdefault(name, set()).update(labels)
    dash = json.loads(load(os.path.join(root, "deploy", "kubernetes", "monitoring",
                                        "grafana-dashboard.json")))
    exprs = dashboard_exprs(dash)
    tap.ok(len(exprs) >= 10, "the dashboard has %d queries" % len(exprs))
    check_refs(tap, "dashboard", exprs, exported)
    check_refs(tap, "rule", [(a, r["expr"]) for a, r in sorted(rules.items())], exported)
    # The check itself: a misspelt series and label are caught.
    tap.ok(any(n == "rdma_cdi_device_healty" for n, _ in promql_refs(
        'max by (node) (rdma_cdi_device_healty{podd="x"})')) and
        {"podd", "node"} <= dict(promql_refs('max by (node) (rdma_cdi_device_healty{podd="x"})'))
        ["rdma_cdi_device_healty"], "the expression reader finds series and labels")
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
