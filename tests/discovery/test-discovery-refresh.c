/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disc_refresh() (the cheap periodic rescan), disc_node_equal(),
 * disc_device_health_reason(), and scans abandoned or run on several threads at once.
 * Each refresh case changes a fresh copy of a fixture the way the kernel would (a port
 * going DOWN, `rdma dev set NAME name NEW`, a netdev renamed, a device removed or added).
 * Usage: test-discovery-refresh PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (TAP on stdout).
 */
#include "fixture-util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#include "discovery-internal.h"
#include "discovery.h"

#define FN "devices/pci0000:3a/0000:3a:00.0/0000:3b:00."

static void put(const char *root, const char *rel, const char *content)
{
	char *p = at(root, rel);

	write_file(p, content);
	free(p);
}

static void must(int r, const char *what)
{
	if (r < 0) {
		printf("Bail out! %s: %s\n", what, strerror(errno));
		exit(1);
	}
}

/* The dev root of the scans and refreshes below ("/nonexistent": no device nodes). */
static const char *dev_root = "/nonexistent";

static struct disc_node *scan(const char *sys)
{
	struct disc_options o = {.sysfs_root = sys, .dev_root = dev_root};
	struct disc_node *node = NULL;

	if (disc_scan(&o, &node) < 0 || !node) {
		printf("Bail out! disc_scan %s failed\n", sys);
		exit(1);
	}
	return node;
}

/* Refreshes old; returns the new node (NULL when a full scan is asked for). */
static struct disc_node *refresh(const char *sys, const struct disc_node *old, bool *need_full)
{
	struct disc_options o = {.sysfs_root = sys, .dev_root = dev_root};
	struct disc_node *node = (struct disc_node *)1;
	int r = disc_refresh(&o, old, &node, need_full);

	if (!ok(r == 0, "disc_refresh succeeds"))
		printf("#   r = %d (%s)\n", r, strerror(-r));
	ok(*need_full == (node == NULL), "a node exactly when no full scan is needed");
	return node;
}

static const struct disc_device *dev_of(const struct disc_node *node, const char *name)
{
	const struct disc_device *d = disc_node_find(node, name);

	if (!d || d->n_ports != 1) {
		printf("Bail out! %s missing or without its one port\n", name);
		exit(1);
	}
	return d;
}

/* ---- port state --------------------------------------------------------------------- */

