/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal TAP producer for the cdi tests: ok() prints one "ok N - ..." line per
 * check, tap_done() prints the plan and gives the exit status.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int tap_count, tap_failures;

static inline void _printf_(4, 5)
    tap_ok(bool pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	char desc[1024];

	tap_count++;
	va_start(ap, fmt);
	vsnprintf(desc, sizeof(desc), fmt, ap);
	va_end(ap);
	printf("%s %d - ", pass ? "ok" : "not ok", tap_count);
	/* One line per result, and no '#' that TAP could read as a directive. */
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
		printf("# failed at %s:%d\n", file, line);
	}
	fflush(stdout);
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}
