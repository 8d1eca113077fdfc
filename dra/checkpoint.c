/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checkpoint: what this node prepared, so that Unprepare works after a restart, a
 * SIGKILL or the claim's deletion, and so that no device is prepared twice. Its file is
 * ours, but a damaged disk or a careless operator may have changed it: it is read with
 * the same suspicion as anything else, and a file we cannot read is left for a human.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi.h"
#include "claims-internal.h"
#include "dra.h"

#define CHECKPOINT_VERSION 1
#define CDI_IDS_MAX 16
#define CDI_ID_MAX 512 /* "vendor/class=name": 253 + 1 + 253 and some */

static void strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Frees what p owns and zeroes it (p itself stays). */
static void claim_clear(struct dra_prepared_claim *p)
{
	for (size_t i = 0; i < p->n_devices; i++) {
		struct dra_prepared_device *d = &p->devices[i];

		strv_free(d->requests, d->n_requests);
		free(d->device);
		strv_free(d->cdi_ids, d->n_cdi_ids);
		free(d->share_id);
	}
	free(p->devices);
	free(p->uid);
	free(p->namespace);
	free(p->name);
	free(p->spec_file);
	memset(p, 0, sizeof(*p));
}

void dra_prepared_claim_free(struct dra_prepared_claim *p)
{
	if (!p)
		return;
	claim_clear(p);
	free(p);
}

void dra_checkpoint_free(struct dra_checkpoint *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_claims; i++)
		claim_clear(&c->claims[i]);
	free(c->claims);
	free(c);
}

static char **strv_copy(char *const *v, size_t n)
{
	char **copy = calloc(n ? n : 1, sizeof(*copy));

	if (!copy)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(v[i]);
		if (!copy[i]) {
			strv_free(copy, i);
			return NULL;
		}
	}
	return copy;
}

struct dra_prepared_claim *dra_prepared_claim_copy(const struct dra_prepared_claim *p)
{
	struct dra_prepared_claim *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->uid = strdup(p->uid);
	q->namespace = strdup(p->namespace);
	q->name = strdup(p->name);
	q->spec_file = p->spec_file ? strdup(p->spec_file) : NULL;
	q->devices = calloc(p->n_devices ? p->n_devices : 1, sizeof(*q->devices));
	if (!q->uid || !q->namespace || !q->name || (p->spec_file && !q->spec_file) || !q->devices)
		goto oom;
	for (size_t i = 0; i < p->n_devices; i++) {
		const struct dra_prepared_device *d = &p->devices[i];
		struct dra_prepared_device *e = &q->devices[q->n_devices++];

		e->device = strdup(d->device);
		e->requests = strv_copy(d->requests, d->n_requests);
		if (e->requests)
			e->n_requests = d->n_requests;
		e->cdi_ids = strv_copy(d->cdi_ids, d->n_cdi_ids);
		if (e->cdi_ids)
			e->n_cdi_ids = d->n_cdi_ids;
		e->share_id = d->share_id ? strdup(d->share_id) : NULL;
		e->admin = d->admin;
		if (!e->device || !e->requests || !e->cdi_ids || (d->share_id && !e->share_id))
			goto oom;
	}
	return q;
oom:
	dra_prepared_claim_free(q);
	return NULL;
}

const struct dra_prepared_claim *dra_checkpoint_find(const struct dra_checkpoint *c,
						     const char *uid)
{
	if (!c || !uid)
		return NULL;
	for (size_t i = 0; i < c->n_claims; i++)
		if (strcmp(c->claims[i].uid, uid) == 0)
			return &c->claims[i];
	return NULL;
}

const char *dra_checkpoint_holder(const struct dra_checkpoint *c, const char *device,
				  const char *uid)
{
	if (!c || !device)
		return NULL;
	for (size_t i = 0; i < c->n_claims; i++) {
		const struct dra_prepared_claim *p = &c->claims[i];

		if (uid && strcmp(p->uid, uid) == 0)
			continue;
		for (size_t j = 0; j < p->n_devices; j++)
			if (!p->devices[j].admin && strcmp(p->devices[j].device, device) == 0)
				return p->uid;
	}
	return NULL;
}

