/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI names, versions and spec validation.
 *
 * The rules are those of the CDI Go library (what podman, containerd and CRI-O run),
 * made stricter where a released runtime crashes or refuses what the latest library
 * accepts: one-character vendors and classes, and unknown or empty fields that older
 * libraries reject through strict decoding.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "cdi-internal.h"

static const char *const known_versions[] = {
    "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0",
};
enum { V030, V040, V050, V060, V070, V080, V100, V110 };

static const char *const hook_names[] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop",
};

/* Kubernetes annotation limit, which the CDI libraries apply to spec annotations. */
#define ANNOTATIONS_MAX_BYTES (256 * 1024)

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

const char *cdi_quote(char *buf, size_t size, const char *s)
{
	static const size_t max_shown = 64;
	size_t o = 0, shown = 0;

	if (size < 8) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8];
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else
			n = (size_t)snprintf(tmp, sizeof(tmp), "%c", c);
		/* Keep room for the closing quote, "..." and the NUL. */
		if (shown >= max_shown || o + n + 5 > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
		shown++;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

const char *cdi_path_key(char *buf, size_t size, const char *key)
{
	size_t n =
	    strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/");

	if (n > 0 && n <= 64 && key[n] == '\0')
		return key;
	return cdi_quote(buf, size, key);
}

/* ---- names ------------------------------------------------------------------------- */

/* vendor and class: ^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$ */
static const char *label_problem(const char *s, size_t len, bool allow_dot, bool class)
{
#define WHAT(msg) (class ? "class " msg : "vendor " msg)
	/* Released CDI libraries index past a one-character label and panic. */
	if (len < 2)
		return WHAT("must be at least 2 characters");
	if (!is_alpha(s[0]))
		return WHAT("must start with a letter");
	if (!is_alnum(s[len - 1]))
		return WHAT("must end with a letter or digit");
	for (size_t i = 1; i < len - 1; i++) {
		if (is_alnum(s[i]) || s[i] == '_' || s[i] == '-' || (s[i] == '.' && allow_dot))
			continue;
		if (s[i] == '.')
			return WHAT("may not contain '.' (needs cdiVersion 0.6.0, which older "
				    "runtimes such as podman 4.3 reject)");
		return WHAT("may only contain [A-Za-z0-9_.-]");
	}
	return NULL;
#undef WHAT
}

const char *cdi_kind_problem(const char *kind, bool allow_dot_class)
{
	const char *slash, *r;
	size_t len;

	if (!kind || !*kind)
		return "empty kind";
	len = strnlen(kind, CDI_KIND_MAX + 1);
	if (len > CDI_KIND_MAX)
		return "kind longer than 253 characters";
	slash = strchr(kind, '/');
	if (!slash)
		return "kind must be vendor/class";
	if (strchr(slash + 1, '/'))
		return "kind has more than one '/'";
	r = label_problem(kind, (size_t)(slash - kind), true, false);
	if (r)
		return r;
	return label_problem(slash + 1, strlen(slash + 1), allow_dot_class, true);
}

bool cdi_kind_is_valid(const char *kind)
{
	return !cdi_kind_problem(kind, false);
}

const char *cdi_device_name_problem(const char *name)
{
	size_t len;

	if (!name || !*name)
		return "empty device name";
	len = strnlen(name, CDI_DEVICE_NAME_MAX + 1);
	if (len > CDI_DEVICE_NAME_MAX)
		return "device name longer than 253 characters";
	if (!is_alnum(name[0]))
		return "device name must start with a letter or digit";
	if (!is_alnum(name[len - 1]))
		return "device name must end with a letter or digit";
	for (size_t i = 1; i < len - 1; i++)
		if (!is_alnum(name[i]) && !strchr("_.:-", name[i]))
			return "device name may only contain [A-Za-z0-9_.:-]";
	return NULL;
}

bool cdi_device_name_is_valid(const char *name)
{
	return !cdi_device_name_problem(name);
}

/* ---- versions ---------------------------------------------------------------------- */

static bool parse_version(const char *s, unsigned long v[3])
{
	for (int i = 0; i < 3; i++) {
		size_t n = 0;

		v[i] = 0;
		while (is_digit(s[n])) {
			if (n >= 9)
				return false;
			v[i] = v[i] * 10 + (unsigned long)(s[n] - '0');
			n++;
		}
		if (n == 0)
			return false;
		s += n;
		if (i < 2 && *s++ != '.')
			return false;
	}
	return *s == '\0';
}

int cdi_version_compare(const char *a, const char *b)
{
	unsigned long va[3], vb[3];
	bool pa = a && parse_version(a, va), pb = b && parse_version(b, vb);

	if (!pa || !pb) {
		int r;

		if (pa != pb)
			return pa ? 1 : -1;
		/* Both unparsable: still a total order, so sorting is deterministic. */
		r = strcmp(a ? a : "", b ? b : "");
		return (r > 0) - (r < 0);
	}
	for (int i = 0; i < 3; i++)
		if (va[i] != vb[i])
			return va[i] < vb[i] ? -1 : 1;
	return 0;
}

static int version_index(const char *v)
{
	for (size_t i = 0; i < ELEMENTSOF(known_versions); i++)
		if (strcmp(v, known_versions[i]) == 0)
			return (int)i;
	return -1;
}

/*
 * The minimum version walk. A field counts as soon as its key is present, even with an
 * empty value: libraries older than the field reject the unknown key outright (strict
 * decoding), whatever its value.
 */
struct minver {
	int level;
	char *why;
	size_t whylen;
};

static void need(struct minver *m, int level, const char *fmt, ...) _printf_(3, 4);
static void need(struct minver *m, int level, const char *fmt, ...)
{
	va_list ap;

	if (level <= m->level)
		return;
	m->level = level;
	if (m->why && m->whylen) {
		va_start(ap, fmt);
		vsnprintf(m->why, m->whylen, fmt, ap);
		va_end(ap);
	}
}

static void minver_edits(struct minver *m, const cJSON *edits, const char *at)
{
	const cJSON *item, *sub;
	size_t i;

	if (!cJSON_IsObject(edits))
		return;
	i = 0;
	cJSON_ArrayForEach (item, cJSON_GetObjectItemCaseSensitive(edits, "deviceNodes")) {
		if (cJSON_GetObjectItemCaseSensitive(item, "hostPath"))
			need(m, V050, "%s.deviceNodes[%zu].hostPath", at, i);
		i++;
	}
	i = 0;
	cJSON_ArrayForEach (item, cJSON_GetObjectItemCaseSensitive(edits, "mounts")) {
		if (cJSON_GetObjectItemCaseSensitive(item, "type"))
			need(m, V040, "%s.mounts[%zu].type", at, i);
		i++;
	}
	sub = cJSON_GetObjectItemCaseSensitive(edits, "intelRdt");
	if (sub) {
		need(m, V070, "%s.intelRdt", at);
		if (cJSON_GetObjectItemCaseSensitive(sub, "schemata"))
			need(m, V110, "%s.intelRdt.schemata", at);
		if (cJSON_GetObjectItemCaseSensitive(sub, "enableMonitoring"))
			need(m, V110, "%s.intelRdt.enableMonitoring", at);
	}
	if (cJSON_GetObjectItemCaseSensitive(edits, "additionalGids"))
		need(m, V070, "%s.additionalGids", at);
	if (cJSON_GetObjectItemCaseSensitive(edits, "netDevices"))
		need(m, V110, "%s.netDevices", at);
}

const char *cdi_min_version_why(const cJSON *spec, char *why, size_t whylen)
{
	struct minver m = {.level = V030, .why = why, .whylen = whylen};
	const cJSON *kind, *dev;
	size_t i = 0;

	if (why && whylen)
		why[0] = '\0';
	kind = cJSON_GetObjectItemCaseSensitive(spec, "kind");
	if (cJSON_IsString(kind) && kind->valuestring) {
		const char *slash = strchr(kind->valuestring, '/');

		if (slash && strchr(slash + 1, '.'))
			need(&m, V060, "kind");
	}
	if (cJSON_GetObjectItemCaseSensitive(spec, "annotations"))
		need(&m, V060, "annotations");
	cJSON_ArrayForEach (dev, cJSON_GetObjectItemCaseSensitive(spec, "devices")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(dev, "name");
		char at[64];

		if (cJSON_IsString(name) && name->valuestring && name->valuestring[0] &&
		    !is_alpha(name->valuestring[0]))
			need(&m, V050, "devices[%zu].name", i);
		if (cJSON_GetObjectItemCaseSensitive(dev, "annotations"))
			need(&m, V060, "devices[%zu].annotations", i);
		snprintf(at, sizeof(at), "devices[%zu].containerEdits", i);
		minver_edits(&m, cJSON_GetObjectItemCaseSensitive(dev, "containerEdits"), at);
		i++;
	}
	minver_edits(&m, cJSON_GetObjectItemCaseSensitive(spec, "containerEdits"),
		     "containerEdits");
	return known_versions[m.level];
}

const char *cdi_min_version(const cJSON *spec)
{
	return cdi_min_version_why(spec, NULL, 0);
}

/* ---- spec validation --------------------------------------------------------------- */

struct vctx {
	struct rc_error **err;
	char path[512];
	size_t plen;
	bool allow_dot_class;
};

/* Appends ".key" or "[i]" to the current path; returns the length to restore. */
static size_t push(struct vctx *v, const char *fmt, ...) _printf_(2, 3);
static size_t push(struct vctx *v, const char *fmt, ...)
{
	size_t old = v->plen;
	va_list ap;
	int n;

	if (old >= sizeof(v->path) - 1)
		return old;
	va_start(ap, fmt);
	n = vsnprintf(v->path + old, sizeof(v->path) - old, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	v->plen = old + (size_t)n < sizeof(v->path) ? old + (size_t)n : sizeof(v->path) - 1;
	return old;
}

/* push() without printf: these run for every field of every spec. */
static size_t push_raw(struct vctx *v, const char *s, size_t n)
{
	size_t old = v->plen, room = sizeof(v->path) - 1 - old;

	if (n > room)
		n = room;
	memcpy(v->path + old, s, n);
	v->plen = old + n;
	v->path[v->plen] = '\0';
	return old;
}

static size_t push_key(struct vctx *v, const char *key)
{
	size_t old = v->plen;

	if (old)
		push_raw(v, ".", 1);
	push_raw(v, key, strlen(key));
	return old;
}

static size_t push_index(struct vctx *v, size_t i)
{
	char buf[24], *p = buf + sizeof(buf);

	*--p = ']';
	do
		*--p = (char)('0' + i % 10);
	while ((i /= 10) > 0);
	*--p = '[';
	return push_raw(v, p, (size_t)(buf + sizeof(buf) - p));
}

/* Keys from the input are shown as they are when harmless, quoted otherwise. */
static size_t push_input_key(struct vctx *v, const char *key)
{
	char q[96];

	return push_key(v, cdi_path_key(q, sizeof(q), key));
}

static void pop(struct vctx *v, size_t old)
{
	v->plen = old;
	v->path[old] = '\0';
}

static int fail(struct vctx *v, const char *fmt, ...) _printf_(2, 3);
static int fail(struct vctx *v, const char *fmt, ...)
{
	_cleanup_free_ char *reason = NULL;
	va_list ap;
	int n;

	if (!v->err || *v->err)
		return -EINVAL;
	va_start(ap, fmt);
	n = vasprintf(&reason, fmt, ap);
	va_end(ap);
	if (n < 0)
		return rc_error_set(v->err, -EINVAL, NULL);
	return rc_error_set(v->err, -EINVAL, "%s: %s", v->plen ? v->path : "spec", reason);
}

static int fail_key(struct vctx *v, const char *key, const char *fmt, ...) _printf_(3, 4);
static int fail_key(struct vctx *v, const char *key, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	push_key(v, key);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fail(v, "%s", msg);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *cdi_sorted_duplicate(const char **v, size_t n)
{
	if (n < 2)
		return NULL;
	qsort(v, n, sizeof(*v), cmp_strp);
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			return v[i];
	return NULL;
}

/*
 * Duplicate keys (cJSON keeps both; the Go libraries refuse them) and keys outside
 * allowed (NULL: any key). Runs in O(n log n) because annotations may be large.
 */
static int check_keys(struct vctx *v, const cJSON *obj, const char *const *allowed,
		      size_t n_allowed)
{
	_cleanup_free_ const char **keys = NULL;
	bool seen[16] = {};
	const char *dup;
	const cJSON *c;
	size_t n = 0;

	cJSON_ArrayForEach (c, obj) {
		if (!c->string)
			return fail(v, "object member without a name");
		if (allowed) {
			size_t i = 0;

			while (i < n_allowed && strcmp(c->string, allowed[i]) != 0)
				i++;
			if (i == n_allowed) {
				push_input_key(v, c->string);
				return fail(v, "unknown field");
			}
			/* Known fields: a duplicate is a second hit on the same slot. */
			if (i < ELEMENTSOF(seen) && seen[i]) {
				push_input_key(v, c->string);
				return fail(v, "duplicate field");
			}
			if (i < ELEMENTSOF(seen))
				seen[i] = true;
		}
		n++;
	}
	if (n < 2 || (allowed && n_allowed <= ELEMENTSOF(seen)))
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	n = 0;
	cJSON_ArrayForEach (c, obj)
		keys[n++] = c->string;
	dup = cdi_sorted_duplicate(keys, n);
	if (dup) {
		push_input_key(v, dup);
		return fail(v, "duplicate field");
	}
	return 0;
}

#define CHECK_KEYS(v, obj, list) check_keys(v, obj, list, ELEMENTSOF(list))

static int want_object(struct vctx *v, const cJSON *item)
{
	if (!cJSON_IsObject(item))
		return fail(v, "must be an object");
	return 0;
}

static int want_string(struct vctx *v, const cJSON *item)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return fail(v, "must be a string");
	return 0;
}

/* An integer in [lo, hi], exactly representable (JSON numbers are doubles here). */
static int want_integer(struct vctx *v, const cJSON *item, double lo, double hi)
{
	double d;

	if (!cJSON_IsNumber(item))
		return fail(v, "must be a number");
	d = item->valuedouble;
	if (!isfinite(d) || d != floor(d))
		return fail(v, "must be an integer");
	if (d < lo || d > hi)
		return fail(v, "%.17g is out of range [%.0f, %.0f]", d, lo, hi);
	return 0;
}

static int want_string_array(struct vctx *v, const cJSON *item, bool env)
{
	const cJSON *s;
	size_t i = 0;
	int r;

	if (!cJSON_IsArray(item))
		return fail(v, "must be an array of strings");
	cJSON_ArrayForEach (s, item) {
		size_t old = push_index(v, i++);
		char q[96];

		r = want_string(v, s);
		if (r < 0)
			return r;
		/* The runtime splits "K=V" at the first '='; "=V" and "K" are refused. */
		if (env && (s->valuestring[0] == '=' || !strchr(s->valuestring, '=')))
			return fail(v, "%s is not of the form NAME=VALUE",
				    cdi_quote(q, sizeof(q), s->valuestring));
		pop(v, old);
	}
	return 0;
}

static int want_abs_path(struct vctx *v, const cJSON *item)
{
	char q[96];
	int r;

	r = want_string(v, item);
	if (r < 0)
		return r;
	if (item->valuestring[0] == '\0')
		return fail(v, "must not be empty");
	if (item->valuestring[0] != '/')
		return fail(v, "%s is not absolute", cdi_quote(q, sizeof(q), item->valuestring));
	return 0;
}

static int want_nonempty_string(struct vctx *v, const cJSON *item)
{
	int r = want_string(v, item);

	if (r < 0)
		return r;
	if (item->valuestring[0] == '\0')
		return fail(v, "must not be empty");
	return 0;
}

/* Calls check(v, value) with ".key" pushed when key is present; absent is fine. */
static int field(struct vctx *v, const cJSON *obj, const char *key, bool required,
		 int (*check)(struct vctx *, const cJSON *))
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
	size_t old;
	int r;

	if (!item) {
		if (required)
			return fail_key(v, key, "required field missing");
		return 0;
	}
	old = push_key(v, key);
	r = check(v, item);
	if (r < 0)
		return r;
	pop(v, old);
	return 0;
}

static int want_uint32(struct vctx *v, const cJSON *item)
{
	return want_integer(v, item, 0, UINT32_MAX);
}

static int want_dev_number(struct vctx *v, const cJSON *item)
{
	/* Negative numbers are wildcards in OCI device rules; the libraries refuse them. */
	return want_integer(v, item, 0, UINT32_MAX);
}

static int want_env(struct vctx *v, const cJSON *item)
{
	return want_string_array(v, item, true);
}

static int want_strings(struct vctx *v, const cJSON *item)
{
	return want_string_array(v, item, false);
}

static int want_bool(struct vctx *v, const cJSON *item)
{
	if (!cJSON_IsBool(item))
		return fail(v, "must be true or false");
	return 0;
}

static int want_node_type(struct vctx *v, const cJSON *item)
{
	char q[96];
	int r = want_string(v, item);

	if (r < 0)
		return r;
	if (item->valuestring[0] &&
	    !(strlen(item->valuestring) == 1 && strchr("cbup", item->valuestring[0])))
		return fail(v, "%s is not one of c, b, u, p",
			    cdi_quote(q, sizeof(q), item->valuestring));
	return 0;
}

static int want_permissions(struct vctx *v, const cJSON *item)
{
	char q[96];
	int r = want_string(v, item);

	if (r < 0)
		return r;
	if (strspn(item->valuestring, "rwm") != strlen(item->valuestring))
		return fail(v, "%s is not a combination of r, w, m",
			    cdi_quote(q, sizeof(q), item->valuestring));
	return 0;
}

static int want_host_path(struct vctx *v, const cJSON *item)
{
	int r = want_string(v, item);

	/* Empty means "same as path" to the libraries. */
	if (r < 0 || item->valuestring[0] == '\0')
		return r;
	return want_abs_path(v, item);
}

static int want_hook_name(struct vctx *v, const cJSON *item)
{
	char q[96];
	int r = want_string(v, item);

	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(hook_names); i++)
		if (strcmp(item->valuestring, hook_names[i]) == 0)
			return 0;
	return fail(v,
		    "%s is not a hook name (prestart, createRuntime, createContainer, "
		    "startContainer, poststart, poststop)",
		    cdi_quote(q, sizeof(q), item->valuestring));
}

