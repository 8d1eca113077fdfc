/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocate and GetPreferredAllocation over the device table. Everything in a request is
 * hostile: IDs are looked up, never trusted; work is O(n log n) in the request size.
 * Responses are built from malloc'd parts so protobuf_c_message_free_unpacked frees them.
 */
#include <stdio.h>
#include <string.h>

#include "bridge-internal.h"
#include "config.h"

enum join_field {
	JOIN_NAME,
	JOIN_QUALIFIED,
	JOIN_UCX,
};

static const char *field_of(const struct dp_hca *h, enum join_field f)
{
	return f == JOIN_QUALIFIED ? h->qualified : f == JOIN_UCX ? h->ucx : h->name;
}

/* The value of key (cfg_env_value(), NULL: the plain list) of one field of each selected
 * HCA. */
static char *join(const struct dp_table *t, const size_t *sel, size_t n, enum join_field f,
		  const char *key)
{
	_cleanup_free_ const char **items = calloc(n ? n : 1, sizeof(*items));

	if (!items)
		return NULL;
	for (size_t i = 0; i < n; i++)
		items[i] = field_of(&t->hcas[sel[i]], f);
	return cfg_env_value(key, items, n);
}

static V1beta1__ContainerAllocateResponse__EnvsEntry *new_entry(char *key, char *value)
{
	V1beta1__ContainerAllocateResponse__EnvsEntry *e;

	if (!key || !value)
		goto fail;
	e = malloc(sizeof(*e));
	if (!e)
		goto fail;
	v1beta1__container_allocate_response__envs_entry__init(e);
	e->key = key;
	e->value = value;
	return e;
fail:
	free(key);
	free(value);
	return NULL;
}

/* Appends key=value (value malloc'd, taken over even on failure) to c->envs. */
static int add_env(V1beta1__ContainerAllocateResponse *c, const char *key, char *value)
{
	V1beta1__ContainerAllocateResponse__EnvsEntry *e = new_entry(strdup(key), value);

	if (!e)
		return -ENOMEM;
	c->envs[c->n_envs++] = e;
	return 0;
}

static int add_device_spec(V1beta1__ContainerAllocateResponse *c, const char *dev_root,
			   const char *node)
{
	V1beta1__DeviceSpec *d = malloc(sizeof(*d));

	if (!d)
		return -ENOMEM;
	v1beta1__device_spec__init(d);
	c->devices[c->n_devices++] = d;
	d->container_path = strdup_printf(DP_CONTAINER_DEV_DIR "/%s", node);
	d->host_path = strdup_printf("%s/infiniband/%s", dev_root, node);
	d->permissions = strdup("rw");
	if (!d->container_path || !d->host_path || !d->permissions)
		return -ENOMEM;
	return 0;
}

static int add_cdi_devices(const struct dp_table *t, const size_t *sel, size_t n,
			   V1beta1__ContainerAllocateResponse *c)
{
	c->cdi_devices = calloc(n, sizeof(*c->cdi_devices));
	if (!c->cdi_devices)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		V1beta1__CDIDevice *d = malloc(sizeof(*d));

		if (!d)
			return -ENOMEM;
		v1beta1__cdidevice__init(d);
		c->cdi_devices[c->n_cdi_devices++] = d;
		d->name = strdup(t->hcas[sel[i]].qualified);
		if (!d->name)
			return -ENOMEM;
	}
	return 0;
}

