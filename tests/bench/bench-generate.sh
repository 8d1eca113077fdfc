#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Benchmark of `rdma-cdi generate` on synthetic nodes of 10, 100, 1000 and 2000 RDMA
# devices (mksysfs.py scale: 16 PFs with VFs spread over them), next to the floor
# measured in the same run (sysfs-floor: only the opens and reads any discovery needs).
# Prints the median wall time of REPS runs of each and the ratio generate/floor.
#
# Usage: bench-generate.sh [--markdown] BUILD_DIR   (--markdown: the section of
# docs/benchmarks.md instead of the plain table)
# Environment: REPS (default 11), SIZES (default "10 100 1000 2000"), BENCH_TMPDIR (where
# the trees go; default /dev/shm, which is tmpfs, else $TMPDIR or /tmp).
set -euo pipefail

markdown=0
if [ "${1:-}" = --markdown ]; then
	markdown=1
	shift
fi
build=${1:?usage: bench-generate.sh [--markdown] BUILD_DIR}
reps=${REPS:-11}
sizes=${SIZES:-"10 100 1000 2000"}
here=$(cd "$(dirname "$0")" && pwd)
mksysfs=$here/../fixtures/mksysfs.py
floor=$build/tests/bench/sysfs-floor
timeit=$build/tests/bench/timeit
rdma=$build/rdma-cdi
python=/usr/bin/python3

for f in "$floor" "$timeit" "$rdma"; do
	[ -x "$f" ] || { echo "bench-generate: $f not built" >&2; exit 1; }
done
base=${BENCH_TMPDIR:-/dev/shm}
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
work=$(mktemp -d "$base/rdma-cdi-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Wall time of one run of "$@" in microseconds into $us; the command must succeed.
time_us() {
	local t0 t1 rc=0
	t0=$EPOCHREALTIME
	"$@" >/dev/null 2>"$work/stderr" || rc=$?
	t1=$EPOCHREALTIME
	if [ "$rc" != 0 ]; then
		echo "bench-generate: $* failed ($rc):" >&2
		cat "$work/stderr" >&2
		exit 1
	fi
	us=$(( (10#${t1/./} - 10#${t0/./}) ))
}

fs=$(stat -f -c %T "$work")
if [ "$markdown" = 0 ]; then
	echo "# rdma-cdi generate vs sysfs floor; $reps runs each, median; trees on $fs ($base)"
	echo "# $(uname -srm); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	printf '%-6s %10s %12s %7s\n' N floor_ms generate_ms ratio
fi
rows=()
for n in $sizes; do
	sys=$work/sys-$n dev=$work/dev-$n spec=$work/spec-$n.json
	"$python" "$mksysfs" build scale "$sys" --devices "$n"
	"$python" "$mksysfs" mkdev "$sys" "$dev"
	found=$("$floor" "$sys" | cut -d' ' -f1)
	if [ "$found" != "$n" ]; then
		echo "bench-generate: floor saw $found devices, expected $n" >&2
		exit 1
	fi
	gen=("$rdma" generate --sysfs-root "$sys" --dev-root "$dev" --output "$spec")
	# Warm the dentry cache and check that generate works before timing it.
	"$floor" "$sys" >/dev/null
	rm -f "$spec"
	time_us "${gen[@]}"
	[ -s "$spec" ] || { echo "bench-generate: generate wrote no spec" >&2; exit 1; }
	# A and B in turn, spawned without a shell; generate's output removed before each run.
	read -r fm gm < <("$timeit" "$reps" --unlink "$spec" -- "$floor" "$sys" -- "${gen[@]}") ||
		{ echo "bench-generate: timing failed" >&2; exit 1; }
	if [ "$markdown" = 0 ]; then
		awk -v n="$n" -v f="$fm" -v g="$gm" \
			'BEGIN { printf "%-6s %10.1f %12.1f %7.2f\n", n, f / 1000, g / 1000, g / f }'
	fi
	rows+=("$n $fm $gm")
	rm -rf "$sys" "$dev" "$spec"
done
[ "$markdown" = 1 ] || exit 0

cat <<EOF
## \`rdma-cdi generate\` against the sysfs floor

\`tests/bench/bench-generate.sh\` on \`mksysfs.py build scale DIR --devices N\` (16 PFs,
ConnectX-6 Dx, RoCE, alternating NUMA nodes, the other N-16 devices VFs spread over them;
one port each, with uverbs, umad, netdev and GID entries, device nodes from
\`mksysfs.py mkdev\`), trees on $fs. **Floor**, measured in the same run, alternating
with generate: \`sysfs-floor\` (tests/bench/floor.c), the least any sysfs discovery must
do: list \`class/infiniband\`, read each entry's links and the attributes a device model
needs (vendor, device, NUMA node, driver, physfn, GUID, firmware, each port's state,
physical state, link layer, rate, GID netdev, every uverbs and umad), no checks, no
parsing, no output. **generate**: \`rdma-cdi generate --sysfs-root T --dev-root D --output
T/spec.json\`, the output removed before each run, so every run writes a whole spec
(validated, formatted, fsync'd, renamed). Wall time of the whole process (start-up
included), each started with posix_spawn by \`tests/bench/timeit.c\` in turn with the floor,
median of $reps runs after one warm-up.

| N devices | **ratio generate / floor** | generate ms | floor ms | target |
|---:|---:|---:|---:|---|
EOF
for row in "${rows[@]}"; do
	read -r n fm gm <<<"$row"
	awk -v n="$n" -v f="$fm" -v g="$gm" 'BEGIN {
		target = ""
		if (n == 10 || n == 2000)
			target = sprintf("< 2x: %s", g / f < 2 ? "met" : "**MISSED**")
		printf "| %d | **%.2fx** | %.1f | %.1f | %s |\n", n, g / f, g / 1000, f / 1000, target
	}'
done
echo
# Linear growth: the last size over the one before it, for both columns.
if [ "${#rows[@]}" -ge 2 ]; then
	read -r n1 f1 g1 <<<"${rows[-2]}"
	read -r n2 f2 g2 <<<"${rows[-1]}"
	awk -v n1="$n1" -v n2="$n2" -v f1="$f1" -v f2="$f2" -v g1="$g1" -v g2="$g2" 'BEGIN {
		printf "- Growth from %d to %d devices (x%.1f): generate x%.2f, floor x%.2f", n1, n2,
			n2 / n1, g2 / g1, f2 / f1
		printf " (target: linear).\n"
	}'
fi
echo "- At 10 devices most of it is process start-up (the dynamic loader): \`rdma-cdi\`"
echo "  loads libcjson, libyaml and libc only; the bridge's gRPC is in its own executable."
echo
