/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one daemon runtime (daemon.h): loop, signals, the Sysfs Watcher's scans, the config
 * in force and its reload, the spec keeper, the metrics of all that, the lifecycle.
 */
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "common.h"
#include "daemon.h"
#include "keeper.h"
#include "loop.h"
#include "netlink.h"
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
static void settings_from(const struct daemon *dm, const struct cfg *c, struct spec_options *spec,
			  const char **spec_dir)
{
	const struct daemon_options *o = &dm->o;

	*spec = o->spec;
	if (!spec->kind)
		spec->kind = c->kind ? c->kind : SPEC_DEFAULT_KIND;
	if (!spec->memlock)
		spec->memlock = c->memlock;
	spec->with_mad = o->spec.with_mad || c->with_mad == 1;
	*spec_dir = o->spec_dir ? o->spec_dir : c->spec_dir ? c->spec_dir : dm->ops->spec_dir;
}

static void on_spec_retry(void *userdata)
{
	struct daemon *dm = userdata;

	if (!dm->stopping && disc_follow_node(dm->follow))
		(void)dm->ops->apply(dm->userdata, disc_follow_node(dm->follow), true, false);
}

static int new_keeper(struct daemon *dm)
{
	spec_keeper_free(dm->keeper);
	dm->keeper = NULL;
	return spec_keeper_new(dm->loop,
			       &(struct spec_keeper_config){
				   .wo = {.spec_dir = dm->spec_dir, .format = dm->o.spec_format},
				   .retry = on_spec_retry,
				   .userdata = dm,
			       },
			       &dm->keeper);
}

bool daemon_write_spec(struct daemon *dm, const cJSON *spec, size_t n_usable)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	_cleanup_free_ char *path = NULL;
	enum spec_keeper_outcome what;
	int r = spec_keeper_write(dm->keeper, spec, &what, &path, &e);

	switch (what) {
	case SPEC_KEEPER_FAILED:
		log_error("writing the CDI spec into %s failed: %s; %s. The last good spec stays; "
			  "retrying",
			  dm->spec_dir, rc_error_msg(e, r), spec_write_fix(r));
		break;
	case SPEC_KEEPER_FAILED_AGAIN:
		log_debug("writing the CDI spec into %s failed again: %s", dm->spec_dir,
			  rc_error_msg(e, r));
		break;
	case SPEC_KEEPER_RECOVERED:
		log_info("CDI spec %s written again after failures (%zu usable devices)", path,
			 n_usable);
		break;
	case SPEC_KEEPER_WRITTEN:
	case SPEC_KEEPER_FOUND:
		log_info("CDI spec %s %s (%zu usable devices)", path,
			 what == SPEC_KEEPER_WRITTEN ? "written" : "up to date", n_usable);
		break;
	case SPEC_KEEPER_UNCHANGED:
		break;
	}
	if (r < 0)
		metrics_spec_write_failed(dm->metrics);
	return r >= 0;
}

/* ---- scans ------------------------------------------------------------------------------- */

/* The health series: every usable device a pool of the config in force takes. */
static void record_health(struct daemon *dm, const struct disc_node *node,
			  const struct cfg_assignment *a)
{
	if (!dm->metrics)
		return;
	metrics_health_begin(dm->metrics);
	for (size_t i = 0; i < node->n_devices && i < a->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		long p = a->pool_of[i];
		char reason[128];

		if (p < 0 || (size_t)p >= dm->cfg->n_pools || !disc_device_usable(d))
			continue;
		(void)disc_device_health_reason(d, reason, sizeof(reason));
		metrics_health_set(dm->metrics, d->name, d->pci,
				   !dm->cfg->pools_set && dm->default_pool_name
				       ? dm->default_pool_name
				       : dm->cfg->pools[p].resource_name,
				   disc_device_healthy(d), reason);
	}
	metrics_health_end(dm->metrics);
}

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
	record_health(dm, node, a);
	*ret = TAKE_PTR(a);
	return 0;
}

