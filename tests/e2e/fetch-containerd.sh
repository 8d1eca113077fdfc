#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch-containerd.sh DIR: puts Debian 13's containerd 1.7 (containerd, containerd-shim-runc-v2,
# ctr) and the Kubernetes CRI protos (golang-github-kubernetes-cri-api-dev) under DIR/root, for
# tests/e2e/test-containerd-cri.py. Debian 12's containerd (1.6) has no CDI. Downloaded and
# unpacked, never installed (../tools/fetch-debs.sh).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
exec "$(dirname "$0")/../tools/fetch-debs.sh" "$1" trixie \
	containerd golang-github-kubernetes-cri-api-dev -- \
	usr/bin/containerd \
	usr/bin/containerd-shim-runc-v2 \
	usr/bin/ctr \
	usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
