/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keeper: the loop-facing part of specs/: keeping rdma-cdi's spec file current from a
 * daemon (daemon/: the bridge, `generate --watch`, the DRA driver).
 *
 * A write that fails (full or read-only spec dir, a foreign file at our path) is retried
 * with backoff (1 s doubling to 30 s); the last good spec stays on disk meanwhile. The
 * keeper says what each write did, so the caller can log it once; it logs nothing itself.
 * Everything runs on the caller's sd-event loop.
 */
#pragma once

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "rc-error.h"
#include "specs.h"

struct spec_keeper;

struct spec_keeper_config {
	struct spec_write_options wo; /* strings must outlive the keeper */
	/* On the loop, when a failed write is due to be tried again: the caller builds the
	 * then-current spec and calls spec_keeper_write(). */
	void (*retry)(void *userdata);
	void *userdata;
};

/* What a write did. */
enum spec_keeper_outcome {
	SPEC_KEEPER_WRITTEN,	  /* the bytes on disk changed */
	SPEC_KEEPER_FOUND,	  /* the first write found the file up to date */
	SPEC_KEEPER_UNCHANGED,	  /* up to date, as it was */
	SPEC_KEEPER_RECOVERED,	  /* on disk again after failures */
	SPEC_KEEPER_FAILED,	  /* the first failure of a series: a retry is armed */
	SPEC_KEEPER_FAILED_AGAIN, /* a retry failed too: the next one is armed */
};

/* 0 or -ENOMEM. Does not log. */
int spec_keeper_new(sd_event *loop, const struct spec_keeper_config *cfg, struct spec_keeper **ret);
void spec_keeper_free(struct spec_keeper *k);
/*
 * Writes spec (see spec_write()). 0 when it is on disk (written, or already up to date),
 * with the spec's path in *ret_path (malloc'd); -errno when the write failed, with *err
 * (the retry is armed: -ENOMEM when even that failed). *ret_outcome is always set.
 * Does not log.
 */
int spec_keeper_write(struct spec_keeper *k, const cJSON *spec, enum spec_keeper_outcome *ret_outcome,
		      char **ret_path, struct rc_error **err);
