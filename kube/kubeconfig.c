/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig files (the current-context's cluster and user) and the in-cluster service
 * account. The file is read as one bounded YAML document (common yaml-doc.h: each value
 * keeps its line and column) -> struct kube_config. Only what the driver can honour is
 * accepted: a https server, a CA it verifies against, a bearer token; anything that would
 * weaken TLS or needs an authentication method we do not have is refused with the reason,
 * never ignored.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "kube-internal.h"
#include "yaml-doc.h"

#define KC_DEPTH_MAX 16
#define KC_NODES_MAX 100000
#define KC_SERVER_MAX 2048

/* ---- looking things up ---------------------------------------------------------------- */

/* The value of key in a mapping; NULL when absent (or null). Duplicate keys are refused
 * when the mapping is checked (ydoc_map). */
static const struct ydoc_node *kc_get(const struct ydoc_node *map, const char *key)
{
	const struct ydoc_node *v = ydoc_get(map, key, NULL);

	return ydoc_is_null(v) ? NULL : v;
}

/* A string value: a scalar without NUL bytes. *ret = NULL when absent. */
static int kc_string(const struct ydoc *x, const struct ydoc_node *map, const char *key,
		     const char *path, const struct ydoc_node **ret)
{
	const struct ydoc_node *v = kc_get(map, key);
	const char *s;
	char k[160];
	int r;

	*ret = NULL;
	if (!v)
		return 0;
	snprintf(k, sizeof(k), "%s%s", path, key);
	r = ydoc_string(x, v, k, SIZE_MAX, &s);
	if (r < 0)
		return r;
	*ret = v;
	return 0;
}

/*
 * The entry of a named list (contexts, clusters, users) whose name is want, and the
 * mapping under its field (context, cluster, user). where names the list for messages.
 */
static int kc_find_named(const struct ydoc *x, const struct ydoc_node *root, const char *list,
			 const char *field, const struct ydoc_node *want, const char *what,
			 const struct ydoc_node **ret, char *path, size_t pathlen)
{
	const struct ydoc_node *seq = kc_get(root, list);
	char q[96];
	int r;

	if (seq && seq->type != YDOC_SEQ)
		return ydoc_fail(x, -EINVAL, seq, list, "expected a list, got %s", ydoc_kind(seq));
	for (size_t i = 0; seq && i < seq->n_kids; i++) {
		const struct ydoc_node *e = seq->kids[i], *name, *body;
		char key[64];

		snprintf(key, sizeof(key), "%s[%zu]", list, i);
		r = ydoc_map(x, e, key);
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
			return ydoc_fail(x, -EINVAL, e, path, "missing");
		r = ydoc_map(x, body, path);
		if (r < 0)
			return r;
		*ret = body;
		return 0;
	}
	return ydoc_fail(x, -EINVAL, want, what, "%s %s is not in %s", field,
			 text_quote(q, sizeof(q), want->value, want->len), list);
}

/* ---- values ----------------------------------------------------------------------- */

/* "https://host[:port][/prefix]" without userinfo, query, fragment or blanks; the
 * trailing slashes stripped. */
static int kc_server(const struct ydoc *x, const struct ydoc_node *n, const char *key, char **ret)
{
	const char *s = n->value, *host;
	size_t len = n->len;
	char q[96];

	if (strncmp(s, "https://", 8) != 0)
		return ydoc_fail(x, -EINVAL, n, key,
				 "%s is not an https:// URL (the API server is only spoken to over "
				 "verified TLS)",
				 text_quote(q, sizeof(q), s, len));
	if (len > KC_SERVER_MAX)
		return ydoc_fail(x, -EINVAL, n, key, "longer than %d bytes", KC_SERVER_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '@' || c == '\\')
			return ydoc_fail(x, -EINVAL, n, key,
					 "%s: a server URL holds no blanks, userinfo, query or "
					 "fragment",
					 text_quote(q, sizeof(q), s, len));
	}
	host = s + 8;
	if (*host == '\0' || *host == '/' || *host == ':')
		return ydoc_fail(x, -EINVAL, n, key, "%s has no host",
				 text_quote(q, sizeof(q), s, len));
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
static int check_ca_file(const char *path, struct rc_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_full_file_at(AT_FDCWD, path, KUBE_CA_MAX, false, &buf, &len);
	if (r == -EFBIG)
		return rc_error_set(err, -EINVAL, "larger than %u bytes", KUBE_CA_MAX);
	if (r == -EBADFD)
		return rc_error_set(err, -EINVAL, "not a regular file");
	if (r < 0)
		return rc_error_set(err, r, NULL);
	if (!is_pem_certificate(buf, len))
		return rc_error_set(err, -EINVAL, "holds no PEM certificate");
	return 0;
}

static int check_token_file(const char *path, struct rc_error **err)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return rc_error_set(err, -errno, NULL);
	if (!S_ISREG(st.st_mode))
		return rc_error_set(err, -EINVAL, "not a regular file");
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

/* n, a path relative to the kubeconfig (kc_path), resolved into *ret and checked. */
static int kc_file(const struct ydoc *x, const struct ydoc_node *n, const char *key,
		   int (*check)(const char *path, struct rc_error **err), char **ret)
{
	_cleanup_rc_error_ struct rc_error *why = NULL;
	_cleanup_free_ char *q = NULL;
	int r = kc_path(x->file, n->value, ret);

	if (r < 0)
		return r;
	r = check(*ret, &why);
	if (r >= 0)
		return 0;
	/* A path is shown whole: quote_untrusted, not cut like a value. */
	q = quote_untrusted(*ret);
	return ydoc_fail(x, r, n, key, "%s: %s", q ? q : "(out of memory)", rc_error_msg(why, r));
}

static int kc_cluster(const struct ydoc *x, const struct ydoc_node *cl, const char *path,
		      struct kube_config *c)
{
	const struct ydoc_node *server, *ca, *ca_data, *skip;
	char key[256];
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
		r = ydoc_bool(x, skip, key, true, &b);
		if (r < 0)
			return r;
		if (b)
			return ydoc_fail(x, -EINVAL, skip, key,
					 "true is refused: TLS is always verified against the "
					 "cluster's certificate-authority");
	}
	snprintf(key, sizeof(key), "%s.server", path);
	if (!server)
		return ydoc_fail(x, -EINVAL, cl, key, "missing");
	r = kc_server(x, server, key, &c->server);
	if (r < 0)
		return r;
	if (ca_data) {
		snprintf(key, sizeof(key), "%s.certificate-authority-data", path);
		r = base64_decode(ca_data->value, ca_data->len, &c->ca_data, &c->ca_len);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return ydoc_fail(x, -EINVAL, ca_data, key, "not valid base64");
		if (!is_pem_certificate(c->ca_data, c->ca_len))
			return ydoc_fail(x, -EINVAL, ca_data, key,
					 "does not decode to a PEM certificate");
		return 0;
	}
	snprintf(key, sizeof(key), "%s.certificate-authority", path);
	if (!ca)
		return ydoc_fail(x, -EINVAL, cl, key,
				 "missing (and no certificate-authority-data): the server's "
				 "certificate must be verified against the cluster's CA");
	return kc_file(x, ca, key, check_ca_file, &c->ca_file);
}

