#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scenario tests: the real `rdma-cdi bridge` against the kubelet test double.

  test-kubelet.py --rdma-cdi BIN --mksysfs mksysfs.py --proto deviceplugin.proto SCENARIO

Each scenario builds its own fixture (mksysfs.py), plugin dir and spec dir in a temp dir,
runs the bridge as a process and prints TAP.
"""

import argparse
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kubelet_double as kd  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402
from rescan import RESCAN_WAIT, rescan_period, sleep_one_rescan  # noqa: E402
import spec_files  # noqa: E402
from spec_files import block_spec, write_foreign_spec  # noqa: E402
from metrics_scrape import (check_build, check_histogram, free_port, healthz_stuck,  # noqa: E402
                            http_get, metric, parse_exposition, series, settle)

DGX_NUMA = {
    "0000:1a:00.0": 0, "0000:1b:00.0": 0, "0000:3b:00.0": 0, "0000:3c:00.0": 0,
    "0000:5e:00.0": 0, "0000:9a:00.0": 1, "0000:9b:00.0": 1, "0000:ba:00.0": 1,
    "0000:bb:00.0": 1, "0000:d8:00.0": 1,
}
DGX_NAMES = {
    "0000:1a:00.0": "mlx5_0", "0000:1b:00.0": "mlx5_1", "0000:3b:00.0": "mlx5_2",
    "0000:3c:00.0": "mlx5_3", "0000:5e:00.0": "mlx5_8", "0000:9a:00.0": "mlx5_4",
    "0000:9b:00.0": "mlx5_5", "0000:ba:00.0": "mlx5_6", "0000:bb:00.0": "mlx5_7",
    "0000:d8:00.0": "mlx5_9",
}
# Pairs of HCAs behind one PCIe switch in the dgx fixture.
SWITCH_SIBLING = {}
for a, b in (("1a", "1b"), ("3b", "3c"), ("9a", "9b"), ("ba", "bb")):
    SWITCH_SIBLING["0000:%s:00.0" % a] = "0000:%s:00.0" % b
    SWITCH_SIBLING["0000:%s:00.0" % b] = "0000:%s:00.0" % a
IB8 = [p for p in DGX_NUMA if p not in ("0000:5e:00.0", "0000:d8:00.0")]


class Ctx:
    """One scenario's world: fixture, kubelet double, bridge."""

    def __init__(self, args, tap, profile="dgx", fixture_args=()):
        self.args = args
        self.tap = tap
        self.work = tempfile.mkdtemp(prefix="rdma-cdi-bridge-")
        self.sysfs, self.dev = kd.make_fixture(args.mksysfs, profile, self.work, fixture_args)
        self.plugin_dir = os.path.join(self.work, "plugins")
        os.makedirs(self.plugin_dir)
        self.kubelet = None
        self.bridges = []

    def start_kubelet(self):
        self.kubelet = kd.Kubelet(self.plugin_dir, self.args.proto).start()
        return self.kubelet

    def bridge(self, extra=(), start=True, prefix=()):
        b = kd.Bridge(self.args.rdma_cdi, self.work, self.sysfs, self.dev, extra=extra,
                      plugin_dir=self.plugin_dir)
        self.bridges.append(b)
        if start:
            b.start(prefix)
        return b

    def registered(self, n=1, timeout=10.0):
        reg = self.kubelet.wait_registrations(n, timeout)
        if not self.tap.ok(reg is not None, "bridge registered (%d)" % n, self.log()):
            raise SystemExit(self.close())
        return reg

    def first_list(self, timeout=5.0):
        s = self.kubelet.latest_stream()
        lst = s.wait(timeout=timeout) if s else None
        if not self.tap.ok(lst is not None, "ListAndWatch sent the device list", self.log()):
            raise SystemExit(self.close())
        return s, lst

    def up(self, extra=()):
        """Kubelet double up, one bridge registered, its first device list received."""
        self.start_kubelet()
        b = self.bridge(extra)
        self.registered()
        stream, lst = self.first_list()
        return b, stream, lst

    def log(self):
        return "\n".join(b.log_text() for b in self.bridges if os.path.exists(b.log_path))

    def close(self):
        for b in self.bridges:
            b.stop()
        if self.kubelet:
            self.kubelet.stop()
        kd.cleanup(self.work)
        return self.tap.done()


def alloc(pb, *containers):
    return pb.AllocateRequest(container_requests=[
        pb.ContainerAllocateRequest(devices_ids=list(c)) for c in containers])


def by_id(devices):
    return {d.ID: d for d in devices}


def numa_of(d):
    return [n.ID for n in d.topology.nodes] if d.HasField("topology") else []


def spec_names(path):
    with open(path) as f:
        spec = json.load(f)
    return spec["kind"], {d["name"] for d in spec["devices"]}


def expect_code(tap, fn, code, what, needle=None):
    try:
        fn()
    except grpc.RpcError as e:
        good = e.code() == code and (needle is None or needle in (e.details() or ""))
        return tap.ok(good, what, "%s: %s" % (e.code(), e.details()))
    return tap.ok(False, what, "call succeeded")


# ---- scenarios ----------------------------------------------------------------------


def sc_registration(c):
    tap = c.tap
    c.start_kubelet()
    b = c.bridge()
    t, req, opts = c.registered()
    tap.ok(req.version == "v1beta1", "Register version v1beta1")
    tap.ok(req.endpoint == kd.DEFAULT_SOCKET, "endpoint is the socket file name", req.endpoint)
    tap.ok(req.resource_name == "rdma.example/hca", "default resource name", req.resource_name)
    tap.ok(req.options.get_preferred_allocation_available and not req.options.pre_start_required,
           "RegisterRequest options: preferred allocation, no PreStart")
    tap.ok(opts is not None and opts.get_preferred_allocation_available and
           not opts.pre_start_required,
           "GetDevicePluginOptions answered while Register was pending")
    st = os.lstat(b.socket())
    tap.ok(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
           "plugin socket is a socket, mode 0600", oct(st.st_mode))
    c.first_list()
    stub = c.kubelet.plugin_stub()
    r = stub.PreStartContainer(c.kubelet.pb.PreStartContainerRequest(devices_ids=["x"]))
    tap.ok(r is not None, "PreStartContainer answers (empty)")
    tap.ok(os.path.exists(b.spec_path()), "spec written into --spec-dir")
    # An unknown method gets UNIMPLEMENTED, not a hang.
    ch = grpc.insecure_channel("unix:" + b.socket())
    m = ch.unary_unary("/v1beta1.DevicePlugin/Nope")
    expect_code(tap, lambda: m(b"", timeout=5), grpc.StatusCode.UNIMPLEMENTED,
                "unknown method: UNIMPLEMENTED")
    ch.close()
    tap.ok(b.wait_log("registered rdma.example/hca with the kubelet"), "log says registered",
           b.log_text())
    c2 = Ctx(c.args, tap)  # a custom resource name
    c2.start_kubelet()
    c2.bridge(["--resource", "example.com/ib"])
    _, req2, _ = c2.registered()
    tap.ok(req2.resource_name == "example.com/ib", "--resource NAME is registered")
    c2.bridges[0].stop()
    c2.kubelet.stop()
    kd.cleanup(c2.work)


def sc_devices_dgx(c):
    tap = c.tap
    _, _, lst = c.up()
    devs = by_id(lst)
    tap.ok(set(devs) == set(DGX_NUMA), "dgx: IDs are the PCI addresses of the 10 HCAs",
           sorted(devs))
    tap.ok(all(numa_of(devs[i]) == [n] for i, n in DGX_NUMA.items()),
           "dgx: topology is each function's NUMA node",
           {i: numa_of(d) for i, d in devs.items()})
    tap.ok(devs["0000:d8:00.0"].health == "Unhealthy", "dgx: the DOWN-port RoCE NIC is Unhealthy")
    tap.ok(all(d.health == "Healthy" for i, d in devs.items() if i != "0000:d8:00.0"),
           "dgx: the other 9 are Healthy")


def sc_devices_sriov(c):
    tap = c.tap
    _, _, lst = c.up()
    devs = by_id(lst)
    want = {"0000:3b:00.0", "0000:3b:00.2", "0000:3b:00.3", "0000:3b:00.4", "0000:3b:00.5"}
    tap.ok(set(devs) == want, "sriov: PF and 4 VFs, each by its PCI address", sorted(devs))
    tap.ok(all(numa_of(d) == [1] for d in devs.values()), "sriov: NUMA node 1 for PF and VFs",
           {i: numa_of(d) for i, d in devs.items()})
    tap.ok(all(d.health == "Healthy" for d in devs.values()), "sriov: all Healthy")


def sc_preferred(c):
    tap = c.tap
    c.up()
    pb = c.kubelet.pb
    stub = c.kubelet.plugin_stub()

    def prefer(avail, must, size):
        r = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
            pb.ContainerPreferredAllocationRequest(available_deviceIDs=avail,
                                                   must_include_deviceIDs=must,
                                                   allocation_size=size)]))
        return list(r.container_responses[0].deviceIDs)

    for must in IB8:
        got = prefer(IB8, [must], 2)
        tap.ok(len(got) == 2 and got[0] == must and DGX_NUMA[got[1]] == DGX_NUMA[must],
               "2 of 8 with %s must-include: same NUMA node" % must, got)
        tap.ok(len(got) == 2 and got[1] == SWITCH_SIBLING[must],
               "... and its PCIe switch sibling %s" % SWITCH_SIBLING[must], got)
    got = prefer(list(reversed(IB8)), ["0000:9a:00.0"], 4)
    tap.ok(got == ["0000:9a:00.0", "0000:9b:00.0", "0000:ba:00.0", "0000:bb:00.0"],
           "4 with one must-include: the whole NUMA node, switch sibling first", got)
    tap.ok(prefer(IB8, [], 2) == prefer(list(reversed(IB8)), [], 2),
           "deterministic whatever the request order")
    t0 = time.monotonic()
    for _ in range(200):
        prefer(IB8, ["0000:1a:00.0"], 2)
    per = (time.monotonic() - t0) / 200
    tap.ok(per < 0.05, "GetPreferredAllocation round trip %.0f us" % (per * 1e6))


def check_allocation(c, b, resp, names_per_container, ids_per_container, cdi=True, ann=True):
    tap = c.tap
    kind, defined = spec_names(b.spec_path())
    tap.ok(kind == "rdma.example/hca", "spec kind rdma.example/hca")
    for i, (names, ids) in enumerate(zip(names_per_container, ids_per_container)):
        cr = resp.container_responses[i]
        qualified = ["rdma.example/hca=" + n for n in names]
        if cdi:
            got = [d.name for d in cr.cdi_devices]
            tap.ok(got == qualified, "container %d: cdi_devices %s" % (i, got), qualified)
            tap.ok(all(g.split("=", 1)[0] == kind and g.split("=", 1)[1] in defined for g in got),
                   "container %d: every CDI name resolves in the spec on disk" % i)
        else:
            tap.ok(len(cr.cdi_devices) == 0, "container %d: no cdi_devices" % i)
        key = "cdi.k8s.io/rdma-cdi_" + ids[0].replace(":", "_")
        if ann:
            tap.ok(dict(cr.annotations) == {key: ",".join(qualified)},
                   "container %d: annotation %s" % (i, key), dict(cr.annotations))
            tap.ok(re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?",
                                key.split("/", 1)[1]) is not None,
                   "container %d: annotation key is a valid CDI annotation key" % i)
        else:
            tap.ok(len(cr.annotations) == 0, "container %d: no annotation" % i)
        tap.ok(dict(cr.envs) == {"RDMA_CDI_DEVICES": ",".join(names)},
               "container %d: env RDMA_CDI_DEVICES=%s" % (i, ",".join(names)), dict(cr.envs))


