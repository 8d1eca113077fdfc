/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device table: discovery snapshot -> kubelet device IDs, and the ListAndWatch list.
 * The ID rule is documented in bridge-internal.h.
 */
#include <stdio.h>
#include <string.h>

#include "bridge-internal.h"
#include "config.h"

static void hca_clear(struct dp_hca *h)
{
	free(h->name);
	free(h->qualified);
	free(h->pci);
	free(h->ucx);
	for (size_t i = 0; i < h->n_nodes; i++)
		free(h->nodes[i]);
	free(h->nodes);
}

void dp_table_free(struct dp_table *t)
{
	if (!t)
		return;
	if (t->flat) {
		free(t);
		return;
	}
	for (size_t i = 0; i < t->n_hcas; i++)
		hca_clear(&t->hcas[i]);
	free(t->hcas);
	free(t->ids);
	free(t->by_id);
	free(t->dev_root);
	free(t);
}

/* Splits "devices/pci0000:5d/0000:5d:00.0/..." into hashes of its leading prefixes. */
static void hash_path(const char *path, struct dp_hca *h)
{
	uint64_t hash = FNV1A64_INIT;
	const char *p = path;

	h->depth = 0;
	while (*p && h->depth < DP_PATH_DEPTH_MAX) {
		size_t len = strcspn(p, "/");

		if (len > 0) {
			/* The separator goes into the hash so "a/bc" and "ab/c" differ. */
			hash = fnv1a64(p, len, hash);
			hash = fnv1a64("/", 1, hash);
			h->prefix[h->depth++] = hash;
		}
		p += len;
		if (*p == '/')
			p++;
	}
}