static int add_annotation(const struct dp_table *t, const V1beta1__ContainerAllocateRequest *creq,
			  const size_t *sel, size_t n, V1beta1__ContainerAllocateResponse *c)
{
	char suffix[DP_ANNOTATION_SUFFIX_MAX + 1];

	dp_annotation_suffix(creq->devices_ids, creq->n_devices_ids, suffix);
	/* The map entry types of envs and annotations are identical in layout. */
	c->annotations = calloc(1, sizeof(*c->annotations));
	if (!c->annotations)
		return -ENOMEM;
	c->annotations[0] = (V1beta1__ContainerAllocateResponse__AnnotationsEntry *)new_entry(
	    strdup_printf(DP_ANNOTATION_PREFIX "%s", suffix), join(t, sel, n, JOIN_QUALIFIED, NULL));
	if (!c->annotations[0])
		return -ENOMEM;
	c->annotations[0]->base.descriptor =
	    &v1beta1__container_allocate_response__annotations_entry__descriptor;
	c->n_annotations = 1;
	return 0;
}

static int add_device_specs(const struct dp_table *t, const size_t *sel, size_t n,
			    V1beta1__ContainerAllocateResponse *c)
{
	size_t total = t->has_rdma_cm ? 1 : 0;

	for (size_t i = 0; i < n; i++)
		total += t->hcas[sel[i]].n_nodes;
	c->devices = calloc(total ? total : 1, sizeof(*c->devices));
	if (!c->devices)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = &t->hcas[sel[i]];

		for (size_t k = 0; k < h->n_nodes; k++)
			if (add_device_spec(c, t->dev_root, h->nodes[k]) < 0)
				return -ENOMEM;
	}
	if (t->has_rdma_cm && add_device_spec(c, t->dev_root, "rdma_cm") < 0)
		return -ENOMEM;
	return 0;
}

