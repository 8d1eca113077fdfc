/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config file parser: one bounded YAML document as a tree (common yaml-doc.h: every
 * value keeps its line and column and checks may look at a whole mapping) -> struct cfg.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>

#include "cdi.h"
#include "config-internal.h"
#include "yaml-doc.h"

#define fail(x, n, path, ...) ydoc_fail((x), -EINVAL, (n), (path), __VA_ARGS__)

/*
 * One parse. Every check reports through x (ydoc_fail into cur, as one rc_error); keep()
 * then moves that error to the list, so that the parse goes on with the next key, item or
 * pool and a file's errors are all found in one run. x comes first: the functions below
 * get only x, and keep() finds the rest from it.
 */
struct parser {
	struct ydoc x;
	struct rc_error *cur;
	struct cfg_errors *errors;
};
_Static_assert(offsetof(struct parser, x) == 0, "keep() casts x to its parser");

/* "FILE:LINE:COLUMN: ..." -> LINE and COLUMN; 0 for a message without them. */
static void msg_position(const char *file, const char *msg, unsigned *line, unsigned *column)
{
	size_t n = strlen(file);

	*line = *column = 0;
	if (strncmp(msg, file, n) != 0 || msg[n] != ':' ||
	    sscanf(msg + n + 1, "%u:%u:", line, column) != 2)
		*line = *column = 0;
}

/* Moves the error in p->cur (set by a failed check) to the list. 0 or -ENOMEM. */
static int record(struct parser *p)
{
	unsigned line = 0, column = 0;
	/* A check that failed without saying why would be a bug: still an error. */
	char *msg = p->cur ? strdup(p->cur->msg) : strdup_printf("%s: invalid config", p->x.file);

	if (msg)
		msg_position(p->x.file, msg, &line, &column);
	rc_error_freep(&p->cur);
	return cfg_errors_add(p->errors, msg, line, column);
}

/*
 * After a check returned r: an invalid value (-EINVAL) is recorded and the caller goes on
 * (0); anything else (-ENOMEM) ends the parse and is returned.
 */
static int keep(const struct ydoc *x, int r)
{
	return r == -EINVAL ? record((struct parser *)x) : r;
}

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

/* An unknown key: the error names the nearest known one, or them all. */
static int unknown_key(const struct ydoc *x, const struct ydoc_node *key, const char *path,
		       const char *const *keys, size_t n_keys)
{
	char q[96], known[512];
	size_t best = 0, best_d = (size_t)-1, o = 0;

	for (size_t k = 0; k < n_keys; k++) {
		size_t d = edit_distance(key->value, keys[k]);

		if (d < best_d) {
			best_d = d;
			best = k;
		}
	}
	text_quote(q, sizeof(q), key->value, key->len);
	if (best_d <= 2 && best_d < strlen(keys[best]))
		return fail(x, key, path, "unknown key %s (did you mean %s?)", q, keys[best]);
	for (size_t k = 0; k < n_keys; k++)
		o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", k ? ", " : "", keys[k]);
	return fail(x, key, path, "unknown key %s (known keys: %s)", q, known);
}

/*
 * Checks map (a mapping of string keys, each once) against keys[]: each unknown key is an
 * error naming the nearest known one. Returns each known key's value in vals[] and key
 * node in knodes[] (NULL: absent). Errors in the keys are kept (keep()) and the known keys
 * still read; only a value that is no mapping at all fails.
 */
