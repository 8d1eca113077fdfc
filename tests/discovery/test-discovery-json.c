/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `discover --json` form (docs/discover-json.md): printed, parsed back with cJSON,
 * checked field by field on the fixtures. Also the pure string helpers behind the scan.
 * Usage: test-discovery-json PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (TAP on stdout).
 */
#include "fixture-util.h"

#include "common.h"
#include "discovery-internal.h"
#include "discovery.h"


/* Scans a fixture (nodes for all but `omit`), prints and re-parses its JSON. */
static cJSON *fixture_json(const char *profile, const char *omit)
{
	char *sys, *dev = temp_dir("dev"), *text;
	char *argv[] = {(char *)python3,	(char *)mksysfs, "mkdev", NULL, dev,
			omit ? "--omit" : NULL, (char *)omit,	 NULL};
	struct disc_options o = {.dev_root = dev};
	struct disc_node *node = NULL;
	cJSON *j, *parsed;

	if (asprintf(&sys, "%s/%s/sys", data_dir, profile) < 0)
		abort();
	argv[3] = sys;
	if (run(argv) != 0) {
		printf("Bail out! mkdev failed\n");
		exit(1);
	}
	o.sysfs_root = sys;
	if (disc_scan(&o, &node) < 0) {
		printf("Bail out! disc_scan %s failed\n", sys);
		exit(1);
	}
	j = disc_node_to_json(node);
	text = j ? cJSON_PrintUnformatted(j) : NULL;
	parsed = text ? cJSON_Parse(text) : NULL;
	ok(parsed != NULL, "%s: JSON prints and parses back", profile);
	if (!parsed)
		exit(1);
	free(text);
	cJSON_Delete(j);
	disc_node_free(node);
	rm_rf(dev);
	free(dev);
	free(sys);
	return parsed;
}

