/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The doctor module's inside, shared by its files and included by its tests:
 *
 *   doctor.c          doctor_run(): the context (host or container) and the checks in order
 *   doctor-host.c     what the host and this process give: devices, modules, device nodes,
 *                     RLIMIT_MEMLOCK and CAP_IPC_LOCK, verbs and rdma_cm, the netns mode
 *   doctor-runtime.c  the container runtimes' settings: containerd, its unit, CRI-O
 *   doctor-spec.c     the CDI spec dirs and our spec against what generate writes now
 *   doctor-report.c   the report: one JSON array of checks, rendered as text or JSON
 *   doctor-netns.c    exclusive mode: the devices lent to pods, what moves them there
 *   doctor-config.c   the readers: a TOML subset and systemd unit settings
 *
 * A check never fails the run: it records what it found with doctor_add_check(). Only
 * running out of memory does (d->oom, sticky, turned into an error by doctor_run()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

#include "common.h"

struct disc_node;
struct doctor_options; /* doctor.h */

enum doctor_status { DOCTOR_OK, DOCTOR_INFO, DOCTOR_WARN, DOCTOR_FAIL, DOCTOR_SKIP };

struct doctor {
	const struct doctor_options *o;
	/* Inside a container, looking at itself (no --host-root): device nodes of devices it
	 * was not given are expected to be missing, the host's spec is not visible. */
	bool container;
	const char *container_why;
	size_t nodes_given;
	cJSON *checks; /* the report: one object per check, in order */
	unsigned n[DOCTOR_SKIP + 1];
	bool oom;
};

/* ---- the report (doctor-report.c) ---------------------------------------------- */

/* Records one check; takes ownership of data (may be NULL). fix NULL = nothing to do.
 * Out of memory sets d->oom. */
void doctor_add_check(struct doctor *d, const char *id, enum doctor_status st, cJSON *data,
		      const char *fix, const char *fmt, ...) _printf_(6, 7);

/* ---- the checks: each adds its entries to d ------------------------------------- */

/* sysfs's devices; *ret_node NULL when sysfs cannot be read. -ENOMEM only. */
int doctor_check_devices(struct doctor *d, struct disc_node **ret_node);
void doctor_check_modules(struct doctor *d);
void doctor_check_nodes(struct doctor *d, const struct disc_node *node);
void doctor_check_memlock(struct doctor *d);
void doctor_check_verbs(struct doctor *d, size_t sysfs_usable);
/* The netns check returns the mode it read (enum disc_netns_mode) for the next. */
int doctor_check_netns(struct doctor *d);
/* doctor-netns.c: in exclusive mode (or with devices away from the host's namespace),
 * which devices are away and whether anything moves devices into pods. */
void doctor_check_netns_isolation(struct doctor *d, int netns_mode);
void doctor_check_containerd(struct doctor *d);
void doctor_check_containerd_unit(struct doctor *d);
void doctor_check_crio(struct doctor *d);
void doctor_check_spec_dirs(struct doctor *d);
void doctor_check_spec(struct doctor *d, const struct disc_node *node);

/* stat() (lstat() for exists) of a path this process sees. */
bool doctor_is_dir(const char *path);
bool doctor_exists(const char *path);

/* ---- the readers (doctor-config.c): on (buf, len), no I/O, no logging; everything they
 * read is hostile. --------------------------------------------------------------- */

enum doctor_toml_type {
	DOCTOR_TOML_BOOL,
	DOCTOR_TOML_INT,
	DOCTOR_TOML_STRING,
	DOCTOR_TOML_STRINGS, /* an array whose elements are all strings */
	DOCTOR_TOML_OTHER,   /* floats, dates, inline tables, multi-line strings, mixed arrays */
};

struct doctor_toml_value {
	enum doctor_toml_type type;
	bool b;
	long long i;
	char *s;       /* DOCTOR_TOML_STRING */
	cJSON *strs;   /* DOCTOR_TOML_STRINGS: a cJSON array of strings */
	int line, col; /* where the value starts, 1-based */
};

/*
 * Parses a TOML document (len bytes, need not be NUL-terminated) and calls cb for every
 * key = value, with the key's full path: table and key components joined by '\n' (so
 * `[plugins."io.containerd.grpc.v1.cri"]` + `enable_cdi` is
 * "plugins\nio.containerd.grpc.v1.cri\nenable_cdi"); dotted and quoted keys are
 * resolved the same way. v and its strings live only during the call. A syntax error
 * anywhere gives -EBADMSG with *err "line:column: reason" (the runtime would refuse the
 * file too); -ENOMEM. Not a validator: duplicate keys and redefined tables are accepted.
 * Does not log.
 */
struct rc_error;
int doctor_toml_parse(const char *buf, size_t len,
		      void (*cb)(void *ud, const char *key, const struct doctor_toml_value *v),
		      void *ud, struct rc_error **err);

/*
 * systemd's rlimit syntax (LimitMEMLOCK=): "infinity", or a byte count with an optional
 * 1024-based K, M, G, T, P or E suffix; "SOFT:HARD" sets both. -EINVAL, -ERANGE.
 */
int doctor_systemd_limit_parse(const char *s, rlim_t *ret_soft, rlim_t *ret_hard);

/*
 * The last `key=value` of [section] in a unit file (len bytes), whitespace around key and
 * value trimmed; an empty value (which resets the setting in systemd) is returned as "".
 * Lines ending in a backslash continue on the next line. Returns 1 and fills value and
 * *ret_line (the 1-based line of the assignment), 0 when the key is not set, -EBADMSG for
 * a NUL byte, -ENAMETOOLONG for a value that does not fit.
 */
int doctor_unit_setting(const char *buf, size_t len, const char *section, const char *key,
			char *value, size_t size, int *ret_line);
