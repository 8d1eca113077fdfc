/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disc_scan() on the checked-in fixture trees (tests/data/{dgx,sriov,quirks}/sys) with
 * device nodes made by `mksysfs.py mkdev`, on generated trees, and on broken roots.
 * Usage: test-discovery PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (TAP on stdout).
 */
#include "fixture-util.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "discovery-internal.h"
#include "discovery.h"


static char *fixture(const char *profile)
{
	char *p;

	if (asprintf(&p, "%s/%s/sys", data_dir, profile) < 0)
		abort();
	return p;
}

static struct disc_node *scan(const char *sysroot, const char *devroot)
{
	struct disc_options o = {.sysfs_root = sysroot, .dev_root = devroot};
	struct disc_node *node = NULL;
	int r = disc_scan(&o, &node);

	if (!ok(r == 0 && node, "disc_scan(%s) succeeds", sysroot)) {
		printf("#   r = %d (%s)\n", r, strerror(-r));
		printf("Bail out! cannot continue without a model\n");
		exit(1);
	}
	return node;
}

static void dump_problems(const struct disc_node *node)
{
	for (size_t i = 0; i < node->n_problems; i++)
		printf("#   problem: %s\n", node->problems[i]);
}

static const struct disc_device *must_find(const struct disc_node *node, const char *name)
{
	const struct disc_device *d = disc_node_find(node, name);

	if (!ok(d, "device %s found", name)) {
		printf("Bail out! %s missing\n", name);
		exit(1);
	}
	return d;
}

static void check_chardev(const struct disc_chardev *c, const char *name, unsigned ma, unsigned mi,
			  bool present)
{
	EQ_STR(c->name, name, "chardev name");
	EQ_INT(c->major, ma, name);
	EQ_INT(c->minor, mi, name);
	ok(c->node_present == present, "%s node_present == %d", name, present);
}

static void problems_are_lines(const struct disc_node *node)
{
	bool ok = true;

	for (size_t i = 0; i < node->n_problems; i++)
		ok = ok && node->problems[i][0] && disc_printable(node->problems[i]);
	ok(ok, "every problem is one printable line");
}

/* ---- dgx ---------------------------------------------------------------------------- */

