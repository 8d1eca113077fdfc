/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON and YAML output and input: round trips, exact layout, YAML quoting of strings
 * that would read back as something else, YAML 1.1 typing of what we read, and parse
 * errors with line:column.
 */
#include <math.h>
#include <string.h>

#include "cdi-internal.h"
#include "../tap.h"
#include "../tap-error.h"

static cJSON *parse_q(const char *text)
{
	_cleanup_free_ char *s = strdup(text);

	for (char *p = s; p && *p; p++)
		if (*p == '\'')
			*p = '"';
	return s ? cJSON_Parse(s) : NULL;
}

/* clang-format off */
static const char rich_spec[] =
	"{'cdiVersion':'1.1.0','kind':'rdma.example/hca','annotations':{'example.com/a':'0',"
	"'b':'true'},'devices':[{'name':'mlx5_0','annotations':{'x':''},'containerEdits':{"
	"'env':['A=1','B=with space','C=\\'q\\' \\\"dq\\\" \\\\ # : - [x] {y} & * ! | > % @ `'],"
	"'deviceNodes':[{'path':'/dev/infiniband/uverbs0','hostPath':'/dev/infiniband/uverbs0',"
	"'type':'c','major':231,'minor':192,'fileMode':8630,'permissions':'rw','uid':0,'gid':"
	"4294967295}],'mounts':[{'hostPath':'/a','containerPath':'/b','options':['ro','nosuid'],"
	"'type':'bind'}],'hooks':[{'hookName':'createRuntime','path':'/usr/libexec/rdma-cdi/"
	"rdma-cdi-hook','args':['rdma-cdi-hook','--memlock','unlimited'],'env':['X=1'],"
	"'timeout':10}],'netDevices':[{'hostInterfaceName':'eth0','name':'net0'}],'intelRdt':{"
	"'closID':'/','schemata':[],'enableMonitoring':false},'additionalGids':[1,2]}},"
	"{'name':'0','containerEdits':{'env':['N=\\n\\t\\u0001\\u00e9\\u65e5']}}],"
	"'containerEdits':{'deviceNodes':[],'hooks':[]}}";

/* Strings that YAML 1.1 or 1.2 readers could take for something other than a string. */
static const char *const tricky[] = {
	"0",     "1",     "-1",    "+1",    "1.5",   "1e3",    ".5",    "0x10",  "0o10",
	"010",   "1_000", "1:30",  ".inf",  "-.inf", ".nan",   "true",  "false", "True",
	"TRUE",  "yes",   "no",    "Yes",   "NO",    "on",     "off",   "ON",    "y",
	"n",     "Y",     "N",     "null",  "Null",  "NULL",   "~",     "",      " ",
	"=",     "<<",    "- x",   "-",     "? x",   ": x",    "a: b",  "a #b",  "#x",
	"@x",    "`x",    "!x",    "!!str", "&x",    "*x",     "|x",    ">x",    "%x",
	"'x",    "\"x",   "[x]",   "{x}",   "x,y",   " lead",  "trail ", "two\nlines", "tab\t",
	"é",     "日本",  "2001-01-01", "0000:3b:00.0", "---",  "...",   "a:",    "x\\y",
	"\x7f",  "\x01",
};
/* clang-format on */

static void test_round_trip(enum cdi_format fmt, const char *what, const cJSON *spec)
{
	_cleanup_(cJSON_Deletep) cJSON *back = NULL;
	_cleanup_free_ char *buf = NULL, *buf2 = NULL;
	size_t len, len2;
	int r;

	r = cdi_spec_format(spec, fmt, &buf, &len);
	ok(r == 0 && len == strlen(buf) && len > 0 && buf[len - 1] == '\n',
	   "%s: formats with a trailing newline", what);
	if (r < 0)
		return;
	r = cdi_spec_parse(buf, len, fmt, &back, tap_fresh());
	ok(r == 0, "%s: parses back (%s)", what, tap_msg());
	ok(back && cJSON_Compare(spec, back, true), "%s: reads back identical", what);
	if (!back) {
		printf("# %s\n", buf);
		return;
	}
	r = cdi_spec_format(back, fmt, &buf2, &len2);
	ok(r == 0 && len2 == len && memcmp(buf, buf2, len) == 0, "%s: output is deterministic",
	   what);
}

