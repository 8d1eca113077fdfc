/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config file parser: libyaml events -> a small bounded tree (so every value keeps
 * its line and column and checks may look at a whole mapping) -> struct cfg.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>

#include <yaml.h>

#include "cdi.h"
#include "config-internal.h"

DEFINE_CLEANUP_FUNC(yaml_parser_t, yaml_parser_delete)

/* ---- the tree ----------------------------------------------------------------------- */

enum ynode_type { YN_SCALAR, YN_SEQ, YN_MAP };

struct ynode {
	enum ynode_type type;
	unsigned line, column; /* 1-based */
	char *value;	       /* scalar text, NUL-terminated */
	size_t len;
	bool plain; /* unquoted scalar: the only style that may be a bool, int or null */
	/* Sequence: items. Mapping: key, value, key, value ... */
	struct ynode **kids;
	size_t n_kids, cap;
};

static void ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_kids; i++)
		ynode_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}
DEFINE_CLEANUP_FUNC(struct ynode, ynode_free)

static int ynode_add(struct ynode *parent, struct ynode *kid)
{
	if (parent->n_kids == parent->cap) {
		size_t cap = parent->cap ? parent->cap * 2 : 8;
		struct ynode **k = realloc(parent->kids, cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		parent->kids = k;
		parent->cap = cap;
	}
	parent->kids[parent->n_kids++] = kid;
	return 0;
}

struct ctx {
	const char *file;
	const char *buf;
	size_t len;
	char *err;
	size_t errlen;
};

int cfg_error(int r, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return r;
}

const char *cfg_quote(char *buf, size_t size, const char *s, size_t len)
{
	size_t o = 0;

	if (size < 8) {
		if (size)
			buf[0] = '\0';
		return buf;
	}
	buf[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];
		size_t n;

		if (c == '"' || c == '\\')
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else
			n = (size_t)snprintf(tmp, sizeof(tmp), "%c", c);
		/* Room for "...", the closing quote and the NUL. */
		if (i >= 64 || o + n + 5 > size) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* One line "FILE:LINE:COL: PATH: message"; returns r. */
static int fail_at(struct ctx *x, int r, unsigned line, unsigned column, const char *path,
		   const char *fmt, ...) _printf_(6, 7);
static int fail_at(struct ctx *x, int r, unsigned line, unsigned column, const char *path,
		   const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cfg_error(r, x->err, x->errlen, "%s:%u:%u: %s%s%s", x->file, line, column,
			 path && *path ? path : "", path && *path ? ": " : "", msg);
}

#define fail(x, n, path, ...) fail_at((x), -EINVAL, (n)->line, (n)->column, (path), __VA_ARGS__)

/* 1-based line and column of a byte offset (reader errors carry only an offset). */
static void offset_position(const struct ctx *x, size_t off, unsigned *line, unsigned *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off && i < x->len; i++) {
		if (x->buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)x->buf[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

static int yaml_fail(struct ctx *x, const yaml_parser_t *p)
{
	unsigned line = (unsigned)p->problem_mark.line + 1,
		 col = (unsigned)p->problem_mark.column + 1;
	const char *problem = p->problem ? p->problem : "unknown error";

	if (p->error == YAML_MEMORY_ERROR)
		return cfg_error(-ENOMEM, x->err, x->errlen, "%s: out of memory", x->file);
	if (p->error == YAML_READER_ERROR)
		offset_position(x, p->problem_offset, &line, &col);
	if (p->context)
		return fail_at(x, -EBADMSG, line, col, NULL,
			       "invalid YAML: %s, %s starting at line %u", problem, p->context,
			       (unsigned)p->context_mark.line + 1);
	return fail_at(x, -EBADMSG, line, col, NULL, "invalid YAML: %s", problem);
}

static struct ynode *ynode_new(enum ynode_type t, yaml_mark_t m)
{
	struct ynode *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->type = t;
	n->line = (unsigned)m.line + 1;
	n->column = (unsigned)m.column + 1;
	return n;
}

/* Refuses what a config never needs and a hostile file could abuse: aliases expand
 * exponentially (billion laughs), tags retype values behind the reader's back. */
static int check_node_props(struct ctx *x, const yaml_event_t *e, const yaml_char_t *anchor,
			    const yaml_char_t *tag)
{
	unsigned line = (unsigned)e->start_mark.line + 1, col = (unsigned)e->start_mark.column + 1;
	char q[96];

	if (anchor)
		return fail_at(
		    x, -EINVAL, line, col, NULL, "YAML anchors are not accepted (&%s)",
		    cfg_quote(q, sizeof(q), (const char *)anchor, strlen((const char *)anchor)));
	if (tag)
		return fail_at(
		    x, -EINVAL, line, col, NULL, "YAML tags are not accepted (%s)",
		    cfg_quote(q, sizeof(q), (const char *)tag, strlen((const char *)tag)));
	return 0;
}

/*
 * The node an event opens or is (*ret, NULL for events that are not nodes), after the
 * checks that need only the event. depth: the open collections around it.
 */
static int node_from_event(struct ctx *x, const yaml_event_t *e, size_t depth, struct ynode **ret)
{
	unsigned line = (unsigned)e->start_mark.line + 1, col = (unsigned)e->start_mark.column + 1;
	struct ynode *n;
	int r;

	*ret = NULL;
	switch (e->type) {
	case YAML_ALIAS_EVENT:
		return fail_at(x, -EINVAL, line, col, NULL, "YAML aliases are not accepted");
	case YAML_SCALAR_EVENT:
		r = check_node_props(x, e, e->data.scalar.anchor, e->data.scalar.tag);
		if (r < 0)
			return r;
		n = ynode_new(YN_SCALAR, e->start_mark);
		if (!n || !(n->value = malloc(e->data.scalar.length + 1))) {
			ynode_free(n);
			return -ENOMEM;
		}
		memcpy(n->value, e->data.scalar.value, e->data.scalar.length);
		n->value[e->data.scalar.length] = '\0';
		n->len = e->data.scalar.length;
		n->plain = e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (e->type == YAML_SEQUENCE_START_EVENT)
			r = check_node_props(x, e, e->data.sequence_start.anchor,
					     e->data.sequence_start.tag);
		else
			r = check_node_props(x, e, e->data.mapping_start.anchor,
					     e->data.mapping_start.tag);
		if (r < 0)
			return r;
		if (depth >= CFG_DEPTH_MAX)
			return fail_at(x, -EINVAL, line, col, NULL, "nested deeper than %d levels",
				       CFG_DEPTH_MAX);
		n = ynode_new(e->type == YAML_SEQUENCE_START_EVENT ? YN_SEQ : YN_MAP,
			      e->start_mark);
		if (!n)
			return -ENOMEM;
		break;
	default:
		return 0;
	}
	*ret = n;
	return 0;
}

/* Builds the tree of the single document; *ret = NULL for a stream without one. */
static int build_tree(struct ctx *x, struct ynode **ret)
{
	_cleanup_(yaml_parser_deletep) yaml_parser_t *parser = NULL;
	_cleanup_(ynode_freep) struct ynode *root = NULL;
	struct ynode *stack[CFG_DEPTH_MAX];
	yaml_parser_t p;
	size_t depth = 0, n_nodes = 0;
	unsigned docs = 0;
	bool done = false;
	int r = 0;

	if (!yaml_parser_initialize(&p))
		return cfg_error(-ENOMEM, x->err, x->errlen, "%s: out of memory", x->file);
	parser = &p;
	yaml_parser_set_input_string(&p, (const unsigned char *)x->buf, x->len);

	while (!done && r >= 0) {
		struct ynode *n = NULL;
		yaml_event_t e;

		if (!yaml_parser_parse(&p, &e))
			return yaml_fail(x, &p);
		if (e.type == YAML_STREAM_END_EVENT)
			done = true;
		else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT)
			depth--;
		else if (e.type == YAML_DOCUMENT_START_EVENT && ++docs > 1)
			r = fail_at(x, -EINVAL, (unsigned)e.start_mark.line + 1,
				    (unsigned)e.start_mark.column + 1, NULL,
				    "more than one YAML document (a config is one document)");
		else
			r = node_from_event(x, &e, depth, &n);
		if (n && ++n_nodes > CFG_NODES_MAX)
			r = fail_at(x, -EINVAL, n->line, n->column, NULL, "more than %d YAML nodes",
				    CFG_NODES_MAX);
		yaml_event_delete(&e);
		if (r < 0 || !n) {
			ynode_free(n);
			continue;
		}
		if (depth == 0) {
			root = n;
		} else if (ynode_add(stack[depth - 1], n) < 0) {
			ynode_free(n);
			r = -ENOMEM;
			break;
		}
		if (n->type != YN_SCALAR)
			stack[depth++] = n;
	}
	if (r == -ENOMEM)
		return cfg_error(-ENOMEM, x->err, x->errlen, "%s: out of memory", x->file);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(root);
	return 0;
}

/* ---- typed values ------------------------------------------------------------------- */

static bool is_null(const struct ynode *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (n->type != YN_SCALAR || !n->plain)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
		if (!strcmp(n->value, nulls[i]))
			return true;
	return false;
}

static const char *kind_name(const struct ynode *n)
{
	if (n->type == YN_SEQ)
		return "a list";
	if (n->type == YN_MAP)
		return "a mapping";
	if (is_null(n))
		return "an empty value";
	return n->plain ? "a scalar" : "a quoted string";
}

/* "got "yes"" or, for a quoted scalar, "got the quoted string "true"". */
static const char *got(char *buf, size_t size, const struct ynode *n)
{
	char q[96];

	if (n->type != YN_SCALAR || is_null(n))
		snprintf(buf, size, "got %s", kind_name(n));
	else
		snprintf(buf, size, "got %s%s", n->plain ? "" : "the quoted string ",
			 cfg_quote(q, sizeof(q), n->value, n->len));
	return buf;
}

static int get_bool(struct ctx *x, const struct ynode *n, const char *path, bool *ret)
{
	static const char *const t[] = {"true", "True", "TRUE"}, *const f[] = {"false", "False",
									       "FALSE"};
	char g[160];

	if (n->type == YN_SCALAR && n->plain)
		for (size_t i = 0; i < ELEMENTSOF(t); i++) {
			if (!strcmp(n->value, t[i])) {
				*ret = true;
				return 0;
			}
			if (!strcmp(n->value, f[i])) {
				*ret = false;
				return 0;
			}
		}
	return fail(x, n, path, "expected true or false, %s", got(g, sizeof(g), n));
}

/* Plain decimal, no sign but '-', no leading zeros (YAML 1.1 reads 010 as octal). */
static int get_int(struct ctx *x, const struct ynode *n, const char *path, long long min,
		   long long max, long long *ret)
{
	const char *s = n->value, *d;
	long long v = 0;
	char g[160];

	if (n->type != YN_SCALAR || !n->plain || is_null(n))
		goto bad;
	d = s[0] == '-' ? s + 1 : s;
	if (!*d || (d[0] == '0' && d[1]))
		goto bad;
	for (const char *p = d; *p; p++)
		if (!isdigit((unsigned char)*p))
			goto bad;
	for (const char *p = d; *p && v <= 1000000000LL; p++)
		v = v * 10 + (*p - '0'); /* stops far beyond any bound here */
	if (s[0] == '-')
		v = -v;
	if (v < min || v > max)
		return fail(x, n, path, "must be between %lld and %lld, got %.40s%s", min, max, s,
			    n->len > 40 ? "..." : "");
	*ret = v;
	return 0;
bad:
	return fail(x, n, path, "expected an integer, %s", got(g, sizeof(g), n));
}

/* A scalar string (plain or quoted, not empty/null), at most max bytes, no NUL. */
static int get_string(struct ctx *x, const struct ynode *n, const char *path, size_t max,
		      const char **ret)
{
	char g[160];

	if (n->type != YN_SCALAR || is_null(n))
		return fail(x, n, path, "expected a string, %s", got(g, sizeof(g), n));
	if (n->len == 0)
		return fail(x, n, path, "empty string");
	if (memchr(n->value, '\0', n->len))
		return fail(x, n, path, "contains a NUL character");
	if (n->len > max)
		return fail(x, n, path, "longer than %zu characters", max);
	*ret = n->value;
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
 * Checks map's keys against keys[] (unknown, duplicate, non-string keys are errors) and
 * returns each known key's value in vals[] and key node in knodes[] (NULL: absent).
 */
static int map_fields(struct ctx *x, const struct ynode *map, const char *path,
		      const char *const *keys, size_t n_keys, const struct ynode **vals,
		      const struct ynode **knodes)
{
	char q[96], known[512];

	for (size_t k = 0; k < n_keys; k++)
		vals[k] = knodes[k] = NULL;
	for (size_t i = 0; i + 1 < map->n_kids; i += 2) {
		const struct ynode *key = map->kids[i];
		size_t k, best = 0, best_d = (size_t)-1;

		if (key->type != YN_SCALAR || is_null(key))
			return fail(x, key, path, "a mapping key must be a string, got %s",
				    kind_name(key));
		for (k = 0; k < n_keys; k++)
			if (strlen(keys[k]) == key->len && !strcmp(keys[k], key->value))
				break;
		if (k < n_keys) {
			if (knodes[k])
				return fail(x, key, path,
					    "duplicate key %s (first at line %u, column %u)",
					    keys[k], knodes[k]->line, knodes[k]->column);
			knodes[k] = key;
			vals[k] = map->kids[i + 1];
			continue;
		}
		for (k = 0; k < n_keys; k++) {
			size_t d = edit_distance(key->value, keys[k]);

			if (d < best_d) {
				best_d = d;
				best = k;
			}
		}
		cfg_quote(q, sizeof(q), key->value, key->len);
		if (best_d <= 2 && best_d < strlen(keys[best]))
			return fail(x, key, path, "unknown key %s (did you mean %s?)", q,
				    keys[best]);
		size_t o = 0;

		for (k = 0; k < n_keys; k++)
			o += (size_t)snprintf(known + o, sizeof(known) - o, "%s%s", k ? ", " : "",
					      keys[k]);
		return fail(x, key, path, "unknown key %s (known keys: %s)", q, known);
	}
	return 0;
}

static int need_map(struct ctx *x, const struct ynode *n, const char *path)
{
	if (n->type != YN_MAP)
		return fail(x, n, path, "expected a mapping, got %s", kind_name(n));
	return 0;
}

/* A selector list: a YAML sequence of 1..CFG_VALUES_MAX items. */
static int need_list(struct ctx *x, const struct ynode *n, const char *path)
{
	if (n->type != YN_SEQ)
		return fail(x, n, path, "expected a list (one value is written [value]), got %s",
			    kind_name(n));
	if (n->n_kids == 0)
		return fail(x, n, path, "empty list (leave the key out to select any value)");
	if (n->n_kids > CFG_VALUES_MAX)
		return fail(x, n, path, "more than %d values", CFG_VALUES_MAX);
	return 0;
}

/* ---- value rules -------------------------------------------------------------------- */

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return isascii((unsigned char)c) && isalnum((unsigned char)c);
}

/* DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each alphanumeric at both ends. */
static bool dns_subdomain_is_valid(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len;) {
		size_t l = 0;

		while (i + l < len && s[i + l] != '.')
			l++;
		if (l == 0 || !is_lower_alnum(s[i]) || !is_lower_alnum(s[i + l - 1]))
			return false;
		for (size_t k = i; k < i + l; k++)
			if (!is_lower_alnum(s[k]) && s[k] != '-')
				return false;
		i += l;
		if (i < len && ++i == len)
			return false; /* trailing dot */
	}
	return true;
}

/* Name part of a qualified name: <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends. */
static bool qualified_name_part_is_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
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
	if (!dns_subdomain_is_valid(name, (size_t)(slash - name)))
		return "the domain must be a DNS subdomain: dot-separated labels of lower-case "
		       "letters, digits and '-'";
	if (!qualified_name_part_is_valid(slash + 1))
		return "the name after '/' must be 1 to 63 characters of [A-Za-z0-9_.-], "
		       "starting and ending with a letter or digit";
	return NULL;
}

/* The memlock hook's rule (hook_parse_memlock): "unlimited" or BYTES[K|M|G] > 0. */
static bool memlock_is_valid(const char *s)
{
	unsigned long long v = 0, mult = 1;
	const char *p;

	if (strcasecmp(s, "unlimited") == 0)
		return true;
	for (p = s; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (~0ULL - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (p == s || v == 0)
		return false;
	if (*p) {
		if (strchr("kK", *p))
			mult = 1ULL << 10;
		else if (strchr("mM", *p))
			mult = 1ULL << 20;
		else if (strchr("gG", *p))
			mult = 1ULL << 30;
		else
			return false;
		if (p[1])
			return false;
	}
	/* All ones is RLIM_INFINITY: a byte count that large would mean "unlimited". */
	return v <= ~0ULL / mult && v * mult != ~0ULL;
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

static int parse_str_list(struct ctx *x, const struct ynode *n, const char *path,
			  enum str_rule rule, char ***ret, size_t *ret_n)
{
	char ipath[192], q[96];
	char **v;
	int r;

	r = need_list(x, n, path);
	if (r < 0)
		return r;
	v = calloc(n->n_kids, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ynode *it = n->kids[i];
		const char *s, *norm = NULL, *why;

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		r = get_string(x, it, ipath, CFG_PATTERN_MAX, &s);
		if (r < 0)
			return r;
		cfg_quote(q, sizeof(q), s, it->len);
		switch (rule) {
		case STR_PATTERN:
			if (!pattern_is_valid(s))
				return fail(
				    x, it, ipath,
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
				return fail(
				    x, it, ipath,
				    "unknown link layer %s (expected InfiniBand or Ethernet)", q);
			break;
		}
		v[i] = strdup(norm ? norm : s);
		if (!v[i])
			return -ENOMEM;
		(*ret_n)++;
	}
	return 0;
}

static int parse_hex_list(struct ctx *x, const struct ynode *n, const char *path, const char *what,
			  unsigned **ret, size_t *ret_n)
{
	char ipath[192], q[96];
	unsigned *v;
	int r;

	r = need_list(x, n, path);
	if (r < 0)
		return r;
	v = calloc(n->n_kids, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (size_t i = 0; i < n->n_kids; i++) {
		const struct ynode *it = n->kids[i];
		const char *s;

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		r = get_string(x, it, ipath, CFG_PATTERN_MAX, &s);
		if (r < 0)
			return r;
		if (parse_hex_id(s, &v[i]) < 0)
			return fail(x, it, ipath,
				    "invalid %s %s: expected 1 to 4 hex digits such as 15b3, "
				    "optionally with 0x, not 0",
				    what, cfg_quote(q, sizeof(q), s, it->len));
		(*ret_n)++;
	}
	return 0;
}

static int parse_numa_list(struct ctx *x, const struct ynode *n, const char *path, int **ret,
			   size_t *ret_n)
{
	char ipath[192];
	int *v;
	int r;

	r = need_list(x, n, path);
	if (r < 0)
		return r;
	v = calloc(n->n_kids, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (size_t i = 0; i < n->n_kids; i++) {
		long long num;

		snprintf(ipath, sizeof(ipath), "%s[%zu]", path, i);
		r = get_int(x, n->kids[i], ipath, 0, CFG_NUMA_MAX, &num);
		if (r < 0)
			return r;
		v[i] = (int)num;
		(*ret_n)++;
	}
	return 0;
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

static int parse_selectors(struct ctx *x, const struct ynode *n, const char *path,
			   struct cfg_selectors *s)
{
	const struct ynode *v[SEL_N], *k[SEL_N];
	char p[SEL_N][160];
	int r;

	r = need_map(x, n, path);
	if (r < 0)
		return r;
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

		r = get_bool(x, v[SEL_VF], p[SEL_VF], &b);
		if (r < 0)
			return r;
		s->vf = b;
	}
	if (v[SEL_NUMA_NODES] && (r = parse_numa_list(x, v[SEL_NUMA_NODES], p[SEL_NUMA_NODES],
						      &s->numa_nodes, &s->n_numa_nodes)) < 0)
		return r;
	/* pfNames selects VFs: "vf: false" with it can never match anything. */
	if (v[SEL_PF_NAMES] && v[SEL_VF] && s->vf == 0)
		return fail(x, v[SEL_VF], p[SEL_VF],
			    "false contradicts pfNames, which selects VFs only");
	return 0;
}

/* ---- pools -------------------------------------------------------------------------- */

enum { POOL_RESOURCE, POOL_MODE, POOL_SLOTS, POOL_NCCL, POOL_SELECTORS, POOL_N };

static const char *const pool_keys[POOL_N] = {
    [POOL_RESOURCE] = "resourceName", [POOL_MODE] = "mode",	      [POOL_SLOTS] = "sharedSlots",
    [POOL_NCCL] = "ncclEnv",	      [POOL_SELECTORS] = "selectors",
};

static int parse_pool(struct ctx *x, const struct ynode *n, const char *path, struct cfg_pool *p,
		      const struct ynode **ret_resource)
{
	const struct ynode *v[POOL_N], *k[POOL_N];
	char kp[POOL_N][96], q[96], g[160];
	const char *s, *why;
	int r;

	p->sel.vf = -1;
	p->line = n->line;
	p->column = n->column;
	r = need_map(x, n, path);
	if (r < 0)
		return r;
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
			    cfg_quote(q, sizeof(q), s, v[POOL_RESOURCE]->len), why);
	p->resource_name = strdup(s);
	if (!p->resource_name)
		return -ENOMEM;
	*ret_resource = v[POOL_RESOURCE];

	p->mode = CFG_MODE_EXCLUSIVE;
	if (v[POOL_MODE]) {
		const struct ynode *m = v[POOL_MODE];

		if (m->type == YN_SCALAR && !strcmp(m->value, "exclusive"))
			p->mode = CFG_MODE_EXCLUSIVE;
		else if (m->type == YN_SCALAR && !strcmp(m->value, "shared"))
			p->mode = CFG_MODE_SHARED;
		else
			return fail(x, m, kp[POOL_MODE], "expected exclusive or shared, %s",
				    got(g, sizeof(g), m));
	}
	if (v[POOL_SLOTS]) {
		long long slots;

		if (p->mode != CFG_MODE_SHARED)
			return fail(
			    x, k[POOL_SLOTS], kp[POOL_SLOTS],
			    "only valid with mode: shared (an exclusive pool gives each HCA "
			    "to one pod)");
		r = get_int(x, v[POOL_SLOTS], kp[POOL_SLOTS], 1, CFG_SHARED_SLOTS_MAX, &slots);
		if (r < 0)
			return r;
		p->shared_slots = (unsigned)slots;
	} else if (p->mode == CFG_MODE_SHARED) {
		return fail(x, v[POOL_MODE], kp[POOL_SLOTS],
			    "required with mode: shared (pods per HCA, 1 to %d)",
			    CFG_SHARED_SLOTS_MAX);
	}
	if (v[POOL_NCCL] && (r = get_bool(x, v[POOL_NCCL], kp[POOL_NCCL], &p->nccl_env)) < 0)
		return r;
	if (v[POOL_SELECTORS] &&
	    (r = parse_selectors(x, v[POOL_SELECTORS], kp[POOL_SELECTORS], &p->sel)) < 0)
		return r;
	return 0;
}

static int parse_pools(struct ctx *x, const struct ynode *n, struct cfg *c)
{
	const struct ynode *res[CFG_POOLS_MAX];
	char path[64], q[96];
	int r;

	if (n->type != YN_SEQ)
		return fail(x, n, "pools", "expected a list of pools, got %s", kind_name(n));
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
					    cfg_quote(q, sizeof(q), c->pools[i].resource_name,
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

static int parse_document(struct ctx *x, const struct ynode *root, struct cfg *c)
{
	const struct ynode *v[TOP_N], *k[TOP_N];
	char q[96];
	const char *s;
	int r;

	if (root->type != YN_MAP)
		return fail(x, root, NULL,
			    "a config is a mapping of settings (kind, specDir, withMad, memlock, "
			    "pools), got %s",
			    kind_name(root));
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
				    cfg_quote(q, sizeof(q), s, v[TOP_KIND]->len));
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
				    cfg_quote(q, sizeof(q), s, v[TOP_SPEC_DIR]->len));
		if ((r = set_string(&c->spec_dir, s)) < 0)
			return r;
	}
	if (v[TOP_WITH_MAD]) {
		bool b;

		r = get_bool(x, v[TOP_WITH_MAD], "withMad", &b);
		if (r < 0)
			return r;
		c->with_mad = b;
	}
	if (v[TOP_MEMLOCK]) {
		r = get_string(x, v[TOP_MEMLOCK], "memlock", 64, &s);
		if (r < 0)
			return r;
		if (!memlock_is_valid(s))
			return fail(x, v[TOP_MEMLOCK], "memlock",
				    "expected unlimited or a positive byte count with an optional "
				    "K, M or G suffix, got %s",
				    cfg_quote(q, sizeof(q), s, v[TOP_MEMLOCK]->len));
		if ((r = set_string(&c->memlock, s)) < 0)
			return r;
	}
	if (v[TOP_POOLS])
		return parse_pools(x, v[TOP_POOLS], c);
	return 0;
}

int cfg_parse(const char *buf, size_t len, const char *filename, struct cfg **ret, char *err,
	      size_t errlen)
{
	struct ctx x = {.file = filename ? filename : "<config>",
			.buf = buf,
			.len = len,
			.err = err,
			.errlen = errlen};
	_cleanup_(ynode_freep) struct ynode *root = NULL;
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	int r;

	if (len > CFG_FILE_MAX)
		return cfg_error(-EFBIG, err, errlen, "%s: larger than %d bytes", x.file,
				 CFG_FILE_MAX);
	r = build_tree(&x, &root);
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return cfg_error(-ENOMEM, err, errlen, "%s: out of memory", x.file);
	c->with_mad = -1;
	/* No document, or an empty one ("---" alone, "~"): every default. */
	if (root && !is_null(root)) {
		r = parse_document(&x, root, c);
		if (r == -ENOMEM)
			return cfg_error(-ENOMEM, err, errlen, "%s: out of memory", x.file);
		if (r < 0)
			return r;
	}
	if (!c->pools_set && cfg_default_pool(c) < 0)
		return cfg_error(-ENOMEM, err, errlen, "%s: out of memory", x.file);
	*ret = TAKE_PTR(c);
	return 0;
}

int cfg_load(const char *path, struct cfg **ret, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_full_file_at(AT_FDCWD, path, CFG_FILE_MAX, false, &buf, &len);
	if (r == -EFBIG)
		return cfg_error(r, err, errlen, "%s: larger than %d bytes", path, CFG_FILE_MAX);
	if (r == -EBADFD)
		return cfg_error(r, err, errlen, "%s: not a regular file", path);
	if (r < 0)
		return cfg_error(r, err, errlen, "%s: %s", path, strerror(-r));
	return cfg_parse(buf, len, path, ret, err, errlen);
}