static void test_dgx(void)
{
	static const char *order[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_8",
				      "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_9"};
	static const char *pci[] = {"0000:1a:00.0", "0000:1b:00.0", "0000:3b:00.0", "0000:3c:00.0",
				    "0000:5e:00.0", "0000:9a:00.0", "0000:9b:00.0", "0000:ba:00.0",
				    "0000:bb:00.0", "0000:d8:00.0"};
	static const char *ibnet[] = {"ibp26s0",  "ibp27s0",  "ibp59s0",  "ibp60s0",
				      "ibp154s0", "ibp155s0", "ibp186s0", "ibp187s0"};
	char *sys = fixture("dgx"), *dev = make_devroot(sys, NULL);
	struct disc_node *node = scan(sys, dev);

	printf("# dgx\n");
	EQ_INT(node->n_devices, 10, "dgx device count");
	if (!ok(node->n_problems == 0, "dgx has no problems"))
		dump_problems(node);
	EQ_INT(disc_node_count_usable(node), 10, "dgx usable devices");
	for (size_t i = 0; i < 10 && i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		unsigned k = (unsigned)atoi(d->name + 5);
		bool ib = k < 8;
		char name[32];

		EQ_STR(d->name, order[i], "name in PCI order");
		EQ_STR(d->pci, pci[i], "pci address");
		EQ_INT(d->numa_node, i < 5 ? 0 : 1, "numa node (5 on node 0, then 5 on node 1)");
		EQ_INT(d->vendor_id, 0x15b3, "vendor");
		EQ_INT(d->device_id, ib ? 0x1021 : 0x101d, "device id (CX-7 IB / CX-6 Dx RoCE)");
		EQ_STR(d->driver, "mlx5_core", "driver");
		ok(!d->is_vf && !d->pf_pci[0], "%s is a PF", d->name);
		EQ_STR(d->fw_ver, ib ? "28.41.1000" : "22.41.1000", "fw_ver");
		EQ_STR(d->node_type, "1: CA", "node_type");
		EQ_INT(d->n_ports, 1, "one port");
		if (d->n_ports != 1)
			continue;
		EQ_STR(d->ports[0].link_layer, ib ? "InfiniBand" : "Ethernet", "link layer");
		EQ_STR(d->ports[0].netdev, ib ? ibnet[k] : (k == 8 ? "ens1np0" : "ens2np0"),
		       "netdev");
		ok(d->has_uverbs, "%s has uverbs", d->name);
		snprintf(name, sizeof(name), "uverbs%u", k);
		check_chardev(&d->uverbs, name, 231, 192 + k, true);
		ok(d->ports[0].has_umad, "%s port 1 has umad", d->name);
		snprintf(name, sizeof(name), "umad%u", k);
		check_chardev(&d->ports[0].umad, name, 231, k, true);
		ok(d->ports[0].has_issm == ib, "%s issm only on InfiniBand", d->name);
		if (ib) {
			snprintf(name, sizeof(name), "issm%u", k);
			check_chardev(&d->ports[0].issm, name, 231, 64 + k, true);
		}
		if (k == 9) {
			EQ_INT(d->ports[0].state, 1, "mlx5_9 state");
			EQ_STR(d->ports[0].state_name, "DOWN", "mlx5_9 state name");
			EQ_INT(d->ports[0].phys_state, 3, "mlx5_9 phys_state");
			EQ_STR(d->ports[0].phys_state_name, "Disabled", "mlx5_9 phys_state name");
			ok(!disc_device_healthy(d), "mlx5_9 (port DOWN) is not healthy");
			ok(disc_device_usable(d), "mlx5_9 is still usable");
		} else {
			EQ_INT(d->ports[0].state, 4, "state ACTIVE");
			EQ_STR(d->ports[0].state_name, "ACTIVE", "state name");
			EQ_INT(d->ports[0].phys_state, 5, "phys_state LinkUp");
			EQ_STR(d->ports[0].rate, ib ? "400 Gb/sec (4X NDR)" : "100 Gb/sec (2X HDR)",
			       "rate");
			ok(disc_device_healthy(d), "%s is healthy", d->name);
		}
	}
	{
		const struct disc_device *a = must_find(node, "mlx5_0"),
					 *b = must_find(node, "mlx5_1"),
					 *c = must_find(node, "mlx5_2");
		const char *sw = "devices/pci0000:17/0000:17:01.0/0000:18:00.0/";

		EQ_STR(a->dev_path,
		       "devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/"
		       "0000:1a:00.0",
		       "mlx5_0 dev_path");
		ok(!strncmp(b->dev_path, sw, strlen(sw)), "mlx5_1 shares mlx5_0's switch");
		ok(strncmp(c->dev_path, sw, strlen(sw)) != 0, "mlx5_2 is behind another switch");
		EQ_STR(a->node_guid, "e8eb:d303:00dd:1880", "mlx5_0 node_guid");
	}
	ok(disc_node_find(node, "mlx5_10") == NULL, "disc_node_find of an unknown name is NULL");
	ok(node->has_rdma_cm, "rdma_cm found");
	check_chardev(&node->rdma_cm, "rdma_cm", 10, 57, true);
	disc_node_free(node);
	rm_rf(dev);
	free(dev);

	/* Without any node under the dev root: still usable, not healthy, said once. */
	node = scan(sys, "/nonexistent-dev-root");
	EQ_INT(disc_node_count_usable(node), 10, "usable without nodes");
	ok(!disc_device_healthy(&node->devices[0]), "not healthy without nodes");
	ok(!node->devices[0].uverbs.node_present, "uverbs0 not present");
	EQ_INT(node->n_problems, 1, "one problem for a missing dev root");
	PROBLEM(node, "/nonexistent-dev-root/infiniband: missing");
	disc_node_free(node);
	free(sys);
}

/* ---- sriov -------------------------------------------------------------------------- */

