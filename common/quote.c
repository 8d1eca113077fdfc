/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Printing text we did not write (file names, sysfs attributes, parser messages quoting
 * a file) so that it can neither forge a line nor drive the terminal: control bytes, DEL,
 * the C1 controls (U+0080..U+009F, of which U+009B is a CSI on some terminals) and bytes
 * that are not UTF-8 are escaped; valid printable UTF-8 is kept as it is.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "common.h"

/* Length of the valid UTF-8 sequence at s (1..4) with its code point in *ret_cp; 0 when
 * it is not strict UTF-8 (continuation byte first, overlong, surrogate, beyond U+10FFFF,
 * cut short). */
static size_t utf8_seq(const unsigned char *s, size_t len, unsigned *ret_cp)
{
	unsigned cp;
	size_t n;

	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0; /* continuation bytes, overlong leads */
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (len < n)
		return 0;
	cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0; /* overlong or beyond Unicode */
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0; /* surrogates */
	*ret_cp = cp;
	return n;
}

/* Length of the valid, printable UTF-8 sequence at s (1..4), 0 for anything to escape. */
static size_t printable_len(const unsigned char *s, size_t len)
{
	unsigned cp;
	size_t n = utf8_seq(s, len, &cp);

	if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
		return 0; /* not UTF-8, C0 controls, DEL, C1 controls */
	return n;
}

size_t utf8_invalid_at(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned cp;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(u + i, len - i, &cp);

		if (n == 0)
			return i;
		i += n;
	}
	return len;
}

bool text_is_utf8(const char *s, size_t len)
{
	return utf8_invalid_at(s, len) == len;
}

static bool needs_quotes_byte(unsigned char c)
{
	return c == ' ' || c == '"' || c == '\'' || c == '\\';
}

/* The length of the longest prefix of s that text_escape keeps as it is (with quoting:
 * that also needs no quotes). */
static size_t plain_prefix(const char *s, size_t len, bool quoting)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t n = printable_len(u + i, len - i);

		if (n == 0 || (quoting && n == 1 && needs_quotes_byte(u[i])))
			break;
		i += n;
	}
	return i;
}

bool text_needs_quotes(const char *s, size_t len)
{
	return len == 0 || plain_prefix(s, len, true) < len;
}

size_t text_escape(char *dst, size_t size, const char *s, size_t len, bool quote)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t out = 0;
	bool full = size == 0;

	for (size_t i = 0; i < len;) {
		size_t n = printable_len(u + i, len - i);
		char esc[4];
		const char *unit = (const char *)u + i;

		if (n == 0 || (quote && n == 1 && (u[i] == '"' || u[i] == '\\'))) {
			esc[0] = '\\';
			n = 2;
			switch (u[i]) {
			case '\n':
				esc[1] = 'n';
				break;
			case '\t':
				esc[1] = 't';
				break;
			case '\r':
				esc[1] = 'r';
				break;
			case '"':
			case '\\':
				esc[1] = (char)u[i];
				break;
			default:
				esc[1] = 'x';
				esc[2] = hex[u[i] >> 4];
				esc[3] = hex[u[i] & 0xf];
				n = 4;
			}
			unit = esc;
			i++;
		} else {
			i += n;
		}
		/* A unit (UTF-8 sequence or escape) is written whole or not at all, and
		 * nothing after one that did not fit. */
		if (!full && out + n < size)
			memcpy(dst + out, unit, n);
		else if (!full) {
			dst[out] = '\0';
			full = true;
		}
		out += n;
	}
	if (!full)
		dst[out] = '\0';
	return out;
}

char *quote_untrusted_len(const char *s, size_t len)
{
	size_t n;
	char *buf;

	if (!s)
		return strdup("(null)");
	if (!text_needs_quotes(s, len))
		return strndup(s, len);
	n = text_escape(NULL, 0, s, len, true);
	buf = malloc(n + 3);
	if (!buf)
		return NULL;
	buf[0] = '"';
	text_escape(buf + 1, n + 1, s, len, true);
	buf[n + 1] = '"';
	buf[n + 2] = '\0';
	return buf;
}

char *quote_untrusted(const char *s)
{
	return quote_untrusted_len(s, s ? strlen(s) : 0);
}

