/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claims: a ResourceClaim's results taken apart, and NodePrepareResources decided over
 * the inventory and the checkpoint. The claim comes from the API server, which anyone
 * with write access to claims can shape: every field is type-checked and bounded, and
 * only what the result names is looked up, never trusted.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cdi.h"
#include "claims-internal.h"
#include "dra.h"

/* The effect of the taint slices.c puts on an unhealthy device ("<driver>"
 * DRA_TAINT_SUFFIX, inventory.h). */
#define TAINT_EFFECT "NoSchedule"

/* The variables the bridge's Allocate sets (bridge-internal.h DP_ENV_*). */
#define ENV_DEVICES "RDMA_CDI_DEVICES"
#define ENV_NCCL_IB_HCA "NCCL_IB_HCA"
#define ENV_UCX_NET_DEVICES "UCX_NET_DEVICES"

#define WHO_MAX 340 /* "namespace/name" escaped, shortened */

/* s escaped for one line of a message (never NULL). */
static const char *esc(char *buf, size_t size, const char *s)
{
	if (!s)
		s = "(null)";
	text_escape(buf, size, s, strlen(s), false);
	return buf;
}

/* "ns/name" of the claim's metadata, escaped; "?" for what is missing or no string. */
static const char *claim_who(const cJSON *claim, char who[static WHO_MAX])
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(claim, "metadata");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	char a[96], b[240];

	snprintf(who, WHO_MAX, "%s/%s",
		 cJSON_IsString(ns) ? esc(a, sizeof(a), ns->valuestring) : "?",
		 cJSON_IsString(name) ? esc(b, sizeof(b), name->valuestring) : "?");
	return who;
}

/* A string field: *ret NULL when absent or null (and !required); refused when it is
 * something else, empty, longer than max or not UTF-8. */
static int get_string(const cJSON *obj, const char *key, size_t max, bool required,
		      const char **ret, const char *who, const char *path, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t n;

	*ret = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (!required)
			return 0;
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.%s: missing", who, path, key);
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.%s: not a string", who, path,
				key);
	n = strnlen(v->valuestring, max + 1);
	if (n == 0 || n > max)
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.%s: %s", who, path, key,
				n ? "too long" : "empty");
	if (!text_is_utf8(v->valuestring, n))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.%s: not UTF-8", who, path, key);
	*ret = v->valuestring;
	return 0;
}

/* An object member: NULL when absent or null; refused when it is no object. */
static int get_object(const cJSON *obj, const char *key, const cJSON **ret, const char *who,
		      const char *path, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s%s%s: not an object", who, path,
				*path ? "." : "", key);
	*ret = v;
	return 0;
}

bool dra_share_id_is_valid(const char *s)
{
	bool digit = false;
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++) {
		bool hex = (s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
			   (s[n] >= 'A' && s[n] <= 'F');

		if (n >= DRA_SHARE_ID_MAX || (!hex && s[n] != '-'))
			return false;
		digit |= hex;
	}
	return digit;
}

/* Request names are DNS labels, "<request>/<subrequest>" for a subrequest's result. */
static bool request_name_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_' || *s == '/'))
			return false;
	return true;
}

/* Does toleration t tolerate the NoSchedule taint key (see struct dra_result)? */
static int tolerates(const cJSON *t, const char *key, bool *ret, const char *who, const char *path,
		     char *err, size_t errlen)
{
	const char *tkey, *op, *value, *effect;
	bool exists;
	int r;

	if (!cJSON_IsObject(t))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s: not an object", who, path);
	r = get_string(t, "key", DRA_CLAIM_STRING_MAX, false, &tkey, who, path, err, errlen);
	if (r >= 0)
		r = get_string(t, "operator", DRA_CLAIM_STRING_MAX, false, &op, who, path, err,
			       errlen);
	if (r >= 0)
		r = get_string(t, "value", DRA_CLAIM_STRING_MAX, false, &value, who, path, err,
			       errlen);
	if (r >= 0)
		r = get_string(t, "effect", DRA_CLAIM_STRING_MAX, false, &effect, who, path, err,
			       errlen);
	if (r < 0)
		return r;
	*ret = false;
	/* The API server's defaults: operator Equal, effect "" = every effect. */
	if (op && strcmp(op, "Exists") != 0 && strcmp(op, "Equal") != 0)
		return 0;
	if (effect && strcmp(effect, TAINT_EFFECT) != 0)
		return 0;
	exists = op && strcmp(op, "Exists") == 0;
	if (!tkey)
		*ret = exists;
	else
		*ret = strcmp(tkey, key) == 0;
	return 0;
}

