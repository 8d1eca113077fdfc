/* SPDX-License-Identifier: Apache-2.0 */
/* CDI name rules, version ordering and the minimum version each field needs. */
#include <string.h>

#include "cdi-internal.h"
#include "../tap.h"

/* Single quotes in the test texts stand for double quotes: easier to read here. */
static cJSON *parse_q(const char *text)
{
	_cleanup_free_ char *s = strdup(text);

	for (char *p = s; p && *p; p++)
		if (*p == '\'')
			*p = '"';
	return s ? cJSON_Parse(s) : NULL;
}

static void test_kinds(void)
{
	/* clang-format off */
	static const char *const good[] = {
		"rdma.example/hca", "nvidia.com/gpu", "ab/cd", "A1/b2", "a-b_c.d/e-f_g", "vendor.io/class9",
	};
	static const char *const bad[] = {
		"",               "rdma.example",  "/hca",      "rdma.example/",  "r/hca",
		"rdma.example/h", "a/b",           "rdma.example/hca.x", /* dot in class */
		"rdma.example/hca-", "rdma.example-/hca", "1rdma/hca", "rdma/1hca", "rdma/hca/x",
		"rdma example/hca", "rdma.example/hc a", "rdma:x/hca", "rdma.example/hca=0",
		"_rdma/hca", "rdma/_hca", "rdma./hca",
	};
	/* clang-format on */
	char long_kind[300];

	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		ok(cdi_kind_is_valid(good[i]), "kind '%s' is valid", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ok(!cdi_kind_is_valid(bad[i]), "kind '%s' is invalid", bad[i]);
	ok(!cdi_kind_is_valid(NULL), "NULL kind is invalid");

	/* One-character labels made podman 4.3.1 panic: the reason says so. */
	ok(strstr(cdi_kind_problem("p/hca", false), "at least 2") != NULL,
	   "1-char vendor: reason names the length");
	ok(strstr(cdi_kind_problem("probe.example/t", false), "class must be at least 2"),
	   "1-char class: reason names the class");
	ok(strstr(cdi_kind_problem("a.b/c.d", false), "0.6.0") != NULL,
	   "dot in class: reason names cdiVersion 0.6.0");
	ok(cdi_kind_problem("a.b/cc.dd", true) == NULL, "dot in class allowed for 0.6.0 specs");

	memset(long_kind, 'a', sizeof(long_kind));
	long_kind[100] = '/';
	long_kind[253] = '\0';
	ok(cdi_kind_is_valid(long_kind), "253-char kind is valid");
	long_kind[253] = 'a';
	long_kind[254] = '\0';
	ok(!cdi_kind_is_valid(long_kind), "254-char kind is invalid");
}

static void test_device_names(void)
{
	/* clang-format off */
	static const char *const good[] = {
		"mlx5_0", "0", "1", "all", "0000:3b:00.0", "a", "rocep59s0f0", "mlx5_bond_0",
		"ib-1.x:y", "Z9",
	};
	static const char *const bad[] = {
		"",   "-a",  "a-",  "_a",   "a_",   ".a", "a.", ":a", "a:", "a b",
		"a/b", "a=b", "a,b", "é", "a\nb",
	};
	/* clang-format on */
	char name[300];

	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		ok(cdi_device_name_is_valid(good[i]), "device name '%s' is valid", good[i]);
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ok(!cdi_device_name_is_valid(bad[i]), "device name '%s' is invalid", bad[i]);
	ok(!cdi_device_name_is_valid(NULL), "NULL device name is invalid");

	memset(name, 'x', sizeof(name));
	name[253] = '\0';
	ok(cdi_device_name_is_valid(name), "253-char device name is valid");
	name[253] = 'x';
	name[254] = '\0';
	ok(!cdi_device_name_is_valid(name), "254-char device name is invalid");
}

static void test_version_compare(void)
{
	ok(cdi_version_compare("0.5.0", "0.5.0") == 0, "0.5.0 == 0.5.0");
	ok(cdi_version_compare("0.4.0", "0.5.0") < 0, "0.4.0 < 0.5.0");
	ok(cdi_version_compare("1.0.0", "0.8.0") > 0, "1.0.0 > 0.8.0");
	ok(cdi_version_compare("0.10.0", "0.9.0") > 0, "0.10.0 > 0.9.0 (numeric, not lexical)");
	ok(cdi_version_compare("1.1.0", "1.0.10") > 0, "1.1.0 > 1.0.10");
	ok(cdi_version_compare("garbage", "0.3.0") < 0, "unparsable sorts lowest");
	ok(cdi_version_compare("0.3.0", "0.3") > 0, "incomplete version sorts lowest");
	ok(cdi_version_compare("v0.5.0", "0.3.0") < 0, "'v' prefix is unparsable");
	ok(cdi_version_compare(NULL, "0.3.0") < 0, "NULL sorts lowest");
	ok(cdi_version_compare("0.5.0.1", "0.3.0") < 0, "four components are unparsable");
	ok(cdi_version_compare("x", "y") < 0 && cdi_version_compare("y", "x") > 0,
	   "two unparsable versions still have an order");
}

static void test_min_version(void)
{
	/* clang-format off */
	static const struct {
		const char *spec;
		const char *want;
		const char *why;
	} cases[] = {
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'env':['A=1']}}]}",
		  "0.3.0", "" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'deviceNodes':[{'path':'/dev/x'}]}}]}",
		  "0.3.0", "" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'mounts':[{'hostPath':'/a','containerPath':'/b','type':'bind'}]}}]}",
		  "0.4.0", "devices[0].containerEdits.mounts[0].type" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{}}],'containerEdits':{'mounts':[{'hostPath':'/a','containerPath':'/b','type':''}]}}",
		  "0.4.0", "containerEdits.mounts[0].type" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'deviceNodes':[{'path':'/dev/x','hostPath':'/dev/y'}]}}]}",
		  "0.5.0", "devices[0].containerEdits.deviceNodes[0].hostPath" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{}}],'containerEdits':{'deviceNodes':[{'path':'/dev/x','hostPath':'/dev/y'}]}}",
		  "0.5.0", "containerEdits.deviceNodes[0].hostPath" },
		{ "{'kind':'ab/cd','devices':[{'name':'a'},{'name':'0'}]}", "0.5.0", "devices[1].name" },
		{ "{'kind':'ab/cd','devices':[{'name':'0000:3b:00.0'}]}", "0.5.0", "devices[0].name" },
		{ "{'kind':'ab/cd','annotations':{'a':'b'},'devices':[{'name':'a'}]}", "0.6.0",
		  "annotations" },
		{ "{'kind':'ab/cd','annotations':{},'devices':[{'name':'a'}]}", "0.6.0",
		  "annotations" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','annotations':{'a':'b'}}]}", "0.6.0",
		  "devices[0].annotations" },
		{ "{'kind':'ab/cd.ef','devices':[{'name':'a'}]}", "0.6.0", "kind" },
		{ "{'kind':'ab.x/cd','devices':[{'name':'a'}]}", "0.3.0", "" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'intelRdt':{'closID':'x'}}}]}",
		  "0.7.0", "devices[0].containerEdits.intelRdt" },
		{ "{'kind':'ab/cd','devices':[{'name':'a'}],'containerEdits':{'additionalGids':[5]}}",
		  "0.7.0", "containerEdits.additionalGids" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'intelRdt':{'schemata':['L3:0=f']}}}]}",
		  "1.1.0", "devices[0].containerEdits.intelRdt.schemata" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'intelRdt':{'enableMonitoring':true}}}]}",
		  "1.1.0", "devices[0].containerEdits.intelRdt.enableMonitoring" },
		{ "{'kind':'ab/cd','devices':[{'name':'a','containerEdits':{'netDevices':[{'hostInterfaceName':'eth0','name':'net0'}]}}]}",
		  "1.1.0", "devices[0].containerEdits.netDevices" },
		/* The highest requirement wins, and the first field that needs it is named. */
		{ "{'kind':'ab/cd.e','annotations':{},'devices':[{'name':'0','containerEdits':{'deviceNodes':[{'path':'/x','hostPath':'/x'}],'additionalGids':[1]}}]}",
		  "0.7.0", "devices[0].containerEdits.additionalGids" },
		/* Garbage in, no crash: the walk tolerates any shape. */
		{ "{'kind':5,'devices':{'name':'0'},'containerEdits':[1,2]}", "0.3.0", "" },
		{ "[]", "0.3.0", "" },
	};
	/* clang-format on */

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		_cleanup_(cJSON_Deletep) cJSON *spec = parse_q(cases[i].spec);
		char why[256];
		const char *v;

		if (!spec) {
			ok(false, "min version case %zu parses", i);
			continue;
		}
		v = cdi_min_version_why(spec, why, sizeof(why));
		ok(strcmp(v, cases[i].want) == 0 && strcmp(why, cases[i].why) == 0,
		   "min version case %zu: %s (%s), want %s (%s)", i, v, why, cases[i].want,
		   cases[i].why);
		ok(strcmp(cdi_min_version(spec), v) == 0, "cdi_min_version agrees on case %zu", i);
	}
	ok(strcmp(cdi_min_version(NULL), "0.3.0") == 0, "NULL spec needs the base version");
}

int main(void)
{
	test_kinds();
	test_device_names();
	test_version_compare();
	test_min_version();
	return tap_done();
}
