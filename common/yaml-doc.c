/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One YAML document as a bounded tree (yaml-doc.h): libyaml events -> nodes that keep
 * their line and column, so a caller may look at a whole mapping and still name the
 * place of a bad value.
 */
#include <ctype.h>
#include <string.h>

#include <yaml.h>

#include "yaml-doc.h"

DEFINE_CLEANUP_FUNC(yaml_parser_t, yaml_parser_delete)

/* ---- messages ----------------------------------------------------------------------- */

static int ydoc_vfail(const struct ydoc *d, int r, unsigned line, unsigned column, const char *path,
		      const char *fmt, va_list ap) _printf_(6, 0);
static int ydoc_vfail(const struct ydoc *d, int r, unsigned line, unsigned column, const char *path,
		      const char *fmt, va_list ap)
{
	const char *file = d->file ? d->file : "<input>";
	bool has_path = path && *path;
	_cleanup_free_ char *reason = NULL;

	if (!d->err || *d->err)
		return r;
	if (vasprintf(&reason, fmt, ap) < 0)
		return rc_error_set(d->err, -ENOMEM, NULL);
	if (line)
		return rc_error_set(d->err, r, "%s:%u:%u: %s%s%s", file, line, column,
				    has_path ? path : "", has_path ? ": " : "", reason);
	return rc_error_set(d->err, r, "%s: %s%s%s", file, has_path ? path : "",
			    has_path ? ": " : "", reason);
}

static int fail_at(const struct ydoc *d, int r, unsigned line, unsigned column, const char *path,
		   const char *fmt, ...) _printf_(6, 7);
static int fail_at(const struct ydoc *d, int r, unsigned line, unsigned column, const char *path,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = ydoc_vfail(d, r, line, column, path, fmt, ap);
	va_end(ap);
	return r;
}

