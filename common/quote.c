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

/* Length of the valid, printable UTF-8 sequence at s (1..4), 0 for anything to escape. */
static size_t printable_len(const unsigned char *s, size_t len)
{
	unsigned cp;
	size_t n;

	if (s[0] >= 0x20 && s[0] < 0x7f)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0; /* ASCII controls, DEL, continuation bytes, overlong leads */
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
	if ((cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0; /* surrogates, C1 controls */
	return n;
}

bool text_is_utf8(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = printable_len(u + i, len - i);

		/* Controls are valid UTF-8 (JSON escapes them); C1 ones too (2 bytes). */
		if (n == 0 && u[i] < 0x80)
			n = 1;
		else if (n == 0 && u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 &&
			 u[i + 1] <= 0x9f)
			n = 2;
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

static bool needs_quotes_byte(unsigned char c)
{
	return c == ' ' || c == '"' || c == '\'' || c == '\\';
}

bool text_needs_quotes(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	if (len == 0)
		return true;
	for (size_t i = 0; i < len;) {
		size_t n = printable_len(u + i, len - i);

		if (n == 0 || (n == 1 && needs_quotes_byte(u[i])))
			return true;
		i += n;
	}
	return false;
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