static void test_sriov(void)
{
	char *sys = fixture("sriov"), *dev = make_devroot(sys, NULL);
	struct disc_node *node = scan(sys, dev);

	printf("# sriov\n");
	EQ_INT(node->n_devices, 5, "sriov device count");
	if (!ok(node->n_problems == 0, "sriov has no problems"))
		dump_problems(node);
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		char name[32], pci[32], net[32];

		snprintf(name, sizeof(name), "mlx5_%zu", i);
		snprintf(pci, sizeof(pci), "0000:3b:00.%zu", i ? i + 1 : 0);
		EQ_STR(d->name, name, "name");
		EQ_STR(d->pci, pci, "pci");
		EQ_INT(d->numa_node, 1, "numa node");
		ok(d->is_vf == (i > 0), "%s is_vf == %d", name, i > 0);
		EQ_STR(d->pf_pci, i ? "0000:3b:00.0" : "", "pf_pci");
		EQ_INT(d->device_id, i ? 0x101e : 0x101d, "device id (PF / VF)");
		if (i)
			EQ_STR(d->node_guid, "0000:0000:0000:0000", "VF zero GUID kept");
		if (i)
			snprintf(net, sizeof(net), "enp59s0f0v%zu", i - 1);
		else
			snprintf(net, sizeof(net), "enp59s0f0np0");
		if (d->n_ports == 1) {
			EQ_STR(d->ports[0].netdev, net, "netdev from gid_attrs/ndevs/0");
			EQ_STR(d->ports[0].link_layer, "Ethernet", "link layer");
			ok(!d->ports[0].has_issm, "no issm on RoCE");
		}
		ok(disc_device_healthy(d), "%s healthy", name);
	}
	disc_node_free(node);
	rm_rf(dev);
	free(dev);
	free(sys);
}

/* ---- quirks ------------------------------------------------------------------------- */

