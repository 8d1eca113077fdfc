/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory: the devices the DRA driver publishes, named by the rules in inventory.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "inventory.h"
#include "specs.h"

/* Appends s made a label (lowercase, anything outside [a-z0-9] as '-') at buf[off]. */
static size_t label_append(char *buf, size_t size, size_t off, const char *s)
{
	for (; *s && off + 1 < size; s++, off++) {
		char c = *s;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		buf[off] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
	}
	buf[off] = '\0';
	return off;
}

void dra_device_name(const struct disc_node *node, size_t i,
		     char buf[static DRA_DEVICE_NAME_MAX + 1])
{
	const struct disc_device *dev = &node->devices[i];
	/* Room for the longest candidate: "pci-" + PCI + "-" + name, before the cut. */
	char full[8 + DISC_PCI_MAX + DISC_NAME_MAX];
	size_t n;

	if (dev->pci[0]) {
		n = label_append(full, sizeof(full), 0, "pci-");
		n = label_append(full, sizeof(full), n, dev->pci);
		if (disc_device_shares_function(node, i)) {
			n = label_append(full, sizeof(full), n, "-");
			n = label_append(full, sizeof(full), n, dev->name);
		}
	} else {
		n = label_append(full, sizeof(full), 0, "rdma-");
		n = label_append(full, sizeof(full), n, dev->name);
	}
	/* A DNS label ends in an alphanumeric: a name ending in '_' or '.' (and any name too
	 * long) takes the hash form, which ends in hex digits. */
	if (n <= DRA_DEVICE_NAME_MAX && full[n - 1] != '-') {
		memcpy(buf, full, n + 1);
		return;
	}
	snprintf(buf, DRA_DEVICE_NAME_MAX + 1, "%.54s-%08x", full,
		 (unsigned)fnv1a64(dev->name, strlen(dev->name), FNV1A64_INIT));
}

static int hca_init(struct dra_hca *h, const struct disc_node *node, size_t i, long pool,
		    const char *kind)
{
	const struct disc_device *d = &node->devices[i];
	char id[SPEC_ID_MAX + 1];
	_cleanup_free_ char *q = NULL;
	int n;

	dra_device_name(node, i, h->name);
	h->dev = i;
	h->d = d;
	h->pool = pool;
	h->healthy = disc_device_healthy(d);
	if (disc_device_health_reason(d, h->reason, sizeof(h->reason)) < 0)
		h->reason[0] = '\0';
	spec_device_id(node, i, id);
	q = spec_qualified_name(kind, id);
	if (!q)
		return -ENOMEM;
	n = snprintf(h->cdi_id, sizeof(h->cdi_id), "%s", q);
	if (n < 0 || (size_t)n >= sizeof(h->cdi_id))
		return -EINVAL;
	h->ucx = cfg_ucx_entries(d);
	return h->ucx ? 0 : -ENOMEM;
}

int dra_inventory_build(const struct disc_node *node, const struct cfg *cfg,
			const struct cfg_assignment *a, const char *kind,
			struct dra_inventory **ret)
{
	struct dra_inventory *inv;
	size_t n = 0;
	int r;

	if (!node || !cfg || !a || !kind || !ret || a->n_devices != node->n_devices)
		return -EINVAL;
	inv = calloc(1, sizeof(*inv));
	if (!inv)
		return -ENOMEM;
	inv->node = node;
	inv->cfg = cfg;
	for (size_t i = 0; i < node->n_devices; i++)
		n += a->pool_of[i] >= 0 && disc_device_usable(&node->devices[i]);
	if (n) {
		inv->hcas = calloc(n, sizeof(*inv->hcas));
		if (!inv->hcas) {
			free(inv);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < node->n_devices; i++) {
		long p = a->pool_of[i];

		if (p < 0 || (size_t)p >= cfg->n_pools || !disc_device_usable(&node->devices[i]))
			continue;
		r = hca_init(&inv->hcas[inv->n_hcas], node, i, p, kind);
		if (r < 0) {
			dra_inventory_free(inv);
			return r;
		}
		inv->n_hcas++;
	}
	*ret = inv;
	return 0;
}

void dra_inventory_free(struct dra_inventory *inv)
{
	if (!inv)
		return;
	for (size_t i = 0; i < inv->n_hcas; i++)
		free(inv->hcas[i].ucx);
	free(inv->hcas);
	free(inv);
}

size_t dra_inventory_keep_defined(struct dra_inventory *inv, const struct spec_names *defined)
{
	size_t n = 0, left_out;

	for (size_t i = 0; i < inv->n_hcas; i++) {
		const char *eq = strchr(inv->hcas[i].cdi_id, '=');

		if (eq && spec_names_has(defined, eq + 1))
			inv->hcas[n++] = inv->hcas[i];
		else
			free(inv->hcas[i].ucx);
	}
	left_out = inv->n_hcas - n;
	inv->n_hcas = n;
	return left_out;
}

const struct dra_hca *dra_inventory_find(const struct dra_inventory *inv, const char *name)
{
	if (!inv || !name)
		return NULL;
	for (size_t i = 0; i < inv->n_hcas; i++)
		if (strcmp(inv->hcas[i].name, name) == 0)
			return &inv->hcas[i];
	return NULL;
}
