/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sysfs -> device model. Every read goes through the readers of sysfs.c, relative to a
 * dirfd on the sysfs root, so the whole scan honours --sysfs-root; what they cannot read
 * becomes a problem line here.
 *
 * The cost that matters is system calls (about 60 per device), so each directory is
 * opened once and attributes are read with a single read() into a bounded buffer.
 */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common.h"
#include "scan-internal.h"

/* ---- problems --------------------------------------------------------------------- */

/* strerror() may format into a static buffer; scans run on worker threads. */
const char *disc_errstr(int r)
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

bool disc_scan_stopped(struct scan *s)
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

void disc_problem(struct scan *s, const char *fmt, ...)
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

/* Errors the read helpers below have already turned into a problem line. */
static bool reported(int r)
{
	return r == -EBADFD || r == -EACCES || r == -EPERM;
}

/*
 * A read's result r as a problem line where the reader could not tell it: where/path
 * name the file (where may be NULL: path is then root-relative). Anything but a regular
 * file (-EBADFD) and a permission error (-EACCES/-EPERM) are recorded; other errors are
 * the caller's to judge (a missing attribute is often normal). Returns r.
 */
static int read_checked(struct scan *s, int r, const char *where, const char *path)
{
	if (r == -EBADFD)
		disc_problem(s, "%s%s%s: not a regular file, ignoring", where ? where : "",
			     where ? "/" : "", path);
	else if (r == -EACCES || r == -EPERM)
		disc_problem(s, "%s%s%s: %s, ignoring", where ? where : "", where ? "/" : "", path,
			     disc_errstr(r));
	return r;
}

static int read_beneath(struct scan *s, int dirfd, const char *where, const char *path, char *buf,
			size_t size)
{
	return read_checked(s, disc_sysfs_read_beneath(&s->sys, dirfd, path, buf, size), where,
			    path);
}

static int read_in_root(struct scan *s, const char *path, char *buf, size_t size)
{
	return read_checked(s, disc_sysfs_read_in_root(&s->sys, path, buf, size), NULL, path);
}

/*
 * A link that may be missing (not every device has a driver, only VFs a physfn): missing
 * is normal, anything else (a permission error, an over-long target) is a problem.
 */
static int read_opt_link(struct scan *s, int dirfd, const char *where, const char *path, char *buf,
			 size_t size)
{
	int r = disc_sysfs_read_link(dirfd, path, buf, size);

	if (r < 0 && r != -ENOENT && r != -EINVAL)
		disc_problem(s, "%s/%s: cannot read link (%s), ignoring", where, path,
			     disc_errstr(r));
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
		disc_problem(s, "%s: %s longer than %zu bytes, ignoring", devname, attr, size - 1);
	else if (r >= 0 || r == -EBADMSG)
		disc_problem(s, "%s: %s is not printable text, ignoring", devname, attr);
	dst[0] = '\0';
}

/*
 * Lists the entries of a class directory that keep() accepts into ret (empty when the
 * class is absent). Entries beyond the cap are reported, not silently dropped. A class
 * that exists but cannot be listed is a problem line, or with `required` (the caller
 * cannot tell "none" from "not allowed to look") a permission error is returned.
 */
static int list_class(struct scan *s, const char *cls, bool (*keep)(const char *), bool required,
		      struct disc_names *ret)
{
	int fd, over;

