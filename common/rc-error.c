/* SPDX-License-Identifier: Apache-2.0 */
/* The error contract (rc-error.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc-error.h"

static struct rc_error oom_error = {.code = ENOMEM, .msg = (char *)"out of memory"};

static int code_of(int r)
{
	return r < 0 ? -r : (r > 0 ? r : EIO);
}

int rc_error_setv(struct rc_error **err, int r, const char *fmt, va_list ap)
{
	struct rc_error *e;
	char *msg = NULL;

	if (!err || *err)
		return r;
	if (fmt && fmt[0] && vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	else if (!msg || !msg[0]) {
		free(msg);
		msg = strdup(strerror(code_of(r)));
	}
	e = msg ? malloc(sizeof(*e)) : NULL;
	if (!e) {
		free(msg);
		*err = &oom_error;
		return r;
	}
	e->code = code_of(r);
	e->msg = msg;
	*err = e;
	return r;
}

int rc_error_set(struct rc_error **err, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc_error_setv(err, r, fmt, ap);
	va_end(ap);
	return r;
}

int rc_error_wrap(struct rc_error **err, int r, const char *fmt, ...)
{
	char *ctx = NULL, *msg = NULL;
	va_list ap;

	if (!err)
		return r;
	if (!*err)
		rc_error_set(err, r, NULL);
	if (*err == &oom_error)
		return r;
	va_start(ap, fmt);
	if (vasprintf(&ctx, fmt, ap) < 0)
		ctx = NULL;
	va_end(ap);
	if (ctx && asprintf(&msg, "%s: %s", ctx, (*err)->msg) >= 0) {
		free((*err)->msg);
		(*err)->msg = msg;
	}
	free(ctx);
	return r;
}

const char *rc_error_msg(const struct rc_error *e, int r)
{
	return e ? e->msg : strerror(code_of(r));
}

void rc_error_free(struct rc_error *e)
{
	if (!e || e == &oom_error)
		return;
	free(e->msg);
	free(e);
}

void rc_error_freep(struct rc_error **e)
{
	rc_error_free(*e);
	*e = NULL;
}
