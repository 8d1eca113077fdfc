/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CDI specs to and from text: JSON (own printer, cJSON parser) and YAML (libyaml's
 * event emitter and parser).
 *
 * The runtimes read both formats through Go's sigs.k8s.io/yaml (YAML 1.1 typing), so
 * the YAML we write quotes every string such a reader could take for something else,
 * and the YAML we read is typed the same way (plain 0, yes, null, 1.5 are not strings).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "cdi-internal.h"

DEFINE_CLEANUP_FUNC(yaml_emitter_t, yaml_emitter_delete)
DEFINE_CLEANUP_FUNC(yaml_parser_t, yaml_parser_delete)

/* ---- growable output buffer -------------------------------------------------------- */

struct outbuf {
	char *data;
	size_t len, cap;
	bool oom;
};

static void out_add(struct outbuf *o, const void *p, size_t n)
{
	if (o->oom)
		return;
	if (o->cap - o->len < n + 1) {
		size_t ncap = o->cap ? o->cap : 4096;
		char *nd;

		while (ncap - o->len < n + 1) {
			if (ncap > SIZE_MAX / 2) {
				o->oom = true;
				return;
			}
			ncap *= 2;
		}
		nd = realloc(o->data, ncap);
		if (!nd) {
			o->oom = true;
			return;
		}
		o->data = nd;
		o->cap = ncap;
	}
	memcpy(o->data + o->len, p, n);
	o->len += n;
	o->data[o->len] = '\0';
}

static void out_str(struct outbuf *o, const char *s)
{
	out_add(o, s, strlen(s));
}

static int out_finish(struct outbuf *o, char **ret_buf, size_t *ret_len)
{
	if (o->oom) {
		free(o->data);
		return -ENOMEM;
	}
	if (!o->data) {
		o->data = calloc(1, 1);
		if (!o->data)
			return -ENOMEM;
	}
	*ret_buf = o->data;
	if (ret_len)
		*ret_len = o->len;
	return 0;
}

/* ---- shared helpers ---------------------------------------------------------------- */

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t n;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return i;
		if (len - i <= n)
			return i;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

static bool utf8_valid(const char *s)
{
	size_t len = strlen(s);

	return utf8_invalid_at((const unsigned char *)s, len) == len;
}

/* Integers print as integers (Go unmarshals "5.0" into an int64 field with an error). */
static int format_number(double d, char *buf, size_t size)
{
	if (!isfinite(d))
		return -EINVAL;
	if (d == floor(d) && fabs(d) <= 9007199254740992.0) {
		snprintf(buf, size, "%lld", (long long)d);
		return 0;
	}
	snprintf(buf, size, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, size, "%.17g", d);
	return 0;
}

static void pos_of(const char *buf, size_t off, size_t *ret_line, size_t *ret_col)
{
	size_t line = 1, col = 1;

	for (size_t i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	*ret_line = line;
	*ret_col = col;
}

/* ---- JSON output ------------------------------------------------------------------- */

static void json_string(struct outbuf *o, const char *s)
{
	out_add(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		size_t run = 0;

		/* Copy runs of characters that need no escaping in one go. */
		while ((unsigned char)s[run] >= 0x20 && s[run] != '"' && s[run] != '\\' &&
		       s[run] != 0x7f)
			run++;
		if (run) {
			out_add(o, s, run);
			s += run - 1;
			continue;
		}

		switch (c) {
		case '"':
			out_add(o, "\\\"", 2);
			break;
		case '\\':
			out_add(o, "\\\\", 2);
			break;
		case '\n':
			out_add(o, "\\n", 2);
			break;
		case '\t':
			out_add(o, "\\t", 2);
			break;
		case '\r':
			out_add(o, "\\r", 2);
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				out_add(o, esc, 6);
			} else {
				out_add(o, s, 1);
			}
		}
	}
	out_add(o, "\"", 1);
}

static void indent(struct outbuf *o, int depth)
{
	for (int i = 0; i < depth; i++)
		out_add(o, "  ", 2);
}