int daemon_build_spec(const struct daemon *dm, const struct disc_node *node,
		      const struct cfg_assignment *a, bool move_hooks, cJSON **ret_spec)
{
	_cleanup_free_ bool *move = calloc(node->n_devices ? node->n_devices : 1, sizeof(*move));
	struct spec_options o = dm->spec;

	if (!move)
		return -ENOMEM;
	for (size_t i = 0; move_hooks && i < node->n_devices && i < a->n_devices; i++)
		move[i] = a->pool_of[i] >= 0 && (size_t)a->pool_of[i] < dm->cfg->n_pools &&
			  dm->cfg->pools[a->pool_of[i]].netns == CFG_NETNS_MOVE;
	o.netns_move_of = move;
	return spec_build(node, &o, ret_spec);
}

static void log_change(void *userdata, enum disc_change what, const struct disc_device *d,
		       const char *reason)
{
	disc_log_change(what, d, reason);
}

/* The kernel's RDMA netns mode into dm->netns_mode; logged at start, then when it changed.
 * Unknown is said once with why: no RDMA netlink (no error), or a read that failed. */
static void read_netns_mode(struct daemon *dm, bool start)
{
	enum disc_netns_mode mode = DISC_NETNS_UNKNOWN;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = disc_netns_mode_read(&mode, &err);

	if (r < 0)
		mode = DISC_NETNS_UNKNOWN;
	metrics_netns_mode(dm->metrics, disc_netns_mode_name(mode));
	if (!start && mode == dm->netns_mode)
		return;
	dm->netns_mode = mode;
	if (r < 0)
		log_warning("RDMA netns mode: unknown (%s)", rc_error_msg(err, r));
	else if (mode == DISC_NETNS_UNKNOWN)
		log_info("RDMA netns mode: unknown (the kernel has no RDMA netlink: ib_core is not "
			 "loaded)");
	else
		log_info("RDMA netns mode: %s", disc_netns_mode_name(mode));
}

static const char *const reason_name[] = {
    [DISC_FOLLOW_START] = "start",
    [DISC_FOLLOW_HOTPLUG] = "hotplug",
    [DISC_FOLLOW_PERIODIC] = "periodic",
    [DISC_FOLLOW_REQUEST] = "request",
};

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	struct daemon *dm = userdata;
	bool loud = reason == DISC_FOLLOW_START || reason == DISC_FOLLOW_REQUEST;
	bool changed;

	read_netns_mode(dm, false);
	/* dm->follow is NULL while disc_follow_new() reports a scan it could not start. */
	metrics_rescan(dm->metrics, reason_name[reason], error >= 0,
		       dm->follow ? disc_follow_last_scan_usec(dm->follow) : 0);
	dm->pools_loud |= loud;
	if (error < 0 && !dm->applied) {
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
	if (dm->ops->apply(dm->userdata, node, changed, reason == DISC_FOLLOW_REQUEST) >= 0)
		dm->applied = true;
}

static int follow(struct daemon *dm)
{
	int r;

	r = disc_follow_new(dm->loop, dm->mb, dm->fw,
			    &(struct disc_follow_config){
				.disc = dm->o.disc,
				.interval_sec = (int)dm->o.rescan_sec,
				.fn = on_scan,
				.userdata = dm,
			    },
			    &dm->follow);
	if (r < 0)
		return log_error_errno(r, "starting the sysfs watcher failed");
	log_info("watching %s and %s/infiniband for changes",
		 dm->o.disc.sysfs_root ? dm->o.disc.sysfs_root : "/sys",
		 dm->o.disc.dev_root ? dm->o.disc.dev_root : "/dev");
	return 0;
}

/* ---- the config in force ----------------------------------------------------------------- */

static void config_refused(struct daemon *dm, const char *why)
{
	log_error("config %s rejected, the previous config stays in force: %s", dm->cfg_path, why);
	metrics_config_reload(dm->metrics, false);
}