static int want_timeout(struct vctx *v, const cJSON *item)
{
	/* The OCI runtime spec requires a timeout greater than zero. */
	return want_integer(v, item, 1, INT32_MAX);
}

static int want_device_node(struct vctx *v, const cJSON *node)
{
	static const char *const keys[] = {"path",     "hostPath",    "type", "major", "minor",
					   "fileMode", "permissions", "uid",  "gid"};
	int r;

	if ((r = want_object(v, node)) < 0 || (r = CHECK_KEYS(v, node, keys)) < 0 ||
	    (r = field(v, node, "path", true, want_abs_path)) < 0 ||
	    (r = field(v, node, "hostPath", false, want_host_path)) < 0 ||
	    (r = field(v, node, "type", false, want_node_type)) < 0 ||
	    (r = field(v, node, "major", false, want_dev_number)) < 0 ||
	    (r = field(v, node, "minor", false, want_dev_number)) < 0 ||
	    (r = field(v, node, "fileMode", false, want_uint32)) < 0 ||
	    (r = field(v, node, "permissions", false, want_permissions)) < 0 ||
	    (r = field(v, node, "uid", false, want_uint32)) < 0 ||
	    (r = field(v, node, "gid", false, want_uint32)) < 0)
		return r;
	return 0;
}

static int want_mount(struct vctx *v, const cJSON *m)
{
	static const char *const keys[] = {"hostPath", "containerPath", "options", "type"};
	int r;

	if ((r = want_object(v, m)) < 0 || (r = CHECK_KEYS(v, m, keys)) < 0 ||
	    (r = field(v, m, "hostPath", true, want_nonempty_string)) < 0 ||
	    (r = field(v, m, "containerPath", true, want_nonempty_string)) < 0 ||
	    (r = field(v, m, "options", false, want_strings)) < 0 ||
	    (r = field(v, m, "type", false, want_string)) < 0)
		return r;
	return 0;
}