int dra_checkpoint_add(struct dra_checkpoint *c, struct dra_prepared_claim *p)
{
	struct dra_prepared_claim *v;

	if (!c || !p || !p->uid) {
		dra_prepared_claim_free(p);
		return -EINVAL;
	}
	for (size_t i = 0; i < c->n_claims; i++)
		if (strcmp(c->claims[i].uid, p->uid) == 0) {
			claim_clear(&c->claims[i]);
			c->claims[i] = *p;
			free(p);
			return 0;
		}
	v = reallocarray(c->claims, c->n_claims + 1, sizeof(*v));
	if (!v) {
		dra_prepared_claim_free(p);
		return -ENOMEM;
	}
	c->claims = v;
	c->claims[c->n_claims++] = *p;
	free(p);
	return 0;
}

int dra_checkpoint_remove(struct dra_checkpoint *c, const char *uid)
{
	if (!c || !uid)
		return 0;
	for (size_t i = 0; i < c->n_claims; i++)
		if (strcmp(c->claims[i].uid, uid) == 0) {
			claim_clear(&c->claims[i]);
			memmove(&c->claims[i], &c->claims[i + 1],
				(c->n_claims - i - 1) * sizeof(c->claims[0]));
			c->n_claims--;
			return 1;
		}
	return 0;
}

/* ---- the file's format ------------------------------------------------------------ */

/* Non-empty, at most max bytes, UTF-8 without control characters. */
static bool text_ok(const char *s, size_t max)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, max + 1);
	if (n == 0 || n > max || !text_is_utf8(s, n))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* A base name in the spec dir: what dra_claim_spec_file_name makes (no '/', not hidden). */
static bool spec_file_ok(const char *s)
{
	return name_is_safe(s, NAME_MAX) && s[0] != '.';
}

/* Why p cannot be recorded, or NULL. */
static const char *claim_problem(const struct dra_prepared_claim *p)
{
	if (!p->uid || !dra_uid_is_valid(p->uid))
		return "uid: not a valid claim UID";
	if (!text_ok(p->namespace, DRA_CLAIM_STRING_MAX))
		return "namespace: empty, too long or not text";
	if (!text_ok(p->name, DRA_CLAIM_STRING_MAX))
		return "name: empty, too long or not text";
	if (p->spec_file && !spec_file_ok(p->spec_file))
		return "specFile: not a spec file name";
	if (p->n_devices == 0 || p->n_devices > DRA_RESULTS_MAX)
		return "devices: empty or too many";
	for (size_t i = 0; i < p->n_devices; i++) {
		const struct dra_prepared_device *d = &p->devices[i];

		if (!name_is_safe(d->device, DRA_DEVICE_NAME_MAX))
			return "devices[].device: not a device name";
		if (d->share_id && !dra_share_id_is_valid(d->share_id))
			return "devices[].shareID: not a share ID";
		if (d->n_requests == 0 || d->n_requests > DRA_RESULTS_MAX)
			return "devices[].requests: empty or too many";
		for (size_t j = 0; j < d->n_requests; j++)
			if (!text_ok(d->requests[j], DRA_CLAIM_STRING_MAX))
				return "devices[].requests[]: empty, too long or not text";
		if (d->n_cdi_ids == 0 || d->n_cdi_ids > CDI_IDS_MAX)
			return "devices[].cdiDeviceIDs: empty or too many";
		for (size_t j = 0; j < d->n_cdi_ids; j++)
			if (!text_ok(d->cdi_ids[j], CDI_ID_MAX))
				return "devices[].cdiDeviceIDs[]: empty, too long or not text";
	}
	return NULL;
}

/* Only the keys in allowed (NULL-terminated). */
static const char *unknown_key(const cJSON *obj, const char *const *allowed)
{
	const cJSON *it;

	cJSON_ArrayForEach (it, obj) {
		bool known = false;

		for (const char *const *a = allowed; *a && !known; a++)
			known = it->string && strcmp(it->string, *a) == 0;
		if (!known)
			return it->string ? it->string : "";
	}
	return NULL;
}