static void test_round_trips(void)
{
	_cleanup_(cJSON_Deletep) cJSON *rich = parse_q(rich_spec);
	_cleanup_(cJSON_Deletep) cJSON *strs = cJSON_CreateObject();
	_cleanup_free_ char *yaml = NULL;
	cJSON *list, *keys;
	size_t len;

	ok(rich != NULL, "rich spec parses as JSON");
	ok(rich && cdi_spec_validate(rich, tap_fresh()) == 0, "rich spec is valid");
	test_round_trip(CDI_FORMAT_JSON, "json rich spec", rich);
	test_round_trip(CDI_FORMAT_YAML, "yaml rich spec", rich);

	list = cJSON_AddArrayToObject(strs, "strings");
	keys = cJSON_AddObjectToObject(strs, "keys");
	for (size_t i = 0; i < ELEMENTSOF(tricky); i++) {
		cJSON_AddItemToArray(list, cJSON_CreateString(tricky[i]));
		cJSON_AddItemToObject(keys, tricky[i], cJSON_CreateString(tricky[i]));
	}
	cJSON_AddItemToObject(strs, "numbers",
			      parse_q("[0,-1,4294967295,9007199254740992,1.5,-0.25,1e-7]"));
	cJSON_AddItemToObject(strs, "others", parse_q("[true,false,null,[],{},[[]],{'a':{}}]"));
	test_round_trip(CDI_FORMAT_JSON, "json tricky strings", strs);
	test_round_trip(CDI_FORMAT_YAML, "yaml tricky strings", strs);

	/* What a reader sees: the tricky ones quoted, plain numbers, readable paths. */
	if (cdi_spec_format(strs, CDI_FORMAT_YAML, &yaml, &len) < 0)
		return;
	ok(strstr(yaml, "\n- \"0\"\n") && strstr(yaml, "\n- \"true\"\n") &&
	       strstr(yaml, "\n- \"null\"\n") && strstr(yaml, "\n- \"\"\n") &&
	       strstr(yaml, "\n- \"~\"\n") && strstr(yaml, "\n- \"yes\"\n") &&
	       strstr(yaml, "\n- \"1.5\"\n") && strstr(yaml, "\n  \"0\": \"0\"\n"),
	   "yaml double-quotes strings that look like numbers, bools or null");
	ok(strstr(yaml, "\n- 0\n") && strstr(yaml, "\n- 4294967295\n") &&
	       strstr(yaml, "\n- 9007199254740992\n") && strstr(yaml, "\n- -0.25\n") &&
	       strstr(yaml, "\n- true\n") && strstr(yaml, "\n- null\n"),
	   "yaml writes numbers, bools and null plain");
}