static int want_hook(struct vctx *v, const cJSON *h)
{
	static const char *const keys[] = {"hookName", "path", "args", "env", "timeout"};
	int r;

	if ((r = want_object(v, h)) < 0 || (r = CHECK_KEYS(v, h, keys)) < 0 ||
	    (r = field(v, h, "hookName", true, want_hook_name)) < 0 ||
	    (r = field(v, h, "path", true, want_abs_path)) < 0 ||
	    (r = field(v, h, "args", false, want_strings)) < 0 ||
	    (r = field(v, h, "env", false, want_env)) < 0 ||
	    (r = field(v, h, "timeout", false, want_timeout)) < 0)
		return r;
	return 0;
}

/* The kernel's dev_valid_name(): runtimes fail to move an interface with another name. */
static int want_ifname(struct vctx *v, const cJSON *item)
{
	const char *s;
	char q[96];
	int r;

	r = want_nonempty_string(v, item);
	if (r < 0)
		return r;
	s = item->valuestring;
	if (strlen(s) >= 16 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 ||
	    strpbrk(s, "/: \t\n\r\v\f"))
		return fail(v, "%s is not a valid network interface name",
			    cdi_quote(q, sizeof(q), s));
	return 0;
}

static int want_net_device(struct vctx *v, const cJSON *d)
{
	static const char *const keys[] = {"hostInterfaceName", "name"};
	int r;

	if ((r = want_object(v, d)) < 0 || (r = CHECK_KEYS(v, d, keys)) < 0 ||
	    (r = field(v, d, "hostInterfaceName", true, want_ifname)) < 0 ||
	    (r = field(v, d, "name", true, want_ifname)) < 0)
		return r;
	return 0;
}

