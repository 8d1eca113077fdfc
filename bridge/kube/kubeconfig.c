/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig files (the current-context's cluster and user) and the in-cluster service
 * account. libyaml events -> a small bounded tree (each value keeps its line and column)
 * -> struct kube_config. Only what the driver can honour is accepted: a https server, a
 * CA it verifies against, a bearer token; anything that would weaken TLS or needs an
 * authentication method we do not have is refused with the reason, never ignored.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "kube-internal.h"

#define KC_DEPTH_MAX 16
#define KC_NODES_MAX 100000
#define KC_SERVER_MAX 2048

DEFINE_CLEANUP_FUNC(yaml_parser_t, yaml_parser_delete)

enum kc_type { KC_SCALAR, KC_SEQ, KC_MAP };

struct kc_node {
	enum kc_type type;
	unsigned line, column;
	char *value; /* scalar text */
	size_t len;
	bool plain;
	struct kc_node **kids; /* mapping: key, value, key, value ... */
	size_t n_kids, cap;
};

static void kc_node_free(struct kc_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_kids; i++)
		kc_node_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}
DEFINE_CLEANUP_FUNC(struct kc_node, kc_node_free)

struct kc {
	const char *file;
	const char *buf;
	size_t len;
	char *err;
	size_t errlen;
};

static int kc_vfail(struct kc *x, int r, const struct kc_node *at, const char *key, const char *fmt,
		    va_list ap) _printf_(5, 0);
static int kc_vfail(struct kc *x, int r, const struct kc_node *at, const char *key, const char *fmt,
		    va_list ap)
{
	int n;

	if (!x->err || x->errlen == 0)
		return r;
	if (at)
		n = snprintf(x->err, x->errlen, "%s:%u:%u: %s: ", x->file, at->line, at->column,
			     key);
	else
		n = snprintf(x->err, x->errlen, "%s: %s: ", x->file, key);
	if (n >= 0 && (size_t)n < x->errlen)
		vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
	return r;
}

static _printf_(5, 6) int kc_fail(struct kc *x, int r, const struct kc_node *at, const char *key,
				  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = kc_vfail(x, r, at, key, fmt, ap);
	va_end(ap);
	return r;
}

/* Untrusted text for a message: escaped, quoted, cut. */
static const char *kc_quote(char *buf, size_t size, const char *s, size_t len)
{
	size_t n;

	if (size < 8)
		return "";
	buf[0] = '"';
	n = text_escape(buf + 1, size - 5, s, len, true);
	if (n >= size - 5)
		strcpy(buf + size - 5, "...\"");
	else
		strcpy(buf + 1 + n, "\"");
	return buf;
}

/* ---- the tree ----------------------------------------------------------------------- */

