/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

static enum log_level max_level = LOG_LVL_INFO;
static bool log_json;
static bool log_timestamps;
static const char *log_ident = "rdma-cdi";

static const char *const level_names[] = {
    [LOG_LVL_ERROR] = "error",
    [LOG_LVL_WARNING] = "warning",
    [LOG_LVL_INFO] = "info",
    [LOG_LVL_DEBUG] = "debug",
};

/* The keys log_full() writes itself: a caller's field of that name must not shadow them. */
static const char *const reserved_keys[] = {"ts", "level", "ident", "msg", "errno"};

void log_set_level(enum log_level level)
{
	max_level = level;
}

enum log_level log_get_level(void)
{
	return max_level;
}

int log_parse_level(const char *s, enum log_level *ret_level)
{
	for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
		if (s && strcmp(s, level_names[i]) == 0) {
			*ret_level = (enum log_level)i;
			return 0;
		}
	return -EINVAL;
}

void log_set_json(bool json)
{
	log_json = json;
}

int log_parse_format(const char *s)
{
	if (s && strcmp(s, "json") == 0)
		log_json = true;
	else if (s && strcmp(s, "text") == 0)
		log_json = false;
	else
		return -EINVAL;
	return 0;
}

void log_set_ident(const char *ident)
{
	log_ident = ident;
}

void log_set_timestamps(bool on)
{
	log_timestamps = on;
}

/* "2026-12-01T20:23:56.123Z" */
static void format_ts(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0 || !gmtime_r(&ts.tv_sec, &tm)) {
		snprintf(buf, size, "-");
		return;
	}
	snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (ts.tv_nsec / 1000000) % 1000);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A caller's key, renamed when it is one of ours; at most size-1 bytes. */
static void field_key(char *buf, size_t size, const char *key)
{
	bool reserved = false;

	for (size_t i = 0; i < ELEMENTSOF(reserved_keys); i++)
		reserved = reserved || strcmp(key, reserved_keys[i]) == 0;
	snprintf(buf, size, "%s%s", reserved ? "_" : "", key);
}

static void emit_json(enum log_level level, int error, const char *ts, const char *msg,
		      struct log_fields fields)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *line = NULL;

	if (!o)
		return;
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "level", level_names[level]);
	cJSON_AddStringToObject(o, "ident", log_ident);
	cJSON_AddStringToObject(o, "msg", msg);
	if (error != 0)
		cJSON_AddNumberToObject(o, "errno", error < 0 ? -error : error);
	for (size_t i = 0; i + 1 < fields.n; i += 2) {
		char key[64], val[1024];
		const char *v = fields.kv[i + 1];

		if (!fields.kv[i] || !v)
			continue;
		field_key(key, sizeof(key), fields.kv[i]);
		/* cJSON escapes controls but not invalid UTF-8: escape first. */
		text_escape(val, sizeof(val), v, strlen(v), false);
		cJSON_AddStringToObject(o, key, val);
	}
	line = cJSON_PrintUnformatted(o);
	if (line)
		fprintf(stderr, "%s\n", line);
}

static void emit_text(enum log_level level, const char *ts, const char *msg,
		      struct log_fields fields)
{
	char line[4096];
	size_t len;

	len = (size_t)snprintf(line, sizeof(line), "%s%s%s: %s%s%s", ts ? ts : "", ts ? " " : "",
			       log_ident, level == LOG_LVL_INFO ? "" : level_names[level],
			       level == LOG_LVL_INFO ? "" : ": ", msg);
	for (size_t i = 0; i + 1 < fields.n && len < sizeof(line); i += 2) {
		const char *v = fields.kv[i + 1];
		char key[64];
		size_t vlen;
		bool q;

		if (!fields.kv[i] || !v)
			continue;
		vlen = strlen(v);
		q = text_needs_quotes(v, vlen) || strchr(v, '=');
		field_key(key, sizeof(key), fields.kv[i]);
		len +=
		    (size_t)snprintf(line + len, sizeof(line) - len, " %s=%s", key, q ? "\"" : "");
		if (len >= sizeof(line))
			break;
		len += text_escape(line + len, sizeof(line) - len, v, vlen, q);
		if (q && len < sizeof(line))
			len += (size_t)snprintf(line + len, sizeof(line) - len, "\"");
	}
	fprintf(stderr, "%s\n", line);
}

void log_fullv(enum log_level level, int error, struct log_fields fields, const char *fmt,
	       va_list ap)
{
	char raw[2048], msg[2048], ts[64];
	int saved = errno;
	int n;

	if (level > max_level)
		return;

	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	if (n < 0)
		goto out;
	if ((size_t)n >= sizeof(raw)) /* say that it was cut */
		memcpy(raw + sizeof(raw) - 4, "...", 4);
	if (error != 0) {
		const char *why = strerror(error < 0 ? -error : error);
		size_t len = strlen(raw);

		/* A reason that already names the cause (an err buffer filled by a library)
		 * must not get it twice: "...: No space left on device: No space left...". */
		if (!ends_with(raw, why))
			snprintf(raw + len, sizeof(raw) - len, ": %s", why);
	}
	/* One event, one line, no terminal escapes: the message may quote hostile input. */
	text_escape(msg, sizeof(msg), raw, strlen(raw), false);
	format_ts(ts, sizeof(ts));
	if (log_json)
		emit_json(level, error, ts, msg, fields);
	else
		emit_text(level, log_timestamps ? ts : NULL, msg, fields);
out:
	errno = saved;
}

void log_full(enum log_level level, int error, struct log_fields fields, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_fullv(level, error, fields, fmt, ap);
	va_end(ap);
}
