/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi list: the CDI device names the runtimes would see in the spec directories,
 * whoever wrote the files. File names and reasons come from disk: they are printed
 * quoted/escaped (a file named "x\nrdma.example/hca=evil.json" must not forge a line).
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "cdi.h"
#include "cli.h"
#include "common.h"

enum { OPT_JSON = CLI_OPT_COMMAND };

struct list_args {
	struct cli_common common;
	bool json;
};

static const struct cli_option list_options[] = {
    {"spec-dir", required_argument, CLI_OPT_SPEC_DIR, "DIR",
     "a spec directory to read, repeatable, later ones win (default " SPEC_DEFAULT_DIR
     " and " SPEC_DYNAMIC_DIR ")"},
    {"json", no_argument, OPT_JSON, NULL,
     "print JSON: every spec file with its kind and device names, or why it is invalid, "
     "and the names defined twice"},
    CLI_OPTIONS_GLOBAL,
    {},
};

static int list_option(void *ctx, int opt, const char *arg)
{
	struct list_args *a = ctx;

	if (opt == OPT_JSON)
		a->json = true;
	return 0;
}

static const struct cli_parser list_parser = {
    .name = "list",
    .synopsis = "[OPTIONS]",
    .description = "Lists the fully qualified CDI device names (vendor/class=name) defined in "
		   "the spec directories, one per line with the file that defines it, as the "
		   "runtimes read them: *.json and *.yaml files in lexical order. Invalid "
		   "files and names defined twice in one directory (runtimes refuse those) are "
		   "reported on stderr. File names are printed C-quoted when they hold "
		   "spaces, quotes or control characters.",
    .options = list_options,
    .footer = "Exit status: 0 success (also when nothing is found), 1 failure, 2 bad usage, "
	      "4 invalid spec files or names defined twice.",
    .option = list_option,
};

static bool add_disk_string(cJSON *o, const char *key, const char *s)
{
	cJSON *v = json_untrusted_string(s);

	return v && cJSON_AddItemToObject(o, key, v);
}

static char *entry_path(const struct cdi_list_entry *e)
{
	return *e->file ? strdup_printf("%s/%s", e->dir, e->file) : strdup(e->dir);
}

static cJSON *entry_json(const struct cdi_list_entry *e)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *path = entry_path(e);
	cJSON *names;

	if (!o || !path || !add_disk_string(o, "path", path) ||
	    !add_disk_string(o, "dir", e->dir) || !add_disk_string(o, "file", e->file) ||
	    !cJSON_AddBoolToObject(o, "valid", !e->error))
		return NULL;
	if (e->error)
		return add_disk_string(o, "error", e->error) ? TAKE_PTR(o) : NULL;
	if (!add_disk_string(o, "kind", e->kind))
		return NULL;
	names = cJSON_AddArrayToObject(o, "devices");
	if (!names)
		return NULL;
	for (size_t k = 0; k < e->n_names; k++) {
		cJSON *n = json_untrusted_string(e->names[k]);

		if (!n || !cJSON_AddItemToArray(names, n))
			return NULL;
	}
	return TAKE_PTR(o);
}

static int print_json(const struct cdi_listing *l, const char *const *dirs, size_t n_dirs)
{
	_cleanup_(cJSON_Deletep) cJSON *o = cJSON_CreateObject();
	cJSON *d = o ? cJSON_AddArrayToObject(o, "directories") : NULL;
	cJSON *specs = o ? cJSON_AddArrayToObject(o, "specs") : NULL;
	cJSON *conflicts = o ? cJSON_AddArrayToObject(o, "conflicts") : NULL;

	if (!d || !specs || !conflicts)
		goto oom;
	for (size_t i = 0; i < n_dirs; i++) {
		cJSON *s = json_untrusted_string(dirs[i]);

		if (!s || !cJSON_AddItemToArray(d, s))
			goto oom;
	}
	for (size_t i = 0; i < l->n_entries; i++) {
		cJSON *e = entry_json(&l->entries[i]);

		if (!e || !cJSON_AddItemToArray(specs, e))
			goto oom;
	}
	for (size_t i = 0; i < l->n_conflicts; i++) {
		cJSON *s = json_untrusted_string(l->conflicts[i]);

		if (!s || !cJSON_AddItemToArray(conflicts, s))
			goto oom;
	}
	return cli_print_json(o);
oom:
	log_error_errno(-ENOMEM, "formatting JSON");
	return EXIT_FAIL;
}

static int print_text(const struct cdi_listing *l, const char *const *dirs, size_t n_dirs)
{
	size_t n_names = 0;

	for (size_t i = 0; i < l->n_entries; i++) {
		const struct cdi_list_entry *e = &l->entries[i];
		_cleanup_free_ char *path = entry_path(e);
		_cleanup_free_ char *q = path ? quote_untrusted(path) : NULL;

		if (!q) {
			log_error_errno(-ENOMEM, "listing");
			return EXIT_FAIL;
		}
		if (e->error) {
			log_warning("%s: %s, runtimes ignore it: %s%s", q,
				    *e->file ? "invalid" : "unreadable", e->error,
				    strstr(e->error, strerror(EACCES)) ? " (run as root)" : "");
			continue;
		}
		/* Names passed cdi_spec_validate(): no tab, no newline, nothing to quote. */
		for (size_t k = 0; k < e->n_names; k++, n_names++)
			printf("%s\t%s\n", e->names[k], q);
	}
	for (size_t i = 0; i < l->n_conflicts; i++)
		log_warning("defined twice, runtimes drop it: %s", l->conflicts[i]);
	if (fflush(stdout) != 0) {
		log_error_errno(-errno, "writing to stdout");
		return EXIT_FAIL;
	}
	if (n_names == 0 && l->n_entries == 0) {
		_cleanup_free_ char *all = NULL;

		for (size_t i = 0; i < n_dirs; i++) {
			_cleanup_free_ char *q = quote_untrusted(dirs[i]);
			char *s =
			    strdup_printf("%s%s%s", all ? all : "", all ? ", " : "", q ? q : "?");

			free(all);
			all = s;
		}
		log_info("no CDI spec files (*.json, *.yaml) in %s; rdma-cdi generate writes one",
			 all ? all : "?");
	} else if (n_names == 0) {
		log_info("no valid CDI device definitions found");
	}
	return 0;
}

int cmd_list(int argc, char **argv)
{
	static const char *const default_dirs[] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR};
	struct list_args a = {};
	struct cdi_listing *l = NULL;
	const char *const *dirs;
	bool problems;
	size_t n;
	int r;

	r = cli_parse(&list_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		return r;
	dirs = a.common.n_spec_dirs ? a.common.spec_dirs : default_dirs;
	n = a.common.n_spec_dirs ? a.common.n_spec_dirs : ELEMENTSOF(default_dirs);
	r = cdi_list_dirs(dirs, n, &l);
	if (r < 0) {
		log_error_errno(r, "reading the spec directories");
		return EXIT_FAIL;
	}
	r = a.json ? print_json(l, dirs, n) : print_text(l, dirs, n);
	problems = l->n_conflicts > 0;
	for (size_t i = 0; i < l->n_entries; i++)
		problems = problems || l->entries[i].error;
	cdi_listing_free(l);
	if (r != 0)
		return r;
	return problems ? EXIT_LIST_PROBLEMS : 0;
}
