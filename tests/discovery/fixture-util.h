/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixture helpers for the discovery tests (and the DRA tests and benchmarks that scan the
 * same fixtures): run the fixture builder, temp dirs, paths in a tree, a model's problems.
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

#include "../tap.h"
#include "discovery.h"

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

/* The test programs' arguments: PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (set by meson). */
static const char *python3, *mksysfs, *data_dir;

static void fixture_args(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PYTHON3 MKSYSFS_PY TESTS_DATA_DIR\n", argv[0]);
		exit(2);
	}
	python3 = argv[1];
	mksysfs = argv[2];
	data_dir = argv[3];
}

/* A fresh tree of the mksysfs.py profile (devices: its --devices, or NULL) in an empty temp
 * dir (tests that modify a tree use this); bails out when it cannot. */
static __attribute__((unused)) char *build_tree(const char *profile, const char *devices)
{
	char *dir = temp_dir(profile);
	char *argv[] = {(char *)python3,
			(char *)mksysfs,
			"build",
			(char *)profile,
			dir,
			devices ? "--devices" : NULL,
			(char *)devices,
			NULL};

	if (run(argv) != 0) {
		printf("Bail out! mksysfs.py build %s failed\n", profile);
		exit(1);
	}
	return dir;
}

/* A dev root with nodes (mksysfs.py mkdev, needs root) for everything in sysroot except the
 * omitted names (NULL: none). */
static __attribute__((unused)) char *make_devroot(const char *sysroot, const char *omit)
{
	char *dir = temp_dir("dev");
	char *argv[] = {(char *)python3,	(char *)mksysfs, "mkdev", (char *)sysroot, dir,
			omit ? "--omit" : NULL, (char *)omit,	 NULL};

	if (run(argv) != 0) {
		printf("Bail out! mksysfs.py mkdev %s failed\n", sysroot);
		exit(1);
	}
	return dir;
}

/* root/rel, allocated. */
static __attribute__((unused)) char *at(const char *root, const char *rel)
{
	char *p;

	if (asprintf(&p, "%s/%s", root, rel) < 0)
		abort();
	return p;
}

static __attribute__((unused)) bool has_problem(const struct disc_node *node, const char *needle)
{
	for (size_t i = 0; i < node->n_problems; i++)
		if (strstr(node->problems[i], needle))
			return true;
	return false;
}

#define PROBLEM(node, needle) ok(has_problem((node), (needle)), "problem mentions '%s'", (needle))
