/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the DRA slices tests: a scanned fixture with its /dev nodes, a synthetic
 * device model, and a check of a ResourceSlice against the API server's validation
 * (resource.k8s.io/v1: names, limits, attribute shapes, taints), written from the API's
 * documented rules rather than from our code.
 */
#pragma once

#include <ctype.h>

#include "../discovery/fixture-util.h"
#include "common.h"
#include "config.h"
#include "inventory.h"
#include "slices-internal.h"

#define is_str(a, b, ...)                                                                          \
	({                                                                                         \
		const char *_a = (a), *_b = (b);                                                   \
		bool _r = ok(_a && _b && strcmp(_a, _b) == 0, __VA_ARGS__);                        \
		if (!_r)                                                                           \
			printf("#   got \"%s\", want \"%s\"\n", _a ? _a : "(null)",                \
			       _b ? _b : "(null)");                                                \
		_r;                                                                                \
	})

/* ---- fixtures ------------------------------------------------------------------------ */

struct fixture {
	char *dev;
	struct disc_node *node;
};

/* Scans tests/data/<profile>/sys with its /dev nodes made by mksysfs.py mkdev (root). */
static __attribute__((unused)) struct fixture *fixture_scan(const char *profile)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char *sys;

	if (!f || asprintf(&sys, "%s/%s/sys", data_dir, profile) < 0)
		abort();
	f->dev = temp_dir("dra-dev");
	{
		char *argv[] = {(char *)python3, (char *)mksysfs, "mkdev", sys, f->dev, NULL};
		struct disc_options o = {.sysfs_root = sys, .dev_root = f->dev};

		if (run(argv) != 0 || disc_scan(&o, &f->node) < 0) {
			printf("Bail out! fixture %s: mkdev or scan failed (needs root)\n",
			       profile);
			exit(1);
		}
	}
	free(sys);
	return f;
}

static __attribute__((unused)) void fixture_free(struct fixture *f)
{
	if (!f)
		return;
	disc_node_free(f->node);
	rm_rf(f->dev);
	free(f->dev);
	free(f);
}

/* The inventory of node under config text yaml (NULL = no file: one default pool). */
static __attribute__((unused)) struct dra_inventory *inventory_of(const struct disc_node *node,
								  const char *yaml,
								  struct cfg **ret_cfg,
								  struct cfg_assignment **ret_a)
{
	struct dra_inventory *inv;
	struct rc_error *err = NULL;

	if ((yaml ? cfg_parse(yaml, strlen(yaml), "test.yaml", ret_cfg, &err)
		  : cfg_default(ret_cfg)) < 0 ||
	    cfg_assign(*ret_cfg, node, ret_a, &err) < 0 ||
	    dra_inventory_build(node, *ret_cfg, *ret_a, "rdma.example/hca", &inv) < 0) {
		printf("Bail out! inventory: %s\n", rc_error_msg(err, -EINVAL));
		exit(1);
	}
	return inv;
}

/* ---- synthetic devices --------------------------------------------------------------- */

struct fake_node {
	struct disc_node node;
	size_t cap;
};

static __attribute__((unused)) struct fake_node *fake_new(size_t cap)
{
	struct fake_node *f = calloc(1, sizeof(*f));

	if (!f || !(f->node.devices = calloc(cap, sizeof(*f->node.devices))))
		abort();
	f->cap = cap;
	return f;
}

/* A device with one port, ACTIVE when active, with a uverbs node when usable. */
static __attribute__((unused)) struct disc_device *fake_add(struct fake_node *f, const char *name,
							    const char *pci, const char *dev_path,
							    int numa, bool usable, bool active)
{
	struct disc_device *d;

	if (f->node.n_devices == f->cap)
		abort();
	d = &f->node.devices[f->node.n_devices];
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->pci, sizeof(d->pci), "%s", pci);
	snprintf(d->dev_path, sizeof(d->dev_path), "%s", dev_path);
	d->numa_node = numa;
	d->has_uverbs = usable;
	snprintf(d->uverbs.name, sizeof(d->uverbs.name), "uverbs%zu", f->node.n_devices);
	d->uverbs.node_present = usable;
	if (!(d->ports = calloc(1, sizeof(*d->ports))))
		abort();
	d->n_ports = 1;
	d->ports[0].num = 1;
	d->ports[0].state = active ? 4 : 1;
	snprintf(d->ports[0].state_name, sizeof(d->ports[0].state_name), "%s",
		 active ? "ACTIVE" : "DOWN");
	snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "Ethernet");
	f->node.n_devices++;
	return d;
}

static __attribute__((unused)) void fake_free(struct fake_node *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->node.n_devices; i++)
		free(f->node.devices[i].ports);
	free(f->node.devices);
	free(f);
}

/* Every device of node in the default pool (usable ones only, as cfg_assign). */
static __attribute__((unused)) struct dra_inventory *
fake_inventory(const struct fake_node *f, struct cfg **ret_cfg, struct cfg_assignment **ret_a)
{
	return inventory_of(&f->node, NULL, ret_cfg, ret_a);
}

/* ---- the API server's validation ---------------------------------------------------- */

