/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube internals that tests and fuzzers call without files or sockets: the kubeconfig
 * parser on a buffer, the watch stream's line splitter and event parser.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "kube.h"

#define KUBE_CONFIG_MAX (4u * 1024 * 1024) /* largest kubeconfig read */
#define KUBE_TOKEN_MAX (64u * 1024)	   /* largest bearer token (file or inline) */
#define KUBE_CA_MAX (1u * 1024 * 1024)	   /* largest CA bundle */

/*
 * kube_config_load() on buf[0..len): path names the file in messages and its directory
 * anchors relative paths. Checks that the CA and token files it names exist (the CA must
 * hold a PEM certificate). Errors "PATH:LINE:COLUMN: key: reason" (or "PATH: key: reason"
 * for a key that is missing); -EINVAL, -EBADMSG (not YAML), -ENOENT (a file it names is
 * missing), -ENOMEM.
 */
int kube_config_parse(const char *buf, size_t len, const char *path, struct kube_config **ret,
		      struct rc_error **err);

/* A token as sent: trimmed of surrounding whitespace; refused (-EINVAL) when empty, longer
 * than KUBE_TOKEN_MAX or holding bytes outside printable ASCII (a header injection). The
 * token is s[*ret_start .. *ret_start + *ret_len). */
int kube_token_check(const char *s, size_t len, size_t *ret_start, size_t *ret_len);

/* ---- the watch stream --------------------------------------------------------------- */

/* Bytes of a newline-delimited stream, split into lines. */
struct kube_lines {
	char *buf;
	size_t start, len, cap; /* unread bytes are buf[start .. len) */
	size_t max;		/* longest line accepted, without its newline */
	size_t cur;		/* bytes of the line being received */
	bool last_cr;		/* ... and whether the last of them is '\r' */
};

void kube_lines_init(struct kube_lines *l, size_t max);
void kube_lines_done(struct kube_lines *l);
/* Appends data. -E2BIG when the line being received would exceed max; -ENOMEM. */
int kube_lines_feed(struct kube_lines *l, const char *data, size_t n);
/* 1 with the next complete line (without "\n" or "\r\n"; valid until the next feed or
 * next call), 0 when none is complete. Empty lines are skipped. */
int kube_lines_next(struct kube_lines *l, const char **ret_line, size_t *ret_len);
/* The bytes after the last newline (a stream that ended without one). */
size_t kube_lines_pending(const struct kube_lines *l, const char **ret_rest);

/*
 * One watch event line: {"type": "...", "object": {...}}. *ret_root owns the parsed JSON,
 * *ret_type and *ret_object point into it. -EBADMSG with the reason in err when the line is
 * not such an object (types outside ADDED MODIFIED DELETED BOOKMARK ERROR included).
 */
int kube_event_parse(const char *line, size_t len, cJSON **ret_root, const char **ret_type,
		     const cJSON **ret_object, struct rc_error **err);