static int kc_add(struct kc_node *parent, struct kc_node *kid)
{
	if (parent->n_kids == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct kc_node **k = realloc(parent->kids, cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		parent->kids = k;
		parent->cap = cap;
	}
	parent->kids[parent->n_kids++] = kid;
	return 0;
}

static struct kc_node *kc_new(enum kc_type t, yaml_mark_t m)
{
	struct kc_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->type = t;
	n->line = (unsigned)m.line + 1;
	n->column = (unsigned)m.column + 1;
	return n;
}

static int kc_yaml_fail(struct kc *x, const yaml_parser_t *p)
{
	struct kc_node at = {.line = (unsigned)p->problem_mark.line + 1,
			     .column = (unsigned)p->problem_mark.column + 1};

	if (p->error == YAML_MEMORY_ERROR)
		return kc_fail(x, -ENOMEM, NULL, "yaml", "out of memory");
	return kc_fail(x, -EBADMSG, &at, "yaml", "invalid YAML: %s",
		       p->problem ? p->problem : "unknown error");
}

/* The node an event opens or is (NULL for events that are not nodes). Aliases and
 * anchors are refused: a kubeconfig never needs them and they expand exponentially. */
static int kc_from_event(struct kc *x, const yaml_event_t *e, size_t depth, struct kc_node **ret)
{
	struct kc_node at = {.line = (unsigned)e->start_mark.line + 1,
			     .column = (unsigned)e->start_mark.column + 1};
	const yaml_char_t *anchor = NULL;
	struct kc_node *n;

	*ret = NULL;
	switch (e->type) {
	case YAML_ALIAS_EVENT:
		return kc_fail(x, -EINVAL, &at, "yaml", "YAML aliases are not accepted");
	case YAML_SCALAR_EVENT:
		anchor = e->data.scalar.anchor;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = e->data.sequence_start.anchor;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = e->data.mapping_start.anchor;
		break;
	default:
		return 0;
	}
	if (anchor)
		return kc_fail(x, -EINVAL, &at, "yaml", "YAML anchors are not accepted");
	if (e->type == YAML_SCALAR_EVENT) {
		n = kc_new(KC_SCALAR, e->start_mark);
		if (!n || !(n->value = malloc(e->data.scalar.length + 1))) {
			kc_node_free(n);
			return -ENOMEM;
		}
		memcpy(n->value, e->data.scalar.value, e->data.scalar.length);
		n->value[e->data.scalar.length] = '\0';
		n->len = e->data.scalar.length;
		n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	} else {
		if (depth >= KC_DEPTH_MAX)
			return kc_fail(x, -EINVAL, &at, "yaml", "nested deeper than %d levels",
				       KC_DEPTH_MAX);
		n = kc_new(e->type == YAML_SEQUENCE_START_EVENT ? KC_SEQ : KC_MAP, e->start_mark);
		if (!n)
			return -ENOMEM;
	}
	*ret = n;
	return 0;
}

static int kc_tree(struct kc *x, struct kc_node **ret)
{
	_cleanup_(yaml_parser_deletep) yaml_parser_t *parser = NULL;
	_cleanup_(kc_node_freep) struct kc_node *root = NULL;
	struct kc_node *stack[KC_DEPTH_MAX];
	yaml_parser_t p;
	size_t depth = 0, n_nodes = 0;
	unsigned docs = 0;
	bool done = false;
	int r = 0;

	if (!yaml_parser_initialize(&p))
		return kc_fail(x, -ENOMEM, NULL, "yaml", "out of memory");
	parser = &p;
	yaml_parser_set_input_string(&p, (const unsigned char *)x->buf, x->len);
	while (!done && r >= 0) {
		struct kc_node *n = NULL;
		yaml_event_t e;

		if (!yaml_parser_parse(&p, &e))
			return kc_yaml_fail(x, &p);
		if (e.type == YAML_STREAM_END_EVENT) {
			done = true;
		} else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT) {
			depth--;
		} else if (e.type == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
			struct kc_node at = {.line = (unsigned)e.start_mark.line + 1,
					     .column = (unsigned)e.start_mark.column + 1};

			r = kc_fail(x, -EINVAL, &at, "yaml", "more than one YAML document");
		} else {
			r = kc_from_event(x, &e, depth, &n);
		}
		if (n && ++n_nodes > KC_NODES_MAX)
			r = kc_fail(x, -EINVAL, n, "yaml", "more than %d YAML nodes", KC_NODES_MAX);
		yaml_event_delete(&e);
		if (r < 0 || !n) {
			kc_node_free(n);
			continue;
		}
		if (depth == 0) {
			kc_node_free(root);
			root = n;
		} else if (kc_add(stack[depth - 1], n) < 0) {
			kc_node_free(n);
			return kc_fail(x, -ENOMEM, NULL, "yaml", "out of memory");
		}
		if (n->type != KC_SCALAR)
			stack[depth++] = n;
	}
	if (r < 0)
		return r;
	*ret = TAKE_PTR(root);
	return 0;
}

/* ---- looking things up ---------------------------------------------------------------- */

static bool kc_is_null(const struct kc_node *n)
{
	return !n || (n->type == KC_SCALAR && n->plain &&
		      (n->len == 0 || !strcmp(n->value, "null") || !strcmp(n->value, "~")));
}

/* The value of key in a mapping; NULL when absent (or null). Duplicate keys are refused
 * when the mapping is checked (kc_check_map). */
static const struct kc_node *kc_get(const struct kc_node *map, const char *key)
{
	if (!map || map->type != KC_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
		const struct kc_node *k = map->kids[i];

		if (k->type == KC_SCALAR && !strcmp(k->value, key))
			return kc_is_null(map->kids[i + 1]) ? NULL : map->kids[i + 1];
	}
	return NULL;
}

static int kc_check_map(struct kc *x, const struct kc_node *n, const char *key)
{
	char q[96];

	if (n->type != KC_MAP)
		return kc_fail(x, -EINVAL, n, key, "must be a mapping");
	for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
		const struct kc_node *k = n->kids[i];

		if (k->type != KC_SCALAR)
			return kc_fail(x, -EINVAL, k, key, "keys must be strings");
		for (size_t j = i + 2; j + 1 < n->n_kids; j += 2)
			if (n->kids[j]->type == KC_SCALAR && !strcmp(n->kids[j]->value, k->value))
				return kc_fail(x, -EINVAL, n->kids[j], key, "duplicate key %s",
					       kc_quote(q, sizeof(q), k->value, k->len));
	}
	return 0;
}

