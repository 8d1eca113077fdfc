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
	char err[256];

	set_dev(&devs[0], "mlx5_0", "0000:0c:00.0", 0, &ports[0]);
	set_dev(&devs[1], "mlx5_1", "0000:0d:00.0", -1, &ports[1]); /* no uverbs: left out */
	set_dev(&devs[2], "ibp12s0", "0000:12:00.0", 3, &ports[2]);
	snprintf(node.rdma_cm.name, sizeof(node.rdma_cm.name), "rdma_cm");
	node.rdma_cm.major = 10;
	node.rdma_cm.minor = 57;

	ok(spec_build(&node, &opts, &spec) == 0, "spec_build(&node, &opts, &spec) == 0");
	if (!spec)
		return;
	ok(cdi_spec_validate(spec, err, sizeof(err)) == 0,
	   "cdi_spec_validate(spec, err, sizeof(err)) == 0");
	ok(strcmp(cJSON_GetObjectItem(spec, "cdiVersion")->valuestring, "0.5.0") == 0,
	   "strcmp(cJSON_GetObjectItem(spec, \"cdiVersion\")->valuestring, \"0.5.0\") == 0");
	ok(strcmp(cJSON_GetObjectItem(spec, "kind")->valuestring, SPEC_DEFAULT_KIND) == 0,
	   "strcmp(cJSON_GetObjectItem(spec, \"kind\")->valuestring, SPEC_DEFAULT_KIND) == 0");
	/* mlx5_0, 0, ibp12s0, 1, all */
	ok(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "devices")) == 5,
	   "cJSON_GetArraySize(cJSON_GetObjectItem(spec, \"devices\")) == 5");
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

static void test_qualified_name(void)
{
	_cleanup_free_ char *q = spec_qualified_name("rdma.example/hca", "mlx5_3");

	ok(q && strcmp(q, "rdma.example/hca=mlx5_3") == 0,
	   "q && strcmp(q, \"rdma.example/hca=mlx5_3\") == 0");
}

int main(void)
{
	test_basic();
	test_with_mad_and_options();
	test_no_spec();
	test_qualified_name();
	return tap_done();
}
