/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CDI side, read under --host-root: the spec dirs as the runtimes read them (invalid
 * files, names defined twice), and our spec against what `rdma-cdi generate` would write
 * now, with the options read back from the spec itself (kind, --with-mad, the hook).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "build-config.h"
#include "cdi.h"
#include "common.h"
#include "discovery.h"
#include "doctor-internal.h"
#include "doctor.h"
#include "hooks.h"
#include "specs.h"

/* ---- spec dirs ------------------------------------------------------------------------ */

static cJSON *file_json(const struct cdi_list_entry *e)
{
	cJSON *f = cJSON_CreateObject(), *names;

	cJSON_AddStringToObject(f, "file", e->file);
	if (e->kind)
		cJSON_AddStringToObject(f, "kind", e->kind);
	else
		cJSON_AddNullToObject(f, "kind");
	names = cJSON_AddArrayToObject(f, "names");
	for (size_t m = 0; names && m < e->n_names; m++)
		cJSON_AddItemToArray(names, cJSON_CreateString(e->names[m]));
	if (e->error)
		cJSON_AddStringToObject(f, "error", e->error);
	else
		cJSON_AddNullToObject(f, "error");
	return f;
}

/* One spec dir (path: where it is read, shown: the host's path) with its files; counts
 * the invalid ones into *invalid. */
static cJSON *dir_json(const struct cdi_listing *l, const char *path, const char *shown,
		       size_t *invalid)
{
	cJSON *o = cJSON_CreateObject(), *files = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "path", shown);
	cJSON_AddBoolToObject(o, "exists", doctor_is_dir(path));
	cJSON_AddItemToObject(o, "files", files);
	for (size_t k = 0; k < l->n_entries; k++) {
		const struct cdi_list_entry *e = &l->entries[k];

		if (strcmp(e->dir, path) != 0)
			continue;
		cJSON_AddItemToArray(files, file_json(e));
		*invalid += e->error != NULL;
	}
	return o;
}

/* Names of our kind defined twice in one dir; all of them into data's "conflicts". */
static size_t our_conflicts(const struct doctor *d, const struct cdi_listing *l, cJSON *data)
{
	cJSON *jc = cJSON_AddArrayToObject(data, "conflicts");
	size_t klen = strlen(d->o->kind), ours = 0;

	for (size_t i = 0; jc && i < l->n_conflicts; i++) {
		cJSON_AddItemToArray(jc, cJSON_CreateString(l->conflicts[i]));
		if (strncmp(l->conflicts[i], d->o->kind, klen) == 0 && l->conflicts[i][klen] == '=')
			ours++;
	}
	return ours;
}

static void spec_dirs_verdict(struct doctor *d, const struct cdi_listing *l, cJSON *data,
			      size_t invalid, size_t present)
{
	size_t ours = our_conflicts(d, l, data);

	if (ours)
		doctor_add_check(
		    d, "spec_dirs", DOCTOR_FAIL, data,
		    "remove the other file defining these names (see rdma-cdi list)",
		    "%zu device names of %s are defined twice in one spec dir: runtimes refuse "
		    "them",
		    ours, d->o->kind);
	else if (invalid)
		doctor_add_check(d, "spec_dirs", DOCTOR_WARN, data,
				 "fix or remove them (see rdma-cdi list)",
				 "%zu invalid spec files: runtimes ignore them", invalid);
	else if (!present && d->container)
		doctor_add_check(
		    d, "spec_dirs", DOCTOR_SKIP, data, NULL,
		    "no CDI spec directory inside this container (the host's are checked "
		    "with --host-root)");
	else if (!present)
		doctor_add_check(d, "spec_dirs", DOCTOR_WARN, data, "rdma-cdi generate",
				 "no CDI spec directory (%s, %s) exists", SPEC_DEFAULT_DIR,
				 SPEC_DYNAMIC_DIR);
	else
		doctor_add_check(d, "spec_dirs", DOCTOR_OK, data, NULL, "%zu spec files, all valid",
				 l->n_entries);
}

