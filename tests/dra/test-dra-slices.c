/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Slice devices (attributes and taints, as docs/dra.md documents them), the publisher's
 * cut into slices and its plan against what the API server lists; each slice checked
 * against the API server's validation rules.
 */
#include "dra-test-util.h"

#define DRV "rdma.example"

/* A sysfs attribute of the fixture, newline stripped. */
static char *fixture_attr(const char *profile, const char *rel)
{
	static char buf[256];
	char *path;
	FILE *f;

	if (asprintf(&path, "%s/%s/sys/%s", data_dir, profile, rel) < 0)
		abort();
	f = fopen(path, "re");
	free(path);
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static const char *str_attr(const cJSON *dev, const char *key)
{
	return cJSON_GetStringValue(attr(dev, key, "string"));
}

static bool all_valid(const cJSON *specs)
{
	const cJSON *s;
	bool good = true;

	cJSON_ArrayForEach (s, specs) {
		cJSON *o = dra_slice_object(DRV, "node1", s, NULL, NULL);
		const char *why = o ? slice_problem(o) : "OOM";

		if (why) {
			printf("#   invalid slice: %s\n", why);
			good = false;
		}
		cJSON_Delete(o);
	}
	return good;
}

static void test_dgx_attributes(void)
{
	struct fixture *fx = fixture_scan("dgx");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a);
	cJSON *devs = dra_slice_devices(inv, DRV), *specs;
	const cJSON *d2 = device_named(devs, "pci-0000-3b-00-0");
	const cJSON *d9 = device_named(devs, "pci-0000-d8-00-0"), *t;
	const cJSON *rate = attr(d2, DRV "/rateGbps", "int");
	const cJSON *numa = attr(d2, "resource.kubernetes.io/numaNode", "int");
	const char *cls = "class/infiniband/mlx5_2";
	char key[64];

	ok(cJSON_GetArraySize(devs) == 10, "one slice device per published device");
	ok(d2 != NULL, "mlx5_2 is pci-0000-3b-00-0");
	is_str(str_attr(d2, "resource.kubernetes.io/pcieRoot"), "pci0000:38",
	       "pcieRoot: the first element under /sys/devices");
	is_str(str_attr(d2, "resource.kubernetes.io/pciBusID"), "0000:3b:00.0", "pciBusID");
	ok(numa && numa->valuedouble ==
		       atoi(fixture_attr("dgx", "bus/pci/devices/0000:3b:00.0/numa_node")),
	   "numaNode: sysfs numa_node, an int");
	is_str(str_attr(d2, DRV "/rdmaDevice"), "mlx5_2", "rdmaDevice");
	is_str(str_attr(d2, DRV "/linkLayer"),
	       fixture_attr("dgx", "class/infiniband/mlx5_2/ports/1/link_layer"),
	       "linkLayer of the first port");
	is_str(str_attr(d2, DRV "/portState"), "ACTIVE", "portState: the state's name");
	ok(rate && rate->valuedouble ==
		       atoi(fixture_attr("dgx", "class/infiniband/mlx5_2/ports/1/rate")),
	   "rateGbps: the rate's leading number, an int");
	is_str(str_attr(d2, DRV "/netdev"), "ibp59s0", "netdev of the first port");
	ok(cJSON_IsFalse(attr(d2, DRV "/virtualFunction", "bool")), "virtualFunction false");
	ok(!attr(d2, DRV "/pfPciAddress", "string"), "no pfPciAddress on a PF");
	is_str(str_attr(d2, DRV "/vendor"),
	       fixture_attr("dgx", "bus/pci/devices/0000:3b:00.0/vendor"),
	       "vendor as sysfs writes it (0x15b3)");
	is_str(str_attr(d2, DRV "/deviceId"),
	       fixture_attr("dgx", "bus/pci/devices/0000:3b:00.0/device"),
	       "deviceId as sysfs writes it");
	is_str(str_attr(d2, DRV "/driver"), "mlx5_core", "driver");
	snprintf(key, sizeof(key), "%s/node_guid", cls);
	is_str(str_attr(d2, DRV "/nodeGuid"), fixture_attr("dgx", key), "nodeGuid");
	snprintf(key, sizeof(key), "%s/fw_ver", cls);
	is_str(str_attr(d2, DRV "/firmware"), fixture_attr("dgx", key), "firmware");
	is_str(str_attr(d2, DRV "/pool"), "rdma.example/hca", "pool: the config pool's name");
	ok(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d2, "attributes")) == 15,
	   "15 attributes on a PCI PF with everything known (all but pfPciAddress)");
	ok(!cJSON_GetObjectItemCaseSensitive(d2, "taints"), "a healthy device has no taints");

	t = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d9, "taints"), 0);
	ok(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d9, "taints")) == 1,
	   "the DOWN device carries one taint");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "key")), DRV "/unhealthy",
	       "taint key <driver>/unhealthy");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "value")), "port-1-DOWN",
	       "taint value: the reason as a label value");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "effect")), "NoSchedule",
	       "taint effect NoSchedule");
	is_str(str_attr(d9, DRV "/portState"), "DOWN", "its portState says DOWN");

	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(cJSON_GetArraySize(specs) == 1, "10 devices: one slice");
	ok(all_valid(specs), "the slice passes the API server's validation");
	cJSON_Delete(specs);
	cJSON_Delete(devs);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