static void test_quirks(void)
{
	char *sys = fixture("quirks"), *dev = make_devroot(sys, "uverbs5");
	struct disc_node *node = scan(sys, dev);
	const struct disc_device *d, *smi;

	printf("# quirks\n");
	EQ_INT(node->n_devices, 10, "quirks device count (unsafe, dangling skipped)");
	EQ_INT(disc_node_count_usable(node), 8, "usable devices");
	problems_are_lines(node);

	/* Renamed devices keep their names; sorted by PCI address, SF (no PCI) last. */
	{
		static const char *order[] = {
		    "mlx5_0",	"smi1",	  "ibp12s0", "rocep59s0f0", "mlx5_bond_0",
		    "bnxt_re0", "irdma0", "mlx5_4",  "mlx5_5",	    "rocep59s0f0S88"};

		for (size_t i = 0; i < 10 && i < node->n_devices; i++)
			EQ_STR(node->devices[i].name, order[i], "quirks order");
	}

	/* ConnectX-8: mlx5_0 and smi1 on one function. */
	d = must_find(node, "mlx5_0");
	smi = must_find(node, "smi1");
	EQ_STR(d->pci, "0000:0b:00.0", "mlx5_0 pci");
	EQ_STR(smi->pci, "0000:0b:00.0", "smi1 on the same function");
	EQ_INT(smi->n_ports, 4, "smi1 ports");
	ok(!disc_device_usable(smi), "smi1 (no uverbs) not usable");
	PROBLEM(node, "smi1: no uverbs device, not usable through verbs, leaving it out");
	for (size_t i = 0; i < smi->n_ports; i++) {
		char name[32];

		EQ_INT(smi->ports[i].num, i + 1, "smi1 port number");
		EQ_STR(smi->ports[i].netdev, "", "smi1 does not claim mlx5_0's netdev");
		snprintf(name, sizeof(name), "umad%zu", i + 1);
		check_chardev(&smi->ports[i].umad, name, 231, (unsigned)i + 1, true);
		snprintf(name, sizeof(name), "issm%zu", i + 1);
		check_chardev(&smi->ports[i].issm, name, 231, 64 + (unsigned)i + 1, true);
	}
	ok(d->ports[0].has_umad && !d->ports[0].has_issm, "mlx5_0: umad0, no issm0");
	EQ_STR(d->ports[0].netdev, "ibp11s0", "mlx5_0 keeps the function's netdev");
	check_chardev(&d->ports[0].umad, "umad0", 231, 0, true);
	ok(disc_device_healthy(d), "mlx5_0 healthy");

	/* Renamed IB device with numa_node "banana". */
	d = must_find(node, "ibp12s0");
	EQ_INT(d->numa_node, -1, "garbage numa_node -> -1");
	PROBLEM(node, "ibp12s0: numa_node 'banana' is not a number, using none");
	check_chardev(&d->uverbs, "uverbs1", 231, 193, true);

	/* Unreadable GID netdev entries fall back to the function's net/. */
	d = must_find(node, "rocep59s0f0");
	EQ_STR(d->ports[0].netdev, "enp59s0f0np0", "dangling ndevs/0 -> net/");
	ok(d->ports[0].has_umad && !d->ports[0].has_issm, "rocep59s0f0: umad, no issm");
	d = must_find(node, "bnxt_re0");
	EQ_STR(d->ports[0].netdev, "ens5f0np0", "ndevs/0 a directory -> net/");
	EQ_INT(d->vendor_id, 0x14e4, "bnxt_re0 vendor Broadcom");
	EQ_INT(d->device_id, 0x1750, "bnxt_re0 device");
	EQ_STR(d->driver, "bnxt_en", "bnxt_re0 driver");
	ok(disc_device_healthy(d), "bnxt_re0 healthy");

	/* RoCE LAG with a uverbs beyond the 32 fixed minors: major read from dev. */
	d = must_find(node, "mlx5_bond_0");
	EQ_STR(d->pci, "0000:3b:00.1", "mlx5_bond_0 pci");
	check_chardev(&d->uverbs, "uverbs32", 511, 0, true);
	EQ_STR(d->ports[0].netdev, "bond0", "LAG netdev from gid_attrs");

	/* iWARP: no MAD devices at all, and that is fine. */
	d = must_find(node, "irdma0");
	EQ_INT(d->vendor_id, 0x8086, "irdma0 vendor Intel");
	EQ_STR(d->driver, "ice", "irdma0 driver");
	EQ_STR(d->node_type, "4: RNIC", "irdma0 node_type");
	ok(!d->ports[0].has_umad && !d->ports[0].has_issm, "irdma0 has no umad/issm");
	ok(disc_device_healthy(d), "irdma0 healthy");

	/* mlx5_4: no uverbs, garbage state, garbage umad dev, over-long fw_ver. */
	d = must_find(node, "mlx5_4");
	ok(!disc_device_usable(d), "mlx5_4 (no uverbs) not usable");
	PROBLEM(node, "mlx5_4: no uverbs device, not usable through verbs, leaving it out");
	EQ_INT(d->ports[0].state, -1, "state 'xyz' -> -1");
	EQ_STR(d->ports[0].state_name, "", "state name empty");
	PROBLEM(node, "mlx5_4: port 1 state 'xyz'");
	ok(!d->ports[0].has_umad, "umad with dev 'garbage' dropped");
	PROBLEM(node, "umad9 (mlx5_4): dev 'garbage'");
	EQ_STR(d->fw_ver, "", "over-long fw_ver dropped");
	PROBLEM(node, "mlx5_4: fw_ver longer than 63 bytes");

	/* mlx5_5: its uverbs node was omitted under the dev root. */
	d = must_find(node, "mlx5_5");
	ok(disc_device_usable(d) && !disc_device_healthy(d), "mlx5_5 usable, not healthy");
	check_chardev(&d->uverbs, "uverbs5", 231, 197, false);
	PROBLEM(node, "uverbs5 (mlx5_5): node ");
	PROBLEM(node, "/infiniband/uverbs5 missing");
	EQ_INT(d->numa_node, -1, "numa_node -1 stays -1");

	/* SF on the auxiliary bus: no PCI address, last. */
	d = must_find(node, "rocep59s0f0S88");
	EQ_STR(d->pci, "", "SF has no PCI address");
	ok(strstr(d->dev_path, "0000:3b:00.0/mlx5_core.sf.2") != NULL, "SF dev_path");
	EQ_STR(d->driver, "mlx5_core.sf", "SF driver");
	EQ_INT(d->vendor_id, 0, "SF vendor unknown");

	/* Skipped and reported. */
	ok(!disc_node_find(node, "ghost"), "dangling class link skipped");
	PROBLEM(node, "ghost: dangling link in class/infiniband, ignoring");
	ok(!disc_node_find(node, "bad name") && !disc_node_find(node, "..hidden"),
	   "unsafe names skipped");
	PROBLEM(node, "unsafe device name 'bad name'");
	PROBLEM(node, "unsafe device name '..hidden'");
	PROBLEM(node, "uverbs7: ibdev 'gone0' has no RDMA device");
	check_chardev(&node->rdma_cm, "rdma_cm", 10, 122, true);
	ok(!has_problem(node, "issm0"), "a missing issm is not a problem");
	disc_node_free(node);
	rm_rf(dev);
	free(dev);
	free(sys);
}

