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
meson test -C "$build" --print-errorlogs --num-processes "${TEST_JOBS:-2}"
