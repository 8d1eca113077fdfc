#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the rdma-cdi OCI image offline, from scratch, out of a meson build dir:
#
#   deploy/image/build.sh [-B BUILD_DIR] [-t TAG] [-o DEST]
#
#   -B BUILD_DIR  meson build dir with rdma-cdi, its daemons (rdma-cdi-bridge,
#                 rdma-cdi-dra, rdma-cdi-watch), hooks/rdma-cdi-hook and
#                 deploy/rdma-cdi-node (default: build); a build without sanitizers, with
#                 the bridge and the DRA driver (not -Dbridge=disabled, libcurl found)
#   -t TAG        image name (default localhost/rdma-cdi:VERSION)
#   -o DEST       where buildah commits it, any buildah transport (default: TAG in local
#                 containers-storage; e.g. oci-archive:rdma-cdi.tar for `podman load`,
#                 `ctr images import`, skopeo)
#
# The image holds the binaries and exactly the shared libraries `ldd` names for them and
# for libibverbs and librdmacm (which doctor dlopens; no verbs providers), each under the
# path and symlink names ldd shows, plus the dynamic loader; nothing else (no shell, no
# package manager):
#   /usr/bin/rdma-cdi         the CLI (entrypoint)
#   /usr/libexec/rdma-cdi/rdma-cdi-bridge, rdma-cdi-dra, rdma-cdi-watch
#                             the daemons `rdma-cdi bridge`, `rdma-cdi dra` and
#                             `rdma-cdi generate --watch` exec: where rdma-cdi looks for
#                             them relative to its own directory (../libexec/rdma-cdi).
#                             Every one of them: the DaemonSets run `rdma-cdi bridge`
#                             (deploy/kubernetes/device-plugin) and `rdma-cdi dra`
#                             (deploy/kubernetes/dra) from this one image
#   /usr/bin/rdma-cdi-node    the init container's hook installer and the liveness probe
#   /opt/rdma-cdi/            the memlock hook as a self-contained bundle for the HOST:
#                             bin/rdma-cdi-hook and lib/ with its own loader, libc and
#                             libcjson. The container runtime runs the hook on the host,
#                             whose libraries we know nothing about (libcjson may be missing,
#                             glibc older), so the bundle's ELF interpreter and RPATH point
#                             into /opt/rdma-cdi/lib. The init container copies it to the
#                             host's /opt/rdma-cdi, which is why that path is fixed here.
#
# User: the image runs as root (0:0) by default, because the bridge must connect to the
# kubelet's root-owned kubelet.sock (mode 0600 in a 0700/0750 dir) and write the host's
# root-owned /var/run/cdi; as their owner it needs no capability, so the DaemonSet drops
# all of them. Read-only commands (discover, list, generate --output -) work as any user:
# `podman run --user 65534:65534 IMAGE discover`.
set -euo pipefail

die() {
	echo "build.sh: $*" >&2
	exit 1
}

build_dir=build
tag=
dest=
hook_dir=/opt/rdma-cdi
while getopts "B:t:o:h" opt; do
	case $opt in
	B) build_dir=$OPTARG ;;
	t) tag=$OPTARG ;;
	o) dest=$OPTARG ;;
	h) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
