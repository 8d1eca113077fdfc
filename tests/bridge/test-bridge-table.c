/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device table: kubelet device IDs (the rule in bridge-internal.h) and the spec
 * devices they name, shared mode, pools, the spec filter, link layers and UCX ports, and
 * the ListAndWatch list with its size bound.
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
	struct spec_names *names = spec ? spec_names_new(spec) : NULL;
	struct dp_table_options o = {.kind = "example.com/nic"};
	struct dp_table *t = NULL;

	ok(names && dp_table_build(&f->node, names, &o, &t) == 0, "build with a spec filter");
	ok(t && t->n_ids == 2, "only devices the spec defines are advertised (%zu)",
	   t ? t->n_ids : 0);
	is_str(t->hcas[0].qualified, "example.com/nic=mlx5_0", "qualified name uses the kind");
	is_str(t->hcas[1].name, "mlx5_3", "table order is discovery order");
	dp_table_free(t);
	ok(dp_table_build(&f->node, spec_names_empty(), &o, &t) == 0 && t->n_ids == 0,
	   "a spec that defines nothing: nothing advertised");
	dp_table_free(t);
	spec_names_free(names);
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

/* One pool per fabric: each table holds only its devices, with the IDs of the full table. */
static void test_pools(void)
{
	struct fake_node *f = fake_dgx();
	bool ib[10], roce[10];
	struct dp_table_options o = {.include = ib};
	struct dp_table *all = table_of(&f->node, 0, 0), *t = NULL, *u = NULL;
	size_t n_ib = 0;
	bool same = true;

	for (size_t i = 0; i < f->node.n_devices; i++) {
		ib[i] = strcmp(f->node.devices[i].ports[0].link_layer, "InfiniBand") == 0;
		roce[i] = !ib[i];
		n_ib += ib[i];
	}
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0 && t->n_hcas == 8 && t->n_ids == 8 &&
	       n_ib == 8,
	   "IB pool: the 8 IB HCAs (%zu)", t ? t->n_hcas : 0);
	for (size_t i = 0; t && i < t->n_ids; i++) {
		same &= t->hcas[t->ids[i].hca].link == DP_LINK_INFINIBAND &&
			strcmp(id_of(all, t->hcas[t->ids[i].hca].name), t->ids[i].id) == 0;
	}
	ok(same, "IB pool: only IB HCAs, each with its ID of the whole node");
	ok(t && dp_table_find(t, "0000:5e:00.0") == -1, "IB pool: a RoCE ID is unknown to it");
	o.include = roce;
	o.shared = 3;
	o.nccl_env = true;
	ok(dp_table_build(&f->node, NULL, &o, &u) == 0 && u->n_hcas == 2 && u->n_ids == 6 &&
	       u->shared == 3 && u->nccl_env && !t->nccl_env && t->shared == 1,
	   "RoCE pool: its own shared mode and ncclEnv, the other pool's untouched");
	is_str(u->hcas[0].name, "mlx5_8", "RoCE pool: mlx5_8 first (table order)");
	ok(u->hcas[0].link == DP_LINK_ETHERNET && u->hcas[1].link == DP_LINK_ETHERNET,
	   "RoCE pool: link layer Ethernet");
	is_str(u->ids[0].id, "0000:5e:00.0-s0", "RoCE pool: slot IDs");
	dp_table_free(u);
	dp_table_free(t);

	/* A device selected by a pool but not usable is never taken. */
	f->node.devices[0].has_uverbs = false;
	memset(ib, 1, sizeof(ib));
	o = (struct dp_table_options){.include = ib};
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0 && t->n_hcas == 9 &&
	       dp_table_find(t, "0000:1a:00.0") == -1,
	   "include[] cannot bring in an unusable device");
	f->node.devices[0].has_uverbs = true;
	dp_table_free(t);
	memset(ib, 0, sizeof(ib));
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0 && t->n_hcas == 0 && t->n_ids == 0,
	   "an empty pool: an empty table");
	dp_table_free(t);
	dp_table_free(all);
	fake_free(f);
}