static int json_value(struct outbuf *o, const cJSON *item, int depth)
{
	const cJSON *c;
	char num[40];
	int r;

	if (depth > CDI_MAX_DEPTH)
		return -ELOOP;
	if (cJSON_IsString(item)) {
		if (!item->valuestring || !utf8_valid(item->valuestring))
			return -EINVAL;
		json_string(o, item->valuestring);
	} else if (cJSON_IsNumber(item)) {
		r = format_number(item->valuedouble, num, sizeof(num));
		if (r < 0)
			return r;
		out_str(o, num);
	} else if (cJSON_IsTrue(item)) {
		out_str(o, "true");
	} else if (cJSON_IsFalse(item)) {
		out_str(o, "false");
	} else if (cJSON_IsNull(item)) {
		out_str(o, "null");
	} else if (cJSON_IsArray(item) || cJSON_IsObject(item)) {
		bool obj = cJSON_IsObject(item);

		if (!item->child) {
			out_str(o, obj ? "{}" : "[]");
			return 0;
		}
		out_str(o, obj ? "{\n" : "[\n");
		for (c = item->child; c; c = c->next) {
			indent(o, depth + 1);
			if (obj) {
				if (!c->string || !utf8_valid(c->string))
					return -EINVAL;
				json_string(o, c->string);
				out_add(o, ": ", 2);
			}
			r = json_value(o, c, depth + 1);
			if (r < 0)
				return r;
			out_str(o, c->next ? ",\n" : "\n");
		}
		indent(o, depth);
		out_str(o, obj ? "}" : "]");
	} else {
		return -EINVAL;
	}
	return 0;
}

/* ---- YAML output ------------------------------------------------------------------- */

bool cdi_yaml_plain_is_safe(const char *s)
{
	/* Words some YAML 1.1 reader (go-yaml v2 included) resolves to a bool or null. */
	static const char *const reserved[] = {"y",	"n",  "yes", "no",  "true",
					       "false", "on", "off", "null"};
	size_t n;

	if (!s || !*s)
		return false;
	/* A letter, '/' or '_' first rules out numbers, ".inf", "~", indicators and "=". */
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '/' || *s == '_'))
		return false;
	n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=-");
	if (s[n] != '\0' || n > 256)
		return false;
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (strcasecmp(s, reserved[i]) == 0)
			return false;
	return true;
}

static int yaml_write_handler(void *data, unsigned char *buffer, size_t size)
{
	struct outbuf *o = data;

	out_add(o, buffer, size);
	return !o->oom;
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev, int init_ok)
{
	if (!init_ok)
		return -ENOMEM;
	/* The emitter owns the event from here on, even when it fails. */
	if (!yaml_emitter_emit(e, ev))
		return e->error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;
	return 0;
}

static int emit_scalar(yaml_emitter_t *e, const char *s, bool string)
{
	yaml_event_t ev;
	bool plain = !string || cdi_yaml_plain_is_safe(s);

	if (string && !utf8_valid(s))
		return -EINVAL;
	return emit(e, &ev,
		    yaml_scalar_event_initialize(
			&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain, string,
			plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE));
}

static int yaml_value(yaml_emitter_t *e, const cJSON *item, int depth)
{
	yaml_event_t ev;
	char num[40];
	int r;

	if (depth > CDI_MAX_DEPTH)
		return -ELOOP;
	if (cJSON_IsString(item)) {
		if (!item->valuestring)
			return -EINVAL;
		return emit_scalar(e, item->valuestring, true);
	}
	if (cJSON_IsNumber(item)) {
		r = format_number(item->valuedouble, num, sizeof(num));
		if (r < 0)
			return r;
		return emit_scalar(e, num, false);
	}
	if (cJSON_IsBool(item))
		return emit_scalar(e, cJSON_IsTrue(item) ? "true" : "false", false);
	if (cJSON_IsNull(item))
		return emit_scalar(e, "null", false);
	if (cJSON_IsArray(item)) {
		const cJSON *c;

		r = emit(e, &ev,
			 yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							      YAML_BLOCK_SEQUENCE_STYLE));
		if (r < 0)
			return r;
		cJSON_ArrayForEach (c, item) {
			r = yaml_value(e, c, depth + 1);
			if (r < 0)
				return r;
		}
		return emit(e, &ev, yaml_sequence_end_event_initialize(&ev));
	}
	if (cJSON_IsObject(item)) {
		const cJSON *c;

		r = emit(e, &ev,
			 yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							     YAML_BLOCK_MAPPING_STYLE));
		if (r < 0)
			return r;
		cJSON_ArrayForEach (c, item) {
			if (!c->string)
				return -EINVAL;
			r = emit_scalar(e, c->string, true);
			if (r < 0)
				return r;
			r = yaml_value(e, c, depth + 1);
			if (r < 0)
				return r;
		}
		return emit(e, &ev, yaml_mapping_end_event_initialize(&ev));
	}
	return -EINVAL;
}

