/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The periodic refresh (disc_refresh): the class listings a scan kept compared with
 * today's, each port's state read again, the netdevs re-read where class/net changed.
 * Anything it cannot account for asks for a full scan instead (sysfs-scan.c).
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>

#include "common.h"
#include "scan-internal.h"

/* ---- what the scan listed ------------------------------------------------------------ */

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
	int fd = disc_sysfs_open_in_root(&s->sys, cls, O_RDONLY | O_DIRECTORY | O_NONBLOCK);

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

int disc_scan_keep_state(struct scan *s, const struct disc_names *l)
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

/* ---- the refresh ---------------------------------------------------------------------- */

/*
 * Reads one port attribute for the refresh, quietly: the refresh never reports, it
 * asks for a full scan instead. -EBADFD for anything but a regular file.
 */
static int refresh_read(struct scan *s, const struct disc_device *d, unsigned port,
			const char *attr, char *buf, size_t size)
{
	char path[DISC_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/ports/%u/%s", d->ibdev_path, port, attr);
	return disc_sysfs_read_in_root(&s->sys, path, buf, size);
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
	/* A lent device has nothing here to re-read: its return (class/infiniband) or its
	 * loss (class/infiniband_verbs) changes a listing and asks for the full scan. */
	if (d->lent)
		return true;
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
	char where[DISC_NAME_MAX + 32], pci_where[DISC_NAME_MAX + 32], link[DISC_PATH_BUF];
	_cleanup_close_ int devfd = -1, pcifd = -1;

	snprintf(where, sizeof(where), "class/infiniband/%s", d->name);
	snprintf(pci_where, sizeof(pci_where), "class/infiniband/%s/device", d->name);
	devfd = disc_sysfs_open_in_root(&s->sys, d->ibdev_path, O_PATH | O_DIRECTORY);
	if (devfd < 0) {
		disc_problem(s, "%s: gone (%s)", where, disc_errstr(devfd));
		return;
	}
	if (d->dev_path[0])
		pcifd = disc_sysfs_open_in_root(&s->sys, d->dev_path, O_PATH | O_DIRECTORY);
	disc_read_netdevs(s, devfd, pcifd, where, pci_where, d, d->ports, d->n_ports);
	if (d->is_vf && pcifd >= 0 &&
	    disc_sysfs_read_link(pcifd, "physfn", link, sizeof(link)) >= 0) {
		d->pf_netdev[0] = '\0';
		disc_read_pf_netdev(s, d->dev_path, link, d);
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
	for (size_t i = 0; i < node->n_devices && !disc_scan_stopped(s); i++)
		if (!node->devices[i].lent && netdevs_stale(&node->devices[i], &ix))
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
	r = disc_scan_begin(&s, opts, true);
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
		if (disc_scan_stopped(&s)) {
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
	disc_scan_end(&s);
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