static void test_layout(void)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = parse_q(
	    "{'cdiVersion':'0.5.0','kind':'rdma.example/hca','devices':[{'name':'mlx5_0',"
	    "'containerEdits':{'deviceNodes':[{'path':'/dev/infiniband/uverbs0','type':'c',"
	    "'major':231,'minor':192}]}},{'name':'0','containerEdits':{'env':['A=1']}}],"
	    "'containerEdits':{'hooks':[{'hookName':'createRuntime','path':'/h','args':[]}]}}");
	_cleanup_free_ char *json = NULL, *yaml = NULL;
	size_t len;

	static const char want_json[] = "{\n"
					"  \"cdiVersion\": \"0.5.0\",\n"
					"  \"kind\": \"rdma.example/hca\",\n"
					"  \"devices\": [\n"
					"    {\n"
					"      \"name\": \"mlx5_0\",\n"
					"      \"containerEdits\": {\n"
					"        \"deviceNodes\": [\n"
					"          {\n"
					"            \"path\": \"/dev/infiniband/uverbs0\",\n"
					"            \"type\": \"c\",\n"
					"            \"major\": 231,\n"
					"            \"minor\": 192\n"
					"          }\n"
					"        ]\n"
					"      }\n"
					"    },\n"
					"    {\n"
					"      \"name\": \"0\",\n"
					"      \"containerEdits\": {\n"
					"        \"env\": [\n"
					"          \"A=1\"\n"
					"        ]\n"
					"      }\n"
					"    }\n"
					"  ],\n"
					"  \"containerEdits\": {\n"
					"    \"hooks\": [\n"
					"      {\n"
					"        \"hookName\": \"createRuntime\",\n"
					"        \"path\": \"/h\",\n"
					"        \"args\": []\n"
					"      }\n"
					"    ]\n"
					"  }\n"
					"}\n";
	static const char want_yaml[] = "cdiVersion: \"0.5.0\"\n"
					"kind: rdma.example/hca\n"
					"devices:\n"
					"- name: mlx5_0\n"
					"  containerEdits:\n"
					"    deviceNodes:\n"
					"    - path: /dev/infiniband/uverbs0\n"
					"      type: c\n"
					"      major: 231\n"
					"      minor: 192\n"
					"- name: \"0\"\n"
					"  containerEdits:\n"
					"    env:\n"
					"    - A=1\n"
					"containerEdits:\n"
					"  hooks:\n"
					"  - hookName: createRuntime\n"
					"    path: /h\n"
					"    args: []\n";

	ok(cdi_spec_format(spec, CDI_FORMAT_JSON, &json, &len) == 0 && strcmp(json, want_json) == 0,
	   "json layout: 2-space indent, key order kept");
	if (json && strcmp(json, want_json) != 0)
		printf("# got:\n%s", json);
	ok(cdi_spec_format(spec, CDI_FORMAT_YAML, &yaml, &len) == 0 && strcmp(yaml, want_yaml) == 0,
	   "yaml layout: block style, no document markers");
	if (yaml && strcmp(yaml, want_yaml) != 0)
		printf("# got:\n%s", yaml);
}

static void test_format_errors(void)
{
	_cleanup_(cJSON_Deletep) cJSON *bad_utf8 = cJSON_CreateObject();
	_cleanup_(cJSON_Deletep) cJSON *nan = cJSON_CreateObject();
	_cleanup_(cJSON_Deletep) cJSON *deep = cJSON_CreateArray();
	char *buf = NULL;
	size_t len;
	cJSON *p = deep;

	cJSON_AddStringToObject(bad_utf8, "s", "\xff\xfe");
	cJSON_AddNumberToObject(nan, "n", NAN);
	for (int i = 0; i < CDI_MAX_DEPTH + 2; i++) {
		cJSON *c = cJSON_CreateArray();

		cJSON_AddItemToArray(p, c);
		p = c;
	}
	for (int f = 0; f < 2; f++) {
		const char *name = f ? "yaml" : "json";

		ok(cdi_spec_format(bad_utf8, (enum cdi_format)f, &buf, &len) == -EINVAL && !buf,
		   "%s: invalid UTF-8 is refused", name);
		ok(cdi_spec_format(nan, (enum cdi_format)f, &buf, &len) == -EINVAL && !buf,
		   "%s: NaN is refused", name);
		ok(cdi_spec_format(deep, (enum cdi_format)f, &buf, &len) == -ELOOP && !buf,
		   "%s: nesting deeper than %d is refused", name, CDI_MAX_DEPTH);
	}
	ok(cdi_spec_format(NULL, CDI_FORMAT_JSON, &buf, &len) == -EINVAL, "NULL tree is refused");
}

/* Parses text as YAML and compares with the JSON (single quotes for double). */
static void yaml_reads_as(const char *yaml, const char *json)
{
	_cleanup_(cJSON_Deletep) cJSON *got = NULL, *want = parse_q(json);
	int r;

	r = cdi_spec_parse(yaml, strlen(yaml), CDI_FORMAT_YAML, &got, tap_fresh());
	ok(r == 0 && want && cJSON_Compare(got, want, true), "yaml %s reads as %s (%s)", yaml, json,
	   tap_msg());
}

