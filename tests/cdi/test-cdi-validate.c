/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi_spec_validate: good specs pass; each kind of bad spec fails with a one-line
 * reason that starts with the JSON path of the offending field.
 */
#include <string.h>

#include "cdi-internal.h"
#include "../tap.h"
#include "../tap-error.h"

/* Single quotes in the test texts stand for double quotes. */
static cJSON *parse_q(const char *text)
{
	_cleanup_free_ char *s = strdup(text);

	for (char *p = s; p && *p; p++)
		if (*p == '\'')
			*p = '"';
	return s ? cJSON_Parse(s) : NULL;
}

#define SPEC(ver, devs, extra)                                                                     \
	"{'cdiVersion':'" ver "','kind':'rdma.example/hca','devices':[" devs "]" extra "}"
#define DEV(name, edits) "{'name':'" name "','containerEdits':" edits "}"
#define NODES(node) "{'deviceNodes':[" node "]}"
#define ONE_DEV(ver, edits) SPEC(ver, DEV("mlx5_0", edits), "")
#define X NODES("{'path':'/dev/x'}")

/* clang-format off */
static const char *const good_specs[] = {
	/* What rdma-cdi generates. */
	"{'cdiVersion':'0.5.0','kind':'rdma.example/hca','devices':["
	"{'name':'mlx5_0','containerEdits':{'deviceNodes':[{'path':'/dev/infiniband/uverbs0',"
	"'hostPath':'/dev/infiniband/uverbs0','type':'c','major':231,'minor':192}]}},"
	"{'name':'0','containerEdits':{'deviceNodes':[{'path':'/dev/infiniband/uverbs0',"
	"'hostPath':'/dev/infiniband/uverbs0','type':'c','major':231,'minor':192}]}},"
	"{'name':'all','containerEdits':{'deviceNodes':[{'path':'/dev/infiniband/uverbs0',"
	"'hostPath':'/dev/infiniband/uverbs0','type':'c','major':231,'minor':192}]}}],"
	"'containerEdits':{'deviceNodes':[{'path':'/dev/infiniband/rdma_cm','hostPath':"
	"'/dev/infiniband/rdma_cm','type':'c','major':10,'minor':58}],'hooks':[{'hookName':"
	"'createRuntime','path':'/usr/libexec/rdma-cdi/rdma-cdi-hook','args':['rdma-cdi-hook',"
	"'--memlock','unlimited'],'env':['A=1'],'timeout':10}]}}",
	/* Every 0.3.0 field. */
	SPEC("0.3.0",
	     DEV("a", "{'env':['A=B','C=','D==x'],'deviceNodes':[{'path':'/dev/a','type':'b','major':"
		      "0,'minor':4294967295,'fileMode':8630,'permissions':'rwm','uid':4294967295,"
		      "'gid':0},{'path':'/dev/p','type':'p'},{'path':'/dev/u','type':'u',"
		      "'permissions':''},{'path':'/dev/e','type':''}],'mounts':[{'hostPath':'rel',"
		      "'containerPath':'/c','options':['ro','rbind']}],'hooks':[{'hookName':'prestart',"
		      "'path':'/bin/true'},{'hookName':'poststop','path':'/bin/true','args':[]}]}"),
	     ",'containerEdits':{}"),
	SPEC("0.4.0", DEV("a", "{'mounts':[{'hostPath':'/a','containerPath':'/b','type':'bind'}]}"), ""),
	/* An empty hostPath still needs 0.5.0: older libraries do not know the key. */
	SPEC("0.5.0", DEV("a", NODES("{'path':'/dev/x','hostPath':''}")), ""),
	"{'cdiVersion':'0.6.0','kind':'nvidia.com/gpu.x','annotations':{'a':'b','example.com/"
	"key-1':''},'devices':[{'name':'a','annotations':{'x':'y'},'containerEdits':{'env':"
	"['A=1']}}]}",
	SPEC("0.7.0", DEV("a", "{'intelRdt':{'closID':'/','l3CacheSchema':'L3:0=f','memBwSchema':"
			       "'MB:0=100'},'additionalGids':[0,5,4294967295]}"),
	     ""),
	SPEC("1.1.0", DEV("a", "{'netDevices':[{'hostInterfaceName':'eth0','name':'net0'},"
			       "{'hostInterfaceName':'eth1','name':'net1'}],'intelRdt':{'closID':"
			       "'grp','schemata':['L3:0=f'],'enableMonitoring':true}}"),
	     ""),
	/* A version higher than needed is fine. */
	SPEC("1.0.0", DEV("a", X), ""),
	SPEC("0.8.0", DEV("a", X), ""),
	/* Every hook name. */
	SPEC("0.3.0", DEV("a", "{'hooks':[{'hookName':'prestart','path':'/h'},{'hookName':"
			       "'createRuntime','path':'/h'},{'hookName':'createContainer','path':"
			       "'/h'},{'hookName':'startContainer','path':'/h'},{'hookName':"
			       "'poststart','path':'/h'},{'hookName':'poststop','path':'/h'}]}"),
	     ""),
};
/* clang-format on */

