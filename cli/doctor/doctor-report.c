/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The report: every check is one object in d->checks (id, status, message, fix, data);
 * the text and the JSON are both rendered from that array. Messages and data hold text
 * from disk (file names, config values, sysfs names): escaped on the way out, for a
 * terminal (text_escape) and for a JSON parser (json_untrusted_string), never on the way
 * in, so that both renderings start from the same bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "build-config.h"
#include "common.h"
#include "doctor-internal.h"
#include "doctor.h"

static const char *const status_names[] = {
    [DOCTOR_OK] = "ok",	    [DOCTOR_INFO] = "info", [DOCTOR_WARN] = "warn",
    [DOCTOR_FAIL] = "fail", [DOCTOR_SKIP] = "skip",
};

void doctor_add_check(struct doctor *d, const char *id, enum doctor_status st, cJSON *data,
		      const char *fix, const char *fmt, ...)
{
	char msg[2048];
	cJSON *c = cJSON_CreateObject();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->n[st]++;
	if (!c || !cJSON_AddStringToObject(c, "id", id) ||
	    !cJSON_AddStringToObject(c, "status", status_names[st]) ||
	    !cJSON_AddStringToObject(c, "message", msg) ||
	    !(fix ? cJSON_AddStringToObject(c, "fix", fix) : cJSON_AddNullToObject(c, "fix")) ||
	    !cJSON_AddItemToObject(c, "data", data ? data : cJSON_CreateObject()) ||
	    !cJSON_AddItemToArray(d->checks, c)) {
		d->oom = true;
		cJSON_Delete(c);
	}
}

bool doctor_failed(const struct doctor *d)
{
	return d->n[DOCTOR_FAIL] > 0;
}

/* ---- JSON ---------------------------------------------------------------------------- */

/* Replaces every string of the tree that is not UTF-8 by its escaped form; false on OOM. */
static bool json_make_utf8(cJSON *parent)
{
	cJSON *c, *next;

	for (c = parent ? parent->child : NULL; c; c = next) {
		next = c->next;
		if (cJSON_IsString(c) && !text_is_utf8(c->valuestring, strlen(c->valuestring))) {
			cJSON *s = json_untrusted_string(c->valuestring);

			/* The replacement takes the key along: ReplaceItemViaPointer does not. */
			if (s && c->string)
				s->string = strdup(c->string);
			if (!s || (c->string && !s->string)) {
				cJSON_Delete(s);
				return false;
			}
			cJSON_ReplaceItemViaPointer(parent, c, s);
		} else if ((cJSON_IsArray(c) || cJSON_IsObject(c)) && !json_make_utf8(c)) {
			return false;
		}
	}
	return true;
}

cJSON *doctor_json(const struct doctor *d)
{
	const struct doctor_options *o = d->o;
	_cleanup_(cJSON_Deletep) cJSON *j = cJSON_CreateObject();
	cJSON *checks = cJSON_Duplicate(d->checks, true);

	if (!j || !checks) {
		cJSON_Delete(checks);
		return NULL;
	}
	if (!cJSON_AddNumberToObject(j, "doctor_version", DOCTOR_JSON_VERSION) ||
	    !cJSON_AddStringToObject(j, "rdma_cdi_version", RDMA_CDI_VERSION) ||
	    !cJSON_AddStringToObject(j, "host_root", o->host_root) ||
	    !cJSON_AddNumberToObject(j, "mr_size", (double)o->mr_size) ||
	    !cJSON_AddStringToObject(j, "verdict", doctor_failed(d) ? "fail" : "ok") ||
	    !cJSON_AddNumberToObject(j, "failed", d->n[DOCTOR_FAIL]) ||
	    !cJSON_AddNumberToObject(j, "warnings", d->n[DOCTOR_WARN]) ||
	    !cJSON_AddItemToObject(j, "checks", checks)) {
		if (!cJSON_GetObjectItemCaseSensitive(j, "checks"))
			cJSON_Delete(checks);
		return NULL;
	}
	return json_make_utf8(j) ? TAKE_PTR(j) : NULL;
}

