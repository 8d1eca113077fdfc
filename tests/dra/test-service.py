#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The DRA service alone (dra/service.c): service-probe runs it on an sd-event loop
and answers batches by a script (see service-probe.c), the kubelet DRA double plays the
kubelet. One scenario per run:

    test-service.py --probe PATH --proto-dir DIR SCENARIO
"""

import argparse
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, HERE)
from tap import Tap  # noqa: E402
import kubelet_dra_double as kd  # noqa: E402

DRIVER = "rdma.example"
SHARE_ID = "11111111-2222-4333-8444-555555555555"  # service-probe's second device
HEALTH_TIMEOUT = 60  # DRA_HEALTH_TIMEOUT_SEC, documented in docs/dra.md


class Probe:
    def __init__(self, path, workdir, slow_ms=2000, extra=()):
        self.registry = os.path.join(workdir, "registry")
        self.plugin = os.path.join(workdir, "plugins", DRIVER)
        os.makedirs(self.registry)
        os.makedirs(self.plugin)
        self.reg_sock = os.path.join(self.registry, DRIVER + "-reg.sock")
        self.dra_sock = os.path.join(self.plugin, "dra.sock")
        self.log = open(os.path.join(workdir, "probe.log"), "w+")
        self.proc = subprocess.Popen([path, DRIVER, self.registry, self.plugin, str(slow_ms)]
                                     + list(extra), env=sanitizer_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_line(self, prefix, n=1, timeout=5.0):
        """The n-th stdout line starting with prefix, or None."""
        def found():
            m = [x for x in self.lines if x.startswith(prefix)]
            return m[n - 1] if len(m) >= n else None
        with self.cond:
            return kd._wait(self.cond, found, timeout)

    def count(self, prefix):
        with self.cond:
            return len([x for x in self.lines if x.startswith(prefix)])

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def alive(self):
        return self.proc.poll() is None

    def stop(self, timeout=15):
        """SIGTERM, wait; 0 only for a clean exit with no sanitizer report in the log."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        if rc == 0 and sanitizer_report(self.log_text()):
            rc = -1000
        return rc

    def log_text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()


def sanitizer_env():
    env = dict(os.environ)
    # UBSan only prints by default: make a report fail the run.
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


def sanitizer_report(text):
    return "runtime error:" in text or "Sanitizer" in text


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def code_of(fn):
    """(status code, details) of the RpcError fn raises, or (None, result)."""
    try:
        return None, fn()
    except grpc.RpcError as e:
        return e.code(), e.details()


def pb_claims(pb, claims):
    return pb.NodePrepareResourcesRequest(
        claims=[pb.Claim(namespace=n, name=m, uid=u) for n, m, u in claims]).SerializeToString()


def start(t, args, workdir, **kw):
    p = Probe(args.probe, workdir, **kw)
    if not t.ok(p.wait_line("ready", timeout=10), "the probe serves",
                p.log_text() + "\n".join(p.lines)):
        p.stop()
        return None
    return p


def registered_watcher(t, p, protos):
    w = kd.PluginWatcher(p.registry, protos, driver=DRIVER).start()
    reg = w.wait_registrations(1)
    t.ok(reg and reg.ok and reg.notified, "the plugin watcher registered the driver", repr(reg))
    return w, reg


# ---- scenarios --------------------------------------------------------------------------

