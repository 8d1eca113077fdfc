/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdma-cdi config convert`: the config.json of k8s-rdma-shared-dev-plugin ("rdma-shared")
 * or of sriov-network-device-plugin ("sriov-dp") -> an rdma-cdi config (docs/config.md),
 * with a comment wherever a pool now means something else, and a refusal naming the key
 * of whatever has no equivalent. The input is hostile: bounded, strictly typed, every
 * value checked by the rules the parser applies to the result (which must then parse).
 *
 * Both plugins read their file with Go's encoding/json, which matches keys without
 * regard to case ("IsRdma" is isRdma) and takes the last of duplicate keys; the
 * converter matches the same way and refuses duplicates and unknown keys instead of
 * guessing.
 */
#include <math.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "config-internal.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

/* Comment lines are wrapped at this column. */
#define COMMENT_WIDTH 92

struct conv {
	enum cfg_source from;
	const char *file;
	const char *src; /* "rdma-shared" or "sriov-dp", for messages */
	struct cfg_errors *errors;
	bool oom;
	FILE *out; /* the YAML being written */
	/* The pools' resource names so far and the pool of each, for duplicates. */
	char *names[CFG_POOLS_MAX];
	size_t pool_of[CFG_POOLS_MAX];
	size_t n_names;
	const char *list_key; /* "configList" or "resourceList" */
};

static const char *const source_names[] = {
    [CFG_SOURCE_RDMA_SHARED] = "rdma-shared",
    [CFG_SOURCE_SRIOV_DP] = "sriov-dp",
};

int cfg_source_from_string(const char *s, enum cfg_source *ret)
{
	for (size_t i = 0; i < ELEMENTSOF(source_names); i++)
		if (s && !strcmp(s, source_names[i])) {
			*ret = (enum cfg_source)i;
			return 0;
		}
	return -EINVAL;
}

/* ---- refusals ------------------------------------------------------------------------ */

static void refuse(struct conv *v, const char *path, const char *fmt, ...) _printf_(3, 4);
static void refuse(struct conv *v, const char *path, const char *fmt, ...)
{
	_cleanup_free_ char *reason = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&reason, fmt, ap);
	va_end(ap);
	if (r < 0)
		reason = NULL; /* vasprintf leaves it undefined */
	if (r < 0 || cfg_errors_add(v->errors,
				    strdup_printf("%s: %s%s%s", v->file, path ? path : "",
						  path ? ": " : "", reason),
				    0, 0) < 0)
		v->oom = true;
}

/* A value from the file, quoted and cut for a message. */
static const char *quoted(char *buf, size_t size, const char *s)
{
	return text_quote(buf, size, s, strlen(s));
}

/* ---- reading JSON -------------------------------------------------------------------- */

/*
 * The members of obj by the names in keys[] (matched as Go matches them, without regard to
 * case): vals[k] is NULL when absent. An unknown key and a key given twice are refused;
 * false (refused) when obj is no object.
 */
static bool object_fields(struct conv *v, const cJSON *obj, const char *path,
			  const char *const *keys, size_t n_keys, const cJSON **vals)
{
	const cJSON *it;
	char q[96], known[512];
	size_t o = 0;

	for (size_t k = 0; k < n_keys; k++) {
		vals[k] = NULL;
		if (o < sizeof(known))
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", k ? ", " : "",
					      keys[k]);
	}
	if (!cJSON_IsObject(obj)) {
		refuse(v, path, "expected a JSON object");
		return false;
	}
	cJSON_ArrayForEach (it, obj) {
		size_t k;

		for (k = 0; k < n_keys && strcasecmp(it->string, keys[k]); k++)
			;
		if (k == n_keys)
			refuse(v, path, "unknown key %s (%s knows %s)",
			       quoted(q, sizeof(q), it->string), v->src, known);
		else if (vals[k])
			refuse(v, path, "%s given twice (%s would take the last one; give it once)",
			       keys[k], v->src);
		else
			vals[k] = it;
	}
	return true;
}

static const char *get_string(struct conv *v, const cJSON *it, const char *path)
{
	if (cJSON_IsString(it) && it->valuestring[0])
		return it->valuestring;
	refuse(v, path, cJSON_IsString(it) ? "empty string" : "expected a string");
	return NULL;
}

static bool get_bool(struct conv *v, const cJSON *it, const char *path, bool *ret)
{
	if (!cJSON_IsBool(it)) {
		refuse(v, path, "expected true or false");
		return false;
	}
	*ret = cJSON_IsTrue(it);
	return true;
}

/* An integer in [min, max]; note (may be "") follows the range in the message. */
static bool get_int(struct conv *v, const cJSON *it, const char *path, long long min, long long max,
		    const char *note, long long *ret)
{
	double d = cJSON_IsNumber(it) ? it->valuedouble : NAN;

	if (!isfinite(d)) {
		refuse(v, path, "expected an integer");
		return false;
	}
	if (d < (double)min || d > (double)max) {
		refuse(v, path, "must be between %lld and %lld%s, got %.0f", min, max, note, d);
		return false;
	}
	/* In range, so the cast is defined: a fraction does not survive it. */
	if ((double)(long long)d != d) {
		refuse(v, path, "expected an integer");
		return false;
	}
	*ret = (long long)d;
	return true;
}

/* A list of 1..CFG_VALUES_MAX strings. */
static bool get_list(struct conv *v, const cJSON *it, const char *path)
{
	int n = cJSON_IsArray(it) ? cJSON_GetArraySize(it) : -1;

	if (n < 0)
		refuse(v, path, "expected a list of strings");
	else if (n == 0)
		refuse(v, path, "empty list (%s reads it as no restriction: leave the key out)",
		       v->src);
	else if (n > CFG_VALUES_MAX)
		refuse(v, path, "more than %d values (rdma-cdi takes at most %d per key)",
		       CFG_VALUES_MAX, CFG_VALUES_MAX);
	return n > 0 && n <= CFG_VALUES_MAX;
}

/* ---- writing YAML -------------------------------------------------------------------- */

/* A comment at indent, wrapped at COMMENT_WIDTH. Its text is ours and checked values. */
static void comment(struct conv *v, int indent, const char *fmt, ...) _printf_(3, 4);
static void comment(struct conv *v, int indent, const char *fmt, ...)
{
	_cleanup_free_ char *text = NULL;
	size_t room = COMMENT_WIDTH - (size_t)indent - 2;
	const char *p;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (r < 0) {
		text = NULL; /* vasprintf leaves it undefined */
		v->oom = true;
		return;
	}
	for (p = text; *p;) {
		size_t n = strlen(p), cut = n;

		if (n > room)
			for (cut = room; cut > 0 && p[cut] != ' '; cut--)
				;
		if (cut == 0)
			cut = n > room ? room : n;
		fprintf(v->out, "%*s# %.*s\n", indent, "", (int)cut, p);
		for (p += cut; *p == ' '; p++)
			;
	}
}

/* s as a YAML double-quoted string. s is checked printable ASCII, but escape anyway. */
static void put_string(struct conv *v, const char *s)
{
	size_t len = strlen(s), size = text_escape(NULL, 0, s, len, true) + 1;
	_cleanup_free_ char *buf = malloc(size);

	if (!buf) {
		v->oom = true;
		return;
	}
	text_escape(buf, size, s, len, true);
	fprintf(v->out, "\"%s\"", buf);
}

/* An exact name as a glob: the glob characters escaped. NULL on OOM. */
static char *glob_escape(const char *s)
{
	char *g = malloc(2 * strlen(s) + 1), *o = g;

	if (!g)
		return NULL;
	for (; *s; s++) {
		if (strchr("*?[]\\", *s))
			*o++ = '\\';
		*o++ = *s;
	}
	*o = '\0';
	return g;
}

/* ---- selectors ----------------------------------------------------------------------- */

enum sel_kind {
	K_HEX,	   /* vendors, device IDs: the 4 lower-case hex digits both plugins compare */
	K_DRIVER,  /* exact PCI driver names */
	K_NAME,	   /* exact netdev names (rdma-shared's ifNames, devices) -> netdevs globs */
	K_PCI,	   /* exact PCI addresses -> pciAddresses globs */
	K_PF,	   /* sriov-dp's pfNames: exact PF netdev names, perhaps with VF ranges */
	K_LINK,	   /* netlink link types -> linkLayers */
	K_NONE,	   /* no equivalent: refused, with why */
	K_IS_RDMA, /* sriov-dp's isRdma: must be true */
	K_VHOST,   /* sriov-dp's needVhostNet: must be false */
};

struct sel_map {
	const char *key; /* the source's */
	const char *to;	 /* rdma-cdi's */
	enum sel_kind kind;
	const char *why; /* K_NONE: why there is no equivalent */
};

static const struct sel_map rs_selectors[] = {
    {"vendors", "vendors", K_HEX, NULL},       {"deviceIDs", "deviceIDs", K_HEX, NULL},
    {"drivers", "drivers", K_DRIVER, NULL},    {"ifNames", "netdevs", K_NAME, NULL},
    {"linkTypes", "linkLayers", K_LINK, NULL},
};

static const struct sel_map sd_selectors[] = {
    {"vendors", "vendors", K_HEX, NULL},
    {"devices", "deviceIDs", K_HEX, NULL},
    {"drivers", "drivers", K_DRIVER, NULL},
    {"pciAddresses", "pciAddresses", K_PCI, NULL},
    {"pfNames", "pfNames", K_PF, NULL},
    {"linkTypes", "linkLayers", K_LINK, NULL},
    {"rootDevices", NULL, K_NONE,
     "rdma-cdi selects VFs by their PF's netdev (pfNames) or by their own PCI addresses "
     "(pciAddresses), not by the PF's PCI address"},
    {"acpiIndexes", NULL, K_NONE,
     "rdma-cdi does not read ACPI indexes: select the devices by netdevs or pciAddresses"},
    {"ddpProfiles", NULL, K_NONE, "rdma-cdi does not read Intel DDP profiles"},
    {"pKeys", NULL, K_NONE, "rdma-cdi does not select by InfiniBand partition key"},
    {"vdpaType", NULL, K_NONE, "vDPA devices are not RDMA devices: leave this pool with sriov-dp"},
    {"auxTypes", NULL, K_NONE,
     "rdma-cdi does not select auxiliary devices by type: leave this pool with sriov-dp"},
    {"isRdma", NULL, K_IS_RDMA, NULL},
    {"needVhostNet", NULL, K_VHOST, NULL},
};

/* RDMA drivers that are no PCI function's driver: a `drivers` value naming one matched
 * nothing in either plugin, and matches nothing in rdma-cdi. */
static bool is_rdma_only_driver(const char *s)
{
	static const char *const names[] = {"mlx5_ib", "mlx4_ib", "bnxt_re",  "irdma",
					    "i40iw",   "qedr",	  "rdma_rxe", "siw"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (!strcmp(s, names[i]))
			return true;
	return false;
}

/* A name (netdev, PCI address) as a glob matching that name only; NULL when refused. */
static char *convert_name(struct conv *v, const char *s, const char *ipath)
{
	_cleanup_free_ char *g = glob_escape(s);
	const char *why;
	char q[96];

	if (!g) {
		v->oom = true;
		return NULL;
	}
	why = cfg_pattern_problem(g);
	if (why) {
		refuse(v, ipath, "%s cannot be written as an rdma-cdi selector: %s",
		       quoted(q, sizeof(q), s), why);
		return NULL;
	}
	return TAKE_PTR(g);
}

/* One value of a list: what rdma-cdi takes for it (malloc'd), or NULL (refused). */
static char *convert_item(struct conv *v, enum sel_kind kind, const char *s, const char *ipath)
{
	unsigned id;
	char q[96];

	quoted(q, sizeof(q), s);
	switch (kind) {
	case K_HEX:
		if (strlen(s) != 4 || strspn(s, "0123456789abcdef") != 4 ||
		    cfg_parse_hex_id(s, &id) < 0) {
			refuse(
			    v, ipath,
			    "%s is no ID %s matches: it compares the text with the device's 4 "
			    "lower-case hex digits (such as 15b3), so this value selected nothing",
			    q, v->src);
			return NULL;
		}
		break;
	case K_DRIVER:
		if (!cfg_driver_is_valid(s)) {
			refuse(v, ipath,
			       "%s is no driver name: up to %d characters of [A-Za-z0-9_.:-]", q,
			       DISC_NAME_MAX - 1);
			return NULL;
		}
		break;
	case K_PF:
		if (strchr(s, '#')) {
			refuse(v, ipath,
			       "%s: VF ranges (#first-last) have no equivalent: list those VFs' "
			       "PCI addresses in pciAddresses instead",
			       q);
			return NULL;
		}
		return convert_name(v, s, ipath);
	case K_NAME:
	case K_PCI:
		return convert_name(v, s, ipath);
	case K_LINK:
		if (!strcasecmp(s, "ether"))
			return strdup("Ethernet");
		if (!strcasecmp(s, "infiniband"))
			return strdup("InfiniBand");
		refuse(v, ipath,
		       "%s: %s compares the netdev's link type, which rdma-cdi knows as ether "
		       "(Ethernet) or infiniband (InfiniBand) only",
		       q, v->src);
		return NULL;
	default:
		return NULL;
	}
	return strdup(s);
}

/* What a converted key means now, or NULL when it means the same. */
static const char *kind_comment(enum sel_kind kind)
{
	switch (kind) {
	case K_NAME:
		return "exact names of a PCI function's netdev -> netdevs, globs on the netdev of "
		       "any RDMA port (IPoIB included); the names are escaped, so each matches "
		       "itself only";
	case K_LINK:
		return "linkTypes (the type of the function's netdev) -> linkLayers (the link "
		       "layer of the RDMA ports): ether is Ethernet (RoCE), infiniband is "
		       "InfiniBand; a device without netdev now matches too";
	case K_PF:
		return "pfNames: rdma-cdi takes the VFs of these PFs only, and only when the PF is "
		       "itself an RDMA device of the node; sriov-dp also took a PF without VFs "
		       "whose own netdev is named here (take such a PF with netdevs, in a pool of "
		       "its own)";
	default:
		return NULL;
	}
}

/* A list selector: `to: [...]` at selector indent, with its comments. */
static void convert_list(struct conv *v, const cJSON *list, const char *path, const char *to,
			 enum sel_kind kind)
{
	char *vals[CFG_VALUES_MAX], ipath[160];
	const cJSON *it;
	size_t n = 0, i = 0;

	if (!get_list(v, list, path))
		return;
	cJSON_ArrayForEach (it, list) {
		const char *s;
		char *c;

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i++);
		s = get_string(v, it, ipath);
		c = s ? convert_item(v, kind, s, ipath) : NULL;
		if (c)
			vals[n++] = c;
		if (kind == K_DRIVER && c && is_rdma_only_driver(c))
			comment(
			    v, 6,
			    "%s is an RDMA driver, not a PCI driver: no PCI function is bound to "
			    "it, so it selected nothing in %s and selects nothing here (the PCI "
			    "driver is the NIC's, mlx5_core for ConnectX)",
			    c, v->src);
	}
	if (kind_comment(kind))
		comment(v, 6, "%s", kind_comment(kind));
	fprintf(v->out, "      %s: [", to);
	for (i = 0; i < n; i++) {
		fputs(i ? ", " : "", v->out);
		put_string(v, vals[i]);
		free(vals[i]);
	}
	fputs("]\n", v->out);
}

/* What the selectors said about the pool beyond device selection. */
struct sel_flags {
	int is_rdma; /* -1 not given, 0 false, 1 true */
	bool unread; /* isRdma may be in what could not be read: nothing to say about it */
	bool pf_names;
};

/* One selector object; `selectors:` and its keys are written when it has any. Returns
 * whether it has any key at all (refused ones too). */
static bool convert_selectors(struct conv *v, const cJSON *obj, const char *path,
			      const struct sel_map *map, size_t n_map, struct sel_flags *flags)
{
	const cJSON *f[ELEMENTSOF(sd_selectors)];
	const char *keys[ELEMENTSOF(sd_selectors)];
	char kp[160];
	bool b, any = false;

	for (size_t k = 0; k < n_map; k++)
		keys[k] = map[k].key;
	if (!object_fields(v, obj, path, keys, n_map, f)) {
		flags->unread = true;
		return true; /* refused: nothing more to say about it */
	}
	for (size_t k = 0; k < n_map; k++) {
		if (!f[k])
			continue;
		snprintf(kp, sizeof(kp), "%s.%s", path, map[k].key);
		if (map[k].kind == K_NONE) {
			refuse(v, kp, "no equivalent: %s", map[k].why);
		} else if (map[k].kind == K_IS_RDMA) {
			if (get_bool(v, f[k], kp, &b))
				flags->is_rdma = b;
			else
				flags->unread = true;
		} else if (map[k].kind == K_VHOST) {
			if (get_bool(v, f[k], kp, &b) && b)
				refuse(v, kp,
				       "no equivalent: rdma-cdi hands out RDMA devices only, "
				       "not /dev/vhost-net and /dev/net/tun");
		} else {
			if (!any)
				fputs("    selectors:\n", v->out);
			any = true;
			flags->pf_names |= map[k].kind == K_PF;
			convert_list(v, f[k], kp, map[k].to, map[k].kind);
		}
	}
	return obj->child != NULL;
}

/* ---- pools --------------------------------------------------------------------------- */

/*
 * prefix/name as the kubelet takes it, not the resource of an earlier pool: the name,
 * owned by v, or NULL (refused). path is the pool's, i its index.
 */
static const char *resource_name(struct conv *v, const cJSON *prefix, const cJSON *name,
				 const char *def, const char *path, size_t i)
{
	_cleanup_free_ char *full = NULL, *probe = NULL;
	char pp[96], np[96], q[96];
	const char *p = def, *n, *why;

	snprintf(pp, sizeof(pp), "%s.resourcePrefix", path);
	snprintf(np, sizeof(np), "%s.resourceName", path);
	if (prefix && !(p = get_string(v, prefix, pp)))
		return NULL;
	if (!name) {
		refuse(v, path, "resourceName missing");
		return NULL;
	}
	n = get_string(v, name, np);
	if (!n)
		return NULL;
	full = strdup_printf("%s/%s", p, n);
	probe = strdup_printf("%s/x", p);
	if (!full || !probe) {
		v->oom = true;
		return NULL;
	}
	why = cfg_resource_name_problem(full);
	if (why) {
		/* The domain is the prefix's doing, the rest the name's. */
		refuse(v, cfg_resource_name_problem(probe) ? pp : np,
		       "%s is no Kubernetes extended resource name (the kubelet refuses it): %s",
		       quoted(q, sizeof(q), full), why);
		return NULL;
	}
	for (size_t j = 0; j < v->n_names; j++)
		if (!strcmp(v->names[j], full)) {
			refuse(v, np,
			       "%s is already the resource of %s[%zu]: each pool needs its own",
			       quoted(q, sizeof(q), full), v->list_key, v->pool_of[j]);
			return NULL;
		}
	v->pool_of[v->n_names] = i;
	return v->names[v->n_names++] = TAKE_PTR(full);
}

/* Sends what is written to v->out into *buf (malloc'd at undivert()) for a while, so
 * that a pool's comments can come before the text that told them. Returns the FILE to
 * give back to undivert(), NULL on OOM. */
static FILE *divert(struct conv *v, char **buf, size_t *size)
{
	FILE *saved = v->out, *f = open_memstream(buf, size);

	if (!f) {
		v->oom = true;
		return NULL;
	}
	v->out = f;
	return saved;
}

static void undivert(struct conv *v, FILE *saved)
{
	if (fclose(v->out) != 0)
		v->oom = true;
	v->out = saved;
}

enum { RS_NAME, RS_PREFIX, RS_MAX, RS_SELECTORS, RS_DEVICES, RS_N };

static const char *const rs_pool_keys[RS_N] = {
    [RS_NAME] = "resourceName",	  [RS_PREFIX] = "resourcePrefix", [RS_MAX] = "rdmaHcaMax",
    [RS_SELECTORS] = "selectors", [RS_DEVICES] = "devices",
};

/* The devices of an rdma-shared pool: its selectors, or its older devices list. */
static void rs_pool_selectors(struct conv *v, const cJSON *const *f, const char *path)
{
	struct sel_flags flags = {.is_rdma = -1};
	char kp[96];

	if (!f[RS_SELECTORS] == !f[RS_DEVICES]) {
		refuse(v, path,
		       f[RS_DEVICES]
			   ? "both selectors and devices: rdma-shared refuses such a pool "
			     "(devices is the old form of selectors.ifNames)"
			   : "neither selectors nor devices: rdma-shared refuses such a pool");
	} else if (f[RS_DEVICES]) {
		snprintf(kp, sizeof(kp), "%s.devices", path);
		fputs("    selectors:\n", v->out);
		convert_list(v, f[RS_DEVICES], kp, "netdevs", K_NAME);
	} else {
		snprintf(kp, sizeof(kp), "%s.selectors", path);
		if (!convert_selectors(v, f[RS_SELECTORS], kp, rs_selectors,
				       ELEMENTSOF(rs_selectors), &flags))
			refuse(v, kp, "no selector in it: rdma-shared refuses such a pool");
	}
}

static void rs_pool(struct conv *v, const cJSON *pool, size_t i)
{
	const cJSON *f[RS_N];
	_cleanup_free_ char *sel = NULL;
	char path[48], kp[96];
	const char *name;
	long long max = 0;
	size_t sel_size = 0;
	FILE *out;

	snprintf(path, sizeof(path), "configList[%zu]", i);
	if (!object_fields(v, pool, path, rs_pool_keys, RS_N, f))
		return;
	name = resource_name(v, f[RS_PREFIX], f[RS_NAME], "rdma", path, i);
	snprintf(kp, sizeof(kp), "%s.rdmaHcaMax", path);
	if (!f[RS_MAX])
		refuse(v, path, "rdmaHcaMax missing (the units the pool advertises)");
	else
		get_int(v, f[RS_MAX], kp, 1, CFG_SHARED_SLOTS_MAX, " (it becomes sharedSlots)",
			&max);
	out = divert(v, &sel, &sel_size);
	if (!out)
		return;
	rs_pool_selectors(v, f, path);
	undivert(v, out);

	comment(v, 2,
		"%s: rdma-shared gave a pod that holds one unit every HCA of the pool at once; "
		"rdma-cdi gives one HCA per unit. A pod that used all N HCAs of the pool requests "
		"N units now.",
		path);
	fputs("  - resourceName: ", out);
	put_string(v, name ? name : "");
	fputs("\n    mode: shared\n", out);
	comment(
	    v, 4,
	    "rdmaHcaMax %lld (units for the whole pool) -> sharedSlots %lld (pods per HCA): the "
	    "same %lld pods can use every HCA of the pool, each requesting one unit per HCA. A "
	    "pool advertises at most %d units (sharedSlots x HCAs).",
	    max, max, max, CFG_POOL_IDS_MAX);
	fprintf(out, "    sharedSlots: %lld\n", max);
	if (sel)
		fwrite(sel, 1, sel_size, out);
}

enum { SD_NAME, SD_PREFIX, SD_TYPE, SD_TOPOLOGY, SD_SELECTORS, SD_INFO, SD_RDMA, SD_OBJ, SD_N };

static const char *const sd_pool_keys[SD_N] = {
    [SD_NAME] = "resourceName",	  [SD_PREFIX] = "resourcePrefix",
    [SD_TYPE] = "deviceType",	  [SD_TOPOLOGY] = "excludeTopology",
    [SD_SELECTORS] = "selectors", [SD_INFO] = "additionalInfo",
    [SD_RDMA] = "isRdma",	  [SD_OBJ] = "SelectorObj",
};

/* The keys of an sriov-dp pool besides its name and selectors. */
static void sd_pool_options(struct conv *v, const cJSON *const *f, const char *path,
			    bool *exclude_topology, struct sel_flags *flags)
{
	const char *s;
	char kp[SD_N][96];
	bool b;

	for (size_t k = 0; k < SD_N; k++)
		snprintf(kp[k], sizeof(kp[k]), "%s.%s", path, sd_pool_keys[k]);
	if (f[SD_TYPE] && (s = get_string(v, f[SD_TYPE], kp[SD_TYPE])) && strcmp(s, "netDevice"))
		refuse(v, kp[SD_TYPE],
		       "only netDevice pools convert: rdma-cdi hands out the RDMA devices of "
		       "network functions (accelerator and auxNetDevice pools stay with sriov-dp)");
	if (f[SD_TOPOLOGY])
		get_bool(v, f[SD_TOPOLOGY], kp[SD_TOPOLOGY], exclude_topology);
	if (f[SD_INFO] && !cJSON_IsNull(f[SD_INFO]) &&
	    !(cJSON_IsObject(f[SD_INFO]) && !f[SD_INFO]->child))
		refuse(v, kp[SD_INFO],
		       "no equivalent: rdma-cdi gives a container RDMA_CDI_DEVICES (and with "
		       "ncclEnv the NCCL and UCX selections), no extra information");
	if (f[SD_OBJ] && !cJSON_IsNull(f[SD_OBJ]))
		refuse(v, kp[SD_OBJ],
		       "only null converts (an internal field of sriov-dp's own "
		       "output)");
	/* The pool-level isRdma of older sriov-dp files (docs/rdma/configMap.yaml). */
	if (f[SD_RDMA] && get_bool(v, f[SD_RDMA], kp[SD_RDMA], &b))
		flags->is_rdma = b;
	else if (f[SD_RDMA])
		flags->unread = true;
}

/* An sriov-dp pool's selectors: one object, or a list that holds one. */
static void sd_pool_selectors(struct conv *v, const cJSON *sel, const char *path,
			      struct sel_flags *flags)
{
	char kp[96];
	int n = cJSON_IsArray(sel) ? cJSON_GetArraySize(sel) : -1;

	snprintf(kp, sizeof(kp), "%s.selectors", path);
	flags->unread = n == 0 || n > 1;
	if (n == 0)
		refuse(v, kp, "empty list: give one selector object");
	else if (n > 1)
		refuse(v, kp,
		       "%d selector objects: rdma-cdi has one per pool (merge them into one, or "
		       "make a pool of each)",
		       n);
	if (n == 1) {
		snprintf(kp, sizeof(kp), "%s.selectors[0]", path);
		sel = cJSON_GetArrayItem(sel, 0);
	}
	if (n < 0 || n == 1)
		convert_selectors(v, sel, kp, sd_selectors, ELEMENTSOF(sd_selectors), flags);
}

static void sd_pool(struct conv *v, const cJSON *pool, size_t i)
{
	const cJSON *f[SD_N];
	struct sel_flags flags = {.is_rdma = -1};
	_cleanup_free_ char *sel = NULL;
	char path[48];
	const char *name;
	bool exclude_topology = false;
	size_t sel_size = 0;
	FILE *out;

	snprintf(path, sizeof(path), "resourceList[%zu]", i);
	if (!object_fields(v, pool, path, sd_pool_keys, SD_N, f))
		return;
	name = resource_name(v, f[SD_PREFIX], f[SD_NAME], "intel.com", path, i);
	sd_pool_options(v, f, path, &exclude_topology, &flags);
	out = divert(v, &sel, &sel_size);
	if (!out)
		return;
	if (f[SD_SELECTORS] && !cJSON_IsNull(f[SD_SELECTORS]))
		sd_pool_selectors(v, f[SD_SELECTORS], path, &flags);
	undivert(v, out);
	if (flags.is_rdma != 1 && !flags.unread)
		refuse(
		    v, path,
		    "%s: sriov-dp hands this pool's devices out as network devices without "
		    "RDMA, and rdma-cdi hands out RDMA devices only (leave the pool with sriov-dp "
		    "and take it out of the file to convert)",
		    flags.is_rdma ? "no isRdma: true" : "isRdma is false");

	if (!f[SD_PREFIX])
		comment(v, 2,
			"%s: no resourcePrefix, so sriov-dp's default intel.com, unless its "
			"-resource-prefix flag said otherwise (then change the domain here).",
			path);
	if (exclude_topology)
		comment(v, 2,
			"%s: excludeTopology is gone: rdma-cdi reports each device's NUMA node, so "
			"the Topology Manager aligns these devices with the pod's CPUs and GPUs.",
			path);
	if (!flags.pf_names)
		comment(v, 2,
			"%s: sriov-dp never took a PF that has VFs, nor a device whose netdev "
			"carries the default route; rdma-cdi takes every device the selectors "
			"match, those too (vf: true under selectors takes VFs only).",
			path);
	fputs("  - resourceName: ", out);
	put_string(v, name ? name : "");
	fputc('\n', out);
	if (sel)
		fwrite(sel, 1, sel_size, out);
}

/* ---- the document -------------------------------------------------------------------- */

static void convert_pools(struct conv *v, const cJSON *list,
			  void (*pool)(struct conv *v, const cJSON *pool, size_t i))
{
	const cJSON *it;
	int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
	size_t i = 0;

	if (!list) {
		refuse(v, NULL, "%s missing: no pool to convert", v->list_key);
		return;
	}
	if (n <= 0 || n > CFG_POOLS_MAX) {
		refuse(v, v->list_key,
		       n < 0 ? "expected a list of pools"
		       : n == 0
			   ? "empty list: no pool to convert"
			   : "more than " CFG_STR(CFG_POOLS_MAX) " pools (rdma-cdi takes at most "
								 "that many)");
		return;
	}
	fputs("pools:\n", v->out);
	cJSON_ArrayForEach (it, list)
		pool(v, it, i++);
}

static void write_header(struct conv *v)
{
	_cleanup_free_ char *file = escape_untrusted(v->file);

	comment(v, 0,
		"rdma-cdi config (docs/config.md), converted by rdma-cdi config convert from "
		"the %s config %s.",
		v->src, file ? file : "?");
	comment(v, 0,
		"A comment marks each place where the meaning changes: read them, then check "
		"the result on a node with rdma-cdi config check FILE.");
	comment(v, 0,
		"%s gave each pod the umadN and issmN of its devices too (and ucmN, which current "
		"kernels no longer have): withMad keeps them. Verbs programs and NCCL need "
		"neither; withMad: false gives uverbsN and rdma_cm only.",
		v->src);
	fputs("withMad: true\n", v->out);
	if (v->from == CFG_SOURCE_SRIOV_DP)
		comment(
		    v, 0,
		    "sriov-dp set PCIDEVICE_<PREFIX>_<NAME> to the PCI addresses a container "
		    "got; rdma-cdi sets RDMA_CDI_DEVICES to their RDMA device names instead (and "
		    "with ncclEnv: true on a pool, NCCL_IB_HCA and UCX_NET_DEVICES).");
}

static void rs_document(struct conv *v, const cJSON *root)
{
	static const char *const keys[] = {"periodicUpdateInterval", "configList"};
	const cJSON *f[ELEMENTSOF(keys)];
	long long secs;

	if (!object_fields(v, root, NULL, keys, ELEMENTSOF(keys), f))
		return;
	write_header(v);
	if (f[0] && get_int(v, f[0], keys[0], 0, INT32_MAX, "", &secs))
		comment(
		    v, 0,
		    "periodicUpdateInterval %lld: nothing to set. rdma-cdi sees devices come and "
		    "go at once and rescans port state every 5 s (the daemons' "
		    "--rescan-interval).",
		    secs);
	convert_pools(v, f[1], rs_pool);
}

static void sd_document(struct conv *v, const cJSON *root)
{
	static const char *const keys[] = {"resourceList"};
	const cJSON *f[1];

	if (!object_fields(v, root, NULL, keys, 1, f))
		return;
	write_header(v);
	convert_pools(v, f[0], sd_pool);
}

/* ---- reading the file ---------------------------------------------------------------- */

static int json_fail(struct conv *v, const char *buf, size_t len, size_t off, int r,
		     const char *what)
{
	unsigned line, col;

	text_position(buf, len, off, &line, &col);
	if (cfg_errors_add(v->errors, strdup_printf("%s:%u:%u: %s", v->file, line, col, what), line,
			   col) < 0)
		v->oom = true;
	return r;
}

/*
 * What cJSON would let through: a raw control character inside a string, a \u0000 escape
 * (a NUL that would cut the string short in silence), nesting no config needs.
 */
static int json_precheck(struct conv *v, const char *buf, size_t len)
{
	bool in_string = false;
	unsigned depth = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (in_string && c == '\\') {
			if (len - i > 5 && !memcmp(buf + i + 1, "u0000", 5))
				return json_fail(v, buf, len, i, -EBADMSG,
						 "a \\u0000 escape: no name holds a NUL character");
			i++;
		} else if (c == '"') {
			in_string = !in_string;
		} else if (c < 0x20 && (in_string || (c != '\t' && c != '\n' && c != '\r'))) {
			return json_fail(v, buf, len, i, -EBADMSG,
					 "not JSON: a control character (write it as an escape)");
		} else if (!in_string && (c == '{' || c == '[') && ++depth > CFG_DEPTH_MAX) {
			return json_fail(v, buf, len, i, -EBADMSG,
					 "nested deeper than " CFG_STR(CFG_DEPTH_MAX) " levels");
		} else if (!in_string && (c == '}' || c == ']') && depth > 0) {
			depth--;
		}
	}
	return 0;
}

static size_t skip_space(const char *buf, size_t len, size_t off)
{
	while (off < len && strchr(" \t\r\n", buf[off]))
		off++;
	return off;
}

static int json_read(struct conv *v, const char *buf, size_t len, cJSON **ret)
{
	const char *end = NULL;
	cJSON *root;
	size_t off;
	int r;

	r = json_precheck(v, buf, len);
	if (r < 0)
		return r;
	if (skip_space(buf, len, 0) == len)
		return json_fail(v, buf, len, len, -EBADMSG, "empty: expected a JSON object");
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root)
		return json_fail(v, buf, len, end ? (size_t)(end - buf) : 0, -EBADMSG,
				 "not JSON: a syntax error here");
	off = skip_space(buf, len, (size_t)(end - buf));
	if (off < len) {
		cJSON_Delete(root);
		return json_fail(v, buf, len, off, -EBADMSG,
				 "not JSON: text after the end of the value");
	}
	*ret = root;
	return 0;
}

/* The result must be what the parser accepts: a failure here is a bug of the converter. */
static int self_check(struct conv *v, const char *text, size_t size)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	struct cfg *c = NULL;
	int r = cfg_parse(text, size, "<converted>", &c, &e);

	cfg_free(c);
	if (r == -ENOMEM)
		v->oom = true;
	else if (r < 0)
		refuse(v, NULL, "the converted config does not parse (a bug of rdma-cdi): %s",
		       rc_error_msg(e, r));
	return r < 0 ? r : 0;
}

static int convert(struct conv *v, const char *buf, size_t len, char **text, size_t *size)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	int r;

	if (len > CFG_FILE_MAX) {
		refuse(v, NULL, "larger than %d bytes", CFG_FILE_MAX);
		return -EFBIG;
	}
	r = json_read(v, buf, len, &root);
	if (r < 0)
		return r;
	v->out = open_memstream(text, size);
	if (!v->out)
		return -ENOMEM;
	if (v->from == CFG_SOURCE_RDMA_SHARED)
		rs_document(v, root);
	else
		sd_document(v, root);
	if (fclose(v->out) != 0)
		v->oom = true;
	if (v->oom)
		return -ENOMEM;
	if (v->errors->n > 0)
		return -EINVAL;
	return self_check(v, *text, *size);
}

int cfg_convert(enum cfg_source from, const char *buf, size_t len, const char *filename,
		char **ret_text, struct cfg_errors *errors, struct rc_error **err)
{
	struct cfg_errors mine = {};
	struct conv v = {
	    .from = from,
	    .file = filename ? filename : "<input>",
	    .src = source_names[from],
	    .errors = errors ? errors : &mine,
	    .list_key = from == CFG_SOURCE_RDMA_SHARED ? "configList" : "resourceList",
	};
	_cleanup_free_ char *text = NULL;
	size_t size = 0;
	int r;

	r = convert(&v, buf, len, &text, &size);
	for (size_t i = 0; i < v.n_names; i++)
		free(v.names[i]);
	if (r == -ENOMEM || v.oom) {
		cfg_errors_clear(v.errors);
		return rc_error_set(err, -ENOMEM, "%s: out of memory", v.file);
	}
	if (r < 0) {
		cfg_errors_summary(v.errors, r, err);
		cfg_errors_clear(&mine);
		return r;
	}
	*ret_text = TAKE_PTR(text);
	return 0;
}
