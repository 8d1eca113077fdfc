/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Live reload of the config file. The watcher keeps its own copy of the config last
 * reported (or in force at start) to compare against: re-reading a file that merely
 * got touched, or a ConfigMap update that changed another key, reports nothing.
 */
#include <fcntl.h>
#include <libgen.h>
#include <string.h>

#include "watch.h"

#define SETTLE_USEC 100000

struct cfg_watch {
	sd_event *loop;
	struct fswatch *fw;
	char *path, *dir;
	int id;
	sd_event_source *settle;
	struct cfg *current; /* a private copy, by re-parsing what was reported */
	bool failing;
	cfg_watch_fn fn;
	void *userdata;
};

/* Loads the file once and parses it twice: one config for the caller, one to keep. */
static int load_two(const char *path, struct cfg **ret_a, struct cfg **ret_b, struct rc_error **err)
{
	_cleanup_(cfg_freep) struct cfg *a = NULL;
	int r = cfg_load(path, &a, err);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (r < 0)
		return r;
	/* cfg_load checked the file; read the same bytes for the second parse. A file
	 * swapped in between is simply seen again on the next event. */
	r = read_full_file_at(AT_FDCWD, path, CFG_FILE_MAX, false, &buf, &len);
	if (r < 0)
		return rc_error_wrap(err, r, "%s", path);
	r = cfg_parse(buf, len, path, ret_b, err);
	if (r < 0)
		return r;
	*ret_a = TAKE_PTR(a);
	return 0;
}

static void reload(struct cfg_watch *w)
{
	_cleanup_(cfg_freep) struct cfg *c = NULL, *mine = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	bool recovered;
	int r;

	r = load_two(w->path, &c, &mine, &err);
	if (r < 0) {
		if (!w->failing)
			w->fn(w->userdata, NULL, rc_error_msg(err, r));
		w->failing = true;
		return;
	}
	recovered = w->failing;
	w->failing = false;
	/* Back to the config in force after a refused file: reported all the same, the
	 * caller learns the file on disk is fine again (rdma_cdi_config_rejected). */
	if (!recovered && w->current && cfg_equal(c, w->current)) {
		log_debug("%s changed on disk, its content did not", w->path);
		return;
	}
	cfg_free(w->current);
	w->current = TAKE_PTR(mine);
	w->fn(w->userdata, TAKE_PTR(c), NULL);
}

static int on_settled(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct cfg_watch *w = userdata;

	w->settle = sd_event_source_disable_unref(w->settle);
	reload(w);
	return 0;
}

static void on_event(void *userdata, uint32_t mask, const char *name)
{
	struct cfg_watch *w = userdata;

	if (mask & IN_IGNORED) {
		log_warning("the config directory %s went away: live reload stops", w->dir);
		return;
	}
	if (w->settle)
		return;
	if (sd_event_add_time_relative(w->loop, &w->settle, CLOCK_MONOTONIC, SETTLE_USEC, 10000,
				       on_settled, w) < 0)
		reload(w);
}

int cfg_watch_new(sd_event *loop, struct fswatch *fw, const char *path, cfg_watch_fn fn,
		  void *userdata, struct cfg **ret_initial, struct cfg_watch **ret,
		  struct rc_error **err)
{
	struct cfg_watch *w = calloc(1, sizeof(*w));
	_cleanup_rc_error_ struct rc_error *e = NULL;
	_cleanup_free_ char *tmp = strdup(path);
	int r;

	if (!w || !tmp) {
		free(w);
		return -ENOMEM;
	}
	w->loop = sd_event_ref(loop);
	w->fw = fw;
	w->fn = fn;
	w->userdata = userdata;
	w->path = strdup(path);
	w->dir = strdup(dirname(tmp));
	if (!w->path || !w->dir) {
		cfg_watch_free(w);
		return -ENOMEM;
	}
	r = fswatch_add(fw, w->dir,
			IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE |
			    IN_ATTRIB | IN_ONLYDIR,
			on_event, w);
	if (r < 0) {
		rc_error_wrap(err, r, "watching %s", w->dir);
		cfg_watch_free(w);
		return r;
	}
	w->id = r;
	/* Watching first, then loading: a change right now is an event, not lost. */
	r = load_two(path, ret_initial, &w->current, &e);
	if (r == -ENOENT) {
		/* Watched all the same: creating the file later applies it. */
		*ret_initial = NULL;
		w->failing = true;
	} else if (r < 0) {
		cfg_watch_free(w);
		if (err && !*err)
			*err = TAKE_PTR(e);
		return r;
	}
	*ret = w;
	return 0;
}

void cfg_watch_free(struct cfg_watch *w)
{
	if (!w)
		return;
	if (w->id > 0)
		fswatch_remove(w->fw, w->id);
	sd_event_source_disable_unref(w->settle);
	sd_event_unref(w->loop);
	cfg_free(w->current);
	free(w->path);
	free(w->dir);
	free(w);
}
