/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container runtimes' settings, read under --host-root: containerd's config.toml
 * (is CDI on, does it read our spec dir), its unit's LimitMEMLOCK (the limit containers
 * start with), CRI-O's crio.conf and drop-ins. The files are parsed by doctor-config.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "common.h"
#include "doctor-internal.h"
#include "doctor.h"
#include "rc-error.h"
#include "specs.h"

/* Runtime configs and units are small; anything larger is not one. */
#define CONFIG_MAX_BYTES (1u << 20)

/* ---- containerd and CRI-O --------------------------------------------------------- */

struct cri_settings {
	long long version; /* containerd: 1 when absent */
	int enable_cdi[2]; /* per section below: -1 absent, 0, 1; and its line */
	int enable_cdi_line[2];
	cJSON *spec_dirs[2]; /* NULL = absent */
	const char *const *sections;
	size_t n_sections;
};

/* containerd 1.7 (config version 2) and 2.x (version 3) keep the CRI's CDI settings here. */
static const char *const containerd_sections[] = {
    "plugins\nio.containerd.grpc.v1.cri",
    "plugins\nio.containerd.cri.v1.runtime",
};
static const char *const crio_sections[] = {"crio\nruntime"};

static void cri_cb(void *ud, const char *key, const struct doctor_toml_value *v)
{
	struct cri_settings *s = ud;
	size_t n;

	if (strcmp(key, "version") == 0 && v->type == DOCTOR_TOML_INT)
		s->version = v->i;
	for (size_t i = 0; i < s->n_sections; i++) {
		n = strlen(s->sections[i]);
		if (strncmp(key, s->sections[i], n) != 0 || key[n] != '\n')
			continue;
		if (strcmp(key + n + 1, "enable_cdi") == 0 && v->type == DOCTOR_TOML_BOOL) {
			s->enable_cdi[i] = v->b;
			s->enable_cdi_line[i] = v->line;
		}
		if (strcmp(key + n + 1, "cdi_spec_dirs") == 0 && v->type == DOCTOR_TOML_STRINGS) {
			cJSON_Delete(s->spec_dirs[i]);
			s->spec_dirs[i] = cJSON_Duplicate(v->strs, true);
		}
	}
}

/* Reads and parses one config file; 0, -ENOENT (no error set), or -errno with *err
 * naming the file. */
static int read_toml(const char *path, struct cri_settings *s, struct rc_error **err)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	r = read_full_file_at(AT_FDCWD, path, CONFIG_MAX_BYTES, false, &buf, &len);
	if (r == -ENOENT)
		return r;
	if (r == -EFBIG)
		return rc_error_set(err, r, "%s: larger than 1 MiB, not a runtime config", path);
	if (r < 0)
		return rc_error_set(err, r, "%s: %s", path, strerror(-r));
	r = doctor_toml_parse(buf, len, cri_cb, s, &e);
	/* "file:line:column: reason", as compilers say it */
	return r < 0 ? rc_error_set(err, r, "%s:%s", path, rc_error_msg(e, r)) : r;
}

static void cri_settings_done(struct cri_settings *s)
{
	for (size_t i = 0; i < ELEMENTSOF(s->spec_dirs); i++)
		cJSON_Delete(s->spec_dirs[i]);
}

/* True when dirs (NULL = the runtimes' default /etc/cdi, /var/run/cdi) holds dir. */
static bool dirs_hold(const cJSON *dirs, const char *dir)
{
	static const char *const defaults[] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR};
	size_t n = strlen(dir);
	const cJSON *e;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (!dirs) {
		for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
			if (strlen(defaults[i]) == n && strncmp(defaults[i], dir, n) == 0)
				return true;
		return false;
	}
	cJSON_ArrayForEach (e, dirs) {
		size_t m = strlen(e->valuestring);

		while (m > 1 && e->valuestring[m - 1] == '/')
			m--;
		if (m == n && strncmp(e->valuestring, dir, n) == 0)
			return true;
	}
	return false;
}

static const char *section_header(const char *section, char *buf, size_t size)
{
	const char *nl = strchr(section, '\n');

	snprintf(buf, size, "[%.*s.\"%s\"]", (int)(nl - section), section, nl + 1);
	return buf;
}