/* ---- both link-resolution strategies agree ----------------------------------------- */

static void test_fallback_same(void)
{
	static const char *profiles[] = {"dgx", "sriov", "quirks"};

	printf("# openat2 and the user-space fallback give the same model\n");
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++) {
		char *sys = fixture(profiles[i]), *dev = make_devroot(sys, "uverbs5");
		struct disc_options o = {.sysfs_root = sys, .dev_root = dev};
		struct disc_node *a = NULL, *b = NULL;
		cJSON *ja, *jb;

		ok(disc_scan_with(&o, true, &a) == 0 && disc_scan_with(&o, false, &b) == 0,
		   "%s: both scans succeed", profiles[i]);
		ja = a ? disc_node_to_json(a) : NULL;
		jb = b ? disc_node_to_json(b) : NULL;
		ok(ja && jb && cJSON_Compare(ja, jb, true), "%s: identical JSON", profiles[i]);
		cJSON_Delete(ja);
		cJSON_Delete(jb);
		disc_node_free(a);
		disc_node_free(b);
		rm_rf(dev);
		free(dev);
		free(sys);
	}
}

/* ---- links that try to leave the root ---------------------------------------------- */

static void test_escape(void)
{
	char *outside = fixture("sriov"), *sys = build_tree("sriov", NULL), *path, *abs_out;
	const char *ibdev = "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0";

	printf("# symlinks never lead out of the sysfs root\n");
	abs_out = realpath(outside, NULL);
	if (!abs_out)
		abort();
	/* Absolute link to a real device outside the root; relative link climbing out. */
	if (asprintf(&path, "%s/class/infiniband/escabs", sys) < 0)
		abort();
	{
		char *target;

		if (asprintf(&target, "%s/%s", abs_out, ibdev) < 0 || symlink(target, path) < 0)
			abort();
		free(target);
		free(path);
		if (asprintf(&path, "%s/class/infiniband/escrel", sys) < 0 ||
		    asprintf(&target, "../../../../../../../../../../../../../../../../%s/%s",
			     abs_out, ibdev) < 0 ||
		    symlink(target, path) < 0)
			abort();
		free(target);
		free(path);
	}
	/* An absolute link is resolved inside the root, as if the root were /sys. */
	if (asprintf(&path, "%s/class/infiniband/mlx5_1", sys) < 0 || unlink(path) < 0 ||
	    symlink("/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.2/infiniband/mlx5_1", path) < 0)
		abort();
	free(path);

	for (int use = 1; use >= 0; use--) {
		struct disc_options o = {.sysfs_root = sys, .dev_root = "/nonexistent"};
		struct disc_node *node = NULL;

		ok(disc_scan_with(&o, use, &node) == 0, "scan (openat2 = %d)", use);
		if (!node)
			continue;
		EQ_INT(node->n_devices, 5, "only the 5 devices inside the root");
		ok(!disc_node_find(node, "escabs") && !disc_node_find(node, "escrel"),
		   "escaping links not followed");
		PROBLEM(node, "escabs: dangling link");
		PROBLEM(node, "escrel: dangling link");
		if (disc_node_find(node, "mlx5_1"))
			EQ_STR(disc_node_find(node, "mlx5_1")->pci, "0000:3b:00.2",
			       "absolute in-root link resolved at the root");
		else
			ok(false, "mlx5_1 through an absolute in-root link");
		disc_node_free(node);
	}
	rm_rf(sys);
	free(sys);
	free(abs_out);
	free(outside);
}

