#!/usr/bin/env bash
# The whole test suite: configure (if needed), build, run every test. Needs root (mknod,
# podman, mount namespaces). Extra arguments go to `meson setup` of a new build dir, e.g.
# BUILD_DIR=build-asan tests/run-all.sh -Db_sanitize=address,undefined -Db_lundef=false
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$@"
fi
meson compile -C "$build"
status=0
meson test -C "$build" --print-errorlogs --num-processes "${TEST_JOBS:-2}" || status=$?
# One closing line any CI reads: tests (not TAP subtests) passed, failed, skipped.
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
results = [json.loads(line)["result"] for line in open(sys.argv[1])]
ok = sum(r in ("OK", "EXPECTEDFAIL") for r in results)
skipped = sum(r == "SKIP" for r in results)
print(f"{ok} passed, {len(results) - ok - skipped} failed, {skipped} skipped")
PY
exit "$status"