/* A string value: a scalar without NUL bytes. *ret = NULL when absent. */
static int kc_string(struct kc *x, const struct kc_node *map, const char *key, const char *path,
		     const struct kc_node **ret)
{
	const struct kc_node *v = kc_get(map, key);
	char k[160];

	*ret = NULL;
	if (!v)
		return 0;
	snprintf(k, sizeof(k), "%s%s", path, key);
	if (v->type != KC_SCALAR)
		return kc_fail(x, -EINVAL, v, k, "must be a string");
	if (strlen(v->value) != v->len)
		return kc_fail(x, -EINVAL, v, k, "holds a NUL byte");
	*ret = v;
	return 0;
}

/*
 * The entry of a named list (contexts, clusters, users) whose name is want, and the
 * mapping under its field (context, cluster, user). where names the list for messages.
 */
static int kc_find_named(struct kc *x, const struct kc_node *root, const char *list,
			 const char *field, const struct kc_node *want, const char *what,
			 const struct kc_node **ret, char *path, size_t pathlen)
{
	const struct kc_node *seq = kc_get(root, list);
	char q[96];
	int r;

	if (seq && seq->type != KC_SEQ)
		return kc_fail(x, -EINVAL, seq, list, "must be a list");
	for (size_t i = 0; seq && i < seq->n_kids; i++) {
		const struct kc_node *e = seq->kids[i], *name, *body;
		char key[64];

		snprintf(key, sizeof(key), "%s[%zu]", list, i);
		r = kc_check_map(x, e, key);
		if (r < 0)
			return r;
		r = kc_string(x, e, "name", "", &name);
		if (r < 0)
			return r;
		if (!name || strcmp(name->value, want->value))
			continue;
		snprintf(path, pathlen, "%s[%zu].%s", list, i, field);
		body = kc_get(e, field);
		if (!body)
			return kc_fail(x, -EINVAL, e, path, "missing");
		r = kc_check_map(x, body, path);
		if (r < 0)
			return r;
		*ret = body;
		return 0;
	}
	return kc_fail(x, -EINVAL, want, what, "%s %s is not in %s", field,
		       kc_quote(q, sizeof(q), want->value, want->len), list);
}

/* ---- values ----------------------------------------------------------------------- */

static int kc_bool(struct kc *x, const struct kc_node *n, const char *key, bool *ret)
{
	static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes",
					  "YES",  "on",	  "On",	  "ON"};
	static const char *const no[] = {"false", "False", "FALSE", "no", "No",
					 "NO",	  "off",   "Off",   "OFF"};

	if (n->type == KC_SCALAR && n->plain) {
		for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
			if (!strcmp(n->value, yes[i]))
				return *ret = true, 0;
			if (!strcmp(n->value, no[i]))
				return *ret = false, 0;
		}
	}
	return kc_fail(x, -EINVAL, n, key, "must be true or false");
}

/* "https://host[:port][/prefix]" without userinfo, query, fragment or blanks; the
 * trailing slashes stripped. */
static int kc_server(struct kc *x, const struct kc_node *n, const char *key, char **ret)
{
	const char *s = n->value, *host;
	size_t len = n->len;
	char q[96];

	if (strncmp(s, "https://", 8) != 0)
		return kc_fail(x, -EINVAL, n, key,
			       "%s is not an https:// URL (the API server is only spoken to over "
			       "verified TLS)",
			       kc_quote(q, sizeof(q), s, len));
	if (len > KC_SERVER_MAX)
		return kc_fail(x, -EINVAL, n, key, "longer than %d bytes", KC_SERVER_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '@' || c == '\\')
			return kc_fail(x, -EINVAL, n, key,
				       "%s: a server URL holds no blanks, userinfo, query or "
				       "fragment",
				       kc_quote(q, sizeof(q), s, len));
	}
	host = s + 8;
	if (*host == '\0' || *host == '/' || *host == ':')
		return kc_fail(x, -EINVAL, n, key, "%s has no host",
			       kc_quote(q, sizeof(q), s, len));
	while (len > 8 && s[len - 1] == '/')
		len--;
	*ret = strndup(s, len);
	return *ret ? 0 : -ENOMEM;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64 (RFC 4648), whitespace ignored, padding optional but only at the end. */
