/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The spec keeper and `generate --watch`.
 */
#include <signal.h>
#include <string.h>

#include <systemd/sd-daemon.h>

#include "follow.h"
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

bool spec_keeper_write(struct spec_keeper *k, const cJSON *spec, size_t n_usable)
{
	const char *dir = k->cfg.wo.spec_dir ? k->cfg.wo.spec_dir : SPEC_DEFAULT_DIR;
	_cleanup_free_ char *path = NULL;
	struct spec_write_options wo = k->cfg.wo;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	bool changed = false;
	int r;

	/* A daemon killed mid-write before us left its temp file: sweep once per start. */
	wo.remove_stale_temps = !k->written_once;
	r = spec_write(spec, &wo, &path, &changed, &err);
	if (r < 0) {
		if (!k->failing)
			log_error("writing the CDI spec into %s failed: %s; %s. The last good spec "
				  "stays; retrying",
				  dir, rc_error_msg(err, r), spec_write_fix(r));
		else
			log_debug("writing the CDI spec into %s failed again: %s", dir,
				  rc_error_msg(err, r));
		k->failing = true;
		if (!k->retry && sd_event_add_time_relative(k->loop, &k->retry, CLOCK_MONOTONIC,
							    (uint64_t)k->retry_ms * 1000, 10000,
							    on_retry, k) < 0)
			log_error("arming the spec write retry failed");
		k->retry_ms = k->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : k->retry_ms * 2;
		return false;
	}
	if (k->failing)
		log_info("CDI spec %s written again after failures (%zu usable devices)", path,
			 n_usable);
	else if (changed || !k->written_once)
		log_info("CDI spec %s %s (%zu usable devices)", path,
			 changed ? "written" : "up to date", n_usable);
	k->failing = false;
	k->written_once = true;
	k->retry_ms = RETRY_MIN_MS;
	k->retry = sd_event_source_disable_unref(k->retry);
	return true;
}

/* ---- generate --watch ---------------------------------------------------------------- */

struct watch {
	const struct spec_watch_options *o;
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct disc_follow *follow;
	struct spec_keeper *keeper;
	bool ready;
	int exit_code;
};

static void write_current(struct watch *w, const struct disc_node *node)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	int r = spec_build(node, &w->o->spec, &spec);

	if (r == -ENODEV) {
		log_warning("no usable RDMA device found: CDI spec left as is");
		return;
	}
	if (r < 0) {
		log_error_errno(r, "building the CDI spec failed");
		return;
	}
	spec_keeper_write(w->keeper, spec, disc_node_count_usable(node));
}

static void on_retry_write(void *userdata)
{
	struct watch *w = userdata;

	if (disc_follow_node(w->follow))
		write_current(w, disc_follow_node(w->follow));
}

static void log_change(void *userdata, enum disc_change what, const struct disc_device *d,
		       const char *reason)
{
	disc_log_change(what, d, reason);
}

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	struct watch *w = userdata;

	if (error < 0 && !w->ready) {
		w->exit_code = error;
		sd_event_exit(w->loop, 0);
		return;
	}
	if (error < 0 || !node)
		return;
	for (size_t i = 0; i < node->n_problems; i++)
		if (reason == DISC_FOLLOW_START || reason == DISC_FOLLOW_REQUEST)
			log_warning("%s", node->problems[i]);
	if (prev && reason != DISC_FOLLOW_REQUEST && disc_node_equal(prev, node))
		return; /* the steady state of a periodic rescan: nothing to build or send */
	if (prev)
		disc_node_changes(prev, node, log_change, w);
	write_current(w, node);
	if (!w->ready) {
		w->ready = true;
		(void)sd_notify(0, "READY=1");
	}
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct watch *w = userdata;

	if (si->ssi_signo == SIGHUP) {
		log_info("SIGHUP: rescanning");
		disc_follow_rescan(w->follow, DISC_FOLLOW_REQUEST);
		return 0;
	}
	log_info("SIG%s: stopping", sigabbrev_np((int)si->ssi_signo));
	(void)sd_notify(0, "STOPPING=1");
	sd_event_exit(w->loop, 0);
	return 0;
}

static int watch_setup(struct watch *w)
{
	const int sigs[] = {SIGHUP, SIGINT, SIGTERM};
	int r;

	r = sd_event_new(&w->loop);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(sigs); i++)
		r = sd_event_add_signal(w->loop, NULL, sigs[i], on_signal, w);
	if (r >= 0)
		r = mailbox_new(w->loop, &w->mb);
	if (r < 0)
		return log_error_errno(r, "setting up the event loop failed");
	r = fswatch_new(w->loop, &w->fw);
	if (r < 0)
		return log_error_errno(r, "inotify initialisation failed");
	r = spec_keeper_new(w->loop,
			    &(struct spec_keeper_config){
				.wo = w->o->wo,
				.retry = on_retry_write,
				.userdata = w,
			    },
			    &w->keeper);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	r = disc_follow_new(w->loop, w->mb, w->fw,
			    &(struct disc_follow_config){
				.disc = w->o->disc,
				.interval_sec = w->o->interval_sec,
				.fn = on_scan,
				.userdata = w,
			    },
			    &w->follow);
	if (r < 0)
		return log_error_errno(r, "starting the sysfs watcher failed");
	return 0;
}

int spec_watch_run(const struct spec_watch_options *o)
{
	struct watch w = {.o = o};
	sigset_t mask, old_mask;
	int r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
	sigdelset(&mask, SIGUSR1);

	r = watch_setup(&w);
	if (r >= 0) {
		log_info("watching %s and %s/infiniband for changes",
			 o->disc.sysfs_root ? o->disc.sysfs_root : "/sys",
			 o->disc.dev_root ? o->disc.dev_root : "/dev");
		r = sd_event_loop(w.loop);
		if (r < 0)
			log_error_errno(r, "event loop failed");
		else
			r = w.exit_code;
	}
	disc_follow_free(w.follow);
	spec_keeper_free(w.keeper);
	fswatch_free(w.fw);
	mailbox_free(w.mb);
	sd_event_unref(w.loop);
	/* As bridge_run(): the stop signals stay blocked for the exiting caller. */
	sigorset(&old_mask, &old_mask, &mask);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	return r;
}
