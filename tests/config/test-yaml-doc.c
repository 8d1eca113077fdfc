/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/yaml-doc: the one YAML document reader of the config file and the kubeconfig.
 * What a caller relies on: the tree and its positions, the bounds and refusals (anchors,
 * aliases, tags, depth, nodes, a second document), and the typed reads with messages
 * that name FILE:LINE:COLUMN and the path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "yaml-doc.h"
#include "../tap-error.h"

static const struct ydoc doc = {.file = "t.yaml", .err = &tap_e};

/* The document to call with, its error cleared: each call's message is its own. */
static const struct ydoc *fresh(void)
{
	tap_fresh();
	return &doc;
}
static const struct ydoc_limits lim = {.max_depth = 4, .max_nodes = 50, .what = "a test"};

static struct ydoc_node *load(const char *text)
{
	struct ydoc_node *root = NULL;
	int r;

	r = ydoc_load(fresh(), text, strlen(text), &lim, &root);
	if (r < 0)
		printf("#   load failed: %d %s\n", r, tap_msg());
	return root;
}

/* The text refused with r and exactly msg. */
static void refused(const struct ydoc_limits *l, const char *text, int r, const char *msg,
		    const char *what)
{
	struct ydoc_node *root = (struct ydoc_node *)&root;
	int got;

	got = ydoc_load(fresh(), text, strlen(text), l, &root);
	ok(got == r && root == (struct ydoc_node *)&root, "%s: refused (%d)", what, got);
	EQ_STR(tap_msg(), msg, what);
}

static void test_tree(void)
{
	struct ydoc_node *root = load("a: 1\nlist:\n  - x\n  - 'y'\n\"q\\0z\": {}\n");
	const struct ydoc_node *k = NULL, *v;

	ok(root && root->type == YDOC_MAP && root->n_kids == 6, "a mapping of three pairs");
	if (!root)
		return;
	v = ydoc_get(root, "list", &k);
	ok(v && v->type == YDOC_SEQ && v->n_kids == 2, "list is a sequence of two");
	ok(k && k->line == 2 && k->column == 1, "the key's place is 2:1");
	if (v && v->n_kids == 2) {
		ok(v->kids[0]->line == 3 && v->kids[0]->column == 5 && v->kids[0]->plain,
		   "an item keeps its place (3:5) and its plain style");
		ok(!v->kids[1]->plain && !strcmp(v->kids[1]->value, "y"), "a quoted item");
	}
	ok(root->kids[4]->len == 3 && !memcmp(root->kids[4]->value, "q\0z", 3),
	   "a scalar holding a NUL keeps its length");
	ok(ydoc_get(root, "q", NULL) == NULL, "a key with a NUL is not its prefix");
	ok(ydoc_get(root, "nope", NULL) == NULL, "an absent key is NULL");
	ok(ydoc_get(root->kids[1], "a", NULL) == NULL, "a scalar has no keys");
	ydoc_node_free(root);

	root = (struct ydoc_node *)&root;
	ok(ydoc_load(fresh(), "# nothing\n", 10, &lim, &root) == 0 && root == NULL,
	   "a stream without a document gives no root");
	ok(ydoc_load(fresh(), "", 0, &lim, &root) == 0 && root == NULL, "so does empty text");
}

static void test_refusals(void)
{
	struct ydoc_limits tags = lim, bare = lim;
	struct ydoc_node *root;
	char big[512], want[128];
	size_t o = 0;

	refused(&lim, "a: [1\n", -EBADMSG,
		"t.yaml:2:1: invalid YAML: did not find expected ',' or ']', while parsing a flow "
		"sequence starting at line 1",
		"a syntax error names libyaml's reason and place");
	refused(&lim, "a: b\nc: \xff\n", -EBADMSG,
		"t.yaml:2:4: invalid YAML: invalid leading UTF-8 octet",
		"bad UTF-8 is placed at its byte, not at 1:1");
	refused(&lim, "a: &x 1\n", -EINVAL, "t.yaml:1:4: YAML anchors are not accepted (&\"x\")",
		"an anchor is refused");
	refused(&lim, "a: *x\n", -EINVAL, "t.yaml:1:4: YAML aliases are not accepted",
		"an alias is refused");
	refused(&lim, "a: !!int 1\n", -EINVAL,
		"t.yaml:1:4: YAML tags are not accepted (\"tag:yaml.org,2002:int\")",
		"a tag is refused by default");
	tags.allow_tags = true;
	tags.path = "yaml";
	root = NULL;
	ok(ydoc_load(fresh(), "a: !!str 1\n", 11, &tags, &root) == 0 && root &&
	       !strcmp(root->kids[1]->value, "1"),
	   "allow_tags reads a tagged scalar as its text");
	ydoc_node_free(root);
	refused(&tags, "a: &x 1\n", -EINVAL,
		"t.yaml:1:4: yaml: YAML anchors are not accepted (&\"x\")",
		"allow_tags still refuses anchors; path prefixes the reader's messages");
	refused(&lim, "a: 1\n---\nb: 2\n", -EINVAL,
		"t.yaml:2:1: more than one YAML document (a test is one document)",
		"a second document is refused, naming what the file is");
	bare.what = NULL;
	refused(&bare, "a: 1\n---\nb: 2\n", -EINVAL, "t.yaml:2:1: more than one YAML document",
		"without what, no parenthesis");

	/* Depth: max_depth collections nest, one more does not. */
	root = load("a: [[[1]]]\n");
	ok(root != NULL, "4 levels load with max_depth 4");
	ydoc_node_free(root);
	refused(&lim, "a: [[[[1]]]]\n", -EINVAL, "t.yaml:1:7: nested deeper than 4 levels",
		"5 levels are refused at the fifth");

	/* Nodes: the root mapping, then key and value per pair. */
	o += (size_t)snprintf(big + o, sizeof(big) - o, "{");
	for (int i = 0; i < 24; i++)
		o += (size_t)snprintf(big + o, sizeof(big) - o, "%sk%d: v", i ? ", " : "", i);
	snprintf(big + o, sizeof(big) - o, "}\n");
	root = load(big);
	ok(root && root->n_kids == 48, "49 nodes load with max_nodes 50");
	ydoc_node_free(root);
	snprintf(big + o, sizeof(big) - o, ", k24: v}\n");
	snprintf(want, sizeof(want), "t.yaml:1:%zu: more than 50 YAML nodes",
		 (size_t)(strrchr(big, 'v') - big) + 1);
	refused(&lim, big, -EINVAL, want,
		"the 51st node (the last value) is refused where it stands");
}