static void test_yaml_typing(void)
{
	yaml_reads_as("a: 0", "{'a':0}");
	yaml_reads_as("a: '0'", "{'a':'0'}");
	yaml_reads_as("a: \"0\"", "{'a':'0'}");
	yaml_reads_as("a: -3", "{'a':-3}");
	yaml_reads_as("a: 231", "{'a':231}");
	yaml_reads_as("a: 4294967295", "{'a':4294967295}");
	yaml_reads_as("a: 0x10", "{'a':16}");
	yaml_reads_as("a: 010", "{'a':8}");
	yaml_reads_as("a: 1.5", "{'a':1.5}");
	yaml_reads_as("a: 1e3", "{'a':1000}");
	yaml_reads_as("a: yes", "{'a':true}");
	yaml_reads_as("a: On", "{'a':true}");
	yaml_reads_as("a: n", "{'a':false}");
	yaml_reads_as("a: FALSE", "{'a':false}");
	yaml_reads_as("a: ~", "{'a':null}");
	yaml_reads_as("a:", "{'a':null}");
	yaml_reads_as("a: Null", "{'a':null}");
	yaml_reads_as("a: !!str 5", "{'a':'5'}");
	yaml_reads_as("a: ! 5", "{'a':'5'}");
	yaml_reads_as("a: 0000:3b:00.0", "{'a':'0000:3b:00.0'}");
	yaml_reads_as("a: 1_000", "{'a':'1_000'}");
	yaml_reads_as("a: mlx5_0", "{'a':'mlx5_0'}");
	yaml_reads_as("a: /dev/x", "{'a':'/dev/x'}");
	yaml_reads_as("a: |\n  x\n  y\n", "{'a':'x\\ny\\n'}");
	yaml_reads_as("a: >-\n  x\n  y\n", "{'a':'x y'}");
	yaml_reads_as("{a: [1, 'b', {c: d}], e: []}", "{'a':[1,'b',{'c':'d'}],'e':[]}");
	yaml_reads_as("---\na: 1\n...\n", "{'a':1}");
	yaml_reads_as("1: x\ntrue: z\nk: y", "{'1':'x','true':'z','k':true}");
	yaml_reads_as("- a\n- 0\n", "['a',0]");
	yaml_reads_as("\xef\xbb\xbf"
		      "a: b",
		      "{'a':'b'}");
}

/* Parsing fails with -EBADMSG and a message starting with want. */
static void parse_fails(enum cdi_format fmt, const char *text, size_t len, const char *want)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	char shown[64];
	int r;

	r = cdi_spec_parse(text, len, fmt, &spec, tap_fresh());
	ok(r == -EBADMSG && !spec && strncmp(tap_msg(), want, strlen(want)) == 0 &&
	       !strchr(tap_msg(), '\n'),
	   "%s %s: '%s' (want '%s...')", fmt == CDI_FORMAT_JSON ? "json" : "yaml",
	   cdi_quote(shown, sizeof(shown), text), tap_msg(), want);
}

#define YAML_FAILS(text, want) parse_fails(CDI_FORMAT_YAML, text, sizeof(text) - 1, want)
#define JSON_FAILS(text, want) parse_fails(CDI_FORMAT_JSON, text, sizeof(text) - 1, want)

