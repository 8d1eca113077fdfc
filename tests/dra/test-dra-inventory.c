/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DRA inventory: device names (the rules in inventory.h, which docs/dra.md repeats),
 * CDI IDs equal to the spec's, health and reasons, UCX ports, pools from a config, lookup.
 */
#include "dra-test-util.h"
#include "specs.h"

static const char *name_of(const struct dra_inventory *inv, const char *rdma)
{
	for (size_t i = 0; i < inv->n_hcas; i++)
		if (strcmp(inv->hcas[i].d->name, rdma) == 0)
			return inv->hcas[i].name;
	return NULL;
}

static const struct dra_hca *hca_of(const struct dra_inventory *inv, const char *rdma)
{
	for (size_t i = 0; i < inv->n_hcas; i++)
		if (strcmp(inv->hcas[i].d->name, rdma) == 0)
			return &inv->hcas[i];
	return NULL;
}

static bool names_unique_labels(const struct dra_inventory *inv)
{
	for (size_t i = 0; i < inv->n_hcas; i++) {
		if (!dns_label_ok(inv->hcas[i].name)) {
			printf("#   not a DNS label: %s\n", inv->hcas[i].name);
			return false;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(inv->hcas[i].name, inv->hcas[j].name) == 0) {
				printf("#   twice: %s\n", inv->hcas[i].name);
				return false;
			}
	}
	return true;
}

/* The documented hash: FNV-1a 64, low 32 bits. */
static unsigned fnv(const char *s)
{
	unsigned long long h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (unsigned)h;
}

static void test_names(void)
{
	struct fake_node *f = fake_new(8);
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv;

	fake_add(f, "mlx5_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0,
		 true, true);
	fake_add(f, "mlx5_bond_0", "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0",
		 0, true, true);
	fake_add(f, "mlx5_1", "0000:3b:00.1", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", 0,
		 true, true);
	fake_add(f, "mlx5_x", "0000:3b:00.1", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1", 0,
		 false, true);
	fake_add(f, "Rxe0", "", "devices/virtual/net/eth0", -1, true, true);
	inv = fake_inventory(f, &cfg, &a);

	ok(inv->n_hcas == 4, "unusable devices are not published (%zu)", inv->n_hcas);
	is_str(name_of(inv, "mlx5_0"), "pci-0000-3b-00-0-mlx5-0",
	       "second RDMA device on a function: both get the RDMA name as suffix");
	is_str(name_of(inv, "mlx5_bond_0"), "pci-0000-3b-00-0-mlx5-bond-0",
	       "suffix: every character outside [a-z0-9] becomes '-'");
	is_str(name_of(inv, "mlx5_1"), "pci-0000-3b-00-1",
	       "an unusable sibling does not make the function shared");
	is_str(name_of(inv, "Rxe0"), "rdma-rxe0", "no PCI address: rdma-<name>, lowercase");
	ok(dra_inventory_find(inv, "pci-0000-3b-00-1") == hca_of(inv, "mlx5_1"),
	   "find by name gives that device");
	ok(dra_inventory_find(inv, "pci-0000-3b-00-2") == NULL && !dra_inventory_find(inv, "") &&
	       !dra_inventory_find(inv, "mlx5_1"),
	   "find: unknown names (and RDMA names) give NULL");
	ok(names_unique_labels(inv), "names are unique DNS labels");
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fake_free(f);
}

static void test_long_names(void)
{
	struct fake_node *f = fake_new(4);
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv;
	char l1[64], l2[64], want[80], full[96];

	memset(l1, 'n', 60);
	l1[60] = '\0';
	memcpy(l2, l1, sizeof(l1));
	l2[59] = 'm';
	fake_add(f, l1, "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0, true,
		 true);
	fake_add(f, l2, "0000:3b:00.0", "devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0", 0, true,
		 true);
	fake_add(f, "rxe_", "", "devices/virtual/net/eth0", -1, true, true);
	inv = fake_inventory(f, &cfg, &a);

	ok(strlen(inv->hcas[0].name) == 63 && strlen(inv->hcas[1].name) == 63,
	   "long names are cut to 63");
	snprintf(full, sizeof(full), "pci-0000-3b-00-0-%s", l1);
	snprintf(want, sizeof(want), "%.54s-%08x", full, fnv(l1));
	is_str(inv->hcas[0].name, want, "long: first 54 characters, '-', FNV-1a of the RDMA name");
	ok(strcmp(inv->hcas[0].name, inv->hcas[1].name) != 0,
	   "two long names that differ only at the end stay distinct");
	snprintf(want, sizeof(want), "rdma-rxe--%08x", fnv("rxe_"));
	is_str(inv->hcas[2].name, want, "a name that would end in '-' takes the hash form");
	ok(names_unique_labels(inv), "names are unique DNS labels");
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fake_free(f);
}

