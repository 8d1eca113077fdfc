/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pool selection: which pool each usable device of a scan goes to, and the text of
 * `rdma-cdi config check`.
 */
#include <string.h>

#include "config-internal.h"

static bool glob_any(char *const *globs, size_t n, const char *s, bool fold)
{
	if (!*s)
		return false;
	for (size_t i = 0; i < n; i++)
		if (cfg_glob_match(globs[i], s, fold))
			return true;
	return false;
}

static bool netdev_matches(char *const *globs, size_t n, const struct disc_device *d)
{
	for (size_t i = 0; i < d->n_ports; i++)
		if (glob_any(globs, n, d->ports[i].netdev, false))
			return true;
	return false;
}

static bool link_layer_matches(const struct cfg_selectors *s, const struct disc_device *d)
{
	for (size_t i = 0; i < d->n_ports; i++)
		for (size_t k = 0; k < s->n_link_layers; k++)
			if (!strcmp(d->ports[i].link_layer, s->link_layers[k]))
				return true;
	return false;
}

static bool uint_in(const unsigned *v, size_t n, unsigned x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static bool str_in(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i], s))
			return true;
	return false;
}

/* A VF whose PF is an RDMA device of the node with a matching netdev. */
static bool pf_name_matches(const struct cfg_selectors *s, const struct disc_node *node,
			    const struct disc_device *d)
{
	if (!d->is_vf || !d->pf_pci[0])
		return false;
	for (size_t i = 0; node && i < node->n_devices; i++) {
		const struct disc_device *pf = &node->devices[i];

		if (!strcmp(pf->pci, d->pf_pci) && netdev_matches(s->pf_names, s->n_pf_names, pf))
			return true;
	}
	return false;
}

bool cfg_pool_matches(const struct cfg_pool *p, const struct disc_node *node,
		      const struct disc_device *d)
{
	const struct cfg_selectors *s = &p->sel;
	bool numa = false;

	if (s->n_link_layers && !link_layer_matches(s, d))
		return false;
	if (s->n_vendors && !uint_in(s->vendors, s->n_vendors, d->vendor_id))
		return false;
	if (s->n_device_ids && !uint_in(s->device_ids, s->n_device_ids, d->device_id))
		return false;
	if (s->n_drivers && !str_in(s->drivers, s->n_drivers, d->driver))
		return false;
	if (s->n_names && !glob_any(s->names, s->n_names, d->name, false))
		return false;
	if (s->n_netdevs && !netdev_matches(s->netdevs, s->n_netdevs, d))
		return false;
	/* sysfs writes PCI addresses in lower case; a file may not. */
	if (s->n_pci_addresses && !glob_any(s->pci_addresses, s->n_pci_addresses, d->pci, true))
		return false;
	if (s->n_pf_names && !pf_name_matches(s, node, d))
		return false;
	if (s->vf >= 0 && d->is_vf != (s->vf == 1))
		return false;
	for (size_t i = 0; i < s->n_numa_nodes; i++)
		numa = numa || (d->numa_node >= 0 && d->numa_node == s->numa_nodes[i]);
	return s->n_numa_nodes == 0 || numa;
}

/* ---- assignment --------------------------------------------------------------------- */

void cfg_assignment_free(struct cfg_assignment *a)
{
	if (!a)
		return;
	free(a->pool_of);
	free(a->n_per_pool);
	for (size_t i = 0; i < a->n_warnings; i++)
		free(a->warnings[i]);
	free(a->warnings);
	free(a);
}

static int add_warning(struct cfg_assignment *a, char *w)
{
	char **v;

	if (!w)
		return -ENOMEM;
	v = realloc(a->warnings, (a->n_warnings + 1) * sizeof(*v));
	if (!v) {
		free(w);
		return -ENOMEM;
	}
	a->warnings = v;
	a->warnings[a->n_warnings++] = w;
	return 0;
}

static const char *device_where(const struct disc_device *d)
{
	return d->pci[0] ? d->pci : "no PCI address";
}