/* No config.toml: containerd 1.7 runs with CDI off, 2.x with it on. */
static void containerd_no_config(struct doctor *d, cJSON *data)
{
	_cleanup_free_ char *bin1 = cli_host_path(d->o->common, "/usr/bin/containerd");
	_cleanup_free_ char *bin2 = cli_host_path(d->o->common, "/usr/local/bin/containerd");

	if (!bin1 || !bin2) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	cJSON_AddBoolToObject(data, "exists", false);
	if (doctor_exists(bin1) || doctor_exists(bin2))
		doctor_add_check(d, "containerd.config", DOCTOR_WARN, data,
				 "containerd config default > /etc/containerd/config.toml, set "
				 "enable_cdi = true in [plugins.\"io.containerd.grpc.v1.cri\"], "
				 "systemctl restart containerd",
				 "containerd is installed but has no /etc/containerd/config.toml: "
				 "containerd 1.7 then runs with CDI off (2.x has it on)");
	else
		doctor_add_check(d, "containerd.config", DOCTOR_SKIP, data, NULL,
				 "no containerd here (no /etc/containerd/config.toml)");
}

/* The verdict on a config that parsed: CDI on, and our spec dir among cdi_spec_dirs. */
static void containerd_verdict(struct doctor *d, const struct cri_settings *s, cJSON *data)
{
	/* Config version 3 is containerd 2.x, where CDI is on unless turned off. */
	bool v3 = s->version >= 3;
	size_t sec = v3 ? 1 : 0;
	int enable = s->enable_cdi[sec];
	char hdr[128], fix[512];

	cJSON_AddNumberToObject(data, "config_version", (double)s->version);
	cJSON_AddStringToObject(data, "section",
				section_header(containerd_sections[sec], hdr, sizeof(hdr)));
	if (enable < 0)
		cJSON_AddNullToObject(data, "enable_cdi");
	else
		cJSON_AddBoolToObject(data, "enable_cdi", enable);
	cJSON_AddItemToObject(data, "cdi_spec_dirs",
			      s->spec_dirs[sec] ? cJSON_Duplicate(s->spec_dirs[sec], true)
						: cJSON_CreateNull());
	snprintf(fix, sizeof(fix),
		 "set enable_cdi = true under %s in /etc/containerd/config.toml, then systemctl "
		 "restart containerd",
		 hdr);
	if (enable == 0)
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data, fix,
				 "/etc/containerd/config.toml:%d: enable_cdi = false: containerd "
				 "ignores CDI devices",
				 s->enable_cdi_line[sec]);
	else if (enable < 0 && !v3)
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data, fix,
				 "/etc/containerd/config.toml (config version %lld) does not set "
				 "enable_cdi: containerd 1.7 leaves CDI off (2.x turns it on; the "
				 "line is harmless there)",
				 s->version);
	else if (!dirs_hold(s->spec_dirs[sec], d->o->spec_dir)) {
		snprintf(fix, sizeof(fix),
			 "add \"%s\" to cdi_spec_dirs under %s in /etc/containerd/config.toml, "
			 "then systemctl restart containerd",
			 d->o->spec_dir, hdr);
		doctor_add_check(
		    d, "containerd.config", DOCTOR_FAIL, data, fix,
		    "CDI is on, but cdi_spec_dirs does not include %s, where the spec is",
		    d->o->spec_dir);
	} else
		doctor_add_check(d, "containerd.config", DOCTOR_OK, data, NULL,
				 "CDI is on (%s), spec dirs include %s",
				 enable > 0 ? "enable_cdi = true" : "the 2.x default",
				 d->o->spec_dir);
}

void doctor_check_containerd(struct doctor *d)
{
	_cleanup_free_ char *path = cli_host_path(d->o->common, "/etc/containerd/config.toml");
	struct cri_settings s = {.version = 1,
				 .enable_cdi = {-1, -1},
				 .sections = containerd_sections,
				 .n_sections = ELEMENTSOF(containerd_sections)};
	_cleanup_rc_error_ struct rc_error *err = NULL;
	cJSON *data = cJSON_CreateObject();
	int r;

	if (!path || !data ||
	    !cJSON_AddStringToObject(data, "path", "/etc/containerd/config.toml")) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	r = read_toml(path, &s, &err);
	if (r == -ENOENT) {
		containerd_no_config(d, data);
		return;
	}
	cJSON_AddBoolToObject(data, "exists", true);
	if (r < 0)
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data,
				 "fix the syntax error: containerd refuses to start with this file",
				 "%s", rc_error_msg(err, r));
	else
		containerd_verdict(d, &s, data);
	cri_settings_done(&s);
}

#define MAX_DROPINS 256

struct names {
	char *v[MAX_DROPINS];
	size_t n;
};

