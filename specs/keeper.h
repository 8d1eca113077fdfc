/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keeper: the loop-facing part of specs/ - keeping rdma-cdi's spec file current from a
 * daemon (the bridge, `generate --watch`, the DRA driver), and `generate --watch` itself.
 *
 * A write that fails (full or read-only spec dir, a foreign file at our path) is logged
 * once with its fix and retried with backoff (1 s doubling to 30 s); the last good spec
 * stays on disk meanwhile. Everything runs on the caller's sd-event loop.
 */
#pragma once

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "discovery.h"
#include "specs.h"

struct spec_keeper;

struct spec_keeper_config {
	struct spec_write_options wo; /* strings must outlive the keeper */
	/* On the loop, when a failed write is due to be tried again: the caller builds the
	 * then-current spec and calls spec_keeper_write(). */
	void (*retry)(void *userdata);
	void *userdata;
};

int spec_keeper_new(sd_event *loop, const struct spec_keeper_config *cfg, struct spec_keeper **ret);
void spec_keeper_free(struct spec_keeper *k);
/*
 * Writes spec (see spec_write()). True when it is on disk: written, or already up to
 * date. Logs "written" when the bytes changed, and every failure with its fix.
 */
bool spec_keeper_write(struct spec_keeper *k, const cJSON *spec, size_t n_usable);

struct spec_watch_options {
	struct disc_options disc;
	struct spec_options spec;
	struct spec_write_options wo;
	int interval_sec; /* periodic rescan; <= 0 none */
};

/*
 * `rdma-cdi generate --watch`: writes the spec, then keeps it current in the foreground
 * (hotplug, periodic rescan, SIGHUP) until SIGTERM/SIGINT, logging each change. Tells
 * systemd READY=1 after the first scan (sd_notify; a no-op outside systemd). Returns 0 on
 * a clean stop, -errno when it cannot start.
 */
int spec_watch_run(const struct spec_watch_options *o);
