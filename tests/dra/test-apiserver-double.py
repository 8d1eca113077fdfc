#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The API-server double checked with an independent client (http.client + the test CA):
TLS, tokens, claims, slice validation and storage, conflicts, fieldSelector, watch, faults,
Node events, and the standalone mode. The DRA driver's tests trust what it stores and refuses."""

import http.client
import json
import os
import signal
import socket
import ssl
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

S = ad.SLICES_PATH
t = Tap()


class Client:
    def __init__(self, srv, token=None, ca=None):
        self.srv = srv
        self.token = token or srv.token
        self.ctx = ssl.create_default_context(cafile=ca or srv.ca_path)

    def req(self, method, path, body=None, token=None, timeout=5):
        c = http.client.HTTPSConnection("127.0.0.1", self.srv.port, context=self.ctx,
                                        timeout=timeout)
        h = {"Authorization": "Bearer " + (token or self.token), "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw), r
        except ValueError:
            return r.status, raw, r


def device(name, taint=False, **attrs):
    d = {"name": name, "attributes": {"resource.kubernetes.io/pcieRoot": {"string": "pci0000:3a"},
                                      "rdma.example/rdmaDevice": {"string": "mlx5_0"}}}
    d["attributes"].update(attrs)
    if taint:
        d["taints"] = [{"key": "rdma.example/unhealthy", "value": "port1-down",
                        "effect": "NoSchedule"}]
    return d


def slice_body(node="node1", devices=None, gen=1, driver="rdma.example", name=None):
    md = {"name": name} if name else {"generateName": node + "-rdma.example-"}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": md,
            "spec": {"driver": driver, "nodeName": node,
                     "pool": {"name": node, "generation": gen, "resourceSliceCount": 1},
                     "devices": devices if devices is not None else [device("pci-0000-3b-00-0")]}}


def is_status(obj, code, reason):
    return isinstance(obj, dict) and obj.get("kind") == "Status" and obj.get("code") == code \
        and obj.get("reason") == reason and obj.get("status") == "Failure"


