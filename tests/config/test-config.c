/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config file: valid files, every error message (file:line:column, key, reason),
 * cfg_equal for reload, cfg_load on odd files, pool selection on the checked-in fixture
 * nodes, the device-ID bound and the `config check` report.
 * Usage: test-config TESTS_DATA_DIR (TAP on stdout).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "config-internal.h"
#include "config.h"
#include "../tap-error.h"

static const char *data_dir;

static struct cfg *parse_ok(const char *yaml, const char *what)
{
	struct cfg *c = NULL;
	struct rc_error *e = NULL;
	int r = cfg_parse(yaml, strlen(yaml), "t.yaml", &c, &e);
	const char *err = tap_err(&e);

	if (!ok(r == 0 && c, "%s: parses", what))
		printf("#   r = %d, err: %s\n", r, err);
	return c;
}

static void parse_err(const char *yaml, int want_r, const char *want, const char *what)
{
	struct cfg *c = NULL;
	struct rc_error *e = NULL;
	int r = cfg_parse(yaml, strlen(yaml), "t.yaml", &c, &e);
	const char *err = tap_err(&e);

	if (!ok(r == want_r && !c, "%s: fails with %d", what, want_r))
		printf("#   r = %d\n", r);
	if (!ok(!strcmp(err, want), "%s: message", what)) {
		printf("#   want: %s\n", want);
		printf("#   got:  %s\n", err);
	}
	cfg_free(c);
}

/* ---- valid files -------------------------------------------------------------------- */

static const char example[] = "kind: rdma.example/hca        # CDI kind\n"
			      "specDir: /var/run/cdi\n"
			      "withMad: false\n"
			      "memlock: unlimited\n"
			      "pools:\n"
			      "  - resourceName: rdma.example/ib\n"
			      "    mode: shared              # exclusive | shared\n"
			      "    sharedSlots: 16           # shared mode only: pods per HCA\n"
			      "    ncclEnv: true\n"
			      "    selectors:\n"
			      "      linkLayers: [InfiniBand, eth]\n"
			      "      vendors: [\"15b3\"]\n"
			      "      deviceIDs: [\"0x1021\", 101D]\n"
			      "      drivers: [mlx5_core]\n"
			      "      names: [\"mlx5_*\"]\n"
			      "      netdevs: [\"ens1f*\"]\n"
			      "      pciAddresses: [\"0000:3b:00.0\"]\n"
			      "      pfNames: [\"ens1f0\"]\n"
			      "      vf: true\n"
			      "      numaNodes: [0, 1023]\n"
			      "  - resourceName: rdma.example/roce\n";

static void test_example(void)
{
	struct cfg *c = parse_ok(example, "the issue's example");
	const struct cfg_selectors *s;

	if (!c)
		return;
	EQ_STR(c->kind, "rdma.example/hca", "kind");
	EQ_STR(c->spec_dir, "/var/run/cdi", "specDir");
	EQ_INT(c->with_mad, 0, "withMad");
	EQ_STR(c->memlock, "unlimited", "memlock");
	ok(c->pools_set, "pools_set");
	EQ_INT(c->n_pools, 2, "two pools");
	EQ_STR(c->pools[0].resource_name, "rdma.example/ib", "pool 0 resource");
	EQ_INT(c->pools[0].mode, CFG_MODE_SHARED, "pool 0 shared");
	EQ_INT(c->pools[0].shared_slots, 16, "pool 0 sharedSlots");
	ok(c->pools[0].nccl_env, "pool 0 ncclEnv");
	EQ_INT(c->pools[0].line, 6, "pool 0 line");
	EQ_INT(c->pools[0].column, 5, "pool 0 column");
	s = &c->pools[0].sel;
	EQ_INT(s->n_link_layers, 2, "linkLayers count");
	EQ_STR(s->link_layers[0], "InfiniBand", "linkLayers[0]");
	EQ_STR(s->link_layers[1], "Ethernet", "linkLayers[1] normalised from eth");
	ok(s->n_vendors == 1 && s->vendors[0] == 0x15b3, "vendors");
	ok(s->n_device_ids == 2 && s->device_ids[0] == 0x1021 && s->device_ids[1] == 0x101d,
	   "deviceIDs with 0x and upper case");
	ok(s->n_drivers == 1 && !strcmp(s->drivers[0], "mlx5_core"), "drivers");
	ok(s->n_names == 1 && !strcmp(s->names[0], "mlx5_*"), "names");
	ok(s->n_netdevs == 1 && !strcmp(s->netdevs[0], "ens1f*"), "netdevs");
	ok(s->n_pci_addresses == 1 && !strcmp(s->pci_addresses[0], "0000:3b:00.0"), "pciAddresses");
	ok(s->n_pf_names == 1 && !strcmp(s->pf_names[0], "ens1f0"), "pfNames");
	EQ_INT(s->vf, 1, "vf");
	ok(s->n_numa_nodes == 2 && s->numa_nodes[0] == 0 && s->numa_nodes[1] == 1023, "numaNodes");
	EQ_INT(c->pools[1].mode, CFG_MODE_EXCLUSIVE, "pool 1 defaults to exclusive");
	EQ_INT(c->pools[1].shared_slots, 0, "pool 1 has no slots");
	ok(!c->pools[1].nccl_env, "pool 1 ncclEnv defaults to false");
	EQ_INT(c->pools[1].sel.vf, -1, "pool 1 vf unset");
	ok(c->pools[1].sel.n_link_layers + c->pools[1].sel.n_vendors + c->pools[1].sel.n_names == 0,
	   "pool 1 has no selectors");
	cfg_free(c);
}

static void test_minimal_and_defaults(void)
{
	static const char *const empties[] = {"", "# only a comment\n", "---\n", "~\n",
					      "\xef\xbb\xbf"};
	struct cfg *def = NULL, *c;

	ok(cfg_default(&def) == 0 && def, "cfg_default");
	if (!def)
		return;
	ok(!def->kind && !def->spec_dir && def->with_mad == -1 && !def->memlock,
	   "defaults set nothing");
	ok(def->n_pools == 1 && !def->pools_set, "one default pool, pools_set false");
	EQ_STR(def->pools[0].resource_name, "rdma.example/hca", "default pool resource");
	EQ_INT(def->pools[0].mode, CFG_MODE_EXCLUSIVE, "default pool exclusive");
	EQ_INT(def->pools[0].sel.vf, -1, "default pool selects PFs and VFs");

	for (size_t i = 0; i < ELEMENTSOF(empties); i++) {
		c = parse_ok(empties[i], "empty document");
		ok(cfg_equal(c, def), "empty document %zu equals cfg_default", i);
		cfg_free(c);
	}

	c = parse_ok("pools:\n- resourceName: acme.com/nic\n", "minimal pool");
	if (c) {
		ok(c->pools_set && c->n_pools == 1, "minimal: one pool from the file");
		EQ_STR(c->pools[0].resource_name, "acme.com/nic", "minimal: resource");
		ok(!c->kind && c->with_mad == -1, "minimal: nothing else set");
		EQ_INT(c->pools[0].line, 2, "minimal: pool line");
		EQ_INT(c->pools[0].column, 3, "minimal: pool column");
	}
	cfg_free(c);

	c = parse_ok("kind: Acme.Corp/nic_2\nwithMad: True\nmemlock: 64M\n", "settings only");
	if (c) {
		EQ_STR(c->kind, "Acme.Corp/nic_2", "kind with dot in vendor");
		EQ_INT(c->with_mad, 1, "withMad True");
		EQ_STR(c->memlock, "64M", "memlock 64M");
		ok(!c->pools_set && c->n_pools == 1 &&
		       !strcmp(c->pools[0].resource_name, CFG_DEFAULT_RESOURCE),
		   "no pools key: the default pool");
	}
	cfg_free(c);

	c = parse_ok("{pools: [{resourceName: a.io/x, mode: shared, sharedSlots: 1000, "
		     "selectors: {linkLayers: [IB, ETHERNET, Ether, infiniband], vf: false}}]}",
		     "flow style");
	if (c) {
		EQ_INT(c->pools[0].shared_slots, 1000, "sharedSlots at the maximum");
		ok(c->pools[0].sel.n_link_layers == 4 &&
		       !strcmp(c->pools[0].sel.link_layers[0], "InfiniBand") &&
		       !strcmp(c->pools[0].sel.link_layers[1], "Ethernet") &&
		       !strcmp(c->pools[0].sel.link_layers[2], "Ethernet") &&
		       !strcmp(c->pools[0].sel.link_layers[3], "InfiniBand"),
		   "link layer aliases are case-insensitive");
		EQ_INT(c->pools[0].sel.vf, 0, "vf false");
	}
	cfg_free(c);
	cfg_free(def);
}

/* ---- errors ------------------------------------------------------------------------- */

struct bad {
	const char *what, *yaml;
	int r;
	const char *msg;
};

#define POOL "pools:\n  - resourceName: rdma.example/ib\n"
#define SEL POOL "    selectors:\n"

