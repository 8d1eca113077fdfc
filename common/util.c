/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common.h"

int read_attr_fd(int fd, char *buf, size_t size)
{
	ssize_t n;

	if (size < 2)
		return -EINVAL;
	do
		n = read(fd, buf, size);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n >= size)
		return -EFBIG;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	/* An embedded NUL would silently truncate what callers see. */
	if (memchr(buf, '\0', (size_t)n))
		return -EBADMSG;
	return (int)n;
}

int read_full_fd(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *nbuf;

			if (ncap > max + 2)
				ncap = max + 2;
			if (ncap <= len + 1)
				return -EFBIG;
			nbuf = realloc(buf, ncap);
			if (!nbuf)
				return -ENOMEM;
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max)
			return -EFBIG;
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf)
			return -ENOMEM;
	}
	buf[len] = '\0';
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int read_full_file_at(int dirfd, const char *path, size_t max, bool nofollow, char **ret_buf,
		      size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	/* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever;
	 * it is refused right below like every other non-regular file. */
	fd = openat(dirfd, path,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	return read_full_fd(fd, max, ret_buf, ret_len);
}

DIR *fdopendir_consume(int fd)
{
	DIR *d = fdopendir(fd);

	if (!d) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return d;
}

bool dot_or_dot_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

char *path_clean(const char *p)
{
	size_t n = 0, len;
	char *out;

	if (!p || p[0] != '/')
		return NULL;
	out = malloc(strlen(p) + 2);
	if (!out)
		return NULL;
	while (*p) {
		while (*p == '/')
			p++;
		len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[--n] != '/')
				;
		} else {
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return out;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mkdir_all(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
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
		if (mkdir(p, mode) == 0) {
			_cleanup_close_ int fd =
			    open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0 || fchmod(fd, mode) < 0)
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

int parse_int64(const char *s, long long *ret)
{
	char *end;
	long long v;

	if (!s)
		return -EINVAL;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '\0')
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno)
		return -errno;
	/* No digits ("\n", " \n\t"): strtoll gives 0 without an error. */
	if (end == s)
		return -EINVAL;
	while (*end == ' ' || *end == '\t' || *end == '\n')
		end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

int parse_dev_numbers(const char *s, unsigned *ret_major, unsigned *ret_minor)
{
	unsigned long ma, mi;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	ma = strtoul(s, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	mi = strtoul(end + 1, &end, 10);
	if (errno || *end != '\0')
		return -EINVAL;
	/* Linux dev_t: 12-bit major, 20-bit minor. */
	if (ma > 0xfff || mi > 0xfffff)
		return -ERANGE;
	*ret_major = (unsigned)ma;
	*ret_minor = (unsigned)mi;
	return 0;
}

bool name_is_safe(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++) {
		char c = s[n];

		if (n >= max)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

char *strdup_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

uint64_t fnv1a64(const void *p, size_t len, uint64_t h)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int parse_memlock(const char *s, rlim_t *ret)
{
	unsigned long long v = 0, mult = 1;
	const char *p;

	if (!s || !*s)
		return -EINVAL;
	if (strcasecmp(s, "unlimited") == 0) {
		*ret = RLIM_INFINITY;
		return 0;
	}
	/* Digits by hand: strtoull would accept signs, spaces and wrap "-1" to 2^64-1. */
	for (p = s; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (~0ULL - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (p == s || v == 0)
		return -EINVAL;
	if (*p) {
		const char *suffix = strchr("kKmMgG", *p);

		if (!suffix || p[1])
			return -EINVAL;
		mult = 1ULL << (10 * (1 + (suffix - "kKmMgG") / 2));
	}
	if (v > ~0ULL / mult)
		return -ERANGE;
	v *= mult;
	if ((rlim_t)v != v || (rlim_t)v == RLIM_INFINITY)
		return -ERANGE;
	*ret = (rlim_t)v;
	return 0;
}