static int want_array_of(struct vctx *v, const cJSON *arr,
			 int (*check)(struct vctx *, const cJSON *))
{
	const cJSON *item;
	size_t i = 0;
	int r;

	if (!cJSON_IsArray(arr))
		return fail(v, "must be an array");
	cJSON_ArrayForEach (item, arr) {
		size_t old = push_index(v, i++);

		r = check(v, item);
		if (r < 0)
			return r;
		pop(v, old);
	}
	return 0;
}

static int want_device_nodes(struct vctx *v, const cJSON *arr)
{
	return want_array_of(v, arr, want_device_node);
}

static int want_mounts(struct vctx *v, const cJSON *arr)
{
	return want_array_of(v, arr, want_mount);
}

static int want_hooks(struct vctx *v, const cJSON *arr)
{
	return want_array_of(v, arr, want_hook);
}

static int want_uint32_array(struct vctx *v, const cJSON *arr)
{
	return want_array_of(v, arr, want_uint32);
}

/*
 * The first string that occurs twice among the values of member key in the objects of
 * arr (all known to hold strings), found by sorting so that hostile sizes stay cheap,
 * and the index of its second occurrence. 0 when none, 1 when found, -ENOMEM.
 */
static int find_duplicate(const cJSON *arr, const char *key, const char **ret_value,
			  size_t *ret_index)
{
	_cleanup_free_ const char **values = NULL;
	size_t n = (size_t)cJSON_GetArraySize(arr), i = 0, seen = 0;
	const char *dup;
	const cJSON *item;

	if (n < 2)
		return 0;
	values = malloc(n * sizeof(*values));
	if (!values)
		return -ENOMEM;
	cJSON_ArrayForEach (item, arr)
		values[i++] = cJSON_GetObjectItemCaseSensitive(item, key)->valuestring;
	dup = cdi_sorted_duplicate(values, n);
	if (!dup)
		return 0;
	i = 0;
	cJSON_ArrayForEach (item, arr) {
		if (strcmp(cJSON_GetObjectItemCaseSensitive(item, key)->valuestring, dup) == 0 &&
		    seen++ > 0)
			break;
		i++;
	}
	*ret_value = dup;
	*ret_index = i;
	return 1;
}

