/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watch stream's line splitter and event parser, and the bearer-token check: lines
 * split across reads, CRLF, empty lines, the per-line bound at its exact edge, events
 * that are not events.
 */
#include <errno.h>
#include <string.h>

#include "kube-internal.h"
#include "tap.h"
#include "tap-error.h"

static void test_split(void)
{
	struct kube_lines l;
	const char *line, *rest;
	size_t len;

	kube_lines_init(&l, 16);
	ok(kube_lines_feed(&l, "{\"a\":1}\n{\"b\"", 12) == 0, "feed a line and a half");
	ok(kube_lines_next(&l, &line, &len) == 1 && len == 7 && !memcmp(line, "{\"a\":1}", 7),
	   "the complete line comes out without its newline");
	ok(kube_lines_next(&l, &line, &len) == 0, "the half line waits");
	ok(kube_lines_pending(&l, &rest) == 4 && !memcmp(rest, "{\"b\"", 4), "pending is the half");
	ok(kube_lines_feed(&l, ":2}\r\n\n\r\nxyz", 11) == 0, "feed the rest, CRLF, empty lines");
	ok(kube_lines_next(&l, &line, &len) == 1 && len == 7 && !memcmp(line, "{\"b\":2}", 7),
	   "a line split over two feeds is joined, CR stripped");
	ok(kube_lines_next(&l, &line, &len) == 0, "empty lines are skipped");
	ok(kube_lines_pending(&l, &rest) == 3 && !memcmp(rest, "xyz", 3), "pending after all");
	kube_lines_done(&l);

	kube_lines_init(&l, 4);
	ok(kube_lines_feed(&l, "abcd\n", 5) == 0, "a line of exactly max is accepted");
	ok(kube_lines_feed(&l, "abcd\r\n", 6) == 0, "... also with CRLF");
	ok(kube_lines_next(&l, &line, &len) == 1 && len == 4, "first");
	ok(kube_lines_next(&l, &line, &len) == 1 && len == 4 && line[3] == 'd', "second");
	ok(kube_lines_feed(&l, "abcde\n", 6) == -E2BIG, "a complete line of max+1 is refused");
	kube_lines_done(&l);

	kube_lines_init(&l, 4);
	ok(kube_lines_feed(&l, "ab", 2) == 0 && kube_lines_feed(&l, "cd", 2) == 0,
	   "a line growing to max over two feeds");
	ok(kube_lines_feed(&l, "e", 1) == 0, "max+1 in progress may still be a CR");
	ok(kube_lines_feed(&l, "f", 1) == -E2BIG, "max+2 in progress is refused");
	kube_lines_done(&l);

	kube_lines_init(&l, 4);
	ok(kube_lines_feed(&l, "abc\r", 4) == 0 && kube_lines_feed(&l, "\n", 1) == 0 &&
	       kube_lines_feed(&l, "\n", 1) == 0 && kube_lines_next(&l, &line, &len) == 1 &&
	       len == 3 && kube_lines_next(&l, &line, &len) == 0,
	   "CR and LF in separate reads, then an empty line (a stale CR is not counted)");
	kube_lines_done(&l);

	kube_lines_init(&l, 4);
	ok(kube_lines_feed(&l, "abcd", 4) == 0 && kube_lines_feed(&l, "e\n", 2) == -E2BIG,
	   "a line of max+1 ending in the next feed is refused");
	kube_lines_done(&l);

	/* Many small lines through a small buffer: the buffer is reused, nothing is lost. */
	kube_lines_init(&l, 64);
	{
		unsigned got = 0, sum = 0;
		char in[16];

		for (unsigned i = 0; i < 5000; i++) {
			int n = snprintf(in, sizeof(in), "%u\n", i);

			if (kube_lines_feed(&l, in, (size_t)n) < 0)
				break;
			while (kube_lines_next(&l, &line, &len) == 1) {
				got++;
				sum += (unsigned)strtoul(line, NULL, 10);
			}
		}
		ok(got == 5000 && sum == 4999u * 5000u / 2, "5000 lines, each once, in order");
		ok(l.cap <= 4096, "the buffer stays small (%zu)", l.cap);
	}
	kube_lines_done(&l);
}

static void test_events(void)
{
	const char *type;
	const cJSON *obj;
	cJSON *root = NULL;
	const char *good = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"s\"}}}";

	ok(kube_event_parse(good, strlen(good), &root, &type, &obj, tap_fresh()) == 0 &&
	       !strcmp(type, "MODIFIED") && cJSON_IsObject(cJSON_GetObjectItem(obj, "metadata")),
	   "an event parses");
	cJSON_Delete(root);
	ok(kube_event_parse("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\"}}",
			    strlen("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\"}}"), &root,
			    &type, &obj, tap_fresh()) == 0 &&
	       !strcmp(type, "ERROR"),
	   "an ERROR event parses (the caller reads the Status)");
	cJSON_Delete(root);
	ok(kube_event_parse("nope", strlen("nope"), &root, &type, &obj, tap_fresh()) == -EBADMSG &&
	       strstr(tap_msg(), "not JSON"),
	   "not JSON: -EBADMSG");
	ok(kube_event_parse("[1]", strlen("[1]"), &root, &type, &obj, tap_fresh()) == -EBADMSG,
	   "an array is not an event");
	ok(kube_event_parse("{\"type\":\"ADDED\"}", strlen("{\"type\":\"ADDED\"}"), &root, &type,
			    &obj, tap_fresh()) == -EBADMSG,
	   "an event without object is refused");
	ok(kube_event_parse("{\"type\":\"ADDED\",\"object\":3}",
			    strlen("{\"type\":\"ADDED\",\"object\":3}"), &root, &type, &obj,
			    tap_fresh()) == -EBADMSG,
	   "an event whose object is not an object is refused");
	ok(kube_event_parse("{\"type\":\"EXPLODED\",\"object\":{}}",
			    strlen("{\"type\":\"EXPLODED\",\"object\":{}}"), &root, &type, &obj,
			    tap_fresh()) == -EBADMSG &&
	       strstr(tap_msg(), "unknown type"),
	   "an event of unknown type is refused");
	ok(kube_event_parse("{\"type\":\"ADDED\",\"object\":{}}xx", 28, &root, &type, &obj,
			    tap_fresh()) == 0,
	   "parsing stops at the given length");
	cJSON_Delete(root);
}

static void test_tokens(void)
{
	size_t start, len;
	char big[KUBE_TOKEN_MAX + 2];

	ok(kube_token_check(" \tabc.def\n", 10, &start, &len) == 0 && start == 2 && len == 7,
	   "a token is trimmed");
	ok(kube_token_check(" \n", 2, &start, &len) == -EINVAL, "an empty token is refused");
	ok(kube_token_check("a b", 3, &start, &len) == -EINVAL, "a blank inside is refused");
	ok(kube_token_check("a\r\nb", 4, &start, &len) == -EINVAL, "CRLF inside is refused");
	ok(kube_token_check("t\xc3\xa9", 3, &start, &len) == -EINVAL, "non-ASCII is refused");
	memset(big, 'a', sizeof(big));
	ok(kube_token_check(big, KUBE_TOKEN_MAX, &start, &len) == 0, "a token of max length");
	ok(kube_token_check(big, KUBE_TOKEN_MAX + 1, &start, &len) == -EINVAL,
	   "a token over max length is refused");
}

int main(void)
{
	test_split();
	test_events();
	test_tokens();
	tap_fresh();
	return tap_done();
}