def main():
    work = tempfile.mkdtemp(prefix="test-apiserver-double-")
    srv = ad.ApiServer(work, token="tok-1").start()
    cl = Client(srv)

    # TLS and tokens
    code, obj, _ = cl.req("GET", S, token="wrong")
    t.ok(code == 401 and is_status(obj, 401, "Unauthorized"), "a wrong token gets 401 Status")
    bad = Client(srv, ca=srv.other_ca())
    n_before = len(srv.requests)
    try:
        bad.req("GET", S)
        t.ok(False, "a client trusting another CA fails the handshake")
    except ssl.SSLError as ex:
        t.ok("CERTIFICATE_VERIFY_FAILED" in str(ex), "a client trusting another CA fails the "
             "handshake", ex)
    t.ok(len(srv.requests) == n_before, "no request recorded after a failed handshake")
    t.ok(srv.wait_for(lambda: srv.tls_failures >= 1), "the failed handshake is counted")
    ctx6 = ssl.create_default_context(cafile=srv.ca_path)
    with socket.create_connection(("127.0.0.1", srv.port)) as raw:
        with ctx6.wrap_socket(raw, server_hostname="localhost") as s:
            t.ok(s.version() is not None, "the certificate is valid for localhost too")
    with open(srv.token_file) as f:
        t.ok(f.read().strip() == "tok-1", "the token file holds the token")
    srv.rotate_token("tok-2")
    code, _, _ = cl.req("GET", S)
    t.ok(code == 401, "after rotation the old token is refused")
    code, _, _ = cl.req("GET", S, token="tok-2")
    with open(srv.token_file) as f:
        t.ok(code == 200 and f.read().strip() == "tok-2", "the new token is accepted and in the file")
    cl.token = "tok-2"
    t.ok(srv.requests[-1]["token"] == "tok-2" and srv.requests[-1]["method"] == "GET",
         "requests are recorded with their token")

    # claims
    results = [{"request": "nic", "driver": "rdma.example", "pool": "node1",
                "device": "pci-0000-3b-00-0"}]
    srv.add_claim("ns1", "claim-a", uid="uid-a", results=results)
    srv.add_claim("ns1", "claim-b", uid="uid-b")
    code, obj, _ = cl.req("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim-a")
    t.ok(code == 200 and obj["metadata"]["uid"] == "uid-a" and
         obj["status"]["allocation"]["devices"]["results"] == results,
         "an allocated claim is served with its results", obj)
    code, obj, _ = cl.req("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim-b")
    t.ok(code == 200 and "allocation" not in obj["status"], "an unallocated claim has no "
         "allocation")
    srv.delete_claim("ns1", "claim-a")
    code, obj, _ = cl.req("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim-a")
    t.ok(code == 404 and is_status(obj, 404, "NotFound") and
         obj["message"] == 'resourceclaims.resource.k8s.io "claim-a" not found',
         "a deleted claim is 404 with the server's message", obj)

    # slices: create, list, get, update, conflict, delete
    code, a, _ = cl.req("POST", S, slice_body("node1"))
    t.ok(code == 201 and a["metadata"]["name"].startswith("node1-rdma.example-") and
         len(a["metadata"]["name"]) == len("node1-rdma.example-") + 5 and
         a["metadata"].get("uid") and a["metadata"].get("resourceVersion") and
         a["metadata"].get("creationTimestamp"), "POST with generateName creates a slice", a)
    code, b, _ = cl.req("POST", S, slice_body("node2"))
    code, c, _ = cl.req("POST", S, slice_body("node1", driver="other.example"))
    t.ok(len(srv.slices()) == 3 and len(srv.slices("rdma.example", "node1")) == 1,
         "the slices are stored")
    code, lst, _ = cl.req("GET", S + "?fieldSelector=spec.driver%3Drdma.example%2Cspec.nodeName"
                          "%3Dnode1")
    t.ok(code == 200 and [i["metadata"]["name"] for i in lst["items"]] ==
         [a["metadata"]["name"]] and lst["metadata"]["resourceVersion"],
         "list with fieldSelector returns only that driver's and node's slices", lst)
    code, obj, _ = cl.req("GET", S + "?fieldSelector=spec.foo%3Dx")
    t.ok(code == 400 and "field label not supported" in obj["message"],
         "an unsupported field selector is refused")
    code, obj, _ = cl.req("GET", S + "/" + a["metadata"]["name"])
    t.ok(code == 200 and obj == a, "GET one returns the stored slice")
    upd = json.loads(json.dumps(a))
    upd["spec"]["pool"]["generation"] = 2
    upd["spec"]["devices"].append(device("pci-0000-3c-00-0"))
    code, u, _ = cl.req("PUT", S + "/" + a["metadata"]["name"], upd)
    t.ok(code == 200 and int(u["metadata"]["resourceVersion"]) > int(a["metadata"]["resourceVersion"])
         and len(u["spec"]["devices"]) == 2 and u["metadata"]["uid"] == a["metadata"]["uid"],
         "PUT updates and bumps resourceVersion", u)
    code, obj, _ = cl.req("PUT", S + "/" + a["metadata"]["name"], upd)  # stale now
    t.ok(code == 409 and is_status(obj, 409, "Conflict") and
         "the object has been modified" in obj["message"], "PUT with a stale "
         "resourceVersion is 409 Conflict", obj)
    upd2 = json.loads(json.dumps(u))
    code, same, _ = cl.req("PUT", S + "/" + a["metadata"]["name"], upd2)
    t.ok(code == 200 and same["metadata"]["resourceVersion"] == u["metadata"]["resourceVersion"],
         "a no-op PUT keeps the resourceVersion")
    upd2["spec"]["nodeName"] = "node9"
    code, obj, _ = cl.req("PUT", S + "/" + a["metadata"]["name"], upd2)
    t.ok(code == 422 and "field is immutable" in obj["message"], "nodeName is immutable")
    code, obj, _ = cl.req("PUT", S + "/nope", dict(upd, metadata={"name": "nope"}))
    t.ok(code == 404 and is_status(obj, 404, "NotFound"), "PUT of an absent slice is 404")
    code, obj, _ = cl.req("DELETE", S + "/" + b["metadata"]["name"])
    t.ok(code == 200 and len(srv.slices(node="node2")) == 0, "DELETE removes a slice")
    code, obj, _ = cl.req("DELETE", S + "/" + b["metadata"]["name"])
    t.ok(code == 404 and obj["message"] == 'resourceslices.resource.k8s.io "%s" not found'
         % b["metadata"]["name"], "DELETE of an absent slice is 404")
    code, obj, _ = cl.req("POST", S, slice_body("node3", name="fixed"))
    code, obj, _ = cl.req("POST", S, slice_body("node3", name="fixed"))
    t.ok(code == 409 and obj["reason"] == "AlreadyExists", "POST of an existing name is "
         "409 AlreadyExists")

    # validation
    def refused(body, needle, what):
        code, obj, _ = cl.req("POST", S, body)
        t.ok(code == 422 and is_status(obj, 422, "Invalid") and needle in obj.get("message", ""),
             what, obj)

    n = len(srv.slices())
    b = slice_body()
    del b["spec"]["driver"]
    refused(b, "spec.driver: Required value", "a slice without driver is refused")
    b = slice_body()
    del b["spec"]["nodeName"]
    refused(b, "spec.nodeName: Required value", "a slice without nodeName is refused")
    b = slice_body()
    del b["spec"]["pool"]["resourceSliceCount"]
    refused(b, "spec.pool.resourceSliceCount: Required value", "a pool without "
            "resourceSliceCount is refused")
    b = slice_body()
    del b["spec"]["pool"]["generation"]
    refused(b, "spec.pool.generation: Required value", "a pool without generation is refused")
    refused(slice_body(devices=[device("d%d" % i) for i in range(129)]),
            "spec.devices: Too many: 129: must have at most 128 items", "129 devices are refused")
    code, _, _ = cl.req("POST", S, slice_body(devices=[device("d%d" % i) for i in range(128)]))
    t.ok(code == 201, "128 devices are accepted")
    refused(slice_body(devices=[device("d%d" % i, taint=(i == 0)) for i in range(65)]),
            "must have at most 64 items", "65 devices with a taint are refused")
    code, _, _ = cl.req("POST", S, slice_body(devices=[device("d%d" % i, taint=True)
                                                       for i in range(64)]))
    t.ok(code == 201, "64 tainted devices are accepted")
    refused(slice_body(devices=[device("Pci_0")]), "spec.devices[0].name: Invalid value",
            "a device name that is not a DNS label is refused")
    refused(slice_body(devices=[device("a"), device("a")]), "spec.devices[1].name: Duplicate",
            "duplicate device names are refused")
    refused(slice_body(devices=[device("a", **{"rdma.example/x": {"int": 1, "string": "1"}})]),
            "exactly one value must be specified", "an attribute with two values is refused")
    refused(slice_body(devices=[device("a", **{"rdma.example/x": {}})]),
            "exactly one value must be specified", "an attribute with no value is refused")
    refused(slice_body(devices=[device("a", **{"rdma.example/x": {"string": "x" * 65}})]),
            "Too long: may not be more than 64", "a 65-char string is refused")
    code, _, _ = cl.req("POST", S, slice_body(devices=[device("a", **{"rdma.example/x":
                                                                      {"string": "x" * 64}})]))
    t.ok(code == 201, "a 64-char string is accepted")
    refused(slice_body(devices=[device("a", **{"rdma.example/v": {"version": "1.2"}})]),
            "semver", "a version that is not semver is refused")
    many = {"rdma.example/a%d" % i: {"int": i} for i in range(31)}
    refused(slice_body(devices=[device("a", **many)]), "must not exceed 32",
            "33 attributes are refused")
    many = {"rdma.example/a%d" % i: {"int": i} for i in range(30)}
    code, _, _ = cl.req("POST", S, slice_body(devices=[device("a", **many)]))
    t.ok(code == 201, "32 attributes are accepted")
    refused(slice_body(devices=[device("a", **{"rdma.example/bad-name": {"int": 1}})]),
            "C identifier", "an attribute name that is not a C identifier is refused")
    refused(slice_body(devices=[device("a", **{"Bad_Domain/x": {"int": 1}})]),
            "fully qualified name", "an attribute domain that is not a DNS subdomain is refused")
    d = device("a", taint=True)
    d["taints"][0]["effect"] = "PreferNoSchedule"
    refused(slice_body(devices=[d]), "Unsupported value", "a taint effect other than "
            "NoSchedule/NoExecute/None is refused")
    d = device("a", taint=True)
    d["taints"][0]["key"] = "bad key"
    refused(slice_body(devices=[d]), "taints[0].key: Invalid value", "a taint key that is "
            "not a qualified name is refused")
    d = device("a", taint=True)
    d["taints"][0]["value"] = "-bad-"
    refused(slice_body(devices=[d]), "taints[0].value: Invalid value", "a taint value that is "
            "not a label value is refused")
    code, obj, _ = cl.req("POST", S, slice_body(driver="Bad_Driver", devices=[device("a", **{
        "rdma.example/x": {"int": 1, "bool": True}})]))
    t.ok(code == 422 and obj["message"].count("Invalid value") >= 2 and
         obj["message"].startswith('ResourceSlice.resource.k8s.io "') and "[" in obj["message"],
         "several errors are listed in one message", obj)
    t.ok(len(srv.slices()) == n + 4, "refused slices are not stored")
    b = slice_body()
    b["spec"]["devices"][0]["colour"] = "red"
    code, _, r = cl.req("POST", S, b)
    t.ok(code == 201 and "unknown field" in (r.getheader("Warning") or "") and
         any("colour" in w for w in srv.warnings), "an unknown field is warned about")

    # core v1 Events about a Node
    E = "/api/v1/namespaces/default/events"

    def node_event(name, **over):
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": name, "namespace": "default"},
              "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "node1",
                                 "uid": "node1"},
              "type": "Warning", "reason": "RdmaDeviceUnhealthy", "message": "m",
              "reportingComponent": "rdma.example", "reportingInstance": "node1"}
        ev.update(over)
        return ev

    code, obj, _ = cl.req("POST", E, node_event("node1.1"))
    t.ok(code == 201 and obj["metadata"]["uid"] and
         [e["metadata"]["name"] for e in srv.node_events("node1")] == ["node1.1"],
         "a Node event in default is created and recorded", obj)
    code, obj, _ = cl.req("POST", E, node_event("node1.1"))
    t.ok(code == 409 and obj["reason"] == "AlreadyExists", "the same name again is 409")
    code, obj, _ = cl.req("POST", "/api/v1/namespaces/rdma-cdi/events",
                          node_event("node1.2", metadata={"name": "node1.2"}))
    t.ok(code == 422 and "does not match event.namespace" in obj["message"],
         "a Node event outside default is refused, as the real server refuses it", obj)
    code, obj, _ = cl.req("POST", E, node_event("node1.3", type="Error"))
    t.ok(code == 422 and "type" in obj["message"], "type is Normal or Warning", obj)
    code, obj, _ = cl.req("POST", E, node_event("node1.4", reportingInstance="n" * 129))
    t.ok(code == 422 and "reportingInstance" in obj["message"],
         "reportingInstance is at most 128 characters", obj)
    code, lst, _ = cl.req("GET", E)
    t.ok(code == 200 and [i["metadata"]["name"] for i in lst["items"]] == ["node1.1"],
         "refused events are not stored; GET lists the namespace's events")

    # watch
    srv.delete_all_slices()
    t.ok(srv.slices() == [], "delete_all_slices wipes every slice")
    code, lst, _ = cl.req("GET", S + "?fieldSelector=spec.nodeName%3Dnode5")
    rv = lst["metadata"]["resourceVersion"]
    events = []
    ended = threading.Event()

    def watcher():
        c = http.client.HTTPSConnection("127.0.0.1", srv.port, context=cl.ctx, timeout=10)
        c.request("GET", S + "?watch=true&resourceVersion=%s&fieldSelector=spec.nodeName%%3Dnode5"
                  "&timeoutSeconds=3" % rv, headers={"Authorization": "Bearer tok-2"})
        r = c.getresponse()
        buf = b""
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                events.append(json.loads(line))
        ended.set()

    th = threading.Thread(target=watcher, daemon=True)
    th.start()
    time.sleep(0.2)
    code, w, _ = cl.req("POST", S, slice_body("node5"))
    cl.req("POST", S, slice_body("node6"))
    w["spec"]["pool"]["generation"] = 7
    code, w2, _ = cl.req("PUT", S + "/" + w["metadata"]["name"], w)
    cl.req("DELETE", S + "/" + w["metadata"]["name"])
    srv.wait_for(lambda: len(events) >= 3, 3)
    t.ok([e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"] and
         events[1]["object"]["spec"]["pool"]["generation"] == 7 and
         all(e["object"]["spec"]["nodeName"] == "node5" for e in events),
         "watch streams this node's changes in order", events)
    t.ok(ended.wait(5), "timeoutSeconds ends the watch stream")
    events.clear()
    ended.clear()
    rv = srv.rv
    th = threading.Thread(target=watcher, daemon=True)
    th.start()
    time.sleep(0.2)
    srv.close_watches()
    t.ok(ended.wait(2), "close_watches ends an open stream")

    # faults
    srv.fail_next(2, 500, method="GET", path_prefix=S)
    c1, o1, _ = cl.req("GET", S)
    c2, _, _ = cl.req("GET", S)
    c3, _, _ = cl.req("GET", S)
    t.ok(c1 == 500 and c2 == 500 and c3 == 200 and is_status(o1, 500, "InternalError"),
         "fail_next answers the next n matching requests", (c1, c2, c3))
    srv.fail_next(1, 429, method="POST")
    c1, _, r = cl.req("POST", S, slice_body())
    t.ok(c1 == 429 and r.getheader("Retry-After") == "1", "429 carries Retry-After")
    srv.stall(3, method="GET", path_prefix="/apis/resource.k8s.io/v1/namespaces")
    t0 = time.monotonic()
    try:
        cl.req("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim-b",
               timeout=0.5)
        t.ok(False, "a stalled request hangs")
    except (socket.timeout, TimeoutError):
        t.ok(time.monotonic() - t0 < 2, "a stalled request hangs")
    code, _, _ = cl.req("GET", "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/claim-b")
    t.ok(code == 200, "only n requests stall")
    srv.stop()

    # standalone
    d2 = tempfile.mkdtemp(prefix="test-apiserver-double-")
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "apiserver_double.py"), "--dir", d2,
                          "--token", "st"], stdout=subprocess.PIPE, text=True)
    info = json.loads(p.stdout.readline())
    t.ok(os.path.exists(info["ca"]) and open(info["token_file"]).read().strip() == "st" and
         info["port"] > 0, "standalone prints port, CA and token file", info)
    stub = type("S", (), {"port": info["port"], "ca_path": info["ca"], "token": "st"})
    sc = Client(stub)
    code, _, _ = sc.req("POST", "/_double/claims", {"namespace": "n", "name": "c", "uid": "u"},
                        token=info["admin_token"])
    code2, obj, _ = sc.req("GET", "/apis/resource.k8s.io/v1/namespaces/n/resourceclaims/c")
    t.ok(code == 200 and code2 == 200 and obj["metadata"]["uid"] == "u",
         "standalone: a claim added through /_double/ is served")
    code, obj, _ = sc.req("GET", "/_double/requests", token=info["admin_token"])
    t.ok(code == 200 and [r["path"] for r in obj["requests"]] ==
         ["/apis/resource.k8s.io/v1/namespaces/n/resourceclaims/c"],
         "standalone: only API requests are recorded", obj)
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    t.ok(rc == 0, "standalone exits 0 on SIGTERM")
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
