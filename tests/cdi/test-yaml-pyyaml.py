#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""YAML written by rdma-cdi read by an independent YAML 1.1 reader (PyYAML), and YAML
written by PyYAML read by rdma-cdi: both must see the same values and types.

usage: test-yaml-pyyaml.py CDI_CONVERT DATA_DIR   (TAP output)
"""
import json
import pathlib
import subprocess
import sys

import yaml

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
from tap import Tap  # noqa: E402

TRICKY = [
    "0", "1", "-1", "+1", "1.5", "1e3", ".5", "0x10", "0o10", "010", "1_000", "1:30",
    ".inf", "-.inf", ".nan", "true", "false", "True", "TRUE", "yes", "no", "Yes", "NO",
    "on", "off", "y", "n", "Y", "N", "null", "Null", "NULL", "~", "", " ", "=", "<<",
    "- x", "-", "? x", ": x", "a: b", "a #b", "#x", "@x", "`x", "!x", "&x", "*x", "|x",
    ">x", "%x", "'x", '"x', "[x]", "{x}", "x,y", " lead", "trail ", "two\nlines", "tab\t",
    "é", "日本", "2001-01-01", "0000:3b:00.0", "---", "...", "a:", "x\\y", "\x7f", "\x01",
    "mlx5_0", "/dev/infiniband/uverbs0", "PATH=/usr/bin", "rdma.example/hca",
]

# Plain scalars that YAML 1.1 readers type differently: go-yaml v2 (what the CDI
# libraries use, and what rdma-cdi's reader follows) reads y/Y/n/N as bools and 1e3 as
# a float; PyYAML reads them as strings. rdma-cdi quotes them when writing, so its own
# output is unambiguous; PyYAML leaves them plain, so they are left out of the
# PyYAML -> rdma-cdi direction and their Go typing is checked on its own below.
READERS_DISAGREE = {"y", "Y", "n", "N", "1e3"}

TAP = Tap()
check = TAP.ok


def convert(tool, src, dst, text):
    p = subprocess.run([tool, src, dst], input=text.encode(), capture_output=True)
    if p.returncode != 0:
        print(f"# cdi-convert {src} {dst} failed: {p.stderr.decode().strip()}")
        return None
    return p.stdout.decode()


def main():
    tool, data = sys.argv[1], pathlib.Path(sys.argv[2])
    doc = {
        "strings": TRICKY,
        "keys": {s: s for s in TRICKY},
        "numbers": [0, -1, 231, 4294967295, 1.5, -0.25],
        "others": [True, False, None, [], {}, [[]], {"a": {}}],
    }
    docs = {"tricky strings": doc}
    for f in sorted(data.glob("good-*.json")):
        docs[f.name] = json.loads(f.read_text())

    for name, want in docs.items():
        out = convert(tool, "json", "yaml", json.dumps(want))
        got = yaml.safe_load(out) if out is not None else "conversion failed"
        check(got == want, f"{name}: rdma-cdi YAML read by PyYAML gives the same values")
        if got != want and isinstance(got, dict):
            for k in want:
                if got.get(k) != want[k]:
                    print(f"# {k}: got {got.get(k)!r}")

        if name == "tricky strings":
            want = dict(want, strings=[s for s in TRICKY if s not in READERS_DISAGREE],
                        keys={s: s for s in TRICKY if s not in READERS_DISAGREE})
        for style in (False, True, None):
            text = yaml.safe_dump(want, default_flow_style=style, allow_unicode=True,
                                  sort_keys=False)
            out = convert(tool, "yaml", "json", text)
            got = json.loads(out) if out is not None else "conversion failed"
            check(got == want,
                  f"{name}: PyYAML output (flow style {style}) read by rdma-cdi gives the same values")

    # Plain YAML 1.1 scalars are typed the way Go's YAML reader types them.
    plain = "a: 0\nb: yes\nc: ~\nd: 1.5\ne: 0.5.0\nf: mlx5_0\ng: 0x1f\nh: off\n"
    out = convert(tool, "yaml", "json", plain)
    check(out is not None and json.loads(out) == {
        "a": 0, "b": True, "c": None, "d": 1.5, "e": "0.5.0", "f": "mlx5_0", "g": 31, "h": False,
    } and yaml.safe_load(plain) == json.loads(out), "plain scalars typed like YAML 1.1 readers")

    out = convert(tool, "yaml", "json", "a: y\nb: N\nc: 1e3\nd: -2.5E-1\n")
    check(out is not None and json.loads(out) == {"a": True, "b": False, "c": 1000, "d": -0.25},
          "y, N and 1e3 typed as go-yaml v2 does (bool, bool, float)")

    return TAP.done()


if __name__ == "__main__":
    sys.exit(main())