static int fill_container(const struct dp_table *t, const V1beta1__ContainerAllocateRequest *creq,
			  const size_t *sel, size_t n, V1beta1__ContainerAllocateResponse *c)
{
	c->envs = calloc(3, sizeof(*c->envs));
	if (!c->envs)
		return -ENOMEM;
	if (add_env(c, CFG_ENV_DEVICES, join(t, sel, n, JOIN_NAME, CFG_ENV_DEVICES)) < 0)
		return -ENOMEM;
	if (t->nccl_env &&
	    (add_env(c, CFG_ENV_NCCL_IB_HCA, join(t, sel, n, JOIN_NAME, CFG_ENV_NCCL_IB_HCA)) < 0 ||
	     add_env(c, CFG_ENV_UCX_NET_DEVICES,
		     join(t, sel, n, JOIN_UCX, CFG_ENV_UCX_NET_DEVICES)) < 0))
		return -ENOMEM;
	if ((t->strategies & BRIDGE_STRATEGY_CDI_CRI) && add_cdi_devices(t, sel, n, c) < 0)
		return -ENOMEM;
	if ((t->strategies & BRIDGE_STRATEGY_CDI_ANNOTATIONS) &&
	    add_annotation(t, creq, sel, n, c) < 0)
		return -ENOMEM;
	if ((t->strategies & BRIDGE_STRATEGY_DEVICE_SPECS) && add_device_specs(t, sel, n, c) < 0)
		return -ENOMEM;
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* What the container requests of one Allocate call share; a mark is valid where it equals
 * the current container request's (its index + 1). */
struct alloc_state {
	uint32_t *id_mark;  /* per ID: named by this container request */
	uint32_t *hca_mark; /* per HCA: selected for this container request */
	size_t *sel;	    /* the HCAs of this container request */
	size_t total;	    /* IDs named so far over all container requests */
};

/* Checks every ID of container request c and puts its HCAs, each once, into st->sel in
 * table order (the same set always gives the same response). */
static int select_hcas(const struct dp_table *t, const V1beta1__ContainerAllocateRequest *creq,
		       size_t c, struct alloc_state *st, size_t *ret_n, struct rc_error **err)
{
	uint32_t mark = (uint32_t)c + 1;
	size_t n_sel = 0;
	char buf[80];

	if (!creq || creq->n_devices_ids == 0)
		return rc_error_set(err, -EINVAL, "container request %zu has no device IDs", c);
	for (size_t i = 0; i < creq->n_devices_ids; i++) {
		long idx = dp_table_find(t, creq->devices_ids[i]);
		const struct dp_hca *h;

		if (idx < 0)
			return rc_error_set(err, -EINVAL, "unknown device ID %s",
					    text_quote(buf, sizeof(buf), creq->devices_ids[i],
						       strlen(creq->devices_ids[i])));
		if (st->id_mark[idx] == mark)
			return rc_error_set(err, -EINVAL, "duplicate device ID \"%s\"",
					    t->ids[idx].id);
		st->id_mark[idx] = mark;
		/* The response grows with the IDs of all containers together: no more than the
		 * node has, or a valid ID repeated in 100,000 container requests would answer
		 * with 100,000 copies of everything. */
		if (++st->total > t->n_ids)
			return rc_error_set(err, -EINVAL,
					    "request names more than the %zu device IDs advertised",
					    t->n_ids);
		h = &t->hcas[t->ids[idx].hca];
		if (!h->healthy)
			return rc_error_set(err, -EINVAL, "device ID \"%s\" (%s) is unhealthy",
					    t->ids[idx].id, h->name);
		/* Shared mode: several IDs of one HCA still mean that HCA once. */
		if (st->hca_mark[t->ids[idx].hca] != mark) {
			st->hca_mark[t->ids[idx].hca] = mark;
			st->sel[n_sel++] = t->ids[idx].hca;
		}
	}
	qsort(st->sel, n_sel, sizeof(*st->sel), cmp_size);
	*ret_n = n_sel;
	return 0;
}

int dp_allocate(const struct dp_table *t, const V1beta1__AllocateRequest *req,
		V1beta1__AllocateResponse **ret, struct rc_error **err)
{
	_cleanup_free_ uint32_t *id_mark = NULL, *hca_mark = NULL;
	_cleanup_free_ size_t *sel = NULL;
	V1beta1__AllocateResponse *resp = NULL;
	struct alloc_state st;
	int r = -ENOMEM;

	if (req->n_container_requests == 0)
		return rc_error_set(err, -EINVAL, "empty AllocateRequest: no container requests");
	id_mark = calloc(t->n_ids ? t->n_ids : 1, sizeof(*id_mark));
	hca_mark = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*hca_mark));
	sel = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*sel));
	resp = malloc(sizeof(*resp));
	if (!id_mark || !hca_mark || !sel || !resp) {
		free(resp);
		return rc_error_set(err, -ENOMEM, "out of memory");
	}
	st = (struct alloc_state){.id_mark = id_mark, .hca_mark = hca_mark, .sel = sel};
	v1beta1__allocate_response__init(resp);
	resp->container_responses =
	    calloc(req->n_container_requests, sizeof(*resp->container_responses));
	if (!resp->container_responses)
		goto fail;

	for (size_t c = 0; c < req->n_container_requests; c++) {
		const V1beta1__ContainerAllocateRequest *creq = req->container_requests[c];
		V1beta1__ContainerAllocateResponse *cresp;
		size_t n_sel = 0;

		r = select_hcas(t, creq, c, &st, &n_sel, err);
		if (r < 0)
			goto fail;
		r = -ENOMEM;
		cresp = malloc(sizeof(*cresp));
		if (!cresp)
			goto fail;
		v1beta1__container_allocate_response__init(cresp);
		resp->container_responses[resp->n_container_responses++] = cresp;
		r = fill_container(t, creq, sel, n_sel, cresp);
		if (r < 0)
			goto fail;
	}
	*ret = resp;
	return 0;
fail:
	if (r == -ENOMEM)
		rc_error_set(err, r, "out of memory");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}

/* ---- GetPreferredAllocation ----------------------------------------------------- */

/* The ranking is documented at dp_preferred_allocation() in bridge-internal.h. */
struct cand {
	size_t id; /* index into t->ids */
	bool link_match;
	unsigned round; /* slots of its HCA ranked before it (shared mode) */
	bool numa_match;
	unsigned depth; /* components shared with the nearest must-include device */
	bool healthy;
};