/* A new config that fits the node and the daemon: 0, or -errno with *err. */
static int config_check(struct daemon *dm, const struct cfg *c, const struct spec_options *spec,
			const char *spec_dir, struct rc_error **err)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	const struct disc_node *node = disc_follow_node(dm->follow);
	bool moved = strcmp(spec->kind, dm->spec.kind) != 0 || strcmp(spec_dir, dm->spec_dir) != 0;
	int r;

	if (node) {
		r = cfg_assign(c, node, &a, err);
		if (r < 0)
			return r;
	}
	if (!dm->ops->reconfigure)
		return 0;
	return dm->ops->reconfigure(dm->userdata, c, moved, err);
}

/* A changed config file: refused whole, or in force at once with the node applied again. */
static void on_config(void *userdata, struct cfg *c, const char *err)
{
	struct daemon *dm = userdata;
	_cleanup_(cfg_freep) struct cfg *nc = c;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	const struct disc_node *node = disc_follow_node(dm->follow);
	struct spec_options spec;
	const char *spec_dir;
	int r;

	if (dm->stopping)
		return;
	if (!nc) {
		config_refused(dm, err);
		return;
	}
	settings_from(dm, nc, &spec, &spec_dir);
	r = config_check(dm, nc, &spec, spec_dir, &e);
	if (r < 0) {
		config_refused(dm, rc_error_msg(e, r));
		return;
	}
	/* The old config is freed only now: the settings may point into it. */
	dm->spec = spec;
	dm->spec_dir = spec_dir;
	cfg_free(dm->cfg);
	dm->cfg = TAKE_PTR(nc);
	if (new_keeper(dm) < 0)
		log_error("out of memory renewing the spec keeper");
	log_info("config %s applied: %zu pool(s)", dm->cfg_path, dm->cfg->n_pools);
	metrics_config_reload(dm->metrics, true);
	dm->pools_loud = true;
	if (node)
		(void)dm->ops->apply(dm->userdata, node, true, true);
}

static int load_config(struct daemon *dm)
{
	const struct daemon_options *o = &dm->o;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	dm->cfg_path = o->config_path ? o->config_path : CFG_DEFAULT_PATH;
	r = cfg_watch_new(dm->loop, dm->fw, dm->cfg_path, on_config, dm, &dm->cfg, &dm->cfg_watch,
			  &err);
	if (r == -ENOENT && !o->config_path)
		log_info("no config directory for %s: using the defaults, not watching",
			 dm->cfg_path);
	else if (r < 0)
		return log_error_errno(r, "config %s: %s", dm->cfg_path, rc_error_msg(err, r));
	else if (!dm->cfg && o->config_path)
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
	settings_from(dm, dm->cfg, &dm->spec, &dm->spec_dir);
	dm->pools_loud = true;
	r = new_keeper(dm);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	return 0;
}

/* ---- stopping ------------------------------------------------------------------------------ */

/* The daemon's threads done (ops->stop true), or the wait over: the loop exits. */
static int on_stop_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *dm = userdata;
	uint64_t now = 0;

	sd_event_now(dm->loop, CLOCK_MONOTONIC, &now);
	if (!dm->ops->stop || dm->ops->stop(dm->userdata) || now >= dm->stop_until) {
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
	(void)sd_notify(0, "STOPPING=1");
	disc_follow_free(dm->follow);
	dm->follow = NULL;
	cfg_watch_free(dm->cfg_watch);
	dm->cfg_watch = NULL;
	sd_event_now(dm->loop, CLOCK_MONOTONIC, &dm->stop_until);
	dm->stop_until += DAEMON_EXIT_WAIT_USEC;
	/* The first tick, at once, stops serving. */
	if (sd_event_add_time_relative(dm->loop, &dm->stop_tick, CLOCK_MONOTONIC, 0, 1000,
				       on_stop_tick, dm) < 0)
		sd_event_exit(dm->loop, 0);
}

