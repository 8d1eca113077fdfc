/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Atomic, symlink-safe replacement of a spec file.
 *
 * The daemon runs as root and writes into directories other tools also write to, so
 * every step works relative to one directory fd opened without following its last
 * component, and the target itself is never opened for writing: a temp file is
 * created with O_EXCL, made durable, and renamed over it.
 */
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cdi-internal.h"

/* ".<name>.XXXXXX" must fit in NAME_MAX. */
#define TEMP_EXTRA 8

static bool file_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n > 0 && n + TEMP_EXTRA <= NAME_MAX && !strchr(name, '/') &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* mkdir -p; directories we create get 0755 whatever the umask. */
static int mkdir_parents(const char *dir)
{
	_cleanup_free_ char *p = strdup(dir);
	size_t n;

	if (!p)
		return -ENOMEM;
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	for (char *s = p + 1;; s++) {
		bool last = *s == '\0';

		if (*s != '/' && !last)
			continue;
		*s = '\0';
		if (mkdir(p, 0755) == 0) {
			_cleanup_close_ int fd =
			    open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0 || fchmod(fd, 0755) < 0)
				return -errno;
		} else if (errno != EEXIST) {
			return -errno;
		}
		if (last)
			break;
		*s = '/';
	}
	return 0;
}

static int open_dir(const char *dir)
{
	int fd, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return -errno;
	r = mkdir_parents(dir);
	if (r < 0)
		return r;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* 1 when dirfd/name is a regular file of that mode holding exactly buf, else 0. */
static int same_content(int dirfd, const char *name, const struct stat *st, const char *buf,
			size_t len, unsigned mode)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *old = NULL;
	struct stat st2;
	size_t old_len;
	int r;

	if ((st->st_mode & 07777) != mode || (size_t)st->st_size != len)
		return 0;
	/* O_NONBLOCK: something swapped in for a FIFO must not hang us. */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? 0 : -errno;
	if (fstat(fd, &st2) < 0)
		return -errno;
	if (!S_ISREG(st2.st_mode) || st2.st_ino != st->st_ino || st2.st_dev != st->st_dev)
		return 0;
	r = read_full_fd(fd, len, &old, &old_len);
	if (r == -EFBIG)
		return 0;
	if (r < 0)
		return r;
	return old_len == len && memcmp(old, buf, len) == 0;
}

static int create_temp(int dirfd, const char *name, char *tmp, size_t tmpsize, unsigned mode)
{
	static const char chars[] =
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

	for (int attempt = 0; attempt < 100; attempt++) {
		unsigned char rnd[6];
		char suffix[7];
		int fd;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return errno ? -errno : -EIO;
		for (size_t i = 0; i < sizeof(rnd); i++)
			suffix[i] = chars[rnd[i] % (sizeof(chars) - 1)];
		suffix[6] = '\0';
		/* Ends in the random suffix, never in .json/.yaml: runtimes skip it. */
		snprintf(tmp, tmpsize, ".%s.%s", name, suffix);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* 0 when dirfd/name is still what expect says (absent when st_ino is 0), else -EEXIST. */
static int check_expected(int dirfd, const char *name, const struct stat *expect)
{
	struct stat st;

	if (!expect)
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT && expect->st_ino == 0 ? 0 : -EEXIST;
	return expect->st_ino != 0 && st.st_ino == expect->st_ino && st.st_dev == expect->st_dev
		   ? 0
		   : -EEXIST;
}

int cdi_write_file_atomic(const char *dir, const char *name, const char *buf, size_t len)
{
	return cdi_write_file_atomic_expect(dir, name, buf, len, NULL);
}

int cdi_write_file_atomic_expect(const char *dir, const char *name, const char *buf, size_t len,
				 const struct stat *expect)
{
	return cdi_write_file_atomic_mode(dir, name, buf, len, expect, 0644);
}

int cdi_write_file_atomic_mode(const char *dir, const char *name, const char *buf, size_t len,
			       const struct stat *expect, unsigned mode)
{
	_cleanup_close_ int dirfd = -1, fd = -1;
	char tmp[NAME_MAX + 1];
	struct stat st;
	int r;

	if (!dir || !*dir || !file_name_ok(name) || (!buf && len) || (mode & ~0777u))
		return -EINVAL;
	if (!buf)
		buf = "";

	dirfd = open_dir(dir);
	if (dirfd < 0)
		return dirfd;
	r = check_expected(dirfd, name, expect);
	if (r < 0)
		return r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISREG(st.st_mode))
			return -EEXIST;
		r = same_content(dirfd, name, &st, buf, len, mode);
		if (r < 0)
			return r;
		if (r > 0)
			return CDI_WRITE_UNCHANGED;
	} else if (errno != ENOENT) {
		return -errno;
	}

	fd = create_temp(dirfd, name, tmp, sizeof(tmp), mode);
	if (fd < 0)
		return fd;
	/* The umask must not decide who can read the file. */
	if (fchmod(fd, mode) < 0)
		goto fail_errno;
	r = write_all(fd, buf, len);
	if (r < 0)
		goto fail;
	if (fsync(fd) < 0)
		goto fail_errno;
	r = close(TAKE_FD(fd));
	if (r < 0)
		goto fail_errno;
	/* The caller judged the file it expects; whatever took its place since is not ours
	 * to replace. The re-check and the rename are not one step, but an absent file is
	 * guarded exactly: RENAME_NOREPLACE refuses one that appeared meanwhile. */
	r = check_expected(dirfd, name, expect);
	if (r < 0)
		goto fail;
	if (renameat2(dirfd, tmp, dirfd, name,
		      expect && expect->st_ino == 0 ? RENAME_NOREPLACE : 0) < 0) {
		goto fail_errno;
	}
	/* The rename itself must survive a crash, or readers may find the old file. */
	if (fsync(dirfd) < 0)
		return -errno;
	return CDI_WRITE_UPDATED;

fail_errno:
	r = -errno;
fail:
	unlinkat(dirfd, tmp, 0);
	return r;
}
