/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A device lent to another network namespace (mksysfs.py lend: the host's view after
 * rdma-cni or the hook moved it): the scan keeps it as a lent device of the node, with its
 * PCI facts and uverbs device; a function that is gone or unbound, or a uverbs device that
 * is gone, is not lent. Also its JSON, its health reason, the refresh with a lent device
 * and the carry-over of its last known state.
 * Usage: test-discovery-lent PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (TAP on stdout).
 */
#include "fixture-util.h"

#include "discovery-internal.h"
#include "discovery.h"
#include "follow.h"

#define VF_FN "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.3" /* mlx5_2, uverbs2 */

struct tree {
	char *sys, *dev, *stash;
};

static void fixture_cmd(char *cmd, const struct tree *t, char *name, bool netdev)
{
	char *argv[] = {(char *)python3, (char *)mksysfs, cmd, t->sys, name ? name : t->stash,
			name ? t->stash : NULL, netdev ? "--with-netdev" : NULL, NULL};

	if (run(argv) != 0) {
		printf("Bail out! mksysfs.py %s failed\n", cmd);
		exit(1);
	}
}

/* A fresh sriov tree with its dev root; mlx5_2 lent (with its netdev) when lend. */
static struct tree sriov(bool lend)
{
	struct tree t = {.sys = build_tree("sriov", NULL)};

	t.dev = make_devroot(t.sys, NULL);
	t.stash = temp_dir("stash");
	rm_rf(t.stash); /* lend makes it */
	if (lend)
		fixture_cmd("lend", &t, "mlx5_2", true);
	return t;
}

static void tree_free(struct tree *t)
{
	rm_rf(t->sys);
	rm_rf(t->dev);
	rm_rf(t->stash);
	free(t->sys);
	free(t->dev);
	free(t->stash);
}

static struct disc_node *scan(const struct tree *t)
{
	struct disc_options o = {.sysfs_root = t->sys, .dev_root = t->dev};
	struct disc_node *node = NULL;

	if (disc_scan(&o, &node) < 0 || !node) {
		printf("Bail out! disc_scan(%s) failed\n", t->sys);
		exit(1);
	}
	return node;
}

static void test_lent_vf(void)
{
	struct tree t = sriov(true);
	struct disc_node *node = scan(&t);
	const struct disc_device *d = disc_node_find(node, "mlx5_2");
	char why[128];

	printf("# a lent VF\n");
	EQ_INT(node->n_devices, 5, "the lent VF is still a device of the node");
	if (!ok(d && d->lent, "mlx5_2 is lent")) {
		tree_free(&t);
		disc_node_free(node);
		return;
	}
	ok(!disc_node_find(node, "mlx5_1")->lent, "mlx5_1 is not lent");
	EQ_STR(d->pci, "0000:3b:00.3", "its PCI address");
	EQ_STR(d->dev_path, VF_FN, "its function's path");
	ok(d->vendor_id == 0x15b3 && d->device_id == 0x101e, "its PCI ids");
	EQ_STR(d->driver, "mlx5_core", "its driver");
	EQ_INT(d->numa_node, 1, "its NUMA node");
	ok(d->is_vf && !strcmp(d->pf_pci, "0000:3b:00.0"), "a VF of 0000:3b:00.0");
	EQ_STR(d->pf_netdev, "enp59s0f0np0", "its PF's netdev");
	ok(d->has_uverbs && !strcmp(d->uverbs.name, "uverbs2") && d->uverbs.node_present,
	   "its uverbs2 and node");
	ok(disc_device_usable(d), "usable: it stays in the spec");
	EQ_INT(d->n_ports, 0, "no ports known here");
	EQ_INT(node->n_problems, 0, "no problem line (neither uverbs2 nor umad2)");
	for (size_t i = 0; i < node->n_problems; i++)
		printf("#   problem: %s\n", node->problems[i]);
	EQ_INT(disc_device_health_reason(d, why, sizeof(why)), 1, "not healthy here");
	EQ_STR(why, "lent to another network namespace", "the health reason");
	EQ_STR(node->devices[2].name, "mlx5_2", "sorted into its place by PCI address");
	EQ_INT(disc_node_count_usable(node), 5, "five usable devices");
	disc_node_free(node);
	tree_free(&t);
}

static void test_json(void)
{
	struct tree t = sriov(true);
	struct disc_node *node = scan(&t);
	cJSON *j = disc_node_to_json(node), *devs = cJSON_GetObjectItem(j, "devices");
	cJSON *d2 = cJSON_GetArrayItem(devs, 2), *d1 = cJSON_GetArrayItem(devs, 1);

	printf("# JSON\n");
	ok(cJSON_IsTrue(cJSON_GetObjectItem(d2, "lent")), "mlx5_2 \"lent\": true");
	ok(cJSON_IsFalse(cJSON_GetObjectItem(d1, "lent")), "mlx5_1 \"lent\": false");
	ok(cJSON_IsTrue(cJSON_GetObjectItem(d2, "usable")), "mlx5_2 usable");
	EQ_INT(cJSON_GetObjectItem(d2, "cdi_index")->valueint, 2, "its cdi_index stays");
	EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d2, "ports")), 0, "no ports");
	cJSON_Delete(j);
	disc_node_free(node);
	tree_free(&t);
}

