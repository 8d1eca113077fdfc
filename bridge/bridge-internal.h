/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge internals: the device table the kubelet sees and the protocol logic over it.
 *
 * Everything in this header is pure (no sockets, no threads, no logging) so the unit
 * tests drive it directly; bridge.c and server.c wire it to gRPC.
 *
 * Device IDs (what the kubelet, Multus and the SR-IOV CNI see):
 *   - the PCI address of the device's function, "0000:3b:00.0";
 *   - "<pci>-<rdma-name>" for EVERY RDMA device of a function that carries more than one
 *     usable RDMA device, so no ID depends on which of them was found first;
 *   - the RDMA name for a device without PCI address (rxe, siw);
 *   - with --shared N, each of those with "-s<k>" appended, k = 0..N-1;
 *   - an ID longer than DP_ID_MAX replaces "<rdma-name>" by "x" + 8 hex digits of the
 *     FNV-1a hash of the name.
 * IDs never contain an index, so they survive hotplug of other devices.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bridge.h"
#include "deviceplugin.h"

#define DP_ID_MAX 63 /* kubelet device IDs */
#define DP_SHARED_MAX BRIDGE_SHARED_MAX
#define DP_MAX_MESSAGE (4u << 20) /* bound on any request we unpack */
#define DP_CONTAINERS_MAX 256	  /* container requests per call; the kubelet sends 1 */
#define DP_ANNOTATION_PREFIX "cdi.k8s.io/rdma-cdi_"
#define DP_ANNOTATION_SUFFIX_MAX (63 - (sizeof("rdma-cdi_") - 1))
#define DP_ENV_DEVICES "RDMA_CDI_DEVICES"
#define DP_CONTAINER_DEV_DIR "/dev/infiniband"
#define DP_PATH_DEPTH_MAX 16 /* sysfs path components kept for affinity */

/* One advertised RDMA device (one CDI device). */
struct dp_hca {
	char *name;	 /* RDMA device name == CDI device name */
	char *qualified; /* "rdma.example/hca=mlx5_3" */
	char *pci;	 /* "" when not on PCI */
	int numa_node;	 /* -1 unknown */
	bool healthy;
	/* Char devices a container gets with the device-specs strategy ("uverbs3",
	 * "umad3", "issm3"); the first is always the uverbs node. */
	char **nodes;
	size_t n_nodes;
	/* Hash of each leading prefix of the sysfs device path (1..depth components):
	 * two devices share their d first components iff prefix[d-1] matches. */
	uint64_t prefix[DP_PATH_DEPTH_MAX];
	unsigned depth;
};

/* One kubelet device ID. */
struct dp_id {
	char id[DP_ID_MAX + 1];
	size_t hca; /* index into dp_table.hcas */
};

struct dp_table {
	struct dp_hca *hcas; /* discovery order: by PCI address, then name */
	size_t n_hcas;
	struct dp_id *ids; /* advertisement order: HCA order, then replica */
	size_t n_ids;
	size_t *by_id; /* indices into ids, sorted by ID, for lookups */
	char *dev_root;
	bool has_rdma_cm;
	unsigned strategies;
	size_t n_skipped; /* devices left out because their ID collided */
	bool flat;	  /* everything in one allocation (what dp_table_build returns) */
};

struct dp_table_options {
	const char *kind;     /* NULL = SPEC_DEFAULT_KIND */
	const char *dev_root; /* NULL = "/dev" */
	unsigned shared;      /* 0/1 = one ID per HCA */
	unsigned strategies;  /* 0 = default */
	bool with_mad;	      /* device-specs also carry umad/issm */
};

/*
 * Builds the table from a discovery snapshot. When spec is non-NULL only devices the
 * spec defines are taken (so every CDI name we hand out resolves); NULL takes every
 * usable device. Returns 0, -EINVAL (shared out of range), -ENOMEM.
 */
int dp_table_build(const struct disc_node *node, const cJSON *spec,
		   const struct dp_table_options *opts, struct dp_table **ret_table);
void dp_table_free(struct dp_table *t);
DEFINE_CLEANUP_FUNC(struct dp_table, dp_table_free)

/* Index into t->ids of a device ID, or -1. */
long dp_table_find(const struct dp_table *t, const char *id);

/* The ListAndWatch message for the table (free with protobuf_c_message_free_unpacked). */
int dp_list_response(const struct dp_table *t, V1beta1__ListAndWatchResponse **ret);

/*
 * Allocate. Every ID of every container request is checked: unknown, duplicate within a
 * container request, or unhealthy IDs fail the whole call with -EINVAL and a one-line
 * reason in err naming the (sanitised) ID; so do an empty request, an empty container
 * request, and more IDs over all container requests than the table has (which bounds the
 * response by the table, whatever the request). On success the response carries, per the
 * table's strategies, cdi_devices, the annotation, the env and DeviceSpecs (free with
 * protobuf_c_message_free_unpacked).
 */
int dp_allocate(const struct dp_table *t, const V1beta1__AllocateRequest *req,
		V1beta1__AllocateResponse **ret, char *err, size_t errlen);

/*
 * GetPreferredAllocation: per container request the must-include IDs first (request
 * order), then the other available IDs by NUMA match with the must-include set, depth
 * of the nearest common upstream bridge, health, table order; cut at allocation_size.
 * Unknown and duplicate IDs are ignored (the answer is advisory). With no must-include
 * ID the first pick is the healthy device on the NUMA node with most candidates.
 * Runs in O(n log n). Returns 0, -EINVAL (more than DP_CONTAINERS_MAX container
 * requests) or -ENOMEM, with a one-line reason in err.
 */
int dp_preferred_allocation(const struct dp_table *t,
			    const V1beta1__PreferredAllocationRequest *req,
			    V1beta1__PreferredAllocationResponse **ret, char *err, size_t errlen);

/*
 * The annotation key suffix for a container request: its first ID with ':' mapped to
 * '_' and non-alphanumeric ends trimmed, or "h" + 16 hex digits of a hash over all IDs
 * when that does not fit. Writes at most DP_ANNOTATION_SUFFIX_MAX chars + NUL.
 */
void dp_annotation_suffix(char *const *ids, size_t n_ids,
			  char buf[static DP_ANNOTATION_SUFFIX_MAX + 1]);

/* Copies s into buf for a log line or error: printable ASCII only, at most 64 chars. */
const char *dp_sanitize(const char *s, char *buf, size_t size);

uint64_t dp_hash64(const void *p, size_t len, uint64_t h);
#define DP_HASH_INIT 0xcbf29ce484222325ULL
