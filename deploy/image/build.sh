#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the rdma-cdi OCI image offline, from scratch, out of a meson build dir:
#
#   deploy/image/build.sh [-B BUILD_DIR] [-t TAG] [-o DEST] [-s SOURCE_URL]
#
#   -B BUILD_DIR  meson build dir with rdma-cdi, its daemons (rdma-cdi-bridge,
#                 rdma-cdi-dra, rdma-cdi-watch), hooks/rdma-cdi-hook and
#                 deploy/rdma-cdi-node (default: build); a build without sanitizers, with
#                 the bridge and the DRA driver (not -Dbridge=disabled, libcurl found)
#   -t TAG        image name (default localhost/rdma-cdi:VERSION)
#   -o DEST       where buildah commits it, any buildah transport (default: TAG in local
#                 containers-storage; e.g. oci-archive:rdma-cdi.tar for `podman load`,
#                 `ctr images import`, skopeo)
#   -s SOURCE_URL the source repository, for org.opencontainers.image.source (default: the
#                 source tree's git remote origin; none: the annotation is left out)
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
#   /usr/share/doc/rdma-cdi/  LICENSE (rdma-cdi's) and packages.txt: the Debian package,
#                             version and architecture each library came from
#   /var/lib/dpkg/status.d/   those packages' dpkg status entries, one file each, and
#   /usr/share/doc/PKG/copyright  their licenses: scanners (trivy, grype, syft) read
#                             status.d in images without dpkg, as in distroless ones
#
# Labels and annotations (the same): org.opencontainers.image.version and .revision (the
# version and commit `rdma-cdi --version` of the build prints), .licenses, .source, .title,
# .description.
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
source_url=
while getopts "B:t:o:s:h" opt; do
	case $opt in
	B) build_dir=$OPTARG ;;
	t) tag=$OPTARG ;;
	o) dest=$OPTARG ;;
	s) source_url=$OPTARG ;;
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
# "rdma-cdi VERSION (commit COMMIT)", the commit left out when the build did not know it.
version_line=$("$rdma_cdi" --version)
version=$(awk '{print $2}' <<<"$version_line")
revision=$(sed -n 's/.*(commit \([^)]*\))$/\1/p' <<<"$version_line")
[ -n "$version" ] || die "cannot read the version from $rdma_cdi --version"
[ -n "$revision" ] || echo "build.sh: $rdma_cdi names no commit: no revision annotation" >&2
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
[ -n "$source_url" ] || source_url=$(git -C "$src_dir" remote get-url origin 2>/dev/null || true)
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
	echo "$lib" >>"$stage/libs"
done

# The host bundle: each library under the name ldd shows (its soname), dereferenced.
install -m 0755 "$hook" "$root$hook_dir/bin/rdma-cdi-hook"
interp=
for lib in $(needed_libs "$hook"); do
	install -m 0755 "$(readlink -f "$lib")" "$root$hook_dir/lib/$(basename "$lib")"
	echo "$lib" >>"$stage/libs"
	case $(basename "$lib") in ld-linux*) interp=$hook_dir/lib/$(basename "$lib") ;; esac
done
[ -n "$interp" ] || die "$hook: ldd shows no dynamic loader"
# RPATH, not RUNPATH: it also applies to libcjson's own libc dependency.
patchelf --set-interpreter "$interp" --force-rpath --set-rpath "$hook_dir/lib" \
	"$root$hook_dir/bin/rdma-cdi-hook"

# The Debian package of each library (dpkg knows a file by the path its package ships, a
# symlink's or its target's; one dpkg-query for all, it reads every file list each time):
# packages.txt, the dpkg status entries and their copyright.
list_packages() {
	local lib pkg name doc=$root/usr/share/doc
	mkdir -p "$doc/rdma-cdi" "$root/var/lib/dpkg/status.d"
	install -m 0644 "$src_dir/LICENSE" "$doc/rdma-cdi/LICENSE"
	sort -u "$stage/libs" >"$stage/libs.sorted"
	# "pkg[, pkg]: path" lines; paths no package ships are left out (and complained of).
	dpkg-query -S $(while read -r lib; do echo "$lib"; readlink -f "$lib"; done \
		<"$stage/libs.sorted" | sort -u) 2>/dev/null >"$stage/owners" || true
	while read -r lib; do
		pkg=$(awk -v a="$lib" -v b="$(readlink -f "$lib")" -F': ' \
			'$2 == a || $2 == b { split($1, p, ", "); print p[1]; exit }' "$stage/owners")
		[ -n "$pkg" ] || die "$lib belongs to no Debian package (dpkg-query -S): a scanner could not see it"
		echo "$pkg"
	done <"$stage/libs.sorted" | sort -u >"$stage/packages"
	# One query each for all packages: the list, and the status stanzas split one a file.
	# shellcheck disable=SC2016 # dpkg-query's own ${field} syntax
	xargs dpkg-query -W -f='${Package} ${Version} ${Architecture}\n' <"$stage/packages" \
		>"$doc/rdma-cdi/packages.txt"
	xargs dpkg-query -s <"$stage/packages" | awk -v d="$root/var/lib/dpkg/status.d" '
		/^Package: / { out = d "/" $2 }
		{ print > out }' || die "dpkg-query -s failed"
	for name in $(awk '{print $1}' "$doc/rdma-cdi/packages.txt"); do
		[ -f "/usr/share/doc/$name/copyright" ] || continue
		mkdir -p "$doc/$name"
		cp "/usr/share/doc/$name/copyright" "$doc/$name/copyright"
	done
}
command -v dpkg-query >/dev/null || die "dpkg-query not found: the image lists its libraries' Debian packages"
list_packages

# Mount points the DaemonSet uses, so a read-only rootfs needs nothing created.
mkdir -p "$root/host" "$root/etc/rdma-cdi" "$root/var/run/cdi" \
	"$root/var/lib/kubelet/device-plugins" "$root/var/lib/kubelet/plugins_registry" \
	"$root/var/lib/kubelet/plugins" "$root/tmp"
chmod 1777 "$root/tmp"

# A tarball with fixed owners, order and times: the same build dir gives the same layer.
tar --create --file "$stage/root.tar" --directory "$root" --sort=name --owner=0 \
	--group=0 --numeric-owner --mtime=@0 .

# The same key=value pairs as labels (docker, podman inspect) and OCI annotations (the
# manifest's, what registries and scanners read).
meta=(
	org.opencontainers.image.title=rdma-cdi
	"org.opencontainers.image.description=RDMA NICs for containers through CDI: kubelet device plugin, DRA driver and spec generator"
	"org.opencontainers.image.version=$version"
	org.opencontainers.image.licenses=Apache-2.0
	"io.rdma-cdi.hook-dir=$hook_dir"
)
[ -z "$revision" ] || meta+=("org.opencontainers.image.revision=$revision")
[ -z "$source_url" ] || meta+=("org.opencontainers.image.source=$source_url")
meta_args=()
for m in "${meta[@]}"; do
	meta_args+=(--label "$m" --annotation "$m")
done
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$stage/root.tar" / >/dev/null
buildah config \
	--entrypoint '["/usr/bin/rdma-cdi"]' --cmd '["--help"]' \
	--user 0:0 --workingdir / "${meta_args[@]}" \
	"$ctr"
buildah commit --quiet --format oci --timestamp 0 --rm "$ctr" "$dest" >/dev/null
ctr=
echo "built $dest ($(du -sh "$stage/root.tar" | cut -f1) uncompressed)"