static int kc_user(const struct ydoc *x, const struct ydoc_node *u, const struct ydoc_node *at,
		   const char *path, struct kube_config *c)
{
	static const char *const certs[] = {"client-certificate", "client-certificate-data",
					    "client-key", "client-key-data"};
	const struct ydoc_node *token = NULL, *file = NULL;
	char key[256];
	int r;

	snprintf(key, sizeof(key), "%s.", path);
	if (u && ((r = kc_string(x, u, "token", key, &token)) < 0 ||
		  (r = kc_string(x, u, "tokenFile", key, &file)) < 0))
		return r;
	if (file) {
		snprintf(key, sizeof(key), "%s.tokenFile", path);
		return kc_file(x, file, key, check_token_file, &c->token_file);
	}
	if (token) {
		size_t start, len;

		snprintf(key, sizeof(key), "%s.token", path);
		if (kube_token_check(token->value, token->len, &start, &len) < 0)
			return ydoc_fail(x, -EINVAL, token, key,
					 "not a bearer token (empty, longer than %u bytes, or "
					 "holding blanks or non-ASCII bytes)",
					 KUBE_TOKEN_MAX);
		c->token = strndup(token->value + start, len);
		return c->token ? 0 : -ENOMEM;
	}
	for (size_t i = 0; u && i < ELEMENTSOF(certs); i++)
		if (kc_get(u, certs[i]))
			return ydoc_fail(x, -EINVAL, kc_get(u, certs[i]), path,
					 "client certificates are not supported: give the driver's "
					 "user a token or tokenFile (a service account token)");
	if (u && kc_get(u, "exec"))
		return ydoc_fail(x, -EINVAL, kc_get(u, "exec"), path,
				 "exec credential plugins are not supported: give the user a "
				 "token or tokenFile");
	if (u && kc_get(u, "auth-provider"))
		return ydoc_fail(x, -EINVAL, kc_get(u, "auth-provider"), path,
				 "auth-provider is not supported: give the user a token or "
				 "tokenFile");
	if (u && (kc_get(u, "username") || kc_get(u, "password")))
		return ydoc_fail(x, -EINVAL, u, path,
				 "basic authentication is not supported: give the user a token "
				 "or tokenFile");
	return ydoc_fail(x, -EINVAL, u ? u : at, path, "no token or tokenFile");
}

