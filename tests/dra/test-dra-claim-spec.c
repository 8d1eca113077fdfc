/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-claim spec file: its name, its content as the container runtimes read it
 * (cdi_spec_validate and, independently, the upstream JSON schema through
 * tests/tools/validate-cdi-schema.py), and its removal, which must never delete what is
 * not ours: a foreign spec, another claim's, a symlink, a directory, a name from the
 * checkpoint that points elsewhere.
 *
 * usage: test-dra-claim-spec PYTHON VALIDATE SCHEMA_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cdi.h"
#include "../tap.h"
#include "../tap-error.h"
#include "claims-fixture.h"

#define UID "0b5e3c1a-7f2d-4e6b-9a1c-2d3e4f5a6b7c"
#define UID2 "aa11bb22-0000-4000-8000-000000000002"
#define FILE_NAME "rdma.example-claim_" UID ".json"

static char tmpdir[] = "/tmp/test-dra-claim-spec.XXXXXX";
static const char *python, *validate, *schema_dir;

static char *path_of(const char *name)
{
	static char buf[4096];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(path_of(name), "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

static bool exists(const char *name)
{
	struct stat st;

	return lstat(path_of(name), &st) == 0;
}

/* The schema validator's verdict on one file: its exit status (0 valid). */
static int schema_check(const char *file)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		/* Its "ok FILE" line would read as TAP: to stderr with it. */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execl(python, python, validate, schema_dir, file, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		abort();
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static cJSON *spec_for(const struct fixture *f, const char *uid, const char *device)
{
	struct dra_result r[] = {{.request = "nic", .device = (char *)device}};
	struct dra_prepared_claim *p = NULL;
	cJSON *spec = NULL;
	char err[512];

	if (ERR_TEXT(err, fix_prepare(f, NULL, uid, r, 1, &p, &spec, &_e)) != 0) {
		printf("# prepare: %s\n", err);
		abort();
	}
	dra_prepared_claim_free(p);
	return spec;
}

static void test_names(void)
{
	char *s = dra_claim_spec_file_name(DRIVER, UID);

	EQ_STR(s, FILE_NAME, "file name <driver>-claim_<uid>.json");
	free(s);
	ok(!dra_claim_spec_file_name(DRIVER, "../x"), "no file name for a UID with ..");
	ok(!dra_claim_spec_file_name(DRIVER, "a/b"), "no file name for a UID with /");
	ok(!dra_claim_spec_file_name(DRIVER, "a..b"), "no file name for a UID with .. inside");
	ok(!dra_claim_spec_file_name(DRIVER, ""), "no file name for an empty UID");
	ok(!dra_claim_spec_file_name("a/b", UID), "no file name for a driver with /");
	ok(!dra_claim_spec_file_name(NULL, UID), "no file name without driver");
}

static void test_write(const struct fixture *f)
{
	cJSON *spec = spec_for(f, UID, "pci-0000-5e-00-0"), *back = NULL;
	char err[512] = "", *file = NULL, *buf = NULL;
	struct stat st;
	size_t len;
	int r;

	r = ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, UID, spec, &file, &_e));
	if (!ok(r == 0, "spec written"))
		printf("#   %d %s\n", r, err);
	EQ_STR(file, FILE_NAME, "its base name returned");
	ok(stat(path_of(FILE_NAME), &st) == 0 && (st.st_mode & 07777) == 0644,
	   "mode 0644: runtimes read it");
	ok(read_full_file_at(AT_FDCWD, path_of(FILE_NAME), 1 << 20, true, &buf, &len) == 0 &&
	       cdi_spec_parse(buf, len, CDI_FORMAT_JSON, &back, tap_fresh()) == 0,
	   "the file parses");
	ok(back && cJSON_Compare(back, spec, true), "it holds the spec");
	if (!ok(back && cdi_spec_validate(back, tap_fresh()) == 0, "the file is valid"))
		printf("#   %s\n", tap_msg());
	EQ_INT(schema_check(path_of(FILE_NAME)), 0, "the upstream CDI JSON schema accepts it");
	free(buf);
	free(file);
	cJSON_Delete(back);

	/* Writing it again (a retried Prepare) is harmless. */
	file = NULL;
	EQ_INT(ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, UID, spec, &file, &_e)), 0,
	       "written again");
	free(file);

	/* A spec that is not the claim's is refused before anything is written. */
	file = NULL;
	r = ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, UID2, spec, &file, &_e));
	EQ_INT(r, -EINVAL, "a spec for another UID is not written under this one");
	ok(!file && !exists("rdma.example-claim_" UID2 ".json"), "no file for it");
	r = ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, "../x", spec, &file, &_e));
	EQ_INT(r, -EINVAL, "a UID that is a path is refused");
	cJSON_Delete(spec);
}

