/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slices: the devices of the node's ResourceSlices and the publisher's pure decisions
 * (cut, specs, plan; slices-internal.h).
 *
 * The attributes of a device (docs/dra.md is written from this table; keep them equal).
 * <driver> is the --driver-name, e.g. "rdma.example"; "first port" is the device's lowest
 * numbered port.
 *
 * | key                                | type   | value                                   | omitted
 * when            |
 * |------------------------------------|--------|-----------------------------------------|-------------------------|
 * | resource.kubernetes.io/pcieRoot    | string | first path element under /sys/devices   | not on
 * PCI              | |                                    |        | of the PCI function,
 * "pci0000:3a"       |                         | | resource.kubernetes.io/pciBusID    | string |
 * the function's BDF, "0000:3b:00.0"      | not on PCI              | |
 * resource.kubernetes.io/numaNode    | int    | sysfs numa_node                         | -1
 * (unknown)            | | <driver>/rdmaDevice                | string | RDMA device name, "mlx5_2"
 * | never                   | | <driver>/linkLayer                 | string | first port:
 * "InfiniBand" / "Ethernet"   | no port                 | | <driver>/portState                 |
 * string | first port's state name, "ACTIVE"       | no port, state unknown  | | <driver>/rateGbps
 * | int    | first port's rate in Gb/s, 400          | unknown or fractional   | | <driver>/netdev
 * | string | first port's netdev, "ibp59s0"          | none                    | |
 * <driver>/virtualFunction           | bool   | an SR-IOV VF                            | never |
 * | <driver>/pfPciAddress              | string | a VF's PF, "0000:3b:00.0"               | not a
 * VF, PF unknown    | | <driver>/vendor                    | string | PCI vendor ID, "0x15b3" |
 * unknown                 | | <driver>/deviceId                  | string | PCI device ID, "0x101b"
 * | unknown                 | | <driver>/driver                    | string | kernel driver of the
 * function           | unknown                 | | <driver>/nodeGuid                  | string |
 * node GUID, "e8eb:d303:00dd:188f"        | unknown                 | | <driver>/firmware | string
 * | firmware version, "28.41.1000"          | unknown                 | | <driver>/pool | string |
 * the config pool's resource name         | never                   |
 *
 * A string value longer than 64 characters (the API server's limit), not UTF-8 or with
 * control characters is left out, never cut: a cut value would be a false one. At most 32
 * attributes per device. An unhealthy device carries the taint
 * {"key": "<driver>/unhealthy", "value": <reason as a label value>, "effect": "NoSchedule"}.
 * A device of a pool with mode shared carries "allowMultipleAllocations": true.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "slices-internal.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

#define STD_DOMAIN "resource.kubernetes.io/"
#define ATTR_STRING_MAX 64
#define ATTRS_MAX 32

struct attrs {
	cJSON *obj;
	const char *driver;
	unsigned n;
	bool oom;
};

static cJSON *attr_slot(struct attrs *a, bool std, const char *key)
{
	char full[320];
	cJSON *v;

	if (a->oom || a->n >= ATTRS_MAX)
		return NULL;
	snprintf(full, sizeof(full), "%s%s%s", std ? STD_DOMAIN : a->driver, std ? "" : "/", key);
	v = cJSON_CreateObject();
	if (!v || !cJSON_AddItemToObject(a->obj, full, v)) {
		cJSON_Delete(v);
		a->oom = true;
		return NULL;
	}
	a->n++;
	return v;
}

/* Non-empty UTF-8 without control characters (C1 included), at most ATTR_STRING_MAX. */
static bool string_ok(const char *s)
{
	size_t len = strlen(s);

	return len <= ATTR_STRING_MAX && text_is_printable(s, len);
}

static void attr_string(struct attrs *a, bool std, const char *key, const char *s)
{
	cJSON *v;

	if (!s || !string_ok(s) || !(v = attr_slot(a, std, key)))
		return;
	if (!cJSON_AddStringToObject(v, "string", s))
		a->oom = true;
}

static void attr_int(struct attrs *a, bool std, const char *key, long long n)
{
	cJSON *v = attr_slot(a, std, key);

	/* cJSON numbers are doubles: every value here is far below 2^53. */
	if (v && !cJSON_AddNumberToObject(v, "int", (double)n))
		a->oom = true;
}

static void attr_bool(struct attrs *a, bool std, const char *key, bool b)
{
	cJSON *v = attr_slot(a, std, key);

	if (v && !cJSON_AddBoolToObject(v, "bool", b))
		a->oom = true;
}

/* "devices/pci0000:3a/0000:3a:00.0/..." -> "pci0000:3a"; false when not that shape. */
static bool pcie_root(const char *dev_path, char *buf, size_t size)
{
	const char *p, *end;

	if (strncmp(dev_path, "devices/", 8) != 0)
		return false;
	p = dev_path + 8;
	end = strchr(p, '/');
	if (!end || strncmp(p, "pci", 3) != 0 || (size_t)(end - p) >= size || end - p <= 3)
		return false;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
	return true;
}

/* "400 Gb/sec (4X NDR)" -> 400; -1 when unknown, or fractional ("2.5 Gb/sec"): an int
 * attribute cannot say 2.5 and must not say 2. */
static long long rate_gbps(const char *rate)
{
	long long v = 0;
	const char *p = rate;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 1000000)
			return -1;
	}
	if (*p == '.') {
		for (p++; *p == '0'; p++)
			;
		if (*p >= '1' && *p <= '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++)
			;
	}
	return *p == ' ' || *p == '\0' ? v : -1;
}

