/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Atomic, symlink-safe replacement of a spec file.
 *
 * The daemon runs as root and writes into directories other tools also write to, so
 * every step works relative to one directory fd opened without following its last
 * component, and the target itself is never opened for writing: a temp file is
 * created with O_EXCL, made durable, and renamed over it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdi-internal.h"

/* ".<name>.XXXXXX" must fit in NAME_MAX. */
#define TEMP_EXTRA 8
#define TEMP_SUFFIX_LEN 6

static const char temp_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static bool file_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n > 0 && n + TEMP_EXTRA <= NAME_MAX && !strchr(name, '/') &&
	       strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int open_dir(const char *dir)
{
	int fd, r;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		return -errno;
	/* Directories we create get 0755 whatever the umask. */
	r = mkdir_all(dir, 0755);
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

/* True when fd is still linked in dirfd as tmp (a stale-temp sweep may have removed a
 * temp between its creation and our lock on it). */
static bool still_linked(int dirfd, const char *tmp, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dirfd, tmp, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

static void temp_name(const char *name, char *tmp, size_t tmpsize)
{
	unsigned char rnd[TEMP_SUFFIX_LEN];
	char suffix[TEMP_SUFFIX_LEN + 1];

	/* getrandom() of 6 bytes does not fail once the pool is up; zeros would only make
	 * a name clash, which the callers retry. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	for (size_t i = 0; i < sizeof(rnd); i++)
		suffix[i] = temp_chars[rnd[i] % (sizeof(temp_chars) - 1)];
	suffix[TEMP_SUFFIX_LEN] = '\0';
	/* Ends in the random suffix, never in .json/.yaml: runtimes skip it. */
	snprintf(tmp, tmpsize, ".%s.%s", name, suffix);
}

/*
 * The temp file is flock()ed for as long as its fd is open: that tells
 * cdi_remove_stale_temps() a live writer owns it, and the kernel drops the lock when the
 * writer dies, whatever kills it. Preferred: an unnamed O_TMPFILE, locked before it has a
 * name (link_temp) and, until then, leaving nothing behind on a crash. *tmp is "" then.
 * Where the file system has no O_TMPFILE: a named file created with O_EXCL and locked at
 * once; a sweep that takes it in the instant before the lock is noticed and we retry.
 */
static int open_temp(int dirfd, const char *name, char *tmp, size_t tmpsize, unsigned mode)
{
	int fd = -1;

	tmp[0] = '\0';
	/* link_temp() needs /proc; without it (a bare chroot) the named way is the only one. */
	if (access("/proc/self/fd", X_OK) == 0)
		fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd >= 0) {
		if (flock(fd, LOCK_EX) == 0)
			return fd;
		close(fd);
	}
	for (int attempt = 0; attempt < 100; attempt++) {
		temp_name(name, tmp, tmpsize);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX) < 0) {
			int r = -errno;

			unlinkat(dirfd, tmp, 0);
			close(fd);
			return r;
		}
		if (still_linked(dirfd, tmp, fd))
			return fd;
		close(fd);
	}
	return -EEXIST;
}

/* Gives the locked O_TMPFILE fd its temp name (the rename needs one). */
static int link_temp(int dirfd, int fd, const char *name, char *tmp, size_t tmpsize)
{
	char proc[64];

	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc link does not. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int attempt = 0; attempt < 100; attempt++) {
		temp_name(name, tmp, tmpsize);
		if (linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST) {
			int r = -errno;

			tmp[0] = '\0';
			return r;
		}
	}
	tmp[0] = '\0';
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

	fd = open_temp(dirfd, name, tmp, sizeof(tmp), mode);
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
	if (!tmp[0]) {
		r = link_temp(dirfd, fd, name, tmp, sizeof(tmp));
		if (r < 0)
			goto fail;
	}
	/* fd (and its lock) stays open through the rename: the temp is never unlocked. */
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
	if (tmp[0])
		unlinkat(dirfd, tmp, 0);
	return r;
}

/* ".<name>.XXXXXX" with exactly our suffix alphabet and length. */
static bool is_temp_of(const char *entry, const char *name)
{
	size_t n = strlen(name);

	if (entry[0] != '.' || strncmp(entry + 1, name, n) != 0 || entry[n + 1] != '.')
		return false;
	entry += n + 2;
	return strlen(entry) == TEMP_SUFFIX_LEN && strspn(entry, temp_chars) == TEMP_SUFFIX_LEN;
}

/* 1 when dirfd/entry was a temp left by a dead writer and is removed, 0 when it is not
 * ours to remove, -errno. */
static int remove_if_stale(int dirfd, const char *entry)
{
	_cleanup_close_ int fd = -1;
	struct stat st, fst;

	if (fstatat(dirfd, entry, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		return 0;
	/* O_NONBLOCK: a FIFO swapped in after the stat must not hang us. */
	fd = openat(dirfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? 0 : -errno;
	if (fstat(fd, &fst) < 0)
		return -errno;
	if (!S_ISREG(fst.st_mode) || fst.st_uid != geteuid() || fst.st_ino != st.st_ino ||
	    fst.st_dev != st.st_dev)
		return 0;
	/* A live writer holds its temp locked from creation to rename. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? 0 : -errno;
	/* Holding the lock, the name cannot be renamed away by a writer of ours; it must
	 * still be the file we locked. */
	if (!still_linked(dirfd, entry, fd))
		return 0;
	if (unlinkat(dirfd, entry, 0) < 0)
		return errno == ENOENT ? 0 : -errno;
	return 1;
}

int cdi_remove_stale_temps(const char *dir, const char *name)
{
	_cleanup_close_ int dirfd = -1;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int n = 0, first_error = 0;

	if (!dir || !*dir || !file_name_ok(name))
		return -EINVAL;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno;
	{
		int fd2 = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);

		if (fd2 < 0)
			return -errno;
		d = fdopendir_consume(fd2);
		if (!d)
			return -errno;
	}
	while ((errno = 0, de = readdir(d))) {
		int r;

		if (!is_temp_of(de->d_name, name))
			continue;
		r = remove_if_stale(dirfd, de->d_name);
		if (r > 0)
			n++;
		else if (r < 0 && !first_error)
			first_error = r;
	}
	if (errno)
		return -errno;
	return first_error ? first_error : n;
}
