/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon core of bridge_run() and dra_run() (daemon.h): loop, signals, the Sysfs
 * Watcher's scans, the config in force and its reload, the spec keeper, stopping.
 */
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common.h"
#include "daemon.h"
#include "rpc.h"
#include "keeper.h"
#include "loop.h"
#include "watch.h"

/* ---- directories ------------------------------------------------------------------------ */

int daemon_absolute_dir(const char *dir, char **ret)
{
	char *p;

	if (dir[0] == '/') {
		p = strdup(dir);
	} else {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);

		if (!cwd)
			return -errno;
		p = strdup_printf("%s/%s", cwd, dir);
	}
	if (!p)
		return -ENOMEM;
	for (size_t l = strlen(p); l > 1 && p[l - 1] == '/'; l--)
		p[l - 1] = '\0';
	*ret = p;
	return 0;
}

int daemon_socket_dir(const char *what, const char *dir)
{
	struct stat st;
	int r;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return log_error_errno(-ENOTDIR, "%s %s", what, dir);
		return 0;
	}
	if (errno != ENOENT)
		return log_error_errno(-errno, "%s %s", what, dir);
	r = mkdir_all(dir, 0750);
	if (r < 0)
		return log_error_errno(r, "cannot create %s %s", what, dir);
	log_info("created %s %s", what, dir);
	return 0;
}

/* ---- the spec settings ------------------------------------------------------------------ */

/* Flags first, then the file, then the defaults. */
static void settings_from(struct daemon *dm, const struct cfg *c)
{
	const struct daemon_options *o = &dm->o;

	dm->spec = o->spec;
	if (!dm->spec.kind)
		dm->spec.kind = c->kind ? c->kind : SPEC_DEFAULT_KIND;
	if (!dm->spec.memlock)
		dm->spec.memlock = c->memlock;
	dm->spec.with_mad = o->spec.with_mad || c->with_mad == 1;
	dm->spec_dir = o->spec_dir ? o->spec_dir : c->spec_dir ? c->spec_dir : SPEC_DYNAMIC_DIR;
}

static void on_spec_retry(void *userdata)
{
	struct daemon *dm = userdata;

	if (!dm->stopping && disc_follow_node(dm->follow))
		dm->ops->apply(dm->userdata, disc_follow_node(dm->follow), true, false);
}

static int new_keeper(struct daemon *dm)
{
	spec_keeper_free(dm->keeper);
	dm->keeper = NULL;
	return spec_keeper_new(dm->loop,
			       &(struct spec_keeper_config){
				   .wo = {.spec_dir = dm->spec_dir, .format = CDI_FORMAT_JSON},
				   .retry = on_spec_retry,
				   .userdata = dm,
			       },
			       &dm->keeper);
}

/* ---- scans ------------------------------------------------------------------------------- */

int daemon_assign(struct daemon *dm, const struct disc_node *node, const char *kept,
		  struct cfg_assignment **ret)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	r = cfg_assign(dm->cfg, node, &a, &err);
	if (r < 0) {
		log_error("%s; %s", rc_error_msg(err, r), kept);
		return r;
	}
	for (size_t i = 0; i < a->n_warnings; i++) {
		if (dm->pools_loud)
			log_warning("%s", a->warnings[i]);
		else
			log_debug("%s", a->warnings[i]);
	}
	dm->pools_loud = false;
	*ret = TAKE_PTR(a);
	return 0;
}

static void log_change(void *userdata, enum disc_change what, const struct disc_device *d,
		       const char *reason)
{
	disc_log_change(what, d, reason);
}

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	struct daemon *dm = userdata;
	bool loud = reason == DISC_FOLLOW_START || reason == DISC_FOLLOW_REQUEST;
	bool changed;

	if (dm->ops->scanned)
		dm->ops->scanned(dm->userdata, error, reason);
	dm->pools_loud |= loud;
	if (error < 0 && !dm->first_done) {
		daemon_stop(dm, error); /* the first scan must work */
		return;
	}
	if (error < 0 || !node)
		return; /* logged; the last good state stays in force */
	for (size_t i = 0; i < node->n_problems; i++) {
		if (loud)
			log_warning("%s", node->problems[i]);
		else
			log_debug("%s", node->problems[i]);
	}
	/* The steady state of a periodic rescan: the daemon may have nothing to do. */
	changed = !prev || reason == DISC_FOLLOW_REQUEST || !disc_node_equal(prev, node);
	if (changed && prev)
		disc_node_changes(prev, node, log_change, dm);
	dm->ops->apply(dm->userdata, node, changed, reason == DISC_FOLLOW_REQUEST);
}