static const struct disc_port *first_port(const struct disc_device *d)
{
	const struct disc_port *best = NULL;

	for (size_t i = 0; i < d->n_ports; i++)
		if (!best || d->ports[i].num < best->num)
			best = &d->ports[i];
	return best;
}

static cJSON *device_attributes(const struct dra_inventory *inv, const struct dra_hca *h,
				const char *driver)
{
	const struct disc_device *d = h->d;
	const struct disc_port *p = first_port(d);
	struct attrs a = {.obj = cJSON_CreateObject(), .driver = driver};
	char buf[DISC_PATH_MAX];

	if (!a.obj)
		return NULL;
	if (d->pci[0]) {
		if (pcie_root(d->dev_path, buf, sizeof(buf)))
			attr_string(&a, true, "pcieRoot", buf);
		attr_string(&a, true, "pciBusID", d->pci);
	}
	if (d->numa_node >= 0)
		attr_int(&a, true, "numaNode", d->numa_node);
	attr_string(&a, false, "rdmaDevice", d->name);
	if (p) {
		long long rate = rate_gbps(p->rate);

		attr_string(&a, false, "linkLayer", p->link_layer);
		if (p->state >= 0)
			attr_string(&a, false, "portState", p->state_name);
		if (rate >= 0)
			attr_int(&a, false, "rateGbps", rate);
		attr_string(&a, false, "netdev", p->netdev);
	}
	attr_bool(&a, false, "virtualFunction", d->is_vf);
	if (d->is_vf)
		attr_string(&a, false, "pfPciAddress", d->pf_pci);
	if (d->vendor_id) {
		snprintf(buf, sizeof(buf), "0x%04x", d->vendor_id);
		attr_string(&a, false, "vendor", buf);
	}
	if (d->device_id) {
		snprintf(buf, sizeof(buf), "0x%04x", d->device_id);
		attr_string(&a, false, "deviceId", buf);
	}
	attr_string(&a, false, "driver", d->driver);
	attr_string(&a, false, "nodeGuid", d->node_guid);
	attr_string(&a, false, "firmware", d->fw_ver);
	if (inv->cfg && h->pool >= 0 && (size_t)h->pool < inv->cfg->n_pools)
		attr_string(&a, false, "pool", inv->cfg->pools[h->pool].resource_name);
	if (a.oom) {
		cJSON_Delete(a.obj);
		return NULL;
	}
	return a.obj;
}

void dra_label_value(const char *reason, char buf[static 64])
{
	size_t n = 0;
	bool dash = false;

	for (const char *p = reason ? reason : ""; *p && n < 63; p++) {
		char c = *p;

		if (ascii_is_alnum(c) || c == '.' || c == '_' || c == '-') {
			if (n == 0 && !ascii_is_alnum(c))
				continue;
			buf[n++] = c;
			dash = false;
		} else if (n > 0 && !dash) {
			buf[n++] = '-';
			dash = true;
		}
	}
	while (n > 0 && !ascii_is_alnum(buf[n - 1]))
		n--;
	buf[n] = '\0';
	if (n == 0)
		snprintf(buf, 64, "unknown");
}

