/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs -> device model. Every read is relative to a dirfd on the sysfs root, so the
 * whole scan honours --sysfs-root. Class links are resolved inside that root: with
 * openat2(RESOLVE_IN_ROOT) where the kernel has it (absolute targets restart at the
 * root, ".." stops there), else by walking the links ourselves with the same rules.
 * Attribute files below a resolved directory are opened with RESOLVE_BENEATH and no
 * symlinks at all, as the kernel never puts a symlink where an attribute is expected.
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

#include "common.h"
#include "discovery-internal.h"
#include "discovery.h"

#define PATH_BUF 4096

struct scan {
	int root_fd;
	int devib_fd; /* <dev-root>/infiniband, -1 when missing */
	bool openat2;
	bool oom;
	const char *dev_root;
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

/* Copies untrusted text for a message: printable, no quotes, bounded. */
static const char *shown(const char *in, char *buf, size_t size)
{
	size_t i, j = 0;

	for (i = 0; in[i] && j + 4 < size; i++) {
		unsigned char c = (unsigned char)in[i];

		buf[j++] = (c < 0x20 || c > 0x7e || c == '\'') ? '?' : (char)c;
	}
	if (in[i]) {
		memcpy(buf + j, "...", 3);
		j += 3;
	}
	buf[j] = '\0';
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
	if (node->n_problems == s->problems_cap) {
		size_t ncap = s->problems_cap ? s->problems_cap * 2 : 16;
		char **n = realloc(node->problems, ncap * sizeof(*n));

		if (!n) {
			s->oom = true;
			return;
		}
		node->problems = n;
		s->problems_cap = ncap;
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
	if (s->openat2)
		return sys_openat2(s->root_fd, path[0] ? path : ".", flags,
				   RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	return open_in_root_slow(s->root_fd, path, flags);
}

/* Opens path below dirfd without following any symlink and without "..". */
static int open_beneath(struct scan *s, int dirfd, const char *path, int flags)
{
	char comp[NAME_MAX + 1];
	_cleanup_close_ int cur = -1;
	const char *p = path;

	if (s->openat2)
		return sys_openat2(dirfd, path, flags,
				   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
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

static int read_beneath(struct scan *s, int dirfd, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open_beneath(s, dirfd, path, O_RDONLY);

	if (fd < 0)
		return fd;
	return read_attr_fd(fd, buf, size);
}

static int read_in_root(struct scan *s, const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open_in_root(s, path, O_RDONLY);

	if (fd < 0)
		return fd;
	return read_attr_fd(fd, buf, size);
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

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/*
 * Reads a string attribute into dst (size DISC_ATTR_MAX or less); missing -> "",
 * garbage (too long, not printable) -> "" and a problem.
 */
static void read_string_attr(struct scan *s, int dirfd, const char *devname, const char *attr,
			     char *dst, size_t size)
{
	int r = read_beneath(s, dirfd, attr, dst, size);

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
 * class is absent). Entries beyond the cap are reported, not silently dropped.
 */
static int list_class(struct scan *s, const char *cls, bool (*keep)(const char *),
		      struct names *ret)
{
	int fd, over;

	fd = open_in_root(s, cls, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	over = list_dir(fd, keep, DISC_MAX_CLASS_ENTRIES, ret);
	if (over == -ENOMEM)
		s->oom = true;
	if (over < 0)
		return over;
	if (over > 0)
		problem(s, "%s: more than %d entries, ignoring %d", cls, DISC_MAX_CLASS_ENTRIES,
			over);
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

/*
 * The function's interfaces belong to its main RDMA device: a ConnectX-8 "smiN" (the
 * kernel's SMI device, always named so) next to mlx5_N on one function must not claim
 * mlx5_N's netdev.
 */
static void fill_netdev_from_function(struct scan *s, int pcifd, const char *ibdev,
				      struct disc_port *ports, size_t n)
{
	struct names net = {};
	int fd;

	if (pcifd < 0)
		return;
	if (strncmp(ibdev, "smi", 3) == 0 && digits_after(ibdev, 3))
		return;
	fd = open_beneath(s, pcifd, "net", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return;
	if (list_dir(fd, NULL, 4096, &net) == -ENOMEM)
		s->oom = true;
	for (size_t k = 0; k < net.n; k++) {
		if (!name_is_safe(net.v[k], DISC_NETDEV_MAX - 1))
			continue;
		for (size_t i = 0; i < n; i++)
			if (!ports[i].netdev[0])
				strcpy(ports[i].netdev, net.v[k]);
		break;
	}
	names_clear(&net);
}

static void scan_ports(struct scan *s, int devfd, struct disc_device *dev, int pcifd)
{
	_cleanup_free_ struct disc_port *ports = NULL;
	struct names l = {};
	char path[64], buf[DISC_ATTR_MAX];
	int fd, over;

	fd = open_beneath(s, devfd, "ports", O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		problem(s, "%s: no readable ports directory, no ports", dev->name);
		return;
	}
	over = list_dir(fd, is_port_name, DISC_MAX_PORTS, &l);
	if (over < 0) {
		if (over == -ENOMEM)
			s->oom = true;
		problem(s, "%s: cannot list ports: %s", dev->name, strerror(-over));
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
		int r;

		p->num = (unsigned)strtoul(l.v[i], NULL, 10);
		p->state = p->phys_state = -1;
		snprintf(path, sizeof(path), "ports/%u/link_layer", p->num);
		read_string_attr(s, devfd, dev->name, path, p->link_layer, sizeof(p->link_layer));

		snprintf(path, sizeof(path), "ports/%u/state", p->num);
		r = read_beneath(s, devfd, path, buf, sizeof(buf));
		if (r >= 0 &&
		    disc_parse_state(buf, &p->state, p->state_name, sizeof(p->state_name)) < 0)
			problem(s, "%s: port %u state '%s' is not 'N: NAME', using unknown",
				dev->name, p->num, SHOWN(buf));
		else if (r < 0)
			problem(s, "%s: port %u state unreadable (%s), using unknown", dev->name,
				p->num, strerror(-r));

		snprintf(path, sizeof(path), "ports/%u/phys_state", p->num);
		r = read_beneath(s, devfd, path, buf, sizeof(buf));
		if (r >= 0 && disc_parse_state(buf, &p->phys_state, p->phys_state_name,
					       sizeof(p->phys_state_name)) < 0)
			problem(s, "%s: port %u phys_state '%s' is not 'N: NAME', using unknown",
				dev->name, p->num, SHOWN(buf));

		snprintf(path, sizeof(path), "ports/%u/rate", p->num);
		read_string_attr(s, devfd, dev->name, path, p->rate, sizeof(p->rate));

		/* An empty GID entry reads as EINVAL in the kernel: any error is "none". */
		snprintf(path, sizeof(path), "ports/%u/gid_attrs/ndevs/0", p->num);
		r = read_beneath(s, devfd, path, buf, sizeof(buf));
		if (r > 0) {
			if (name_is_safe(buf, DISC_NETDEV_MAX - 1))
				strcpy(p->netdev, buf);
			else
				problem(s,
					"%s: port %u netdev '%s' is not a valid interface name, "
					"ignoring",
					dev->name, p->num, SHOWN(buf));
		}
	}

	/* Ports without a GID netdev (InfiniBand, unreadable entries) take the first
	 * interface of the function's net/. */
	for (size_t i = 0; i < l.n; i++)
		if (!ports[i].netdev[0]) {
			fill_netdev_from_function(s, pcifd, dev->name, ports, l.n);
			break;
		}
	dev->ports = TAKE_PTR(ports);
	dev->n_ports = l.n;
out:
	names_clear(&l);
}

static void scan_pci_function(struct scan *s, int pcifd, struct disc_device *dev)
{
	char buf[DISC_ATTR_MAX], link[PATH_BUF];
	long long numa;
	int r;

	/* Auxiliary devices (SFs) have no vendor/device/numa_node files: silence is fine. */
	r = read_beneath(s, pcifd, "vendor", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->vendor_id) < 0)
		problem(s, "%s: vendor '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));
	r = read_beneath(s, pcifd, "device", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->device_id) < 0)
		problem(s, "%s: device '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));

	dev->numa_node = -1;
	r = read_beneath(s, pcifd, "numa_node", buf, sizeof(buf));
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

	if (read_link(pcifd, "driver", link, sizeof(link)) >= 0) {
		const char *drv = base_name(link);

		if (name_is_safe(drv, DISC_NAME_MAX - 1))
			strcpy(dev->driver, drv);
		else
			problem(s, "%s: driver name '%s' is not safe, ignoring", dev->name,
				SHOWN(drv));
	}
	if (read_link(pcifd, "physfn", link, sizeof(link)) >= 0) {
		const char *pf = base_name(link);

		dev->is_vf = true;
		if (disc_pci_addr_valid(pf))
			strcpy(dev->pf_pci, pf);
		else
			problem(s, "%s: physfn '%s' is not a PCI address, ignoring", dev->name,
				SHOWN(pf));
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
			strerror(-r));
		return 1;
	}
	devfd = open_in_root(s, ibpath, O_PATH | O_DIRECTORY);
	if (devfd == -ENOENT || devfd == -ENOTDIR || devfd == -ELOOP) {
		problem(s, "%s: dangling link in class/infiniband, ignoring", name);
		return 1;
	}
	if (devfd < 0) {
		problem(s, "%s: cannot open %s (%s), ignoring", name, SHOWN(ibpath),
			strerror(-devfd));
		return 1;
	}

	if (s->node->n_devices >= DISC_MAX_DEVICES) {
		problem(s, "%s: more than %d RDMA devices, ignoring", name, DISC_MAX_DEVICES);
		return 1;
	}
	if (s->node->n_devices == s->devices_cap) {
		size_t ncap = s->devices_cap ? s->devices_cap * 2 : 16;
		struct disc_device *n = realloc(s->node->devices, ncap * sizeof(*n));

		if (!n) {
			s->oom = true;
			return 1;
		}
		s->node->devices = n;
		s->devices_cap = ncap;
	}
	dev = &s->node->devices[s->node->n_devices++];
	*dev = (struct disc_device){.numa_node = -1};
	strcpy(dev->name, name);

	/* The parent device: the PCI function, or an auxiliary device for SFs. */
	r = read_link(devfd, "device", link, sizeof(link));
	if (r >= 0) {
		r = disc_path_join(ibpath, link, pcipath, sizeof(pcipath));
		if (r >= 0 && (size_t)r < sizeof(dev->dev_path)) {
			strcpy(dev->dev_path, pcipath);
			pcifd = open_in_root(s, pcipath, O_PATH | O_DIRECTORY);
			if (pcifd < 0)
				problem(s, "%s: parent device %s unreadable (%s), ignoring", name,
					SHOWN(pcipath), strerror(-pcifd));
		} else {
			problem(s, "%s: parent device path too long, ignoring", name);
		}
		if (disc_pci_addr_valid(base_name(dev->dev_path)))
			strcpy(dev->pci, base_name(dev->dev_path));
	}
	if (pcifd >= 0)
		scan_pci_function(s, pcifd, dev);

	read_string_attr(s, devfd, name, "node_guid", dev->node_guid, sizeof(dev->node_guid));
	if (dev->node_guid[0] && !guid_valid(dev->node_guid)) {
		problem(s, "%s: node_guid '%s' is not a GUID, ignoring", name,
			SHOWN(dev->node_guid));
		dev->node_guid[0] = '\0';
	}
	read_string_attr(s, devfd, name, "fw_ver", dev->fw_ver, sizeof(dev->fw_ver));
	read_string_attr(s, devfd, name, "node_type", dev->node_type, sizeof(dev->node_type));
	scan_ports(s, devfd, dev, pcifd);
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
		problem(s, "%s (%s): node %s/infiniband/%s missing", c->name, owner, s->dev_root,
			c->name);
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
		problem(s, "%s (%s): dev unreadable (%s), ignoring", entry, owner, strerror(-r));
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
		problem(s, "%s: ibdev unreadable (%s), ignoring", entry, strerror(-r));
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

	if (list_class(s, cls, is_uverbs_name, &l) < 0)
		return;
	for (size_t i = 0; i < l.n; i++) {
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

	if (list_class(s, cls, is_mad_name, &l) < 0)
		return;
	for (size_t i = 0; i < l.n; i++) {
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
			problem(s, "%s (%s): port '%s' is not a port of the device, ignoring",
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
		if (node->n_devices > 0)
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

/* ---- entry point -------------------------------------------------------------------- */

int disc_scan_with(const struct disc_options *opts, bool use_openat2, struct disc_node **ret_node)
{
	const char *root = opts && opts->sysfs_root ? opts->sysfs_root : "/sys";
	struct scan s = {.root_fd = -1, .devib_fd = -1};
	struct names l = {};
	_cleanup_close_ int probe = -1;
	int r;

	s.dev_root = opts && opts->dev_root ? opts->dev_root : "/dev";
	s.root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.root_fd < 0)
		return -errno;
	s.node = calloc(1, sizeof(*s.node));
	if (!s.node) {
		r = -ENOMEM;
		goto finish;
	}
	/* Older kernels and some seccomp profiles refuse openat2: walk the links ourselves. */
	probe = use_openat2 ? sys_openat2(s.root_fd, ".", O_PATH, RESOLVE_IN_ROOT) : -ENOSYS;
	s.openat2 = !(probe == -ENOSYS || probe == -EPERM);

	{
		_cleanup_close_ int devfd = open(s.dev_root, O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (devfd >= 0)
			s.devib_fd = openat(devfd, "infiniband", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}

	r = list_class(&s, "class/infiniband", NULL, &l);
	if (r < 0)
		goto finish;
	for (size_t i = 0; i < l.n && !s.oom; i++)
		scan_device(&s, l.v[i]);
	names_clear(&l);
	if (s.node->n_devices > 1)
		qsort(s.node->devices, s.node->n_devices, sizeof(*s.node->devices), device_cmp);

	if (s.node->n_devices > 0 && s.devib_fd < 0)
		problem(&s, "%s/infiniband: missing, no RDMA device node is present", s.dev_root);
	s.by_name = malloc((s.node->n_devices + 1) * sizeof(*s.by_name));
	if (!s.by_name) {
		r = -ENOMEM;
		goto finish;
	}
	for (size_t i = 0; i < s.node->n_devices; i++)
		s.by_name[i] = i;
	qsort_r(s.by_name, s.node->n_devices, sizeof(*s.by_name), by_name_cmp, s.node->devices);

	scan_uverbs(&s);
	scan_mad(&s);
	scan_rdma_cm(&s);
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
	r = s.oom ? -ENOMEM : 0;
finish:
	names_clear(&l);
	free(s.by_name);
	if (s.devib_fd >= 0)
		close(s.devib_fd);
	close(s.root_fd);
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
