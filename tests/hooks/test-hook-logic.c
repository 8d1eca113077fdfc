/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of rdma-cdi-hook's pure logic: OCI state parsing, --memlock parsing and the
 * limit plan. TAP output.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "hooks.h"

#include "../tap.h"
#include "../tap-error.h"

/* Parses s; on failure checks that the message contains want_err. */
static void state_bad(const char *s, size_t len, const char *want_err)
{
	struct hook_state st = {.pid = -42};
	int r;

	r = hook_parse_state(s, len, &st, tap_fresh());
	ok(r < 0 && strstr(tap_msg(), want_err) && st.pid == -42 && !strchr(tap_msg(), '\n'),
	   "state %.40s... rejected with \"%s\" (got r=%d \"%s\")", s, want_err, r, tap_msg());
}

static void state_good(const char *s, pid_t want_pid, const char *want_id)
{
	struct hook_state st;
	int r;

	r = hook_parse_state(s, strlen(s), &st, tap_fresh());
	ok(r == 0 && st.pid == want_pid && strcmp(st.id, want_id) == 0,
	   "state %.60s -> pid %d id '%s' (got r=%d pid %d id '%s' err \"%s\")", s, (int)want_pid,
	   want_id, r, r == 0 ? (int)st.pid : 0, r == 0 ? st.id : "", tap_msg());
}

static void test_state(void)
{
	static const char runc[] =
	    "{\"ociVersion\":\"1.0.2\",\"id\":\"abc\",\"status\":\"creating\","
	    "\"pid\":4242,\"bundle\":\"/x\",\"annotations\":{}}";
	static const char crun[] =
	    "{\n  \"ociVersion\": \"1.0.0\",\n  \"id\": "
	    "\"9f3c1d2e4b5a69788796a5b4c3d2e1f09f3c1d2e4b5a69788796a5b4c3d2e1f0\",\n"
	    "  \"status\": \"created\",\n  \"pid\": 77,\n  \"bundle\": \"/run/b\",\n"
	    "  \"annotations\": {\"io.podman.annotations.autoremove\": \"TRUE\"}\n}\n";
	char *huge;
	size_t huge_len = HOOK_STATE_MAX + 10;

	state_good(runc, 4242, "abc");
	state_good(crun, 77, "9f3c1d2e4b5a69788796a5b4c3d2e1f09f3c1d2e4b5a69788796a5b4c3d2e1f0");
	state_good("{\"pid\":2}", 2, "");
	state_good("  {\"pid\":2147483647}\n\n", INT32_MAX, "");
	state_good("{\"pid\":12.0}", 12, "");
	/* A hostile id only decorates messages: it is dropped, not a reason to fail. */
	state_good("{\"pid\":5,\"id\":\"a\\nb\"}", 5, "");
	/* Fields we do not know are ignored, as the OCI spec asks of readers. */
	state_good("{\"pid\":6,\"extra\":[1,2,{\"pid\":\"x\"}]}", 6, "");

	state_bad("", 0, "empty");
	state_bad(" \n\t ", 4, "empty");
	state_bad("garbage", 7, "not valid JSON at byte 1");
	state_bad("{\"pid\": 12,", 11, "not valid JSON");
	state_bad("{\"pid\":1} {\"pid\":2}", 19, "unexpected data after the JSON value at byte 11");
	state_bad("{\"pid\":1}\0garbage", 17, "unexpected data");
	state_bad("[1,2]", 5, "not a JSON object");
	state_bad("42", 2, "not a JSON object");
	state_bad("{}", 2, "'pid' missing");
	state_bad("{\"PID\":5}", 9, "'pid' missing");
	state_bad("{\"pid\":0}", 9, "must be positive");
	state_bad("{\"pid\":-5}", 10, "must be positive, got -5");
	/* The runtime's pid namespace init is never a container process (issue 8). */
	state_bad("{\"pid\":1}", 9, "'pid' 1 is the init of the runtime's pid namespace");
	state_bad("{\"pid\":1.0}", 11, "'pid' 1 is the init");
	state_bad("{\"pid\":1.5}", 11, "not an integer (1.5)");
	state_bad("{\"pid\":\"12\"}", 12, "'pid' is not a number");
	state_bad("{\"pid\":null}", 12, "'pid' is not a number");
	state_bad("{\"pid\":true}", 12, "'pid' is not a number");
	state_bad("{\"pid\":1099511627776}", 21, "'pid' 1099511627776 out of range");
	state_bad("{\"pid\":2147483648}", 18, "out of range");
	state_bad("{\"pid\":1e999}", 13, "out of range");
	state_bad("{\"pid\":1,\"pid\":2}", 17, "'pid' given more than once");
	state_bad("{\"pid\":1,\"id\":5}", 16, "'id' is not a string");
	state_bad("{\"pid\":1,\"status\":{}}", 21, "'status' is not a string");
	state_bad("{\"pid\":1,\"ociVersion\":1}", 24, "'ociVersion' is not a string");
	/* The length bounds the parse: the NUL-terminated tail must not be read. */
	state_bad("{\"pid\":123}", 8, "not valid JSON");

	huge = malloc(huge_len);
	if (!huge)
		abort();
	memset(huge, ' ', huge_len);
	memcpy(huge, "{\"pid\":1}", 9);
	state_bad(huge, huge_len, "larger than");
	free(huge);
}

