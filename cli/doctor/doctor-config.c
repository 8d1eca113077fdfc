/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A TOML subset and systemd unit settings, enough for `rdma-cdi doctor` to read
 * containerd's, CRI-O's and systemd's view of CDI and RLIMIT_MEMLOCK.
 *
 * The TOML parser walks the whole document, so a syntax error anywhere is reported with
 * line:column as the runtime itself would refuse the file, and hands every key whose
 * value is a bool, an integer, a string or an array of strings to a callback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "doctor-internal.h"
#include "rc-error.h"

/*
 * The parser walks the whole document (so a syntax error anywhere is reported with
 * file:line:column, as the runtime itself would refuse the file) and hands every key
 * whose value is a bool, an integer, a string or an array of strings to a callback,
 * with its full path: table and key components joined by '\n' (no key can hold one).
 */
struct toml {
	const char *buf;
	size_t len, pos;
	int line;
	size_t line_start;
	char path[1024]; /* current table */
	struct rc_error **err;
	void (*cb)(void *ud, const char *key, const struct doctor_toml_value *v);
	void *ud;
};

static int toml_fail(struct toml *t, const char *msg)
{
	return rc_error_set(t->err, -EBADMSG, "%d:%zu: %s", t->line, t->pos - t->line_start + 1,
			    msg);
}

static int peek(const struct toml *t)
{
	return t->pos < t->len ? (unsigned char)t->buf[t->pos] : -1;
}

static bool starts(const struct toml *t, const char *s)
{
	size_t n = strlen(s);

	return t->len - t->pos >= n && memcmp(t->buf + t->pos, s, n) == 0;
}

static void newline(struct toml *t)
{
	t->pos++;
	t->line++;
	t->line_start = t->pos;
}

static void skip_ws(struct toml *t)
{
	while (peek(t) == ' ' || peek(t) == '\t')
		t->pos++;
}

static void skip_comment(struct toml *t)
{
	if (peek(t) == '#')
		while (peek(t) >= 0 && peek(t) != '\n')
			t->pos++;
}

/* Whitespace, newlines and comments: inside arrays and inline tables. */
static void skip_all(struct toml *t)
{
	for (;;) {
		skip_ws(t);
		skip_comment(t);
		if (peek(t) == '\r')
			t->pos++;
		else if (peek(t) == '\n')
			newline(t);
		else
			return;
	}
}

