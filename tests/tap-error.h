/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of functions that take `struct rc_error **err` (common/rc-error.h) assert the
 * message a user would read. tap_err() gives it and frees the error, so the next call
 * starts from NULL as the contract wants.
 */
#pragma once

#include <stdio.h>

#include "common.h"

/* *e's message ("" when none was set) in a buffer that lives until the next call; *e is
 * freed and NULL afterwards. */
static inline const char *tap_err(struct rc_error **e)
{
	static char buf[2048];

	snprintf(buf, sizeof(buf), "%s", *e ? (*e)->msg : "");
	rc_error_freep(e);
	return buf;
}

/* For tests that call many functions and read the message afterwards: tap_fresh() is the
 * err argument of the next call (the last call's error freed), tap_msg() its message ("" when
 * it set none). */
static struct rc_error *tap_e;

static inline struct rc_error **tap_fresh(void)
{
	rc_error_freep(&tap_e);
	return &tap_e;
}

static inline const char *tap_msg(void)
{
	return tap_e ? tap_e->msg : "";
}
