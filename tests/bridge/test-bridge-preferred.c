/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GetPreferredAllocation on a DGX-like node: must-include first, then the fabric (link
 * layer), distinct HCAs before second shared slots, NUMA, the nearest common PCIe
 * switch, then health; deterministic whatever the request order;
 * fast on 2,000 devices. The same answers on the checked-in dgx sysfs fixture.
 */
#include <time.h>

#include "fake-node.h"

/* Answer for one container request: IDs joined by ' ' into out. */
static int prefer(const struct dp_table *t, const char *const *avail, size_t n_avail,
		  const char *const *must, size_t n_must, int size, char *out, size_t outlen)
{
	V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
	V1beta1__ContainerPreferredAllocationRequest c =
	    V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
	V1beta1__ContainerPreferredAllocationRequest *cs[1] = {&c};
	V1beta1__PreferredAllocationResponse *resp = NULL;
	size_t off = 0;
	int r;

	c.available_deviceids = (char **)avail;
	c.n_available_deviceids = n_avail;
	c.must_include_deviceids = (char **)must;
	c.n_must_include_deviceids = n_must;
	c.allocation_size = size;
	req.container_requests = cs;
	req.n_container_requests = 1;
	r = dp_preferred_allocation(t, &req, &resp, NULL);
	if (r < 0)
		return r;
	out[0] = '\0';
	for (size_t i = 0; resp->n_container_responses == 1 &&
			   i < resp->container_responses[0]->n_deviceids && off < outlen;
	     i++)
		off += (size_t)snprintf(out + off, outlen - off, "%s%s", i ? " " : "",
					resp->container_responses[0]->deviceids[i]);
	r = (int)(resp->n_container_responses == 1 ? resp->container_responses[0]->n_deviceids : 0);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return r;
}

/* How many of the space-separated words of s end in suffix. */
static int count_words(const char *s, const char *suffix)
{
	size_t sl = strlen(suffix);
	int n = 0;

	while (*s) {
		size_t l = strcspn(s, " ");

		n += l >= sl && strncmp(s + l - sl, suffix, sl) == 0;
		s += l;
		s += *s == ' ';
	}
	return n;
}

static const char *const all10[] = {
    "0000:1a:00.0", "0000:1b:00.0", "0000:3b:00.0", "0000:3c:00.0", "0000:5e:00.0",
    "0000:9a:00.0", "0000:9b:00.0", "0000:ba:00.0", "0000:bb:00.0", "0000:d8:00.0",
};
static const char *const ib8[] = {
    "0000:1a:00.0", "0000:1b:00.0", "0000:3b:00.0", "0000:3c:00.0",
    "0000:9a:00.0", "0000:9b:00.0", "0000:ba:00.0", "0000:bb:00.0",
};

#define P(t, avail, must, size, out)                                                               \
	prefer(t, avail, ELEMENTSOF(avail), must, ELEMENTSOF(must), size, out, sizeof(out))

static void check_dgx(const struct dp_table *t, const char *what)
{
	char out[1024];

	P(t, ib8, ((const char *const[]){"0000:1a:00.0"}), 2, out);
	is_str(out, "0000:1a:00.0 0000:1b:00.0",
	       "%s: 2 of 8 with mlx5_0 must-include: its switch sibling", what);
	P(t, ib8, ((const char *const[]){"0000:3c:00.0"}), 2, out);
	is_str(out, "0000:3c:00.0 0000:3b:00.0", "%s: sibling found whatever the position", what);
	P(t, ib8, ((const char *const[]){"0000:9b:00.0"}), 2, out);
	is_str(out, "0000:9b:00.0 0000:9a:00.0", "%s: NUMA node 1 too", what);
	P(t, all10, ((const char *const[]){"0000:9a:00.0"}), 4, out);
	is_str(
	    out, "0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0",
	    "%s: 4 with one must-include: same NUMA node, switch first, healthy before unhealthy",
	    what);
	P(t, all10, ((const char *const[]){"0000:9a:00.0"}), 6, out);
	is_str(out, "0000:9a:00.0 0000:9b:00.0 0000:ba:00.0 0000:bb:00.0 0000:1a:00.0 0000:1b:00.0",
	       "%s: the fabric before NUMA: IB on the other node before RoCE on this one", what);
	P(t, ((const char *const[]){"0000:5e:00.0", "0000:9a:00.0"}),
	  ((const char *const[]){"0000:3c:00.0"}), 2, out);
	is_str(out, "0000:3c:00.0 0000:9a:00.0",
	       "%s: IB must-include, RoCE on its NUMA node or IB on the other: IB", what);
	P(t, all10, ((const char *const[]){"0000:5e:00.0"}), 2, out);
	is_str(out, "0000:5e:00.0 0000:d8:00.0",
	       "%s: RoCE must-include: the other RoCE function, across NUMA nodes", what);
	P(t, all10, ((const char *const[]){"0000:5e:00.0"}), 3, out);
	is_str(out, "0000:5e:00.0 0000:d8:00.0 0000:1a:00.0",
	       "%s: RoCE exhausted: then NUMA and switch rules among the rest", what);
	P(t, ib8, ((const char *const[]){"0000:1a:00.0", "0000:bb:00.0"}), 4, out);
	is_str(out, "0000:1a:00.0 0000:bb:00.0 0000:1b:00.0 0000:ba:00.0",
	       "%s: must-include on both nodes: the switch siblings of each", what);
}