static const struct bad bads[] = {
    /* YAML syntax, from libyaml's marks */
    {"unclosed flow list", "pools: [a, b\n", -EBADMSG,
     "t.yaml:2:1: invalid YAML: did not find expected ',' or ']', while parsing a flow "
     "sequence starting at line 1"},
    {"bad indentation", "kind: a/b\n  withMad: true\n", -EBADMSG,
     "t.yaml:2:10: invalid YAML: mapping values are not allowed in this context"},
    {"tab indentation", "pools:\n\t- resourceName: a/b\n", -EBADMSG,
     "t.yaml:2:1: invalid YAML: found character that cannot start any token, while scanning "
     "for the next token starting at line 2"},
    {"invalid UTF-8", "kind: aa/bb\nmemlock: \xff\n", -EBADMSG,
     "t.yaml:2:10: invalid YAML: invalid leading UTF-8 octet"},
    /* document shape */
    {"a list document", "- a\n- b\n", -EINVAL,
     "t.yaml:1:1: a config is a mapping of settings (kind, specDir, withMad, memlock, pools), "
     "got a list"},
    {"a scalar document", "hello\n", -EINVAL,
     "t.yaml:1:1: a config is a mapping of settings (kind, specDir, withMad, memlock, pools), "
     "got a scalar"},
    {"two documents", "kind: aa/bb\n---\nkind: cc/dd\n", -EINVAL,
     "t.yaml:2:1: more than one YAML document (a config is one document)"},
    {"anchor", "kind: &k aa/bb\n", -EINVAL, "t.yaml:1:7: YAML anchors are not accepted (&\"k\")"},
    {"alias (billion laughs)", "a: &a [x, x]\nb: [*a, *a]\n", -EINVAL,
     "t.yaml:1:4: YAML anchors are not accepted (&\"a\")"},
    {"alias alone", "kind: *x\n", -EINVAL, "t.yaml:1:7: YAML aliases are not accepted"},
    {"tag", "kind: !!str aa/bb\n", -EINVAL,
     "t.yaml:1:7: YAML tags are not accepted (\"tag:yaml.org,2002:str\")"},
    {"too deep", "pools: [[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]\n", -EINVAL,
     "t.yaml:1:23: nested deeper than 16 levels"},
    {"non-string key", "? [a]\n: b\n", -EINVAL,
     "t.yaml:1:3: a mapping key must be a string, got a list"},
    /* keys */
    {"unknown key, near a known one", "kinds: aa/bb\n", -EINVAL,
     "t.yaml:1:1: unknown key \"kinds\" (did you mean kind?)"},
    {"unknown key, case", "specdir: /x\n", -EINVAL,
     "t.yaml:1:1: unknown key \"specdir\" (did you mean specDir?)"},
    {"unknown key", "foo: 1\n", -EINVAL,
     "t.yaml:1:1: unknown key \"foo\" (known keys: kind, specDir, withMad, memlock, pools)"},
    {"unknown key with control characters", "\"a\\x01\\\"b\": 1\n", -EINVAL,
     "t.yaml:1:1: unknown key \"a\\x01\\\"b\" (known keys: kind, specDir, withMad, memlock, "
     "pools)"},
    {"unknown pool key", POOL "    sharedslot: 4\n", -EINVAL,
     "t.yaml:3:5: pools[0]: unknown key \"sharedslot\" (did you mean sharedSlots?)"},
    {"unknown selector key", SEL "      vendor: [15b3]\n", -EINVAL,
     "t.yaml:4:7: pools[0].selectors: unknown key \"vendor\" (did you mean vendors?)"},
    {"unknown selector key, far", SEL "      speed: [100]\n", -EINVAL,
     "t.yaml:4:7: pools[0].selectors: unknown key \"speed\" (known keys: linkLayers, vendors, "
     "deviceIDs, drivers, names, netdevs, pciAddresses, pfNames, vf, numaNodes)"},
    {"duplicate top key", "withMad: true\nkind: aa/bb\nwithMad: false\n", -EINVAL,
     "t.yaml:3:1: duplicate key withMad (first at line 1, column 1)"},
    {"duplicate pool key", POOL "    mode: exclusive\n    mode: shared\n", -EINVAL,
     "t.yaml:4:5: pools[0]: duplicate key mode (first at line 3, column 5)"},
    /* types */
    {"string where a bool is", "withMad: \"true\"\n", -EINVAL,
     "t.yaml:1:10: withMad: expected true or false, got the quoted string \"true\""},
    {"netns is none or move", POOL "    netns: moved\n", -EINVAL,
     "t.yaml:3:12: pools[0].netns: expected none or move, got \"moved\""},
    {"netns: move in a shared pool", POOL "    mode: shared\n    sharedSlots: 2\n    netns: move\n",
     -EINVAL,
     "t.yaml:5:12: pools[0].netns: move needs mode: exclusive (a device in one pod's network "
     "namespace cannot be shared with other pods)"},
    {"netns takes no list", POOL "    netns: [move]\n", -EINVAL,
     "t.yaml:3:12: pools[0].netns: expected none or move, got a list"},
    {"yes is not a bool", POOL "    ncclEnv: yes\n", -EINVAL,
     "t.yaml:3:14: pools[0].ncclEnv: expected true or false, got \"yes\""},
    {"list where a bool is", SEL "      vf: [true]\n", -EINVAL,
     "t.yaml:4:11: pools[0].selectors.vf: expected true or false, got a list"},
    {"scalar where a list is", SEL "      linkLayers: InfiniBand\n", -EINVAL,
     "t.yaml:4:19: pools[0].selectors.linkLayers: expected a list (one value is written "
     "[value]), got a scalar"},
    {"mapping where a list is", SEL "      names: {a: b}\n", -EINVAL,
     "t.yaml:4:14: pools[0].selectors.names: expected a list (one value is written [value]), "
     "got a mapping"},
    {"empty selector list", SEL "      vendors: []\n", -EINVAL,
     "t.yaml:4:16: pools[0].selectors.vendors: empty list (leave the key out to select any "
     "value)"},
    {"selectors not a mapping", POOL "    selectors: [a]\n", -EINVAL,
     "t.yaml:3:16: pools[0].selectors: expected a mapping, got a list"},
    {"empty selectors", POOL "    selectors:\n", -EINVAL,
     "t.yaml:3:15: pools[0].selectors: expected a mapping, got an empty value"},
    {"list where a string is", "kind: [aa/bb]\n", -EINVAL,
     "t.yaml:1:7: kind: expected a string, got a list"},
    {"null where a string is", "memlock: ~\n", -EINVAL,
     "t.yaml:1:10: memlock: expected a string, got an empty value"},
    {"NUL in a string", "kind: \"aa\\0/bb\"\n", -EINVAL,
     "t.yaml:1:7: kind: contains a NUL character"},
    {"quoted integer", POOL "    mode: shared\n    sharedSlots: \"16\"\n", -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: expected an integer, got the quoted string \"16\""},
    {"float", POOL "    mode: shared\n    sharedSlots: 1.5\n", -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: expected an integer, got \"1.5\""},
    {"octal-looking integer", SEL "      numaNodes: [01]\n", -EINVAL,
     "t.yaml:4:19: pools[0].selectors.numaNodes[0]: expected an integer, got \"01\""},
    /* values */
    {"bad kind", "kind: rdma\n", -EINVAL,
     "t.yaml:1:7: kind: invalid CDI kind \"rdma\": expected vendor/class, each at least 2 "
     "characters of letters, digits, '_', '-' (and '.' in the vendor), starting with a "
     "letter"},
    {"kind with a dot in the class", "kind: rdma.example/h.ca\n", -EINVAL,
     "t.yaml:1:7: kind: invalid CDI kind \"rdma.example/h.ca\": expected vendor/class, each at "
     "least 2 characters of letters, digits, '_', '-' (and '.' in the vendor), starting with "
     "a letter"},
    {"relative specDir", "specDir: cdi\n", -EINVAL,
     "t.yaml:1:10: specDir: must be an absolute path, got \"cdi\""},
    {"memlock zero", "memlock: 0\n", -EINVAL,
     "t.yaml:1:10: memlock: expected unlimited or a positive byte count with an optional K, M "
     "or G suffix, got \"0\""},
    {"memlock suffix", "memlock: 12X\n", -EINVAL,
     "t.yaml:1:10: memlock: expected unlimited or a positive byte count with an optional K, M "
     "or G suffix, got \"12X\""},
    {"bad mode", POOL "    mode: exclusiv\n", -EINVAL,
     "t.yaml:3:11: pools[0].mode: expected exclusive or shared, got \"exclusiv\""},
    {"sharedSlots with exclusive", POOL "    sharedSlots: 4\n", -EINVAL,
     "t.yaml:3:5: pools[0].sharedSlots: only valid with mode: shared (an exclusive pool gives "
     "each HCA to one pod)"},
    {"sharedSlots with mode exclusive after it", POOL "    sharedSlots: 4\n    mode: exclusive\n",
     -EINVAL,
     "t.yaml:3:5: pools[0].sharedSlots: only valid with mode: shared (an exclusive pool gives "
     "each HCA to one pod)"},
    {"shared without sharedSlots", POOL "    mode: shared\n", -EINVAL,
     "t.yaml:3:11: pools[0].sharedSlots: required with mode: shared (pods per HCA, 1 to "
     "1000)"},
    {"zero sharedSlots", POOL "    mode: shared\n    sharedSlots: 0\n", -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: must be between 1 and 1000, got 0"},
    {"negative sharedSlots", POOL "    mode: shared\n    sharedSlots: -3\n", -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: must be between 1 and 1000, got -3"},
    {"sharedSlots over the maximum", POOL "    mode: shared\n    sharedSlots: 1001\n", -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: must be between 1 and 1000, got 1001"},
    {"huge sharedSlots", POOL "    mode: shared\n    sharedSlots: 99999999999999999999999\n",
     -EINVAL,
     "t.yaml:4:18: pools[0].sharedSlots: must be between 1 and 1000, got "
     "99999999999999999999999"},
    {"bad link layer", SEL "      linkLayers: [InfiniBand, fddi]\n", -EINVAL,
     "t.yaml:4:32: pools[0].selectors.linkLayers[1]: unknown link layer \"fddi\" (expected "
     "InfiniBand or Ethernet)"},
    {"bad vendor hex", SEL "      vendors: [\"15b3x\"]\n", -EINVAL,
     "t.yaml:4:17: pools[0].selectors.vendors[0]: invalid vendor ID \"15b3x\": expected 1 to 4 "
     "hex digits such as 15b3, optionally with 0x, not 0"},
    {"vendor 0", SEL "      vendors: [0]\n", -EINVAL,
     "t.yaml:4:17: pools[0].selectors.vendors[0]: invalid vendor ID \"0\": expected 1 to 4 hex "
     "digits such as 15b3, optionally with 0x, not 0"},
    {"device ID too long", SEL "      deviceIDs: [0x12345]\n", -EINVAL,
     "t.yaml:4:19: pools[0].selectors.deviceIDs[0]: invalid device ID \"0x12345\": expected 1 "
     "to 4 hex digits such as 15b3, optionally with 0x, not 0"},
    {"NUMA node out of range", SEL "      numaNodes: [0, 1024]\n", -EINVAL,
     "t.yaml:4:22: pools[0].selectors.numaNodes[1]: must be between 0 and 1023, got 1024"},
    {"negative NUMA node", SEL "      numaNodes: [-1]\n", -EINVAL,
     "t.yaml:4:19: pools[0].selectors.numaNodes[0]: must be between 0 and 1023, got -1"},
    {"NUMA node not a number", SEL "      numaNodes: [zero]\n", -EINVAL,
     "t.yaml:4:19: pools[0].selectors.numaNodes[0]: expected an integer, got \"zero\""},
    {"glob with a space", SEL "      names: [\"mlx5 *\"]\n", -EINVAL,
     "t.yaml:4:15: pools[0].selectors.names[0]: invalid pattern \"mlx5 *\": printable ASCII "
     "without spaces or '/'"},
    {"glob with a slash", SEL "      pciAddresses: [\"../0000\"]\n", -EINVAL,
     "t.yaml:4:22: pools[0].selectors.pciAddresses[0]: invalid pattern \"../0000\": printable "
     "ASCII without spaces or '/'"},
    {"unterminated bracket", SEL "      netdevs: [\"ens[12f0\"]\n", -EINVAL,
     "t.yaml:4:17: pools[0].selectors.netdevs[0]: invalid pattern \"ens[12f0\": has a '[' "
     "without its ']'"},
    {"bad driver", SEL "      drivers: [\"mlx5 core\"]\n", -EINVAL,
     "t.yaml:4:17: pools[0].selectors.drivers[0]: invalid driver name \"mlx5 core\": up to 63 "
     "characters of [A-Za-z0-9_.:-]"},
    {"empty string", SEL "      netdevs: [\"\"]\n", -EINVAL,
     "t.yaml:4:17: pools[0].selectors.netdevs[0]: empty string"},
    {"vf false with pfNames", SEL "      pfNames: [ens1f0]\n      vf: false\n", -EINVAL,
     "t.yaml:5:11: pools[0].selectors.vf: false contradicts pfNames, which selects VFs only"},
    /* pools and resource names */
    {"pools: []", "pools: []\n", -EINVAL,
     "t.yaml:1:8: pools: empty list: at least one pool is needed (leave pools out for one pool "
     "of every device)"},
    {"pools empty", "pools:\nkind: aa/bb\n", -EINVAL,
     "t.yaml:1:7: pools: expected a list of pools, got an empty value"},
    {"pools a mapping", "pools:\n  resourceName: a.io/b\n", -EINVAL,
     "t.yaml:2:3: pools: expected a list of pools, got a mapping"},
    {"pool not a mapping", "pools: [rdma.example/ib]\n", -EINVAL,
     "t.yaml:1:9: pools[0]: expected a mapping, got a scalar"},
    {"resourceName missing", "pools:\n  - mode: exclusive\n", -EINVAL,
     "t.yaml:2:5: pools[0]: resourceName missing (the kubelet resource, e.g. "
     "rdma.example/ib)"},
    {"resource name without domain", "pools:\n  - resourceName: ib\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"ib\": expected domain/name"},
    {"resource name upper-case domain", "pools:\n  - resourceName: RDMA.example/ib\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"RDMA.example/ib\": the domain "
     "must be a DNS subdomain: dot-separated labels of lower-case letters, digits and '-'"},
    {"resource name in kubernetes.io", "pools:\n  - resourceName: kubernetes.io/rdma\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"kubernetes.io/rdma\": the "
     "kubernetes.io domain is reserved for native resources"},
    {"resource name with two slashes", "pools:\n  - resourceName: a.io/b/c\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"a.io/b/c\": more than one "
     "'/'"},
    {"resource name requests.", "pools:\n  - resourceName: requests.a.io/b\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"requests.a.io/b\": may not "
     "start with \"requests.\""},
    {"resource name bad name part", "pools:\n  - resourceName: a.io/-ib\n", -EINVAL,
     "t.yaml:2:19: pools[0].resourceName: invalid resource name \"a.io/-ib\": the name after "
     "'/' must be 1 to 63 characters of [A-Za-z0-9_.-], starting and ending with a letter or "
     "digit"},
    {"duplicate resource names",
     "pools:\n  - resourceName: a.io/ib\n  - resourceName: a.io/roce\n"
     "  - {mode: exclusive, resourceName: a.io/ib}\n",
     -EINVAL,
     "t.yaml:4:37: pools[2].resourceName: \"a.io/ib\" is already the resource of pools[0] "
     "(line 2): each pool needs its own"},
};

static void test_errors(void)
{
	for (size_t i = 0; i < ELEMENTSOF(bads); i++)
		parse_err(bads[i].yaml, bads[i].r, bads[i].msg, bads[i].what);
}

static char *repeat(const char *head, const char *item, size_t n, const char *tail)
{
	size_t li = strlen(item), lh = strlen(head), lt = strlen(tail);
	char *s = malloc(lh + li * n + lt + 1), *p = s;

	if (!s)
		abort();
	memcpy(p, head, lh);
	p += lh;
	for (size_t i = 0; i < n; i++, p += li)
		memcpy(p, item, li);
	memcpy(p, tail, lt + 1);
	return s;
}

static void test_bounds(void)
{
	static const char crlf[] = "pools:\r\n- resourceName: a.io/b\r\n  mode: x\r\n";
	char *s, *big;
	size_t n = 0, len;
	struct cfg *c = NULL;
	struct rc_error *e = NULL;

	/* 65 pools */
	s = malloc(65 * 40 + 16);
	if (!s)
		abort();
	n = (size_t)sprintf(s, "pools:\n");
	for (int i = 0; i < 65; i++)
		n += (size_t)sprintf(s + n, "- resourceName: a.io/p%d\n", i);
	parse_err(s, -EINVAL, "t.yaml:66:3: pools: more than 64 pools", "65 pools");
	free(s);

	s = repeat(SEL "      numaNodes: [", "0, ", 256, "0]\n");
	parse_err(s, -EINVAL, "t.yaml:4:18: pools[0].selectors.numaNodes: more than 256 values",
		  "257 selector values");
	free(s);
	s = repeat(SEL "      numaNodes: [", "0, ", 255, "0]\n");
	c = parse_ok(s, "256 selector values");
	ok(c && c->pools[0].sel.n_numa_nodes == 256, "256 values kept");
	cfg_free(c);
	free(s);

	s = repeat(SEL "      names: [\"", "x", 257, "\"]\n");
	parse_err(s, -EINVAL,
		  "t.yaml:4:15: pools[0].selectors.names[0]: longer than 256 characters",
		  "257-character glob");
	free(s);

	/* Beyond CFG_FILE_MAX, whatever the content. */
	len = CFG_FILE_MAX + 1;
	big = malloc(len);
	if (!big)
		abort();
	memset(big, '#', len);
	c = NULL;
	ok(cfg_parse(big, len, "big.yaml", &c, &e) == -EFBIG && !c,
	   "a buffer over 1 MiB is refused");
	EQ_STR(tap_err(&e), "big.yaml: larger than 1048576 bytes", "over 1 MiB message");
	free(big);

	/* Node bound: 1 MiB of "[a,a,a...]" in a pools list stays an error, not a blowup. */
	s = repeat("pools: [", "a,", 120000, "a]\n");
	ok(cfg_parse(s, strlen(s), "t.yaml", &c, &e) == -EINVAL && !c, "120001 nodes refused");
	EQ_STR(tap_err(&e), "t.yaml:1:200003: more than 100000 YAML nodes", "node bound message");
	free(s);

	/* Resource names: the domain bound (253 minus "requests."), then the string bound. */
	s = repeat("pools:\n  - resourceName: ", "a", 245, "/ib\n");
	parse_err(s, -EINVAL,
		  "t.yaml:2:19: pools[0].resourceName: invalid resource name "
		  "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\": domain "
		  "longer than 244 characters",
		  "245-character domain");
	free(s);
	s = repeat("pools:\n  - resourceName: ", "a", 244, "/ib\n");
	c = parse_ok(s, "244-character domain");
	cfg_free(c);
	c = NULL;
	free(s);
	s = repeat("pools:\n  - resourceName: a.io/", "a", 320, "\n");
	parse_err(s, -EINVAL, "t.yaml:2:19: pools[0].resourceName: longer than 317 characters",
		  "320-character resource name");
	free(s);

	/* A NUL byte in the buffer is a control character to libyaml. */
	ok(cfg_parse("kind: a\0b\n", 10, "t.yaml", &c, &e) == -EBADMSG && !c, "NUL byte refused");
	EQ_STR(tap_err(&e), "t.yaml:1:8: invalid YAML: control characters are not allowed",
	       "NUL message");
	/* CRLF line ends count lines as LF does. */
	ok(cfg_parse(crlf, strlen(crlf), "t.yaml", &c, &e) == -EINVAL, "CRLF file");
	EQ_STR(tap_err(&e), "t.yaml:3:9: pools[0].mode: expected exclusive or shared, got \"x\"",
	       "CRLF positions");
	/* Two errors: the misspelt key, and the pool then lacks its resourceName. */
	parse_err("pools:\n- ResourceName: a.io/b\n", -EINVAL,
		  "t.yaml:2:3: pools[0]: unknown key \"ResourceName\" (did you mean resourceName?) "
		  "(and 1 more error)",
		  "key in the wrong case");

	/* err NULL is fine; without a file name the message says <config>. */
	ok(cfg_parse("foo: 1", 6, NULL, &c, NULL) == -EINVAL, "err may be NULL");
	ok(cfg_parse("foo: 1", 6, NULL, &c, &e) == -EINVAL && e && e->code == EINVAL,
	   "the error carries the code");
	EQ_STR(tap_err(&e),
	       "<config>:1:1: unknown key \"foo\" (known keys: kind, specDir, withMad, memlock, "
	       "pools)",
	       "<config> when no filename");
}

/* ---- globs -------------------------------------------------------------------------- */

static void test_glob(void)
{
	static const char *const pats[] = {
	    "mlx5_*", "mlx5_?", "*",	   "",	     "mlx5_[0-3]", "mlx5_[!0-3]",  "mlx5_[^0]",
	    "[]x]*",  "[!]x]*", "*_*_*",   "ib*s0",  "*0",	   "m*5*1",	   "\\*x",
	    "a\\?",   "[a-]*",	"[-a]*",   "*[0-9]", "ens[1-2]f*", "0000:3?:00.*", "**",
	    "x**y",   "[abc",	"mlx5_1[", "*S88",   "?*?",	   "[[]*",	   "*]",
	};
	static const char *const strs[] = {
	    "mlx5_0",
	    "mlx5_1",
	    "mlx5_12",
	    "mlx5_",
	    "",
	    "ibp26s0",
	    "]x",
	    "xx",
	    "-a",
	    "a-",
	    "*x",
	    "\\x",
	    "a?",
	    "ab",
	    "ens1f0",
	    "ens3f0",
	    "0000:3b:00.0",
	    "x",
	    "xy",
	    "xaay",
	    "[abc",
	    "mlx5_1[",
	    "rocep59s0f0S88",
	    "a",
	    "[",
	    "]",
	    "mlx5_bond_0",
	    "m5_1",
	};
	bool same = true, any = false;
	struct timespec t0, t1;
	char name[65];
	double ms;

	for (size_t i = 0; i < ELEMENTSOF(pats); i++)
		for (size_t k = 0; k < ELEMENTSOF(strs); k++) {
			bool want = fnmatch(pats[i], strs[k], 0) == 0;

			if (cfg_glob_match(pats[i], strs[k], false) != want) {
				printf("#   '%s' on '%s': fnmatch says %d\n", pats[i], strs[k],
				       want);
				same = false;
			}
			want = fnmatch(pats[i], strs[k], FNM_CASEFOLD) == 0;
			if (cfg_glob_match(pats[i], strs[k], true) != want) {
				printf("#   '%s' on '%s' folded: fnmatch says %d\n", pats[i],
				       strs[k], want);
				same = false;
			}
		}
	ok(same, "globs agree with fnmatch(3) on %zu x %zu cases", ELEMENTSOF(pats),
	   ELEMENTSOF(strs));
	ok(cfg_glob_match("0000:3B:00.[0-1]", "0000:3b:00.1", true) &&
	       !cfg_glob_match("0000:3B:00.[0-1]", "0000:3b:00.1", false),
	   "fold: case-insensitive only when asked");

	/* 128 stars against a 64-character name: fnmatch backtracks exponentially. */
	memset(name, 'a', 64);
	name[64] = '\0';
	{
		char pat[260];
		size_t o = 0;

		for (int i = 0; i < 127; i++) {
			pat[o++] = '*';
			pat[o++] = 'a';
		}
		pat[o++] = 'b';
		pat[o] = '\0';
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < 1000; i++)
			any = any || cfg_glob_match(pat, name, false);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ok(!any, "the hostile glob does not match");
		/* 32 x "*a" + "a" needs 33 a's: the 64 of name do. */
		pat[o - 1] = 'a';
		ok(!cfg_glob_match(pat, name, false), "127 x '*a' + 'a' needs 128 a's");
		ok(cfg_glob_match(pat + 2 * 95, name, false), "32 x '*a' + 'a' matches 64 a's");
	}
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (!ok(ms < 1000, "1000 matches of a 255-character, 127-star glob take < 1 s"))
		printf("#   took %.1f ms\n", ms);

	EQ_STR(cfg_glob_problem("mlx5_[0-3"), "has a '[' without its ']'", "unterminated [");
	EQ_STR(cfg_glob_problem("mlx5\\"), "ends in a lone '\\'", "trailing backslash");
	ok(!cfg_glob_problem("[]]\\[x*"), "escaped [ and a ] member are fine");
}

/* ---- cfg_equal ---------------------------------------------------------------------- */

/* netns: none is the default spelled out; move is a change a reload must apply. */
static void test_equal_netns(void)
{
	struct cfg *plain = parse_ok(POOL, "netns: absent");
	struct cfg *none = parse_ok(POOL "    netns: none\n", "netns: none");
	struct cfg *move = parse_ok(POOL "    netns: move\n", "netns: move");

	ok(plain && plain->pools[0].netns == CFG_NETNS_NONE, "netns defaults to none");
	ok(move && move->pools[0].netns == CFG_NETNS_MOVE, "netns: move parsed");
	ok(cfg_equal(plain, none), "netns: none equals no netns key");
	ok(!cfg_equal(plain, move), "netns: move is a change");
	cfg_free(plain);
	cfg_free(none);
	cfg_free(move);
}

static void test_equal(void)
{
	struct cfg *a = parse_ok(example, "equal: a"), *b = parse_ok(example, "equal: b");
	struct cfg *moved =
	    parse_ok("# a comment that moves everything down\n\n"
		     "kind: rdma.example/hca\nspecDir: /var/run/cdi\nwithMad: false\n"
		     "memlock: unlimited\npools:\n"
		     "- {resourceName: rdma.example/ib, mode: shared, sharedSlots: 16,"
		     " ncclEnv: true, selectors: {linkLayers: [ib, Ethernet], "
		     "vendors: [0x15B3], deviceIDs: [1021, 0x101d], drivers: "
		     "[mlx5_core], names: [mlx5_*], netdevs: [ens1f*], pciAddresses: "
		     "[\"0000:3b:00.0\"], pfNames: [ens1f0], vf: true, numaNodes: [0, "
		     "1023]}}\n"
		     "- resourceName: rdma.example/roce\n",
		     "equal: same config, other text");
	struct cfg *other, *def = NULL, *explicit_default;

	ok(cfg_equal(a, b), "the same text is equal");
	ok(cfg_equal(a, moved), "moved text, aliases and hex case are equal");
	ok(a && moved && a->pools[0].line != moved->pools[0].line, "(the lines do differ)");

	static const struct {
		const char *from, *to;
	} edits[] = {
	    {"numaNodes: [0, 1023]", "numaNodes: [0]"},
	    {"[\"15b3\"]", "[\"15b4\"]"},
	    {"sharedSlots: 16 ", "sharedSlots: 15 "},
	    {"ncclEnv: true", "ncclEnv: false"},
	    {"      vf: true\n", ""},
	    {"kind: rdma.example/hca", "kind: rdma.example/nic"},
	    {"withMad: false", "withMad: true"},
	    {"memlock: unlimited", "memlock: 1G"},
	    {"specDir: /var/run/cdi", "specDir: /etc/cdi"},
	    {"pfNames: [\"ens1f0\"]", "pfNames: [\"ens1f1\"]"},
	    {"[\"mlx5_*\"]", "[\"mlx5_*\", \"ib*\"]"},
	    {"  - resourceName: rdma.example/roce\n", ""},
	};
	for (size_t i = 0; i < ELEMENTSOF(edits); i++) {
		char buf[2048];
		const char *at = strstr(example, edits[i].from);
		size_t pre;
		struct cfg *c;

		if (!ok(at, "edit %zu applies", i))
			continue;
		pre = (size_t)(at - example);
		snprintf(buf, sizeof(buf), "%.*s%s%s", (int)pre, example, edits[i].to,
			 at + strlen(edits[i].from));
		c = parse_ok(buf, edits[i].to[0] ? edits[i].to : "pool removed");
		ok(!cfg_equal(a, c), "changed: %s -> %s", edits[i].from,
		   edits[i].to[0] ? edits[i].to : "(removed)");
		cfg_free(c);
	}

	other = parse_ok("pools:\n- resourceName: rdma.example/roce\n- resourceName: "
			 "rdma.example/ib\n",
			 "equal: reordered pools");
	ok(a && other && !cfg_pool_equal(&a->pools[1], &other->pools[1]) &&
	       cfg_pool_equal(&a->pools[1], &other->pools[0]),
	   "cfg_pool_equal compares one pool");
	ok(!cfg_equal(a, other), "different pools differ");
	cfg_free(other);
	test_equal_netns();

	/* The default pool spelled out is the same pool, but a file that sets pools keeps
	 * the CLI's --resource from applying: not the same config. */
	cfg_default(&def);
	explicit_default = parse_ok("pools: [{resourceName: rdma.example/hca}]", "explicit pool");
	ok(def && explicit_default && cfg_pool_equal(&def->pools[0], &explicit_default->pools[0]),
	   "explicit default pool equals the default pool");
	ok(!cfg_equal(def, explicit_default), "but pools_set makes the configs differ");
	ok(cfg_equal(NULL, NULL) && !cfg_equal(def, NULL) && !cfg_pool_equal(NULL, def->pools),
	   "NULL equals only NULL");
	cfg_free(explicit_default);
	cfg_free(def);
	cfg_free(a);
	cfg_free(b);
	cfg_free(moved);
}

/* ---- cfg_load ----------------------------------------------------------------------- */

static void test_load(void)
{
	char dir[] = "/tmp/rdma-cdi-test-config-XXXXXX", path[256];
	struct rc_error *e = NULL;
	struct cfg *c = NULL;
	FILE *f;

	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/absent.yaml", dir);
	ok(cfg_load(path, &c, &e) == -ENOENT && !c, "absent file: -ENOENT");
	{
		char want[512];

		snprintf(want, sizeof(want), "%s: No such file or directory", path);
		EQ_STR(tap_err(&e), want, "absent file message");
	}

	snprintf(path, sizeof(path), "%s/config.yaml", dir);
	f = fopen(path, "we");
	fputs("pools:\n- resourceName: a.io/ib\n  mode: sharde\n", f);
	fclose(f);
	ok(cfg_load(path, &c, &e) == -EINVAL && !c, "broken file: -EINVAL");
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "%s:3:9: pools[0].mode: expected exclusive or shared, got \"sharde\"",
			 path);
		EQ_STR(tap_err(&e), want, "the message names the path");
	}
	f = fopen(path, "we");
	fputs("pools:\n- resourceName: a.io/ib\n", f);
	fclose(f);
	ok(cfg_load(path, &c, &e) == 0 && c && c->n_pools == 1, "valid file loads");
	cfg_free(c);
	c = NULL;

	/* A ConfigMap volume: config.yaml -> ..data/config.yaml, ..data -> ..2026_x */
	{
		char d2[300], l1[300], l2[300];

		snprintf(d2, sizeof(d2), "%s/..2026_01", dir);
		mkdir(d2, 0755);
		snprintf(l1, sizeof(l1), "%s/..2026_01/config.yaml", dir);
		f = fopen(l1, "we");
		fputs("kind: acme.io/nic\n", f);
		fclose(f);
		snprintf(l1, sizeof(l1), "%s/..data", dir);
		ok(symlink("..2026_01", l1) == 0, "..data link");
		snprintf(l2, sizeof(l2), "%s/cm.yaml", dir);
		ok(symlink("..data/config.yaml", l2) == 0, "cm.yaml link");
		ok(cfg_load(l2, &c, &e) == 0 && c && c->kind && !strcmp(c->kind, "acme.io/nic"),
		   "symlinks are followed (ConfigMap volume)");
		cfg_free(c);
		c = NULL;
	}

	ok(cfg_load(dir, &c, &e) == -EBADFD && !c, "a directory is refused");
	{
		char want[512];

		snprintf(want, sizeof(want), "%s: not a regular file", dir);
		EQ_STR(tap_err(&e), want, "directory message");
	}
	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mkfifo(path, 0600) == 0) {
		ok(cfg_load(path, &c, &e) == -EBADFD && !c, "a FIFO is refused without blocking");
		rc_error_freep(&e);
	} else {
		ok(false, "mkfifo: %s", strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/big.yaml", dir);
	f = fopen(path, "we");
	{
		char line[65];

		memset(line, '#', 63);
		line[63] = '\n';
		line[64] = '\0';
		for (int i = 0; i < CFG_FILE_MAX / 64 + 1; i++)
			fputs(line, f);
	}
	fclose(f);
	ok(cfg_load(path, &c, &e) == -EFBIG && !c, "a file over 1 MiB is refused");
	{
		char want[512];

		snprintf(want, sizeof(want), "%s: larger than 1048576 bytes", path);
		EQ_STR(tap_err(&e), want, "over 1 MiB message");
	}

	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", dir);
}

/* ---- pool selection on the fixtures -------------------------------------------------- */

static struct disc_node *scan_fixture(const char *profile)
{
	struct disc_options o = {.dev_root = "/nonexistent-rdma-cdi-dev"};
	struct disc_node *node = NULL;
	char root[512];
	int r;

	snprintf(root, sizeof(root), "%s/%s/sys", data_dir, profile);
	o.sysfs_root = root;
	r = disc_scan(&o, &node);
	if (!ok(r == 0 && node, "disc_scan %s", profile)) {
		printf("Bail out! cannot scan %s: %s\n", root, strerror(-r));
		exit(1);
	}
	return node;
}

/* Names of the devices assigned to pool j, comma-separated, in scan order. */
static const char *members(const struct cfg_assignment *a, const struct disc_node *node, long j,
			   char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < a->n_devices && o < size; i++)
		if (a->pool_of[i] == j)
			o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? "," : "",
					      node->devices[i].name);
	return buf;
}

