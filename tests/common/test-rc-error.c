/* SPDX-License-Identifier: Apache-2.0 */
/* The error contract (common/rc-error.h): set once, context in front, printed once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "../tap.h"

static int parse_line(const char *s, struct rc_error **err)
{
	if (strcmp(s, "ok") == 0)
		return 0;
	return rc_error_set(err, -EINVAL, "line %d: key: %s", 3, "not a number");
}

static int load(const char *path, const char *content, struct rc_error **err)
{
	int r = parse_line(content, err);

	if (r < 0)
		return rc_error_wrap(err, r, "config %s", path);
	return 0;
}

int main(void)
{
	struct rc_error *e = NULL;
	int r;

	r = load("/etc/x.yaml", "ok", &e);
	ok(r == 0 && !e, "success leaves the error alone");

	r = load("/etc/x.yaml", "bad", &e);
	ok(r == -EINVAL && e && e->code == EINVAL, "failure returns -code and sets the error");
	ok(e && strcmp(e->msg, "config /etc/x.yaml: line 3: key: not a number") == 0,
	   "context goes in front: %s", e ? e->msg : "(none)");
	ok(strcmp(rc_error_msg(e, r), e->msg) == 0, "rc_error_msg gives the message");

	/* A second error is dropped: the first cause is the one that counts. */
	r = rc_error_set(&e, -ENOENT, "second");
	ok(r == -ENOENT && e->code == EINVAL, "a set error is not replaced");
	rc_error_free(e);
	e = NULL;

	r = rc_error_wrap(&e, -ENOENT, "spec %s", "/etc/cdi/x.json");
	ok(r == -ENOENT && e && strcmp(e->msg, "spec /etc/cdi/x.json: No such file or directory") == 0,
	   "wrapping a plain -errno makes its message from strerror: %s", e ? e->msg : "(none)");
	rc_error_free(e);

	ok(strcmp(rc_error_msg(NULL, -EACCES), "Permission denied") == 0,
	   "no error object: strerror of the code");
	ok(rc_error_set(NULL, -EIO, "ignored") == -EIO, "a NULL err only returns r");
	ok(rc_error_wrap(NULL, -EIO, "ignored") == -EIO, "wrap with a NULL err only returns r");

	{
		_cleanup_rc_error_ struct rc_error *c = NULL;

		rc_error_set(&c, -EPERM, "%s", "");
		ok(c && strcmp(c->msg, "Operation not permitted") == 0,
		   "an empty message is the code's strerror");
	}
	rc_error_free(NULL);
	ok(true, "rc_error_free(NULL) is a no-op");
	return tap_done();
}
