/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config file parser: one bounded YAML document as a tree (common yaml-doc.h: every
 * value keeps its line and column and checks may look at a whole mapping) -> struct cfg.
 */
#include <ctype.h>
#include <fcntl.h>
#include <string.h>

#include "cdi.h"
#include "config-internal.h"
#include "yaml-doc.h"

#define fail(x, n, path, ...) ydoc_fail((x), -EINVAL, (n), (path), __VA_ARGS__)

/* A scalar string (plain or quoted, not empty/null), at most max bytes, no NUL. */
static int get_string(const struct ydoc *x, const struct ydoc_node *n, const char *path, size_t max,
		      const char **ret)
{
	const char *s = NULL;
	int r;

	r = ydoc_string(x, n, path, max, &s);
	if (r < 0)
		return r;
	if (n->len == 0)
		return fail(x, n, path, "empty string");
	*ret = s;
	return 0;
}

/* ---- mappings ----------------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[65];

	if (la > 64 || lb > 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], cost = tolower((unsigned char)a[i - 1]) !=
						   tolower((unsigned char)b[j - 1]);
			size_t best = diag + cost;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/*
 * Checks map (a mapping of string keys, each once) against keys[]: an unknown key is an
 * error naming the nearest known one. Returns each known key's value in vals[] and key
 * node in knodes[] (NULL: absent).
 */
static int map_fields(const struct ydoc *x, const struct ydoc_node *map, const char *path,
		      const char *const *keys, size_t n_keys, const struct ydoc_node **vals,
		      const struct ydoc_node **knodes)
{
	char q[96], known[512];
	int r;

	r = ydoc_map(x, map, path);
	if (r < 0)
		return r;
	for (size_t k = 0; k < n_keys; k++) {
		knodes[k] = NULL;
		vals[k] = ydoc_get(map, keys[k], &knodes[k]);
	}
	for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
		const struct ydoc_node *key = map->kids[i];
		size_t k, best = 0, best_d = (size_t)-1, o = 0;

		for (k = 0; k < n_keys; k++)
			if (knodes[k] == key)
				break;
		if (k < n_keys)
			continue;
		for (k = 0; k < n_keys; k++) {
			size_t d = edit_distance(key->value, keys[k]);

			if (d < best_d) {
				best_d = d;
				best = k;
			}
		}
		text_quote(q, sizeof(q), key->value, key->len);
		if (best_d <= 2 && best_d < strlen(keys[best]))
			return fail(x, key, path, "unknown key %s (did you mean %s?)", q,
				    keys[best]);
		for (k = 0; k < n_keys; k++)
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", k ? ", " : "",
					      keys[k]);
		return fail(x, key, path, "unknown key %s (known keys: %s)", q, known);
	}
	return 0;
}

/* A selector list: a YAML sequence of 1..CFG_VALUES_MAX items. */
static int need_list(const struct ydoc *x, const struct ydoc_node *n, const char *path)
{
	if (n->type != YDOC_SEQ)
		return fail(x, n, path, "expected a list (one value is written [value]), got %s",
			    ydoc_kind(n));
	if (n->n_kids == 0)
		return fail(x, n, path, "empty list (leave the key out to select any value)");
	if (n->n_kids > CFG_VALUES_MAX)
		return fail(x, n, path, "more than %d values", CFG_VALUES_MAX);
	return 0;
}

/* ---- value rules -------------------------------------------------------------------- */

/* Name part of a qualified name: <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends. */
static bool qualified_name_part_is_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || !ascii_is_alnum(s[0]) || !ascii_is_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!ascii_is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* The kubelet's IsExtendedResourceName, as the bridge checks --resource. */
const char *cfg_resource_name_problem(const char *name)
{
	static const char requests[] = "requests.";
	const char *slash;

	if (!name || !*name)
		return "empty resource name";
	slash = strchr(name, '/');
	if (!slash)
		return "expected domain/name";
	if (strstr(name, "kubernetes.io/"))
		return "the kubernetes.io domain is reserved for native resources";
	if (strncmp(name, requests, sizeof(requests) - 1) == 0)
		return "may not start with \"requests.\"";
	if (strchr(slash + 1, '/'))
		return "more than one '/'";
	/* The kubelet validates "requests." + name as a qualified name (for quota), so
	 * the domain gets 253 - 9 characters. */
	if ((size_t)(slash - name) + sizeof(requests) - 1 > 253)
		return "domain longer than 244 characters";
	if (!dns_subdomain_is_valid_len(name, (size_t)(slash - name)))
		return "the domain must be a DNS subdomain: dot-separated labels of lower-case "
		       "letters, digits and '-'";
	if (!qualified_name_part_is_valid(slash + 1))
		return "the name after '/' must be 1 to 63 characters of [A-Za-z0-9_.-], "
		       "starting and ending with a letter or digit";
	return NULL;
}