static void test_sriov_attributes(void)
{
	struct fixture *fx = fixture_scan("sriov");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a);
	cJSON *devs = dra_slice_devices(inv, DRV), *specs;
	const cJSON *vf = device_named(devs, "pci-0000-3b-00-2");

	ok(cJSON_IsTrue(attr(vf, DRV "/virtualFunction", "bool")), "a VF: virtualFunction true");
	is_str(str_attr(vf, DRV "/pfPciAddress"), "0000:3b:00.0", "pfPciAddress: its PF");
	is_str(str_attr(vf, DRV "/linkLayer"), "Ethernet", "RoCE: linkLayer Ethernet");
	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(all_valid(specs), "the slice passes the API server's validation");
	cJSON_Delete(specs);
	cJSON_Delete(devs);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

/* A shared pool's devices may go to several claims: allowMultipleAllocations, which a
 * server without the feature drops - and that is no difference to publish again. */
static void test_shared_pool(void)
{
	struct fixture *fx = fixture_scan("dgx");
	struct cfg *cfg;
	struct cfg_assignment *a;
	const char *yaml = "pools:\n"
			   "  - resourceName: rdma.example/shared\n"
			   "    mode: shared\n"
			   "    sharedSlots: 4\n"
			   "    selectors:\n"
			   "      names: [mlx5_0]\n"
			   "  - resourceName: rdma.example/hca\n";
	struct dra_inventory *inv = inventory_of(fx->node, yaml, &cfg, &a);
	cJSON *devs = dra_slice_devices(inv, DRV), *specs, *have, *d0;
	const cJSON *dev;
	size_t shared = 0, plain = 0;

	cJSON_ArrayForEach (dev, devs) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(dev, "allowMultipleAllocations");

		if (strcmp(str_attr(dev, DRV "/pool") ?: "", "rdma.example/shared") == 0)
			shared += cJSON_IsTrue(m);
		else
			plain += m == NULL;
	}
	ok(shared == 1, "the shared pool's device: allowMultipleAllocations true");
	ok(plain == (size_t)cJSON_GetArraySize(devs) - 1, "the others: no such field");
	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(all_valid(specs), "the slice passes the API server's validation");

	have = cJSON_Duplicate(cJSON_GetArrayItem(specs, 0), true);
	ok(dra_slice_spec_equal(cJSON_GetArrayItem(specs, 0), have), "equal to itself");
	cJSON_ArrayForEach (d0, cJSON_GetObjectItemCaseSensitive(have, "devices"))
		cJSON_DeleteItemFromObjectCaseSensitive(d0, "allowMultipleAllocations");
	ok(dra_slice_spec_equal(cJSON_GetArrayItem(specs, 0), have),
	   "a server that dropped allowMultipleAllocations holds what we want");
	ok(!dra_slice_spec_equal(have, cJSON_GetArrayItem(specs, 0)),
	   "but a server that has it where we want none differs");
	cJSON_ArrayForEach (d0, cJSON_GetObjectItemCaseSensitive(have, "devices"))
		cJSON_AddFalseToObject(d0, "allowMultipleAllocations");
	ok(!dra_slice_spec_equal(cJSON_GetArrayItem(specs, 0), have),
	   "and so does one that says false");
	cJSON_Delete(have);
	cJSON_Delete(specs);
	cJSON_Delete(devs);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

