/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the DRA driver reads from others: the input as a ResourceClaim from the API
 * server (dra_claim_results, then dra_prepare over the hand-made inventory of
 * tests/dra/claims-fixture.h) and as the checkpoint file (dra_checkpoint_parse).
 * Contracts checked: errors come with one line and leave out-parameters alone; every
 * prepared claim can be recorded, and a checkpoint that parses formats to text that
 * parses to the same text again.
 */
#include <errno.h>
#include <string.h>

#include "../dra/claims-fixture.h"
#include "cdi.h"
#include "fuzz.h"

static bool one_line(const char *err, size_t size)
{
	return strnlen(err, size) < size && err[0] && !strchr(err, '\n');
}

/* A prepared claim must survive the checkpoint: format, parse, same text. */
static void record(struct dra_prepared_claim *p)
{
	struct dra_checkpoint c = {0}, *back = NULL;
	char *text = NULL, *again = NULL;
	char err[512];
	size_t len, len2;
	int r;

	p->spec_file = dra_claim_spec_file_name(DRIVER, p->uid);
	fuzz_assert(p->spec_file);
	r = dra_checkpoint_add(&c, p);
	if (r == -ENOMEM)
		return;
	fuzz_assert(r == 0);
	r = dra_checkpoint_format(&c, &text, &len, err, sizeof(err));
	if (r != 0)
		fprintf(stderr, "prepared claim not recordable: %s\n", err);
	fuzz_assert(r == 0 || r == -ENOMEM);
	if (r == 0) {
		r = dra_checkpoint_parse(text, len, &back, err, sizeof(err));
		if (r != 0)
			fprintf(stderr, "recorded claim does not parse: %s\n%s\n", err, text);
		fuzz_assert(r == 0 || r == -ENOMEM);
	}
	if (r == 0) {
		r = dra_checkpoint_format(back, &again, &len2, err, sizeof(err));
		fuzz_assert(r == 0 || r == -ENOMEM);
		fuzz_assert(r < 0 || (len == len2 && memcmp(text, again, len) == 0));
	}
	dra_checkpoint_free(back);
	free(text);
	free(again);
	dra_checkpoint_remove(&c, c.n_claims ? c.claims[0].uid : "");
	free(c.claims);
}

static void prepare(const struct fixture *f, const char *uid, const struct dra_result *res,
		    size_t n)
{
	struct dra_prepared_claim *p = (void *)1;
	cJSON *spec = (void *)1;
	char err[512], *want;
	int r;

	memset(err, 'x', sizeof(err));
	r = dra_prepare(NULL, &f->inv, DRIVER, "default", "c1", uid, res, n, &p, &spec, err,
			sizeof(err));
	if (r < 0) {
		fuzz_assert(r == -ENODEV || r == -EBUSY || r == -EIO || r == -EINVAL ||
			    r == -ENOMEM);
		fuzz_assert(one_line(err, sizeof(err)));
		fuzz_assert(p == (void *)1 && spec == (void *)1);
		return;
	}
	fuzz_assert(r == 0 && p && spec && p->n_devices >= 1 && p->n_devices <= n);
	fuzz_assert(cdi_spec_validate(spec, NULL) == 0);
	want = strdup_printf(DRIVER "/claim=%s", uid);
	for (size_t i = 0; i < p->n_devices; i++) {
		fuzz_assert(p->devices[i].n_cdi_ids == 2 && p->devices[i].n_requests >= 1);
		fuzz_assert(!want || strcmp(p->devices[i].cdi_ids[1], want) == 0);
		fuzz_assert(dra_inventory_find(&f->inv, p->devices[i].device));
		/* What goes back to the kubelet as Device.share_id. */
		fuzz_assert(!p->devices[i].share_id ||
			    dra_share_id_is_valid(p->devices[i].share_id));
	}
	free(want);
	cJSON_Delete(spec);
	record(p);
}

static void as_claim(const struct fixture *f, const uint8_t *data, size_t size)
{
	cJSON *claim = cJSON_ParseWithLength((const char *)data, size);
	const cJSON *uid = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(claim, "metadata"), "uid");
	struct dra_result *res = (void *)1;
	size_t n = 77;
	char err[512];
	const char *u;
	int r;

	if (!claim)
		return;
	/* The claim's own UID, so that the fuzzer gets past the UID check. */
	u = cJSON_IsString(uid) && uid->valuestring ? uid->valuestring : "u";
	memset(err, 'x', sizeof(err));
	r = dra_claim_results(claim, u, DRIVER, POOL, &res, &n, err, sizeof(err));
	if (r < 0) {
		fuzz_assert(r == -EINVAL || r == -ENOENT || r == -ENOMEM);
		fuzz_assert(one_line(err, sizeof(err)));
		fuzz_assert(res == (void *)1 && n == 77);
	} else {
		fuzz_assert(r == 0 && res && n >= 1 && n <= DRA_RESULTS_MAX);
		for (size_t i = 0; i < n; i++)
			fuzz_assert(res[i].request && res[i].device &&
				    strlen(res[i].request) <= DRA_CLAIM_STRING_MAX &&
				    strlen(res[i].device) <= DRA_DEVICE_NAME_MAX &&
				    (!res[i].share_id || dra_share_id_is_valid(res[i].share_id)));
		prepare(f, u, res, n);
		dra_results_free(res, n);
	}
	cJSON_Delete(claim);
}

static void as_checkpoint(const uint8_t *data, size_t size)
{
	struct dra_checkpoint *c = (void *)1, *back = NULL;
	char *text = NULL, *again = NULL;
	char err[512];
	size_t len, len2;
	int r;

	memset(err, 'x', sizeof(err));
	r = dra_checkpoint_parse((const char *)data, size, &c, err, sizeof(err));
	if (r < 0) {
		fuzz_assert(r == -EBADMSG || r == -ENOMEM);
		fuzz_assert(one_line(err, sizeof(err)));
		fuzz_assert(c == (void *)1);
		return;
	}
	for (size_t i = 0; i < c->n_claims; i++)
		fuzz_assert(dra_checkpoint_find(c, c->claims[i].uid) == &c->claims[i]);
	r = dra_checkpoint_format(c, &text, &len, err, sizeof(err));
	if (r != 0 && r != -ENOMEM)
		fprintf(stderr, "parsed checkpoint does not format: %s\n", err);
	fuzz_assert(r == 0 || r == -ENOMEM);
	if (r == 0) {
		r = dra_checkpoint_parse(text, len, &back, err, sizeof(err));
		if (r != 0 && r != -ENOMEM)
			fprintf(stderr, "formatted checkpoint does not parse: %s\n%s\n", err, text);
		fuzz_assert(r == 0 || r == -ENOMEM);
	}
	if (r == 0) {
		fuzz_assert(back->n_claims == c->n_claims);
		r = dra_checkpoint_format(back, &again, &len2, err, sizeof(err));
		fuzz_assert(r == 0 || r == -ENOMEM);
		fuzz_assert(r < 0 || (len == len2 && memcmp(text, again, len) == 0));
	}
	dra_checkpoint_free(c);
	dra_checkpoint_free(back);
	free(text);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fixture *f;

	if (!f)
		f = fix_new();
	as_claim(f, data, size);
	as_checkpoint(data, size);
	return 0;
}