[ "$OPTIND" -gt $# ] || die "unexpected argument '${!OPTIND}' (see -h)"

for tool in buildah ldd patchelf tar; do
	command -v "$tool" >/dev/null || die "$tool not found: run .ci/install-deps (Debian: apt-get install buildah patchelf)"
done
rdma_cdi=$build_dir/rdma-cdi
daemons=("$build_dir/rdma-cdi-bridge" "$build_dir/rdma-cdi-dra" "$build_dir/rdma-cdi-watch")
hook=$build_dir/hooks/rdma-cdi-hook
node=$build_dir/deploy/rdma-cdi-node
for f in "$rdma_cdi" "${daemons[@]}" "$hook" "$node"; do
	[ -x "$f" ] || die "$f not found: run 'meson compile -C $build_dir' first (rdma-cdi-dra needs libcurl, rdma-cdi-bridge gRPC and protobuf-c)"
done
# Sanitizer runtimes would be copied in and refuse to run under a container's rlimits.
# (ldd's output is captured first: with pipefail, grep -q closing the pipe would fail ldd.)
if grep -q 'libasan\|libubsan' <<<"$(ldd "$rdma_cdi")"; then
	die "$build_dir is a sanitizer build: use a build dir without -Db_sanitize"
fi
version=$("$rdma_cdi" --version | awk '{print $2}')
[ -n "$version" ] || die "cannot read the version from $rdma_cdi --version"
tag=${tag:-localhost/rdma-cdi:$version}
dest=${dest:-$tag}

stage=$(mktemp -d "${TMPDIR:-/var/tmp}/rdma-cdi-image.XXXXXX")
ctr=
cleanup() {
	[ -z "$ctr" ] || buildah rm "$ctr" >/dev/null 2>&1 || true
	rm -rf "$stage"
}
trap cleanup EXIT
root=$stage/root

# The libraries ldd resolves for $1, one path a line (the loader included, vdso excluded).
needed_libs() {
	local out
	out=$(ldd "$1") || die "ldd $1 failed"
	if grep -q 'not found' <<<"$out"; then
		die "$1: $(grep 'not found' <<<"$out" | head -1 | xargs)"
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' <<<"$out"
}

# The libraries `rdma-cdi doctor` dlopens for its verbs probe (discovery/verbs.c), which
# ldd of the binary cannot show: their paths as the loader finds them, one a line.
dlopened_libs() {
	local soname path
	for soname in libibverbs.so.1 librdmacm.so.1; do
		path=$(ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64|aarch64|64bit/ { print $NF; exit }')
		[ -n "$path" ] || die "$soname not found (ldconfig -p): apt-get install libibverbs1 librdmacm1"
		echo "$path"
	done
}

# Mirrors $1 into the rootfs at the same path; a symlink is recreated as it is and its
# target followed, so every name the loader may look a library up by exists.
mirror() {
	local p=$1 hops=0 t
	while :; do
		mkdir -p "$root$(dirname "$p")"
		if [ -L "$p" ]; then
			t=$(readlink "$p")
			ln -sfn "$t" "$root$p"
			case $t in
			/*) p=$t ;;
			*) p=$(dirname "$p")/$t ;;
			esac
			hops=$((hops + 1))
			[ "$hops" -lt 16 ] || die "symlink loop at $p"
		else
			cp -p "$p" "$root$p"
			return
		fi
	done
}

mkdir -p "$root/usr/bin" "$root/usr/libexec/rdma-cdi" "$root$hook_dir/bin" "$root$hook_dir/lib"
install -m 0755 "$rdma_cdi" "$root/usr/bin/rdma-cdi"
for d in "${daemons[@]}"; do
	install -m 0755 "$d" "$root/usr/libexec/rdma-cdi/$(basename "$d")"
done
install -m 0755 "$node" "$root/usr/bin/rdma-cdi-node"
verbs_libs=$(dlopened_libs)
for lib in $( (for b in "$rdma_cdi" "${daemons[@]}" "$node"; do needed_libs "$b"; done
	for l in $verbs_libs; do echo "$l"; needed_libs "$l"; done) | sort -u); do
	mirror "$lib"
done

# The host bundle: each library under the name ldd shows (its soname), dereferenced.
install -m 0755 "$hook" "$root$hook_dir/bin/rdma-cdi-hook"
interp=
for lib in $(needed_libs "$hook"); do
	install -m 0755 "$(readlink -f "$lib")" "$root$hook_dir/lib/$(basename "$lib")"
	case $(basename "$lib") in ld-linux*) interp=$hook_dir/lib/$(basename "$lib") ;; esac
done
[ -n "$interp" ] || die "$hook: ldd shows no dynamic loader"
# RPATH, not RUNPATH: it also applies to libcjson's own libc dependency.
patchelf --set-interpreter "$interp" --force-rpath --set-rpath "$hook_dir/lib" \
	"$root$hook_dir/bin/rdma-cdi-hook"

# Mount points the DaemonSet uses, so a read-only rootfs needs nothing created.
mkdir -p "$root/host" "$root/etc/rdma-cdi" "$root/var/run/cdi" \
	"$root/var/lib/kubelet/device-plugins" "$root/var/lib/kubelet/plugins_registry" \
	"$root/var/lib/kubelet/plugins" "$root/tmp"
chmod 1777 "$root/tmp"

# A tarball with fixed owners, order and times: the same build dir gives the same layer.
tar --create --file "$stage/root.tar" --directory "$root" --sort=name --owner=0 \
	--group=0 --numeric-owner --mtime=@0 .

revision=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null || echo unknown)
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$stage/root.tar" / >/dev/null
buildah config \
	--entrypoint '["/usr/bin/rdma-cdi"]' --cmd '["--help"]' \
	--user 0:0 --workingdir / \
	--label org.opencontainers.image.title=rdma-cdi \
	--label "org.opencontainers.image.description=RDMA NICs for containers through CDI: kubelet device plugin, DRA driver and spec generator" \
	--label "org.opencontainers.image.version=$version" \
	--label "org.opencontainers.image.revision=$revision" \
	--label org.opencontainers.image.licenses=Apache-2.0 \
	--label "io.rdma-cdi.hook-dir=$hook_dir" \
	"$ctr"
buildah commit --quiet --format oci --timestamp 0 --rm "$ctr" "$dest" >/dev/null
ctr=
echo "built $dest ($(du -sh "$stage/root.tar" | cut -f1) uncompressed)"
