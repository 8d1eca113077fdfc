# SPDX-License-Identifier: Apache-2.0
"""A kubelet test double for `rdma-cdi bridge`, on python3-grpcio (an independent gRPC stack).

It plays both kubelet roles of the device-plugin API v1beta1 (kubelet-facts.md):
  - the Registration server on <plugin-dir>/kubelet.sock; inside Register it dials back to
    the plugin's socket, calls GetDevicePluginOptions and opens ListAndWatch before it
    answers, as the real kubelet does;
  - the DevicePlugin client (GetPreferredAllocation, Allocate, ... on the plugin socket).
A kubelet restart is what the real one does: stop serving, delete every socket in the
plugin dir (regular files stay), create kubelet.sock again.

The .proto is compiled at import time with grpc_tools into a temp dir.
"""

import atexit
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

PYTHON = "/usr/bin/python3"
# The socket of resource rdma.example/hca: "rdma-cdi_" + resource with "/" as "_" + ".sock".
DEFAULT_SOCKET = "rdma-cdi_rdma.example_hca.sock"


def socket_name(resource):
    return "rdma-cdi_" + resource.replace("/", "_") + ".sock"
_pb = None


def load_proto(proto_path):
    """Compiles proto_path once; returns (pb2, pb2_grpc)."""
    global _pb
    if _pb is None:
        out = tempfile.mkdtemp(prefix="rdma-cdi-proto-")
        atexit.register(shutil.rmtree, out, True)
        src = os.path.dirname(os.path.abspath(proto_path))
        subprocess.run([PYTHON, "-m", "grpc_tools.protoc", "-I" + src, "--python_out=" + out,
                        "--grpc_python_out=" + out, os.path.abspath(proto_path)], check=True)
        sys.path.insert(0, out)
        import deviceplugin_pb2
        import deviceplugin_pb2_grpc
        _pb = (deviceplugin_pb2, deviceplugin_pb2_grpc)
    return _pb


class Stream:
    """One ListAndWatch stream, consumed on a thread; every message kept."""

    def __init__(self, stub, pb):
        self.lists = []
        self.cond = threading.Condition()
        self.ended = False
        self.error = None
        self.call = stub.ListAndWatch(pb.Empty())
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            for resp in self.call:
                with self.cond:
                    self.lists.append(list(resp.devices))
                    self.cond.notify_all()
        except grpc.RpcError as e:
            self.error = e
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def wait(self, pred=lambda lists: len(lists) > 0, timeout=5.0):
        """Waits until pred(lists) holds; returns the latest list, or None on timeout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self.lists):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.lists[-1]

    def wait_end(self, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not self.ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def cancel(self):
        self.call.cancel()


class Kubelet:
    """The Registration server; records every Register and the plugin it dials back to."""

    def __init__(self, plugin_dir, proto_path):
        self.pb, self.pb_grpc = load_proto(proto_path)
        self.plugin_dir = plugin_dir
        self.sock = os.path.join(plugin_dir, "kubelet.sock")
        self.registrations = []   # (time.monotonic(), RegisterRequest, options from the plugin)
        self.streams = []
        self.by_resource = {}     # resource name -> ListAndWatch stream of its latest Register
        self.channels = []
        self.cond = threading.Condition()
        self.server = None
        self.started_at = None
        self.dial_back = True

    # -- Registration service --------------------------------------------------------
    def Register(self, request, context):
        t = time.monotonic()
        options = None
        if request.version != "v1beta1":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unsupported version")
        if self.dial_back:
            # What the kubelet does before answering (10 s dial timeout).
            ch = grpc.insecure_channel("unix:" + os.path.join(self.plugin_dir, request.endpoint))
            grpc.channel_ready_future(ch).result(timeout=10)
            stub = self.pb_grpc.DevicePluginStub(ch)
            options = stub.GetDevicePluginOptions(self.pb.Empty(), timeout=10)
            stream = Stream(stub, self.pb)
            with self.cond:
                self.channels.append(ch)
                self.streams.append(stream)
                self.by_resource[request.resource_name] = stream
        with self.cond:
            self.registrations.append((t, request, options))
            self.cond.notify_all()
        return self.pb.Empty()

    def start(self):
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handler = grpc.method_handlers_generic_handler("v1beta1.Registration", {
            "Register": grpc.unary_unary_rpc_method_handler(
                self.Register,
                request_deserializer=self.pb.RegisterRequest.FromString,
                response_serializer=self.pb.Empty.SerializeToString),
        })
        self.server.add_generic_rpc_handlers((handler,))
        self.started_at = time.monotonic()
        if not self.server.add_insecure_port("unix:" + self.sock):
            raise RuntimeError("cannot bind " + self.sock)
        self.server.start()
        return self

    def stop(self):
        for s in self.streams:
            s.cancel()
        for ch in self.channels:
            ch.close()
        if self.server:
            self.server.stop(0).wait()
        self.server = None

    def restart(self):
        """Stop, delete every socket in the plugin dir, serve kubelet.sock again."""
        self.stop()
        for name in os.listdir(self.plugin_dir):
            p = os.path.join(self.plugin_dir, name)
            if stat.S_ISSOCK(os.lstat(p).st_mode):
                os.unlink(p)
        with self.cond:
            self.registrations = []
            self.streams = []
            self.by_resource = {}
            self.channels = []
        return self.start()

    def wait_registrations(self, n=1, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.registrations) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.registrations[n - 1]

    def wait_resource(self, resource, timeout=5.0):
        """The stream of the latest registration of resource, waiting for one."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while resource not in self.by_resource:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.by_resource[resource]

    def latest_stream(self):
        with self.cond:
            return self.streams[-1] if self.streams else None

    def plugin_stub(self, endpoint=DEFAULT_SOCKET):
        ch = grpc.insecure_channel("unix:" + os.path.join(self.plugin_dir, endpoint),
                                   options=[("grpc.max_send_message_length", 64 << 20)])
        grpc.channel_ready_future(ch).result(timeout=10)
        self.channels.append(ch)
        return self.pb_grpc.DevicePluginStub(ch)


