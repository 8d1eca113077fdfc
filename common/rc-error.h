/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The error contract of rdma-cdi (rc-error.c). A function that can fail for a reason worth
 * telling returns int (>= 0 success, -errno failure) and takes `struct rc_error **err` as
 * its last parameter:
 *
 *   - on failure it returns -code and, when err is not NULL, sets *err to an error that
 *     carries the code and a one-line message naming the cause ("line 3: key: reason");
 *     *err is NULL on entry (setting an error twice is a bug: the second one is dropped);
 *   - on success it leaves *err alone;
 *   - each caller on the way up may add its context in front with rc_error_wrap()
 *     ("config /etc/rdma-cdi/config.yaml: line 3: ..."); the caller that decides what to
 *     do with the failure prints rc_error_msg() once, and frees the error;
 *   - out of memory while making an error gives a static error (ENOMEM, "out of memory")
 *     that rc_error_free() ignores: an error can always be returned.
 *
 * Functions that only ever fail with an errno whose strerror() says it all may stay plain
 * -errno functions; callers then make no message up for them.
 */
#pragma once

#include <stdarg.h>

struct rc_error {
	int code;  /* positive errno */
	char *msg; /* the whole message, context first; never NULL */
};

/* Makes *err (when err is not NULL and *err is NULL) from r (negative errno) and the
 * message; returns r. A message that is NULL or "" is strerror(-r). */
int rc_error_set(struct rc_error **err, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rc_error_setv(struct rc_error **err, int r, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Puts "<context>: " in front of *err's message (making it from strerror(-r) when *err
 * is NULL); returns r. With err NULL it does nothing and returns r. */
int rc_error_wrap(struct rc_error **err, int r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message to print: e's, else strerror(-r). Never NULL. */
const char *rc_error_msg(const struct rc_error *e, int r);

/* Accepts NULL and the static out-of-memory error. */
void rc_error_free(struct rc_error *e);
void rc_error_freep(struct rc_error **e);
#define _cleanup_rc_error_ __attribute__((cleanup(rc_error_freep)))
