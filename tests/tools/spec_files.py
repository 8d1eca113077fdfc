# SPDX-License-Identifier: Apache-2.0
"""Ways the daemons' tests keep rdma-cdi from writing its spec (tests/bridge/test-kubelet.py,
tests/dra/test-dra.py): a file rdma-cdi did not write at its path is never replaced, so
every write fails until the test removes it.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    from spec_files import block_spec, write_foreign_spec
"""
import json
import os


def write_foreign_spec(path):
    """Puts a hand-written spec of another kind, defining nothing, at path. Returns its
    text."""
    text = json.dumps({"cdiVersion": "0.5.0", "kind": "other.example/x", "devices": []})
    _replace(path, text)
    return text


def block_spec(path):
    """Puts at path a copy of our spec there that rdma-cdi no longer counts as its own (its
    hook gone): the file on disk still defines every name it did. Returns its text."""
    with open(path) as f:
        spec = json.load(f)
    del spec["containerEdits"]["hooks"]
    text = json.dumps(spec)
    _replace(path, text)
    return text


def _replace(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