static int yaml_format(const cJSON *spec, struct outbuf *o)
{
	_cleanup_(yaml_emitter_deletep) yaml_emitter_t *e = NULL;
	yaml_emitter_t emitter;
	yaml_event_t ev;
	int r;

	if (!yaml_emitter_initialize(&emitter))
		return -ENOMEM;
	e = &emitter;
	yaml_emitter_set_output(e, yaml_write_handler, o);
	yaml_emitter_set_unicode(e, 1);
	/* No line folding: long strings stay on one line. */
	yaml_emitter_set_width(e, -1);
	yaml_emitter_set_indent(e, 2);
	yaml_emitter_set_break(e, YAML_LN_BREAK);

	r = emit(e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	if (r < 0)
		return r;
	r = emit(e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	if (r < 0)
		return r;
	r = yaml_value(e, spec, 0);
	if (r < 0)
		return r;
	r = emit(e, &ev, yaml_document_end_event_initialize(&ev, 1));
	if (r < 0)
		return r;
	r = emit(e, &ev, yaml_stream_end_event_initialize(&ev));
	if (r < 0)
		return r;
	if (!yaml_emitter_flush(e))
		return o->oom ? -ENOMEM : -EIO;
	return o->oom ? -ENOMEM : 0;
}

int cdi_spec_format(const cJSON *spec, enum cdi_format fmt, char **ret_buf, size_t *ret_len)
{
	struct outbuf o = {};
	int r;

	if (!spec)
		return -EINVAL;
	if (fmt == CDI_FORMAT_JSON) {
		r = json_value(&o, spec, 0);
		out_add(&o, "\n", 1);
	} else if (fmt == CDI_FORMAT_YAML) {
		r = yaml_format(spec, &o);
	} else {
		r = -EINVAL;
	}
	if (r < 0) {
		free(o.data);
		return r;
	}
	return out_finish(&o, ret_buf, ret_len);
}

/* ---- JSON input -------------------------------------------------------------------- */

/* -EBADMSG with "LINE:COLUMN: <fmt>" (1-based) set in *err. */
static int bad_at(struct rc_error **err, size_t line, size_t col, const char *fmt, va_list ap)
    _printf_(4, 0);
static int bad_at(struct rc_error **err, size_t line, size_t col, const char *fmt, va_list ap)
{
	_cleanup_free_ char *reason = NULL;

	if (!err || *err)
		return -EBADMSG;
	if (vasprintf(&reason, fmt, ap) < 0)
		return rc_error_set(err, -EBADMSG, NULL);
	return rc_error_set(err, -EBADMSG, "%zu:%zu: %s", line, col, reason);
}

static int bad(struct rc_error **err, const char *buf, size_t off, const char *fmt, ...)
    _printf_(4, 5);
static int bad(struct rc_error **err, const char *buf, size_t off, const char *fmt, ...)
{
	size_t line, col;
	va_list ap;
	int r;

	pos_of(buf, off, &line, &col);
	va_start(ap, fmt);
	r = bad_at(err, line, col, fmt, ap);
	va_end(ap);
	return r;
}

/*
 * What cJSON does not check: NUL bytes and "\u0000" (either would silently cut a
 * string short), invalid UTF-8 (the Go readers refuse it) and the nesting depth. Also
 * tells whether the text ends inside a string or an open bracket: cJSON reports such
 * truncation at the start of the value it was in, we report the end.
 */
static int json_prescan(const char *buf, size_t len, bool *ret_truncated, struct rc_error **err)
{
	bool in_string = false;
	int depth = 0;
	size_t bad_utf8;

	bad_utf8 = utf8_invalid_at((const unsigned char *)buf, len);
	if (bad_utf8 < len)
		return bad(err, buf, bad_utf8, "invalid UTF-8");
	for (size_t i = 0; i < len; i++) {
		char c = buf[i];

		if (c == '\0')
			return bad(err, buf, i, "NUL byte");
		if (in_string) {
			if (c == '\\' && i + 1 < len) {
				if (buf[i + 1] == 'u' && len - i >= 6 &&
				    memcmp(buf + i + 2, "0000", 4) == 0)
					return bad(err, buf, i, "\\u0000 in a string");
				i++;
			} else if (c == '"') {
				in_string = false;
			}
			continue;
		}
		if (c == '"') {
			in_string = true;
		} else if (c == '{' || c == '[') {
			if (++depth > CDI_MAX_DEPTH)
				return bad(err, buf, i, "nested more than %d levels",
					   CDI_MAX_DEPTH);
		} else if (c == '}' || c == ']') {
			depth--;
		}
	}
	*ret_truncated = in_string || depth > 0;
	return 0;
}

/* The first key of obj that appears twice: pairwise when small, sorted when large. */
static int duplicate_key(const cJSON *obj, const char **ret_key)
{
	_cleanup_free_ const char **keys = NULL;
	const char *dup;
	const cJSON *c, *d;
	size_t n = 0, i = 0;

	cJSON_ArrayForEach (c, obj)
		n++;
	if (n < 2)
		return 0;
	if (n <= 16) {
		for (c = obj->child; c; c = c->next)
			for (d = obj->child; d != c; d = d->next)
				if (strcmp(c->string, d->string) == 0) {
					*ret_key = c->string;
					return 1;
				}
		return 0;
	}
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	cJSON_ArrayForEach (c, obj)
		keys[i++] = c->string;
	dup = cdi_sorted_duplicate(keys, n);
	if (!dup)
		return 0;
	*ret_key = dup;
	return 1;
}

/* cJSON keeps both members of a duplicated key; the Go readers refuse the document. */
static int find_duplicate(const cJSON *item, const cJSON **ret_obj, const char **ret_key)
{
	const cJSON *c;
	int r;

	if (cJSON_IsObject(item)) {
		r = duplicate_key(item, ret_key);
		if (r != 0) {
			*ret_obj = item;
			return r;
		}
	} else if (!cJSON_IsArray(item)) {
		return 0;
	}
	for (c = item->child; c; c = c->next) {
		r = find_duplicate(c, ret_obj, ret_key);
		if (r != 0)
			return r;
	}
	return 0;
}

/* Writes the path from item down to target; only used to report an error. */
static bool path_to(const cJSON *item, const cJSON *target, char *path, size_t pathlen, size_t plen)
{
	size_t i = 0;

	if (item == target)
		return true;
	if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
		return false;
	for (const cJSON *c = item->child; c; c = c->next, i++) {
		char q[96];
		int n;

		if (cJSON_IsObject(item))
			n = snprintf(path + plen, pathlen - plen, "%s%s", plen ? "." : "",
				     cdi_path_key(q, sizeof(q), c->string));
		else
			n = snprintf(path + plen, pathlen - plen, "[%zu]", i);
		n = n < 0 ? 0 : n;
		if (path_to(c, target, path, pathlen,
			    plen + (size_t)n < pathlen ? plen + (size_t)n : pathlen - 1))
			return true;
		path[plen] = '\0';
	}
	return false;
}

static int json_parse(const char *buf, size_t len, cJSON **ret, struct rc_error **err)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	const char *end = NULL, *dup = NULL;
	const cJSON *obj = NULL;
	char path[512] = "";
	bool truncated = false;
	int r;

	r = json_prescan(buf, len, &truncated, err);
	if (r < 0)
		return r;
	/* The parse end pointer, unlike cJSON_GetErrorPtr(), is not a global. */
	root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
	if (!root) {
		size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;

		if (off >= len || truncated)
			return bad(err, buf, len, "unexpected end of JSON");
		return bad(err, buf, off, "invalid JSON");
	}
	for (size_t off = (size_t)(end - buf); off < len; off++)
		if (!strchr(" \t\r\n", buf[off]))
			return bad(err, buf, off, "unexpected data after the JSON value");
	r = find_duplicate(root, &obj, &dup);
	if (r < 0)
		return r;
	if (r > 0) {
		char q[96];
		size_t n;

		path_to(root, obj, path, sizeof(path), 0);
		n = strlen(path);
		snprintf(path + n, sizeof(path) - n, "%s%s", n ? "." : "",
			 cdi_path_key(q, sizeof(q), dup));
		return rc_error_set(err, -EBADMSG, "%s: duplicate key", path);
	}
	*ret = TAKE_PTR(root);
	return 0;
}

/* ---- YAML input -------------------------------------------------------------------- */

struct yreader {
	yaml_parser_t parser;
	struct rc_error **err;
};

static int ybad(struct yreader *y, const yaml_mark_t *m, const char *fmt, ...) _printf_(3, 4);
static int ybad(struct yreader *y, const yaml_mark_t *m, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = bad_at(y->err, m->line + 1, m->column + 1, fmt, ap);
	va_end(ap);
	return r;
}

static int ynext(struct yreader *y, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&y->parser, ev)) {
		const yaml_parser_t *p = &y->parser;

		if (p->error == YAML_MEMORY_ERROR)
			return -ENOMEM;
		if (p->context)
			return ybad(y, &p->problem_mark, "%s %s", p->problem ? p->problem : "error",
				    p->context);
		return ybad(y, &p->problem_mark, "%s", p->problem ? p->problem : "invalid YAML");
	}
	return 0;
}

