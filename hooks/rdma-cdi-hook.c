/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi-hook: an OCI createRuntime hook, declared in the CDI spec rdma-cdi writes, that
 * raises RLIMIT_MEMLOCK of the container's init process. CDI cannot grant CAP_IPC_LOCK or
 * set rlimits, and RDMA memory registration fails when pinned memory exceeds
 * RLIMIT_MEMLOCK without CAP_IPC_LOCK; a high enough limit removes the need for the
 * capability. createRuntime is the only hook stage whose "pid" is the host pid of the
 * container process with both runc and crun, and the process has not exec'd the
 * workload yet, so everything it starts inherits the limit.
 *
 * With --netns-move DEV (the spec of a pool with `netns: move` gives each device's hook
 * one), it moves that RDMA device into the container's network namespace instead (what
 * rdma-cni does; hook-netns.c), and leaves the limits to the spec's memlock hook.
 *
 * Exit status: 0 done (or raised as far as the hard limit allows, without --strict);
 * 1 bad OCI state on stdin or the pid is not a live process; 2 bad command line;
 * 3 the kernel refused to set the limit, or --strict and the target was not reached;
 * 4 an RDMA device could not be moved into the container's network namespace.
 * A non-zero status makes the runtime abort container creation.
 *
 * Every warning and error goes to stderr and to syslog (LOG_DAEMON, ident rdma-cdi-hook):
 * runtimes show a hook's stderr only when it fails, and a limit raised only part of the way
 * is not a failure, so the journal is where an operator finds why memlock stayed low.
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <signal.h>
#include <stdarg.h>
#include <syslog.h>

#include "build-config.h"
#include "common.h"
#include "hooks.h"

enum {
	EXIT_STATE = 1,
	EXIT_USAGE = 2,
	EXIT_LIMIT = 3,
	EXIT_NETNS = 4,
};

#define NETNS_DEVS_MAX 64

/* What the command line asks for. */
struct hook_args {
	rlim_t target;
	bool strict;
	bool memlock_given;
	struct {
		const char *name;
		bool roce;
	} devs[NETNS_DEVS_MAX];
	size_t n_devs;
};

static void help(void)
{
	printf("Usage: rdma-cdi-hook [--memlock=unlimited|BYTES[K|M|G]] [--strict]\n"
	       "       rdma-cdi-hook --netns-move=DEV [--netns-move-roce=DEV]...\n"
	       "\n"
	       "OCI createRuntime hook: reads the OCI state JSON on stdin and raises\n"
	       "RLIMIT_MEMLOCK of the container process (\"pid\") to the target. Limits are\n"
	       "never lowered. Without CAP_SYS_RESOURCE the hard limit cannot be raised: the\n"
	       "soft limit is then raised to the hard limit and a note is printed on stderr.\n"
	       "Warnings and errors also go to syslog (facility daemon, ident rdma-cdi-hook):\n"
	       "journalctl -t rdma-cdi-hook shows why a container's memlock stayed low.\n"
	       "\n"
	       "  --memlock=LIMIT  target limit (default: unlimited)\n"
	       "  --strict         fail instead of stopping at the hard limit\n"
	       "  --netns-move=DEV move RDMA device DEV into the container's network\n"
	       "                   namespace (exclusive RDMA netns mode); limits untouched\n"
	       "  --netns-move-roce=DEV  the same for a RoCE device, whose netdev must be\n"
	       "                   in that namespace too\n"
	       "  --help           show this help\n"
	       "  --version        show the version\n"
	       "\n"
	       "Exit status: 0 success, 1 bad OCI state or pid not a live process,\n"
	       "2 bad command line, 3 the limit could not be set (or --strict and the\n"
	       "target was not reached), 4 an RDMA device could not be moved.\n");
}

#define SYSLOG_IDENT "rdma-cdi-hook"

static void report(enum log_level level, int error, const char *fmt, ...) _printf_(3, 4);
static void report(enum log_level level, int error, const char *fmt, ...)
{
	char msg[1024], line[4096];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_msg(level, error, "%s", msg);
	if (level > LOG_LVL_WARNING)
		return;
	n = strlen(msg);
	if (error)
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(error < 0 ? -error : error));
	/* One event, one journal line, no terminal escapes, whatever the message quotes:
	 * escaped as on stderr. */
	text_escape(line, sizeof(line), msg, strlen(msg), false);
	syslog(level == LOG_LVL_ERROR ? LOG_ERR : LOG_WARNING, "%s", line);
}