/* The ID of every advertised HCA is a device of the spec, with that HCA's uverbs node. */
static void test_ids_name_spec_devices(void)
{
	struct fake_node *f = fake_new(8);
	struct spec_options so = {0};
	cJSON *spec = NULL;
	struct spec_names *names = NULL;
	bool pool[8] = {false, true, true, true, true, true};
	struct dp_table_options o = {.include = pool, .shared = 2};
	struct dp_table *t = NULL;
	size_t good = 0;
	char name[64];

	fake_add(f, "mlx5_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3b:00.0", 0, true, true);
	fake_add(f, "mlx5_bond_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3b:00.0", 0, true,
		 true);
	fake_add(f, "mlx5_1", "0000:3b:00.1", "devices/pci0000:3a/0000:3b:00.1", 0, true, true);
	fake_add(f, "rxe0", "", "devices/virtual/net/eth0", -1, true, true);
	memset(name, 'q', 60);
	name[60] = '\0';
	fake_add(f, name, "0000:5e:00.0", "devices/pci0000:5d/0000:5e:00.0", 0, true, true);
	fake_add(f, "mlx5_2", "0000:5e:00.0", "devices/pci0000:5d/0000:5e:00.0", 0, true, true);
	for (size_t i = 0; i < f->node.n_devices; i++)
		f->node.devices[i].uverbs.major = 231;
	ok(spec_build(&f->node, &so, &spec) == 0, "spec of the node");
	/* mlx5_0 is in no pool: its sibling keeps the "<pci>-<name>" form all the same. */
	names = spec ? spec_names_new(spec) : NULL;
	ok(names && dp_table_build(&f->node, names, &o, &t) == 0 && t->n_hcas == 5,
	   "pool table, shared 2");
	for (size_t i = 0; t && i < t->n_ids; i++) {
		const struct dp_hca *h = &t->hcas[t->ids[i].hca];
		char base[DP_ID_MAX + 1];
		const cJSON *d, *n;
		size_t l = strlen(t->ids[i].id);

		snprintf(base, sizeof(base), "%.*s", (int)(l - 3), t->ids[i].id);
		cJSON_ArrayForEach (d, cJSON_GetObjectItem(spec, "devices")) {
			if (strcmp(cJSON_GetObjectItem(d, "name")->valuestring, base) != 0)
				continue;
			n = cJSON_GetArrayItem(
			    cJSON_GetObjectItem(cJSON_GetObjectItem(d, "containerEdits"),
						"deviceNodes"),
			    0);
			good += strcmp(cJSON_GetObjectItem(n, "path")->valuestring + 16,
				       h->nodes[0]) == 0;
		}
	}
	ok(t && good == t->n_ids,
	   "every ID minus \"-s<k>\" names a spec device with its HCA's uverbs (%zu of %zu)", good,
	   t ? t->n_ids : 0);
	is_str(id_of(t, "mlx5_bond_0"), "0000:3b:00.0-mlx5_bond_0-s0",
	       "a sibling outside the pool still counts (the spec has both)");
	ok(id_of(t, name) && strncmp(id_of(t, name), "0000:5e:00.0-x", 14) == 0,
	   "long name: the hashed ID in both (%s)", id_of(t, name));
	dp_table_free(t);
	spec_names_free(names);
	cJSON_Delete(spec);
	fake_free(f);
}