/* What the container requests of one call share: marks valid where they equal the current
 * request's mark (its index + 1), so nothing is cleared between requests. */
struct pref_marks {
	uint32_t *id;	 /* per ID: taken by this request */
	uint32_t *hca;	 /* per HCA: count is this request's */
	unsigned *count; /* per HCA: its slots ranked so far */
	uint32_t mark;
};

/* The count of HCA hi's slots ranked so far in this request. */
static unsigned *slots_of(struct pref_marks *pm, size_t hi)
{
	if (pm->hca[hi] != pm->mark) {
		pm->hca[hi] = pm->mark;
		pm->count[hi] = 0;
	}
	return &pm->count[hi];
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->link_match != y->link_match)
		return x->link_match ? -1 : 1;
	if (x->round != y->round)
		return x->round < y->round ? -1 : 1;
	if (x->numa_match != y->numa_match)
		return x->numa_match ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	if (x->healthy != y->healthy)
		return x->healthy ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_cand_id(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

static const struct dp_hca *hca_of(const struct dp_table *t, size_t id)
{
	return &t->hcas[t->ids[id].hca];
}

/* Counts HCAs, not slots: candidates are in table order, an HCA's slots adjacent. */
static bool first_slot(const struct dp_table *t, const struct cand *c, size_t i)
{
	return i == 0 || t->ids[c[i].id].hca != t->ids[c[i - 1].id].hca;
}

/* The link layer with most healthy candidate HCAs; a tie goes to the one seen first. */
static int anchor_link(const struct dp_table *t, const struct cand *c, size_t n)
{
	size_t count[DP_LINK_ETHERNET + 1] = {0};
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (c[i].healthy && first_slot(t, c, i))
			count[hca_of(t, c[i].id)->link]++;
	for (size_t i = 0; i < n; i++) {
		int l = (int)hca_of(t, c[i].id)->link;

		if (c[i].healthy && (best < 0 || count[l] > count[best]))
			best = l;
	}
	return best;
}

/* The NUMA node with most healthy candidate HCAs of link layer link (-1: none known). */
static int anchor_numa(const struct dp_table *t, const struct cand *c, size_t n, int link)
{
	_cleanup_free_ int *numas = malloc((n ? n : 1) * sizeof(int));
	size_t m = 0, best_count = 0;
	int best = -1;

	if (!numas)
		return -1; /* advisory: without the NUMA preference, not without an answer */
	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = hca_of(t, c[i].id);

		if (c[i].healthy && first_slot(t, c, i) && (int)h->link == link &&
		    h->numa_node >= 0)
			numas[m++] = h->numa_node;
	}
	qsort(numas, m, sizeof(int), cmp_int);
	for (size_t i = 0; i < m;) {
		size_t j = i;

		while (j < m && numas[j] == numas[i])
			j++;
		if (j - i > best_count) {
			best_count = j - i;
			best = numas[i];
		}
		i = j;
	}
	return best;
}

/*
 * The anchor when nothing is must-include: healthy, of the link layer with most healthy
 * candidates (so a multi-device request can stay on one fabric), on the NUMA node with
 * most of them (so it fits on one node), lowest in table order. c is in table order.
 */
static size_t pick_anchor(const struct dp_table *t, const struct cand *c, size_t n)
{
	int link = anchor_link(t, c, n), numa = link >= 0 ? anchor_numa(t, c, n, link) : -1;
	int best_score = -1;
	size_t best = 0;

	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = hca_of(t, c[i].id);
		int score = (c[i].healthy ? 4 : 0) + ((int)h->link == link ? 2 : 0) +
			    (numa >= 0 && h->numa_node == numa);

		/* Strictly greater: the first of equals in table order wins. */
		if (score > best_score) {
			best_score = score;
			best = i;
		}
	}
	return best;
}

