#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of tests/fuzz/corpus/ from the repository's own examples (the
docs' config, tests/data's golden specs, the hook tests' states) and a few hand-made
inputs. Run it from anywhere; it overwrites only the seeds it makes (crash reproducers,
named crash-*, are kept). The output is checked in: rerun after changing a format."""
import json
import os
import re
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))


def put(fuzzer, name, data):
    d = os.path.join(here, "corpus", fuzzer)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy(fuzzer, name, path):
    with open(os.path.join(top, path), "rb") as f:
        put(fuzzer, name, f.read())


# attr: first byte = read buffer size - 1, then the attribute file.
for name, size, text in [("pci-id", 64, "0x15b3\n"), ("numa-none", 64, "-1\n"),
                         ("dev", 64, "231:192\n"), ("name", 64, "mlx5_0\n"),
                         ("too-long", 4, "20.31.1014\n"), ("blanks", 64, " 42 \t\n"),
                         ("escapes", 64, "a\x1b[31m\xff\n")]:
    put("attr", name, bytes([size - 1]) + text.encode("latin-1"))

# sysfs: NUL-separated fields in the order of fuzz-sysfs.c's enum field.
F = ["ibdev", "class_link", "device_link", "vendor", "device", "numa", "driver", "physfn",
     "node_guid", "fw_ver", "node_type", "port1", "state1", "phys1", "ll1", "rate1", "ndev1",
     "port2", "state2", "ll2", "uverbs", "uverbs_ibdev", "uverbs_dev", "umad", "umad_ibdev",
     "umad_port", "umad_dev", "rdma_cm_dev", "netdev", "new_state1", "new_phys1", "new_netdev"]
D = dict(zip(F, ["mlx5_0", "@", "../../../0000:3b:00.0", "0x15b3\n", "0x101b\n", "0\n",
                 "mlx5_core", "", "e8eb:d303:00dd:188f\n", "20.31.1014\n", "1: CA\n", "1",
                 "4: ACTIVE\n", "5: LinkUp\n", "InfiniBand\n", "200 Gb/sec (4X HDR)\n", "",
                 "2", "1: DOWN\n", "Ethernet\n", "uverbs0", "mlx5_0\n", "231:192\n", "umad0",
                 "mlx5_0\n", "1\n", "231:0\n", "10:58\n", "ib0", "1: DOWN\n", "3: Disabled\n",
                 "ib1"]))


def sysfs(name, **kw):
    v = dict(D, **kw)
    put("sysfs", name, b"\0".join(v[f].encode("latin-1") for f in F))


put("sysfs", "default", b"")
sysfs("ib-healthy")
sysfs("roce", ibdev="rocep59s0f0", ll1="Ethernet\n", ndev1="ens1f0np0\n",
      uverbs_ibdev="rocep59s0f0\n", umad_ibdev="rocep59s0f0\n", netdev="ens1f0np0",
      new_netdev="ens1f0")
sysfs("vf", physfn="../0000:3a:00.0", device="0x101c\n")
sysfs("garbage", vendor="zzzz\n", numa="99999999999999999999\n", node_guid="not-a-guid\n",
      state1="banana\n", uverbs_dev="1:2:3\n", umad_port="7\n", rdma_cm_dev="\n")
sysfs("dangling", class_link="../../devices/nowhere/mlx5_0")
sysfs("escape", class_link="/etc", device_link="../../../../../../../..")
sysfs("smi", ibdev="smi1", uverbs_ibdev="smi1\n", umad_ibdev="smi1\n")
sysfs("unsafe-names", ibdev="mlx5 0\n", netdev="e\x1b[1m", ndev1="\x7f\n")

# config: the documented example, the tests' shapes, and errors.
md = open(os.path.join(top, "docs", "config.md")).read()
for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", md, re.S)):
    put("config", "docs-%d.yaml" % i, block)
put("config", "empty.yaml", "")
put("config", "minimal.yaml", "pools:\n- resourceName: acme.com/nic\n")
put("config", "flow.yaml", "{pools: [{resourceName: a.io/x, mode: shared, sharedSlots: 1000, "
    "selectors: {pciAddresses: ['0000:1a:*'], vf: false, drivers: [mlx5_core], "
    "names: ['mlx5_*'], netdevs: ['ib*'], deviceIDs: ['101b']}}]}\n")
put("config", "too-many-ids.yaml", "pools:\n- resourceName: a.io/x\n  mode: shared\n"
    "  sharedSlots: 1000\n- resourceName: a.io/y\n  selectors:\n    vf: true\n")
put("config", "bad-anchor.yaml", "pools: &a\n- resourceName: a.io/x\nx: *a\n")
put("config", "bad-unclosed.yaml", "pools: [a, b\n")

# convert: byte 0 the source (0 rdma-shared, 1 sriov-dp), then the configs the plugins'
# READMEs document (tests/config/convert/) and a few broken shapes.
conv = os.path.join(top, "tests", "config", "convert")
for f in sorted(os.listdir(conv)):
    with open(os.path.join(conv, f), "rb") as fh:
        put("convert", f, bytes([1 if f.startswith("sriov-dp") else 0]) + fh.read())
put("convert", "empty", b"\0")
put("convert", "nul-escape", b'\0{"configList": [{"resourceName": "a\\u0000", "rdmaHcaMax": 1}]}')
put("convert", "deep", b"\1" + b"[" * 40)
put("convert", "dup-keys", b'\1{"resourceList": [], "RESOURCELIST": [{"isRdma": true}]}')

# hook: first line --memlock, then the OCI state.
state = '{"ociVersion": "1.0.2", "id": "%s", "status": "creating", "pid": %d, "bundle": "/b"}'
put("hook", "unlimited", "unlimited\n" + state % ("a" * 64, 4242))
put("hook", "suffix", "64M\n" + state % ("c1", 2))
put("hook", "pid-1", "1g\n" + state % ("c1", 1))
put("hook", "overflow", "18446744073709551615K\n" + state % ("c1", 2147483647))
put("hook", "bad-json", "0\n" + '{"ociVersion":"1.0.2","id":"x","status":"creating","pid":')
put("hook", "dup-pid", "8k\n" + '{"pid": 5, "pid": 6, "id": "\\u001b[31m"}')

# cdi: the module's test specs and the golden outputs.
for f in sorted(os.listdir(os.path.join(top, "tests", "cdi", "data"))):
    copy("cdi", f, os.path.join("tests", "cdi", "data", f))
for f in ["dgx.json", "dgx.yaml", "sriov.json"]:
    copy("cdi", "golden-" + f, os.path.join("tests", "data", "golden", f))


# bridge: first byte = table (fuzz-bridge.c's kinds[]), then a protobuf message whose
# field 1 is a container request: Allocate's devices_ids are field 1; the preferred
# request's available IDs 1, must-include IDs 2, allocation_size 3.
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def ld(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def container(avail=(), must=(), size=None):
    m = b"".join(ld(1, i) for i in avail) + b"".join(ld(2, i) for i in must)
    if size is not None:
        m += varint(3 << 3) + varint(size)
    return ld(1, m)


dgx = ["0000:%s:00.0" % b for b in ["1a", "1b", "3b", "3c", "5e", "9a", "9b", "ba", "bb", "d8"]]
sriov = ["0000:3b:00.%d" % f for f in [0, 2, 3, 4, 5]]
put("bridge", "allocate-one", b"\0" + container(dgx[:1]))
put("bridge", "allocate-two", b"\1" + container(dgx[2:4]) + container(dgx[4:5]))
put("bridge", "allocate-unknown", b"\0" + container(["0000:18:00.0\0evil"]))
put("bridge", "allocate-dup", b"\0" + container([dgx[0], dgx[0]]))
put("bridge", "preferred-must", b"\0" + container(dgx, dgx[5:6], 4))
put("bridge", "preferred-shared", b"\2" + container(
    ["%s-s%d" % (d, k) for d in dgx for k in range(4)], ["0000:1a:00.0-s1"], 6))
put("bridge", "allocate-unhealthy", b"\0" + container(dgx[-1:]))
put("bridge", "preferred-negative", b"\3" + container(sriov, (), -1))
put("bridge", "preferred-sriov", b"\4" + container(
    ["%s-s%d" % (d, k) for d in sriov for k in range(3)], (), 4))
put("bridge", "empty", b"\4")


# claim: one input read both as a ResourceClaim (the API server's JSON; results against
# tests/dra/claims-fixture.h's devices) and as the DRA checkpoint file.
def claim(uid, results, extra=""):
    return ('{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":'
            '{"namespace":"default","name":"c1","uid":"%s"},"status":{"allocation":'
            '{"devices":{"results":[%s]}%s}}}' % (uid, ",".join(results), extra))


def result(request, device, more=""):
    return ('{"request":"%s","driver":"rdma.example","pool":"node1","device":"%s"%s}'
            % (request, device, more))


U = "0b5e3c1a-7f2d-4e6b-9a1c-2d3e4f5a6b7c"
put("claim", "claim-one", claim(U, [result("nic", "pci-0000-3b-00-0")]))
put("claim", "claim-merge", claim(U, [result("a", "pci-0000-3b-00-0"),
                                      result("b", "pci-0000-3b-00-0"),
                                      result("c", "pci-0000-af-00-0",
                                             ',"shareID":"9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"')]))
# adminAccess and shareID: an admin result next to a normal one on one device, a device
# with two shares, a share ID that is no UUID, a checkpoint entry that records both.
put("claim", "claim-admin", claim(U, [result("mon", "pci-0000-3b-00-0", ',"adminAccess":true'),
                                      result("nic", "pci-0000-3b-00-0", ',"adminAccess":false'),
                                      result("b", "pci-0000-5e-00-0", ',"adminAccess":true')]))
put("claim", "claim-share", claim(U, [
    result("a", "pci-0000-af-00-0", ',"shareID":"11111111-2222-4333-8444-555555555555"'),
    result("b", "pci-0000-af-00-0", ',"shareID":"66666666-7777-4888-9999-aaaaaaaaaaaa"'),
    result("c", "pci-0000-af-00-0", ',"shareID":"11111111-2222-4333-8444-555555555555",'
           '"adminAccess":true')]))
put("claim", "claim-share-bad", claim(U, [result("a", "pci-0000-af-00-0",
                                                 ',"shareID":"../../etc"')]))
put("claim", "claim-nccl", claim(U, [result("a", "pci-0000-5e-00-0"),
                                     result("b", "pci-0000-86-00-0")]))
put("claim", "claim-tolerated", claim(U, [result(
    "nic", "pci-0000-d8-00-0",
    ',"tolerations":[{"key":"rdma.example/unhealthy","operator":"Exists",'
    '"effect":"NoSchedule"}]')]))
put("claim", "claim-unhealthy", claim(U, [result("nic", "pci-0000-d8-00-0")]))
put("claim", "claim-unknown", claim(U, [result("nic", "pci-0000-00-00-0")]))
put("claim", "claim-other-driver", claim(U, [result("nic", "x").replace(
    "rdma.example", "gpu.example")], ',"config":[{"opaque":{"driver":"x"}}]'))
put("claim", "claim-bad-uid", claim("../x", [result("nic", "pci-0000-3b-00-0")]))
put("claim", "claim-not-allocated",
    '{"metadata":{"namespace":"default","name":"c1","uid":"u"},"status":{}}')
put("claim", "claim-types", claim(U, [result("nic", "pci-0000-3b-00-0",
                                             ',"adminAccess":"yes","tolerations":{}')]))
put("claim", "checkpoint",
    '{"version":1,"claims":[{"uid":"%s","namespace":"default","name":"c1",'
    '"specFile":"rdma.example-claim_%s.json","devices":[{"device":"pci-0000-3b-00-0",'
    '"requests":["a","b"],"cdiDeviceIDs":["rdma.example/hca=0000:3b:00.0",'
    '"rdma.example/claim=%s"]}]}]}' % (U, U, U))
put("claim", "checkpoint-admin-share",
    '{"version":1,"claims":[{"uid":"%s","namespace":"default","name":"c1",'
    '"devices":[{"device":"pci-0000-af-00-0","requests":["a"],"cdiDeviceIDs":'
    '["rdma.example/hca=0000:af:00.0","rdma.example/claim=%s"],'
    '"shareID":"11111111-2222-4333-8444-555555555555","adminAccess":true}]}]}' % (U, U))
put("claim", "checkpoint-empty", '{"version":1,"claims":[]}')
put("claim", "checkpoint-v2", '{"version":2,"claims":[]}')
put("claim", "checkpoint-dup",
    '{"version":1,"claims":[{"uid":"u","namespace":"a","name":"b","devices":[{"device":'
    '"d","requests":["r"],"cdiDeviceIDs":["k/c=x"]}]},{"uid":"u","namespace":"a","name":'
    '"b","devices":[{"device":"d","requests":["r"],"cdiDeviceIDs":["k/c=x"]}]}]}')
put("claim", "garbage", "\xff\x00{[")
# dra: first byte = batch kind (bit 0: Unprepare) and answer pattern (the other bits), then
# a request: field 1 Claim {namespace = 1, uid = 2, name = 3}.
def dra_claim(ns, uid, name):
    return ld(1, ld(1, ns) + ld(2, uid) + ld(3, name))


put("dra", "prepare-one", b"\0" + dra_claim("default", "0d5e1c3a-5b6f-4a8e-9c1d-2f3b4a5c6d7e",
                                              "pod-nic"))
put("dra", "unprepare-three", b"\3" + b"".join(dra_claim("ns%d" % i, "uid-%d" % i, "c-%d" % i)
                                                    for i in range(3)))
put("dra", "duplicate-uid", b"\4" + dra_claim("default", "u1", "a")
    + dra_claim("other", "u1", "b") + dra_claim("default", "u2", "c"))
put("dra", "nul-uid", b"\0" + dra_claim("default", "u1\0evil", "a"))
put("dra", "empty-fields", b"\0" + dra_claim("", "", "") + dra_claim("default", "u1", ""))
put("dra", "bad-names", b"\0" + dra_claim("Default", "u1", "a")
    + dra_claim("default", "u/2", "-a") + dra_claim("a" * 64, "u3", "b" * 254))
put("dra", "unknown-fields", b"\1" + varint(2 << 3) + varint(7) + ld(9, "x")
    + dra_claim("default", "u1", "a")
    + ld(1, ld(1, "ns") + ld(2, "u2") + ld(3, "n") + ld(4, "?")))
put("dra", "too-many", b"\0" + dra_claim("d", "u", "n") * 1025)
put("dra", "truncated", b"\0" + dra_claim("default", "u1", "a")[:-2])
put("dra", "empty", b"\0")


# kubeconfig: a file as kubectl writes it (CA data, token), flow style, and the refusals.
PEM_B64 = ("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJzekNDQVZtZ0F3SUJBZ0lVCi0tLS0tRU5EIENF"
           "UlRJRklDQVRFLS0tLS0K")


def kubeconfig(cluster, user):
    return ("apiVersion: v1\nkind: Config\ncurrent-context: dra\ncontexts:\n"
            "- name: other\n  context: {cluster: x, user: x}\n"
            "- name: dra\n  context:\n    cluster: c1\n    user: u1\n    namespace: kube-system\n"
            "clusters:\n- name: c1\n  cluster:\n" + cluster +
            "users:\n- name: u1\n  user:\n" + user)


ca_data = "    server: https://10.0.0.1:6443/\n    certificate-authority-data: " + PEM_B64 + "\n"
put("kubeconfig", "good-ca-data", kubeconfig(ca_data, "    token: abc.def\n"))
put("kubeconfig", "token-file", kubeconfig(ca_data, "    tokenFile: token\n"))
put("kubeconfig", "ca-file", kubeconfig("    server: https://[fd00::1]:443\n"
                                        "    certificate-authority: ca.crt\n",
                                        "    token: t\n"))
put("kubeconfig", "insecure", kubeconfig(ca_data + "    insecure-skip-tls-verify: true\n",
                                         "    token: t\n"))
put("kubeconfig", "client-cert", kubeconfig(ca_data, "    client-certificate-data: QQ==\n"
                                            "    client-key-data: QQ==\n"))
put("kubeconfig", "exec", kubeconfig(ca_data, "    exec: {command: aws, args: [eks]}\n"))
put("kubeconfig", "http", kubeconfig("    server: http://h\n", "    token: t\n"))
put("kubeconfig", "flow", "{current-context: a, contexts: [{name: a, context: {cluster: c, "
    "user: u}}], clusters: [{name: c, cluster: {server: 'https://h', "
    "certificate-authority-data: '" + PEM_B64 + "'}}], users: [{name: u, user: {token: x}}]}\n")
put("kubeconfig", "bad-yaml", "current-context: [\n")
put("kubeconfig", "alias", "a: &x {b: 1}\nc: *x\n")
put("kubeconfig", "empty", "")

# kube-watch: byte 0 read size - 1, byte 1 (longest line - 1) / 4, then the stream.
ev = ('{"type":"ADDED","object":{"kind":"ResourceSlice","metadata":{"name":"n-abcde",'
      '"resourceVersion":"12"},"spec":{"driver":"rdma.example","nodeName":"n"}}}\n')
put("kube-watch", "events", b"\x07\xff" + (ev + ev.replace("ADDED", "MODIFIED") +
                                            ev.replace("ADDED", "DELETED")).encode())
put("kube-watch", "crlf", b"\x00\x40" + ev.replace("\n", "\r\n").encode() + b"\r\n\n")
put("kube-watch", "too-long", b"\xff\x08" + ev.encode())
put("kube-watch", "bookmark-error", b"\x20\xff" + b'{"type":"BOOKMARK","object":{}}\n'
    b'{"type":"ERROR","object":{"kind":"Status","code":410}}\n')
put("kube-watch", "not-json", b"\x03\x10" + b"nope\n[1]\n{\"type\":1}\n")
put("kube-watch", "no-newline", b"\x05\xff" + ev.rstrip("\n").encode())

# slices: byte 0 = devices (low 3 bits) and generation - 1 (the rest), then the items of a
# ResourceSlice list as the API server answers it.
def slice_obj(name, gen, devices, count=1, node="node1", driver="rdma.example"):
    return {"metadata": {"name": name, "resourceVersion": "7"},
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": count},
                     "devices": [{"name": "pci-0000-%02x-00-0" % (0x10 + i)} for i in range(devices)]}}


put("slices", "empty", b"\x02[]")
put("slices", "in-sync", b"\x02" + json.dumps([slice_obj("node1-rdma.example-a", 1, 2)]).encode())
put("slices", "duplicate-stale", b"\x0b" + json.dumps(
    [slice_obj("b", 1, 3), slice_obj("a", 2, 3), slice_obj("c", 2, 3)]).encode())
put("slices", "other-pool-no-name", b"\x01" + json.dumps(
    [slice_obj("x", 1, 1, node="node2"), {"spec": {}}, {"metadata": {"name": 5}}, 3, None]).encode())
put("slices", "not-a-list", b"\x01" + b'{"items": []}')

# netlink: one datagram of RDMA netlink answers (nlmsghdr, nldev attributes), read for
# request sequence 1 and 2 (fuzz-netlink.c).
NLDEV = 3 << 10  # RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, 0)


def nla(typ, data):
    n = 4 + len(data)
    return struct.pack("<HH", n, typ) + data + b"\0" * ((4 - n % 4) % 4)


def nlmsg(typ, seq, payload):
    return struct.pack("<IHHII", 16 + len(payload), typ, 0, seq, 0) + payload


def nlack(seq, error):
    return nlmsg(2, seq, struct.pack("<i", error) + b"\0" * 16)


put("netlink", "sys-exclusive", nlmsg(NLDEV + 6, 1, nla(66, b"\x00")) + nlack(1, 0))
put("netlink", "sys-shared", nlmsg(NLDEV + 6, 1, nla(66, b"\x01")) + nlack(1, 0))
put("netlink", "dev-get", nlmsg(NLDEV + 1, 2, nla(1, struct.pack("<I", 3)) + nla(2, b"rxe0\0") +
                                nla(3, b"1.2\0")) + nlack(2, 0))
put("netlink", "refused", nlack(1, -95))
put("netlink", "cut-attr", nlmsg(NLDEV + 1, 2, struct.pack("<HH", 200, 1) + b"\0" * 4))
put("netlink", "name-no-nul", nlmsg(NLDEV + 1, 2, nla(2, b"rxe0")))