static void test_messages(void)
{
	struct ydoc_node at = {.line = 3, .column = 7};
	struct ydoc noerr = {.file = "t.yaml"};

	ok(ydoc_fail(fresh(), -EINVAL, &at, "pools[0]", "bad %d", 1) == -EINVAL, "returns r");
	EQ_STR(tap_msg(), "t.yaml:3:7: pools[0]: bad 1", "FILE:LINE:COL: PATH: message");
	ydoc_fail(fresh(), -ENOMEM, NULL, NULL, "out of memory");
	EQ_STR(tap_msg(), "t.yaml: out of memory", "no node: no position; no path: no PATH");
	ydoc_fail(fresh(), -EINVAL, &at, "", "x");
	EQ_STR(tap_msg(), "t.yaml:3:7: x", "an empty path is left out");
	ok(ydoc_fail(&noerr, -EIO, &at, NULL, "x") == -EIO, "a NULL err is fine");
	ok(tap_e && tap_e->code == EINVAL, "the error carries the code");
	ydoc_fail(&doc, -ENOENT, &at, NULL, "second");
	EQ_STR(tap_msg(), "t.yaml:3:7: x", "a second failure keeps the first cause");

}

static void test_values(void)
{
	struct ydoc_node *root =
	    load("n1: ~\nn2: null\nn3: NULL\nn4:\nq: 'null'\nt: true\ny: yes\nqt: \"true\"\n"
		 "i: -12\nz: 010\nbig: 123456789012345678901234\ne: ''\nl: [1]\nm: {}\n"
		 "nul: \"a\\0b\"\n");
	const char *s = NULL;
	bool b = false;
	long long v = 0;
	int r;
	char g[160];

	ok(root != NULL, "the values document loads");
	if (!root)
		return;
	ok(ydoc_is_null(ydoc_get(root, "n1", NULL)) && ydoc_is_null(ydoc_get(root, "n2", NULL)) &&
	       ydoc_is_null(ydoc_get(root, "n3", NULL)) &&
	       ydoc_is_null(ydoc_get(root, "n4", NULL)) && ydoc_is_null(NULL),
	   "~, null, NULL, nothing and absent are null");
	ok(!ydoc_is_null(ydoc_get(root, "q", NULL)), "a quoted 'null' is a string");
	EQ_STR(ydoc_kind(ydoc_get(root, "l", NULL)), "a list", "kind of a list");
	EQ_STR(ydoc_kind(ydoc_get(root, "m", NULL)), "a mapping", "kind of a mapping");
	EQ_STR(ydoc_got(g, sizeof(g), ydoc_get(root, "qt", NULL)), "got the quoted string \"true\"",
	       "got names a quoted string as such");
	EQ_STR(ydoc_got(g, sizeof(g), ydoc_get(root, "y", NULL)), "got \"yes\"", "got a plain one");

	ok(ydoc_bool(fresh(), ydoc_get(root, "t", NULL), "t", false, &b) == 0 && b, "true is true");
	ok(ydoc_bool(fresh(), ydoc_get(root, "y", NULL), "y", false, &b) == -EINVAL,
	   "yes is no bool by default");
	EQ_STR(tap_msg(), "t.yaml:7:4: y: expected true or false, got \"yes\"", "the bool message");
	b = false;
	ok(ydoc_bool(fresh(), ydoc_get(root, "y", NULL), "y", true, &b) == 0 && b,
	   "yaml11 reads yes as true");
	ok(ydoc_bool(fresh(), ydoc_get(root, "qt", NULL), "qt", true, &b) == -EINVAL,
	   "a quoted \"true\" is no bool, even with yaml11");

	ok(ydoc_int(fresh(), ydoc_get(root, "i", NULL), "i", -100, 100, &v) == 0 && v == -12,
	   "-12 is an integer");
	ok(ydoc_int(fresh(), ydoc_get(root, "i", NULL), "i", 0, 100, &v) == -EINVAL, "below min");
	EQ_STR(tap_msg(), "t.yaml:9:4: i: must be between 0 and 100, got -12", "the range message");
	ok(ydoc_int(fresh(), ydoc_get(root, "z", NULL), "z", 0, 100, &v) == -EINVAL,
	   "a leading zero is refused (octal or decimal is not guessed)");
	EQ_STR(tap_msg(), "t.yaml:10:4: z: expected an integer, got \"010\"",
	       "the integer message");
	r = ydoc_int(fresh(), ydoc_get(root, "big", NULL), "big", 0, 1000, &v);
	ok(r == -EINVAL && strstr(tap_msg(), "must be between 0 and 1000"),
	   "a 24-digit number is out of range, not wrapped (%s)", tap_msg());
	ok(ydoc_int(fresh(), ydoc_get(root, "qt", NULL), "qt", 0, 1, &v) == -EINVAL,
	   "a quoted scalar is no integer");

	ok(ydoc_string(fresh(), ydoc_get(root, "e", NULL), "e", 10, &s) == 0 && s && !*s,
	   "an empty quoted string is a string");
	ok(ydoc_string(fresh(), ydoc_get(root, "q", NULL), "q", 3, &s) == -EINVAL, "over max");
	EQ_STR(tap_msg(), "t.yaml:5:4: q: longer than 3 characters", "the length message");
	ok(ydoc_string(fresh(), ydoc_get(root, "n1", NULL), "n1", 10, &s) == -EINVAL, "null");
	EQ_STR(tap_msg(), "t.yaml:1:5: n1: expected a string, got an empty value",
	       "the null message");
	ok(ydoc_string(fresh(), ydoc_get(root, "l", NULL), "l", 10, &s) == -EINVAL, "a list");
	EQ_STR(tap_msg(), "t.yaml:13:4: l: expected a string, got a list", "the list message");
	ok(ydoc_string(fresh(), ydoc_get(root, "nul", NULL), "nul", 10, &s) == -EINVAL, "a NUL");
	EQ_STR(tap_msg(), "t.yaml:15:6: nul: contains a NUL character", "the NUL message");
	ydoc_node_free(root);
}

