/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OCI state document a runtime writes to a hook's stdin:
 *   {"ociVersion":"1.0.2","id":"..","status":"creating","pid":1234,"bundle":"..",
 *    "annotations":{..}}
 * Only "pid" matters to us; the rest is checked for type so that a document that is
 * clearly something else is refused rather than half-used.
 */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "hooks.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Keys we look at: each must appear at most once so no reader can see a different value. */
static const char *const known_keys[] = {"ociVersion", "id", "status", "pid"};

static int check_keys(const cJSON *root, struct rc_error **err)
{
	unsigned seen[ELEMENTSOF(known_keys)] = {0};
	const cJSON *item;

	cJSON_ArrayForEach (item, root) {
		for (size_t i = 0; i < ELEMENTSOF(known_keys); i++) {
			if (!item->string || strcmp(item->string, known_keys[i]) != 0)
				continue;
			if (++seen[i] > 1)
				return rc_error_set(err, -EBADMSG, "'%s' given more than once",
						    known_keys[i]);
			if (i < 3 && !cJSON_IsString(item))
				return rc_error_set(err, -EBADMSG, "'%s' is not a string",
						    known_keys[i]);
		}
	}
	return 0;
}

static int parse_pid(const cJSON *item, pid_t *ret_pid, struct rc_error **err)
{
	double v;

	if (!item)
		return rc_error_set(err, -EBADMSG, "'pid' missing");
	if (!cJSON_IsNumber(item))
		return rc_error_set(err, -EBADMSG, "'pid' is not a number");
	v = item->valuedouble;
	/* cJSON turns 1e999 into inf; treat every non-finite value as out of range. */
	if (!isfinite(v) || v > 1e15 || v < -1e15)
		return rc_error_set(err, -EBADMSG, "'pid' out of range");
	if (v != (double)(long long)v)
		return rc_error_set(err, -EBADMSG, "'pid' is not an integer (%g)", v);
	if (v <= 0)
		return rc_error_set(err, -EBADMSG, "'pid' must be positive, got %.0f", v);
	/*
	 * The hook runs in the runtime's pid namespace, where a container's process is never
	 * pid 1: 1 is that namespace's init (systemd on a host), whose limits every later
	 * process would inherit.
	 */
	if (v == 1)
		return rc_error_set(err, -EBADMSG,
				    "'pid' 1 is the init of the runtime's pid namespace, never a "
				    "container's process: refusing to change its limits");
	/* pid_t is 32 bits on Linux; the kernel caps pids at 2^22 anyway. */
	if (v > (double)INT32_MAX)
		return rc_error_set(err, -EBADMSG, "'pid' %.0f out of range", v);
	*ret_pid = (pid_t)v;
	return 0;
}

int hook_parse_state(const char *buf, size_t len, struct hook_state *ret_state,
		     struct rc_error **err)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	struct hook_state st = {0};
	const char *end = NULL;
	const cJSON *id;
	size_t i;
	int r;

	for (i = 0; i < len && is_json_space(buf[i]); i++)
		;
	if (i == len)
		return rc_error_set(err, -EBADMSG, "empty, expected the OCI state JSON");
	if (len > HOOK_STATE_MAX)
		return rc_error_set(err, -EFBIG, "larger than %d bytes", HOOK_STATE_MAX);

	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;

		return rc_error_set(err, -EBADMSG, "not valid JSON at byte %zu", off + 1);
	}
	/* cJSON stops after the first value; anything but whitespace behind it is garbage. */
	for (i = (size_t)(end - buf); i < len && is_json_space(buf[i]); i++)
		;
	if (i < len)
		return rc_error_set(err, -EBADMSG,
				    "unexpected data after the JSON value at byte %zu", i + 1);
	if (!cJSON_IsObject(root))
		return rc_error_set(err, -EBADMSG, "OCI state is not a JSON object");

	r = check_keys(root, err);
	if (r < 0)
		return r;
	r = parse_pid(cJSON_GetObjectItemCaseSensitive(root, "pid"), &st.pid, err);
	if (r < 0)
		return r;

	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	/* The id only decorates messages: drop it rather than print something hostile. */
	if (id && name_is_safe(id->valuestring, HOOK_ID_MAX))
		memcpy(st.id, id->valuestring, strlen(id->valuestring) + 1);

	*ret_state = st;
	return 0;
}