static int take_string(const cJSON *obj, const char *key, bool required, char **ret,
		       const char *path, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	*ret = NULL;
	if (!v) {
		if (!required)
			return 0;
		return err_fail(err, errlen, -EBADMSG, "%s.%s: missing", path, key);
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return err_fail(err, errlen, -EBADMSG, "%s.%s: not a string", path, key);
	*ret = strdup(v->valuestring);
	return *ret ? 0 : err_fail(err, errlen, -ENOMEM, "out of memory");
}

static int take_strv(const cJSON *obj, const char *key, size_t max, char ***ret, size_t *ret_n,
		     const char *path, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key), *it;
	size_t n = 0;
	char **s;

	if (!cJSON_IsArray(v))
		return err_fail(err, errlen, -EBADMSG, "%s.%s: %s", path, key,
				v ? "not a list" : "missing");
	cJSON_ArrayForEach (it, v) {
		if (++n > max)
			return err_fail(err, errlen, -EBADMSG, "%s.%s: more than %zu", path, key,
					max);
		if (!cJSON_IsString(it) || !it->valuestring)
			return err_fail(err, errlen, -EBADMSG, "%s.%s[%zu]: not a string", path,
					key, n - 1);
	}
	s = calloc(n ? n : 1, sizeof(*s));
	if (!s)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	*ret = s;
	*ret_n = 0;
	cJSON_ArrayForEach (it, v) {
		s[*ret_n] = strdup(it->valuestring);
		if (!s[*ret_n])
			return err_fail(err, errlen, -ENOMEM, "out of memory");
		(*ret_n)++;
	}
	return 0;
}

static int parse_device(const cJSON *obj, struct dra_prepared_device *d, const char *path,
			char *err, size_t errlen)
{
	static const char *const keys[] = {"device",  "requests",    "cdiDeviceIDs",
					   "shareID", "adminAccess", NULL};
	const cJSON *admin;
	const char *bad;
	int r;

	if (!cJSON_IsObject(obj))
		return err_fail(err, errlen, -EBADMSG, "%s: not an object", path);
	bad = unknown_key(obj, keys);
	if (bad)
		return err_fail(err, errlen, -EBADMSG, "%s: unknown key", path);
	r = take_string(obj, "device", true, &d->device, path, err, errlen);
	if (r >= 0)
		r = take_strv(obj, "requests", DRA_RESULTS_MAX, &d->requests, &d->n_requests, path,
			      err, errlen);
	if (r >= 0)
		r = take_strv(obj, "cdiDeviceIDs", CDI_IDS_MAX, &d->cdi_ids, &d->n_cdi_ids, path,
			      err, errlen);
	if (r >= 0)
		r = take_string(obj, "shareID", false, &d->share_id, path, err, errlen);
	if (r < 0)
		return r;
	/* Written only when true; absent (an older release's checkpoint) is false. */
	admin = cJSON_GetObjectItemCaseSensitive(obj, "adminAccess");
	if (admin && !cJSON_IsBool(admin))
		return err_fail(err, errlen, -EBADMSG, "%s.adminAccess: not a boolean", path);
	d->admin = cJSON_IsTrue(admin);
	return 0;
}

static int parse_claim(const cJSON *obj, struct dra_prepared_claim *p, const char *path, char *err,
		       size_t errlen)
{
	static const char *const keys[] = {"uid", "namespace", "name", "specFile", "devices", NULL};
	const cJSON *devs, *it;
	const char *problem;
	size_t n = 0;
	int r;

	if (!cJSON_IsObject(obj))
		return err_fail(err, errlen, -EBADMSG, "%s: not an object", path);
	if (unknown_key(obj, keys))
		return err_fail(err, errlen, -EBADMSG, "%s: unknown key", path);
	r = take_string(obj, "uid", true, &p->uid, path, err, errlen);
	if (r >= 0)
		r = take_string(obj, "namespace", true, &p->namespace, path, err, errlen);
	if (r >= 0)
		r = take_string(obj, "name", true, &p->name, path, err, errlen);
	if (r >= 0)
		r = take_string(obj, "specFile", false, &p->spec_file, path, err, errlen);
	if (r < 0)
		return r;
	devs = cJSON_GetObjectItemCaseSensitive(obj, "devices");
	if (!cJSON_IsArray(devs))
		return err_fail(err, errlen, -EBADMSG, "%s.devices: %s", path,
				devs ? "not a list" : "missing");
	cJSON_ArrayForEach (it, devs) {
		if (++n > DRA_RESULTS_MAX)
			return err_fail(err, errlen, -EBADMSG, "%s.devices: more than %d", path,
					DRA_RESULTS_MAX);
	}
	p->devices = calloc(n ? n : 1, sizeof(*p->devices));
	if (!p->devices)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	cJSON_ArrayForEach (it, devs) {
		char dpath[96];

		snprintf(dpath, sizeof(dpath), "%s.devices[%zu]", path, p->n_devices);
		r = parse_device(it, &p->devices[p->n_devices++], dpath, err, errlen);
		if (r < 0)
			return r;
	}
	problem = claim_problem(p);
	if (problem)
		return err_fail(err, errlen, -EBADMSG, "%s.%s", path, problem);
	return 0;
}

