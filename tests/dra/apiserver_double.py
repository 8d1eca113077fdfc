# SPDX-License-Identifier: Apache-2.0
"""A Kubernetes API-server test double for the DRA driver, on Python's stdlib only.

HTTPS (a test CA made with the openssl CLI; the server certificate names 127.0.0.1, ::1 and
localhost), bearer-token checks, ResourceClaims (GET) and ResourceSlices (POST, GET list with
fieldSelector, GET, PUT with resourceVersion conflicts, DELETE, deletecollection, watch),
validated as the real API server validates resource.k8s.io/v1 slices (422 Invalid with the
server's kind of message), and core v1 Events (POST, GET list), validated as the server
validates a v1 Event about a cluster-scoped object (node_events() returns them). Every request is recorded for assertions; tests can inject
failures (fail_next), hang requests (stall) and wipe slices (delete_all_slices, as the
kubelet does on start).

As a module:
    srv = ApiServer(workdir, token="t").start()
    srv.url, srv.ca_path, srv.token_file, srv.add_claim(...), srv.slices(...), srv.stop()
Standalone (for harnesses in other languages):
    apiserver_double.py --dir D [--port 0] [--token T] [--host 127.0.0.1]
prints one JSON line {"port", "url", "ca", "token_file", "token", "admin_token", "other_ca"}
and serves until SIGTERM. Standalone callers steer it through /_double/ endpoints (see
Handler._admin), authenticated by the admin token, never recorded as requests.
"""

import argparse
import copy
import datetime
import json
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GROUP = "resource.k8s.io"
VERSION = "v1"
API_VERSION = GROUP + "/" + VERSION
SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"
EVENTS_RE = re.compile(r"^/api/v1/namespaces/([^/]+)/events$")
EVENT_TYPES = ("Normal", "Warning")
CLAIMS_RE = re.compile(r"^/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)$")
REQUEST_BODY_MAX = 3 * 1024 * 1024  # the real server's limit

# Limits of resource.k8s.io/v1 (kubernetes/api resource/v1/types.go).
MAX_DEVICES = 128
MAX_DEVICES_TAINTS = 64
MAX_ATTRS_CAPS = 32
MAX_STRING = 64
MAX_ID = 32
MAX_DOMAIN = 63
MAX_DRIVER = 63
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")

REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
           422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}

DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
C_ID_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
SEMVER_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                       r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
QUANTITY_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i|[mkMGTPE]|)$")
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet

# Fields the real schema knows; anything else draws a "unknown field" warning (the
# server's default fieldValidation=Warn drops it and says so in a Warning header).
KNOWN_SPEC = {"driver", "pool", "nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection",
              "devices", "sharedCounters"}
KNOWN_DEVICE = {"name", "attributes", "capacity", "consumesCounters", "nodeName", "nodeSelector",
                "allNodes", "allowMultipleAllocations", "bindsToNode", "bindingConditions",
                "bindingFailureConditions", "taints"}
KNOWN_TAINT = {"key", "value", "effect", "timeAdded"}


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_obj(code, message, reason=None, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason or REASONS.get(code, ""), "code": code}
    if details is not None:
        s["details"] = details
    return s


def _run(args, cwd):
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(directory, cn="rdma-cdi test CA"):
    """A self-signed CA (EC P-256) in directory: returns (cert path, key path)."""
    os.makedirs(directory, exist_ok=True)
    crt = os.path.join(directory, "ca.crt")
    key = os.path.join(directory, "ca.key")
    _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=" + cn,
          "-addext", "basicConstraints=critical,CA:TRUE",
          "-addext", "keyUsage=critical,keyCertSign,cRLSign"], directory)
    return crt, key


def make_server_cert(directory, ca_crt, ca_key):
    """A server certificate signed by the CA, for 127.0.0.1, ::1 and localhost."""
    crt = os.path.join(directory, "server.crt")
    key = os.path.join(directory, "server.key")
    csr = os.path.join(directory, "server.csr")
    ext = os.path.join(directory, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n"
                "basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
    _run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
          "-keyout", key, "-out", csr, "-subj", "/CN=kube-apiserver-double"], directory)
    _run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
          "-CAcreateserial", "-out", crt, "-days", "2", "-extfile", ext], directory)
    return crt, key


# ---------------------------------------------------------------------------------------
# Validation, in the real server's words (field paths, "Required value", "Invalid value",
# "Too many", "Duplicate value", "Unsupported value").

class Errs:
    def __init__(self):
        self.items = []  # (field, message, cause reason)

    def required(self, field):
        self.items.append((field, "%s: Required value" % field, "FieldValueRequired"))

    def invalid(self, field, value, why):
        self.items.append((field, "%s: Invalid value: %s: %s" % (field, json.dumps(value), why),
                           "FieldValueInvalid"))

    def too_many(self, field, n, limit):
        self.items.append((field, "%s: Too many: %d: must have at most %d items" % (field, n, limit),
                           "FieldValueTooMany"))

    def duplicate(self, field, value):
        self.items.append((field, "%s: Duplicate value: %s" % (field, json.dumps(value)),
                           "FieldValueDuplicate"))

    def unsupported(self, field, value, allowed):
        self.items.append((field, "%s: Unsupported value: %s: supported values: %s" % (
            field, json.dumps(value), ", ".join('"%s"' % a for a in allowed)),
            "FieldValueNotSupported"))

    def message(self, kind, name):
        msgs = [m for _, m, _ in self.items]
        body = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
        return '%s.%s "%s" is invalid: %s' % (kind, GROUP, name, body)

    def causes(self):
        return [{"reason": r, "message": m.split(": ", 1)[1] if ": " in m else m, "field": f}
                for f, m, r in self.items]