static void test_port_state(void)
{
	char *sys = build_tree("sriov", NULL), *dev = make_devroot(sys, NULL);
	struct disc_node *old, *a, *b, *c;
	char reason[128];
	bool full = true;

	printf("# refresh: a port going DOWN and coming back\n");
	dev_root = dev;
	old = scan(sys);
	a = refresh(sys, old, &full);
	ok(a && !full, "nothing changed: a new snapshot, no full scan");
	ok(a && disc_node_equal(a, old), "... equal to the old one");
	ok(a != old, "... and a copy, not the old one");
	disc_node_free(a);

	put(sys, FN "3/infiniband/mlx5_2/ports/1/state", "1: DOWN");
	put(sys, FN "3/infiniband/mlx5_2/ports/1/phys_state", "3: Disabled");
	a = refresh(sys, old, &full);
	if (!ok(a && !full, "port DOWN: refreshed without a full scan"))
		goto out;
	EQ_INT(dev_of(a, "mlx5_2")->ports[0].state, 1, "new snapshot: mlx5_2 port 1 state");
	EQ_STR(dev_of(a, "mlx5_2")->ports[0].state_name, "DOWN", "new snapshot: state name");
	EQ_STR(dev_of(a, "mlx5_2")->ports[0].phys_state_name, "Disabled",
	       "phys_state read again when the state changed");
	ok(!disc_device_healthy(dev_of(a, "mlx5_2")), "mlx5_2 is no longer healthy");
	EQ_INT(disc_device_health_reason(dev_of(a, "mlx5_2"), reason, sizeof(reason)), 1,
	       "health reason says unhealthy");
	EQ_STR(reason, "port 1 DOWN", "health reason");
	EQ_INT(dev_of(old, "mlx5_2")->ports[0].state, 4, "old snapshot untouched: still ACTIVE");
	EQ_STR(dev_of(old, "mlx5_2")->ports[0].phys_state_name, "LinkUp",
	       "old snapshot untouched: still LinkUp");
	ok(!disc_node_equal(a, old), "the snapshots differ");
	{
		struct disc_node *fresh = scan(sys);

		ok(disc_node_equal(a, fresh), "the refreshed snapshot equals a full scan");
		disc_node_free(fresh);
	}
	EQ_INT(a->n_problems, old->n_problems, "problems carried over");

	/* Back to ACTIVE, refreshed from the refreshed snapshot. */
	put(sys, FN "3/infiniband/mlx5_2/ports/1/state", "4: ACTIVE");
	put(sys, FN "3/infiniband/mlx5_2/ports/1/phys_state", "5: LinkUp");
	b = refresh(sys, a, &full);
	ok(b && disc_device_healthy(dev_of(b, "mlx5_2")), "ACTIVE again: healthy again");
	ok(b && disc_node_equal(b, old), "... and equal to the first scan");
	EQ_INT(disc_device_health_reason(dev_of(b, "mlx5_2"), reason, sizeof(reason)), 0,
	       "healthy: reason returns 0");
	EQ_STR(reason, "", "healthy: empty reason");

	/* phys_state alone: only read when the state changed, unless asked for. */
	put(sys, FN "3/infiniband/mlx5_2/ports/1/phys_state", "2: Polling");
	c = b ? refresh(sys, b, &full) : NULL;
	ok(c && dev_of(c, "mlx5_2")->ports[0].phys_state == 5,
	   "default refresh: a phys_state change alone is not read");
	disc_node_free(c);
	if (b) {
		struct disc_options o = {.sysfs_root = sys, .dev_root = dev};

		c = NULL;
		ok(disc_refresh_with(&o, b, true, &c, &full) == 0 && c && !full,
		   "refresh reading every phys_state");
		ok(c && dev_of(c, "mlx5_2")->ports[0].phys_state == 2 &&
		       !strcmp(dev_of(c, "mlx5_2")->ports[0].phys_state_name, "Polling"),
		   "... sees the phys_state change");
		disc_node_free(c);
	}
	disc_node_free(b);

	/* A state that was good and turns to garbage or a FIFO: the full scan says why. */
	put(sys, FN "3/infiniband/mlx5_2/ports/1/state", "garbage");
	b = refresh(sys, a, &full);
	ok(!b && full, "good state turned garbage: full scan asked for");
	{
		char *p = at(sys, FN "3/infiniband/mlx5_2/ports/1/state");

		must(unlink(p), "unlink");
		must(mkfifo(p, 0644), "mkfifo");
		free(p);
	}
	b = refresh(sys, a, &full);
	ok(!b && full, "state turned FIFO: full scan asked for, no hang");
	disc_node_free(b);
out:
	disc_node_free(a);
	disc_node_free(old);
	dev_root = "/nonexistent";
	rm_rf(dev);
	free(dev);
	rm_rf(sys);
	free(sys);
}

/* A state unknown at the scan and still garbage does not ask for a full scan each time. */
static void test_unknown_stays_unknown(void)
{
	char *sys = build_tree("sriov", NULL);
	struct disc_node *old, *a;
	bool full = true;

	printf("# refresh: a state unknown at the scan stays unknown quietly\n");
	put(sys, FN "4/infiniband/mlx5_3/ports/1/state", "xyz");
	old = scan(sys);
	a = refresh(sys, old, &full);
	ok(a && !full, "garbage state, still garbage: no full scan");
	ok(a && dev_of(a, "mlx5_3")->ports[0].state == -1, "... still unknown");
	disc_node_free(a);
	put(sys, FN "4/infiniband/mlx5_3/ports/1/state", "4: ACTIVE");
	a = refresh(sys, old, &full);
	ok(a && dev_of(a, "mlx5_3")->ports[0].state == 4, "repaired state seen by the refresh");
	disc_node_free(a);
	disc_node_free(old);
	rm_rf(sys);
	free(sys);
}

/* ---- the device set ----------------------------------------------------------------- */

