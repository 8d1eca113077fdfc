#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch-kubectl.sh DIR: puts Debian 13's kubectl (package kubectl; kubernetes-client is a
# transitional package to it) with kustomize built in under DIR/root, for the manifests'
# render test (test-kustomize.py). Downloaded and unpacked, never installed
# (../tools/fetch-debs.sh).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
exec "$(dirname "$0")/../tools/fetch-debs.sh" "$1" trixie kubectl -- usr/bin/kubectl