void doctor_check_spec_dirs(struct doctor *d)
{
	const char *shown[3] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR, d->o->spec_dir};
	bool standard = strcmp(d->o->spec_dir, SPEC_DEFAULT_DIR) == 0 ||
			strcmp(d->o->spec_dir, SPEC_DYNAMIC_DIR) == 0;
	size_t n = standard ? 2 : 3, invalid = 0, present = 0;
	char *paths[3] = {};
	struct cdi_listing *l = NULL;
	cJSON *data = cJSON_CreateObject(), *jd = cJSON_AddArrayToObject(data, "dirs");
	int r = jd ? 0 : -ENOMEM;

	for (size_t i = 0; i < n; i++)
		if (!(paths[i] = cli_host_path(d->o->common, shown[i])))
			r = -ENOMEM;
	if (r >= 0)
		r = cdi_list_dirs((const char *const *)paths, n, &l);
	if (r < 0) {
		d->oom = true;
		cJSON_Delete(data);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		present += doctor_is_dir(paths[i]);
		cJSON_AddItemToArray(jd, dir_json(l, paths[i], shown[i], &invalid));
	}
	spec_dirs_verdict(d, l, data, invalid, present);
out:
	cdi_listing_free(l);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
}

/* ---- our spec ------------------------------------------------------------------------- */

/* How the spec on disk was generated: its hook's path and --memlock, and --with-mad. */
static void spec_options_from(const cJSON *spec, struct spec_options *o)
{
	const cJSON *edits = cJSON_GetObjectItemCaseSensitive(spec, "containerEdits");
	const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(edits, "hooks");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices");
	const cJSON *h, *dv;
	rlim_t v;

	cJSON_ArrayForEach (h, hooks) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(h, "path");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(h, "args");
		const cJSON *a0 = cJSON_GetArrayItem(args, 0), *a1 = cJSON_GetArrayItem(args, 1);

		if (!cJSON_IsString(a0) || strcmp(a0->valuestring, SPEC_HOOK_ARG0) != 0 ||
		    !cJSON_IsString(path) || path->valuestring[0] != '/')
			continue;
		o->hook_path = path->valuestring;
		if (cJSON_IsString(a1) && strncmp(a1->valuestring, "--memlock=", 10) == 0 &&
		    parse_memlock(a1->valuestring + 10, &v) == 0)
			o->memlock = a1->valuestring + 10;
	}
	cJSON_ArrayForEach (dv, devs) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(dv, "containerEdits");
		const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(e, "deviceNodes"), *n;

		cJSON_ArrayForEach (n, nodes) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(n, "path");

			if (cJSON_IsString(p) &&
			    strncmp(p->valuestring, "/dev/infiniband/umad", 20) == 0)
				o->with_mad = true;
		}
	}
}

/* Names one spec has and the other lacks: all into arr, the first few as "a, b" into out.
 * The spec on disk is hostile: the quadratic compare is bounded. */
#define NAMES_COMPARE_MAX 4096
static void names_missing(const cJSON *from, const cJSON *in, cJSON *arr, char *out, size_t size)
{
	const cJSON *fd = cJSON_GetObjectItemCaseSensitive(from, "devices");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "devices");
	const cJSON *a, *b;
	size_t used = 0, count = 0;

	out[0] = '\0';
	if (cJSON_GetArraySize(fd) > NAMES_COMPARE_MAX ||
	    cJSON_GetArraySize(id) > NAMES_COMPARE_MAX)
		return;
	cJSON_ArrayForEach (a, fd) {
		const cJSON *na = cJSON_GetObjectItemCaseSensitive(a, "name");
		bool found = false;

		if (!cJSON_IsString(na))
			continue;
		cJSON_ArrayForEach (b, id) {
			const cJSON *nb = cJSON_GetObjectItemCaseSensitive(b, "name");

			found = found || (cJSON_IsString(nb) &&
					  strcmp(na->valuestring, nb->valuestring) == 0);
		}
		if (found)
			continue;
		cJSON_AddItemToArray(arr, cJSON_CreateString(na->valuestring));
		if (++count > 8 || used >= size)
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "",
					 na->valuestring);
	}
}

/* The hook our spec runs must exist on the host: a runtime aborts container creation
 * when a hook cannot be executed. hook NULL: the spec has none of ours. */
