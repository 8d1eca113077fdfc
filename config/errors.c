/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The errors of one file (struct cfg_errors): the parser and the converter add each
 * error as they find it; the list keeps the first CFG_ERRORS_MAX in file order.
 */
#include <string.h>

#include "config-internal.h"

void cfg_errors_clear(struct cfg_errors *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].msg);
	free(e->v);
	*e = (struct cfg_errors){};
}

static bool after(const struct cfg_error *a, unsigned line, unsigned column)
{
	return a->line > line || (a->line == line && a->column > column);
}

int cfg_errors_add(struct cfg_errors *e, char *msg, unsigned line, unsigned column)
{
	size_t at;

	if (!msg)
		return -ENOMEM;
	if (!e->v) {
		e->v = calloc(CFG_ERRORS_MAX, sizeof(*e->v));
		if (!e->v) {
			free(msg);
			return -ENOMEM;
		}
	}
	/* After every error at or before its place: equal places keep the order found. */
	for (at = e->n; at > 0 && after(&e->v[at - 1], line, column); at--)
		;
	if (at == CFG_ERRORS_MAX) {
		free(msg);
		e->n_more++;
		return 0;
	}
	if (e->n == CFG_ERRORS_MAX) {
		free(e->v[--e->n].msg);
		e->n_more++;
	}
	memmove(&e->v[at + 1], &e->v[at], (e->n - at) * sizeof(*e->v));
	e->v[at] = (struct cfg_error){.msg = msg, .line = line, .column = column};
	e->n++;
	return 0;
}

int cfg_errors_summary(const struct cfg_errors *e, int r, struct rc_error **err)
{
	size_t more = e->n + e->n_more - 1;

	if (e->n == 0)
		return rc_error_set(err, r, NULL);
	if (more == 0)
		return rc_error_set(err, r, "%s", e->v[0].msg);
	return rc_error_set(err, r, "%s (and %zu more error%s)", e->v[0].msg, more,
			    more == 1 ? "" : "s");
}