static int add_node_name(struct dp_hca *h, const char *name)
{
	char **n = realloc(h->nodes, (h->n_nodes + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	h->nodes = n;
	n[h->n_nodes] = strdup(name);
	if (!n[h->n_nodes])
		return -ENOMEM;
	h->n_nodes++;
	return 0;
}

static enum dp_link link_of(const struct disc_device *dev)
{
	if (dev->n_ports == 0)
		return DP_LINK_UNKNOWN;
	if (strcmp(dev->ports[0].link_layer, "InfiniBand") == 0)
		return DP_LINK_INFINIBAND;
	if (strcmp(dev->ports[0].link_layer, "Ethernet") == 0)
		return DP_LINK_ETHERNET;
	return DP_LINK_UNKNOWN;
}

static int hca_init(struct dp_hca *h, const struct disc_device *dev, const char *kind,
		    bool with_mad)
{
	int r;

	h->name = strdup(dev->name);
	h->qualified = spec_qualified_name(kind, dev->name);
	h->pci = strdup(dev->pci);
	h->ucx = cfg_ucx_entries(dev);
	if (!h->name || !h->qualified || !h->pci || !h->ucx)
		return -ENOMEM;
	h->numa_node = dev->numa_node < 0 ? -1 : dev->numa_node;
	h->healthy = disc_device_healthy(dev);
	h->link = link_of(dev);
	hash_path(dev->dev_path, h);
	r = add_node_name(h, dev->uverbs.name);
	if (r < 0 || !with_mad)
		return r;
	for (size_t i = 0; i < dev->n_ports; i++) {
		const struct disc_port *p = &dev->ports[i];

		if (p->has_umad && (r = add_node_name(h, p->umad.name)) < 0)
			return r;
		if (p->has_issm && (r = add_node_name(h, p->issm.name)) < 0)
			return r;
	}
	return 0;
}

static int cmp_id(const void *a, const void *b, void *userdata)
{
	const struct dp_id *ids = userdata;

	return strcmp(ids[*(const size_t *)a].id, ids[*(const size_t *)b].id);
}

static void index_ids(struct dp_table *t)
{
	for (size_t i = 0; i < t->n_ids; i++)
		t->by_id[i] = i;
	qsort_r(t->by_id, t->n_ids, sizeof(*t->by_id), cmp_id, t->ids);
}

long dp_table_find(const struct dp_table *t, const char *id)
{
	size_t lo = 0, hi = t->n_ids;

	/* Hand-rolled bsearch: no global state, so lookups may run on any thread. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(id, t->ids[t->by_id[mid]].id);

		if (c == 0)
			return (long)t->by_id[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static struct dp_table *table_flatten(const struct dp_table *t);

size_t dp_list_ids_needed(size_t n_hcas, unsigned shared)
{
	if (shared <= 1)
		return n_hcas;
	return n_hcas > SIZE_MAX / shared ? SIZE_MAX : n_hcas * shared;
}

/* The suffix always fits: spec_device_id() leaves room for the longest. */
_Static_assert(SPEC_ID_MAX + SPEC_ID_SUFFIX_MAX <= DP_ID_MAX, "ID suffix room");
_Static_assert(DP_SHARED_MAX <= 1000, "\"-s<k>\" fits SPEC_ID_SUFFIX_MAX");

/* An empty table of n_take HCAs' room with the options in force. */
static int table_new(const struct disc_node *node, const struct dp_table_options *opts,
		     size_t n_take, unsigned replicas, struct dp_table **ret)
{
	_cleanup_(dp_table_freep) struct dp_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->dev_root = strdup(opts->dev_root ? opts->dev_root : "/dev");
	if (!t->dev_root)
		return -ENOMEM;
	t->has_rdma_cm = node->has_rdma_cm;
	t->strategies = opts->strategies
			    ? opts->strategies
			    : BRIDGE_STRATEGY_CDI_CRI | BRIDGE_STRATEGY_CDI_ANNOTATIONS;
	t->shared = replicas;
	t->nccl_env = opts->nccl_env;
	t->hcas = calloc(n_take ? n_take : 1, sizeof(*t->hcas));
	t->ids = calloc(n_take ? n_take * replicas : 1, sizeof(*t->ids));
	if (!t->hcas || !t->ids)
		return -ENOMEM;
	*ret = TAKE_PTR(t);
	return 0;
}

/* The HCA of each device taken and its IDs, "-s<k>" appended in shared mode. */
static int table_add_hcas(struct dp_table *t, const struct disc_node *node, const bool *take,
			  const struct dp_table_options *opts)
{
	const char *kind = opts->kind ? opts->kind : SPEC_DEFAULT_KIND;
	int r;

	for (size_t i = 0; i < node->n_devices; i++) {
		char base[SPEC_ID_MAX + 1];
		size_t bl;

		if (!take[i])
			continue;
		/* The ID rule lives in specs/: the spec names each HCA by the same ID. */
		spec_device_id(node, i, base);
		bl = strlen(base);
		r = hca_init(&t->hcas[t->n_hcas], &node->devices[i], kind, opts->with_mad);
		if (r < 0) {
			t->n_hcas++; /* so the partially filled entry is freed */
			return r;
		}
		for (unsigned k = 0; k < t->shared; k++) {
			struct dp_id *id = &t->ids[t->n_ids++];

			/* spec_device_id() left room for the suffix. */
			memcpy(id->id, base, bl + 1);
			if (t->shared > 1)
				snprintf(id->id + bl, sizeof(id->id) - bl, "-s%u", k);
			id->hca = t->n_hcas;
		}
		t->n_hcas++;
	}
	return 0;
}

/*
 * Indexes the IDs. A collision can only come from hostile names (an RDMA name that looks
 * like a PCI address): the later device is left out rather than advertise an ambiguous
 * ID. Dropping IDs cannot create new collisions, so one pass suffices.
 */
static int table_index(struct dp_table *t)
{
	_cleanup_free_ bool *drop = NULL;
	size_t w = 0;

	t->by_id = calloc(t->n_ids ? t->n_ids : 1, sizeof(*t->by_id));
	drop = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*drop));
	if (!t->by_id || !drop)
		return -ENOMEM;
	index_ids(t);
	for (size_t i = 1; i < t->n_ids; i++) {
		const struct dp_id *a = &t->ids[t->by_id[i - 1]], *b = &t->ids[t->by_id[i]];

		if (strcmp(a->id, b->id) == 0 && a->hca != b->hca)
			drop[a->hca > b->hca ? a->hca : b->hca] = true;
	}
	for (size_t j = 0; j < t->n_hcas; j++)
		t->n_skipped += drop[j];
	if (t->n_skipped == 0)
		return 0;
	for (size_t j = 0; j < t->n_ids; j++)
		if (!drop[t->ids[j].hca])
			t->ids[w++] = t->ids[j];
	t->n_ids = w;
	index_ids(t);
	return 0;
}

int dp_table_build(const struct disc_node *node, const struct spec_names *defined,
		   const struct dp_table_options *opts, struct dp_table **ret_table)
{
	_cleanup_(dp_table_freep) struct dp_table *t = NULL;
	unsigned replicas = opts->shared > 1 ? opts->shared : 1;
	size_t n_take = 0;
	_cleanup_free_ bool *take = NULL;
	int r;

	if (opts->shared > DP_SHARED_MAX)
		return -EINVAL;
	take = calloc(node->n_devices ? node->n_devices : 1, sizeof(*take));
	if (!take)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *dev = &node->devices[i];

		take[i] = disc_device_usable(dev) && (!opts->include || opts->include[i]) &&
			  (!defined || spec_names_has(defined, dev->name));
		n_take += take[i];
	}
	/* Before anything is allocated: the list must fit the kubelet's receive limit. */
	if (dp_list_ids_needed(n_take, replicas) > DP_LIST_IDS_MAX)
		return -E2BIG;

	r = table_new(node, opts, n_take, replicas, &t);
	if (r >= 0)
		r = table_add_hcas(t, node, take, opts);
	if (r >= 0)
		r = table_index(t);
	if (r < 0)
		return r;
	*ret_table = table_flatten(t);
	return *ret_table ? 0 : -ENOMEM;
}

