# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi config convert`: the configurations k8s-rdma-shared-dev-plugin and
sriov-network-device-plugin document in their READMEs (tests/config/convert/, rebuilt from
those READMEs) and broken ones. A conversion must be accepted by `rdma-cdi config check` on
a fixture node, hold the pools and selectors the source meant, and carry a comment where the
meaning changes; what cannot be converted is refused, one line per key, naming it."""

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI, DATA = os.path.abspath(sys.argv[1]), sys.argv[2]
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert")
DGX = os.path.join(DATA, "dgx", "sys")
SRIOV = os.path.join(DATA, "sriov", "sys")
tap = Tap()


def run(*args, stdin=None):
    p = subprocess.run([RDMA_CDI, "config", *args], capture_output=True, text=True,
                       input=stdin, timeout=60)
    return p.returncode, p.stdout, p.stderr


def convert(source, path=None, text=None):
    """Converts a file of tests/config/convert, or text through a temporary file."""
    if text is None:
        return run("convert", "--from", source, os.path.join(HERE, path))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(text)
    try:
        return run("convert", "--from", source, f.name)
    finally:
        os.unlink(f.name)


def check(yaml_text, sysfs=DGX, *extra):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(yaml_text)
    try:
        return run("check", "--sysfs-root", sysfs, *extra, f.name)
    finally:
        os.unlink(f.name)


def error_lines(err):
    """The error lines of stderr, without the log prefix."""
    return [line.split(" error: ", 1)[1] for line in err.splitlines() if " error: " in line]


def converts(what, source, want_pools, comments, path=None, text=None, sysfs=DGX,
             report=()):
    """The conversion succeeds, config check accepts it, its pools are want_pools (a list of
    dicts as YAML reads them), each comment in comments is there, and config check on the
    fixture prints each line of report."""
    rc, out, err = convert(source, path, text)
    if not tap.ok(rc == 0 and out, "%s: converts" % what, err):
        return
    doc = yaml.safe_load(out)
    tap.ok(doc.get("withMad") is True and doc.get("pools") == want_pools,
           "%s: the pools and selectors it meant" % what, out)
    body = " ".join(line.strip().lstrip("# ") for line in out.splitlines())
    missing = [c for c in comments if c not in body]
    tap.ok(not missing, "%s: a comment where the meaning changes" % what, missing)
    crc, cout, cerr = check(out, sysfs)
    tap.ok(crc == 0 and "valid" in cout, "%s: rdma-cdi config check accepts it" % what,
           cout + cerr)
    for line in report:
        tap.ok(line in cout, "%s: on the fixture node: %s" % (what, line), cout)


def refused(what, source, want, path=None, text=None):
    """Exit 1, nothing on stdout, and each of want (substrings) on an error line of its
    own; no other error lines."""
    rc, out, err = convert(source, path, text)
    lines = error_lines(err)
    unmatched = [w for w in want if not any(w in line for line in lines)]
    tap.ok(rc == 1 and not out and not unmatched and len(lines) == len(want),
           "%s: refused, naming %s" % (what, "; ".join(want)),
           "rc %d, missing %s\n%s" % (rc, unmatched, err))


SHARED_POOL = "rdma-shared gave a pod that holds one unit every HCA of the pool at once"
SLOTS = "rdmaHcaMax %d (units for the whole pool) -> sharedSlots %d (pods per HCA)"
NETDEVS = "exact names of a PCI function's netdev -> netdevs"
LINK = "linkTypes (the type of the function's netdev) -> linkLayers"
MAD = "gave each pod the umadN and issmN of its devices too"

# ---- k8s-rdma-shared-dev-plugin ---------------------------------------------------------

# The README's configuration as it stands: its resourcePrefix has an underscore, which no
# kubelet takes in a resource name's domain.
refused("rdma-shared README", "rdma-shared",
        ['rdma-shared-readme.json: configList[0].resourcePrefix: "example_prefix/'
         'hca_shared_devices_a" is no Kubernetes extended resource name'],
        path="rdma-shared-readme.json")
readme = json.load(open(os.path.join(HERE, "rdma-shared-readme.json")))
readme["configList"][0]["resourcePrefix"] = "example.com"
converts("rdma-shared README, prefix example.com", "rdma-shared", [
    {"resourceName": "example.com/hca_shared_devices_a", "mode": "shared", "sharedSlots": 1000,
     "selectors": {"netdevs": ["ib0", "ib1"]}},
    {"resourceName": "rdma/hca_shared_devices_b", "mode": "shared", "sharedSlots": 500,
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["1017"], "netdevs": ["ib3", "ib4"]}}],
    [SHARED_POOL, SLOTS % (1000, 1000), SLOTS % (500, 500), NETDEVS, MAD,
     "periodicUpdateInterval 300: nothing to set"], text=json.dumps(readme))
# The README's earlier configuration (no resourcePrefix, no periodicUpdateInterval).
converts("rdma-shared README v1", "rdma-shared", [
    {"resourceName": "rdma/hca_shared_devices_a", "mode": "shared", "sharedSlots": 1000,
     "selectors": {"netdevs": ["ib0", "ib1"]}},
    {"resourceName": "rdma/hca_shared_devices_b", "mode": "shared", "sharedSlots": 500,
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["1017"], "netdevs": ["ib3", "ib4"]}}],
    [SHARED_POOL, NETDEVS], path="rdma-shared-readme-v1.json")
# A pool of the fixture's InfiniBand HCAs, as docs/guides/migrating.md has it: on the node,
# one pool of 8 HCAs with 1000 slots each.
converts("rdma-shared InfiniBand pool", "rdma-shared", [
    {"resourceName": "rdma/hca_shared_devices_a", "mode": "shared", "sharedSlots": 1000,
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"], "linkLayers": ["InfiniBand"]}}],
    [SHARED_POOL, LINK],
    text=json.dumps({"periodicUpdateInterval": 300, "configList": [{
        "resourcePrefix": "rdma", "resourceName": "hca_shared_devices_a", "rdmaHcaMax": 1000,
        "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"],
                      "linkTypes": ["infiniband"]}}]}),
    report=["pool rdma/hca_shared_devices_a: shared, 1000 slots per HCA, 8 HCAs, 8000 device "
            "IDs"])
# ifNames are exact names: a glob character in one is escaped, so it matches itself only.
rc, out, err = convert("rdma-shared", text=json.dumps({"configList": [{
    "resourceName": "a", "rdmaHcaMax": 1, "selectors": {"ifNames": ["ib*", "ib[0]"]}}]}))
tap.ok(rc == 0 and 'netdevs: ["ib\\\\*", "ib\\\\[0\\\\]"]' in out and
       yaml.safe_load(out)["pools"][0]["selectors"]["netdevs"] == ["ib\\*", "ib\\[0\\]"],
       "an exact name with glob characters is escaped", out + err)

# ---- sriov-network-device-plugin ---------------------------------------------------------

# The README's configuration as printed has a comma before a closing brace: Go's decoder
# refuses it, and so does the converter, at its place.
refused("sriov-dp README", "sriov-dp",
        ["sriov-dp-readme.json:87:10: not JSON"], path="sriov-dp-readme.json")
# Without that comma: the pools that are not RDMA pools, and the keys that have no
# equivalent, are each named; none is dropped in silence.
NOT_RDMA = "no isRdma: true: sriov-dp hands this pool's devices out as network devices"
refused("sriov-dp README, comma removed", "sriov-dp", [
    "resourceList[0]: " + NOT_RDMA,
    "resourceList[1].selectors[0].needVhostNet: no equivalent",
    "resourceList[1]: " + NOT_RDMA,
    "resourceList[4].selectors[0].vdpaType: no equivalent",
    "resourceList[4]: " + NOT_RDMA,
    "resourceList[5].deviceType: only netDevice pools convert",
    "resourceList[5]: " + NOT_RDMA,
    "resourceList[6].deviceType: only netDevice pools convert",
    'resourceList[6].selectors[0].pfNames[0]: "p0#1-5": VF ranges (#first-last) have no '
    "equivalent",
    "resourceList[6].selectors[0].auxTypes: no equivalent",
    "resourceList[6]: " + NOT_RDMA,
    "resourceList[7].additionalInfo: no equivalent",
    "resourceList[7]: " + NOT_RDMA,
    "resourceList[8]: " + NOT_RDMA,
    "resourceList[9]: " + NOT_RDMA], path="sriov-dp-readme-fixed.json")
# Its two RDMA pools on their own. mlx5_ib is no PCI driver: that pool selected nothing in
# sriov-dp and selects nothing here, which the comment says and config check shows.
converts("sriov-dp README, RDMA pools", "sriov-dp", [
    {"resourceName": "mellanox.com/mlnx_sriov_rdma",
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["1018"], "drivers": ["mlx5_ib"]}},
    {"resourceName": "intel.com/infiniband_rdma_netdevs",
     "selectors": {"linkLayers": ["InfiniBand"]}}],
    ["mlx5_ib is an RDMA driver, not a PCI driver", LINK,
     "no resourcePrefix, so sriov-dp's default intel.com",
     "sriov-dp never took a PF that has VFs, nor a device whose netdev carries the default "
     "route", "sriov-dp set PCIDEVICE_<PREFIX>_<NAME> to the PCI addresses a container got; "
     "rdma-cdi sets RDMA_CDI_DEVICES"], path="sriov-dp-readme-rdma.json",
    report=["warning: pool mellanox.com/mlnx_sriov_rdma matches no usable device",
            "pool intel.com/infiniband_rdma_netdevs: exclusive, 8 HCAs"])
# docs/rdma/configMap.yaml: isRdma on the pool, as older sriov-dp files have it.
converts("sriov-dp docs/rdma configMap", "sriov-dp", [
    {"resourceName": "intel.com/mlnx_rdma",
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["1016", "1018"],
                   "drivers": ["mlx5_ib", "mlx5_core"]}}],
    ["mlx5_ib is an RDMA driver"], path="sriov-dp-rdma-configmap.json")
# docs/config-file: the node-specific file the SR-IOV operator writes (keys in Go's case,
# VF ranges, not an RDMA pool).
refused("sriov-dp docs/config-file", "sriov-dp", [
    'pfNames[0]: "ens785f0#0-4": VF ranges', 'pfNames[1]: "ens785f1#0-9": VF ranges',
    "resourceList[0]: isRdma is false"], path="sriov-dp-config-file-node0.json")
# RoCE VFs of a PF, as docs/guides/migrating.md has them, on the SR-IOV fixture: the 4 VFs.
converts("sriov-dp RoCE VFs", "sriov-dp", [
    {"resourceName": "example.com/mlnx_sriov_rdma",
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["101e"], "drivers": ["mlx5_core"],
                   "pfNames": ["enp59s0f0np0"]}}],
    ["pfNames: rdma-cdi takes the VFs of these PFs only, and only when the PF is itself an "
     "RDMA device of the node"],
    text=json.dumps({"resourceList": [{
        "resourcePrefix": "example.com", "resourceName": "mlnx_sriov_rdma",
        "selectors": [{"vendors": ["15b3"], "devices": ["101e"], "drivers": ["mlx5_core"],
                       "pfNames": ["enp59s0f0np0"], "isRdma": True}]}]}),
    sysfs=SRIOV, report=["pool example.com/mlnx_sriov_rdma: exclusive, 4 HCAs"])

# excludeTopology: rdma-cdi always reports topology, which the comment says.
converts("sriov-dp excludeTopology", "sriov-dp", [
    {"resourceName": "example.com/vfs", "selectors": {"pfNames": ["enp59s0f0np0"]}}],
    ["excludeTopology is gone: rdma-cdi reports each device's NUMA node"],
    text=json.dumps({"resourceList": [{
        "resourcePrefix": "example.com", "resourceName": "vfs", "excludeTopology": True,
        "deviceType": "netDevice", "additionalInfo": {}, "SelectorObj": None,
        "selectors": {"pfNames": ["enp59s0f0np0"], "isRdma": True, "needVhostNet": False}}]}),
    sysfs=SRIOV, report=["pool example.com/vfs: exclusive, 4 HCAs"])

# Standard input, and keys in another case (Go's decoder matches them so).
rc, out, err = run("convert", "--from", "sriov-dp", "-", stdin=json.dumps({"ResourceList": [{
    "ResourceName": "r", "Selectors": {"IsRdma": True, "Vendors": ["15b3"]}}]}))
tap.ok(rc == 0 and yaml.safe_load(out)["pools"] == [
    {"resourceName": "intel.com/r", "selectors": {"vendors": ["15b3"]}}],
    "FILE - reads standard input; keys match in any case, as Go matches them", out + err)

# docs/guides/migrating.md shows JSON configs with what the converter writes for them: each
# such pair must be the converter's output, word for word.
GUIDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "guides",
                     "migrating.md")
blocks = re.findall(r"```(\w+)\n(.*?)```", open(GUIDE).read(), re.S)
pairs = [(blocks[i][1], blocks[i + 1][1]) for i in range(len(blocks) - 1)
         if blocks[i][0] == "json" and blocks[i + 1][0] == "yaml"
         and blocks[i + 1][1].startswith("# rdma-cdi config (docs/config.md), converted")]
tap.ok(len(pairs) == 2, "the migrating guide shows 2 conversions", len(pairs))
for src_json, shown in pairs:
    source = "rdma-shared" if "configList" in src_json else "sriov-dp"
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(src_json)
        p = subprocess.run([RDMA_CDI, "config", "convert", "--from", source, "config.json"],
                           capture_output=True, text=True, cwd=d, timeout=60)
    tap.ok(p.returncode == 0 and p.stdout == shown,
           "the migrating guide's %s conversion is what convert writes" % source,
           "".join(difflib.unified_diff(shown.splitlines(True), p.stdout.splitlines(True)))
           + p.stderr)

# ---- broken inputs -----------------------------------------------------------------------


def rs(pool, **top):
    return json.dumps(dict({"configList": [pool]}, **top))


def sd(pool):
    return json.dumps({"resourceList": [pool]})


GOOD_RS = {"resourceName": "a", "rdmaHcaMax": 10, "selectors": {"vendors": ["15b3"]}}
GOOD_SD = {"resourceName": "a", "selectors": {"isRdma": True}}
BROKEN = [
    ("not JSON", "rdma-shared", "{configList: []}", ["t.json:1:3: not JSON: a syntax error"]),
    ("empty file", "rdma-shared", " \n", ["empty: expected a JSON object"]),
    ("text after the value", "rdma-shared", rs(GOOD_RS) + " {}",
     ["not JSON: text after the end of the value"]),
    ("a top level that is a list", "rdma-shared", "[1]", ["t.json: expected a JSON object"]),
    ("a control character in a string", "rdma-shared", rs(GOOD_RS).replace('"a"', '"a\x01"'),
     ["not JSON: a control character"]),
    ("a NUL escape", "rdma-shared", rs(dict(GOOD_RS, resourceName="a\\u0000b")).replace(
        "\\\\u", "\\u"), ["a \\u0000 escape"]),
    ("nesting", "rdma-shared", '{"configList": ' + "[" * 40 + "]" * 40 + "}",
     ["nested deeper than 16 levels"]),
    ("rdmaHcaMax a string", "rdma-shared", rs(dict(GOOD_RS, rdmaHcaMax="10")),
     ["configList[0].rdmaHcaMax: expected an integer"]),
    ("rdmaHcaMax a fraction", "rdma-shared", rs(dict(GOOD_RS, rdmaHcaMax=1.5)),
     ["configList[0].rdmaHcaMax: expected an integer"]),
    ("rdmaHcaMax 0", "rdma-shared", rs(dict(GOOD_RS, rdmaHcaMax=0)),
     ["rdmaHcaMax: must be between 1 and 1000 (it becomes sharedSlots), got 0"]),
    ("rdmaHcaMax over sharedSlots' bound", "rdma-shared", rs(dict(GOOD_RS, rdmaHcaMax=5000)),
     ["rdmaHcaMax: must be between 1 and 1000 (it becomes sharedSlots), got 5000"]),
    ("rdmaHcaMax missing", "rdma-shared", rs({"resourceName": "a", "devices": ["ib0"]}),
     ["configList[0]: rdmaHcaMax missing"]),
    ("vendors a string", "rdma-shared",
     rs(dict(GOOD_RS, selectors={"vendors": "15b3"})),
     ["selectors.vendors: expected a list of strings"]),
    ("a number in a list", "rdma-shared", rs(dict(GOOD_RS, selectors={"vendors": [5555]})),
     ["selectors.vendors[0]: expected a string"]),
    ("an empty selector list", "rdma-shared", rs(dict(GOOD_RS, selectors={"ifNames": []})),
     ["selectors.ifNames: empty list"]),
    ("an empty configList", "rdma-shared", '{"configList": []}',
     ["configList: empty list"]),
    ("no configList", "rdma-shared", '{"periodicUpdateInterval": 5}', ["configList missing"]),
    ("unknown top key", "rdma-shared", rs(GOOD_RS, useCdi=True),
     ['t.json: unknown key "useCdi" (rdma-shared knows periodicUpdateInterval, configList)']),
    ("unknown selector", "rdma-shared", rs(dict(GOOD_RS, selectors={"pciAddresses": ["x"]})),
     ['configList[0].selectors: unknown key "pciAddresses"']),
    ("a key given twice", "rdma-shared",
     '{"configList": [{"resourceName": "a", "ResourceName": "b", "rdmaHcaMax": 1, '
     '"devices": ["ib0"]}]}', ["configList[0]: resourceName given twice"]),
    ("the same resource twice", "rdma-shared",
     json.dumps({"configList": [GOOD_RS, dict(GOOD_RS, resourcePrefix="rdma")]}),
     ['configList[1].resourceName: "rdma/a" is already the resource of configList[0]']),
    ("an invalid resource name", "rdma-shared", rs(dict(GOOD_RS, resourceName="-ib-")),
     ['configList[0].resourceName: "rdma/-ib-" is no Kubernetes extended resource name']),
    ("an invalid prefix", "rdma-shared", rs(dict(GOOD_RS, resourcePrefix="kubernetes.io")),
     ["configList[0].resourcePrefix: \"kubernetes.io/a\" is no Kubernetes extended resource "
      "name (the kubelet refuses it): the kubernetes.io domain is reserved"]),
    ("both selectors and devices", "rdma-shared", rs(dict(GOOD_RS, devices=["ib0"])),
     ["configList[0]: both selectors and devices"]),
    ("neither selectors nor devices", "rdma-shared",
     rs({"resourceName": "a", "rdmaHcaMax": 1}), ["configList[0]: neither selectors nor"]),
    ("empty selectors", "rdma-shared", rs(dict(GOOD_RS, selectors={})),
     ["configList[0].selectors: no selector in it"]),
    ("a vendor ID written 0x15b3", "rdma-shared",
     rs(dict(GOOD_RS, selectors={"vendors": ["0x15b3"]})),
     ['selectors.vendors[0]: "0x15b3" is no ID rdma-shared matches']),
    ("link type eth", "rdma-shared", rs(dict(GOOD_RS, selectors={"linkTypes": ["eth"]})),
     ['selectors.linkTypes[0]: "eth": rdma-shared compares the netdev\'s link type']),
    ("a netdev name with a space", "rdma-shared",
     rs(dict(GOOD_RS, selectors={"ifNames": ["ib 0"]})),
     ['selectors.ifNames[0]: "ib 0" cannot be written as an rdma-cdi selector']),
    ("a driver name with a slash", "rdma-shared",
     rs(dict(GOOD_RS, selectors={"drivers": ["a/b"]})),
     ['selectors.drivers[0]: "a/b" is no driver name']),
    ("65 pools", "rdma-shared",
     json.dumps({"configList": [dict(GOOD_RS, resourceName="p%d" % i) for i in range(65)]}),
     ["configList: more than 64 pools"]),
    ("257 values", "rdma-shared",
     rs(dict(GOOD_RS, selectors={"ifNames": ["ib%d" % i for i in range(257)]})),
     ["selectors.ifNames: more than 256 values"]),
    ("two selector objects", "sriov-dp",
     sd(dict(GOOD_SD, selectors=[{"isRdma": True}, {"isRdma": True}])),
     ["resourceList[0].selectors: 2 selector objects"]),
    ("an empty selector list", "sriov-dp", sd(dict(GOOD_SD, selectors=[])),
     ["resourceList[0].selectors: empty list"]),
    ("isRdma a string", "sriov-dp", sd(dict(GOOD_SD, selectors={"isRdma": "true"})),
     ["selectors.isRdma: expected true or false"]),
    ("isRdma false", "sriov-dp", sd(dict(GOOD_SD, selectors={"isRdma": False})),
     ["resourceList[0]: isRdma is false"]),
    ("no isRdma", "sriov-dp", sd(dict(GOOD_SD, selectors={"vendors": ["15b3"]})),
     ["resourceList[0]: no isRdma: true"]),
    ("needVhostNet", "sriov-dp", sd(dict(GOOD_SD, selectors={"isRdma": True,
                                                           "needVhostNet": True})),
     ["selectors.needVhostNet: no equivalent"]),
    ("deviceType accelerator", "sriov-dp", sd(dict(GOOD_SD, deviceType="accelerator")),
     ["resourceList[0].deviceType: only netDevice pools convert"]),
    ("additionalInfo", "sriov-dp", sd(dict(GOOD_SD, additionalInfo={"*": {"t": "x"}})),
     ["resourceList[0].additionalInfo: no equivalent"]),
    ("rootDevices", "sriov-dp",
     sd(dict(GOOD_SD, selectors={"isRdma": True, "rootDevices": ["0000:86:00.0"]})),
     ["selectors.rootDevices: no equivalent: rdma-cdi selects VFs by their PF's netdev"]),
    ("acpiIndexes, ddpProfiles, pKeys", "sriov-dp",
     sd(dict(GOOD_SD, selectors={"isRdma": True, "acpiIndexes": ["101"], "ddpProfiles": ["x"],
                                 "pKeys": ["0x1"]})),
     ["acpiIndexes: no equivalent", "ddpProfiles: no equivalent", "pKeys: no equivalent"]),
    ("a SelectorObj that is not null", "sriov-dp", sd(dict(GOOD_SD, SelectorObj={})),
     ["resourceList[0].SelectorObj: only null converts"]),
    ("an unknown pool key", "sriov-dp", sd(dict(GOOD_SD, resourceNames="x")),
     ['resourceList[0]: unknown key "resourceNames"']),
]
for what, source, text, want in BROKEN:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = run("convert", "--from", source, path)
    lines = error_lines(err)
    missing = [w for w in want if not any(w in line for line in lines)]
    tap.ok(rc == 1 and not out and not missing and len(lines) == len(want),
           "%s: refused, naming the key" % what, "rc %d, missing %s\n%s" % (rc, missing, err))

# Files too big, or not files, are refused before any parsing.
with tempfile.TemporaryDirectory() as d:
    big = os.path.join(d, "big.json")
    with open(big, "w") as f:
        f.write('{"configList": [' + " " * (1024 * 1024) + "]}")
    rc, out, err = run("convert", "--from", "rdma-shared", big)
    tap.ok(rc == 1 and "larger than 1048576 bytes" in err, "a file over 1 MiB is refused", err)
    rc, out, err = run("convert", "--from", "rdma-shared", "-", stdin=" " * (1024 * 1024 + 1))
    tap.ok(rc == 1 and "<stdin>: larger than 1048576 bytes" in err,
           "standard input over 1 MiB is refused", err)
    rc, out, err = run("convert", "--from", "rdma-shared", d)
    tap.ok(rc == 1 and "not a regular file" in err, "a directory is refused", err)

# Usage: each mistake is exit 2 with its reason.
for args, why in [(["convert", "x.json"], "convert needs --from"),
                  (["convert", "--from", "rdma"], "--from rdma: expected rdma-shared or sriov-dp"),
                  (["convert", "--from", "sriov-dp"], "convert needs FILE"),
                  (["convert", "--from", "sriov-dp", "--strict", "x"], "--strict is an option"),
                  (["convert", "--from", "sriov-dp", "--sysfs-root", "/s", "x"],
                   "convert reads no node"),
                  (["check", "--from", "sriov-dp", "x"], "--from is an option of convert")]:
    rc, out, err = run(*args)
    tap.ok(rc == 2 and why in err, "config %s: exit 2 (%s)" % (" ".join(args), why), err)
sys.exit(tap.done())