/* Two entries moving the same interface, or to the same name, cannot both be applied. */
static int want_net_devices(struct vctx *v, const cJSON *arr)
{
	static const char *const keys[] = {"hostInterfaceName", "name"};
	int r;

	r = want_array_of(v, arr, want_net_device);
	if (r < 0)
		return r;
	for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
		const char *dup;
		size_t index;
		char q[96];

		r = find_duplicate(arr, keys[k], &dup, &index);
		if (r < 0)
			return r;
		if (r > 0) {
			push(v, "[%zu].%s", index, keys[k]);
			return fail(v, "%s is used twice", cdi_quote(q, sizeof(q), dup));
		}
	}
	return 0;
}

static int want_clos_id(struct vctx *v, const cJSON *item)
{
	const char *s;
	char q[96];
	int r;

	r = want_string(v, item);
	if (r < 0)
		return r;
	s = item->valuestring;
	/* A resctrl group directory name; "/" is the root group. */
	if (strcmp(s, "/") == 0)
		return 0;
	if (strlen(s) >= 4096 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strpbrk(s, "/\n"))
		return fail(v, "%s is not a valid CLOS name", cdi_quote(q, sizeof(q), s));
	return 0;
}

static int want_intel_rdt(struct vctx *v, const cJSON *rdt)
{
	static const char *const keys[] = {"closID", "l3CacheSchema", "memBwSchema", "schemata",
					   "enableMonitoring"};
	int r;

	if ((r = want_object(v, rdt)) < 0 || (r = CHECK_KEYS(v, rdt, keys)) < 0 ||
	    (r = field(v, rdt, "closID", false, want_clos_id)) < 0 ||
	    (r = field(v, rdt, "l3CacheSchema", false, want_string)) < 0 ||
	    (r = field(v, rdt, "memBwSchema", false, want_string)) < 0 ||
	    (r = field(v, rdt, "schemata", false, want_strings)) < 0 ||
	    (r = field(v, rdt, "enableMonitoring", false, want_bool)) < 0)
		return r;
	return 0;
}