/* Globs and names: printable ASCII, no '/' (never part of a name) and no space. */
static bool pattern_is_valid(const char *s)
{
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f || *s == '/')
			return false;
	return true;
}

/* 1..4 hex digits, optional 0x, not 0 (discovery's "unknown"). */
static int parse_hex_id(const char *s, unsigned *ret)
{
	unsigned v = 0;
	size_t n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++, n++) {
		if (!isxdigit((unsigned char)*s) || n >= 4)
			return -EINVAL;
		v = v * 16 + (unsigned)(isdigit((unsigned char)*s)
					    ? *s - '0'
					    : tolower((unsigned char)*s) - 'a' + 10);
	}
	if (n == 0 || v == 0)
		return -EINVAL;
	*ret = v;
	return 0;
}

static const char *link_layer_normalise(const char *s)
{
	static const struct {
		const char *alias, *name;
	} map[] = {
	    {"infiniband", "InfiniBand"}, {"ib", "InfiniBand"}, {"ethernet", "Ethernet"},
	    {"ether", "Ethernet"},	  {"eth", "Ethernet"},
	};

	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (strcasecmp(s, map[i].alias) == 0)
			return map[i].name;
	return NULL;
}

/* ---- selectors ---------------------------------------------------------------------- */

enum str_rule { STR_PATTERN, STR_DRIVER, STR_LINK_LAYER };

/*
 * A selector list: each item parsed by item() into its slot of a calloc'd array of
 * elem-byte slots. *ret gets the array as soon as it exists and *ret_n counts the items
 * parsed, so cfg_free() frees what an error leaves behind.
 */
static int parse_list(const struct ydoc *x, const struct ydoc_node *n, const char *path,
		      size_t elem,
		      int (*item)(const struct ydoc *x, const struct ydoc_node *it,
				  const char *ipath, const void *data, void *slot),
		      const void *data, void **ret, size_t *ret_n)
{
	char ipath[192];
	char *v;
	int r;

	r = need_list(x, n, path);
	if (r < 0)
		return r;
	v = calloc(n->n_kids, elem);
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (size_t i = 0; i < n->n_kids; i++) {
		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		r = item(x, n->kids[i], ipath, data, v + i * elem);
		if (r < 0)
			return r;
		(*ret_n)++;
	}
	return 0;
}

static int str_item(const struct ydoc *x, const struct ydoc_node *it, const char *ipath,
		    const void *data, void *slot)
{
	enum str_rule rule = *(const enum str_rule *)data;
	const char *s = NULL, *norm = NULL, *why;
	char q[96];
	int r;

	r = get_string(x, it, ipath, CFG_PATTERN_MAX, &s);
	if (r < 0)
		return r;
	text_quote(q, sizeof(q), s, it->len);
	switch (rule) {
	case STR_PATTERN:
		if (!pattern_is_valid(s))
			return fail(x, it, ipath,
				    "invalid pattern %s: printable ASCII without spaces or '/'", q);
		why = cfg_glob_problem(s);
		if (why)
			return fail(x, it, ipath, "invalid pattern %s: %s", q, why);
		break;
	case STR_DRIVER:
		if (!name_is_safe(s, DISC_NAME_MAX - 1))
			return fail(x, it, ipath,
				    "invalid driver name %s: up to %d characters of "
				    "[A-Za-z0-9_.:-]",
				    q, DISC_NAME_MAX - 1);
		break;
	case STR_LINK_LAYER:
		norm = link_layer_normalise(s);
		if (!norm)
			return fail(x, it, ipath,
				    "unknown link layer %s (expected InfiniBand or Ethernet)", q);
		break;
	}
	*(char **)slot = strdup(norm ? norm : s);
	return *(char **)slot ? 0 : -ENOMEM;
}

