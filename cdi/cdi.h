/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi: the Container Device Interface format, independent of RDMA.
 *
 * A spec lives in memory as a cJSON tree shaped exactly like the CDI JSON document.
 * This module validates such trees (names, versions, fields), computes the lowest
 * cdiVersion their fields need, converts them to and from JSON and YAML (libyaml),
 * writes spec files atomically and safely, and reads spec directories.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "common.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

enum cdi_format { CDI_FORMAT_JSON, CDI_FORMAT_YAML };

/* Spec files larger than this are refused when read. */
#define CDI_SPEC_MAX_BYTES (64u * 1024 * 1024)
/* Longest kind ("vendor/class") and device name accepted. */
#define CDI_KIND_MAX 253
#define CDI_DEVICE_NAME_MAX 253

/* "vendor/class": both parts >= 2 chars of the CDI name rules; no dot in the class
 * (dots need 0.6.0, which Debian 12's podman rejects). */
bool cdi_kind_is_valid(const char *kind);
/* Device name rule: ^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$ */
bool cdi_device_name_is_valid(const char *name);

/*
 * Lowest cdiVersion the tree needs ("0.3.0" .. "1.1.0"); static string. A field counts
 * when its key is present, even with an empty value (libraries older than the field
 * reject the key): mount type 0.4.0; deviceNode hostPath or a device name not starting
 * with a letter 0.5.0; annotations or a dot in the class 0.6.0; intelRdt or
 * additionalGids 0.7.0; netDevices, intelRdt.schemata/enableMonitoring 1.1.0. Any tree
 * shape is accepted (malformed parts are ignored).
 */
const char *cdi_min_version(const cJSON *spec);
/* -1, 0, 1 like strcmp for "X.Y.Z"; unparsable versions sort lowest. */
int cdi_version_compare(const char *a, const char *b);

/*
 * Validates a spec tree as the CDI libraries would: required fields, no unknown
 * fields, kind and names, unique device names, non-empty edits, absolute paths, hook
 * names, env "K=V", a known cdiVersion not lower than cdi_min_version(). On failure
 * returns -EINVAL and sets a one-line reason (naming the JSON path) in *err, e.g.
 * `devices[3].containerEdits.deviceNodes[0].path: "dev/x" is not absolute` or
 * `cdiVersion: "0.4.0" is lower than 0.5.0, which devices[0].name needs`; -ENOMEM.
 * A dot in the class is accepted when the declared version is 0.6.0 or later (unlike
 * cdi_kind_is_valid). Stricter than the Go library on: hook timeout >= 1, major/minor
 * and ids within uint32, netDevice names as the kernel accepts them. err may be NULL.
 */
int cdi_spec_validate(const cJSON *spec, struct rc_error **err);

/*
 * Serialises (JSON pretty-printed with 2-space indent, or block-style YAML through
 * libyaml); deterministic, key order kept, trailing newline, *ret_buf malloc'd and
 * NUL-terminated. YAML strings a YAML 1.1/1.2 reader could type otherwise ("0", "true",
 * "y", "null", "", "1.5", ...) are double-quoted. -EINVAL for invalid UTF-8 or
 * non-finite numbers, -ELOOP for nesting deeper than 64, -ENOMEM.
 */
int cdi_spec_format(const cJSON *spec, enum cdi_format fmt, char **ret_buf, size_t *ret_len);

/*
 * Parses JSON or YAML text (len bytes, need not be NUL-terminated) into a tree, not
 * validated. -EBADMSG with "line:column: reason" in *err (a JSON duplicate key gives
 * "<path>: duplicate key" instead), -EFBIG beyond CDI_SPEC_MAX_BYTES, -ENOMEM. Both
 * refuse duplicate keys, nesting deeper than 64, invalid UTF-8 and NUL characters.
 * YAML is typed like Go's YAML 1.1 reader: plain 12, 0x1f, 1.5 are numbers, y/yes/on/
 * true (and n/no/off/false) bools, ~/null/empty null; quoted scalars are strings;
 * anchors, aliases, merge keys and tags other than !!str are refused. err may be NULL.
 */
