/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubeconfig parsing and the in-cluster config: what a user's file yields (server, CA
 * file relative to the file or decoded data, token or tokenFile) and every refusal, with
 * the message naming file, line and key.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube-internal.h"
#include "tap.h"
#include "tap-error.h"

#define PEM "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
/* base64 of PEM */
#define PEM_B64                                                                                    \
	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJzekNDQVZtZ0F3SUJBZ0lVCi0tLS0tRU5EIENFUlRJ"     \
	"RklDQVRFLS0tLS0K"

static char dir[] = "/tmp/test-kube-config-XXXXXX";

static void put(const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (!f) {
		perror(p);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

/* A kubeconfig around a cluster and a user body (indented 4). */
static int load_text(const char *cluster, const char *user, struct kube_config **ret)
{
	char text[8192], path[512];

	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\ncurrent-context: dra\n"
		 "contexts:\n- name: other\n  context: {cluster: x, user: x}\n"
		 "- name: dra\n  context:\n    cluster: c1\n    user: u1\n"
		 "clusters:\n- name: c0\n  cluster: {server: 'https://wrong'}\n"
		 "- name: c1\n  cluster:\n%s"
		 "users:\n- name: u1\n  user:\n%s",
		 cluster, user);
	put("config", text);
	snprintf(path, sizeof(path), "%s/config", dir);
	return kube_config_load(path, ret, tap_fresh());
}

static bool has(const char *needle)
{
	if (strstr(tap_msg(), needle))
		return true;
	printf("#   error: %s\n#   wanted: %s\n", tap_msg(), needle);
	return false;
}

static void refused(const char *cluster, const char *user, int want, const char *needle,
		    const char *what)
{
	struct kube_config *c = NULL;
	int r = load_text(cluster, user, &c);

	ok(r == want && c == NULL && has(needle) && !strchr(tap_msg(), '\n'), "%s", what);
	if (r != want)
		printf("#   r = %d\n", r);
	kube_config_free(c);
}

static void refused_raw(const char *text, int want, const char *needle, const char *what)
{
	struct kube_config *c = NULL;
	int r = kube_config_parse(text, strlen(text), "/k/config", &c, tap_fresh());

	ok(r == want && c == NULL && has(needle), "%s", what);
	if (r != want)
		printf("#   r = %d\n", r);
	kube_config_free(c);
}

static void test_good(void)
{
	struct kube_config *c = NULL;
	char want[600];
	int r;

	r = load_text("    server: https://10.0.0.1:6443/\n    certificate-authority: ca.crt\n",
		      "    token: ' abc.def-ghi '\n", &c);
	ok(r == 0 && c, "a kubeconfig with a relative CA file and a token loads (%s)", tap_msg());
	if (c) {
		EQ_STR(c->server, "https://10.0.0.1:6443", "server, trailing slash stripped");
		snprintf(want, sizeof(want), "%s/ca.crt", dir);
		EQ_STR(c->ca_file, want, "certificate-authority relative to the file's dir");
		ok(c->ca_data == NULL, "no CA data");
		EQ_STR(c->token, "abc.def-ghi", "token, trimmed");
		ok(c->token_file == NULL, "no token file");
		snprintf(want, sizeof(want), "%s/config", dir);
		EQ_STR(c->source, want, "source names the file");
	}
	kube_config_free(c);
	c = NULL;

	r = load_text("    server: https://[fd00::1]:443\n    certificate-authority-data: " PEM_B64
		      "\n    insecure-skip-tls-verify: false\n",
		      "    tokenFile: sub/token\n", &c);
	ok(r == 0 && c, "CA data and a relative tokenFile load (%s)", tap_msg());
	if (c) {
		ok(c->ca_data && c->ca_len == strlen(PEM) && !memcmp(c->ca_data, PEM, c->ca_len),
		   "certificate-authority-data is decoded");
		ok(c->ca_file == NULL, "no CA file with CA data");
		snprintf(want, sizeof(want), "%s/sub/token", dir);
		EQ_STR(c->token_file, want, "tokenFile relative to the file's dir");
		ok(c->token == NULL, "no static token with a tokenFile");
		EQ_STR(c->server, "https://[fd00::1]:443", "an IPv6 server");
	}
	kube_config_free(c);
	c = NULL;

	snprintf(want, sizeof(want),
		 "    server: https://api.example:6443\n    certificate-authority: %s/ca.crt\n",
		 dir);
	r = load_text(want, "    token: t\n    tokenFile: sub/token\n", &c);
	ok(r == 0 && c && c->token_file && !c->token,
	   "tokenFile wins over token (it is the one that rotates)");
	if (c)
		ok(!strcmp(c->ca_file + strlen(c->ca_file) - 6, "ca.crt") && c->ca_file[0] == '/',
		   "an absolute CA path is kept");
	kube_config_free(c);
	c = NULL;

	/* kubectl reads YAML 1.1: "no" is false there, and a tag is no reason to refuse. */
	r = load_text("    server: !!str https://h:1\n    certificate-authority-data: " PEM_B64
		      "\n    insecure-skip-tls-verify: no\n",
		      "    token: t\n", &c);
	ok(r == 0 && c, "a YAML 1.1 \"no\" and an explicit !!str tag load (%s)", tap_msg());
	if (c)
		EQ_STR(c->server, "https://h:1", "the tagged server is read as its text");
	kube_config_free(c);
}

static void test_refusals(void)
{
	const char *ca = "    server: https://h:1\n    certificate-authority: ca.crt\n";
	const char *tok = "    token: t\n";
	struct kube_config *c = NULL;
	char path[512];
	int r;

	refused("    server: http://h:1\n    certificate-authority: ca.crt\n", tok, -EINVAL,
		"clusters[1].cluster.server: \"http://h:1\" is not an https:// URL",
		"an http:// server is refused");
	refused("    server: https://user:pw@h:1\n    certificate-authority: ca.crt\n", tok,
		-EINVAL, "no blanks, userinfo", "a server with credentials in the URL is refused");
	refused("    server: https://\n    certificate-authority: ca.crt\n", tok, -EINVAL,
		"has no host", "a server without host is refused");
	refused("    certificate-authority: ca.crt\n", tok, -EINVAL,
		"clusters[1].cluster.server: missing", "a cluster without server is refused");
	refused("    server: https://h:1\n", tok, -EINVAL,
		"clusters[1].cluster.certificate-authority: missing",
		"a cluster without any CA is refused");
	refused("    server: https://h:1\n    certificate-authority: nope.crt\n", tok, -ENOENT,
		"nope.crt\": No such file", "a missing CA file is refused with ENOENT");
	refused("    server: https://h:1\n    certificate-authority: token\n", tok, -EINVAL,
		"holds no PEM certificate", "a CA file without a certificate is refused");
	refused("    server: https://h:1\n    certificate-authority-data: '@@@'\n", tok, -EINVAL,
		"certificate-authority-data: not valid base64", "bad base64 is refused");
	refused("    server: https://h:1\n    certificate-authority-data: aGVsbG8=\n", tok, -EINVAL,
		"does not decode to a PEM certificate", "CA data that is not PEM is refused");
	refused("    server: https://h:1\n    certificate-authority: ca.crt\n"
		"    insecure-skip-tls-verify: true\n",
		tok, -EINVAL, "insecure-skip-tls-verify: true is refused",
		"insecure-skip-tls-verify: true is refused");
	refused("    server: https://h:1\n    certificate-authority: ca.crt\n"
		"    insecure-skip-tls-verify: maybe\n",
		tok, -EINVAL, "insecure-skip-tls-verify: expected true or false, got \"maybe\"",
		"a non-boolean skip-verify is refused, saying what it got");
	refused(ca, "    client-certificate: c.crt\n    client-key: c.key\n", -EINVAL,
		"client certificates are not supported: give the driver's user a token",
		"a client-certificate-only user is refused, saying a token is needed");
	refused(ca, "    client-certificate-data: QQ==\n    client-key-data: QQ==\n", -EINVAL,
		"client certificates are not supported", "client certificate data is refused");
	refused(ca, "    exec: {command: aws}\n", -EINVAL, "exec credential plugins are not",
		"an exec user is refused");
	refused(ca, "    username: a\n    password: b\n", -EINVAL, "basic authentication",
		"basic auth is refused");
	refused(ca, "    {}\n", -EINVAL, "users[0].user: no token or tokenFile",
		"a user without token is refused");
	refused(ca, "    token: \"a b\"\n", -EINVAL, "not a bearer token",
		"a token with a blank is refused");
	refused(ca, "    token: \"a\\r\\nX-Evil: 1\"\n", -EINVAL, "not a bearer token",
		"a token that would inject a header is refused");
	refused(ca, "    tokenFile: nope\n", -ENOENT,
		"users[0].user.tokenFile: ", "a missing tokenFile is refused");
	refused(ca, "    token: [a]\n", -EINVAL,
		"users[0].user.token: expected a string, got a list",
		"a token that is not a string is refused");

	refused_raw("current-context: x\n", -EINVAL,
		    "/k/config:1:18: current-context: context \"x\" is not in contexts",
		    "an unknown current-context is refused with line and column");
	refused_raw("clusters: []\n", -EINVAL, "/k/config: current-context: not set",
		    "a missing current-context is refused");
	refused_raw("current-context: a\ncontexts:\n- name: a\n  context: {user: u}\n", -EINVAL,
		    "contexts[0].context.cluster: missing", "a context without cluster is refused");
	refused_raw("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n", -EINVAL,
		    "cluster \"c\" is not in clusters", "an unknown cluster is refused");
	refused_raw("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: v}\n"
		    "clusters:\n- name: c\n  cluster: {server: 'https://h', "
		    "certificate-authority-data: " PEM_B64 "}\n",
		    -EINVAL, "user \"v\" is not in users", "an unknown user is refused");
	refused_raw("current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n"
		    "clusters:\n- name: c\n  cluster: {server: 'https://h', "
		    "certificate-authority-data: " PEM_B64 "}\n",
		    -EINVAL, "contexts[0].context.user: no token or tokenFile",
		    "a context without user is refused (no token)");
	refused_raw("a: [\n", -EBADMSG, "/k/config:2:1: yaml: invalid YAML",
		    "broken YAML is refused with its position");
	refused_raw("- a\n", -EINVAL, "not a kubeconfig", "a list is not a kubeconfig");
	refused_raw("", -EINVAL, "not a kubeconfig", "an empty file is not a kubeconfig");
	refused_raw("a: &x 1\nb: *x\n", -EINVAL, "anchors are not accepted", "anchors are refused");
	refused_raw("current-context: a\ncurrent-context: b\n", -EINVAL, "duplicate key",
		    "duplicate keys are refused");
	refused_raw("a: 1\n---\nb: 2\n", -EINVAL, "more than one YAML document",
		    "two documents are refused");
	refused_raw(
	    "current-context: a\ncurrent-context: b\n", -EINVAL,
	    "/k/config:2:1: file: duplicate key current-context (first at line 1, column 1)",
	    "a duplicate key is named with both places");
	refused_raw("a: [[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]\n", -EINVAL,
		    "/k/config:1:19: yaml: nested deeper than 16 levels", "depth is bounded");
	refused_raw("a: *x\n", -EINVAL, "/k/config:1:4: yaml: YAML aliases are not accepted",
		    "an alias is refused where it stands");
	refused_raw("contexts: 3\ncurrent-context: a\n", -EINVAL,
		    "/k/config:1:11: contexts: expected a list, got a scalar",
		    "contexts that are not a list are refused");
	refused_raw("current-context: a\ncontexts:\n- name: a\n  context: [1]\n", -EINVAL,
		    "/k/config:4:12: contexts[0].context: expected a mapping, got a list",
		    "a context that is not a mapping");

	r = kube_config_load("/nonexistent/kubeconfig", &c, tap_fresh());
	ok(r == -ENOENT && c == NULL && has("/nonexistent/kubeconfig: No such file"),
	   "a missing kubeconfig is -ENOENT with the path");
	r = kube_config_load(dir, &c, tap_fresh());
	ok(r == -EINVAL && has("not a regular file"), "a directory is not a kubeconfig");
	snprintf(path, sizeof(path), "%s/big", dir);
	r = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (r >= 0) {
		if (ftruncate(r, KUBE_CONFIG_MAX + 1) < 0)
			perror("ftruncate");
		close(r);
	}
	r = kube_config_load(path, &c, tap_fresh());
	ok(r == -EINVAL && has("larger than"), "an oversized kubeconfig is refused");
}

static void test_in_cluster(void)
{
	struct kube_config *c = NULL;
	char sa[512], want[600];
	int r;

	snprintf(sa, sizeof(sa), "%s/sa", dir);
	mkdir(sa, 0700);
	put("sa/token", "jwt.token.here\n");
	put("sa/ca.crt", PEM);

	unsetenv("KUBERNETES_SERVICE_HOST");
	unsetenv("KUBERNETES_SERVICE_PORT");
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -ENOENT && !c && has("KUBERNETES_SERVICE_HOST"),
	   "without the env it is -ENOENT, naming the variables");

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == 0 && c, "in-cluster config (%s)", tap_msg());
	if (c) {
		EQ_STR(c->server, "https://10.96.0.1:443", "server from the env");
		snprintf(want, sizeof(want), "%s/token", sa);
		EQ_STR(c->token_file, want, "the service account token file");
		snprintf(want, sizeof(want), "%s/ca.crt", sa);
		EQ_STR(c->ca_file, want, "the service account CA");
		EQ_STR(c->source, "in-cluster", "source");
		ok(c->token == NULL, "the token is read per request, not kept");
	}
	kube_config_free(c);
	c = NULL;

	setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == 0 && c && !strcmp(c->server, "https://[fd00:10:96::1]:443"),
	   "an IPv6 service host is bracketed");
	kube_config_free(c);
	c = NULL;

	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1/evil", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -EINVAL && has("KUBERNETES_SERVICE_HOST"), "a host with a slash is refused");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::zz", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -EINVAL, "a broken IPv6 address is refused");
	setenv("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc", 1);
	setenv("KUBERNETES_SERVICE_PORT", "65536", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -EINVAL && has("KUBERNETES_SERVICE_PORT: \"65536\" is not a port"),
	   "a port out of range is refused");
	setenv("KUBERNETES_SERVICE_PORT", "https", 1);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -EINVAL, "a port that is not a number is refused");
	setenv("KUBERNETES_SERVICE_PORT", "6443", 1);

	r = kube_config_in_cluster("/nonexistent-sa", &c, tap_fresh());
	ok(r == -ENOENT && has("/nonexistent-sa/token"), "a missing token is -ENOENT");
	snprintf(want, sizeof(want), "%s/ca.crt", sa);
	unlink(want);
	r = kube_config_in_cluster(sa, &c, tap_fresh());
	ok(r == -ENOENT && has("ca.crt: No such file"), "a missing ca.crt is -ENOENT");
	put("sa/ca.crt", PEM);
}

int main(void)
{
	char p[600];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 2;
	}
	put("ca.crt", PEM);
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdir(p, 0700);
	put("sub/token", "file-token\n");
	put("token", "not a cert\n");

	test_good();
	test_refusals();
	test_in_cluster();

	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p) != 0)
		printf("# could not remove %s\n", dir);
	tap_fresh();
	return tap_done();
}