static void test_device_set(void)
{
	char *sys = build_tree("sriov", NULL), *p, *q;
	struct disc_node *old = scan(sys), *a;
	bool full = false;

	printf("# refresh: renamed, removed and added devices need a full scan\n");
	/* `rdma dev set mlx5_1 name ib_vf0`: the class entry is renamed. */
	p = at(sys, "class/infiniband/mlx5_1");
	q = at(sys, "class/infiniband/ib_vf0");
	must(rename(p, q), "rename");
	a = refresh(sys, old, &full);
	ok(!a && full, "renamed class entry: full scan");
	must(rename(q, p), "rename back");
	a = refresh(sys, old, &full);
	ok(a && !full, "renamed back: refresh again");
	disc_node_free(a);
	free(q);

	/* Removed. */
	{
		char target[512];
		ssize_t n = readlink(p, target, sizeof(target) - 1);

		must((int)n, "readlink");
		target[n] = '\0';
		must(unlink(p), "unlink");
		a = refresh(sys, old, &full);
		ok(!a && full, "removed device: full scan");
		must(symlink(target, p), "symlink");
	}
	free(p);
	/* Added (even one the scan would skip: the listing is what counts). */
	p = at(sys, "class/infiniband/ghost1");
	must(symlink("../../devices/nowhere/infiniband/ghost1", p), "symlink");
	a = refresh(sys, old, &full);
	ok(!a && full, "added class entry: full scan");
	free(p);

	/* A hand-made node has no scan record: full scan. */
	{
		struct disc_node hand = {0};

		a = refresh(sys, &hand, &full);
		ok(!a && full, "node not made by disc_scan: full scan");
	}
	disc_node_free(old);
	rm_rf(sys);
	free(sys);
}

/* ---- netdevs ------------------------------------------------------------------------ */

/* Renames a netdev the way the kernel shows it: the function's net/<name>, class/net and
 * the GID entry of the RDMA port (gid_ndev empty: the port reads it from net/). */
static void rename_netdev(const char *sys, const char *fn, const char *from, const char *to,
			  const char *gid_ndev)
{
	char *p, *q, *target;

	if (asprintf(&p, "%s/%s/net/%s", sys, fn, from) < 0 ||
	    asprintf(&q, "%s/%s/net/%s", sys, fn, to) < 0)
		abort();
	must(rename(p, q), "rename net/");
	free(p);
	free(q);
	p = at(sys, "class/net/");
	if (asprintf(&q, "%s%s", p, from) < 0)
		abort();
	must(unlink(q), "unlink class/net");
	free(q);
	if (asprintf(&q, "%s%s", p, to) < 0 || asprintf(&target, "../../%s/net/%s", fn, to) < 0)
		abort();
	must(symlink(target, q), "symlink class/net");
	free(target);
	free(q);
	free(p);
	if (gid_ndev) {
		p = at(sys, gid_ndev);
		write_file(p, to);
		free(p);
	}
}

static void test_netdevs(void)
{
	char *sys = build_tree("sriov", NULL);
	struct disc_node *old = scan(sys), *a, *b;
	bool full = true;

	printf("# refresh: renamed netdevs\n");
	EQ_STR(dev_of(old, "mlx5_1")->pf_netdev, "enp59s0f0np0", "scan: VF's pf_netdev");
	EQ_STR(dev_of(old, "mlx5_0")->pf_netdev, "", "scan: a PF has no pf_netdev");
	rename_netdev(sys, FN "2", "enp59s0f0v0", "vf0new",
		      FN "2/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0");
	a = refresh(sys, old, &full);
	ok(a && !full, "VF netdev renamed: no full scan");
	if (a) {
		EQ_STR(dev_of(a, "mlx5_1")->ports[0].netdev, "vf0new", "new netdev name");
		EQ_STR(dev_of(a, "mlx5_2")->ports[0].netdev, "enp59s0f0v1", "others unchanged");
	}
	EQ_STR(dev_of(old, "mlx5_1")->ports[0].netdev, "enp59s0f0v0", "old snapshot untouched");

	/* The PF's netdev: its own port and every VF's pf_netdev follow. */
	rename_netdev(sys, FN "0", "enp59s0f0np0", "pf0new",
		      FN "0/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0");
	b = a ? refresh(sys, a, &full) : NULL;
	ok(b && !full, "PF netdev renamed: no full scan");
	if (b) {
		bool all = true;

		EQ_STR(dev_of(b, "mlx5_0")->ports[0].netdev, "pf0new", "PF port netdev");
		for (size_t i = 0; i < b->n_devices; i++)
			if (b->devices[i].is_vf)
				all = all && !strcmp(b->devices[i].pf_netdev, "pf0new");
		ok(all, "every VF's pf_netdev follows the PF's rename");
		EQ_STR(dev_of(b, "mlx5_1")->ports[0].netdev, "vf0new", "earlier rename kept");
	}
	/* What the refresh made is what a full scan makes. */
	{
		struct disc_node *fresh = scan(sys);

		ok(b && disc_node_equal(b, fresh), "refreshed snapshot equals a full scan");
		disc_node_free(fresh);
	}
	disc_node_free(b);
	disc_node_free(a);
	disc_node_free(old);
	rm_rf(sys);
	free(sys);

	/* InfiniBand: the port's netdev comes from the function's net/ only. */
	sys = build_tree("dgx", NULL);
	old = scan(sys);
	rename_netdev(sys, "devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0",
		      "ibp26s0", "ib0", NULL);
	a = refresh(sys, old, &full);
	ok(a && !full && !strcmp(dev_of(a, "mlx5_0")->ports[0].netdev, "ib0"),
	   "IB netdev renamed under the function's net/: seen");
	disc_node_free(a);
	disc_node_free(old);
	rm_rf(sys);
	free(sys);
}

