/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timeit: wall time of whole processes, two commands in turn (A B A B ...), so that drift
 * of a shared machine hits both alike. Started with posix_spawn (vfork: the harness's own
 * cost stays far below a process start-up, where a shell's fork of itself did not).
 *
 *   timeit REPS [--unlink PATH] -- A... -- B...
 *
 * One warm-up run of each, then REPS of each; --unlink removes PATH before every run of B
 * (so a writer writes in full each time). Prints "A_median_us B_median_us" and exits
 * non-zero when a run fails.
 */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double run(char **argv, posix_spawn_file_actions_t *fa)
{
	double t0 = now_us();
	int status;
	pid_t pid;

	if (posix_spawn(&pid, argv[0], fa, NULL, argv, environ) != 0 ||
	    waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "timeit: %s failed\n", argv[0]);
		exit(1);
	}
	return now_us() - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *unlink_path = NULL;
	char **a = NULL, **b = NULL;
	posix_spawn_file_actions_t fa;
	double *ta, *tb;
	int reps, i = 2;

	if (argc < 6 || (reps = atoi(argv[1])) < 1)
		goto usage;
	if (strcmp(argv[i], "--unlink") == 0 && i + 1 < argc) {
		unlink_path = argv[i + 1];
		i += 2;
	}
	if (strcmp(argv[i], "--") != 0)
		goto usage;
	a = &argv[++i];
	for (; i < argc && strcmp(argv[i], "--") != 0; i++)
		;
	if (i >= argc - 1)
		goto usage;
	argv[i] = NULL;
	b = &argv[i + 1];
	/* The commands' output goes nowhere, as a measurement's should. */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	ta = calloc((size_t)reps, sizeof(*ta));
	tb = calloc((size_t)reps, sizeof(*tb));
	if (!ta || !tb)
		return 1;
	for (int r = -1; r < reps; r++) {
		double x = run(a, &fa), y;

		if (unlink_path)
			unlink(unlink_path);
		y = run(b, &fa);
		if (r >= 0) {
			ta[r] = x;
			tb[r] = y;
		}
	}
	qsort(ta, (size_t)reps, sizeof(*ta), cmp);
	qsort(tb, (size_t)reps, sizeof(*tb), cmp);
	printf("%.0f %.0f\n", ta[reps / 2], tb[reps / 2]);
	return 0;
usage:
	fprintf(stderr, "usage: timeit REPS [--unlink PATH] -- A... -- B...\n");
	return 2;
}