/*
 * Parses yaml, assigns node, and checks each pool's members (want[j], "" for none),
 * the devices in no pool (want_none) and the number of warnings. Returns the assignment
 * for more checks (caller frees) or NULL.
 */
static struct cfg_assignment *check_pools(const char *what, const char *yaml,
					  const struct disc_node *node, const char *const *want,
					  const char *want_none, size_t want_warnings)
{
	struct cfg *c = parse_ok(yaml, what);
	struct cfg_assignment *a = NULL;
	struct rc_error *e = NULL;
	char buf[1024], label[256];
	size_t total = 0;

	if (!c)
		return NULL;
	if (!ok(cfg_assign(c, node, &a, &e) == 0 && a, "%s: assigns", what)) {
		printf("#   %s\n", tap_err(&e));
		cfg_free(c);
		return NULL;
	}
	for (size_t j = 0; j < c->n_pools; j++) {
		snprintf(label, sizeof(label), "%s: pool %s", what, c->pools[j].resource_name);
		EQ_STR(members(a, node, (long)j, buf, sizeof(buf)), want[j], label);
		total += a->n_per_pool[j];
		for (size_t i = 0; i < a->n_devices; i++)
			if (a->pool_of[i] == (long)j &&
			    !cfg_pool_matches(&c->pools[j], node, &node->devices[i]))
				ok(false, "%s: %s assigned without matching", what,
				   node->devices[i].name);
	}
	snprintf(label, sizeof(label), "%s: in no pool", what);
	EQ_STR(members(a, node, -1, buf, sizeof(buf)), want_none, label);
	ok(a->n_pools == c->n_pools && a->n_devices == node->n_devices, "%s: sizes", what);
	snprintf(label, sizeof(label), "%s: n_per_pool adds up", what);
	for (size_t i = 0; i < a->n_devices; i++)
		total -= a->pool_of[i] >= 0;
	EQ_INT(total, 0, label);
	snprintf(label, sizeof(label), "%s: warnings", what);
	EQ_INT(a->n_warnings, want_warnings, label);
	if (a->n_warnings != want_warnings)
		for (size_t i = 0; i < a->n_warnings; i++)
			printf("#   warning: %s\n", a->warnings[i]);
	cfg_free(c);
	return a;
}

