/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TAP producer every C test uses: ok() prints "ok N - what" or "not ok N - what"
 * plus where it failed; tap_done() prints the plan and gives the exit status. meson
 * reads the stream (protocol: 'tap').
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static unsigned tap_count, tap_failures;

static inline bool tap_ok(bool pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline bool tap_ok(bool pass, const char *file, int line, const char *fmt, ...)
{
	char desc[1024];
	va_list ap;

	tap_count++;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	printf("%s %u - ", pass ? "ok" : "not ok", tap_count);
	/* Descriptions quote hostile inputs: keep one line per result and no '#' that TAP
	 * would read as a directive. */
	for (const char *p = desc; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '\n')
			fputs("\\n", stdout);
		else if (c < 0x20 || c == 0x7f || c == '#')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	printf("\n");
	if (!pass) {
		tap_failures++;
		printf("#   at %s:%d\n", file, line);
	}
	fflush(stdout);
	return pass;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define EQ_INT(got, want, what)                                                                    \
	do {                                                                                       \
		long long _g = (long long)(got), _w = (long long)(want);                           \
		if (!ok(_g == _w, "%s == %lld", (what), _w))                                       \
			printf("#   got %lld\n", _g);                                              \
	} while (0)

#define EQ_STR(got, want, what)                                                                    \
	do {                                                                                       \
		const char *_g = (got), *_w = (want);                                              \
		if (!ok(_g && _w && !strcmp(_g, _w), "%s == '%s'", (what), _w ? _w : "(null)"))    \
			printf("#   got '%s'\n", _g ? _g : "(null)");                              \
	} while (0)

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	if (tap_failures)
		printf("# %u of %u checks failed\n", tap_failures, tap_count);
	return tap_failures ? 1 : 0;
}