static void test_parse_errors(void)
{
	char deep[512];
	size_t n = 0;

	YAML_FAILS("a: &x 1\nb: *x\n", "1:4: anchors are not supported");
	YAML_FAILS("a: [1]\nb: *x\n", "2:4: aliases are not supported");
	YAML_FAILS("x: &a {b: 1}\n", "1:4: anchors are not supported");
	YAML_FAILS("a: 1\nb: 2\na: 3\n", "3:1: duplicate key \"a\"");
	YAML_FAILS("devices:\n- name: x\n  name: y\n", "3:3: duplicate key \"name\"");
	YAML_FAILS("<<: {a: 1}\n", "1:1: merge keys are not supported");
	YAML_FAILS("[a]: 1\n", "1:1: mapping keys must be strings");
	YAML_FAILS("a: !!binary aGVsbG8=\n", "1:4: unsupported tag tag:yaml.org,2002:binary");
	YAML_FAILS("a: !foo {}\n", "1:4: unsupported tag !foo");
	YAML_FAILS("a: .inf\n", "1:4: infinity and NaN are not supported");
	YAML_FAILS("a: 1\n---\nb: 2\n", "2:1: more than one document");
	YAML_FAILS("", "1:1: empty document");
	YAML_FAILS("# only a comment\n", "2:1: empty document");
	YAML_FAILS("a: [1, 2\n", "2:1: did not find expected ',' or ']'");
	YAML_FAILS("a: b: c\n", "1:5: mapping values are not allowed");
	YAML_FAILS("a:\n\t- b\n", "2:1: found character that cannot start any token");
	YAML_FAILS("a: \"x\\0y\"\n", "1:4: NUL character in a string");
	YAML_FAILS("a: x\0y\n", "1:5: control character 0x00");
	YAML_FAILS("a: b\nc: \x1b[0m\n", "2:4: control character 0x1b");
	YAML_FAILS("a: \x7f\n", "1:4: control character 0x7f");
	YAML_FAILS("a: \xff\n", "1:4: invalid UTF-8");
	YAML_FAILS("a: b\nc: \xc0\xaf\n", "2:4: invalid UTF-8");
	for (int i = 0; i < CDI_MAX_DEPTH + 1; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	parse_fails(CDI_FORMAT_YAML, deep, n, "1:65: nested more than 64 levels");
	memset(deep, ' ', sizeof(deep));
	n = 0;
	for (int i = 0; i < CDI_MAX_DEPTH + 1; i++) {
		memcpy(deep + n, "- ", 2);
		n += 2;
	}
	memcpy(deep + n, "x\n", 3);
	parse_fails(CDI_FORMAT_YAML, deep, n + 2, "1:129: nested more than 64 levels");

	JSON_FAILS("{\"a\": }", "1:7: invalid JSON");
	JSON_FAILS("{\n  \"a\": 1,\n  \"b\": x\n}", "3:8: invalid JSON");
	JSON_FAILS("{\"a\": 1", "1:8: unexpected end of JSON");
	JSON_FAILS("{\"a\": [1,\n 2", "2:3: unexpected end of JSON");
	JSON_FAILS("{\"a\": \"x", "1:9: unexpected end of JSON");
	JSON_FAILS("", "1:1: unexpected end of JSON");
	JSON_FAILS("{} x", "1:4: unexpected data after the JSON value");
	JSON_FAILS("{}\n{}", "2:1: unexpected data after the JSON value");
	JSON_FAILS("{\"a\": \"x\\u0000y\"}", "1:9: \\u0000 in a string");
	JSON_FAILS("{\"a\": \"x\0y\"}", "1:9: NUL byte");
	JSON_FAILS("{\"a\": \"\xc3\x28\"}", "1:8: invalid UTF-8");
	JSON_FAILS("{\"a\": \"\xed\xa0\x80\"}", "1:8: invalid UTF-8");
	JSON_FAILS("{\"a\": 1, \"a\": 2}", "a: duplicate key");
	JSON_FAILS("{\"d\": [{\"n\": 1}, {\"n\": 1, \"x\": 1, \"n\": 2}]}",
		   "d[1].n: duplicate key");
	/* Large objects are checked by sorting: still found, still named. */
	JSON_FAILS("{\"a\": {\"k0\":0,\"k1\":0,\"k2\":0,\"k3\":0,\"k4\":0,\"k5\":0,\"k6\":0,"
		   "\"k7\":0,\"k8\":0,\"k9\":0,\"k10\":0,\"k11\":0,\"k12\":0,\"k13\":0,\"k14\":0,"
		   "\"k15\":0,\"k16\":0,\"k7\":1}}",
		   "a.k7: duplicate key");
	JSON_FAILS("[0, {\"a b\": 1, \"a b\": 2}]", "[1].\"a b\": duplicate key");
	n = 0;
	for (int i = 0; i < CDI_MAX_DEPTH + 1; i++)
		deep[n++] = '[';
	deep[n] = '\0';
	parse_fails(CDI_FORMAT_JSON, deep, n, "1:65: nested more than 64 levels");
}

static void test_parse_misc(void)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	static const char text[] = "{\"a\": \"\\\"[{\\\\\\\"} ";
	int r;

	/* Brackets inside strings do not count towards the depth. */
	r = cdi_spec_parse(
	    "{\"a\": \"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}", 75,
	    CDI_FORMAT_JSON, &spec, tap_fresh());
	ok(r == 0, "json: brackets in strings are not nesting (%s)", tap_msg());
	cJSON_Delete(TAKE_PTR(spec));
	/* Unterminated string with escapes: still a clean error. */
	r = cdi_spec_parse(text, sizeof(text) - 1, CDI_FORMAT_JSON, &spec, tap_fresh());
	ok(r == -EBADMSG && strcmp(tap_msg(), "1:18: unexpected end of JSON") == 0,
	   "json: unterminated string fails cleanly (%s)", tap_msg());
	/* Input need not be NUL-terminated: only len bytes are read. */
	r = cdi_spec_parse("{}garbage", 2, CDI_FORMAT_JSON, &spec, tap_fresh());
	ok(r == 0 && cJSON_IsObject(spec), "json: only len bytes are parsed");
	cJSON_Delete(TAKE_PTR(spec));
	r = cdi_spec_parse("a: 1\nb: [", 5, CDI_FORMAT_YAML, &spec, tap_fresh());
	ok(r == 0 && cJSON_IsObject(spec), "yaml: only len bytes are parsed");
	cJSON_Delete(TAKE_PTR(spec));
	r = cdi_spec_parse("{", (size_t)CDI_SPEC_MAX_BYTES + 1, CDI_FORMAT_JSON, &spec,
			   tap_fresh());
	ok(r == -EFBIG && !spec, "input over CDI_SPEC_MAX_BYTES is refused unread (%s)", tap_msg());
	r = cdi_spec_parse("{x", 2, CDI_FORMAT_JSON, &spec, tap_fresh());
	ok(r == -EBADMSG && tap_e && tap_e->code == EBADMSG, "the error carries the code (%s)",
	   tap_msg());
	r = cdi_spec_parse("a: [", 4, CDI_FORMAT_YAML, &spec, NULL);
	ok(r == -EBADMSG, "no error object is fine");
}