static int base64_decode(const char *s, size_t len, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = malloc(len / 4 * 3 + 4);
	size_t n = 0, pad = 0;
	unsigned acc = 0, bits = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		int v;

		if (isspace(c))
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		v = b64_value(c);
		if (v < 0 || pad)
			return -EINVAL;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* Leftover bits must be zero padding of a 2- or 3-symbol group. */
	if (bits >= 6 || (acc & ((1u << bits) - 1)) || pad > 2)
		return -EINVAL;
	out[n] = '\0';
	*ret_len = n;
	*ret = TAKE_PTR(out);
	return 0;
}

static bool is_pem_certificate(const char *s, size_t len)
{
	return memmem(s, len, "-----BEGIN CERTIFICATE-----", 27) != NULL;
}

/* A path from the file, relative to the kubeconfig's directory. */
static int kc_path(const char *file, const char *p, char **ret)
{
	const char *slash = strrchr(file, '/');
	int n;

	if (p[0] == '/' || !slash)
		*ret = strdup(p);
	else if ((n = asprintf(ret, "%.*s/%s", (int)(slash - file), file, p)) < 0)
		*ret = NULL;
	return *ret ? 0 : -ENOMEM;
}

/* The CA file must exist and hold a PEM certificate (read bounded; it is checked here so
 * the user learns at start, not at the first request). */
static int check_ca_file(const char *path, char *why, size_t whylen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_full_file_at(AT_FDCWD, path, KUBE_CA_MAX, false, &buf, &len);
	if (r == -EFBIG)
		return snprintf(why, whylen, "larger than %u bytes", KUBE_CA_MAX), -EINVAL;
	if (r == -EBADFD)
		return snprintf(why, whylen, "not a regular file"), -EINVAL;
	if (r < 0)
		return snprintf(why, whylen, "%s", strerror(-r)), r;
	if (!is_pem_certificate(buf, len))
		return snprintf(why, whylen, "holds no PEM certificate"), -EINVAL;
	return 0;
}

static int check_token_file(const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return snprintf(why, whylen, "%s", strerror(errno)), -errno;
	if (!S_ISREG(st.st_mode))
		return snprintf(why, whylen, "not a regular file"), -EINVAL;
	return 0;
}