/* A "basic" or 'literal' one-line string into out (escapes \" \\ \t \n \/ kept simple). */
static int parse_string(struct toml *t, char *out, size_t size)
{
	int q = peek(t);
	size_t n = 0;

	t->pos++;
	for (;;) {
		int c = peek(t);

		if (c < 0 || c == '\n')
			return toml_fail(t, "unterminated string");
		t->pos++;
		if (c == q)
			break;
		if (c == '\\' && q == '"') {
			size_t backslash = t->pos - 1;

			c = peek(t);
			t->pos++;
			switch (c) {
			case '"':
			case '\\':
			case '/':
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			default:
				t->pos = backslash;
				return toml_fail(t, "unsupported escape sequence in a string");
			}
		}
		if (c == 0)
			return toml_fail(t, "NUL in a string");
		if (n + 1 >= size)
			return toml_fail(t, "string too long");
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

static bool is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A dotted key, appended to path (components separated by '\n'). */
static int parse_key(struct toml *t, char *path, size_t size)
{
	for (;;) {
		char comp[256];
		size_t n = 0, used = strlen(path);
		int r;

		skip_ws(t);
		if (peek(t) == '"' || peek(t) == '\'') {
			r = parse_string(t, comp, sizeof(comp));
			if (r < 0)
				return r;
			if (strchr(comp, '\n'))
				return toml_fail(t, "newline in a key");
		} else {
			while (is_bare(peek(t)) && n + 1 < sizeof(comp))
				comp[n++] = t->buf[t->pos++];
			comp[n] = '\0';
			if (n == 0)
				return toml_fail(t, "expected a key");
		}
		if (used + strlen(comp) + 2 > size)
			return toml_fail(t, "key too long");
		snprintf(path + used, size - used, "%s%s", used ? "\n" : "", comp);
		skip_ws(t);
		if (peek(t) != '.')
			return 0;
		t->pos++;
	}
}

static int skip_multiline(struct toml *t, const char *delim)
{
	t->pos += 3;
	while (!starts(t, delim)) {
		if (peek(t) < 0)
			return toml_fail(t, "unterminated multi-line string");
		if (peek(t) == '\n')
			newline(t);
		else
			t->pos++;
	}
	t->pos += 3;
	return 0;
}

static int parse_value(struct toml *t, struct doctor_toml_value *v, int depth);

/* "key = value": the key appended to key[], the value into *v. */
static int parse_key_value(struct toml *t, char *key, size_t size, struct doctor_toml_value *v,
			   int depth)
{
	int r = parse_key(t, key, size);

	if (r < 0)
		return r;
	if (peek(t) != '=')
		return toml_fail(t, "expected '=' after a key");
	t->pos++;
	skip_ws(t);
	return parse_value(t, v, depth);
}

/* After an element of an array or inline table: 1 past a ',', 0 past close, -1 (nothing
 * consumed) on anything else. */
static int next_or_close(struct toml *t, char close)
{
	int c = peek(t);

	if (c != ',' && c != close)
		return -1;
	t->pos++;
	return c == ',';
}

static int parse_array(struct toml *t, struct doctor_toml_value *v, int depth)
{
	bool all_strings = true;
	cJSON *strs = cJSON_CreateArray();

	if (!strs)
		return -ENOMEM;
	t->pos++;
	for (;;) {
		struct doctor_toml_value e = {};
		int r;

		skip_all(t);
		if (peek(t) == ']') {
			t->pos++;
			break;
		}
		r = parse_value(t, &e, depth + 1);
		if (r < 0) {
			cJSON_Delete(strs);
			return r;
		}
		if (e.type == DOCTOR_TOML_STRING)
			cJSON_AddItemToArray(strs, cJSON_CreateString(e.s));
		else
			all_strings = false;
		free(e.s);
		cJSON_Delete(e.strs);
		skip_all(t);
		r = next_or_close(t, ']');
		if (r > 0)
			continue;
		if (r == 0)
			break;
		cJSON_Delete(strs);
		return toml_fail(t, "expected ',' or ']' in an array");
	}
	if (all_strings) {
		v->type = DOCTOR_TOML_STRINGS;
		v->strs = strs;
	} else {
		v->type = DOCTOR_TOML_OTHER;
		cJSON_Delete(strs);
	}
	return 0;
}

static int parse_inline_table(struct toml *t, int depth)
{
	t->pos++;
	skip_ws(t);
	if (peek(t) == '}') {
		t->pos++;
		return 0;
	}
	for (;;) {
		char key[1024] = "";
		struct doctor_toml_value e = {};
		int r = parse_key_value(t, key, sizeof(key), &e, depth + 1);

		free(e.s);
		cJSON_Delete(e.strs);
		if (r < 0)
			return r;
		skip_ws(t);
		r = next_or_close(t, '}');
		if (r > 0)
			continue;
		if (r == 0)
			return 0;
		return toml_fail(t, "expected ',' or '}' in an inline table");
	}
}

static int parse_value(struct toml *t, struct doctor_toml_value *v, int depth)
{
	char buf[4096];
	size_t n = 0;
	int c = peek(t), r;

	v->line = t->line;
	v->col = (int)(t->pos - t->line_start + 1);
	if (depth > 32)
		return toml_fail(t, "nesting deeper than 32");
	if (starts(t, "\"\"\"") || starts(t, "'''")) {
		v->type = DOCTOR_TOML_OTHER;
		return skip_multiline(t, c == '"' ? "\"\"\"" : "'''");
	}
	if (c == '"' || c == '\'') {
		r = parse_string(t, buf, sizeof(buf));
		if (r < 0)
			return r;
		v->type = DOCTOR_TOML_STRING;
		v->s = strdup(buf);
		return v->s ? 0 : -ENOMEM;
	}
	if (c == '[')
		return parse_array(t, v, depth);
	if (c == '{') {
		v->type = DOCTOR_TOML_OTHER;
		return parse_inline_table(t, depth);
	}
	/* true, false, numbers, dates: one bare token. */
	while (n + 1 < sizeof(buf) &&
	       (is_bare(peek(t)) || peek(t) == '.' || peek(t) == '+' || peek(t) == ':' ||
		(peek(t) == ' ' && n == 10 && buf[4] == '-')))
		buf[n++] = t->buf[t->pos++];
	buf[n] = '\0';
	if (n == 0)
		return toml_fail(t, "expected a value");
	if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
		v->type = DOCTOR_TOML_BOOL;
		v->b = buf[0] == 't';
	} else if (parse_int64(buf, &v->i) >= 0) {
		v->type = DOCTOR_TOML_INT;
	} else {
		v->type = DOCTOR_TOML_OTHER;
	}
	return 0;
}

static int parse_table_header(struct toml *t)
{
	bool array = starts(t, "[[");

	t->pos += array ? 2 : 1;
	t->path[0] = '\0';
	if (parse_key(t, t->path, sizeof(t->path)) < 0)
		return -EBADMSG;
	if (!starts(t, array ? "]]" : "]"))
		return toml_fail(t, "expected ']' after a table name");
	t->pos += array ? 2 : 1;
	return 0;
}

static int toml_parse(struct toml *t)
{
	t->line = 1;
	while (t->pos < t->len) {
		int r;

		skip_ws(t);
		if (peek(t) == '[') {
			r = parse_table_header(t);
		} else if (peek(t) == '#' || peek(t) == '\n' || peek(t) == '\r' || peek(t) < 0) {
			r = 0;
		} else {
			char key[2048];
			struct doctor_toml_value v = {};

			snprintf(key, sizeof(key), "%s", t->path);
			r = parse_key_value(t, key, sizeof(key), &v, 0);
			if (r >= 0 && t->cb)
				t->cb(t->ud, key, &v);
			free(v.s);
			cJSON_Delete(v.strs);
		}
		if (r < 0)
			return r;
		skip_ws(t);
		skip_comment(t);
		if (peek(t) == '\r')
			t->pos++;
		if (peek(t) == '\n')
			newline(t);
		else if (peek(t) >= 0)
			return toml_fail(t, "expected the end of the line");
	}
	return 0;
}

int doctor_toml_parse(const char *buf, size_t len,
		      void (*cb)(void *ud, const char *key, const struct doctor_toml_value *v),
		      void *ud, struct rc_error **err)
{
	struct toml t = {.buf = buf, .len = len, .cb = cb, .ud = ud, .err = err};
	int r;

	if (memchr(buf, '\0', len))
		return rc_error_set(err, -EBADMSG, "contains a NUL byte, not a TOML file");
	r = toml_parse(&t);
	/* Syntax errors set err where they are found; allocations fail silently. */
	if (r == -ENOMEM)
		rc_error_set(err, r, "out of memory");
	return r;
}

/* systemd's rlimit syntax: "infinity", or bytes with a 1024-based K/M/G/T/P/E suffix;
 * "SOFT:HARD" sets both. */
int doctor_systemd_limit_parse(const char *s, rlim_t *ret_soft, rlim_t *ret_hard)
{
	char part[64];
	rlim_t v[2];
	const char *colon = strchr(s, ':');

	for (int i = 0; i < 2; i++) {
		const char *start = i == 0 ? s : colon + 1;
		size_t n = i == 0 && colon ? (size_t)(colon - s) : strlen(start);
		unsigned long long x = 0, mult = 1;
		size_t k = 0;

		if (n == 0 || n >= sizeof(part))
			return -EINVAL;
		memcpy(part, start, n);
		part[n] = '\0';
		if (strcmp(part, "infinity") == 0) {
			v[i] = RLIM_INFINITY;
		} else {
			for (; part[k] >= '0' && part[k] <= '9'; k++) {
				if (x > (~0ULL - 9) / 10)
					return -ERANGE;
				x = x * 10 + (unsigned)(part[k] - '0');
			}
			if (k == 0)
				return -EINVAL;
			if (part[k]) {
				const char *suf = strchr("KMGTPE", part[k]);

				if (!suf || part[k + 1])
					return -EINVAL;
				mult = 1ULL << (10 * (1 + (suf - "KMGTPE")));
			}
			if (x > ~0ULL / mult)
				return -ERANGE;
			v[i] = (rlim_t)(x * mult);
		}
		if (!colon) {
			v[1] = v[0];
			break;
		}
	}
	*ret_soft = v[0];
	*ret_hard = v[1];
	return 0;
}

/* One logical line of a unit file: continuation lines joined, whitespace trimmed. */
static size_t unit_line(const char *buf, size_t len, size_t pos, char *out, size_t size, int *lines,
			bool *too_long)
{
	size_t n = 0;

	*lines = 0;
	*too_long = false;
	while (pos < len) {
		size_t end = pos;

		while (end < len && buf[end] != '\n')
			end++;
		(*lines)++;
		for (size_t i = pos; i < end; i++) {
			if (n + 1 < size)
				out[n++] = buf[i];
			else
				*too_long = true;
		}
		pos = end < len ? end + 1 : end;
		while (n > 0 && (out[n - 1] == '\r' || out[n - 1] == ' ' || out[n - 1] == '\t'))
			n--;
		if (n == 0 || out[n - 1] != '\\')
			break;
		out[n - 1] = ' ';
	}
	out[n] = '\0';
	return pos;
}

int doctor_unit_setting(const char *buf, size_t len, const char *section, const char *key,
			char *value, size_t size, int *ret_line)
{
	char line[4096], hdr[256];
	size_t pos = 0, klen = strlen(key);
	int lineno = 1, found_line = 0;
	bool in = false, found_too_long = false;

	if (memchr(buf, '\0', len))
		return -EBADMSG;
	snprintf(hdr, sizeof(hdr), "[%s]", section);
	while (pos < len) {
		int consumed;
		bool too_long;
		const char *p = line, *v;

		pos = unit_line(buf, len, pos, line, sizeof(line), &consumed, &too_long);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '[')
			in = strcmp(p, hdr) == 0;
		else if (in && *p != '#' && *p != ';' && strncmp(p, key, klen) == 0) {
			v = p + klen;
			while (*v == ' ' || *v == '\t')
				v++;
			if (*v == '=') {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				found_too_long = too_long || strlen(v) >= size;
				if (!found_too_long)
					memcpy(value, v, strlen(v) + 1);
				found_line = lineno;
			}
		}
		lineno += consumed;
	}
	if (!found_line)
		return 0;
	if (found_too_long)
		return -ENAMETOOLONG;
	*ret_line = found_line;
	return 1;
}