class Bridge:
    """A real `rdma-cdi bridge` process with its own fixture, plugin and spec dirs."""

    def __init__(self, rdma_cdi, workdir, sysfs, dev, extra=(), plugin_dir=None):
        self.workdir = workdir
        self.plugin_dir = plugin_dir or os.path.join(workdir, "plugins")
        self.spec_dir = os.path.join(workdir, "cdi")
        self.log_path = os.path.join(workdir, "bridge-%d.log" % time.monotonic_ns())
        if plugin_dir is None:
            os.makedirs(self.plugin_dir, exist_ok=True)
        self.argv = [rdma_cdi, "bridge", "--plugin-dir", self.plugin_dir, "--sysfs-root", sysfs,
                     "--dev-root", dev, "--spec-dir", self.spec_dir,
                     "--hook-path", "/usr/libexec/rdma-cdi/rdma-cdi-hook"] + list(extra)
        self.proc = None

    def start(self, prefix=(), env=None):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(list(prefix) + self.argv, stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        return self

    def socket(self):
        return os.path.join(self.plugin_dir, DEFAULT_SOCKET)

    def log_text(self):
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, text, timeout=5.0, count=1):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log_text().count(text) >= count:
                return True
            time.sleep(0.02)
        return False

    def signal(self, sig):
        self.proc.send_signal(sig)

    def sanitized(self):
        with open("/proc/%d/maps" % self.proc.pid) as f:
            return "libasan" in f.read()

    def memory_kib(self, field="VmRSS"):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def wait(self, timeout=10.0):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            if self.wait(10) is None:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
            self.log = None

    def spec_path(self):
        return os.path.join(self.spec_dir, "rdma.example-hca.json")


def make_fixture(mksysfs, profile, workdir, extra=()):
    sysfs = os.path.join(workdir, profile)
    dev = os.path.join(workdir, "dev-" + profile)
    subprocess.run([PYTHON, mksysfs, "build", profile, sysfs] + list(extra), check=True)
    subprocess.run([PYTHON, mksysfs, "mkdev", sysfs, dev], check=True)
    return sysfs, dev


def cleanup(path):
    shutil.rmtree(path, ignore_errors=True)


class NotRegistered(Exception):
    """The bridge started by up() did not register; the message is its log."""


def up(rdma_cdi, mksysfs, proto, work, profile="dgx", extra=(), fixture=(), timeout=60.0):
    """A fixture node, the kubelet double and one bridge, registered and with its first
    ListAndWatch list received: (sysfs, dev, kubelet, bridge, stream). Raises
    NotRegistered (the bridge's log) when the bridge does not register in time."""
    sysfs, dev = make_fixture(mksysfs, profile, work, fixture)
    plugin_dir = os.path.join(work, "plugins")
    os.makedirs(plugin_dir, exist_ok=True)
    k = Kubelet(plugin_dir, proto).start()
    b = Bridge(rdma_cdi, work, sysfs, dev, extra=list(extra), plugin_dir=plugin_dir).start()
    if k.wait_registrations(1, timeout) is None:
        log = b.log_text()
        b.stop()
        k.stop()
        raise NotRegistered(log)
    stream = k.latest_stream()
    stream.wait(timeout=timeout / 2)
    return sysfs, dev, k, b, stream
