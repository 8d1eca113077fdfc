#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Validate CDI spec files independently of rdma-cdi's C code.

usage: validate-cdi-schema.py [--max-version X.Y.Z] SCHEMA_DIR FILE...

Each FILE (*.json, or *.yaml / *.yml read with PyYAML) is checked against the upstream
CDI JSON schema in SCHEMA_DIR (schema.json, with defs.json resolved as a sibling), its
kind and device names against the CDI name rules (unique names, no one-character vendor
or class), and its cdiVersion against a separate implementation of the minimum-version
rule: the
version must be a known one and not lower than what the fields used need. With
--max-version (Debian 12's podman accepts at most 0.5.0), it must not be higher either.

Prints one line per file ("ok FILE ..." or "FAIL FILE: reason") and exits 1 when any
file fails, 2 on usage errors. Run it with /usr/bin/python3 (needs python3-jsonschema
and python3-yaml).
"""

import argparse
import json
import pathlib
import re
import sys

import jsonschema
import yaml

KNOWN_VERSIONS = ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"]

# CDI name rules; labels of one character crash released CDI libraries, hence {2,}.
LABEL = r"[A-Za-z](?=[A-Za-z0-9_.-]*[A-Za-z0-9]$)[A-Za-z0-9_.-]+"
DEVICE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")


def kind_problem(kind):
    vendor, sep, cls = kind.partition("/")
    if not sep or "/" in cls:
        return "is not vendor/class"
    for what, label in (("vendor", vendor), ("class", cls)):
        if not re.fullmatch(LABEL, label):
            return f"{what} {label!r} breaks the CDI name rule (2+ chars, letter first, " \
                   "alphanumeric last, [A-Za-z0-9_.-])"
    return None


def names_problem(spec):
    problem = kind_problem(spec["kind"])
    if problem:
        return f"kind {spec['kind']!r} {problem}"
    seen = set()
    for i, dev in enumerate(spec["devices"]):
        name = dev["name"]
        if not DEVICE_NAME.fullmatch(name):
            return f"devices[{i}].name {name!r} breaks the CDI device name rule"
        if name in seen:
            return f"devices[{i}].name {name!r} is defined twice"
        seen.add(name)
    return None


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def _edits_needs(edits, where):
    """(version, path) pairs the fields of one containerEdits object need."""
    found = []
    if not isinstance(edits, dict):
        return found
    for i, node in enumerate(edits.get("deviceNodes") or []):
        if isinstance(node, dict) and "hostPath" in node:
            found.append(("0.5.0", f"{where}.deviceNodes[{i}].hostPath"))
    for i, mount in enumerate(edits.get("mounts") or []):
        if isinstance(mount, dict) and "type" in mount:
            found.append(("0.4.0", f"{where}.mounts[{i}].type"))
    if "intelRdt" in edits:
        found.append(("0.7.0", f"{where}.intelRdt"))
        rdt = edits["intelRdt"]
        if isinstance(rdt, dict):
            for key in ("schemata", "enableMonitoring"):
                if key in rdt:
                    found.append(("1.1.0", f"{where}.intelRdt.{key}"))
    if "additionalGids" in edits:
        found.append(("0.7.0", f"{where}.additionalGids"))
    if "netDevices" in edits:
        found.append(("1.1.0", f"{where}.netDevices"))
    return found


def min_version(spec):
    """Lowest cdiVersion whose libraries know every field used, and the field that
    decides it. A key counts when present, even empty: libraries older than the key
    refuse it as unknown whatever its value."""
    needs = []
    kind = spec.get("kind")
    if isinstance(kind, str) and "/" in kind and "." in kind.split("/", 1)[1]:
        needs.append(("0.6.0", "kind"))
    if "annotations" in spec:
        needs.append(("0.6.0", "annotations"))
    devices = spec.get("devices")
    for i, dev in enumerate(devices if isinstance(devices, list) else []):
        if not isinstance(dev, dict):
            continue
        name = dev.get("name")
        # Before 0.5.0 a device name had to start with an ASCII letter.
        if isinstance(name, str) and name and not (name[0].isascii() and name[0].isalpha()):
            needs.append(("0.5.0", f"devices[{i}].name"))
        if "annotations" in dev:
            needs.append(("0.6.0", f"devices[{i}].annotations"))
        needs += _edits_needs(dev.get("containerEdits"), f"devices[{i}].containerEdits")
    needs += _edits_needs(spec.get("containerEdits"), "containerEdits")
    best = ("0.3.0", "")
    for version, where in needs:
        if version_key(version) > version_key(best[0]):
            best = (version, where)
    return best


class _NoDuplicatesLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; the CDI readers refuse the file."""


def _construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_NoDuplicatesLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _json_no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dups = {k for k in keys if keys.count(k) > 1}
    if dups:
        raise ValueError(f"duplicate key {sorted(dups)[0]!r}")
    return dict(pairs)


def load_spec(path):
    text = pathlib.Path(path).read_text(encoding="utf-8")
    if path.endswith((".yaml", ".yml")):
        return yaml.load(text, Loader=_NoDuplicatesLoader)
    return json.loads(text, object_pairs_hook=_json_no_duplicates)


def make_validator(schema_dir):
    schema_dir = pathlib.Path(schema_dir).resolve()
    schema_path = schema_dir / "schema.json"
    defs_path = schema_dir / "defs.json"
    schema = json.loads(schema_path.read_text())
    defs = json.loads(defs_path.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator.check_schema(defs)
    try:
        # jsonschema >= 4.18 resolves through a referencing registry.
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7

        registry = Registry().with_resources([
            (schema_path.as_uri(), Resource.from_contents(schema, default_specification=DRAFT7)),
            (defs_path.as_uri(), Resource.from_contents(defs, default_specification=DRAFT7)),
        ])
        schema = dict(schema, **{"$id": schema_path.as_uri()})
        return jsonschema.Draft7Validator(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver(
            base_uri=schema_path.as_uri(), referrer=schema,
            store={schema_path.as_uri(): schema, defs_path.as_uri(): defs})
        return jsonschema.Draft7Validator(schema, resolver=resolver)


def check_file(validator, path, max_version):
    """Returns (ok, message)."""
    try:
        spec = load_spec(path)
    except (OSError, ValueError, UnicodeDecodeError, yaml.YAMLError) as e:
        return False, f"cannot load: {' '.join(str(e).split())}"
    errors = sorted(validator.iter_errors(spec), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path)
        return False, f"schema: {where.lstrip('.') or 'spec'}: {e.message}"
    problem = names_problem(spec)
    if problem:
        return False, problem
    version = spec["cdiVersion"]
    if version not in KNOWN_VERSIONS:
        return False, f"cdiVersion {version!r} is not a known CDI version"
    need, why = min_version(spec)
    if version_key(version) < version_key(need):
        return False, f"cdiVersion {version} is lower than {need}, which {why} needs"
    if max_version and version_key(version) > version_key(max_version):
        return False, f"cdiVersion {version} is higher than the accepted maximum {max_version}"
    return True, f"cdiVersion {version}, needs {need}"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-version", choices=KNOWN_VERSIONS,
                    help="highest cdiVersion accepted (podman 4.3: 0.5.0)")
    ap.add_argument("schema_dir")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args(argv)
    try:
        validator = make_validator(args.schema_dir)
    except (OSError, ValueError, jsonschema.SchemaError) as e:
        print(f"validate-cdi-schema: cannot load the schema: {e}", file=sys.stderr)
        return 2
    failed = 0
    for path in args.files:
        good, msg = check_file(validator, path, args.max_version)
        print(f"{'ok' if good else 'FAIL'} {path}: {msg}")
        failed += not good
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
