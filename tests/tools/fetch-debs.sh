#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch-debs.sh DIR SUITE PACKAGE... -- FILE...: puts Debian SUITE's PACKAGEs, unpacked,
# under DIR/root (with DIR/root/VERSIONS), for tests that need a newer tool than the
# system's: tests/e2e/fetch-containerd.sh (containerd), tests/deploy (kubectl). Each FILE
# (relative to DIR/root) must be there afterwards.
#
# The packages are only downloaded and unpacked (dpkg -x), never installed: apt runs with a
# private sources file, lists and cache under DIR, so the system's apt sources, package lists
# and installed packages stay exactly as they are. Idempotent: a complete DIR/root is kept and
# nothing is fetched again. Needs root only to write DIR (apt's download sandbox is off
# because DIR belongs to root).
set -euo pipefail

if [ $# -lt 4 ] || [ -z "$1" ] || ! [[ " ${*:3} " == *" -- "* ]]; then
	echo "usage: $0 DIR SUITE PACKAGE... -- FILE..." >&2
	exit 2
fi
dir=$1
suite=$2
shift 2
packages=()
while [ "$1" != -- ]; do
	packages+=("$1")
	shift
done
shift
wanted=("$@")
name=$(basename "$0" .sh)

complete() {
	local f
	[ -f "$1/VERSIONS" ] || return 1
	for f in "${wanted[@]}"; do
		[ -s "$1/$f" ] || return 1
	done
}

if complete "$dir/root"; then
	exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
# Another run may have finished while this one waited for the lock.
if complete "$dir/root"; then
	exit 0
fi

# The archive URI the system already uses (deb822 or one-line sources), else Debian's.
uri=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*debian\/*\)[[:space:]]*$/\1/p' \
	/etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1 || true)
if [ -z "$uri" ]; then
	uri=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*debian\/*\)[[:space:]].*/\2/p' \
		/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		grep -v security | head -n 1 || true)
fi
uri=${uri:-http://deb.debian.org/debian}

apt_dir=$dir/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" \
	>"$apt_dir/sources.list"
apt_opts=(
	-o "Dir::Etc::sourcelist=$apt_dir/sources.list"
	-o Dir::Etc::sourceparts=/dev/null
	-o Dir::Etc::preferences=/dev/null
	-o Dir::Etc::preferencesparts=/dev/null
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache"
	-o APT::Sandbox::User=root
	-o Acquire::Languages=none
	-qq
)
echo "$name: downloading ${packages[*]} from $uri $suite into $dir" >&2
apt-get "${apt_opts[@]}" update
rm -f "$apt_dir/debs/"*.deb
(cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "${packages[@]/%//$suite}")

# Unpack next to the final place and rename, so that DIR/root is never half there.
rm -rf "$dir/root.new"
mkdir "$dir/root.new"
: >"$dir/root.new/VERSIONS"
for deb in "$apt_dir/debs/"*.deb; do
	dpkg-deb -x "$deb" "$dir/root.new"
	# shellcheck disable=SC2016 # dpkg-deb's own ${field} syntax
	dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb" >>"$dir/root.new/VERSIONS"
done
complete "$dir/root.new" || {
	echo "$name: the packages lack one of: ${wanted[*]}" >&2
	exit 1
}
rm -rf "$dir/root.old"
[ ! -e "$dir/root" ] || mv "$dir/root" "$dir/root.old"
mv "$dir/root.new" "$dir/root"
rm -rf "$dir/root.old" "$apt_dir"
echo "$name: $(paste -sd ',' "$dir/root/VERSIONS" | sed 's/,/, /g')" >&2
