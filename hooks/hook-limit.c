/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include <strings.h>

#include "common.h"
#include "hooks.h"

int hook_parse_memlock(const char *s, rlim_t *ret)
{
	unsigned long long v = 0, mult = 1;
	const char *p;

	if (!s || !*s)
		return -EINVAL;
	if (strcasecmp(s, "unlimited") == 0) {
		*ret = RLIM_INFINITY;
		return 0;
	}
	/* Digits by hand: strtoull would accept signs, spaces and wrap "-1" to 2^64-1. */
	for (p = s; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (~0ULL - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (p == s)
		return -EINVAL;
	if (*p) {
		switch (*p) {
		case 'k':
		case 'K':
			mult = 1ULL << 10;
			break;
		case 'm':
		case 'M':
			mult = 1ULL << 20;
			break;
		case 'g':
		case 'G':
			mult = 1ULL << 30;
			break;
		default:
			return -EINVAL;
		}
		if (p[1])
			return -EINVAL;
	}
	if (v == 0)
		return -EINVAL;
	if (v > ~0ULL / mult)
		return -ERANGE;
	v *= mult;
	/* RLIM_INFINITY is all ones: a byte count that large would silently mean "unlimited". */
	if ((rlim_t)v != v || (rlim_t)v == RLIM_INFINITY)
		return -ERANGE;
	*ret = (rlim_t)v;
	return 0;
}

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
