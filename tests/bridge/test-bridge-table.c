/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device table: kubelet device IDs (the rule in bridge-internal.h), shared mode,
 * the spec filter and the ListAndWatch list.
 */
#include "fake-node.h"

static const char *id_of(const struct dp_table *t, const char *rdma_name)
{
	for (size_t i = 0; i < t->n_ids; i++)
		if (strcmp(t->hcas[t->ids[i].hca].name, rdma_name) == 0)
			return t->ids[i].id;
	return NULL;
}

static void test_pci_ids(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 0, 0);

	ok(t->n_hcas == 10 && t->n_ids == 10, "dgx: one ID per usable device (%zu)", t->n_ids);
	is_str(id_of(t, "mlx5_0"), "0000:1a:00.0", "dgx: the ID is the PCI address");
	is_str(id_of(t, "mlx5_9"), "0000:d8:00.0", "dgx: unhealthy devices are advertised too");
	ok(dp_table_find(t, "0000:3c:00.0") >= 0 &&
	       strcmp(t->hcas[t->ids[dp_table_find(t, "0000:3c:00.0")].hca].name, "mlx5_3") == 0,
	   "lookup by ID finds the device");
	ok(dp_table_find(t, "0000:3c:00.1") == -1 && dp_table_find(t, "") == -1 &&
	       dp_table_find(t, "mlx5_3") == -1,
	   "lookup of unknown IDs (and of RDMA names) fails");
	ok(ids_unique_and_short(t), "IDs unique, 1..63 chars");
	dp_table_free(t);
	fake_free(f);
}

static void test_shared_function(void)
{
	struct fake_node *f = fake_new(8);
	struct dp_table *t;

	/* Two usable RDMA devices on one function (e.g. a bond and its port), one usable
	 * device whose unusable sibling does not count, one without PCI address. */
	fake_add(f, "mlx5_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0,
		 true, true);
	fake_add(f, "mlx5_bond_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
		 0, true, true);
	fake_add(f, "mlx5_1", "0000:3b:00.1", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", 0,
		 true, true);
	fake_add(f, "mlx5_x", "0000:3b:00.1", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", 0,
		 false, true);
	fake_add(f, "rxe0", "", "devices/virtual/net/eth0", -1, true, true);
	t = table_of(&f->node, 0, 0);

	ok(t->n_ids == 4, "unusable devices get no ID (%zu IDs)", t->n_ids);
	is_str(id_of(t, "mlx5_0"), "0000:3b:00.0-mlx5_0", "shared function: <pci>-<name>");
	is_str(id_of(t, "mlx5_bond_0"), "0000:3b:00.0-mlx5_bond_0",
	       "shared function: every device gets the form");
	is_str(id_of(t, "mlx5_1"), "0000:3b:00.1",
	       "an unusable sibling does not make the function shared");
	is_str(id_of(t, "rxe0"), "rxe0", "no PCI address: the RDMA name");
	ok(ids_unique_and_short(t), "IDs unique, 1..63 chars");
	dp_table_free(t);
	fake_free(f);
}

static void test_long_names(void)
{
	char name[64];
	struct fake_node *f = fake_new(4);
	struct dp_table *t;
	char a[DP_ID_MAX + 1], b[DP_ID_MAX + 1];

	memset(name, 'n', 60);
	name[60] = '\0';
	fake_add(f, name, "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0, true,
		 true);
	name[59] = 'm';
	fake_add(f, name, "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0, true,
		 true);
	t = table_of(&f->node, 0, 0);
	/* Copies: gcc's sanitizer build cannot prove t->ids non-NULL for the printf. */
	snprintf(a, sizeof(a), "%s", t->ids[0].id);
	snprintf(b, sizeof(b), "%s", t->ids[1].id);
	ok(strlen(a) <= DP_ID_MAX && strlen(b) <= DP_ID_MAX && strcmp(a, b) != 0,
	   "too long for <pci>-<name>: hashed, still unique (%s, %s)", a, b);
	ok(strncmp(a, "0000:3b:00.0-x", 14) == 0 && strlen(a) == 22, "hashed form <pci>-x<8 hex>");
	dp_table_free(t);

	t = table_of(&f->node, BRIDGE_SHARED_MAX, 0);
	ok(t->n_ids == 2 * BRIDGE_SHARED_MAX && ids_unique_and_short(t),
	   "--shared %d with long names: %zu IDs, unique and short", BRIDGE_SHARED_MAX, t->n_ids);
	dp_table_free(t);
	fake_free(f);
}

static void test_collision(void)
{
	struct fake_node *f = fake_new(4);
	struct dp_table *t;

	/* A (hostile) RDMA name equal to another device's PCI address. */
	fake_add(f, "mlx5_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0,
		 true, true);
	fake_add(f, "0000:3b:00.0", "", "devices/virtual/x", -1, true, true);
	t = table_of(&f->node, 0, 0);
	ok(t->n_skipped == 1 && t->n_ids == 1 && ids_unique_and_short(t),
	   "a colliding ID leaves the later device out (skipped %zu)", t->n_skipped);
	is_str(id_of(t, "mlx5_0"), "0000:3b:00.0", "the first device keeps its ID");
	dp_table_free(t);
	fake_free(f);
}