static int parse_result(const cJSON *res, const char *taint_key, struct dra_result *out,
			const char *who, const char *path, char *err, size_t errlen)
{
	const char *request, *device, *share_id;
	const cJSON *admin, *tols, *t;
	char tpath[128];
	size_t i = 0;
	int r;

	r = get_string(res, "request", DRA_CLAIM_STRING_MAX, true, &request, who, path, err,
		       errlen);
	if (r < 0)
		return r;
	if (!request_name_ok(request))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.request: not a request name",
				who, path);
	r = get_string(res, "device", DRA_DEVICE_NAME_MAX, true, &device, who, path, err, errlen);
	if (r < 0)
		return r;
	if (!name_is_safe(device, DRA_DEVICE_NAME_MAX))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.device: not a device name", who,
				path);
	r = get_string(res, "shareID", DRA_SHARE_ID_MAX, false, &share_id, who, path, err, errlen);
	if (r < 0)
		return r;
	/* It goes back to the kubelet and into the checkpoint: a UUID, nothing else. */
	if (share_id && !dra_share_id_is_valid(share_id))
		return err_fail(err, errlen, -EINVAL,
				"claim %s: %s.shareID: not a UUID (hex digits and '-')", who, path);
	admin = cJSON_GetObjectItemCaseSensitive(res, "adminAccess");
	if (admin && !cJSON_IsNull(admin) && !cJSON_IsBool(admin))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.adminAccess: not a boolean",
				who, path);
	out->admin_access = cJSON_IsTrue(admin);

	out->tolerates_unhealthy = false;
	tols = cJSON_GetObjectItemCaseSensitive(res, "tolerations");
	if (tols && !cJSON_IsNull(tols) && !cJSON_IsArray(tols))
		return err_fail(err, errlen, -EINVAL, "claim %s: %s.tolerations: not a list", who,
				path);
	cJSON_ArrayForEach (t, tols) {
		bool yes = false;

		if (i >= DRA_TOLERATIONS_MAX)
			return err_fail(err, errlen, -EINVAL,
					"claim %s: %s.tolerations: more than %d", who, path,
					DRA_TOLERATIONS_MAX);
		snprintf(tpath, sizeof(tpath), "%s.tolerations[%zu]", path, i++);
		r = tolerates(t, taint_key, &yes, who, tpath, err, errlen);
		if (r < 0)
			return r;
		out->tolerates_unhealthy |= yes;
	}

	out->request = strdup(request);
	out->device = strdup(device);
	out->share_id = share_id ? strdup(share_id) : NULL;
	if (!out->request || !out->device || (share_id && !out->share_id))
		return err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
	return 0;
}

void dra_results_free(struct dra_result *r, size_t n)
{
	if (!r)
		return;
	for (size_t i = 0; i < n; i++) {
		free(r[i].request);
		free(r[i].device);
		free(r[i].share_id);
	}
	free(r);
}

int dra_claim_results(const cJSON *claim, const char *uid, const char *driver, const char *pool,
		      struct dra_result **ret, size_t *ret_n, char *err, size_t errlen)
{
	const cJSON *md, *status, *alloc, *devices, *results, *res;
	_cleanup_free_ char *taint_key = NULL;
	struct dra_result *out = NULL;
	char who[WHO_MAX], a[160], b[160];
	const char *muid;
	size_t n = 0, i = 0;
	int r;