static cJSON *device_taints(const struct dra_hca *h, const char *driver)
{
	_cleanup_(cJSON_Deletep) cJSON *taints = cJSON_CreateArray();
	cJSON *t = cJSON_CreateObject();
	char key[320], value[64];

	if (!taints || !t || !cJSON_AddItemToArray(taints, t)) {
		cJSON_Delete(t);
		return NULL;
	}
	snprintf(key, sizeof(key), "%s%s", driver, DRA_TAINT_SUFFIX);
	dra_label_value(h->reason, value);
	if (!cJSON_AddStringToObject(t, "key", key) ||
	    !cJSON_AddStringToObject(t, "value", value) ||
	    !cJSON_AddStringToObject(t, "effect", "NoSchedule"))
		return NULL;
	return TAKE_PTR(taints);
}

cJSON *dra_slice_devices(const struct dra_inventory *inv, const char *driver)
{
	_cleanup_(cJSON_Deletep) cJSON *arr = cJSON_CreateArray();

	if (!arr || !inv || !driver)
		return NULL;
	for (size_t i = 0; i < inv->n_hcas; i++) {
		const struct dra_hca *h = &inv->hcas[i];
		cJSON *dev = cJSON_CreateObject(), *attrs, *taints;

		if (!dev || !cJSON_AddItemToArray(arr, dev)) {
			cJSON_Delete(dev);
			return NULL;
		}
		if (!cJSON_AddStringToObject(dev, "name", h->name))
			return NULL;
		/* A shared pool's device may go to several claims (consumable capacity,
		 * resource.k8s.io/v1 since 1.34 behind DRAConsumableCapacity); their results
		 * then carry a shareID. */
		if (dra_hca_shared(inv, h) &&
		    !cJSON_AddTrueToObject(dev, "allowMultipleAllocations"))
			return NULL;
		attrs = device_attributes(inv, h, driver);
		if (!attrs || !cJSON_AddItemToObject(dev, "attributes", attrs)) {
			cJSON_Delete(attrs);
			return NULL;
		}
		if (h->healthy)
			continue;
		taints = device_taints(h, driver);
		if (!taints || !cJSON_AddItemToObject(dev, "taints", taints)) {
			cJSON_Delete(taints);
			return NULL;
		}
	}
	return TAKE_PTR(arr);
}

/* ---- the publisher's pure decisions ------------------------------------------------ */

static bool device_tainted(const cJSON *dev)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(dev, "taints")) > 0;
}

int dra_slice_cut(const cJSON *devices, struct dra_slice_cut **ret, size_t *ret_n)
{
	size_t n_dev, n = 0, cap;
	struct dra_slice_cut *cuts;
	bool tainted = false;
	const cJSON *dev;

	if (!cJSON_IsArray(devices) || !ret || !ret_n)
		return -EINVAL;
	n_dev = (size_t)cJSON_GetArraySize(devices);
	/* A slice holds at least one device: n_dev slices at most (and 1 when empty). */
	cap = n_dev ? n_dev : 1;
	cuts = calloc(cap, sizeof(*cuts));
	if (!cuts)
		return -ENOMEM;
	n = 1;
	cJSON_ArrayForEach (dev, devices) {
		struct dra_slice_cut *c = &cuts[n - 1];
		bool t = device_tainted(dev);
		size_t limit = tainted || t ? DRA_SLICE_TAINTED_MAX : DRA_SLICE_DEVICES_MAX;

		if (c->count + 1 > limit) {
			cuts[n].start = c->start + c->count;
			c = &cuts[n++];
			tainted = false;
		}
		c->count++;
		tainted = tainted || t;
	}
	*ret = cuts;
	*ret_n = n;
	return 0;
}

