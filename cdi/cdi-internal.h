/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi internals shared by the module's files and its tests. Not a public API.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cdi.h"

/* Nesting deeper than this is refused by both parsers (a spec needs 6 levels). */
#define CDI_MAX_DEPTH 64

/*
 * text_quote() (common.h) for a NUL-terminated s (NULL shown as ""): a double-quoted,
 * escaped, possibly shortened ("...") string for one-line error messages. Returns buf.
 */
const char *cdi_quote(char *buf, size_t size, const char *s);

/* key itself when it is harmless in a one-line path, else cdi_quote(buf, size, key). */
const char *cdi_path_key(char *buf, size_t size, const char *key);

/* The reason a kind is invalid, or NULL. allow_dot_class: a dot in the class (0.6.0+). */
const char *cdi_kind_problem(const char *kind, bool allow_dot_class);
/* The reason a device name is invalid, or NULL. */
const char *cdi_device_name_problem(const char *name);

/*
 * Like cdi_min_version(), and writes the JSON path of the first field that needs that
 * version into why ("" when the base version suffices).
 */
const char *cdi_min_version_why(const cJSON *spec, char *why, size_t whylen);

/* Sorts v (n strings) and returns the first string that occurs twice, or NULL. Keeps
 * duplicate checks O(n log n) on hostile sizes. */
const char *cdi_sorted_duplicate(const char **v, size_t n);

/* True when the YAML emitter may write s as a plain scalar: every YAML 1.1 and 1.2
 * reader (PyYAML, go-yaml v2/v3, libyaml) takes it back as this same string. */
bool cdi_yaml_plain_is_safe(const char *s);