	if (!uid || !driver || !pool || !ret || !ret_n)
		return err_fail(err, errlen, -EINVAL, "claim: invalid arguments");
	if (!cJSON_IsObject(claim))
		return err_fail(err, errlen, -EINVAL, "claim %s: not a JSON object",
				esc(a, sizeof(a), uid));
	claim_who(claim, who);

	r = get_object(claim, "metadata", &md, who, "", err, errlen);
	if (r < 0)
		return r;
	r = get_string(md, "uid", DRA_UID_MAX, true, &muid, who, "metadata", err, errlen);
	if (r < 0)
		return r;
	if (strcmp(muid, uid) != 0)
		return err_fail(err, errlen, -EINVAL,
				"claim %s: UID %s differs from the kubelet's %s", who,
				esc(a, sizeof(a), muid), esc(b, sizeof(b), uid));

	r = get_object(claim, "status", &status, who, "", err, errlen);
	if (r >= 0)
		r = get_object(status, "allocation", &alloc, who, "status", err, errlen);
	if (r < 0)
		return r;
	if (!alloc)
		return err_fail(err, errlen, -ENOENT, "claim %s: is not allocated", who);
	r = get_object(alloc, "devices", &devices, who, "status.allocation", err, errlen);
	if (r < 0)
		return r;
	results = cJSON_GetObjectItemCaseSensitive(devices, "results");
	if (results && !cJSON_IsNull(results) && !cJSON_IsArray(results))
		return err_fail(err, errlen, -EINVAL,
				"claim %s: status.allocation.devices.results: not a list", who);

	taint_key = strdup_printf("%s" DRA_TAINT_SUFFIX, driver);
	if (!taint_key)
		return err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
	cJSON_ArrayForEach (res, results) {
		const char *rdriver, *rpool;
		char path[64];

		if (i >= DRA_RESULTS_MAX) {
			r = err_fail(err, errlen, -EINVAL,
				     "claim %s: status.allocation.devices.results: more than %d",
				     who, DRA_RESULTS_MAX);
			goto fail;
		}
		snprintf(path, sizeof(path), "status.allocation.devices.results[%zu]", i++);
		if (!cJSON_IsObject(res)) {
			r = err_fail(err, errlen, -EINVAL, "claim %s: %s: not an object", who,
				     path);
			goto fail;
		}
		r = get_string(res, "driver", DRA_CLAIM_STRING_MAX, true, &rdriver, who, path, err,
			       errlen);
		if (r >= 0)
			r = get_string(res, "pool", DRA_CLAIM_STRING_MAX, true, &rpool, who, path,
				       err, errlen);
		if (r < 0)
			goto fail;
		if (strcmp(rdriver, driver) != 0 || strcmp(rpool, pool) != 0)
			continue;
		if (!out) {
			out = calloc(DRA_RESULTS_MAX, sizeof(*out));
			if (!out) {
				r = err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
				goto fail;
			}
		}
		/* n counts the entry before it is filled: a half-filled one is freed too. */
		r = parse_result(res, taint_key, &out[n++], who, path, err, errlen);
		if (r < 0)
			goto fail;
	}
	if (n == 0)
		return err_fail(err, errlen, -ENOENT,
				"claim %s: holds no device of driver %s in pool %s", who,
				esc(a, sizeof(a), driver), esc(b, sizeof(b), pool));
	*ret = out;
	*ret_n = n;
	return 0;

fail:
	dra_results_free(out, n);
	return r;
}

/* ---- prepare ---------------------------------------------------------------------- */

static bool pool_nccl_env(const struct dra_inventory *inv, const struct dra_hca *h)
{
	return inv->cfg && h->pool >= 0 && (size_t)h->pool < inv->cfg->n_pools &&
	       inv->cfg->pools[h->pool].nccl_env;
}

enum join_field { JOIN_NAME, JOIN_UCX };

