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
#include "config.h"
#include "dra.h"

/* The effect of the taint slices.c puts on an unhealthy device ("<driver>"
 * DRA_TAINT_SUFFIX, inventory.h). */
#define TAINT_EFFECT "NoSchedule"

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
		      const char **ret, const char *path, struct rc_error **err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t n;

	*ret = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (!required)
			return 0;
		return rc_error_set(err, -EINVAL, "%s.%s: missing", path, key);
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return rc_error_set(err, -EINVAL, "%s.%s: not a string", path, key);
	n = strnlen(v->valuestring, max + 1);
	if (n == 0 || n > max)
		return rc_error_set(err, -EINVAL, "%s.%s: %s", path, key, n ? "too long" : "empty");
	if (!text_is_utf8(v->valuestring, n))
		return rc_error_set(err, -EINVAL, "%s.%s: not UTF-8", path, key);
	*ret = v->valuestring;
	return 0;
}

/* An object member: NULL when absent or null; refused when it is no object. */
static int get_object(const cJSON *obj, const char *key, const cJSON **ret, const char *path,
		      struct rc_error **err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*ret = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return rc_error_set(err, -EINVAL, "%s%s%s: not an object", path, *path ? "." : "",
				    key);
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
	const char *slash = strchr(s, '/');

	if (!slash)
		return dns_label_is_valid(s);
	return dns_label_is_valid_len(s, (size_t)(slash - s)) && dns_label_is_valid(slash + 1);
}

/* Does toleration t tolerate the NoSchedule taint key (see struct dra_result)? */
static int tolerates(const cJSON *t, const char *key, bool *ret, const char *path,
		     struct rc_error **err)
{
	const char *tkey, *op, *value, *effect;
	bool exists;
	int r;

	if (!cJSON_IsObject(t))
		return rc_error_set(err, -EINVAL, "%s: not an object", path);
	r = get_string(t, "key", DRA_CLAIM_STRING_MAX, false, &tkey, path, err);
	if (r >= 0)
		r = get_string(t, "operator", DRA_CLAIM_STRING_MAX, false, &op, path, err);
	if (r >= 0)
		r = get_string(t, "value", DRA_CLAIM_STRING_MAX, false, &value, path, err);
	if (r >= 0)
		r = get_string(t, "effect", DRA_CLAIM_STRING_MAX, false, &effect, path, err);
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

/* Whether any of the result's tolerations tolerates the taint key. */
static int tolerates_any(const cJSON *res, const char *key, bool *ret, const char *path,
			 struct rc_error **err)
{
	const cJSON *tols = cJSON_GetObjectItemCaseSensitive(res, "tolerations"), *t;
	char tpath[128];
	size_t i = 0;
	int r;

