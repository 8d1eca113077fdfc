/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/log.c and common/quote.c as an operator and a log collector see them: the exact
 * text and JSON lines on stderr, timestamps, structured fields, the errno text once, and
 * hostile text that can neither split a line nor reach the terminal raw.
 */
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "../tap.h"

static int capture_fd = -1, saved_stderr = -1;

/* Runs the logging in f with stderr going to a memfd; returns what was written. */
static char *captured(void (*f)(void))
{
	static char buf[16384];
	ssize_t n;

	fflush(stderr);
	capture_fd = memfd_create("log", MFD_CLOEXEC);
	saved_stderr = dup(STDERR_FILENO);
	dup2(capture_fd, STDERR_FILENO);
	f();
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	n = pread(capture_fd, buf, sizeof(buf) - 1, 0);
	close(capture_fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void plain_lines(void)
{
	log_info("hello %d", 42);
	log_warning("careful");
	log_debug("not shown at info");
}

static void fields_line(void)
{
	log_struct(LOG_LVL_WARNING,
		   LOG_FIELDS("device", "mlx5_3", "pci", NULL, "reason", "port 1 DOWN", "resource",
			      "rdma.example/hca", "eq", "a=b"),
		   "health changed");
}

static void errno_lines(void)
{
	char err[128];

	/* The bridge's pattern: a library's reason that already ends in the errno text. */
	snprintf(err, sizeof(err), "/etc/cdi/x.json: %s", strerror(ENOSPC));
	log_error_errno(-ENOSPC, "writing the CDI spec failed: %s", err);
	log_error_errno(-ENOSPC, "writing");
}

static void hostile_line(void)
{
	log_error("file %s", "a\nrdma.example/hca=evil\x1b[31m\r\xc2\x9b"
			     "2J\xff");
	log_struct(LOG_LVL_INFO, LOG_FIELDS("name", "x\ny\x1b"), "f");
}

static void long_line(void)
{
	char big[5000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_info("%s", big);
}

static void json_lines(void)
{
	log_struct(LOG_LVL_WARNING,
		   LOG_FIELDS("device", "mlx5_3", "pci", NULL, "reason", "port 1 DOWN", "msg",
			      "mine", "bad", "\xff\xfe"),
		   "health changed");
	log_error_errno(-EACCES, "opening");
}

/* "2026-12-01T20:23:56.123Z": the format, and within a minute of now. */
static bool is_recent_rfc3339(const char *s)
{
	struct tm tm = {};
	const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	time_t t;

	if (!end || end[0] != '.' || !strchr("0123456789", end[1]) ||
	    !strchr("0123456789", end[2]) || !strchr("0123456789", end[3]) || end[4] != 'Z')
		return false;
	t = timegm(&tm);
	return llabs((long long)(t - time(NULL))) < 60;
}

static void test_text(void)
{
	char *out;

	log_set_json(false);
	log_set_timestamps(false);
	out = captured(plain_lines);
	EQ_STR(out, "test: hello 42\ntest: warning: careful\n", "text lines, debug filtered out");

	log_set_timestamps(true);
	out = captured(plain_lines);
	ok(is_recent_rfc3339(out), "text line starts with an RFC 3339 UTC time in ms: %.30s", out);
	ok(strstr(out, "Z test: hello 42\n") != NULL, "then the ident and the message");
	ok(count(out, "\n") == 2, "one line per event");
	log_set_timestamps(false);

	out = captured(fields_line);
	EQ_STR(out,
	       "test: warning: health changed device=mlx5_3 reason=\"port 1 DOWN\" "
	       "resource=rdma.example/hca eq=\"a=b\"\n",
	       "fields as key=value, quoted when needed, NULL left out");
}

static void test_errno_once(void)
{
	char *out;

	log_set_json(false);
	out = captured(errno_lines);
	EQ_INT(count(out, strerror(ENOSPC)), 2, "errno text once per line (2 lines)");
	ok(strstr(out, "test: error: writing: No space left on device\n") != NULL,
	   "errno appended when the message lacks it");
}

static void test_hostile(void)
{
	char *out;

	log_set_json(false);
	out = captured(hostile_line);
	EQ_INT(count(out, "\n"), 2, "hostile text stays on one line per event");
	ok(!strchr(out, '\x1b') && !strchr(out, '\r') && !strstr(out, "\xc2\x9b") &&
	       !strchr(out, '\xff'),
	   "no ESC, CR, C1 CSI or invalid UTF-8 byte reaches stderr");
	ok(strstr(out, "a\\nrdma.example/hca=evil\\x1b[31m\\r\\xc2\\x9b2J\\xff") != NULL,
	   "escaped visibly: %s", out);
	ok(strstr(out, "name=\"x\\ny\\x1b\"") != NULL, "field values escaped and quoted");

	out = captured(long_line);
	ok(strlen(out) < 2100 && strstr(out, "aaa...\n") != NULL, "a cut message ends in ...");
}

static void test_json(void)
{
	char *out, *nl;
	cJSON *a, *b;

	log_set_json(true);
	out = captured(json_lines);
	log_set_json(false);
	nl = strchr(out, '\n');
	if (!ok(nl && count(out, "\n") == 2, "two JSON lines"))
		return;
	*nl = '\0';
	a = cJSON_Parse(out);
	b = cJSON_Parse(nl + 1);
	if (!ok(a && b, "each line is valid JSON (invalid UTF-8 escaped first)")) {
		printf("#   %s\n#   %s\n", out, nl + 1);
		goto out;
	}
	ok(cJSON_IsString(cJSON_GetObjectItem(a, "ts")) &&
	       is_recent_rfc3339(cJSON_GetObjectItem(a, "ts")->valuestring),
	   "\"ts\" is an RFC 3339 time");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "level")), "warning", "level");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "ident")), "test", "ident");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "msg")), "health changed", "msg");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "device")), "mlx5_3", "device");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "reason")), "port 1 DOWN", "reason");
	ok(!cJSON_GetObjectItem(a, "pci"), "a NULL field is left out");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "_msg")), "mine",
	       "a reserved key is renamed, not shadowing ours");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(a, "bad")), "\\xff\\xfe",
	       "invalid UTF-8 escaped");
	ok(!cJSON_GetObjectItem(a, "errno"), "no errno without an error");
	EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(b, "errno")), EACCES, "errno number");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItem(b, "msg")), "opening: Permission denied",
	       "errno text in msg");