static enum dp_link link_of_id(const struct dp_table *t, const char *id)
{
	long i = dp_table_find(t, id);

	return i < 0 ? DP_LINK_UNKNOWN : t->hcas[t->ids[i].hca].link;
}

/*
 * Issue 6: a 2-HCA request got one InfiniBand HCA and one RoCE function because both sat
 * on NUMA node 0. Over every subset of the 10 devices as the available set (all healthy:
 * the kubelet offers only healthy ones), a 2-device answer never mixes the fabrics when
 * one of them has two candidates, and a RoCE must-include gets the other RoCE function.
 */
static void check_one_fabric(struct dp_table *t, const char *what)
{
	unsigned subsets = 0, mixed = 0, roce_wrong = 0, roce_cases = 0;
	bool saved[16];
	char out[256];

	for (size_t i = 0; i < t->n_hcas && i < 16; i++) {
		saved[i] = t->hcas[i].healthy;
		t->hcas[i].healthy = true;
	}
	for (unsigned mask = 0; mask < 1u << 10; mask++) {
		const char *avail[10];
		size_t n = 0, n_ib = 0, n_eth = 0;
		char a[64], b[64];

		for (unsigned k = 0; k < 10; k++)
			if (mask & (1u << k)) {
				avail[n++] = all10[k];
				n_ib += link_of_id(t, all10[k]) == DP_LINK_INFINIBAND;
				n_eth += link_of_id(t, all10[k]) == DP_LINK_ETHERNET;
			}
		if (n < 2)
			continue;
		subsets++;
		if (prefer(t, avail, n, NULL, 0, 2, out, sizeof(out)) != 2 ||
		    sscanf(out, "%63s %63s", a, b) != 2 ||
		    ((n_ib >= 2 || n_eth >= 2) && link_of_id(t, a) != link_of_id(t, b))) {
			if (mixed++ == 0)
				printf("#   %s: answer \"%s\" mixes fabrics (subset %#x)\n", what,
				       out, mask);
		}
		/* mlx5_8 (0000:5e:00.0) and mlx5_9 (0000:d8:00.0) are bits 4 and 9. */
		if ((mask & (1u << 4)) && (mask & (1u << 9))) {
			roce_cases++;
			prefer(t, avail, n, (const char *const[]){"0000:5e:00.0"}, 1, 2, out,
			       sizeof(out));
			roce_wrong += strcmp(out, "0000:5e:00.0 0000:d8:00.0") != 0;
		}
	}
	/* Node 0 has one IB HCA and one RoCE function, node 1 one RoCE function: the fabric
	 * with most candidates overall wins, not the first on the fullest node. */
	prefer(t, (const char *const[]){"0000:1a:00.0", "0000:5e:00.0", "0000:d8:00.0"}, 3, NULL, 0,
	       2, out, sizeof(out));
	is_str(out, "0000:5e:00.0 0000:d8:00.0",
	       "%s: anchor on the fabric with most healthy candidates: 2 RoCE, not IB + RoCE",
	       what);
	ok(subsets == 1013 && mixed == 0,
	   "%s: 2 devices, no must-include, %u available sets: never IB + RoCE when one fabric "
	   "has two (%u mixed)",
	   what, subsets, mixed);
	ok(roce_cases == 256 && roce_wrong == 0,
	   "%s: RoCE must-include: the other RoCE function in all %u sets (%u wrong)", what,
	   roce_cases, roce_wrong);
	for (size_t i = 0; i < t->n_hcas && i < 16; i++)
		t->hcas[i].healthy = saved[i];
}

