/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config: the Config Manager's policy - the YAML file (docs/config.md) that turns a
 * node's RDMA devices into kubelet resource pools.
 *
 * cfg_parse() turns a file's bytes into a struct cfg, an owned, immutable value that
 * can be compared (cfg_equal: a reload that changes nothing is a no-op) and replaced.
 * cfg_assign() splits one discovery snapshot among the pools: the first matching pool
 * wins. Nothing here watches files, logs or touches sysfs; the daemon and the CLI do.
 *
 * Errors: -EBADMSG for text that is not YAML, -EINVAL for YAML that is not a valid
 * config, each with a one-line rc_error (rc-error.h) in *err: "FILE:LINE:COLUMN: KEY:
 * reason", LINE and COLUMN 1-based, KEY a path such as "pools[1].selectors.vendors[0]".
 * err may be NULL; it is set on failure only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common.h"
#include "discovery.h"

#define CFG_DEFAULT_PATH "/etc/rdma-cdi/config.yaml"
/* The one pool of a config without `pools` (the bridge's resource before config). */
#define CFG_DEFAULT_RESOURCE "rdma.example/hca"

/* Bounds on hostile files. */
#define CFG_FILE_MAX (1024 * 1024) /* bytes cfg_load reads */
#define CFG_POOLS_MAX 64
#define CFG_VALUES_MAX 256  /* values of one selector key */
#define CFG_PATTERN_MAX 256 /* characters of one name, glob or driver */
#define CFG_PATH_MAX 4095   /* specDir */
#define CFG_NUMA_MAX 1023   /* highest NUMA node (the kernel's MAX_NUMNODES - 1) */
#define CFG_SHARED_SLOTS_MAX 1000
/*
 * Most kubelet device IDs one pool may advertise (HCAs, times sharedSlots in shared
 * mode). A ListAndWatch entry costs about 85 bytes at worst, so 16384 IDs make about
 * 1.4 MiB: well under the kubelet's 4 MiB gRPC receive limit, beyond which it drops
 * the whole message without a word.
 */
#define CFG_POOL_IDS_MAX 16384
/* What a container is given (the bridge's Allocate, the DRA driver's Prepare): its RDMA
 * device names always, and with a pool's ncclEnv the NCCL and UCX selections too. */
#define CFG_ENV_DEVICES "RDMA_CDI_DEVICES"
#define CFG_ENV_NCCL_IB_HCA "NCCL_IB_HCA"
#define CFG_ENV_UCX_NET_DEVICES "UCX_NET_DEVICES"

/*
 * The value of key (one of CFG_ENV_*) for the n devices a container is given: items are
 * each device's RDMA name (CFG_ENV_DEVICES, CFG_ENV_NCCL_IB_HCA) or its UCX entries
 * (CFG_ENV_UCX_NET_DEVICES, "mlx5_3:1": its ACTIVE ports, else its first), joined with
 * ','. NCCL_IB_HCA's value starts with "=" (NCCL's exact match, "=mlx5_3,mlx5_5"); any
 * other key, NULL included, gives the plain list. malloc'd, NULL on OOM.
 */
char *cfg_env_value(const char *key, const char *const *items, size_t n);

/*
 * A device's CFG_ENV_UCX_NET_DEVICES items: "mlx5_3:1,mlx5_3:2", its ACTIVE ports, else its
 * first port (port 1 when it has none), so that NCCL_IB_HCA and UCX_NET_DEVICES always
 * name the same HCAs. malloc'd, NULL on OOM.
 */
char *cfg_ucx_entries(const struct disc_device *dev);

enum cfg_mode { CFG_MODE_EXCLUSIVE, CFG_MODE_SHARED };

/* A pool's `netns`: whether the spec's createRuntime hook moves each of the container's
 * RDMA devices into the container's network namespace (RDMA netns mode exclusive). */
enum cfg_netns { CFG_NETNS_NONE, CFG_NETNS_MOVE };

/*
 * A pool's device selection. An absent key (n_* == 0, vf == -1) does not restrict;
 * present keys AND together, the values inside one key OR. A key given in the file
 * always has at least one value.
 */
struct cfg_selectors {
	char **link_layers; /* normalised: "InfiniBand" or "Ethernet" */
	size_t n_link_layers;
	unsigned *vendors; /* PCI vendor IDs, 1..0xffff */
	size_t n_vendors;
	unsigned *device_ids; /* PCI device IDs, 1..0xffff */
	size_t n_device_ids;
	char **drivers; /* exact PCI driver names */
	size_t n_drivers;
	char **names; /* fnmatch globs on the RDMA device name */
	size_t n_names;
	char **netdevs; /* globs on any port's netdev */
	size_t n_netdevs;
	char **pci_addresses; /* globs on the PCI address, case-insensitive */
	size_t n_pci_addresses;
	char **pf_names; /* globs on a netdev of the VF's PF */
	size_t n_pf_names;
	int vf;		 /* -1 any, 0 PFs (and non-SR-IOV functions) only, 1 VFs only */
	int *numa_nodes; /* 0..CFG_NUMA_MAX */
	size_t n_numa_nodes;
};