def sc_allocate(c):
    tap = c.tap
    b, _, _ = c.up()
    pb = c.kubelet.pb
    stub = c.kubelet.plugin_stub()
    resp = stub.Allocate(alloc(pb, ["0000:1a:00.0"], ["0000:3c:00.0", "0000:3b:00.0"]))
    tap.ok(len(resp.container_responses) == 2, "one response per container")
    check_allocation(c, b, resp, [["mlx5_0"], ["mlx5_2", "mlx5_3"]],
                     [["0000:1a:00.0"], ["0000:3c:00.0", "0000:3b:00.0"]])
    tap.ok(all(len(cr.devices) == 0 for cr in resp.container_responses),
           "default strategies: no DeviceSpecs")
    # Every advertised healthy ID allocates and resolves.
    resp = stub.Allocate(alloc(pb, *[[i] for i in DGX_NUMA if i != "0000:d8:00.0"]))
    _, defined = spec_names(b.spec_path())
    tap.ok(all(cr.cdi_devices[0].name.split("=")[1] in defined for cr in resp.container_responses),
           "every healthy device's CDI name resolves in the spec")


def sc_device_specs(c):
    tap = c.tap
    pb = c.start_kubelet().pb
    b = c.bridge(["--device-list-strategy", "device-specs"])
    c.registered()
    stub = c.kubelet.plugin_stub()
    resp = stub.Allocate(alloc(pb, ["0000:1b:00.0"]))
    cr = resp.container_responses[0]
    specs = [(d.container_path, d.host_path, d.permissions) for d in cr.devices]
    want = [("/dev/infiniband/uverbs1", c.dev + "/infiniband/uverbs1", "rw"),
            ("/dev/infiniband/rdma_cm", c.dev + "/infiniband/rdma_cm", "rw")]
    tap.ok(specs == want, "device-specs: uverbs + rdma_cm DeviceSpecs", specs)
    tap.ok(all(os.path.exists(h) for _, h, _ in specs), "DeviceSpec host paths exist")
    check_allocation(c, b, resp, [["mlx5_1"]], [["0000:1b:00.0"]], cdi=False, ann=False)
    b.stop()
    b2 = c.bridge(["--device-list-strategy", "cdi-cri,device-specs"])
    c.registered(2)
    stub = c.kubelet.plugin_stub()
    cr = stub.Allocate(alloc(pb, ["0000:1b:00.0"])).container_responses[0]
    tap.ok(len(cr.devices) == 2 and len(cr.cdi_devices) == 1 and len(cr.annotations) == 0,
           "cdi-cri,device-specs: both, no annotation")
    b2.stop()


def sc_bad_requests(c):
    tap = c.tap
    b, stream, _ = c.up()
    pb = c.kubelet.pb
    stub = c.kubelet.plugin_stub()
    IA = grpc.StatusCode.INVALID_ARGUMENT
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1a:00.0", "0000:ff:00.0"])), IA,
                "unknown ID: INVALID_ARGUMENT naming it", '"0000:ff:00.0"')
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1a:00.0", "0000:1a:00.0"])), IA,
                "duplicate ID: INVALID_ARGUMENT naming it", "duplicate device ID \"0000:1a:00.0\"")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:d8:00.0"])), IA,
                "unhealthy ID: INVALID_ARGUMENT naming it", "0000:d8:00.0")
    expect_code(tap, lambda: stub.Allocate(pb.AllocateRequest()), IA,
                "empty request: INVALID_ARGUMENT")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, [])), IA,
                "container request without IDs: INVALID_ARGUMENT")
    many = ["dev-%d" % i for i in range(10000)]
    expect_code(tap, lambda: stub.Allocate(alloc(pb, many)), IA,
                "10,000 unknown IDs: INVALID_ARGUMENT", "dev-0")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1a:00.0"] * 10000)), IA,
                "10,000 copies of a valid ID: INVALID_ARGUMENT")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["x" * 5000000])),
                grpc.StatusCode.RESOURCE_EXHAUSTED, "5 MB request: refused by the size bound")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, *[["0000:1a:00.0"]] * 11)), IA,
                "a valid ID in 11 container requests: more IDs than the node has",
                "more than the 10 device IDs")
    # protobuf strings are length-delimited; cut at the NUL this would be 0000:1a:00.0.
    evil = "0000:1a:00.0\x00evil"
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1b:00.0"], [evil])), IA,
                "an ID with an embedded NUL: INVALID_ARGUMENT naming it, escaped",
                'device ID "0000:1a:00.0\\x00evil" holds a NUL byte')
    expect_code(tap, lambda: stub.GetPreferredAllocation(pb.PreferredAllocationRequest(
        container_requests=[pb.ContainerPreferredAllocationRequest(
            available_deviceIDs=IB8, must_include_deviceIDs=[evil], allocation_size=2)])),
        IA, "GetPreferredAllocation: an ID with an embedded NUL is refused",
        "0000:1a:00.0\\x00evil")
    ch = grpc.insecure_channel("unix:" + b.socket())
    raw = ch.unary_unary("/v1beta1.DevicePlugin/Allocate")
    expect_code(tap, lambda: raw(b"\xff\xff\xff\xff", timeout=5), IA,
                "garbage bytes: INVALID_ARGUMENT")
    # 4 MiB of empty elements would unpack into hundreds of MiB: refused within a budget,
    # and the memory goes back.
    rss0 = b.memory_kib()
    empties = b"\x0a\x00" * (((4 << 20) - 64) // 2)
    for method in ("Allocate", "GetPreferredAllocation"):
        m = ch.unary_unary("/v1beta1.DevicePlugin/" + method)
        expect_code(tap, lambda: m(empties, timeout=10), grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "%s: 4 MiB of empty container requests refused" % method, "unpack budget")
    hwm, rss = b.memory_kib("VmHWM"), b.memory_kib()
    if b.sanitized():  # ASan's redzones and quarantine: only the gross bound holds
        tap.ok(hwm - rss0 < 256 << 10, "ASan: memory peak +%d KiB" % (hwm - rss0))
    else:
        tap.ok(hwm - rss0 < 64 << 10 and rss - rss0 < 16 << 10,
               "memory peak +%d KiB, +%d KiB after" % (hwm - rss0, rss - rss0))
    pref = ch.unary_unary("/v1beta1.DevicePlugin/GetPreferredAllocation")
    expect_code(tap, lambda: pref(b"\x0a\x00" * 257, timeout=5), IA,
                "257 container requests to GetPreferredAllocation: INVALID_ARGUMENT",
                "at most 256")
    raw = ch.unary_unary("/v1beta1.DevicePlugin/GetPreferredAllocation")
    expect_code(tap, lambda: raw(b"\x0a\x05\x0a\x03", timeout=5), IA,
                "truncated PreferredAllocationRequest: INVALID_ARGUMENT")
    ch.close()
    r = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
        pb.ContainerPreferredAllocationRequest(available_deviceIDs=many + IB8,
                                               must_include_deviceIDs=["nope"],
                                               allocation_size=2)]))
    tap.ok(len(r.container_responses[0].deviceIDs) == 2,
           "GetPreferredAllocation with 10,000 unknown IDs: answered from the known ones")
    resp = stub.Allocate(alloc(pb, ["0000:1a:00.0"]))
    tap.ok(resp.container_responses[0].cdi_devices[0].name == "rdma.example/hca=mlx5_0",
           "the bridge still allocates afterwards")
    tap.ok(not stream.ended, "the kubelet's ListAndWatch stream is still open")
    tap.ok(b.proc.poll() is None, "the bridge is still running")
    tap.ok(b.log_text().count("Allocate rejected") >= 9, "each rejection is logged")


def sc_stream_drop(c):
    tap = c.tap
    b, main, _ = c.up()
    pb = c.kubelet.pb
    stub = c.kubelet.plugin_stub()
    for round_ in range(3):
        streams = [kd.Stream(stub, pb) for _ in range(10)]
        tap.ok(all(s.wait() is not None for s in streams),
               "round %d: 10 extra ListAndWatch streams get the list" % round_)
        for s in streams:
            s.cancel()
    # Every dropped stream is freed: the count in the log goes back to the kubelet's one.
    b.wait_log("closed by the peer", count=30, timeout=5)
    closed = re.findall(r"closed by the peer or shutdown \((\d+) left\)", b.log_text())
    tap.ok(len(closed) == 30 and closed[-1] == "1", "30 dropped streams freed, 1 left",
           closed)
    extra = [kd.Stream(stub, pb) for _ in range(20)]
    time.sleep(0.5)
    refused = sum(1 for s in extra if s.ended and s.error is not None and
                  s.error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED)
    tap.ok(refused == 5, "streams beyond 16 are refused (RESOURCE_EXHAUSTED): %d" % refused)
    for s in extra:
        s.cancel()
    tap.ok(not main.ended and b.proc.poll() is None, "the kubelet's stream survives")


def sc_kubelet_restart(c):
    tap = c.tap
    b, _, _ = c.up()
    k = c.kubelet
    checkpoint = os.path.join(c.plugin_dir, "kubelet_internal_checkpoint")
    with open(checkpoint, "w") as f:
        f.write("{}")
    for round_ in range(3):
        t0 = time.monotonic()
        k.restart()
        reg = k.wait_registrations(1, 5)
        if not tap.ok(reg is not None, "restart %d: registered again" % round_, b.log_text()):
            return
        dt = reg[0] - k.started_at
        tap.ok(dt < 1.0, "restart %d: re-registration %.1f ms after kubelet.sock re-creation" %
               (round_, dt * 1000))
        tap.diag("restart %d: kubelet.sock -> Register %.1f ms (full restart %.1f ms)" %
                 (round_, dt * 1000, (reg[0] - t0) * 1000))
        s = k.latest_stream()
        lst = s.wait() if s else None
        tap.ok(lst is not None and len(lst) == 10, "restart %d: new ListAndWatch list" % round_)
        stub = k.plugin_stub()
        r = stub.Allocate(alloc(k.pb, ["0000:9a:00.0"]))
        tap.ok(r.container_responses[0].cdi_devices[0].name == "rdma.example/hca=mlx5_4",
               "restart %d: Allocate works on the new socket" % round_)
    tap.ok(os.path.exists(checkpoint), "regular files in the plugin dir untouched")
    tap.ok(b.proc.poll() is None, "the bridge kept running")


