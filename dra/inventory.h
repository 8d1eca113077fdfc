/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory: what the DRA driver offers, built from one discovery snapshot and the config
 * in force - the device model the slices, the claims and health all read (pure: no
 * sockets, no threads, no logging).
 *
 * Device names (DRA_DEVICE_NAME rules, docs/dra.md): a DNS label from the PCI address of
 * the function, "pci-0000-3b-00-0"; every usable RDMA device of a function that carries
 * several gets "-" + its RDMA name made a label ("pci-0000-3b-00-0-mlx5-2": lowercase,
 * every character outside [a-z0-9] as '-'); a device without PCI address is
 * "rdma-" + its RDMA name so made; a name longer than 63, or ending in '-' (an RDMA name
 * ending in '_': a DNS label ends in an alphanumeric), keeps its first 54 characters and
 * ends in "-" + 8 hex digits of the FNV-1a hash of the RDMA name (the 64-bit hash's low 32
 * bits). Names never hold an index, so they survive hotplug of other devices.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "discovery.h"

#define DRA_DEVICE_NAME_MAX 63
/* The key of the NoSchedule taint on an unhealthy device: driver + this. The slices put
 * it on (slices.h), a claim's tolerations tolerate it (claims.h). */
#define DRA_TAINT_SUFFIX "/unhealthy"

/* One published device (one usable RDMA device a config pool takes). */
struct dra_hca {
	char name[DRA_DEVICE_NAME_MAX + 1]; /* the DNS label above */
	size_t dev;			    /* index into the snapshot's devices */
	const struct disc_device *d;	    /* that device (valid while the snapshot is) */
	long pool;			    /* config pool index */
	bool healthy;			    /* disc_device_healthy() */
	char reason[128];		    /* why not healthy ("port 1 DOWN"), "" when healthy */
	char cdi_id[320]; /* "rdma.example/hca=0000:3b:00.0": the spec's ID name */
	char *ucx;	  /* cfg_ucx_entries(): "mlx5_2:1", for UCX_NET_DEVICES */
};

struct dra_inventory {
	struct dra_hca *hcas; /* discovery order */
	size_t n_hcas;
	const struct disc_node *node; /* not owned */
	const struct cfg *cfg;	      /* not owned: pools' names, sharing, ncclEnv */
};

/* h's config pool, or NULL (no config, or an index it does not hold). */
static inline const struct cfg_pool *dra_hca_pool(const struct dra_inventory *inv,
						  const struct dra_hca *h)
{
	return inv->cfg && h->pool >= 0 && (size_t)h->pool < inv->cfg->n_pools
		   ? &inv->cfg->pools[h->pool]
		   : NULL;
}

/* True when h's config pool is mode shared: its device may serve several claims at once
 * (published with allowMultipleAllocations, prepared whoever holds it). */
static inline bool dra_hca_shared(const struct dra_inventory *inv, const struct dra_hca *h)
{
	const struct cfg_pool *p = dra_hca_pool(inv, h);

	return p && p->mode == CFG_MODE_SHARED;
}

/* The DNS label of node->devices[i] (rules above); node in discovery order. */
void dra_device_name(const struct disc_node *node, size_t i,
		     char buf[static DRA_DEVICE_NAME_MAX + 1]);

/*
 * Builds the inventory: every usable device that a pool of a takes, with its name, CDI
 * ID (spec_qualified_name(kind, spec_device_id())) and health. node and cfg must outlive
 * it. 0, -EINVAL (a NULL argument, a stale assignment, a CDI name over 319 chars) or
 * -ENOMEM.
 */
int dra_inventory_build(const struct disc_node *node, const struct cfg *cfg,
			const struct cfg_assignment *a, const char *kind,
			struct dra_inventory **ret);
void dra_inventory_free(struct dra_inventory *inv);
struct spec_names;
/* What the driver offers: keeps the HCAs whose names the spec on disk (defined) defines,
 * frees the others (docs/dra.md). Returns how many it left out. */
size_t dra_inventory_keep_defined(struct dra_inventory *inv, const struct spec_names *defined);
/* The device of that name, or NULL. */
const struct dra_hca *dra_inventory_find(const struct dra_inventory *inv, const char *name);