static int push_id(const struct dp_table *t, size_t id,
		   V1beta1__ContainerPreferredAllocationResponse *out)
{
	out->deviceids[out->n_deviceids] = strdup(t->ids[id].id);
	if (!out->deviceids[out->n_deviceids])
		return -ENOMEM;
	out->n_deviceids++;
	return 0;
}

/* Link layer, slot round, NUMA match and switch depth of every candidate. */
static int rank_candidates(const struct dp_table *t, const size_t *must, size_t n_must,
			   struct cand *cand, size_t n_cand, struct pref_marks *pm)
{
	_cleanup_free_ uint64_t *keys = malloc(n_must * DP_PATH_DEPTH_MAX * sizeof(*keys));
	_cleanup_free_ int *numa = malloc(n_must * sizeof(*numa));
	size_t n_keys = 0, n_numa = 0;
	unsigned links = 0;

	if (!numa || !keys)
		return -ENOMEM;
	/* The must-include set's link layers, slots per HCA, NUMA nodes and path prefixes. */
	for (size_t i = 0; i < n_must; i++) {
		const struct dp_hca *h = hca_of(t, must[i]);

		links |= 1u << h->link;
		(*slots_of(pm, t->ids[must[i]].hca))++;
		if (h->numa_node >= 0)
			numa[n_numa++] = h->numa_node;
		for (unsigned d = 0; d < h->depth; d++)
			keys[n_keys++] = h->prefix[d] ^ d;
	}
	qsort(numa, n_numa, sizeof(*numa), cmp_int);
	qsort(keys, n_keys, sizeof(*keys), cmp_u64);

	/* cand is in table order: an HCA's free slots get rounds after its must-include ones. */
	for (size_t i = 0; i < n_cand; i++) {
		const struct dp_hca *h = hca_of(t, cand[i].id);

		cand[i].round = (*slots_of(pm, t->ids[cand[i].id].hca))++;
		cand[i].link_match = links & (1u << h->link);
		cand[i].numa_match = h->numa_node >= 0 &&
				     bsearch(&h->numa_node, numa, n_numa, sizeof(*numa), cmp_int);
		cand[i].depth = 0;
		for (unsigned d = h->depth; d > 0; d--) {
			uint64_t k = h->prefix[d - 1] ^ (d - 1);

			if (bsearch(&k, keys, n_keys, sizeof(*keys), cmp_u64)) {
				cand[i].depth = d;
				break;
			}
		}
	}
	return 0;
}

/* Nothing must-include: the choice is anchored on one candidate (answered first, moved
 * from cand to must) and the rest ranked around it. */
static int take_anchor(const struct dp_table *t, size_t *must, size_t *n_must, struct cand *cand,
		       size_t *n_cand, V1beta1__ContainerPreferredAllocationResponse *out)
{
	size_t a = pick_anchor(t, cand, *n_cand);

	must[(*n_must)++] = cand[a].id;
	if (push_id(t, cand[a].id, out) < 0)
		return -ENOMEM;
	memmove(&cand[a], &cand[a + 1], (*n_cand - a - 1) * sizeof(*cand));
	(*n_cand)--;
	return 0;
}