/* The quirks fixture: renamed devices, an SF without PCI address, a garbage NUMA node, a
 * device with an unusable sibling on its function, hostile attribute values. */
static void test_quirks(void)
{
	struct fixture *fx = fixture_scan("quirks");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a);
	cJSON *devs = dra_slice_devices(inv, DRV), *specs;
	const cJSON *ib = device_named(devs, "pci-0000-0c-00-0");
	const cJSON *sf = device_named(devs, "rdma-rocep59s0f0s88");

	ok(cJSON_GetArraySize(devs) == (int)disc_node_count_usable(fx->node),
	   "quirks: every usable device is a slice device (%d)", cJSON_GetArraySize(devs));
	ok(device_named(devs, "pci-0000-0b-00-0") != NULL,
	   "mlx5_0 beside the unusable smi1: named by its function alone");
	is_str(str_attr(ib, DRV "/rdmaDevice"), "ibp12s0", "a renamed device keeps its name");
	ok(ib && !attr(ib, "resource.kubernetes.io/numaNode", "int"),
	   "numa_node \"banana\": numaNode omitted");
	ok(sf && !attr(sf, "resource.kubernetes.io/pciBusID", "string") &&
	       !attr(sf, "resource.kubernetes.io/pcieRoot", "string"),
	   "an SF without PCI address: rdma-<name>, no PCI attributes");
	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(all_valid(specs), "the quirks slice passes the API server's validation");
	cJSON_Delete(specs);
	cJSON_Delete(devs);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

static void test_omitted(void)
{
	struct fake_node *f = fake_new(4);
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv;
	struct disc_device *d;
	cJSON *devs;
	const cJSON *rxe, *big, *frac;

	d = fake_add(f, "mlx5_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
		     -1, true, true);
	memset(d->fw_ver, '7', 65);
	snprintf(d->node_guid, sizeof(d->node_guid), "e8eb:d303:00dd:1884");
	snprintf(d->ports[0].rate, sizeof(d->ports[0].rate), "2.5 Gb/sec (1X SDR)");
	d = fake_add(f, "mlx5_1", "0000:3b:00.1", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", 1,
		     true, true);
	memset(d->fw_ver, '7', 64);
	snprintf(d->ports[0].rate, sizeof(d->ports[0].rate), "10 Gb/sec (4X SDR)");
	snprintf(d->driver, sizeof(d->driver), "bad\x01driver");
	d = fake_add(f, "rxe0", "", "devices/virtual/net/eth0", 0, true, true);
	snprintf(d->driver, sizeof(d->driver), "rdma\xc2\x9b[2Jrxe");
	inv = fake_inventory(f, &cfg, &a);
	devs = dra_slice_devices(inv, DRV);
	big = device_named(devs, "pci-0000-3b-00-0");
	frac = big;
	rxe = device_named(devs, "rdma-rxe0");

	ok(big && !attr(big, "resource.kubernetes.io/numaNode", "int"), "numaNode omitted at -1");
	ok(big && !attr(big, DRV "/firmware", "string"),
	   "a 65-character string is omitted, not cut");
	is_str(str_attr(big, DRV "/nodeGuid"), "e8eb:d303:00dd:1884",
	       "the other attributes of that device stay");
	ok(frac && !attr(frac, DRV "/rateGbps", "int"), "a fractional rate (2.5) is omitted");
	ok(!attr(big, DRV "/netdev", "string") && !attr(big, DRV "/vendor", "string") &&
	       !attr(big, DRV "/deviceId", "string") && !attr(big, DRV "/driver", "string"),
	   "unknown netdev, vendor, device ID, driver: omitted");
	d = NULL;
	{
		const cJSON *m1 = device_named(devs, "pci-0000-3b-00-1");
		const cJSON *r = attr(m1, DRV "/rateGbps", "int");

		ok(m1 && strlen(str_attr(m1, DRV "/firmware") ?: "") == 64,
		   "a 64-character string is kept");
		ok(r && r->valuedouble == 10, "rate 10 Gb/sec -> 10");
		ok(!attr(m1, DRV "/driver", "string"),
		   "a value with a control character is omitted");
		ok(attr(m1, "resource.kubernetes.io/numaNode", "int") &&
		       attr(m1, "resource.kubernetes.io/numaNode", "int")->valuedouble == 1,
		   "numaNode 1 is there");
	}
	ok(rxe && !attr(rxe, "resource.kubernetes.io/pcieRoot", "string") &&
	       !attr(rxe, "resource.kubernetes.io/pciBusID", "string"),
	   "no PCI address: no pcieRoot, no pciBusID");
	ok(rxe && !attr(rxe, DRV "/driver", "string"),
	   "a value with a C1 control character (CSI) is omitted too");
	ok(rxe && attr(rxe, "resource.kubernetes.io/numaNode", "int"),
	   "numaNode 0 is kept (only -1 is omitted)");
	cJSON_Delete(devs);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fake_free(f);
}