cJSON *dra_slice_specs(const char *driver, const char *node, long long generation,
		       const cJSON *devices)
{
	_cleanup_(cJSON_Deletep) cJSON *specs = cJSON_CreateArray();
	_cleanup_free_ struct dra_slice_cut *cuts = NULL;
	const cJSON *next;
	size_t n;

	if (!specs || dra_slice_cut(devices, &cuts, &n) < 0)
		return NULL;
	next = devices->child;
	for (size_t k = 0; k < n; k++) {
		cJSON *spec = cJSON_CreateObject(), *pool, *devs;

		if (!spec || !cJSON_AddItemToArray(specs, spec)) {
			cJSON_Delete(spec);
			return NULL;
		}
		if (!cJSON_AddStringToObject(spec, "driver", driver) ||
		    !cJSON_AddStringToObject(spec, "nodeName", node) ||
		    !(pool = cJSON_AddObjectToObject(spec, "pool")) ||
		    !cJSON_AddStringToObject(pool, "name", node) ||
		    !cJSON_AddNumberToObject(pool, "generation", (double)generation) ||
		    !cJSON_AddNumberToObject(pool, "resourceSliceCount", (double)n) ||
		    !(devs = cJSON_AddArrayToObject(spec, "devices")))
			return NULL;
		/* The cuts are consecutive: walk the list once (GetArrayItem is linear). */
		for (size_t i = 0; i < cuts[k].count; i++, next = next->next) {
			cJSON *copy = cJSON_Duplicate(next, true);

			if (!copy || !cJSON_AddItemToArray(devs, copy)) {
				cJSON_Delete(copy);
				return NULL;
			}
		}
	}
	return TAKE_PTR(specs);
}

cJSON *dra_slice_object(const char *driver, const char *node, const cJSON *spec, const char *name,
			const char *resource_version)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	cJSON *meta, *copy;
	char gen_name[320];

	if (!o || !cJSON_AddStringToObject(o, "apiVersion", "resource.k8s.io/v1") ||
	    !cJSON_AddStringToObject(o, "kind", "ResourceSlice") ||
	    !(meta = cJSON_AddObjectToObject(o, "metadata")))
		return NULL;
	if (name) {
		if (!cJSON_AddStringToObject(meta, "name", name) ||
		    (resource_version &&
		     !cJSON_AddStringToObject(meta, "resourceVersion", resource_version)))
			return NULL;
	} else {
		snprintf(gen_name, sizeof(gen_name), "%s-%s-", node, driver);
		if (!cJSON_AddStringToObject(meta, "generateName", gen_name))
			return NULL;
	}
	copy = cJSON_Duplicate(spec, true);
	if (!copy || !cJSON_AddItemToObject(o, "spec", copy)) {
		cJSON_Delete(copy);
		return NULL;
	}
	return TAKE_PTR(o);
}

long long dra_slice_generation(const cJSON *object)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(object, "spec");
	const cJSON *pool = cJSON_GetObjectItemCaseSensitive(spec, "pool");
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(pool, "generation");
	double v;

	if (!cJSON_IsNumber(g))
		return -1;
	v = g->valuedouble;
	if (v < 0 || v > 9007199254740992.0 || v != (double)(long long)v)
		return -1;
	return (long long)v;
}

/* want's device at index i when it has that name, else NULL. */
static const cJSON *want_device(const cJSON *want, int i, const cJSON *name)
{
	const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(want, "devices"), i);

	return cJSON_IsString(name) &&
		       cJSON_Compare(cJSON_GetObjectItemCaseSensitive(d, "name"), name, true)
		   ? d
		   : NULL;
}

/*
 * A copy of a server spec without the fields the server fills in, and with the
 * allowMultipleAllocations want asks for where the server left it out: an API server
 * without DRAConsumableCapacity (off by default before 1.36) drops the field on write,
 * and a publisher that counted that as a difference would update the slice for ever.
 */
