#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The schema validation tool accepts good specs and rejects bad ones for the right
reason, its minimum-version rule agrees with the C one, and the C validator gives the
same verdicts on the same files.

usage: test-schema-tool.py VALIDATOR SCHEMA_DIR DATA_DIR CDI_CONVERT   (TAP output)
"""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
from tap import Tap  # noqa: E402

TAP = Tap()
check = TAP.ok


def run(*args, stdin=None):
    p = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    validator, schema_dir, data, convert = sys.argv[1:5]
    data = pathlib.Path(data)
    py = sys.executable

    # One file at a time: exit status and the reason printed.
    expect = {
        "good-rdma.json": (0, "ok "),
        "good-rdma.yaml": (0, "ok "),
        "good-1.1.0.json": (0, "ok "),
        "good-0.6.0.json": (0, "ok "),
        "bad-schema-no-devices.json": (1, "FAIL", "'devices' is a required property"),
        "bad-schema-major-string.yaml": (1, "FAIL", "devices[0].containerEdits.deviceNodes[0].major"),
        "bad-version-too-low.json": (1, "FAIL", "lower than 0.5.0, which devices[0].containerEdits.deviceNodes[0].hostPath needs"),
        "bad-version-unknown.json": (1, "FAIL", "'0.9.0' is not a known CDI version"),
        "bad-duplicate-key.yaml": (1, "FAIL", "duplicate key 'kind'"),
        "bad-name-one-char-class.json": (1, "FAIL", "class 't' breaks the CDI name rule"),
        "bad-name-duplicate.yaml": (1, "FAIL", "devices[1].name 'mlx5_0' is defined twice"),
    }
    for name, (status, prefix, *detail) in expect.items():
        rc, out = run(py, validator, schema_dir, data / name)
        good = rc == status and out.startswith(prefix) and all(d in out for d in detail)
        check(good, f"validator on {name}: exit {rc}, {out.strip()}")

    # --max-version 0.5.0 (Debian 12 podman) refuses newer specs, accepts 0.5.0 ones.
    rc, out = run(py, validator, "--max-version", "0.5.0", schema_dir, data / "good-0.6.0.json")
    check(rc == 1 and "higher than the accepted maximum 0.5.0" in out,
          f"--max-version 0.5.0 rejects a 0.6.0 spec: {out.strip()}")
    rc, out = run(py, validator, "--max-version", "0.5.0", schema_dir, data / "good-rdma.json",
                  data / "good-rdma.yaml")
    check(rc == 0 and out.count("\nok ") + out.startswith("ok ") == 2,
          "--max-version 0.5.0 accepts the 0.5.0 specs")

    # Several files: one line each, failure if any fails.
    rc, out = run(py, validator, schema_dir, data / "good-rdma.json", data / "bad-version-unknown.json")
    check(rc == 1 and len(out.strip().splitlines()) == 2, "mixed files: two lines, exit 1")
    rc, out = run(py, validator, schema_dir)
    check(rc == 2, "no files: usage error")
    rc, out = run(py, validator, "/nonexistent", data / "good-rdma.json")
    check(rc == 2, "missing schema dir: exit 2")

    # The C validator agrees with the verdicts.
    for name, (status, *_) in expect.items():
        fmt = "yaml" if name.endswith(".yaml") else "json"
        rc, out = run(convert, fmt, "json", "--validate", stdin=(data / name).read_text())
        check((rc == 0) == (status == 0),
              f"C validator agrees on {name}: {out.strip()[:150] if rc else 'valid'}")

    # Minimum version: the independent Python rule equals the C rule on many shapes.
    spec = importlib.util.spec_from_file_location("vcs", validator)
    vcs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vcs)
    node = {"path": "/dev/x"}
    shapes = []
    for ann in (None, {}, {"a": "b"}):
        for dev_ann in (None, {"x": "y"}):
            for kind in ("ab/cd", "ab/cd.e", "a.b/cd"):
                for name in ("a", "0", "_x"):
                    for edits in ({"env": ["A=1"]},
                                  {"deviceNodes": [node, dict(node, hostPath="")]},
                                  {"mounts": [{"hostPath": "/a", "containerPath": "/b", "type": "bind"}]},
                                  {"intelRdt": {}}, {"intelRdt": {"schemata": []}},
                                  {"additionalGids": []},
                                  {"netDevices": [{"hostInterfaceName": "a", "name": "b"}]}):
                        s = {"cdiVersion": "0.3.0", "kind": kind, "devices": []}
                        if ann is not None:
                            s["annotations"] = ann
                        d = {"name": name, "containerEdits": edits}
                        if dev_ann is not None:
                            d["annotations"] = dev_ann
                        s["devices"].append(d)
                        shapes.append(s)
                        shapes.append({"cdiVersion": "0.3.0", "kind": kind,
                                       "devices": [{"name": "a"}], "containerEdits": edits})
    shapes += [json.loads(f.read_text()) for f in sorted(data.glob("*.json"))]
    rc, out = run(convert, "json", "min-versions", stdin=json.dumps(shapes))
    lines = out.splitlines()
    check(rc == 0 and len(lines) == len(shapes), "C minimum versions computed for all specs")
    mismatches = []
    for s, line in zip(shapes, lines):
        c_version, _, c_why = line.strip().partition(" ")
        py_version, py_why = vcs.min_version(s)
        if (c_version, c_why) != (py_version, py_why):
            mismatches.append((s, line.strip(), py_version, py_why))
    for m in mismatches[:5]:
        print(f"# mismatch: {json.dumps(m[0])}: C {m[1]!r}, Python {m[2]} {m[3]!r}")
    check(not mismatches, f"C and Python minimum versions agree on {len(shapes)} specs")

    # The C output itself passes the schema, JSON and YAML, with podman's maximum.
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for fmt in ("json", "yaml"):
            rc, out = run(convert, "json", fmt, "--validate", stdin=(data / "good-rdma.json").read_text())
            path = pathlib.Path(tmp, f"out.{fmt}")
            path.write_text(out)
            files.append(path)
        rc, out = run(py, validator, "--max-version", "0.5.0", schema_dir, *files)
        check(rc == 0, f"rdma-cdi's own JSON and YAML output pass the schema: {out.strip()}")

    return TAP.done()


if __name__ == "__main__":
    sys.exit(main())
