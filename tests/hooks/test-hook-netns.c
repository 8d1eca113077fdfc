/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hook's --netns-move decision (hooks.h hook_netns_plan) for every combination of the
 * facts it gathers, and the fix it prints for each refusal the kernel can give.
 */
#include <errno.h>
#include <string.h>

#include "common.h"
#include "hooks.h"
#include "../tap.h"

static const char *vname(enum hook_netns_verdict v)
{
	static const char *names[] = {"host-ns", "move", "already", "shared", "gone"};

	return v <= HOOK_NETNS_GONE ? names[v] : "?";
}

static void plan(bool same, enum disc_netns_mode mode, bool here, bool there,
		 enum hook_netns_verdict want, const char *why)
{
	struct hook_netns_facts f = {same, mode, here, there};
	enum hook_netns_verdict v = hook_netns_plan(&f);

	ok(v == want, "%s: %s (got %s)", why, vname(want), vname(v));
}

int main(void)
{
	const enum disc_netns_mode modes[] = {DISC_NETNS_UNKNOWN, DISC_NETNS_SHARED,
					      DISC_NETNS_EXCLUSIVE};

	/* A container in the host's namespace: never anything to move, whatever else. */
	for (size_t m = 0; m < 3; m++)
		for (int b = 0; b < 4; b++)
			plan(true, modes[m], b & 1, b & 2, HOOK_NETNS_HOST_NS,
			     "the host's own namespace");
	plan(false, DISC_NETNS_EXCLUSIVE, true, false, HOOK_NETNS_MOVE,
	     "exclusive, on the host: move");
	plan(false, DISC_NETNS_EXCLUSIVE, false, true, HOOK_NETNS_ALREADY,
	     "exclusive, already in the container (a restart in place)");
	plan(false, DISC_NETNS_EXCLUSIVE, false, false, HOOK_NETNS_GONE,
	     "exclusive, visible nowhere (unplugged since the spec was written)");
	plan(false, DISC_NETNS_SHARED, true, true, HOOK_NETNS_SHARED,
	     "shared: visible everywhere, cannot move");
	plan(false, DISC_NETNS_SHARED, true, false, HOOK_NETNS_SHARED,
	     "shared per the kernel, whatever the lookups said");
	plan(false, DISC_NETNS_UNKNOWN, true, true, HOOK_NETNS_SHARED,
	     "seen in both namespaces: shared whatever the mode read");
	plan(false, DISC_NETNS_UNKNOWN, true, false, HOOK_NETNS_MOVE,
	     "mode unknown, on the host only: try, the kernel decides");

	ok(strstr(hook_netns_fix(DISC_NETNS_SHARED, 0), "exclusive") &&
		   strstr(hook_netns_fix(DISC_NETNS_SHARED, 0), "netns: none"),
	   "shared mode: the fix names the exclusive mode and the pool setting");
	ok(strstr(hook_netns_fix(DISC_NETNS_EXCLUSIVE, -EBUSY), "exclusive"),
	   "EBUSY from the kernel: the shared-mode fix");
	ok(strstr(hook_netns_fix(DISC_NETNS_EXCLUSIVE, -EOPNOTSUPP), "driver cannot change"),
	   "EOPNOTSUPP: the driver cannot move (rxe)");
	ok(strstr(hook_netns_fix(DISC_NETNS_EXCLUSIVE, -EPERM), "CAP_NET_ADMIN"),
	   "EPERM: the capability");
	ok(strstr(hook_netns_fix(DISC_NETNS_EXCLUSIVE, -EIO), "doctor"),
	   "anything else: doctor");
	return tap_done();
}