#define hook_error(...) report(LOG_LVL_ERROR, 0, __VA_ARGS__)
#define hook_error_errno(r, ...) report(LOG_LVL_ERROR, r, __VA_ARGS__)
#define hook_warning(...) report(LOG_LVL_WARNING, 0, __VA_ARGS__)

/*
 * pidfd_open() needs no permission over the target and tells a dead pid (ESRCH) apart
 * from one we may merely not signal; where it is missing or refused, kill(pid, 0).
 */
static int pid_check_alive(pid_t pid)
{
	_cleanup_free_ char *stat = NULL;
	char path[64];
	const char *p;
	long fd;

	fd = syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0) {
		close((int)fd);
	} else if (errno == ENOSYS || errno == EPERM) {
		/* Old kernel, or a seccomp profile that refuses pidfd_open. */
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return -ESRCH;
	} else {
		return -errno;
	}

	/* A zombie still answers both checks (and prlimit), but will never run a workload. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_full_file_at(AT_FDCWD, path, 4096, true, &stat, NULL) < 0)
		return 0;
	p = strrchr(stat, ')');
	if (p && (p[1] == ' ') && (p[2] == 'Z' || p[2] == 'X'))
		return -ESRCH;
	return 0;
}

static const char *describe(const struct hook_state *st, char *buf, size_t size)
{
	/* Runtimes use 64-char ids; the first 12 identify a container as `podman ps` does. */
	if (st->id[0])
		snprintf(buf, size, "container %.12s (pid %d)", st->id, (int)st->pid);
	else
		snprintf(buf, size, "pid %d", (int)st->pid);
	return buf;
}

static int raise_memlock(const struct hook_state *st, rlim_t target, bool strict)
{
	struct rlimit cur, want;
	char who[64], t[32], h[32], s[32];

	describe(st, who, sizeof(who));
	hook_format_limit(target, t, sizeof(t));

	if (prlimit(st->pid, RLIMIT_MEMLOCK, NULL, &cur) < 0) {
		if (errno == ESRCH) {
			hook_error("%s is not a live process", who);
			return EXIT_STATE;
		}
		hook_error_errno(-errno, "%s: cannot read RLIMIT_MEMLOCK", who);
		return EXIT_LIMIT;
	}
	hook_format_limit(cur.rlim_cur, s, sizeof(s));
	hook_format_limit(cur.rlim_max, h, sizeof(h));

	if (hook_memlock_plan(&cur, target, false, &want) == HOOK_PLAN_KEEP) {
		log_debug("%s: RLIMIT_MEMLOCK %s already >= %s, leaving it", who, s, t);
		return 0;
	}
	if (prlimit(st->pid, RLIMIT_MEMLOCK, &want, NULL) == 0) {
		log_debug("%s: RLIMIT_MEMLOCK raised from %s to %s", who, s, t);
		return 0;
	}
	if (errno == ESRCH) {
		hook_error("%s is not a live process", who);
		return EXIT_STATE;
	}
	/* EPERM without a hard-limit raise means we may not touch the process at all. */
	if (errno != EPERM || want.rlim_max <= cur.rlim_max) {
		hook_error_errno(-errno, "%s: cannot raise RLIMIT_MEMLOCK to %s", who, t);
		return EXIT_LIMIT;
	}
	if (strict) {
		hook_error("%s: cannot raise RLIMIT_MEMLOCK to %s: hard limit is %s and raising it "
			   "needs CAP_SYS_RESOURCE (--strict)",
			   who, t, h);
		return EXIT_LIMIT;
	}

	if (hook_memlock_plan(&cur, target, true, &want) == HOOK_PLAN_KEEP) {
		hook_warning("%s: RLIMIT_MEMLOCK stays at %s (the hard limit); %s needs "
			     "CAP_SYS_RESOURCE",
			     who, s, t);
		return 0;
	}
	if (prlimit(st->pid, RLIMIT_MEMLOCK, &want, NULL) < 0) {
		if (errno == ESRCH) {
			hook_error("%s is not a live process", who);
			return EXIT_STATE;
		}
		hook_error_errno(-errno, "%s: cannot raise RLIMIT_MEMLOCK to %s", who, h);
		return EXIT_LIMIT;
	}
	hook_warning("%s: RLIMIT_MEMLOCK raised from %s to %s (the hard limit); %s needs "
		     "CAP_SYS_RESOURCE",
		     who, s, h, t);
	return 0;
}

