/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service internals the tests and the fuzzer reach: the decoding and validation of a
 * NodePrepareResources/NodeUnprepareResources request (the two requests share one wire
 * layout: repeated Claim claims = 1), without sockets or threads.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "service.h"

#define DRA_MESSAGE_MAX 1048576 /* a request of DRA_CLAIMS_PER_CALL_MAX full claims fits */

/* A decoded request: distinct UIDs in request order (a repeated UID is kept once, the
 * first time it appears), strings owned. */
struct dra_request {
	struct dra_claim_ref *claims;
	size_t n_claims;
};

/*
 * Decodes buf[0..len) (a packed request) and validates every claim: at most
 * DRA_CLAIMS_PER_CALL_MAX (counted on the wire before anything is unpacked), uid
 * non-empty, at most DRA_UID_MAX (claims.h) chars of [A-Za-z0-9_.:-], namespace a DNS
 * label, name a DNS subdomain, no string holding a NUL byte. -EBADMSG (not a message), -E2BIG (too
 * many claims), -EINVAL (a bad claim) with one line in *err naming the claim; -ENOMEM.
 * *ret written only on success. Never logs.
 */
int dra_request_decode(const uint8_t *buf, size_t len, struct dra_request **ret,
		       struct rc_error **err);
void dra_request_free(struct dra_request *r);

/*
 * A batch over req (ownership taken, also on failure) answered to call; NULL call for
 * tests: dra_batch_finish() must then not be used, pack and free it instead. NULL on OOM.
 */
struct dra_batch *dra_batch_new(enum dra_batch_kind kind, struct dra_request *req,
				struct gc_deferred *call);
/* The response as dra_batch_finish() sends it (a packed NodePrepareResourcesResponse or
 * NodeUnprepareResourcesResponse); *ret malloc'd. -ENOMEM. */
int dra_batch_pack(const struct dra_batch *b, uint8_t **ret, size_t *ret_len);
/* Frees b without answering its call. Accepts NULL. */
void dra_batch_free(struct dra_batch *b);