/* Every container request gets a response, even an empty one: their number is bounded. */
static void test_container_cap(const struct dp_table *t)
{
	V1beta1__ContainerPreferredAllocationRequest cs[DP_CONTAINERS_MAX + 1];
	V1beta1__ContainerPreferredAllocationRequest *ps[DP_CONTAINERS_MAX + 1];
	V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
	V1beta1__PreferredAllocationResponse *resp = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;

	for (size_t i = 0; i <= DP_CONTAINERS_MAX; i++) {
		v1beta1__container_preferred_allocation_request__init(&cs[i]);
		cs[i].available_deviceids = (char **)all10;
		cs[i].n_available_deviceids = 10;
		cs[i].allocation_size = 1;
		ps[i] = &cs[i];
	}
	req.container_requests = ps;
	req.n_container_requests = DP_CONTAINERS_MAX;
	ok(dp_preferred_allocation(t, &req, &resp, &err) == 0 &&
	       resp->n_container_responses == DP_CONTAINERS_MAX && !err,
	   "%d container requests: answered", DP_CONTAINERS_MAX);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	req.n_container_requests = DP_CONTAINERS_MAX + 1;
	ok(dp_preferred_allocation(t, &req, &resp, &err) == -EINVAL &&
	       strstr(rc_error_msg(err, -EINVAL), "at most 256"),
	   "%d container requests: -EINVAL (%s)", DP_CONTAINERS_MAX + 1,
	   rc_error_msg(err, -EINVAL));
}

static void test_dgx(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 0, 0);
	const char *const none[] = {NULL};
	const char *const shuffled[] = {
	    "0000:bb:00.0", "0000:3b:00.0", "0000:d8:00.0", "0000:9b:00.0", "0000:1b:00.0",
	    "0000:5e:00.0", "0000:ba:00.0", "0000:1a:00.0", "0000:3c:00.0", "0000:9a:00.0",
	};
	const char *const numa1[] = {"0000:bb:00.0", "0000:9b:00.0", "0000:ba:00.0",
				     "0000:1a:00.0"};
	const char *const junk[] = {"nope", "0000:3c:00.0", "0000:3c:00.0", "", "0000:3b:00.0"};
	const char *all20[20];
	char out[1024], out2[1024];

	check_dgx(t, "synthetic");
	check_one_fabric(t, "synthetic");
	prefer(t, all10, 10, none, 0, 4, out, sizeof(out));
	is_str(out, "0000:1a:00.0 0000:1b:00.0 0000:3b:00.0 0000:3c:00.0",
	       "no must-include: anchored on the node with most healthy devices");
	prefer(t, shuffled, 10, none, 0, 4, out2, sizeof(out2));
	is_str(out2, out, "request order does not change the answer");
	prefer(t, numa1, 4, none, 0, 2, out, sizeof(out));
	is_str(out, "0000:9b:00.0 0000:ba:00.0",
	       "no must-include, 3 on node 1 vs 1 on node 0: node 1");
	ok(prefer(t, all10, 10, (const char *const[]){"0000:1a:00.0"}, 1, 20, out, sizeof(out)) ==
	       10,
	   "size beyond the candidates: all of them");
	ok(prefer(t, ib8, 8, (const char *const[]){"0000:1a:00.0", "0000:9a:00.0", "0000:ba:00.0"},
		  3, 2, out, sizeof(out)) == 3,
	   "more must-include than size: every must-include is kept");
	prefer(t, junk, ELEMENTSOF(junk), (const char *const[]){"0000:3c:00.0", "gone"}, 2, 3, out,
	       sizeof(out));
	is_str(out, "0000:3c:00.0 0000:3b:00.0",
	       "unknown and duplicate IDs are ignored, must not repeated");
	ok(prefer(t, all10, 10, none, 0, 0, out, sizeof(out)) == 0, "size 0: nothing");
	ok(prefer(t, all10, 10, none, 0, -5, out, sizeof(out)) == 0,
	   "negative size: nothing, no crash");
	test_container_cap(t);
	dp_table_free(t);

	/* Shared mode: a second slot of an HCA gives the pod nothing more (Allocate hands
	 * each HCA out once): distinct HCAs first, second slots after. */
	t = table_of(&f->node, 2, 0);
	prefer(t, (const char *const[]){"0000:1b:00.0-s0", "0000:1a:00.0-s1", "0000:9a:00.0-s0"}, 3,
	       (const char *const[]){"0000:1a:00.0-s0"}, 1, 3, out, sizeof(out));
	is_str(out, "0000:1a:00.0-s0 0000:1b:00.0-s0 0000:9a:00.0-s0",
	       "shared: distinct HCAs before a second slot of the must-include HCA");
	prefer(t,
	       (const char *const[]){"0000:1b:00.0-s1", "0000:1a:00.0-s1", "0000:1b:00.0-s0",
				     "0000:5e:00.0-s0"},
	       4, (const char *const[]){"0000:1a:00.0-s0"}, 1, 4, out, sizeof(out));
	is_str(out, "0000:1a:00.0-s0 0000:1b:00.0-s0 0000:1a:00.0-s1 0000:1b:00.0-s1",
	       "shared: then second slots, and still no RoCE slot for an IB pod");
	for (size_t i = 0; i < t->n_ids; i++)
		all20[i] = t->ids[i].id;
	prefer(t, all20, 20, none, 0, 4, out, sizeof(out));
	is_str(out, "0000:1a:00.0-s0 0000:1b:00.0-s0 0000:3b:00.0-s0 0000:3c:00.0-s0",
	       "shared, no must-include: 4 slots on 4 HCAs of one fabric and NUMA node");
	prefer(t, all20, 20, none, 0, 10, out, sizeof(out));
	ok(count_words(out, "-s0") == 8 && count_words(out, "-s1") == 2 &&
	       !strstr(out, "0000:5e:00.0") && !strstr(out, "0000:d8:00.0"),
	   "shared, 10 slots: all 8 IB HCAs, then 2 second IB slots, no RoCE (%s)", out);
	dp_table_free(t);
	fake_free(f);
}

