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


def paused_writer_env(pause_rename, spec_name, mark, release=None):
    """The environment of a writer that stops at the rename of its spec temp
    (tests/tools/pause-rename.c, built as pause_rename): for good, or until the file
    release exists."""
    env = dict(os.environ, LD_PRELOAD=pause_rename, RDMA_CDI_TEST_PAUSE_RENAME=spec_name,
               RDMA_CDI_TEST_PAUSE_MARK=mark)
    if release:
        env["RDMA_CDI_TEST_PAUSE_RELEASE"] = release
    # An ASan runtime must come first among the libraries; the shim sits before it.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return env
