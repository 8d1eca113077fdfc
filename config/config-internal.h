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

/* Gives c (no pools yet) the one default pool. 0 or -ENOMEM. */
int cfg_default_pool(struct cfg *c);

/* Whether s matches the shell glob pattern ('*', '?', [a-z], [!x], \x), as fnmatch(3)
 * with no flags (or FNM_CASEFOLD when fold), in O(len(pattern) x len(s)). */
bool cfg_glob_match(const char *pattern, const char *s, bool fold);
/* The reason pattern is not a well-formed glob ('[' unterminated, trailing '\'), or NULL. */
const char *cfg_glob_problem(const char *pattern);