static cJSON *get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = get(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static cJSON *device_named(const cJSON *root, const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach (d, get(root, "devices"))
		if (str(d, "name") && !strcmp(str(d, "name"), name))
			return (cJSON *)d;
	printf("Bail out! %s not in JSON\n", name);
	exit(1);
}

static bool is_int(const cJSON *v, int want)
{
	return cJSON_IsNumber(v) && v->valuedouble == want;
}

static const char *device_keys[] = {
    "index",  "cdi_index", "name",	"pci",	   "dev_path", "vendor_id", "device_id",
    "driver", "numa_node", "pf",	"vf",	   "vf_of",    "pf_netdev", "node_guid",
    "node_type", "fw_ver", "usable", "healthy", "lent", "uverbs", "ports",
};
static const char *port_keys[] = {
    "port",	     "link_layer", "state",  "state_id", "phys_state",
    "phys_state_id", "rate",	   "netdev", "umad",	 "issm",
};

static bool exact_keys(const cJSON *o, const char **keys, size_t n)
{
	const cJSON *c;
	size_t count = 0;

	cJSON_ArrayForEach (c, o)
		count++;
	for (size_t i = 0; i < n; i++)
		if (!get(o, keys[i]))
			return false;
	return count == n;
}

static void test_dgx(void)
{
	cJSON *root = fixture_json("dgx", NULL), *d, *p, *u;
	int i = 0;
	bool keys = true, pkeys = true, idx = true;

	printf("# dgx JSON\n");
	ok(is_int(get(root, "version"), 1), "version 1");
	ok(cJSON_GetArraySize(get(root, "devices")) == 10, "10 devices");
	ok(cJSON_IsArray(get(root, "problems")) && cJSON_GetArraySize(get(root, "problems")) == 0,
	   "problems is an empty array");
	u = get(root, "rdma_cm");
	ok(u && is_int(get(u, "major"), 10) && is_int(get(u, "minor"), 57) &&
	       cJSON_IsTrue(get(u, "present")) && !strcmp(str(u, "name"), "rdma_cm"),
	   "rdma_cm {name, major 10, minor 57, present}");
	cJSON_ArrayForEach (d, get(root, "devices")) {
		keys =
		    keys && exact_keys(d, device_keys, sizeof(device_keys) / sizeof(*device_keys));
		idx = idx && is_int(get(d, "index"), i++);
		cJSON_ArrayForEach (p, get(d, "ports"))
			pkeys = pkeys &&
				exact_keys(p, port_keys, sizeof(port_keys) / sizeof(*port_keys));
	}
	ok(keys, "every device has exactly the documented keys");
	ok(pkeys, "every port has exactly the documented keys");
	ok(idx, "index = position in PCI order");
	ok(is_int(get(device_named(root, "mlx5_9"), "cdi_index"), 9),
	   "all usable: cdi_index = index");

	d = device_named(root, "mlx5_8");
	ok(is_int(get(d, "index"), 4), "mlx5_8 is index 4 (PCI order)");
	EQ_STR(str(d, "pci"), "0000:5e:00.0", "mlx5_8 pci");
	EQ_STR(str(d, "vendor_id"), "0x15b3", "vendor_id hex string");
	EQ_STR(str(d, "device_id"), "0x101d", "device_id hex string");
	EQ_STR(str(d, "driver"), "mlx5_core", "driver");
	ok(is_int(get(d, "numa_node"), 0), "numa_node 0");
	ok(cJSON_IsTrue(get(d, "pf")) && cJSON_IsFalse(get(d, "vf")) &&
	       cJSON_IsNull(get(d, "vf_of")) && cJSON_IsNull(get(d, "pf_netdev")),
	   "PF: pf true, vf false, vf_of null, pf_netdev null");
	ok(cJSON_IsTrue(get(d, "usable")) && cJSON_IsTrue(get(d, "healthy")), "usable, healthy");
	u = get(d, "uverbs");
	ok(u && !strcmp(str(u, "name"), "uverbs8") && is_int(get(u, "major"), 231) &&
	       is_int(get(u, "minor"), 200) && cJSON_IsTrue(get(u, "present")),
	   "uverbs {uverbs8, 231, 200, present}");
	p = cJSON_GetArrayItem(get(d, "ports"), 0);
	ok(is_int(get(p, "port"), 1), "port 1");
	EQ_STR(str(p, "link_layer"), "Ethernet", "link_layer");
	EQ_STR(str(p, "state"), "ACTIVE", "state name");
	ok(is_int(get(p, "state_id"), 4), "state_id 4");
	EQ_STR(str(p, "phys_state"), "LinkUp", "phys_state name");
	ok(is_int(get(p, "phys_state_id"), 5), "phys_state_id 5");
	EQ_STR(str(p, "netdev"), "ens1np0", "netdev");
	ok(get(p, "umad") && cJSON_IsObject(get(p, "umad")) && cJSON_IsNull(get(p, "issm")),
	   "umad object, issm null");

	d = device_named(root, "mlx5_9");
	ok(cJSON_IsTrue(get(d, "usable")) && cJSON_IsFalse(get(d, "healthy")),
	   "mlx5_9 usable but not healthy (port DOWN)");
	p = cJSON_GetArrayItem(get(d, "ports"), 0);
	EQ_STR(str(p, "state"), "DOWN", "mlx5_9 state");
	EQ_STR(str(p, "phys_state"), "Disabled", "mlx5_9 phys_state");
	cJSON_Delete(root);
}

static void test_sriov(void)
{
	cJSON *root = fixture_json("sriov", NULL), *d;

	printf("# sriov JSON\n");
	d = device_named(root, "mlx5_3");
	ok(cJSON_IsFalse(get(d, "pf")) && cJSON_IsTrue(get(d, "vf")), "VF: pf false, vf true");
	EQ_STR(str(d, "vf_of"), "0000:3b:00.0", "vf_of = PF address");
	EQ_STR(str(d, "pf_netdev"), "enp59s0f0np0", "pf_netdev = the PF function's netdev");
	EQ_STR(str(d, "node_guid"), "0000:0000:0000:0000", "zero GUID kept as is");
	ok(is_int(get(d, "numa_node"), 1), "numa_node 1");
	cJSON_Delete(root);
}

static void test_quirks(void)
{
	cJSON *root = fixture_json("quirks", "uverbs5"), *d, *p, *probs, *s;
	bool all_strings = true;

	printf("# quirks JSON\n");
	d = device_named(root, "ibp12s0");
	ok(cJSON_IsNull(get(d, "numa_node")), "garbage numa_node -> null");
	d = device_named(root, "smi1");
	ok(cJSON_IsNull(get(d, "uverbs")) && cJSON_IsFalse(get(d, "usable")) &&
	       cJSON_IsFalse(get(d, "healthy")),
	   "smi1: uverbs null, not usable, not healthy");
	ok(cJSON_GetArraySize(get(d, "ports")) == 4, "smi1 has 4 ports");
	d = device_named(root, "mlx5_0");
	p = cJSON_GetArrayItem(get(d, "ports"), 0);
	ok(cJSON_IsObject(get(p, "umad")) && cJSON_IsNull(get(p, "issm")),
	   "mlx5_0: umad, issm null");
	d = device_named(root, "mlx5_bond_0");
	ok(is_int(get(get(d, "uverbs"), "major"), 511), "dynamic major in JSON");
	d = device_named(root, "mlx5_5");
	ok(cJSON_IsFalse(get(get(d, "uverbs"), "present")) && cJSON_IsFalse(get(d, "healthy")),
	   "omitted node: present false, healthy false");
	d = device_named(root, "mlx5_4");
	ok(cJSON_IsNull(get(d, "fw_ver")), "unknown fw_ver -> null");
	p = cJSON_GetArrayItem(get(d, "ports"), 0);
	ok(cJSON_IsNull(get(p, "state")) && cJSON_IsNull(get(p, "state_id")),
	   "garbage state -> null, null");
	d = device_named(root, "rocep59s0f0S88");
	ok(cJSON_IsNull(get(d, "pci")) && cJSON_IsFalse(get(d, "pf")) &&
	       cJSON_IsNull(get(d, "vendor_id")) && cJSON_IsNull(get(d, "numa_node")),
	   "SF: pci null, pf false, vendor_id null, numa_node null");
	ok(is_int(get(d, "index"), 9), "SF sorts last");
	ok(is_int(get(d, "cdi_index"), 7), "SF cdi_index counts usable devices only");
	ok(cJSON_IsNull(get(device_named(root, "smi1"), "cdi_index")), "unusable: cdi_index null");
	ok(is_int(get(device_named(root, "ibp12s0"), "cdi_index"), 1) &&
	       is_int(get(device_named(root, "ibp12s0"), "index"), 2),
	   "ibp12s0: index 2, cdi_index 1");
	probs = get(root, "problems");
	ok(cJSON_GetArraySize(probs) >= 10, "quirks problems listed");
	cJSON_ArrayForEach (s, probs)
		all_strings = all_strings && cJSON_IsString(s);
	ok(all_strings, "problems are strings");
	cJSON_Delete(root);
}

/* Found by tests/fuzz/fuzz-sysfs: bytes that are not UTF-8 in a sysfs value (here a
 * firmware string and a parent link) made `discover --json` invalid JSON. */
static void test_not_utf8(void)
{
	struct disc_port port = {.num = 1, .state = -1, .phys_state = -1};
	struct disc_device dev = {.numa_node = -1, .ports = &port, .n_ports = 1};
	struct disc_node node = {.devices = &dev, .n_devices = 1};
	char *text;
	cJSON *j;

	printf("# values that are not UTF-8\n");
	strcpy(dev.name, "mlx5_0");
	strcpy(dev.fw_ver, "28.\xff\xfe");
	strcpy(dev.dev_path, "devices/pci0000:17/0\x97\x97");
	strcpy(port.link_layer, "Infini\xc3");
	j = disc_node_to_json(&node);
	text = j ? cJSON_PrintUnformatted(j) : NULL;
	ok(text && text_is_utf8(text, strlen(text)), "the document is UTF-8");
	ok(text && strstr(text, "\"fw_ver\":\"28.\\\\xff\\\\xfe\""), "fw_ver shown escaped");
	ok(text && strstr(text, "\"dev_path\":\"devices/pci0000:17/0\\\\x97\\\\x97\""),
	   "dev_path shown escaped");
	ok(text && strstr(text, "\"link_layer\":\"Infini\\\\xc3\""), "link_layer shown escaped");
	free(text);
	cJSON_Delete(j);
}

static void test_empty(void)
{
	char *empty = temp_dir("empty"), *text;
	struct disc_options o = {.sysfs_root = empty, .dev_root = empty};
	struct disc_node *node = NULL;
	cJSON *j;

	printf("# empty node JSON\n");
	ok(disc_scan(&o, &node) == 0, "empty root scans");
	j = node ? disc_node_to_json(node) : NULL;
	text = j ? cJSON_PrintUnformatted(j) : NULL;
	EQ_STR(text, "{\"version\":1,\"devices\":[],\"rdma_cm\":null,\"problems\":[]}",
	       "empty node JSON");
	free(text);
	cJSON_Delete(j);
	disc_node_free(node);
	rm_rf(empty);
	free(empty);
}

static void test_helpers(void)
{
	char out[64], name[16];
	unsigned id = 0;
	int num = 0;

	printf("# pure helpers\n");
	EQ_INT(disc_path_join("class/infiniband", "../../devices/pci0000:00/x/infiniband/m", out,
			      sizeof(out)),
	       33, "join length");
	EQ_STR(out, "devices/pci0000:00/x/infiniband/m", "join relative link");
	disc_path_join("a/b", "../../../../../etc", out, sizeof(out));
	EQ_STR(out, "etc", "'..' clamped at the root");
	disc_path_join("a/b", "/devices//./x/", out, sizeof(out));
	EQ_STR(out, "devices/x", "absolute link restarts at the root");
	disc_path_join("", "..", out, sizeof(out));
	EQ_STR(out, "", "root/.. is the root");
	EQ_INT(disc_path_join(
		   "a", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		   out, sizeof(out)),
	       -ENAMETOOLONG, "join overflow -> -ENAMETOOLONG");

	ok(disc_pci_addr_valid("0000:3b:00.0"), "PCI address valid");
	ok(disc_pci_addr_valid("10000:e1:1f.7"), "VMD 5-digit domain valid");
	ok(!disc_pci_addr_valid("0000:3b:00.8"), "function 8 invalid");
	ok(!disc_pci_addr_valid("mlx5_core.sf.2"), "aux device name invalid");
	ok(!disc_pci_addr_valid("0000:3B:00.0"), "upper case invalid (kernel prints lower)");
	ok(!disc_pci_addr_valid(""), "empty invalid");
	ok(disc_pci_compare("0000:3b:00.2", "0000:3b:00.10") != 0, "compare handles garbage");
	ok(disc_pci_compare("0000:3b:00.1", "0000:3b:01.0") < 0, "function < next device");
	ok(disc_pci_compare("0001:00:00.0", "0000:ff:1f.7") > 0, "domain first");
	ok(disc_pci_compare("10000:00:00.0", "0000:ff:00.0") > 0, "5-digit domain numeric");

	ok(disc_parse_state("4: ACTIVE", &num, name, sizeof(name)) == 0 && num == 4 &&
	       !strcmp(name, "ACTIVE"),
	   "parse '4: ACTIVE'");
	ok(disc_parse_state("5: LinkUp", &num, name, sizeof(name)) == 0 && num == 5,
	   "parse '5: LinkUp'");
	ok(disc_parse_state("xyz", &num, name, sizeof(name)) == -EINVAL, "'xyz' rejected");
	ok(disc_parse_state("4:ACTIVE", &num, name, sizeof(name)) == -EINVAL, "no space rejected");
	ok(disc_parse_state("4: ", &num, name, sizeof(name)) == -EINVAL, "no name rejected");
	ok(disc_parse_state("99999: X", &num, name, sizeof(name)) == -EINVAL, "huge rejected");
	ok(disc_parse_state("4: A\tB", &num, name, sizeof(name)) == -EINVAL, "control rejected");
	ok(disc_parse_state("4: ABCDEFGHIJKLMNOPQRSTUVWXYZ", &num, name, sizeof(name)) == -EINVAL,
	   "name too long rejected");

	ok(disc_parse_pci_id("0x15b3", &id) == 0 && id == 0x15b3, "parse 0x15b3");
	ok(disc_parse_pci_id("15b3", &id) == -EINVAL, "missing 0x rejected");
	ok(disc_parse_pci_id("0x10000", &id) == -ERANGE, "0x10000 out of range");
	ok(disc_parse_pci_id("0x15b3 ", &id) == -EINVAL, "trailing junk rejected");

	ok(disc_ibdev_name_ok("mlx5_bond_0") && disc_ibdev_name_ok("rocep59s0f0S88"),
	   "real names accepted");
	ok(!disc_ibdev_name_ok("bad name") && !disc_ibdev_name_ok("..hidden") &&
	       !disc_ibdev_name_ok("a..b") && !disc_ibdev_name_ok("a/b") &&
	       !disc_ibdev_name_ok("") && !disc_ibdev_name_ok("x\n"),
	   "unsafe names rejected");
	ok(!disc_ibdev_name_ok("mlx5_") && !disc_ibdev_name_ok("-x") && !disc_ibdev_name_ok("x:") &&
	       !disc_ibdev_name_ok("all") && !disc_ibdev_name_ok("0") && !disc_ibdev_name_ok("12"),
	   "names CDI refuses or the spec's aliases take rejected");
	ok(disc_ibdev_name_ok("0x") && disc_ibdev_name_ok("allx") && disc_ibdev_name_ok("a.b:c-d"),
	   "names that only look like aliases accepted");
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_helpers();
	test_empty();
	test_not_utf8();
	test_dgx();
	test_sriov();
	test_quirks();
	return tap_done();
}