static const char *const edit_keys[] = {"env",	      "deviceNodes", "hooks",	      "mounts",
					"netDevices", "intelRdt",    "additionalGids"};

static int want_edits(struct vctx *v, const cJSON *e)
{
	int r;

	if ((r = want_object(v, e)) < 0 || (r = CHECK_KEYS(v, e, edit_keys)) < 0 ||
	    (r = field(v, e, "env", false, want_env)) < 0 ||
	    (r = field(v, e, "deviceNodes", false, want_device_nodes)) < 0 ||
	    (r = field(v, e, "hooks", false, want_hooks)) < 0 ||
	    (r = field(v, e, "mounts", false, want_mounts)) < 0 ||
	    (r = field(v, e, "netDevices", false, want_net_devices)) < 0 ||
	    (r = field(v, e, "intelRdt", false, want_intel_rdt)) < 0 ||
	    (r = field(v, e, "additionalGids", false, want_uint32_array)) < 0)
		return r;
	return 0;
}

/* What the runtimes call empty edits: nothing that would change the container. */
static bool edits_empty(const cJSON *e)
{
	for (size_t i = 0; i < ELEMENTSOF(edit_keys); i++) {
		const cJSON *item = cJSON_GetObjectItemCaseSensitive(e, edit_keys[i]);

		if (cJSON_IsObject(item) || cJSON_GetArraySize(item) > 0)
			return false;
	}
	return true;
}

