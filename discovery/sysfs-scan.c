/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs -> device model. Every read is relative to a dirfd on the sysfs root, so the
 * whole scan honours --sysfs-root. Class links are resolved inside that root: with
 * openat2(RESOLVE_IN_ROOT) where the kernel has it (absolute targets restart at the
 * root, ".." stops there), else by walking the links ourselves with the same rules.
 * Attribute files below a resolved directory are opened with RESOLVE_BENEATH and no
 * symlinks at all, as the kernel never puts a symlink where an attribute is expected.
 * Every file is opened O_NONBLOCK and must be a regular file: a FIFO in place of an
 * attribute would otherwise block the open (and the daemon's loop) forever.
 *
 * The cost that matters is system calls (about 60 per device), so each directory is
 * opened once and attributes are read with a single read() into a bounded buffer.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common.h"
#include "discovery-internal.h"
#include "discovery.h"

#define PATH_BUF 4096

struct scan {
	int root_fd;
	int devib_fd; /* <dev-root>/infiniband, -1 when missing */
	bool openat2;
	bool oom;
	int stop; /* -ECANCELED / -ETIMEDOUT once the caller gave up */
	const char *dev_root;
	const atomic_bool *cancel;
	uint64_t deadline_usec;
	/* The last PF whose net/ was read: VFs of one PF come in a row. */
	char pf_cache_pci[DISC_PCI_MAX];
	char pf_cache_netdev[DISC_NETDEV_MAX + 1];
	struct disc_node *node;
	size_t devices_cap;
	size_t problems_cap;
	size_t problems_dropped;
	/* Indices into node->devices sorted by name, for the char-device lookups. */
	size_t *by_name;
};

/* ---- pure helpers (discovery-internal.h) --------------------------------------------- */

int disc_path_join(const char *base, const char *rel, char *out, size_t size)
{
	size_t len = 0;
	const char *parts[2] = {base, rel};

	if (size == 0)
		return -ENAMETOOLONG;
	if (rel[0] == '/')
		parts[0] = "";
	out[0] = '\0';
	for (size_t i = 0; i < 2; i++) {
		const char *p = parts[i];

		while (*p) {
			const char *e;
			size_t n;

			while (*p == '/')
				p++;
			if (!*p)
				break;
			e = strchrnul(p, '/');
			n = (size_t)(e - p);
			if (n == 1 && p[0] == '.') {
				/* nothing */
			} else if (n == 2 && p[0] == '.' && p[1] == '.') {
				while (len > 0 && out[len - 1] != '/')
					len--;
				if (len > 0)
					len--;
				out[len] = '\0';
			} else {
				if (len + (len ? 1 : 0) + n + 1 > size)
					return -ENAMETOOLONG;
				if (len)
					out[len++] = '/';
				memcpy(out + len, p, n);
				len += n;
				out[len] = '\0';
			}
			p = e;
		}
	}
	return (int)len;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool hex_run(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return false;
	return true;
}

bool disc_pci_addr_valid(const char *s)
{
	size_t len = strlen(s), dom;

	/* domain ":" bus(2) ":" dev(2) "." fn(1) */
	if (len < 4 + 8 || len > 8 + 8)
		return false;
	dom = len - 8;
	return hex_run(s, dom) && s[dom] == ':' && hex_run(s + dom + 1, 2) && s[dom + 3] == ':' &&
	       hex_run(s + dom + 4, 2) && s[dom + 6] == '.' && s[dom + 7] >= '0' &&
	       s[dom + 7] <= '7';
}

static unsigned long long pci_key(const char *s)
{
	size_t dom = strlen(s) - 8;
	unsigned long long d = strtoull(s, NULL, 16);

	return (d << 24) | (strtoull(s + dom + 1, NULL, 16) << 16) |
	       (strtoull(s + dom + 4, NULL, 16) << 8) | (unsigned long long)(s[dom + 7] - '0');
}

int disc_pci_compare(const char *a, const char *b)
{
	unsigned long long ka, kb;

	if (!disc_pci_addr_valid(a) || !disc_pci_addr_valid(b))
		return strcmp(a, b);
	ka = pci_key(a);
	kb = pci_key(b);
	return ka < kb ? -1 : ka > kb;
}

bool disc_ibdev_name_ok(const char *name)
{
	size_t n;

	/* name_is_safe() lets dots through; ".." has no business in a device name that
	 * ends up in file names and CDI names. */
	if (!name_is_safe(name, DISC_NAME_MAX - 1) || strstr(name, ".."))
		return false;
	/* The CDI device-name rule (first and last character alphanumeric), and no name
	 * the spec's aliases take ("all", an index): such a device would be left out of
	 * the spec while still counted by `discover`, shifting every index after it. */
	n = strlen(name);
	if (!isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[n - 1]))
		return false;
	return strcmp(name, "all") != 0 && name[strspn(name, "0123456789")] != '\0';
}

bool disc_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

int disc_parse_state(const char *s, int *ret_num, char *name, size_t name_size)
{
	long v = 0;
	const char *p = s;
	size_t n;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > 255)
			return -EINVAL;
	}
	if (p[0] != ':' || p[1] != ' ')
		return -EINVAL;
	p += 2;
	n = strlen(p);
	if (n == 0 || n >= name_size || !disc_printable(p))
		return -EINVAL;
	memcpy(name, p, n + 1);
	*ret_num = (int)v;
	return 0;
}

int disc_parse_pci_id(const char *s, unsigned *ret)
{
	unsigned long v;
	char *end;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !isxdigit((unsigned char)s[2]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s + 2, &end, 16);
	if (errno || *end)
		return -EINVAL;
	if (v > 0xffff)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

/* ---- problems --------------------------------------------------------------------- */

/* strerror() may format into a static buffer; scans run on worker threads. */
static const char *errstr(int r)
{
	const char *d = strerrordesc_np(r < 0 ? -r : r);

	return d ? d : "unknown error";
}

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* True once the caller cancelled or the deadline passed (then s->stop says which). */
static bool scan_stopped(struct scan *s)
{
	if (s->stop)
		return true;
	if (s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed))
		s->stop = -ECANCELED;
	else if (s->deadline_usec && now_usec() >= s->deadline_usec)
		s->stop = -ETIMEDOUT;
	return s->stop != 0;
}