static void test_remove(const struct fixture *f)
{
	cJSON *spec2 = spec_for(f, UID2, "pci-0000-3b-00-0");
	char err[512] = "", *file = NULL;
	int r;

	/* Foreign content under our name: another kind. */
	write_file(FILE_NAME, "{\"cdiVersion\":\"0.3.0\",\"kind\":\"acme.com/claim\",\"devices\":"
			      "[{\"name\":\"" UID "\",\"containerEdits\":{\"env\":[\"A=1\"]}}]}");
	r = ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e));
	EQ_INT(r, -EEXIST, "a foreign kind is not removed");
	ok(strstr(err, "not the spec of claim " UID) != NULL, "it says why");
	ok(exists(FILE_NAME), "and it is kept");

	/* Our kind, another claim's device. */
	write_file(FILE_NAME, "{\"cdiVersion\":\"0.3.0\",\"kind\":\"rdma.example/claim\","
			      "\"devices\":[{\"name\":\"" UID2 "\",\"containerEdits\":{\"env\":"
			      "[\"A=1\"]}}]}");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e)), -EEXIST,
	       "another claim's spec is not removed");
	ok(exists(FILE_NAME), "and it is kept");

	/* Not a spec at all. */
	write_file(FILE_NAME, "not json");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e)), -EEXIST,
	       "a file that is not a spec is not removed");
	ok(exists(FILE_NAME), "and it is kept");
	unlink(path_of(FILE_NAME));

	/* A symlink to a spec that would pass: the link is not ours, the target neither. */
	r = ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, UID2, spec2, &file, &_e));
	EQ_INT(r, 0, "another claim's spec written");
	if (symlink(file, path_of(FILE_NAME)) < 0)
		abort();
	r = ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e));
	EQ_INT(r, -EEXIST, "a symlink is not removed");
	ok(strstr(err, "a symlink, not ours: kept") != NULL, "it says so");
	ok(exists(FILE_NAME) && exists(file), "link and target kept");
	/* Even when it points to a spec of our kind for this UID. */
	unlink(path_of(FILE_NAME));
	write_file("target.json", "{\"cdiVersion\":\"0.3.0\",\"kind\":\"rdma.example/claim\","
				  "\"devices\":[{\"name\":\"" UID "\",\"containerEdits\":{\"env\":"
				  "[\"A=1\"]}}]}");
	if (symlink("target.json", path_of(FILE_NAME)) < 0)
		abort();
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e)), -EEXIST,
	       "a symlink to our spec is not removed either");
	ok(exists(FILE_NAME) && exists("target.json"), "link and target kept");
	unlink(path_of(FILE_NAME));
	unlink(path_of("target.json"));

	/* A directory under our name. */
	if (mkdir(path_of(FILE_NAME), 0755) < 0)
		abort();
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID, NULL, &_e)), -EEXIST,
	       "a directory is not removed");
	rmdir(path_of(FILE_NAME));

	/* A recorded name that leads elsewhere. */
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID2, "../x.json", &_e)),
	       -EINVAL, "a recorded name with a path is refused");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID2, ".hidden.json", &_e)),
	       -EINVAL, "a hidden recorded name is refused");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID2, "x.txt", &_e)), -EINVAL,
	       "a name runtimes would not read is refused");
	ok(exists(file), "the other claim's spec is still there");

	/* Ours: removed, then absent is fine. */
	r = ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID2, file, &_e));
	if (!ok(r == 1, "our spec is removed"))
		printf("#   %d %s\n", r, err);
	ok(!exists(file), "it is gone");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_remove(tmpdir, DRIVER, UID2, file, &_e)), 0,
	       "removing it again: 0");
	EQ_INT(
	    ERR_TEXT(err, dra_claim_spec_remove(path_of("no-such-dir"), DRIVER, UID2, NULL, &_e)),
	    0, "no spec dir: 0");
	free(file);
	cJSON_Delete(spec2);
}

/* The args of the hooks of a claim spec's device, "|"-joined per hook ("" when none). */
static void hook_args(const cJSON *spec, const char *hook_path, char *buf, size_t size)
{
	const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "devices"), 0);
	const cJSON *hooks = cJSON_GetObjectItem(cJSON_GetObjectItem(d0, "containerEdits"),
						 "hooks");
	const cJSON *h, *a;

	buf[0] = '\0';
	cJSON_ArrayForEach (h, hooks) {
		const cJSON *name = cJSON_GetObjectItem(h, "hookName");
		const cJSON *path = cJSON_GetObjectItem(h, "path");

		if (!cJSON_IsString(name) || strcmp(name->valuestring, "createRuntime") != 0 ||
		    !cJSON_IsString(path) || strcmp(path->valuestring, hook_path) != 0) {
			snprintf(buf, size, "a hook that is not createRuntime %s", hook_path);
			return;
		}
		snprintf(buf + strlen(buf), size - strlen(buf), "%s", *buf ? "|" : "");
		cJSON_ArrayForEach (a, cJSON_GetObjectItem(h, "args"))
			snprintf(buf + strlen(buf), size - strlen(buf), "%s%s",
				 a == cJSON_GetObjectItem(h, "args")->child ? "" : " ",
				 cJSON_IsString(a) ? a->valuestring : "?");
	}
}

