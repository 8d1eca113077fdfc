/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_build() on device models built in memory: which devices a spec gets, which
 * edits each carries, and which nodes get no spec at all.
 */
#include <string.h>

#include "specs.h"

#include "../tap.h"

static struct disc_port ib_port(unsigned num, unsigned umad, bool issm)
{
	struct disc_port p = {
	    .num = num, .state = 4, .phys_state = 5, .has_umad = true, .has_issm = issm};

	snprintf(p.link_layer, sizeof(p.link_layer), "InfiniBand");
	snprintf(p.umad.name, sizeof(p.umad.name), "umad%u", umad);
	p.umad.major = 231;
	p.umad.minor = umad;
	snprintf(p.issm.name, sizeof(p.issm.name), "issm%u", umad);
	p.issm.major = 231;
	p.issm.minor = 64 + umad;
	return p;
}

static void set_dev(struct disc_device *d, const char *name, const char *pci, int uverbs,
		    struct disc_port *port)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->pci, sizeof(d->pci), "%s", pci);
	d->numa_node = -1;
	d->ports = port;
	d->n_ports = port ? 1 : 0;
	if (uverbs >= 0) {
		d->has_uverbs = true;
		snprintf(d->uverbs.name, sizeof(d->uverbs.name), "uverbs%d", uverbs);
		d->uverbs.major = 231;
		d->uverbs.minor = 192 + (unsigned)uverbs;
		d->uverbs.node_present = true;
	}
}

static const cJSON *find_device(const cJSON *spec, const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach (d, cJSON_GetObjectItem(spec, "devices")) {
		if (strcmp(cJSON_GetObjectItem(d, "name")->valuestring, name) == 0)
			return d;
	}
	return NULL;
}

static const cJSON *nodes_of(const cJSON *dev)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "containerEdits"), "deviceNodes");
}

static bool has_node(const cJSON *nodes, const char *path, int major, int minor)
{
	const cJSON *n;

	cJSON_ArrayForEach (n, nodes) {
		if (strcmp(cJSON_GetObjectItem(n, "path")->valuestring, path) == 0 &&
		    cJSON_GetObjectItem(n, "major")->valueint == major &&
		    cJSON_GetObjectItem(n, "minor")->valueint == minor)
			return true;
	}
	return false;
}

