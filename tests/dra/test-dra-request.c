/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra_request_decode at the edges of its rules (service-internal.h): the length limits
 * of uid, namespace and name on both sides, the character rules, duplicate UIDs, and the
 * error text a kubelet log would show.
 */
#include <errno.h>
#include <string.h>

#include "dra-v1.pb-c.h"
#include "service-internal.h"
#include "tap.h"

#define PB(x) K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define pb_(x) k8s__io__kubelet__pkg__apis__dra__v1__##x

struct c3 {
	const char *ns, *uid, *name;
};

/* Packs claims and decodes them; err gets the reason. */
static int decode(const struct c3 *cl, size_t n, struct dra_request **ret, char *err, size_t errlen)
{
	PB(NodePrepareResourcesRequest) req;
	PB(Claim) c[8], *cp[8];
	_cleanup_rc_error_ struct rc_error *rc = NULL;
	uint8_t buf[8192];
	size_t len;
	int e;

	pb_(node_prepare_resources_request__init)(&req);
	for (size_t i = 0; i < n; i++) {
		pb_(claim__init)(&c[i]);
		c[i].namespace_ = (char *)cl[i].ns;
		c[i].uid = (char *)cl[i].uid;
		c[i].name = (char *)cl[i].name;
		cp[i] = &c[i];
	}
	req.claims = cp;
	req.n_claims = n;
	len = pb_(node_prepare_resources_request__pack)(&req, buf);
	e = dra_request_decode(buf, len, ret, &rc);
	/* The contract: a failure sets one error, with its code. */
	if (e < 0 && (!rc || rc->code != -e))
		snprintf(err, errlen, "(no error of code %d set)", -e);
	else
		snprintf(err, errlen, "%s", rc ? rc->msg : "");
	return e;
}

static bool accepted(const char *ns, const char *uid, const char *name)
{
	struct c3 c = {ns, uid, name};
	struct dra_request *r = NULL;
	char err[256];
	int e = decode(&c, 1, &r, err, sizeof(err));

	dra_request_free(r);
	return e == 0;
}

static char *rep(char ch, size_t n)
{
	static char bufs[4][300];
	static unsigned next;
	char *b = bufs[next++ % 4];

	memset(b, ch, n);
	b[n] = '\0';
	return b;
}

int main(void)
{
	struct dra_request *r = NULL;
	char err[256];
	int e;

	ok(accepted("default", "0d5e1c3a-5b6f-4a8e-9c1d-2f3b4a5c6d7e", "pod-nic-x7"),
	   "a claim as the kubelet sends it");
	ok(accepted(rep('a', 63), rep('u', 128), rep('n', 253)), "every string at its maximum");
	ok(!accepted(rep('a', 64), "u", "n"), "a namespace of 64 chars is refused");
	ok(!accepted("a", rep('u', 129), "n"), "a uid of 129 chars is refused");
	ok(!accepted("a", "u", rep('n', 254)), "a name of 254 chars is refused");
	ok(accepted("kube-system", "A.b_c:d-1", "a.b-c.d"), "uid [A-Za-z0-9_.:-], dotted name");
	ok(!accepted("kube.system", "u", "n"), "a dot in a namespace is refused");
	ok(!accepted("-ns", "u", "n") && !accepted("ns-", "u", "n"),
	   "a namespace ending in '-' is refused");
	ok(!accepted("ns", "u", ".n") && !accepted("ns", "u", "n."), "a name ending in '.' too");
	ok(!accepted("ns", "u/v", "n") && !accepted("ns", "u v", "n"),
	   "a uid with '/' or a space is refused");
	ok(!accepted("ns", "u", "N"), "an upper-case name is refused");
	/* Each dot-separated label starts and ends with an alphanumeric (IsDNS1123Subdomain):
	 * the API server never stores such a name, so a request naming one is forged. */
	ok(!accepted("ns", "u", "a..b") && !accepted("ns", "u", "a.-b") &&
	       !accepted("ns", "u", "a-.b"),
	   "a name with an empty label or a label ending in '-' is refused");
	e = decode((struct c3[]){{"default", "u1", "a..b"}}, 1, &r, err, sizeof(err));
	EQ_INT(e, -EINVAL, "Prepare of claim a..b");
	EQ_STR(err, "claim 0 (uid u1): name \"a..b\" is not a DNS subdomain",
	       "the error names the claim and the rule");

	e = decode((struct c3[]){{"default", "u1", "a"}, {"", "u2", "b"}}, 2, &r, err, sizeof(err));
	EQ_INT(e, -EINVAL, "an empty namespace in claim 1");
	EQ_STR(err, "claim 1 (uid u2): empty namespace", "the error names the claim");
	ok(r == NULL, "nothing returned on failure");

	e = decode((struct c3[]){{"default", "u\x1b[31m", "a"}}, 1, &r, err, sizeof(err));
	EQ_STR(err, "claim 0: uid \"u\\x1b[31m\" is not [A-Za-z0-9_.:-]{1,128}",
	       "a hostile uid is escaped in the error");

	e = decode((struct c3[]){{"default", rep('u', 200), "a"}}, 1, &r, err, sizeof(err));
	ok(e == -EINVAL && strstr(err, "...\" is not") && strlen(err) < 120,
	   "a long uid is cut in the error: %s", err);

	e = decode((struct c3[]){{"a", "u1", "x"}, {"b", "u2", "y"}, {"c", "u1", "z"}}, 3, &r, err,
		   sizeof(err));
	EQ_INT(e, 0, "a batch with a repeated UID decodes");
	if (r) {
		EQ_INT((int)r->n_claims, 2, "the repeated UID is kept once");
		EQ_STR(r->claims[0].namespace, "a", "its first occurrence");
		EQ_STR(r->claims[1].uid, "u2", "the order is kept");
	}
	dra_request_free(r);
	r = NULL;

	e = decode((struct c3[]){{"a", "u1", "x"}, {"b", "u1", ""}}, 2, &r, err, sizeof(err));
	EQ_INT(e, -EINVAL, "a repeated UID is validated too");
	dra_request_free(r);

	e = dra_request_decode((const uint8_t *)"", 0, &r, NULL);
	ok(e == 0 && r && r->n_claims == 0, "an empty request is an empty batch");
	dra_request_free(r);
	return tap_done();
}