static int map_fields(const struct ydoc *x, const struct ydoc_node *map, const char *path,
		      const char *const *keys, size_t n_keys, const struct ydoc_node **vals,
		      const struct ydoc_node **knodes)
{
	int r;

	r = ydoc_map(x, map, path);
	if (r < 0 && (map->type != YDOC_MAP || (r = keep(x, r)) < 0))
		return r;
	for (size_t k = 0; k < n_keys; k++) {
		knodes[k] = NULL;
		vals[k] = ydoc_get(map, keys[k], &knodes[k]);
	}
	for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
		const struct ydoc_node *key = map->kids[i];
		size_t k;

		/* ydoc_map() reported a key that is not a string. */
		if (key->type != YDOC_SCALAR || ydoc_is_null(key))
			continue;
		for (k = 0; k < n_keys; k++)
			if (knodes[k] == key ||
			    (knodes[k] && !strcmp(knodes[k]->value, key->value)))
				break;
		if (k == n_keys && (r = keep(x, unknown_key(x, key, path, keys, n_keys))) < 0)
			return r;
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
const char *cfg_pattern_problem(const char *s)
{
	if (!*s)
		return "empty";
	if (strlen(s) > CFG_PATTERN_MAX)
		return "longer than " CFG_STR(CFG_PATTERN_MAX) " characters";
	for (const char *p = s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '/')
			return "printable ASCII without spaces or '/'";
	return cfg_glob_problem(s);
}

bool cfg_driver_is_valid(const char *s)
{
	return name_is_safe(s, DISC_NAME_MAX - 1);
}

/* 1..4 hex digits, optional 0x, not 0 (discovery's "unknown"). */
int cfg_parse_hex_id(const char *s, unsigned *ret)
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
 * A selector list: each item parsed by item() into the next slot of a calloc'd array of
 * elem-byte slots; an item in error is kept (keep()) and skipped. *ret gets the array as
 * soon as it exists and *ret_n counts the items parsed, so cfg_free() frees what an error
 * leaves behind.
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
		r = item(x, n->kids[i], ipath, data, v + *ret_n * elem);
		if (r == 0)
			(*ret_n)++;
		else if ((r = keep(x, r)) < 0)
			return r;
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
		why = cfg_pattern_problem(s);
		if (why)
			return fail(x, it, ipath, "invalid pattern %s: %s", q, why);
		break;
	case STR_DRIVER:
		if (!cfg_driver_is_valid(s))
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
	if (cfg_parse_hex_id(s, slot) < 0)
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

static int parse_selector(const struct ydoc *x, const struct ydoc_node *v, const char *path,
			  size_t key, struct cfg_selectors *s)
{
	void *nodes = NULL;
	bool b;
	int r;

	switch (key) {
	case SEL_LINK_LAYERS:
		return parse_str_list(x, v, path, STR_LINK_LAYER, &s->link_layers,
				      &s->n_link_layers);
	case SEL_VENDORS:
		return parse_hex_list(x, v, path, "vendor ID", &s->vendors, &s->n_vendors);
	case SEL_DEVICE_IDS:
		return parse_hex_list(x, v, path, "device ID", &s->device_ids, &s->n_device_ids);
	case SEL_DRIVERS:
		return parse_str_list(x, v, path, STR_DRIVER, &s->drivers, &s->n_drivers);
	case SEL_NAMES:
		return parse_str_list(x, v, path, STR_PATTERN, &s->names, &s->n_names);
	case SEL_NETDEVS:
		return parse_str_list(x, v, path, STR_PATTERN, &s->netdevs, &s->n_netdevs);
	case SEL_PCI_ADDRESSES:
		return parse_str_list(x, v, path, STR_PATTERN, &s->pci_addresses,
				      &s->n_pci_addresses);
	case SEL_PF_NAMES:
		return parse_str_list(x, v, path, STR_PATTERN, &s->pf_names, &s->n_pf_names);
	case SEL_VF:
		r = ydoc_bool(x, v, path, false, &b);
		if (r == 0)
			s->vf = b;
		return r;
	case SEL_NUMA_NODES:
		r = parse_list(x, v, path, sizeof(int), numa_item, NULL, &nodes, &s->n_numa_nodes);
		s->numa_nodes = nodes;
		return r;
	}
	return 0;
}

static int parse_selectors(const struct ydoc *x, const struct ydoc_node *n, const char *path,
			   struct cfg_selectors *s)
{
	const struct ydoc_node *v[SEL_N], *k[SEL_N];
	char p[160];
	int r;

	r = map_fields(x, n, path, selector_keys, SEL_N, v, k);
	if (r < 0)
		return r;
	for (size_t i = 0; i < SEL_N; i++) {
		snprintf(p, sizeof(p), "%s.%s", path, selector_keys[i]);
		if (v[i] && (r = keep(x, parse_selector(x, v[i], p, i, s))) < 0)
			return r;
	}
	/* pfNames selects VFs: "vf: false" with it can never match anything. */
	snprintf(p, sizeof(p), "%s.%s", path, selector_keys[SEL_VF]);
	if (v[SEL_PF_NAMES] && s->vf == 0)
		return fail(x, v[SEL_VF], p, "false contradicts pfNames, which selects VFs only");
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

static int parse_pool_resource(const struct ydoc *x, const struct ydoc_node *n,
			       const char *path, struct cfg_pool *p)
{
	const char *s = NULL, *why;
	char q[96];
	int r;

	r = get_string(x, n, path, 253 + 1 + 63, &s);
	if (r < 0)
		return r;
	why = cfg_resource_name_problem(s);
	if (why)
		return fail(x, n, path, "invalid resource name %s: %s",
			    text_quote(q, sizeof(q), s, n->len), why);
	p->resource_name = strdup(s);
	return p->resource_name ? 0 : -ENOMEM;
}

/* mode and sharedSlots, which only make sense together. */
static int parse_pool_mode(const struct ydoc *x, const struct ydoc_node *const *v,
			   const struct ydoc_node *const *k, char (*kp)[96], struct cfg_pool *p)
{
	long long slots;
	int w = 0, r = 0;

	if (v[POOL_MODE])
		r = parse_word2(x, v[POOL_MODE], kp[POOL_MODE], "exclusive", "shared", &w);
	p->mode = w ? CFG_MODE_SHARED : CFG_MODE_EXCLUSIVE;
	if (r < 0) {
		/* An invalid mode is one error: none about sharedSlots on top of it. */
		if ((r = keep(x, r)) < 0 || !v[POOL_SLOTS])
			return r;
		return ydoc_int(x, v[POOL_SLOTS], kp[POOL_SLOTS], 1, CFG_SHARED_SLOTS_MAX, &slots);
	}
	if (v[POOL_SLOTS] && p->mode != CFG_MODE_SHARED)
		return fail(x, k[POOL_SLOTS], kp[POOL_SLOTS],
			    "only valid with mode: shared (an exclusive pool gives each HCA to one "
			    "pod)");
	if (!v[POOL_SLOTS] && p->mode == CFG_MODE_SHARED)
		return fail(x, v[POOL_MODE], kp[POOL_SLOTS],
			    "required with mode: shared (pods per HCA, 1 to %d)",
			    CFG_SHARED_SLOTS_MAX);
	if (!v[POOL_SLOTS])
		return 0;
	r = ydoc_int(x, v[POOL_SLOTS], kp[POOL_SLOTS], 1, CFG_SHARED_SLOTS_MAX, &slots);
	if (r == 0)
		p->shared_slots = (unsigned)slots;
	return r;
}

/* One pool; its errors are kept (keep()) key by key. *ret_resource: the resourceName
 * node when the name is valid. */
static int parse_pool(const struct ydoc *x, const struct ydoc_node *n, const char *path,
		      struct cfg_pool *p, const struct ydoc_node **ret_resource)
{
	const struct ydoc_node *v[POOL_N], *k[POOL_N];
	char kp[POOL_N][96];
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
		r = fail(x, n, path,
			 "resourceName missing (the kubelet resource, e.g. rdma.example/ib)");
	else
		r = parse_pool_resource(x, v[POOL_RESOURCE], kp[POOL_RESOURCE], p);
	if (r == 0)
		*ret_resource = v[POOL_RESOURCE];
	if ((r = keep(x, r)) < 0 || (r = keep(x, parse_pool_mode(x, v, k, kp, p))) < 0)
		return r;
	if (v[POOL_NCCL] &&
	    (r = keep(x, ydoc_bool(x, v[POOL_NCCL], kp[POOL_NCCL], false, &p->nccl_env))) < 0)
		return r;
	if (v[POOL_NETNS] &&
	    (r = keep(x, parse_pool_netns(x, v[POOL_NETNS], kp[POOL_NETNS], p))) < 0)
		return r;
	if (v[POOL_SELECTORS])
		return parse_selectors(x, v[POOL_SELECTORS], kp[POOL_SELECTORS], &p->sel);
	return 0;
}

/* pools[i]'s resourceName (node res) against the pools before it. */
static int check_unique(const struct ydoc *x, const struct cfg *c, size_t i,
			const struct ydoc_node *res)
{
	const char *name = c->pools[i].resource_name;
	char path[64], q[96];

	for (size_t j = 0; j < i; j++)
		if (c->pools[j].resource_name && !strcmp(c->pools[j].resource_name, name)) {
			snprintf(path, sizeof(path), "pools[%zu].resourceName", i);
			return fail(x, res, path,
				    "%s is already the resource of pools[%zu] (line %u): each pool "
				    "needs its own",
				    text_quote(q, sizeof(q), name, strlen(name)), j,
				    c->pools[j].line);
		}
	return 0;
}

static int parse_pools(const struct ydoc *x, const struct ydoc_node *n, struct cfg *c)
{
	char path[64];
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
	c->pools_set = true;
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ydoc_node *res = NULL;

		snprintf(path, sizeof(path), "pools[%zu]", i);
		c->n_pools++;
		r = keep(x, parse_pool(x, n->kids[i], path, &c->pools[i], &res));
		if (r == 0 && res)
			r = keep(x, check_unique(x, c, i, res));
		if (r < 0)
			return r;
	}
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

/* One top-level setting but pools: checked, and stored in c. */
static int parse_setting(const struct ydoc *x, size_t key, const struct ydoc_node *v,
			 struct cfg *c)
{
	const char *name = top_keys[key], *s = NULL;
	char q[96];
	bool b;
	int r;

	if (key == TOP_WITH_MAD) {
		r = ydoc_bool(x, v, name, false, &b);
		if (r == 0)
			c->with_mad = b;
		return r;
	}
	r = get_string(x, v, name, key == TOP_KIND ? CDI_KIND_MAX
				   : key == TOP_SPEC_DIR ? CFG_PATH_MAX
							 : 64,
		       &s);
	if (r < 0)
		return r;
	text_quote(q, sizeof(q), s, v->len);
	switch (key) {
	case TOP_KIND:
		if (!cdi_kind_is_valid(s))
			return fail(x, v, name,
				    "invalid CDI kind %s: expected vendor/class, each at least 2 "
				    "characters of letters, digits, '_', '-' (and '.' in the "
				    "vendor), starting with a letter",
				    q);
		return set_string(&c->kind, s);
	case TOP_SPEC_DIR:
		if (s[0] != '/')
			return fail(x, v, name, "must be an absolute path, got %s", q);
		return set_string(&c->spec_dir, s);
	case TOP_MEMLOCK:
		if (parse_memlock(s, &(rlim_t){0}) < 0)
			return fail(x, v, name,
				    "expected unlimited or a positive byte count with an optional "
				    "K, M or G suffix, got %s",
				    q);
		return set_string(&c->memlock, s);
	}
	return 0;
}

static int parse_document(const struct ydoc *x, const struct ydoc_node *root, struct cfg *c)
{
	const struct ydoc_node *v[TOP_N], *k[TOP_N];
	int r;

	if (root->type != YDOC_MAP)
		return fail(x, root, NULL,
			    "a config is a mapping of settings (kind, specDir, withMad, memlock, "
			    "pools), got %s",
			    ydoc_kind(root));
	r = map_fields(x, root, NULL, top_keys, TOP_N, v, k);
	if (r < 0)
		return r;
	for (size_t i = 0; i < TOP_N; i++) {
		if (!v[i])
			continue;
		r = i == TOP_POOLS ? parse_pools(x, v[i], c) : parse_setting(x, i, v[i], c);
		if ((r = keep(x, r)) < 0)
			return r;
	}
	return 0;
}

/* The parse proper, into c. An error that ends it (size, syntax, anchors) is returned
 * with its message in p->cur; the others are in p->errors. */
static int parse_into(struct parser *p, const char *buf, size_t len, struct cfg *c)
{
	static const struct ydoc_limits lim = {
	    .max_depth = CFG_DEPTH_MAX, .max_nodes = CFG_NODES_MAX, .what = "a config"};
	_cleanup_(ydoc_node_freep) struct ydoc_node *root = NULL;
	int r;

	if (len > CFG_FILE_MAX)
		return ydoc_fail(&p->x, -EFBIG, NULL, NULL, "larger than %d bytes", CFG_FILE_MAX);
	r = ydoc_load(&p->x, buf, len, &lim, &root);
	if (r < 0)
		return r;
	/* No document, or an empty one ("---" alone, "~"): every default. */
	if (root && !ydoc_is_null(root))
		return keep(&p->x, parse_document(&p->x, root, c));
	return 0;
}

int cfg_parse_all(const char *buf, size_t len, const char *filename, struct cfg **ret,
		  struct cfg_errors *errors, struct rc_error **err)
{
	struct cfg_errors mine = {};
	struct parser p = {.x.file = filename ? filename : "<config>", .errors = errors ?: &mine};
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	int r = -ENOMEM;

	p.x.err = &p.cur;
	c = calloc(1, sizeof(*c));
	if (c) {
		c->with_mad = -1;
		r = parse_into(&p, buf, len, c);
		if (r < 0 && r != -ENOMEM && record(&p) < 0)
			r = -ENOMEM;
		if (r == 0 && p.errors->n > 0)
			r = -EINVAL;
		if (r == 0 && !c->pools_set && cfg_default_pool(c) < 0)
			r = -ENOMEM;
	}
	rc_error_freep(&p.cur);
	if (r == -ENOMEM) {
		cfg_errors_clear(p.errors);
		return rc_error_set(err, r, "%s: out of memory", p.x.file);
	}
	if (r < 0) {
		cfg_errors_summary(p.errors, r, err);
		cfg_errors_clear(&mine);
		return r;
	}
	*ret = TAKE_PTR(c);
	return 0;
}

int cfg_parse(const char *buf, size_t len, const char *filename, struct cfg **ret,
	      struct rc_error **err)
{
	return cfg_parse_all(buf, len, filename, ret, NULL, err);
}

int cfg_load_all(const char *path, struct cfg **ret, struct cfg_errors *errors,
		 struct rc_error **err)
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
	return cfg_parse_all(buf, len, path, ret, errors, err);
}

int cfg_load(const char *path, struct cfg **ret, struct rc_error **err)
{
	return cfg_load_all(path, ret, NULL, err);
}