static void map_refused(const char *text, const char *msg, const char *what)
{
	struct ydoc_node *root = load(text);

	ok(root && ydoc_map(fresh(), root, "m") == -EINVAL, "%s: refused", what);
	EQ_STR(tap_msg(), msg, what);
	ydoc_node_free(root);
}

static void test_map(void)
{
	struct ydoc_limits many = {.max_depth = 4, .max_nodes = 200000};
	struct ydoc_node *root;
	char *text;
	size_t o = 0;

	root = load("a: 1\nb: 2\n\"a\\0b\": 3\n\"a\\0c\": 4\n");
	ok(root && ydoc_map(fresh(), root, NULL) == 0, "distinct keys pass (NUL bytes count)");
	ydoc_node_free(root);
	map_refused("- a\n", "t.yaml:1:1: m: expected a mapping, got a list", "a list");
	map_refused("? [a]\n: 1\n", "t.yaml:1:3: m: a mapping key must be a string, got a list",
		    "a list key");
	map_refused("~: 1\n", "t.yaml:1:1: m: a mapping key must be a string, got an empty value",
		    "a null key");
	map_refused("a: 1\nb: 2\nb: 3\na: 4\n",
		    "t.yaml:3:1: m: duplicate key b (first at line 2, column 1)",
		    "the duplicate met first is named, with the first place");
	map_refused("\"a b\": 1\n'a b': 2\n",
		    "t.yaml:2:1: m: duplicate key \"a b\" (first at line 1, column 1)",
		    "a key that needs quotes is quoted");

	/* 60,000 keys, the last one repeating the first. */
	text = malloc(60001 * 16);
	if (!text)
		abort();
	for (int i = 0; i < 60000; i++)
		o += (size_t)sprintf(text + o, "k%d: v\n", i);
	root = NULL;
	ok(ydoc_load(fresh(), text, o, &many, &root) == 0 && root &&
	       ydoc_map(fresh(), root, NULL) == 0,
	   "60,000 distinct keys pass");
	ydoc_node_free(root);
	o += (size_t)sprintf(text + o, "k0: again\n");
	root = NULL;
	ok(ydoc_load(fresh(), text, o, &many, &root) == 0 && root &&
	       ydoc_map(fresh(), root, NULL) == -EINVAL,
	   "a duplicate among 60,001 keys is found");
	EQ_STR(tap_msg(), "t.yaml:60001:1: duplicate key k0 (first at line 1, column 1)",
	       "and named at its place");
	ydoc_node_free(root);
	free(text);
}

int main(void)
{
	test_tree();
	test_refusals();
	test_messages();
	test_values();
	test_map();
	tap_fresh();
	return tap_done();
}
