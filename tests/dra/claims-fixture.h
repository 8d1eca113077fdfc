/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hand-made inventory for the claims tests (struct dra_inventory is a plain struct, so
 * these tests need neither sysfs nor inventory.c), plus claim JSON helpers. Shared by the
 * tests and fuzz-claim.
 *
 *   device             RDMA    pool               health          ucx
 *   pci-0000-3b-00-0   mlx5_2  0 excl             healthy         mlx5_2:1
 *   pci-0000-5e-00-0   mlx5_3  2 excl + ncclEnv   healthy         mlx5_3:1
 *   pci-0000-86-00-0   mlx5_5  2 excl + ncclEnv   healthy         mlx5_5:1,mlx5_5:2
 *   pci-0000-af-00-0   mlx5_7  1 shared           healthy         mlx5_7:1
 *   pci-0000-d8-00-0   mlx5_9  0 excl             port 1 DOWN     "" (no ACTIVE port)
 */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claims-internal.h"
#include "config.h"

#define FIX_N 5
#define DRIVER "rdma.example"
#define POOL "node1"

struct fixture {
	struct disc_device devs[FIX_N];
	struct disc_port ports[FIX_N][2];
	struct dra_hca hcas[FIX_N];
	char ucx[FIX_N][64]; /* the hcas' UCX entries (cfg_ucx_entries() owns them in the driver) */
	struct cfg_pool pools[3];
	struct cfg cfg;
	struct disc_node node;
	struct dra_inventory inv;
	struct spec_options spec; /* what the driver passes Prepare (the hook's path) */
};

static inline void fix_device(struct fixture *f, size_t i, const char *name, const char *rdma,
			      const char *pci, long pool, unsigned n_ports, unsigned n_active,
			      const char *reason)
{
	struct disc_device *d = &f->devs[i];
	struct dra_hca *h = &f->hcas[i];

	snprintf(d->name, sizeof(d->name), "%s", rdma);
	snprintf(d->pci, sizeof(d->pci), "%s", pci);
	d->has_uverbs = true;
	d->ports = f->ports[i];
	d->n_ports = n_ports;
	for (unsigned p = 0; p < n_ports; p++) {
		d->ports[p].num = p + 1;
		d->ports[p].state = p < n_active ? DISC_PORT_ACTIVE : 1;
	}
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->dev = i;
	h->d = d;
	h->pool = pool;
	h->healthy = !reason;
	snprintf(h->reason, sizeof(h->reason), "%s", reason ? reason : "");
	snprintf(h->cdi_id, sizeof(h->cdi_id), "rdma.example/hca=%s", pci);
	h->ucx = f->ucx[i];
	for (unsigned p = 0; p < n_active; p++)
		snprintf(h->ucx + strlen(h->ucx), sizeof(f->ucx[i]) - strlen(h->ucx), "%s%s:%u",
			 p ? "," : "", rdma, p + 1);
	if (n_active == 0)
		snprintf(h->ucx, sizeof(f->ucx[i]), "%s:1", rdma);
}

static inline struct fixture *fix_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->pools[0] = (struct cfg_pool){.resource_name = "rdma.example/hca"};
	f->pools[1] = (struct cfg_pool){
	    .resource_name = "rdma.example/shared", .mode = CFG_MODE_SHARED, .shared_slots = 4};
	f->pools[2] = (struct cfg_pool){.resource_name = "rdma.example/gpu", .nccl_env = true};
	f->cfg.pools = f->pools;
	f->cfg.n_pools = 3;
	f->cfg.pools_set = true;
	fix_device(f, 0, "pci-0000-3b-00-0", "mlx5_2", "0000:3b:00.0", 0, 1, 1, NULL);
	fix_device(f, 1, "pci-0000-5e-00-0", "mlx5_3", "0000:5e:00.0", 2, 1, 1, NULL);
	fix_device(f, 2, "pci-0000-86-00-0", "mlx5_5", "0000:86:00.0", 2, 2, 2, NULL);
	fix_device(f, 3, "pci-0000-af-00-0", "mlx5_7", "0000:af:00.0", 1, 1, 1, NULL);
	fix_device(f, 4, "pci-0000-d8-00-0", "mlx5_9", "0000:d8:00.0", 0, 1, 0, "port 1 DOWN");
	f->node.devices = f->devs;
	f->node.n_devices = FIX_N;
	f->inv.hcas = f->hcas;
	f->inv.n_hcas = FIX_N;
	f->inv.node = &f->node;
	f->inv.cfg = &f->cfg;
	return f;
}

/*
 * The tests link claims.c without inventory.c (the slices helper writes it): this is
 * dra_inventory_find as inventory.h documents it, a lookup by name; weak, so that the
 * real one wins once a test links the inventory too.
 */
__attribute__((weak)) const struct dra_hca *dra_inventory_find(const struct dra_inventory *inv,
							       const char *name)
{
	for (size_t i = 0; inv && name && i < inv->n_hcas; i++)
		if (strcmp(inv->hcas[i].name, name) == 0)
			return &inv->hcas[i];
	return NULL;
}

/* One result object for status.allocation.devices.results[] (extra: more members). */
static inline char *result_json(const char *request, const char *device, const char *extra)
{
	char *s = NULL;

	if (asprintf(&s,
		     "{\"request\":\"%s\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
		     "\",\"device\":\"%s\"%s%s}",
		     request, device, extra ? "," : "", extra ? extra : "") < 0)
		abort();
	return s;
}

/* A ResourceClaim default/c1 with that UID and results (a JSON list's inner text). */
static inline cJSON *claim_parse(const char *uid, const char *results)
{
	char *s = NULL;
	cJSON *j;

	if (asprintf(&s,
		     "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
		     "\"metadata\":{\"namespace\":\"default\",\"name\":\"c1\",\"uid\":\"%s\"},"
		     "\"status\":{\"allocation\":{\"devices\":{\"results\":[%s]}}}}",
		     uid, results) < 0)
		abort();
	j = cJSON_Parse(s);
	free(s);
	if (!j)
		abort();
	return j;
}

/*
 * The message of err in buf ("" when none), err freed; returns r. A failure without an
 * error of its code breaks the contract (rc-error.h) and reads "(no error of code N)".
 */
static inline int err_text(int r, struct rc_error *err, char *buf, size_t size)
{
	if (r < 0 && (!err || err->code != -r))
		snprintf(buf, size, "(no error of code %d)", -r);
	else
		snprintf(buf, size, "%s", err ? err->msg : "");
	rc_error_free(err);
	return r;
}

/* Evaluates call, which may set the error _e, and puts its message into buf (size bytes);
 * ERR_TEXT for an array buf. */
#define ERR_TEXT_N(buf, size, call)                                                                \
	({                                                                                         \
		struct rc_error *_e = NULL;                                                        \
		int _r = (call);                                                                   \
		err_text(_r, _e, buf, size);                                                       \
	})
#define ERR_TEXT(buf, call) ERR_TEXT_N(buf, sizeof(buf), call)

/* dra_prepare() of claim default/c1 with uid over f's inventory. */
static inline int fix_prepare(const struct fixture *f, const struct dra_checkpoint *c,
			      const char *uid, const struct dra_result *r, size_t n,
			      struct dra_prepared_claim **ret, cJSON **ret_spec,
			      struct rc_error **err)
{
	const struct dra_prepare_input in = {.ckpt = c,
					     .inv = &f->inv,
					     .driver = DRIVER,
					     .spec = &f->spec,
					     .namespace = "default",
					     .name = "c1",
					     .uid = uid,
					     .results = r,
					     .n_results = n};

	return dra_prepare(&in, ret, ret_spec, err);
}