static int prefer_one(const struct dp_table *t,
		      const V1beta1__ContainerPreferredAllocationRequest *q, struct pref_marks *pm,
		      V1beta1__ContainerPreferredAllocationResponse *out)
{
	size_t n_must = 0, n_cand = 0, want, cap;
	_cleanup_free_ size_t *must = NULL;
	_cleanup_free_ struct cand *cand = NULL;
	int r;

	must = malloc((q->n_must_include_deviceids + 1) * sizeof(*must));
	cand = malloc((q->n_available_deviceids + 1) * sizeof(*cand));
	if (!must || !cand)
		return -ENOMEM;

	for (size_t i = 0; i < q->n_must_include_deviceids; i++) {
		long idx = dp_table_find(t, q->must_include_deviceids[i]);

		if (idx >= 0 && pm->id[idx] != pm->mark) {
			pm->id[idx] = pm->mark;
			must[n_must++] = (size_t)idx;
		}
	}
	for (size_t i = 0; i < q->n_available_deviceids; i++) {
		long idx = dp_table_find(t, q->available_deviceids[i]);

		if (idx >= 0 && pm->id[idx] != pm->mark) {
			pm->id[idx] = pm->mark;
			cand[n_cand++] =
			    (struct cand){.id = (size_t)idx, .healthy = hca_of(t, idx)->healthy};
		}
	}
	/* Table order: the answer does not depend on the request's order. */
	qsort(cand, n_cand, sizeof(*cand), cmp_cand_id);

	want = q->allocation_size > 0 ? (size_t)q->allocation_size : 0;
	cap = n_must + (want > n_must ? want - n_must : 0);
	if (cap > n_must + n_cand)
		cap = n_must + n_cand;
	out->deviceids = calloc(cap ? cap : 1, sizeof(*out->deviceids));
	if (!out->deviceids)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++)
		if (push_id(t, must[i], out) < 0)
			return -ENOMEM;
	if (out->n_deviceids >= cap || n_cand == 0)
		return 0;

	if (n_must == 0) {
		if (take_anchor(t, must, &n_must, cand, &n_cand, out) < 0)
			return -ENOMEM;
		if (out->n_deviceids >= cap)
			return 0;
	}

	r = rank_candidates(t, must, n_must, cand, n_cand, pm);
	if (r < 0)
		return r;
	qsort(cand, n_cand, sizeof(*cand), cmp_cand);
	for (size_t i = 0; i < n_cand && out->n_deviceids < cap; i++)
		if (push_id(t, cand[i].id, out) < 0)
			return -ENOMEM;
	return 0;
}

int dp_preferred_allocation(const struct dp_table *t,
			    const V1beta1__PreferredAllocationRequest *req,
			    V1beta1__PreferredAllocationResponse **ret, struct rc_error **err)
{
	_cleanup_free_ uint32_t *id_mark = NULL, *hca_mark = NULL;
	_cleanup_free_ unsigned *hca_count = NULL;
	V1beta1__PreferredAllocationResponse *resp = NULL;
	struct pref_marks pm;
	int r = -ENOMEM;

	/* Each container request gets a response, even an empty one: bound their number. */
	if (req->n_container_requests > DP_CONTAINERS_MAX)
		return rc_error_set(err, -EINVAL, "%zu container requests, at most %d",
				    req->n_container_requests, DP_CONTAINERS_MAX);
	id_mark = calloc(t->n_ids ? t->n_ids : 1, sizeof(*id_mark));
	hca_mark = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*hca_mark));
	hca_count = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*hca_count));
	resp = malloc(sizeof(*resp));
	if (!id_mark || !hca_mark || !hca_count || !resp) {
		free(resp);
		return rc_error_set(err, -ENOMEM, "out of memory");
	}
	pm = (struct pref_marks){.id = id_mark, .hca = hca_mark, .count = hca_count};
	v1beta1__preferred_allocation_response__init(resp);
	resp->container_responses =
	    calloc(req->n_container_requests ? req->n_container_requests : 1,
		   sizeof(*resp->container_responses));
	if (!resp->container_responses)
		goto fail;
	for (size_t c = 0; c < req->n_container_requests; c++) {
		V1beta1__ContainerPreferredAllocationResponse *o = malloc(sizeof(*o));

		if (!o)
			goto fail;
		v1beta1__container_preferred_allocation_response__init(o);
		resp->container_responses[resp->n_container_responses++] = o;
		if (!req->container_requests[c])
			continue;
		pm.mark = (uint32_t)c + 1;
		r = prefer_one(t, req->container_requests[c], &pm, o);
		if (r < 0)
			goto fail;
	}
	*ret = resp;
	return 0;
fail:
	rc_error_set(err, r, "out of memory");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}
