/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common.h"

static enum log_level max_level = LOG_LVL_INFO;
static bool log_json;
static const char *log_ident = "rdma-cdi";

static const char *const level_names[] = {
    [LOG_LVL_ERROR] = "error",
    [LOG_LVL_WARNING] = "warning",
    [LOG_LVL_INFO] = "info",
    [LOG_LVL_DEBUG] = "debug",
};

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

void log_set_ident(const char *ident)
{
	log_ident = ident;
}

void log_msg(enum log_level level, int error, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	int saved = errno;

	if (level > max_level)
		return;

	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (error != 0) {
		size_t len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, ": %s",
			 strerror(error < 0 ? -error : error));
	}
	/* One event, one line: never let hostile input split a log line. */
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';

	if (log_json) {
		cJSON *o = cJSON_CreateObject();
		struct timespec ts;
		char *line;

		if (!o)
			return;
		clock_gettime(CLOCK_REALTIME, &ts);
		cJSON_AddNumberToObject(o, "time", (double)ts.tv_sec + ts.tv_nsec / 1e9);
		cJSON_AddStringToObject(o, "level", level_names[level]);
		cJSON_AddStringToObject(o, "msg", msg);
		line = cJSON_PrintUnformatted(o);
		if (line)
			fprintf(stderr, "%s\n", line);
		free(line);
		cJSON_Delete(o);
	} else if (level == LOG_LVL_INFO) {
		fprintf(stderr, "%s: %s\n", log_ident, msg);
	} else {
		fprintf(stderr, "%s: %s: %s\n", log_ident, level_names[level], msg);
	}
	errno = saved;
}