/* "mlx5_3:1": the HCA's ACTIVE ports, else its first port (the bridge's rule, so that
 * NCCL_IB_HCA and UCX_NET_DEVICES always name the same HCAs). */
static void ucx_of(const struct dra_hca *h, char *buf, size_t size)
{
	if (h->ucx[0])
		snprintf(buf, size, "%s", h->ucx);
	else
		snprintf(buf, size, "%s:%u", h->d->name, h->d->n_ports ? h->d->ports[0].num : 1);
}

/* "K=" + prefix + one field of each HCA, joined with ','. */
static int add_env(cJSON *env, const char *key, const char *prefix,
		   const struct dra_hca *const *hcas, size_t n, enum join_field f)
{
	size_t size = strlen(key) + strlen(prefix) + 2, off;
	_cleanup_free_ char *s = NULL;

	for (size_t i = 0; i < n; i++)
		size += (f == JOIN_UCX ? sizeof(hcas[i]->ucx) + DISC_NAME_MAX + 12
				       : strlen(hcas[i]->d->name)) +
			1;
	s = malloc(size);
	if (!s)
		return -ENOMEM;
	off = (size_t)snprintf(s, size, "%s=%s", key, prefix);
	for (size_t i = 0; i < n; i++) {
		char ucx[sizeof(hcas[i]->ucx) + DISC_NAME_MAX + 12];

		if (f == JOIN_UCX)
			ucx_of(hcas[i], ucx, sizeof(ucx));
		off += (size_t)snprintf(s + off, size - off, "%s%s", i ? "," : "",
					f == JOIN_UCX ? ucx : hcas[i]->d->name);
	}
	return cJSON_AddItemToArray(env, cJSON_CreateString(s)) ? 0 : -ENOMEM;
}

/* The per-claim spec: one device named uid whose edits are only the claim's env. */
static int build_spec(const struct dra_inventory *inv, const char *kind, const char *uid,
		      const struct dra_hca *const *hcas, size_t n, cJSON **ret)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = cJSON_CreateObject();
	cJSON *version, *devices, *dev, *edits, *env;
	bool nccl = false;
	int r;

	if (!spec)
		return -ENOMEM;
	/* Placeholder: the version follows from the finished tree. */
	version = cJSON_AddStringToObject(spec, "cdiVersion", "");
	if (!version || !cJSON_AddStringToObject(spec, "kind", kind))
		return -ENOMEM;
	devices = cJSON_AddArrayToObject(spec, "devices");
	dev = cJSON_CreateObject();
	if (!devices || !dev || !cJSON_AddItemToArray(devices, dev))
		return cJSON_Delete(dev), -ENOMEM;
	if (!cJSON_AddStringToObject(dev, "name", uid))
		return -ENOMEM;
	edits = cJSON_AddObjectToObject(dev, "containerEdits");
	env = edits ? cJSON_AddArrayToObject(edits, "env") : NULL;
	if (!env)
		return -ENOMEM;

	for (size_t i = 0; i < n; i++)
		nccl |= pool_nccl_env(inv, hcas[i]);
	r = add_env(env, ENV_DEVICES, "", hcas, n, JOIN_NAME);
	/* "=" + names: NCCL's exact match, as the bridge sets it (bridge-internal.h). */
	if (r >= 0 && nccl)
		r = add_env(env, ENV_NCCL_IB_HCA, "=", hcas, n, JOIN_NAME);
	if (r >= 0 && nccl)
		r = add_env(env, ENV_UCX_NET_DEVICES, "", hcas, n, JOIN_UCX);
	if (r < 0)
		return r;
	if (!cJSON_SetValuestring(version, cdi_min_version(spec)))
		return -ENOMEM;
	*ret = TAKE_PTR(spec);
	return 0;
}

static int add_request(struct dra_prepared_device *d, const char *request)
{
	for (size_t i = 0; i < d->n_requests; i++)
		if (strcmp(d->requests[i], request) == 0)
			return 0;
	d->requests[d->n_requests] = strdup(request);
	if (!d->requests[d->n_requests])
		return -ENOMEM;
	d->n_requests++;
	return 0;
}