static void test_fixture(const char *data_dir)
{
	_cleanup_free_ char *root = strdup_printf("%s/dgx/sys", data_dir);
	struct disc_options o = {.sysfs_root = root, .dev_root = "/nonexistent"};
	struct disc_node *node = NULL;
	struct dp_table *t;

	if (!ok(disc_scan(&o, &node) == 0, "scan the checked-in dgx fixture"))
		return;
	t = table_of(node, 0, 0);
	ok(t->n_ids == 10, "dgx fixture: 10 devices");
	/* No /dev nodes here: mark health as the fixture has it (mlx5_9's port is DOWN). */
	for (size_t i = 0; i < t->n_hcas; i++)
		t->hcas[i].healthy = strcmp(t->hcas[i].name, "mlx5_9") != 0;
	check_dgx(t, "fixture");
	ok(link_of_id(t, "0000:1a:00.0") == DP_LINK_INFINIBAND &&
	       link_of_id(t, "0000:5e:00.0") == DP_LINK_ETHERNET,
	   "fixture: the table knows IB from RoCE (first port's link_layer)");
	check_one_fabric(t, "fixture");
	dp_table_free(t);
	disc_node_free(node);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void test_scale(void)
{
	struct fake_node *f = fake_new(2000);
	struct dp_table *t;
	const char **avail = malloc(2000 * sizeof(char *));
	char out[1024];
	double t0, best = 1e9;
	int n = 0;

	for (unsigned i = 0; i < 2000; i++) {
		char name[32], pci[32], path[160];

		snprintf(name, sizeof(name), "mlx5_%u", i);
		snprintf(pci, sizeof(pci), "0000:%02x:%02x.%u", i / 64, (i / 8) % 8, i % 8);
		snprintf(path, sizeof(path),
			 "devices/pci0000:%02x/0000:%02x:00.0/0000:%02x:%02x.0/%s", i / 64, i / 64,
			 i / 64, (i / 8) % 8, pci);
		fake_add(f, name, pci, path, (int)(i / 1000), true, true);
	}
	t = table_of(&f->node, 0, 0);
	for (size_t i = 0; i < t->n_ids; i++)
		avail[i] = t->ids[i].id;
	for (int rep = 0; rep < 5; rep++) {
		t0 = now_us();
		n = prefer(t, avail, 2000, (const char *const[]){"0000:1f:01.7"}, 1, 8, out,
			   sizeof(out));
		if (now_us() - t0 < best)
			best = now_us() - t0;
	}
	ok(n == 8 && strncmp(out, "0000:1f:01.7 0000:1f:01.0", 25) == 0,
	   "2,000 devices: must-include first, then its bridge siblings (%.40s...)", out);
	printf("# 2,000 available, size 8: %.0f us\n", best);
	ok(best < 20000, "2,000 available IDs answered in %.0f us (< 20 ms even under sanitizers)",
	   best);

	{
		const char **must = malloc(2000 * sizeof(char *));

		memcpy(must, avail, 2000 * sizeof(char *));
		best = 1e9;
		t0 = now_us();
		n = prefer(t, avail, 2000, must, 2000, 2000, out, sizeof(out));
		best = now_us() - t0;
		ok(n == 2000 && best < 200000, "2,000 must-include IDs: %.0f us", best);
		free(must);
	}
	free(avail);
	dp_table_free(t);
	fake_free(f);
}

int main(int argc, char **argv)
{
	test_dgx();
	if (argc > 1)
		test_fixture(argv[1]);
	else
		ok(false, "usage: test-bridge-preferred TESTS_DATA_DIR");
	test_scale();
	return tap_done();
}