	fd = disc_sysfs_open_in_root(&s->sys, cls, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd == -ENOENT)
		return 0;
	if (fd >= 0) {
		over = disc_sysfs_list_dir(fd, keep, DISC_MAX_CLASS_ENTRIES, ret);
		if (over >= 0) {
			if (over > 0)
				disc_problem(s, "%s: more than %d entries, ignoring %d", cls,
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
	disc_problem(s, "%s: cannot be listed (%s), ignoring", cls, disc_errstr(fd));
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
	struct disc_names net = {};
	int r;

	out[0] = '\0';
	if (fd == -ENOENT || fd == -ENOTDIR)
		return;
	r = fd < 0 ? fd : disc_sysfs_list_dir(fd, NULL, 4096, &net);
	if (r == -ENOMEM)
		s->oom = true;
	else if (r < 0)
		disc_problem(s, "%s/net: cannot be listed (%s), ignoring", where, disc_errstr(r));
	for (size_t k = 0; k < net.n; k++)
		if (name_is_safe(net.v[k], DISC_NETDEV_MAX - 1)) {
			strcpy(out, net.v[k]);
			break;
		}
	disc_names_clear(&net);
}

/*
 * Each port's netdev: its GID entry gid_attrs/ndevs/0, else (InfiniBand, unreadable
 * entries) the first interface of the function's net/. The function's interfaces
 * belong to its main RDMA device: a ConnectX-8 "smiN" (the kernel's SMI device, always
 * named so) next to mlx5_N on one function must not claim mlx5_N's netdev.
 */
void disc_read_netdevs(struct scan *s, int devfd, int pcifd, const char *where,
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
				disc_problem(
				    s,
				    "%s: port %u netdev '%s' is not a valid interface name, "
				    "ignoring",
				    dev->name, p->num, SHOWN(buf));
		}
		need_fn = need_fn || !p->netdev[0];
	}
	if (!need_fn || pcifd < 0 ||
	    (strncmp(dev->name, "smi", 3) == 0 && digits_after(dev->name, 3)))
		return;
	first_netdev(
	    s, disc_sysfs_open_beneath(&s->sys, pcifd, "net", O_RDONLY | O_DIRECTORY | O_NONBLOCK),
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
		disc_problem(s, "%s: port %u %s '%s' is not 'N: NAME', using unknown", dev->name,
			     port, attr, SHOWN(buf));
	} else if (r < 0 && !reported(r) && !strcmp(attr, "state")) {
		/* phys_state is optional for us: only the logical state decides health. */
		disc_problem(s, "%s: port %u state unreadable (%s), using unknown", dev->name, port,
			     disc_errstr(r));
	}
}

static void scan_ports(struct scan *s, int devfd, struct disc_device *dev, int pcifd,
		       const char *where, const char *pci_where)
{
	_cleanup_free_ struct disc_port *ports = NULL;
	struct disc_names l = {};
	char path[64];
	int fd, over;

	fd = disc_sysfs_open_beneath(&s->sys, devfd, "ports", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	if (fd < 0) {
		disc_problem(s, "%s: no readable ports directory (%s), no ports", dev->name,
			     disc_errstr(fd));
		return;
	}
	over = disc_sysfs_list_dir(fd, is_port_name, DISC_MAX_PORTS, &l);
	if (over < 0) {
		if (over == -ENOMEM)
			s->oom = true;
		disc_problem(s, "%s: cannot list ports: %s", dev->name, disc_errstr(over));
		return;
	}
	if (over > 0)
		disc_problem(s, "%s: more than %d ports, ignoring %d", dev->name, DISC_MAX_PORTS,
			     over);
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
	disc_read_netdevs(s, devfd, pcifd, where, pci_where, dev, ports, l.n);
	dev->ports = TAKE_PTR(ports);
	dev->n_ports = l.n;
out:
	disc_names_clear(&l);
}

/*
 * A VF's PF netdev, from the PF function's net/ (physfn resolved inside the root). VFs
 * of one PF are usually listed in a row: the last PF read is remembered.
 */
void disc_read_pf_netdev(struct scan *s, const char *vf_path, const char *physfn,
			 struct disc_device *dev)
{
	char pfpath[DISC_PATH_BUF], where[DISC_NAME_MAX + 64];

	if (dev->pf_pci[0] && !strcmp(s->pf_cache_pci, dev->pf_pci)) {
		strcpy(dev->pf_netdev, s->pf_cache_netdev);
		return;
	}
	if (disc_path_join(vf_path, physfn, pfpath, sizeof(pfpath)) < 0 ||
	    strlen(pfpath) + 5 > sizeof(pfpath))
		return;
	strcat(pfpath, "/net");
	snprintf(where, sizeof(where), "class/infiniband/%s/device/physfn", dev->name);
	first_netdev(s,
		     disc_sysfs_open_in_root(&s->sys, pfpath, O_RDONLY | O_DIRECTORY | O_NONBLOCK),
		     where, dev->pf_netdev);
	snprintf(s->pf_cache_pci, sizeof(s->pf_cache_pci), "%s", dev->pf_pci);
	strcpy(s->pf_cache_netdev, dev->pf_netdev);
}

static void scan_pci_function(struct scan *s, int pcifd, const char *where, struct disc_device *dev)
{
	char buf[DISC_ATTR_MAX], link[DISC_PATH_BUF];
	long long numa;
	int r;

	/* Auxiliary devices (SFs) have no vendor/device/numa_node files: silence is fine. */
	r = read_beneath(s, pcifd, where, "vendor", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->vendor_id) < 0)
		disc_problem(s, "%s: vendor '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));
	r = read_beneath(s, pcifd, where, "device", buf, sizeof(buf));
	if (r >= 0 && disc_parse_pci_id(buf, &dev->device_id) < 0)
		disc_problem(s, "%s: device '%s' is not a PCI id, ignoring", dev->name, SHOWN(buf));

	dev->numa_node = -1;
	r = read_beneath(s, pcifd, where, "numa_node", buf, sizeof(buf));
	if (r >= 0) {
		if (parse_int64(buf, &numa) < 0)
			disc_problem(s, "%s: numa_node '%s' is not a number, using none", dev->name,
				     SHOWN(buf));
		else if (numa < -1 || numa > DISC_MAX_NUMA_NODE)
			disc_problem(s, "%s: numa_node %lld out of range, using none", dev->name,
				     numa);
		else
			dev->numa_node = (int)numa;
	} else if (r == -EFBIG) {
		disc_problem(s, "%s: numa_node too long, using none", dev->name);
	}

	if (read_opt_link(s, pcifd, where, "driver", link, sizeof(link)) >= 0) {
		const char *drv = base_name(link);

		if (name_is_safe(drv, DISC_NAME_MAX - 1))
			strcpy(dev->driver, drv);
		else
			disc_problem(s, "%s: driver name '%s' is not safe, ignoring", dev->name,
				     SHOWN(drv));
	}
	if (read_opt_link(s, pcifd, where, "physfn", link, sizeof(link)) >= 0) {
		const char *pf = base_name(link);

		dev->is_vf = true;
		if (disc_pci_addr_valid(pf))
			strcpy(dev->pf_pci, pf);
		else
			disc_problem(s, "%s: physfn '%s' is not a PCI address, ignoring", dev->name,
				     SHOWN(pf));
		disc_read_pf_netdev(s, dev->dev_path, link, dev);
	}
}

/*
 * Resolves the class entry cls ("class/infiniband/mlx5_0") inside the root into path
 * (size DISC_PATH_BUF): its link target joined onto the class directory cls_dir, or the
 * entry itself when it is a plain directory. Quiet: 0 or -errno.
 */
static int resolve_class_entry(struct scan *s, const char *cls_dir, const char *cls, char *path)
{
	char link[DISC_PATH_BUF];
	int r;

	r = disc_sysfs_read_link(s->sys.root_fd, cls, link, sizeof(link));
	if (r == -EINVAL)
		return disc_path_join(cls, "", path, DISC_PATH_BUF);
	if (r < 0)
		return r;
	return disc_path_join(cls_dir, link, path, DISC_PATH_BUF);
}

/*
 * Resolves class/infiniband/<name> inside the root into ibpath (size DISC_PATH_BUF) and
 * opens it: the fd, or -1 with a problem recorded.
 */
static int open_device_dir(struct scan *s, const char *name, const char *cls, char *ibpath)
{
	int r, fd;

	r = resolve_class_entry(s, "class/infiniband", cls, ibpath);
	if (r < 0) {
		disc_problem(s, "%s: cannot resolve class/infiniband entry (%s), ignoring", name,
			     disc_errstr(r));
		return -1;
	}
	fd = disc_sysfs_open_in_root(&s->sys, ibpath, O_PATH | O_DIRECTORY);
	if (fd == -ENOENT)
		disc_problem(s, "%s: dangling link in class/infiniband, ignoring", name);
	else if (fd == -ELOOP)
		disc_problem(s, "%s: symlink loop in class/infiniband (%s), ignoring", name,
			     disc_errstr(fd));
	else if (fd == -ENOTDIR)
		disc_problem(s, "%s: class/infiniband entry is not a directory, ignoring", name);
	else if (fd < 0)
		disc_problem(s, "%s: cannot open %s (%s), ignoring", name, SHOWN(ibpath),
			     disc_errstr(fd));
	return fd < 0 ? -1 : fd;
}

/* A new zeroed device named name at the end of the node, or NULL (problem or s->oom). */
static struct disc_device *add_device(struct scan *s, const char *name)
{
	struct disc_device *dev;

	if (s->node->n_devices >= DISC_MAX_DEVICES) {
		disc_problem(s, "%s: more than %d RDMA devices, ignoring", name, DISC_MAX_DEVICES);
		return NULL;
	}
	if (ARRAY_RESERVE(s->node->devices, s->devices_cap, s->node->n_devices + 1) < 0) {
		s->oom = true;
		return NULL;
	}
	dev = &s->node->devices[s->node->n_devices++];
	*dev = (struct disc_device){.numa_node = -1};
	strcpy(dev->name, name);
	return dev;
}

/* The parent device (the PCI function, or an auxiliary device for SFs): its path and PCI
 * address into dev, its directory opened (-1 when it has none or it is unreadable). */
static int open_parent(struct scan *s, int devfd, const char *cls, const char *ibpath,
		       struct disc_device *dev)
{
	char link[DISC_PATH_BUF], pcipath[DISC_PATH_BUF];
	int r, fd = -1;

	r = read_opt_link(s, devfd, cls, "device", link, sizeof(link));
	if (r < 0)
		return -1;
	r = disc_path_join(ibpath, link, pcipath, sizeof(pcipath));
	if (r >= 0 && (size_t)r < sizeof(dev->dev_path)) {
		strcpy(dev->dev_path, pcipath);
		fd = disc_sysfs_open_in_root(&s->sys, pcipath, O_PATH | O_DIRECTORY);
		if (fd < 0)
			disc_problem(s, "%s: parent device %s unreadable (%s), ignoring", dev->name,
				     SHOWN(pcipath), disc_errstr(fd));
	} else {
		disc_problem(s, "%s: parent device path too long, ignoring", dev->name);
	}
	if (disc_pci_addr_valid(base_name(dev->dev_path)))
		strcpy(dev->pci, base_name(dev->dev_path));
	return fd < 0 ? -1 : fd;
}

/* Scans class/infiniband/<name>; returns 0 when the device was added, 1 when skipped. */
static int scan_device(struct scan *s, const char *name)
{
	char ibpath[DISC_PATH_BUF], cls[DISC_PATH_BUF];
	char pci_where[DISC_NAME_MAX + 32];
	_cleanup_close_ int devfd = -1, pcifd = -1;
	struct disc_device *dev;

	if (!disc_ibdev_name_ok(name)) {
		disc_problem(s,
			     "class/infiniband: unsafe device name '%s' (a CDI device name: "
			     "[A-Za-z0-9_.:-], alphanumeric at both ends, not 'all' or digits "
			     "only), skipping",
			     SHOWN(name));
		return 1;
	}
	snprintf(cls, sizeof(cls), "class/infiniband/%s", name);
	devfd = open_device_dir(s, name, cls, ibpath);
	if (devfd < 0)
		return 1;
	dev = add_device(s, name);
	if (!dev)
		return 1;
	/* Too long for the model (never so in the kernel): disc_refresh() then asks for a
	 * full scan. */
	if (strlen(ibpath) < sizeof(dev->ibdev_path))
		strcpy(dev->ibdev_path, ibpath);
	snprintf(pci_where, sizeof(pci_where), "class/infiniband/%s/device", name);
	pcifd = open_parent(s, devfd, cls, ibpath, dev);
	if (pcifd >= 0)
		scan_pci_function(s, pcifd, pci_where, dev);

	read_string_attr(s, devfd, cls, name, "node_guid", dev->node_guid, sizeof(dev->node_guid));
	if (dev->node_guid[0] && !disc_guid_valid(dev->node_guid)) {
		disc_problem(s, "%s: node_guid '%s' is not a GUID, ignoring", name,
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
	size_t lo = 0, hi = s->n_indexed;

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
	/* The lent devices added since the index was built: few. */
	for (size_t i = s->n_indexed; i < s->node->n_devices; i++)
		if (!strcmp(name, s->node->devices[i].name))
			return &s->node->devices[i];
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
			disc_problem(s, "%s (%s): node %s/infiniband/%s missing", c->name, owner,
				     s->dev_root, c->name);
		else
			disc_problem(s, "%s (%s): node %s/infiniband/%s cannot be checked (%s)",
				     c->name, owner, s->dev_root, c->name, disc_errstr(-errno));
		return;
	}
	if (!S_ISCHR(st.st_mode)) {
		disc_problem(s, "%s (%s): %s/infiniband/%s is not a character device", c->name,
			     owner, s->dev_root, c->name);
		return;
	}
	if (major(st.st_rdev) != c->major || minor(st.st_rdev) != c->minor) {
		disc_problem(s, "%s (%s): node %s/infiniband/%s is %u:%u but sysfs says %u:%u",
			     c->name, owner, s->dev_root, c->name, major(st.st_rdev),
			     minor(st.st_rdev), c->major, c->minor);
		return;
	}
	c->node_present = true;
}

/* Reads <class>/<entry>/dev into c; false (and a problem) on garbage. */
static bool read_chardev(struct scan *s, const char *cls, const char *entry, const char *owner,
			 struct disc_chardev *c)
{
	char path[DISC_PATH_BUF], buf[DISC_ATTR_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/%s/dev", cls, entry);
	r = read_in_root(s, path, buf, sizeof(buf));
	if (r < 0) {
		if (!reported(r))
			disc_problem(s, "%s (%s): dev unreadable (%s), ignoring", entry, owner,
				     disc_errstr(r));
		return false;
	}
	r = parse_dev_numbers(buf, &c->major, &c->minor);
	if (r < 0 || c->major == 0) {
		disc_problem(s, "%s (%s): dev '%s' is not a valid major:minor, ignoring", entry,
			     owner, SHOWN(buf));
		return false;
	}
	snprintf(c->name, sizeof(c->name), "%s", entry);
	return true;
}

/*
 * A uverbs entry whose ibdev names no device of class/infiniband is a device lent to
 * another network namespace when its parent (the entry's "device" link) is a PCI
 * function that is present and bound to a driver: moving a device takes its RDMA device
 * out of the host's class/infiniband but leaves the function and its uverbs device (not
 * namespace-tagged). Adds it with the function's facts; NULL when it is not lent (gone,
 * unbound, not on PCI), quietly: the caller reports the entry as it always did.
 */
static struct disc_device *lent_device(struct scan *s, const char *cls, const char *entry,
				       const char *ibdev)
{
	char vpath[DISC_PATH_BUF], where[DISC_PATH_BUF], link[DISC_PATH_BUF];
	_cleanup_close_ int vfd = -1, pcifd = -1;
	struct disc_device lent = {.numa_node = -1, .lent = true}, *dev;

	if (!disc_ibdev_name_ok(ibdev))
		return NULL;
	snprintf(where, sizeof(where), "%s/%s", cls, entry);
	if (resolve_class_entry(s, cls, where, vpath) < 0)
		return NULL;
	vfd = disc_sysfs_open_in_root(&s->sys, vpath, O_PATH | O_DIRECTORY);
	if (vfd < 0)
		return NULL;
	strcpy(lent.name, ibdev);
	pcifd = open_parent(s, vfd, where, vpath, &lent);
	if (pcifd < 0 || !lent.pci[0] ||
	    disc_sysfs_read_link(pcifd, "driver", link, sizeof(link)) < 0)
		return NULL;
	dev = add_device(s, ibdev);
	if (!dev)
		return NULL;
	*dev = lent;
	snprintf(where, sizeof(where), "%s/%s/device", cls, entry);
	scan_pci_function(s, pcifd, where, dev);
	return dev;
}

/* The RDMA device a char-device class entry belongs to (its "ibdev"), or NULL with a
 * problem recorded. With lend, an ibdev that is not in class/infiniband may be a lent
 * device (lent_device()). */
static struct disc_device *class_entry_device(struct scan *s, const char *cls, const char *entry,
					      bool lend)
{
	char path[DISC_PATH_BUF], ibdev[DISC_NAME_MAX + 1];
	struct disc_device *dev;
	int r;

	snprintf(path, sizeof(path), "%s/%s/ibdev", cls, entry);
	r = read_in_root(s, path, ibdev, sizeof(ibdev));
	if (r < 0) {
		if (!reported(r))
			disc_problem(s, "%s: ibdev unreadable (%s), ignoring", entry,
				     disc_errstr(r));
		return NULL;
	}
	dev = find_device(s, ibdev);
	if (!dev && lend)
		dev = lent_device(s, cls, entry, ibdev);
	if (!dev)
		disc_problem(s, "%s: ibdev '%s' has no RDMA device, ignoring", entry, SHOWN(ibdev));
	return dev;
}

static void scan_uverbs(struct scan *s)
{
	const char *cls = "class/infiniband_verbs";
	struct disc_names l = {};

	if (list_class(s, cls, is_uverbs_name, false, &l) < 0)
		return;
	for (size_t i = 0; i < l.n && !disc_scan_stopped(s); i++) {
		struct disc_chardev c = {};
		struct disc_device *dev;

		dev = class_entry_device(s, cls, l.v[i], true);
		if (!dev)
			continue;
		if (!read_chardev(s, cls, l.v[i], dev->name, &c))
			continue;
		if (dev->has_uverbs) {
			disc_problem(s, "%s: %s already has %s, ignoring", l.v[i], dev->name,
				     dev->uverbs.name);
			continue;
		}
		dev->uverbs = c;
		dev->has_uverbs = true;
		check_node(s, &dev->uverbs, dev->name);
	}
	disc_names_clear(&l);
}

static void scan_mad(struct scan *s)
{
	const char *cls = "class/infiniband_mad";
	struct disc_names l = {};
	char path[DISC_PATH_BUF], buf[DISC_ATTR_MAX];
	int r;

	if (list_class(s, cls, is_mad_name, false, &l) < 0)
		return;
	for (size_t i = 0; i < l.n && !disc_scan_stopped(s); i++) {
		bool issm = l.v[i][0] == 'i';
		struct disc_chardev c = {};
		struct disc_device *dev;
		struct disc_port *port = NULL;
		long long pnum;

		dev = class_entry_device(s, cls, l.v[i], false);
		if (!dev || dev->lent)
			continue; /* a lent device's ports are not known here */
		snprintf(path, sizeof(path), "%s/%s/port", cls, l.v[i]);
		r = read_in_root(s, path, buf, sizeof(buf));
		if (r >= 0 && parse_int64(buf, &pnum) >= 0)
			for (size_t k = 0; k < dev->n_ports; k++)
				if (dev->ports[k].num == pnum)
					port = &dev->ports[k];
		if (!port) {
			if (!reported(r))
				disc_problem(
				    s, "%s (%s): port '%s' is not a port of the device, ignoring",
				    l.v[i], dev->name, r >= 0 ? SHOWN(buf) : "?");
			continue;
		}
		if (!read_chardev(s, cls, l.v[i], dev->name, &c))
			continue;
		if (issm ? port->has_issm : port->has_umad) {
			disc_problem(s, "%s: %s port %u already has one, ignoring", l.v[i],
				     dev->name, port->num);
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
	disc_names_clear(&l);
}

static void scan_rdma_cm(struct scan *s)
{
	struct disc_node *node = s->node;
	char buf[DISC_ATTR_MAX];
	int r;

	r = read_in_root(s, "class/misc/rdma_cm/dev", buf, sizeof(buf));
	if (r < 0) {
		if (node->n_devices > 0 && !reported(r))
			disc_problem(s,
				     "rdma_cm: class/misc/rdma_cm missing (rdma_ucm not loaded?), "
				     "no rdma_cm node");
		return;
	}
	r = parse_dev_numbers(buf, &node->rdma_cm.major, &node->rdma_cm.minor);
	if (r < 0 || node->rdma_cm.major == 0) {
		disc_problem(s, "rdma_cm: dev '%s' is not a valid major:minor, ignoring",
			     SHOWN(buf));
		return;
	}
	strcpy(node->rdma_cm.name, "rdma_cm");
	node->has_rdma_cm = true;
	check_node(s, &node->rdma_cm, "rdma_cm");
}

/* ---- entry point -------------------------------------------------------------------- */

int disc_scan_begin(struct scan *s, const struct disc_options *opts, bool use_openat2)
{
	int r;

	*s = (struct scan){.sys.root_fd = -1, .devib_fd = -1};
	s->dev_root = opts && opts->dev_root ? opts->dev_root : "/dev";
	s->cancel = opts ? opts->cancel : NULL;
	s->deadline_usec = opts ? opts->deadline_usec : 0;
	r = disc_sysfs_open(opts ? opts->sysfs_root : NULL, use_openat2, &s->sys);
	if (r < 0)
		return r;
	s->node = calloc(1, sizeof(*s->node));
	return s->node ? 0 : -ENOMEM;
}

void disc_scan_end(struct scan *s)
{
	free(s->by_name);
	if (s->devib_fd >= 0)
		close(s->devib_fd);
	disc_sysfs_close(&s->sys);
}

/* Sorts the devices (the model's order) and indexes them by name. */
static int sort_devices(struct scan *s)
{
	struct disc_node *node = s->node;

	if (node->n_devices > 1)
		qsort(node->devices, node->n_devices, sizeof(*node->devices), device_cmp);
	free(s->by_name);
	s->by_name = malloc((node->n_devices + 1) * sizeof(*s->by_name));
	if (!s->by_name)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_devices; i++)
		s->by_name[i] = i;
	qsort_r(s->by_name, node->n_devices, sizeof(*s->by_name), by_name_cmp, node->devices);
	s->n_indexed = node->n_devices;
	return 0;
}

static int scan_char_devices(struct scan *s)
{
	int r;

	scan_uverbs(s);
	/* Lent devices were added at the end: back into the model's order. */
	if (s->n_indexed != s->node->n_devices) {
		r = sort_devices(s);
		if (r < 0)
			return r;
	}
	scan_mad(s);
	scan_rdma_cm(s);
	return 0;
}

int disc_scan_with(const struct disc_options *opts, bool use_openat2, struct disc_node **ret_node)
{
	struct scan s;
	struct disc_names l = {};
	int r;

	r = disc_scan_begin(&s, opts, use_openat2);
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
	for (size_t i = 0; i < l.n && !s.oom && !disc_scan_stopped(&s); i++)
		scan_device(&s, l.v[i]);
	r = disc_scan_keep_state(&s, &l);
	if (r < 0)
		goto finish;
	disc_names_clear(&l);
	r = sort_devices(&s);
	if (r < 0)
		goto finish;
	if (s.node->n_devices > 0 && s.devib_fd < 0)
		disc_problem(&s, "%s/infiniband: missing, no RDMA device node is present",
			     s.dev_root);
	r = scan_char_devices(&s);
	if (r < 0)
		goto finish;
	for (size_t i = 0; i < s.node->n_devices; i++)
		if (!s.node->devices[i].has_uverbs)
			disc_problem(
			    &s, "%s: no uverbs device, not usable through verbs, leaving it out",
			    s.node->devices[i].name);
	if (s.problems_dropped) {
		s.node->n_problems--;
		free(s.node->problems[s.node->n_problems]);
		disc_problem(&s, "... and %zu more problems", s.problems_dropped + 1);
	}
	r = s.stop ? s.stop : s.oom ? -ENOMEM : 0;
finish:
	disc_names_clear(&l);
	disc_scan_end(&s);
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
