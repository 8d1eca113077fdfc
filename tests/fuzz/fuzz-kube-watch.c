/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A watch stream: byte 0 sets the read size (1..256), byte 1 the longest line (1..1021);
 * the rest is fed to kube_lines in reads of that size, and each line goes through
 * kube_event_parse() as the client does. The contract: lines hold no newline, are never
 * empty and never longer than the limit, each input byte comes out at most once; a line
 * over the limit stops the stream (-E2BIG) and only then; events have a known type and an
 * object.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "kube-internal.h"

static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

static void check_line(const char *line, size_t len, size_t max)
{
	cJSON *root = (cJSON *)&root;
	const cJSON *obj = NULL;
	const char *type = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	bool known = false;

	fuzz_assert(len > 0 && len <= max);
	fuzz_assert(!memchr(line, '\n', len));
	if (kube_event_parse(line, len, &root, &type, &obj, &err) < 0) {
		fuzz_assert(root == (cJSON *)&root && err && !strchr(err->msg, '\n'));
		return;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(*types); i++)
		known = known || !strcmp(type, types[i]);
	fuzz_assert(known && cJSON_IsObject(obj));
	cJSON_Delete(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_lines l;
	size_t chunk, max, out = 0, longest = 0, cur = 0;
	const char *line, *rest;
	size_t len;
	int r = 0;

	if (size < 2)
		return 0;
	chunk = (size_t)data[0] + 1;
	max = (size_t)data[1] * 4 + 1;
	data += 2;
	size -= 2;
	/* The longest line of the input (without "\n" and one "\r" before it) and whether the
	 * stream must fail: the splitter refuses exactly those over max. */
	for (size_t i = 0; i < size; i++) {
		if (data[i] == '\n') {
			size_t n = cur && data[i - 1] == '\r' ? cur - 1 : cur;

			longest = n > longest ? n : longest;
			cur = 0;
		} else {
			cur++;
		}
	}
	kube_lines_init(&l, max);
	for (size_t off = 0; off < size && r == 0; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		r = kube_lines_feed(&l, (const char *)data + off, n);
		fuzz_assert(r == 0 || r == -E2BIG || r == -ENOMEM);
		while (r == 0 && kube_lines_next(&l, &line, &len) == 1) {
			check_line(line, len, max);
			out += len + 1;
		}
	}
	fuzz_assert(out <= size);
	if (r == 0) {
		fuzz_assert(longest <= max);
		fuzz_assert(kube_lines_pending(&l, &rest) <= max + 1);
	}
	if (r == -E2BIG)
		fuzz_assert(longest > max || cur > max + 1);
	kube_lines_done(&l);
	return 0;
}