#define TAG_PREFIX "tag:yaml.org,2002:"

static bool is_float_text(const char *s)
{
	/* go-yaml's float form: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	size_t digits = 0;

	if (*s == '-' || *s == '+')
		s++;
	while (*s >= '0' && *s <= '9')
		s++, digits++;
	if (*s == '.') {
		s++;
		if (!digits && !(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++, digits++;
	}
	if (!digits)
		return false;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* YAML 1.1 typing of an untagged plain scalar, as go-yaml v2 does it. */
static int resolve_plain(struct yreader *y, const yaml_mark_t *m, const char *s, cJSON **ret)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	static const char *const trues[] = {"y",    "Y",    "yes", "Yes", "YES", "true",
					    "True", "TRUE", "on",  "On",  "ON"};
	static const char *const falses[] = {"n",     "N",     "no",  "No",  "NO", "false",
					     "False", "FALSE", "off", "Off", "OFF"};
	cJSON *item = NULL;
	char *end;

	for (size_t i = 0; i < ELEMENTSOF(nulls) && !item; i++)
		if (strcmp(s, nulls[i]) == 0)
			item = cJSON_CreateNull();
	for (size_t i = 0; i < ELEMENTSOF(trues) && !item; i++)
		if (strcmp(s, trues[i]) == 0)
			item = cJSON_CreateTrue();
	for (size_t i = 0; i < ELEMENTSOF(falses) && !item; i++)
		if (strcmp(s, falses[i]) == 0)
			item = cJSON_CreateFalse();
	if (!item && ((s[0] >= '0' && s[0] <= '9') ||
		      ((s[0] == '-' || s[0] == '+') && s[1] >= '0' && s[1] <= '9'))) {
		long long v;

		/* Base 0 like Go's ParseInt: 0x1f and 017 are numbers there too. */
		errno = 0;
		v = strtoll(s, &end, 0);
		if (*end == '\0' && errno == 0)
			item = cJSON_CreateNumber((double)v);
	}
	if (!item && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-' || s[0] == '+' || s[0] == '.') &&
	    is_float_text(s))
		item = cJSON_CreateNumber(strtod(s, NULL));
	if (!item) {
		const char *t = s + (s[0] == '-' || s[0] == '+');

		if (strcasecmp(t, ".inf") == 0 || strcasecmp(t, ".nan") == 0)
			return ybad(y, m, "infinity and NaN are not supported");
		item = cJSON_CreateString(s);
	}
	if (!item)
		return -ENOMEM;
	*ret = item;
	return 0;
}