/* ---- error paths -------------------------------------------------------------------- */

static void test_errors(void)
{
	struct disc_options o = {.dev_root = "/nonexistent"};
	struct disc_node *node = NULL;
	char *empty = temp_dir("empty"), *sys, *path, *dev;
	int r;

	printf("# error paths\n");
	o.sysfs_root = "/nonexistent/sys";
	r = disc_scan(&o, &node);
	EQ_INT(r, -ENOENT, "nonexistent root -> -ENOENT");
	ok(node == NULL, "ret_node untouched on failure");
	o.sysfs_root = "/proc/self/status";
	EQ_INT(disc_scan(&o, &node), -ENOTDIR, "root is a file -> -ENOTDIR");

	o.sysfs_root = empty;
	r = disc_scan(&o, &node);
	ok(r == 0 && node, "empty root scans");
	if (node) {
		EQ_INT(node->n_devices, 0, "empty root: 0 devices");
		EQ_INT(node->n_problems, 0, "empty root: no problems");
		ok(!node->has_rdma_cm, "empty root: no rdma_cm");
		disc_node_free(node);
		node = NULL;
	}

	/* A dev file out of dev_t range is rejected and the device left out. */
	sys = build_tree("sriov", NULL);
	if (asprintf(&path,
		     "%s/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.3/infiniband_verbs/"
		     "uverbs2/dev",
		     sys) < 0)
		abort();
	write_file(path, "999999:1\n");
	free(path);
	/* And a node with the wrong numbers is not "present". */
	dev = make_devroot(sys, NULL);
	if (asprintf(&path, "%s/infiniband/uverbs3", dev) < 0 || unlink(path) < 0 ||
	    mknod(path, S_IFCHR | 0666, makedev(231, 100)) < 0)
		abort();
	free(path);
	o.sysfs_root = sys;
	o.dev_root = dev;
	node = scan(sys, dev);
	ok(!disc_device_usable(must_find(node, "mlx5_2")), "uverbs dev 999999:1 rejected");
	PROBLEM(node, "uverbs2 (mlx5_2): dev '999999:1' is not a valid major:minor");
	PROBLEM(node, "mlx5_2: no uverbs device");
	ok(!must_find(node, "mlx5_3")->uverbs.node_present, "wrong major:minor -> not present");
	PROBLEM(node, "/infiniband/uverbs3 is 231:100 but sysfs says 231:195");
	ok(!disc_device_healthy(must_find(node, "mlx5_3")), "mismatching node -> unhealthy");
	disc_node_free(node);

	/* No rdma_cm class entry: reported; no ports directory: reported. */
	if (asprintf(&path, "%s/class/misc/rdma_cm", sys) < 0 || unlink(path) < 0)
		abort();
	free(path);
	node = scan(sys, dev);
	ok(!node->has_rdma_cm, "no rdma_cm without class/misc/rdma_cm");
	PROBLEM(node, "rdma_cm: class/misc/rdma_cm missing");
	EQ_INT(node->n_problems, 4, "4 problems before flooding");
	disc_node_free(node);

	/* A flood of broken class entries: problems stay bounded and say what was cut. */
	for (int i = 1000; i < 2100; i++) {
		if (asprintf(&path, "%s/class/infiniband_verbs/uverbs%d", sys, i) < 0 ||
		    symlink("../../devices/nowhere", path) < 0)
			abort();
		free(path);
	}
	node = scan(sys, dev);
	EQ_INT(node->n_problems, DISC_MAX_PROBLEMS, "problems capped");
	EQ_STR(node->problems[node->n_problems - 1], "... and 105 more problems",
	       "last line counts the rest");
	EQ_INT(node->n_devices, 5, "devices unaffected by the flood");
	disc_node_free(node);

	rm_rf(dev);
	free(dev);
	rm_rf(sys);
	free(sys);
	rm_rf(empty);
	free(empty);
}

