# SPDX-License-Identifier: Apache-2.0
"""A kubelet test double for a DRA driver, on python3-grpcio (an independent gRPC stack).

It plays the three kubelet roles a DRA plugin meets (../../../shared/notes/dra-facts.md):

  PluginWatcher(registry_dir, protos, driver=None)
      The plugin watcher: polls the registry dir (every 50 ms) for sockets; for each new
      one (a new name, or a new inode or ctime at a known name) it dials it, calls GetInfo, checks
      the answer as the kubelet does (type "DRAPlugin", the expected name, an absolute
      endpoint that is a socket, a DRAPlugin version it knows) and calls
      NotifyRegistrationStatus(ok, error). Every registration is kept as a Registration;
      a removed socket is recorded as a deregistration, and when it comes back it is
      registered again.
  DRAClient(endpoint, protos, version="v1" | "v1beta1")
      NodePrepareResources / NodeUnprepareResources with a list of claims, answers as
      plain dicts; raw() sends any bytes to any method (malformed requests).
  HealthStream(endpoint, protos, version="v1" | "v1alpha1")
      One NodeWatchResources stream consumed on a thread; every message kept as a list of
      DeviceHealth tuples; wait helpers.

Claims are (namespace, name, uid) tuples or dicts with those keys. Calls raise
grpc.RpcError on a gRPC error (e.code(), e.details()). The .proto files are compiled with
grpc_tools at import time into a temp dir: load_protos(proto_dir) -> Protos.

Typical use (the driver under test already runs):
    protos = load_protos("proto")
    watcher = PluginWatcher(registry_dir, protos, driver="rdma.example").start()
    reg = watcher.wait_registrations(1)          # Registration or None
    assert reg.ok, reg.error
    client = DRAClient(reg.info.endpoint, protos, version=reg.dra_version)
    answers = client.prepare([("default", "c1", "uid-1")])
    # {"uid-1": {"error": "", "devices": [{"request_names": [...], "pool_name": ...,
    #            "device_name": ..., "cdi_device_ids": [...], "share_id": ""}]}}
    stream = HealthStream(reg.info.endpoint, protos, version="v1")
    latest = stream.wait(lambda lists: len(lists) >= 1)
    # [DeviceHealth(pool, device, health="HEALTHY", message, last_updated, timeout)]
    watcher.stop(); client.close(); stream.cancel()
"""

import atexit
import collections
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

import grpc

PYTHON = "/usr/bin/python3"
PROTO_FILES = ["pluginregistration.proto", "dra-v1.proto", "dra-v1beta1.proto",
               "dra-health-v1.proto", "dra-health-v1alpha1.proto"]
# What the kubelet knows, newest first: it uses the first one the plugin lists.
DRA_VERSIONS = ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
HEALTH_VERSIONS = ["v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"]
DRA_SERVICE = {"v1": "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
               "v1beta1": "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"}
HEALTH_SERVICE = {"v1": "v1.DRAResourceHealth", "v1alpha1": "v1alpha1.DRAResourceHealth"}
REG_SERVICE = "pluginregistration.Registration"
CALL_TIMEOUT = 45.0  # the kubelet's default for plugin calls

DeviceHealth = collections.namedtuple(
    "DeviceHealth", "pool device health message last_updated timeout")


class Protos:
    """The compiled modules: reg, dra["v1"|"v1beta1"], health["v1"|"v1alpha1"]."""

    def __init__(self, reg, dra, health):
        self.reg = reg
        self.dra = dra
        self.health = health


_protos = {}


def load_protos(proto_dir):
    """Compiles the five DRA .proto files of proto_dir once; returns Protos."""
    proto_dir = os.path.abspath(proto_dir)
    if proto_dir not in _protos:
        if _protos:
            raise RuntimeError("one proto dir per process (the modules share names)")
        out = tempfile.mkdtemp(prefix="rdma-cdi-dra-proto-")
        atexit.register(shutil.rmtree, out, True)
        subprocess.run([PYTHON, "-m", "grpc_tools.protoc", "-I" + proto_dir,
                        "--python_out=" + out]
                       + [os.path.join(proto_dir, f) for f in PROTO_FILES], check=True)
        sys.path.insert(0, out)
        import pluginregistration_pb2
        import dra_v1_pb2
        import dra_v1beta1_pb2
        import dra_health_v1_pb2
        import dra_health_v1alpha1_pb2
        _protos[proto_dir] = Protos(pluginregistration_pb2,
                                    {"v1": dra_v1_pb2, "v1beta1": dra_v1beta1_pb2},
                                    {"v1": dra_health_v1_pb2,
                                     "v1alpha1": dra_health_v1alpha1_pb2})
    return _protos[proto_dir]


def _channel(path):
    return grpc.insecure_channel("unix:" + path,
                                 options=[("grpc.max_send_message_length", 64 << 20),
                                          ("grpc.max_receive_message_length", 64 << 20),
                                          ("grpc.enable_retries", 0)])


