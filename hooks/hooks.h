/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hooks: the pure logic of rdma-cdi-hook, kept apart from main() so the tests can drive it
 * without a container runtime. Nothing here prints; every function that can fail for a
 * reason the user must see fills a caller-provided message buffer with one line naming
 * the cause.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "rc-error.h"

/* The OCI state is a few hundred bytes; anything near this is not a state document. */
#define HOOK_STATE_MAX (1024 * 1024)

/* Longest container id we repeat in messages (runc/crun ids are 64 hex chars). */
#define HOOK_ID_MAX 128

struct hook_state {
	pid_t pid;
	/* Container id if present and printable (name_is_safe), else "". */
	char id[HOOK_ID_MAX + 1];
};

/*
 * Parses and validates the OCI state JSON (buf, len; buf need not be NUL-terminated).
 * Requires an object whose "pid" is an integer in 2..INT32_MAX given exactly once (pid 1
 * is the init of the runtime's pid namespace, never a container's process);
 * "ociVersion", "id", "status" must be strings when present. Returns 0 and fills
 * *ret_state, or -EINVAL/-EBADMSG/-ENOMEM with a one-line reason in *err.
 */
int hook_parse_state(const char *buf, size_t len, struct hook_state *ret_state,
		     struct rc_error **err);

/* Formats a limit for messages: "unlimited" or the decimal byte count. Returns buf. */
const char *hook_format_limit(rlim_t v, char *buf, size_t size);

enum hook_plan {
	HOOK_PLAN_KEEP, /* the soft limit already reaches the target: change nothing */
	HOOK_PLAN_SET,	/* set ret_new; needs no privilege unless it raises the hard limit */
};

/*
 * What to ask the kernel for, given the current limits and the target. Never lowers the
 * soft or the hard limit. The full plan sets soft = target and hard = max(hard, target).
 * The fallback plan (for when the kernel refused the full one) stays within the hard
 * limit: soft = min(target, hard); it is HOOK_PLAN_KEEP when the soft limit already sits
 * at the hard limit.
 */
enum hook_plan hook_memlock_plan(const struct rlimit *cur, rlim_t target, bool fallback,
				 struct rlimit *ret_new);

/* ---- --netns-move DEV: the device into the container's network namespace (hook-netns.c) */

#include "discovery.h"
#include "rc-error.h"

/* What was found about one device and the container. */
struct hook_netns_facts {
	bool same_netns;	   /* the container shares the hook's (the host's) namespace */
	enum disc_netns_mode mode; /* the kernel's RDMA netns mode */
	bool here;		   /* the device is visible in the hook's namespace */
	bool there;		   /* ... in the container's */
};

enum hook_netns_verdict {
	HOOK_NETNS_HOST_NS, /* nothing to move: the container uses the host's namespace */
	HOOK_NETNS_MOVE,    /* move it */
	HOOK_NETNS_ALREADY, /* already there: a container restarted in place */
	HOOK_NETNS_SHARED,  /* the shared mode: the kernel moves no RDMA device */
	HOOK_NETNS_GONE,    /* visible nowhere: unplugged or unregistered */
};

/* The decision, from the facts alone (pure). */
enum hook_netns_verdict hook_netns_plan(const struct hook_netns_facts *f);

/* The fix to print for a refused move: the mode, or the kernel's answer (-errno). */
const char *hook_netns_fix(enum disc_netns_mode mode, int kernel_error);

/* Opens pid's network namespace: 0 with *ret_fd, or -errno with err naming the pid. */
int hook_netns_open(pid_t pid, int *ret_fd, struct rc_error **err);

/*
 * Gathers the facts for dev and acts on the verdict (*ret_verdict): 0 when the device is
 * (or stays) where the container can use it, -errno with err naming the device, the mode
 * and the fix when it is not. With roce, the port's netdev must be in the container's
 * namespace too. Does not log.
 */
int hook_netns_move(int nsfd, const char *dev, bool roce, enum hook_netns_verdict *ret_verdict,
		    struct rc_error **err);

