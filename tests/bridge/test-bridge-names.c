/* SPDX-License-Identifier: Apache-2.0 */
/* --device-list-strategy parsing and the kubelet's extended resource name rules. */
#include "fake-node.h"

static void test_strategies(void)
{
	static const struct {
		const char *s;
		int r;
		unsigned mask;
	} cases[] = {
	    {"cdi-cri", 0, BRIDGE_STRATEGY_CDI_CRI},
	    {"cdi-annotations", 0, BRIDGE_STRATEGY_CDI_ANNOTATIONS},
	    {"device-specs", 0, BRIDGE_STRATEGY_DEVICE_SPECS},
	    {"cdi-cri,cdi-annotations", 0,
	     BRIDGE_STRATEGY_CDI_CRI | BRIDGE_STRATEGY_CDI_ANNOTATIONS},
	    {"device-specs,cdi-cri,cdi-annotations", 0, 7},
	    {"cdi-cri,cdi-cri", 0, BRIDGE_STRATEGY_CDI_CRI},
	    {"", -EINVAL, 0},
	    {",", -EINVAL, 0},
	    {"cdi-cri,", -EINVAL, 0},
	    {",cdi-cri", -EINVAL, 0},
	    {"cdi-cri,,device-specs", -EINVAL, 0},
	    {"CDI-CRI", -EINVAL, 0},
	    {"cdi-cri ", -EINVAL, 0},
	    {"cdi", -EINVAL, 0},
	    {"cdi-cris", -EINVAL, 0},
	    {"envvar", -EINVAL, 0},
	};
	unsigned mask;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		int r;

		mask = 0xdead;
		r = bridge_parse_strategies(cases[i].s, &mask);
		ok(r == cases[i].r && (r < 0 ? mask == 0xdead : mask == cases[i].mask),
		   "strategies \"%s\" -> %d mask 0x%x", cases[i].s, r, r < 0 ? 0 : mask);
	}
	ok(bridge_parse_strategies(NULL, &mask) == -EINVAL, "NULL strategies rejected");
}

static void test_resource_names(void)
{
	static const struct {
		const char *name;
		bool valid;
	} cases[] = {
	    {"rdma.example/hca", true},
	    {"example.com/foo_bar.baz-1", true},
	    {"nvidia.com/gpu", true},
	    {"a/b", true},
	    {"x-1.y-2/Z9", true},
	    {"hca", false},
	    {"/hca", false},
	    {"rdma.example/", false},
	    {"kubernetes.io/hca", false},
	    {"rdma.kubernetes.io/hca", false},
	    {"requests.example.com/hca", false},
	    {"Example.com/hca", false},
	    {"rdma..example/hca", false},
	    {".rdma/hca", false},
	    {"rdma./hca", false},
	    {"rdma-/hca", false},
	    {"-rdma/hca", false},
	    {"rdma_x/hca", false},
	    {"rdma.example/-hca", false},
	    {"rdma.example/hca-", false},
	    {"rdma.example/h ca", false},
	    {"rdma.example/h/ca", false},
	    {"rdma.example/hca\n", false},
	};
	char name[400];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char buf[80];

		ok(bridge_resource_name_is_valid(cases[i].name) == cases[i].valid, "resource %s %s",
		   text_quote(buf, sizeof(buf), cases[i].name, strlen(cases[i].name)),
		   cases[i].valid ? "valid" : "rejected");
	}
	ok(!bridge_resource_name_is_valid(NULL), "NULL rejected");

	/* Name part: 63 characters at most. */
	snprintf(name, sizeof(name), "rdma.example/%.63s",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ok(bridge_resource_name_is_valid(name), "63-char name part valid");
	snprintf(name, sizeof(name), "rdma.example/%.64s",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ok(!bridge_resource_name_is_valid(name), "64-char name part rejected");

	/* Domain: 253 - strlen("requests.") = 244 characters, as the kubelet checks the quota
	 * name "requests.<name>". */
	memset(name, 'a', 244);
	for (size_t i = 60; i < 240; i += 61)
		name[i] = '.';
	strcpy(name + 244, "/hca");
	ok(bridge_resource_name_is_valid(name), "244-char domain valid");
	memmove(name + 1, name, strlen(name) + 1);
	name[0] = 'a';
	ok(!bridge_resource_name_is_valid(name), "245-char domain rejected");
}

int main(void)
{
	test_strategies();
	test_resource_names();
	return tap_done();
}