def _wait(cond, pred, timeout):
    """Under cond: waits until pred() is true; returns its value or None on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        cond.wait(left)


# ---- the plugin watcher ------------------------------------------------------------------

class Registration:
    """One registration attempt: the socket, GetInfo's answer (info, None when the call
    failed), what the watcher told the plugin (ok, error), the versions it picked."""

    def __init__(self, socket, inode):
        self.socket = socket
        self.inode = inode
        self.time = time.monotonic()
        self.info = None
        self.ok = False
        self.error = ""
        self.notified = False      # NotifyRegistrationStatus answered
        self.dra_version = None    # "v1" or "v1beta1"
        self.health_version = None  # "v1", "v1alpha1" or None

    def __repr__(self):
        return "Registration(%s, ok=%s, error=%r)" % (self.socket, self.ok, self.error)


class PluginWatcher:
    def __init__(self, registry_dir, protos, driver=None, poll=0.05):
        self.dir = registry_dir
        self.pb = protos
        self.driver = driver
        self.poll = poll
        self.registrations = []   # Registration, in order
        self.deregistrations = []  # (time.monotonic(), socket path)
        self.refuse = None        # an error to send instead of success, once
        self.known = {}           # socket path -> (inode, ctime)
        self.cond = threading.Condition()
        self.running = False
        self.thread = None

    def start(self):
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.running = False
        if self.thread:
            self.thread.join(5)

    def refuse_next(self, error):
        """The next registration is answered plugin_registered=False with error."""
        with self.cond:
            self.refuse = error

    def _sockets(self):
        found = {}
        try:
            names = os.listdir(self.dir)
        except OSError:
            return found
        for name in names:
            p = os.path.join(self.dir, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISSOCK(st.st_mode):
                # A new socket may get the old one's inode number: its ctime tells.
                found[p] = (st.st_ino, st.st_ctime_ns)
        return found

    def _run(self):
        while self.running:
            found = self._sockets()
            for p in list(self.known):
                if p not in found:
                    with self.cond:
                        del self.known[p]
                        self.deregistrations.append((time.monotonic(), p))
                        self.cond.notify_all()
            for p, ino in found.items():
                if self.known.get(p) != ino:
                    self.known[p] = ino
                    self._register(p, ino)
            time.sleep(self.poll)

    def _check(self, info):
        if info.type != "DRAPlugin":
            return "plugin type %r is not DRAPlugin" % info.type
        if self.driver is not None and info.name != self.driver:
            return "plugin name %r is not the expected %r" % (info.name, self.driver)
        if not os.path.isabs(info.endpoint):
            return "endpoint %r is not absolute" % info.endpoint
        try:
            if not stat.S_ISSOCK(os.lstat(info.endpoint).st_mode):
                return "endpoint %s is not a socket" % info.endpoint
        except OSError as e:
            return "endpoint %s: %s" % (info.endpoint, e.strerror)
        if not any(v in info.supported_versions for v in DRA_VERSIONS):
            return "no supported DRAPlugin version in %s" % list(info.supported_versions)
        return ""

    def _register(self, path, ino):
        reg = Registration(path, ino)
        pb = self.pb.reg
        ch = _channel(path)
        try:
            grpc.channel_ready_future(ch).result(timeout=5)
            get_info = ch.unary_unary("/%s/GetInfo" % REG_SERVICE,
                                      request_serializer=pb.InfoRequest.SerializeToString,
                                      response_deserializer=pb.PluginInfo.FromString)
            notify = ch.unary_unary("/%s/NotifyRegistrationStatus" % REG_SERVICE,
                                    request_serializer=pb.RegistrationStatus.SerializeToString,
                                    response_deserializer=pb.RegistrationStatusResponse.FromString)
            reg.info = get_info(pb.InfoRequest(), timeout=10)
            reg.error = self._check(reg.info)
            with self.cond:
                if not reg.error and self.refuse is not None:
                    reg.error, self.refuse = self.refuse, None
            reg.ok = not reg.error
            if reg.ok:
                reg.dra_version = next(v for v in DRA_VERSIONS
                                       if v in reg.info.supported_versions).split(".")[0]
                reg.health_version = next((v.split(".")[0] for v in HEALTH_VERSIONS
                                           if v in reg.info.supported_versions), None)
            notify(pb.RegistrationStatus(plugin_registered=reg.ok, error=reg.error), timeout=10)
            reg.notified = True
        except grpc.RpcError as e:
            reg.ok = False
            reg.error = "%s: %s" % (e.code().name, e.details())
        except grpc.FutureTimeoutError:
            reg.ok = False
            reg.error = "cannot connect to %s" % path
        finally:
            ch.close()
        with self.cond:
            self.registrations.append(reg)
            self.cond.notify_all()

    def wait_registrations(self, n=1, timeout=5.0):
        """The n-th registration (1-based), waiting for it; None on timeout."""
        with self.cond:
            return _wait(self.cond, lambda: len(self.registrations) >= n
                         and self.registrations[n - 1], timeout)

    def wait_deregistrations(self, n=1, timeout=5.0):
        """The n-th (time, socket) the watcher saw go; None on timeout."""
        with self.cond:
            return _wait(self.cond, lambda: len(self.deregistrations) >= n
                         and self.deregistrations[n - 1], timeout)


# ---- the DRA client ----------------------------------------------------------------------

def _claim(pb, c):
    if isinstance(c, dict):
        return pb.Claim(namespace=c["namespace"], name=c["name"], uid=c["uid"])
    ns, name, uid = c
    return pb.Claim(namespace=ns, name=name, uid=uid)


class DRAClient:
    def __init__(self, endpoint, protos, version="v1"):
        self.pb = protos.dra[version]
        self.service = DRA_SERVICE[version]
        self.version = version
        self.ch = _channel(endpoint)
        grpc.channel_ready_future(self.ch).result(timeout=10)

    def _method(self, name, req, resp):
        return self.ch.unary_unary("/%s/%s" % (self.service, name),
                                   request_serializer=req.SerializeToString,
                                   response_deserializer=resp.FromString)

    def prepare(self, claims, timeout=CALL_TIMEOUT):
        """NodePrepareResources: {uid: {"error": str, "devices": [dict]}}."""
        pb = self.pb
        m = self._method("NodePrepareResources", pb.NodePrepareResourcesRequest,
                         pb.NodePrepareResourcesResponse)
        resp = m(pb.NodePrepareResourcesRequest(claims=[_claim(pb, c) for c in claims]),
                 timeout=timeout)
        out = {}
        for uid, r in resp.claims.items():
            devices = []
            for d in r.devices:
                dev = {"request_names": list(d.request_names), "pool_name": d.pool_name,
                       "device_name": d.device_name, "cdi_device_ids": list(d.cdi_device_ids)}
                if self.version == "v1":
                    dev["share_id"] = d.share_id
                devices.append(dev)
            out[uid] = {"error": r.error, "devices": devices}
        return out

    def unprepare(self, claims, timeout=CALL_TIMEOUT):
        """NodeUnprepareResources: {uid: error} ("" = succeeded)."""
        pb = self.pb
        m = self._method("NodeUnprepareResources", pb.NodeUnprepareResourcesRequest,
                         pb.NodeUnprepareResourcesResponse)
        resp = m(pb.NodeUnprepareResourcesRequest(claims=[_claim(pb, c) for c in claims]),
                 timeout=timeout)
        return {uid: r.error for uid, r in resp.claims.items()}

    def raw(self, method, payload, timeout=10.0):
        """Sends payload (bytes) to method ("NodePrepareResources", ...); the answer's bytes."""
        m = self.ch.unary_unary("/%s/%s" % (self.service, method))
        return m(payload, timeout=timeout)

    def prepare_future(self, claims, timeout=CALL_TIMEOUT):
        """NodePrepareResources without waiting: a grpc future (cancel(), result())."""
        pb = self.pb
        m = self._method("NodePrepareResources", pb.NodePrepareResourcesRequest,
                         pb.NodePrepareResourcesResponse)
        return m.future(pb.NodePrepareResourcesRequest(claims=[_claim(pb, c) for c in claims]),
                        timeout=timeout)

    def close(self):
        self.ch.close()