static int hex_item(const struct ydoc *x, const struct ydoc_node *it, const char *ipath,
		    const void *data, void *slot)
{
	const char *s = NULL;
	char q[96];
	int r;

	r = get_string(x, it, ipath, CFG_PATTERN_MAX, &s);
	if (r < 0)
		return r;
	if (parse_hex_id(s, slot) < 0)
		return fail(x, it, ipath,
			    "invalid %s %s: expected 1 to 4 hex digits such as 15b3, "
			    "optionally with 0x, not 0",
			    (const char *)data, text_quote(q, sizeof(q), s, it->len));
	return 0;
}

static int numa_item(const struct ydoc *x, const struct ydoc_node *it, const char *ipath,
		     const void *data _unused_, void *slot)
{
	long long num;
	int r;

	r = ydoc_int(x, it, ipath, 0, CFG_NUMA_MAX, &num);
	if (r < 0)
		return r;
	*(int *)slot = (int)num;
	return 0;
}

static int parse_str_list(const struct ydoc *x, const struct ydoc_node *n, const char *path,
			  enum str_rule rule, char ***ret, size_t *ret_n)
{
	void *v = NULL;
	int r = parse_list(x, n, path, sizeof(char *), str_item, &rule, &v, ret_n);

	*ret = v;
	return r;
}

static int parse_hex_list(const struct ydoc *x, const struct ydoc_node *n, const char *path,
			  const char *what, unsigned **ret, size_t *ret_n)
{
	void *v = NULL;
	int r = parse_list(x, n, path, sizeof(unsigned), hex_item, what, &v, ret_n);

	*ret = v;
	return r;
}

enum {
	SEL_LINK_LAYERS,
	SEL_VENDORS,
	SEL_DEVICE_IDS,
	SEL_DRIVERS,
	SEL_NAMES,
	SEL_NETDEVS,
	SEL_PCI_ADDRESSES,
	SEL_PF_NAMES,
	SEL_VF,
	SEL_NUMA_NODES,
	SEL_N,
};

static const char *const selector_keys[SEL_N] = {
    [SEL_LINK_LAYERS] = "linkLayers",
    [SEL_VENDORS] = "vendors",
    [SEL_DEVICE_IDS] = "deviceIDs",
    [SEL_DRIVERS] = "drivers",
    [SEL_NAMES] = "names",
    [SEL_NETDEVS] = "netdevs",
    [SEL_PCI_ADDRESSES] = "pciAddresses",
    [SEL_PF_NAMES] = "pfNames",
    [SEL_VF] = "vf",
    [SEL_NUMA_NODES] = "numaNodes",
};

static int parse_selectors(const struct ydoc *x, const struct ydoc_node *n, const char *path,
			   struct cfg_selectors *s)
{
	const struct ydoc_node *v[SEL_N], *k[SEL_N];
	char p[SEL_N][160];
	int r;

	r = map_fields(x, n, path, selector_keys, SEL_N, v, k);
	if (r < 0)
		return r;
	for (size_t i = 0; i < SEL_N; i++)
		snprintf(p[i], sizeof(p[i]), "%s.%s", path, selector_keys[i]);

	if (v[SEL_LINK_LAYERS] &&
	    (r = parse_str_list(x, v[SEL_LINK_LAYERS], p[SEL_LINK_LAYERS], STR_LINK_LAYER,
				&s->link_layers, &s->n_link_layers)) < 0)
		return r;
	if (v[SEL_VENDORS] && (r = parse_hex_list(x, v[SEL_VENDORS], p[SEL_VENDORS], "vendor ID",
						  &s->vendors, &s->n_vendors)) < 0)
		return r;
	if (v[SEL_DEVICE_IDS] &&
	    (r = parse_hex_list(x, v[SEL_DEVICE_IDS], p[SEL_DEVICE_IDS], "device ID",
				&s->device_ids, &s->n_device_ids)) < 0)
		return r;
	if (v[SEL_DRIVERS] && (r = parse_str_list(x, v[SEL_DRIVERS], p[SEL_DRIVERS], STR_DRIVER,
						  &s->drivers, &s->n_drivers)) < 0)
		return r;
	if (v[SEL_NAMES] && (r = parse_str_list(x, v[SEL_NAMES], p[SEL_NAMES], STR_PATTERN,
						&s->names, &s->n_names)) < 0)
		return r;
	if (v[SEL_NETDEVS] && (r = parse_str_list(x, v[SEL_NETDEVS], p[SEL_NETDEVS], STR_PATTERN,
						  &s->netdevs, &s->n_netdevs)) < 0)
		return r;
	if (v[SEL_PCI_ADDRESSES] &&
	    (r = parse_str_list(x, v[SEL_PCI_ADDRESSES], p[SEL_PCI_ADDRESSES], STR_PATTERN,
				&s->pci_addresses, &s->n_pci_addresses)) < 0)
		return r;
	if (v[SEL_PF_NAMES] && (r = parse_str_list(x, v[SEL_PF_NAMES], p[SEL_PF_NAMES], STR_PATTERN,
						   &s->pf_names, &s->n_pf_names)) < 0)
		return r;
	if (v[SEL_VF]) {
		bool b;

		r = ydoc_bool(x, v[SEL_VF], p[SEL_VF], false, &b);
		if (r < 0)
			return r;
		s->vf = b;
	}
	if (v[SEL_NUMA_NODES]) {
		void *nodes = NULL;

		r = parse_list(x, v[SEL_NUMA_NODES], p[SEL_NUMA_NODES], sizeof(int), numa_item,
			       NULL, &nodes, &s->n_numa_nodes);
		s->numa_nodes = nodes;
		if (r < 0)
			return r;
	}
	/* pfNames selects VFs: "vf: false" with it can never match anything. */
	if (v[SEL_PF_NAMES] && v[SEL_VF] && s->vf == 0)
		return fail(x, v[SEL_VF], p[SEL_VF],
			    "false contradicts pfNames, which selects VFs only");
	return 0;
}