static void test_basic(void)
{
	struct disc_port ports[3] = {ib_port(1, 0, true), ib_port(1, 1, false),
				     ib_port(1, 2, true)};
	struct disc_device devs[3];
	struct disc_node node = {.devices = devs, .n_devices = 3, .has_rdma_cm = true};
	struct spec_options opts = {.dev_root = "/tmp/fake-dev", .hook_path = "/opt/hook"};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	const cJSON *d, *hooks, *args, *n;

	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", 0, &ports[0]);
	set_dev(&devs[1], "mlx5_1", "0000:0d:00.0", -1, &ports[1]); /* no uverbs: left out */
	set_dev(&devs[2], "ibp12s0", "0000:12:00.0", 3, &ports[2]);
	snprintf(node.rdma_cm.name, sizeof(node.rdma_cm.name), "rdma_cm");
	node.rdma_cm.major = 10;
	node.rdma_cm.minor = 57;

	ok(spec_build(&node, &opts, &spec) == 0, "spec_build(&node, &opts, &spec) == 0");
	if (!spec)
		return;
	ok(cdi_spec_validate(spec, NULL) == 0, "cdi_spec_validate(spec, NULL) == 0");
	ok(strcmp(cJSON_GetObjectItem(spec, "cdiVersion")->valuestring, "0.5.0") == 0,
	   "strcmp(cJSON_GetObjectItem(spec, \"cdiVersion\")->valuestring, \"0.5.0\") == 0");
	ok(strcmp(cJSON_GetObjectItem(spec, "kind")->valuestring, SPEC_DEFAULT_KIND) == 0,
	   "strcmp(cJSON_GetObjectItem(spec, \"kind\")->valuestring, SPEC_DEFAULT_KIND) == 0");
	/* mlx5_0, 0000:0c:00.0, 0, ibp12s0, 0000:12:00.0, 1, all */
	ok(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "devices")) == 7,
	   "cJSON_GetArraySize(cJSON_GetObjectItem(spec, \"devices\")) == 7");
	ok(find_device(spec, "mlx5_1") == NULL, "find_device(spec, \"mlx5_1\") == NULL");

	d = find_device(spec, "mlx5_0");
	ok(d && has_node(nodes_of(d), "/dev/infiniband/uverbs0", 231, 192),
	   "d && has_node(nodes_of(d), \"/dev/infiniband/uverbs0\", 231, 192)");
	ok(d && cJSON_GetArraySize(nodes_of(d)) == 1,
	   "d && cJSON_GetArraySize(nodes_of(d)) == 1"); /* no umad without --with-mad */
	n = d ? cJSON_GetArrayItem(nodes_of(d), 0) : NULL;
	ok(n && strcmp(cJSON_GetObjectItem(n, "hostPath")->valuestring,
		       "/tmp/fake-dev/infiniband/uverbs0") == 0,
	   "n && strcmp(cJSON_GetObjectItem(n, \"hostPath\")->valuestring,   "
	   "\"/tmp/fake-dev/infiniban");
	ok(n && strcmp(cJSON_GetObjectItem(n, "type")->valuestring, "c") == 0,
	   "n && strcmp(cJSON_GetObjectItem(n, \"type\")->valuestring, \"c\") == 0");
	ok(n && strcmp(cJSON_GetObjectItem(n, "permissions")->valuestring, "rw") == 0,
	   "n && strcmp(cJSON_GetObjectItem(n, \"permissions\")->valuestring, \"rw\") == 0");

	/* Index aliases count usable devices only, in model order. */
	d = find_device(spec, "1");
	ok(d && has_node(nodes_of(d), "/dev/infiniband/uverbs3", 231, 195),
	   "d && has_node(nodes_of(d), \"/dev/infiniband/uverbs3\", 231, 195)");
	d = find_device(spec, "0");
	ok(d && has_node(nodes_of(d), "/dev/infiniband/uverbs0", 231, 192),
	   "d && has_node(nodes_of(d), \"/dev/infiniband/uverbs0\", 231, 192)");
	d = find_device(spec, "all");
	ok(d && cJSON_GetArraySize(nodes_of(d)) == 2, "d && cJSON_GetArraySize(nodes_of(d)) == 2");

	/* Spec level: rdma_cm once, and the hook with our marker and target. */
	ok(has_node(nodes_of(spec), "/dev/infiniband/rdma_cm", 10, 57),
	   "has_node(nodes_of(spec), \"/dev/infiniband/rdma_cm\", 10, 57)");
	hooks = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "containerEdits"), "hooks");
	ok(cJSON_GetArraySize(hooks) == 1, "cJSON_GetArraySize(hooks) == 1");
	ok(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(hooks, 0), "hookName")->valuestring,
		  "createRuntime") == 0,
	   "strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(hooks, 0), \"hookName\")->valuestring,   "
	   "   ");
	ok(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(hooks, 0), "path")->valuestring,
		  "/opt/hook") == 0,
	   "strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(hooks, 0), \"path\")->valuestring,      "
	   "\"/o");
	args = cJSON_GetObjectItem(cJSON_GetArrayItem(hooks, 0), "args");
	ok(strcmp(cJSON_GetArrayItem(args, 0)->valuestring, SPEC_HOOK_ARG0) == 0,
	   "strcmp(cJSON_GetArrayItem(args, 0)->valuestring, SPEC_HOOK_ARG0) == 0");
	ok(strcmp(cJSON_GetArrayItem(args, 1)->valuestring, "--memlock=unlimited") == 0,
	   "strcmp(cJSON_GetArrayItem(args, 1)->valuestring, \"--memlock=unlimited\") == 0");
	ok(spec_is_ours(spec, SPEC_DEFAULT_KIND), "spec_is_ours(spec, SPEC_DEFAULT_KIND)");
	ok(!spec_is_ours(spec, "other.example/hca"), "!spec_is_ours(spec, \"other.example/hca\")");
}