def is_dns_subdomain(s):
    if not isinstance(s, str) or not 0 < len(s) <= 253:
        return False
    return all(DNS_LABEL_RE.match(p) for p in s.split("."))


def is_dns_label(s):
    return isinstance(s, str) and 0 < len(s) <= 63 and DNS_LABEL_RE.match(s) is not None


def is_label_value(s):
    return isinstance(s, str) and (s == "" or (len(s) <= 63 and LABEL_NAME_RE.match(s)))


def is_qualified_name(s):
    """A label key: [prefix/]name, prefix a DNS subdomain, name <= 63 chars."""
    if not isinstance(s, str):
        return False
    prefix, _, name = s.rpartition("/")
    if "/" in prefix:
        return False
    if prefix and not is_dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and LABEL_NAME_RE.match(name) is not None


def check_attr_name(e, field, name):
    """Attribute and capacity names: [domain/]ID, a C identifier <= 32 chars."""
    domain, slash, ident = name.rpartition("/")
    if slash and (not domain or "/" in domain or len(domain) > MAX_DOMAIN
                  or not is_dns_subdomain(domain)):
        e.invalid(field, name, "a fully qualified name must be a DNS subdomain (at most %d "
                  "characters) followed by a slash and a C identifier" % MAX_DOMAIN)
        return
    if not ident or len(ident) > MAX_ID or not C_ID_RE.match(ident):
        e.invalid(field, name, "a C identifier of at most %d characters must start with a "
                  "letter or underscore, followed by letters, digits or underscores" % MAX_ID)


def validate_attribute(e, field, v):
    if not isinstance(v, dict):
        e.invalid(field, v, "must be an object")
        return
    kinds = [k for k in ("int", "bool", "string", "version") if k in v]
    if len(kinds) != 1:
        e.invalid(field, v, "exactly one value must be specified")
        return
    k = kinds[0]
    x = v[k]
    if k == "int" and (not isinstance(x, int) or isinstance(x, bool)):
        e.invalid(field + ".int", x, "must be an integer")
    elif k == "bool" and not isinstance(x, bool):
        e.invalid(field + ".bool", x, "must be a boolean")
    elif k == "string":
        if not isinstance(x, str):
            e.invalid(field + ".string", x, "must be a string")
        elif len(x) > MAX_STRING:
            e.items.append((field + ".string", "%s.string: Too long: may not be more than %d bytes"
                            % (field, MAX_STRING), "FieldValueTooLong"))
    elif k == "version":
        if not isinstance(x, str) or not SEMVER_RE.match(x):
            e.invalid(field + ".version", x, "must be a string compatible with semver.org spec 2.0.0")
        elif len(x) > MAX_STRING:
            e.items.append((field + ".version", "%s.version: Too long: may not be more than %d "
                            "bytes" % (field, MAX_STRING), "FieldValueTooLong"))


def validate_taint(e, field, t, warnings):
    if not isinstance(t, dict):
        e.invalid(field, t, "must be an object")
        return
    for k in t:
        if k not in KNOWN_TAINT:
            warnings.append('unknown field "%s.%s"' % (field, k))
    key = t.get("key")
    if not key:
        e.required(field + ".key")
    elif not is_qualified_name(key):
        e.invalid(field + ".key", key, "name part must consist of alphanumeric characters, '-', "
                  "'_' or '.', and must start and end with an alphanumeric character")
    if "value" in t and not is_label_value(t["value"]):
        e.invalid(field + ".value", t["value"], "a valid label must be an empty string or "
                  "consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character")
    eff = t.get("effect")
    if not eff:
        e.required(field + ".effect")
    elif eff not in TAINT_EFFECTS:
        e.unsupported(field + ".effect", eff, TAINT_EFFECTS)


