/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A whole synthetic class entry: the input gives the names and attribute values of a
 * small sysfs tree (one RDMA device on one PCI function, two ports, a uverbs and a umad
 * device, rdma_cm, a netdev), which is built in a temporary directory and read with
 * disc_scan(); then the port state and the netdev name change as the input says and
 * disc_refresh() runs on the snapshot; every snapshot goes through disc_node_to_json().
 *
 * Input: fields separated by NUL bytes, in the order of enum field. A field that is not
 * there takes its default (a healthy mlx5 device); an empty field leaves the file out
 * (an absent attribute; "\n" gives an empty one). A name that is empty, has a '/' or is
 * "." or ".." takes the default (it could not be a directory entry).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "fuzz.h"

enum field {
	F_IBDEV,       /* class/infiniband/<name> */
	F_CLASS_LINK,  /* target of class/infiniband/<name>; "@" = the device directory */
	F_DEVICE_LINK, /* target of <ibdev>/device */
	F_VENDOR,
	F_DEVICE,
	F_NUMA,
	F_DRIVER, /* name under bus/pci/drivers/ */
	F_PHYSFN, /* target of <pci>/physfn */
	F_NODE_GUID,
	F_FW_VER,
	F_NODE_TYPE,
	F_PORT1, /* directory name under ports/ */
	F_STATE1,
	F_PHYS1,
	F_LL1,
	F_RATE1,
	F_NDEV1, /* ports/<p1>/gid_attrs/ndevs/0 */
	F_PORT2,
	F_STATE2,
	F_LL2,
	F_UVERBS, /* class/infiniband_verbs/<name> */
	F_UVERBS_IBDEV,
	F_UVERBS_DEV,
	F_UMAD,
	F_UMAD_IBDEV,
	F_UMAD_PORT,
	F_UMAD_DEV,
	F_RDMA_CM_DEV,
	F_NETDEV, /* <pci>/net/<name> and class/net/<name> */
	/* then for disc_refresh() */
	F_NEW_STATE1,
	F_NEW_PHYS1,
	F_NEW_NETDEV,
	F_COUNT,
};

static const char *const defaults[F_COUNT] = {
    [F_IBDEV] = "mlx5_0",
    [F_CLASS_LINK] = "@",
    [F_DEVICE_LINK] = "../../../0000:3b:00.0",
    [F_VENDOR] = "0x15b3\n",
    [F_DEVICE] = "0x101b\n",
    [F_NUMA] = "0\n",
    [F_DRIVER] = "mlx5_core",
    [F_PHYSFN] = "",
    [F_NODE_GUID] = "e8eb:d303:00dd:188f\n",
    [F_FW_VER] = "20.31.1014\n",
    [F_NODE_TYPE] = "1: CA\n",
    [F_PORT1] = "1",
    [F_STATE1] = "4: ACTIVE\n",
    [F_PHYS1] = "5: LinkUp\n",
    [F_LL1] = "InfiniBand\n",
    [F_RATE1] = "200 Gb/sec (4X HDR)\n",
    [F_NDEV1] = "",
    [F_PORT2] = "2",
    [F_STATE2] = "1: DOWN\n",
    [F_LL2] = "Ethernet\n",
    [F_UVERBS] = "uverbs0",
    [F_UVERBS_IBDEV] = "mlx5_0\n",
    [F_UVERBS_DEV] = "231:192\n",
    [F_UMAD] = "umad0",
    [F_UMAD_IBDEV] = "mlx5_0\n",
    [F_UMAD_PORT] = "1\n",
    [F_UMAD_DEV] = "231:0\n",
    [F_RDMA_CM_DEV] = "10:58\n",
    [F_NETDEV] = "ib0",
    [F_NEW_STATE1] = "1: DOWN\n",
    [F_NEW_PHYS1] = "3: Disabled\n",
    [F_NEW_NETDEV] = "ib1",
};

static bool is_name(enum field f)
{
	return f == F_IBDEV || f == F_DRIVER || f == F_PORT1 || f == F_PORT2 || f == F_UVERBS ||
	       f == F_UMAD || f == F_NETDEV || f == F_NEW_NETDEV;
}

