#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fetch-promtool.sh DIR: puts Debian 12's promtool (package prometheus) under DIR/root,
# for the monitoring test (test-monitoring.py: `promtool check rules` and `promtool test
# rules` on deploy/kubernetes/monitoring). Downloaded and unpacked, never installed: an
# installed prometheus package would start a Prometheus server (../tools/fetch-debs.sh).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
exec "$(dirname "$0")/../tools/fetch-debs.sh" "$1" bookworm prometheus -- usr/bin/promtool
