#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The ResourceSlice publisher against the API-server double (which validates every slice
as the real server does): publish, change (generation bumps), 300 devices in 3 slices,
slices deleted behind its back (re-created within 5 s, also after the watch ended), 500,
429 and 409 bursts, a restart over slices already there, and an unhealthy device's taint
with the 64-device limit.

    test-dra-publisher.py HELPER PYTHON3 MKSYSFS TESTS_DATA_DIR
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import apiserver_double as ad  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from tap import Tap  # noqa: E402

DRIVER = "rdma.example"
NODE = "node-a"
t = Tap()


class Helper:
    """dra-publisher-helper on its own loop; stderr (the log) collected."""

    def __init__(self, exe, srv):
        self.p = subprocess.Popen([exe, srv.url, srv.ca_path, srv.token_file, DRIVER, NODE],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, bufsize=1)
        self.log = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read_err, daemon=True).start()
        ready = self.p.stdout.readline().strip()
        if ready != "ready":
            print("Bail out! helper did not start: %r %s" % (ready, self.stderr()))
            sys.exit(1)

    def _read_err(self):
        for line in self.p.stderr:
            with self.lock:
                self.log.append(line.rstrip("\n"))

    def stderr(self):
        with self.lock:
            return "\n".join(self.log)

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def synced(self):
        return self.cmd("synced") == "synced 1"

    def quit(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            rc = self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        return rc


def wait(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(0.05)


def pool_state(srv):
    """(generations, slice count claimed, device names in order) of the node's slices."""
    sl = srv.slices(DRIVER, NODE)
    gens = {s["spec"]["pool"]["generation"] for s in sl}
    counts = {s["spec"]["pool"]["resourceSliceCount"] for s in sl}
    names = [d["name"] for s in sl for d in s["spec"].get("devices") or []]
    return sl, gens, counts, names


def complete(srv, n_devices):
    """The pool is complete and consistent with n_devices devices: one generation, as many
    slices as resourceSliceCount, every device once."""
    sl, gens, counts, names = pool_state(srv)
    return (len(gens) == 1 and counts == {len(sl)} and len(names) == n_devices
            and len(set(names)) == n_devices)


def generation(srv):
    _, gens, _, _ = pool_state(srv)
    return max(gens) if gens else None


def writes(srv):
    return len([r for r in srv.requests_matching(path_prefix=ad.SLICES_PATH)
                if r["method"] in ("POST", "PUT", "DELETE")])


def in_sync_lines(h):
    return re.findall(r"slices in sync \((\d+) devices, (\d+) slices, generation (\d+)\)",
                      h.stderr())


def main():
    exe, python3, mksysfs, data_dir = sys.argv[1:5]
    work = tempfile.mkdtemp(prefix="dra-publisher-")
    srv = ad.ApiServer(os.path.join(work, "api")).start()
    try:
        run(exe, python3, mksysfs, data_dir, work, srv)
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


def run(exe, python3, mksysfs, data_dir, work, srv):
    # A slice of another node and one of another driver: never touched.
    other = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": "node-b-rdma.example-x", "resourceVersion": "1"},
             "spec": {"driver": DRIVER, "nodeName": "node-b",
                      "pool": {"name": "node-b", "generation": 99, "resourceSliceCount": 1},
                      "devices": []}}
    srv.slices_by_name["node-b-rdma.example-x"] = other
    h = Helper(exe, srv)

    # -- publish
    t.ok(h.cmd("set 10") == "ok", "set 10 devices")
    t.ok(wait(lambda: complete(srv, 10)), "10 devices published in one slice",
         diag=srv.slices(DRIVER, NODE))
    t.ok(wait(h.synced), "the publisher says it is in sync")
    sl, _, _, _ = pool_state(srv)
    t.ok(len(sl) == 1 and sl[0]["metadata"]["name"].startswith(NODE + "-" + DRIVER + "-"),
         "generateName <node>-<driver>-", diag=[s["metadata"]["name"] for s in sl])
    t.ok(sl and sl[0]["spec"]["pool"]["name"] == NODE and sl[0]["spec"]["nodeName"] == NODE,
         "pool name = node name")
    lines = in_sync_lines(h)
    t.ok(lines and lines[-1][0] == "10" and lines[-1][1] == "1", "log: slices in sync (10 devices, 1 slices, ...)",
         diag=h.stderr())
    g1 = generation(srv)
    lists = srv.requests_matching("GET", ad.SLICES_PATH)
    t.ok(any("spec.driver=%s,spec.nodeName=%s" % (DRIVER, NODE) == r["query"].get("fieldSelector")
             for r in lists), "list and watch with the fieldSelector of driver and node",
         diag=[r["query"] for r in lists])
    t.ok(any(r["query"].get("watch") == "true" for r in lists), "a watch is open")

    # -- the same set again: nothing written
    before = writes(srv)
    h.cmd("set 10")
    time.sleep(1.0)
    t.ok(writes(srv) == before and generation(srv) == g1,
         "setting the same devices again writes nothing and keeps the generation")

    # -- change: generation bumps
    h.cmd("set 11")
    t.ok(wait(lambda: complete(srv, 11) and generation(srv) > g1),
         "a change: 11 devices at a higher generation (%s > %s)" % (generation(srv), g1))
    g2 = generation(srv)

    # -- 300 devices -> 3 slices
    h.cmd("set 300")
    t.ok(wait(lambda: complete(srv, 300) and generation(srv) > g2),
         "300 devices published completely", diag=pool_state(srv)[1:3])
    sizes = sorted(len(s["spec"]["devices"]) for s in srv.slices(DRIVER, NODE))
    t.ok(sizes == [44, 128, 128], "cut into 128 + 128 + 44", diag=sizes)
    t.ok(wait(h.synced), "in sync")
    g3 = generation(srv)

    # -- deleted behind its back: re-created within 5 s, generation kept
    srv.delete_all_slices(NODE, DRIVER)
    t0 = time.monotonic()
    back = wait(lambda: complete(srv, 300), timeout=5.0)
    t.ok(back, "slices deleted by someone else are back within 5 s (%.2f s)" % (time.monotonic() - t0))
    t.ok(generation(srv) == g3, "same devices: the generation stays")
    t.ok(len(srv.slices(DRIVER, "node-b")) == 1, "another node's slice is left alone")

    # -- the watch ends (server timeout): re-listed, re-watched, deletions still seen
    srv.close_watches()
    time.sleep(0.5)
    srv.delete_all_slices(NODE, DRIVER)
    t.ok(wait(lambda: complete(srv, 300), timeout=5.0),
         "after the watch ended, a deletion is still repaired within 5 s")

    # -- 500 burst on create
    srv.fail_next(4, 500, method="POST", path_prefix=ad.SLICES_PATH)
    srv.delete_all_slices(NODE, DRIVER)
    t0 = time.monotonic()
    t.ok(wait(lambda: complete(srv, 300), timeout=10.0), "a burst of 500 answers: retried, complete",
         diag="%.1f s\n%s\n%s" % (time.monotonic() - t0, h.stderr(),
                                   [(r["method"], r["path"], round(r["time"] % 100, 2))
                                    for r in srv.requests_matching(path_prefix=ad.SLICES_PATH)[-20:]]))
    t.ok(wait(h.synced), "and in sync")
    t.ok(len(re.findall(r"create failed: HTTP 500", h.stderr())) == 1,
         "four 500s of one kind are logged once", diag=h.stderr())

    # -- 429 with Retry-After
    srv.fail_next(2, 429, method="PUT", path_prefix=ad.SLICES_PATH, retry_after=1)
    h.cmd("set 299")
    t.ok(wait(lambda: complete(srv, 299), timeout=10.0), "429 with Retry-After: retried, complete")
    t.ok("update failed: HTTP 429" in h.stderr(), "the 429 was seen and logged", diag=h.stderr())

    # -- 409 burst on update: re-list first
    lists_before = len([r for r in srv.requests_matching("GET", ad.SLICES_PATH)
                        if r["query"].get("watch") != "true"])
    srv.fail_next(3, 409, method="PUT", path_prefix=ad.SLICES_PATH)
    h.cmd("set 298")
    t.ok(wait(lambda: complete(srv, 298), timeout=10.0), "a burst of 409 answers: complete")
    t.ok(wait(h.synced), "and in sync")
    lists_after = len([r for r in srv.requests_matching("GET", ad.SLICES_PATH)
                       if r["query"].get("watch") != "true"])
    t.ok(lists_after >= lists_before + 3, "each 409 made it list again (%d lists)"
         % (lists_after - lists_before))
    g4 = generation(srv)
    n_ok_lines = len(in_sync_lines(h))
    t.ok(n_ok_lines >= 3, "an in-sync line each time sync was reached (%d)" % n_ok_lines)
    t.ok(h.quit() == 0, "the helper stops cleanly")
    t.ok(complete(srv, 298), "the slices stay on the server when the publisher stops")

    # -- restart with slices there (plus a stray one at a higher generation)
    stray = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": NODE + "-" + DRIVER + "-stray"},
             "spec": {"driver": DRIVER, "nodeName": NODE,
                      "pool": {"name": NODE, "generation": g4 + 5, "resourceSliceCount": 1},
                      "devices": [{"name": "ghost"}]}}
    with srv.cond:
        srv.rv += 1
        stray["metadata"]["resourceVersion"] = str(srv.rv)
        srv.slices_by_name[stray["metadata"]["name"]] = stray
    h = Helper(exe, srv)
    h.cmd("set 5")
    t.ok(wait(lambda: complete(srv, 5) and generation(srv) > g4 + 5, timeout=10.0),
         "after a restart: the generation goes above the highest on the server (%s > %s)"
         % (generation(srv), g4 + 5), diag=pool_state(srv)[1:3])
    t.ok("ghost" not in srv.devices(DRIVER, NODE) and len(srv.slices(DRIVER, NODE)) == 1,
         "stale and stray slices replaced: one slice of 5 devices")

    # -- an unhealthy device: its taint, and the 64-device limit
    sysroot = os.path.join(work, "sys")
    shutil.copytree(os.path.join(data_dir, "dgx", "sys"), sysroot, symlinks=True)
    devroot = os.path.join(work, "dev")
    os.makedirs(devroot)
    subprocess.run([python3, mksysfs, "mkdev", sysroot, devroot], check=True,
                   stdout=subprocess.DEVNULL)
    t.ok(h.cmd("scan %s %s" % (sysroot, devroot)) == "ok 10", "the dgx fixture's 10 devices")
    t.ok(wait(lambda: complete(srv, 10)), "published")
    d9 = srv.devices(DRIVER, NODE).get("pci-0000-d8-00-0", {})
    t.ok(d9.get("taints") == [{"key": DRIVER + "/unhealthy", "value": "port-1-DOWN",
                               "effect": "NoSchedule"}],
         "the DOWN device carries the NoSchedule taint", diag=d9)
    d0 = srv.devices(DRIVER, NODE).get("pci-0000-1a-00-0", {})
    t.ok(d0 and "taints" not in d0 and
         d0["attributes"].get("resource.kubernetes.io/pcieRoot") == {"string": "pci0000:17"},
         "a healthy device: no taint, its attributes", diag=d0)
    g5 = generation(srv)
    with open(os.path.join(sysroot, "class", "infiniband", "mlx5_9", "ports", "1", "state"),
              "w") as f:
        f.write("4: ACTIVE\n")
    h.cmd("scan %s %s" % (sysroot, devroot))
    t.ok(wait(lambda: "taints" not in srv.devices(DRIVER, NODE).get("pci-0000-d8-00-0", {})
              and generation(srv) > g5),
         "the port recovers: the taint is removed, at a higher generation",
         diag=srv.devices(DRIVER, NODE).get("pci-0000-d8-00-0"))
    h.cmd("set 100 0")
    t.ok(wait(lambda: complete(srv, 100)), "100 devices, one tainted: complete")
    sizes = sorted(len(s["spec"]["devices"]) for s in srv.slices(DRIVER, NODE))
    t.ok(sizes == [36, 64], "the slice holding a tainted device keeps to 64", diag=sizes)
    t.ok(not srv.warnings, "the server warned about no field", diag=srv.warnings)
    t.ok(len(srv.slices(DRIVER, "node-b")) == 1, "another node's slice still left alone")
    t.ok(h.quit() == 0, "the helper stops cleanly")


if __name__ == "__main__":
    sys.exit(main())
