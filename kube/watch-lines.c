/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watch stream: newline-delimited JSON events ({"type": ..., "object": ...}, one per
 * line), split and parsed with bounds (a line longer than the limit ends the stream).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kube-internal.h"

void kube_lines_init(struct kube_lines *l, size_t max)
{
	*l = (struct kube_lines){.max = max};
}

void kube_lines_done(struct kube_lines *l)
{
	free(l->buf);
	*l = (struct kube_lines){.max = l->max};
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t n)
{
	const char *p = data, *e = data + n;

	/* Every line is bounded as it arrives, before it is buffered. */
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t seg = (size_t)((nl ? nl : e) - p);

		l->cur += seg;
		if (nl) {
			bool cr = l->cur > 0 && (seg ? nl[-1] == '\r' : l->last_cr);

			if (l->cur - (cr ? 1 : 0) > l->max)
				return -E2BIG;
			l->cur = 0;
			l->last_cr = false;
			p = nl + 1;
		} else {
			if (l->cur > l->max + 1) /* + 1: a "\r" may follow */
				return -E2BIG;
			l->last_cr = seg && e[-1] == '\r';
			p = e;
		}
	}
	if (l->start > 0 && l->start == l->len) {
		l->start = l->len = 0;
	} else if (l->start > 0 && l->len + n > l->cap) {
		memmove(l->buf, l->buf + l->start, l->len - l->start);
		l->len -= l->start;
		l->start = 0;
	}
	if (l->len + n > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;
		char *b;

		while (cap < l->len + n)
			cap *= 2;
		b = realloc(l->buf, cap);
		if (!b)
			return -ENOMEM;
		l->buf = b;
		l->cap = cap;
	}
	memcpy(l->buf + l->len, data, n);
	l->len += n;
	return 0;
}

int kube_lines_next(struct kube_lines *l, const char **ret_line, size_t *ret_len)
{
	while (l->start < l->len) {
		char *s = l->buf + l->start;
		char *nl = memchr(s, '\n', l->len - l->start);
		size_t n;

		if (!nl)
			return 0;
		n = (size_t)(nl - s);
		l->start += n + 1;
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n == 0)
			continue;
		*ret_line = s;
		*ret_len = n;
		return 1;
	}
	return 0;
}

size_t kube_lines_pending(const struct kube_lines *l, const char **ret_rest)
{
	*ret_rest = l->buf ? l->buf + l->start : "";
	return l->len - l->start;
}

int kube_event_parse(const char *line, size_t len, cJSON **ret_root, const char **ret_type,
		     const cJSON **ret_object, struct rc_error **err)
{
	static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
	cJSON *root = cJSON_ParseWithLength(line, len);
	const cJSON *type, *obj;

	if (!root)
		return rc_error_set(err, -EBADMSG, "an event that is not JSON");
	type = cJSON_GetObjectItemCaseSensitive(root, "type");
	obj = cJSON_GetObjectItemCaseSensitive(root, "object");
	if (!cJSON_IsObject(root) || !cJSON_IsString(type) || !cJSON_IsObject(obj)) {
		cJSON_Delete(root);
		return rc_error_set(err, -EBADMSG,
				    "an event without a string \"type\" and an object \"object\"");
	}
	for (size_t i = 0; i < ELEMENTSOF(types); i++) {
		if (!strcmp(type->valuestring, types[i])) {
			*ret_root = root;
			*ret_type = types[i];
			*ret_object = obj;
			return 0;
		}
	}
	cJSON_Delete(root);
	return rc_error_set(err, -EBADMSG, "an event of unknown type");
}