static bool has_warning(const struct cfg_assignment *a, const char *w)
{
	for (size_t i = 0; a && i < a->n_warnings; i++)
		if (!strcmp(a->warnings[i], w))
			return true;
	return false;
}

#define WARNS(a, w)                                                                                \
	do {                                                                                       \
		if (!ok(has_warning((a), (w)), "warning: %s", (w)))                                \
			for (size_t _i = 0; (a) && _i < (a)->n_warnings; _i++)                     \
				printf("#   have: %s\n", (a)->warnings[_i]);                       \
	} while (0)

#define IB8 "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7"

static void test_dgx(void)
{
	struct disc_node *node = scan_fixture("dgx");
	struct cfg_assignment *a;

	a = check_pools("IB vs RoCE",
			"pools:\n"
			"- {resourceName: a.io/ib, selectors: {linkLayers: [InfiniBand]}}\n"
			"- {resourceName: a.io/roce, selectors: {linkLayers: [Ethernet]}}\n",
			node, (const char *const[]){IB8, "mlx5_8,mlx5_9"}, "", 0);
	cfg_assignment_free(a);

	a = check_pools(
	    "NUMA and link layer AND",
	    "pools:\n"
	    "- {resourceName: a.io/ib1, selectors: {linkLayers: [ib], numaNodes: [1]}}\n"
	    "- {resourceName: a.io/n0, selectors: {numaNodes: [0]}}\n",
	    node,
	    (const char *const[]){"mlx5_4,mlx5_5,mlx5_6,mlx5_7",
				  "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_8"},
	    "mlx5_9", 0);
	cfg_assignment_free(a);

	a = check_pools(
	    "globs",
	    "pools:\n"
	    "- {resourceName: a.io/names, selectors: {names: [\"mlx5_[0-2]\"]}}\n"
	    "- {resourceName: a.io/netdevs, selectors: {netdevs: [\"ens*\", \"ibp60s0\"]}}\n"
	    "- {resourceName: a.io/pci, selectors: {pciAddresses: [\"0000:9?:00.0\", "
	    "\"0000:BA:00.0\"]}}\n"
	    "- {resourceName: a.io/ids, selectors: {vendors: [15b3], deviceIDs: [\"1021\"], "
	    "drivers: [mlx5_core]}}\n",
	    node,
	    (const char *const[]){"mlx5_0,mlx5_1,mlx5_2", "mlx5_3,mlx5_8,mlx5_9",
				  "mlx5_4,mlx5_5,mlx5_6", "mlx5_7"},
	    "", 7);
	WARNS(a, "device mlx5_3 (0000:3c:00.0) matches pools a.io/netdevs and a.io/ids: it goes "
		 "to a.io/netdevs, the first");
	cfg_assignment_free(a);

	/* Overlap: the first pool wins, one warning per shared device, naming both. */
	a = check_pools("overlap",
			"pools:\n"
			"- {resourceName: a.io/ib, selectors: {linkLayers: [InfiniBand]}}\n"
			"- {resourceName: a.io/numa0, selectors: {numaNodes: [0]}}\n",
			node, (const char *const[]){IB8, "mlx5_8"}, "mlx5_9", 4);
	WARNS(a, "device mlx5_0 (0000:1a:00.0) matches pools a.io/ib and a.io/numa0: it goes to "
		 "a.io/ib, the first");
	WARNS(a, "device mlx5_3 (0000:3c:00.0) matches pools a.io/ib and a.io/numa0: it goes to "
		 "a.io/ib, the first");
	cfg_assignment_free(a);

	a = check_pools(
	    "three-way overlap and a shadowed pool",
	    "pools:\n"
	    "- {resourceName: a.io/n1, selectors: {numaNodes: [1]}}\n"
	    "- {resourceName: a.io/all}\n"
	    "- {resourceName: a.io/roce, selectors: {linkLayers: [Ethernet], numaNodes: [1]}}\n",
	    node,
	    (const char *const[]){"mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_9",
				  "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_8", ""},
	    "", 6);
	WARNS(a, "device mlx5_9 (0000:d8:00.0) matches pools a.io/n1, a.io/all and a.io/roce: it "
		 "goes to a.io/n1, the first");
	WARNS(a, "pool a.io/roce gets no device: the 1 usable device it matches went to earlier "
		 "pools");
	cfg_assignment_free(a);

	a = check_pools(
	    "pool matching nothing",
	    "pools:\n"
	    "- {resourceName: a.io/vf, selectors: {vf: true}}\n"
	    "- {resourceName: a.io/pf, selectors: {vf: false}}\n"
	    "- {resourceName: a.io/bnxt, selectors: {drivers: [bnxt_en]}}\n",
	    node,
	    (const char *const[]){
		"", "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_8,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_9", ""},
	    "", 2);
	WARNS(a, "pool a.io/vf matches no usable device on this node");
	WARNS(a, "pool a.io/bnxt matches no usable device on this node");
	cfg_assignment_free(a);

	disc_node_free(node);
}

