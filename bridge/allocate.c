/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocate and GetPreferredAllocation over the device table. Everything in a request is
 * hostile: IDs are looked up, never trusted; work is O(n log n) in the request size.
 * Responses are built from malloc'd parts so protobuf_c_message_free_unpacked frees them.
 */
#include <stdio.h>
#include <string.h>

#include "bridge-internal.h"

/* Joins n strings picked by get(i) with ','. */
static char *join(const struct dp_table *t, const size_t *sel, size_t n, bool qualified)
{
	size_t len = 1, off = 0;
	char *s;

	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = &t->hcas[sel[i]];

		len += strlen(qualified ? h->qualified : h->name) + 1;
	}
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = &t->hcas[sel[i]];
		const char *v = qualified ? h->qualified : h->name;
		size_t l = strlen(v);

		if (i > 0)
			s[off++] = ',';
		memcpy(s + off, v, l + 1);
		off += l;
	}
	return s;
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

static int fill_container(const struct dp_table *t, const V1beta1__ContainerAllocateRequest *creq,
			  const size_t *sel, size_t n, V1beta1__ContainerAllocateResponse *c)
{
	c->envs = calloc(1, sizeof(*c->envs));
	if (!c->envs)
		return -ENOMEM;
	c->envs[0] = new_entry(strdup(DP_ENV_DEVICES), join(t, sel, n, false));
	if (!c->envs[0])
		return -ENOMEM;
	c->n_envs = 1;

	if (t->strategies & BRIDGE_STRATEGY_CDI_CRI) {
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
	}

	if (t->strategies & BRIDGE_STRATEGY_CDI_ANNOTATIONS) {
		char suffix[DP_ANNOTATION_SUFFIX_MAX + 1];

		dp_annotation_suffix(creq->devices_ids, creq->n_devices_ids, suffix);
		/* The map entry types of envs and annotations are identical in layout. */
		c->annotations = calloc(1, sizeof(*c->annotations));
		if (!c->annotations)
			return -ENOMEM;
		c->annotations[0] =
		    (V1beta1__ContainerAllocateResponse__AnnotationsEntry *)new_entry(
			strdup_printf(DP_ANNOTATION_PREFIX "%s", suffix), join(t, sel, n, true));
		if (!c->annotations[0])
			return -ENOMEM;
		c->annotations[0]->base.descriptor =
		    &v1beta1__container_allocate_response__annotations_entry__descriptor;
		c->n_annotations = 1;
	}

	if (t->strategies & BRIDGE_STRATEGY_DEVICE_SPECS) {
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
	}
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

int dp_allocate(const struct dp_table *t, const V1beta1__AllocateRequest *req,
		V1beta1__AllocateResponse **ret, char *err, size_t errlen)
{
	_cleanup_free_ uint32_t *id_mark = NULL, *hca_mark = NULL;
	_cleanup_free_ size_t *sel = NULL;
	V1beta1__AllocateResponse *resp = NULL;
	size_t total = 0;
	char buf[80];
	int r = -ENOMEM;

	if (req->n_container_requests == 0) {
		snprintf(err, errlen, "empty AllocateRequest: no container requests");
		return -EINVAL;
	}
	id_mark = calloc(t->n_ids ? t->n_ids : 1, sizeof(*id_mark));
	hca_mark = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*hca_mark));
	sel = calloc(t->n_hcas ? t->n_hcas : 1, sizeof(*sel));
	resp = malloc(sizeof(*resp));
	if (!id_mark || !hca_mark || !sel || !resp) {
		free(resp);
		return -ENOMEM;
	}
	v1beta1__allocate_response__init(resp);
	resp->container_responses =
	    calloc(req->n_container_requests, sizeof(*resp->container_responses));
	if (!resp->container_responses)
		goto fail;

	for (size_t c = 0; c < req->n_container_requests; c++) {
		const V1beta1__ContainerAllocateRequest *creq = req->container_requests[c];
		uint32_t mark = (uint32_t)c + 1;
		V1beta1__ContainerAllocateResponse *cresp;
		size_t n_sel = 0;

		if (!creq || creq->n_devices_ids == 0) {
			snprintf(err, errlen, "container request %zu has no device IDs", c);
			r = -EINVAL;
			goto fail;
		}
		for (size_t i = 0; i < creq->n_devices_ids; i++) {
			const char *id = creq->devices_ids[i];
			long idx = dp_table_find(t, id);
			const struct dp_hca *h;

			if (idx < 0) {
				snprintf(err, errlen, "unknown device ID \"%s\"",
					 dp_sanitize(id, buf, sizeof(buf)));
				r = -EINVAL;
				goto fail;
			}
			if (id_mark[idx] == mark) {
				snprintf(err, errlen, "duplicate device ID \"%s\"", t->ids[idx].id);
				r = -EINVAL;
				goto fail;
			}
			id_mark[idx] = mark;
			/* The response grows with the IDs of all containers together: no more
			 * than the node has, or a valid ID repeated in 100,000 container
			 * requests would answer with 100,000 copies of everything. */
			if (++total > t->n_ids) {
				snprintf(err, errlen,
					 "request names more than the %zu device IDs "
					 "advertised",
					 t->n_ids);
				r = -EINVAL;
				goto fail;
			}
			h = &t->hcas[t->ids[idx].hca];
			if (!h->healthy) {
				snprintf(err, errlen, "device ID \"%s\" (%s) is unhealthy",
					 t->ids[idx].id, h->name);
				r = -EINVAL;
				goto fail;
			}
			/* Shared mode: several IDs of one HCA still mean that HCA once. */
			if (hca_mark[t->ids[idx].hca] != mark) {
				hca_mark[t->ids[idx].hca] = mark;
				sel[n_sel++] = t->ids[idx].hca;
			}
		}
		/* Table order: the same set always gives the same response. */
		qsort(sel, n_sel, sizeof(*sel), cmp_size);

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
		snprintf(err, errlen, "out of memory");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}