struct cfg_pool {
	char *resource_name; /* kubelet extended resource "domain/name" */
	enum cfg_mode mode;
	unsigned shared_slots; /* 1..CFG_SHARED_SLOTS_MAX in shared mode, 0 in exclusive */
	bool nccl_env;
	enum cfg_netns netns; /* CFG_NETNS_MOVE only with CFG_MODE_EXCLUSIVE */
	struct cfg_selectors sel;
	unsigned line, column; /* where the pool starts in the file (1-based), 0 = default */
};

struct cfg {
	char *kind;	/* CDI kind, NULL = not set (the command's default) */
	char *spec_dir; /* absolute path, NULL = not set */
	int with_mad;	/* -1 not set, else 0/1 */
	char *memlock;	/* "unlimited" or BYTES[K|M|G] as written, NULL = not set */
	/* At least one pool. Without a `pools` key: one CFG_DEFAULT_RESOURCE pool, exclusive,
	 * no selectors, and pools_set false, so that command-line flags (--resource,
	 * --shared) may still shape it. */
	struct cfg_pool *pools;
	size_t n_pools;
	bool pools_set;
};

/*
 * Parses a config file's contents (buf need not be NUL-terminated; len bytes). filename
 * only names the file in messages (NULL = "<config>"). An empty file, or one with only
 * comments, gives the defaults (as cfg_default). Returns 0 and a new *ret, or with one
 * line in err: -EBADMSG (YAML syntax), -EINVAL (not a valid config), -EFBIG (len over
 * CFG_FILE_MAX), -ENOMEM. The line is the first error in file order; when the file has
 * several, it ends with their count (cfg_parse_all lists them). Never logs.
 *
 * Strictness (see docs/config.md): unknown and duplicate keys, anchors, aliases, tags,
 * several documents and empty selector lists are errors; a list key takes a YAML list
 * only (`vendors: [15b3]`, not `vendors: 15b3`); booleans are plain true/false and
 * integers plain decimal (a quoted "16" is a string and refused).
 */
int cfg_parse(const char *buf, size_t len, const char *filename, struct cfg **ret,
	      struct rc_error **err);

/*
 * Every error of one file, for `rdma-cdi config check` and `config convert`: cfg_parse()
 * and cfg_load() go on after an error where the rest of the file can still be read (the
 * next key, list item or pool) and collect what they find. Kept in file order (LINE,
 * then COLUMN; errors without a position in the order found), at most CFG_ERRORS_MAX;
 * n_more counts those beyond. A YAML syntax error ends the reading: it is the last one.
 */
#define CFG_ERRORS_MAX 100
struct cfg_error {
	char *msg;	       /* one line, as in rc_error: "FILE:LINE:COLUMN: KEY: reason" */
	unsigned line, column; /* 1-based; 0 when the message names no position */
};
struct cfg_errors {
	struct cfg_error *v;
	size_t n;
	size_t n_more;
};

/* Frees what e holds and empties it (e itself is the caller's); NULL is fine. */
void cfg_errors_clear(struct cfg_errors *e);

/*
 * cfg_parse(), and on failure every error it found in *errors (which must be empty on
 * entry; NULL to collect none). *err then holds the first error in file order, followed
 * by " (and N more errors)" when there are more: the daemons log that one line. Never
 * logs.
 */
int cfg_parse_all(const char *buf, size_t len, const char *filename, struct cfg **ret,
		  struct cfg_errors *errors, struct rc_error **err);

/*
 * Reads path (at most CFG_FILE_MAX bytes, symlinks followed as a ConfigMap volume needs,
 * anything but a regular file refused without blocking) and parses it. -ENOENT when the
 * file does not exist (err says so): the caller then uses cfg_default(). Other read
 * errors (-EACCES, -EFBIG, -EBADFD for a FIFO or directory, ...) and cfg_parse's errors
 * come with one line in err. Never logs.
 */
int cfg_load(const char *path, struct cfg **ret, struct rc_error **err);
/* cfg_load() with every parse error in *errors, as cfg_parse_all(); a file that cannot be
 * read leaves *errors empty (err says why). */
int cfg_load_all(const char *path, struct cfg **ret, struct cfg_errors *errors,
		 struct rc_error **err);

/* The config of a node without a file: nothing set, one default pool (see struct cfg).
 * 0 or -ENOMEM. */
int cfg_default(struct cfg **ret);

