/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "common.h"
#include "hooks.h"

const char *hook_format_limit(rlim_t v, char *buf, size_t size)
{
	if (v == RLIM_INFINITY)
		snprintf(buf, size, "unlimited");
	else
		snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

/* RLIM_INFINITY is the largest rlim_t, so plain comparisons order limits correctly. */
static rlim_t max_limit(rlim_t a, rlim_t b)
{
	return a > b ? a : b;
}

static rlim_t min_limit(rlim_t a, rlim_t b)
{
	return a < b ? a : b;
}

enum hook_plan hook_memlock_plan(const struct rlimit *cur, rlim_t target, bool fallback,
				 struct rlimit *ret_new)
{
	struct rlimit n;

	if (cur->rlim_cur >= target)
		return HOOK_PLAN_KEEP;
	if (!fallback) {
		n.rlim_cur = target;
		n.rlim_max = max_limit(cur->rlim_max, target);
	} else {
		n.rlim_cur = min_limit(target, cur->rlim_max);
		n.rlim_max = cur->rlim_max;
		if (n.rlim_cur <= cur->rlim_cur)
			return HOOK_PLAN_KEEP;
	}
	*ret_new = n;
	return HOOK_PLAN_SET;
}