static void check_hook(struct doctor *d, const char *hook, const char *spec)
{
	_cleanup_free_ char *hp = hook ? cli_host_path(d->o->common, hook) : NULL;
	_cleanup_free_ char *fix = NULL;
	cJSON *data = cJSON_CreateObject();
	struct stat st;

	if (hook && !hp) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	if (!hook) {
		cJSON_AddNullToObject(data, "path");
		doctor_add_check(
		    d, "hook", DOCTOR_WARN, data,
		    "rdma-cdi generate (its spec runs rdma-cdi-hook to raise RLIMIT_MEMLOCK)",
		    "%s runs no rdma-cdi-hook: containers keep the runtime's RLIMIT_MEMLOCK", spec);
		return;
	}
	cJSON_AddStringToObject(data, "path", hook);
	fix = strdup_printf("install rdma-cdi-hook at %s (meson install puts it at %s), or "
			    "rdma-cdi generate --hook-path WHERE_IT_IS",
			    hook, RDMA_CDI_HOOK_PATH);
	if (stat(hp, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		doctor_add_check(
		    d, "hook", DOCTOR_FAIL, data, fix,
		    "%s runs the hook %s, which %s: runtimes refuse to create containers "
		    "that ask for these devices",
		    spec, hook, stat(hp, &st) < 0 ? "does not exist" : "is not an executable file");
	else
		doctor_add_check(d, "hook", DOCTOR_OK, data, NULL,
				 "the spec's hook %s is installed", hook);
}

struct spec_file {
	char *shown; /* the host's path */
	char *buf;
	size_t len;
	enum cdi_format fmt;
};

static void spec_file_done(struct spec_file *f)
{
	free(f->shown);
	free(f->buf);
}

/* Reads our spec: the JSON file, else the YAML one. 0, -ENOENT for neither (f->shown is
 * the last tried), or -errno with f->shown naming the file. */
static int spec_read(const struct doctor *d, const char *const names[2], struct spec_file *f)
{
	int r = -ENOENT;

	for (int i = 0; i < 2 && r == -ENOENT; i++) {
		_cleanup_free_ char *path = NULL;

		free(f->shown);
		f->shown = strdup_printf("%s/%s", d->o->spec_dir, names[i]);
		path = f->shown ? cli_host_path(d->o->common, f->shown) : NULL;
		if (!path)
			return -ENOMEM;
		r = read_full_file_at(AT_FDCWD, path, CDI_SPEC_MAX_BYTES, true, &f->buf, &f->len);
		f->fmt = i ? CDI_FORMAT_YAML : CDI_FORMAT_JSON;
	}
	return r;
}

static void spec_missing(struct doctor *d, const struct disc_node *node, const char *const names[2],
			 cJSON *data)
{
	struct spec_options o = {.kind = d->o->kind, .dev_root = d->o->dev_root};
	bool other_kind = strcmp(d->o->kind, SPEC_DEFAULT_KIND) != 0;
	_cleanup_(cJSON_Deletep) cJSON *built = NULL;
	_cleanup_free_ char *fix = NULL;
	int r = node ? spec_build(node, &o, &built) : -ENODEV;

	cJSON_AddStringToObject(data, "state", "missing");
	fix = strdup_printf("rdma-cdi generate --spec-dir %s%s%s", d->o->spec_dir,
			    other_kind ? " --kind " : "", other_kind ? d->o->kind : "");
	if (d->container)
		doctor_add_check(d, "spec", DOCTOR_SKIP, data, NULL,
				 "no spec for %s in %s inside this container (the host's is "
				 "checked with --host-root)",
				 d->o->kind, d->o->spec_dir);
	else if (r == -ENODEV)
		doctor_add_check(d, "spec", DOCTOR_SKIP, data, NULL,
				 "no spec for %s in %s, and no usable device to write one for",
				 d->o->kind, d->o->spec_dir);
	else
		doctor_add_check(d, "spec", DOCTOR_FAIL, data, fix,
				 "no spec for %s in %s (neither %s nor %s): runtimes cannot "
				 "resolve %s=... names",
				 d->o->kind, d->o->spec_dir, names[0], names[1], d->o->kind);
}

/* The generate command that writes the spec again: it repeats only what differs from
 * generate's defaults, which o then leaves to spec_build() too. NULL on OOM. */
static char *spec_fix(const struct doctor *d, struct spec_options *o)
{
	bool other_kind = strcmp(d->o->kind, SPEC_DEFAULT_KIND) != 0;

	if (o->hook_path && strcmp(o->hook_path, RDMA_CDI_HOOK_PATH) == 0)
		o->hook_path = NULL;
	if (o->memlock && strcmp(o->memlock, "unlimited") == 0)
		o->memlock = NULL;
	return strdup_printf("rdma-cdi generate --spec-dir %s%s%s%s%s%s%s%s", d->o->spec_dir,
			     other_kind ? " --kind " : "", other_kind ? d->o->kind : "",
			     o->with_mad ? " --with-mad" : "", o->hook_path ? " --hook-path " : "",
			     o->hook_path ? o->hook_path : "", o->memlock ? " --memlock " : "",
			     o->memlock ? o->memlock : "");
}

static void spec_stale(struct doctor *d, const char *shown, cJSON *data)
{
	_cleanup_free_ char *fix =
	    strdup_printf("load the devices' drivers (modprobe ib_uverbs mlx5_ib ...), or rm %s "
			  "if this node has no RDMA devices any more",
			  shown);

	cJSON_AddStringToObject(data, "state", "stale");
	doctor_add_check(d, "spec", DOCTOR_FAIL, data, fix,
			 "%s names devices, but this node has no usable RDMA device: containers "
			 "asking for them fail to start",
			 shown);
}

static void spec_differs(struct doctor *d, const cJSON *built, const cJSON *disk, const char *shown,
			 cJSON *data, const char *fix)
{
	char added[512], removed[512];

	cJSON_AddStringToObject(data, "state", "differs");
	names_missing(built, disk, cJSON_AddArrayToObject(data, "new_devices"), added,
		      sizeof(added));
	names_missing(disk, built, cJSON_AddArrayToObject(data, "gone_devices"), removed,
		      sizeof(removed));
	doctor_add_check(d, "spec", DOCTOR_FAIL, data, fix,
			 "%s differs from what rdma-cdi generate writes now%s%s%s%s%s", shown,
			 added[0] ? "; not in it: " : "", added,
			 removed[0] ? "; no longer here: " : "", removed,
			 !added[0] && !removed[0] ? " (device numbers or edits changed)" : "");
}

/* The spec on disk (parsed: disk) against what generate writes now with its options. */
static void spec_compare(struct doctor *d, const struct disc_node *node,
			 const struct spec_options *o, const cJSON *disk, const struct spec_file *f,
			 cJSON *data, const char *fix)
{
	_cleanup_(cJSON_Deletep) cJSON *built = NULL;
	_cleanup_free_ char *want = NULL;
	size_t want_len;
	int r = node ? spec_build(node, o, &built) : -ENODEV;

	if (r == -ENODEV) {
		spec_stale(d, f->shown, data);
		return;
	}
	if (r >= 0)
		r = cdi_spec_format(built, f->fmt, &want, &want_len);
	if (r < 0) {
		cJSON_AddStringToObject(data, "state", "unknown");
		doctor_add_check(d, "spec", DOCTOR_WARN, data, NULL,
				 "cannot build the spec generate would write, to compare: %s",
				 strerror(-r));
	} else if (want_len == f->len && memcmp(want, f->buf, f->len) == 0) {
		cJSON_AddStringToObject(data, "state", "match");
		doctor_add_check(d, "spec", DOCTOR_OK, data, NULL,
				 "%s matches what rdma-cdi generate writes now", f->shown);
	} else {
		spec_differs(d, built, disk, f->shown, data, fix);
	}
}

void doctor_check_spec(struct doctor *d, const struct disc_node *node)
{
	_cleanup_free_ char *fj = cdi_spec_file_name(d->o->kind, CDI_FORMAT_JSON);
	_cleanup_free_ char *fy = cdi_spec_file_name(d->o->kind, CDI_FORMAT_YAML), *fix = NULL;
	const char *const names[2] = {fj, fy};
	_cleanup_(spec_file_done) struct spec_file f = {};
	_cleanup_(cJSON_Deletep) cJSON *disk = NULL;
	struct spec_options o = {.kind = d->o->kind, .dev_root = d->o->dev_root};
	cJSON *data = cJSON_CreateObject();
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = fj && fy && data ? spec_read(d, names, &f) : -ENOMEM;

	if (r == -ENOMEM || !cJSON_AddStringToObject(data, "path", f.shown))
		goto oom;
	if (r == -ENOENT) {
		spec_missing(d, node, names, data);
		return;
	}
	if (r < 0) {
		cJSON_AddStringToObject(data, "state", "unreadable");
		doctor_add_check(d, "spec", DOCTOR_FAIL, data,
				 "replace it with a regular file readable by root: rm it, then "
				 "rdma-cdi generate",
				 "%s: %s", f.shown, r == -ELOOP ? "is a symlink" : strerror(-r));
		return;
	}
	r = cdi_spec_parse(f.buf, f.len, f.fmt, &disk, &err);
	if (r < 0) {
		cJSON_AddStringToObject(data, "state", "invalid");
		doctor_add_check(d, "spec", DOCTOR_FAIL, data,
				 "rdma-cdi generate (it replaces the file only when it is ours; "
				 "otherwise remove it first)",
				 "%s:%s", f.shown, rc_error_msg(err, r));
		return;
	}
	spec_options_from(disk, &o);
	check_hook(d, o.hook_path, f.shown);
	fix = spec_fix(d, &o);
	if (!fix)
		goto oom;
	spec_compare(d, node, &o, disk, &f, data, fix);
	return;
oom:
	cJSON_Delete(data);
	d->oom = true;
}