int kube_config_parse(const char *buf, size_t len, const char *path, struct kube_config **ret,
		      struct rc_error **err)
{
	_cleanup_(kube_config_freep) struct kube_config *c = NULL;
	static const struct ydoc_limits lim = {.max_depth = KC_DEPTH_MAX,
					       .max_nodes = KC_NODES_MAX,
					       .allow_tags = true,
					       .what = "a kubeconfig",
					       .path = "yaml"};
	_cleanup_(ydoc_node_freep) struct ydoc_node *root = NULL;
	const struct ydoc_node *cur, *ctx, *cl, *u = NULL, *cl_name, *u_name;
	const struct ydoc x = {.file = path, .err = err};
	char ctx_path[64], cl_path[128], u_path[128];
	int r;

	if (len > KUBE_CONFIG_MAX)
		return ydoc_fail(&x, -EFBIG, NULL, "file", "larger than %u bytes", KUBE_CONFIG_MAX);
	r = ydoc_load(&x, buf, len, &lim, &root);
	if (r < 0)
		return r;
	if (!root || root->type != YDOC_MAP)
		return ydoc_fail(&x, -EINVAL, root, "file", "not a kubeconfig (a YAML mapping)");
	r = ydoc_map(&x, root, "file");
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->source = strdup(path)))
		return -ENOMEM;

	r = kc_string(&x, root, "current-context", "", &cur);
	if (r < 0)
		return r;
	if (!cur || cur->len == 0)
		return ydoc_fail(&x, -EINVAL, NULL, "current-context", "not set");
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
		return ydoc_fail(&x, -EINVAL, ctx, cl_path, "missing");
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

int kube_config_load(const char *path, struct kube_config **ret, struct rc_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = read_full_file_at(AT_FDCWD, path, KUBE_CONFIG_MAX, false, &buf, &len);
	if (r == -EFBIG)
		return rc_error_set(err, -EINVAL, "%s: larger than 4 MiB", path);
	if (r == -EBADFD)
		return rc_error_set(err, -EINVAL, "%s: not a regular file", path);
	if (r < 0)
		return rc_error_wrap(err, r, "%s", path);
	return kube_config_parse(buf, len, path, ret, err);
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

/* The API server's address from the environment a pod gets: "https://HOST:PORT". */
static int in_cluster_server(char **ret, struct rc_error **err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char q[96];
	long long p;

	if (!host || !*host || !port || !*port)
		return rc_error_set(err, -ENOENT,
				    "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
				    "set (not running in a pod? give --kubeconfig)");
	if (!valid_host(host))
		return rc_error_set(err, -EINVAL,
				    "KUBERNETES_SERVICE_HOST: %s is not a host name or IP address",
				    text_quote(q, sizeof(q), host, strlen(host)));
	if (parse_int64(port, &p) < 0 || p < 1 || p > 65535)
		return rc_error_set(err, -EINVAL, "KUBERNETES_SERVICE_PORT: %s is not a port",
				    text_quote(q, sizeof(q), port, strlen(port)));
	if (asprintf(ret, strchr(host, ':') ? "https://[%s]:%lld" : "https://%s:%lld", host, p) <
	    0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, struct rc_error **err)
{
	_cleanup_(kube_config_freep) struct kube_config *c = NULL;
	int r;

	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->source = strdup("in-cluster")))
		return -ENOMEM;
	r = in_cluster_server(&c->server, err);
	if (r < 0)
		return rc_error_wrap(err, r, "in-cluster");
	if (asprintf(&c->token_file, "%s/token", sa_dir) < 0) {
		c->token_file = NULL;
		return -ENOMEM;
	}
	if (asprintf(&c->ca_file, "%s/ca.crt", sa_dir) < 0) {
		c->ca_file = NULL;
		return -ENOMEM;
	}
	r = check_token_file(c->token_file, err);
	if (r < 0)
		return rc_error_wrap(err, r, "in-cluster: %s", c->token_file);
	r = check_ca_file(c->ca_file, err);
	if (r < 0)
		return rc_error_wrap(err, r, "in-cluster: %s", c->ca_file);
	*ret = TAKE_PTR(c);
	return 0;
}
