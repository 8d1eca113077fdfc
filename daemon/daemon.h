/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon: the core the two kubelet daemons share, bridge_run() (bridge.c) and dra_run()
 * (dra/dra.c). It owns what they do alike:
 *   - the sd-event loop, the mailbox, the fswatch and the gRPC runtime (common/loop.h,
 *     rpc.h);
 *   - the signals: blocked before any thread exists, SIGTERM/SIGINT stop, SIGHUP rescans;
 *     they stay blocked after the run (a second one would kill a cleanly stopped process);
 *   - the Sysfs Watcher (discovery/follow.h): each scan's problems and changes are logged
 *     here, a failed first scan stops the start, then the daemon applies the scan;
 *   - the config in force (config/watch.h): loaded at start, reloaded on an edit, an
 *     invalid one refused with the previous one staying; what it and the flags make of
 *     the spec settings (flags first, then the file, then the defaults);
 *   - the spec keeper (specs/keeper.h), renewed with each config;
 *   - stopping: the daemon's servers stop, and the loop exits once every gRPC instance
 *     and call is gone, or after DAEMON_EXIT_WAIT_USEC.
 * What differs (pools and plugins, the inventory, slices and claims) stays in the daemon,
 * called through struct daemon_ops. Everything runs on the loop thread. It logs, as the
 * daemons do: one line per event.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "config.h"
#include "discovery.h"
#include "follow.h"
#include "specs.h"

struct cfg_watch;
struct gc_runtime;
struct mailbox;
struct fswatch;
struct spec_keeper;

#define DAEMON_EXIT_WAIT_USEC (3 * 1000000ULL) /* for server shutdowns to complete at exit */

/* What the daemon's options say for the core (bridge_options, dra_options). */
struct daemon_options {
	struct disc_options disc;
	struct spec_options spec; /* kind, memlock NULL and with_mad false: the file's */
	const char *spec_dir;	  /* NULL: the file's specDir, else SPEC_DYNAMIC_DIR */
	const char *config_path;  /* NULL = CFG_DEFAULT_PATH */
	bool config_explicit;	  /* a missing file is an error */
	int rescan_interval;	  /* seconds; 0 = default_rescan_sec, < 0 none */
	int default_rescan_sec;
};

/* The core's options from a daemon's own (bridge_options, dra_options: the same fields). */
#define DAEMON_OPTIONS_OF(opts, default_sec)                                                       \
	((struct daemon_options){                                                                  \
	    .disc = (opts)->disc,                                                                  \
	    .spec = (opts)->spec,                                                                  \
	    .spec_dir = (opts)->spec_dir,                                                          \
	    .config_path = (opts)->config_path,                                                    \
	    .config_explicit = (opts)->config_explicit,                                            \
	    .rescan_interval = (opts)->rescan_interval,                                            \
	    .default_rescan_sec = (default_sec),                                                   \
	})

/* The daemon's part; userdata is what daemon_run() was given. Optional where marked. */
struct daemon_ops {
	/* Builds the daemon: calls daemon_open(), daemon_load_config(), daemon_follow() in
	 * that order, with its own steps between. Logs its errors. */
	int (*setup)(void *userdata);
	/* After the first scan was applied: serve the kubelet. < 0 stops. */
	int (*start)(void *userdata);
	/*
	 * A scan (or the node in force again) to apply. changed: it differs from the last
	 * one, or a request, a new config or a spec write due again wants it rebuilt; false
	 * for a periodic rescan's steady state. force: resend everything (SIGHUP, a new
	 * config). The daemon sets first_done once it applied one.
	 */
	void (*apply)(void *userdata, const struct disc_node *node, bool changed, bool force);
	/* Optional: every scan as it comes, failed ones too (error < 0), before apply. */
	void (*scanned)(void *userdata, int error, enum disc_follow_reason reason);
	/* Optional: a new config, before it is checked against the node: < 0 refuses it,
	 * with the reason in why. */
	int (*config_check)(void *userdata, const struct cfg *c, char *why, size_t whylen);
	/* Optional: a changed config was refused (logged), the previous one stays. */
	void (*config_rejected)(void *userdata);
	/* A new config is in force (dm->cfg, the settings); the previous one is still valid
	 * and freed after this returns. spec_moved: the spec's kind or directory changed,
	 * nothing of the old spec on disk counts. */
	void (*config_adopt)(void *userdata, bool spec_moved);
	/* Optional: after the keeper was renewed; the core then applies the node (forced). */
	void (*config_applied)(void *userdata);
	/* Stopping (a signal, daemon_stop()): stop serving; the loop runs on a little. */
	void (*stop)(void *userdata);
	/* At the end, before the gRPC runtime is checked: free the servers and clients. */
	void (*close)(void *userdata);
	/* Only when gRPC is idle (else everything is left to exit): free the rest. */
	void (*release)(void *userdata);
};

struct daemon {
	/* Read by the daemon; set by the core. */
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct gc_runtime *rt;
	struct disc_follow *follow; /* NULL once stopping */
	struct cfg *cfg;	    /* the config in force */
	const char *cfg_path;
	struct spec_options spec; /* flags over the config */
	const char *spec_dir;
	struct spec_keeper *keeper;
	bool pools_loud; /* log the pool warnings of the next scan at warning level */
	bool first_done; /* set by the daemon's apply */
	bool stopping;
	int exit_code;

	/* The core's own. */
	struct daemon_options o;
	const struct daemon_ops *ops;
	void *userdata;
	struct cfg_watch *cfg_watch;
	sd_event_source *stop_tick;
	uint64_t stop_until;
	sigset_t mask;
};

/*
 * Runs a daemon: blocks the signals, ops->setup, the first scan, ops->start, READY=1 to
 * systemd, the loop until stopped, then the teardown. dm is zeroed by the caller (usually
 * embedded in the daemon's struct). Returns the exit code given to daemon_stop() (0 for a
 * signal), -errno when setup or the loop failed. Logs "stopped" on 0.
 */
int daemon_run(struct daemon *dm, const struct daemon_options *o, const struct daemon_ops *ops,
	       void *userdata);

/* Within ops->setup: the loop with its signal sources, the mailbox, fswatch and gRPC. */
int daemon_open(struct daemon *dm);
/* Within ops->setup: the config at start (the file, watched from now on, or the
 * defaults), the settings it makes of the flags, and the spec keeper. Logs. */
int daemon_load_config(struct daemon *dm);
/* Within ops->setup, last: the Sysfs Watcher; its first scan follows on the loop. */
int daemon_follow(struct daemon *dm);

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

/* Begins stopping with exit_code (0, or -errno when something failed); once only. */
void daemon_stop(struct daemon *dm, int exit_code);

/*
 * Assigns node's devices to the pools of the config in force, logging the warnings (at
 * warning level when dm->pools_loud, which it resets) and a failure followed by
 * "; <kept>" (what stays as it was). 0 with *ret, or -errno.
 */
int daemon_assign(struct daemon *dm, const struct disc_node *node, const char *kept,
		  struct cfg_assignment **ret);