static void test_label_values(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"port 1 DOWN", "port-1-DOWN"},
	    {"no ACTIVE port: port 1 DOWN, port 2 INIT", "no-ACTIVE-port-port-1-DOWN-port-2-INIT"},
	    {"uverbs node missing; port 1 state unknown",
	     "uverbs-node-missing-port-1-state-unknown"},
	    {"  --x.y_z--  ", "x.y_z"},
	    {"", "unknown"},
	    {"!!!", "unknown"},
	};
	char buf[64], longer[200];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		dra_label_value(cases[i].in, buf);
		is_str(buf, cases[i].want, "label value of '%s'", cases[i].in);
	}
	memset(longer, 'a', sizeof(longer));
	longer[62] = ' ';
	longer[sizeof(longer) - 1] = '\0';
	dra_label_value(longer, buf);
	ok(strlen(buf) <= 63 && label_value_ok(buf),
	   "a long reason is cut to a valid label value (%zu)", strlen(buf));
}

/* n devices named d<i>; tainted[i] adds a taint. */
static cJSON *n_devices(size_t n, const bool *tainted)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++) {
		cJSON *d = cJSON_CreateObject();
		char name[32];

		snprintf(name, sizeof(name), "d%zu", i);
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddObjectToObject(d, "attributes");
		if (tainted && tainted[i]) {
			cJSON *t = cJSON_CreateObject();

			cJSON_AddStringToObject(t, "key", DRV "/unhealthy");
			cJSON_AddStringToObject(t, "value", "port-1-DOWN");
			cJSON_AddStringToObject(t, "effect", "NoSchedule");
			cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "taints"), t);
		}
		cJSON_AddItemToArray(arr, d);
	}
	return arr;
}

static bool cut_is(const struct dra_slice_cut *c, size_t n, const size_t *want, size_t n_want)
{
	size_t start = 0;

	if (n != n_want)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (c[i].start != start || c[i].count != want[i])
			return false;
		start += c[i].count;
	}
	return true;
}