static void test_with_mad_and_options(void)
{
	struct disc_port port = ib_port(1, 4, false); /* no issm on this port */
	struct disc_device dev;
	struct disc_node node = {.devices = &dev, .n_devices = 1};
	struct spec_options opts = {.kind = "acme.io/nic", .with_mad = true, .memlock = "64M"};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	const cJSON *d, *edits;

	set_dev(&dev, "mlx5_bond_0", "0000:3b:00.0", 1, &port);
	ok(spec_build(&node, &opts, &spec) == 0, "spec_build(&node, &opts, &spec) == 0");
	if (!spec)
		return;
	d = find_device(spec, "mlx5_bond_0");
	ok(d && cJSON_GetArraySize(nodes_of(d)) == 2, "d && cJSON_GetArraySize(nodes_of(d)) == 2");
	ok(d && has_node(nodes_of(d), "/dev/infiniband/umad4", 231, 4),
	   "d && has_node(nodes_of(d), \"/dev/infiniband/umad4\", 231, 4)");
	ok(strcmp(cJSON_GetObjectItem(spec, "kind")->valuestring, "acme.io/nic") == 0,
	   "strcmp(cJSON_GetObjectItem(spec, \"kind\")->valuestring, \"acme.io/nic\") == 0");
	/* Default dev root is /dev. */
	ok(d &&
	       strcmp(
		   cJSON_GetObjectItem(cJSON_GetArrayItem(nodes_of(d), 0), "hostPath")->valuestring,
		   "/dev/infiniband/uverbs1") == 0,
	   "d && strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes_of(d), 0), \"hostPath\")   "
	   "->valu");
	/* No rdma_cm on the node: the spec-level edits carry only the hook. */
	edits = cJSON_GetObjectItem(spec, "containerEdits");
	ok(cJSON_GetObjectItem(edits, "deviceNodes") == NULL,
	   "cJSON_GetObjectItem(edits, \"deviceNodes\") == NULL");
	ok(strcmp(cJSON_GetArrayItem(
		      cJSON_GetObjectItem(
			  cJSON_GetArrayItem(cJSON_GetObjectItem(edits, "hooks"), 0), "args"),
		      1)
		      ->valuestring,
		  "--memlock=64M") == 0,
	   "strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem( "
	   "cJSON_GetObjectItem(edit");
}

static void test_no_spec(void)
{
	struct disc_device devs[3];
	struct disc_node empty = {0};
	struct disc_node unusable = {.devices = devs, .n_devices = 1};
	struct disc_node aliases = {.devices = devs + 1, .n_devices = 2};
	struct spec_options opts = {0};
	struct spec_options bad_kind = {.kind = "r/hca"};
	struct spec_options bad_root = {.dev_root = "dev"};
	cJSON *spec = NULL;

	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", -1, NULL);
	/* Kernel names that would shadow our aliases are never emitted. */
	set_dev(&devs[1], "all", "0000:0d:00.0", 1, NULL);
	set_dev(&devs[2], "7", "0000:0e:00.0", 2, NULL);

	ok(spec_build(&empty, &opts, &spec) == -ENODEV,
	   "spec_build(&empty, &opts, &spec) == -ENODEV");
	ok(spec_build(&unusable, &opts, &spec) == -ENODEV,
	   "spec_build(&unusable, &opts, &spec) == -ENODEV");
	ok(spec_build(&aliases, &opts, &spec) == -ENODEV,
	   "spec_build(&aliases, &opts, &spec) == -ENODEV");
	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", 0, NULL);
	ok(spec_build(&unusable, &bad_kind, &spec) == -EINVAL,
	   "spec_build(&unusable, &bad_kind, &spec) == -EINVAL");
	ok(spec_build(&unusable, &bad_root, &spec) == -EINVAL,
	   "spec_build(&unusable, &bad_root, &spec) == -EINVAL");
	ok(spec == NULL, "spec == NULL");
}

static const char *device_name(const cJSON *spec, int i)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "devices"), i),
				   "name")
	    ->valuestring;
}

static int count_named(const cJSON *spec, const char *name)
{
	const cJSON *d;
	int n = 0;

	cJSON_ArrayForEach (d, cJSON_GetObjectItem(spec, "devices"))
		n += strcmp(cJSON_GetObjectItem(d, "name")->valuestring, name) == 0;
	return n;
}