static int scalar_text(struct yreader *y, const yaml_event_t *ev, char **ret)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	char *s;

	if (memchr(v, '\0', n))
		return ybad(y, &ev->start_mark, "NUL character in a string");
	s = strndup(v, n);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static int scalar_node(struct yreader *y, const yaml_event_t *ev, cJSON **ret)
{
	const char *tag = (const char *)ev->data.scalar.tag;
	_cleanup_free_ char *s = NULL;
	cJSON *item;
	int r;

	r = scalar_text(y, ev, &s);
	if (r < 0)
		return r;
	if (tag && strcmp(tag, "!") != 0 && strcmp(tag, TAG_PREFIX "str") != 0)
		return ybad(y, &ev->start_mark, "unsupported tag %s", tag);
	if (!tag && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		return resolve_plain(y, &ev->start_mark, s, ret);
	item = cJSON_CreateString(s);
	if (!item)
		return -ENOMEM;
	*ret = item;
	return 0;
}

static int yaml_node(struct yreader *y, yaml_event_t *ev, int depth, cJSON **ret);

static int check_collection(struct yreader *y, const yaml_event_t *ev, const yaml_char_t *anchor,
			    const yaml_char_t *tag, const char *want_tag, int depth)
{
	if (anchor)
		return ybad(y, &ev->start_mark, "anchors are not supported");
	if (tag && strcmp((const char *)tag, want_tag) != 0 && strcmp((const char *)tag, "!") != 0)
		return ybad(y, &ev->start_mark, "unsupported tag %s", (const char *)tag);
	if (depth >= CDI_MAX_DEPTH)
		return ybad(y, &ev->start_mark, "nested more than %d levels", CDI_MAX_DEPTH);
	return 0;
}

static int sequence_node(struct yreader *y, const yaml_event_t *start, int depth, cJSON **ret)
{
	_cleanup_(cJSON_Deletep) cJSON *arr = NULL;
	int r;

	r = check_collection(y, start, start->data.sequence_start.anchor,
			     start->data.sequence_start.tag, TAG_PREFIX "seq", depth);
	if (r < 0)
		return r;
	arr = cJSON_CreateArray();
	if (!arr)
		return -ENOMEM;
	for (;;) {
		yaml_event_t ev;
		cJSON *child = NULL;

		r = ynext(y, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		r = yaml_node(y, &ev, depth + 1, &child);
		yaml_event_delete(&ev);
		if (r < 0)
			return r;
		if (!cJSON_AddItemToArray(arr, child)) {
			cJSON_Delete(child);
			return -ENOMEM;
		}
	}
	*ret = TAKE_PTR(arr);
	return 0;
}

struct seen_key {
	const char *key;
	yaml_mark_t mark;
};

static int cmp_seen(const void *a, const void *b)
{
	const struct seen_key *x = a, *y = b;
	int r = strcmp(x->key, y->key);

	if (r)
		return r;
	return x->mark.index < y->mark.index ? -1 : x->mark.index > y->mark.index;
}

static int mapping_node(struct yreader *y, const yaml_event_t *start, int depth, cJSON **ret)
{
	_cleanup_(cJSON_Deletep) cJSON *obj = NULL;
	_cleanup_free_ struct seen_key *seen = NULL;
	size_t n_seen = 0, cap = 0;
	int r;

	r = check_collection(y, start, start->data.mapping_start.anchor,
			     start->data.mapping_start.tag, TAG_PREFIX "map", depth);
	if (r < 0)
		return r;
	obj = cJSON_CreateObject();
	if (!obj)
		return -ENOMEM;
	for (;;) {
		_cleanup_free_ char *key = NULL;
		yaml_event_t ev;
		yaml_mark_t mark;
		cJSON *child = NULL;

		r = ynext(y, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		mark = ev.start_mark;
		if (ev.type != YAML_SCALAR_EVENT) {
			yaml_event_delete(&ev);
			return ybad(y, &mark, "mapping keys must be strings");
		}
		if (ev.data.scalar.anchor) {
			yaml_event_delete(&ev);
			return ybad(y, &mark, "anchors are not supported");
		}
		r = scalar_text(y, &ev, &key);
		if (r >= 0 && ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    !ev.data.scalar.tag && strcmp(key, "<<") == 0)
			r = ybad(y, &mark, "merge keys are not supported");
		yaml_event_delete(&ev);
		if (r < 0)
			return r;

		r = ynext(y, &ev);
		if (r < 0)
			return r;
		r = yaml_node(y, &ev, depth + 1, &child);
		yaml_event_delete(&ev);
		if (r < 0)
			return r;
		if (!cJSON_AddItemToObject(obj, key, child)) {
			cJSON_Delete(child);
			return -ENOMEM;
		}
		/* Remember where each key was, to report a duplicate at its position. */
		if (n_seen == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct seen_key *ns = realloc(seen, ncap * sizeof(*seen));

			if (!ns)
				return -ENOMEM;
			seen = ns;
			cap = ncap;
		}
		seen[n_seen++] = (struct seen_key){.key = child->string, .mark = mark};
	}
	if (n_seen > 1) {
		qsort(seen, n_seen, sizeof(*seen), cmp_seen);
		for (size_t i = 1; i < n_seen; i++)
			if (strcmp(seen[i - 1].key, seen[i].key) == 0) {
				char q[96];

				return ybad(y, &seen[i].mark, "duplicate key %s",
					    cdi_quote(q, sizeof(q), seen[i].key));
			}
	}
	*ret = TAKE_PTR(obj);
	return 0;
}

static int yaml_node(struct yreader *y, yaml_event_t *ev, int depth, cJSON **ret)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return ybad(y, &ev->start_mark, "anchors are not supported");
		return scalar_node(y, ev, ret);
	case YAML_SEQUENCE_START_EVENT:
		return sequence_node(y, ev, depth, ret);
	case YAML_MAPPING_START_EVENT:
		return mapping_node(y, ev, depth, ret);
	case YAML_ALIAS_EVENT:
		return ybad(y, &ev->start_mark, "aliases are not supported");
	default:
		return ybad(y, &ev->start_mark, "unexpected YAML event");
	}
}

/* libyaml refuses raw control characters and invalid UTF-8 too, but reports them at 1:1. */
static int yaml_prescan(const char *buf, size_t len, struct rc_error **err)
{
	size_t bad_utf8 = utf8_invalid_at((const unsigned char *)buf, len);

	if (bad_utf8 < len)
		return bad(err, buf, bad_utf8, "invalid UTF-8");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];

		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
			return bad(err, buf, i, "control character 0x%02x", c);
	}
	return 0;
}

