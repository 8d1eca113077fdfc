/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml-doc: one YAML document from hostile text, as a small bounded tree whose every node
 * keeps its line and column, plus the typed reads the config file and the kubeconfig
 * make of it. Built from libyaml's events (not its document API, which drops anchors and
 * explicit tags before the caller can refuse them).
 *
 * Messages: an rc_error (rc-error.h) "FILE:LINE:COLUMN: PATH: reason" in the caller's
 * *err; PATH is where the value sits ("pools[0].mode"), left out when NULL or empty;
 * without a node (out of memory) "FILE: PATH: reason". Nothing here prints or logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "common.h"

enum ydoc_type { YDOC_SCALAR, YDOC_SEQ, YDOC_MAP };

struct ydoc_node {
	enum ydoc_type type;
	unsigned line, column; /* 1-based, of the node's first character */
	char *value;	       /* scalar text, NUL-terminated (it may hold NULs: see len) */
	size_t len;
	bool plain; /* unquoted scalar: the only style that may be a bool, int or null */
	/* Sequence: the items. Mapping: key, value, key, value ... */
	struct ydoc_node **kids;
	size_t n_kids, cap;
};

/* Where messages go: the input's name and the caller's error (err may be NULL). */
struct ydoc {
	const char *file;
	struct rc_error **err;
};

/* What a document may be. The reader refuses anchors and aliases always (aliases expand
 * exponentially: billion laughs) and keeps the input's size to the caller. */
struct ydoc_limits {
	unsigned max_depth; /* collections nested in each other, e.g. 16 */
	unsigned max_nodes; /* nodes in the whole document */
	bool allow_tags;    /* false: "!!str x" is refused (tags retype values behind a check) */
	/* Named in the two-document message: "a config" gives "more than one YAML document
	 * (a config is one document)"; NULL leaves the parenthesis out. */
	const char *what;
	/* PATH of the reader's own messages (syntax, anchors, bounds), NULL for none. */
	const char *path;
};

/*
 * Parses buf[0..len) as one YAML document. *ret_root: the tree (free with
 * ydoc_node_free), NULL when the stream holds no document (empty text, comments only).
 * -EBADMSG: not YAML (libyaml's reason, at its position: reader errors are mapped from
 * their byte offset); -EINVAL: a second document, an anchor, alias or refused tag, deeper
 * or more nodes than lim allows; -ENOMEM. The message names the cause and its place.
 */
int ydoc_load(const struct ydoc *d, const char *buf, size_t len, const struct ydoc_limits *lim,
	      struct ydoc_node **ret_root);
/* Frees n and everything below it; NULL is fine. */
void ydoc_node_free(struct ydoc_node *n);
DEFINE_CLEANUP_FUNC(struct ydoc_node, ydoc_node_free)

/* Sets *d->err to "FILE:LINE:COL: PATH: <fmt>" (at NULL: "FILE: PATH: <fmt>"), returns r. */
int ydoc_fail(const struct ydoc *d, int r, const struct ydoc_node *at, const char *path,
	      const char *fmt, ...) _printf_(5, 6);

/* s[0..len) for a message: double-quoted, '"' and '\' escaped, other bytes outside
 * printable ASCII as \xNN, cut with "..." after 64 characters. Returns buf (size >= 8). */
const char *ydoc_quote(char *buf, size_t size, const char *s, size_t len);

/* True for NULL and for a plain "", "~", "null", "Null" or "NULL" (YAML's null). */
bool ydoc_is_null(const struct ydoc_node *n);
/* "a list", "a mapping", "an empty value", "a scalar" or "a quoted string". */
const char *ydoc_kind(const struct ydoc_node *n);
/* What n is, for "expected X, got Y": "got "yes"", "got the quoted string "true"", "got a
 * list". Returns buf. */
const char *ydoc_got(char *buf, size_t size, const struct ydoc_node *n);

/* The value under key in map (a YDOC_MAP; anything else has no keys), the key node in
 * *ret_key when not NULL. NULL when absent; a null value is returned as it is. The first
 * of duplicate keys wins: ydoc_map() refuses duplicates. */
const struct ydoc_node *ydoc_get(const struct ydoc_node *map, const char *key,
				 const struct ydoc_node **ret_key);

/*
 * Checks that n is a mapping whose keys are non-null scalars, each once: -EINVAL with
 * "expected a mapping, got ...", "a mapping key must be a string, got ..." or "duplicate
 * key K (first at line L, column C)" at the later key. -ENOMEM. O(n log n) in the keys.
 */
int ydoc_map(const struct ydoc *d, const struct ydoc_node *n, const char *path);

/* A scalar as text (plain or quoted, empty allowed, not null), at most max bytes, no NUL:
 * *ret points into the node. -EINVAL with the reason at n. */
int ydoc_string(const struct ydoc *d, const struct ydoc_node *n, const char *path, size_t max,
		const char **ret);
/* A plain true/True/TRUE or false/False/FALSE; with yaml11 also yes/on and no/off in the
 * same three cases, as YAML 1.1 readers (kubectl's) take them. -EINVAL otherwise. */
int ydoc_bool(const struct ydoc *d, const struct ydoc_node *n, const char *path, bool yaml11,
	      bool *ret);
/* A plain decimal integer in [min, max]: '-' the only sign, no leading zeros (YAML 1.1 reads
 * 010 as octal, YAML 1.2 as ten: neither is guessed). -EINVAL otherwise. */
int ydoc_int(const struct ydoc *d, const struct ydoc_node *n, const char *path, long long min,
	     long long max, long long *ret);
