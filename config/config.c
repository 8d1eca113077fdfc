/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config value: defaults, deep comparison (reload), freeing.
 */
#include <string.h>

#include "config-internal.h"

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void pool_clear(struct cfg_pool *p)
{
	struct cfg_selectors *s = &p->sel;

	free(p->resource_name);
	strv_free(s->link_layers, s->n_link_layers);
	free(s->vendors);
	free(s->device_ids);
	strv_free(s->drivers, s->n_drivers);
	strv_free(s->names, s->n_names);
	strv_free(s->netdevs, s->n_netdevs);
	strv_free(s->pci_addresses, s->n_pci_addresses);
	strv_free(s->pf_names, s->n_pf_names);
	free(s->numa_nodes);
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	free(c->kind);
	free(c->spec_dir);
	free(c->memlock);
	for (size_t i = 0; i < c->n_pools; i++)
		pool_clear(&c->pools[i]);
	free(c->pools);
	free(c);
}

int cfg_default_pool(struct cfg *c)
{
	c->pools = calloc(1, sizeof(*c->pools));
	if (!c->pools)
		return -ENOMEM;
	c->pools[0].resource_name = strdup(CFG_DEFAULT_RESOURCE);
	if (!c->pools[0].resource_name) {
		free(c->pools);
		c->pools = NULL;
		return -ENOMEM;
	}
	c->pools[0].mode = CFG_MODE_EXCLUSIVE;
	c->pools[0].sel.vf = -1;
	c->n_pools = 1;
	c->pools_set = false;
	return 0;
}

int cfg_default(struct cfg **ret)
{
	struct cfg *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->with_mad = -1;
	if (cfg_default_pool(c) < 0) {
		free(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

const char *cfg_mode_to_string(enum cfg_mode m)
{
	return m == CFG_MODE_SHARED ? "shared" : "exclusive";
}

const char *cfg_netns_to_string(enum cfg_netns n)
{
	return n == CFG_NETNS_MOVE ? "move" : "none";
}

/* ---- comparison --------------------------------------------------------------------- */

static bool str_equal(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool strv_equal(char *const *a, size_t na, char *const *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]))
			return false;
	return true;
}

static bool mem_equal(const void *a, size_t na, const void *b, size_t nb, size_t size)
{
	return na == nb && (na == 0 || !memcmp(a, b, na * size));
}

static bool selectors_equal(const struct cfg_selectors *a, const struct cfg_selectors *b)
{
	return strv_equal(a->link_layers, a->n_link_layers, b->link_layers, b->n_link_layers) &&
	       mem_equal(a->vendors, a->n_vendors, b->vendors, b->n_vendors, sizeof(unsigned)) &&
	       mem_equal(a->device_ids, a->n_device_ids, b->device_ids, b->n_device_ids,
			 sizeof(unsigned)) &&
	       strv_equal(a->drivers, a->n_drivers, b->drivers, b->n_drivers) &&
	       strv_equal(a->names, a->n_names, b->names, b->n_names) &&
	       strv_equal(a->netdevs, a->n_netdevs, b->netdevs, b->n_netdevs) &&
	       strv_equal(a->pci_addresses, a->n_pci_addresses, b->pci_addresses,
			  b->n_pci_addresses) &&
	       strv_equal(a->pf_names, a->n_pf_names, b->pf_names, b->n_pf_names) &&
	       a->vf == b->vf &&
	       mem_equal(a->numa_nodes, a->n_numa_nodes, b->numa_nodes, b->n_numa_nodes,
			 sizeof(int));
}

bool cfg_pool_equal(const struct cfg_pool *a, const struct cfg_pool *b)
{
	if (!a || !b)
		return a == b;
	return str_equal(a->resource_name, b->resource_name) && a->mode == b->mode &&
	       a->shared_slots == b->shared_slots && a->nccl_env == b->nccl_env &&
	       a->netns == b->netns &&
	       selectors_equal(&a->sel, &b->sel);
}

bool cfg_equal(const struct cfg *a, const struct cfg *b)
{
	if (!a || !b)
		return a == b;
	if (!str_equal(a->kind, b->kind) || !str_equal(a->spec_dir, b->spec_dir) ||
	    a->with_mad != b->with_mad || !str_equal(a->memlock, b->memlock) ||
	    a->pools_set != b->pools_set || a->n_pools != b->n_pools)
		return false;
	for (size_t i = 0; i < a->n_pools; i++)
		if (!cfg_pool_equal(&a->pools[i], &b->pools[i]))
			return false;
	return true;
}