static void test_sriov(void)
{
	struct disc_node *node = scan_fixture("sriov");
	struct cfg_assignment *a;

	a = check_pools("PF vs VF",
			"pools:\n"
			"- {resourceName: a.io/vf, selectors: {vf: true}}\n"
			"- {resourceName: a.io/pf, selectors: {vf: false}}\n",
			node, (const char *const[]){"mlx5_1,mlx5_2,mlx5_3,mlx5_4", "mlx5_0"}, "",
			0);
	cfg_assignment_free(a);

	a = check_pools("pfNames",
			"pools:\n"
			"- {resourceName: a.io/other, selectors: {pfNames: [\"ens9*\"]}}\n"
			"- {resourceName: a.io/vfs, selectors: {pfNames: [\"enp59s0f0*\"]}}\n",
			node, (const char *const[]){"", "mlx5_1,mlx5_2,mlx5_3,mlx5_4"}, "mlx5_0",
			1);
	WARNS(a, "pool a.io/other matches no usable device on this node");
	cfg_assignment_free(a);

	a = check_pools("pfNames exact, VF device ID, NUMA 1",
			"pools:\n"
			"- {resourceName: a.io/v, selectors: {pfNames: [enp59s0f0np0], deviceIDs: "
			"[101e], numaNodes: [1], vf: true}}\n",
			node, (const char *const[]){"mlx5_1,mlx5_2,mlx5_3,mlx5_4"}, "mlx5_0", 0);
	cfg_assignment_free(a);

	disc_node_free(node);
}

