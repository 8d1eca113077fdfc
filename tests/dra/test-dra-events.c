/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rate limits of the Node events (events-internal.h): one event per device per
 * interval with the state at its end coalesced, a shared bucket across devices, events
 * that always alternate. The POSTs themselves are tested by test-dra.py (events,
 * events-refused) against the API-server double.
 */
#include <stdio.h>

#include "../tap.h"
#include "events-internal.h"

#define SEC 1000000ULL

static const struct dra_events_limits L = {
    .interval_usec = DRA_EVENTS_INTERVAL_SEC * SEC,
    .refill_usec = DRA_EVENTS_REFILL_SEC * SEC,
    .burst = DRA_EVENTS_BURST,
};

/* One look at s at now: 1 when an event goes. */
static int look(struct dra_events_state *s, struct dra_events_bucket *b, uint64_t now,
		uint64_t *next)
{
	*next = UINT64_MAX;
	return dra_events_admit(s, b, &L, now, next);
}

static void test_one_device(void)
{
	struct dra_events_state s = {.healthy = true, .told = true};
	struct dra_events_bucket b;
	uint64_t t = 1000 * SEC, next;

	dra_events_bucket_init(&b, &L, t);
	EQ_INT(look(&s, &b, t, &next), 0, "healthy as said: nothing");
	ok(next == UINT64_MAX, "... and no look again");
	s.healthy = false;
	EQ_INT(look(&s, &b, t, &next), 1, "turns unhealthy: the event goes at once");
	ok(!s.told && s.told_at == t, "what it said is recorded");
	s.healthy = true;
	EQ_INT(look(&s, &b, t + 2 * SEC, &next), 0, "back 2 s later: it waits");
	ok(next == t + L.interval_usec, "... until the interval is over");
	s.healthy = false;
	EQ_INT(look(&s, &b, t + 3 * SEC, &next), 0, "down again before that: nothing is due");
	ok(next == UINT64_MAX, "... and nothing to look at later (the flap coalesced)");
	s.healthy = true;
	EQ_INT(look(&s, &b, t + L.interval_usec, &next), 1,
	       "up at the end of the interval: that state goes");
	ok(s.told, "... it says healthy");
}

/* A device flapping every second for 10 minutes. */
static void test_flapping(void)
{
	struct dra_events_state s = {.healthy = true, .told = true};
	struct dra_events_bucket b;
	uint64_t t0 = 5 * SEC, next = UINT64_MAX;
	unsigned n = 0, alternating = 1;
	bool last = true;

	dra_events_bucket_init(&b, &L, t0);
	for (uint64_t t = t0; t < t0 + 600 * SEC; t += SEC / 10) {
		if ((t - t0) % SEC == 0)
			s.healthy = !s.healthy;
		if (t < next && (t - t0) % SEC != 0)
			continue; /* the daemon looks on a change or at its timer */
		next = UINT64_MAX;
		if (dra_events_admit(&s, &b, &L, t, &next) > 0) {
			alternating &= s.told != last;
			last = s.told;
			n++;
		}
	}
	ok(n > 0 && n <= 600 / DRA_EVENTS_INTERVAL_SEC + 1,
	   "flapping 600 times in 10 minutes: %u events, at most one per %d s", n,
	   DRA_EVENTS_INTERVAL_SEC);
	ok(alternating, "the events alternate: no two say the same");
}

/* Every device of a big node goes down at once (a switch fails). */
static void test_bucket(void)
{
	enum { N = 100 };
	struct dra_events_state s[N];
	struct dra_events_bucket b;
	uint64_t t = 7 * SEC, next = UINT64_MAX;
	unsigned at_once = 0, in_a_minute = 0;

	dra_events_bucket_init(&b, &L, t);
	for (size_t i = 0; i < N; i++) {
		s[i] = (struct dra_events_state){.healthy = false, .told = true};
		at_once += dra_events_admit(&s[i], &b, &L, t, &next) > 0;
	}
	EQ_INT(at_once, DRA_EVENTS_BURST, "100 devices down at once: a burst of events");
	ok(next == t + L.refill_usec, "... the rest wait for the next token");
	for (uint64_t u = t + SEC; u <= t + 60 * SEC; u += SEC)
		for (size_t i = 0; i < N; i++)
			in_a_minute += dra_events_admit(&s[i], &b, &L, u, &next) > 0;
	EQ_INT(in_a_minute, 60 / DRA_EVENTS_REFILL_SEC, "then one per refill: 10 in the minute");
	for (size_t i = 0; i < N; i++)
		s[i].healthy = true;
	in_a_minute = 0;
	for (uint64_t u = t + 61 * SEC; u <= t + 400 * SEC; u += SEC)
		for (size_t i = 0; i < N; i++)
			if (dra_events_admit(&s[i], &b, &L, u, &next) > 0)
				in_a_minute += s[i].told ? 1 : 1000;
	EQ_INT(in_a_minute, DRA_EVENTS_BURST + 60 / DRA_EVENTS_REFILL_SEC,
	       "all back: only the devices whose Warning went get an event, each a Normal one "
	       "(the others' flap never reached the Node)");
}

int main(void)
{
	test_one_device();
	test_bucket();
	test_flapping();
	return tap_done();
}