/* Untrusted text for a message: escaped as every message is (text_escape), bounded. */
static const char *shown(const char *in, char *buf, size_t size)
{
	if (text_escape(buf, size - 3, in, strlen(in), false) >= size - 3)
		strcat(buf, "...");
	return buf;
}
#define SHOWN(s) shown((s), (char[72]){0}, 72)

static void problem(struct scan *s, const char *fmt, ...) _printf_(2, 3);
static void problem(struct scan *s, const char *fmt, ...)
{
	struct disc_node *node = s->node;
	va_list ap;
	char *line;
	int r;

	if (node->n_problems >= DISC_MAX_PROBLEMS) {
		s->problems_dropped++;
		return;
	}
	if (ARRAY_RESERVE(node->problems, s->problems_cap, node->n_problems + 1) < 0) {
		s->oom = true;
		return;
	}
	va_start(ap, fmt);
	r = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (r < 0) {
		s->oom = true;
		return;
	}
	node->problems[node->n_problems++] = line;
}

/* ---- opening and reading inside the root ------------------------------------------ */

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
	char cur[PATH_BUF] = "", rest[PATH_BUF], next[PATH_BUF], target[PATH_BUF];
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

static int open_in_root(struct scan *s, const char *path, int flags)
{
	if (s->openat2) {
		int fd = sys_openat2(s->root_fd, path[0] ? path : ".", flags,
				     RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

		/* Renames elsewhere on a busy host can keep openat2 failing with EAGAIN;
		 * the user-space walk has the same rules and no such failure. */
		if (fd != -EAGAIN)
			return fd;
	}
	return open_in_root_slow(s->root_fd, path, flags);
}

/* Opens path below dirfd without following any symlink and without "..". */
static int open_beneath(struct scan *s, int dirfd, const char *path, int flags)
{
	char comp[NAME_MAX + 1];
	_cleanup_close_ int cur = -1;
	const char *p = path;

	if (s->openat2) {
		int fd = sys_openat2(dirfd, path, flags,
				     RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);

		if (fd != -EAGAIN)
			return fd; /* on EAGAIN: the walk below, as in open_in_root() */
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

/* Errors the read helpers below have already turned into a problem line. */
static bool reported(int r)
{
	return r == -EBADFD || r == -EACCES || r == -EPERM;
}

/*
 * Reads an attribute from an fd opened O_NONBLOCK. where/path name the file in the
 * problem lines (where may be NULL: path is then root-relative). Anything but a regular
 * file gives -EBADFD, a permission error -EACCES/-EPERM, both with a problem recorded;
 * other errors are the caller's to judge (a missing attribute is often normal).
 */
static int read_attr_checked(struct scan *s, int fd, const char *where, const char *path, char *buf,
			     size_t size)
{
	struct stat st;
	int r;

	if (fd >= 0 && fstat(fd, &st) < 0)
		fd = -errno;
	else if (fd >= 0 && !S_ISREG(st.st_mode)) {
		problem(s, "%s%s%s: not a regular file, ignoring", where ? where : "",
			where ? "/" : "", path);
		return -EBADFD;
	}
	r = fd < 0 ? fd : read_attr_fd(fd, buf, size);
	if (r == -EACCES || r == -EPERM)
		problem(s, "%s%s%s: %s, ignoring", where ? where : "", where ? "/" : "", path,
			errstr(r));
	return r;
}

static int read_beneath(struct scan *s, int dirfd, const char *where, const char *path, char *buf,
			size_t size)
{
	_cleanup_close_ int fd = open_beneath(s, dirfd, path, O_RDONLY | O_NONBLOCK);

	return read_attr_checked(s, fd, where, path, buf, size);
}

static int read_in_root(struct scan *s, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open_in_root(s, path, O_RDONLY | O_NONBLOCK);

	return read_attr_checked(s, fd, NULL, path, buf, size);
}

/* Reads a link's target (bounded, NUL-terminated). */
static int read_link(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(dirfd, path, buf, size);

	if (n < 0)
		return -errno;
	if ((size_t)n >= size)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return (int)n;
}

/*
 * A link that may be missing (not every device has a driver, only VFs a physfn): missing
 * is normal, anything else (a permission error, an over-long target) is a problem.
 */
static int read_opt_link(struct scan *s, int dirfd, const char *where, const char *path, char *buf,
			 size_t size)
{
	int r = read_link(dirfd, path, buf, size);

	if (r < 0 && r != -ENOENT && r != -EINVAL)
		problem(s, "%s/%s: cannot read link (%s), ignoring", where, path, errstr(r));
	return r;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/*
 * Reads a string attribute into dst (size DISC_ATTR_MAX or less); missing -> "",
 * garbage (too long, not printable) -> "" and a problem.
 */
static void read_string_attr(struct scan *s, int dirfd, const char *where, const char *devname,
			     const char *attr, char *dst, size_t size)
{
	int r = read_beneath(s, dirfd, where, attr, dst, size);

	if (r >= 0 && disc_printable(dst))
		return;
	if (r == -EFBIG)
		problem(s, "%s: %s longer than %zu bytes, ignoring", devname, attr, size - 1);
	else if (r >= 0 || r == -EBADMSG)
		problem(s, "%s: %s is not printable text, ignoring", devname, attr);
	dst[0] = '\0';
}

/* ---- directory listings ----------------------------------------------------------- */

struct names {
	char **v;
	size_t n, cap;
};

static void names_clear(struct names *l)
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

/*
 * Lists a directory (fd is consumed), keeping entries accepted by keep(), sorted in
 * version order so "uverbs10" follows "uverbs9". Returns the number of entries that
 * did not fit under max.
 */
static int list_dir(int fd, bool (*keep)(const char *), size_t max, struct names *ret)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct names l = {};
	struct dirent *de;
	int over = 0;

	d = fdopendir_consume(fd);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		if (dot_or_dot_dot(de->d_name))
			continue;
		if (keep && !keep(de->d_name))
			continue;
		if (l.n >= max) {
			over++;
			continue;
		}
		if (ARRAY_RESERVE(l.v, l.cap, l.n + 1) < 0)
			goto oom;
		l.v[l.n] = strdup(de->d_name);
		if (!l.v[l.n])
			goto oom;
		l.n++;
	}
	if (errno) {
		int r = -errno;

		names_clear(&l);
		return r;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), names_cmp);
	*ret = l;
	return over;
oom:
	names_clear(&l);
	return -ENOMEM;
}

/*
 * Lists the entries of a class directory that keep() accepts into ret (empty when the
 * class is absent). Entries beyond the cap are reported, not silently dropped. A class
 * that exists but cannot be listed is a problem line, or with `required` (the caller
 * cannot tell "none" from "not allowed to look") a permission error is returned.
 */
static int list_class(struct scan *s, const char *cls, bool (*keep)(const char *), bool required,
		      struct names *ret)
{
	int fd, over;

	fd = open_in_root(s, cls, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd == -ENOENT)
		return 0;
	if (fd >= 0) {
		over = list_dir(fd, keep, DISC_MAX_CLASS_ENTRIES, ret);
		if (over >= 0) {
			if (over > 0)
				problem(s, "%s: more than %d entries, ignoring %d", cls,
					DISC_MAX_CLASS_ENTRIES, over);
			return 0;
		}
		fd = over;
	}
	if (fd == -ENOMEM) {
		s->oom = true;
		return fd;
	}
	if (required && (fd == -EACCES || fd == -EPERM))
		return fd;
	problem(s, "%s: cannot be listed (%s), ignoring", cls, errstr(fd));
	return 0;
}

static bool digits_after(const char *s, size_t skip)
{
	s += skip;
	if (!*s || strlen(s) > 9)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool is_port_name(const char *s)
{
	/* Port 0 is a switch's management port; "01" is not a name the kernel makes. */
	return digits_after(s, 0) && (s[0] != '0' || s[1] == '\0');
}

static bool is_uverbs_name(const char *s)
{
	return !strncmp(s, "uverbs", 6) && digits_after(s, 6);
}

static bool is_mad_name(const char *s)
{
	return (!strncmp(s, "umad", 4) && digits_after(s, 4)) ||
	       (!strncmp(s, "issm", 4) && digits_after(s, 4));
}

/* ---- one RDMA device ---------------------------------------------------------------- */

/* The first valid interface name in a net/ directory (fd consumed) into out, or "". */
static void first_netdev(struct scan *s, int fd, const char *where, char *out)
{
	struct names net = {};
	int r;

	out[0] = '\0';
	if (fd == -ENOENT || fd == -ENOTDIR)
		return;
	r = fd < 0 ? fd : list_dir(fd, NULL, 4096, &net);
	if (r == -ENOMEM)
		s->oom = true;
	else if (r < 0)
		problem(s, "%s/net: cannot be listed (%s), ignoring", where, errstr(r));
	for (size_t k = 0; k < net.n; k++)
		if (name_is_safe(net.v[k], DISC_NETDEV_MAX - 1)) {
			strcpy(out, net.v[k]);
			break;
		}
	names_clear(&net);
}

/*
 * Each port's netdev: its GID entry gid_attrs/ndevs/0, else (InfiniBand, unreadable
 * entries) the first interface of the function's net/. The function's interfaces
 * belong to its main RDMA device: a ConnectX-8 "smiN" (the kernel's SMI device, always
 * named so) next to mlx5_N on one function must not claim mlx5_N's netdev.
 */
static void read_netdevs(struct scan *s, int devfd, int pcifd, const char *where,
			 const char *pci_where, const struct disc_device *dev,
			 struct disc_port *ports, size_t n)
{
	char path[64], buf[DISC_ATTR_MAX], fn_netdev[DISC_NETDEV_MAX + 1];
	bool need_fn = false;

	for (size_t i = 0; i < n; i++) {
		struct disc_port *p = &ports[i];
		int r;

		p->netdev[0] = '\0';
		/* An empty GID entry reads as EINVAL in the kernel: any error is "none". */
		snprintf(path, sizeof(path), "ports/%u/gid_attrs/ndevs/0", p->num);
		r = read_beneath(s, devfd, where, path, buf, sizeof(buf));
		if (r > 0) {
			if (name_is_safe(buf, DISC_NETDEV_MAX - 1))
				strcpy(p->netdev, buf);
			else
				problem(s,
					"%s: port %u netdev '%s' is not a valid interface name, "
					"ignoring",
					dev->name, p->num, SHOWN(buf));
		}
		need_fn = need_fn || !p->netdev[0];
	}
	if (!need_fn || pcifd < 0 ||
	    (strncmp(dev->name, "smi", 3) == 0 && digits_after(dev->name, 3)))
		return;
	first_netdev(s, open_beneath(s, pcifd, "net", O_RDONLY | O_DIRECTORY | O_NONBLOCK),
		     pci_where, fn_netdev);
	for (size_t i = 0; i < n; i++)
		if (!ports[i].netdev[0])
			strcpy(ports[i].netdev, fn_netdev);
}

/* Reads ports/<n>/<attr> ("state", "phys_state") into num and name; -1/"" when unknown. */
static void read_state(struct scan *s, int devfd, const char *where, const struct disc_device *dev,
		       unsigned port, const char *attr, int *num, char *name, size_t size)
{
	char path[64], buf[DISC_ATTR_MAX];
	int r;

	*num = -1;
	name[0] = '\0';
	snprintf(path, sizeof(path), "ports/%u/%s", port, attr);
	r = read_beneath(s, devfd, where, path, buf, sizeof(buf));
	if (r >= 0 && disc_parse_state(buf, num, name, size) < 0) {
		*num = -1;
		name[0] = '\0';
		problem(s, "%s: port %u %s '%s' is not 'N: NAME', using unknown", dev->name, port,
			attr, SHOWN(buf));
	} else if (r < 0 && !reported(r) && !strcmp(attr, "state")) {
		/* phys_state is optional for us: only the logical state decides health. */
		problem(s, "%s: port %u state unreadable (%s), using unknown", dev->name, port,
			errstr(r));
	}
}

static void scan_ports(struct scan *s, int devfd, struct disc_device *dev, int pcifd,
		       const char *where, const char *pci_where)
{
	_cleanup_free_ struct disc_port *ports = NULL;
	struct names l = {};
	char path[64];
	int fd, over;

	fd = open_beneath(s, devfd, "ports", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0) {
		problem(s, "%s: no readable ports directory (%s), no ports", dev->name, errstr(fd));
		return;
	}
	over = list_dir(fd, is_port_name, DISC_MAX_PORTS, &l);
	if (over < 0) {
		if (over == -ENOMEM)
			s->oom = true;
		problem(s, "%s: cannot list ports: %s", dev->name, errstr(over));
		return;
	}
	if (over > 0)
		problem(s, "%s: more than %d ports, ignoring %d", dev->name, DISC_MAX_PORTS, over);
	if (l.n == 0)
		goto out;
	ports = calloc(l.n, sizeof(*ports));
	if (!ports) {
		s->oom = true;
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct disc_port *p = &ports[i];

		p->num = (unsigned)strtoul(l.v[i], NULL, 10);
		snprintf(path, sizeof(path), "ports/%u/link_layer", p->num);
		read_string_attr(s, devfd, where, dev->name, path, p->link_layer,
				 sizeof(p->link_layer));
		read_state(s, devfd, where, dev, p->num, "state", &p->state, p->state_name,
			   sizeof(p->state_name));
		read_state(s, devfd, where, dev, p->num, "phys_state", &p->phys_state,
			   p->phys_state_name, sizeof(p->phys_state_name));
		snprintf(path, sizeof(path), "ports/%u/rate", p->num);
		read_string_attr(s, devfd, where, dev->name, path, p->rate, sizeof(p->rate));
	}
	read_netdevs(s, devfd, pcifd, where, pci_where, dev, ports, l.n);
	dev->ports = TAKE_PTR(ports);
	dev->n_ports = l.n;
out:
	names_clear(&l);
}

/*
 * A VF's PF netdev, from the PF function's net/ (physfn resolved inside the root). VFs
 * of one PF are usually listed in a row: the last PF read is remembered.
 */
static void read_pf_netdev(struct scan *s, const char *vf_path, const char *physfn,
			   struct disc_device *dev)
{
	char pfpath[PATH_BUF], where[DISC_NAME_MAX + 64];

	if (dev->pf_pci[0] && !strcmp(s->pf_cache_pci, dev->pf_pci)) {
		strcpy(dev->pf_netdev, s->pf_cache_netdev);
		return;
	}
	if (disc_path_join(vf_path, physfn, pfpath, sizeof(pfpath)) < 0 ||
	    strlen(pfpath) + 5 > sizeof(pfpath))
		return;
	strcat(pfpath, "/net");
	snprintf(where, sizeof(where), "class/infiniband/%s/device/physfn", dev->name);
	first_netdev(s, open_in_root(s, pfpath, O_RDONLY | O_DIRECTORY | O_NONBLOCK), where,
		     dev->pf_netdev);
	snprintf(s->pf_cache_pci, sizeof(s->pf_cache_pci), "%s", dev->pf_pci);
	strcpy(s->pf_cache_netdev, dev->pf_netdev);
}

static void scan_pci_function(struct scan *s, int pcifd, const char *where, struct disc_device *dev)
{
	char buf[DISC_ATTR_MAX], link[PATH_BUF];
	long long numa;
	int r;

	/* Auxiliary devices (SFs) have no vendor/device/numa_node files: silence is fine. */
	r = read_beneath(s, pcifd, where, "vendor", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->vendor_id) < 0)
		problem(s, "%s: vendor '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));
	r = read_beneath(s, pcifd, where, "device", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->device_id) < 0)
		problem(s, "%s: device '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));

	dev->numa_node = -1;
	r = read_beneath(s, pcifd, where, "numa_node", buf, sizeof(buf));
	if (r >= 0) {
		if (parse_int64(buf, &numa) < 0)
			problem(s, "%s: numa_node '%s' is not a number, using none", dev->name,
				SHOWN(buf));
		else if (numa < -1 || numa > DISC_MAX_NUMA_NODE)
			problem(s, "%s: numa_node %lld out of range, using none", dev->name, numa);
		else
			dev->numa_node = (int)numa;
	} else if (r == -EFBIG) {
		problem(s, "%s: numa_node too long, using none", dev->name);
	}

	if (read_opt_link(s, pcifd, where, "driver", link, sizeof(link)) >= 0) {
		const char *drv = base_name(link);

		if (name_is_safe(drv, DISC_NAME_MAX - 1))
			strcpy(dev->driver, drv);
		else
			problem(s, "%s: driver name '%s' is not safe, ignoring", dev->name,
				SHOWN(drv));
	}
	if (read_opt_link(s, pcifd, where, "physfn", link, sizeof(link)) >= 0) {
		const char *pf = base_name(link);

		dev->is_vf = true;
		if (disc_pci_addr_valid(pf))
			strcpy(dev->pf_pci, pf);
		else
			problem(s, "%s: physfn '%s' is not a PCI address, ignoring", dev->name,
				SHOWN(pf));
		read_pf_netdev(s, dev->dev_path, link, dev);
	}
}

static bool guid_valid(const char *g)
{
	if (strlen(g) != 19)
		return false;
	for (int i = 0; i < 19; i++)
		if ((i % 5 == 4) ? g[i] != ':' : hexval(g[i]) < 0)
			return false;
	return true;
}

/* Scans class/infiniband/<name>; returns 0 when the device was added, 1 when skipped. */
static int scan_device(struct scan *s, const char *name)
{
	char link[PATH_BUF], ibpath[PATH_BUF], pcipath[PATH_BUF], cls[PATH_BUF];
	char pci_where[DISC_NAME_MAX + 32];
	_cleanup_close_ int devfd = -1, pcifd = -1;
	struct disc_device *dev;
	int r;

	if (!disc_ibdev_name_ok(name)) {
		problem(s,
			"class/infiniband: unsafe device name '%s' (a CDI device name: "
			"[A-Za-z0-9_.:-], alphanumeric at both ends, not 'all' or digits only), "
			"skipping",
			SHOWN(name));
		return 1;
	}
	snprintf(cls, sizeof(cls), "class/infiniband/%s", name);
	r = read_link(s->root_fd, cls, link, sizeof(link));
	if (r == -EINVAL)
		r = disc_path_join(cls, "", ibpath, sizeof(ibpath)); /* a plain directory */
	else if (r >= 0)
		r = disc_path_join("class/infiniband", link, ibpath, sizeof(ibpath));
	if (r < 0) {
		problem(s, "%s: cannot resolve class/infiniband entry (%s), ignoring", name,
			errstr(r));
		return 1;
	}
	devfd = open_in_root(s, ibpath, O_PATH | O_DIRECTORY);
	if (devfd == -ENOENT) {
		problem(s, "%s: dangling link in class/infiniband, ignoring", name);
		return 1;
	}
	if (devfd == -ELOOP) {
		problem(s, "%s: symlink loop in class/infiniband (%s), ignoring", name,
			errstr(devfd));
		return 1;
	}
	if (devfd == -ENOTDIR) {
		problem(s, "%s: class/infiniband entry is not a directory, ignoring", name);
		return 1;
	}
	if (devfd < 0) {
		problem(s, "%s: cannot open %s (%s), ignoring", name, SHOWN(ibpath), errstr(devfd));
		return 1;
	}

	if (s->node->n_devices >= DISC_MAX_DEVICES) {
		problem(s, "%s: more than %d RDMA devices, ignoring", name, DISC_MAX_DEVICES);
		return 1;
	}
	if (ARRAY_RESERVE(s->node->devices, s->devices_cap, s->node->n_devices + 1) < 0) {
		s->oom = true;
		return 1;
	}
	dev = &s->node->devices[s->node->n_devices++];
	*dev = (struct disc_device){.numa_node = -1};
	strcpy(dev->name, name);
	/* Too long for the model (never so in the kernel): disc_refresh() then asks for a
	 * full scan. */
	if (strlen(ibpath) < sizeof(dev->ibdev_path))
		strcpy(dev->ibdev_path, ibpath);
	snprintf(pci_where, sizeof(pci_where), "class/infiniband/%s/device", name);

	/* The parent device: the PCI function, or an auxiliary device for SFs. */
	r = read_opt_link(s, devfd, cls, "device", link, sizeof(link));
	if (r >= 0) {
		r = disc_path_join(ibpath, link, pcipath, sizeof(pcipath));
		if (r >= 0 && (size_t)r < sizeof(dev->dev_path)) {
			strcpy(dev->dev_path, pcipath);
			pcifd = open_in_root(s, pcipath, O_PATH | O_DIRECTORY);
			if (pcifd < 0)
				problem(s, "%s: parent device %s unreadable (%s), ignoring", name,
					SHOWN(pcipath), errstr(pcifd));
		} else {
			problem(s, "%s: parent device path too long, ignoring", name);
		}
		if (disc_pci_addr_valid(base_name(dev->dev_path)))
			strcpy(dev->pci, base_name(dev->dev_path));
	}
	if (pcifd >= 0)
		scan_pci_function(s, pcifd, pci_where, dev);

	read_string_attr(s, devfd, cls, name, "node_guid", dev->node_guid, sizeof(dev->node_guid));
	if (dev->node_guid[0] && !guid_valid(dev->node_guid)) {
		problem(s, "%s: node_guid '%s' is not a GUID, ignoring", name,
			SHOWN(dev->node_guid));
		dev->node_guid[0] = '\0';
	}
	read_string_attr(s, devfd, cls, name, "fw_ver", dev->fw_ver, sizeof(dev->fw_ver));
	read_string_attr(s, devfd, cls, name, "node_type", dev->node_type, sizeof(dev->node_type));
	scan_ports(s, devfd, dev, pcifd, cls, pci_where);
	return 0;
}

static int device_cmp(const void *a, const void *b)
{
	const struct disc_device *x = a, *y = b;
	int r;

	if (!x->pci[0] != !y->pci[0])
		return x->pci[0] ? -1 : 1;
	r = disc_pci_compare(x->pci, y->pci);
	return r ? r : strcmp(x->name, y->name);
}

/* ---- character devices -------------------------------------------------------------- */

static struct disc_device *find_device(struct scan *s, const char *name)
{
	size_t lo = 0, hi = s->node->n_devices;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct disc_device *d = &s->node->devices[s->by_name[mid]];
		int c = strcmp(name, d->name);

		if (c == 0)
			return d;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int by_name_cmp(const void *a, const void *b, void *devices)
{
	const struct disc_device *d = devices;

	return strcmp(d[*(const size_t *)a].name, d[*(const size_t *)b].name);
}

static void check_node(struct scan *s, struct disc_chardev *c, const char *owner)
{
	struct stat st;

	if (s->devib_fd < 0)
		return; /* reported once for the whole dev root */
	if (fstatat(s->devib_fd, c->name, &st, 0) < 0) {
		if (errno == ENOENT)
			problem(s, "%s (%s): node %s/infiniband/%s missing", c->name, owner,
				s->dev_root, c->name);
		else
			problem(s, "%s (%s): node %s/infiniband/%s cannot be checked (%s)", c->name,
				owner, s->dev_root, c->name, errstr(-errno));
		return;
	}
	if (!S_ISCHR(st.st_mode)) {
		problem(s, "%s (%s): %s/infiniband/%s is not a character device", c->name, owner,
			s->dev_root, c->name);
		return;
	}
	if (major(st.st_rdev) != c->major || minor(st.st_rdev) != c->minor) {
		problem(s, "%s (%s): node %s/infiniband/%s is %u:%u but sysfs says %u:%u", c->name,
			owner, s->dev_root, c->name, major(st.st_rdev), minor(st.st_rdev), c->major,
			c->minor);
		return;
	}
	c->node_present = true;
}

/* Reads <class>/<entry>/dev into c; false (and a problem) on garbage. */
static bool read_chardev(struct scan *s, const char *cls, const char *entry, const char *owner,
			 struct disc_chardev *c)
{
	char path[PATH_BUF], buf[DISC_ATTR_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/%s/dev", cls, entry);
	r = read_in_root(s, path, buf, sizeof(buf));
	if (r < 0) {
		if (!reported(r))
			problem(s, "%s (%s): dev unreadable (%s), ignoring", entry, owner,
				errstr(r));
		return false;
	}
	r = parse_dev_numbers(buf, &c->major, &c->minor);
	if (r < 0 || c->major == 0) {
		problem(s, "%s (%s): dev '%s' is not a valid major:minor, ignoring", entry, owner,
			SHOWN(buf));
		return false;
	}
	snprintf(c->name, sizeof(c->name), "%s", entry);
	return true;
}

/* The RDMA device a char-device class entry belongs to (its "ibdev"), or NULL with a
 * problem recorded. */
static struct disc_device *class_entry_device(struct scan *s, const char *cls, const char *entry)
{
	char path[PATH_BUF], ibdev[DISC_NAME_MAX + 1];
	struct disc_device *dev;
	int r;

	snprintf(path, sizeof(path), "%s/%s/ibdev", cls, entry);
	r = read_in_root(s, path, ibdev, sizeof(ibdev));
	if (r < 0) {
		if (!reported(r))
			problem(s, "%s: ibdev unreadable (%s), ignoring", entry, errstr(r));
		return NULL;
	}
	dev = find_device(s, ibdev);
	if (!dev)
		problem(s, "%s: ibdev '%s' has no RDMA device, ignoring", entry, SHOWN(ibdev));
	return dev;
}

static void scan_uverbs(struct scan *s)
{
	const char *cls = "class/infiniband_verbs";
	struct names l = {};

	if (list_class(s, cls, is_uverbs_name, false, &l) < 0)
		return;
	for (size_t i = 0; i < l.n && !scan_stopped(s); i++) {
		struct disc_chardev c = {};
		struct disc_device *dev;

		dev = class_entry_device(s, cls, l.v[i]);
		if (!dev)
			continue;
		if (!read_chardev(s, cls, l.v[i], dev->name, &c))
			continue;
		if (dev->has_uverbs) {
			problem(s, "%s: %s already has %s, ignoring", l.v[i], dev->name,
				dev->uverbs.name);
			continue;
		}
		dev->uverbs = c;
		dev->has_uverbs = true;
		check_node(s, &dev->uverbs, dev->name);
	}
	names_clear(&l);
}

static void scan_mad(struct scan *s)
{
	const char *cls = "class/infiniband_mad";
	struct names l = {};
	char path[PATH_BUF], buf[DISC_ATTR_MAX];
	int r;

	if (list_class(s, cls, is_mad_name, false, &l) < 0)
		return;
	for (size_t i = 0; i < l.n && !scan_stopped(s); i++) {
		bool issm = l.v[i][0] == 'i';
		struct disc_chardev c = {};
		struct disc_device *dev;
		struct disc_port *port = NULL;
		long long pnum;

		dev = class_entry_device(s, cls, l.v[i]);
		if (!dev)
			continue;
		snprintf(path, sizeof(path), "%s/%s/port", cls, l.v[i]);
		r = read_in_root(s, path, buf, sizeof(buf));
		if (r >= 0 && parse_int64(buf, &pnum) >= 0)
			for (size_t k = 0; k < dev->n_ports; k++)
				if (dev->ports[k].num == pnum)
					port = &dev->ports[k];
		if (!port) {
			if (!reported(r))
				problem(s,
					"%s (%s): port '%s' is not a port of the device, ignoring",
					l.v[i], dev->name, r >= 0 ? SHOWN(buf) : "?");
			continue;
		}
		if (!read_chardev(s, cls, l.v[i], dev->name, &c))
			continue;
		if (issm ? port->has_issm : port->has_umad) {
			problem(s, "%s: %s port %u already has one, ignoring", l.v[i], dev->name,
				port->num);
			continue;
		}
		if (issm) {
			port->issm = c;
			port->has_issm = true;
			check_node(s, &port->issm, dev->name);
		} else {
			port->umad = c;
			port->has_umad = true;
			check_node(s, &port->umad, dev->name);
		}
	}
	names_clear(&l);
}

static void scan_rdma_cm(struct scan *s)
{
	struct disc_node *node = s->node;
	char buf[DISC_ATTR_MAX];
	int r;

	r = read_in_root(s, "class/misc/rdma_cm/dev", buf, sizeof(buf));
	if (r < 0) {
		if (node->n_devices > 0 && !reported(r))
			problem(s, "rdma_cm: class/misc/rdma_cm missing (rdma_ucm not loaded?), "
				   "no rdma_cm node");
		return;
	}
	r = parse_dev_numbers(buf, &node->rdma_cm.major, &node->rdma_cm.minor);
	if (r < 0 || node->rdma_cm.major == 0) {
		problem(s, "rdma_cm: dev '%s' is not a valid major:minor, ignoring", SHOWN(buf));
		return;
	}
	strcpy(node->rdma_cm.name, "rdma_cm");
	node->has_rdma_cm = true;
	check_node(s, &node->rdma_cm, "rdma_cm");
}

/* ---- what the scan listed, for disc_refresh() --------------------------------------- */

/* Packs n names, sorted with strcmp, into one buffer of NUL-terminated strings. */
static int pack_names(char **v, size_t n, char **ret, size_t *ret_len)
{
	_cleanup_free_ char **sorted = NULL;
	size_t len = 0, off = 0;
	char *buf;

	sorted = malloc((n + 1) * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		sorted[i] = v[i];
		len += strlen(v[i]) + 1;
	}
	if (n > 1)
		qsort(sorted, n, sizeof(*sorted), cmp_strp);
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(sorted[i]) + 1;

		memcpy(buf + off, sorted[i], k);
		off += k;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/*
 * Lists a directory (fd consumed) straight into the packed form: one buffer, no string
 * per entry, which is what keeps the periodic refresh cheap.
 */
static int list_packed(int fd, char **ret, size_t *ret_len)
{
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ char *raw = NULL, **v = NULL;
	size_t len = 0, cap = 0, n = 0, off = 0;
	struct dirent *de;

	d = fdopendir_consume(fd);
	if (!d)
		return -errno;
	while ((errno = 0, de = readdir(d))) {
		size_t k = strlen(de->d_name) + 1;

		if (dot_or_dot_dot(de->d_name))
			continue;
		if (n >= DISC_MAX_CLASS_ENTRIES)
			return -E2BIG;
		if (ARRAY_RESERVE(raw, cap, len + k) < 0)
			return -ENOMEM;
		memcpy(raw + len, de->d_name, k);
		len += k;
		n++;
	}
	if (errno)
		return -errno;
	v = malloc((n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = raw + off;
		off += strlen(raw + off) + 1;
	}
	return pack_names(v, n, ret, ret_len);
}

static bool packed_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* The listing of cls, packed; NULL/0 when the class is absent. */
static int list_class_packed(struct scan *s, const char *cls, char **ret, size_t *ret_len)
{
	int fd = open_in_root(s, cls, O_RDONLY | O_DIRECTORY | O_NONBLOCK);

	*ret = NULL;
	*ret_len = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	return list_packed(fd, ret, ret_len);
}

void disc_scan_state_free(struct disc_scan_state *st)
{
	if (!st)
		return;
	free(st->class_names);
	free(st->net_names);
	free(st->verbs_names);
	free(st);
}

/* Records the class/infiniband listing l and lists class/net (absent or unreadable: no
 * netdev rename will be seen by a refresh, which is all it costs). */
static int keep_scan_state(struct scan *s, const struct names *l)
{
	struct disc_scan_state *st = calloc(1, sizeof(*st));
	int r;

	if (!st)
		return -ENOMEM;
	s->node->scan_state = st;
	r = pack_names(l->v, l->n, &st->class_names, &st->class_len);
	if (r < 0)
		return r;
	r = list_class_packed(s, "class/net", &st->net_names, &st->net_len);
	if (r == -ENOMEM)
		return r;
	r = list_class_packed(s, "class/infiniband_verbs", &st->verbs_names, &st->verbs_len);
	return r == -ENOMEM ? r : 0;
}

/* ---- entry point -------------------------------------------------------------------- */

/* Opens the roots and chooses the link strategy; s->node is a fresh empty node. */
static int scan_begin(struct scan *s, const struct disc_options *opts, bool use_openat2)
{
	const char *root = opts && opts->sysfs_root ? opts->sysfs_root : "/sys";
	_cleanup_close_ int probe = -1;

	*s = (struct scan){.root_fd = -1, .devib_fd = -1};
	s->dev_root = opts && opts->dev_root ? opts->dev_root : "/dev";
	s->cancel = opts ? opts->cancel : NULL;
	s->deadline_usec = opts ? opts->deadline_usec : 0;
	s->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->root_fd < 0)
		return -errno;
	s->node = calloc(1, sizeof(*s->node));
	if (!s->node)
		return -ENOMEM;
	/* Older kernels and some seccomp profiles refuse openat2: walk the links ourselves. */
	probe = use_openat2 ? sys_openat2(s->root_fd, ".", O_PATH, RESOLVE_IN_ROOT) : -ENOSYS;
	s->openat2 = !(probe == -ENOSYS || probe == -EPERM);
	return 0;
}

static void scan_end(struct scan *s)
{
	free(s->by_name);
	if (s->devib_fd >= 0)
		close(s->devib_fd);
	if (s->root_fd >= 0)
		close(s->root_fd);
}

static int scan_char_devices(struct scan *s)
{
	s->by_name = malloc((s->node->n_devices + 1) * sizeof(*s->by_name));
	if (!s->by_name)
		return -ENOMEM;
	for (size_t i = 0; i < s->node->n_devices; i++)
		s->by_name[i] = i;
	qsort_r(s->by_name, s->node->n_devices, sizeof(*s->by_name), by_name_cmp, s->node->devices);
	scan_uverbs(s);
	scan_mad(s);
	scan_rdma_cm(s);
	return 0;
}

int disc_scan_with(const struct disc_options *opts, bool use_openat2, struct disc_node **ret_node)
{
	struct scan s;
	struct names l = {};
	int r;

	r = scan_begin(&s, opts, use_openat2);
	if (r < 0)
		goto finish;
	{
		_cleanup_close_ int devfd = open(s.dev_root, O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (devfd >= 0)
			s.devib_fd = openat(devfd, "infiniband", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}

	r = list_class(&s, "class/infiniband", NULL, true, &l);
	if (r < 0)
		goto finish;
	for (size_t i = 0; i < l.n && !s.oom && !scan_stopped(&s); i++)
		scan_device(&s, l.v[i]);
	r = keep_scan_state(&s, &l);
	if (r < 0)
		goto finish;
	names_clear(&l);
	if (s.node->n_devices > 1)
		qsort(s.node->devices, s.node->n_devices, sizeof(*s.node->devices), device_cmp);

	if (s.node->n_devices > 0 && s.devib_fd < 0)
		problem(&s, "%s/infiniband: missing, no RDMA device node is present", s.dev_root);
	r = scan_char_devices(&s);
	if (r < 0)
		goto finish;
	for (size_t i = 0; i < s.node->n_devices; i++)
		if (!s.node->devices[i].has_uverbs)
			problem(&s,
				"%s: no uverbs device, not usable through verbs, leaving it out",
				s.node->devices[i].name);
	if (s.problems_dropped) {
		s.node->n_problems--;
		free(s.node->problems[s.node->n_problems]);
		problem(&s, "... and %zu more problems", s.problems_dropped + 1);
	}
	r = s.stop ? s.stop : s.oom ? -ENOMEM : 0;
finish:
	names_clear(&l);
	scan_end(&s);
	if (r < 0) {
		disc_node_free(s.node);
		return r;
	}
	*ret_node = s.node;
	return 0;
}

int disc_scan(const struct disc_options *opts, struct disc_node **ret_node)
{
	return disc_scan_with(opts, true, ret_node);
}

/* ---- the periodic refresh ----------------------------------------------------------- */

/*
 * Reads one port attribute for the refresh, quietly: the refresh never reports, it
 * asks for a full scan instead. -EBADFD for anything but a regular file.
 */
static int refresh_read(struct scan *s, const struct disc_device *d, unsigned port,
			const char *attr, char *buf, size_t size)
{
	char path[DISC_PATH_MAX + 64];
	_cleanup_close_ int fd = -1;
	struct stat st;

	snprintf(path, sizeof(path), "%s/ports/%u/%s", d->ibdev_path, port, attr);
	fd = open_in_root(s, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	return read_attr_fd(fd, buf, size);
}

/*
 * Re-reads attr into num/name. False when a full scan is needed: the value was known
 * and now cannot be read or parsed (still unknown stays unknown, without a full scan
 * at every refresh).
 */
static bool refresh_state(struct scan *s, const struct disc_device *d, unsigned port,
			  const char *attr, int *num, char *name, size_t size, bool *changed)
{
	char buf[DISC_ATTR_MAX], nname[DISC_ATTR_MAX];
	int n = -1, r;

	r = refresh_read(s, d, port, attr, buf, sizeof(buf));
	if (r < 0 || disc_parse_state(buf, &n, nname, size) < 0)
		return *num < 0;
	if (n != *num || strcmp(nname, name)) {
		*num = n;
		strcpy(name, nname);
		*changed = true;
	}
	return true;
}

static bool refresh_ports(struct scan *s, struct disc_device *d, bool phys_always)
{
	if (!d->ibdev_path[0])
		return false;
	for (size_t i = 0; i < d->n_ports; i++) {
		struct disc_port *p = &d->ports[i];
		bool changed = false;

		if (!refresh_state(s, d, p->num, "state", &p->state, p->state_name,
				   sizeof(p->state_name), &changed))
			return false;
		/* The logical state decides health; the physical one rarely moves alone. */
		if ((changed || phys_always) &&
		    !refresh_state(s, d, p->num, "phys_state", &p->phys_state, p->phys_state_name,
				   sizeof(p->phys_state_name), &changed))
			return false;
	}
	return true;
}

struct packed_index {
	const char **v;
	size_t n;
};

static int packed_index(const char *buf, size_t len, struct packed_index *ret)
{
	size_t n = 0, off = 0;

	for (size_t i = 0; i < len; i++)
		n += buf[i] == '\0';
	ret->v = malloc((n + 1) * sizeof(*ret->v));
	if (!ret->v)
		return -ENOMEM;
	for (ret->n = 0; off < len; ret->n++) {
		ret->v[ret->n] = buf + off;
		off += strlen(buf + off) + 1;
	}
	return 0;
}

static bool in_index(const struct packed_index *ix, const char *name)
{
	return name[0] && bsearch(&name, ix->v, ix->n, sizeof(*ix->v), cmp_strp) != NULL;
}

/* The device's netdevs (or pf_netdev) are empty or gone from the new class/net. */
static bool netdevs_stale(const struct disc_device *d, const struct packed_index *net)
{
	for (size_t i = 0; i < d->n_ports; i++)
		if (!in_index(net, d->ports[i].netdev))
			return true;
	return d->is_vf && !in_index(net, d->pf_netdev);
}

/* Reads a device's netdevs again, the way scan_device() does. */
static void refresh_netdevs(struct scan *s, struct disc_device *d)
{
	char where[DISC_NAME_MAX + 32], pci_where[DISC_NAME_MAX + 32], link[PATH_BUF];
	_cleanup_close_ int devfd = -1, pcifd = -1;

	snprintf(where, sizeof(where), "class/infiniband/%s", d->name);
	snprintf(pci_where, sizeof(pci_where), "class/infiniband/%s/device", d->name);
	devfd = open_in_root(s, d->ibdev_path, O_PATH | O_DIRECTORY);
	if (devfd < 0) {
		problem(s, "%s: gone (%s)", where, errstr(devfd));
		return;
	}
	if (d->dev_path[0])
		pcifd = open_in_root(s, d->dev_path, O_PATH | O_DIRECTORY);
	read_netdevs(s, devfd, pcifd, where, pci_where, d, d->ports, d->n_ports);
	if (d->is_vf && pcifd >= 0 && read_link(pcifd, "physfn", link, sizeof(link)) >= 0) {
		d->pf_netdev[0] = '\0';
		read_pf_netdev(s, d->dev_path, link, d);
	}
}

/* Compares class/net with the scan's listing; re-reads the netdevs that may be stale. */
static int refresh_net(struct scan *s, struct disc_node *node)
{
	struct disc_scan_state *st = node->scan_state;
	struct packed_index ix = {};
	char *net;
	size_t len;
	int r;

	r = list_class_packed(s, "class/net", &net, &len);
	if (r < 0)
		return r == -ENOMEM ? r : 0; /* as unreadable as for the scan: nothing seen */
	if (packed_equal(net, len, st->net_names, st->net_len)) {
		free(net);
		return 0;
	}
	free(st->net_names);
	st->net_names = net;
	st->net_len = len;
	r = packed_index(net, len, &ix);
	if (r < 0)
		return r;
	for (size_t i = 0; i < node->n_devices && !scan_stopped(s); i++)
		if (netdevs_stale(&node->devices[i], &ix))
			refresh_netdevs(s, &node->devices[i]);
	free(ix.v);
	return s->stop;
}

int disc_refresh_with(const struct disc_options *opts, const struct disc_node *old,
		      bool phys_always, struct disc_node **ret_node, bool *ret_need_full)
{
	struct disc_node *node = NULL;
	_cleanup_free_ char *cls = NULL;
	bool full = true;
	struct scan s;
	size_t len;
	int r;

	if (!old || !ret_node || !ret_need_full)
		return -EINVAL;
	if (!old->scan_state) {
		*ret_node = NULL;
		*ret_need_full = true;
		return 0;
	}
	r = scan_begin(&s, opts, true);
	if (r < 0)
		goto finish;
	r = list_class_packed(&s, "class/infiniband", &cls, &len);
	if (r < 0 && r != -EACCES && r != -EPERM && r != -ENOMEM)
		r = 0; /* what the scan reports as a problem: let it */
	if (r < 0)
		goto finish;
	if (!packed_equal(cls, len, old->scan_state->class_names, old->scan_state->class_len))
		goto finish; /* a device came, went or was renamed */
	free(TAKE_PTR(cls));
	r = list_class_packed(&s, "class/infiniband_verbs", &cls, &len);
	if (r < 0 && r != -ENOMEM)
		r = 0; /* unreadable: compares as absent, the full scan reports it */
	if (r < 0)
		goto finish;
	if (!packed_equal(cls, len, old->scan_state->verbs_names, old->scan_state->verbs_len))
		goto finish; /* a uverbs device came or went (a driver loaded or unbound) */
	node = disc_node_copy(old);
	if (!node) {
		r = -ENOMEM;
		goto finish;
	}
	for (size_t i = 0; i < node->n_devices; i++) {
		if (scan_stopped(&s)) {
			r = s.stop;
			goto finish;
		}
		if (!refresh_ports(&s, &node->devices[i], phys_always))
			goto finish;
	}
	r = refresh_net(&s, node);
	if (r < 0)
		goto finish;
	/* Whatever the refresh found wrong is for the full scan to say. */
	full = s.node->n_problems > 0;
	r = s.oom ? -ENOMEM : 0;
finish:
	scan_end(&s);
	disc_node_free(s.node);
	if (r < 0 || full) {
		disc_node_free(node);
		node = NULL;
	}
	if (r < 0)
		return r;
	*ret_node = node;
	*ret_need_full = full;
	return 0;
}

int disc_refresh(const struct disc_options *opts, const struct disc_node *old,
		 struct disc_node **ret_node, bool *ret_need_full)
{
	return disc_refresh_with(opts, old, false, ret_node, ret_need_full);
}