def validate_device(e, field, d, warnings):
    if not isinstance(d, dict):
        e.invalid(field, d, "must be an object")
        return
    for k in d:
        if k not in KNOWN_DEVICE:
            warnings.append('unknown field "%s.%s"' % (field, k))
    name = d.get("name")
    if not name:
        e.required(field + ".name")
    elif not is_dns_label(name):
        e.invalid(field + ".name", name, "a lowercase RFC 1123 label must consist of lower case "
                  "alphanumeric characters or '-', and must start and end with an alphanumeric "
                  "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
    attrs = d.get("attributes") or {}
    caps = d.get("capacity") or {}
    if not isinstance(attrs, dict):
        e.invalid(field + ".attributes", attrs, "must be an object")
        attrs = {}
    if not isinstance(caps, dict):
        e.invalid(field + ".capacity", caps, "must be an object")
        caps = {}
    for k, v in attrs.items():
        f = "%s.attributes[%s]" % (field, k)
        check_attr_name(e, f, k)
        validate_attribute(e, f, v)
    for k, v in caps.items():
        f = "%s.capacity[%s]" % (field, k)
        check_attr_name(e, f, k)
        val = v.get("value") if isinstance(v, dict) else None
        if not isinstance(val, (str, int)) or isinstance(val, bool) or \
                not QUANTITY_RE.match(str(val)):
            e.invalid(f + ".value", val, "quantities must match the regular expression "
                      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    n = len(attrs) + len(caps)
    if n > MAX_ATTRS_CAPS:
        e.invalid(field, n, "the total number of attributes and capacities must not exceed %d"
                  % MAX_ATTRS_CAPS)
    amu = d.get("allowMultipleAllocations")
    if amu is not None and not isinstance(amu, bool):
        e.invalid(field + ".allowMultipleAllocations", amu, "must be a boolean")
    taints = d.get("taints")
    if taints is not None:
        if not isinstance(taints, list):
            e.invalid(field + ".taints", taints, "must be a list")
        else:
            for i, t in enumerate(taints):
                validate_taint(e, "%s.taints[%d]" % (field, i), t, warnings)


def drop_disabled_fields(api, body):
    """body as the server stores it: fields of disabled features dropped (a copy)."""
    body = copy.deepcopy(body)
    if not api.consumable_capacity:
        for d in (body.get("spec") or {}).get("devices") or []:
            if isinstance(d, dict):
                d.pop("allowMultipleAllocations", None)
    return body


def validate_slice(obj, old=None):
    """Returns (Errs, warnings) for a ResourceSlice; old for an update."""
    e = Errs()
    warnings = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        e.required("spec")
        return e, warnings
    for k in spec:
        if k not in KNOWN_SPEC:
            warnings.append('unknown field "spec.%s"' % k)
    drv = spec.get("driver")
    if not drv:
        e.required("spec.driver")
    elif not isinstance(drv, str) or len(drv) > MAX_DRIVER or not is_dns_subdomain(drv):
        e.invalid("spec.driver", drv, "a lowercase RFC 1123 subdomain of at most %d characters"
                  % MAX_DRIVER)
    selectors = [k for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
                 if spec.get(k) not in (None, "", False)]
    if not selectors:
        e.required("spec.nodeName")  # the real message lists all four: we only use nodeName
    elif len(selectors) > 1:
        e.invalid("spec", ", ".join(selectors), "exactly one of `nodeName`, `nodeSelector`, "
                  "`allNodes`, `perDeviceNodeSelection` is required")
    if "nodeName" in spec and spec["nodeName"] and not is_dns_subdomain(spec["nodeName"]):
        e.invalid("spec.nodeName", spec["nodeName"], "a lowercase RFC 1123 subdomain")
    pool = spec.get("pool")
    if not isinstance(pool, dict):
        e.required("spec.pool")
    else:
        pn = pool.get("name")
        if not pn:
            e.required("spec.pool.name")
        elif not isinstance(pn, str) or len(pn) > 253 or \
                not all(is_dns_subdomain(p) for p in pn.split("/")):
            e.invalid("spec.pool.name", pn, "must consist of one or more DNS sub-domains "
                      "separated by slashes")
        gen = pool.get("generation")
        if gen is None:
            e.required("spec.pool.generation")
        elif not isinstance(gen, int) or isinstance(gen, bool) or gen < 0:
            e.invalid("spec.pool.generation", gen, "must be greater than or equal to 0")
        cnt = pool.get("resourceSliceCount")
        if cnt is None:
            e.required("spec.pool.resourceSliceCount")
        elif not isinstance(cnt, int) or isinstance(cnt, bool) or cnt <= 0:
            e.invalid("spec.pool.resourceSliceCount", cnt, "must be greater than 0")
    devices = spec.get("devices") or []
    if not isinstance(devices, list):
        e.invalid("spec.devices", devices, "must be a list")
        devices = []
    tainted = any(isinstance(d, dict) and (d.get("taints") or d.get("consumesCounters"))
                  for d in devices)
    limit = MAX_DEVICES_TAINTS if tainted else MAX_DEVICES
    if len(devices) > limit:
        e.too_many("spec.devices", len(devices), limit)
    seen = set()
    for i, d in enumerate(devices):
        validate_device(e, "spec.devices[%d]" % i, d, warnings)
        n = d.get("name") if isinstance(d, dict) else None
        if n:
            if n in seen:
                e.duplicate("spec.devices[%d].name" % i, n)
            seen.add(n)
    if old is not None:
        os_ = old["spec"]
        for f in ("driver", "nodeName"):
            if spec.get(f) != os_.get(f):
                e.invalid("spec." + f, spec.get(f), "field is immutable")
        if isinstance(pool, dict) and pool.get("name") != os_["pool"]["name"]:
            e.invalid("spec.pool.name", pool.get("name"), "field is immutable")
    return e, warnings


def parse_selector(sel, allowed):
    """fieldSelector/labelSelector 'a=b,c!=d' -> [(key, op, value)]; raises ValueError."""
    out = []
    if not sel:
        return out
    for term in sel.split(","):
        m = re.match(r"^([^=!]+)(==|=|!=)(.*)$", term)
        if not m:
            raise ValueError("invalid selector: '%s'" % sel)
        k, op, v = m.group(1).strip(), m.group(2), m.group(3).strip()
        if allowed is not None and k not in allowed:
            raise ValueError('field label not supported: %s' % k)
        out.append((k, "!=" if op == "!=" else "=", v))
    return out


def slice_field(obj, key):
    if key == "metadata.name":
        return obj["metadata"].get("name", "")
    if key == "metadata.namespace":
        return ""
    return str(obj["spec"].get(key.split(".", 1)[1], "") or "")


def matches(obj, fsel, lsel):
    for k, op, v in fsel:
        if (slice_field(obj, k) == v) != (op == "="):
            return False
    labels = obj["metadata"].get("labels") or {}
    for k, op, v in lsel:
        if (labels.get(k) == v) != (op == "="):
            return False
    return True


# ---------------------------------------------------------------------------------------

class Rule:
    def __init__(self, n, method, path_prefix, **kw):
        self.n = n
        self.method = method
        self.path_prefix = path_prefix
        self.__dict__.update(kw)

    def match(self, method, path):
        return self.n != 0 and (self.method is None or self.method == method) and \
            (self.path_prefix is None or path.startswith(self.path_prefix))


class ApiServer:
    """The double. All state behind one lock; watchers wait on a condition."""

    def __init__(self, workdir=None, token="test-token", host="127.0.0.1", port=0):
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="apiserver-double-")
        os.makedirs(self.dir, exist_ok=True)
        self.host = host
        self.want_port = port
        self.tokens = {token}
        self.token = token
        self.admin_token = uuid.uuid4().hex
        self.cond = threading.Condition()
        self.rv = 1000
        self.slices_by_name = {}
        self.claims = {}
        self.events = []  # (rv, type, object) of slices, in order
        self.k8s_events = {}  # (namespace, name): a created core v1 Event
        self.requests = []
        self.warnings = []
        self.rules = []
        self.stalls = []
        self.tls_failures = 0
        # The DRAConsumableCapacity feature gate (beta, on, from 1.36): off, a written
        # slice loses its devices' allowMultipleAllocations, as the real server drops a
        # field of a disabled feature.
        self.consumable_capacity = True
        self.stopping = threading.Event()
        self.watch_epoch = 0  # bumped by close_watches(): every open watch ends
        self.httpd = None
        self.thread = None
        self._other_ca = None

        tls = os.path.join(self.dir, "tls")
        self.ca_path, ca_key = make_ca(os.path.join(tls, "ca"))
        self.cert_path, self.key_path = make_server_cert(os.path.join(tls, "ca"), self.ca_path,
                                                         ca_key)
        self.token_file = os.path.join(self.dir, "token")
        self.write_token_file(token)

    # -- lifecycle
    def start(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert_path, self.key_path)
        server = self

        class Httpd(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            address_family = socket.AF_INET6 if ":" in server.host else socket.AF_INET

            def finish_request(self, request, client_address):
                # TLS handshake on the connection's thread (a stuck client never blocks
                # accept); a failed handshake is counted, and never reaches a handler.
                request.settimeout(10)
                request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                try:
                    conn = ctx.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    with server.cond:
                        server.tls_failures += 1
                    return
                conn.settimeout(None)
                try:
                    Handler(conn, client_address, self, server)
                except OSError:
                    pass  # the client went away (a timeout test, a cancelled call)
                finally:
                    try:
                        conn.close()
                    except OSError:
                        pass

        self.httpd = Httpd((self.host, self.want_port), BaseHTTPRequestHandler)
        self.port = self.httpd.server_address[1]
        h = "[%s]" % self.host if ":" in self.host else self.host
        self.url = "https://%s:%d" % (h, self.port)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        with self.cond:
            self.cond.notify_all()
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()

    # -- credentials
    def write_token_file(self, token, path=None):
        """Writes the token file atomically (a new inode, as a projected token rotates)."""
        path = path or self.token_file
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(token + "\n")
        os.replace(tmp, path)

    def set_token(self, token, also=()):
        """Accepts token (and also) from now on; other tokens get 401."""
        with self.cond:
            self.token = token
            self.tokens = {token, *also}

    def rotate_token(self, token):
        self.set_token(token)
        self.write_token_file(token)

    def other_ca(self):
        """The path of a second CA that did not sign the server's certificate."""
        if self._other_ca is None:
            self._other_ca, _ = make_ca(os.path.join(self.dir, "tls", "other-ca"),
                                        "unrelated test CA")
        return self._other_ca

    # -- claims
    def add_claim(self, namespace, name, uid=None, results=None, config=None, status=None):
        """A ResourceClaim; results (list of {request, driver, pool, device, ...}) makes it
        allocated, None leaves it unallocated; status overrides the whole status."""
        uid = uid or str(uuid.uuid4())
        with self.cond:
            self.rv += 1
            requests = sorted({r.get("request", "req") for r in (results or [])})
            obj = {"apiVersion": API_VERSION, "kind": "ResourceClaim",
                   "metadata": {"name": name, "namespace": namespace, "uid": uid,
                                "resourceVersion": str(self.rv),
                                "creationTimestamp": now_rfc3339()},
                   "spec": {"devices": {"requests": [
                       {"name": r, "exactly": {"deviceClassName": "rdma"}} for r in requests]}},
                   "status": {}}
            if status is not None:
                obj["status"] = status
            elif results is not None:
                obj["status"] = {"allocation": {"devices": {"results": list(results),
                                                            "config": list(config or [])}}}
            self.claims[(namespace, name)] = obj
            return copy.deepcopy(obj)

    def delete_claim(self, namespace, name):
        with self.cond:
            return self.claims.pop((namespace, name), None) is not None

    # -- slices
    def slices(self, driver=None, node=None):
        """The stored slices (copies), sorted by name, optionally filtered."""
        with self.cond:
            out = [copy.deepcopy(s) for _, s in sorted(self.slices_by_name.items())
                   if (driver is None or s["spec"].get("driver") == driver)
                   and (node is None or s["spec"].get("nodeName") == node)]
        return out

    def devices(self, driver=None, node=None):
        """{device name: device} over the stored slices."""
        out = {}
        for s in self.slices(driver, node):
            for d in s["spec"].get("devices") or []:
                out[d["name"]] = d
        return out

    # -- core v1 Events
    def node_events(self, node=None):
        """The stored Events (copies) in the order created, optionally only those about
        Node node."""
        with self.cond:
            evs = [copy.deepcopy(e) for e in self.k8s_events.values()]
        evs.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        return [e for e in evs if node is None or
                (e.get("involvedObject", {}).get("kind") == "Node" and
                 e["involvedObject"].get("name") == node)]

    def _event(self, typ, obj):
        self.events.append((self.rv, typ, copy.deepcopy(obj)))
        self.cond.notify_all()

    def delete_all_slices(self, node=None, driver=None):
        """As the kubelet does on start: every slice (of node/driver) deleted; returns n."""
        with self.cond:
            names = [n for n, s in self.slices_by_name.items()
                     if (node is None or s["spec"].get("nodeName") == node)
                     and (driver is None or s["spec"].get("driver") == driver)]
            for n in names:
                self._delete_locked(n)
            return len(names)

    def _delete_locked(self, name):
        obj = self.slices_by_name.pop(name)
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self._event("DELETED", obj)
        return obj

    def close_watches(self):
        """Ends every open watch stream now (as a server restart or timeout would)."""
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()

    # -- failure injection
    def fail_next(self, n, code, method=None, path_prefix=None, message=None, retry_after=None,
                  body=None, headers=None, body_size=None, chunked=False):
        """The next n requests matching (method, path prefix) get code with a Status body,
        or the given raw body, or body_size bytes of "x" (answers beyond a client's limit);
        chunked sends it without Content-Length. 429/503 carry Retry-After (default 1)."""
        if retry_after is None and code in (429, 503):
            retry_after = 1
        if body_size is not None:
            body = b"x" * body_size
        with self.cond:
            self.rules.append(Rule(n, method, path_prefix, code=code, message=message,
                                   retry_after=retry_after, body=body, headers=headers or {},
                                   chunked=chunked))

    def stall(self, seconds, n=1, method=None, path_prefix=None):
        """The next n matching requests hang for seconds before being served (or until the
        client gives up); n = -1: every one."""
        with self.cond:
            self.stalls.append(Rule(n, method, path_prefix, seconds=seconds))

    def clear_faults(self):
        with self.cond:
            self.rules.clear()
            self.stalls.clear()

    # -- assertions
    def requests_matching(self, method=None, path_prefix=None):
        with self.cond:
            return [r for r in self.requests
                    if (method is None or r["method"] == method)
                    and (path_prefix is None or r["path"].startswith(path_prefix))]

    def wait_for(self, pred, timeout=5.0):
        """Waits until pred() (called with the lock not held) is true; returns its value."""
        end = time.monotonic() + timeout
        while True:
            v = pred()
            if v or time.monotonic() >= end:
                return v
            time.sleep(0.02)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-double"

    def __init__(self, conn, addr, httpd, api):
        self.api = api
        super().__init__(conn, addr, httpd)

    def log_message(self, fmt, *args):
        pass

    # -- plumbing
    def send_json(self, code, obj, headers=None):
        data = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Audit-Id", str(uuid.uuid4()))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_chunked(self, code, data, headers=None):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        try:
            for i in range(0, len(data), 65536):
                self.write_chunk(data[i:i + 65536])
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass
        self.close_connection = True

    def send_status(self, code, message, reason=None, details=None, headers=None):
        self.send_json(code, status_obj(code, message, reason, details), headers)

    def read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            data = b""
            while True:
                line = self.rfile.readline(100)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline(100)
                    return data
                data += self.rfile.read(size)
                self.rfile.readline(10)
                if len(data) > REQUEST_BODY_MAX:
                    raise OverflowError
        n = int(self.headers.get("Content-Length") or 0)
        if n > REQUEST_BODY_MAX:
            raise OverflowError
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def dispatch(self, method):
        api = self.api
        u = urllib.parse.urlsplit(self.path)
        path = u.path
        query = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        try:
            raw = self.read_body()
        except (OverflowError, ValueError):
            self.close_connection = True
            self.send_status(413, "the request is too large")
            return
        if path.startswith("/_double/"):
            return self._admin(method, path, query, raw)
        auth = self.headers.get("Authorization")
        token = auth[7:] if auth and auth.startswith("Bearer ") else None
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        rec = {"method": method, "path": path, "query": query, "raw_query": u.query,
               "token": token, "authorization": auth, "body": body,
               "content_type": self.headers.get("Content-Type"),
               "accept": self.headers.get("Accept"),
               "user_agent": self.headers.get("User-Agent"), "time": time.time()}
        with api.cond:
            api.requests.append(rec)
            tokens = set(api.tokens)
        if token is None or token not in tokens:
            self.send_status(401, "Unauthorized")
            return
        stall = None
        with api.cond:
            for r in api.rules:
                if r.match(method, path):
                    r.n -= 1
                    rule = r
                    break
            else:
                rule = None
            for s in api.stalls:
                if s.match(method, path):
                    s.n -= 1
                    stall = s.seconds
                    break
        if stall:
            api.stopping.wait(stall)
        if rule is not None:
            hdrs = dict(rule.headers)
            if rule.retry_after is not None:
                hdrs["Retry-After"] = rule.retry_after
            if rule.body is not None:
                b = rule.body if isinstance(rule.body, bytes) else rule.body.encode()
                if rule.chunked:
                    self.send_chunked(rule.code, b, hdrs)
                else:
                    self.send_json(rule.code, b, hdrs)
            else:
                self.send_status(rule.code, rule.message or "injected failure (%d)" % rule.code,
                                 headers=hdrs)
            return
        if isinstance(body, str):
            self.send_status(400, "the body of the request was in an unknown format - "
                             "accepted media types include: application/json")
            return
        try:
            self.route(method, path, query, body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self, method, path, query, body):
        m = EVENTS_RE.match(path)
        if m:
            ns = urllib.parse.unquote(m.group(1))
            if method == "POST":
                return self.create_event(ns, body)
            if method == "GET":
                with self.api.cond:
                    items = [copy.deepcopy(e) for (n, _), e in self.api.k8s_events.items()
                             if n == ns]
                return self.send_json(200, {"kind": "EventList", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": str(self.api.rv)},
                                            "items": items})
            return self.send_status(405, "the server does not allow this method on the "
                                    "requested resource")
        m = CLAIMS_RE.match(path)
        if m:
            if method != "GET":
                return self.send_status(405, "the server does not allow this method on the "
                                        "requested resource")
            return self.get_claim(urllib.parse.unquote(m.group(1)),
                                  urllib.parse.unquote(m.group(2)))
        if path == SLICES_PATH:
            if method == "GET":
                if query.get("watch") in ("true", "1"):
                    return self.watch_slices(query)
                return self.list_slices(query)
            if method == "POST":
                return self.create_slice(body)
            if method == "DELETE":
                return self.delete_collection(query)
            return self.send_status(405, "the server does not allow this method on the "
                                    "requested resource")
        if path.startswith(SLICES_PATH + "/"):
            name = urllib.parse.unquote(path[len(SLICES_PATH) + 1:])
            if "/" in name:
                return self.send_status(404, "the server could not find the requested resource")
            if method == "GET":
                return self.get_slice(name)
            if method == "PUT":
                return self.update_slice(name, body)
            if method == "DELETE":
                return self.delete_slice(name, body)
            return self.send_status(405, "the server does not allow this method on the "
                                    "requested resource")
        self.send_status(404, "the server could not find the requested resource", details={})

    # -- core v1 Events
    def create_event(self, ns, body):
        """As the real server creates a v1 Event (legacy validation): the namespaces must
        agree, an object without namespace (a Node) has its Events in "default"."""
        if not isinstance(body, dict) or body.get("apiVersion") != "v1" or \
                body.get("kind") != "Event":
            return self.send_status(400, "the body is not a v1 Event")
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        name = meta.get("name")
        if meta.get("namespace", ns) != ns:
            return self.send_status(400, "the namespace of the provided object does not match "
                                    "the namespace sent on the request")
        e = Errs()
        if not is_dns_subdomain(name):
            e.invalid("metadata.name", name, "a lowercase RFC 1123 subdomain")
        inv = body.get("involvedObject") if isinstance(body.get("involvedObject"), dict) else {}
        if inv.get("namespace") and inv.get("kind") == "Node":
            e.invalid("involvedObject.namespace", inv["namespace"], "not allowed for this "
                      "object")
        if not inv.get("namespace") and ns != "default":
            e.invalid("involvedObject.namespace", inv.get("namespace", ""),
                      "does not match event.namespace")
        if body.get("type") not in EVENT_TYPES:
            e.unsupported("type", body.get("type"), EVENT_TYPES)
        rc = body.get("reportingComponent")
        if rc is not None and not (isinstance(rc, str) and LABEL_NAME_RE.match(rc) and
                                   len(rc) <= 63):
            e.invalid("reportingComponent", rc, "a qualified name")
        ri = body.get("reportingInstance")
        if ri is not None and (not isinstance(ri, str) or len(ri) > 128):
            e.invalid("reportingInstance", ri, "must have at most 128 characters")
        if e.items:
            return self.send_status(422, 'Event "%s" is invalid: %s' % (
                name, "; ".join(m for _, m, _ in e.items)), reason="Invalid")
        api = self.api
        with api.cond:
            if (ns, name) in api.k8s_events:
                return self.send_status(409, 'events "%s" already exists' % name,
                                        reason="AlreadyExists")
            api.rv += 1
            obj = copy.deepcopy(body)
            obj["metadata"] = dict(meta, namespace=ns, uid=str(uuid.uuid4()),
                                   resourceVersion=str(api.rv),
                                   creationTimestamp=now_rfc3339())
            api.k8s_events[(ns, name)] = obj
        self.send_json(201, obj)

    # -- claims
    def get_claim(self, ns, name):
        with self.api.cond:
            obj = copy.deepcopy(self.api.claims.get((ns, name)))
        if obj is None:
            return self.send_status(404, 'resourceclaims.%s "%s" not found' % (GROUP, name),
                                    details={"name": name, "group": GROUP,
                                             "kind": "resourceclaims"})
        self.send_json(200, obj)

    # -- slices
    def not_found(self, name):
        self.send_status(404, 'resourceslices.%s "%s" not found' % (GROUP, name),
                         details={"name": name, "group": GROUP, "kind": "resourceslices"})

    def selectors(self, query):
        fsel = parse_selector(query.get("fieldSelector"),
                              {"metadata.name", "metadata.namespace", "spec.nodeName",
                               "spec.driver"})
        lsel = parse_selector(query.get("labelSelector"), None)
        return fsel, lsel

    def list_slices(self, query):
        try:
            fsel, lsel = self.selectors(query)
        except ValueError as ex:
            return self.send_status(400, str(ex))
        api = self.api
        with api.cond:
            items = [copy.deepcopy(s) for _, s in sorted(api.slices_by_name.items())
                     if matches(s, fsel, lsel)]
            rv = api.rv
        self.send_json(200, {"kind": "ResourceSliceList", "apiVersion": API_VERSION,
                             "metadata": {"resourceVersion": str(rv)}, "items": items})

    def get_slice(self, name):
        with self.api.cond:
            obj = copy.deepcopy(self.api.slices_by_name.get(name))
        if obj is None:
            return self.not_found(name)
        self.send_json(200, obj)

    def check_type(self, body):
        if not isinstance(body, dict):
            self.send_status(400, "the body of the request is not a JSON object")
            return False
        if body.get("apiVersion", API_VERSION) != API_VERSION or \
                body.get("kind", "ResourceSlice") != "ResourceSlice":
            self.send_status(400, "the API version in the data (%s) does not match the "
                             "expected API version (%s)" % (body.get("apiVersion"), API_VERSION))
            return False
        if not isinstance(body.get("metadata", {}), dict):
            self.send_status(400, "metadata must be an object")
            return False
        return True

    def invalid(self, errs, name):
        self.send_status(422, errs.message("ResourceSlice", name),
                         details={"name": name, "group": GROUP, "kind": "ResourceSlice",
                                  "causes": errs.causes()})

    def create_slice(self, body):
        if not self.check_type(body):
            return
        api = self.api
        meta = body.get("metadata") or {}
        name = meta.get("name")
        gen = meta.get("generateName")
        if not name and not gen:
            e = Errs()
            e.required("metadata.name")
            return self.invalid(e, "")
        with api.cond:
            if not name:
                for _ in range(100):
                    name = gen + "".join(random.choice(NAME_CHARS) for _ in range(5))
                    if name not in api.slices_by_name:
                        break
        e, warnings = validate_slice(body)
        if not is_dns_subdomain(name):
            e.invalid("metadata.generateName" if gen and not meta.get("name") else
                      "metadata.name", name, "a lowercase RFC 1123 subdomain must consist of "
                      "lower case alphanumeric characters, '-' or '.', and must start and end "
                      "with an alphanumeric character")
        if e.items:
            return self.invalid(e, name)
        body = drop_disabled_fields(api, body)
        with api.cond:
            if name in api.slices_by_name:
                return self.send_status(409, 'resourceslices.%s "%s" already exists'
                                        % (GROUP, name), reason="AlreadyExists",
                                        details={"name": name, "group": GROUP,
                                                 "kind": "resourceslices"})
            api.rv += 1
            obj = copy.deepcopy(body)
            obj["apiVersion"] = API_VERSION
            obj["kind"] = "ResourceSlice"
            md = obj.setdefault("metadata", {})
            md["name"] = name
            md["uid"] = str(uuid.uuid4())
            md["resourceVersion"] = str(api.rv)
            md["generation"] = 1
            md["creationTimestamp"] = now_rfc3339()
            api.slices_by_name[name] = obj
            api._event("ADDED", obj)
            api.warnings.extend(warnings)
            out = copy.deepcopy(obj)
        self.send_json(201, out, self.warning_header(warnings))

    def warning_header(self, warnings):
        if not warnings:
            return {}
        return {"Warning": ", ".join('299 - "%s"' % w.replace('"', "'") for w in warnings)}

    def update_slice(self, name, body):
        if not self.check_type(body):
            return
        api = self.api
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            return self.send_status(400, "the name of the object (%s) does not match the name "
                                    "on the URL (%s)" % (meta.get("name"), name))
        with api.cond:
            old = copy.deepcopy(api.slices_by_name.get(name))
        if old is None:
            return self.not_found(name)
        rv = meta.get("resourceVersion")
        conflict = ('Operation cannot be fulfilled on resourceslices.%s "%s": the object has '
                    'been modified; please apply your changes to the latest version and try '
                    'again' % (GROUP, name))
        if rv and rv != old["metadata"]["resourceVersion"]:
            return self.send_status(409, conflict, details={"name": name, "group": GROUP,
                                                            "kind": "resourceslices"})
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            return self.send_status(409, 'Precondition failed: UID in precondition: %s, UID in '
                                    'object meta: %s' % (meta["uid"], old["metadata"]["uid"]))
        e, warnings = validate_slice(body, old)
        if e.items:
            return self.invalid(e, name)
        body = drop_disabled_fields(api, body)
        with api.cond:
            cur = api.slices_by_name.get(name)
            if cur is None:
                return self.not_found(name)
            if rv and rv != cur["metadata"]["resourceVersion"]:
                return self.send_status(409, conflict)
            api.warnings.extend(warnings)
            same = cur["spec"] == body["spec"] and \
                (cur["metadata"].get("labels") or {}) == (meta.get("labels") or {})
            if same:  # a no-op update: no new resourceVersion, no event
                out = copy.deepcopy(cur)
            else:
                api.rv += 1
                obj = copy.deepcopy(body)
                obj["apiVersion"] = API_VERSION
                obj["kind"] = "ResourceSlice"
                md = obj["metadata"]
                for k in ("uid", "creationTimestamp", "generateName"):
                    if k in cur["metadata"]:
                        md[k] = cur["metadata"][k]
                md["resourceVersion"] = str(api.rv)
                md["generation"] = cur["metadata"].get("generation", 1) + \
                    (1 if cur["spec"] != body["spec"] else 0)
                api.slices_by_name[name] = obj
                api._event("MODIFIED", obj)
                out = copy.deepcopy(obj)
        self.send_json(200, out, self.warning_header(warnings))

    def delete_slice(self, name, body):
        api = self.api
        with api.cond:
            cur = api.slices_by_name.get(name)
            if cur is None:
                return self.not_found(name)
            pre = (body or {}).get("preconditions") or {} if isinstance(body, dict) else {}
            if pre.get("resourceVersion") and \
                    pre["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                return self.send_status(409, 'Operation cannot be fulfilled on resourceslices.'
                                        '%s "%s": the object has been modified; please apply '
                                        'your changes to the latest version and try again'
                                        % (GROUP, name))
            obj = api._delete_locked(name)
            out = copy.deepcopy(obj)
        self.send_json(200, out)

    def delete_collection(self, query):
        try:
            fsel, lsel = self.selectors(query)
        except ValueError as ex:
            return self.send_status(400, str(ex))
        api = self.api
        with api.cond:
            gone = [api._delete_locked(n) for n, s in sorted(api.slices_by_name.items())
                    if matches(s, fsel, lsel)]
            rv = api.rv
        self.send_json(200, {"kind": "ResourceSliceList", "apiVersion": API_VERSION,
                             "metadata": {"resourceVersion": str(rv)}, "items": gone})

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch_slices(self, query):
        try:
            fsel, lsel = self.selectors(query)
        except ValueError as ex:
            return self.send_status(400, str(ex))
        api = self.api
        rvs = query.get("resourceVersion", "")
        try:
            start = int(rvs) if rvs not in ("", "0") else None
        except ValueError:
            return self.send_status(400, "invalid resourceVersion %s" % json.dumps(rvs))
        timeout = query.get("timeoutSeconds")
        deadline = time.monotonic() + float(timeout) if timeout else None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with api.cond:
            epoch = api.watch_epoch
            pending = []
            if start is None:
                # No resourceVersion: the current state as ADDED events, then changes.
                pending = [("ADDED", copy.deepcopy(s)) for _, s in
                           sorted(api.slices_by_name.items()) if matches(s, fsel, lsel)]
                start = api.rv
            pos = len(api.events)
            while pos > 0 and api.events[pos - 1][0] > start:
                pos -= 1
        try:
            while True:
                for typ, obj in pending:
                    if matches(obj, fsel, lsel):
                        self.write_chunk(json.dumps({"type": typ, "object": obj}).encode()
                                         + b"\n")
                with api.cond:
                    while pos >= len(api.events) and not api.stopping.is_set() and \
                            api.watch_epoch == epoch:
                        left = None if deadline is None else deadline - time.monotonic()
                        if left is not None and left <= 0:
                            break
                        api.cond.wait(left if left is not None else 1.0)
                    pending = [(t, o) for _, t, o in api.events[pos:]]
                    pos = len(api.events)
                    ended = api.stopping.is_set() or api.watch_epoch != epoch or \
                        (deadline is not None and time.monotonic() >= deadline)
                if ended and not pending:
                    break
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        self.close_connection = True

    # -- the control endpoints of the standalone mode
    def _admin(self, method, path, query, raw):
        api = self.api
        if self.headers.get("Authorization") != "Bearer " + api.admin_token:
            return self.send_status(401, "Unauthorized")
        try:
            arg = json.loads(raw) if raw else {}
        except ValueError:
            return self.send_status(400, "not JSON")
        what = path[len("/_double/"):]
        try:
            if what == "claims" and method == "POST":
                return self.send_json(200, api.add_claim(**arg))
            if what == "claims" and method == "DELETE":
                return self.send_json(200, {"deleted": api.delete_claim(**arg)})
            if what == "slices" and method == "GET":
                return self.send_json(200, api.slices(query.get("driver"), query.get("node")))
            if what == "slices" and method == "DELETE":
                return self.send_json(200, {"deleted": api.delete_all_slices(
                    query.get("node"), query.get("driver"))})
            if what == "requests" and method == "GET":
                with api.cond:
                    return self.send_json(200, {"requests": api.requests,
                                                "tls_failures": api.tls_failures,
                                                "warnings": api.warnings})
            if what == "token" and method == "POST":
                if arg.get("write_file", True):
                    api.rotate_token(arg["token"])
                else:
                    api.set_token(arg["token"], arg.get("also", ()))
                return self.send_json(200, {})
            if what == "fail" and method == "POST":
                api.fail_next(**arg)
                return self.send_json(200, {})
            if what == "stall" and method == "POST":
                api.stall(**arg)
                return self.send_json(200, {})
            if what == "clear" and method == "POST":
                api.clear_faults()
                return self.send_json(200, {})
            if what == "close-watches" and method == "POST":
                api.close_watches()
                return self.send_json(200, {})
        except (TypeError, KeyError) as ex:
            return self.send_status(400, "bad arguments: %s" % ex)
        self.send_status(404, "no such control endpoint")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="test-token")
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args()
    srv = ApiServer(a.dir, token=a.token, host=a.host, port=a.port).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(json.dumps({"port": srv.port, "url": srv.url, "ca": srv.ca_path,
                      "token_file": srv.token_file, "token": srv.token,
                      "admin_token": srv.admin_token, "other_ca": srv.other_ca()}), flush=True)
    while not done.wait(3600):
        pass
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