static void test_shared_mode(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 3, 0);
	struct dp_table_options o = {.shared = BRIDGE_SHARED_MAX + 1};
	struct dp_table *bad = NULL;
	long i;

	ok(t->n_ids == 30 && t->n_hcas == 10, "--shared 3: 3 IDs per HCA (%zu)", t->n_ids);
	is_str(t->ids[0].id, "0000:1a:00.0-s0", "replica IDs <pci>-s<k>");
	is_str(t->ids[2].id, "0000:1a:00.0-s2", "k runs 0..N-1");
	i = dp_table_find(t, "0000:bb:00.0-s1");
	ok(i >= 0 && strcmp(t->hcas[t->ids[i].hca].name, "mlx5_7") == 0,
	   "a replica maps to its HCA");
	ok(dp_table_find(t, "0000:bb:00.0") == -1 && dp_table_find(t, "0000:bb:00.0-s3") == -1,
	   "neither the bare PCI address nor k >= N is an ID");
	ok(ids_unique_and_short(t), "IDs unique, 1..63 chars");
	ok(dp_table_build(&f->node, NULL, &o, &bad) == -EINVAL && !bad,
	   "--shared beyond the cap: -EINVAL");
	dp_table_free(t);

	t = table_of(&f->node, 1, 0);
	is_str(t->ids[0].id, "0000:1a:00.0", "--shared 1 is exclusive mode");
	dp_table_free(t);
	fake_free(f);
}

static void test_spec_filter(void)
{
	struct fake_node *f = fake_dgx();
	cJSON *spec = cJSON_Parse("{\"devices\":[{\"name\":\"mlx5_3\"},{\"name\":\"0\"},"
				  "{\"name\":\"mlx5_0\"},{\"name\":\"all\"}]}");
	struct dp_table_options o = {.kind = "example.com/nic"};
	struct dp_table *t = NULL;

	ok(spec && dp_table_build(&f->node, spec, &o, &t) == 0, "build with a spec filter");
	ok(t && t->n_ids == 2, "only devices the spec defines are advertised (%zu)",
	   t ? t->n_ids : 0);
	is_str(t->hcas[0].qualified, "example.com/nic=mlx5_0", "qualified name uses the kind");
	is_str(t->hcas[1].name, "mlx5_3", "table order is discovery order");
	dp_table_free(t);
	cJSON_Delete(spec);
	fake_free(f);
}

static void test_list_response(void)
{
	struct fake_node *f = fake_new(4);
	V1beta1__ListAndWatchResponse *resp = NULL, *back;
	struct dp_table *t;
	uint8_t *buf;
	size_t len;

	fake_add(f, "mlx5_0", "0000:1a:00.0", "devices/pci0000:17/0000:1a:00.0", 0, true, true);
	fake_add(f, "mlx5_1", "0000:9a:00.0", "devices/pci0000:97/0000:9a:00.0", 1, true, false);
	fake_add(f, "mlx5_2", "0000:d8:00.0", "devices/pci0000:d7/0000:d8:00.0", -1, true, true);
	f->node.devices[2].uverbs.node_present = false;
	t = table_of(&f->node, 0, 0);
	ok(dp_list_response(t, &resp) == 0 && resp->n_devices == 3, "list has every ID");

	/* Round trip through the wire format, as the kubelet sees it. */
	len = protobuf_c_message_get_packed_size(&resp->base);
	buf = malloc(len);
	protobuf_c_message_pack(&resp->base, buf);
	back = v1beta1__list_and_watch_response__unpack(NULL, len, buf);
	ok(back && back->n_devices == 3, "list packs and unpacks");
	is_str(back->devices[0]->health, "Healthy", "uverbs node present + ACTIVE port: Healthy");
	ok(back->devices[0]->topology && back->devices[0]->topology->n_nodes == 1 &&
	       back->devices[0]->topology->nodes[0]->id == 0,
	   "NUMA node 0 is sent as topology node 0");
	is_str(back->devices[1]->health, "Unhealthy", "no ACTIVE port: Unhealthy");
	ok(back->devices[1]->topology->nodes[0]->id == 1, "NUMA node 1");
	is_str(back->devices[2]->health, "Unhealthy", "uverbs node missing: Unhealthy");
	ok(back->devices[2]->topology == NULL, "unknown NUMA node: no topology at all");
	v1beta1__list_and_watch_response__free_unpacked(back, NULL);
	free(buf);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	dp_table_free(t);

	f->node.n_devices = 0;
	t = table_of(&f->node, 0, 0);
	ok(dp_list_response(t, &resp) == 0 && resp->n_devices == 0, "no devices: an empty list");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	dp_table_free(t);
	f->node.n_devices = 3;
	fake_free(f);
}

static void test_scale(void)
{
	struct fake_node *f = fake_new(2000);
	struct dp_table *t;

	for (unsigned i = 0; i < 2000; i++) {
		char name[32], pci[32], path[128];

		snprintf(name, sizeof(name), "mlx5_%u", i);
		snprintf(pci, sizeof(pci), "0000:%02x:%02x.%u", i / 64, (i / 8) % 8, i % 8);
		snprintf(path, sizeof(path), "devices/pci0000:%02x/%s", i / 64, pci);
		fake_add(f, name, pci, path, (int)(i / 1000), true, true);
	}
	t = table_of(&f->node, 0, 0);
	ok(t->n_ids == 2000 && dp_table_find(t, "0000:1f:01.7") >= 0,
	   "2,000 devices: table and lookup");
	dp_table_free(t);
	fake_free(f);
}

int main(void)
{
	test_pci_ids();
	test_shared_function();
	test_long_names();
	test_collision();
	test_shared_mode();
	test_spec_filter();
	test_list_response();
	test_scale();
	return tap_done();
}
