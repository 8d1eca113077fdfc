#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Benchmark of `rdma-cdi generate` on synthetic nodes of 10, 100, 1000 and 2000 RDMA
# devices (mksysfs.py scale: 16 PFs with VFs spread over them), next to the floor
# measured in the same run (sysfs-floor: only the opens and reads any discovery needs).
# Prints the median wall time of REPS runs of each and the ratio generate/floor.
#
# Usage: bench-generate.sh BUILD_DIR
# Environment: REPS (default 11), SIZES (default "10 100 1000 2000"), BENCH_TMPDIR (where
# the trees go; default /dev/shm, which is tmpfs, else $TMPDIR or /tmp).
set -euo pipefail

build=${1:?usage: bench-generate.sh BUILD_DIR}
reps=${REPS:-11}
sizes=${SIZES:-"10 100 1000 2000"}
here=$(cd "$(dirname "$0")" && pwd)
mksysfs=$here/../fixtures/mksysfs.py
floor=$build/tests/bench/sysfs-floor
rdma=$build/rdma-cdi
python=/usr/bin/python3

for f in "$floor" "$rdma"; do
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

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

fs=$(stat -f -c %T "$work")
echo "# rdma-cdi generate vs sysfs floor; $reps runs each, median; trees on $fs ($base)"
echo "# $(uname -srm); $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
printf '%-6s %10s %12s %7s\n' N floor_ms generate_ms ratio
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
	ft=() gt=()
	for ((i = 0; i < reps; i++)); do
		time_us "$floor" "$sys"
		ft+=("$us")
		rm -f "$spec"
		time_us "${gen[@]}"
		gt+=("$us")
	done
	fm=$(printf '%s\n' "${ft[@]}" | median)
	gm=$(printf '%s\n' "${gt[@]}" | median)
	awk -v n="$n" -v f="$fm" -v g="$gm" \
		'BEGIN { printf "%-6s %10.1f %12.1f %7.2f\n", n, f / 1000, g / 1000, g / f }'
	rm -rf "$sys" "$dev" "$spec"
done
