/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container runtimes' settings, read under --host-root: containerd's config.toml and
 * the files it imports (is CDI on, does it read our spec dir), its unit's LimitMEMLOCK
 * (the limit containers start with), CRI-O's crio.conf and drop-ins. The files are
 * parsed by doctor-config.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
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
	/* containerd: the file's `imports`, the sections it sets, and (merged) the file
	 * each section in force comes from (a display path; NULL: the main config) */
	cJSON *imports;
	bool section_seen[2];
	char *section_file[2];
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
	if (strcmp(key, "imports") == 0 && v->type == DOCTOR_TOML_STRINGS) {
		cJSON_Delete(s->imports);
		s->imports = cJSON_Duplicate(v->strs, true);
	}
	for (size_t i = 0; i < s->n_sections; i++) {
		n = strlen(s->sections[i]);
		if (strncmp(key, s->sections[i], n) != 0 || key[n] != '\n')
			continue;
		s->section_seen[i] = true;
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
	for (size_t i = 0; i < ELEMENTSOF(s->spec_dirs); i++) {
		cJSON_Delete(s->spec_dirs[i]);
		free(s->section_file[i]);
	}
	cJSON_Delete(s->imports);
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

/* ---- containerd's files: config.toml and its imports ------------------------------ */

#define CONTAINERD_CONFIG "/etc/containerd/config.toml"
#define CONTAINERD_FILES_MAX 64 /* the main config and the files it imports, followed */

/* The files containerd reads in its order: config.toml, then each file's `imports`
 * (relative to that file's directory; a path with '*' globbed, its matches sorted),
 * breadth first, each file once. Paths as the host sees them. */
struct cd_files {
	char *v[CONTAINERD_FILES_MAX];
	size_t parent[CONTAINERD_FILES_MAX]; /* the file that imports it */
	size_t n;
	bool truncated;
};

static void cd_files_done(struct cd_files *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i]);
}

static int cd_files_add(struct cd_files *f, const char *path, size_t parent)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->v[i], path) == 0)
			return 0;
	if (f->n == CONTAINERD_FILES_MAX) {
		f->truncated = true;
		return 0;
	}
	f->v[f->n] = strdup(path);
	if (!f->v[f->n])
		return -ENOMEM;
	f->parent[f->n++] = parent;
	return 0;
}

/* Adds the matches of the host path pattern abs (under --host-root) to f. */
static int cd_files_glob(const struct doctor *d, struct cd_files *f, const char *abs, size_t from)
{
	_cleanup_free_ char *host = cli_host_path(d->o->common, abs);
	size_t root_len;
	glob_t g = {};
	int r = 0;

	if (!host)
		return -ENOMEM;
	root_len = strlen(host) - strlen(abs);
	if (glob(host, GLOB_ERR, NULL, &g) == GLOB_NOSPACE)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < g.gl_pathc; i++)
		if (strlen(g.gl_pathv[i]) > root_len)
			r = cd_files_add(f, g.gl_pathv[i] + root_len, from);
	globfree(&g);
	return r;
}