int daemon_follow(struct daemon *dm)
{
	int interval =
	    dm->o.rescan_interval == 0 ? dm->o.default_rescan_sec : dm->o.rescan_interval;
	int r;

	r = disc_follow_new(dm->loop, dm->mb, dm->fw,
			    &(struct disc_follow_config){
				.disc = dm->o.disc,
				.interval_sec = interval > 0 ? interval : 0,
				.fn = on_scan,
				.userdata = dm,
			    },
			    &dm->follow);
	if (r < 0)
		return log_error_errno(r, "starting the sysfs watcher failed");
	return 0;
}

/* ---- the config in force ----------------------------------------------------------------- */

static void config_rejected(struct daemon *dm, const char *why)
{
	log_error("config %s rejected, the previous config stays in force: %s", dm->cfg_path, why);
	if (dm->ops->config_rejected)
		dm->ops->config_rejected(dm->userdata);
}

/* A changed config file: refused whole, or in force at once with the node applied again. */
static void on_config(void *userdata, struct cfg *c, const char *err)
{
	struct daemon *dm = userdata;
	_cleanup_(cfg_freep) struct cfg *nc = c;
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	const struct disc_node *node = disc_follow_node(dm->follow);
	_cleanup_free_ char *old_kind = NULL, *old_dir = NULL;
	_cleanup_(cfg_freep) struct cfg *old = NULL;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	char why[512] = "";
	bool moved;
	int r = 0;

	if (dm->stopping)
		return;
	if (!nc) {
		config_rejected(dm, err);
		return;
	}
	if (dm->ops->config_check)
		r = dm->ops->config_check(dm->userdata, nc, why, sizeof(why));
	if (r == 0 && node)
		r = cfg_assign(nc, node, &a, &e);
	if (r < 0) {
		config_rejected(dm, why[0] ? why : rc_error_msg(e, r));
		return;
	}
	/* The settings may point into the old config: compare copies. */
	old_kind = strdup(dm->spec.kind);
	old_dir = strdup(dm->spec_dir);
	settings_from(dm, nc);
	moved = !old_kind || !old_dir || strcmp(old_kind, dm->spec.kind) != 0 ||
		strcmp(old_dir, dm->spec_dir) != 0;
	old = TAKE_PTR(dm->cfg);
	dm->cfg = TAKE_PTR(nc);
	dm->ops->config_adopt(dm->userdata, moved);
	cfg_free(TAKE_PTR(old));
	if (new_keeper(dm) < 0)
		log_error("out of memory renewing the spec keeper");
	if (dm->ops->config_applied)
		dm->ops->config_applied(dm->userdata);
	dm->pools_loud = true;
	if (node)
		dm->ops->apply(dm->userdata, node, true, true);
}

int daemon_load_config(struct daemon *dm)
{
	const struct daemon_options *o = &dm->o;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	dm->cfg_path = o->config_path ? o->config_path : CFG_DEFAULT_PATH;
	r = cfg_watch_new(dm->loop, dm->fw, dm->cfg_path, on_config, dm, &dm->cfg, &dm->cfg_watch,
			  &err);
	if (r == -ENOENT && !o->config_explicit)
		log_info("no config directory for %s: using the defaults, not watching",
			 dm->cfg_path);
	else if (r < 0)
		return log_error_errno(r, "config %s: %s", dm->cfg_path, rc_error_msg(err, r));
	else if (!dm->cfg && o->config_explicit)
		return log_error_errno(-ENOENT, "config %s does not exist", dm->cfg_path);
	if (!dm->cfg) {
		r = cfg_default(&dm->cfg);
		if (r < 0)
			return log_error_errno(r, "out of memory");
		if (dm->cfg_watch)
			log_info("%s does not exist: using the defaults (creating it applies it)",
				 dm->cfg_path);
	} else {
		log_info("config %s loaded (%zu pool(s))", dm->cfg_path, dm->cfg->n_pools);
	}
	settings_from(dm, dm->cfg);
	dm->pools_loud = true;
	r = new_keeper(dm);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	return 0;
}

/* ---- stopping ------------------------------------------------------------------------------ */

static int on_stop_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *dm = userdata;
	uint64_t now = 0;

	sd_event_now(dm->loop, CLOCK_MONOTONIC, &now);
	if (gc_runtime_idle(dm->rt) || now >= dm->stop_until) {
		sd_event_exit(dm->loop, 0);
		return 0;
	}
	return sd_event_source_set_time_relative(s, 5000) < 0
		   ? sd_event_exit(dm->loop, 0)
		   : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