/* A claim for devices of a `netns: move` pool (IB and RoCE) and of a pool without it: the
 * claim spec moves exactly the first two, each by the argument its link layer needs. */
static void test_netns_move(struct fixture *f)
{
	static const char hook[] = "/opt/rdma-cdi/rdma-cdi-hook";
	struct dra_result r[] = {{.request = "a", .device = "pci-0000-5e-00-0"},
				 {.request = "b", .device = "pci-0000-86-00-0"},
				 {.request = "c", .device = "pci-0000-3b-00-0"}};
	struct dra_prepared_claim *p = NULL;
	cJSON *spec = NULL;
	char err[512] = "", args[512], *file = NULL;

	f->spec.hook_path = hook;
	f->pools[2].netns = CFG_NETNS_MOVE; /* mlx5_3 (IB), mlx5_5 (RoCE here) */
	snprintf(f->ports[2][0].link_layer, sizeof(f->ports[2][0].link_layer), "Ethernet");
	if (!ok(ERR_TEXT(err, fix_prepare(f, NULL, UID, r, 3, &p, &spec, &_e)) == 0,
		"Prepare of a claim with devices of a netns: move pool"))
		printf("#   %s\n", err);
	hook_args(spec, hook, args, sizeof(args));
	EQ_STR(args,
	       "rdma-cdi-hook --netns-move=mlx5_3|rdma-cdi-hook --netns-move-roce=mlx5_5",
	       "one createRuntime hook per moved device, RoCE by --netns-move-roce; none for the "
	       "pool without netns: move");
	EQ_INT(ERR_TEXT(err, dra_claim_spec_write(tmpdir, DRIVER, UID, spec, &file, &_e)), 0,
	       "that spec is written");
	EQ_INT(schema_check(path_of(FILE_NAME)), 0, "the upstream CDI JSON schema accepts it");
	free(file);
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);

	/* Admin access reaches a device without holding it: its claim never moves it out of
	 * its holder's namespace; a device the claim also holds (another request) moves. */
	r[0].admin_access = true;
	r[1].admin_access = true;
	r[2].device = "pci-0000-86-00-0";
	r[2].request = "c";
	if (!ok(ERR_TEXT(err, fix_prepare(f, NULL, UID2, r, 2, &p, &spec, &_e)) == 0,
		"Prepare of an admin-access claim on devices of a netns: move pool"))
		printf("#   %s\n", err);
	hook_args(spec, hook, args, sizeof(args));
	EQ_STR(args, "", "admin access only: no move hook");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
	if (!ok(ERR_TEXT(err, fix_prepare(f, NULL, UID2, r, 3, &p, &spec, &_e)) == 0,
		"Prepare of a claim with admin access to mlx5_3 and mlx5_5, holding mlx5_5 too"))
		printf("#   %s\n", err);
	hook_args(spec, hook, args, sizeof(args));
	EQ_STR(args, "rdma-cdi-hook --netns-move-roce=mlx5_5",
	       "the held device moves, the one reached by admin access only does not");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
	r[0].admin_access = r[1].admin_access = false;

	/* The same devices once the pool no longer asks for the move. */
	f->pools[2].netns = CFG_NETNS_NONE;
	spec = spec_for(f, UID2, "pci-0000-5e-00-0");
	hook_args(spec, hook, args, sizeof(args));
	EQ_STR(args, "", "a pool without netns: move: no hook in the claim spec");
	cJSON_Delete(spec);
	f->spec.hook_path = NULL;
	f->ports[2][0].link_layer[0] = '\0';
	unlink(path_of(FILE_NAME));
}

int main(int argc, char **argv)
{
	struct fixture *f = fix_new();

	if (argc != 4) {
		fprintf(stderr, "usage: %s PYTHON VALIDATE SCHEMA_DIR\n", argv[0]);
		return 2;
	}
	python = argv[1];
	validate = argv[2];
	schema_dir = argv[3];
	if (!mkdtemp(tmpdir))
		abort();
	test_names();
	test_write(f);
	test_remove(f);
	test_netns_move(f);
	unlink(path_of(FILE_NAME));
	rmdir(tmpdir);
	free(f);
	return tap_done();
}
