/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hook's inputs: its --memlock argument (the input's first line) and the OCI state
 * on stdin (the rest), through hook_parse_memlock() and hook_parse_state(), then the
 * limit plan for a few current limits. Only the pure logic runs: no process is looked
 * up and prlimit() is never called.
 */
#include <errno.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "hooks.h"

static void check_plan(rlim_t target)
{
	static const rlim_t vals[] = {0, 64 << 10, 8 << 20, RLIM_INFINITY};

	for (size_t s = 0; s < sizeof(vals) / sizeof(*vals); s++)
		for (size_t h = s; h < sizeof(vals) / sizeof(*vals); h++)
			for (int fb = 0; fb < 2; fb++) {
				struct rlimit cur = {vals[s], vals[h]}, nw = {0, 0};

				if (hook_memlock_plan(&cur, target, fb, &nw) == HOOK_PLAN_KEEP)
					continue;
				/* Never lowers a limit; soft stays within hard. */
				fuzz_assert(nw.rlim_cur >= cur.rlim_cur);
				fuzz_assert(nw.rlim_max >= cur.rlim_max);
				fuzz_assert(nw.rlim_cur <= nw.rlim_max);
				fuzz_assert(!fb || nw.rlim_max == cur.rlim_max);
			}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *nl = memchr(data, '\n', size);
	size_t alen = nl ? (size_t)(nl - (const char *)data) : size;
	_cleanup_free_ char *arg = strndup((const char *)data, alen);
	struct hook_state st;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	char lim[32];
	rlim_t target = 12345;
	int r;

	if (!arg)
		abort();
	r = hook_parse_memlock(arg, &target);
	if (r == 0) {
		fuzz_assert(target > 0);
		hook_format_limit(target, lim, sizeof(lim));
		fuzz_assert(strlen(lim) > 0);
		check_plan(target);
	} else {
		fuzz_assert(r == -EINVAL || r == -ERANGE);
		fuzz_assert(target == 12345);
	}

	if (!nl)
		return 0;
	r = hook_parse_state(nl + 1, size - alen - 1, &st, &err);
	if (r == 0) {
		/* Never the init of the runtime's pid namespace, never a negative pid. */
		fuzz_assert(st.pid >= 2);
		fuzz_assert(!st.id[0] || name_is_safe(st.id, HOOK_ID_MAX));
	} else {
		fuzz_assert(r == -EINVAL || r == -EBADMSG || r == -ENOMEM);
		fuzz_assert(r == -ENOMEM || (err && err->code == -r && !strchr(err->msg, '\n')));
	}
	return 0;
}