static int want_device_edits(struct vctx *v, const cJSON *e)
{
	int r = want_edits(v, e);

	if (r < 0)
		return r;
	if (edits_empty(e))
		return fail(v, "a device needs at least one edit");
	return 0;
}

/* Kubernetes qualified name: [prefix/]name, prefix a DNS subdomain, name <= 63 chars. */
static const char *annotation_key_problem(const char *k)
{
	const char *slash = strchr(k, '/'), *name = slash ? slash + 1 : k;
	size_t nlen = strlen(name);

	if (slash) {
		size_t plen = (size_t)(slash - k);

		if (plen == 0 || plen > 253)
			return "prefix must be 1 to 253 characters";
		for (size_t i = 0; i < plen; i++) {
			char c = k[i];
			bool edge = i == 0 || i == plen - 1 || k[i - 1] == '.' || k[i + 1] == '.';

			if ((c >= 'a' && c <= 'z') || is_digit(c))
				continue;
			if ((c == '-' || c == '.') && !edge)
				continue;
			return "prefix must be a lowercase DNS subdomain";
		}
	}
	if (nlen == 0 || nlen > 63)
		return "name must be 1 to 63 characters";
	if (!is_alnum(name[0]) || !is_alnum(name[nlen - 1]))
		return "name must start and end with a letter or digit";
	for (size_t i = 0; i < nlen; i++)
		if (!is_alnum(name[i]) && !strchr("-_.", name[i]))
			return "name may only contain [A-Za-z0-9_.-]";
	return NULL;
}