static void names_done(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* Adds the "*.conf" file names in the host directory dir (skipping hidden ones and names
 * already there), at most MAX_DROPINS. A missing directory adds nothing. */
static int add_conf_names(const struct doctor *d, const char *dir, struct names *l)
{
	_cleanup_free_ char *hdir = cli_host_path(d->o->common, dir);
	_cleanup_closedir_ DIR *dh = NULL;
	struct dirent *de;

	if (!hdir)
		return -ENOMEM;
	dh = opendir(hdir);
	if (!dh)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((de = readdir(dh)) && l->n < MAX_DROPINS) {
		size_t n = strlen(de->d_name);
		bool dup = false;

		if (de->d_name[0] == '.' || n <= 5 || strcmp(de->d_name + n - 5, ".conf") != 0)
			continue;
		for (size_t i = 0; i < l->n; i++)
			dup = dup || strcmp(strrchr(l->v[i], '/') + 1, de->d_name) == 0;
		if (dup)
			continue;
		l->v[l->n] = strdup_printf("%s/%s", dir, de->d_name);
		if (!l->v[l->n])
			return -ENOMEM;
		l->n++;
	}
	return 0;
}

static int cmp_base(const void *a, const void *b)
{
	return strcmp(strrchr(*(char *const *)a, '/'), strrchr(*(char *const *)b, '/'));
}

/* CRI-O applies crio.conf, then the drop-ins in lexical order: later ones win. Returns
 * the number of files read into s (their names into files), or -errno: -ENOMEM, or a
 * file CRI-O would refuse, with *err. */
static int crio_read(struct doctor *d, struct cri_settings *s, cJSON *files, struct rc_error **err)
{
	_cleanup_free_ char *main_conf = cli_host_path(d->o->common, "/etc/crio/crio.conf");
	struct names drop = {};
	int r, found = 0;

	if (!main_conf)
		return -ENOMEM;
	r = read_toml(main_conf, s, err);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r >= 0) {
		found++;
		cJSON_AddItemToArray(files, cJSON_CreateString("/etc/crio/crio.conf"));
	}
	r = add_conf_names(d, "/etc/crio/crio.conf.d", &drop);
	if (r < 0 && r != -ENOMEM)
		rc_error_set(err, r, "/etc/crio/crio.conf.d: %s", strerror(-r));
	qsort(drop.v, drop.n, sizeof(char *), cmp_strp);
	for (size_t i = 0; r >= 0 && i < drop.n; i++) {
		_cleanup_free_ char *hp = cli_host_path(d->o->common, drop.v[i]);

		r = hp ? read_toml(hp, s, err) : -ENOMEM;
		if (r >= 0) {
			found++;
			cJSON_AddItemToArray(files, cJSON_CreateString(drop.v[i]));
		} else if (r == -ENOENT) {
			r = 0;
		}
	}
	names_done(&drop);
	return r < 0 ? r : found;
}

static void crio_verdict(struct doctor *d, const struct cri_settings *s, cJSON *data)
{
	char fix[512];

	cJSON_AddItemToObject(data, "cdi_spec_dirs",
			      s->spec_dirs[0] ? cJSON_Duplicate(s->spec_dirs[0], true)
					      : cJSON_CreateNull());
	if (dirs_hold(s->spec_dirs[0], d->o->spec_dir)) {
		doctor_add_check(d, "crio.config", DOCTOR_OK, data, NULL,
				 "CRI-O reads CDI specs from %s", d->o->spec_dir);
		return;
	}
	snprintf(fix, sizeof(fix),
		 "add \"%s\" to cdi_spec_dirs under [crio.runtime] (e.g. in "
		 "/etc/crio/crio.conf.d/99-cdi.conf), then systemctl restart crio",
		 d->o->spec_dir);
	doctor_add_check(d, "crio.config", DOCTOR_FAIL, data, fix,
			 "CRI-O's cdi_spec_dirs does not include %s, where the spec is",
			 d->o->spec_dir);
}

void doctor_check_crio(struct doctor *d)
{
	struct cri_settings s = {.enable_cdi = {-1, -1},
				 .sections = crio_sections,
				 .n_sections = ELEMENTSOF(crio_sections)};
	cJSON *data = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(data, "files");
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = files ? crio_read(d, &s, files, &err) : -ENOMEM;

	if (r == -ENOMEM && !err) {
		cJSON_Delete(data);
		d->oom = true;
	} else if (r < 0) {
		doctor_add_check(d, "crio.config", DOCTOR_FAIL, data,
				 "fix the syntax error: CRI-O refuses to start with this file",
				 "%s", rc_error_msg(err, r));
	} else if (r == 0) {
		doctor_add_check(d, "crio.config", DOCTOR_SKIP, data, NULL,
				 "no CRI-O here (no /etc/crio/crio.conf or crio.conf.d)");
	} else {
		crio_verdict(d, &s, data);
	}
	cri_settings_done(&s);
}

/* ---- the containerd unit's LimitMEMLOCK ----------------------------------------- */

struct unit_limit {
	char value[128]; /* "" = not set */
	char file[512];
	int line;
};

/* Applies one unit file's [Service] LimitMEMLOCK= (the last one wins; an empty value
 * resets). */