/* Names and CDI IDs against the spec generator on the same node. */
static void test_dgx(void)
{
	struct fixture *fx = fixture_scan("dgx");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a);
	const struct dra_hca *h0 = hca_of(inv, "mlx5_0"), *h9 = hca_of(inv, "mlx5_9");
	bool ids_match = true;

	ok(inv->n_hcas == disc_node_count_usable(fx->node) && inv->n_hcas == 10,
	   "dgx: every usable device is published (%zu)", inv->n_hcas);
	ok(inv->node == fx->node && inv->cfg == cfg, "the inventory points at its node and config");
	for (size_t i = 0; i < inv->n_hcas; i++) {
		char id[SPEC_ID_MAX + 1], *q;

		spec_device_id(fx->node, inv->hcas[i].dev, id);
		q = spec_qualified_name("rdma.example/hca", id);
		ids_match = ids_match && q && strcmp(q, inv->hcas[i].cdi_id) == 0 &&
			    inv->hcas[i].d == &fx->node->devices[inv->hcas[i].dev];
		free(q);
	}
	ok(ids_match, "every CDI ID is the spec's ID name of that device");
	is_str(h0 ? h0->cdi_id : NULL, "rdma.example/hca=0000:1a:00.0", "CDI ID of mlx5_0");
	is_str(h0 ? h0->name : NULL, "pci-0000-1a-00-0", "name of mlx5_0");
	ok(h0 && h0->healthy && h0->reason[0] == '\0', "mlx5_0 is healthy, no reason");
	is_str(h0 ? h0->ucx : NULL, "mlx5_0:1", "UCX entry: the ACTIVE port");
	ok(h9 && !h9->healthy, "mlx5_9 (port DOWN) is unhealthy");
	is_str(h9 ? h9->reason : NULL, "port 1 DOWN", "its reason as discovery gives it");
	is_str(h9 ? h9->ucx : NULL, "mlx5_9:1", "UCX entry without ACTIVE port: the first port");
	ok(names_unique_labels(inv), "names are unique DNS labels");
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

/* Only the HCAs the spec on disk defines are offered; the others are freed (ASan). */
static void test_keep_defined(void)
{
	struct fixture *fx = fixture_scan("dgx");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a);
	cJSON *spec = cJSON_Parse("{\"devices\": [{\"name\": \"0000:1a:00.0\"},"
				  " {\"name\": \"0000:3c:00.0\"}, {\"name\": \"mlx5_99\"}]}");
	struct spec_names *defined = spec_names_new(spec);
	size_t before = inv->n_hcas;

	if (!spec || !defined)
		abort();
	EQ_INT((int)dra_inventory_keep_defined(inv, defined), (int)before - 2,
	       "the HCAs the spec on disk does not define are left out");
	ok(inv->n_hcas == 2 && hca_of(inv, "mlx5_0") && hca_of(inv, "mlx5_3"),
	   "the two it defines stay (%zu)", inv->n_hcas);
	is_str(hca_of(inv, "mlx5_3") ? hca_of(inv, "mlx5_3")->ucx : NULL, "mlx5_3:1",
	       "a kept HCA keeps its UCX entry");
	EQ_INT((int)dra_inventory_keep_defined(inv, spec_names_empty()), 2,
	       "no spec on disk yet: nothing is offered");
	ok(inv->n_hcas == 0, "the inventory is empty");
	spec_names_free(defined);
	cJSON_Delete(spec);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

static void test_pools(void)
{
	struct fixture *fx = fixture_scan("dgx");
	struct cfg *cfg;
	struct cfg_assignment *a;
	const char *yaml = "pools:\n"
			   "  - resourceName: rdma.example/roce\n"
			   "    selectors:\n"
			   "      linkLayers: [Ethernet]\n"
			   "  - resourceName: rdma.example/ib\n"
			   "    selectors:\n"
			   "      names: [mlx5_0, mlx5_1]\n";
	struct dra_inventory *inv = inventory_of(fx->node, yaml, &cfg, &a);
	const struct dra_hca *h8 = hca_of(inv, "mlx5_8"), *h1 = hca_of(inv, "mlx5_1");

	ok(inv->n_hcas == 4, "only devices a pool takes are published (%zu)", inv->n_hcas);
	ok(h8 && h8->pool == 0 && hca_of(inv, "mlx5_9") && hca_of(inv, "mlx5_9")->pool == 0,
	   "RoCE devices in pool 0");
	ok(h1 && h1->pool == 1, "mlx5_1 in pool 1");
	ok(!hca_of(inv, "mlx5_2"), "a device no pool takes is absent");
	ok(!dra_inventory_find(inv, "pci-0000-3b-00-0"), "and cannot be found by name");
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

static void test_sriov_and_errors(void)
{
	struct fixture *fx = fixture_scan("sriov");
	struct cfg *cfg;
	struct cfg_assignment *a;
	struct dra_inventory *inv = inventory_of(fx->node, NULL, &cfg, &a), *bad = NULL;
	const struct dra_hca *v = hca_of(inv, "mlx5_1");
	size_t saved;

	is_str(v ? v->name : NULL, "pci-0000-3b-00-2", "a VF is named by its own function");
	is_str(name_of(inv, "mlx5_0"), "pci-0000-3b-00-0", "its PF by its own");
	saved = a->n_devices;
	a->n_devices = saved + 1;
	EQ_INT(dra_inventory_build(fx->node, cfg, a, "rdma.example/hca", &bad), -EINVAL,
	       "an assignment of another scan is refused");
	a->n_devices = saved;
	ok(bad == NULL, "nothing returned on error");
	dra_inventory_free(NULL);
	ok(dra_inventory_find(NULL, "x") == NULL, "find in NULL gives NULL");
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	fixture_free(fx);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_names();
	test_long_names();
	test_dgx();
	test_pools();
	test_keep_defined();
	test_sriov_and_errors();
	return tap_done();
}