static void test_cut(void)
{
	cJSON *devs = n_devices(300, NULL), *specs;
	struct dra_slice_cut *c = NULL, *c2 = NULL;
	size_t n = 0, n2 = 0;
	bool tainted[300] = {false};
	const size_t want300[] = {128, 128, 44}, want_t[] = {128, 64, 108}, want0[] = {0};

	ok(dra_slice_cut(devs, &c, &n) == 0 && cut_is(c, n, want300, 3),
	   "300 devices: 128 + 128 + 44");
	ok(dra_slice_cut(devs, &c2, &n2) == 0 && n2 == n && memcmp(c, c2, n * sizeof(*c)) == 0,
	   "the same devices give the same cut");
	free(c);
	free(c2);
	specs = dra_slice_specs(DRV, "node1", 7, devs);
	ok(cJSON_GetArraySize(specs) == 3 && all_valid(specs), "3 valid slices");
	{
		const cJSON *pool =
		    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(specs, 2), "pool");

		ok(cJSON_GetObjectItemCaseSensitive(pool, "resourceSliceCount")->valuedouble == 3 &&
		       cJSON_GetObjectItemCaseSensitive(pool, "generation")->valuedouble == 7 &&
		       strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pool, "name")),
			      "node1") == 0,
		   "pool: name = node, generation, resourceSliceCount = 3");
	}
	cJSON_Delete(specs);
	cJSON_Delete(devs);

	/* One tainted device at 150: the second slice holds at most 64. */
	tainted[150] = true;
	devs = n_devices(300, tainted);
	ok(dra_slice_cut(devs, &c, &n) == 0 && cut_is(c, n, want_t, 3),
	   "a taint at device 150: 128 + 64 (holding it) + 108");
	free(c);
	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(all_valid(specs), "every slice within the tainted limit");
	cJSON_Delete(specs);
	cJSON_Delete(devs);

	/* All tainted: 64 each. */
	memset(tainted, 1, sizeof(tainted));
	devs = n_devices(130, tainted);
	{
		const size_t want[] = {64, 64, 2};

		ok(dra_slice_cut(devs, &c, &n) == 0 && cut_is(c, n, want, 3),
		   "130 tainted devices: 64 + 64 + 2");
		free(c);
	}
	specs = dra_slice_specs(DRV, "node1", 1, devs);
	ok(all_valid(specs), "valid");
	cJSON_Delete(specs);
	cJSON_Delete(devs);

	devs = n_devices(0, NULL);
	ok(dra_slice_cut(devs, &c, &n) == 0 && cut_is(c, n, want0, 1),
	   "no devices: one empty slice (the pool and its generation stay visible)");
	free(c);
	cJSON_Delete(devs);
	ok(dra_slice_cut(NULL, &c, &n) == -EINVAL, "cut of a non-array: -EINVAL");
}

/* A listed object: the spec as the server returns it, with a name and resourceVersion. */
static cJSON *listed_of(const cJSON *spec, const char *name, const char *rv)
{
	return dra_slice_object(DRV, "node1", spec, name, rv);
}

static size_t count_kind(const struct dra_slice_op *ops, size_t n, enum dra_slice_op_kind k)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ops[i].kind == k;
	return c;
}

static const char *op_name(const struct dra_slice_op *op)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(op->listed, "metadata");

	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
}