static bool dns_label(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (const char *p = s; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
			return false;
	return true;
}

static __attribute__((unused)) bool dns_label_ok(const char *s)
{
	return dns_label(s);
}

static bool dns_subdomain(const char *s, size_t max)
{
	char buf[512];
	char *save = NULL;

	if (strlen(s) == 0 || strlen(s) > max || strlen(s) >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%s", s);
	if (buf[0] == '.' || buf[strlen(buf) - 1] == '.' || strstr(buf, ".."))
		return false;
	for (char *l = strtok_r(buf, ".", &save); l; l = strtok_r(NULL, ".", &save))
		if (!dns_label(l))
			return false;
	return true;
}

/* A C identifier of at most 32 characters (the attribute name after the domain). */
static bool c_ident(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

static bool label_value(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return true;
	if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

static __attribute__((unused)) bool label_value_ok(const char *s)
{
	return label_value(s);
}

/* "domain/name" with a subdomain prefix and a C identifier (attributes), or a label key
 * "prefix/name" (taints: name a label-ish of [A-Za-z0-9._-]). */
static bool qualified(const char *s, bool attr)
{
	const char *slash = strchr(s, '/');
	char dom[300];

	if (!slash || (size_t)(slash - s) >= sizeof(dom))
		return false;
	memcpy(dom, s, (size_t)(slash - s));
	dom[slash - s] = '\0';
	if (!dns_subdomain(dom, attr ? 63 : 253))
		return false;
	return attr ? c_ident(slash + 1) : label_value(slash + 1) && slash[1];
}

/* NULL when the slice object passes, else why not (static buffer). */
static __attribute__((unused)) const char *slice_problem(const cJSON *o)
{
	static char why[512];
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	const cJSON *pool = cJSON_GetObjectItemCaseSensitive(spec, "pool");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices"), *d;
	const char *driver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "driver"));
	const char *gen_name =
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "generateName"));
	size_t n_dev = 0, n_tainted = 0;

#define BAD(...) return snprintf(why, sizeof(why), __VA_ARGS__), why
	if (!cJSON_IsObject(meta) || !cJSON_IsObject(spec))
		BAD("no metadata or spec");
	if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "apiVersion")) ?: "",
		   "resource.k8s.io/v1") != 0 ||
	    strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "kind")) ?: "",
		   "ResourceSlice") != 0)
		BAD("apiVersion/kind");
	if (gen_name) {
		/* The server appends 5 random characters [a-z0-9] (cutting the prefix to 58). */
		char full[80];

		snprintf(full, sizeof(full), "%.58sx1y2z", gen_name);
		if (!dns_subdomain(full, 253))
			BAD("generateName '%s' makes no valid name", gen_name);
	}
	if (!driver || !dns_subdomain(driver, 63))
		BAD("spec.driver is not a DNS subdomain <= 63");
	if (!cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "nodeName")))
		BAD("no nodeName");
	if (!cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pool, "name")) ||
	    !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pool, "generation")) ||
	    cJSON_GetObjectItemCaseSensitive(pool, "resourceSliceCount")->valuedouble < 1)
		BAD("pool name/generation/resourceSliceCount");
	if (!cJSON_IsArray(devs))
		BAD("no devices array");
	cJSON_ArrayForEach (d, devs) {
		const char *name =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
		const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(d, "attributes"), *a;
		const cJSON *taints = cJSON_GetObjectItemCaseSensitive(d, "taints"), *t;
		const cJSON *e;
		size_t n_attr = 0;

		n_dev++;
		if (!name || !dns_label(name))
			BAD("device name '%s' is not a DNS label", name ? name : "(none)");
		cJSON_ArrayForEach (e, devs) {
			if (e == d)
				break;
			if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "name"))
				       ?: "",
				   name) == 0)
				BAD("device name %s twice", name);
		}
		cJSON_ArrayForEach (a, attrs) {
			int kinds = 0;
			const cJSON *v;

			n_attr++;
			if (!qualified(a->string, true))
				BAD("%s: attribute key %s", name, a->string);
			cJSON_ArrayForEach (v, a) {
				kinds++;
				if (strcmp(v->string, "string") == 0) {
					if (!cJSON_IsString(v) || strlen(v->valuestring) > 64)
						BAD("%s: %s: string over 64", name, a->string);
				} else if (strcmp(v->string, "int") == 0) {
					if (!cJSON_IsNumber(v) ||
					    v->valuedouble != (long long)v->valuedouble)
						BAD("%s: %s: int", name, a->string);
				} else if (strcmp(v->string, "bool") == 0) {
					if (!cJSON_IsBool(v))
						BAD("%s: %s: bool", name, a->string);
				} else {
					BAD("%s: %s: unknown value type %s", name, a->string,
					    v->string);
				}
			}
			if (kinds != 1)
				BAD("%s: %s: %d values", name, a->string, kinds);
		}
		if (n_attr > 32)
			BAD("%s: %zu attributes", name, n_attr);
		if (cJSON_GetArraySize(taints) > 0)
			n_tainted++;
		cJSON_ArrayForEach (t, taints) {
			const char *k =
			    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "key"));
			const char *v =
			    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "value"));
			const char *ef =
			    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "effect"));

			if (!k || !qualified(k, false))
				BAD("%s: taint key", name);
			if (v && !label_value(v))
				BAD("%s: taint value '%s'", name, v);
			if (!ef || (strcmp(ef, "NoSchedule") && strcmp(ef, "NoExecute")))
				BAD("%s: taint effect", name);
		}
	}
	if (n_dev > (n_tainted ? 64 : 128))
		BAD("%zu devices (%zu with taints)", n_dev, n_tainted);
	return NULL;
#undef BAD
}

/* The attribute value (the "string"/"int"/"bool" member) of dev's key, or NULL. */
static __attribute__((unused)) const cJSON *attr(const cJSON *dev, const char *key,
						 const char *type)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(dev, "attributes"), key);

	return cJSON_GetObjectItemCaseSensitive(a, type);
}

static __attribute__((unused)) const cJSON *device_named(const cJSON *devs, const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach (d, devs) {
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name")) ?: "",
			   name) == 0)
			return d;
	}
	return NULL;
}