/* The options: -1 to go on, or the exit code (--help, --version, a usage error). */
static int parse_args(int argc, char **argv, struct hook_args *a)
{
	static const struct option options[] = {
	    {"memlock", required_argument, NULL, 'm'},
	    {"strict", no_argument, NULL, 's'},
	    {"netns-move", required_argument, NULL, 'n'},
	    {"netns-move-roce", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {},
	};
	int c;

	/* getopt's own messages would be a second line; we print one ourselves. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0) {
		switch (c) {
		case 'm':
			if (parse_memlock(optarg, &a->target) < 0) {
				hook_error("--memlock: invalid value '%s' (expected unlimited or "
					   "BYTES[K|M|G])",
					   optarg);
				return EXIT_USAGE;
			}
			a->memlock_given = true;
			break;
		case 'n':
		case 'r':
			if (!name_is_safe(optarg, 63) || a->n_devs == NETNS_DEVS_MAX) {
				hook_error("--netns-move: '%s' is not an RDMA device name (or more "
					   "than %d devices)",
					   optarg, NETNS_DEVS_MAX);
				return EXIT_USAGE;
			}
			a->devs[a->n_devs].name = optarg;
			a->devs[a->n_devs++].roce = c == 'r';
			break;
		case 's':
			a->strict = true;
			break;
		case 'h':
			help();
			return 0;
		case 'V':
			printf("rdma-cdi-hook %s\n", RDMA_CDI_VERSION);
			return 0;
		default:
			hook_error("unknown or incomplete option '%s' (see --help)",
				   argv[optind - 1] ? argv[optind - 1] : "?");
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		hook_error("unexpected argument '%s' (the OCI state is read from stdin)",
			   argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

/* The OCI state on stdin, its process alive: 0, or EXIT_STATE with the reason printed. */
static int read_state(struct hook_state *ret)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_full_fd(STDIN_FILENO, HOOK_STATE_MAX, &buf, &len);
	if (r == -EFBIG) {
		hook_error("stdin: larger than %d bytes, not an OCI state", HOOK_STATE_MAX);
		return EXIT_STATE;
	}
	if (r < 0) {
		hook_error_errno(r, "stdin: cannot read the OCI state");
		return EXIT_STATE;
	}
	r = hook_parse_state(buf, len, ret, &err);
	if (r < 0) {
		hook_error("stdin: %s", rc_error_msg(err, r));
		return EXIT_STATE;
	}
	r = pid_check_alive(ret->pid);
	if (r == -ESRCH) {
		hook_error("pid %d is not a live process", (int)ret->pid);
		return EXIT_STATE;
	}
	if (r < 0) {
		hook_error_errno(r, "pid %d is not a usable process", (int)ret->pid);
		return EXIT_STATE;
	}
	return 0;
}

static int move_devices(const struct hook_state *st, const struct hook_args *a)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	_cleanup_close_ int nsfd = -1;
	char who[64];
	int r;

	describe(st, who, sizeof(who));
	r = hook_netns_open(st->pid, &nsfd, &err);
	if (r < 0) {
		hook_error("%s: %s", who, rc_error_msg(err, r));
		return EXIT_NETNS;
	}
	for (size_t i = 0; i < a->n_devs; i++) {
		enum hook_netns_verdict v = HOOK_NETNS_MOVE;

		r = hook_netns_move(nsfd, a->devs[i].name, a->devs[i].roce, &v, &err);
		if (r < 0) {
			hook_error("%s: %s", who, rc_error_msg(err, r));
			return EXIT_NETNS;
		}
		if (v == HOOK_NETNS_HOST_NS) {
			hook_warning("%s shares the host's network namespace: %s stays there, "
				     "nothing to move",
				     who, a->devs[i].name);
			return 0;
		}
		log_debug("%s: %s %s", who, a->devs[i].name,
			  v == HOOK_NETNS_ALREADY ? "already in its network namespace"
						  : "moved into its network namespace");
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct hook_args a = {.target = RLIM_INFINITY};
	struct hook_state st;
	int r;

	log_set_ident("rdma-cdi-hook");
	/* No LOG_CONS: a hook must never write to the console; without a syslog daemon the
	 * message is only on stderr. */
	openlog(SYSLOG_IDENT, LOG_PID, LOG_DAEMON);
	r = parse_args(argc, argv, &a);
	if (r >= 0)
		return r;
	r = read_state(&st);
	if (r != 0)
		return r;
	if (a.n_devs > 0) {
		r = move_devices(&st, &a);
		if (r != 0 || !a.memlock_given)
			return r;
	}
	return raise_memlock(&st, a.target, a.strict);
}