/* clang-format off */
static const struct {
	const char *spec;
	const char *want; /* the message starts with this */
} bad_specs[] = {
	{ "[]", "spec: must be an object" },
	{ "{'kind':'rdma.example/hca','devices':[" DEV("a", X) "]}",
	  "cdiVersion: required field missing" },
	{ "{'cdiVersion':5,'kind':'rdma.example/hca','devices':[" DEV("a", X) "]}",
	  "cdiVersion: must be a string" },
	{ SPEC("0.9.0", DEV("a", X), ""), "cdiVersion: \"0.9.0\" is not a known CDI version" },
	{ SPEC("v0.5.0", DEV("a", X), ""), "cdiVersion: \"v0.5.0\" is not a known" },
	{ SPEC("0.2.0", DEV("a", X), ""), "cdiVersion: \"0.2.0\" is not a known" },
	{ "{'cdiVersion':'0.5.0','devices':[" DEV("a", X) "]}", "kind: required field missing" },
	{ "{'cdiVersion':'0.5.0','kind':['a'],'devices':[" DEV("a", X) "]}", "kind: must be a string" },
	{ "{'cdiVersion':'0.5.0','kind':'r/hca','devices':[" DEV("a", X) "]}",
	  "kind: \"r/hca\": vendor must be at least 2 characters" },
	{ "{'cdiVersion':'0.5.0','kind':'rdma.example/hca.x','devices':[" DEV("a", X) "]}",
	  "kind: \"rdma.example/hca.x\": class may not contain '.'" },
	{ "{'cdiVersion':'0.5.0','kind':'rdma','devices':[" DEV("a", X) "]}",
	  "kind: \"rdma\": kind must be vendor/class" },
	{ SPEC("0.5.0", DEV("a", X), ",'foo':1"), "foo: unknown field" },
	{ SPEC("0.5.0", DEV("a", X), ",'Kind':'x'"), "Kind: unknown field" },
	{ SPEC("0.5.0", DEV("a", X), ",'a\\nb':1"), "\"a\\nb\": unknown field" },
	{ "{'cdiVersion':'0.5.0','kind':'rdma.example/hca'}", "devices: required field missing" },
	{ SPEC("0.5.0", "", ""), "devices: a spec needs at least one device" },
	{ "{'cdiVersion':'0.5.0','kind':'rdma.example/hca','devices':{}}", "devices: must be an array" },
	{ SPEC("0.5.0", "'a'", ""), "devices[0]: must be an object" },
	{ SPEC("0.5.0", "{'containerEdits':" X "}", ""), "devices[0].name: required field missing" },
	{ SPEC("0.5.0", "{'name':5,'containerEdits':" X "}", ""), "devices[0].name: must be a string" },
	{ SPEC("0.5.0", DEV("a", X) "," DEV("-x", X), ""),
	  "devices[1].name: \"-x\": device name must start with a letter or digit" },
	{ SPEC("0.5.0", DEV("a", X) "," DEV("b", X) "," DEV("a", X), ""),
	  "devices[2].name: device \"a\" is defined twice" },
	{ SPEC("0.5.0", "{'name':'a'}", ""), "devices[0].containerEdits: required field missing" },
	{ SPEC("0.5.0", DEV("a", "{}"), ""), "devices[0].containerEdits: a device needs at least one edit" },
	{ SPEC("0.5.0", DEV("a", "{'env':[],'deviceNodes':[],'hooks':[],'mounts':[]}"), ""),
	  "devices[0].containerEdits: a device needs at least one edit" },
	{ SPEC("0.5.0", DEV("a", "[]"), ""), "devices[0].containerEdits: must be an object" },
	{ SPEC("0.5.0", "{'name':'a','containerEdits':" X ",'extra':1}", ""),
	  "devices[0].extra: unknown field" },
	{ ONE_DEV("0.5.0", "{'env':['A=1'],'capabilities':['IPC_LOCK']}"),
	  "devices[0].containerEdits.capabilities: unknown field" },
	{ ONE_DEV("0.5.0", "{'env':['=x']}"),
	  "devices[0].containerEdits.env[0]: \"=x\" is not of the form NAME=VALUE" },
	{ ONE_DEV("0.5.0", "{'env':['A=1','NOEQ']}"),
	  "devices[0].containerEdits.env[1]: \"NOEQ\" is not of the form NAME=VALUE" },
	{ ONE_DEV("0.5.0", "{'env':[5]}"), "devices[0].containerEdits.env[0]: must be a string" },
	{ ONE_DEV("0.5.0", "{'env':'A=1'}"), "devices[0].containerEdits.env: must be an array of strings" },
	{ ONE_DEV("0.5.0", NODES("{'hostPath':'/dev/x'}")),
	  "devices[0].containerEdits.deviceNodes[0].path: required field missing" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/a'},{'path':'dev/x'}")),
	  "devices[0].containerEdits.deviceNodes[1].path: \"dev/x\" is not absolute" },
	{ ONE_DEV("0.5.0", NODES("{'path':''}")),
	  "devices[0].containerEdits.deviceNodes[0].path: must not be empty" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','hostPath':'x'}")),
	  "devices[0].containerEdits.deviceNodes[0].hostPath: \"x\" is not absolute" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','type':'x'}")),
	  "devices[0].containerEdits.deviceNodes[0].type: \"x\" is not one of c, b, u, p" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','type':'cb'}")),
	  "devices[0].containerEdits.deviceNodes[0].type: \"cb\" is not one of" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','major':-1}")),
	  "devices[0].containerEdits.deviceNodes[0].major: -1 is out of range" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','major':1.5}")),
	  "devices[0].containerEdits.deviceNodes[0].major: must be an integer" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','major':'231'}")),
	  "devices[0].containerEdits.deviceNodes[0].major: must be a number" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','minor':4294967296}")),
	  "devices[0].containerEdits.deviceNodes[0].minor: 4294967296 is out of range" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','permissions':'rwx'}")),
	  "devices[0].containerEdits.deviceNodes[0].permissions: \"rwx\" is not a combination" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','uid':-1}")),
	  "devices[0].containerEdits.deviceNodes[0].uid: -1 is out of range" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','gid':4294967296}")),
	  "devices[0].containerEdits.deviceNodes[0].gid: 4294967296 is out of range" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','fileMode':'0644'}")),
	  "devices[0].containerEdits.deviceNodes[0].fileMode: must be a number" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','mode':1}")),
	  "devices[0].containerEdits.deviceNodes[0].mode: unknown field" },
	{ ONE_DEV("0.5.0", NODES("{'path':'/dev/x','hostPath':null}")),
	  "devices[0].containerEdits.deviceNodes[0].hostPath: must be a string" },
	{ ONE_DEV("0.5.0", "{'deviceNodes':['/dev/x']}"),
	  "devices[0].containerEdits.deviceNodes[0]: must be an object" },
	{ ONE_DEV("0.5.0", "{'mounts':[{'hostPath':'/a'}]}"),
	  "devices[0].containerEdits.mounts[0].containerPath: required field missing" },
	{ ONE_DEV("0.5.0", "{'mounts':[{'hostPath':'','containerPath':'/b'}]}"),
	  "devices[0].containerEdits.mounts[0].hostPath: must not be empty" },
	{ ONE_DEV("0.5.0", "{'mounts':[{'hostPath':'/a','containerPath':'/b','options':[1]}]}"),
	  "devices[0].containerEdits.mounts[0].options[0]: must be a string" },
	{ ONE_DEV("0.3.0", "{'mounts':[{'hostPath':'/a','containerPath':'/b','type':'bind'}]}"),
	  "cdiVersion: \"0.3.0\" is lower than 0.4.0, which devices[0].containerEdits.mounts[0].type needs" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'prestartx','path':'/h'}]}"),
	  "devices[0].containerEdits.hooks[0].hookName: \"prestartx\" is not a hook name" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime','path':'h'}]}"),
	  "devices[0].containerEdits.hooks[0].path: \"h\" is not absolute" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime'}]}"),
	  "devices[0].containerEdits.hooks[0].path: required field missing" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'path':'/h'}]}"),
	  "devices[0].containerEdits.hooks[0].hookName: required field missing" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime','path':'/h','timeout':0}]}"),
	  "devices[0].containerEdits.hooks[0].timeout: 0 is out of range" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime','path':'/h','args':'x'}]}"),
	  "devices[0].containerEdits.hooks[0].args: must be an array of strings" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime','path':'/h','env':['X']}]}"),
	  "devices[0].containerEdits.hooks[0].env[0]: \"X\" is not of the form NAME=VALUE" },
	{ ONE_DEV("0.5.0", "{'hooks':[{'hookName':'createRuntime','path':'/h','when':{}}]}"),
	  "devices[0].containerEdits.hooks[0].when: unknown field" },
	{ ONE_DEV("1.1.0", "{'netDevices':[{'hostInterfaceName':'eth0'}]}"),
	  "devices[0].containerEdits.netDevices[0].name: required field missing" },
	{ ONE_DEV("1.1.0", "{'netDevices':[{'hostInterfaceName':'eth0','name':'a-very-long-name0'}]}"),
	  "devices[0].containerEdits.netDevices[0].name: \"a-very-long-name0\" is not a valid network" },
	{ ONE_DEV("1.1.0", "{'netDevices':[{'hostInterfaceName':'eth0','name':'a'},"
			   "{'hostInterfaceName':'eth0','name':'b'}]}"),
	  "devices[0].containerEdits.netDevices[1].hostInterfaceName: \"eth0\" is used twice" },
	{ ONE_DEV("0.7.0", "{'intelRdt':{'closID':'..'}}"),
	  "devices[0].containerEdits.intelRdt.closID: \"..\" is not a valid CLOS name" },
	{ ONE_DEV("1.1.0", "{'intelRdt':{'enableMonitoring':'yes'}}"),
	  "devices[0].containerEdits.intelRdt.enableMonitoring: must be true or false" },
	{ ONE_DEV("0.7.0", "{'intelRdt':{'enableCMT':true}}"),
	  "devices[0].containerEdits.intelRdt.enableCMT: unknown field" },
	{ ONE_DEV("0.7.0", "{'additionalGids':[1,-1]}"),
	  "devices[0].containerEdits.additionalGids[1]: -1 is out of range" },
	{ SPEC("0.6.0", DEV("a", X), ",'annotations':5"), "annotations: must be an object" },
	{ "{'cdiVersion':'0.6.0','kind':'ab/cd','annotations':{'a':5},'devices':[" DEV("a", X) "]}",
	  "annotations.a: must be a string" },
	{ "{'cdiVersion':'0.6.0','kind':'ab/cd','annotations':{'bad key':'x'},'devices':[" DEV("a", X) "]}",
	  "annotations.\"bad key\": invalid annotation key" },
	{ "{'cdiVersion':'0.6.0','kind':'ab/cd','annotations':{'Upper.Case/key':'x'},'devices':[" DEV("a", X) "]}",
	  "annotations.Upper.Case/key: invalid annotation key: prefix must be a lowercase DNS" },
	{ "{'cdiVersion':'0.6.0','kind':'ab/cd','devices':[{'name':'a','annotations':{'k':[]},"
	  "'containerEdits':" X "}]}",
	  "devices[0].annotations.k: must be a string" },
	{ "{'cdiVersion':'0.5.0','kind':'ab/cd','annotations':{'a':'b'},'devices':[" DEV("a", X) "]}",
	  "cdiVersion: \"0.5.0\" is lower than 0.6.0, which annotations needs" },
	{ "{'cdiVersion':'0.5.0','kind':'ab/cd.ef','devices':[" DEV("a", X) "]}",
	  "kind: \"ab/cd.ef\": class may not contain '.'" },
	{ ONE_DEV("0.4.0", NODES("{'path':'/dev/x','hostPath':'/dev/x'}")),
	  "cdiVersion: \"0.4.0\" is lower than 0.5.0, which devices[0].containerEdits.deviceNodes[0].hostPath needs" },
	{ SPEC("0.4.0", DEV("0", X), ""),
	  "cdiVersion: \"0.4.0\" is lower than 0.5.0, which devices[0].name needs" },
	{ ONE_DEV("0.6.0", "{'additionalGids':[1]}"),
	  "cdiVersion: \"0.6.0\" is lower than 0.7.0, which devices[0].containerEdits.additionalGids needs" },
	{ ONE_DEV("1.0.0", "{'netDevices':[{'hostInterfaceName':'eth0','name':'n'}]}"),
	  "cdiVersion: \"1.0.0\" is lower than 1.1.0" },
	{ SPEC("0.5.0", DEV("a", X), ",'containerEdits':{'foo':[]}"), "containerEdits.foo: unknown field" },
	{ SPEC("0.5.0", DEV("a", X), ",'containerEdits':[]"), "containerEdits: must be an object" },
	{ SPEC("0.5.0", DEV("a", X), ",'containerEdits':{'deviceNodes':[{'path':'x'}]}"),
	  "containerEdits.deviceNodes[0].path: \"x\" is not absolute" },
};
/* clang-format on */