static char *pool_copy(char **pool, const char *s)
{
	size_t l = strlen(s) + 1;
	char *r = memcpy(*pool, s, l);

	*pool += l;
	return r;
}

/*
 * Copies a table into one allocation. The table lives as long as the daemon serves it,
 * while discovery and the spec tree around its construction are freed right after: a
 * table of thousands of small strings spread among them would pin most of the heap's
 * pages (fragmentation), one block pins only its own.
 */
static struct dp_table *table_flatten(const struct dp_table *t)
{
	size_t strings = strlen(t->dev_root) + 1, n_nodes = 0, size;
	struct dp_table *f;
	char **np, *sp;

	for (size_t i = 0; i < t->n_hcas; i++) {
		const struct dp_hca *h = &t->hcas[i];

		strings +=
		    strlen(h->name) + strlen(h->qualified) + strlen(h->pci) + strlen(h->ucx) + 4;
		n_nodes += h->n_nodes;
		for (size_t k = 0; k < h->n_nodes; k++)
			strings += strlen(h->nodes[k]) + 1;
	}
	size = sizeof(*f) + t->n_hcas * sizeof(*f->hcas) + t->n_ids * sizeof(*f->ids) +
	       t->n_ids * sizeof(*f->by_id) + n_nodes * sizeof(char *) + strings;
	f = malloc(size);
	if (!f)
		return NULL;
	*f = *t;
	f->flat = true;
	f->hcas = (struct dp_hca *)(f + 1);
	f->ids = (struct dp_id *)(f->hcas + t->n_hcas);
	f->by_id = (size_t *)(f->ids + t->n_ids);
	np = (char **)(f->by_id + t->n_ids);
	sp = (char *)(np + n_nodes);
	memcpy(f->hcas, t->hcas, t->n_hcas * sizeof(*f->hcas));
	memcpy(f->ids, t->ids, t->n_ids * sizeof(*f->ids));
	memcpy(f->by_id, t->by_id, t->n_ids * sizeof(*f->by_id));
	f->dev_root = pool_copy(&sp, t->dev_root);
	for (size_t i = 0; i < t->n_hcas; i++) {
		const struct dp_hca *h = &t->hcas[i];
		struct dp_hca *g = &f->hcas[i];

		g->name = pool_copy(&sp, h->name);
		g->qualified = pool_copy(&sp, h->qualified);
		g->pci = pool_copy(&sp, h->pci);
		g->ucx = pool_copy(&sp, h->ucx);
		g->nodes = np;
		for (size_t k = 0; k < h->n_nodes; k++)
			*np++ = pool_copy(&sp, h->nodes[k]);
	}
	return f;
}

int dp_list_response(const struct dp_table *t, V1beta1__ListAndWatchResponse **ret)
{
	V1beta1__ListAndWatchResponse *resp = malloc(sizeof(*resp));
	int r = -ENOMEM;

	if (!resp)
		return -ENOMEM;
	v1beta1__list_and_watch_response__init(resp);
	resp->devices = calloc(t->n_ids ? t->n_ids : 1, sizeof(*resp->devices));
	if (!resp->devices)
		goto fail;
	for (size_t i = 0; i < t->n_ids; i++) {
		const struct dp_hca *h = &t->hcas[t->ids[i].hca];
		V1beta1__Device *d = malloc(sizeof(*d));

		if (!d)
			goto fail;
		v1beta1__device__init(d);
		resp->devices[resp->n_devices++] = d;
		d->id = strdup(t->ids[i].id);
		d->health = strdup(h->healthy ? "Healthy" : "Unhealthy");
		if (!d->id || !d->health)
			goto fail;
		/* No topology at all when the NUMA node is unknown: "no preference". */
		if (h->numa_node < 0)
			continue;
		d->topology = malloc(sizeof(*d->topology));
		if (!d->topology)
			goto fail;
		v1beta1__topology_info__init(d->topology);
		d->topology->nodes = malloc(sizeof(*d->topology->nodes));
		if (!d->topology->nodes)
			goto fail;
		d->topology->nodes[0] = malloc(sizeof(**d->topology->nodes));
		if (!d->topology->nodes[0])
			goto fail;
		v1beta1__numanode__init(d->topology->nodes[0]);
		d->topology->n_nodes = 1;
		d->topology->nodes[0]->id = h->numa_node;
	}
	*ret = resp;
	return 0;
fail:
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}