static void test_quirks(void)
{
	struct disc_node *node = scan_fixture("quirks");
	struct cfg_assignment *a;
	struct cfg *def = NULL;
	char buf[512];

	/* The default config: every usable device in the one pool, never smi1 or mlx5_4
	 * (no uverbs), whatever the selectors. */
	cfg_default(&def);
	ok(cfg_assign(def, node, &a, NULL) == 0, "default config assigns");
	EQ_STR(members(a, node, 0, buf, sizeof(buf)),
	       "mlx5_0,ibp12s0,rocep59s0f0,mlx5_bond_0,bnxt_re0,irdma0,mlx5_5,rocep59s0f0S88",
	       "default pool: every usable device");
	EQ_STR(members(a, node, -1, buf, sizeof(buf)), "smi1,mlx5_4", "unusable: in no pool");
	EQ_INT(a->n_per_pool[0], 8, "n_per_pool");
	EQ_INT(a->n_warnings, 0, "no warnings");
	cfg_assignment_free(a);
	cfg_free(def);

	a = check_pools("quirks: vendors, drivers, iWARP is Ethernet, unknown NUMA",
			"pools:\n"
			"- {resourceName: a.io/other, selectors: {vendors: [14e4, \"0x8086\"]}}\n"
			"- {resourceName: a.io/n0, selectors: {numaNodes: [0]}}\n"
			"- {resourceName: a.io/eth, selectors: {linkLayers: [Ethernet], drivers: "
			"[mlx5_core, \"mlx5_core.sf\"]}}\n",
			node,
			(const char *const[]){"bnxt_re0,irdma0", "mlx5_0,rocep59s0f0,mlx5_bond_0",
					      "rocep59s0f0S88"},
			"smi1,ibp12s0,mlx5_4,mlx5_5", 3);
	cfg_assignment_free(a);

	a = check_pools("quirks: globs on renamed devices, netdev of a bond, no PCI address",
			"pools:\n"
			"- {resourceName: a.io/bond, selectors: {netdevs: [\"bond*\"]}}\n"
			"- {resourceName: a.io/roce, selectors: {names: [\"roce*\"]}}\n"
			"- {resourceName: a.io/pci, selectors: {pciAddresses: [\"*\"]}}\n",
			node,
			(const char *const[]){"mlx5_bond_0", "rocep59s0f0,rocep59s0f0S88",
					      "mlx5_0,ibp12s0,bnxt_re0,irdma0,mlx5_5"},
			"smi1,mlx5_4", 2);
	WARNS(a, "device rocep59s0f0 (0000:3b:00.0) matches pools a.io/roce and a.io/pci: it "
		 "goes to a.io/roce, the first");
	cfg_assignment_free(a);

	disc_node_free(node);
}