/* The ID device carries exactly the edits of the name device. */
static bool same_edits(const cJSON *spec, const char *a, const char *b)
{
	const cJSON *x = find_device(spec, a), *y = find_device(spec, b);

	return x && y &&
	       cJSON_Compare(cJSON_GetObjectItem(x, "containerEdits"),
			     cJSON_GetObjectItem(y, "containerEdits"), true);
}

static void test_device_ids(void)
{
	struct disc_port ports[7];
	struct disc_device devs[7];
	struct disc_node node = {.devices = devs, .n_devices = 7};
	struct spec_options opts = {.with_mad = true};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	static const char *const want[] = {
	    "mlx5_0",
	    "0000:3b:00.0-mlx5_0",
	    "0",
	    "mlx5_bond_0",
	    "0000:3b:00.0-mlx5_bond_0",
	    "1",
	    "mlx5_1",
	    "0000:3b:00.1",
	    "2",
	    "rxe0",
	    "3",
	    "all",
	};
	char id[SPEC_ID_MAX + 1];
	int n;

	for (unsigned i = 0; i < 7; i++)
		ports[i] = ib_port(1, i, true);
	/* Two usable RDMA devices on one function (a bond and its port), one device whose
	 * sibling has no uverbs, one without PCI address; devs[4..6] come into play below. */
	set_dev(&devs[0], "mlx5_0", "0000:3b:00.0", 0, &ports[0]);
	set_dev(&devs[1], "mlx5_bond_0", "0000:3b:00.0", 1, &ports[1]);
	set_dev(&devs[2], "mlx5_1", "0000:3b:00.1", 2, &ports[2]);
	set_dev(&devs[3], "mlx5_x", "0000:3b:00.1", -1, &ports[3]);
	set_dev(&devs[4], "rxe0", "", 4, &ports[4]);
	node.n_devices = 5;
	ok(spec_build(&node, &opts, &spec) == 0, "IDs: spec builds");
	if (!spec)
		return;
	n = cJSON_GetArraySize(cJSON_GetObjectItem(spec, "devices"));
	ok(n == (int)ELEMENTSOF(want), "IDs: %d devices: name, ID, index per HCA, then all", n);
	for (int i = 0; i < n && i < (int)ELEMENTSOF(want); i++)
		ok(strcmp(device_name(spec, i), want[i]) == 0 &&
		       cdi_device_name_is_valid(device_name(spec, i)),
		   "IDs: device %d is \"%s\" (want \"%s\"), a valid CDI name", i,
		   device_name(spec, i), want[i]);
	ok(same_edits(spec, "0000:3b:00.0-mlx5_0", "mlx5_0") &&
	       same_edits(spec, "0000:3b:00.0-mlx5_bond_0", "mlx5_bond_0") &&
	       same_edits(spec, "0000:3b:00.1", "mlx5_1"),
	   "IDs: each ID device carries its HCA's edits (uverbs, umad, issm)");
	ok(cJSON_GetArraySize(nodes_of(find_device(spec, "0000:3b:00.1"))) == 3,
	   "IDs: --with-mad reaches the ID device (uverbs2, umad2, issm2)");
	spec_device_id(&node, 4, id);
	ok(strcmp(id, "rxe0") == 0, "IDs: no PCI address: the RDMA name (%s), defined once", id);
	cJSON_Delete(TAKE_PTR(spec));

	/* Names too long for <pci>-<name>: hashed, distinct, within SPEC_ID_MAX. */
	memset(devs[0].name, 'n', 50);
	devs[0].name[50] = '\0';
	memcpy(devs[1].name, devs[0].name, 51);
	devs[1].name[49] = 'm';
	{
		char a[SPEC_ID_MAX + 1], b[SPEC_ID_MAX + 1];

		spec_device_id(&node, 0, a);
		spec_device_id(&node, 1, b);
		ok(strncmp(a, "0000:3b:00.0-x", 14) == 0 && strlen(a) == 22 && strcmp(a, b) != 0,
		   "IDs: <pci>-<50 chars> is too long: <pci>-x<8 hex> (%s, %s)", a, b);
		ok(spec_build(&node, &opts, &spec) == 0 && find_device(spec, a) &&
		       same_edits(spec, a, devs[0].name),
		   "IDs: the hashed ID is a spec device too");
		cJSON_Delete(TAKE_PTR(spec));
	}
	snprintf(devs[0].name, sizeof(devs[0].name), "%.*s", SPEC_ID_MAX - 13,
		 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnop");
	spec_device_id(&node, 0, id);
	ok(strlen(id) == SPEC_ID_MAX && strncmp(id, "0000:3b:00.0-abc", 16) == 0,
	   "IDs: exactly SPEC_ID_MAX (%d) chars: kept as is", SPEC_ID_MAX);

	/* Hostile names: an RDMA name equal to another device's ID, and "all"/index-like IDs
	 * from a garbage PCI address. The spec stays valid and defines each name once. */
	set_dev(&devs[0], "mlx5_0", "0000:3b:00.0", 0, &ports[0]);
	set_dev(&devs[1], "0000:3c:00.0", "0000:3b:00.1", 1, &ports[1]);
	set_dev(&devs[2], "mlx5_2", "0000:3c:00.0", 2, &ports[2]);
	set_dev(&devs[3], "mlx5_3", "all", 3, &ports[3]);
	set_dev(&devs[4], "mlx5_4", "42", 4, &ports[4]);
	set_dev(&devs[5], "mlx5_5", "0000:3e:00.0", 5, &ports[5]);
	set_dev(&devs[6], "mlx5_6", "0000:3e:00.0", -1, &ports[6]);
	node.n_devices = 7;
	ok(spec_build(&node, &opts, &spec) == 0, "IDs with hostile names: spec builds, validated");
	if (!spec)
		return;
	ok(count_named(spec, "0000:3c:00.0") == 1 &&
	       has_node(nodes_of(find_device(spec, "0000:3c:00.0")), "/dev/infiniband/uverbs1", 231,
			193),
	   "IDs: a name equal to another device's ID keeps the name; that ID device is left out");
	ok(find_device(spec, "0000:3b:00.1") && find_device(spec, "0000:3b:00.0") &&
	       find_device(spec, "0000:3e:00.0"),
	   "IDs: the other devices keep their ID devices");
	ok(has_node(nodes_of(find_device(spec, "all")), "/dev/infiniband/uverbs3", 231, 195) &&
	       cJSON_GetArraySize(nodes_of(find_device(spec, "all"))) == 6 * 3,
	   "IDs: an ID \"all\" does not shadow the all device");
	ok(has_node(nodes_of(find_device(spec, "4")), "/dev/infiniband/uverbs4", 231, 196) &&
	       !find_device(spec, "42"),
	   "IDs: an all-digit ID does not shadow an index alias");
}

static void test_qualified_name(void)
{
	_cleanup_free_ char *q = spec_qualified_name("rdma.example/hca", "mlx5_3");

	ok(q && strcmp(q, "rdma.example/hca=mlx5_3") == 0,
	   "q && strcmp(q, \"rdma.example/hca=mlx5_3\") == 0");
}

/* What the daemons keep of the spec on disk: the set of exactly the names it defines. */
static void test_names(void)
{
	struct disc_port ports[2] = {ib_port(1, 0, true), ib_port(1, 1, true)};
	struct disc_device devs[2];
	struct disc_node node = {.devices = devs, .n_devices = 2};
	struct spec_options opts = {.dev_root = "/tmp/fake-dev", .hook_path = "/opt/hook"};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_(spec_names_freep) struct spec_names *names = NULL;
	const cJSON *d;
	size_t n = 0, has = 0;

	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", 0, &ports[0]);
	set_dev(&devs[1], "mlx5_1", "0000:0d:00.0", 1, &ports[1]);
	ok(spec_build(&node, &opts, &spec) == 0, "names: spec builds");
	names = spec ? spec_names_new(spec) : NULL;
	if (!ok(names, "names: the set of the spec's names"))
		return;
	cJSON_ArrayForEach (d, cJSON_GetObjectItem(spec, "devices")) {
		n++;
		has += spec_names_has(names, cJSON_GetObjectItem(d, "name")->valuestring);
	}
	ok(n == 7 && has == n && spec_names_count(names) == n,
	   "names: the spec's %zu names (RDMA names, IDs, indexes, all), no other", n);
	ok(spec_names_has(names, "mlx5_0") && spec_names_has(names, "0000:0d:00.0") &&
	       spec_names_has(names, "1") && spec_names_has(names, SPEC_ALL_DEVICE),
	   "names: mlx5_0, 0000:0d:00.0, 1 and all are defined");
	ok(!spec_names_has(names, "mlx5_2") && !spec_names_has(names, "rdma.example/hca=mlx5_0"),
	   "names: another device, or a qualified name, is not");
}

/* The hook args of the createRuntime hooks in dev's own edits, joined by spaces. */
static void hook_args_of(const cJSON *dev, char *buf, size_t size)
{
	const cJSON *h, *a;
	size_t n = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach (h, cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "containerEdits"),
						   "hooks")) {
		if (strcmp(cJSON_GetObjectItem(h, "hookName")->valuestring, "createRuntime") != 0)
			continue;
		cJSON_ArrayForEach (a, cJSON_GetObjectItem(h, "args"))
			n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? " " : "",
					      a->valuestring);
	}
}