static int scan_unit(const char *hpath, const char *shown, struct unit_limit *lim)
{
	_cleanup_free_ char *buf = NULL;
	char value[sizeof(lim->value)];
	size_t len;
	int line, r;

	r = read_full_file_at(AT_FDCWD, hpath, CONFIG_MAX_BYTES, false, &buf, &len);
	if (r < 0)
		return r;
	r = doctor_unit_setting(buf, len, "Service", "LimitMEMLOCK", value, sizeof(value), &line);
	if (r <= 0)
		return r;
	memcpy(lim->value, value, sizeof(value));
	snprintf(lim->file, sizeof(lim->file), "%s", shown);
	lim->line = line;
	return 0;
}

/* systemd's unit search path, most important first: the first unit file found is used;
 * drop-ins from every directory apply, one per file name (/etc masks /lib). */
static const char *const unit_dirs[] = {"/etc/systemd/system", "/run/systemd/system",
					"/usr/local/lib/systemd/system", "/lib/systemd/system",
					"/usr/lib/systemd/system"};

/* Applies the drop-ins: names across all dirs, first occurrence wins, in name order. */
static void unit_dropins(struct doctor *d, struct unit_limit *lim, cJSON *dropins)
{
	struct names drop = {};

	for (size_t i = 0; i < ELEMENTSOF(unit_dirs); i++) {
		_cleanup_free_ char *p = strdup_printf("%s/containerd.service.d", unit_dirs[i]);

		if (!p || add_conf_names(d, p, &drop) == -ENOMEM) {
			d->oom = true;
			break;
		}
	}
	qsort(drop.v, drop.n, sizeof(char *), cmp_base);
	for (size_t i = 0; i < drop.n; i++) {
		_cleanup_free_ char *hp = cli_host_path(d->o->common, drop.v[i]);

		if (hp && scan_unit(hp, drop.v[i], lim) == 0)
			cJSON_AddItemToArray(dropins, cJSON_CreateString(drop.v[i]));
	}
	names_done(&drop);
}

#define UNIT_FIX                                                                                   \
	"mkdir -p /etc/systemd/system/containerd.service.d && printf "                             \
	"'[Service]\\nLimitMEMLOCK=infinity\\n' > "                                                \
	"/etc/systemd/system/containerd.service.d/memlock.conf && systemctl daemon-reload && "     \
	"systemctl restart containerd"

static void unit_verdict(struct doctor *d, const struct unit_limit *lim, cJSON *data)
{
	rlim_t soft, hard;

	if (!lim->value[0]) {
		cJSON_AddNullToObject(data, "limit_memlock");
		doctor_add_check(
		    d, "containerd.unit", DOCTOR_WARN, data, UNIT_FIX,
		    "containerd.service sets no LimitMEMLOCK: containers start with systemd's "
		    "default (8 MiB since systemd 253, 64 KiB before) unless the rdma-cdi "
		    "hook raises it");
		return;
	}
	cJSON_AddStringToObject(data, "limit_memlock", lim->value);
	if (doctor_systemd_limit_parse(lim->value, &soft, &hard) < 0)
		doctor_add_check(d, "containerd.unit", DOCTOR_WARN, data, UNIT_FIX,
				 "%s:%d: LimitMEMLOCK=%s is not a limit systemd understands",
				 lim->file, lim->line, lim->value);
	else if (soft != RLIM_INFINITY && soft < d->o->mr_size)
		doctor_add_check(d, "containerd.unit", DOCTOR_WARN, data, UNIT_FIX,
				 "%s:%d: LimitMEMLOCK=%s is below the %zu-byte memory region",
				 lim->file, lim->line, lim->value, d->o->mr_size);
	else
		doctor_add_check(d, "containerd.unit", DOCTOR_OK, data, NULL,
				 "%s:%d: LimitMEMLOCK=%s", lim->file, lim->line, lim->value);
}

void doctor_check_containerd_unit(struct doctor *d)
{
	struct unit_limit lim = {};
	cJSON *data = cJSON_CreateObject(), *dropins = cJSON_AddArrayToObject(data, "dropins");
	_cleanup_free_ char *unit = NULL;

	if (!dropins) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(unit_dirs) && !unit; i++) {
		_cleanup_free_ char *p = strdup_printf("%s/containerd.service", unit_dirs[i]);
		_cleanup_free_ char *hp = p ? cli_host_path(d->o->common, p) : NULL;

		if (hp && scan_unit(hp, p, &lim) == 0)
			unit = TAKE_PTR(p);
	}
	if (!unit) {
		doctor_add_check(d, "containerd.unit", DOCTOR_SKIP, data, NULL,
				 "no containerd.service unit here");
		return;
	}
	cJSON_AddStringToObject(data, "unit", unit);
	unit_dropins(d, &lim, dropins);
	unit_verdict(d, &lim, data);
}
