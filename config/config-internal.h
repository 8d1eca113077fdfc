/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config internals shared by the module's files and its tests. Not a public API.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* Nesting the format needs is 5 (document, pools, pool, selectors, list). */
#define CFG_DEPTH_MAX 16
/* YAML nodes in one file: far more than any real config, bounds the parse tree. */
#define CFG_NODES_MAX 100000

/* A numeric define as a string literal, for messages: CFG_STR(CFG_POOLS_MAX) is "64". */
#define CFG_STR_(x) #x
#define CFG_STR(x) CFG_STR_(x)

/* Gives c (no pools yet) the one default pool. 0 or -ENOMEM. */
int cfg_default_pool(struct cfg *c);

/* Whether s matches the shell glob pattern ('*', '?', [a-z], [!x], \x), as fnmatch(3)
 * with no flags (or FNM_CASEFOLD when fold), in O(len(pattern) x len(s)). */
bool cfg_glob_match(const char *pattern, const char *s, bool fold);
/* The reason pattern is not a well-formed glob ('[' unterminated, trailing '\'), or NULL. */
const char *cfg_glob_problem(const char *pattern);

/* Adds msg (malloc'd, taken even on failure) at its place in e: see struct cfg_errors.
 * 0 or -ENOMEM (msg NULL counts as out of memory). */
int cfg_errors_add(struct cfg_errors *e, char *msg, unsigned line, unsigned column);
/* Sets *err to e's first error, with " (and N more errors)" when there are others;
 * strerror(-r) when e is empty. Returns r. */
int cfg_errors_summary(const struct cfg_errors *e, int r, struct rc_error **err);

/* The value rules of the file's selectors, shared with the converter (convert.c). */
/* Why s cannot be a selector glob (names, netdevs, pciAddresses, pfNames), or NULL. */
const char *cfg_pattern_problem(const char *s);
/* A PCI driver name as `drivers` takes it. */
bool cfg_driver_is_valid(const char *s);
/* A PCI vendor or device ID: 1 to 4 hex digits, optional 0x, not 0. 0 or -EINVAL. */
int cfg_parse_hex_id(const char *s, unsigned *ret);