/* ---- disc_node_equal ---------------------------------------------------------------- */

static void test_equal(void)
{
	char *sys;
	struct disc_node *a, *b, *c;

	if (asprintf(&sys, "%s/quirks/sys", data_dir) < 0)
		abort();
	printf("# disc_node_equal\n");
	a = scan(sys);
	b = scan(sys);
	ok(disc_node_equal(a, b), "two scans of one tree are equal");
	ok(disc_node_equal(NULL, NULL) && !disc_node_equal(a, NULL) && !disc_node_equal(NULL, a),
	   "NULL equals only NULL");
	c = disc_node_copy(a);
	ok(c && disc_node_equal(a, c), "a copy is equal");
	if (c) {
		c->devices[0].numa_node = 7;
		ok(!disc_node_equal(a, c), "a different numa_node is not equal");
		c->devices[0].numa_node = a->devices[0].numa_node;
		strcpy(c->devices[3].ports[0].netdev, "other0");
		ok(!disc_node_equal(a, c), "a different netdev is not equal");
		strcpy(c->devices[3].ports[0].netdev, a->devices[3].ports[0].netdev);
		c->devices[2].uverbs.node_present = !c->devices[2].uverbs.node_present;
		ok(!disc_node_equal(a, c), "a different node presence is not equal");
		c->devices[2].uverbs.node_present = a->devices[2].uverbs.node_present;
		strcpy(c->devices[1].pf_netdev, "x");
		ok(!disc_node_equal(a, c), "a different pf_netdev is not equal");
		c->devices[1].pf_netdev[0] = '\0';
		free(c->problems[0]);
		c->problems[0] = strdup("something else");
		ok(disc_node_equal(a, c), "problems are not compared");
		c->n_devices--;
		ok(!disc_node_equal(a, c), "one device fewer is not equal");
		c->n_devices++;
	}
	disc_node_free(c);
	disc_node_free(b);
	disc_node_free(a);
	free(sys);
}

/* ---- health reasons ----------------------------------------------------------------- */