int kube_token_check(const char *s, size_t len, size_t *ret_start, size_t *ret_len)
{
	size_t a = 0, b = len;

	while (a < b && isspace((unsigned char)s[a]))
		a++;
	while (b > a && isspace((unsigned char)s[b - 1]))
		b--;
	if (a == b || b - a > KUBE_TOKEN_MAX)
		return -EINVAL;
	for (size_t i = a; i < b; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return -EINVAL;
	*ret_start = a;
	*ret_len = b - a;
	return 0;
}

void kube_config_free(struct kube_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	free(c->token_file);
	free(c->source);
	free(c);
}

/* ---- the kubeconfig --------------------------------------------------------------- */

static int kc_cluster(struct kc *x, const struct kc_node *cl, const char *path,
		      struct kube_config *c)
{
	const struct kc_node *server, *ca, *ca_data, *skip;
	char key[256], why[128];
	int r;

	snprintf(key, sizeof(key), "%s.", path);
	if ((r = kc_string(x, cl, "server", key, &server)) < 0 ||
	    (r = kc_string(x, cl, "certificate-authority", key, &ca)) < 0 ||
	    (r = kc_string(x, cl, "certificate-authority-data", key, &ca_data)) < 0)
		return r;
	skip = kc_get(cl, "insecure-skip-tls-verify");
	if (skip) {
		bool b = false;

		snprintf(key, sizeof(key), "%s.insecure-skip-tls-verify", path);
		r = kc_bool(x, skip, key, &b);
		if (r < 0)
			return r;
		if (b)
			return kc_fail(x, -EINVAL, skip, key,
				       "true is refused: TLS is always verified against the "
				       "cluster's certificate-authority");
	}
	snprintf(key, sizeof(key), "%s.server", path);
	if (!server)
		return kc_fail(x, -EINVAL, cl, key, "missing");
	r = kc_server(x, server, key, &c->server);
	if (r < 0)
		return r;
	if (ca_data) {
		snprintf(key, sizeof(key), "%s.certificate-authority-data", path);
		r = base64_decode(ca_data->value, ca_data->len, &c->ca_data, &c->ca_len);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return kc_fail(x, -EINVAL, ca_data, key, "not valid base64");
		if (!is_pem_certificate(c->ca_data, c->ca_len))
			return kc_fail(x, -EINVAL, ca_data, key,
				       "does not decode to a PEM certificate");
		return 0;
	}
	snprintf(key, sizeof(key), "%s.certificate-authority", path);
	if (!ca)
		return kc_fail(x, -EINVAL, cl, key,
			       "missing (and no certificate-authority-data): the server's "
			       "certificate must be verified against the cluster's CA");
	r = kc_path(x->file, ca->value, &c->ca_file);
	if (r < 0)
		return r;
	r = check_ca_file(c->ca_file, why, sizeof(why));
	if (r < 0) {
		char q[256];

		return kc_fail(x, r, ca, key, "%s: %s",
			       kc_quote(q, sizeof(q), c->ca_file, strlen(c->ca_file)), why);
	}
	return 0;
}

static int kc_user(struct kc *x, const struct kc_node *u, const struct kc_node *at,
		   const char *path, struct kube_config *c)
{
	static const char *const certs[] = {"client-certificate", "client-certificate-data",
					    "client-key", "client-key-data"};
	const struct kc_node *token = NULL, *file = NULL;
	char key[256], why[128];
	int r;

	snprintf(key, sizeof(key), "%s.", path);
	if (u && ((r = kc_string(x, u, "token", key, &token)) < 0 ||
		  (r = kc_string(x, u, "tokenFile", key, &file)) < 0))
		return r;
	if (file) {
		char q[256];

		snprintf(key, sizeof(key), "%s.tokenFile", path);
		r = kc_path(x->file, file->value, &c->token_file);
		if (r < 0)
			return r;
		r = check_token_file(c->token_file, why, sizeof(why));
		if (r < 0)
			return kc_fail(x, r, file, key, "%s: %s",
				       kc_quote(q, sizeof(q), c->token_file, strlen(c->token_file)),
				       why);
		return 0;
	}
	if (token) {
		size_t start, len;

		snprintf(key, sizeof(key), "%s.token", path);
		if (kube_token_check(token->value, token->len, &start, &len) < 0)
			return kc_fail(x, -EINVAL, token, key,
				       "not a bearer token (empty, longer than %u bytes, or "
				       "holding blanks or non-ASCII bytes)",
				       KUBE_TOKEN_MAX);
		c->token = strndup(token->value + start, len);
		return c->token ? 0 : -ENOMEM;
	}
	for (size_t i = 0; u && i < ELEMENTSOF(certs); i++)
		if (kc_get(u, certs[i]))
			return kc_fail(x, -EINVAL, kc_get(u, certs[i]), path,
				       "client certificates are not supported: give the driver's "
				       "user a token or tokenFile (a service account token)");
	if (u && kc_get(u, "exec"))
		return kc_fail(x, -EINVAL, kc_get(u, "exec"), path,
			       "exec credential plugins are not supported: give the user a "
			       "token or tokenFile");
	if (u && kc_get(u, "auth-provider"))
		return kc_fail(x, -EINVAL, kc_get(u, "auth-provider"), path,
			       "auth-provider is not supported: give the user a token or "
			       "tokenFile");
	if (u && (kc_get(u, "username") || kc_get(u, "password")))
		return kc_fail(x, -EINVAL, u, path,
			       "basic authentication is not supported: give the user a token "
			       "or tokenFile");
	return kc_fail(x, -EINVAL, u ? u : at, path, "no token or tokenFile");
}

int kube_config_parse(const char *buf, size_t len, const char *path, struct kube_config **ret,
		      char *err, size_t errlen)
{
	_cleanup_(kube_config_freep) struct kube_config *c = NULL;
	_cleanup_(kc_node_freep) struct kc_node *root = NULL;
	const struct kc_node *cur, *ctx, *cl, *u = NULL, *cl_name, *u_name;
	struct kc x = {.file = path, .buf = buf, .len = len, .err = err, .errlen = errlen};
	char ctx_path[64], cl_path[128], u_path[128];
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (len > KUBE_CONFIG_MAX)
		return kc_fail(&x, -EFBIG, NULL, "file", "larger than %u bytes", KUBE_CONFIG_MAX);
	r = kc_tree(&x, &root);
	if (r < 0)
		return r;
	if (!root || root->type != KC_MAP)
		return kc_fail(&x, -EINVAL, root, "file", "not a kubeconfig (a YAML mapping)");
	r = kc_check_map(&x, root, "file");
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->source = strdup(path)))
		return -ENOMEM;

	r = kc_string(&x, root, "current-context", "", &cur);
	if (r < 0)
		return r;
	if (!cur || cur->len == 0)
		return kc_fail(&x, -EINVAL, NULL, "current-context", "not set");
	r = kc_find_named(&x, root, "contexts", "context", cur, "current-context", &ctx, ctx_path,
			  sizeof(ctx_path));
	if (r < 0)
		return r;
	snprintf(cl_path, sizeof(cl_path), "%s.", ctx_path);
	if ((r = kc_string(&x, ctx, "cluster", cl_path, &cl_name)) < 0 ||
	    (r = kc_string(&x, ctx, "user", cl_path, &u_name)) < 0)
		return r;
	if (!cl_name) {
		snprintf(cl_path, sizeof(cl_path), "%s.cluster", ctx_path);
		return kc_fail(&x, -EINVAL, ctx, cl_path, "missing");
	}
	snprintf(cl_path, sizeof(cl_path), "%s.cluster", ctx_path);
	r = kc_find_named(&x, root, "clusters", "cluster", cl_name, cl_path, &cl, cl_path,
			  sizeof(cl_path));
	if (r < 0)
		return r;
	r = kc_cluster(&x, cl, cl_path, c);
	if (r < 0)
		return r;
	if (u_name) {
		snprintf(u_path, sizeof(u_path), "%s.user", ctx_path);
		r = kc_find_named(&x, root, "users", "user", u_name, u_path, &u, u_path,
				  sizeof(u_path));
		if (r < 0)
			return r;
	} else {
		snprintf(u_path, sizeof(u_path), "%s.user", ctx_path);
	}
	r = kc_user(&x, u, ctx, u_path, c);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(c);
	return 0;
}