def sc_bridge_restart(c):
    tap = c.tap
    b, old_stream, _ = c.up()
    k = c.kubelet
    # A second bridge while the first serves: refuses, the first is unharmed.
    b2 = c.bridge()
    rc = b2.wait(10)
    tap.ok(rc not in (None, 0), "a second bridge on the same dir exits non-zero (%s)" % rc)
    tap.ok("another device plugin serves it" in b2.log_text(), "and says why", b2.log_text())
    b.proc.kill()
    b.proc.wait()
    tap.ok(stat.S_ISSOCK(os.lstat(b.socket()).st_mode), "SIGKILL leaves a stale socket")
    tap.ok(old_stream.wait_end(5), "the kubelet's stream ends with the bridge")
    b3 = c.bridge()
    reg = k.wait_registrations(2, 10)
    tap.ok(reg is not None, "a restarted bridge registers again", b3.log_text())
    tap.ok("removed stale socket" in b3.log_text(), "the stale socket was replaced")
    s = k.latest_stream()
    tap.ok(s is not None and s.wait() is not None, "new ListAndWatch list")
    # A listener that never accepts (full backlog) is in use too: refused at once, where
    # a blocking connect() would hang the bridge before it logs anything.
    b3.stop()
    if os.path.lexists(b3.socket()):
        os.unlink(b3.socket())
    hung = socket.socket(socket.AF_UNIX)
    hung.bind(b3.socket())
    hung.listen(0)
    queued = []
    try:
        while len(queued) < 64:
            q = socket.socket(socket.AF_UNIX)
            q.setblocking(False)
            queued.append(q)
            q.connect(b3.socket())
    except BlockingIOError:
        pass
    b5 = c.bridge()
    rc = b5.wait(5)
    tap.ok(rc not in (None, 0) and "another device plugin serves it" in b5.log_text(),
           "a listener with a full backlog at the socket path: refused (%s)" % rc, b5.log_text())
    for q in queued + [hung]:
        q.close()
    # A symlink in place of our socket is never followed or removed.
    target = os.path.join(c.work, "victim")
    open(target, "w").close()
    if os.path.lexists(b3.socket()):
        os.unlink(b3.socket())
    os.symlink(target, b3.socket())
    b4 = c.bridge()
    rc = b4.wait(10)
    tap.ok(rc not in (None, 0) and os.path.islink(b3.socket()) and os.path.exists(target),
           "a symlink at the socket path: refused, left alone (%s)" % rc, b4.log_text())


def sc_shared(c):
    tap = c.tap
    b, _, lst = c.up(["--shared", "4"])
    pb = c.kubelet.pb
    ids = [d.ID for d in lst]
    want = ["%s-s%d" % (p, k) for p in sorted(DGX_NUMA) for k in range(4)]
    tap.ok(sorted(ids) == sorted(want), "--shared 4: 40 IDs <pci>-s<k>", ids[:6])
    tap.ok(all(numa_of(d) == [DGX_NUMA[d.ID[:12]]] for d in lst), "replicas carry the NUMA node")
    stub = c.kubelet.plugin_stub()
    resp = stub.Allocate(alloc(pb, ["0000:1a:00.0-s2", "0000:1a:00.0-s0", "0000:9b:00.0-s3"]))
    cr = resp.container_responses[0]
    tap.ok([d.name for d in cr.cdi_devices] ==
           ["rdma.example/hca=mlx5_0", "rdma.example/hca=mlx5_5"],
           "two replicas of one HCA: its CDI name once", [d.name for d in cr.cdi_devices])
    tap.ok(dict(cr.envs) == {"RDMA_CDI_DEVICES": "mlx5_0,mlx5_5"}, "env once per HCA")
    _, defined = spec_names(b.spec_path())
    tap.ok({"mlx5_0", "mlx5_5"} <= defined, "names resolve in the spec")
    r = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
        pb.ContainerPreferredAllocationRequest(available_deviceIDs=want,
                                               must_include_deviceIDs=["0000:3b:00.0-s1"],
                                               allocation_size=3)]))
    got = list(r.container_responses[0].deviceIDs)
    tap.ok(got[0] == "0000:3b:00.0-s1" and all(DGX_NUMA[i[:12]] == 0 for i in got),
           "shared: preferred allocation stays on the NUMA node", got)


def set_port_state(sysfs, dev, state):
    with open(os.path.join(sysfs, "class", "infiniband", dev, "ports", "1", "state"), "w") as f:
        f.write(state + "\n")


def sc_sighup(c):
    tap = c.tap
    b, stream, lst = c.up(["--rescan-interval", "0"])  # SIGHUP alone
    pb = c.kubelet.pb
    tap.ok(by_id(lst)["0000:1a:00.0"].health == "Healthy", "mlx5_0 starts Healthy")
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    b.signal(signal.SIGHUP)
    lst = stream.wait(lambda ls: len(ls) >= 2)
    tap.ok(lst is not None and by_id(lst)["0000:1a:00.0"].health == "Unhealthy",
           "SIGHUP after mlx5_0's port went DOWN: ListAndWatch sends it Unhealthy")
    stub = c.kubelet.plugin_stub()
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1a:00.0"])),
                grpc.StatusCode.INVALID_ARGUMENT, "Allocate of it is refused", "unhealthy")
    set_port_state(c.sysfs, "mlx5_0", "4: ACTIVE")
    os.unlink(os.path.join(c.dev, "infiniband", "uverbs3"))
    b.signal(signal.SIGHUP)
    # The removed node is a hotplug event too; either way the latest list must show both.
    lst = stream.wait(lambda ls: len(ls) >= 3 and by_id(ls[-1])["0000:1a:00.0"].health ==
                      "Healthy" and by_id(ls[-1])["0000:3c:00.0"].health == "Unhealthy")
    tap.ok(lst is not None and by_id(lst)["0000:1a:00.0"].health == "Healthy" and
           by_id(lst)["0000:3c:00.0"].health == "Unhealthy",
           "second SIGHUP: mlx5_0 recovered, mlx5_3 lost its uverbs node")
    tap.ok(b.log_text().count("SIGHUP: rescanning") == 2, "each SIGHUP logged")
    tap.ok(not stream.ended and b.proc.poll() is None, "same stream, bridge running")


def sc_rescan(c):
    """Health follows sysfs without any signal: the periodic rescan."""
    tap = c.tap
    b, stream, lst = c.up(extra=["--rescan-interval", "1"])
    tap.ok(by_id(lst)["0000:1a:00.0"].health == "Healthy", "mlx5_0 starts Healthy")
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    lst = stream.wait(lambda ls: len(ls) >= 2, timeout=RESCAN_WAIT)
    tap.ok(lst is not None and by_id(lst)["0000:1a:00.0"].health == "Unhealthy",
           "port DOWN: the next periodic rescan sends mlx5_0 Unhealthy", c.log())
    set_port_state(c.sysfs, "mlx5_0", "4: ACTIVE")
    lst = stream.wait(lambda ls: len(ls) >= 3, timeout=RESCAN_WAIT)
    tap.ok(lst is not None and by_id(lst)["0000:1a:00.0"].health == "Healthy",
           "port back ACTIVE: mlx5_0 recovers to Healthy", c.log())
    tap.ok("SIGHUP" not in b.log_text(), "no signal was involved")


def sc_rescan_off(c):
    """--rescan-interval 0: only SIGHUP rescans."""
    tap = c.tap
    b, stream, lst = c.up(extra=["--rescan-interval", "0"])
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    tap.ok(stream.wait(lambda ls: len(ls) >= 2, timeout=2.5) is None,
           "no periodic rescan: the list stays as it was")
    b.signal(signal.SIGHUP)
    lst = stream.wait(lambda ls: len(ls) >= 2, timeout=5)
    tap.ok(lst is not None and by_id(lst)["0000:1a:00.0"].health == "Unhealthy",
           "SIGHUP still rescans", c.log())


def sc_late_driver(c):
    """The RDMA driver loads after the bridge started: no crash loop, no stuck zero."""
    tap = c.tap
    verbs = os.path.join(c.sysfs, "class", "infiniband_verbs")
    os.rename(verbs, verbs + ".not-yet")
    b, stream, lst = c.up(["--rescan-interval", "1"])
    tap.ok(lst == [], "no uverbs yet: registered, and the device list is empty", lst)
    tap.ok(b.proc.poll() is None, "the bridge keeps running")
    spec = os.path.join(b.spec_dir, "rdma.example-hca.json")
    tap.ok(not os.path.exists(spec), "no spec written without a usable device")
    os.rename(verbs + ".not-yet", verbs)
    lst = stream.wait(lambda ls: len(ls) >= 2 and len(ls[-1]) == 10, timeout=5)
    tap.ok(lst is not None, "driver loaded: the next rescan advertises all 10 HCAs", c.log())
    tap.ok(os.path.exists(spec) and "mlx5_0" in spec_names(spec)[1],
           "and the spec defines them before they are advertised")
    resp = c.kubelet.plugin_stub().Allocate(alloc(c.kubelet.pb, ["0000:1a:00.0"]))
    tap.ok([d.name for d in resp.container_responses[0].cdi_devices] ==
           ["rdma.example/hca=mlx5_0"], "Allocate works on the late device")


def sc_sigterm(c):
    tap = c.tap
    b, stream, _ = c.up()
    for sig in (signal.SIGTERM, signal.SIGINT):
        t0 = time.monotonic()
        b.signal(sig)
        rc = b.wait(10)
        tap.ok(rc == 0, "%s: exit 0 (%s) in %.0f ms" % (sig.name, rc, (time.monotonic() - t0) * 1e3),
               b.log_text())
        tap.ok(not os.path.lexists(b.socket()), "%s: socket removed" % sig.name)
        tap.ok(stream.wait_end(5), "%s: the ListAndWatch stream ended" % sig.name)
        if sig == signal.SIGTERM:
            b = c.bridge()
            c.registered(2)
            stream, _ = c.first_list()
    # Signals that arrive together (or while stopping) still end in a clean exit 0, not
    # in death by the second one. SIGSTOP makes them pending at once, deterministically.
    b = c.bridge()
    c.registered(3)
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCONT):
        b.signal(sig)
    rc = b.wait(10)
    tap.ok(rc == 0, "SIGTERM, SIGINT and SIGHUP at once: exit 0 (%s)" % rc, b.log_text())
    tap.ok(not os.path.lexists(b.socket()), "... socket removed")


def sc_kubelet_absent(c):
    tap = c.tap
    b = c.bridge()
    time.sleep(1.5)
    tap.ok(b.proc.poll() is None, "no kubelet.sock: the bridge keeps running")
    tap.ok(stat.S_ISSOCK(os.lstat(b.socket()).st_mode), "and serves its socket")
    tap.ok("waiting for the kubelet" in b.log_text(), "and says it waits", b.log_text())
    # A regular file named kubelet.sock is no kubelet: waited past, and said so.
    kubelet_sock = os.path.join(c.plugin_dir, "kubelet.sock")
    b.stop()
    open(kubelet_sock, "w").close()
    b = c.bridge()
    tap.ok(b.wait_log("kubelet.sock is not a socket") and b.proc.poll() is None,
           "kubelet.sock a regular file: the bridge waits and says why", b.log_text())
    os.unlink(kubelet_sock)
    k = c.start_kubelet()
    reg = k.wait_registrations(1, 5)
    tap.ok(reg is not None, "kubelet.sock appears: registered", b.log_text())
    if reg:
        dt = reg[0] - k.started_at
        tap.ok(dt < 1.0, "registered %.1f ms after kubelet.sock appeared" % (dt * 1e3))
    # The plugin dir itself absent at start: created, then the same.
    c2 = Ctx(c.args, tap)
    kd.cleanup(c2.plugin_dir)
    b2 = c2.bridge()
    tap.ok(b2.wait_log("created plugin directory") and b2.proc.poll() is None,
           "a missing plugin dir is created and waited in", b2.log_text())
    b2.stop()
    kd.cleanup(c2.work)


