/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge internals: the device table the kubelet sees and the protocol logic over it.
 *
 * Everything in this header is pure (no sockets, no threads, no logging) so the unit
 * tests drive it directly; bridge.c and plugin.c wire it to gRPC.
 *
 * Device IDs (what the kubelet, Multus and the SR-IOV CNI see): spec_device_id() in
 * specs/, the same name the spec gives each HCA besides its RDMA name (PCI address,
 * "<pci>-<rdma-name>" on a function with several usable RDMA devices, the RDMA name
 * without PCI address, a hash form beyond SPEC_ID_MAX); with --shared N each of those
 * with "-s<k>" appended, k = 0..N-1. IDs never contain an index, so they survive hotplug
 * of other devices.
 *
 * One table is one kubelet resource (one pool): its devices, its shared mode, its
 * strategies, its ncclEnv. A table is an immutable snapshot in one allocation; a rescan
 * or a new config builds a new one.
 *
 * Shared mode (shared = N > 1): each ID is one slot of one HCA; N pods can hold one
 * slot of the same HCA each. Allocate maps the IDs of a request back to their HCAs and
 * hands each HCA out once, however many of its slots the request names; preferred
 * allocation therefore spreads a multi-slot request over distinct HCAs first and only
 * then adds second slots. The ListAndWatch message carries every slot: at most
 * DP_LIST_IDS_MAX IDs per table keeps it well under the kubelet's 4 MiB receive limit
 * (16384 IDs of 63 chars pack to 1.4 MB).
 *
 * ncclEnv (nccl_env): Allocate also sets, for the HCAs of each container request in table
 * order, NCCL_IB_HCA="=mlx5_3,mlx5_5" (NCCL's exact-match form: the leading '=' stops
 * mlx5_1 from also selecting mlx5_10..19) and UCX_NET_DEVICES="mlx5_3:1,mlx5_5:1", each
 * HCA with each of its ports that was ACTIVE when the table was built. An HCA with no
 * ACTIVE port would be listed with its first port (port 1 without ports), so both
 * variables always name the same HCAs; Allocate never gets there: it refuses unhealthy
 * HCAs, and healthy means an ACTIVE port in the same snapshot.
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
#define DP_CONTAINER_DEV_DIR "/dev/infiniband"
#define DP_PATH_DEPTH_MAX 16 /* sysfs path components kept for affinity */
/* IDs per table (shared x HCAs): keeps ListAndWatch well under the kubelet's 4 MiB. */
#define DP_LIST_IDS_MAX 16384

/* The first port's link layer: devices of one fabric share it. */
enum dp_link {
	DP_LINK_UNKNOWN,
	DP_LINK_INFINIBAND,
	DP_LINK_ETHERNET,
};

/* One advertised RDMA device (one CDI device). */
struct dp_hca {
	char *name;	 /* RDMA device name == CDI device name */
	char *qualified; /* "rdma.example/hca=mlx5_3" */
	char *pci;	 /* "" when not on PCI */
	int numa_node;	 /* -1 unknown */
	bool healthy;
	enum dp_link link;
	char *ucx; /* its UCX_NET_DEVICES entries: "mlx5_3:1" (see ncclEnv above) */
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
	unsigned shared;  /* IDs per HCA: 1 = exclusive */
	bool nccl_env;	  /* Allocate sets NCCL_IB_HCA and UCX_NET_DEVICES */
	size_t n_skipped; /* devices left out because their ID collided */
	bool flat;	  /* everything in one allocation (what dp_table_build returns) */
};

struct dp_table_options {
	const char *kind;     /* NULL = SPEC_DEFAULT_KIND */
	const char *dev_root; /* NULL = "/dev" */
	unsigned shared;      /* 0/1 = one ID per HCA */
	unsigned strategies;  /* 0 = default */
	bool with_mad;	      /* device-specs also carry umad/issm */
	/* The pool: include[i] says whether node->devices[i] belongs to this table; NULL =
	 * every usable device. Unusable devices are never taken. */
	const bool *include;
	bool nccl_env; /* see ncclEnv above */
};

/*
 * Builds the table of one pool from a discovery snapshot. When defined is non-NULL only
 * devices whose RDMA name it defines are taken (the names of the spec on disk: every CDI
 * name we hand out resolves); NULL takes every usable device of the pool. Returns 0,
 * -EINVAL (shared out of range), -E2BIG (dp_list_ids_needed() of the pool beyond
 * DP_LIST_IDS_MAX), -ENOMEM.
 */
int dp_table_build(const struct disc_node *node, const struct spec_names *defined,
		   const struct dp_table_options *opts, struct dp_table **ret_table);
void dp_table_free(struct dp_table *t);
DEFINE_CLEANUP_FUNC(struct dp_table, dp_table_free)

/* IDs a table of n_hcas HCAs advertises with shared (0/1 = exclusive); saturates. */
size_t dp_list_ids_needed(size_t n_hcas, unsigned shared);

/* Index into t->ids of a device ID, or -1. */
long dp_table_find(const struct dp_table *t, const char *id);

/* The ListAndWatch message for the table (free with protobuf_c_message_free_unpacked). */
int dp_list_response(const struct dp_table *t, V1beta1__ListAndWatchResponse **ret);

/*
 * Allocate. Every ID of every container request is checked: unknown, duplicate within a
 * container request, or unhealthy IDs fail the whole call with -EINVAL and a one-line
 * reason in *err naming the (sanitised) ID; so do an empty request, an empty container
 * request, and more IDs over all container requests than the table has (which bounds the
 * response by the table, whatever the request). Out of memory is -ENOMEM. On success the
 * response carries, per the
 * table's strategies, cdi_devices, the annotation, the env and DeviceSpecs (free with
 * protobuf_c_message_free_unpacked).
 */
int dp_allocate(const struct dp_table *t, const V1beta1__AllocateRequest *req,
		V1beta1__AllocateResponse **ret, struct rc_error **err);

/*
 * GetPreferredAllocation: per container request the must-include IDs first (request
 * order), then the other available IDs ranked by
 *   1. link layer: one of the must-include set's (a pod stays on one fabric);
 *   2. slot round (shared mode): a slot of an HCA not chosen yet before a second slot
 *      of one that is, then third slots...;
 *   3. NUMA node: one of the must-include set's;
 *   4. depth of the nearest common upstream bridge (PCIe switch) with the set;
 *   5. health, then table order;
 * cut at allocation_size. Unknown and duplicate IDs are ignored (the answer is
 * advisory). With no must-include ID the first pick (the anchor the rest is ranked
 * around) is a healthy device of the link layer with most healthy candidates (so a
 * multi-device request can stay on one fabric), on the NUMA node with most healthy
 * candidates of that link layer, lowest in table order.
 * Runs in O(n log n). Returns 0, -EINVAL (more than DP_CONTAINERS_MAX container
 * requests) or -ENOMEM, with a one-line reason in *err.
 */
int dp_preferred_allocation(const struct dp_table *t,
			    const V1beta1__PreferredAllocationRequest *req,
			    V1beta1__PreferredAllocationResponse **ret, struct rc_error **err);

/*
 * The annotation key suffix for a container request: its first ID with ':' mapped to
 * '_' and non-alphanumeric ends trimmed, or "h" + 16 hex digits of a hash over all IDs
 * when that does not fit. Writes at most DP_ANNOTATION_SUFFIX_MAX chars + NUL.
 */
void dp_annotation_suffix(char *const *ids, size_t n_ids,
			  char buf[static DP_ANNOTATION_SUFFIX_MAX + 1]);