static void test_link_and_ports(void)
{
	struct fake_node *f = fake_new(4);
	struct dp_table *t;
	struct disc_device *d;

	d = fake_add(f, "mlx5_0", "0000:1a:00.0", "devices/pci0000:17/0000:1a:00.0", 0, true, true);
	snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "InfiniBand");
	d = fake_add(f, "mlx5_1", "0000:1b:00.0", "devices/pci0000:17/0000:1b:00.0", 0, true, true);
	snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "Ethernet");
	d->ports = realloc(d->ports, 3 * sizeof(*d->ports));
	d->ports[1] = d->ports[0];
	d->ports[1].num = 2;
	d->ports[1].state = 1;
	d->ports[2] = d->ports[0];
	d->ports[2].num = 3;
	d->n_ports = 3;
	d = fake_add(f, "siw0", "", "devices/virtual/net/lo", -1, true, false);
	snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "Unknown");
	d->n_ports = 0;
	t = table_of(&f->node, 0, 0);
	ok(t->hcas[0].link == DP_LINK_INFINIBAND && t->hcas[1].link == DP_LINK_ETHERNET &&
	       t->hcas[2].link == DP_LINK_UNKNOWN,
	   "link layer from the first port: IB, Ethernet, unknown without ports");
	is_str(t->hcas[0].ucx, "mlx5_0:1", "UCX entry: the ACTIVE port");
	is_str(t->hcas[1].ucx, "mlx5_1:1,mlx5_1:3", "UCX entries: ACTIVE ports only, in order");
	is_str(t->hcas[2].ucx, "siw0:1", "no port at all: port 1");
	dp_table_free(t);
	fake_free(f);
}

/*
 * The kubelet drops a ListAndWatch message beyond 4 MiB. A table refuses more than
 * DP_LIST_IDS_MAX IDs, and one at the bound, every ID 63 chars, Unhealthy and with a NUMA
 * node, packs to less than 2 MiB.
 */
static void test_list_bound(void)
{
	struct fake_node *f = fake_new(80);
	V1beta1__ListAndWatchResponse *resp = NULL;
	bool half[80];
	struct dp_table_options o = {.shared = 256};
	struct dp_table *t = NULL;
	size_t packed = 0;

	ok(dp_list_ids_needed(10, 0) == 10 && dp_list_ids_needed(10, 1) == 10 &&
	       dp_list_ids_needed(64, 256) == 16384 && dp_list_ids_needed(SIZE_MAX, 2) == SIZE_MAX,
	   "dp_list_ids_needed: HCAs x slots, exclusive = 1, saturating");
	for (unsigned i = 0; i < 80; i++) {
		char name[16], pci[16];

		snprintf(name, sizeof(name), "mlx5_%u", i);
		snprintf(pci, sizeof(pci), "0000:%02x:00.0", i + 1);
		fake_add(f, name, pci, "devices/pci0000:00", 1000, true, false);
		half[i] = i < 64;
	}
	ok(dp_table_build(&f->node, NULL, &o, &t) == -E2BIG && !t,
	   "80 HCAs x 256 slots = 20480 IDs > %d: -E2BIG", DP_LIST_IDS_MAX);
	o.include = half;
	o.shared = 257;
	ok(dp_table_build(&f->node, NULL, &o, &t) == -E2BIG && !t, "64 x 257 = 16448: -E2BIG");
	o.shared = 256;
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0 && t->n_ids == DP_LIST_IDS_MAX,
	   "64 x 256 = %d IDs: built (the pool counts, not the node)", DP_LIST_IDS_MAX);
	if (!t) {
		fake_free(f);
		return;
	}
	/* Worst case on the wire: every ID at the 63-char limit (unique). */
	for (size_t i = 0; i < t->n_ids; i++) {
		char n[8];

		memset(t->ids[i].id, 'x', DP_ID_MAX);
		t->ids[i].id[DP_ID_MAX] = '\0';
		snprintf(n, sizeof(n), "%05u", (unsigned)i % 100000u);
		memcpy(t->ids[i].id, n, 5);
	}
	ok(strlen(t->ids[0].id) == DP_ID_MAX && !t->hcas[0].healthy, "IDs of 63 chars, Unhealthy");
	if (dp_list_response(t, &resp) == 0) {
		packed = protobuf_c_message_get_packed_size(&resp->base);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	ok(packed > (size_t)DP_LIST_IDS_MAX * 63 && packed < (2u << 20),
	   "ListAndWatch at the bound packs to %zu bytes (< 2 MiB, kubelet limit 4 MiB)", packed);
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
	test_pools();
	test_ids_name_spec_devices();
	test_link_and_ports();
	test_list_bound();
	test_scale();
	return tap_done();
}