def sc_register_refused(c):
    """A kubelet that rejects Register: the bridge retries with backoff, never exits."""
    tap = c.tap
    k = c.kubelet = kd.Kubelet(c.plugin_dir, c.args.proto)
    calls = []
    orig = k.Register

    def reject(request, context):
        calls.append(time.monotonic())
        if len(calls) < 3:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "not yet")
        return orig(request, context)

    k.Register = reject
    k.start()
    b = c.bridge()
    reg = k.wait_registrations(1, 10)
    tap.ok(reg is not None and len(calls) == 3, "rejected twice, registered on the third try",
           b.log_text())
    tap.ok(b.log_text().count("Register with") == 2 and "retrying registration" in b.log_text(),
           "failures and retries logged")


def sc_valgrind(c):
    """The daemon under valgrind through a busy life: every call, bad requests, a kubelet
    restart, SIGHUP, dropped streams, hotplug, periodic refreshes, config reloads (a pool
    added, an invalid file, a pool removed), SIGTERM. Exit 0 means no error and no leak."""
    tap = c.tap
    k = c.start_kubelet()
    pb = k.pb
    # "possibly lost" is left out: abseil's random pool (used by gRPC's backoff) is a
    # process-lifetime static that valgrind sees only through interior pointers.
    # --trace-children: `rdma-cdi bridge` execs rdma-cdi-bridge, the daemon under test.
    vg = ["valgrind", "--trace-children=yes", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
          "--error-exitcode=99", "--track-fds=no", "--quiet"]
    cm = ConfigMap(os.path.join(c.work, "cm"),
                   "pools:\n  - resourceName: rdma.example/hca\n")
    port = free_port()
    b = c.bridge(["--config", cm.path, "--rescan-interval", "1", "--metrics-address",
                  "127.0.0.1:%d" % port], prefix=vg)
    c.registered(timeout=60)
    c.first_list(timeout=30)
    stub = k.plugin_stub()
    r = stub.Allocate(alloc(pb, ["0000:1a:00.0"], ["0000:9a:00.0", "0000:9b:00.0"]), timeout=30)
    tap.ok(len(r.container_responses) == 2, "Allocate under valgrind")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["dev-%d" % i for i in range(10000)]),
                                           timeout=30),
                grpc.StatusCode.INVALID_ARGUMENT, "10,000 unknown IDs under valgrind")
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:1a:00.0", "0000:1a:00.0"]), timeout=30),
                grpc.StatusCode.INVALID_ARGUMENT, "duplicate under valgrind")
    r = stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
        pb.ContainerPreferredAllocationRequest(available_deviceIDs=IB8,
                                               must_include_deviceIDs=["0000:1a:00.0"],
                                               allocation_size=2)]), timeout=30)
    tap.ok(list(r.container_responses[0].deviceIDs) == ["0000:1a:00.0", "0000:1b:00.0"],
           "GetPreferredAllocation under valgrind")
    extra = [kd.Stream(stub, pb) for _ in range(3)]
    tap.ok(all(s.wait(timeout=30) is not None for s in extra), "extra streams under valgrind")
    for s in extra:
        s.cancel()
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    b.signal(signal.SIGHUP)
    s = k.latest_stream()
    tap.ok(s.wait(lambda ls: len(ls) >= 2, timeout=30) is not None, "SIGHUP rescan under valgrind")
    k.restart()
    tap.ok(k.wait_registrations(1, 30) is not None, "kubelet restart under valgrind")
    tap.ok(k.latest_stream().wait(timeout=30) is not None, "new stream under valgrind")
    s = k.latest_stream()
    hca = Hca(c, "mlx5_3", "uverbs3")
    hca.unplug()
    tap.ok(s.wait(lambda ls: "0000:3c:00.0" not in by_id(ls[-1]), 30) is not None,
           "hot-unplug under valgrind")
    hca.replug()
    tap.ok(s.wait(lambda ls: "0000:3c:00.0" in by_id(ls[-1]), 30) is not None,
           "re-plug under valgrind")
    time.sleep(2.5)  # periodic refreshes
    cm.update(POOLS_IB_ROCE)
    tap.ok(k.wait_resource("rdma.example/roce", 30) is not None,
           "config reload adding pools under valgrind", b.log_text())
    cm.update("pools: [ {resourceName: rdma.example/ib, mode: sideways} ]\n")
    tap.ok(b.wait_log("rejected, the previous config stays in force", timeout=30),
           "an invalid config under valgrind")
    cm.update(POOLS_ROCE)
    tap.ok(b.wait_log("pools: 0 added, 1 kept, 1 removed", timeout=30),
           "a reload removing pools under valgrind", b.log_text())
    m, _, _ = scrape(c, port)
    H = "rdma.example/hca"  # removed by the reloads: its counters stay
    tap.ok(metric(m, "rdma_cdi_allocate_total", resource=H, result="ok") == 1 and
           metric(m, "rdma_cdi_allocate_total", resource=H, result="rejected") == 2 and
           metric(m, "rdma_cdi_config_reloads_total", result="rejected") == 1,
           "metrics scraped under valgrind")
    status, _, _ = http_get(port, "/nope")
    tap.ok(status == 404, "a 404 under valgrind")
    b.signal(signal.SIGTERM)
    rc = b.wait(120)
    tap.ok(rc == 0, "SIGTERM: exit 0, no valgrind error or leak (rc %s)" % rc, b.log_text())
    tap.ok(not [f for f in os.listdir(c.plugin_dir) if f.startswith("rdma-cdi")],
           "every socket of ours removed", os.listdir(c.plugin_dir))


# ---- hotplug, health, failures (the Sysfs Watcher) -----------------------------------


class Hca:
    """Takes one HCA out of the fixture and puts it back, as hot-unplug and re-plug do:
    its class entries vanish from sysfs and devtmpfs removes its device node."""

    def __init__(self, c, name, uverbs):
        self.c = c
        self.links = [os.path.join(c.sysfs, "class", "infiniband", name),
                      os.path.join(c.sysfs, "class", "infiniband_verbs", uverbs)]
        self.targets = [os.readlink(p) for p in self.links]
        self.node = os.path.join(c.dev, "infiniband", uverbs)
        st = os.stat(self.node)
        self.rdev, self.mode = st.st_rdev, st.st_mode

    def unplug(self):
        for p in self.links:
            os.unlink(p)
        os.unlink(self.node)

    def replug(self):
        for p, t in zip(self.links, self.targets):
            os.symlink(t, p)
        os.mknod(self.node, self.mode, self.rdev)


def spec_has(b, name):
    try:
        return name in spec_names(b.spec_path())[1]
    except (OSError, ValueError):
        return None


def sc_hotplug(c):
    """Device nodes come and go: spec and ListAndWatch follow within 1 s, in order."""
    tap = c.tap
    b, stream, lst = c.up(["--rescan-interval", "0"])  # inotify alone
    hca = Hca(c, "mlx5_3", "uverbs3")
    n = len(stream.lists)
    t0 = time.monotonic()
    hca.unplug()
    lst = stream.wait(lambda ls: len(ls) > n and "0000:3c:00.0" not in by_id(ls[-1]), 1.0)
    tap.ok(lst is not None and len(lst) == 9, "unplugged mlx5_3 leaves the list within 1 s "
           "(%.0f ms)" % ((time.monotonic() - t0) * 1000), c.log())
    tap.ok(b.wait_log("mlx5_3 (0000:3c:00.0): removed"), "the removal is logged with device "
           "and PCI address", b.log_text())
    deadline = time.monotonic() + 2
    while spec_has(b, "mlx5_3") and time.monotonic() < deadline:
        time.sleep(0.01)
    tap.ok(spec_has(b, "mlx5_3") is False, "and the spec no longer defines it")
    b.wait_log("written (9 usable")
    log = b.log_text()
    adv, wrote = log.rfind("advertising 9 device IDs"), log.rfind("written (9 usable")
    tap.ok(0 <= adv < wrote, "removal: the list without it went out before the spec lost it",
           log)
    stub = c.kubelet.plugin_stub()
    expect_code(tap, lambda: stub.Allocate(alloc(c.kubelet.pb, ["0000:3c:00.0"])),
                grpc.StatusCode.INVALID_ARGUMENT, "Allocate of the unplugged HCA is refused",
                "unknown")
    n = len(stream.lists)
    hca.replug()
    lst = stream.wait(lambda ls: len(ls) > n and "0000:3c:00.0" in by_id(ls[-1]), 1.0)
    tap.ok(lst is not None and len(lst) == 10, "re-plugged: advertised again within 1 s",
           c.log())
    tap.ok(spec_has(b, "mlx5_3") is True, "and the spec defined it before it was advertised")
    b.wait_log("advertising 10 device IDs", count=2)
    log = b.log_text()
    tap.ok(log.rfind("written (10 usable") < log.rfind("advertising 10 device IDs"),
           "addition: spec written, then advertised", log)
    resp = stub.Allocate(alloc(c.kubelet.pb, ["0000:3c:00.0"]))
    tap.ok([d.name for d in resp.container_responses[0].cdi_devices] ==
           ["rdma.example/hca=mlx5_3"], "Allocate works on the re-plugged HCA")
    tap.ok(not stream.ended and len(c.kubelet.registrations) == 1,
           "same stream, no re-registration needed")


def sc_port_flap(c):
    """A port DOWN turns the HCA Unhealthy, ACTIVE again turns it Healthy; both logged, with
    structured fields for machines (--log-format json)."""
    tap = c.tap
    b, stream, lst = c.up(["--rescan-interval", "1", "--log-format", "json"])

    def change(kind):
        for line in b.log_text().splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("change") == kind and j.get("device") == "mlx5_2":
                return j
        return None

    set_port_state(c.sysfs, "mlx5_2", "1: DOWN")
    lst = stream.wait(lambda ls: by_id(ls[-1])["0000:3b:00.0"].health == "Unhealthy",
                      RESCAN_WAIT)
    tap.ok(lst is not None, "port 1 DOWN: Unhealthy within one rescan interval", c.log())
    tap.ok(b.wait_log("mlx5_2 (0000:3b:00.0): Unhealthy: port 1 DOWN"),
           "logged with device, PCI address and reason", b.log_text())
    j = change("unhealthy")
    tap.ok(j and j["pci"] == "0000:3b:00.0" and j["reason"] == "port 1 DOWN" and
           j["level"] == "warning", "as JSON fields device, pci, change, reason", j)
    set_port_state(c.sysfs, "mlx5_2", "4: ACTIVE")
    lst = stream.wait(lambda ls: by_id(ls[-1])["0000:3b:00.0"].health == "Healthy",
                      RESCAN_WAIT)
    tap.ok(lst is not None, "ACTIVE again: Healthy again (recovery)", c.log())
    tap.ok(b.wait_log("mlx5_2 (0000:3b:00.0): Healthy again") and change("healthy"),
           "recovery logged")


# After a failed spec write both daemons offer the devices of the current scan whose names
# the spec on disk defines, the spec of the last write that succeeded (docs/bridge.md; the
# DRA driver's twin is tests/dra/test-dra.py spec-blocked).