/* "device mlx5_8 (0000:5e:00.0) matches pools a, b and c: it goes to a, the first". */
static int warn_overlap(struct cfg_assignment *a, const struct cfg *c, const struct disc_device *d,
			const size_t *hits, size_t n_hits)
{
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	FILE *f;

	f = open_memstream(&buf, &size);
	if (!f)
		return -ENOMEM;
	fprintf(f, "device %s (%s) matches pools ", d->name, device_where(d));
	for (size_t i = 0; i < n_hits; i++)
		fprintf(f, "%s%s",
			i == 0		  ? ""
			: i + 1 == n_hits ? " and "
					  : ", ",
			c->pools[hits[i]].resource_name);
	fprintf(f, ": it goes to %s, the first", c->pools[hits[0]].resource_name);
	if (fclose(f) != 0)
		return -ENOMEM;
	return add_warning(a, TAKE_PTR(buf));
}

static int check_bound(const struct cfg_pool *p, size_t n, struct rc_error **err)
{
	unsigned long long ids =
	    (unsigned long long)n * (p->mode == CFG_MODE_SHARED ? p->shared_slots : 1);

	if (ids <= CFG_POOL_IDS_MAX)
		return 0;
	if (p->mode == CFG_MODE_SHARED)
		return rc_error_set(
		    err, -E2BIG,
		    "pool %s: sharedSlots %u x %zu HCAs = %llu device IDs exceeds %d "
		    "(a ListAndWatch message that large nears the kubelet's 4 MiB "
		    "limit): lower sharedSlots or split the HCAs over more pools",
		    p->resource_name, p->shared_slots, n, ids, CFG_POOL_IDS_MAX);
	return rc_error_set(
	    err, -E2BIG,
	    "pool %s: %zu HCAs exceeds %d device IDs (a ListAndWatch message that "
	    "large nears the kubelet's 4 MiB limit): split the HCAs over more pools",
	    p->resource_name, n, CFG_POOL_IDS_MAX);
}

int cfg_assign(const struct cfg *c, const struct disc_node *node, struct cfg_assignment **ret,
	       struct rc_error **err)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	_cleanup_free_ size_t *matched = NULL, *hits = NULL;
	size_t n_dev = node ? node->n_devices : 0;
	int r;

	a = calloc(1, sizeof(*a));
	if (!a)
		goto oom;
	a->n_devices = n_dev;
	a->n_pools = c->n_pools;
	a->pool_of = calloc(n_dev ? n_dev : 1, sizeof(*a->pool_of));
	a->n_per_pool = calloc(c->n_pools ? c->n_pools : 1, sizeof(*a->n_per_pool));
	matched = calloc(c->n_pools ? c->n_pools : 1, sizeof(*matched));
	hits = calloc(c->n_pools ? c->n_pools : 1, sizeof(*hits));
	if (!a->pool_of || !a->n_per_pool || !matched || !hits)
		goto oom;

	for (size_t i = 0; i < n_dev; i++) {
		const struct disc_device *d = &node->devices[i];
		size_t n_hits = 0;

		a->pool_of[i] = -1;
		if (!disc_device_usable(d))
			continue;
		for (size_t j = 0; j < c->n_pools; j++)
			if (cfg_pool_matches(&c->pools[j], node, d)) {
				matched[j]++;
				hits[n_hits++] = j;
			}
		if (n_hits == 0)
			continue;
		a->pool_of[i] = (long)hits[0];
		a->n_per_pool[hits[0]]++;
		if (n_hits > 1 && warn_overlap(a, c, d, hits, n_hits) < 0)
			goto oom;
	}
	for (size_t j = 0; j < c->n_pools; j++) {
		const char *name = c->pools[j].resource_name;

		if (a->n_per_pool[j] > 0)
			continue;
		if (matched[j] == 0)
			r = add_warning(a, strdup_printf("pool %s matches no usable device on this "
							 "node",
							 name));
		else
			r = add_warning(
			    a, strdup_printf("pool %s gets no device: the %zu usable "
					     "device%s it matches went to earlier pools",
					     name, matched[j], matched[j] == 1 ? "" : "s"));
		if (r < 0)
			goto oom;
	}
	for (size_t j = 0; j < c->n_pools; j++) {
		r = check_bound(&c->pools[j], a->n_per_pool[j], err);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(a);
	return 0;
oom:
	return rc_error_set(err, -ENOMEM, "out of memory");
}

/* ---- config check ------------------------------------------------------------------- */