static char base[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void rm_base(void)
{
	rm_tree(base);
}

/* mkdir -p of root/rel (rel without leading '/'). */
static void mkdirs(const char *root, const char *rel)
{
	char p[4096];
	size_t n = strlen(root);

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + n + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

/* Writes root/dir/name with v (nothing when v is empty), creating dir. */
static void put(const char *root, const char *dir, const char *name, const char *v)
{
	char p[4096];
	int fd;

	if (!*v)
		return;
	mkdirs(root, dir);
	snprintf(p, sizeof(p), "%s/%s/%s", root, dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	(void)write_all(fd, v, strlen(v));
	close(fd);
}

static void link_at(const char *root, const char *dir, const char *name, const char *target)
{
	char p[4096];

	if (!*target)
		return;
	mkdirs(root, dir);
	snprintf(p, sizeof(p), "%s/%s/%s", root, dir, name);
	(void)symlink(target, p);
}

static void build_tree(const char *root, char **v)
{
	const char *pci = "devices/pci0000:3a/0000:3b:00.0";
	char ibdir[1024], d[2048], t[4096];

	snprintf(ibdir, sizeof(ibdir), "%s/infiniband/%s", pci, v[F_IBDEV]);
	mkdirs(root, ibdir);
	put(root, pci, "vendor", v[F_VENDOR]);
	put(root, pci, "device", v[F_DEVICE]);
	put(root, pci, "numa_node", v[F_NUMA]);
	if (*v[F_DRIVER]) {
		snprintf(d, sizeof(d), "bus/pci/drivers/%s", v[F_DRIVER]);
		mkdirs(root, d);
		snprintf(t, sizeof(t), "../../../bus/pci/drivers/%s", v[F_DRIVER]);
		link_at(root, pci, "driver", t);
	}
	link_at(root, pci, "physfn", v[F_PHYSFN]);

	if (!strcmp(v[F_CLASS_LINK], "@"))
		snprintf(t, sizeof(t), "../../%s", ibdir);
	else
		snprintf(t, sizeof(t), "%s", v[F_CLASS_LINK]);
	link_at(root, "class/infiniband", v[F_IBDEV], t);
	link_at(root, ibdir, "device", v[F_DEVICE_LINK]);
	put(root, ibdir, "node_guid", v[F_NODE_GUID]);
	put(root, ibdir, "fw_ver", v[F_FW_VER]);
	put(root, ibdir, "node_type", v[F_NODE_TYPE]);

	snprintf(d, sizeof(d), "%s/ports/%s", ibdir, v[F_PORT1]);
	put(root, d, "state", v[F_STATE1]);
	put(root, d, "phys_state", v[F_PHYS1]);
	put(root, d, "link_layer", v[F_LL1]);
	put(root, d, "rate", v[F_RATE1]);
	snprintf(d, sizeof(d), "%s/ports/%s/gid_attrs/ndevs", ibdir, v[F_PORT1]);
	put(root, d, "0", v[F_NDEV1]);
	snprintf(d, sizeof(d), "%s/ports/%s", ibdir, v[F_PORT2]);
	put(root, d, "state", v[F_STATE2]);
	put(root, d, "link_layer", v[F_LL2]);

	snprintf(d, sizeof(d), "class/infiniband_verbs/%s", v[F_UVERBS]);
	put(root, d, "ibdev", v[F_UVERBS_IBDEV]);
	put(root, d, "dev", v[F_UVERBS_DEV]);
	snprintf(d, sizeof(d), "class/infiniband_mad/%s", v[F_UMAD]);
	put(root, d, "ibdev", v[F_UMAD_IBDEV]);
	put(root, d, "port", v[F_UMAD_PORT]);
	put(root, d, "dev", v[F_UMAD_DEV]);
	put(root, "class/misc/rdma_cm", "dev", v[F_RDMA_CM_DEV]);

	if (*v[F_NETDEV]) {
		snprintf(d, sizeof(d), "%s/net/%s", pci, v[F_NETDEV]);
		mkdirs(root, d);
		snprintf(t, sizeof(t), "../../%s", d);
		link_at(root, "class/net", v[F_NETDEV], t);
	}
}

/* The changes disc_refresh() is there to see: a port state and a netdev rename. */
static void change_tree(const char *root, char **v)
{
	char d[2048], from[4096], to[4096];

	snprintf(d, sizeof(d), "devices/pci0000:3a/0000:3b:00.0/infiniband/%s/ports/%s", v[F_IBDEV],
		 v[F_PORT1]);
	put(root, d, "state", v[F_NEW_STATE1]);
	put(root, d, "phys_state", v[F_NEW_PHYS1]);
	if (*v[F_NETDEV] && *v[F_NEW_NETDEV]) {
		snprintf(from, sizeof(from), "%s/class/net/%s", root, v[F_NETDEV]);
		snprintf(to, sizeof(to), "%s/class/net/%s", root, v[F_NEW_NETDEV]);
		(void)rename(from, to);
		snprintf(from, sizeof(from), "%s/devices/pci0000:3a/0000:3b:00.0/net/%s", root,
			 v[F_NETDEV]);
		snprintf(to, sizeof(to), "%s/devices/pci0000:3a/0000:3b:00.0/net/%s", root,
			 v[F_NEW_NETDEV]);
		(void)rename(from, to);
	}
}

/* What the snapshot promises its readers, whatever sysfs held. */
static void check_node(const struct disc_node *node)
{
	_cleanup_free_ char *text = NULL;
	cJSON *j;

	fuzz_assert(disc_node_equal(node, node));
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *dev = &node->devices[i];
		char why[256];

		fuzz_assert(name_is_safe(dev->name, DISC_NAME_MAX - 1));
		fuzz_assert(dev->numa_node >= -1);
		fuzz_assert(!dev->driver[0] || name_is_safe(dev->driver, DISC_NAME_MAX - 1));
		fuzz_assert(disc_node_find(node, dev->name) != NULL);
		fuzz_assert(disc_device_health_reason(dev, why, sizeof(why)) ==
			    (disc_device_healthy(dev) ? 0 : 1));
		for (size_t k = 0; k < dev->n_ports; k++)
			fuzz_assert(!dev->ports[k].netdev[0] ||
				    name_is_safe(dev->ports[k].netdev, DISC_NETDEV_MAX));
	}
	for (size_t i = 0; i < node->n_problems; i++)
		fuzz_assert(node->problems[i] && !strchr(node->problems[i], '\n'));
	j = disc_node_to_json(node);
	if (!j)
		return;
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	fuzz_assert(!text || text_is_utf8(text, strlen(text)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *v[F_COUNT], root[128], *copy;
	struct disc_options o = {0};
	struct disc_node *node = NULL, *fresh = NULL;
	const char *p = (const char *)data, *end = p + size;
	bool need_full = false;
	int r;

	if (!base[0]) {
		const char *tmp = getenv("TMPDIR");

		/* tmpfs when there is one: thousands of trees a second on a disk are slow. */
		if (!tmp || strlen(tmp) >= 32)
			tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(base, sizeof(base), "%s/fuzz-sysfs.XXXXXX", tmp);
		if (!mkdtemp(base))
			abort();
		atexit(rm_base);
	}
	/* One copy with NULs after each field; v[] points into it. */
	copy = malloc(size + 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (int f = 0; f < F_COUNT; f++) {
		if (p < end) {
			size_t n = strnlen(p, (size_t)(end - p));

			v[f] = copy + (p - (const char *)data);
			p += n + 1;
		} else {
			v[f] = (char *)defaults[f];
		}
		if (is_name((enum field)f) && (!*v[f] || strchr(v[f], '/') || !strcmp(v[f], ".") ||
					       !strcmp(v[f], "..") || strlen(v[f]) > 200))
			v[f] = (char *)defaults[f];
		if (strlen(v[f]) > 1000)
			v[f] = (char *)defaults[f];
	}

	snprintf(root, sizeof(root), "%s/sys", base);
	mkdir(root, 0755);
	build_tree(root, v);
	snprintf(root, sizeof(root), "%s/sys", base);
	o.sysfs_root = root;
	o.dev_root = base; /* no infiniband/ there: every node missing */
	r = disc_scan(&o, &node);
	fuzz_assert(r == 0); /* only a missing root or OOM may fail the scan */
	check_node(node);

	change_tree(root, v);
	r = disc_refresh(&o, node, &fresh, &need_full);
	fuzz_assert(r == 0);
	fuzz_assert(need_full == !fresh);
	if (fresh)
		check_node(fresh);

	disc_node_free(fresh);
	disc_node_free(node);
	rm_tree(root);
	free(copy);
	return 0;
}
