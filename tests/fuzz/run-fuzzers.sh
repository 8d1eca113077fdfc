#!/usr/bin/env bash
# Runs every libFuzzer binary of BUILD_DIR for SECONDS (default 60) each, starting from the
# checked-in corpus (new inputs go to BUILD_DIR, never into the source tree). Sets
# BUILD_DIR up first when it does not exist (clang, ASan+UBSan, -Dfuzzing=true) and builds
# only the fuzzers. A crash, a sanitizer report or a failed invariant stops with the
# reproducer's path; add it to corpus/NAME/ with the fix. Usage:
#   tests/fuzz/run-fuzzers.sh BUILD_DIR [SECONDS] [NAME...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${1:?usage: run-fuzzers.sh BUILD_DIR [SECONDS] [NAME...]}
secs=${2:-60}
shift $(($# < 2 ? $# : 2))
names=("$@")
if [ "${#names[@]}" -eq 0 ]; then
	names=(attr sysfs config hook cdi bridge claim dra kubeconfig kube-watch slices netlink)
fi

if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$top" -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dc_args=-fsanitize=fuzzer-no-link >/dev/null
fi
targets=()
for n in "${names[@]}"; do
	targets+=("fuzz-$n")
done
meson compile -C "$build" "${targets[@]}" >/dev/null

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# What the fuzzers find is kept in BUILD_DIR/fuzz-corpus/NAME (seeded from the checked-in
# corpus), so that a later run goes on from there.
# fuzz-sysfs builds its trees under TMPDIR: on tmpfs when there is one, and removed with
# the rest even when a fuzzer dies.
if [ -w /dev/shm ]; then
	work=$(mktemp -d -p /dev/shm)
else
	work=$(mktemp -d)
fi
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
status=0
for n in "${names[@]}"; do
	corpus="$build/fuzz-corpus/$n"
	mkdir -p "$corpus" "$work/artifacts-$n"
	cp -n "$here/corpus/$n/"* "$corpus/"
	dict=()
	if [ -f "$here/$n.dict" ]; then
		dict=(-dict="$here/$n.dict")
	fi
	echo "fuzz-$n: ${secs}s"
	if ! "$build/tests/fuzz/fuzz-$n" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts-$n/" \
		"${dict[@]}" "$corpus" >"$work/$n.log" 2>&1; then
		tail -n 60 "$work/$n.log"
		mkdir -p "$build/fuzz-artifacts"
		cp "$work/artifacts-$n/"* "$build/fuzz-artifacts/" 2>/dev/null || true
		echo "fuzz-$n: FAILED, reproducer(s) in $build/fuzz-artifacts/"
		status=1
	else
		grep -E "^stat::(number_of_executed_units|new_units_added)" "$work/$n.log" |
			tr '\n' ' '
		echo
	fi
done
exit $status