static void print_device(FILE *out, const struct disc_device *d)
{
	char layers[64] = "", netdevs[128] = "";
	size_t lo = 0, no = 0;

	for (size_t i = 0; i < d->n_ports; i++) {
		const struct disc_port *p = &d->ports[i];

		/* Each link layer once: a dual-port HCA is rarely mixed. */
		if (!strstr(layers, p->link_layer) && lo < sizeof(layers))
			lo += (size_t)snprintf(layers + lo, sizeof(layers) - lo, "%s%s",
					       lo ? "," : "", p->link_layer);
		if (p->netdev[0] && no < sizeof(netdevs))
			no += (size_t)snprintf(netdevs + no, sizeof(netdevs) - no, "%s%s",
					       no ? "," : "", p->netdev);
	}
	fprintf(out, "  %-16s %-13s %-10s ", d->name, d->pci[0] ? d->pci : "-",
		layers[0] ? layers : "-");
	if (d->numa_node >= 0)
		fprintf(out, "numa %-3d", d->numa_node);
	else
		fprintf(out, "numa ?  ");
	/* A function without PCI address (a sub-function) is neither PF nor VF. */
	fprintf(out, " %s %-10s %s\n",
		d->is_vf    ? "VF"
		: d->pci[0] ? "PF"
			    : "- ",
		d->driver[0] ? d->driver : "-", netdevs[0] ? netdevs : "-");
}

static const char *or_unset(const char *s)
{
	return s ? s : "not set";
}

int cfg_report(const struct cfg *c, const struct disc_node *node, FILE *out, struct rc_error **err)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	size_t n_dev = node ? node->n_devices : 0, n_free = 0, n_unusable = 0;
	int r;

	r = cfg_assign(c, node, &a, err);
	if (r < 0)
		return r;

	fprintf(out, "kind: %s\n", or_unset(c->kind));
	fprintf(out, "specDir: %s\n", or_unset(c->spec_dir));
	fprintf(out, "withMad: %s\n", c->with_mad < 0 ? "not set" : c->with_mad ? "true" : "false");
	fprintf(out, "memlock: %s\n", or_unset(c->memlock));
	fprintf(out, "pools: %zu%s\n", c->n_pools,
		c->pools_set ? "" : " (not set: one pool of every usable device)");
	for (size_t j = 0; j < c->n_pools; j++) {
		const struct cfg_pool *p = &c->pools[j];
		size_t n = a->n_per_pool[j];

		fprintf(out, "\npool %s: %s", p->resource_name, cfg_mode_to_string(p->mode));
		if (p->mode == CFG_MODE_SHARED)
			fprintf(out, ", %u slots per HCA", p->shared_slots);
		if (p->nccl_env)
			fprintf(out, ", ncclEnv");
		if (p->netns != CFG_NETNS_NONE)
			fprintf(out, ", netns %s", cfg_netns_to_string(p->netns));
		fprintf(out, ", %zu HCA%s, %zu device ID%s\n", n, n == 1 ? "" : "s",
			n * (p->mode == CFG_MODE_SHARED ? p->shared_slots : 1),
			n * (p->mode == CFG_MODE_SHARED ? p->shared_slots : 1) == 1 ? "" : "s");
		for (size_t i = 0; i < n_dev; i++)
			if (a->pool_of[i] == (long)j)
				print_device(out, &node->devices[i]);
	}
	for (size_t i = 0; i < n_dev; i++) {
		bool usable = disc_device_usable(&node->devices[i]);

		n_free += usable && a->pool_of[i] < 0;
		n_unusable += !usable;
	}
	if (n_free) {
		fprintf(out, "\nin no pool: %zu usable device%s\n", n_free, n_free == 1 ? "" : "s");
		for (size_t i = 0; i < n_dev; i++)
			if (disc_device_usable(&node->devices[i]) && a->pool_of[i] < 0)
				print_device(out, &node->devices[i]);
	}
	if (n_unusable) {
		fprintf(out, "\nnot usable (no uverbs device): %zu\n", n_unusable);
		for (size_t i = 0; i < n_dev; i++)
			if (!disc_device_usable(&node->devices[i]))
				print_device(out, &node->devices[i]);
	}
	if (a->n_warnings)
		fputc('\n', out);
	for (size_t i = 0; i < a->n_warnings; i++)
		fprintf(out, "warning: %s\n", a->warnings[i]);
	if (fflush(out) != 0 || ferror(out))
		return rc_error_set(err, -EIO, "cannot write the report");
	return 0;
}