static int yaml_parse(const char *buf, size_t len, cJSON **ret, struct rc_error **err)
{
	_cleanup_(yaml_parser_deletep) yaml_parser_t *p = NULL;
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	struct yreader y = {.err = err};
	yaml_event_t ev;
	int r;

	r = yaml_prescan(buf, len, err);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&y.parser))
		return -ENOMEM;
	p = &y.parser;
	yaml_parser_set_input_string(p, (const unsigned char *)buf, len);

	r = ynext(&y, &ev);
	if (r < 0)
		return r;
	yaml_event_delete(&ev); /* STREAM-START */
	r = ynext(&y, &ev);
	if (r < 0)
		return r;
	if (ev.type != YAML_DOCUMENT_START_EVENT) {
		yaml_mark_t m = ev.start_mark;

		yaml_event_delete(&ev);
		return ybad(&y, &m, "empty document");
	}
	yaml_event_delete(&ev);

	r = ynext(&y, &ev);
	if (r < 0)
		return r;
	r = yaml_node(&y, &ev, 0, &root);
	yaml_event_delete(&ev);
	if (r < 0)
		return r;

	r = ynext(&y, &ev); /* DOCUMENT-END */
	if (r < 0)
		return r;
	yaml_event_delete(&ev);
	r = ynext(&y, &ev);
	if (r < 0)
		return r;
	if (ev.type != YAML_STREAM_END_EVENT) {
		yaml_mark_t m = ev.start_mark;

		yaml_event_delete(&ev);
		return ybad(&y, &m, "more than one document");
	}
	yaml_event_delete(&ev);
	*ret = TAKE_PTR(root);
	return 0;
}