def sc_spec_blocked(c):
    """The spec cannot be written: health and removals still reach the kubelet, a device
    that arrives waits for a write that succeeds; retried."""
    tap = c.tap
    new = Hca(c, "mlx5_3", "uverbs3")
    new.unplug()  # it arrives while the spec is blocked
    b, stream, lst = c.up(["--rescan-interval", "1"])
    tap.ok(len(lst) == 9 and "0000:3c:00.0" not in by_id(lst), "9 HCAs at start", lst)
    path = b.spec_path()
    foreign = write_foreign_spec(path)  # a hand-written foreign spec sits at our path now
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    hca = Hca(c, "mlx5_2", "uverbs2")
    hca.unplug()
    lst = stream.wait(lambda ls: "0000:3b:00.0" not in by_id(ls[-1]) and
                      by_id(ls[-1])["0000:1a:00.0"].health == "Unhealthy", 3)
    tap.ok(lst is not None, "spec blocked: the removal and the port DOWN still reach the "
           "kubelet", c.log())
    tap.ok(b.wait_log("writing the CDI spec into") and "move the file" in b.log_text(),
           "the failure is logged with its fix", b.log_text())
    tap.ok(open(path).read() == foreign, "the foreign file is left alone")
    new.replug()
    time.sleep(1.5)
    tap.ok("0000:3c:00.0" not in by_id(stream.lists[-1]),
           "a device that arrived is not advertised while no spec on disk defines it")
    os.unlink(path)
    lst = stream.wait(lambda ls: "0000:3c:00.0" in by_id(ls[-1]), 5)
    tap.ok(lst is not None and spec_has(b, "mlx5_3") is True,
           "the way cleared: the retry writes the spec, then the device is advertised",
           c.log())
    tap.ok(b.proc.poll() is None, "the bridge kept running")


def sc_spec_blocked_return(c):
    """A device that leaves and comes back while writes fail is advertised again when the
    file on disk still defines it."""
    tap = c.tap
    c.start_kubelet()
    b = c.bridge(["--rescan-interval", "0"], start=False)  # hotplug events and retries alone
    path = b.spec_path()
    os.makedirs(b.spec_dir, exist_ok=True)
    write_foreign_spec(path)  # at our path from the start
    b.start()
    c.registered()
    stream, lst = c.first_list()
    tap.ok(len(lst) == 0, "started while the spec cannot be written: nothing advertised",
           c.log())
    os.unlink(path)
    lst = stream.wait(lambda ls: len(ls[-1]) == 10, 10)
    tap.ok(lst is not None and b.log_text().count("written again after failures") == 1,
           "the retry writes the spec, then all 10 are advertised", c.log())
    blocked = block_spec(path)
    hca = Hca(c, "mlx5_2", "uverbs2")
    hca.unplug()
    lst = stream.wait(lambda ls: "0000:3b:00.0" not in by_id(ls[-1]), 2)
    tap.ok(lst is not None and len(lst) == 9, "spec blocked: the device that left is "
           "withdrawn at once", c.log())
    tap.ok(b.wait_log("writing the CDI spec into") and "move the file" in b.log_text(),
           "the write fails: a file not ours is at our path", b.log_text())
    n = len(stream.lists)
    hca.replug()
    lst = stream.wait(lambda ls: len(ls) > n and "0000:3b:00.0" in by_id(ls[-1]), 2)
    tap.ok(lst is not None and len(lst) == 10, "back while writes still fail: advertised "
           "again, the file on disk defines it", c.log())
    tap.ok(open(path).read() == blocked and "mlx5_2" in spec_names(path)[1] and
           b.log_text().count("written again after failures") == 1,
           "no write succeeded meanwhile: the file on disk is the blocked copy")
    resp = c.kubelet.plugin_stub().Allocate(alloc(c.kubelet.pb, ["0000:3b:00.0"]))
    tap.ok([d.name for d in resp.container_responses[0].cdi_devices] ==
           ["rdma.example/hca=mlx5_2"], "Allocate hands it out under the name the file on "
           "disk defines")
    os.unlink(path)
    tap.ok(b.wait_log("written again after failures", timeout=35, count=2) and
           spec_has(b, "mlx5_2") is True, "the retry then writes the spec", b.log_text())
    tap.ok(len(stream.lists[-1]) == 10 and not stream.ended, "and all 10 stay advertised")


def sc_fifo(c):
    """A FIFO where a sysfs attribute should be: the daemon stays responsive."""
    tap = c.tap
    b, stream, lst = c.up(["--rescan-interval", "1"])
    state = os.path.join(c.sysfs, "class", "infiniband", "mlx5_2", "ports", "1", "state")
    os.unlink(state)
    os.mkfifo(state)
    b.signal(signal.SIGHUP)
    time.sleep(1.5)  # a rescan or two over the FIFO
    c.kubelet.restart()  # forgets earlier registrations
    reg = c.kubelet.wait_registrations(1, 5)
    tap.ok(reg is not None, "kubelet restart with a FIFO in sysfs: registered again",
           b.log_text())
    t0 = time.monotonic()
    b.signal(signal.SIGTERM)
    rc = b.wait(5)
    tap.ok(rc == 0, "SIGTERM: exit 0 in %.2f s" % (time.monotonic() - t0), b.log_text())


# ---- pools and live config ---------------------------------------------------------------

POOLS_IB_ROCE = """\
pools:
  - resourceName: rdma.example/ib
    ncclEnv: true
    selectors:
      linkLayers: [InfiniBand]
  - resourceName: rdma.example/roce
    mode: shared
    sharedSlots: 4
    selectors:
      linkLayers: [Ethernet]
"""
POOLS_ROCE = """\
pools:
  - resourceName: rdma.example/roce
    selectors:
      linkLayers: [Ethernet]
"""
POOLS_IB = """\
pools:
  - resourceName: rdma.example/ib
    selectors:
      linkLayers: [InfiniBand]
      numaNodes: [0]
"""


class ConfigMap:
    """A directory laid out as the kubelet lays out a ConfigMap volume: config.yaml ->
    ..data/config.yaml, ..data -> ..<timestamp>/; an update writes a new timestamp dir and
    swaps ..data atomically (rename of a new symlink over it)."""

    def __init__(self, root, text):
        self.root = root
        self.n = 0
        os.makedirs(root)
        self.update(text)
        os.symlink("..data/config.yaml", os.path.join(root, "config.yaml"))

    def update(self, text):
        self.n += 1
        ts = "..2026_12_01_00_00_%02d.%d" % (self.n, os.getpid())
        os.makedirs(os.path.join(self.root, ts))
        with open(os.path.join(self.root, ts, "config.yaml"), "w") as f:
            f.write(text)
        tmp = os.path.join(self.root, "..data_tmp")
        os.symlink(ts, tmp)
        old = os.path.realpath(os.path.join(self.root, "..data"))
        os.rename(tmp, os.path.join(self.root, "..data"))
        if self.n > 1:
            shutil.rmtree(old)

    @property
    def path(self):
        return os.path.join(self.root, "config.yaml")


def env_of(resp, name):
    return resp.container_responses[0].envs.get(name)


def sc_pools(c):
    """Two pools from a config: two resources, two sockets, devices split by fabric."""
    tap = c.tap
    cfg = os.path.join(c.work, "config.yaml")
    with open(cfg, "w") as f:
        f.write(POOLS_IB_ROCE)
    c.start_kubelet()
    b = c.bridge(["--config", cfg])
    ib = c.kubelet.wait_resource("rdma.example/ib", 10)
    roce = c.kubelet.wait_resource("rdma.example/roce", 10)
    tap.ok(ib is not None and roce is not None, "both pools registered", c.log())
    if ib is None or roce is None:
        return
    endpoints = sorted(r[1].endpoint for r in c.kubelet.registrations)
    tap.ok(endpoints == [kd.socket_name("rdma.example/ib"), kd.socket_name("rdma.example/roce")],
           "each pool on its own socket", endpoints)
    ib_list, roce_list = ib.wait(), roce.wait()
    tap.ok(ib_list is not None and sorted(by_id(ib_list)) == sorted(IB8),
           "the IB pool holds the 8 InfiniBand HCAs")
    tap.ok(roce_list is not None and len(roce_list) == 8 and
           {d.ID.rsplit("-s", 1)[0] for d in roce_list} == {"0000:5e:00.0", "0000:d8:00.0"},
           "the shared RoCE pool: 2 HCAs x 4 slots", [d.ID for d in roce_list or []])
    stub = c.kubelet.plugin_stub(kd.socket_name("rdma.example/ib"))
    resp = stub.Allocate(alloc(c.kubelet.pb, ["0000:3b:00.0", "0000:9a:00.0"]))
    tap.ok(env_of(resp, "NCCL_IB_HCA") == "=mlx5_2,mlx5_4" and
           env_of(resp, "UCX_NET_DEVICES") == "mlx5_2:1,mlx5_4:1",
           "ncclEnv: NCCL_IB_HCA and UCX_NET_DEVICES name exactly the allocated HCAs",
           dict(resp.container_responses[0].envs))
    expect_code(tap, lambda: stub.Allocate(alloc(c.kubelet.pb, ["0000:5e:00.0"])),
                grpc.StatusCode.INVALID_ARGUMENT, "a RoCE HCA is not the IB pool's", "unknown")
    tap.ok(spec_has(b, "mlx5_8") and spec_has(b, "mlx5_0"), "one spec serves both pools")