/* ---- the device-ID bound ------------------------------------------------------------ */

static struct disc_node *fake_node(size_t n)
{
	struct disc_node *node = calloc(1, sizeof(*node));

	if (!node || !(node->devices = calloc(n, sizeof(*node->devices))))
		abort();
	node->n_devices = n;
	for (size_t i = 0; i < n; i++) {
		struct disc_device *d = &node->devices[i];

		snprintf(d->name, sizeof(d->name), "mlx5_%zu", i);
		snprintf(d->pci, sizeof(d->pci), "0000:%02zx:%02zx.%zu", i / 256, (i / 8) % 32,
			 i % 8);
		d->numa_node = (int)(i % 2);
		d->has_uverbs = true;
	}
	return node;
}

static void bound(const char *yaml, const struct disc_node *node, int want_r, const char *want,
		  const char *what)
{
	struct cfg *c = parse_ok(yaml, what);
	struct cfg_assignment *a = NULL;
	struct rc_error *e = NULL;
	const char *err;
	int r;

	if (!c)
		return;
	r = cfg_assign(c, node, &a, &e);
	err = tap_err(&e);
	if (!ok(r == want_r && (r == 0) == !!a, "%s: cfg_assign gives %d", what, want_r))
		printf("#   r = %d, err %s\n", r, err);
	if (want)
		EQ_STR(err, want, what);
	cfg_assignment_free(a);
	cfg_free(c);
}

static void test_bound(void)
{
	struct disc_node *big = fake_node(2048), *dgx = scan_fixture("dgx");

	bound("pools: [{resourceName: rdma.example/ib, mode: shared, sharedSlots: 100}]", big,
	      -E2BIG,
	      "pool rdma.example/ib: sharedSlots 100 x 2048 HCAs = 204800 device IDs exceeds 16384 "
	      "(a ListAndWatch message that large nears the kubelet's 4 MiB limit): lower "
	      "sharedSlots or split the HCAs over more pools",
	      "sharedSlots 100 on 2048 HCAs");
	bound("pools: [{resourceName: rdma.example/ib, mode: shared, sharedSlots: 8}]", big, 0,
	      NULL, "sharedSlots 8 x 2048 = 16384: at the bound");
	bound("pools: [{resourceName: rdma.example/ib, mode: shared, sharedSlots: 9}]", big, -E2BIG,
	      "pool rdma.example/ib: sharedSlots 9 x 2048 HCAs = 18432 device IDs exceeds 16384 "
	      "(a ListAndWatch message that large nears the kubelet's 4 MiB limit): lower "
	      "sharedSlots or split the HCAs over more pools",
	      "sharedSlots 9 x 2048: over");
	/* Split by NUMA: 1024 HCAs each, 16 slots = 16384 each: fine. */
	bound("pools:\n"
	      "- {resourceName: a.io/n0, mode: shared, sharedSlots: 16, selectors: {numaNodes: "
	      "[0]}}\n"
	      "- {resourceName: a.io/n1, mode: shared, sharedSlots: 16, selectors: {numaNodes: "
	      "[1]}}\n",
	      big, 0, NULL, "split pools each at the bound");
	bound("pools: [{resourceName: a.io/x, mode: shared, sharedSlots: 1000}]", dgx, 0, NULL,
	      "sharedSlots 1000 x 10 HCAs");
	disc_node_free(big);
	disc_node_free(dgx);
}

/* ---- config check ------------------------------------------------------------------- */

static char *report(const char *yaml, const struct disc_node *node, int *ret_r,
		    struct rc_error **err)
{
	struct cfg *c = parse_ok(yaml, "report config");
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		abort();
	*ret_r = c ? cfg_report(c, node, f, err) : -EINVAL;
	fclose(f);
	cfg_free(c);
	return buf;
}

static void test_report(void)
{
	struct disc_node *dgx = scan_fixture("dgx"), *quirks = scan_fixture("quirks");
	struct disc_node *big = fake_node(2048);
	struct rc_error *e = NULL;
	char *out;
	int r;

	out = report("kind: rdma.example/hca\nwithMad: true\npools:\n"
		     "- {resourceName: a.io/ib, selectors: {linkLayers: [ib], numaNodes: [0]}}\n"
		     "- {resourceName: a.io/roce, mode: shared, sharedSlots: 4, ncclEnv: true, "
		     "selectors: {linkLayers: [eth]}}\n"
		     "- {resourceName: a.io/vf, selectors: {vf: true}}\n",
		     dgx, &r, &e);
	EQ_INT(r, 0, "report on dgx");
	EQ_STR(out,
	       "kind: rdma.example/hca\n"
	       "specDir: not set\n"
	       "withMad: true\n"
	       "memlock: not set\n"
	       "pools: 3\n"
	       "\n"
	       "pool a.io/ib: exclusive, 4 HCAs, 4 device IDs\n"
	       "  mlx5_0           0000:1a:00.0  InfiniBand numa 0   PF mlx5_core  ibp26s0\n"
	       "  mlx5_1           0000:1b:00.0  InfiniBand numa 0   PF mlx5_core  ibp27s0\n"
	       "  mlx5_2           0000:3b:00.0  InfiniBand numa 0   PF mlx5_core  ibp59s0\n"
	       "  mlx5_3           0000:3c:00.0  InfiniBand numa 0   PF mlx5_core  ibp60s0\n"
	       "\n"
	       "pool a.io/roce: shared, 4 slots per HCA, ncclEnv, 2 HCAs, 8 device IDs\n"
	       "  mlx5_8           0000:5e:00.0  Ethernet   numa 0   PF mlx5_core  ens1np0\n"
	       "  mlx5_9           0000:d8:00.0  Ethernet   numa 1   PF mlx5_core  ens2np0\n"
	       "\n"
	       "pool a.io/vf: exclusive, 0 HCAs, 0 device IDs\n"
	       "\n"
	       "in no pool: 4 usable devices\n"
	       "  mlx5_4           0000:9a:00.0  InfiniBand numa 1   PF mlx5_core  ibp154s0\n"
	       "  mlx5_5           0000:9b:00.0  InfiniBand numa 1   PF mlx5_core  ibp155s0\n"
	       "  mlx5_6           0000:ba:00.0  InfiniBand numa 1   PF mlx5_core  ibp186s0\n"
	       "  mlx5_7           0000:bb:00.0  InfiniBand numa 1   PF mlx5_core  ibp187s0\n"
	       "\n"
	       "warning: pool a.io/vf matches no usable device on this node\n",
	       "config check on dgx");
	free(out);

	out = report("", quirks, &r, &e);
	EQ_INT(r, 0, "report on quirks");
	EQ_STR(out,
	       "kind: not set\n"
	       "specDir: not set\n"
	       "withMad: not set\n"
	       "memlock: not set\n"
	       "pools: 1 (not set: one pool of every usable device)\n"
	       "\n"
	       "pool rdma.example/hca: exclusive, 8 HCAs, 8 device IDs\n"
	       "  mlx5_0           0000:0b:00.0  InfiniBand numa 0   PF mlx5_core  ibp11s0\n"
	       "  ibp12s0          0000:0c:00.0  InfiniBand numa ?   PF mlx5_core  ibp12s0\n"
	       "  rocep59s0f0      0000:3b:00.0  Ethernet   numa 0   PF mlx5_core  enp59s0f0np0\n"
	       "  mlx5_bond_0      0000:3b:00.1  Ethernet   numa 0   PF mlx5_core  bond0\n"
	       "  bnxt_re0         0000:5e:00.0  Ethernet   numa 0   PF bnxt_en    ens5f0np0\n"
	       "  irdma0           0000:af:00.0  Ethernet   numa 1   PF ice        ens7f0\n"
	       "  mlx5_5           0000:d8:00.1  InfiniBand numa ?   PF mlx5_core  ibp216s0f1\n"
	       "  rocep59s0f0S88   -             Ethernet   numa ?   -  mlx5_core.sf enp59s0f0s88\n"
	       "\n"
	       "not usable (no uverbs device): 2\n"
	       "  smi1             0000:0b:00.0  InfiniBand numa 0   PF mlx5_core  -\n"
	       "  mlx5_4           0000:d8:00.0  InfiniBand numa 1   PF mlx5_core  ibp216s0f0\n",
	       "config check on quirks with defaults");
	free(out);

	out = report("pools: [{resourceName: rdma.example/ib, mode: shared, sharedSlots: 100}]",
		     big, &r, &e);
	EQ_INT(r, -E2BIG, "report over the bound fails");
	ok(out && out[0] == '\0', "and writes nothing");
	EQ_STR(
	    tap_err(&e),
	    "pool rdma.example/ib: sharedSlots 100 x 2048 HCAs = 204800 device IDs exceeds 16384 "
	    "(a ListAndWatch message that large nears the kubelet's 4 MiB limit): lower "
	    "sharedSlots or split the HCAs over more pools",
	    "report bound message");
	free(out);

	disc_node_free(dgx);
	disc_node_free(quirks);
	disc_node_free(big);
}