/*
 * Deep comparison of everything that has an effect: the pools' file positions
 * (line/column) are ignored, so a reload that only moved text or edited comments is
 * a no-op. Pool order matters (the first matching pool wins); value order inside a
 * selector key matters too (a reordered list counts as a change: harmless, merely a
 * re-registration). NULL equals only NULL.
 */
bool cfg_equal(const struct cfg *a, const struct cfg *b);
bool cfg_pool_equal(const struct cfg_pool *a, const struct cfg_pool *b);

/* Frees c and everything it owns; NULL is fine. */
void cfg_free(struct cfg *c);
DEFINE_CLEANUP_FUNC(struct cfg, cfg_free)

/*
 * Whether device d of node passes pool p's selectors (usability is not checked: see
 * cfg_assign). linkLayers, netdevs: any port; a device whose field is unknown (numa_node
 * -1, vendor 0, no PCI address, link layer "Unknown") fails a selector on that field.
 * pfNames: d must be a VF whose PF (d->pf_pci) is itself one of node's devices with a
 * port netdev matching a glob; a PF that has no RDMA device in the scan (driver unbound,
 * RDMA disabled on it) cannot be matched this way - select such VFs with pciAddresses.
 */
bool cfg_pool_matches(const struct cfg_pool *p, const struct disc_node *node,
		      const struct disc_device *d);

/*
 * One scan's usable devices (disc_device_usable) split among the pools. pool_of[i] is
 * the pool index of node->devices[i], or -1 (no matching pool, or not usable). Warnings
 * are complete one-line sentences, for the caller to log: a device several pools match
 * (it goes to the first, the line names the device and all the pools), a pool that
 * gets no device (it matches nothing here, or only devices earlier pools took).
 */
struct cfg_assignment {
	long *pool_of;
	size_t n_devices;
	size_t *n_per_pool; /* c->n_pools entries */
	size_t n_pools;
	char **warnings;
	size_t n_warnings;
};

/*
 * Computes the assignment. -E2BIG, with the numbers in err, when a pool would advertise
 * more than CFG_POOL_IDS_MAX device IDs ("pool rdma.example/ib: sharedSlots 100 x 2048
 * HCAs = 204800 device IDs exceeds 16384 ..."); -ENOMEM. Never logs.
 */
int cfg_assign(const struct cfg *c, const struct disc_node *node, struct cfg_assignment **ret,
	       struct rc_error **err);
void cfg_assignment_free(struct cfg_assignment *a);
DEFINE_CLEANUP_FUNC(struct cfg_assignment, cfg_assignment_free)

/*
 * The text of `rdma-cdi config check`: the settings, then each pool with its mode,
 * device count, kubelet ID count and devices (name, PCI address, link layers, NUMA node,
 * PF/VF, driver, netdevs), the usable devices no pool takes, the unusable ones, then the
 * warnings as "warning: ..." lines. Written to out (the only function here that writes,
 * and only there). 0, or cfg_assign's error (err filled, nothing written), or -EIO when
 * out fails.
 */
int cfg_report(const struct cfg *c, const struct disc_node *node, FILE *out, struct rc_error **err);

/*
 * The reason name is not a kubelet extended resource name ("domain/name" by the
 * kubelet's IsExtendedResourceName), or NULL when it is one. The one copy of the rule:
 * the bridge's --resource uses it too.
 */
const char *cfg_resource_name_problem(const char *name);

/* ---- other plugins' configs (convert.c) ---------------------------------------- */

/* The configs `rdma-cdi config convert --from` reads: k8s-rdma-shared-dev-plugin's and
 * sriov-network-device-plugin's config.json. */
enum cfg_source { CFG_SOURCE_RDMA_SHARED, CFG_SOURCE_SRIOV_DP };

/* "rdma-shared" or "sriov-dp" -> *ret; -EINVAL for anything else. */
int cfg_source_from_string(const char *s, enum cfg_source *ret);

/*
 * Converts a config.json of `from`, buf[0..len) (hostile, at most CFG_FILE_MAX bytes;
 * filename only names it in messages), into the text of an equivalent rdma-cdi config:
 * YAML that cfg_parse() accepts, with a `#` comment at each place where the meaning
 * changes. *ret_text is malloc'd and NUL-terminated. Whatever has no equivalent is
 * refused, never dropped: every refusal goes to *errors (as in cfg_parse_all: "FILE: KEY:
 * reason", "FILE:LINE:COLUMN: reason" for a syntax error; NULL collects none), the first
 * with their count to *err. -EFBIG, -EBADMSG (not JSON), -EINVAL (refused), -ENOMEM.
 * Never logs.
 */
int cfg_convert(enum cfg_source from, const char *buf, size_t len, const char *filename,
		char **ret_text, struct cfg_errors *errors, struct rc_error **err);

/* "exclusive" / "shared". */
const char *cfg_mode_to_string(enum cfg_mode m);
/* "none" / "move". */
const char *cfg_netns_to_string(enum cfg_netns n);
