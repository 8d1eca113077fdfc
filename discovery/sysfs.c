/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading sysfs below a root (discovery.h, "reading sysfs"), the way rdma-core's
 * libibverbs/sysfs.c does for SYSFS_PATH: small readers on a root dirfd that every
 * caller shares. Class links are resolved inside the root: with
 * openat2(RESOLVE_IN_ROOT) where the kernel has it (absolute targets restart at the
 * root, ".." stops there), else by walking the links ourselves with the same rules.
 * Attribute files below a resolved directory are opened with RESOLVE_BENEATH and no
 * symlinks at all, as the kernel never puts a symlink where an attribute is expected.
 * Every file is opened O_NONBLOCK and must be a regular file: a FIFO in place of an
 * attribute would otherwise block the open (and the daemon's loop) forever.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "common.h"
#include "discovery-internal.h"
#include "discovery.h"

static int sys_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	/* openat2 rejects O_NOCTTY next to O_PATH (openat ignores it). */
	int oflags = flags | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY);
	struct open_how how = {.flags = (unsigned long long)oflags, .resolve = resolve};
	int fd;

	/* EAGAIN: a concurrent rename kept the kernel from proving that ".." stayed
	 * inside; openat2(2) says to retry. */
	for (int tries = 0; tries < 8; tries++) {
		fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : fd;
}

/*
 * Without openat2: follow the links one component at a time with the RESOLVE_IN_ROOT
 * rules, then open a path that contains no symlink any more.
 */
static int open_in_root_slow(int root_fd, const char *path, int flags)
{
	char cur[DISC_PATH_BUF] = "", rest[DISC_PATH_BUF], next[DISC_PATH_BUF],
	     target[DISC_PATH_BUF];
	unsigned links = 0;
	int fd;

	if (strlen(path) >= sizeof(rest))
		return -ENAMETOOLONG;
	strcpy(rest, path);
	for (;;) {
		char *p = rest, *e;
		size_t len, clen, elen;
		ssize_t n;
		int r;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		len = (size_t)(e - p);
		elen = strlen(e);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.')) {
			r = disc_path_join(cur, len == 1 ? "." : "..", next, sizeof(next));
			if (r < 0)
				return r;
			strcpy(cur, next);
			memmove(rest, e, elen + 1);
			continue;
		}
		clen = strlen(cur);
		if (clen + 1 + len + 1 > sizeof(next))
			return -ENAMETOOLONG;
		memcpy(next, cur, clen);
		if (clen)
			next[clen++] = '/';
		memcpy(next + clen, p, len);
		next[clen + len] = '\0';
		n = readlinkat(root_fd, next, target, sizeof(target) - 1);
		if (n < 0) {
			if (errno != EINVAL && errno != ENOENT && errno != ENOTDIR)
				return -errno;
			/* Not a link (or missing: the final open reports it). */
			strcpy(cur, next);
			memmove(rest, e, elen + 1);
			continue;
		}
		if (++links > 40)
			return -ELOOP;
		if (target[0] == '/')
			cur[0] = '\0';
		/* rest = target + what followed the link */
		if ((size_t)n + elen + 1 > sizeof(rest))
			return -ENAMETOOLONG;
		memmove(rest + n, e, elen + 1);
		memcpy(rest, target, (size_t)n);
	}
	fd = openat(root_fd, cur[0] ? cur : ".", flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int disc_sysfs_open_in_root(const struct disc_sysfs *sys, const char *path, int flags)
{
	if (sys->openat2) {
		int fd = sys_openat2(sys->root_fd, path[0] ? path : ".", flags,
				     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

		/* Renames elsewhere on a busy host can keep openat2 failing with EAGAIN;
		 * the user-space walk has the same rules and no such failure. */
		if (fd != -EAGAIN)
			return fd;
	}
	return open_in_root_slow(sys->root_fd, path, flags);
}

/* Opens path below dirfd without following any symlink and without "..". */
int disc_sysfs_open_beneath(const struct disc_sysfs *sys, int dirfd, const char *path, int flags)
{
	char comp[NAME_MAX + 1];
	_cleanup_close_ int cur = -1;
	const char *p = path;

	if (sys->openat2) {
		int fd = sys_openat2(dirfd, path, flags,
				     RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);

		if (fd != -EAGAIN)
			return fd; /* on EAGAIN: the walk below, as in disc_sysfs_open_in_root() */
	}
	for (;;) {
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		int fd, oflags;

		if (n == 0 || n > NAME_MAX || (n <= 2 && p[0] == '.' && (n == 1 || p[1] == '.')))
			return -EINVAL;
		memcpy(comp, p, n);
		comp[n] = '\0';
		oflags = (*e ? O_PATH | O_DIRECTORY : flags) | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;
		fd = openat(cur >= 0 ? cur : dirfd, comp, oflags);
		if (fd < 0)
			return -errno;
		if (!*e)
			return fd;
		if (cur >= 0)
			close(cur);
		cur = fd;
		p = e + 1;
	}
}

int disc_sysfs_open(const char *root, bool use_openat2, struct disc_sysfs *ret)
{
	_cleanup_close_ int fd = -1, probe = -1;

	fd = open(root ? root : "/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Older kernels and some seccomp profiles refuse openat2: walk the links ourselves. */
	probe = use_openat2 ? sys_openat2(fd, ".", O_PATH, RESOLVE_IN_ROOT) : -ENOSYS;
	*ret = (struct disc_sysfs){.root_fd = TAKE_FD(fd),
				   .openat2 = !(probe == -ENOSYS || probe == -EPERM)};
	return 0;
}

void disc_sysfs_close(struct disc_sysfs *sys)
{
	if (sys->root_fd >= 0)
		close(sys->root_fd);
	sys->root_fd = -1;
}

int disc_sysfs_read_fd(int fd, char *buf, size_t size)
{
	struct stat st;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	return read_attr_fd(fd, buf, size);
}

int disc_sysfs_read_beneath(const struct disc_sysfs *sys, int dirfd, const char *path, char *buf,
			    size_t size)
{
	_cleanup_close_ int fd = disc_sysfs_open_beneath(sys, dirfd, path, O_RDONLY | O_NONBLOCK);

	return disc_sysfs_read_fd(fd, buf, size);
}

int disc_sysfs_read_in_root(const struct disc_sysfs *sys, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = disc_sysfs_open_in_root(sys, path, O_RDONLY | O_NONBLOCK);

	return disc_sysfs_read_fd(fd, buf, size);
}

int disc_sysfs_read_link(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(dirfd, path, buf, size);

	if (n < 0)
		return -errno;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

void disc_names_clear(struct disc_names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

static int names_cmp(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

int disc_sysfs_list_dir(int fd, bool (*keep)(const char *), size_t max, struct disc_names *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct disc_names l = {};
	struct dirent *de;
	int over = 0;

	d = fdopendir(fd);
	if (!d) {
		int r = -errno;

		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (keep && !keep(de->d_name))
			continue;
		if (l.n >= max) {
			over++;
			continue;
		}
		if (l.n == l.cap) {
			size_t ncap = l.cap ? l.cap * 2 : 16;
			char **n = realloc(l.v, ncap * sizeof(*n));

			if (!n)
				goto oom;
			l.v = n;
			l.cap = ncap;
		}
		l.v[l.n] = strdup(de->d_name);
		if (!l.v[l.n])
			goto oom;
		l.n++;
	}
	if (errno) {
		int r = -errno;

		disc_names_clear(&l);
		return r;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), names_cmp);
	*ret = l;
	return over;
oom:
	disc_names_clear(&l);
	return -ENOMEM;
}