static cJSON *spec_normalised(const cJSON *have, const cJSON *want)
{
	cJSON *c = cJSON_Duplicate(have, true), *dev;
	int i = 0;

	if (!c)
		return NULL;
	cJSON_ArrayForEach (dev, cJSON_GetObjectItemCaseSensitive(c, "devices")) {
		const cJSON *w =
		    want_device(want, i++, cJSON_GetObjectItemCaseSensitive(dev, "name"));
		const cJSON *multi =
		    cJSON_GetObjectItemCaseSensitive(w, "allowMultipleAllocations");
		cJSON *t;

		cJSON_ArrayForEach (t, cJSON_GetObjectItemCaseSensitive(dev, "taints"))
			cJSON_DeleteItemFromObjectCaseSensitive(t, "timeAdded");
		if (multi && !cJSON_GetObjectItemCaseSensitive(dev, "allowMultipleAllocations") &&
		    !cJSON_AddItemToObject(dev, "allowMultipleAllocations",
					   cJSON_Duplicate(multi, true))) {
			cJSON_Delete(c);
			return NULL;
		}
	}
	return c;
}

bool dra_slice_spec_equal(const cJSON *want, const cJSON *have)
{
	_cleanup_(cJSON_Deletep) cJSON *n = NULL;

	if (!want || !have)
		return false;
	n = spec_normalised(have, want);
	return n && cJSON_Compare(want, n, true);
}

static const char *listed_name(const cJSON *o)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));

	return s && *s ? s : NULL;
}

struct listed_ref {
	const cJSON *o;
	const char *name; /* NULL: nameless, only to be deleted (never sent: see plan) */
	bool used;
};

static int cmp_listed(const void *a, const void *b)
{
	const struct listed_ref *x = a, *y = b;

	if (!x->name || !y->name)
		return !x->name - !y->name;
	return strcmp(x->name, y->name);
}

int dra_slice_plan(const cJSON *specs, const cJSON *listed, struct dra_slice_op **ret,
		   size_t *ret_n)
{
	size_t n_specs, n_listed, n_ops = 0;
	_cleanup_free_ struct listed_ref *refs = NULL;
	_cleanup_free_ bool *kept = NULL;
	_cleanup_free_ struct dra_slice_op *ops = NULL;
	const cJSON *o;
	size_t i = 0;

	if (!cJSON_IsArray(specs) || (listed && !cJSON_IsArray(listed)) || !ret || !ret_n)
		return -EINVAL;
	n_specs = (size_t)cJSON_GetArraySize(specs);
	n_listed = listed ? (size_t)cJSON_GetArraySize(listed) : 0;
	refs = calloc(n_listed + 1, sizeof(*refs));
	kept = calloc(n_specs + 1, sizeof(*kept));
	ops = calloc(n_specs + n_listed + 1, sizeof(*ops));
	if (!refs || !kept || !ops)
		return -ENOMEM;
	cJSON_ArrayForEach (o, listed) {
		refs[i].o = o;
		refs[i++].name = listed_name(o);
	}
	qsort(refs, n_listed, sizeof(*refs), cmp_listed);

	/* Keep what already says the right thing. */
	for (size_t k = 0; k < n_specs; k++) {
		const cJSON *want = cJSON_GetArrayItem(specs, (int)k);

		for (size_t j = 0; j < n_listed && !kept[k]; j++)
			if (refs[j].name && !refs[j].used &&
			    dra_slice_spec_equal(
				want, cJSON_GetObjectItemCaseSensitive(refs[j].o, "spec")))
				refs[j].used = kept[k] = true;
	}
	/* Reuse the rest, then create. */
	for (size_t k = 0, j = 0; k < n_specs; k++) {
		if (kept[k])
			continue;
		while (j < n_listed && (refs[j].used || !refs[j].name))
			j++;
		if (j < n_listed) {
			refs[j].used = true;
			ops[n_ops++] = (struct dra_slice_op){DRA_SLICE_UPDATE, k, refs[j].o};
		}
	}
	for (size_t k = 0, n_upd = n_ops; k < n_specs; k++) {
		bool planned = kept[k];

		for (size_t x = 0; x < n_upd && !planned; x++)
			planned = ops[x].spec == k;
		if (!planned)
			ops[n_ops++] = (struct dra_slice_op){DRA_SLICE_CREATE, k, NULL};
	}
	/* Nameless objects cannot be deleted by name; the server never lists one. */
	for (size_t j = 0; j < n_listed; j++)
		if (!refs[j].used && refs[j].name)
			ops[n_ops++] = (struct dra_slice_op){DRA_SLICE_DELETE, 0, refs[j].o};
	*ret_n = n_ops;
	*ret = n_ops ? TAKE_PTR(ops) : NULL;
	return 0;
}