static int uid_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct dra_prepared_claim *const *)a)->uid,
		      (*(const struct dra_prepared_claim *const *)b)->uid);
}

/* The first UID recorded twice, or NULL; O(n log n) for hostile sizes. */
static const char *duplicate_uid(const struct dra_checkpoint *c, int *r)
{
	_cleanup_free_ const struct dra_prepared_claim **v = NULL;

	*r = 0;
	if (c->n_claims < 2)
		return NULL;
	v = calloc(c->n_claims, sizeof(*v));
	if (!v) {
		*r = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < c->n_claims; i++)
		v[i] = &c->claims[i];
	qsort(v, c->n_claims, sizeof(*v), uid_cmp);
	for (size_t i = 1; i < c->n_claims; i++)
		if (strcmp(v[i - 1]->uid, v[i]->uid) == 0)
			return v[i]->uid;
	return NULL;
}

int dra_checkpoint_parse(const char *buf, size_t len, struct dra_checkpoint **ret, char *err,
			 size_t errlen)
{
	static const char *const keys[] = {"version", "claims", NULL};
	_cleanup_(cJSON_Deletep) cJSON *tree = NULL;
	struct dra_checkpoint *c = NULL;
	const cJSON *version, *claims, *it;
	const char *dup;
	_cleanup_rc_error_ struct rc_error *perr = NULL;
	size_t n = 0;
	int r;

	if (!ret || (!buf && len))
		return err_fail(err, errlen, -EINVAL, "invalid arguments");
	/* The CDI reader: strict JSON (no duplicate keys, bounded depth, UTF-8, no NUL). */
	r = cdi_spec_parse(buf ? buf : "", len, CDI_FORMAT_JSON, &tree, &perr);
	if (r == -ENOMEM)
		return err_fail(err, errlen, r, "out of memory");
	if (r == -EFBIG)
		return err_fail(err, errlen, -EBADMSG, "larger than %u bytes",
				DRA_CHECKPOINT_MAX_BYTES);
	if (r < 0)
		return err_fail(err, errlen, -EBADMSG, "%s", rc_error_msg(perr, r));
	if (!cJSON_IsObject(tree))
		return err_fail(err, errlen, -EBADMSG, "not a JSON object");
	if (unknown_key(tree, keys))
		return err_fail(err, errlen, -EBADMSG, "unknown top-level key");
	version = cJSON_GetObjectItemCaseSensitive(tree, "version");
	if (!cJSON_IsNumber(version))
		return err_fail(err, errlen, -EBADMSG, "version: %s",
				version ? "not a number" : "missing");
	if (version->valuedouble != CHECKPOINT_VERSION)
		return err_fail(err, errlen, -EBADMSG,
				"version: %g is not %d (written by another release?)",
				version->valuedouble, CHECKPOINT_VERSION);
	claims = cJSON_GetObjectItemCaseSensitive(tree, "claims");
	if (!cJSON_IsArray(claims))
		return err_fail(err, errlen, -EBADMSG, "claims: %s",
				claims ? "not a list" : "missing");
	cJSON_ArrayForEach (it, claims) {
		if (++n > DRA_CHECKPOINT_CLAIMS_MAX)
			return err_fail(err, errlen, -EBADMSG, "claims: more than %d",
					DRA_CHECKPOINT_CLAIMS_MAX);
	}

	c = calloc(1, sizeof(*c));
	if (c)
		c->claims = calloc(n ? n : 1, sizeof(*c->claims));
	if (!c || !c->claims) {
		r = err_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	cJSON_ArrayForEach (it, claims) {
		char path[32];

		snprintf(path, sizeof(path), "claims[%zu]", c->n_claims);
		r = parse_claim(it, &c->claims[c->n_claims++], path, err, errlen);
		if (r < 0)
			goto fail;
	}
	dup = duplicate_uid(c, &r);
	if (r < 0) {
		r = err_fail(err, errlen, r, "out of memory");
		goto fail;
	}
	if (dup) {
		r = err_fail(err, errlen, -EBADMSG, "claims: UID %s is recorded twice", dup);
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	dra_checkpoint_free(c);
	return r;
}

static cJSON *strv_json(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < n; i++)
		if (!cJSON_AddItemToArray(a, cJSON_CreateString(v[i]))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

static cJSON *claim_json(const struct dra_prepared_claim *p)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	cJSON *devs;

	if (!o || !cJSON_AddStringToObject(o, "uid", p->uid) ||
	    !cJSON_AddStringToObject(o, "namespace", p->namespace) ||
	    !cJSON_AddStringToObject(o, "name", p->name) ||
	    (p->spec_file && !cJSON_AddStringToObject(o, "specFile", p->spec_file)))
		return NULL;
	devs = cJSON_AddArrayToObject(o, "devices");
	if (!devs)
		return NULL;
	for (size_t i = 0; i < p->n_devices; i++) {
		const struct dra_prepared_device *d = &p->devices[i];
		cJSON *dj = cJSON_CreateObject();

		if (!dj || !cJSON_AddItemToArray(devs, dj)) {
			cJSON_Delete(dj);
			return NULL;
		}
		if (!cJSON_AddStringToObject(dj, "device", d->device) ||
		    !cJSON_AddItemToObject(dj, "requests", strv_json(d->requests, d->n_requests)) ||
		    !cJSON_AddItemToObject(dj, "cdiDeviceIDs",
					   strv_json(d->cdi_ids, d->n_cdi_ids)) ||
		    (d->share_id && !cJSON_AddStringToObject(dj, "shareID", d->share_id)) ||
		    (d->admin && !cJSON_AddTrueToObject(dj, "adminAccess")))
			return NULL;
	}
	return TAKE_PTR(o);
}

int dra_checkpoint_format(const struct dra_checkpoint *c, char **ret_buf, size_t *ret_len,
			  char *err, size_t errlen)
{
	_cleanup_(cJSON_Deletep) cJSON *tree = cJSON_CreateObject();
	const char *problem, *dup;
	cJSON *claims;
	int r;

	if (!c || !ret_buf || !ret_len)
		return err_fail(err, errlen, -EINVAL, "invalid arguments");
	if (c->n_claims > DRA_CHECKPOINT_CLAIMS_MAX)
		return err_fail(err, errlen, -EINVAL, "more than %d claims",
				DRA_CHECKPOINT_CLAIMS_MAX);
	if (!tree || !cJSON_AddNumberToObject(tree, "version", CHECKPOINT_VERSION))
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	claims = cJSON_AddArrayToObject(tree, "claims");
	if (!claims)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < c->n_claims; i++) {
		cJSON *o;

		/* Never write what the next start would refuse to read. */
		problem = claim_problem(&c->claims[i]);
		if (problem)
			return err_fail(err, errlen, -EINVAL, "claims[%zu].%s", i, problem);
		o = claim_json(&c->claims[i]);
		if (!o || !cJSON_AddItemToArray(claims, o)) {
			cJSON_Delete(o);
			return err_fail(err, errlen, -ENOMEM, "out of memory");
		}
	}
	dup = duplicate_uid(c, &r);
	if (r < 0)
		return err_fail(err, errlen, r, "out of memory");
	if (dup)
		return err_fail(err, errlen, -EINVAL, "claims: UID %s is recorded twice", dup);
	r = cdi_spec_format(tree, CDI_FORMAT_JSON, ret_buf, ret_len);
	if (r < 0)
		return err_fail(err, errlen, r, "cannot format the checkpoint: %s", strerror(-r));
	return 0;
}

/* ---- the file ----------------------------------------------------------------------- */

static int empty(struct dra_checkpoint **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

int dra_checkpoint_load(const char *dir, struct dra_checkpoint **ret, char *err, size_t errlen)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	_cleanup_free_ char *buf = NULL, *qdir = NULL;
	char perr[512];
	struct stat st;
	size_t len;
	int r;

	if (!dir || !*dir || !ret)
		return err_fail(err, errlen, -EINVAL, "invalid arguments");
	qdir = quote_untrusted(dir);
	if (!qdir)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 && errno == ENOENT)
		return empty(ret) < 0 ? err_fail(err, errlen, -ENOMEM, "out of memory") : 0;
	if (dirfd < 0 && (errno == ELOOP || errno == ENOTDIR) && lstat(dir, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		return err_fail(err, errlen, -ELOOP, "%s: is a symlink, not followed", qdir);
	if (dirfd < 0)
		return err_fail(err, errlen, -errno, "%s: %s", qdir, strerror(errno));

	fd = openat(dirfd, DRA_CHECKPOINT_NAME,
		    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		return empty(ret) < 0 ? err_fail(err, errlen, -ENOMEM, "out of memory") : 0;
	if (fd < 0 && errno == ELOOP)
		return err_fail(
		    err, errlen, -ELOOP,
		    "%s/" DRA_CHECKPOINT_NAME ": is a symlink, not followed (left in place)", qdir);
	if (fd < 0)
		return err_fail(err, errlen, -errno, "%s/" DRA_CHECKPOINT_NAME ": %s", qdir,
				strerror(errno));
	if (fstat(fd, &st) < 0)
		return err_fail(err, errlen, -errno, "%s/" DRA_CHECKPOINT_NAME ": %s", qdir,
				strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_fail(err, errlen, -EBADMSG,
				"%s/" DRA_CHECKPOINT_NAME ": not a regular file (left in place)",
				qdir);
	if ((unsigned long long)st.st_size > DRA_CHECKPOINT_MAX_BYTES)
		return err_fail(err, errlen, -EBADMSG,
				"%s/" DRA_CHECKPOINT_NAME ": larger than %u bytes (left in place)",
				qdir, DRA_CHECKPOINT_MAX_BYTES);
	r = read_full_fd(fd, DRA_CHECKPOINT_MAX_BYTES, &buf, &len);
	if (r == -EFBIG)
		return err_fail(err, errlen, -EBADMSG,
				"%s/" DRA_CHECKPOINT_NAME ": larger than %u bytes (left in place)",
				qdir, DRA_CHECKPOINT_MAX_BYTES);
	if (r < 0)
		return err_fail(err, errlen, r, "%s/" DRA_CHECKPOINT_NAME ": %s", qdir,
				strerror(-r));
	r = dra_checkpoint_parse(buf, len, ret, perr, sizeof(perr));
	if (r == -ENOMEM)
		return err_fail(err, errlen, r, "out of memory");
	if (r < 0)
		return err_fail(err, errlen, -EBADMSG,
				"%s/" DRA_CHECKPOINT_NAME ": %s (corrupt, left in place)", qdir,
				perr);
	return 0;
}

int dra_checkpoint_save(const struct dra_checkpoint *c, const char *dir, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL, *qdir = NULL;
	size_t len;
	int r;

	if (!c || !dir || !*dir)
		return err_fail(err, errlen, -EINVAL, "invalid arguments");
	qdir = quote_untrusted(dir);
	if (!qdir)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	r = dra_checkpoint_format(c, &buf, &len, err, errlen);
	if (r < 0)
		return r;
	r = cdi_write_file_atomic_mode(dir, DRA_CHECKPOINT_NAME, buf, len, NULL, 0600);
	if (r == -ELOOP)
		return err_fail(
		    err, errlen, r,
		    "%s/" DRA_CHECKPOINT_NAME ": it or its dir is a symlink, not followed", qdir);
	if (r == -EEXIST)
		return err_fail(err, errlen, r,
				"%s/" DRA_CHECKPOINT_NAME ": not a regular file, kept", qdir);
	if (r < 0)
		return err_fail(err, errlen, r, "%s/" DRA_CHECKPOINT_NAME ": %s", qdir,
				strerror(-r));
	return 0;
}
