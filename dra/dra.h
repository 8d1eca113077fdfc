/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra: `rdma-cdi dra`, a kubelet DRA plugin (resource.k8s.io/v1) for RDMA NICs that
 * serves the same CDI specs as `generate` and the bridge.
 *
 * Shares with the bridge: discovery and the Sysfs Watcher (discovery/follow.h), the
 * config pools (config/), the spec writer and keeper (specs/), the loop (common/loop.h),
 * the gRPC plumbing (rpc/rpc.h), the daemon runtime (daemon/daemon.h) and health
 * (disc_node_changes). Adds: the plugin-watcher registration, ResourceSlices through the
 * API server (kube/), NodePrepareResources/NodeUnprepareResources with a checkpoint, one
 * transient CDI spec per claim, the DRAResourceHealth stream, and Node events when a device
 * turns unhealthy or comes back (events.h).
 */
#pragma once

#include <stdbool.h>

#include "discovery.h"
#include "specs.h"

struct daemon_options;

#define DRA_DEFAULT_DRIVER "rdma.example"
#define DRA_DEFAULT_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
#define DRA_DEFAULT_PLUGIN_ROOT "/var/lib/kubelet/plugins" /* + "/<driver>" */
#define DRA_SOCKET_NAME "dra.sock"
#define DRA_CHECKPOINT_NAME "checkpoint.json"
#define DRA_CLAIM_KIND_CLASS "claim" /* per-claim specs: kind "<driver>/claim" */
#define DRA_DRIVER_NAME_MAX 63	     /* spec.driver of a ResourceSlice */

/* The DRA driver's own options; what every daemon takes (the node, the spec, the config,
 * the rescan) is struct daemon_options (daemon.h). Flags override the config file. */
struct dra_options {
	const char *driver_name;  /* NULL = DRA_DEFAULT_DRIVER */
	const char *node_name;	  /* required (the CLI takes $NODE_NAME) */
	const char *registry_dir; /* NULL = DRA_DEFAULT_REGISTRY_DIR */
	const char *plugin_dir;	  /* NULL = DRA_DEFAULT_PLUGIN_ROOT/<driver> */
	const char *kubeconfig;	  /* NULL = in-cluster */
	const char *sa_dir;	  /* in-cluster credentials; NULL = KUBE_SA_DIR (tests) */
};

/* A driver name: a DNS subdomain of at most DRA_DRIVER_NAME_MAX characters. */
bool dra_driver_name_is_valid(const char *name);
/* A node name: a DNS subdomain (at most 253 characters), as Kubernetes names nodes. */
bool dra_node_name_is_valid(const char *name);

/*
 * Runs the driver until SIGTERM/SIGINT. Returns 0 on a clean stop, -errno when it cannot
 * start (no node name, credentials unusable, sockets' dirs unusable, first scan fails, a
 * corrupt checkpoint: -EBADMSG, the file is left in place and the log says how to go on).
 * The plugin and registry dirs are created 0750 when missing. Logs one line per event.
 * Returns with SIGTERM, SIGINT and SIGHUP blocked.
 */
int dra_run(const struct daemon_options *dopts, const struct dra_options *opts);