static void test_good(void)
{
	for (size_t i = 0; i < ELEMENTSOF(good_specs); i++) {
		_cleanup_(cJSON_Deletep) cJSON *spec = parse_q(good_specs[i]);
		int r;

		if (!spec) {
			ok(false, "good spec %zu parses", i);
			continue;
		}
		r = cdi_spec_validate(spec, tap_fresh());
		ok(r == 0 && !tap_e, "good spec %zu is valid (%s)", i, tap_msg());
	}
}

static void test_bad(void)
{
	for (size_t i = 0; i < ELEMENTSOF(bad_specs); i++) {
		_cleanup_(cJSON_Deletep) cJSON *spec = parse_q(bad_specs[i].spec);
		int r;

		if (!spec) {
			ok(false, "bad spec %zu parses as JSON", i);
			continue;
		}
		r = cdi_spec_validate(spec, tap_fresh());
		ok(r == -EINVAL &&
		       strncmp(tap_msg(), bad_specs[i].want, strlen(bad_specs[i].want)) == 0 &&
		       !strchr(tap_msg(), '\n'),
		   "bad spec %zu rejected: got '%s', want '%s...'", i, tap_msg(),
		   bad_specs[i].want);
	}
}

static void test_edge_cases(void)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = parse_q(SPEC("0.5.0", DEV("a", X), ""));
	_cleanup_(cJSON_Deletep) cJSON *big = NULL;
	cJSON *devs, *ann;
	int r;

	/* A tree built in C can carry a key twice; the Go readers would refuse it. */
	cJSON_AddStringToObject(spec, "kind", "rdma.example/hca");
	r = cdi_spec_validate(spec, tap_fresh());
	ok(r == -EINVAL && strcmp(tap_msg(), "kind: duplicate field") == 0, "duplicate key: '%s'",
	   tap_msg());
	ok(tap_e && tap_e->code == EINVAL, "the error carries the code");
	ok(cdi_spec_validate(spec, NULL) == -EINVAL, "no error object is fine");
	ok(cdi_spec_validate(NULL, tap_fresh()) == -EINVAL, "NULL spec is invalid");

	/* Many devices: uniqueness is checked without quadratic cost and still found. */
	big = parse_q(SPEC("0.5.0", "", ""));
	devs = cJSON_GetObjectItem(big, "devices");
	for (int i = 0; i < 5000; i++) {
		cJSON *d = cJSON_CreateObject();
		char name[32];

		snprintf(name, sizeof(name), "d%d", i == 4999 ? 17 : i);
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddItemToObject(d, "containerEdits", parse_q(X));
		cJSON_AddItemToArray(devs, d);
	}
	r = cdi_spec_validate(big, tap_fresh());
	ok(r == -EINVAL &&
	       strcmp(tap_msg(), "devices[4999].name: device \"d17\" is defined twice") == 0,
	   "duplicate among 5000 devices: '%s'", tap_msg());

	/* Annotations are limited to 256 KiB in total, like Kubernetes'. */
	cJSON_DeleteItemFromArray(devs, 4999);
	r = cdi_spec_validate(big, tap_fresh());
	ok(r == 0, "5000 unique devices are valid (%s)", tap_msg());
	cJSON_SetValuestring(cJSON_GetObjectItem(big, "cdiVersion"), "0.6.0");
	ann = cJSON_AddObjectToObject(big, "annotations");
	for (int i = 0; i < 300; i++) {
		char key[32], value[1024];

		snprintf(key, sizeof(key), "k%d", i);
		memset(value, 'v', sizeof(value) - 1);
		value[sizeof(value) - 1] = '\0';
		cJSON_AddStringToObject(ann, key, value);
	}
	r = cdi_spec_validate(big, tap_fresh());
	ok(r == -EINVAL && strncmp(tap_msg(), "annotations: annotations total", 30) == 0,
	   "oversized annotations: '%s'", tap_msg());

	/* Many annotations are checked for duplicates by sorting. */
	cJSON_DeleteItemFromObject(big, "annotations");
	ann = cJSON_AddObjectToObject(big, "annotations");
	for (int i = 0; i < 40; i++) {
		char key[32];

		snprintf(key, sizeof(key), "example.com/k%d", i == 39 ? 3 : i);
		cJSON_AddStringToObject(ann, key, "v");
	}
	r = cdi_spec_validate(big, tap_fresh());
	ok(r == -EINVAL && strcmp(tap_msg(), "annotations.example.com/k3: duplicate field") == 0,
	   "duplicate among 40 annotations: '%s'", tap_msg());
}

int main(void)
{
	test_good();
	test_bad();
	test_edge_cases();
	tap_fresh();
	return tap_done();
}
