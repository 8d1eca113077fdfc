/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tiny TAP producer and fixture helpers for the discovery tests. Each check prints
 * "ok N - what" or "not ok N - what" plus a diagnostic; the plan goes last.
 */
#pragma once

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned tap_n, tap_failed;

static bool tap_ok(bool cond, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool tap_ok(bool cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", cond ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		printf("#   at %s:%d\n", file, line);
		tap_failed++;
	}
	fflush(stdout);
	return cond;
}

#define OK(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define EQ_INT(got, want, what)                                                                    \
	do {                                                                                       \
		long long _g = (long long)(got), _w = (long long)(want);                           \
		if (!OK(_g == _w, "%s == %lld", (what), _w))                                       \
			printf("#   got %lld\n", _g);                                              \
	} while (0)

#define EQ_STR(got, want, what)                                                                    \
	do {                                                                                       \
		const char *_g = (got), *_w = (want);                                              \
		if (!OK(_g && _w && !strcmp(_g, _w), "%s == '%s'", (what), _w ? _w : "(null)"))    \
			printf("#   got '%s'\n", _g ? _g : "(null)");                              \
	} while (0)

static int tap_done(void)
{
	printf("1..%u\n", tap_n);
	if (tap_failed)
		printf("# %u of %u checks failed\n", tap_failed, tap_n);
	return tap_failed ? 1 : 0;
}

/* Runs argv, returns its exit status (or -1). stdout goes to our stderr to keep TAP clean. */
static int run(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* mkdtemp under $TMPDIR; aborts the test program when the machine cannot do that. */
static char *temp_dir(const char *what)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/rdma-cdi-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", what) < 0)
		abort();
	if (!mkdtemp(path)) {
		printf("Bail out! mkdtemp %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return path;
}

static __attribute__((unused)) void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "we");

	if (!f || fputs(content, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s: %s\n", path, strerror(errno));
		exit(1);
	}
}
