/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec keeper (keeper.h): spec_write() with a retry timer and the state that says
 * whether a write is news.
 */
#include <string.h>

#include "common.h"
#include "keeper.h"

#define RETRY_MIN_MS 1000
#define RETRY_MAX_MS 30000

struct spec_keeper {
	sd_event *loop;
	struct spec_keeper_config cfg;
	sd_event_source *retry;
	unsigned retry_ms;
	bool failing, written_once;
};

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct spec_keeper *k = userdata;

	k->retry = sd_event_source_disable_unref(k->retry);
	k->cfg.retry(k->cfg.userdata);
	return 0;
}

int spec_keeper_new(sd_event *loop, const struct spec_keeper_config *cfg, struct spec_keeper **ret)
{
	struct spec_keeper *k = calloc(1, sizeof(*k));

	if (!k)
		return -ENOMEM;
	k->loop = sd_event_ref(loop);
	k->cfg = *cfg;
	k->retry_ms = RETRY_MIN_MS;
	*ret = k;
	return 0;
}

void spec_keeper_free(struct spec_keeper *k)
{
	if (!k)
		return;
	sd_event_source_disable_unref(k->retry);
	sd_event_unref(k->loop);
	free(k);
}

/* A failed write: the next try with backoff. */
static int failed(struct spec_keeper *k, enum spec_keeper_outcome *ret_outcome)
{
	int r = 0;

	*ret_outcome = k->failing ? SPEC_KEEPER_FAILED_AGAIN : SPEC_KEEPER_FAILED;
	k->failing = true;
	if (!k->retry)
		r = sd_event_add_time_relative(k->loop, &k->retry, CLOCK_MONOTONIC,
					       (uint64_t)k->retry_ms * 1000, 10000, on_retry, k);
	k->retry_ms = k->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : k->retry_ms * 2;
	return r;
}

int spec_keeper_write(struct spec_keeper *k, const cJSON *spec, enum spec_keeper_outcome *ret_outcome,
		      char **ret_path, struct rc_error **err)
{
	_cleanup_free_ char *path = NULL;
	struct spec_write_options wo = k->cfg.wo;
	bool changed = false;
	int r;

	/* A daemon killed mid-write before us left its temp file: sweep once per start. */
	wo.remove_stale_temps = !k->written_once;
	r = spec_write(spec, &wo, &path, &changed, err);
	if (r < 0) {
		/* Arming the retry can only fail for memory: the next scan writes again. */
		(void)failed(k, ret_outcome);
		return r;
	}
	if (k->failing)
		*ret_outcome = SPEC_KEEPER_RECOVERED;
	else if (changed)
		*ret_outcome = SPEC_KEEPER_WRITTEN;
	else
		*ret_outcome = k->written_once ? SPEC_KEEPER_UNCHANGED : SPEC_KEEPER_FOUND;
	k->failing = false;
	k->written_once = true;
	k->retry_ms = RETRY_MIN_MS;
	k->retry = sd_event_source_disable_unref(k->retry);
	*ret_path = TAKE_PTR(path);
	return 0;
}
