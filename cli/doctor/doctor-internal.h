/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor-config: the readers `rdma-cdi doctor` needs for container runtime settings: a
 * TOML subset (containerd's config.toml, CRI-O's crio.conf) and systemd unit settings.
 * Parsers on (buf, len): no I/O, no logging; everything they read is hostile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>

#include <cjson/cJSON.h>

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