/* ---- pools -------------------------------------------------------------------------- */

enum { POOL_RESOURCE, POOL_MODE, POOL_SLOTS, POOL_NCCL, POOL_NETNS, POOL_SELECTORS, POOL_N };

static const char *const pool_keys[POOL_N] = {
    [POOL_RESOURCE] = "resourceName", [POOL_MODE] = "mode",	      [POOL_SLOTS] = "sharedSlots",
    [POOL_NCCL] = "ncclEnv",	      [POOL_NETNS] = "netns",	      [POOL_SELECTORS] = "selectors",
};

/* A scalar that must be one of two words (mode, netns): *ret the word's index. */
static int parse_word2(const struct ydoc *x, const struct ydoc_node *n, const char *path,
		       const char *w0, const char *w1, int *ret)
{
	char g[160];

	if (n->type == YDOC_SCALAR && (!strcmp(n->value, w0) || !strcmp(n->value, w1))) {
		*ret = strcmp(n->value, w0) ? 1 : 0;
		return 0;
	}
	return fail(x, n, path, "expected %s or %s, %s", w0, w1, ydoc_got(g, sizeof(g), n));
}

/* netns: move gives each device to the one container's network namespace; a shared pool
 * gives one device to several pods at once, so the two cannot go together. */
static int parse_pool_netns(const struct ydoc *x, const struct ydoc_node *n, const char *path,
			    struct cfg_pool *p)
{
	int w, r;

	r = parse_word2(x, n, path, "none", "move", &w);
	if (r < 0)
		return r;
	p->netns = w ? CFG_NETNS_MOVE : CFG_NETNS_NONE;
	if (p->netns == CFG_NETNS_MOVE && p->mode == CFG_MODE_SHARED)
		return fail(x, n, path,
			    "move needs mode: exclusive (a device in one pod's network "
			    "namespace cannot be shared with other pods)");
	return 0;
}

static int parse_pool(const struct ydoc *x, const struct ydoc_node *n, const char *path,
		      struct cfg_pool *p, const struct ydoc_node **ret_resource)
{
	const struct ydoc_node *v[POOL_N], *k[POOL_N];
	char kp[POOL_N][96], q[96];
	const char *s = NULL, *why;
	int r;

	p->sel.vf = -1;
	p->line = n->line;
	p->column = n->column;
	r = map_fields(x, n, path, pool_keys, POOL_N, v, k);
	if (r < 0)
		return r;
	for (size_t i = 0; i < POOL_N; i++)
		snprintf(kp[i], sizeof(kp[i]), "%s.%s", path, pool_keys[i]);

	if (!v[POOL_RESOURCE])
		return fail(x, n, path,
			    "resourceName missing (the kubelet resource, e.g. "
			    "rdma.example/ib)");
	r = get_string(x, v[POOL_RESOURCE], kp[POOL_RESOURCE], 253 + 1 + 63, &s);
	if (r < 0)
		return r;
	why = cfg_resource_name_problem(s);
	if (why)
		return fail(x, v[POOL_RESOURCE], kp[POOL_RESOURCE], "invalid resource name %s: %s",
			    text_quote(q, sizeof(q), s, v[POOL_RESOURCE]->len), why);
	p->resource_name = strdup(s);
	if (!p->resource_name)
		return -ENOMEM;
	*ret_resource = v[POOL_RESOURCE];