# ---- health streams ------------------------------------------------------------------------

class HealthStream:
    """One NodeWatchResources stream; lists holds every message received, in order, and
    times when each arrived (time.monotonic(): the kubelet stamps devices on arrival)."""

    def __init__(self, endpoint, protos, version="v1"):
        pb = protos.health[version]
        self.pb = pb
        self.lists = []
        self.times = []
        self.cond = threading.Condition()
        self.ended = False
        self.error = None
        self.ch = _channel(endpoint)
        m = self.ch.unary_stream("/%s/NodeWatchResources" % HEALTH_SERVICE[version],
                                 request_serializer=pb.NodeWatchResourcesRequest.SerializeToString,
                                 response_deserializer=pb.NodeWatchResourcesResponse.FromString)
        self.call = m(pb.NodeWatchResourcesRequest())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for resp in self.call:
                devs = [DeviceHealth(d.device.pool_name, d.device.device_name,
                                     self.pb.HealthStatus.Name(d.health), d.message,
                                     d.last_updated_time, d.health_check_timeout_seconds)
                        for d in resp.devices]
                with self.cond:
                    self.lists.append(devs)
                    self.times.append(time.monotonic())
                    self.cond.notify_all()
        except grpc.RpcError as e:
            self.error = e
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def wait(self, pred=lambda lists: len(lists) > 0, timeout=5.0):
        """Waits until pred(lists) holds; returns the latest list, or None on timeout."""
        with self.cond:
            ok = _wait(self.cond, lambda: pred(self.lists), timeout)
            return self.lists[-1] if ok else None

    def wait_end(self, timeout=5.0):
        with self.cond:
            return bool(_wait(self.cond, lambda: self.ended, timeout))

    def cancel(self):
        self.call.cancel()
        self.ch.close()