void daemon_stop(struct daemon *dm, int exit_code)
{
	if (dm->stopping)
		return;
	dm->stopping = true;
	dm->exit_code = exit_code;
	disc_follow_free(dm->follow);
	dm->follow = NULL;
	cfg_watch_free(dm->cfg_watch);
	dm->cfg_watch = NULL;
	dm->ops->stop(dm->userdata);
	sd_event_now(dm->loop, CLOCK_MONOTONIC, &dm->stop_until);
	dm->stop_until += DAEMON_EXIT_WAIT_USEC;
	if (sd_event_add_time_relative(dm->loop, &dm->stop_tick, CLOCK_MONOTONIC, 0, 1000,
				       on_stop_tick, dm) < 0)
		sd_event_exit(dm->loop, 0);
}

/* ---- the loop -------------------------------------------------------------------------------- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *dm = userdata;

	if (si->ssi_signo == SIGHUP) {
		log_info("SIGHUP: rescanning");
		disc_follow_rescan(dm->follow, DISC_FOLLOW_REQUEST);
		return 0;
	}
	log_info("SIG%s: stopping", sigabbrev_np((int)si->ssi_signo));
	daemon_stop(dm, 0);
	return 0;
}

int daemon_open(struct daemon *dm)
{
	int r;

	r = sd_event_new(&dm->loop);
	if (r < 0)
		return log_error_errno(r, "creating the event loop failed");
	for (int sig = SIGHUP; sig <= SIGTERM; sig++)
		if (sig == SIGHUP || sig == SIGINT || sig == SIGTERM) {
			r = sd_event_add_signal(dm->loop, NULL, sig, on_signal, dm);
			if (r < 0)
				return log_error_errno(r, "watching signals failed");
		}
	r = mailbox_new(dm->loop, &dm->mb);
	if (r >= 0)
		r = fswatch_new(dm->loop, &dm->fw);
	if (r < 0)
		return log_error_errno(r, "inotify initialisation failed");
	r = gc_runtime_new(dm->mb, &dm->rt);
	if (r < 0)
		return log_error_errno(r, "starting gRPC failed");
	return 0;
}

/* The first scan, before anything is served: the spec is on disk before any device is
 * offered, and a scan that fails is a start-up error. 1: stopping (a signal, a failed
 * first scan). */
static int first_scan(struct daemon *dm)
{
	while (!dm->first_done && !dm->stopping) {
		int r = sd_event_run(dm->loop, UINT64_MAX);

		if (r < 0)
			return log_error_errno(r, "event loop failed");
	}
	return dm->stopping ? 1 : 0;
}

static void teardown(struct daemon *dm)
{
	disc_follow_free(dm->follow);
	dm->follow = NULL;
	cfg_watch_free(dm->cfg_watch);
	dm->cfg_watch = NULL;
	dm->ops->close(dm->userdata);
	if (dm->rt && !gc_runtime_idle(dm->rt)) {
		/* The completion-queue thread may still post: leave the rest to exit. */
		gc_runtime_free(dm->rt);
		return;
	}
	gc_runtime_free(dm->rt);
	fswatch_free(dm->fw);
	mailbox_free(dm->mb);
	spec_keeper_free(dm->keeper);
	sd_event_source_disable_unref(dm->stop_tick);
	dm->ops->release(dm->userdata);
	sd_event_unref(dm->loop);
	cfg_free(dm->cfg);
}

int daemon_run(struct daemon *dm, const struct daemon_options *o, const struct daemon_ops *ops,
	       void *userdata)
{
	sigset_t old_mask;
	int r;

	dm->o = *o;
	dm->ops = ops;
	dm->userdata = userdata;
	/* Blocked before any thread exists (gRPC, libcurl's resolver and the watchers start
	 * their own), so only the loop's signal sources see them. */
	sigemptyset(&dm->mask);
	sigaddset(&dm->mask, SIGTERM);
	sigaddset(&dm->mask, SIGINT);
	sigaddset(&dm->mask, SIGHUP);
	sigaddset(&dm->mask, SIGPIPE);
	sigaddset(&dm->mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &dm->mask, &old_mask);
	sigdelset(&dm->mask, SIGPIPE);
	sigdelset(&dm->mask, SIGUSR1);

	r = ops->setup(userdata);
	if (r < 0)
		goto out;
	r = first_scan(dm);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = ops->start(userdata);
		if (r < 0)
			daemon_stop(dm, r);
	}
	if (!dm->stopping)
		(void)sd_notify(0, "READY=1");
	r = sd_event_loop(dm->loop);
	if (r < 0)
		log_error_errno(r, "event loop failed");
	else
		r = dm->exit_code;
out:
	teardown(dm);
	/* SIGTERM, SIGINT and SIGHUP stay blocked: one that arrived after the one we acted
	 * on (SIGTERM and SIGINT together, a second Ctrl-C) would otherwise be delivered
	 * here and kill a cleanly stopped process. */
	sigorset(&old_mask, &old_mask, &dm->mask);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (r == 0)
		log_info("stopped");
	return r;
}
