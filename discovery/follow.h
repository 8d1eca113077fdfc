/* SPDX-License-Identifier: Apache-2.0 */
/*
 * follow: the Sysfs Watcher. Keeps a daemon's view of the node current on its sd-event
 * loop, for the bridge, `generate --watch` and the DRA driver alike:
 *   - device nodes appearing or vanishing under <dev-root>/infiniband (inotify:
 *     devtmpfs creates and removes them as HCAs and VFs come and go) start a full scan
 *     at once (events within a few ms are coalesced);
 *   - a periodic scan catches what sysfs alone shows (port state, renames): a cheap
 *     disc_refresh() of the last snapshot, a full scan when it says the device set
 *     changed and every 12th time;
 *   - scans run on a worker thread: one that does not finish within the deadline is
 *     abandoned and reported, and the loop never waits for sysfs.
 * Each finished scan is handed to the consumer, which compares and applies it.
 * This is discovery's loop-facing part; discovery.h stays free of the loop.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "discovery.h"
#include "loop.h"

#define DISC_FOLLOW_DEFAULT_INTERVAL_SEC 5
#define DISC_FOLLOW_SCAN_TIMEOUT_SEC 10

struct disc_follow;

/* Why a scan was made. */
enum disc_follow_reason {
	DISC_FOLLOW_START,    /* the first scan */
	DISC_FOLLOW_HOTPLUG,  /* a device node came or went */
	DISC_FOLLOW_PERIODIC, /* the periodic rescan */
	DISC_FOLLOW_REQUEST,  /* disc_follow_rescan(): SIGHUP, a config change */
};

/*
 * A finished scan: node is the new snapshot, prev the one before it (NULL the first
 * time); both stay owned by the follower, node until the next call and prev only for
 * this one. error < 0 when the scan failed or was abandoned: node is then the last good
 * snapshot (or NULL) and prev NULL; the cause is already logged.
 */
typedef void (*disc_follow_fn)(void *userdata, const struct disc_node *node,
			       const struct disc_node *prev, int error,
			       enum disc_follow_reason reason);

struct disc_follow_config {
	struct disc_options disc; /* strings must outlive the follower */
	int interval_sec;	  /* periodic rescan; <= 0: none */
	int timeout_sec;	  /* 0 = DISC_FOLLOW_SCAN_TIMEOUT_SEC */
	disc_follow_fn fn;
	void *userdata;
	/* NULL = disc_scan; tests put a scan here that blocks, to prove the deadline. */
	int (*scan)(const struct disc_options *opts, struct disc_node **ret_node);
};

/*
 * Starts watching (dev-root/infiniband, or dev-root until infiniband/ appears) and runs
 * the first scan; its result arrives through fn like every other. Logs one line per
 * event (hotplug seen, scan abandoned).
 */
int disc_follow_new(sd_event *loop, struct mailbox *mb, struct fswatch *fw,
		    const struct disc_follow_config *cfg, struct disc_follow **ret);
/* Asks for a scan now (coalesced with one in flight: a new one follows it). */
void disc_follow_rescan(struct disc_follow *f, enum disc_follow_reason reason);
/* Inside fn: the wall time in microseconds of the scan it is handed, 0 when none
 * finished (abandoned, not started). */
uint64_t disc_follow_last_scan_usec(const struct disc_follow *f);
/* The last good snapshot, or NULL before the first. */
const struct disc_node *disc_follow_node(const struct disc_follow *f);
/* Stops; a scan still running is left to finish on its own and discarded. Accepts NULL. */
void disc_follow_free(struct disc_follow *f);

/*
 * What changed for the kubelet between two snapshots, one call per usable device that
 * was added, removed, or changed health, with a reason ("port 1 DOWN", "uverbs node
 * missing", "ACTIVE again"), and one when a device was lent to another network
 * namespace or came back from it (it stays: neither is a removal or an addition). old
 * may be NULL (everything is added).
 */
enum disc_change {
	DISC_ADDED,
	DISC_REMOVED,
	DISC_UNHEALTHY,
	DISC_HEALTHY,
	DISC_LENT,
	DISC_RETURNED
};
typedef void (*disc_change_fn)(void *userdata, enum disc_change what, const struct disc_device *dev,
			       const char *reason);
void disc_node_changes(const struct disc_node *old, const struct disc_node *new, disc_change_fn fn,
		       void *userdata);
/* The log line of one change: "mlx5_2 (0000:3b:00.0): Unhealthy: port 1 DOWN", with the
 * fields device, pci, change and reason (--log-format json). A disc_change_fn's body. */
void disc_log_change(enum disc_change what, const struct disc_device *dev, const char *reason);