/* A new prepared device for h serving res; the caller counts it before the call so
 * that a half-made one is freed with the claim. */
static int new_device(struct dra_prepared_device *d, const struct dra_hca *h, const char *driver,
		      const char *uid, const struct dra_result *res, size_t max_requests)
{
	d->device = strdup(h->name);
	d->requests = calloc(max_requests, sizeof(*d->requests));
	d->cdi_ids = calloc(2, sizeof(*d->cdi_ids));
	d->share_id = res->share_id ? strdup(res->share_id) : NULL;
	d->admin = res->admin_access;
	if (!d->device || !d->requests || !d->cdi_ids || (res->share_id && !d->share_id))
		return -ENOMEM;
	d->cdi_ids[0] = strdup(h->cdi_id);
	d->cdi_ids[1] = strdup_printf("%s/" DRA_CLAIM_KIND_CLASS "=%s", driver, uid);
	if (!d->cdi_ids[0] || !d->cdi_ids[1]) {
		free(d->cdi_ids[0]);
		free(d->cdi_ids[1]);
		d->cdi_ids[0] = d->cdi_ids[1] = NULL;
		return -ENOMEM;
	}
	d->n_cdi_ids = 2;
	return add_request(d, res->request);
}

/* Results of one device and share are one prepared device. */
static bool same_share(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Why the device of result res may not be prepared, as err_fail() returns it; 0 when it may. */
static int check_device(const struct dra_checkpoint *c, const struct dra_inventory *inv,
			const struct dra_result *res, const struct dra_hca *h, const char *uid,
			const char *who, char *err, size_t errlen)
{
	char a[96], b[160];
	const char *holder;

	if (!h)
		return err_fail(err, errlen, -ENODEV,
				"claim %s: device %s is not on this node (anymore)", who,
				esc(a, sizeof(a), res->device));
	/* An inventory that lost either would hand the kubelet a name nothing resolves. */
	if (!h->d || !h->cdi_id[0])
		return err_fail(err, errlen, -EINVAL,
				"claim %s: device %s has no RDMA device or CDI ID", who, h->name);
	/* Admin access reaches a device whoever holds it (monitoring, diagnostics). */
	holder = c && !dra_hca_shared(inv, h) && !res->admin_access
		     ? dra_checkpoint_holder(c, h->name, uid)
		     : NULL;
	if (holder)
		return err_fail(err, errlen, -EBUSY,
				"claim %s: device %s is already prepared for claim %s", who,
				h->name, esc(b, sizeof(b), holder));
	if (!h->healthy && !res->tolerates_unhealthy)
		return err_fail(err, errlen, -EIO, "claim %s: device %s is unhealthy (%s)", who,
				h->name, esc(b, sizeof(b), h->reason[0] ? h->reason : "unknown"));
	return 0;
}

/* A claim's namespace or name as the checkpoint can record it. */
static bool claim_text_ok(const char *s)
{
	size_t n = strnlen(s, DRA_CLAIM_STRING_MAX + 1);

	return n > 0 && n <= DRA_CLAIM_STRING_MAX && text_is_utf8(s, n);
}

int dra_prepare(const struct dra_checkpoint *c, const struct dra_inventory *inv, const char *driver,
		const char *ns, const char *name, const char *uid, const struct dra_result *results,
		size_t n_results, struct dra_prepared_claim **ret, cJSON **ret_spec, char *err,
		size_t errlen)
{
	struct dra_prepared_claim *p = NULL;
	_cleanup_free_ const struct dra_hca **hcas = NULL, **dev_hca = NULL;
	_cleanup_free_ char *kind = NULL;
	size_t n_hcas = 0;
	_cleanup_rc_error_ struct rc_error *verr = NULL;
	char who[WHO_MAX], a[96], b[240];
	cJSON *spec = NULL;
	const struct dra_prepared_claim *old;
	int r;

	if (!inv || !driver || !ns || !name || !uid || !ret || !ret_spec || (!results && n_results))
		return err_fail(err, errlen, -EINVAL, "claim: invalid arguments");
	snprintf(who, sizeof(who), "%s/%s", esc(a, sizeof(a), ns), esc(b, sizeof(b), name));
	if (!dra_uid_is_valid(uid))
		return err_fail(err, errlen, -EINVAL,
				"claim %s: UID %s is not a valid CDI device name", who,
				esc(b, sizeof(b), uid));
	if (!claim_text_ok(ns) || !claim_text_ok(name))
		return err_fail(err, errlen, -EINVAL,
				"claim %s: namespace or name is too long or not UTF-8", who);

	old = dra_checkpoint_find(c, uid);
	if (old) {
		p = dra_prepared_claim_copy(old);
		if (!p)
			return err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
		*ret = p;
		*ret_spec = NULL;
		return 1;
	}

	if (n_results == 0 || n_results > DRA_RESULTS_MAX)
		return err_fail(err, errlen, -EINVAL, "claim %s: %zu results (1..%d)", who,
				n_results, DRA_RESULTS_MAX);
	kind = strdup_printf("%s/" DRA_CLAIM_KIND_CLASS, driver);
	if (!kind)
		return err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
	if (!cdi_kind_is_valid(kind))
		return err_fail(err, errlen, -EINVAL, "claim %s: driver %s makes no valid CDI kind",
				who, esc(b, sizeof(b), driver));

	for (size_t i = 0; i < n_results; i++) {
		const struct dra_hca *h = dra_inventory_find(inv, results[i].device);

		r = check_device(c, inv, &results[i], h, uid, who, err, errlen);
		if (r < 0)
			return r;
	}

	/* hcas: each HCA once, for the env; dev_hca: the HCA of each prepared device. */
	hcas = calloc(n_results, sizeof(*hcas));
	dev_hca = calloc(n_results, sizeof(*dev_hca));
	p = calloc(1, sizeof(*p));
	if (!hcas || !dev_hca || !p)
		goto oom;
	p->uid = strdup(uid);
	p->namespace = strdup(ns);
	p->name = strdup(name);
	p->devices = calloc(n_results, sizeof(*p->devices));
	if (!p->uid || !p->namespace || !p->name || !p->devices)
		goto oom;
	for (size_t i = 0; i < n_results; i++) {
		const struct dra_result *res = &results[i];
		const struct dra_hca *h = dra_inventory_find(inv, res->device);
		size_t j = 0, k = 0;

		while (j < p->n_devices &&
		       (dev_hca[j] != h || !same_share(p->devices[j].share_id, res->share_id)))
			j++;
		if (j < p->n_devices) {
			/* Held as soon as one of its results is not admin access. */
			p->devices[j].admin &= res->admin_access;
			r = add_request(&p->devices[j], res->request);
		} else {
			dev_hca[p->n_devices++] = h;
			r = new_device(&p->devices[j], h, driver, uid, res, n_results);
		}
		if (r < 0)
			goto oom;
		while (k < n_hcas && hcas[k] != h)
			k++;
		if (k == n_hcas)
			hcas[n_hcas++] = h;
	}

	r = build_spec(inv, kind, uid, hcas, n_hcas, &spec);
	if (r < 0)
		goto oom;
	r = cdi_spec_validate(spec, &verr);
	if (r < 0) {
		cJSON_Delete(spec);
		dra_prepared_claim_free(p);
		if (r == -ENOMEM)
			return err_fail(err, errlen, r, "claim %s: out of memory", who);
		return err_fail(err, errlen, -EINVAL,
				"claim %s: the claim's CDI spec is invalid: %s", who,
				rc_error_msg(verr, r));
	}
	*ret = p;
	*ret_spec = spec;
	return 0;

oom:
	dra_prepared_claim_free(p);
	return err_fail(err, errlen, -ENOMEM, "claim %s: out of memory", who);
}