/* Lends mlx5_2, then removes rel (rm -r) from the tree; the device must be gone. */
static void not_lent(const char *what, const char *rel)
{
	struct tree t = sriov(true);
	struct disc_node *node;
	char *path = at(t.sys, rel);
	char *argv[] = {"/bin/rm", "-r", path, NULL};

	ok(run(argv) == 0, "%s: rm -r %s", what, rel);
	node = scan(&t);
	ok(!disc_node_find(node, "mlx5_2"), "%s: not lent, not a device", what);
	EQ_INT(node->n_devices, 4, "the other four stay");
	disc_node_free(node);
	free(path);
	tree_free(&t);
}

static void test_not_lent(void)
{
	printf("# not lent\n");
	not_lent("driver unbound", VF_FN "/driver");
	not_lent("function removed", VF_FN);
	not_lent("uverbs gone", "class/infiniband_verbs/uverbs2");
}

static void test_refresh(void)
{
	struct tree t = sriov(true);
	struct disc_options o = {.sysfs_root = t.sys, .dev_root = t.dev};
	struct disc_node *node = scan(&t), *next = NULL;
	bool full = true;

	printf("# refresh with a lent device\n");
	ok(disc_refresh(&o, node, &next, &full) == 0 && !full && next,
	   "the refresh needs no full scan for a lent device");
	ok(next && disc_node_equal(node, next), "and changes nothing");
	disc_node_free(next);
	next = NULL;
	fixture_cmd("unlend", &t, NULL, false);
	ok(disc_refresh(&o, node, &next, &full) == 0 && full && !next,
	   "the device's return asks for the full scan");
	disc_node_free(node);
	node = scan(&t);
	ok(!disc_node_find(node, "mlx5_2")->lent, "back: not lent");
	EQ_INT(disc_node_find(node, "mlx5_2")->n_ports, 1, "back: its port");
	disc_node_free(node);
	tree_free(&t);
}

static void count_change(void *userdata, enum disc_change what, const struct disc_device *dev,
			 const char *reason)
{
	int *n = userdata;

	(void)reason;
	if (!strcmp(dev->name, "mlx5_2"))
		n[what]++;
}

static void test_carry(void)
{
	struct tree t = sriov(false);
	struct disc_node *before = scan(&t), *lent, *back;
	const struct disc_device *b = disc_node_find(before, "mlx5_2"), *d;
	int n[DISC_RETURNED + 1] = {0}, m[DISC_RETURNED + 1] = {0};

	printf("# carry-over\n");
	fixture_cmd("lend", &t, "mlx5_2", true);
	lent = scan(&t);
	ok(!disc_node_equal(before, lent), "lending changes the node");
	EQ_INT(disc_node_carry_lent(lent, before), 0, "carry-over");
	d = disc_node_find(lent, "mlx5_2");
	ok(d->lent && d->n_ports == 1 && d->ports[0].state == 4, "its port, ACTIVE as before");
	EQ_STR(d->ports[0].netdev, "enp59s0f0v1", "its netdev as before");
	ok(d->ports[0].has_umad && !strcmp(d->ports[0].umad.name, "umad2"), "its umad2");
	EQ_STR(d->fw_ver, b->fw_ver, "its firmware");
	EQ_STR(d->node_type, b->node_type, "its node type");
	ok(disc_device_healthy(d) == disc_device_healthy(b), "its last known health");
	disc_node_changes(before, lent, count_change, n);
	ok(n[DISC_LENT] == 1 && !n[DISC_REMOVED] && !n[DISC_ADDED] && !n[DISC_UNHEALTHY],
	   "one change: lent (not removed, not unhealthy)");
	fixture_cmd("unlend", &t, NULL, false);
	back = scan(&t);
	EQ_INT(disc_node_carry_lent(back, lent), 0, "no carry-over for a device not lent");
	disc_node_changes(lent, back, count_change, m);
	ok(m[DISC_RETURNED] == 1 && !m[DISC_ADDED] && !m[DISC_REMOVED] && !m[DISC_HEALTHY],
	   "one change: returned (not added)");
	ok(disc_node_equal(before, back), "back: the node it was");
	disc_node_free(before);
	disc_node_free(lent);
	disc_node_free(back);
	tree_free(&t);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_lent_vf();
	test_json();
	test_not_lent();
	test_refresh();
	test_carry();
	return tap_done();
}