def sc_reload(c):
    """Live reload through a ConfigMap-style swap: resources appear and vanish; an invalid
    config is rejected in one line and the previous one stays in force."""
    tap = c.tap
    cm = ConfigMap(os.path.join(c.work, "cm"), POOLS_IB)
    c.start_kubelet()
    b = c.bridge(["--config", cm.path])
    ib = c.kubelet.wait_resource("rdma.example/ib", 10)
    tap.ok(ib is not None and len(ib.wait() or []) == 4, "start: the IB pool of NUMA node 0",
           c.log())
    ib_sock = os.path.join(c.plugin_dir, kd.socket_name("rdma.example/ib"))
    roce_sock = os.path.join(c.plugin_dir, kd.socket_name("rdma.example/roce"))
    t0 = time.monotonic()
    cm.update(POOLS_IB_ROCE)
    roce = c.kubelet.wait_resource("rdma.example/roce", 5)
    tap.ok(roce is not None and len(roce.wait() or []) == 8,
           "ConfigMap swap adding a pool: it registers (%.0f ms)" %
           ((time.monotonic() - t0) * 1000), c.log())
    lst = ib.wait(lambda ls: len(ls[-1]) == 8, 3)
    tap.ok(lst is not None and not ib.ended, "the changed IB pool now holds all 8 IB HCAs, "
           "on the same stream", c.log())
    n_reg = len(c.kubelet.registrations)
    cm.update("pools: [ {resourceName: rdma.example/ib, mode: sideways} ]\n")
    tap.ok(b.wait_log("rejected, the previous config stays in force"),
           "an invalid config is rejected", b.log_text())
    line = [l for l in b.log_text().splitlines() if "rejected" in l]
    tap.ok(len(line) == 1 and "config.yaml:1:" in line[0] and "mode" in line[0],
           "in one line naming file, line, column and key", line)
    time.sleep(0.5)
    tap.ok(os.path.exists(ib_sock) and os.path.exists(roce_sock) and
           len(c.kubelet.registrations) == n_reg and not ib.ended and not roce.ended,
           "both pools stay served, nothing re-registered")
    cm.update(POOLS_ROCE)
    deadline = time.monotonic() + 3
    while os.path.exists(ib_sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    tap.ok(not os.path.exists(ib_sock) and ib.wait_end(3),
           "a pool removed: its socket goes and its stream ends (the kubelet drops it)",
           c.log())
    lst = roce.wait(lambda ls: len(ls[-1]) == 2, 3)
    tap.ok(lst is not None, "the RoCE pool, now exclusive, advertises its 2 HCAs", c.log())
    tap.ok(b.proc.poll() is None, "the bridge kept running")


def sc_config_bad(c):
    """A broken config at start: refused with file, line, column and key; exit 1."""
    tap = c.tap
    cfg = os.path.join(c.work, "config.yaml")
    with open(cfg, "w") as f:
        f.write("pools:\n  - resourceName: rdma.example/ib\n    selectrs: {}\n")
    c.start_kubelet()
    b = c.bridge(["--config", cfg])
    rc = b.wait(10)
    tap.ok(rc == 1, "exit 1 (%s)" % rc, b.log_text())
    tap.ok("config.yaml:3:5" in b.log_text() and "selectrs" in b.log_text(),
           "the message names file, line, column and key", b.log_text())
    missing = c.bridge(["--config", os.path.join(c.work, "nope.yaml")])
    rc = missing.wait(10)
    tap.ok(rc == 1 and "does not exist" in missing.log_text(),
           "an explicit --config that does not exist: exit 1", missing.log_text())


def sc_shared_bound(c):
    """--shared 100 beyond the 16,384-ID bound (issue 6 met it on 2,048 HCAs: a 6.6 MiB list
    the kubelet drops): said with the numbers, not sent. 200 HCAs keep the fixture cheap."""
    tap = c.tap
    c.start_kubelet()
    b = c.bridge(["--shared", "100"])
    tap.ok(b.wait_log("exceeds 16384", timeout=60), "the bridge says why", b.log_text())
    line = [l for l in b.log_text().splitlines() if "exceeds 16384" in l]
    tap.ok(line and "200 HCAs x 100 shared slots = 20000 device IDs" in line[0] and
           "4 MiB" in line[0], "with the numbers and the limit", line)
    reg = c.kubelet.wait_registrations(1, 30)
    lst = c.kubelet.latest_stream().wait(timeout=10) if reg else None
    tap.ok(lst is None or len(lst) == 0, "no oversized list is sent")
    cfg = os.path.join(c.work, "config.yaml")
    with open(cfg, "w") as f:
        f.write("pools:\n  - resourceName: rdma.example/vf\n    mode: shared\n"
                "    sharedSlots: 100\n")
    b2 = c.bridge(["--config", cfg, "--plugin-dir", os.path.join(c.work, "p2")])
    tap.ok(b2.wait_log("20000 device IDs exceeds 16384", timeout=60),
           "the same pool from a config file: refused with the numbers", b2.log_text())


def sc_plugin_dir_gone(c):
    """The plugin dir deleted and re-created (a kubelet reinstall): the bridge waits for it,
    then serves and registers again."""
    tap = c.tap
    b, stream, lst = c.up()
    c.kubelet.stop()
    for _ in range(50):  # the bridge may serve again into it while it is being removed
        try:
            shutil.rmtree(c.plugin_dir)
            break
        except OSError:
            time.sleep(0.05)
    tap.ok(b.wait_log("went away: waiting for it to come back"), "the loss is logged",
           b.log_text())
    time.sleep(1)
    tap.ok(b.proc.poll() is None, "the bridge keeps running without its plugin dir")
    os.makedirs(c.plugin_dir)
    c.kubelet.registrations = []
    c.kubelet.start()
    reg = c.kubelet.wait_registrations(1, 10)
    tap.ok(reg is not None, "the dir is back: served and registered again", b.log_text())
    lst = c.kubelet.latest_stream().wait(timeout=5) if reg else None
    tap.ok(lst is not None and len(lst) == 10, "with the full device list")


# ---- metrics (--metrics-address) ------------------------------------------------------

def scrape(c, port):
    status, headers, body = http_get(port, "/metrics")
    samples, errors = parse_exposition(body)
    c.tap.ok(status == 200 and not errors, "GET /metrics: 200 and every line valid "
             "exposition format", "\n".join(errors[:10]) + "\n" + body[:2000])
    return samples, headers, body


def sc_metrics(c):
    """--metrics-address: the counters and gauges follow Allocate, health, rescans,
    registrations, spec write failures and config reloads; only GET /metrics answers."""
    tap = c.tap
    port = free_port()
    cm = ConfigMap(os.path.join(c.work, "cm"), POOLS_IB)
    c.start_kubelet()
    b = c.bridge(["--config", cm.path, "--rescan-interval", "0", "--metrics-address",
                  "127.0.0.1:%d" % port])
    ib = c.kubelet.wait_resource("rdma.example/ib", 10)
    tap.ok(ib is not None and len(ib.wait() or []) == 4, "the IB pool of NUMA node 0", c.log())
    if ib is None:
        return
    tap.ok(b.wait_log("serving metrics on http://127.0.0.1:%d/metrics" % port),
           "the address is logged", b.log_text())
    m, headers, _ = scrape(c, port)
    tap.ok(headers.get("content-type", "").startswith("text/plain; version=0.0.4"),
           "Content-Type text/plain; version=0.0.4", headers)
    check_build(tap, m, c.args.rdma_cdi, "bridge", b.log_text())
    status, _, body = http_get(port, "/healthz")
    tap.ok(status == 200 and body == "ok\n", "a healthy bridge: /healthz 200 ok (%s %r)" %
           (status, body))
    # The mode the start line logs is the one exported (this kernel's, whatever it is).
    said = re.search(r"RDMA netns mode: (exclusive|shared|unknown)", b.log_text())
    mode = said.group(1) if said else None
    tap.ok(mode is not None and metric(m, "rdma_cdi_netns_mode", mode=mode) == 1 and
           sum(1 for k in m if k[0] == "rdma_cdi_netns_mode") == 1,
           "the start logs the RDMA netns mode and rdma_cdi_netns_mode{mode=%s} 1 exports it"
           % mode, b.log_text())
    R = "rdma.example/ib"
    tap.ok(metric(m, "rdma_cdi_devices", resource=R, health="healthy") == 4 and
           metric(m, "rdma_cdi_devices", resource=R, health="unhealthy") == 0,
           "start: 4 healthy devices, 0 unhealthy")
    health = series(m, "rdma_cdi_device_healthy", pool=R)
    tap.ok(len(health) == 4 and all(v == 1 for v in health.values()) and
           sorted(dict(k)["pci"] for k in health) == sorted(p for p in IB8 if DGX_NUMA[p] == 0)
           and all(dict(k)["reason"] == "" and DGX_NAMES[dict(k)["pci"]] == dict(k)["device"]
                   for k in health),
           "rdma_cdi_device_healthy: the pool's 4 devices by RDMA name and PCI address, 1, "
           "no reason", health)
    since = series(m, "rdma_cdi_device_health_last_change_timestamp_seconds", pool=R)
    tap.ok(len(since) == 4 and all(abs(v - time.time()) < 60 for v in since.values()),
           "each with its first-seen time", since)
    m = settle(port, m, 1, "rdma_cdi_registrations_total", resource=R, result="ok")
    tap.ok(metric(m, "rdma_cdi_registrations_total", resource=R, result="ok") == 1,
           "one registration, ok")
    m = settle(port, m, 1, "rdma_cdi_kubelet_registered", resource=R)
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=R) == 1,
           "rdma_cdi_kubelet_registered 1")
    tap.ok(metric(m, "rdma_cdi_rescans_total", reason="start", result="ok") == 1 and
           check_histogram(m, "rdma_cdi_rescan_duration_seconds") == 1,
           "the first scan counted and its duration observed")
    tap.ok(metric(m, "rdma_cdi_allocate_total", resource=R, result="ok") == 0,
           "no Allocate yet")

    pb = c.kubelet.pb
    stub = c.kubelet.plugin_stub(kd.socket_name(R))
    stub.Allocate(alloc(pb, ["0000:1a:00.0"]))
    expect_code(tap, lambda: stub.Allocate(alloc(pb, ["0000:ff:00.0"])),
                grpc.StatusCode.INVALID_ARGUMENT, "Allocate of an unknown ID is rejected")
    stub.GetPreferredAllocation(pb.PreferredAllocationRequest(container_requests=[
        pb.ContainerPreferredAllocationRequest(available_deviceIDs=IB8[:4],
                                               allocation_size=1)]))
    set_port_state(c.sysfs, "mlx5_0", "1: DOWN")
    b.signal(signal.SIGHUP)
    tap.ok(ib.wait(lambda ls: by_id(ls[-1])["0000:1a:00.0"].health == "Unhealthy", 5)
           is not None, "port DOWN + SIGHUP: mlx5_0 Unhealthy", c.log())
    m, _, _ = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_allocate_total", resource=R, result="ok") == 1 and
           metric(m, "rdma_cdi_allocate_total", resource=R, result="rejected") == 1,
           "Allocate: 1 ok, 1 rejected")
    n = check_histogram(m, "rdma_cdi_allocate_duration_seconds", resource=R)
    total = metric(m, "rdma_cdi_allocate_duration_seconds_sum", resource=R)
    tap.ok(n == 2 and total is not None and 0 < total < 1,
           "Allocate latency: 2 observations, cumulative buckets, sum %s s" % total)
    tap.ok(metric(m, "rdma_cdi_preferred_allocation_total", resource=R, result="ok") == 1,
           "GetPreferredAllocation: 1 ok")
    tap.ok(metric(m, "rdma_cdi_devices", resource=R, health="healthy") == 3 and
           metric(m, "rdma_cdi_devices", resource=R, health="unhealthy") == 1,
           "after the port went DOWN: 3 healthy, 1 unhealthy",
           [(k, v) for k, v in m.items() if k[0] == "rdma_cdi_devices"])
    down = series(m, "rdma_cdi_device_healthy", device="mlx5_0", pool=R)
    tap.ok(len(down) == 1 and list(down.values())[0] == 0 and
           "DOWN" in dict(list(down)[0])["reason"],
           "rdma_cdi_device_healthy of mlx5_0: 0, the reason says DOWN", down)
    key = dict(device="mlx5_0", pci="0000:1a:00.0", pool=R)
    tap.ok((metric(m, "rdma_cdi_device_health_last_change_timestamp_seconds", **key) or 0) >=
           since.get(tuple(sorted(key.items())), 1e18),
           "its last change is stamped again")
    tap.ok(metric(m, "rdma_cdi_rescans_total", reason="request", result="ok") == 1 and
           check_histogram(m, "rdma_cdi_rescan_duration_seconds") == 2,
           "the SIGHUP rescan counted, duration observed")

    cm.update("pools: [ {resourceName: rdma.example/ib, mode: sideways} ]\n")
    tap.ok(b.wait_log("rejected, the previous config stays in force"), "invalid config rejected")
    m, _, _ = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_config_rejected") == 1, "rdma_cdi_config_rejected 1")
    cm.update(POOLS_IB_ROCE)
    roce = c.kubelet.wait_resource("rdma.example/roce", 5)
    tap.ok(roce is not None and ib.wait(lambda ls: len(ls[-1]) == 8, 5) is not None,
           "a reload adds the RoCE pool, the IB pool grows to 8", c.log())
    m, _, _ = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_config_reloads_total", result="applied") == 1 and
           metric(m, "rdma_cdi_config_reloads_total", result="rejected") == 1,
           "config reloads: 1 applied, 1 rejected")
    tap.ok(metric(m, "rdma_cdi_config_rejected") == 0, "rdma_cdi_config_rejected back to 0")
    roce_hcas = {}  # HCA -> healthy, from the list the kubelet has (slots "-sN" folded)
    for d in roce.wait() or []:
        roce_hcas[d.ID.rsplit("-s", 1)[0]] = d.health == "Healthy"
    tap.ok(metric(m, "rdma_cdi_devices", resource=R, health="healthy") == 7 and
           metric(m, "rdma_cdi_devices", resource=R, health="unhealthy") == 1 and
           len(roce_hcas) == 2 and
           metric(m, "rdma_cdi_devices", resource="rdma.example/roce", health="healthy") ==
           sum(roce_hcas.values()) and
           metric(m, "rdma_cdi_devices", resource="rdma.example/roce", health="unhealthy") ==
           2 - sum(roce_hcas.values()),
           "devices per pool: ib 7+1; roce its 2 HCAs as the kubelet sees them (4 slots "
           "each counted once)",
           [(k, v) for k, v in m.items() if k[0] == "rdma_cdi_devices"])
    m = settle(port, m, 1, "rdma_cdi_registrations_total", resource="rdma.example/roce",
               result="ok")
    tap.ok(metric(m, "rdma_cdi_registrations_total", resource="rdma.example/roce",
                  result="ok") == 1, "the new pool's registration counted")

    cm.update(POOLS_ROCE)
    tap.ok(b.wait_log("pools: 0 added, 1 kept, 1 removed"), "a reload removes the IB pool")
    m, _, _ = scrape(c, port)
    tap.ok(metric(m, "rdma_cdi_devices", resource=R, health="healthy") is None and
           metric(m, "rdma_cdi_allocate_total", resource=R, result="ok") == 1,
           "a removed pool: its device gauges go, its counters stay")
    tap.ok(not series(m, "rdma_cdi_device_healthy", pool=R) and
           metric(m, "rdma_cdi_kubelet_registered", resource=R) is None,
           "and its devices' health series and its registration gauge go")

    # The kubelet goes (its sockets deleted): registration lost at once, then back.
    k = c.kubelet
    k.stop()
    for name in os.listdir(c.plugin_dir):
        p = os.path.join(c.plugin_dir, name)
        if stat.S_ISSOCK(os.lstat(p).st_mode):
            os.unlink(p)
    RO = "rdma.example/roce"
    m = settle(port, m, 0, "rdma_cdi_kubelet_registered", resource=RO)
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=RO) == 0,
           "kubelet gone, sockets deleted: rdma_cdi_kubelet_registered 0")
    k.start()
    m = settle(port, m, 1, "rdma_cdi_kubelet_registered", resource=RO)
    tap.ok(metric(m, "rdma_cdi_kubelet_registered", resource=RO) == 1,
           "kubelet back: registered again, 1")

    path = b.spec_path()
    os.unlink(path)
    with open(path, "w") as f:  # a foreign spec at our path: the write must fail
        json.dump({"cdiVersion": "0.5.0", "kind": "other.example/x", "devices": []}, f)
    b.signal(signal.SIGHUP)
    tap.ok(b.wait_log("writing the CDI spec into"), "spec write fails", b.log_text())
    m, _, _ = scrape(c, port)
    tap.ok((metric(m, "rdma_cdi_spec_write_failures_total") or 0) >= 1,
           "rdma_cdi_spec_write_failures_total counts it")
    os.unlink(path)

    status, _, _ = http_get(port, "/")
    tap.ok(status == 404, "GET / is 404 (%s)" % status)
    status, _, _ = http_get(port, "/metrics/x")
    tap.ok(status == 404, "GET /metrics/x is 404 (%s)" % status)
    status, headers, _ = http_get(port, "/metrics", "POST", "x" * 100)
    tap.ok(status == 405 and "GET" in headers.get("allow", ""),
           "POST /metrics is 405 with Allow (%s)" % status)
    status, _, _ = http_get(port, "/metrics?x=" + "a" * 40000)
    tap.ok(status in (414, 431), "a 40 kB request line is refused (%s)" % status)
    tap.ok(http_get(port, "/metrics")[0] == 200, "and the server still answers")

    busy = c.bridge(["--metrics-address", "127.0.0.1:%d" % port, "--plugin-dir",
                     os.path.join(c.work, "p2")])
    rc = busy.wait(10)
    tap.ok(rc == 1 and "another process serves that port" in busy.log_text(),
           "a port in use: exit 1, said so (%s)" % rc, busy.log_text())
    for bad, why in (("localhost:9400", "numeric"), ("127.0.0.1:99999", "port"),
                     ("::1:9400", "brackets")):
        r = subprocess.run([c.args.rdma_cdi, "bridge", "--metrics-address", bad],
                           capture_output=True, text=True, timeout=10)
        tap.ok(r.returncode == 2 and bad in r.stderr and why in r.stderr,
               "--metrics-address %s: exit 2 naming the cause" % bad, r.stderr)
    tap.ok(b.proc.poll() is None, "the bridge kept running")
    b.signal(signal.SIGTERM)
    tap.ok(b.wait(10) == 0, "SIGTERM: exit 0 with the metrics server up", b.log_text())
    with socket.socket() as s:
        tap.ok(s.connect_ex(("127.0.0.1", port)) != 0, "the port is closed after exit")