/* netns: move gives each device (all its names, and "all" one hook per device) the move
 * hook in its own edits; RoCE gets --netns-move-roce; the spec stays valid CDI. */
static void test_netns_move(void)
{
	struct disc_port ports[2] = {ib_port(1, 0, false), ib_port(1, 1, false)};
	struct disc_device devs[2];
	struct disc_node node = {.devices = devs, .n_devices = 2};
	bool only_second[2] = {false, true};
	struct spec_options opts = {.hook_path = "/opt/hook"};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL, *some = NULL, *none = NULL;
	char args[512];

	snprintf(ports[1].link_layer, sizeof(ports[1].link_layer), "Ethernet");
	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", 0, &ports[0]);
	set_dev(&devs[1], "rxe0", "", 1, &ports[1]);
	ok(spec_build(&node, &opts, &none) == 0, "netns: none builds");
	hook_args_of(find_device(none, "mlx5_0"), args, sizeof(args));
	EQ_STR(args, "", "without netns: move a device has no hook of its own");

	opts.netns_move = true;
	ok(spec_build(&node, &opts, &spec) == 0, "netns_move: spec builds");
	if (!spec)
		return;
	ok(cdi_spec_validate(spec, NULL) == 0, "netns_move: the spec is valid CDI");
	hook_args_of(find_device(spec, "mlx5_0"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move=mlx5_0", "an InfiniBand device moves");
	hook_args_of(find_device(spec, "0000:0c:00.0"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move=mlx5_0", "its ID alias moves it too");
	hook_args_of(find_device(spec, "0"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move=mlx5_0", "its index alias moves it too");
	hook_args_of(find_device(spec, "rxe0"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move-roce=rxe0", "an Ethernet device moves as RoCE");
	hook_args_of(find_device(spec, "all"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move=mlx5_0 rdma-cdi-hook --netns-move-roce=rxe0",
	       "all: one hook per device");
	hook_args_of(spec, args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --memlock=unlimited", "the spec-wide hook stays the memlock one");
	ok(spec_is_ours(spec, SPEC_DEFAULT_KIND), "the spec is still ours");

	opts.netns_move = false;
	opts.netns_move_of = only_second;
	ok(spec_build(&node, &opts, &some) == 0, "netns_move_of: spec builds");
	hook_args_of(find_device(some, "mlx5_0"), args, sizeof(args));
	EQ_STR(args, "", "a device of a pool without netns: move has no move hook");
	hook_args_of(find_device(some, "1"), args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move-roce=rxe0", "a device of a netns: move pool has");
}

int main(void)
{
	test_basic();
	test_with_mad_and_options();
	test_no_spec();
	test_device_ids();
	test_qualified_name();
	test_names();
	test_netns_move();
	return tap_done();
}