/* ---- names the CDI spec cannot carry ------------------------------------------------ */

/* Renames the class entry of ibdev (on PCI function fn of the sriov tree) and points its
 * uverbs at the new name, as `rdma dev set NAME name NEW` would. */
static void rename_ibdev(const char *sys, const char *fn, const char *ibdev, const char *uverbs,
			 const char *to)
{
	char *path, *target;

	if (asprintf(&path, "%s/class/infiniband/%s", sys, ibdev) < 0 || unlink(path) < 0)
		abort();
	free(path);
	if (asprintf(&path, "%s/class/infiniband/%s", sys, to) < 0 ||
	    asprintf(&target, "../../devices/pci0000:3a/0000:3a:00.0/%s/infiniband/%s", fn,
		     ibdev) < 0 ||
	    symlink(target, path) < 0)
		abort();
	free(path);
	free(target);
	if (asprintf(&path, "%s/devices/pci0000:3a/0000:3a:00.0/%s/infiniband_verbs/%s/ibdev",
		     sys, fn, uverbs) < 0)
		abort();
	write_file(path, to);
	free(path);
}

static void test_cdi_names(void)
{
	char *sys = build_tree("sriov", NULL), *dev;
	struct disc_node *node;

	printf("# device names that cannot be CDI device names are skipped, not half-used\n");
	/* The spec leaves such a device out; were it kept here, `discover` would give it an
	 * index and every later device an index one off from the spec's alias. */
	rename_ibdev(sys, "0000:3b:00.2", "mlx5_1", "uverbs1", "all");
	rename_ibdev(sys, "0000:3b:00.3", "mlx5_2", "uverbs2", "mlx5_2-");
	rename_ibdev(sys, "0000:3b:00.4", "mlx5_3", "uverbs3", "42");
	dev = make_devroot(sys, NULL);
	node = scan(sys, dev);
	ok(!disc_node_find(node, "all") && !disc_node_find(node, "mlx5_2-") &&
	       !disc_node_find(node, "42"),
	   "'all', 'mlx5_2-' and '42' skipped");
	PROBLEM(node, "unsafe device name 'all'");
	PROBLEM(node, "unsafe device name 'mlx5_2-'");
	PROBLEM(node, "unsafe device name '42'");
	EQ_INT(disc_node_count_usable(node), node->n_devices, "every listed device is usable");
	disc_node_free(node);
	rm_rf(dev);
	free(dev);
	rm_rf(sys);
	free(sys);
}

/* ---- generated scale tree ----------------------------------------------------------- */

static void test_scale(void)
{
	char *sys = build_tree("scale", "40"), *dev = make_devroot(sys, NULL);
	struct disc_node *node = scan(sys, dev);
	size_t pfs = 0, vfs = 0;
	bool sorted = true, pf_ok = true;

	printf("# scale tree, 40 devices\n");
	EQ_INT(node->n_devices, 40, "40 devices");
	if (!ok(node->n_problems == 0, "no problems"))
		dump_problems(node);
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];

		if (d->is_vf) {
			vfs++;
			pf_ok = pf_ok && !strncmp(d->pf_pci, d->pci, 7) &&
				!strcmp(d->pf_pci + 7, ":00.0");
		} else {
			pfs++;
		}
		if (i > 0)
			sorted = sorted && disc_pci_compare(node->devices[i - 1].pci, d->pci) < 0;
	}
	EQ_INT(pfs, 16, "16 PFs");
	EQ_INT(vfs, 24, "24 VFs");
	ok(sorted, "sorted by PCI address");
	ok(pf_ok, "each VF points at the PF on its bus");
	{
		const struct disc_device *d = must_find(node, "mlx5_39");

		check_chardev(&d->uverbs, "uverbs39", 511, 7, true);
		check_chardev(&d->ports[0].umad, "umad39", 231, 39, true);
	}
	disc_node_free(node);
	rm_rf(dev);
	free(dev);
	rm_rf(sys);
	free(sys);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_dgx();
	test_sriov();
	test_quirks();
	test_fallback_same();
	test_escape();
	test_errors();
	test_cdi_names();
	test_scale();
	return tap_done();
}