/* ---- GetPreferredAllocation ----------------------------------------------------- */

struct cand {
	size_t id; /* index into t->ids */
	bool numa_match;
	unsigned depth; /* components shared with the nearest must-include device */
	bool healthy;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->numa_match != y->numa_match)
		return x->numa_match ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	if (x->healthy != y->healthy)
		return x->healthy ? -1 : 1;
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

/* The anchor when nothing is must-include: healthy, on the NUMA node with the most
 * healthy candidates (so a multi-device request fits on one node), lowest index. */
static size_t pick_anchor(const struct dp_table *t, const struct cand *c, size_t n)
{
	_cleanup_free_ int *numas = malloc((n ? n : 1) * sizeof(int));
	int best_numa = -1;
	size_t best_count = 0, best = 0;

	if (numas) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (c[i].healthy && t->hcas[t->ids[c[i].id].hca].numa_node >= 0)
				numas[m++] = t->hcas[t->ids[c[i].id].hca].numa_node;
		qsort(numas, m, sizeof(int), cmp_int);
		for (size_t i = 0; i < m;) {
			size_t j = i;

			while (j < m && numas[j] == numas[i])
				j++;
			if (j - i > best_count) {
				best_count = j - i;
				best_numa = numas[i];
			}
			i = j;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct dp_hca *h = &t->hcas[t->ids[c[i].id].hca];
		const struct dp_hca *b = &t->hcas[t->ids[c[best].id].hca];
		int score = (h->healthy ? 2 : 0) + (best_numa >= 0 && h->numa_node == best_numa);
		int bscore = (b->healthy ? 2 : 0) + (best_numa >= 0 && b->numa_node == best_numa);

		if (score > bscore || (score == bscore && c[i].id < c[best].id))
			best = i;
	}
	return best;
}