	p->mode = CFG_MODE_EXCLUSIVE;
	if (v[POOL_MODE]) {
		int w;

		r = parse_word2(x, v[POOL_MODE], kp[POOL_MODE], "exclusive", "shared", &w);
		if (r < 0)
			return r;
		p->mode = w ? CFG_MODE_SHARED : CFG_MODE_EXCLUSIVE;
	}
	if (v[POOL_SLOTS]) {
		long long slots;

		if (p->mode != CFG_MODE_SHARED)
			return fail(
			    x, k[POOL_SLOTS], kp[POOL_SLOTS],
			    "only valid with mode: shared (an exclusive pool gives each HCA "
			    "to one pod)");
		r = ydoc_int(x, v[POOL_SLOTS], kp[POOL_SLOTS], 1, CFG_SHARED_SLOTS_MAX, &slots);
		if (r < 0)
			return r;
		p->shared_slots = (unsigned)slots;
	} else if (p->mode == CFG_MODE_SHARED) {
		return fail(x, v[POOL_MODE], kp[POOL_SLOTS],
			    "required with mode: shared (pods per HCA, 1 to %d)",
			    CFG_SHARED_SLOTS_MAX);
	}
	if (v[POOL_NCCL] &&
	    (r = ydoc_bool(x, v[POOL_NCCL], kp[POOL_NCCL], false, &p->nccl_env)) < 0)
		return r;
	if (v[POOL_NETNS] && (r = parse_pool_netns(x, v[POOL_NETNS], kp[POOL_NETNS], p)) < 0)
		return r;
	if (v[POOL_SELECTORS] &&
	    (r = parse_selectors(x, v[POOL_SELECTORS], kp[POOL_SELECTORS], &p->sel)) < 0)
		return r;
	return 0;
}

static int parse_pools(const struct ydoc *x, const struct ydoc_node *n, struct cfg *c)
{
	const struct ydoc_node *res[CFG_POOLS_MAX];
	char path[64], q[96];
	int r;

	if (n->type != YDOC_SEQ)
		return fail(x, n, "pools", "expected a list of pools, got %s", ydoc_kind(n));
	if (n->n_kids == 0)
		return fail(x, n, "pools",
			    "empty list: at least one pool is needed (leave pools out for one "
			    "pool of every device)");
	if (n->n_kids > CFG_POOLS_MAX)
		return fail(x, n->kids[CFG_POOLS_MAX], "pools", "more than %d pools",
			    CFG_POOLS_MAX);
	c->pools = calloc(n->n_kids, sizeof(*c->pools));
	if (!c->pools)
		return -ENOMEM;
	for (size_t i = 0; i < n->n_kids; i++) {
		snprintf(path, sizeof(path), "pools[%zu]", i);
		c->n_pools++;
		r = parse_pool(x, n->kids[i], path, &c->pools[i], &res[i]);
		if (r < 0)
			return r;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->pools[j].resource_name, c->pools[i].resource_name)) {
				snprintf(path, sizeof(path), "pools[%zu].resourceName", i);
				return fail(x, res[i], path,
					    "%s is already the resource of pools[%zu] (line %u): "
					    "each pool needs its own",
					    text_quote(q, sizeof(q), c->pools[i].resource_name,
						       strlen(c->pools[i].resource_name)),
					    j, c->pools[j].line);
			}
	}
	c->pools_set = true;
	return 0;
}

/* ---- the document ------------------------------------------------------------------- */

enum { TOP_KIND, TOP_SPEC_DIR, TOP_WITH_MAD, TOP_MEMLOCK, TOP_POOLS, TOP_N };

static const char *const top_keys[TOP_N] = {
    [TOP_KIND] = "kind",       [TOP_SPEC_DIR] = "specDir", [TOP_WITH_MAD] = "withMad",
    [TOP_MEMLOCK] = "memlock", [TOP_POOLS] = "pools",
};

