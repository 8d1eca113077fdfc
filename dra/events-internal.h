/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events-internal: the rate limits of the Node events (events.h), pure, for events.c and
 * the unit tests. Times are CLOCK_MONOTONIC microseconds.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define DRA_EVENTS_INTERVAL_SEC 10 /* per device, at most one event per interval */
#define DRA_EVENTS_BURST 10	   /* all devices: a burst of events ... */
#define DRA_EVENTS_REFILL_SEC 6	   /* ... then one every 6 s (10 a minute) */

struct dra_events_limits {
	uint64_t interval_usec;
	uint64_t refill_usec;
	unsigned burst;
};

/* The shared bucket: credit_usec / refill_usec events may go now. */
struct dra_events_bucket {
	uint64_t credit_usec, at_usec;
};

/* One device: what it is, and what its last event said. */
struct dra_events_state {
	bool healthy;	  /* now */
	bool told;	  /* the health the last event said; the first seen counts as said */
	uint64_t told_at; /* when that event went; 0: none yet */
};

/* A full bucket at now. */
void dra_events_bucket_init(struct dra_events_bucket *b, const struct dra_events_limits *l,
			    uint64_t now);

/*
 * Whether s gets an event at now: 1 when it does (s->told and told_at updated, a token
 * taken), 0 when nothing is due (its health is what was said) or when it must wait: then
 * *next is lowered to when to look again (> now).
 */
int dra_events_admit(struct dra_events_state *s, struct dra_events_bucket *b,
		     const struct dra_events_limits *l, uint64_t now, uint64_t *next);
