/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon: the one runtime every long-running mode runs on: the bridge (bridge_run()), the
 * DRA driver (dra_run()) and `generate --watch`. It owns what they do alike:
 *   - the sd-event loop, the mailbox and the fswatch (common/loop.h);
 *   - the signals: blocked before any thread exists, SIGTERM/SIGINT stop, SIGHUP rescans;
 *     they stay blocked after the run (a second one would kill a cleanly stopped process);
 *   - the Sysfs Watcher (discovery/follow.h): each scan's problems and changes are logged
 *     here, a failed first scan stops the start, then the daemon applies the scan;
 *   - the config in force (config/watch.h): loaded at start, reloaded on an edit, an
 *     invalid one refused in one line with the previous one staying; what it and the
 *     flags make of the spec settings (flags first, then the file, then the defaults);
 *   - the spec keeper (specs/keeper.h), renewed with each config, and its log lines;
 *   - the metrics endpoint (metrics.h, --metrics-address): the registry, the series of
 *     what the core does (rescans, spec write failures, config reloads, the netns mode,
 *     each offered device's health) and the liveness probe /healthz its loop answers;
 *   - the lifecycle: start (open, load the config, attach the daemon's part, follow), the
 *     first scan, serve, READY=1 to systemd, the loop, stopping, the teardown.
 * What differs stays in the daemon, called through struct daemon_ops. It needs no gRPC: a
 * daemon that runs threads of its own (the gRPC runtime) reports through ops->stop when
 * they are done. Everything runs on the loop thread. It logs, as the daemons do: one line
 * per event.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "cdi.h"
#include "config.h"
#include "discovery.h"
#include "follow.h"
#include "metrics.h"
#include "rc-error.h"
#include "specs.h"

struct cfg_watch;
struct mailbox;
struct fswatch;
struct spec_keeper;

#define DAEMON_EXIT_WAIT_USEC (3 * 1000000ULL) /* for the daemon's threads at exit */

/*
 * The options every daemon takes (the flags); each daemon's own options embed it. Each
 * value has one meaning at every layer, the command line's.
 */
struct daemon_options {
	struct disc_options disc; /* where the node is read */
	/* What goes into the spec; a NULL or false field takes the config's value, then the
	 * default. */
	struct spec_options spec;
	const char *spec_dir; /* NULL: the config's specDir, else ops->spec_dir */
	enum cdi_format spec_format;
	/* The config file, watched and applied live. NULL: CFG_DEFAULT_PATH, whose absence
	 * means the defaults; a path given must exist. */
	const char *config_path;
	/* The period of the cheap rescan (port state, renames) in seconds; 0: none, only
	 * hotplug events and SIGHUP. The Sysfs Watcher stretches it while a rescan costs
	 * more than 0.1 % of a core. */
	unsigned rescan_sec;
	/* Serve the metrics and /healthz on "IPv4:PORT" or "[IPv6]:PORT"; NULL: none. */
	const char *metrics_address;
};

/* The defaults: what a daemon does when no flag is given. */
#define DAEMON_OPTIONS_INIT {.rescan_sec = DISC_FOLLOW_DEFAULT_INTERVAL_SEC}

/*
 * The daemon's part; userdata is what daemon_run() was given. Only apply is required.
 * A callback that fails logs why.
 */
struct daemon_ops {
	const char *name; /* "bridge", "dra": the metrics' daemon label and series */
	const char *spec_dir; /* the spec dir when neither the flags nor the config name one */
	/* At start, once the loop is open and the config loaded, before the first scan:
	 * build what hangs off them (servers not serving yet, clients). < 0 stops. */
	int (*attach)(void *userdata);
	/* After the first scan was applied: serve (the spec is on disk first). < 0 stops. */
	int (*serve)(void *userdata);
	/*
	 * A scan (or the node in force again) to apply. changed: it differs from the last
	 * one, or a request, a new config or a spec write due again wants it rebuilt; false
	 * for a periodic rescan's steady state. force: resend everything (SIGHUP, a new
	 * config). < 0: nothing was applied (logged); the start waits for a scan that is.
	 */
	int (*apply)(void *userdata, const struct disc_node *node, bool changed, bool force);
	/*
	 * A changed, valid config that fits the node, before it is in force: < 0 refuses it
	 * (*err says why; the daemon changed nothing). Else the daemon moves to c at once:
	 * dm->cfg is c right after this returns, the old config stays valid until then.
	 * spec_moved: the spec's kind or directory changes, nothing of the old spec counts.
	 */
	int (*reconfigure)(void *userdata, const struct cfg *c, bool spec_moved,
			   struct rc_error **err);
	/* Stopping: stop serving. Called again every few ms until it returns true (nothing
	 * of the daemon runs on another thread any more) or DAEMON_EXIT_WAIT_USEC passed. */
	bool (*stop)(void *userdata);
	/* At the end, also after a failed start: free what the daemon holds. false: one of
	 * its threads may still post to the mailbox, so the core leaves its own to exit. */
	bool (*close)(void *userdata);
};

struct daemon {
	/* Read by the daemon; set by the core. */
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct disc_follow *follow; /* NULL once stopping */
	struct cfg *cfg;	    /* the config in force */
	const char *cfg_path;
	struct spec_options spec; /* flags over the config */
	const char *spec_dir;
	/* The kernel's RDMA netns mode: read at start and again with each scan (one netlink
	 * round trip), before ops->apply; DISC_NETNS_UNKNOWN without RDMA netlink. */
	enum disc_netns_mode netns_mode;
	bool pools_loud; /* log the pool warnings of the next scan at warning level */
	bool applied;	 /* a scan was applied: the start is over */
	bool stopping;
	/* The registry (metrics.h) from ops->attach on, NULL without --metrics-address; the
	 * daemon records its own series in it. */
	struct metrics *metrics;

	/* Set by the daemon in ops->attach: the pool label of the devices of a config that
	 * defines no pools (the bridge's --resource); NULL: the default pool's resourceName. */
	const char *default_pool_name;

	/* The core's own. */
	struct daemon_options o;
	const struct daemon_ops *ops;
	void *userdata;
	struct spec_keeper *keeper;
	struct cfg_watch *cfg_watch;
	sd_event_source *stop_tick;
	uint64_t stop_until;
	int exit_code;
	sigset_t mask;
};

/*
 * Runs a daemon: blocks the signals, starts (the loop, the config, ops->attach, the Sysfs
 * Watcher), applies the first scan, ops->serve, READY=1 to systemd, the loop until
 * stopped, then the teardown. dm is zeroed by the caller (usually embedded in the
 * daemon's struct). Returns the exit code given to daemon_stop() (0 for a signal),
 * -errno when the options are invalid (-EINVAL), the start or the loop failed. Logs
 * "stopped" on 0.
 */
int daemon_run(struct daemon *dm, const struct daemon_options *o, const struct daemon_ops *ops,
	       void *userdata);

/* Begins stopping with exit_code (0, or -errno when something failed); once only. */
void daemon_stop(struct daemon *dm, int exit_code);

/*
 * Writes spec through the keeper (retried with backoff when it fails; the last good spec
 * stays). True when it is on disk. Logs "written" when the bytes changed and each
 * failure with its fix, once per series.
 */
bool daemon_write_spec(struct daemon *dm, const cJSON *spec, size_t n_usable);

/*
 * Assigns node's devices to the pools of the config in force, logging the warnings (at
 * warning level when dm->pools_loud, which it resets) and a failure followed by
 * "; <kept>" (what stays as it was). 0 with *ret, or -errno. On success the health
 * series (metrics.h) become those of the usable devices a pool takes.
 */
int daemon_assign(struct daemon *dm, const struct disc_node *node, const char *kept,
		  struct cfg_assignment **ret);

/* spec_build() of node with the flags and config in force. With move_hooks, the devices a
 * assigns to a pool with `netns: move` get the hook that moves them into the container's
 * network namespace (the bridge: a container gets a device by its name in this spec); the
 * DRA driver passes false: its claim spec carries the hook of each device the claim holds,
 * so that an admin-access claim never moves a device out of its holder's namespace.
 * spec_build()'s returns. Does not log. */
int daemon_build_spec(const struct daemon *dm, const struct disc_node *node,
		      const struct cfg_assignment *a, bool move_hooks, cJSON **ret_spec);

/* An absolute copy of dir (a relative one is taken from the working directory) without
 * trailing slashes ("dir/" would make "dir//x.sock"). 0, -ENOMEM, or getcwd()'s -errno. */
int daemon_absolute_dir(const char *dir, char **ret);
/*
 * Makes sure the absolute dir for the kubelet's sockets is a directory, creating it 0750
 * when missing (as the kubelet does: we may simply be first). what names it in the log:
 * "created <what> <dir>", and each failure ("cannot create <what> <dir>", "<what> <dir>"
 * with the errno). 0 or -errno.
 */
int daemon_socket_dir(const char *what, const char *dir);
