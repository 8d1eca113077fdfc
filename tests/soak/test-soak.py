# SPDX-License-Identifier: Apache-2.0
"""Load and soak of the bridge against the kubelet double (issue 8 item 2), bounded in count
and time so they run in CI:

  allocate   100,000 Allocate calls with 64 in flight: 0 errors, resident memory flat
             after warm-up (growth under 1 MiB);
  restarts   1,000 kubelet restarts in a row, each followed by a re-registration;
  streams    1,000 ListAndWatch streams opened and dropped, the bridge still serving;
  churn      1,000 hotplug events and 100 config reloads, memory flat.
"""

import argparse
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bridge"))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import kubelet_double as kd  # noqa: E402
from tap import Tap  # noqa: E402

tap = Tap()
MIB = 1024


def rss_kib(b):
    return b.memory_kib("VmRSS")


def start(args, work, extra=(), level="warning"):
    try:
        sysfs, dev, k, b, _ = kd.up(args.rdma_cdi, args.mksysfs, args.proto, work,
                                    extra=list(extra) + ["--log-level", level], timeout=30)
    except kd.NotRegistered as e:
        tap.ok(False, "bridge registered", str(e))
        raise SystemExit(tap.done())
    return sysfs, dev, k, b


def alloc_req(pb, ids):
    return pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])


def soak_allocate(args, work):
    _, _, k, b = start(args, work)
    stub = k.plugin_stub()
    pb = k.pb
    ids = [["0000:1a:00.0"], ["0000:9a:00.0", "0000:9b:00.0"], ["0000:3b:00.0"]]
    errors, done, warm_rss = 0, 0, None
    t0 = time.monotonic()
    pending = []
    n = args.calls
    for i in range(n):
        pending.append(stub.Allocate.future(alloc_req(pb, ids[i % len(ids)]), timeout=30))
        if len(pending) >= 64:
            f = pending.pop(0)
            try:
                f.result()
            except Exception:
                errors += 1
            done += 1
            if done == n // 10:
                warm_rss = rss_kib(b)
    for f in pending:
        try:
            f.result()
        except Exception:
            errors += 1
    dt = time.monotonic() - t0
    end_rss = rss_kib(b)
    tap.ok(errors == 0, "%d Allocate calls, 64 in flight: 0 errors (%d; %.0f calls/s)" %
           (n, errors, n / dt))
    tap.ok(warm_rss and end_rss - warm_rss < MIB,
           "resident memory flat after warm-up: %s -> %d KiB" % (warm_rss, end_rss))
    b.signal(signal.SIGTERM)
    tap.ok(b.wait(30) == 0, "clean exit after the load", b.log_text()[-2000:])
    k.stop()


def soak_restarts(args, work):
    _, _, k, b = start(args, work)
    ok = 0
    t0 = time.monotonic()
    for i in range(args.restarts):
        k.restart()
        if k.wait_registrations(1, 10) is None:
            break
        ok += 1
    tap.ok(ok == args.restarts, "%d kubelet restarts in a row, each re-registered (%d, %.1f ms "
           "each)" % (args.restarts, ok, (time.monotonic() - t0) * 1000 / max(ok, 1)),
           b.log_text()[-3000:])
    tap.ok(b.proc.poll() is None, "the bridge is still running")
    b.stop()
    k.stop()


def soak_streams(args, work):
    _, _, k, b = start(args, work)
    stub = k.plugin_stub()
    got = 0
    for i in range(args.streams):
        s = kd.Stream(stub, k.pb)
        if s.wait(timeout=10) is not None:
            got += 1
        s.cancel()
        s.wait_end(5)
    tap.ok(got == args.streams, "%d ListAndWatch streams opened and dropped, each got the list "
           "(%d)" % (args.streams, got))
    resp = stub.Allocate(alloc_req(k.pb, ["0000:1a:00.0"]), timeout=10)
    tap.ok(len(resp.container_responses) == 1, "still answering Allocate afterwards")
    b.stop()
    k.stop()


def soak_churn(args, work):
    cfg_dir = os.path.join(work, "cfgdir")
    os.makedirs(cfg_dir)
    cfg = os.path.join(cfg_dir, "config.yaml")
    texts = ["pools:\n  - resourceName: rdma.example/hca\n",
             "pools:\n  - resourceName: rdma.example/hca\n  - resourceName: rdma.example/eth\n"
             "    selectors: {linkLayers: [eth]}\n"]
    with open(cfg, "w") as f:
        f.write(texts[0])
    sysfs, dev, k, b = start(args, work, ["--config", cfg, "--rescan-interval", "1"], "info")
    node = os.path.join(dev, "infiniband", "uverbs3")
    st = os.stat(node)
    warm = None
    events = 0
    for i in range(args.hotplug // 2):
        os.unlink(node)
        os.mknod(node, st.st_mode, st.st_rdev)
        events += 2
        if i % 5 == 0:
            time.sleep(0.03)  # let some scans through, so not every event is coalesced
        if i == args.hotplug // 20:
            time.sleep(0.5)
            warm = rss_kib(b)
    for i in range(args.reloads):
        tmp = cfg + ".tmp"
        with open(tmp, "w") as f:
            f.write(texts[(i + 1) % 2])
        os.rename(tmp, cfg)
        time.sleep(0.15)  # past the 100 ms settle: every reload is applied
    time.sleep(1.5)
    end = rss_kib(b)
    applied = b.log_text().count("applied:")
    tap.ok(b.proc.poll() is None and applied >= args.reloads * 0.9,
           "%d hotplug events and %d config reloads (%d applied), still running" %
           (events, args.reloads, applied), b.log_text()[-3000:])
    tap.ok(warm and end - warm < MIB, "resident memory flat: %s -> %d KiB" % (warm, end))
    stub = k.plugin_stub()
    resp = stub.Allocate(alloc_req(k.pb, ["0000:3c:00.0"]), timeout=10)
    tap.ok(len(resp.container_responses) == 1, "the churned HCA is allocatable at the end")
    b.signal(signal.SIGTERM)
    tap.ok(b.wait(30) == 0, "clean exit")
    k.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--mksysfs", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--restarts", type=int, default=1000)
    ap.add_argument("--streams", type=int, default=1000)
    ap.add_argument("--hotplug", type=int, default=1000)
    ap.add_argument("--reloads", type=int, default=100)
    ap.add_argument("what", choices=["allocate", "restarts", "streams", "churn"])
    args = ap.parse_args()
    work = kd.tempfile.mkdtemp(prefix="rdma-cdi-soak-")
    try:
        {"allocate": soak_allocate, "restarts": soak_restarts, "streams": soak_streams,
         "churn": soak_churn}[args.what](args, work)
    finally:
        kd.cleanup(work)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