static int want_annotations(struct vctx *v, const cJSON *a)
{
	const cJSON *c;
	size_t total = 0;
	int r;

	if ((r = want_object(v, a)) < 0 || (r = check_keys(v, a, NULL, 0)) < 0)
		return r;
	cJSON_ArrayForEach (c, a) {
		const char *why = annotation_key_problem(c->string);
		size_t old = push_input_key(v, c->string);

		if (why)
			return fail(v, "invalid annotation key: %s", why);
		r = want_string(v, c);
		if (r < 0)
			return r;
		pop(v, old);
		total += strlen(c->string) + strlen(c->valuestring);
	}
	if (total > ANNOTATIONS_MAX_BYTES)
		return fail(v, "annotations total %zu bytes, more than %d", total,
			    ANNOTATIONS_MAX_BYTES);
	return 0;
}

static int want_device(struct vctx *v, const cJSON *dev)
{
	static const char *const keys[] = {"name", "annotations", "containerEdits"};
	const cJSON *name;
	char q[96];
	int r;

	if ((r = want_object(v, dev)) < 0 || (r = CHECK_KEYS(v, dev, keys)) < 0)
		return r;
	name = cJSON_GetObjectItemCaseSensitive(dev, "name");
	if (!name)
		return fail_key(v, "name", "required field missing");
	if (!cJSON_IsString(name) || !name->valuestring)
		return fail_key(v, "name", "must be a string");
	if (cdi_device_name_problem(name->valuestring))
		return fail_key(v, "name", "%s: %s", cdi_quote(q, sizeof(q), name->valuestring),
				cdi_device_name_problem(name->valuestring));
	if ((r = field(v, dev, "annotations", false, want_annotations)) < 0 ||
	    (r = field(v, dev, "containerEdits", true, want_device_edits)) < 0)
		return r;
	return 0;
}

static int want_devices(struct vctx *v, const cJSON *devs)
{
	const char *dup;
	size_t index;
	char q[96];
	int r;

	r = want_array_of(v, devs, want_device);
	if (r < 0)
		return r;
	if (!devs->child)
		return fail(v, "a spec needs at least one device");
	r = find_duplicate(devs, "name", &dup, &index);
	if (r < 0)
		return r;
	if (r > 0) {
		push(v, "[%zu].name", index);
		return fail(v, "device %s is defined twice", cdi_quote(q, sizeof(q), dup));
	}
	return 0;
}

static int want_kind(struct vctx *v, const cJSON *kind)
{
	const char *why;
	char q[96];
	int r;

	r = want_string(v, kind);
	if (r < 0)
		return r;
	why = cdi_kind_problem(kind->valuestring, v->allow_dot_class);
	if (why)
		return fail(v, "%s: %s", cdi_quote(q, sizeof(q), kind->valuestring), why);
	return 0;
}

int cdi_spec_validate(const cJSON *spec, struct rc_error **err)
{
	static const char *const keys[] = {"cdiVersion", "kind", "annotations", "devices",
					   "containerEdits"};
	struct vctx v = {.err = err};
	const cJSON *version;
	const char *min;
	char why[256], q[96];
	int r;

	if ((r = want_object(&v, spec)) < 0 || (r = CHECK_KEYS(&v, spec, keys)) < 0)
		return r;

	version = cJSON_GetObjectItemCaseSensitive(spec, "cdiVersion");
	if (!version)
		return fail_key(&v, "cdiVersion", "required field missing");
	if (!cJSON_IsString(version) || !version->valuestring)
		return fail_key(&v, "cdiVersion", "must be a string");
	if (version_index(version->valuestring) < 0)
		return fail_key(&v, "cdiVersion", "%s is not a known CDI version (0.3.0 to 1.1.0)",
				cdi_quote(q, sizeof(q), version->valuestring));
	v.allow_dot_class = version_index(version->valuestring) >= V060;

	if ((r = field(&v, spec, "kind", true, want_kind)) < 0 ||
	    (r = field(&v, spec, "annotations", false, want_annotations)) < 0 ||
	    (r = field(&v, spec, "devices", true, want_devices)) < 0 ||
	    (r = field(&v, spec, "containerEdits", false, want_edits)) < 0)
		return r;

	min = cdi_min_version_why(spec, why, sizeof(why));
	if (cdi_version_compare(version->valuestring, min) < 0)
		return fail_key(&v, "cdiVersion", "%s is lower than %s, which %s needs",
				cdi_quote(q, sizeof(q), version->valuestring), min, why);
	return 0;
}