char *escape_untrusted(const char *s)
{
	size_t len = strlen(s), n = text_escape(NULL, 0, s, len, false);
	char *buf = malloc(n + 1);

	if (buf)
		text_escape(buf, n + 1, s, len, false);
	return buf;
}

struct cJSON *json_untrusted_string(const char *s)
{
	_cleanup_free_ char *buf = NULL;

	if (text_is_utf8(s, strlen(s)))
		return cJSON_CreateString(s);
	buf = escape_untrusted(s);
	return buf ? cJSON_CreateString(buf) : NULL;
}

const char *text_quote(char *buf, size_t size, const char *s, size_t len)
{
	static const size_t max_shown = 64;
	size_t cut = len, o;

	if (size < 8) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	if (!s)
		len = cut = 0;
	if (cut > max_shown) {
		cut = max_shown;
		/* Not in the middle of a UTF-8 sequence: its head would show as \xNN. */
		while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
			cut--;
	}
	buf[0] = '"';
	/* Room left for "...", the closing quote and the NUL. */
	if (text_escape(buf + 1, size - 5, s, cut, true) >= size - 5)
		cut = 0; /* cut short by size */
	o = 1 + strlen(buf + 1);
	if (cut < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

bool text_is_printable(const char *s, size_t len)
{
	return len > 0 && plain_prefix(s, len, false) == len;
}

/*
 * The escape of the character at s in esc (returns its length), or 0 to copy it as it is;
 * *ret_n: the bytes it spans. syntax: the inside of a string ('"', '\\' and C0 too), else
 * text cJSON wrote, where those are already escaped and DEL and C1 only occur in strings.
 */
static size_t json_unit(const unsigned char *s, size_t len, bool syntax, char esc[8], size_t *ret_n)
{
	unsigned c = s[0];

	*ret_n = 1;
	if (c == 0xc2 && len > 1 && s[1] >= 0x80 && s[1] <= 0x9f) {
		*ret_n = 2;
		c = s[1];
	} else if (c != 0x7f && !(syntax && (c < 0x20 || c == '"' || c == '\\'))) {
		return 0;
	}
	esc[0] = '\\';
	switch (c) {
	case '"':
	case '\\':
		esc[1] = (char)c;
		return 2;
	case '\n':
		esc[1] = 'n';
		return 2;
	case '\t':
		esc[1] = 't';
		return 2;
	case '\r':
		esc[1] = 'r';
		return 2;
	default:
		return (size_t)snprintf(esc, 8, "\\u%04x", c);
	}
}

/* json_escape's loop; text_escape's contract for dst and size. */
static size_t json_escape_mode(char *dst, size_t size, const char *s, size_t len, bool syntax)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t out = 0, i = 0;
	bool full = size == 0;

	while (i < len) {
		size_t run = 0, n, in;
		char esc[8];

		/* Copy runs that need no escaping in one go. */
		while (i + run < len &&
		       json_unit(u + i + run, len - i - run, syntax, esc, &in) == 0)
			run++;
		if (run && !full && out + run < size)
			memcpy(dst + out, s + i, run);
		else if (run && !full)
			full = true, dst[out] = '\0';
		out += run;
		i += run;
		if (i == len)
			break;
		n = json_unit(u + i, len - i, syntax, esc, &in);
		if (!full && out + n < size)
			memcpy(dst + out, esc, n);
		else if (!full)
			full = true, dst[out] = '\0';
		out += n;
		i += in;
	}
	if (!full)
		dst[out] = '\0';
	return out;
}

size_t json_escape(char *dst, size_t size, const char *s, size_t len)
{
	return json_escape_mode(dst, size, s, len, true);
}

char *json_print(const struct cJSON *j)
{
	_cleanup_free_ char *raw = j ? cJSON_Print(j) : NULL;
	size_t len, n;
	char *out;

	if (!raw)
		return NULL;
	len = strlen(raw);
	n = json_escape_mode(NULL, 0, raw, len, false);
	if (n == len)
		return TAKE_PTR(raw);
	out = malloc(n + 1);
	if (out)
		json_escape_mode(out, n + 1, raw, len, false);
	return out;
}

void text_position(const char *buf, size_t len, size_t off, unsigned *ret_line,
		   unsigned *ret_column)
{
	unsigned line = 1, col = 1;

	for (size_t i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	*ret_line = line;
	*ret_column = col;
}
