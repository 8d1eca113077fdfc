/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA service's request decoding on hostile requests: byte 0 picks the batch kind
 * (bit 0: Prepare or Unprepare) and how the claims are answered (the other bits), the
 * rest is a NodePrepareResourcesRequest / NodeUnprepareResourcesRequest (one layout) for
 * dra_request_decode(). Checked against the contract: an error comes with one line and
 * no result; a result holds only valid, distinct claims, exactly those protobuf-c sees;
 * the response built from it answers every claim once, with the error or the devices it
 * was given, and unanswered claims with an error.
 */
#include <errno.h>
#include <string.h>

#include "common.h"
#include "dra-v1.pb-c.h"
#include "fuzz.h"
#include "service-internal.h"

#define PB(x) K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define pb_(x) k8s__io__kubelet__pkg__apis__dra__v1__##x

#define SHARE_ID "9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f" /* v1 answers echo it */

static bool dns_ok(const char *s, size_t max, bool dots)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && !(dots && c == '.'))))
			return false;
		/* Labels start and end with an alphanumeric: no "a..b", "a-.b", "a.-b". */
		if (c == '.' && (s[i - 1] == '.' || s[i - 1] == '-' || s[i + 1] == '-'))
			return false;
	}
	return true;
}

/* 0: answered, 1: failed, 2: left unanswered. */
static unsigned action(uint8_t seed, size_t i)
{
	return (unsigned)((seed >> 1) + i) % 3;
}

static void check_response(const struct dra_request *req, enum dra_batch_kind kind, uint8_t seed,
			   const uint8_t *buf, size_t len)
{
	if (kind == DRA_BATCH_PREPARE) {
		PB(NodePrepareResourcesResponse) *r =
		    pb_(node_prepare_resources_response__unpack)(NULL, len, buf);

		fuzz_assert(r && r->n_claims == req->n_claims);
		for (size_t i = 0; i < req->n_claims; i++) {
			const PB(NodePrepareResourceResponse) *v = r->claims[i]->value;

			fuzz_assert(strcmp(r->claims[i]->key, req->claims[i].uid) == 0 && v);
			switch (action(seed, i)) {
			case 0:
				fuzz_assert(!*v->error && v->n_devices == 1);
				fuzz_assert(strcmp(v->devices[0]->pool_name, "node1") == 0);
				fuzz_assert(v->devices[0]->n_cdi_device_ids == 1);
				fuzz_assert(strcmp(v->devices[0]->share_id, SHARE_ID) == 0);
				break;
			case 1:
				fuzz_assert(strcmp(v->error, "refused") == 0 && v->n_devices == 0);
				break;
			default:
				fuzz_assert(*v->error && v->n_devices == 0);
			}
		}
		pb_(node_prepare_resources_response__free_unpacked)(r, NULL);
	} else {
		PB(NodeUnprepareResourcesResponse) *r =
		    pb_(node_unprepare_resources_response__unpack)(NULL, len, buf);

		fuzz_assert(r && r->n_claims == req->n_claims);
		for (size_t i = 0; i < req->n_claims; i++) {
			const char *e = r->claims[i]->value->error;

			fuzz_assert(strcmp(r->claims[i]->key, req->claims[i].uid) == 0);
			fuzz_assert(action(seed, i) == 0   ? !*e
				    : action(seed, i) == 1 ? strcmp(e, "refused") == 0
							   : *e != '\0');
		}
		pb_(node_unprepare_resources_response__free_unpacked)(r, NULL);
	}
}

static void answer_and_pack(struct dra_request *req, uint8_t seed)
{
	enum dra_batch_kind kind = seed & 1 ? DRA_BATCH_UNPREPARE : DRA_BATCH_PREPARE;
	char *requests[] = {(char *)"nic"}, *ids[] = {(char *)"rdma.example/hca=mlx5_0"};
	struct dra_prepared_device d = {.requests = requests,
					.n_requests = 1,
					.device = (char *)"pci-0000-3b-00-0",
					.cdi_ids = ids,
					.n_cdi_ids = 1,
					.share_id = (char *)SHARE_ID};
	struct dra_prepared_claim pc = {.devices = &d, .n_devices = 1};
	const struct dra_request *view = req;
	struct dra_batch *b = dra_batch_new(kind, req, NULL);
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;

	if (!b)
		return;
	fuzz_assert(dra_batch_n_claims(b) == view->n_claims);
	fuzz_assert(!dra_batch_claim(b, view->n_claims));
	fuzz_assert(dra_batch_fail(b, view->n_claims, "x") == -EINVAL);
	for (size_t i = 0; i < view->n_claims; i++) {
		int r = 0;

		switch (action(seed, i)) {
		case 0:
			r = dra_batch_answer(b, i, kind == DRA_BATCH_PREPARE ? &pc : NULL, "node1");
			break;
		case 1:
			/* A first answer is replaced by the failure. */
			if (kind == DRA_BATCH_PREPARE)
				(void)dra_batch_answer(b, i, &pc, "node1");
			r = dra_batch_fail(b, i, "refused");
			break;
		}
		if (r == -ENOMEM) {
			dra_batch_free(b);
			return;
		}
		fuzz_assert(r == 0);
	}
	if (dra_batch_pack(b, &buf, &len) == 0)
		check_response(view, kind, seed, buf, len);
	dra_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dra_request *req = (struct dra_request *)&req; /* "not written" sentinel */
	PB(NodePrepareResourcesRequest) * pb;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	uint8_t seed;
	int r;

	if (size < 1)
		return 0;
	seed = data[0];
	data++;
	size--;
	r = dra_request_decode(data, size, &req, &err);
	if (r < 0) {
		fuzz_assert(r == -EBADMSG || r == -E2BIG || r == -EINVAL || r == -ENOMEM);
		fuzz_assert(req == (struct dra_request *)&req);
		fuzz_assert_error(err, r);
		return 0;
	}
	fuzz_assert(!err);
	fuzz_assert(req && req->n_claims <= DRA_CLAIMS_PER_CALL_MAX);
	pb = pb_(node_prepare_resources_request__unpack)(NULL, size, data);
	fuzz_assert(pb);
	for (size_t i = 0; i < req->n_claims; i++) {
		const struct dra_claim_ref *c = &req->claims[i];

		fuzz_assert(name_is_safe(c->uid, DRA_UID_MAX));
		fuzz_assert(dns_ok(c->namespace, DNS_LABEL_MAX, false));
		fuzz_assert(dns_ok(c->name, DNS_SUBDOMAIN_MAX, true));
		for (size_t k = 0; k < i; k++)
			fuzz_assert(strcmp(c->uid, req->claims[k].uid) != 0);
	}
	/* Exactly the claims protobuf-c reads, each UID once, first occurrence kept. */
	for (size_t i = 0, at = 0; i < pb->n_claims; i++) {
		const PB(Claim) *c = pb->claims[i];
		bool dup = false;

		for (size_t k = 0; k < i; k++)
			dup |= strcmp(pb->claims[k]->uid, c->uid) == 0;
		if (dup)
			continue;
		fuzz_assert(at < req->n_claims && strcmp(req->claims[at].uid, c->uid) == 0 &&
			    strcmp(req->claims[at].namespace, c->namespace_) == 0 &&
			    strcmp(req->claims[at].name, c->name) == 0);
		at++;
		if (i == pb->n_claims - 1)
			fuzz_assert(at == req->n_claims);
	}
	fuzz_assert(pb->n_claims > 0 || req->n_claims == 0);
	pb_(node_prepare_resources_request__free_unpacked)(pb, NULL);
	answer_and_pack(req, seed);
	return 0;
}