static void test_plan(void)
{
	cJSON *devs = n_devices(300, NULL);
	cJSON *specs = dra_slice_specs(DRV, "node1", 5, devs);
	cJSON *old = dra_slice_specs(DRV, "node1", 4, devs);
	cJSON *listed = cJSON_CreateArray();
	struct dra_slice_op *ops = NULL;
	size_t n = 99;

	ok(dra_slice_plan(specs, listed, &ops, &n) == 0 && n == 3 &&
	       count_kind(ops, n, DRA_SLICE_CREATE) == 3 && ops[0].spec == 0 && ops[2].spec == 2,
	   "nothing listed: create the 3 slices in order");
	free(ops);

	/* The server holds exactly them (listed in another order, names c, a, b). */
	cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(specs, 2), "s-c", "3"));
	cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(specs, 0), "s-a", "1"));
	cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(specs, 1), "s-b", "2"));
	ok(dra_slice_plan(specs, listed, &ops, &n) == 0 && n == 0 && ops == NULL,
	   "the server holds them: in sync, nothing to do");

	/* A duplicate of slice 1: deleted. */
	cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(specs, 1), "s-a2", "4"));
	ok(dra_slice_plan(specs, listed, &ops, &n) == 0 && n == 1 &&
	       ops[0].kind == DRA_SLICE_DELETE && ops[0].listed &&
	       strcmp(op_name(&ops[0]), "s-b") == 0,
	   "a duplicate: the later name is deleted, the first kept");
	free(ops);
	cJSON_DeleteItemFromArray(listed, 3);

	/* The server added timeAdded to a taint: still equal. */
	{
		bool t[300] = {false};
		cJSON *tdevs, *tspecs, *tl = cJSON_CreateArray(), *o;

		t[3] = true;
		tdevs = n_devices(300, t);
		tspecs = dra_slice_specs(DRV, "node1", 2, tdevs);
		for (int i = 0; i < cJSON_GetArraySize(tspecs); i++) {
			char name[16];

			snprintf(name, sizeof(name), "t-%d", i);
			o = listed_of(cJSON_GetArrayItem(tspecs, i), name, "9");
			cJSON_AddItemToArray(tl, o);
		}
		o = cJSON_GetArrayItem(
		    cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(
			    cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tl, 0), "spec"),
				"devices"),
			    3),
			"taints"),
		    0);
		cJSON_AddStringToObject(o, "timeAdded", "2026-12-01T23:00:00Z");
		ok(dra_slice_plan(tspecs, tl, &ops, &n) == 0 && n == 0,
		   "a taint's timeAdded set by the server is no difference");
		cJSON_Delete(tl);
		cJSON_Delete(tspecs);
		cJSON_Delete(tdevs);
	}

	/* A slice deleted behind our back: one create. */
	cJSON_DeleteItemFromArray(listed, 0); /* s-c, spec 2 */
	ok(dra_slice_plan(specs, listed, &ops, &n) == 0 && n == 1 &&
	       ops[0].kind == DRA_SLICE_CREATE && ops[0].spec == 2,
	   "a deleted slice: created again");
	free(ops);

	/* A restart: the server holds generation 4 plus a stray slice; we publish 5. */
	cJSON_Delete(listed);
	listed = cJSON_CreateArray();
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "old-%d", i);
		cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(old, i), name, "7"));
	}
	cJSON_AddItemToArray(listed, listed_of(cJSON_GetArrayItem(old, 0), "old-3", "8"));
	ok(dra_slice_generation(cJSON_GetArrayItem(listed, 0)) == 4,
	   "the generation of a listed slice is read");
	ok(dra_slice_plan(specs, listed, &ops, &n) == 0 && n == 4 &&
	       count_kind(ops, n, DRA_SLICE_UPDATE) == 3 &&
	       count_kind(ops, n, DRA_SLICE_DELETE) == 1 && ops[0].kind == DRA_SLICE_UPDATE &&
	       ops[3].kind == DRA_SLICE_DELETE && strcmp(op_name(&ops[3]), "old-3") == 0,
	   "stale generation: the slices are updated (first), the extra one deleted (last)");
	free(ops);

	/* Fewer devices: one slice left, two deleted. */
	{
		cJSON *few = n_devices(5, NULL);
		cJSON *fspecs = dra_slice_specs(DRV, "node1", 6, few);

		ok(dra_slice_plan(fspecs, listed, &ops, &n) == 0 && n == 4 &&
		       count_kind(ops, n, DRA_SLICE_UPDATE) == 1 &&
		       count_kind(ops, n, DRA_SLICE_DELETE) == 3,
		   "300 -> 5 devices: one update, the rest deleted");
		free(ops);
		cJSON_Delete(fspecs);
		cJSON_Delete(few);
	}
	ok(dra_slice_plan(NULL, listed, &ops, &n) == -EINVAL, "plan without specs: -EINVAL");
	ok(dra_slice_generation(NULL) == -1, "no object: generation -1");
	cJSON_Delete(listed);
	cJSON_Delete(old);
	cJSON_Delete(specs);
	cJSON_Delete(devs);
}

static void test_object(void)
{
	cJSON *devs = n_devices(1, NULL), *specs = dra_slice_specs(DRV, "node1", 1, devs);
	cJSON *post = dra_slice_object(DRV, "node1", cJSON_GetArrayItem(specs, 0), NULL, NULL);
	cJSON *put = dra_slice_object(DRV, "node1", cJSON_GetArrayItem(specs, 0), "node1-x", "42");
	const cJSON *pm = cJSON_GetObjectItemCaseSensitive(post, "metadata");
	const cJSON *um = cJSON_GetObjectItemCaseSensitive(put, "metadata");

	is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(pm, "generateName")),
	       "node1-rdma.example-", "POST: generateName <node>-<driver>-");
	ok(!cJSON_GetObjectItemCaseSensitive(pm, "name"), "POST: no name");
	is_str(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(um, "resourceVersion")), "42",
	       "PUT: the listed resourceVersion");
	ok(slice_problem(post) == NULL && slice_problem(put) == NULL, "both are valid objects");
	cJSON_Delete(post);
	cJSON_Delete(put);
	cJSON_Delete(specs);
	cJSON_Delete(devs);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_dgx_attributes();
	test_sriov_attributes();
	test_shared_pool();
	test_quirks();
	test_omitted();
	test_label_values();
	test_cut();
	test_plan();
	test_object();
	return tap_done();
}