	*ret = false;
	if (tols && !cJSON_IsNull(tols) && !cJSON_IsArray(tols))
		return rc_error_set(err, -EINVAL, "%s.tolerations: not a list", path);
	cJSON_ArrayForEach (t, tols) {
		bool yes = false;

		if (i >= DRA_TOLERATIONS_MAX)
			return rc_error_set(err, -EINVAL, "%s.tolerations: more than %d", path,
					    DRA_TOLERATIONS_MAX);
		snprintf(tpath, sizeof(tpath), "%s.tolerations[%zu]", path, i++);
		r = tolerates(t, key, &yes, tpath, err);
		if (r < 0)
			return r;
		*ret |= yes;
	}
	return 0;
}

static int parse_result(const cJSON *res, const char *taint_key, struct dra_result *out,
			const char *path, struct rc_error **err)
{
	const char *request, *device, *share_id;
	const cJSON *admin;
	int r;

	r = get_string(res, "request", DRA_CLAIM_STRING_MAX, true, &request, path, err);
	if (r < 0)
		return r;
	if (!request_name_ok(request))
		return rc_error_set(err, -EINVAL, "%s.request: not a request name", path);
	r = get_string(res, "device", DRA_DEVICE_NAME_MAX, true, &device, path, err);
	if (r < 0)
		return r;
	if (!name_is_safe(device, DRA_DEVICE_NAME_MAX))
		return rc_error_set(err, -EINVAL, "%s.device: not a device name", path);
	r = get_string(res, "shareID", DRA_SHARE_ID_MAX, false, &share_id, path, err);
	if (r < 0)
		return r;
	/* It goes back to the kubelet and into the checkpoint: a UUID, nothing else. */
	if (share_id && !dra_share_id_is_valid(share_id))
		return rc_error_set(err, -EINVAL, "%s.shareID: not a UUID (hex digits and '-')",
				    path);
	admin = cJSON_GetObjectItemCaseSensitive(res, "adminAccess");
	if (admin && !cJSON_IsNull(admin) && !cJSON_IsBool(admin))
		return rc_error_set(err, -EINVAL, "%s.adminAccess: not a boolean", path);
	out->admin_access = cJSON_IsTrue(admin);
	r = tolerates_any(res, taint_key, &out->tolerates_unhealthy, path, err);
	if (r < 0)
		return r;

	out->request = strdup(request);
	out->device = strdup(device);
	out->share_id = share_id ? strdup(share_id) : NULL;
	if (!out->request || !out->device || (share_id && !out->share_id))
		return rc_error_set(err, -ENOMEM, "out of memory");
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

/* The claim's status.allocation.devices.results (*ret NULL when there are none), once its
 * metadata names uid and it is allocated. */
static int results_list(const cJSON *claim, const char *uid, const cJSON **ret,
			struct rc_error **err)
{
	const cJSON *md, *status, *alloc, *devices, *results;
	const char *muid;
	char a[160], b[160];
	int r;

	r = get_object(claim, "metadata", &md, "", err);
	if (r >= 0)
		r = get_string(md, "uid", DRA_UID_MAX, true, &muid, "metadata", err);
	if (r < 0)
		return r;
	if (strcmp(muid, uid) != 0)
		return rc_error_set(err, -EINVAL, "UID %s differs from the kubelet's %s",
				    esc(a, sizeof(a), muid), esc(b, sizeof(b), uid));
	r = get_object(claim, "status", &status, "", err);
	if (r >= 0)
		r = get_object(status, "allocation", &alloc, "status", err);
	if (r < 0)
		return r;
	if (!alloc)
		return rc_error_set(err, -ENOENT, "is not allocated");
	r = get_object(alloc, "devices", &devices, "status.allocation", err);
	if (r < 0)
		return r;
	results = cJSON_GetObjectItemCaseSensitive(devices, "results");
	if (results && !cJSON_IsNull(results) && !cJSON_IsArray(results))
		return rc_error_set(err, -EINVAL, "status.allocation.devices.results: not a list");
	*ret = results;
	return 0;
}

/* The results of driver in pool, parsed; the others are read no further. */
static int take_results(const cJSON *results, const char *driver, const char *pool,
			struct dra_result **ret, size_t *ret_n, struct rc_error **err)
{
	_cleanup_free_ char *taint_key = strdup_printf("%s" DRA_TAINT_SUFFIX, driver);
	struct dra_result *out = NULL;
	const cJSON *res;
	size_t n = 0, i = 0;
	int r = 0;

	if (!taint_key)
		return rc_error_set(err, -ENOMEM, "out of memory");
	cJSON_ArrayForEach (res, results) {
		const char *rdriver, *rpool;
		char path[64];

		if (i >= DRA_RESULTS_MAX) {
			r = rc_error_set(err, -EINVAL,
					 "status.allocation.devices.results: more than %d",
					 DRA_RESULTS_MAX);
			break;
		}
		snprintf(path, sizeof(path), "status.allocation.devices.results[%zu]", i++);
		if (!cJSON_IsObject(res)) {
			r = rc_error_set(err, -EINVAL, "%s: not an object", path);
			break;
		}
		r = get_string(res, "driver", DRA_CLAIM_STRING_MAX, true, &rdriver, path, err);
		if (r >= 0)
			r = get_string(res, "pool", DRA_CLAIM_STRING_MAX, true, &rpool, path, err);
		if (r < 0)
			break;
		if (strcmp(rdriver, driver) != 0 || strcmp(rpool, pool) != 0)
			continue;
		if (!out && !(out = calloc(DRA_RESULTS_MAX, sizeof(*out)))) {
			r = rc_error_set(err, -ENOMEM, "out of memory");
			break;
		}
		/* n counts the entry before it is filled: a half-filled one is freed too. */
		r = parse_result(res, taint_key, &out[n++], path, err);
		if (r < 0)
			break;
	}
	if (r < 0) {
		dra_results_free(out, n);
		return r;
	}
	*ret = out;
	*ret_n = n;
	return 0;
}

int dra_claim_results(const cJSON *claim, const char *uid, const char *driver, const char *pool,
		      struct dra_result **ret, size_t *ret_n, struct rc_error **err)
{
	const cJSON *results = NULL;
	struct dra_result *out = NULL;
	char who[WHO_MAX], a[160], b[160];
	size_t n = 0;
	int r;

	if (!uid || !driver || !pool || !ret || !ret_n)
		return rc_error_set(err, -EINVAL, "claim: invalid arguments");
	if (!cJSON_IsObject(claim))
		return rc_error_set(err, -EINVAL, "claim %s: not a JSON object",
				    esc(a, sizeof(a), uid));
	r = results_list(claim, uid, &results, err);
	if (r >= 0)
		r = take_results(results, driver, pool, &out, &n, err);
	if (r >= 0 && n == 0)
		r = rc_error_set(err, -ENOENT, "holds no device of driver %s in pool %s",
				 esc(a, sizeof(a), driver), esc(b, sizeof(b), pool));
	if (r < 0)
		return rc_error_wrap(err, r, "claim %s", claim_who(claim, who));
	*ret = out;
	*ret_n = n;
	return 0;
}

/* ---- prepare ---------------------------------------------------------------------- */

static bool pool_nccl_env(const struct dra_inventory *inv, const struct dra_hca *h)
{
	const struct cfg_pool *p = dra_hca_pool(inv, h);

	return p && p->nccl_env;
}

/* Whether the claim's container moves h into its network namespace: h is in a `netns: move`
 * pool and one of the claim's results for it holds it (admin access reaches a device in
 * whatever namespace its holder has it, and must not take it away). */
static bool claim_moves(const struct dra_prepare_input *in, const struct dra_hca *h)
{
	const struct cfg_pool *p = dra_hca_pool(in->inv, h);

	if (!p || p->netns != CFG_NETNS_MOVE)
		return false;
	for (size_t i = 0; i < in->n_results; i++)
		if (!in->results[i].admin_access &&
		    dra_inventory_find(in->inv, in->results[i].device) == h)
			return true;
	return false;
}

/* "K=V", V being cfg_env_value() of the HCAs' names, or of their UCX entries when ucx. */
static int add_env(cJSON *env, const char *key, const struct dra_hca *const *hcas, size_t n,
		   bool ucx)
{
	_cleanup_free_ const char **items = calloc(n ? n : 1, sizeof(*items));
	_cleanup_free_ char *value = NULL, *s = NULL;

	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		items[i] = ucx ? hcas[i]->ucx : hcas[i]->d->name;
	value = cfg_env_value(key, items, n);
	s = value ? strdup_printf("%s=%s", key, value) : NULL;
	if (!s)
		return -ENOMEM;
	return cJSON_AddItemToArray(env, cJSON_CreateString(s)) ? 0 : -ENOMEM;
}

/* The per-claim spec: one device named uid whose edits are the claim's env and, for each
 * HCA the claim moves (claim_moves()), the hook that moves it into the container's
 * namespace. The node spec the driver writes has no move hook: the claim's decides. */
static int build_spec(const struct dra_prepare_input *in, const char *kind,
		      const struct dra_hca *const *hcas, size_t n, cJSON **ret)
{
	const struct dra_inventory *inv = in->inv;
	const struct spec_options none = {0};
	cJSON *devices = NULL, *edits, *env;
	_cleanup_(cJSON_Deletep) cJSON *spec = spec_new(kind, &devices);
	bool nccl = false;
	int r;

	if (!spec)
		return -ENOMEM;
	edits = spec_new_device(devices, in->uid);
	env = edits ? cJSON_AddArrayToObject(edits, "env") : NULL;
	if (!env)
		return -ENOMEM;

	for (size_t i = 0; i < n; i++)
		nccl |= pool_nccl_env(inv, hcas[i]);
	r = add_env(env, CFG_ENV_DEVICES, hcas, n, false);
	if (r >= 0 && nccl)
		r = add_env(env, CFG_ENV_NCCL_IB_HCA, hcas, n, false);
	if (r >= 0 && nccl)
		r = add_env(env, CFG_ENV_UCX_NET_DEVICES, hcas, n, true);
	for (size_t i = 0; r >= 0 && i < n; i++)
		if (claim_moves(in, hcas[i]))
			r = spec_add_netns_hook(edits, hcas[i]->d, in->spec ? in->spec : &none);
	if (r < 0)
		return r;
	r = spec_set_version(spec);
	if (r < 0)
		return r;
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

/* Why the device h of result res may not be prepared, as rc_error_set() returns it; 0 when
 * it may. */
static int check_device(const struct dra_prepare_input *in, const struct dra_result *res,
			const struct dra_hca *h, struct rc_error **err)
{
	char a[96], b[160];
	const char *holder;

	if (!h)
		return rc_error_set(err, -ENODEV, "device %s is not on this node (anymore)",
				    esc(a, sizeof(a), res->device));
	/* An inventory that lost either would hand the kubelet a name nothing resolves. */
	if (!h->d || !h->cdi_id[0])
		return rc_error_set(err, -EINVAL, "device %s has no RDMA device or CDI ID",
				    h->name);
	/* Admin access reaches a device whoever holds it (monitoring, diagnostics). */
	holder = in->ckpt && !dra_hca_shared(in->inv, h) && !res->admin_access
		     ? dra_checkpoint_holder(in->ckpt, h->name, in->uid)
		     : NULL;
	if (holder)
		return rc_error_set(err, -EBUSY, "device %s is already prepared for claim %s",
				    h->name, esc(b, sizeof(b), holder));
	if (!h->healthy && !res->tolerates_unhealthy)
		return rc_error_set(err, -EIO, "device %s is unhealthy (%s)", h->name,
				    esc(b, sizeof(b), h->reason[0] ? h->reason : "unknown"));
	return 0;
}

/* A claim's namespace or name as the checkpoint can record it. */
static bool claim_text_ok(const char *s)
{
	size_t n = strnlen(s, DRA_CLAIM_STRING_MAX + 1);

	return n > 0 && n <= DRA_CLAIM_STRING_MAX && text_is_utf8(s, n);
}

/* The number of results, the kind the driver makes (*ret_kind) and each result's device. */
static int check_results(const struct dra_prepare_input *in, char **ret_kind, struct rc_error **err)
{
	_cleanup_free_ char *kind = NULL;
	char b[240];
	int r;

	if (in->n_results == 0 || in->n_results > DRA_RESULTS_MAX)
		return rc_error_set(err, -EINVAL, "%zu results (1..%d)", in->n_results,
				    DRA_RESULTS_MAX);
	kind = strdup_printf("%s/" DRA_CLAIM_KIND_CLASS, in->driver);
	if (!kind)
		return rc_error_set(err, -ENOMEM, "out of memory");
	if (!cdi_kind_is_valid(kind))
		return rc_error_set(err, -EINVAL, "driver %s makes no valid CDI kind",
				    esc(b, sizeof(b), in->driver));
	for (size_t i = 0; i < in->n_results; i++) {
		const struct dra_hca *h = dra_inventory_find(in->inv, in->results[i].device);

		r = check_device(in, &in->results[i], h, err);
		if (r < 0)
			return r;
	}
	*ret_kind = TAKE_PTR(kind);
	return 0;
}

/* The prepared claim of checked results; hcas (room for n_results) gets each HCA once, for
 * the env. Returns 0 or -ENOMEM. */
static int prepared_new(const struct dra_prepare_input *in, const struct dra_hca **hcas,
			size_t *ret_n_hcas, struct dra_prepared_claim **ret)
{
	/* The HCA of each prepared device. */
	_cleanup_free_ const struct dra_hca **dev_hca = calloc(in->n_results, sizeof(*dev_hca));
	struct dra_prepared_claim *p = calloc(1, sizeof(*p));
	size_t n_hcas = 0;
	int r;

	if (!dev_hca || !p)
		goto oom;
	p->uid = strdup(in->uid);
	p->namespace = strdup(in->namespace);
	p->name = strdup(in->name);
	p->devices = calloc(in->n_results, sizeof(*p->devices));
	if (!p->uid || !p->namespace || !p->name || !p->devices)
		goto oom;
	for (size_t i = 0; i < in->n_results; i++) {
		const struct dra_result *res = &in->results[i];
		const struct dra_hca *h = dra_inventory_find(in->inv, res->device);
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
			r = new_device(&p->devices[j], h, in->driver, in->uid, res, in->n_results);
		}
		if (r < 0)
			goto oom;
		while (k < n_hcas && hcas[k] != h)
			k++;
		if (k == n_hcas)
			hcas[n_hcas++] = h;
	}
	*ret = p;
	*ret_n_hcas = n_hcas;
	return 0;
oom:
	dra_prepared_claim_free(p);
	return -ENOMEM;
}

/* dra_prepare() without the claim's name in front of the message. */
static int prepare_claim(const struct dra_prepare_input *in, struct dra_prepared_claim **ret,
			 cJSON **ret_spec, struct rc_error **err)
{
	_cleanup_free_ const struct dra_hca **hcas = NULL;
	_cleanup_free_ char *kind = NULL;
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	const struct dra_prepared_claim *old;
	struct dra_prepared_claim *p = NULL;
	_cleanup_rc_error_ struct rc_error *verr = NULL;
	char b[240];
	size_t n_hcas = 0;
	int r;

	if (!dra_uid_is_valid(in->uid))
		return rc_error_set(err, -EINVAL, "UID %s is not a valid CDI device name",
				    esc(b, sizeof(b), in->uid));
	if (!claim_text_ok(in->namespace) || !claim_text_ok(in->name))
		return rc_error_set(err, -EINVAL, "namespace or name is too long or not UTF-8");
	old = dra_checkpoint_find(in->ckpt, in->uid);
	if (old) {
		p = dra_prepared_claim_copy(old);
		if (!p)
			return rc_error_set(err, -ENOMEM, "out of memory");
		*ret = p;
		*ret_spec = NULL;
		return 1;
	}
	r = check_results(in, &kind, err);
	if (r < 0)
		return r;
	hcas = calloc(in->n_results, sizeof(*hcas));
	r = hcas ? prepared_new(in, hcas, &n_hcas, &p) : -ENOMEM;
	if (r >= 0)
		r = build_spec(in, kind, hcas, n_hcas, &spec);
	if (r >= 0)
		r = cdi_spec_validate(spec, &verr);
	if (r < 0) {
		dra_prepared_claim_free(p);
		if (r == -ENOMEM)
			return rc_error_set(err, r, "out of memory");
		return rc_error_set(err, -EINVAL, "the claim's CDI spec is invalid: %s",
				    rc_error_msg(verr, r));
	}
	*ret = p;
	*ret_spec = TAKE_PTR(spec);
	return 0;
}

int dra_prepare(const struct dra_prepare_input *in, struct dra_prepared_claim **ret,
		cJSON **ret_spec, struct rc_error **err)
{
	char who[WHO_MAX], a[96], b[240];
	int r;

	if (!in || !in->inv || !in->driver || !in->namespace || !in->name || !in->uid || !ret ||
	    !ret_spec || (!in->results && in->n_results))
		return rc_error_set(err, -EINVAL, "claim: invalid arguments");
	r = prepare_claim(in, ret, ret_spec, err);
	if (r < 0) {
		snprintf(who, sizeof(who), "%s/%s", esc(a, sizeof(a), in->namespace),
			 esc(b, sizeof(b), in->name));
		return rc_error_wrap(err, r, "claim %s", who);
	}
	return r;
}