/* ---- the lifecycle ---------------------------------------------------------------------------- */

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

static int open_loop(struct daemon *dm)
{
	const int sigs[] = {SIGHUP, SIGINT, SIGTERM};
	int r;

	r = sd_event_new(&dm->loop);
	if (r < 0)
		return log_error_errno(r, "creating the event loop failed");
	for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
		r = sd_event_add_signal(dm->loop, NULL, sigs[i], on_signal, dm);
		if (r < 0)
			return log_error_errno(r, "watching signals failed");
	}
	r = mailbox_new(dm->loop, &dm->mb);
	if (r >= 0)
		r = fswatch_new(dm->loop, &dm->fw);
	if (r < 0)
		return log_error_errno(r, "inotify initialisation failed");
	return 0;
}

/* Serves the metrics and /healthz from the start on: the probe answers during the first
 * scan (a worker thread's), and a loop stuck at the start (its first spec write) fails it. */
static int start_metrics(struct daemon *dm)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	int r;

	if (!dm->o.metrics_address)
		return 0;
	r = metrics_new(dm->o.metrics_address, dm->ops->name, dm->mb, &dm->metrics, &e);
	if (r < 0)
		return log_error_errno(r, "--metrics-address: %s", rc_error_msg(e, r));
	log_info("serving metrics on http://%s%s, the liveness probe on %s",
		 metrics_address(dm->metrics), METRICS_PATH, METRICS_HEALTHZ_PATH);
	return 0;
}

/* The explicit start, in the one order every daemon needs: the loop, the config in force
 * (the daemon's part is built from it), then the Sysfs Watcher, whose first scan follows
 * on the loop. */
static int daemon_start(struct daemon *dm)
{
	int r;

	r = open_loop(dm);
	if (r >= 0)
		r = start_metrics(dm);
	if (r >= 0)
		r = load_config(dm);
	if (r >= 0)
		read_netns_mode(dm, true);
	if (r >= 0 && dm->ops->attach)
		r = dm->ops->attach(dm->userdata);
	if (r >= 0)
		r = follow(dm);
	return r;
}

/* The first scan, before anything is served: the spec is on disk before any device is
 * offered, and a scan that fails is a start-up error. 1: stopping (a signal, a failed
 * first scan). */
static int first_scan(struct daemon *dm)
{
	while (!dm->applied && !dm->stopping) {
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
	if (dm->ops->close && !dm->ops->close(dm->userdata))
		return; /* a thread of the daemon's may still post: leave the rest to exit */
	/* The HTTP threads post pings: stopped before the mailbox goes, whose last run
	 * answers the pings still queued, before the registry goes. */
	metrics_stop(dm->metrics);
	fswatch_free(dm->fw);
	mailbox_free(dm->mb);
	metrics_free(dm->metrics);
	spec_keeper_free(dm->keeper);
	sd_event_source_disable_unref(dm->stop_tick);
	sd_event_unref(dm->loop);
	cfg_free(dm->cfg);
}

static int run_loop(struct daemon *dm)
{
	int r = first_scan(dm);

	if (r < 0)
		return r;
	if (r == 0 && dm->ops->serve) {
		r = dm->ops->serve(dm->userdata);
		if (r < 0)
			daemon_stop(dm, r);
	}
	if (!dm->stopping)
		(void)sd_notify(0, "READY=1");
	r = sd_event_loop(dm->loop);
	if (r < 0)
		return log_error_errno(r, "event loop failed");
	return dm->exit_code;
}

int daemon_run(struct daemon *dm, const struct daemon_options *o, const struct daemon_ops *ops,
	       void *userdata)
{
	sigset_t old_mask;
	int r;

	if (o->spec.kind && !cdi_kind_is_valid(o->spec.kind))
		return log_error_errno(-EINVAL, "invalid CDI kind \"%s\"", o->spec.kind);
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

	r = daemon_start(dm);
	if (r >= 0)
		r = run_loop(dm);
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