/* Adds what file f->v[from] imports. */
static int cd_files_import(const struct doctor *d, struct cd_files *f, size_t from,
			   const cJSON *imports)
{
	const cJSON *e;
	int r = 0;

	cJSON_ArrayForEach (e, imports) {
		_cleanup_free_ char *dir = strdup(f->v[from]), *joined = NULL, *abs = NULL;

		if (!dir)
			return -ENOMEM;
		/* containerd cleans each path lexically, then anchors a relative one */
		joined = e->valuestring[0] == '/' ? strdup(e->valuestring)
			 : strdup_printf("%s/%s", dirname(dir), e->valuestring);
		abs = path_clean(joined);
		if (!abs)
			return -ENOMEM;
		r = strchr(abs, '*') ? cd_files_glob(d, f, abs, from) : cd_files_add(f, abs, from);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Merges one file's settings into total as containerd does: a file that has a plugin's
 * section replaces that whole section (containerd merges plugin sections, not the keys
 * inside them); the config version is the main file's.
 */
static int cd_merge(struct cri_settings *total, struct cri_settings *one, const char *file,
		    bool main)
{
	if (main)
		total->version = one->version;
	for (size_t i = 0; i < ELEMENTSOF(total->spec_dirs); i++) {
		if (!one->section_seen[i])
			continue;
		total->enable_cdi[i] = one->enable_cdi[i];
		total->enable_cdi_line[i] = one->enable_cdi_line[i];
		cJSON_Delete(total->spec_dirs[i]);
		total->spec_dirs[i] = one->spec_dirs[i];
		one->spec_dirs[i] = NULL;
		free(total->section_file[i]);
		total->section_file[i] = main ? NULL : strdup(file);
		if (!main && !total->section_file[i])
			return -ENOMEM;
	}
	return 0;
}

/*
 * Reads config.toml and everything it imports into total, listing the files read in
 * files. 0; -ENOENT when there is no config.toml (*err not set); -errno with *err for a
 * file containerd would refuse (syntax, an import that does not exist: -ENOENT too).
 */
static int containerd_read(struct doctor *d, struct cri_settings *total, cJSON *files,
			   bool *ret_truncated, struct rc_error **err)
{
	struct cd_files f = {};
	int r = cd_files_add(&f, CONTAINERD_CONFIG, 0);

	for (size_t i = 0; r == 0 && i < f.n; i++) {
		_cleanup_free_ char *host = cli_host_path(d->o->common, f.v[i]);
		struct cri_settings one = {.version = 1,
					   .enable_cdi = {-1, -1},
					   .sections = containerd_sections,
					   .n_sections = ELEMENTSOF(containerd_sections)};

		r = host ? read_toml(host, &one, err) : -ENOMEM;
		if (r == -ENOENT && i > 0)
			r = rc_error_set(err, r,
					 "%s imports %s, which does not exist: containerd refuses "
					 "to start",
					 f.v[f.parent[i]], f.v[i]);
		if (r == 0 && !cJSON_AddItemToArray(files, cJSON_CreateString(f.v[i])))
			r = -ENOMEM;
		if (r == 0)
			r = cd_merge(total, &one, f.v[i], i == 0);
		if (r == 0)
			r = cd_files_import(d, &f, i, one.imports);
		cri_settings_done(&one);
	}
	*ret_truncated = f.truncated;
	cd_files_done(&f);
	return r;
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
	const char *file = s->section_file[sec] ? s->section_file[sec] : CONTAINERD_CONFIG;
	char hdr[128], fix[512], from[512] = "";

	cJSON_AddNumberToObject(data, "config_version", (double)s->version);
	cJSON_AddStringToObject(data, "section",
				section_header(containerd_sections[sec], hdr, sizeof(hdr)));
	cJSON_AddStringToObject(data, "section_file", file);
	if (enable < 0)
		cJSON_AddNullToObject(data, "enable_cdi");
	else
		cJSON_AddBoolToObject(data, "enable_cdi", enable);
	cJSON_AddItemToObject(data, "cdi_spec_dirs",
			      s->spec_dirs[sec] ? cJSON_Duplicate(s->spec_dirs[sec], true)
						: cJSON_CreateNull());
	if (s->section_file[sec])
		snprintf(from, sizeof(from),
			 " (%s comes from %s, an import, which replaces the whole section: "
			 "containerd merges plugin sections, not their keys)",
			 hdr, file);
	snprintf(fix, sizeof(fix),
		 "set enable_cdi = true under %s in %s, then systemctl restart containerd", hdr,
		 file);
	if (enable == 0)
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data, fix,
				 "%s:%d: enable_cdi = false: containerd ignores CDI devices", file,
				 s->enable_cdi_line[sec]);
	else if (enable < 0 && !v3)
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data, fix,
				 CONTAINERD_CONFIG " (config version %lld) does not set "
				 "enable_cdi%s: containerd 1.7 leaves CDI off (2.x turns it on; the "
				 "line is harmless there)",
				 s->version, from);
	else if (!dirs_hold(s->spec_dirs[sec], d->o->spec_dir)) {
		snprintf(fix, sizeof(fix),
			 "add \"%s\" to cdi_spec_dirs under %s in %s, then systemctl restart "
			 "containerd",
			 d->o->spec_dir, hdr, file);
		doctor_add_check(
		    d, "containerd.config", DOCTOR_FAIL, data, fix,
		    "CDI is on, but cdi_spec_dirs does not include %s, where the spec is%s",
		    d->o->spec_dir, from);
	} else
		doctor_add_check(d, "containerd.config", DOCTOR_OK, data, NULL,
				 "CDI is on (%s%s%s), spec dirs include %s",
				 enable > 0 ? "enable_cdi = true" : "the 2.x default",
				 s->section_file[sec] ? " in " : "",
				 s->section_file[sec] ? file : "", d->o->spec_dir);
}

void doctor_check_containerd(struct doctor *d)
{
	struct cri_settings s = {.version = 1,
				 .enable_cdi = {-1, -1},
				 .sections = containerd_sections,
				 .n_sections = ELEMENTSOF(containerd_sections)};
	_cleanup_rc_error_ struct rc_error *err = NULL;
	cJSON *data = cJSON_CreateObject();
	cJSON *files = data ? cJSON_AddArrayToObject(data, "files") : NULL;
	bool truncated = false;
	int r;

	if (!files || !cJSON_AddStringToObject(data, "path", CONTAINERD_CONFIG)) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	r = containerd_read(d, &s, files, &truncated, &err);
	if (r == -ENOENT && !err) {
		cJSON_DeleteItemFromObject(data, "files");
		containerd_no_config(d, data);
	} else if (r == -ENOMEM) {
		cJSON_Delete(data);
		d->oom = true;
	} else if (r < 0) {
		cJSON_AddBoolToObject(data, "exists", true);
		doctor_add_check(d, "containerd.config", DOCTOR_FAIL, data,
				 "fix the file: containerd refuses to start with it", "%s",
				 rc_error_msg(err, r));
	} else if (truncated) {
		cJSON_AddBoolToObject(data, "exists", true);
		doctor_add_check(d, "containerd.config", DOCTOR_WARN, data, NULL,
				 CONTAINERD_CONFIG " imports more than %d files: doctor follows "
				 "only the first %d, the verdict on CDI may be wrong",
				 CONTAINERD_FILES_MAX, CONTAINERD_FILES_MAX);
	} else {
		cJSON_AddBoolToObject(data, "exists", true);
		containerd_verdict(d, &s, data);
	}
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
