/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claims internals shared by claims.c, checkpoint.c, claim-spec.c, their tests and the
 * fuzzer. Not a public API.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "claims.h"

/*
 * The checkpoint's text (len bytes, need not be NUL-terminated) as a checkpoint:
 * {"version": 1, "claims": [{"uid", "namespace", "name", "specFile" (optional),
 * "devices": [{"device", "requests": [...], "cdiDeviceIDs": [...], "shareID" (optional),
 * "adminAccess" (optional boolean, written when true; absent = false)}]}]}. The optional keys came
 * later: a checkpoint without them (an older release's) reads as before. Unknown keys, duplicate
 * keys or UIDs, wrong types, empty or unbounded strings and lists are -EBADMSG with "<path>:
 * reason" (or "line:column: reason" for text that is not JSON) in *err; -ENOMEM.
 */
int dra_checkpoint_parse(const char *buf, size_t len, struct dra_checkpoint **ret,
			 struct rc_error **err);
/* The text dra_checkpoint_save writes (malloc'd, NUL-terminated): 0, -EINVAL for a
 * checkpoint dra_checkpoint_parse would refuse, -ENOMEM. */
int dra_checkpoint_format(const struct dra_checkpoint *c, char **ret_buf, size_t *ret_len,
			  struct rc_error **err);

/* A deep copy; NULL on OOM. */
struct dra_prepared_claim *dra_prepared_claim_copy(const struct dra_prepared_claim *p);

/* True when uid may name a claim's CDI device and file: a CDI device name of at most
 * DRA_UID_MAX characters without "..". */
bool dra_uid_is_valid(const char *uid);

/* True when s may be a result's shareID: 1 to DRA_SHARE_ID_MAX characters of hex
 * digits and '-', at least one digit (a UUID; claims.h). */
bool dra_share_id_is_valid(const char *s);

/* "<driver>-claim_<uid>.json" (malloc'd), NULL when driver or uid is invalid or on OOM. */
char *dra_claim_spec_file_name(const char *driver, const char *uid);