static int set_string(char **dst, const char *s)
{
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

static int parse_document(const struct ydoc *x, const struct ydoc_node *root, struct cfg *c)
{
	const struct ydoc_node *v[TOP_N], *k[TOP_N];
	char q[96];
	const char *s = NULL;
	int r;

	if (root->type != YDOC_MAP)
		return fail(x, root, NULL,
			    "a config is a mapping of settings (kind, specDir, withMad, memlock, "
			    "pools), got %s",
			    ydoc_kind(root));
	r = map_fields(x, root, NULL, top_keys, TOP_N, v, k);
	if (r < 0)
		return r;
	if (v[TOP_KIND]) {
		r = get_string(x, v[TOP_KIND], "kind", CDI_KIND_MAX, &s);
		if (r < 0)
			return r;
		if (!cdi_kind_is_valid(s))
			return fail(x, v[TOP_KIND], "kind",
				    "invalid CDI kind %s: expected vendor/class, each at least 2 "
				    "characters of letters, digits, '_', '-' (and '.' in the "
				    "vendor), starting with a letter",
				    text_quote(q, sizeof(q), s, v[TOP_KIND]->len));
		if ((r = set_string(&c->kind, s)) < 0)
			return r;
	}
	if (v[TOP_SPEC_DIR]) {
		r = get_string(x, v[TOP_SPEC_DIR], "specDir", CFG_PATH_MAX, &s);
		if (r < 0)
			return r;
		if (s[0] != '/')
			return fail(x, v[TOP_SPEC_DIR], "specDir",
				    "must be an absolute path, got %s",
				    text_quote(q, sizeof(q), s, v[TOP_SPEC_DIR]->len));
		if ((r = set_string(&c->spec_dir, s)) < 0)
			return r;
	}
	if (v[TOP_WITH_MAD]) {
		bool b;

		r = ydoc_bool(x, v[TOP_WITH_MAD], "withMad", false, &b);
		if (r < 0)
			return r;
		c->with_mad = b;
	}
	if (v[TOP_MEMLOCK]) {
		r = get_string(x, v[TOP_MEMLOCK], "memlock", 64, &s);
		if (r < 0)
			return r;
		if (parse_memlock(s, &(rlim_t){0}) < 0)
			return fail(x, v[TOP_MEMLOCK], "memlock",
				    "expected unlimited or a positive byte count with an optional "
				    "K, M or G suffix, got %s",
				    text_quote(q, sizeof(q), s, v[TOP_MEMLOCK]->len));
		if ((r = set_string(&c->memlock, s)) < 0)
			return r;
	}
	if (v[TOP_POOLS])
		return parse_pools(x, v[TOP_POOLS], c);
	return 0;
}

int cfg_parse(const char *buf, size_t len, const char *filename, struct cfg **ret,
	      struct rc_error **err)
{
	static const struct ydoc_limits lim = {
	    .max_depth = CFG_DEPTH_MAX, .max_nodes = CFG_NODES_MAX, .what = "a config"};
	const struct ydoc x = {.file = filename ? filename : "<config>", .err = err};
	_cleanup_(ydoc_node_freep) struct ydoc_node *root = NULL;
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	int r;

	if (len > CFG_FILE_MAX)
		return ydoc_fail(&x, -EFBIG, NULL, NULL, "larger than %d bytes", CFG_FILE_MAX);
	r = ydoc_load(&x, buf, len, &lim, &root);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ydoc_fail(&x, -ENOMEM, NULL, NULL, "out of memory");
	c->with_mad = -1;
	/* No document, or an empty one ("---" alone, "~"): every default. */
	if (root && !ydoc_is_null(root)) {
		r = parse_document(&x, root, c);
		if (r == -ENOMEM)
			return ydoc_fail(&x, -ENOMEM, NULL, NULL, "out of memory");
		if (r < 0)
			return r;
	}
	if (!c->pools_set && cfg_default_pool(c) < 0)
		return ydoc_fail(&x, -ENOMEM, NULL, NULL, "out of memory");
	*ret = TAKE_PTR(c);
	return 0;
}

int cfg_load(const char *path, struct cfg **ret, struct rc_error **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_full_file_at(AT_FDCWD, path, CFG_FILE_MAX, false, &buf, &len);
	if (r == -EFBIG)
		return rc_error_set(err, r, "%s: larger than %d bytes", path, CFG_FILE_MAX);
	if (r == -EBADFD)
		return rc_error_set(err, r, "%s: not a regular file", path);
	if (r < 0)
		return rc_error_wrap(err, r, "%s", path);
	return cfg_parse(buf, len, path, ret, err);
}
