#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# setup.sh [DIR]: everything the kernel suite needs (tests/kernel/README.md).
#  - the Debian 12 packages the VM and the guest's checks use (installed when missing);
#  - Debian's kernel (the package linux-image-amd64 names) unpacked under DIR/VERSION with
#    its modules.dep, never installed: the host keeps its own kernel, /boot and /lib/modules.
# DIR defaults to /var/cache/rdma-cdi-test/kernel; DIR/current names the kernel to boot.
# Idempotent: a complete DIR/VERSION is kept and nothing is fetched again. Needs root.
set -euo pipefail

dir=${1:-/var/cache/rdma-cdi-test/kernel}
packages=(
	# the VM: qemu (TCG), the initramfs, depmod of the unpacked kernel
	qemu-system-x86 cpio kmod busybox-static xz-utils
	# the guest's checks: verbs, perftest, rdma/ip, podman with runc
	perftest ibverbs-utils ibverbs-providers rdma-core iproute2 podman runc
	python3 python3-grpcio python3-grpc-tools python3-jsonschema python3-yaml
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The modules the guest loads: a kernel without them is not a complete one.
wanted=(rdma_rxe ib_uverbs rdma_ucm 9p 9pnet_virtio overlay veth crc32_generic)
complete() {
	local m
	[ -f "$1/vmlinuz" ] && [ -f "$1/lib/modules/$2/modules.dep" ] || return 1
	for m in "${wanted[@]}"; do
		modinfo -b "$1" -k "$2" -n "$m" >/dev/null 2>&1 || return 1
	done
}

# linux-image-amd64 depends on linux-image-6.1.0-NN-amd64: the package to fetch. The
# -cloud-amd64 flavour has no rdma_rxe.
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1)
if [ -z "$pkg" ]; then
	# No package lists (offline): any complete kernel already in the cache will do.
	if [ -L "$dir/current" ] && complete "$dir/current" "$(cat "$dir/current/VERSION")"; then
		exit 0
	fi
	echo "kernel setup: apt-cache names no linux-image-*-amd64 (run apt-get update)" >&2
	exit 1
fi
version=${pkg#linux-image-}
if complete "$dir/$version" "$version"; then
	ln -sfn "$version" "$dir/current"
	exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if complete "$dir/$version" "$version"; then
	ln -sfn "$version" "$dir/current"
	exit 0
fi
fetch() {
	echo "kernel setup: downloading $pkg into $dir" >&2
	rm -rf "$dir/$version.new" "$dir/debs"
	mkdir -p "$dir/$version.new" "$dir/debs"
	(cd "$dir/debs" && apt-get -qq -o APT::Sandbox::User=root download "$pkg") || return 1
	dpkg-deb -x "$dir/debs/"*.deb "$dir/$version.new" || return 1
	new=$dir/$version.new
	mv "$new/boot/vmlinuz-$version" "$new/vmlinuz" || return 1
	# Debian ships the modules under /lib/modules (usrmerge may put them under /usr/lib).
	if [ ! -d "$new/lib/modules/$version" ] && [ -d "$new/usr/lib/modules/$version" ]; then
		mkdir -p "$new/lib/modules"
		mv "$new/usr/lib/modules/$version" "$new/lib/modules/"
	fi
	depmod -b "$new" "$version" || return 1
	echo "$version" >"$new/VERSION"
	complete "$new" "$version" || {
		echo "kernel setup: $pkg lacks one of the modules: ${wanted[*]}" >&2
		return 1
	}
}
if ! fetch; then
	rm -rf "$dir/$version.new" "$dir/debs"
	# A newer kernel that cannot be had now: the one already cached still tests the same.
	if [ -L "$dir/current" ] && complete "$dir/current" "$(cat "$dir/current/VERSION")"; then
		echo "kernel setup: $pkg not fetched, keeping $(cat "$dir/current/VERSION")" >&2
		exit 0
	fi
	exit 1
fi
rm -rf "$dir/$version" "$dir/debs"
mv "$new" "$dir/$version"
ln -sfn "$version" "$dir/current"
# Older kernels fetched before this one are not needed any more.
for old in "$dir"/*/VERSION; do
	[ "$(dirname "$old")" = "$dir/$version" ] || [ -L "$(dirname "$old")" ] ||
		rm -rf "$(dirname "$old")"
done
echo "kernel setup: $version in $dir/$version" >&2