def sc_registration(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    t.ok(mode(p.reg_sock) == 0o600, "reg.sock is mode 0600", oct(mode(p.reg_sock)))
    t.ok(mode(p.dra_sock) == 0o600, "dra.sock is mode 0600", oct(mode(p.dra_sock)))
    w, reg = registered_watcher(t, p, protos)
    info = reg.info if reg else None
    t.ok(info and info.type == "DRAPlugin", "GetInfo: type DRAPlugin", repr(info))
    t.ok(info and info.name == DRIVER, "GetInfo: name is the driver", repr(info))
    t.ok(info and info.endpoint == p.dra_sock, "GetInfo: endpoint is <plugin-dir>/dra.sock",
         repr(info))
    want = ["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth",
            "v1alpha1.DRAResourceHealth"]
    t.ok(info and sorted(info.supported_versions) == sorted(want),
         "GetInfo: the four supported versions", repr(info))
    t.ok(reg and reg.dra_version == "v1" and reg.health_version == "v1",
         "the watcher picks v1 for both services", repr(reg))
    t.ok(p.wait_line("registered ok"), "NotifyRegistrationStatus(ok) reaches the callback",
         "\n".join(p.lines))
    # A refusal carries its reason to the callback.
    w.refuse_next("version skew: test refusal")
    os.unlink(p.reg_sock)
    reg2 = w.wait_registrations(2)
    t.ok(reg2 and not reg2.ok and reg2.notified, "a second registration is refused", repr(reg2))
    line = p.wait_line("registered failed")
    t.ok(line == "registered failed version skew: test refusal",
         "NotifyRegistrationStatus(refused) reaches the callback with its error", repr(line))
    w.stop()
    rc = p.stop()
    t.ok(rc == 0, "the probe stops cleanly", p.log_text())
    t.ok(not os.path.exists(p.reg_sock) and not os.path.exists(p.dra_sock),
         "both sockets are removed at stop", str(os.listdir(p.registry)))


def sc_reg_removed(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    w, reg = registered_watcher(t, p, protos)
    for i in range(3):
        os.unlink(p.reg_sock)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3 and not os.path.exists(p.reg_sock):
            time.sleep(0.01)
        dt = time.monotonic() - t0
        t.ok(os.path.exists(p.reg_sock) and dt < 1.0,
             "round %d: reg.sock served again within 1 s (%.3f s)" % (i + 1, dt))
        r = w.wait_registrations(i + 2)
        t.ok(r and r.ok, "round %d: the watcher registers the driver again" % (i + 1), repr(r))
        t.ok(p.wait_line("registered ok", n=i + 2),
             "round %d: the callback hears of it" % (i + 1))
        t.ok(p.wait_line("registration lost", n=i + 1),
             "round %d: and heard of the loss before (error NULL)" % (i + 1))
    # A socket that is replaced by another socket (inode changes) is ours no more.
    os.unlink(p.dra_sock)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3 and not os.path.exists(p.dra_sock):
        time.sleep(0.01)
    t.ok(os.path.exists(p.dra_sock) and time.monotonic() - t0 < 1.5,
         "a removed dra.sock is served again by the poll")
    c = kd.DRAClient(p.dra_sock, protos)
    a = c.prepare([("default", "c1", "uid-after")])
    t.ok(a.get("uid-after", {}).get("error") == "", "the new dra.sock answers", repr(a))
    c.close()
    w.stop()
    t.ok(p.stop() == 0, "the probe stops cleanly", p.log_text())
    # Without inotify the poll alone serves it again within 1 s.
    q = Probe(args.probe, os.path.join(workdir, "poll"), extra=["no-fswatch"])
    t.ok(q.wait_line("ready", timeout=10), "a probe without inotify serves", q.log_text())
    for i in range(3):
        os.unlink(q.reg_sock)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3 and not os.path.exists(q.reg_sock):
            time.sleep(0.01)
        dt = time.monotonic() - t0
        t.ok(os.path.exists(q.reg_sock) and dt < 1.0,
             "no inotify, round %d: reg.sock served again within 1 s (%.3f s)" % (i + 1, dt))
    t.ok(q.stop() == 0, "that probe stops cleanly", q.log_text())


def check_prepare_answers(t, a, version, tag):
    ok = a.get("uid-ok")
    t.ok(ok and ok["error"] == "" and len(ok["devices"]) == 2,
         "%s: uid-ok prepared with 2 devices" % tag, repr(a))
    if ok and len(ok["devices"]) == 2:
        d0, d1 = ok["devices"]
        t.ok(d0["pool_name"] == "node1" and d0["device_name"] == "pci-0000-3b-00-0"
             and d0["request_names"] == ["nic"]
             and d0["cdi_device_ids"] == ["rdma.example/hca=mlx5_0",
                                          "rdma.example/claim=uid-ok"],
             "%s: device 1 carries pool, name, request and CDI IDs" % tag, repr(d0))
        t.ok(d1["request_names"] == ["nic", "extra"] and d1["device_name"] == "pci-0000-86-00-1",
             "%s: device 2 with its two requests" % tag, repr(d1))
        if version == "v1":
            t.ok(d0["share_id"] == "" and d1["share_id"] == SHARE_ID,
                 "%s: share_id echoed for the share, unset for the other" % tag, repr(ok))
    f = a.get("fail-1")
    t.ok(f and f["error"] == "probe refuses fail-1 (ns2/claim-f)" and not f["devices"],
         "%s: fail-1 answered with its own error" % tag, repr(f))
    s = a.get("skip-1")
    t.ok(s and s["error"] == "the driver did not prepare this claim" and not s["devices"],
         "%s: an unanswered claim gets an error" % tag, repr(s))
    t.ok(sorted(a) == ["fail-1", "skip-1", "uid-ok"],
         "%s: one answer per distinct UID" % tag, repr(sorted(a)))


def sc_prepare(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    claims = [("default", "claim-a", "uid-ok"), ("ns2", "claim-f", "fail-1"),
              ("default", "claim-s", "skip-1"), ("default", "claim-a", "uid-ok")]
    for version in ("v1", "v1beta1"):
        c = kd.DRAClient(p.dra_sock, protos, version=version)
        n0 = p.count("batch prepare")
        a = c.prepare(claims)
        check_prepare_answers(t, a, version, version + " prepare")
        if version == "v1beta1":
            # v1beta1's Device has no field 5: read the answer with v1's messages.
            pb = protos.dra["v1beta1"]
            raw = c.raw("NodePrepareResources", pb.NodePrepareResourcesRequest(
                claims=[kd._claim(pb, claims[0])]).SerializeToString())
            resp = protos.dra["v1"].NodePrepareResourcesResponse.FromString(raw)
            devs = list(resp.claims["uid-ok"].devices)
            t.ok(len(devs) == 2 and all(d.share_id == "" for d in devs)
                 and SHARE_ID.encode() not in raw,
                 "v1beta1: no share_id on the wire (a v1 field)", repr(resp))
        line = p.wait_line("batch prepare", n=n0 + 1)
        t.ok(line == "batch prepare 3 uid-ok,fail-1,skip-1",
             "%s: the batch reaching the loop holds each UID once, in order" % version,
             repr(line))
        u = c.unprepare(claims)
        t.ok(u == {"uid-ok": "", "fail-1": "probe refuses fail-1 (ns2/claim-f)",
                   "skip-1": "the driver did not unprepare this claim"},
             "%s unprepare: answered per claim" % version, repr(u))
        t.ok(c.prepare([]) == {}, "%s: an empty batch is answered empty" % version)
        c.close()
    t.ok(p.stop() == 0, "the probe stops cleanly", p.log_text())


def sc_batch(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    c = kd.DRAClient(p.dra_sock, protos)
    claims = [("ns-%d" % (i % 7), "claim-%d" % i, "uid-%03d" % i) for i in range(100)]
    a = c.prepare(claims)
    t.ok(len(a) == 100 and all(a["uid-%03d" % i]["error"] == "" and
                               len(a["uid-%03d" % i]["devices"]) == 2 for i in range(100)),
         "100 claims in one call: each prepared", "%d answers" % len(a))
    t.ok(all(a["uid-%03d" % i]["devices"][0]["cdi_device_ids"][1] ==
             "rdma.example/claim=uid-%03d" % i for i in range(100)),
         "each answer is the claim's own")
    u = c.unprepare(claims)
    t.ok(len(u) == 100 and all(v == "" for v in u.values()), "100 claims unprepared")
    big = [("default", "c%d" % i, "u%d" % i) for i in range(1025)]
    code, details = code_of(lambda: c.prepare(big))
    t.ok(code == grpc.StatusCode.INVALID_ARGUMENT and "1025 claims in one call, at most 1024"
         in (details or ""), "1025 claims: INVALID_ARGUMENT naming the limit", repr(details))
    a = c.prepare([("default", "c%d" % i, "u%d" % i) for i in range(1024)])
    t.ok(len(a) == 1024, "1024 claims are accepted", str(len(a)))
    c.close()
    t.ok(p.stop() == 0, "the probe stops cleanly", p.log_text())


def sc_malformed(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    c = kd.DRAClient(p.dra_sock, protos)
    pb = protos.dra["v1"]
    cases = [
        ("empty uid", pb_claims(pb, [("default", "c1", "")]), "claim 0: empty uid"),
        ("empty namespace", pb_claims(pb, [("default", "c1", "u1"), ("", "c2", "u2")]),
         "claim 1 (uid u2): empty namespace"),
        ("empty name", pb_claims(pb, [("default", "", "u1")]), "claim 0 (uid u1): empty name"),
        ("NUL in uid", pb_claims(pb, [("default", "c1", "u1\0evil")]),
         "a claim's string holds a NUL byte: \"u1\\x00evil\""),
        ("NUL in name", pb_claims(pb, [("default", "c1\0", "u1")]), "NUL byte"),
        ("slash in uid", pb_claims(pb, [("default", "c1", "../../etc")]),
         "uid \"../../etc\" is not"),
        ("upper-case namespace", pb_claims(pb, [("Default", "c1", "u1")]),
         "namespace \"Default\" is not a DNS label"),
        ("garbage bytes", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "not a well-formed"),
        ("truncated claim", b"\x0a\x10\x0a\x03abc", "not a well-formed"),
        ("claim field of the wrong type", b"\x08\x01", "not a well-formed"),
    ]
    for method in ("NodePrepareResources", "NodeUnprepareResources"):
        for what, payload, want in cases:
            code, details = code_of(lambda: c.raw(method, payload))
            t.ok(code == grpc.StatusCode.INVALID_ARGUMENT and want in (details or ""),
                 "%s, %s: INVALID_ARGUMENT with the reason" % (method, what),
                 "%s %r" % (code, details))
    t.ok(p.count("batch") == 0, "no malformed request reached the loop", "\n".join(p.lines))
    a = c.prepare([("default", "c1", "uid-good")])
    t.ok(a.get("uid-good", {}).get("error") == "", "the probe still serves", repr(a))
    b = kd.DRAClient(p.dra_sock, protos, version="v1beta1")
    code, details = code_of(lambda: b.raw("NodePrepareResources", b"\x0a\x02\x12\x00"))
    t.ok(code == grpc.StatusCode.INVALID_ARGUMENT, "v1beta1: an empty uid is refused too",
         repr(details))
    code, details = code_of(lambda: c.ch.unary_unary(
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/Nothing")(b"", timeout=5))
    t.ok(code == grpc.StatusCode.UNIMPLEMENTED, "an unknown method is UNIMPLEMENTED", repr(code))
    b.close()
    c.close()
    t.ok(p.stop() == 0, "the probe stops cleanly", p.log_text())


def sc_deadline(t, args, workdir, protos):
    p = start(t, args, workdir, slow_ms=1500)
    if not p:
        return
    c = kd.DRAClient(p.dra_sock, protos)
    t0 = time.monotonic()
    code, _ = code_of(lambda: c.prepare([("default", "c1", "slow-1")], timeout=0.3))
    t.ok(code == grpc.StatusCode.DEADLINE_EXCEEDED and time.monotonic() - t0 < 1.4,
         "the kubelet's deadline passes before the slow answer", repr(code))
    t.ok(p.wait_line("finished", timeout=5), "the probe finishes the batch later")
    time.sleep(0.2)
    t.ok(p.alive() and "answer to a call that is gone is dropped" in p.log_text(),
         "the late answer is dropped, the probe lives", p.log_text()[-2000:])
    a = c.prepare([("default", "c2", "uid-next")])
    t.ok(a.get("uid-next", {}).get("error") == "", "the next call is answered", repr(a))
    # A cancelled call: the same.
    f = c.prepare_future([("default", "c3", "slow-2")])
    time.sleep(0.2)
    f.cancel()
    t.ok(p.wait_line("finished", n=3, timeout=5) and p.alive(),
         "a cancelled call's late answer is dropped too")
    # A slow call in flight while the driver stops: the probe still exits cleanly.
    f = c.prepare_future([("default", "c4", "slow-3")], timeout=10)
    p.wait_line("batch prepare", n=4)
    rc = p.stop()
    t.ok(rc == 0, "stopping with a batch in flight: clean exit", p.log_text()[-3000:])
    code, _ = code_of(lambda: f.result(timeout=5))
    t.ok(code in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE),
         "the call in flight ends with an error, not a hang", repr(code))
    c.close()


def sc_health(t, args, workdir, protos):
    p = start(t, args, workdir)
    if not p:
        return
    s1 = kd.HealthStream(p.dra_sock, protos, "v1")
    s2 = kd.HealthStream(p.dra_sock, protos, "v1alpha1")
    time.sleep(0.3)
    t.ok(s1.lists == [] and s2.lists == [], "nothing is sent before a list is published")
    p.send("health pci-0000-3b-00-0=healthy pci-0000-86-00-1=healthy")
    for name, s in (("v1", s1), ("v1alpha1", s2)):
        lst = s.wait()
        t.ok(lst and [(d.pool, d.device, d.health, d.message) for d in lst] ==
             [("node1", "pci-0000-3b-00-0", "HEALTHY", ""),
              ("node1", "pci-0000-86-00-1", "HEALTHY", "")],
             "%s: the complete list" % name, repr(lst))
        t.ok(lst and all(abs(d.last_updated - time.time()) < 30 for d in lst),
             "%s: last_updated_time is a Unix time" % name, repr(lst))
        t.ok(lst and all(d.timeout == HEALTH_TIMEOUT for d in lst),
             "%s: health_check_timeout_seconds %d (the kubelet's 30 s default when 0)"
             % (name, HEALTH_TIMEOUT), repr(lst))
    p.send("health pci-0000-3b-00-0=healthy pci-0000-86-00-1=unhealthy:port1-down")
    for name, s in (("v1", s1), ("v1alpha1", s2)):
        lst = s.wait(lambda ls: len(ls) >= 2)
        t.ok(lst and len(lst) == 2 and lst[1] and lst[1].health == "UNHEALTHY" and
             lst[1].message == "port1-down" and lst[0].health == "HEALTHY",
             "%s: an update carries the whole list again, with the reason" % name, repr(lst))
    s3 = kd.HealthStream(p.dra_sock, protos, "v1")
    lst = s3.wait()
    t.ok(lst and len(lst) == 2 and lst[1].health == "UNHEALTHY",
         "a stream opened later gets the latest list at once", repr(lst))
    p.send("health")
    lst = s1.wait(lambda ls: len(ls) >= 3)
    t.ok(lst == [], "an empty list is sent as such", repr(lst))
    s3.cancel()
    rc = p.stop()
    t.ok(s1.wait_end() and s2.wait_end(), "the streams end when the driver stops")
    t.ok(rc == 0, "the probe stops cleanly", p.log_text())


def sc_health_resend(t, args, workdir, protos):
    """An unchanged list is sent again within the timeout, so the kubelet keeps it fresh."""
    p = start(t, args, workdir, extra=["resend-ms=600"])
    if not p:
        return
    s = kd.HealthStream(p.dra_sock, protos, "v1")
    time.sleep(1.0)
    t.ok(s.lists == [], "nothing is re-sent before a list is published", repr(s.lists))
    p.send("health pci-0000-3b-00-0=healthy pci-0000-86-00-1=unhealthy:port1-down")
    lst = s.wait(lambda ls: len(ls) >= 4, timeout=10)
    with s.cond:
        lists, times = list(s.lists), list(s.times)
    t.ok(lst is not None and all(x == lists[0] for x in lists),
         "without a change the same complete list is sent again", repr(lists))
    gaps = [b - a for a, b in zip(times, times[1:])]
    # The poll runs every 0.4 s: a re-send comes 0.6 to 1.0 s after the last one.
    t.ok(len(gaps) >= 3 and all(0.45 < g < 1.6 for g in gaps),
         "re-sent every resend-ms (poll granularity 0.4 s)", repr(gaps))
    # A change goes out at once and restarts the interval.
    n = len(s.lists)
    t0 = time.monotonic()
    p.send("health pci-0000-3b-00-0=healthy pci-0000-86-00-1=healthy")
    lst = s.wait(lambda ls: len(ls) > n and ls[-1][1].health == "HEALTHY", timeout=5)
    t.ok(lst and time.monotonic() - t0 < 0.5, "a change is sent at once, not at the next "
         "re-send", repr(lst))
    s.cancel()
    t.ok(p.stop() == 0, "the probe stops cleanly", p.log_text())


def sc_busy(t, args, workdir, protos):
    """A live listener at reg.sock is not ours to replace; a non-socket neither."""
    reg = os.path.join(workdir, "registry")
    os.makedirs(reg)
    os.makedirs(os.path.join(workdir, "plugins", DRIVER))
    with open(os.path.join(reg, DRIVER + "-reg.sock"), "w") as f:
        f.write("not a socket")
    proc = subprocess.run([args.probe, DRIVER, reg, os.path.join(workdir, "plugins", DRIVER)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20,
                          env=sanitizer_env())
    t.ok(proc.returncode == 0 and "start failed -17" in proc.stdout
         and not sanitizer_report(proc.stderr),
         "a file at reg.sock: start fails with -EEXIST", proc.stdout + proc.stderr)
    t.ok("something that is not a socket is there" in proc.stderr, "and says why",
         proc.stderr)
    t.ok(not os.path.exists(os.path.join(workdir, "plugins", DRIVER, "dra.sock")),
         "dra.sock is not left behind")
    with open(os.path.join(reg, DRIVER + "-reg.sock")) as f:
        t.ok(f.read() == "not a socket", "the file is left alone")


SCENARIOS = {
    "registration": sc_registration,
    "reg-removed": sc_reg_removed,
    "prepare": sc_prepare,
    "batch": sc_batch,
    "malformed": sc_malformed,
    "deadline": sc_deadline,
    "health": sc_health,
    "health-resend": sc_health_resend,
    "busy": sc_busy,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--proto-dir", required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    t = Tap()
    protos = kd.load_protos(args.proto_dir)
    with tempfile.TemporaryDirectory(prefix="dra-service-") as workdir:
        try:
            SCENARIOS[args.scenario](t, args, workdir, protos)
        except Exception as e:  # a crash of the test is a failure, never a pass
            import traceback
            t.ok(False, "scenario %s ran to its end" % args.scenario, traceback.format_exc())
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