/* ---- every error of a file --------------------------------------------------------- */

/* cfg_parse_all on yaml: the number of errors, each message compared with want[] (in
 * file order), and the one-line summary the daemons log. */
static void all_errors(const char *yaml, int want_r, const char *const *want, size_t n_want,
		       size_t want_more, const char *want_summary, const char *what)
{
	struct cfg_errors errs = {};
	struct cfg *c = NULL;
	struct rc_error *e = NULL;
	int r = cfg_parse_all(yaml, strlen(yaml), "t.yaml", &c, &errs, &e);

	ok(r == want_r && !c, "%s: fails with %d (got %d)", what, want_r, r);
	if (!ok(errs.n == n_want && errs.n_more == want_more, "%s: %zu errors kept, %zu more", what,
		n_want, want_more))
		printf("#   got %zu and %zu more\n", errs.n, errs.n_more);
	for (size_t i = 0; i < errs.n && i < n_want; i++)
		if (!ok(!strcmp(errs.v[i].msg, want[i]), "%s: error %zu", what, i))
			printf("#   want: %s\n#   got:  %s\n", want[i], errs.v[i].msg);
	EQ_STR(tap_err(&e), want_summary, what);
	cfg_errors_clear(&errs);
	cfg_free(c);
}

static void test_all_errors(void)
{
	/* Independent errors in the settings, two pools and a selector list, written out of
	 * the parser's key order: reported in file order, each once. */
	static const char several[] = "withMad: yes\n"
				      "pools:\n"
				      "  - selectors:\n"
				      "      vendors: [\"15b3x\", \"15b3\", \"0\"]\n"
				      "      numaNode: [0]\n"
				      "    resourceName: rdma.example/ib\n"
				      "    mode: sideways\n"
				      "    sharedSlots: 0\n"
				      "  - resourceName: rdma.example/ib\n"
				      "kind: nokind\n";
	static const char *const several_want[] = {
	    "t.yaml:1:10: withMad: expected true or false, got \"yes\"",
	    "t.yaml:4:17: pools[0].selectors.vendors[0]: invalid vendor ID \"15b3x\": expected 1 "
	    "to 4 hex digits such as 15b3, optionally with 0x, not 0",
	    "t.yaml:4:34: pools[0].selectors.vendors[2]: invalid vendor ID \"0\": expected 1 to 4 "
	    "hex digits such as 15b3, optionally with 0x, not 0",
	    "t.yaml:5:7: pools[0].selectors: unknown key \"numaNode\" (did you mean numaNodes?)",
	    "t.yaml:7:11: pools[0].mode: expected exclusive or shared, got \"sideways\"",
	    "t.yaml:8:18: pools[0].sharedSlots: must be between 1 and 1000, got 0",
	    "t.yaml:9:19: pools[1].resourceName: \"rdma.example/ib\" is already the resource of "
	    "pools[0] (line 3): each pool needs its own",
	    "t.yaml:10:7: kind: invalid CDI kind \"nokind\": expected vendor/class, each at "
	    "least 2 characters of letters, digits, '_', '-' (and '.' in the vendor), starting "
	    "with a letter",
	};
	static const char *const syntax_want[] = {
	    "t.yaml:3:10: invalid YAML: mapping values are not allowed in this context"};

	all_errors(several, -EINVAL, several_want, ELEMENTSOF(several_want), 0,
		   "t.yaml:1:10: withMad: expected true or false, got \"yes\" (and 7 more errors)",
		   "eight independent errors");
	/* A YAML syntax error ends the reading: the bad mode before it is never looked at. */
	all_errors("pools:\n  - {resourceName: a.io/b, mode: x}\nkind: a/b: c\n", -EBADMSG,
		   syntax_want, 1, 0, syntax_want[0], "syntax error: only it");
}

/* At most CFG_ERRORS_MAX errors are kept: the first in file order. */
static void test_errors_bound(void)
{
	char *many;
	size_t off = 0;

	/* 150 bad vendor IDs: the first 100 in file order are kept, the rest counted. */
	many = malloc(150 * 16 + 64);
	if (!many)
		abort();
	off += (size_t)sprintf(many,
			       "pools:\n- resourceName: a.io/p\n  selectors:\n    vendors:\n");
	for (int i = 0; i < 150; i++)
		off += (size_t)sprintf(many + off, "    - zz\n");
	{
		struct cfg_errors errs = {};
		struct cfg *c = NULL;
		int r = cfg_parse_all(many, off, "t.yaml", &c, &errs, NULL);

		ok(r == -EINVAL && errs.n == CFG_ERRORS_MAX && errs.n_more == 50,
		   "150 errors: %d kept, 50 counted (got %zu, %zu)", CFG_ERRORS_MAX, errs.n,
		   errs.n_more);
		ok(errs.n == CFG_ERRORS_MAX && errs.v[0].line == 5 && errs.v[99].line == 104,
		   "the kept ones are the first in the file (lines 5 to 104)");
		cfg_errors_clear(&errs);
	}
	/* The mode error is found first (mode is read before selectors) but written last:
	 * the 120 vendor errors found after it, earlier in the file, push it out. */
	off = (size_t)sprintf(many, "pools:\n- selectors:\n    vendors:\n");
	for (int i = 0; i < 120; i++)
		off += (size_t)sprintf(many + off, "    - zz\n");
	off += (size_t)sprintf(many + off, "  resourceName: a.io/p\n  mode: m\n");
	{
		struct cfg_errors errs = {};
		struct cfg *c = NULL;
		int r = cfg_parse_all(many, off, "t.yaml", &c, &errs, NULL);

		ok(r == -EINVAL && errs.n == CFG_ERRORS_MAX && errs.n_more == 21 &&
		       errs.v[99].line == 103 && !strstr(errs.v[99].msg, "mode"),
		   "an error found early but written late gives way to earlier ones");
		cfg_errors_clear(&errs);
	}
	free(many);
}

/* The values both daemons give a container: NCCL's needs "=" (exact match: "mlx5_3"
 * alone would also select mlx5_30), the others are the plain list. */
static void test_env_value(void)
{
	const char *names[] = {"mlx5_3", "mlx5_5"};
	const char *ucx[] = {"mlx5_3:1", "mlx5_5:1,mlx5_5:2"};
	struct {
		const char *key, *const *items;
		size_t n;
		const char *want;
	} cases[] = {
		{CFG_ENV_DEVICES, names, 2, "mlx5_3,mlx5_5"},
		{CFG_ENV_NCCL_IB_HCA, names, 2, "=mlx5_3,mlx5_5"},
		{CFG_ENV_NCCL_IB_HCA, names, 1, "=mlx5_3"},
		{CFG_ENV_UCX_NET_DEVICES, ucx, 2, "mlx5_3:1,mlx5_5:1,mlx5_5:2"},
		{NULL, names, 2, "mlx5_3,mlx5_5"},
		{CFG_ENV_DEVICES, names, 0, ""},
		{CFG_ENV_NCCL_IB_HCA, names, 0, "="},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *v = cfg_env_value(cases[i].key, cases[i].items, cases[i].n);

		ok(v && strcmp(v, cases[i].want) == 0, "cfg_env_value %s of %zu: \"%s\" (got \"%s\")",
		   cases[i].key ? cases[i].key : "(list)", cases[i].n, cases[i].want, v ? v : "NULL");
		free(v);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s TESTS_DATA_DIR\n", argv[0]);
		return 2;
	}
	data_dir = argv[1];
	test_example();
	test_minimal_and_defaults();
	test_errors();
	test_all_errors();
	test_errors_bound();
	test_bounds();
	test_glob();
	test_equal();
	test_load();
	test_dgx();
	test_sriov();
	test_quirks();
	test_bound();
	test_report();
	test_env_value();
	return tap_done();
}