int ydoc_fail(const struct ydoc *d, int r, const struct ydoc_node *at, const char *path,
	      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r = ydoc_vfail(d, r, at ? at->line : 0, at ? at->column : 0, path, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- the tree ----------------------------------------------------------------------- */

void ydoc_node_free(struct ydoc_node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n_kids; i++)
		ydoc_node_free(n->kids[i]);
	free(n->kids);
	free(n->value);
	free(n);
}

static int node_add(struct ydoc_node *parent, struct ydoc_node *kid)
{
	if (ARRAY_RESERVE(parent->kids, parent->cap, parent->n_kids + 1) < 0)
		return -ENOMEM;
	parent->kids[parent->n_kids++] = kid;
	return 0;
}

static struct ydoc_node *node_new(enum ydoc_type t, yaml_mark_t m)
{
	struct ydoc_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->type = t;
	n->line = (unsigned)m.line + 1;
	n->column = (unsigned)m.column + 1;
	return n;
}

/* The parse state: where messages go, the text (for reader errors, which carry only a
 * byte offset) and the limits. */
struct loader {
	const struct ydoc *d;
	const char *buf;
	size_t len;
	const struct ydoc_limits *lim;
};

static int yaml_fail(const struct loader *l, const yaml_parser_t *p)
{
	unsigned line = (unsigned)p->problem_mark.line + 1,
		 col = (unsigned)p->problem_mark.column + 1;
	const char *problem = p->problem ? p->problem : "unknown error";

	if (p->error == YAML_MEMORY_ERROR)
		return fail_at(l->d, -ENOMEM, 0, 0, l->lim->path, "out of memory");
	if (p->error == YAML_READER_ERROR)
		text_position(l->buf, l->len, p->problem_offset, &line, &col);
	if (p->context)
		return fail_at(l->d, -EBADMSG, line, col, l->lim->path,
			       "invalid YAML: %s, %s starting at line %u", problem, p->context,
			       (unsigned)p->context_mark.line + 1);
	return fail_at(l->d, -EBADMSG, line, col, l->lim->path, "invalid YAML: %s", problem);
}

static int check_node_props(const struct loader *l, const yaml_event_t *e,
			    const yaml_char_t *anchor, const yaml_char_t *tag)
{
	unsigned line = (unsigned)e->start_mark.line + 1, col = (unsigned)e->start_mark.column + 1;
	char q[96];

	if (anchor)
		return fail_at(
		    l->d, -EINVAL, line, col, l->lim->path, "YAML anchors are not accepted (&%s)",
		    text_quote(q, sizeof(q), (const char *)anchor, strlen((const char *)anchor)));
	if (tag && !l->lim->allow_tags)
		return fail_at(
		    l->d, -EINVAL, line, col, l->lim->path, "YAML tags are not accepted (%s)",
		    text_quote(q, sizeof(q), (const char *)tag, strlen((const char *)tag)));
	return 0;
}

/*
 * The node an event opens or is (*ret, NULL for events that are not nodes), after the
 * checks that need only the event. depth: the open collections around it.
 */
static int node_from_event(const struct loader *l, const yaml_event_t *e, size_t depth,
			   struct ydoc_node **ret)
{
	unsigned line = (unsigned)e->start_mark.line + 1, col = (unsigned)e->start_mark.column + 1;
	struct ydoc_node *n;
	int r;

	*ret = NULL;
	switch (e->type) {
	case YAML_ALIAS_EVENT:
		return fail_at(l->d, -EINVAL, line, col, l->lim->path,
			       "YAML aliases are not accepted");
	case YAML_SCALAR_EVENT:
		r = check_node_props(l, e, e->data.scalar.anchor, e->data.scalar.tag);
		if (r < 0)
			return r;
		n = node_new(YDOC_SCALAR, e->start_mark);
		if (!n || !(n->value = malloc(e->data.scalar.length + 1))) {
			ydoc_node_free(n);
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
			r = check_node_props(l, e, e->data.sequence_start.anchor,
					     e->data.sequence_start.tag);
		else
			r = check_node_props(l, e, e->data.mapping_start.anchor,
					     e->data.mapping_start.tag);
		if (r < 0)
			return r;
		if (depth >= l->lim->max_depth)
			return fail_at(l->d, -EINVAL, line, col, l->lim->path,
				       "nested deeper than %u levels", l->lim->max_depth);
		n = node_new(e->type == YAML_SEQUENCE_START_EVENT ? YDOC_SEQ : YDOC_MAP,
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

/* One event: the tree grows by the node it is, or the stack moves. */
static int load_event(const struct loader *l, const yaml_event_t *e, struct ydoc_node **stack,
		      size_t *depth, size_t *n_nodes, unsigned *docs, struct ydoc_node **root)
{
	const struct ydoc_limits *lim = l->lim;
	struct ydoc_node *n = NULL;
	int r;

	if (e->type == YAML_SEQUENCE_END_EVENT || e->type == YAML_MAPPING_END_EVENT) {
		(*depth)--;
		return 0;
	}
	if (e->type == YAML_DOCUMENT_START_EVENT && ++*docs > 1)
		return fail_at(l->d, -EINVAL, (unsigned)e->start_mark.line + 1,
			       (unsigned)e->start_mark.column + 1, lim->path,
			       "more than one YAML document%s%s%s", lim->what ? " (" : "",
			       lim->what ? lim->what : "", lim->what ? " is one document)" : "");
	r = node_from_event(l, e, *depth, &n);
	if (r < 0 || !n)
		return r;
	if (++*n_nodes > lim->max_nodes) {
		r = fail_at(l->d, -EINVAL, n->line, n->column, lim->path, "more than %u YAML nodes",
			    lim->max_nodes);
		ydoc_node_free(n);
		return r;
	}
	if (*depth == 0) {
		*root = n;
	} else if (node_add(stack[*depth - 1], n) < 0) {
		ydoc_node_free(n);
		return -ENOMEM;
	}
	if (n->type != YDOC_SCALAR)
		stack[(*depth)++] = n;
	return 0;
}

int ydoc_load(const struct ydoc *d, const char *buf, size_t len, const struct ydoc_limits *lim,
	      struct ydoc_node **ret_root)
{
	_cleanup_(yaml_parser_deletep) yaml_parser_t *parser = NULL;
	_cleanup_(ydoc_node_freep) struct ydoc_node *root = NULL;
	_cleanup_free_ struct ydoc_node **stack = NULL;
	struct loader l = {.d = d, .buf = buf, .len = len, .lim = lim};
	size_t depth = 0, n_nodes = 0;
	unsigned docs = 0;
	yaml_parser_t p;
	bool done = false;
	int r = 0;

	stack = calloc(lim->max_depth ? lim->max_depth : 1, sizeof(*stack));
	if (!stack || !yaml_parser_initialize(&p))
		return fail_at(d, -ENOMEM, 0, 0, lim->path, "out of memory");
	parser = &p;
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	while (!done && r >= 0) {
		yaml_event_t e;

		if (!yaml_parser_parse(&p, &e))
			return yaml_fail(&l, &p);
		done = e.type == YAML_STREAM_END_EVENT;
		r = load_event(&l, &e, stack, &depth, &n_nodes, &docs, &root);
		yaml_event_delete(&e);
	}
	if (r == -ENOMEM)
		return fail_at(d, -ENOMEM, 0, 0, lim->path, "out of memory");
	if (r < 0)
		return r;
	*ret_root = TAKE_PTR(root);
	return 0;
}

/* ---- reading values ------------------------------------------------------------------ */

bool ydoc_is_null(const struct ydoc_node *n)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};

	if (!n)
		return true;
	if (n->type != YDOC_SCALAR || !n->plain)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
		if (!strcmp(n->value, nulls[i]))
			return true;
	return false;
}

const char *ydoc_kind(const struct ydoc_node *n)
{
	if (n && n->type == YDOC_SEQ)
		return "a list";
	if (n && n->type == YDOC_MAP)
		return "a mapping";
	if (ydoc_is_null(n))
		return "an empty value";
	return n->plain ? "a scalar" : "a quoted string";
}

const char *ydoc_got(char *buf, size_t size, const struct ydoc_node *n)
{
	char q[96];

	if (!n || n->type != YDOC_SCALAR || ydoc_is_null(n))
		snprintf(buf, size, "got %s", ydoc_kind(n));
	else
		snprintf(buf, size, "got %s%s", n->plain ? "" : "the quoted string ",
			 text_quote(q, sizeof(q), n->value, n->len));
	return buf;
}

static bool key_is(const struct ydoc_node *k, const char *key, size_t len)
{
	return k->type == YDOC_SCALAR && k->len == len && !memcmp(k->value, key, len);
}

const struct ydoc_node *ydoc_get(const struct ydoc_node *map, const char *key,
				 const struct ydoc_node **ret_key)
{
	size_t len = strlen(key);

	if (!map || map->type != YDOC_MAP)
		return NULL;
	for (size_t i = 0; i + 1 < map->n_kids; i += 2)
		if (key_is(map->kids[i], key, len)) {
			if (ret_key)
				*ret_key = map->kids[i];
			return map->kids[i + 1];
		}
	return NULL;
}

static int cmp_keys(const void *a, const void *b)
{
	const struct ydoc_node *x = *(const struct ydoc_node *const *)a,
			       *y = *(const struct ydoc_node *const *)b;
	size_t n = x->len < y->len ? x->len : y->len;
	int r = memcmp(x->value, y->value, n);

	if (r)
		return r;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	/* Equal keys in document order: the first of a run is the first written. */
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->column < y->column ? -1 : x->column > y->column;
}

static bool same_text(const struct ydoc_node *a, const struct ydoc_node *b)
{
	return a->len == b->len && !memcmp(a->value, b->value, a->len);
}

static bool before(const struct ydoc_node *a, const struct ydoc_node *b)
{
	return a->line < b->line || (a->line == b->line && a->column < b->column);
}

int ydoc_map(const struct ydoc *d, const struct ydoc_node *n, const char *path)
{
	_cleanup_free_ const struct ydoc_node **keys = NULL;
	const struct ydoc_node *dup = NULL, *first = NULL;
	size_t n_keys = n->n_kids / 2;
	char q[96];

	if (n->type != YDOC_MAP)
		return ydoc_fail(d, -EINVAL, n, path, "expected a mapping, got %s", ydoc_kind(n));
	for (size_t i = 0; i < n_keys; i++)
		if (n->kids[2 * i]->type != YDOC_SCALAR || ydoc_is_null(n->kids[2 * i]))
			return ydoc_fail(d, -EINVAL, n->kids[2 * i], path,
					 "a mapping key must be a string, got %s",
					 ydoc_kind(n->kids[2 * i]));
	if (n_keys < 2)
		return 0;
	/* Sorted, so a hostile mapping of 50,000 keys costs no 10^9 comparisons. */
	keys = malloc(n_keys * sizeof(*keys));
	if (!keys)
		return ydoc_fail(d, -ENOMEM, NULL, path, "out of memory");
	for (size_t i = 0; i < n_keys; i++)
		keys[i] = n->kids[2 * i];
	qsort(keys, n_keys, sizeof(*keys), cmp_keys);
	/* Equal keys now stand together, in document order. The duplicate reported is the
	 * one met first when reading the mapping: the earliest second of a run. */
	for (size_t i = 0, j; i < n_keys; i = j) {
		for (j = i + 1; j < n_keys && same_text(keys[i], keys[j]); j++)
			;
		if (j - i >= 2 && (!dup || before(keys[i + 1], dup))) {
			dup = keys[i + 1];
			first = keys[i];
		}
	}
	if (!dup)
		return 0;
	if (!text_needs_quotes(dup->value, dup->len))
		snprintf(q, sizeof(q), "%s", dup->value);
	else
		text_quote(q, sizeof(q), dup->value, dup->len);
	return ydoc_fail(d, -EINVAL, dup, path, "duplicate key %s (first at line %u, column %u)", q,
			 first->line, first->column);
}

int ydoc_string(const struct ydoc *d, const struct ydoc_node *n, const char *path, size_t max,
		const char **ret)
{
	char g[160];

	if (n->type != YDOC_SCALAR || ydoc_is_null(n))
		return ydoc_fail(d, -EINVAL, n, path, "expected a string, %s",
				 ydoc_got(g, sizeof(g), n));
	if (memchr(n->value, '\0', n->len))
		return ydoc_fail(d, -EINVAL, n, path, "contains a NUL character");
	if (n->len > max)
		return ydoc_fail(d, -EINVAL, n, path, "longer than %zu characters", max);
	*ret = n->value;
	return 0;
}

int ydoc_bool(const struct ydoc *d, const struct ydoc_node *n, const char *path, bool yaml11,
	      bool *ret)
{
	static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes",
					"YES",	"on",	"On",	"ON"};
	static const char *const f[] = {"false", "False", "FALSE", "no", "No",
					"NO",	 "off",	  "Off",   "OFF"};
	size_t words = yaml11 ? ELEMENTSOF(t) : 3;
	char g[160];

	if (n->type == YDOC_SCALAR && n->plain)
		for (size_t i = 0; i < words; i++) {
			if (!strcmp(n->value, t[i])) {
				*ret = true;
				return 0;
			}
			if (!strcmp(n->value, f[i])) {
				*ret = false;
				return 0;
			}
		}
	return ydoc_fail(d, -EINVAL, n, path, "expected true or false, %s",
			 ydoc_got(g, sizeof(g), n));
}

int ydoc_int(const struct ydoc *d, const struct ydoc_node *n, const char *path, long long min,
	     long long max, long long *ret)
{
	const char *s = n->value, *digits;
	long long v = 0;
	char g[160];

	if (n->type != YDOC_SCALAR || !n->plain || ydoc_is_null(n))
		goto bad;
	digits = s[0] == '-' ? s + 1 : s;
	if (!*digits || (digits[0] == '0' && digits[1]))
		goto bad;
	for (const char *p = digits; *p; p++)
		if (!isdigit((unsigned char)*p))
			goto bad;
	/* Stops past 10^16, far beyond any bound a caller gives: no overflow. */
	for (const char *p = digits; *p && v <= 1000000000000000LL; p++)
		v = v * 10 + (*p - '0');
	if (s[0] == '-')
		v = -v;
	if (v < min || v > max)
		return ydoc_fail(d, -EINVAL, n, path, "must be between %lld and %lld, got %.40s%s",
				 min, max, s, n->len > 40 ? "..." : "");
	*ret = v;
	return 0;
bad:
	return ydoc_fail(d, -EINVAL, n, path, "expected an integer, %s", ydoc_got(g, sizeof(g), n));
}
