/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the scan (sysfs-scan.c) and the refresh (refresh.c) share: the state of one pass
 * over sysfs and the scan's steps the refresh repeats. Not for other modules or tests
 * (they have discovery-internal.h).
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

#include "discovery-internal.h"
#include "discovery.h"

struct scan {
	struct disc_sysfs sys;
	int devib_fd; /* <dev-root>/infiniband, -1 when missing */
	bool oom;
	int stop; /* -ECANCELED / -ETIMEDOUT once the caller gave up */
	const char *dev_root;
	const atomic_bool *cancel;
	uint64_t deadline_usec;
	/* The last PF whose net/ was read: VFs of one PF come in a row. */
	char pf_cache_pci[DISC_PCI_MAX];
	char pf_cache_netdev[DISC_NETDEV_MAX + 1];
	struct disc_node *node;
	size_t devices_cap;
	size_t problems_cap;
	size_t problems_dropped;
	/* Indices into node->devices sorted by name, for the char-device lookups; devices
	 * from n_indexed on (lent devices the uverbs listing added) are not in it. */
	size_t *by_name;
	size_t n_indexed;
};

/* Opens the roots and chooses the link strategy; s->node is a fresh empty node. */
int disc_scan_begin(struct scan *s, const struct disc_options *opts, bool use_openat2);
/* Closes what disc_scan_begin opened; s->node stays the caller's. */
void disc_scan_end(struct scan *s);
/* True once the caller cancelled or the deadline passed (then s->stop says which). */
bool disc_scan_stopped(struct scan *s);
/* Adds a problem line to s->node (bounded: DISC_MAX_PROBLEMS; out of memory sets s->oom). */
void disc_problem(struct scan *s, const char *fmt, ...) _printf_(2, 3);
/* strerror() that is safe on the scan's worker threads. */
const char *disc_errstr(int r);

/* Each port's netdev of dev (devfd: its class directory, pcifd: its parent or -1). */
void disc_read_netdevs(struct scan *s, int devfd, int pcifd, const char *where,
		       const char *pci_where, const struct disc_device *dev,
		       struct disc_port *ports, size_t n);
/* A VF's PF netdev, physfn being the VF's physfn link read below vf_path. */
void disc_read_pf_netdev(struct scan *s, const char *vf_path, const char *physfn,
			 struct disc_device *dev);

/* Records the class/infiniband listing l, and lists class/net and class/infiniband_verbs
 * (absent or unreadable: no rename or driver change is seen by a refresh, which is all
 * it costs), into s->node->scan_state. 0 or -ENOMEM. */
int disc_scan_keep_state(struct scan *s, const struct disc_names *l);
