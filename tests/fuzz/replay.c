/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The main() a fuzzer gets when it is not built with libFuzzer: runs every file of the
 * corpus directories given as arguments through LLVMFuzzerTestOneInput(), in name order,
 * one TAP line each. A crash or a failed invariant aborts the run, which meson reports as
 * a failure; so `meson test --suite fuzz` replays the checked-in corpus with any compiler.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "fuzz.h"

/* Inputs beyond this are not corpus entries but mistakes. */
#define REPLAY_MAX (4 * 1024 * 1024)

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, unsigned *count)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int r = 0;

	if (!d) {
		printf("not ok %u - %s: %s\n", ++*count, dir, strerror(errno));
		return -errno;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v)
				abort();
			names = v;
		}
		names[n] = strdup(e->d_name);
		if (!names[n++])
			abort();
	}
	qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int q;

		q = read_full_file_at(dirfd(d), names[i], REPLAY_MAX, false, &buf, &len);
		if (q < 0) {
			printf("not ok %u - %s/%s: %s\n", ++*count, dir, names[i], strerror(-q));
			r = q;
		} else {
			/* Exactly len bytes on the heap, as libFuzzer hands them: ASan sees an
			 * overread of the input. */
			_cleanup_free_ char *copy = malloc(len ? len : 1);

			if (!copy)
				abort();
			memcpy(copy, buf, len);
			fflush(stdout);
			LLVMFuzzerTestOneInput((const uint8_t *)copy, len);
			printf("ok %u - %s (%zu bytes)\n", ++*count, names[i], len);
		}
		fflush(stdout);
		free(names[i]);
	}
	free(names);
	if (n == 0) {
		printf("not ok %u - %s: empty corpus\n", ++*count, dir);
		r = -ENOENT;
	}
	return r;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int r = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (replay_dir(argv[i], &count) < 0)
			r = 1;
	printf("1..%u\n", count);
	return r;
}