/* ---- text ---------------------------------------------------------------------------- */

/* Text from disk on a terminal: one line, no control sequence. */
static int print_escaped(FILE *f, const char *s)
{
	_cleanup_free_ char *e = escape_untrusted(s);

	if (!e)
		return -ENOMEM;
	return fputs(e, f) < 0 ? -EIO : 0;
}

static const char *item_string(const cJSON *c, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static enum doctor_status item_status(const cJSON *c)
{
	const char *st = item_string(c, "status");

	for (size_t i = 0; st && i < ELEMENTSOF(status_names); i++)
		if (strcmp(st, status_names[i]) == 0)
			return (enum doctor_status)i;
	return DOCTOR_OK;
}

/* Two failures with one cause (no devices: sysfs and verbs agree) get one fix line. */
static bool fix_printed_before(const cJSON *checks, const cJSON *upto, const char *fix)
{
	const cJSON *c;

	cJSON_ArrayForEach (c, checks) {
		const char *f = item_string(c, "fix");

		if (c == upto)
			return false;
		if (f && strcmp(f, fix) == 0 && item_status(c) == item_status(upto))
			return true;
	}
	return false;
}

static int print_checks(const struct doctor *d, FILE *f)
{
	static const char *const tags[] = {
	    [DOCTOR_OK] = " ok ",   [DOCTOR_INFO] = "info", [DOCTOR_WARN] = "WARN",
	    [DOCTOR_FAIL] = "FAIL", [DOCTOR_SKIP] = "skip",
	};
	const cJSON *c;
	int r = 0;

	cJSON_ArrayForEach (c, d->checks) {
		fprintf(f, "[%s] ", tags[item_status(c)]);
		r = print_escaped(f, item_string(c, "id"));
		fputs(": ", f);
		if (r >= 0)
			r = print_escaped(f, item_string(c, "message"));
		if (r < 0)
			return r;
		fputc('\n', f);
	}
	return 0;
}

static int print_fixes(const struct doctor *d, FILE *f)
{
	unsigned k = 0;

	for (enum doctor_status want = DOCTOR_FAIL; want >= DOCTOR_WARN; want--) {
		const cJSON *c;

		cJSON_ArrayForEach (c, d->checks) {
			const char *fix = item_string(c, "fix");
			int r;

			if (item_status(c) != want || !fix || fix_printed_before(d->checks, c, fix))
				continue;
			if (k++ == 0)
				fprintf(f, "\nto fix:\n");
			fprintf(f, "  %u. ", k);
			r = print_escaped(f, item_string(c, "id"));
			fprintf(f, " (%s): ", want == DOCTOR_FAIL ? "failed" : "warning");
			if (r >= 0)
				r = print_escaped(f, fix);
			if (r < 0)
				return r;
			fputc('\n', f);
		}
	}
	return 0;
}

int doctor_print_text(const struct doctor *d, FILE *f)
{
	_cleanup_free_ char *root = escape_untrusted(d->o->host_root);
	int r;

	if (!root)
		return -ENOMEM;
	fprintf(f, "rdma-cdi doctor %s (host root %s, memory region %zu bytes)\n", RDMA_CDI_VERSION,
		root, d->o->mr_size);
	r = print_checks(d, f);
	if (r < 0)
		return r;
	fprintf(f, "\nverdict: %s: %u failed, %u warnings, %u ok\n",
		d->n[DOCTOR_FAIL]   ? "FAIL"
		: d->n[DOCTOR_WARN] ? "OK with warnings"
				    : "OK",
		d->n[DOCTOR_FAIL], d->n[DOCTOR_WARN], d->n[DOCTOR_OK]);
	r = print_fixes(d, f);
	if (r < 0)
		return r;
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
