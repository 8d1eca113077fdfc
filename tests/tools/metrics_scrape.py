# SPDX-License-Identifier: Apache-2.0
"""Scraping the daemons' metrics endpoint (daemon/metrics.h) like Prometheus and a kubelet
probe would: a real HTTP client, the text exposition format 0.0.4 checked line by line,
/healthz. Shared by the bridge's and the DRA driver's scenarios."""
import http.client
import re
import socket
import subprocess
import time

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE_RE = re.compile(r"^(%s)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\n]|\\.)*\",?)*)\})? "
                       r"([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))$" % METRIC_NAME)
LABEL_RE = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\n]|\\.)*)\"")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, method="GET", body=None, timeout=5):
    """(status, headers dict with lower-case names, body) of one request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def parse_exposition(text):
    """Checks every line of the text format 0.0.4; returns ({(name, labels): value}, errors).
    labels is a sorted tuple of (key, value)."""
    samples, errors, types, helps = {}, [], {}, set()
    if not text.endswith("\n"):
        errors.append("no final newline")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("# HELP "):
            parts = line.split(" ", 3)
            if len(parts) < 4 or not re.fullmatch(METRIC_NAME, parts[2]) or parts[2] in helps:
                errors.append("%d: bad or repeated HELP: %s" % (n, line))
            helps.add(parts[2])
            continue
        if line.startswith("# TYPE "):
            parts = line.split(" ")
            if (len(parts) != 4 or parts[2] in types or
                    parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped")):
                errors.append("%d: bad or repeated TYPE: %s" % (n, line))
            elif any(k[0] == parts[2] or k[0].rsplit("_", 1)[0] == parts[2] for k in samples):
                errors.append("%d: TYPE after its samples: %s" % (n, line))
            else:
                types[parts[2]] = parts[3]
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            errors.append("%d: not a sample: %r" % (n, line))
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[:-len(suffix)]) in ("histogram",
                                                                              "summary"):
                family = name[:-len(suffix)]
        if family not in types:
            errors.append("%d: sample before its TYPE: %s" % (n, line))
        key = (name, tuple(sorted(LABEL_RE.findall(labels))))
        if key in samples:
            errors.append("%d: repeated series: %s" % (n, line))
        samples[key] = float(value)
    return samples, errors


def metric(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def check_histogram(samples, name, **labels):
    """Buckets cumulative and ending in +Inf == _count. Returns _count or None."""
    buckets = sorted((float(dict(k[1])["le"]), v) for k, v in samples.items()
                     if k[0] == name + "_bucket" and
                     {a: b for a, b in k[1] if a != "le"} == labels)
    count = metric(samples, name + "_count", **labels)
    if not buckets or buckets[-1][0] != float("inf") or count is None:
        return None
    values = [v for _, v in buckets]
    if values != sorted(values) or values[-1] != count:
        return None
    return count


def series(samples, name, **labels):
    """{labels dict: value} of every sample of name whose labels include the ones given."""
    out = {}
    for (n, ls), v in samples.items():
        d = dict(ls)
        if n == name and all(d.get(k) == w for k, w in labels.items()):
            out[tuple(sorted(d.items()))] = v
    return out


def settle(port, samples, want, name, timeout=5.0, **labels):
    """Scrapes again for up to timeout s until the series has the value wanted (events
    reach the daemon before its answer does); the last samples."""
    deadline = time.monotonic() + timeout
    while metric(samples, name, **labels) != want and time.monotonic() < deadline:
        time.sleep(0.05)
        samples = parse_exposition(http_get(port, "/metrics")[2])[0]
    return samples


def healthz_stuck(tap, port, what):
    """The loop is stuck: /healthz answers 503 with a reason within its bound, /metrics
    still answers meanwhile."""
    t0 = time.monotonic()
    status, _, body = http_get(port, "/healthz", timeout=10)
    took = time.monotonic() - t0
    tap.ok(status == 503 and "did not answer" in body and 1.5 < took < 5,
           "%s: /healthz 503 after %.1f s: %s" % (what, took, body.strip()))
    status, _, body = http_get(port, "/metrics")
    samples, errors = parse_exposition(body)
    tap.ok(status == 200 and not errors and series(samples, "rdma_cdi_build_info"),
           "%s: /metrics still answers while the loop is stuck" % what,
           "\n".join(errors[:5]))


def build_version(rdma_cdi):
    """(version, commit, what the start line shows) as `rdma-cdi --version` says them:
    "rdma-cdi 0.4.0 (commit 0123456789ab)"; commit "" in a build that knows none."""
    out = subprocess.run([rdma_cdi, "--version"], capture_output=True, text=True).stdout
    m = re.fullmatch(r"rdma-cdi (\S+)(?: \(commit (\S+)\))?\n", out)
    if not m:
        return None, None, None
    return m.group(1), m.group(2) or "", out[len("rdma-cdi "):].strip()


def check_build(tap, samples, rdma_cdi, daemon, log):
    """build_info and the start line carry the version and the commit --version prints."""
    version, commit, shown = build_version(rdma_cdi)
    tap.ok(version is not None and
           metric(samples, "rdma_cdi_build_info", daemon=daemon, version=version,
                  commit=commit) == 1 and len(series(samples, "rdma_cdi_build_info")) == 1,
           "rdma_cdi_build_info{daemon=%s,version=%s,commit=%s} 1" % (daemon, version, commit),
           series(samples, "rdma_cdi_build_info"))
    tap.ok(shown is not None and ("rdma-cdi %s %s starting" % (shown, daemon)) in log and
           (not commit or "(commit %s)" % commit in log),
           "the start line names version and commit: rdma-cdi %s %s starting" % (shown, daemon),
           log[:600])