static void test_file_names(void)
{
	_cleanup_free_ char *j = cdi_spec_file_name("rdma.example/hca", CDI_FORMAT_JSON);
	_cleanup_free_ char *y = cdi_spec_file_name("rdma.example/hca", CDI_FORMAT_YAML);
	enum cdi_format f = CDI_FORMAT_YAML;

	ok(j && strcmp(j, "rdma.example-hca.json") == 0, "json file name: %s", j);
	ok(y && strcmp(y, "rdma.example-hca.yaml") == 0, "yaml file name: %s", y);
	ok(cdi_spec_file_name(NULL, CDI_FORMAT_JSON) == NULL, "no kind, no file name");
	ok(cdi_format_from_file_name("a-b.json", &f) == 0 && f == CDI_FORMAT_JSON,
	   "*.json is JSON");
	ok(cdi_format_from_file_name("a-b.yaml", &f) == 0 && f == CDI_FORMAT_YAML,
	   "*.yaml is YAML");
	ok(cdi_format_from_file_name("a-b.yml", &f) == -EINVAL, "*.yml is not read by runtimes");
	ok(cdi_format_from_file_name("a.json.tmp", &f) == -EINVAL, "*.json.tmp is not a spec");
	ok(cdi_format_from_file_name(".a.json.Xy12zZ", &f) == -EINVAL,
	   "our temp names are not specs");
	ok(cdi_format_from_file_name("a.JSON", &f) == -EINVAL, "suffixes are case-sensitive");
	ok(cdi_format_from_file_name(NULL, &f) == -EINVAL, "NULL name");
}

static void test_plain_safe(void)
{
	static const char *const safe[] = {"mlx5_0",
					   "/dev/infiniband/uverbs0",
					   "PATH=/bin",
					   "rdma.example/hca",
					   "createRuntime",
					   "c",
					   "_x"};
	static const char *const unsafe[] = {"0", "y",	 "Yes", "NULL", "tRuE", "-x", ".x",
					     "=", "a b", "a:b", "a#",	"",	"é",  "~"};

	for (size_t i = 0; i < ELEMENTSOF(safe); i++)
		ok(cdi_yaml_plain_is_safe(safe[i]), "'%s' may be plain", safe[i]);
	for (size_t i = 0; i < ELEMENTSOF(unsafe); i++)
		ok(!cdi_yaml_plain_is_safe(unsafe[i]), "'%s' is quoted", unsafe[i]);
}

int main(void)
{
	test_round_trips();
	test_layout();
	test_format_errors();
	test_yaml_typing();
	test_parse_errors();
	test_parse_misc();
	test_file_names();
	test_plain_safe();
	tap_fresh();
	return tap_done();
}