static void memlock_good(const char *s, rlim_t want)
{
	rlim_t v = 0;
	int r = hook_parse_memlock(s, &v);

	ok(r == 0 && v == want, "--memlock=%s -> %llu (got r=%d %llu)", s, (unsigned long long)want,
	   r, (unsigned long long)v);
}

static void memlock_bad(const char *s, int want_r)
{
	rlim_t v = 7;
	int r = hook_parse_memlock(s, &v);

	ok(r == want_r && v == 7, "--memlock=%s rejected with %d (got %d)", s ? s : "(null)",
	   want_r, r);
}

static void test_memlock(void)
{
	memlock_good("unlimited", RLIM_INFINITY);
	memlock_good("UNLIMITED", RLIM_INFINITY);
	memlock_good("1", 1);
	memlock_good("65536", 65536);
	memlock_good("64K", 65536);
	memlock_good("64k", 65536);
	memlock_good("8M", 8 << 20);
	memlock_good("2G", 2ULL << 30);
	memlock_good("16777215G", 16777215ULL << 30);

	memlock_bad(NULL, -EINVAL);
	memlock_bad("", -EINVAL);
	memlock_bad("0", -EINVAL);
	memlock_bad("0K", -EINVAL);
	memlock_bad("-1", -EINVAL);
	memlock_bad("+5", -EINVAL);
	memlock_bad(" 5", -EINVAL);
	memlock_bad("5 ", -EINVAL);
	memlock_bad("5T", -EINVAL);
	memlock_bad("5KB", -EINVAL);
	memlock_bad("M", -EINVAL);
	memlock_bad("infinity", -EINVAL);
	memlock_bad("18446744073709551615", -ERANGE); /* == RLIM_INFINITY */
	memlock_bad("18446744073709551616", -ERANGE);
	memlock_bad("17179869184G", -ERANGE); /* 2^64 */
}

static void plan(rlim_t soft, rlim_t hard, rlim_t target, bool fallback, enum hook_plan want,
		 rlim_t want_soft, rlim_t want_hard)
{
	struct rlimit cur = {soft, hard}, n = {1, 1};
	enum hook_plan p = hook_memlock_plan(&cur, target, fallback, &n);
	char a[32], b[32], c[32], d[32], e[32];

	ok(p == want && (p == HOOK_PLAN_KEEP ? n.rlim_cur == 1 && n.rlim_max == 1
					     : n.rlim_cur == want_soft && n.rlim_max == want_hard),
	   "%s plan for %s:%s target %s -> %s %s:%s", fallback ? "fallback" : "full",
	   hook_format_limit(soft, a, sizeof(a)), hook_format_limit(hard, b, sizeof(b)),
	   hook_format_limit(target, c, sizeof(c)), want == HOOK_PLAN_KEEP ? "keep" : "set",
	   hook_format_limit(want_soft, d, sizeof(d)), hook_format_limit(want_hard, e, sizeof(e)));
}

static void test_plan(void)
{
	const rlim_t K64 = 64 << 10, M1 = 1 << 20, M8 = 8 << 20, INF = RLIM_INFINITY;

	/* Target below the hard limit: no privilege needed, hard limit untouched. */
	plan(K64, M8, M1, false, HOOK_PLAN_SET, M1, M8);
	plan(K64, INF, M1, false, HOOK_PLAN_SET, M1, INF);
	/* Target above the hard limit: the full plan raises both. */
	plan(K64, M8, INF, false, HOOK_PLAN_SET, INF, INF);
	plan(K64, M1, M8, false, HOOK_PLAN_SET, M8, M8);
	/* Never lower: a soft limit at or above the target is left alone. */
	plan(M8, M8, M1, false, HOOK_PLAN_KEEP, 0, 0);
	plan(INF, INF, INF, false, HOOK_PLAN_KEEP, 0, 0);
	plan(M1, M8, M1, false, HOOK_PLAN_KEEP, 0, 0);
	plan(INF, INF, M1, true, HOOK_PLAN_KEEP, 0, 0);
	/* Fallback: as far as the hard limit allows. */
	plan(K64, M8, INF, true, HOOK_PLAN_SET, M8, M8);
	plan(K64, M8, M1, true, HOOK_PLAN_SET, M1, M8);
	plan(M8, M8, INF, true, HOOK_PLAN_KEEP, 0, 0);
	plan(M1, M1, M8, true, HOOK_PLAN_KEEP, 0, 0);
}

static void test_format(void)
{
	char buf[32];

	ok(strcmp(hook_format_limit(RLIM_INFINITY, buf, sizeof(buf)), "unlimited") == 0,
	   "RLIM_INFINITY formats as unlimited");
	ok(strcmp(hook_format_limit(8388608, buf, sizeof(buf)), "8388608") == 0,
	   "8 MiB formats as bytes");
}

int main(void)
{
	test_state();
	test_memlock();
	test_plan();
	test_format();
	tap_fresh();
	return tap_done();
}