static void test_health_reasons(void)
{
	struct disc_port ports[2] = {
	    {.num = 1, .state = 1, .state_name = "DOWN"},
	    {.num = 2, .state = 2, .state_name = "INIT"},
	};
	struct disc_device d = {.name = "mlx5_0", .has_uverbs = true, .ports = ports, .n_ports = 1};
	char buf[128], small[12];
	char *sys;
	struct disc_node *node;

	printf("# disc_device_health_reason\n");
	d.uverbs.node_present = true;
	EQ_INT(disc_device_health_reason(&d, buf, sizeof(buf)), 1, "port DOWN: unhealthy");
	EQ_STR(buf, "port 1 DOWN", "one port DOWN");
	d.n_ports = 2;
	disc_device_health_reason(&d, buf, sizeof(buf));
	EQ_STR(buf, "no ACTIVE port: port 1 DOWN, port 2 INIT", "two ports, none ACTIVE");
	ports[1] = (struct disc_port){.num = 2, .state = 4, .state_name = "ACTIVE"};
	EQ_INT(disc_device_health_reason(&d, buf, sizeof(buf)), 0, "one port ACTIVE: healthy");
	EQ_STR(buf, "", "healthy: empty");
	d.uverbs.node_present = false;
	disc_device_health_reason(&d, buf, sizeof(buf));
	EQ_STR(buf, "uverbs node missing", "node missing");
	d.n_ports = 1;
	disc_device_health_reason(&d, buf, sizeof(buf));
	EQ_STR(buf, "uverbs node missing; port 1 DOWN", "node missing and port DOWN");
	d.has_uverbs = false;
	ports[0] = (struct disc_port){.num = 1, .state = -1};
	disc_device_health_reason(&d, buf, sizeof(buf));
	EQ_STR(buf, "no uverbs device; port 1 state unknown", "no uverbs, state unknown");
	d.has_uverbs = true;
	d.uverbs.node_present = true;
	d.n_ports = 0;
	disc_device_health_reason(&d, buf, sizeof(buf));
	EQ_STR(buf, "no ports", "no ports");
	d.n_ports = 2;
	ports[0] = (struct disc_port){.num = 1, .state = 1, .state_name = "DOWN"};
	ports[1] = (struct disc_port){.num = 2, .state = 1, .state_name = "DOWN"};
	memset(small, 'x', sizeof(small));
	EQ_INT(disc_device_health_reason(&d, small, sizeof(small)), 1, "small buffer: unhealthy");
	ok(memchr(small, '\0', sizeof(small)) != NULL, "small buffer NUL-terminated");
	EQ_STR(small, "no ACTIV...", "small buffer: cut with '...'");
	EQ_INT(disc_device_health_reason(&d, buf, 0), -EINVAL, "len 0 -> -EINVAL");

	/* On a scanned node: mlx5_9's port is DOWN in the dgx fixture. */
	if (asprintf(&sys, "%s/dgx/sys", data_dir) < 0)
		abort();
	node = scan(sys);
	disc_device_health_reason(dev_of(node, "mlx5_9"), buf, sizeof(buf));
	EQ_STR(buf, "uverbs node missing; port 1 DOWN",
	       "dgx mlx5_9 without dev nodes: node missing, port DOWN");
	disc_node_free(node);
	free(sys);
}

/* ---- abandoning a scan, scans on threads -------------------------------------------- */

static void test_cancel(void)
{
	char *sys;
	atomic_bool cancel = true;
	struct disc_options o = {.dev_root = "/nonexistent", .cancel = &cancel};
	struct disc_node *node = NULL, *old;
	bool full = false;

	if (asprintf(&sys, "%s/dgx/sys", data_dir) < 0)
		abort();
	printf("# cancel and deadline\n");
	o.sysfs_root = sys;
	EQ_INT(disc_scan(&o, &node), -ECANCELED, "cancelled scan -> -ECANCELED");
	ok(!node, "no node from a cancelled scan");
	old = scan(sys);
	EQ_INT(disc_refresh(&o, old, &node, &full), -ECANCELED, "cancelled refresh -> -ECANCELED");
	cancel = false;
	o.deadline_usec = 1; /* long past */
	EQ_INT(disc_scan(&o, &node), -ETIMEDOUT, "scan past its deadline -> -ETIMEDOUT");
	{
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		o.deadline_usec = (uint64_t)ts.tv_sec * 1000000u + 60u * 1000000u;
	}
	ok(disc_scan(&o, &node) == 0 && node && node->n_devices == 10,
	   "scan within its deadline succeeds");
	disc_node_free(node);
	disc_node_free(old);
	free(sys);
}

struct worker {
	const char *sys;
	const struct disc_node *want;
	int equal_runs;
};

static void *scan_worker(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < 5; i++) {
		struct disc_options o = {.sysfs_root = w->sys, .dev_root = "/nonexistent"};
		struct disc_node *node = NULL, *r = NULL;
		bool full = true;

		if (disc_scan(&o, &node) == 0 && disc_node_equal(node, w->want) &&
		    disc_refresh(&o, node, &r, &full) == 0 && disc_node_equal(r, w->want))
			w->equal_runs++;
		disc_node_free(r);
		disc_node_free(node);
	}
	return NULL;
}

static void test_threads(void)
{
	char *sys;
	struct disc_node *want;
	struct worker w[4];
	pthread_t t[4];
	bool all = true;

	if (asprintf(&sys, "%s/quirks/sys", data_dir) < 0)
		abort();
	printf("# scans on 4 threads at once\n");
	want = scan(sys);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.sys = sys, .want = want};
		if (pthread_create(&t[i], NULL, scan_worker, &w[i]) != 0)
			abort();
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		all = all && w[i].equal_runs == 5;
	}
	ok(all, "every concurrent scan and refresh gives the same model");
	disc_node_free(want);
	free(sys);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_port_state();
	test_unknown_stays_unknown();
	test_device_set();
	test_netdevs();
	test_equal();
	test_health_reasons();
	test_cancel();
	test_threads();
	return tap_done();
}
