/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge: the kubelet device plugin (device-plugin API v1beta1 over gRPC core).
 *
 * Serves <plugin-dir>/<socket> and registers the resource with the kubelet; answers
 * Allocate with CDI device names from the spec that specs/ writes. Rescans on SIGHUP,
 * re-registers when the kubelet restarts, exits 0 on SIGTERM/SIGINT.
 */
#pragma once

#include <stdbool.h>

#include "discovery.h"
#include "specs.h"

struct daemon_options;

#define BRIDGE_DEFAULT_PLUGIN_DIR "/var/lib/kubelet/device-plugins"
#define BRIDGE_DEFAULT_RESOURCE "rdma.example/hca"
#define BRIDGE_KUBELET_SOCKET "kubelet.sock"
#define BRIDGE_SHARED_MAX 1000

enum bridge_strategy {
	BRIDGE_STRATEGY_CDI_CRI = 1 << 0,	  /* ContainerAllocateResponse.cdi_devices */
	BRIDGE_STRATEGY_CDI_ANNOTATIONS = 1 << 1, /* cdi.k8s.io/ annotation */
	BRIDGE_STRATEGY_DEVICE_SPECS = 1 << 2,	  /* plain DeviceSpecs */
};

/*
 * The bridge's own options; what every daemon takes (the node, the spec, the config, the
 * rescan) is struct daemon_options (daemon.h). Flags override the config file
 * (config/config.h): a field left NULL/0 here takes the file's value, then the default.
 */
struct bridge_options {
	const char *plugin_dir; /* NULL = BRIDGE_DEFAULT_PLUGIN_DIR */
	/* The default pool's resource and sharing (only for a config without `pools`):
	 * NULL = BRIDGE_DEFAULT_RESOURCE; 0 or 1 = exclusive, N > 1 = N IDs per HCA (max
	 * BRIDGE_SHARED_MAX). */
	const char *resource;
	unsigned shared;
	unsigned strategies; /* 0 = CDI_CRI | CDI_ANNOTATIONS */
};

/* Parses "cdi-cri,cdi-annotations,device-specs" into a mask; -EINVAL naming nothing. */
int bridge_parse_strategies(const char *s, unsigned *ret_mask);

/* Validates an extended resource name ("domain/name"); the rules the kubelet applies. */
bool bridge_resource_name_is_valid(const char *name);

/*
 * Device IDs: the PCI address of the function ("0000:3b:00.0"); "<pci>-<rdma-name>" for
 * every device of a function that carries several usable RDMA devices; the RDMA name
 * without PCI address; with shared N > 1 each of those plus "-s<k>", k = 0..N-1.
 * Topology: the function's NUMA node (none when unknown). Health: disc_device_healthy().
 *
 * Runs the device plugin until SIGTERM/SIGINT. Returns 0 on a clean stop, -errno when
 * it cannot start (socket dir unusable, first scan fails). Logs one line per event.
 * Returns with SIGTERM, SIGINT and SIGHUP blocked in the calling thread (pending ones
 * are not delivered): the caller is expected to exit.
 */
int bridge_run(const struct daemon_options *dopts, const struct bridge_options *opts);