int cdi_spec_parse(const char *buf, size_t len, enum cdi_format fmt, cJSON **ret_spec,
		   struct rc_error **err)
{
	if (!buf && len)
		return -EINVAL;
	if (len > CDI_SPEC_MAX_BYTES)
		return rc_error_set(err, -EFBIG, "larger than %u bytes", CDI_SPEC_MAX_BYTES);
	if (!buf)
		buf = "";
	if (fmt == CDI_FORMAT_JSON)
		return json_parse(buf, len, ret_spec, err);
	if (fmt == CDI_FORMAT_YAML)
		return yaml_parse(buf, len, ret_spec, err);
	return -EINVAL;
}

/* ---- file names -------------------------------------------------------------------- */

char *cdi_spec_file_name(const char *kind, enum cdi_format fmt)
{
	char *s, *slash;

	if (!kind)
		return NULL;
	s = strdup_printf("%s.%s", kind, fmt == CDI_FORMAT_YAML ? "yaml" : "json");
	if (!s)
		return NULL;
	while ((slash = strchr(s, '/')))
		*slash = '-';
	return s;
}

int cdi_format_from_file_name(const char *name, enum cdi_format *ret_fmt)
{
	size_t n = name ? strlen(name) : 0;

	if (n >= 5 && strcmp(name + n - 5, ".json") == 0) {
		*ret_fmt = CDI_FORMAT_JSON;
		return 0;
	}
	if (n >= 5 && strcmp(name + n - 5, ".yaml") == 0) {
		*ret_fmt = CDI_FORMAT_YAML;
		return 0;
	}
	return -EINVAL;
}
