/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shell globs for selectors. Not fnmatch(3): glibc's backtracks on every '*', so a
 * pattern like "*a*a*a*a*a*a*a*b" takes time exponential in its stars, on every device
 * of every scan. The loop below keeps only the last '*' to retry from, which is
 * exact for '*', '?' and one-character brackets, in O(len(pattern) x len(name)).
 */
#include <ctype.h>
#include <string.h>

#include "config-internal.h"

/* Length of the bracket expression starting at p[0] == '[', 0 when it is unterminated.
 * A ']' right after "[" or "[!" is a member, as in POSIX. */
static size_t bracket_len(const char *p)
{
	size_t i = 1;

	if (p[i] == '!' || p[i] == '^')
		i++;
	if (p[i] == ']')
		i++;
	for (; p[i]; i++)
		if (p[i] == ']')
			return i + 1;
	return 0;
}

static bool in_range(char c, char lo, char hi, bool fold)
{
	unsigned char u = (unsigned char)c;

	if (lo <= c && c <= hi)
		return true;
	if (!fold)
		return false;
	return (lo <= tolower(u) && tolower(u) <= hi) || (lo <= toupper(u) && toupper(u) <= hi);
}

static bool bracket_match(const char *p, size_t len, char c, bool fold)
{
	size_t i = 1, end = len - 1;
	bool neg = false, hit = false;

	if (p[i] == '!' || p[i] == '^') {
		neg = true;
		i++;
	}
	while (i < end) {
		char lo = p[i], hi = p[i];

		/* "a-z" is a range; a '-' first or last is a member. */
		if (i + 2 < end && p[i + 1] == '-') {
			hi = p[i + 2];
			i += 3;
		} else {
			i++;
		}
		hit = hit || in_range(c, lo, hi, fold);
	}
	return hit != neg;
}

/* Pattern characters that one character c matches at p, 0 when it does not. */
static size_t match_one(const char *p, char c, bool fold)
{
	size_t n;

	switch (p[0]) {
	case '\0':
		return 0;
	case '?':
		return 1;
	case '[':
		n = bracket_len(p);
		if (n)
			return bracket_match(p, n, c, fold) ? n : 0;
		break;
	case '\\':
		if (p[1])
			return in_range(c, p[1], p[1], fold) ? 2 : 0;
		break;
	}
	return in_range(c, p[0], p[0], fold) ? 1 : 0;
}

bool cfg_glob_match(const char *pattern, const char *s, bool fold)
{
	const char *p = pattern, *star_p = NULL, *star_s = NULL;

	while (*s) {
		size_t n;

		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p;
			star_s = s;
			continue;
		}
		n = match_one(p, *s, fold);
		if (n) {
			p += n;
			s++;
		} else if (star_p) {
			/* Let the last '*' swallow one more character and retry. */
			p = star_p;
			s = ++star_s;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

const char *cfg_glob_problem(const char *pattern)
{
	for (const char *p = pattern; *p; p++) {
		if (*p == '\\') {
			if (!p[1])
				return "ends in a lone '\\'";
			p++;
		} else if (*p == '[') {
			size_t n = bracket_len(p);

			if (!n)
				return "has a '[' without its ']'";
			p += n - 1;
		}
	}
	return NULL;
}