static int prefer_one(const struct dp_table *t,
		      const V1beta1__ContainerPreferredAllocationRequest *q, uint32_t *id_mark,
		      uint32_t mark, V1beta1__ContainerPreferredAllocationResponse *out)
{
	size_t n_must = 0, n_cand = 0, n_keys = 0, n_numa = 0, want, cap;
	_cleanup_free_ size_t *must = NULL;
	_cleanup_free_ struct cand *cand = NULL;
	_cleanup_free_ uint64_t *keys = NULL;
	_cleanup_free_ int *numa = NULL;

	must = malloc((q->n_must_include_deviceids + 1) * sizeof(*must));
	cand = malloc((q->n_available_deviceids + 1) * sizeof(*cand));
	if (!must || !cand)
		return -ENOMEM;

	for (size_t i = 0; i < q->n_must_include_deviceids; i++) {
		long idx = dp_table_find(t, q->must_include_deviceids[i]);

		if (idx >= 0 && id_mark[idx] != mark) {
			id_mark[idx] = mark;
			must[n_must++] = (size_t)idx;
		}
	}
	for (size_t i = 0; i < q->n_available_deviceids; i++) {
		long idx = dp_table_find(t, q->available_deviceids[i]);

		if (idx >= 0 && id_mark[idx] != mark) {
			id_mark[idx] = mark;
			cand[n_cand++] = (struct cand){.id = (size_t)idx,
						       .healthy = t->hcas[t->ids[idx].hca].healthy};
		}
	}

	want = q->allocation_size > 0 ? (size_t)q->allocation_size : 0;
	cap = n_must + (want > n_must ? want - n_must : 0);
	if (cap > n_must + n_cand)
		cap = n_must + n_cand;
	out->deviceids = calloc(cap ? cap : 1, sizeof(*out->deviceids));
	if (!out->deviceids)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++) {
		out->deviceids[out->n_deviceids] = strdup(t->ids[must[i]].id);
		if (!out->deviceids[out->n_deviceids])
			return -ENOMEM;
		out->n_deviceids++;
	}
	if (out->n_deviceids >= cap || n_cand == 0)
		return 0;

	if (n_must == 0) {
		/* Anchor the choice on one device and rank the rest around it. */
		size_t a = pick_anchor(t, cand, n_cand);

		must[n_must++] = cand[a].id;
		out->deviceids[out->n_deviceids] = strdup(t->ids[cand[a].id].id);
		if (!out->deviceids[out->n_deviceids])
			return -ENOMEM;
		out->n_deviceids++;
		cand[a] = cand[--n_cand];
		if (out->n_deviceids >= cap)
			return 0;
	}

	/* The must-include set's NUMA nodes and path prefixes, as sorted sets. */
	numa = malloc(n_must * sizeof(*numa));
	keys = malloc(n_must * DP_PATH_DEPTH_MAX * sizeof(*keys));
	if (!numa || !keys)
		return -ENOMEM;
	for (size_t i = 0; i < n_must; i++) {
		const struct dp_hca *h = &t->hcas[t->ids[must[i]].hca];

		if (h->numa_node >= 0)
			numa[n_numa++] = h->numa_node;
		for (unsigned d = 0; d < h->depth; d++)
			keys[n_keys++] = h->prefix[d] ^ d;
	}
	qsort(numa, n_numa, sizeof(*numa), cmp_int);
	qsort(keys, n_keys, sizeof(*keys), cmp_u64);

	for (size_t i = 0; i < n_cand; i++) {
		const struct dp_hca *h = &t->hcas[t->ids[cand[i].id].hca];

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
	qsort(cand, n_cand, sizeof(*cand), cmp_cand);
	for (size_t i = 0; i < n_cand && out->n_deviceids < cap; i++) {
		out->deviceids[out->n_deviceids] = strdup(t->ids[cand[i].id].id);
		if (!out->deviceids[out->n_deviceids])
			return -ENOMEM;
		out->n_deviceids++;
	}
	return 0;
}

int dp_preferred_allocation(const struct dp_table *t,
			    const V1beta1__PreferredAllocationRequest *req,
			    V1beta1__PreferredAllocationResponse **ret, char *err, size_t errlen)
{
	_cleanup_free_ uint32_t *id_mark = NULL;
	V1beta1__PreferredAllocationResponse *resp = NULL;
	int r = -ENOMEM;

	/* Each container request gets a response, even an empty one: bound their number. */
	if (req->n_container_requests > DP_CONTAINERS_MAX) {
		snprintf(err, errlen, "%zu container requests, at most %d",
			 req->n_container_requests, DP_CONTAINERS_MAX);
		return -EINVAL;
	}
	id_mark = calloc(t->n_ids ? t->n_ids : 1, sizeof(*id_mark));
	resp = malloc(sizeof(*resp));
	if (!id_mark || !resp) {
		free(resp);
		return -ENOMEM;
	}
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
		r = prefer_one(t, req->container_requests[c], id_mark, (uint32_t)c + 1, o);
		if (r < 0)
			goto fail;
	}
	*ret = resp;
	return 0;
fail:
	snprintf(err, errlen, "out of memory");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}