int kube_config_load(const char *path, struct kube_config **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_full_file_at(AT_FDCWD, path, KUBE_CONFIG_MAX, false, &buf, &len);
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path,
				 r == -EFBIG	? "larger than 4 MiB"
				 : r == -EBADFD ? "not a regular file"
						: strerror(-r));
		return r == -EFBIG || r == -EBADFD ? -EINVAL : r;
	}
	return kube_config_parse(buf, len, path, ret, err, errlen);
}

/* ---- in-cluster ------------------------------------------------------------------- */

static bool valid_host(const char *h)
{
	struct in6_addr a6;

	if (strchr(h, ':'))
		return inet_pton(AF_INET6, h, &a6) == 1;
	if (!*h || strlen(h) > 253)
		return false;
	for (const char *p = h; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-')
			return false;
	return true;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, char *err, size_t errlen)
{
	_cleanup_(kube_config_freep) struct kube_config *c = NULL;
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char why[128], q[96];
	long long p;
	int r;

	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	if (err && errlen)
		err[0] = '\0';
	if (!host || !*host || !port || !*port) {
		if (err && errlen)
			snprintf(err, errlen,
				 "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
				 "are not set (not running in a pod? give --kubeconfig)");
		return -ENOENT;
	}
	if (!valid_host(host)) {
		if (err && errlen)
			snprintf(err, errlen,
				 "in-cluster: KUBERNETES_SERVICE_HOST: %s is not a host "
				 "name or IP address",
				 kc_quote(q, sizeof(q), host, strlen(host)));
		return -EINVAL;
	}
	if (parse_int64(port, &p) < 0 || p < 1 || p > 65535) {
		if (err && errlen)
			snprintf(err, errlen,
				 "in-cluster: KUBERNETES_SERVICE_PORT: %s is not a port",
				 kc_quote(q, sizeof(q), port, strlen(port)));
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->source = strdup("in-cluster")))
		return -ENOMEM;
	if (asprintf(&c->server, strchr(host, ':') ? "https://[%s]:%lld" : "https://%s:%lld", host,
		     p) < 0) {
		c->server = NULL;
		return -ENOMEM;
	}
	if (asprintf(&c->token_file, "%s/token", sa_dir) < 0) {
		c->token_file = NULL;
		return -ENOMEM;
	}
	if (asprintf(&c->ca_file, "%s/ca.crt", sa_dir) < 0) {
		c->ca_file = NULL;
		return -ENOMEM;
	}
	r = check_token_file(c->token_file, why, sizeof(why));
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "in-cluster: %s: %s", c->token_file, why);
		return r;
	}
	r = check_ca_file(c->ca_file, why, sizeof(why));
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "in-cluster: %s: %s", c->ca_file, why);
		return r;
	}
	*ret = TAKE_PTR(c);
	return 0;
}