out:
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static int errno_after;

static void errno_kept(void)
{
	errno = EXDEV;
	log_error_errno(-ENOSPC, "x");
	log_struct(LOG_LVL_INFO, LOG_FIELDS("a", "b"), "y");
	errno_after = errno;
}

static void test_quote(void)
{
	char buf[8];
	char *q;
	size_t n;

#define QUOTE(in, want)                                                                            \
	do {                                                                                       \
		q = quote_untrusted(in);                                                           \
		EQ_STR(q, want, "quote_untrusted(" #in ")");                                       \
		free(q);                                                                           \
	} while (0)
	QUOTE("rdma.example-hca.json", "rdma.example-hca.json");
	QUOTE("a b.json", "\"a b.json\"");
	QUOTE("x\nrdma.example/hca=evil.json", "\"x\\nrdma.example/hca=evil.json\"");
	QUOTE("q\"b\\s", "\"q\\\"b\\\\s\"");
	QUOTE("\x1b]0;pwned\x07", "\"\\x1b]0;pwned\\x07\"");
	QUOTE("\xc2\x9b"
	      "2J",
	      "\"\\xc2\\x9b2J\"");
	QUOTE("caf\xc3\xa9", "caf\xc3\xa9");
	QUOTE("\xed\xa0\x80", "\"\\xed\\xa0\\x80\""); /* a UTF-16 surrogate */
	QUOTE("\xc0\xaf", "\"\\xc0\\xaf\"");	      /* overlong '/' */
	QUOTE("", "\"\"");
	QUOTE(NULL, "(null)");
#undef QUOTE

	n = text_escape(buf, sizeof(buf), "ab\xc3\xa9\xc3\xa9\xc3\xa9", 8, false);
	EQ_INT(n, 8, "text_escape returns the whole length");
	EQ_STR(buf, "ab\xc3\xa9\xc3\xa9", "a truncated escape never cuts a UTF-8 sequence");
	n = text_escape(buf, sizeof(buf), "\n\n\n\n", 4, false);
	EQ_INT(n, 8, "escapes counted");
	EQ_STR(buf, "\\n\\n\\n", "truncated between escapes, NUL-terminated");
	ok(text_is_utf8("a\nb\xc3\xa9", 5) && !text_is_utf8("\xff", 1), "text_is_utf8");

	captured(errno_kept);
	EQ_INT(errno_after, EXDEV, "logging preserves errno");
}

int main(void)
{
	log_set_ident("test");
	log_set_level(LOG_LVL_INFO);
	test_text();
	test_errno_once();
	test_hostile();
	test_json();
	test_quote();
	return tap_done();
}
