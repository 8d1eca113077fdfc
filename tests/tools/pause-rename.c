/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LD_PRELOAD shim for tests: a writer that reaches the rename of its temp file over
 * RDMA_CDI_TEST_PAUSE_RENAME (a file name) records the temp's name in
 * RDMA_CDI_TEST_PAUSE_MARK and stops there for good, so a test can SIGKILL it at exactly
 * the point a crash leaves a temp file behind. With RDMA_CDI_TEST_PAUSE_RELEASE (a path)
 * it stops only until that file exists, then renames: a thread stuck in a system call for
 * as long as the test wants (the daemons' loop, for their liveness probe). Every other
 * rename goes through.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void mark_and_stop(const char *tmp)
{
	const char *mark = getenv("RDMA_CDI_TEST_PAUSE_MARK");
	const char *release = getenv("RDMA_CDI_TEST_PAUSE_RELEASE");
	char part[4096];
	int fd;

	if (mark && snprintf(part, sizeof(part), "%s.part", mark) < (int)sizeof(part)) {
		/* Written whole, then renamed: the test never reads half a name. */
		fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			if (write(fd, tmp, strlen(tmp)) < 0)
				abort();
			close(fd);
			syscall(SYS_renameat2, AT_FDCWD, part, AT_FDCWD, mark, 0);
		}
	}
	if (release) {
		while (access(release, F_OK) != 0)
			usleep(20000);
		return;
	}
	for (;;)
		pause();
}

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	      unsigned int flags)
{
	const char *target = getenv("RDMA_CDI_TEST_PAUSE_RENAME");

	if (target && strcmp(newpath, target) == 0)
		mark_and_stop(oldpath);
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}