SPEC_NAME = "rdma.example-hca.json"


def paused_writer_env(c, mark):
    """The environment of a writer that stops for good at the rename of its spec temp."""
    return spec_files.paused_writer_env(c.args.pause_rename, SPEC_NAME, mark)


def wait_file(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


def plant_look_alikes(c, spec_dir):
    """Files named like our temps that are not ours to remove; returns (names, holder)."""
    victim = os.path.join(c.work, "victim")
    with open(victim, "w") as f:
        f.write("not a temp\n")
    os.symlink(victim, os.path.join(spec_dir, "." + SPEC_NAME + ".LINKED"))
    nobody = os.path.join(spec_dir, "." + SPEC_NAME + ".NOBODY")
    open(nobody, "w").close()
    os.chown(nobody, 65534, 65534)
    open(os.path.join(spec_dir, ".other.example-x.json.abcdef"), "w").close()
    # A live writer's temp: held locked by this process for the whole scenario.
    holder = open(os.path.join(spec_dir, "." + SPEC_NAME + ".LOCKED"), "w")
    fcntl.flock(holder, fcntl.LOCK_EX)
    return sorted(os.listdir(spec_dir)), holder


def check_killed(tap, what, spec_dir, mark, proc):
    """proc stopped at its rename: SIGKILL it; returns the temp it left (or None)."""
    if not tap.ok(wait_file(mark), "%s stops between its write and its rename" % what):
        proc.kill()
        proc.wait()
        return None
    tmp = os.path.join(spec_dir, open(mark).read())
    try:
        with open(tmp) as f:
            whole = json.load(f).get("kind") == "rdma.example/hca"
    except (OSError, ValueError):
        whole = False
    tap.ok(whole, "its temp %s holds the whole spec" % os.path.basename(tmp))
    proc.kill()
    proc.wait()
    tap.ok(os.path.exists(tmp) and not os.path.exists(os.path.join(spec_dir, SPEC_NAME)),
           "SIGKILL there leaves the temp behind and no spec")
    return tmp


def check_restarted(tap, what, spec_dir, tmp, look_alikes):
    try:
        with open(os.path.join(spec_dir, SPEC_NAME)) as f:
            spec = json.load(f)
        valid = spec["kind"] == "rdma.example/hca" and len(spec["devices"]) > 0
    except (OSError, ValueError, KeyError):
        valid = False
    tap.ok(valid, "%s after the kill: a valid spec" % what)
    tap.ok(tmp is not None and not os.path.lexists(tmp), "and the dead writer's temp is gone")
    left = sorted(os.listdir(spec_dir))
    tap.ok(left == sorted(look_alikes + [SPEC_NAME]),
           "look-alikes kept: a symlink, another user's, another spec's, a live writer's",
           "left: %s" % left)


def sc_healthz(c):
    """/healthz is answered by the loop: a loop stuck in the rename of the spec's temp file
    fails it (503 within its bound) while /metrics still answers; released, 200 again."""
    tap = c.tap
    port = free_port()
    mark, release = os.path.join(c.work, "paused"), os.path.join(c.work, "release")
    c.start_kubelet()
    b = c.bridge(["--metrics-address", "127.0.0.1:%d" % port], start=False)
    b.start(env=spec_files.paused_writer_env(c.args.pause_rename, SPEC_NAME, mark, release))
    if not tap.ok(wait_file(mark), "the bridge's loop stops at the rename of its spec temp",
                  b.log_text()):
        return
    healthz_stuck(tap, port, "stuck bridge")
    open(release, "w").close()
    deadline, status = time.monotonic() + 10, None
    while status != 200 and time.monotonic() < deadline:
        status, _, body = http_get(port, "/healthz")
    tap.ok(status == 200 and body == "ok\n", "released: /healthz 200 ok again")
    c.registered()
    tap.ok(os.path.exists(b.spec_path()), "and the spec is written")
    b.signal(signal.SIGTERM)
    tap.ok(b.wait(10) == 0, "SIGTERM: exit 0", b.log_text())


def sc_killed_mid_write(c):
    """SIGKILL of the bridge and of `generate` between the temp's write and its rename."""
    tap = c.tap
    spec_dir = os.path.join(c.work, "cdi")
    os.makedirs(spec_dir)
    look_alikes, holder = plant_look_alikes(c, spec_dir)
    c.start_kubelet()
    mark = os.path.join(c.work, "paused-bridge")
    b = c.bridge(start=False)
    b.start(env=paused_writer_env(c, mark))
    tmp = check_killed(tap, "a bridge", spec_dir, mark, b.proc)
    b2 = c.bridge()
    c.registered()
    tap.ok(wait_file(b2.spec_path()), "the restarted bridge writes its spec", b2.log_text())
    check_restarted(tap, "bridge", spec_dir, tmp, look_alikes)
    tap.ok(os.path.getsize(os.path.join(c.work, "victim")) == 11,
           "the symlink's target is untouched")
    b2.stop()
    # `generate` the same way, in a spec dir of its own.
    gen_dir = os.path.join(c.work, "cdi-generate")
    os.makedirs(gen_dir)
    holder2 = open(os.path.join(gen_dir, "." + SPEC_NAME + ".LOCKED"), "w")
    fcntl.flock(holder2, fcntl.LOCK_EX)
    argv = [c.args.rdma_cdi, "generate", "--sysfs-root", c.sysfs, "--dev-root", c.dev,
            "--spec-dir", gen_dir]
    mark = os.path.join(c.work, "paused-generate")
    p = subprocess.Popen(argv, env=paused_writer_env(c, mark), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    tmp = check_killed(tap, "`generate`", gen_dir, mark, p)
    r = subprocess.run(argv, capture_output=True, text=True)
    tap.ok(r.returncode == 0, "the next `generate` succeeds", r.stderr)
    check_restarted(tap, "generate", gen_dir, tmp, ["." + SPEC_NAME + ".LOCKED"])
    holder.close()
    holder2.close()


def log_skew(b, needle):
    """Seconds between the daemon's wall clock (its JSON log line containing needle) and
    ours; None when there is no such line."""
    for line in reversed(b.log_text().splitlines()):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if needle in j.get("msg", ""):
            t = time.mktime(time.strptime(j["ts"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
            return t - time.time()
    return None


def periodic_rescans(c, port):
    samples, _ = parse_exposition(http_get(port, "/metrics")[2])
    return metric(samples, "rdma_cdi_rescans_total", reason="periodic", result="ok")


def sc_clock_jump(c):
    """The wall clock steps 3 h forward, then 6 h back, under a running bridge: libfaketime
    moves CLOCK_REALTIME for every reader in the daemon (libc, sd-event, gRPC); the
    monotonic clock and the kernel's timers do not move, as in a real step. Rescans neither
    stall nor come in a burst; health, Allocate and re-registration keep working. A timer
    armed on the wall clock would be 3 h late (stall) or 6 h early (burst)."""
    tap = c.tap
    libs = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") +
                  glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"))
    if not tap.ok(libs, "libfaketimeMT is installed (Debian package faketime)"):
        return
    lib = libs[0]
    stamp = os.path.join(c.work, "faketime")
    with open(stamp, "w") as f:
        f.write("+0\n")
    # The shim first: libfaketime would shift monotonic timerfd deadlines too.
    env = dict(os.environ, LD_PRELOAD="%s %s" % (c.args.real_timerfd, lib),
               FAKETIME_TIMESTAMP_FILE=stamp, FAKETIME_NO_CACHE="1",
               FAKETIME_DONT_FAKE_MONOTONIC="1", DONT_FAKE_MONOTONIC="1")
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    port = free_port()
    k = c.start_kubelet()
    b = c.bridge(["--rescan-interval", "1", "--log-format", "json", "--metrics-address",
                  "127.0.0.1:%d" % port], start=False)
    b.start(env=env)
    c.registered()
    stream, _ = c.first_list()
    tap.ok(b.wait_log("serving metrics"), "metrics served", b.log_text())
    state = "DOWN"
    for step, offset, want in (("3 h forward", "+3h", 3 * 3600), ("6 h back", "-3h", -3 * 3600)):
        with open(stamp, "w") as f:
            f.write(offset + "\n")
        health = "Unhealthy" if state == "DOWN" else "Healthy"
        set_port_state(c.sysfs, "mlx5_2", "1: DOWN" if state == "DOWN" else "4: ACTIVE")
        lst = stream.wait(lambda ls: by_id(ls[-1])["0000:3b:00.0"].health == health, 5)
        tap.ok(lst is not None, "%s: a port %s is seen by the next periodic rescan" %
               (step, state), c.log())
        needle = "port 1 DOWN" if state == "DOWN" else "Healthy again"
        b.wait_log(needle)
        skew = log_skew(b, needle)
        tap.ok(skew is not None and abs(skew - want) < 60,
               "%s: the daemon's wall clock moved (its log says %s s)" %
               (step, None if skew is None else round(skew)), b.log_text()[-2000:])
        n0 = periodic_rescans(c, port)
        time.sleep(4)
        n1 = periodic_rescans(c, port)
        # Every 1 s, or every P s when the daemon stretched the period to keep a rescan
        # under 0.1 % of a core (it logs P; a sanitizer build on a busy machine does): 4/P
        # expected. A timer on the wall clock would stall (0) or burst (hundreds).
        period = rescan_period(b.log_text(), 1.0)
        want = 4 / period
        tap.ok(n0 is not None and n1 is not None and
               max(1, want / 2) <= n1 - n0 <= want + 2,
               "%s: %s periodic rescans in 4 s (one every %.0f s)" %
               (step, None if n0 is None or n1 is None else n1 - n0, period))
        r = k.plugin_stub().Allocate(alloc(k.pb, ["0000:9a:00.0"]))
        tap.ok(r.container_responses[0].cdi_devices[0].name == "rdma.example/hca=mlx5_4",
               "%s: Allocate works" % step)
        k.restart()
        reg = k.wait_registrations(1, 5)
        tap.ok(reg is not None, "%s: a restarted kubelet gets a registration" % step,
               b.log_text()[-2000:])
        stream = k.latest_stream()
        tap.ok(stream is not None and stream.wait() is not None, "%s: a new device list" % step)
        state = "ACTIVE"
    tap.ok(b.proc.poll() is None, "the bridge kept running")


# ---- a device lent to another network namespace ----------------------------------------


def mksysfs(c, *args):
    subprocess.run([sys.executable, c.args.mksysfs] + list(args), check=True)


def spec_stat(b):
    st = os.stat(b.spec_path())
    return st.st_ino, st.st_mtime_ns


def sc_lent(c):
    """A device moved into a pod's network namespace (exclusive mode) stays offered and in
    the spec, its return causes no flap; a lent device that is really removed (VF gone,
    uverbs gone) is withdrawn at once."""
    tap = c.tap
    b, stream, lst = c.up(["--rescan-interval", "1"])
    stash = os.path.join(c.work, "stash")
    n, before = len(stream.lists), spec_stat(b)
    mksysfs(c, "lend", c.sysfs, "mlx5_2", stash, "--with-netdev")
    tap.ok(b.wait_log("mlx5_2 (0000:3b:00.3): lent to another network namespace", RESCAN_WAIT),
           "the move is logged", b.log_text())
    sleep_one_rescan(b.log_text())  # nothing may follow
    tap.ok(len(stream.lists) == n, "lent: no ListAndWatch change (%d lists after %d)"
           % (len(stream.lists), n))
    d = by_id(stream.lists[-1]).get("0000:3b:00.3")
    tap.ok(d is not None and d.health == "Healthy", "lent: still offered, Healthy as before")
    tap.ok(spec_has(b, "mlx5_2") is True and spec_stat(b) == before,
           "lent: the spec still defines it, not rewritten")
    resp = c.kubelet.plugin_stub().Allocate(alloc(c.kubelet.pb, ["0000:3b:00.3"]))
    tap.ok([d.name for d in resp.container_responses[0].cdi_devices] ==
           ["rdma.example/hca=mlx5_2"], "lent: Allocate still names it")
    mksysfs(c, "unlend", c.sysfs, stash)
    tap.ok(b.wait_log("mlx5_2 (0000:3b:00.3): back from another network namespace", RESCAN_WAIT),
           "the return is logged", b.log_text())
    sleep_one_rescan(b.log_text())
    tap.ok(len(stream.lists) == n, "back: no ListAndWatch change, no flap")
    tap.ok(spec_stat(b) == before, "back: the spec is not rewritten")
    tap.ok(b.log_text().count("lent to another network namespace") == 1,
           "logged once, not at every rescan", b.log_text())

    # A lent VF removed (its function gone), and a lent device whose uverbs went.
    fn3 = os.path.join(c.sysfs, "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.4")
    mksysfs(c, "lend", c.sysfs, "mlx5_3", os.path.join(c.work, "stash3"))
    mksysfs(c, "lend", c.sysfs, "mlx5_4", os.path.join(c.work, "stash4"))
    b.wait_log("mlx5_4 (0000:3b:00.5): lent to another network namespace", RESCAN_WAIT)
    shutil.rmtree(fn3)
    for p in ("class/infiniband_verbs/uverbs3", "class/infiniband_verbs/uverbs4"):
        os.unlink(os.path.join(c.sysfs, p))
    for node in ("uverbs3", "uverbs4"):
        os.unlink(os.path.join(c.dev, "infiniband", node))
    lst = stream.wait(lambda ls: "0000:3b:00.4" not in by_id(ls[-1]) and
                      "0000:3b:00.5" not in by_id(ls[-1]), 3)
    tap.ok(lst is not None and set(by_id(lst)) == {"0000:3b:00.0", "0000:3b:00.2",
                                                   "0000:3b:00.3"},
           "function gone, uverbs gone: withdrawn at once", c.log())
    tap.ok(b.wait_log("mlx5_3 (0000:3b:00.4): removed") and
           b.wait_log("mlx5_4 (0000:3b:00.5): removed"), "the removals are logged",
           b.log_text())
    deadline = time.monotonic() + 3
    while (spec_has(b, "mlx5_3") or spec_has(b, "mlx5_4")) and time.monotonic() < deadline:
        time.sleep(0.02)
    tap.ok(spec_has(b, "mlx5_3") is False and spec_has(b, "mlx5_4") is False,
           "and the spec no longer defines them")
    b.signal(signal.SIGTERM)
    rc = b.wait(30)
    log = b.log_text()
    tap.ok(rc == 0 and "Sanitizer" not in log and "runtime error:" not in log,
           "SIGTERM: exit 0, no sanitizer report (rc %s)" % rc, log[-3000:])


SCENARIOS = {
    "valgrind": sc_valgrind,
    "registration": sc_registration,
    "devices-dgx": sc_devices_dgx,
    "devices-sriov": (sc_devices_sriov, "sriov"),
    "preferred": sc_preferred,
    "allocate": sc_allocate,
    "device-specs": sc_device_specs,
    "bad-requests": sc_bad_requests,
    "stream-drop": sc_stream_drop,
    "kubelet-restart": sc_kubelet_restart,
    "bridge-restart": sc_bridge_restart,
    "shared": sc_shared,
    "sighup": sc_sighup,
    "rescan": sc_rescan,
    "rescan-off": sc_rescan_off,
    "late-driver": sc_late_driver,
    "sigterm": sc_sigterm,
    "kubelet-absent": sc_kubelet_absent,
    "register-refused": sc_register_refused,
    "hotplug": sc_hotplug,
    "port-flap": sc_port_flap,
    "lent": (sc_lent, "sriov"),
    "spec-blocked": sc_spec_blocked,
    "spec-blocked-return": sc_spec_blocked_return,
    "fifo": sc_fifo,
    "pools": sc_pools,
    "reload": sc_reload,
    "config-bad": sc_config_bad,
    "plugin-dir-gone": sc_plugin_dir_gone,
    "shared-bound": (sc_shared_bound, "scale", ("--devices", "200")),
    "metrics": sc_metrics,
    "healthz": sc_healthz,
    "killed-mid-write": sc_killed_mid_write,
    "clock-jump": sc_clock_jump,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-cdi", required=True)
    ap.add_argument("--mksysfs", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--pause-rename", help="tests/tools/pause-rename.c as a shared library")
    ap.add_argument("--real-timerfd", help="tests/tools/real-timerfd.c as a shared library")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    fn = SCENARIOS[args.scenario]
    profile, fixture_args = "dgx", ()
    if isinstance(fn, tuple):
        fn, profile, fixture_args = (fn + ((),))[:3]
    tap = Tap()
    c = Ctx(args, tap, profile, fixture_args)
    try:
        fn(c)
    except SystemExit:
        raise
    except Exception as e:  # a crash of the scenario is a failure, with the bridge log
        tap.ok(False, "scenario raised %r" % e, c.log())
    return c.close()


if __name__ == "__main__":
    sys.exit(main())