int cdi_spec_parse(const char *buf, size_t len, enum cdi_format fmt, cJSON **ret_spec,
		   struct rc_error **err);

/* "rdma.example/hca" -> "rdma.example-hca.json" (malloc'd). */
char *cdi_spec_file_name(const char *kind, enum cdi_format fmt);

/* The format runtimes read a file name as: "*.json", "*.yaml"; -EINVAL otherwise
 * (runtimes ignore "*.yml" and everything else). */
int cdi_format_from_file_name(const char *name, enum cdi_format *ret_fmt);

enum cdi_write_result { CDI_WRITE_UNCHANGED = 0, CDI_WRITE_UPDATED = 1 };

/*
 * Writes buf atomically to dir/name: creates dir (0755) if missing, refuses when
 * dir/name is a symlink or not a regular file (-ELOOP / -EEXIST), writes a temp file
 * ".name.XXXXXX" (never ending in .json/.yaml, flock()ed until renamed) mode 0644, fsync,
 * rename, fsync dir.
 * When the existing file already holds exactly buf with mode 0644, nothing is touched
 * and CDI_WRITE_UNCHANGED is returned. Never follows symlinks. Does not log.
 */
/* Returns CDI_WRITE_UPDATED or CDI_WRITE_UNCHANGED, or -errno (-EINVAL for a name with
 * '/' or "."/".."; a symlinked dir gives -ELOOP or -ENOTDIR). On failure the previous
 * file is intact and no temp file is left. */
int cdi_write_file_atomic(const char *dir, const char *name, const char *buf, size_t len);

struct stat;
/*
 * cdi_write_file_atomic() for a caller that has judged the file it replaces (e.g. "we
 * wrote it"): expect holds that file's st_dev/st_ino, or st_ino 0 for "no file". When
 * dir/name is something else, at the start or just before the rename, -EEXIST and
 * nothing is touched. expect NULL = no expectation. Does not log.
 */
int cdi_write_file_atomic_expect(const char *dir, const char *name, const char *buf, size_t len,
				 const struct stat *expect);
/* The same with another mode than 0644 (0600 for private state such as the DRA driver's
 * checkpoint; the unchanged check then wants that mode). -EINVAL beyond 0777. */
int cdi_write_file_atomic_mode(const char *dir, const char *name, const char *buf, size_t len,
			       const struct stat *expect, unsigned mode);

/*
 * Removes the temp files a writer of dir/name killed between its create and its rename
 * left behind (cdi_write_file_atomic holds each temp flock()ed from creation to rename;
 * the kernel drops the lock when the writer dies). Only entries named exactly
 * ".<name>.XXXXXX" (6 characters of the temp alphabet) that are regular files (never
 * followed) owned by our euid and not locked are removed: a concurrent writer's temp and
 * anyone else's file stay. Returns the number removed, 0 when dir is missing, or the first
 * -errno met (the others are still tried). Does not log.
 */
int cdi_remove_stale_temps(const char *dir, const char *name);

/*
 * The spec files found in a set of spec directories, in the order the runtimes read
 * them (later directories win).
 */
struct cdi_list_entry {
	char *dir;
	char *file;        /* base name */
	char *kind;        /* NULL when invalid */
	char **names;      /* fully qualified "vendor/class=name" */
	size_t n_names;
	char *error;       /* why the file is invalid, NULL when valid */
};
struct cdi_listing {
	struct cdi_list_entry *entries;
	size_t n_entries;
	/* Fully qualified names defined more than once within ONE directory: runtimes
	 * drop them ("<name> in <dir>: <file1>, <file2>"). */
	char **conflicts;
	size_t n_conflicts;
};
/*
 * Missing directories are skipped; unreadable or invalid files become entries with
 * error set (one line, naming the cause), kind NULL and no names. A directory that
 * exists but cannot be read gives one entry with file "" and error set. Returns
 * -ENOMEM (or -EINVAL for bad arguments) only; *ret is freed with cdi_listing_free().
 * Does not log.
 */
int cdi_list_dirs(const char *const *dirs, size_t n_dirs, struct cdi_listing **ret);
void cdi_listing_free(struct cdi_listing *l);
