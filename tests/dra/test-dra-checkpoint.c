/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The checkpoint: what Unprepare after a restart relies on. Round trip through the file,
 * the atomic write (no temp file left, mode 0600 whatever the umask, a symlink never
 * followed), and every file the loader must refuse - corrupt, another version, too
 * large, a symlink - refused with the reason and left exactly as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "cdi.h"
#include "../tap.h"
#include "claims-fixture.h"
#include "dra.h"

#define UID_A "0b5e3c1a-7f2d-4e6b-9a1c-2d3e4f5a6b7c"
#define UID_B "aa11bb22-0000-4000-8000-000000000002"

static char tmpdir[] = "/tmp/test-dra-checkpoint.XXXXXX";

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

static char *read_file(const char *path)
{
	char *buf = NULL;
	size_t len;

	if (read_full_file_at(AT_FDCWD, path, 1 << 20, true, &buf, &len) < 0)
		return NULL;
	return buf;
}

static struct dra_prepared_claim *claim(const char *uid, const char *device, size_t n_req)
{
	struct dra_prepared_claim *p = calloc(1, sizeof(*p));

	if (!p)
		abort();
	p->uid = strdup(uid);
	p->namespace = strdup("team-a");
	p->name = strdup("train-0");
	p->spec_file = strdup_printf("rdma.example-claim_%s.json", uid);
	p->devices = calloc(1, sizeof(*p->devices));
	p->n_devices = 1;
	p->devices[0].device = strdup(device);
	p->devices[0].requests = calloc(n_req, sizeof(char *));
	for (size_t i = 0; i < n_req; i++)
		p->devices[0].requests[i] = strdup_printf("req-%zu", i);
	p->devices[0].n_requests = n_req;
	p->devices[0].cdi_ids = calloc(2, sizeof(char *));
	p->devices[0].cdi_ids[0] = strdup("rdma.example/hca=0000:3b:00.0");
	p->devices[0].cdi_ids[1] = strdup_printf("rdma.example/claim=%s", uid);
	p->devices[0].n_cdi_ids = 2;
	return p;
}

/* Names in tmpdir other than those given (NULL-terminated) : temp files left behind. */
static size_t strangers(const char *const *known)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		abort();
	while ((e = readdir(d))) {
		bool k = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");

		for (const char *const *p = known; *p && !k; p++)
			k = !strcmp(e->d_name, *p);
		if (!k) {
			printf("#   unexpected %s\n", e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

static void test_round_trip(void)
{
	const char *const known[] = {DRA_CHECKPOINT_NAME, NULL};
	struct dra_checkpoint *c = calloc(1, sizeof(*c)), *back = NULL;
	struct stat st;
	char err[512] = "";
	mode_t old_umask;
	int r;

	if (!c)
		abort();
	EQ_INT(dra_checkpoint_add(c, claim(UID_A, "pci-0000-3b-00-0", 2)), 0, "add A");
	EQ_INT(dra_checkpoint_add(c, claim(UID_B, "pci-0000-5e-00-0", 1)), 0, "add B");
	free(c->claims[1].spec_file);
	c->claims[1].spec_file = NULL; /* a claim without a spec file */
	/* A's device is a share of a device that allows multiple allocations, reached with
	 * admin access. */
	c->claims[0].devices[0].share_id = strdup("9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f");
	c->claims[0].devices[0].admin = true;

	/* A permissive umask must not make the checkpoint readable by others. */
	old_umask = umask(0);
	r = ERR_TEXT(err, dra_checkpoint_save(c, tmpdir, &_e));
	umask(old_umask);
	if (!ok(r == 0, "saved"))
		printf("#   %d %s\n", r, err);
	ok(stat(path_of(DRA_CHECKPOINT_NAME), &st) == 0 && (st.st_mode & 07777) == 0600,
	   "mode 0600 (umask 0)");
	EQ_INT(strangers(known), 0, "no temp file left");

	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &back, &_e));
	if (!ok(r == 0, "loaded"))
		printf("#   %d %s\n", r, err);
	if (r == 0) {
		EQ_INT(back->n_claims, 2, "two claims back");
		EQ_STR(back->claims[0].uid, UID_A, "A's uid");
		EQ_STR(back->claims[0].namespace, "team-a", "A's namespace");
		EQ_STR(back->claims[0].name, "train-0", "A's name");
		EQ_STR(back->claims[0].spec_file, "rdma.example-claim_" UID_A ".json",
		       "A's spec file");
		EQ_INT(back->claims[0].devices[0].n_requests, 2, "A's requests");
		EQ_STR(back->claims[0].devices[0].requests[1], "req-1", "A's second request");
		EQ_STR(back->claims[0].devices[0].cdi_ids[1], "rdma.example/claim=" UID_A,
		       "A's claim CDI ID");
		ok(back->claims[1].spec_file == NULL, "B without spec file stays without");
		EQ_STR(back->claims[0].devices[0].share_id, "9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f",
		       "A's share ID");
		ok(back->claims[0].devices[0].admin, "A's admin access");
		ok(back->claims[1].devices[0].share_id == NULL && !back->claims[1].devices[0].admin,
		   "B: no share ID, no admin access");
		ok(dra_checkpoint_holder(back, "pci-0000-3b-00-0", UID_B) == NULL,
		   "A reaches its device with admin access: it holds it for nobody");
		EQ_STR(dra_checkpoint_holder(back, "pci-0000-5e-00-0", UID_A), UID_B,
		       "B holds its device after the restart");
		ok(dra_checkpoint_find(back, UID_B) == &back->claims[1], "find B");
		ok(dra_checkpoint_find(back, "nope") == NULL, "find an unknown UID");
	}
	dra_checkpoint_free(back);

	/* Saved again after a removal: the old file is replaced, not appended to. */
	EQ_INT(dra_checkpoint_remove(c, UID_A), 1, "remove A");
	EQ_INT(ERR_TEXT(err, dra_checkpoint_save(c, tmpdir, &_e)), 0, "saved without A");
	back = NULL;
	EQ_INT(ERR_TEXT(err, dra_checkpoint_load(tmpdir, &back, &_e)), 0, "loaded again");
	if (back) {
		EQ_INT(back->n_claims, 1, "one claim left");
		EQ_STR(back->claims[0].uid, UID_B, "B");
	}
	dra_checkpoint_free(back);
	EQ_INT(strangers(known), 0, "still no temp file left");

	/* add with a known UID replaces its entry. */
	EQ_INT(dra_checkpoint_add(c, claim(UID_B, "pci-0000-86-00-0", 1)), 0, "add B again");
	EQ_INT(c->n_claims, 1, "replaced, not added");
	EQ_STR(c->claims[0].devices[0].device, "pci-0000-86-00-0", "with the new devices");

	/* Nothing is written that the next start would refuse. */
	c->claims[0].devices[0].share_id = strdup("../x");
	r = ERR_TEXT(err, dra_checkpoint_save(c, tmpdir, &_e));
	EQ_INT(r, -EINVAL, "an entry with a bad share ID is not saved");
	EQ_STR(err, "claims[0].devices[].shareID: not a share ID", "its reason");
	free(c->claims[0].devices[0].share_id);
	c->claims[0].devices[0].share_id = NULL;
	free(c->claims[0].namespace);
	c->claims[0].namespace = strdup("");
	r = ERR_TEXT(err, dra_checkpoint_save(c, tmpdir, &_e));
	EQ_INT(r, -EINVAL, "an entry with an empty namespace is not saved");
	EQ_STR(err, "claims[0].namespace: empty, too long or not text", "its reason");
	dra_checkpoint_free(c);
	unlink(path_of(DRA_CHECKPOINT_NAME));
}

static void test_absent(void)
{
	struct dra_checkpoint *c = NULL;
	char err[512];

	EQ_INT(ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e)), 0, "absent file: loaded");
	ok(c && c->n_claims == 0, "absent file: empty");
	dra_checkpoint_free(c);
	c = NULL;
	EQ_INT(ERR_TEXT(err, dra_checkpoint_load(path_of("no-such-dir"), &c, &_e)), 0,
	       "absent dir: loaded");
	ok(c && c->n_claims == 0, "absent dir: empty");
	dra_checkpoint_free(c);
}

/* The file holds text; loading must refuse with r and a message containing want, and
 * leave it as it was (same inode, same content). */
static void refused_file(const char *text, int want_r, const char *want, const char *what)
{
	struct dra_checkpoint *c = (void *)1;
	char err[1024] = "";
	struct stat st1, st2;
	char *after;
	int r;

	write_file(DRA_CHECKPOINT_NAME, text);
	if (stat(path_of(DRA_CHECKPOINT_NAME), &st1) < 0)
		abort();
	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e));
	if (!ok(r == want_r, "%s: refused (%d)", what, want_r))
		printf("#   got %d\n", r);
	if (!ok(strstr(err, want) != NULL, "%s: says '%s'", what, want))
		printf("#   got '%s'\n", err);
	ok(c == (void *)1, "%s: nothing returned", what);
	after = read_file(path_of(DRA_CHECKPOINT_NAME));
	ok(stat(path_of(DRA_CHECKPOINT_NAME), &st2) == 0 && st1.st_ino == st2.st_ino && after &&
	       strcmp(after, text) == 0,
	   "%s: file left untouched", what);
	free(after);
	unlink(path_of(DRA_CHECKPOINT_NAME));
}

#define CLAIM_OK                                                                                   \
	"{\"uid\":\"" UID_A "\",\"namespace\":\"a\",\"name\":\"b\",\"devices\":[{\"device\":"      \
	"\"pci-0000-3b-00-0\",\"requests\":[\"r\"],\"cdiDeviceIDs\":[\"rdma.example/hca=x\"]}]}"

static void test_corrupt(void)
{
	refused_file("{\"version\":1,\"claims\":[" CLAIM_OK "]", -EBADMSG, "corrupt, left in place",
		     "truncated JSON");
	refused_file("garbage", -EBADMSG, "1:1:", "not JSON");
	refused_file("", -EBADMSG, "left in place", "empty file");
	refused_file("{\"version\":2,\"claims\":[]}", -EBADMSG, "version: 2 is not 1",
		     "another version");
	refused_file("{\"claims\":[]}", -EBADMSG, "version: missing", "no version");
	refused_file("{\"version\":\"1\",\"claims\":[]}", -EBADMSG, "version: not a number",
		     "version a string");
	refused_file("{\"version\":1}", -EBADMSG, "claims: missing", "no claims");
	refused_file("{\"version\":1,\"claims\":[],\"x\":1}", -EBADMSG, "unknown top-level key",
		     "unknown key");
	refused_file("{\"version\":1,\"version\":1,\"claims\":[]}", -EBADMSG, "duplicate key",
		     "duplicate key");
	refused_file("{\"version\":1,\"claims\":[" CLAIM_OK "," CLAIM_OK "]}", -EBADMSG,
		     "UID " UID_A " is recorded twice", "duplicate UID");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"../x\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],\"cdiDeviceIDs\":"
		     "[\"k/c=x\"]}]}]}",
		     -EBADMSG, "claims[0].uid: not a valid claim UID", "a UID that is a path");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"specFile\":\"../../etc/passwd\",\"devices\":[{\"device\":\"d\","
		     "\"requests\":[\"r\"],\"cdiDeviceIDs\":[\"k/c=x\"]}]}]}",
		     -EBADMSG, "claims[0].specFile: not a spec file name", "a spec file outside");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[]}]}",
		     -EBADMSG, "claims[0].devices: empty or too many", "a claim without devices");
	refused_file(
	    "{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
	    "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[1],\"cdiDeviceIDs\":[]}]}]}",
	    -EBADMSG, "claims[0].devices[0].requests[0]: not a string", "a request number");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],\"cdiDeviceIDs\":"
		     "[\"k/c=x\"],\"more\":1}]}]}",
		     -EBADMSG, "claims[0].devices[0]: unknown key", "unknown device key");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\\u0007\","
		     "\"name\":\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],"
		     "\"cdiDeviceIDs\":[\"k/c=x\"]}]}]}",
		     -EBADMSG, "claims[0].namespace", "a control character");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\\u009b[2J\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],"
		     "\"cdiDeviceIDs\":[\"k/c=x\"]}]}]}",
		     -EBADMSG, "claims[0].name", "a C1 control character (CSI)");
}

/* A checkpoint of a release before shareID and adminAccess: read as before, and what the
 * driver writes now for such claims is the same text. */
static void test_old_format(void)
{
	const char *old = "{\"version\":1,\"claims\":[" CLAIM_OK "]}";
	struct dra_checkpoint *c = NULL;
	char err[512] = "", *buf = NULL;
	size_t len;
	int r;

	write_file(DRA_CHECKPOINT_NAME, old);
	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e));
	if (!ok(r == 0, "an older checkpoint loads"))
		printf("#   %d %s\n", r, err);
	if (r == 0) {
		ok(c->claims[0].devices[0].share_id == NULL, "no share ID");
		ok(!c->claims[0].devices[0].admin, "no admin access: the device is held");
		EQ_STR(dra_checkpoint_holder(c, "pci-0000-3b-00-0", UID_B), UID_A, "by its claim");
		EQ_INT(ERR_TEXT(err, dra_checkpoint_format(c, &buf, &len, &_e)), 0, "formats");
		ok(buf && !strstr(buf, "shareID") && !strstr(buf, "adminAccess"),
		   "written back without the new keys");
		free(buf);
	}
	dra_checkpoint_free(c);
	unlink(path_of(DRA_CHECKPOINT_NAME));

	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],\"cdiDeviceIDs\":"
		     "[\"k/c=x\"],\"adminAccess\":\"yes\"}]}]}",
		     -EBADMSG, "claims[0].devices[0].adminAccess: not a boolean",
		     "adminAccess a string");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],\"cdiDeviceIDs\":"
		     "[\"k/c=x\"],\"shareID\":\"a b\"}]}]}",
		     -EBADMSG, "claims[0].devices[].shareID: not a share ID", "a bad share ID");
	refused_file("{\"version\":1,\"claims\":[{\"uid\":\"u1\",\"namespace\":\"a\",\"name\":"
		     "\"b\",\"devices\":[{\"device\":\"d\",\"requests\":[\"r\"],\"cdiDeviceIDs\":"
		     "[\"k/c=x\"],\"shareID\":1}]}]}",
		     -EBADMSG, "claims[0].devices[0].shareID: not a string", "a share ID number");
}

static void test_oversize(void)
{
	struct dra_checkpoint *c = (void *)1;
	char err[512] = "";
	struct stat st;
	int fd, r;

	/* Sparse: the size is what counts, and the loader must not read it first. */
	fd = open(path_of(DRA_CHECKPOINT_NAME), O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)DRA_CHECKPOINT_MAX_BYTES + 1) < 0)
		abort();
	close(fd);
	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e));
	EQ_INT(r, -EBADMSG, "a file over 64 MiB is refused");
	ok(strstr(err, "larger than 67108864 bytes (left in place)") != NULL, "it says so");
	ok(stat(path_of(DRA_CHECKPOINT_NAME), &st) == 0 &&
	       st.st_size == (off_t)DRA_CHECKPOINT_MAX_BYTES + 1,
	   "and leaves it");
	unlink(path_of(DRA_CHECKPOINT_NAME));
}

static void test_symlinks(void)
{
	struct dra_checkpoint *c = (void *)1, empty = {0};
	char err[512] = "", *target;
	struct stat st;
	int r;

	/* A valid checkpoint behind a symlink is not read: whoever made the link decides
	 * nothing about our devices. */
	write_file("elsewhere.json", "{\"version\":1,\"claims\":[" CLAIM_OK "]}");
	if (symlink("elsewhere.json", path_of(DRA_CHECKPOINT_NAME)) < 0)
		abort();
	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e));
	EQ_INT(r, -ELOOP, "a symlinked checkpoint is not followed");
	ok(strstr(err, "is a symlink, not followed") != NULL, "it says so");
	ok(c == (void *)1, "nothing returned");

	r = ERR_TEXT(err, dra_checkpoint_save(&empty, tmpdir, &_e));
	EQ_INT(r, -ELOOP, "save does not replace the symlink");
	ok(lstat(path_of(DRA_CHECKPOINT_NAME), &st) == 0 && S_ISLNK(st.st_mode),
	   "the symlink is kept");
	target = read_file(path_of("elsewhere.json"));
	ok(target && strstr(target, UID_A), "its target is untouched");
	free(target);
	unlink(path_of(DRA_CHECKPOINT_NAME));
	unlink(path_of("elsewhere.json"));

	/* A directory in its place. */
	if (mkdir(path_of(DRA_CHECKPOINT_NAME), 0700) < 0)
		abort();
	r = ERR_TEXT(err, dra_checkpoint_load(tmpdir, &c, &_e));
	EQ_INT(r, -EBADMSG, "a directory in its place is refused");
	ok(strstr(err, "not a regular file") != NULL, "it says so");
	EQ_INT(ERR_TEXT(err, dra_checkpoint_save(&empty, tmpdir, &_e)), -EEXIST,
	       "and not replaced");
	rmdir(path_of(DRA_CHECKPOINT_NAME));

	/* The plugin dir itself a symlink. */
	if (mkdir(path_of("real"), 0700) < 0 || symlink("real", path_of("link")) < 0)
		abort();
	r = ERR_TEXT(err, dra_checkpoint_load(path_of("link"), &c, &_e));
	EQ_INT(r, -ELOOP, "a symlinked dir is not followed");
	unlink(path_of("link"));
	rmdir(path_of("real"));
}

/* The longest driver (a 63-character DNS subdomain) and UID still make a recordable claim. */
static void test_longest_names(void)
{
	char driver[64], uid[DRA_UID_MAX + 1], err[512] = "";
	struct dra_checkpoint c = {0}, *back = NULL;
	struct dra_prepared_claim *p;
	int r;

	memset(driver, 'd', sizeof(driver) - 1);
	memcpy(driver + 40, ".example", 8);
	driver[sizeof(driver) - 1] = '\0';
	memset(uid, 'u', sizeof(uid) - 1);
	uid[sizeof(uid) - 1] = '\0';
	p = claim(uid, "pci-0000-3b-00-0", 1);
	free(p->spec_file);
	p->spec_file = dra_claim_spec_file_name(driver, uid);
	ok(p->spec_file != NULL, "a spec file name for the longest driver and UID");
	EQ_INT(dra_checkpoint_add(&c, p), 0, "added");
	r = ERR_TEXT(err, dra_checkpoint_save(&c, tmpdir, &_e));
	if (!ok(r == 0, "saved"))
		printf("#   %d %s\n", r, err);
	EQ_INT(ERR_TEXT(err, dra_checkpoint_load(tmpdir, &back, &_e)), 0, "loaded");
	ok(back && back->n_claims == 1 && !strcmp(back->claims[0].uid, uid), "the same claim");
	dra_checkpoint_free(back);
	dra_checkpoint_remove(&c, uid);
	free(c.claims);
	unlink(path_of(DRA_CHECKPOINT_NAME));
}

static void test_parse(void)
{
	struct dra_checkpoint *c = NULL;
	char err[512];
	const char *text = "{\"version\":1,\"claims\":[" CLAIM_OK "]}";
	char *buf = NULL;
	size_t len;
	int r;

	/* Not NUL-terminated: len counts. */
	r = ERR_TEXT(err, dra_checkpoint_parse(text, strlen(text), &c, &_e));
	EQ_INT(r, 0, "a buffer parses");
	if (r == 0) {
		EQ_INT(c->n_claims, 1, "one claim");
		r = ERR_TEXT(err, dra_checkpoint_format(c, &buf, &len, &_e));
		EQ_INT(r, 0, "formats");
		dra_checkpoint_free(c);
		c = NULL;
		if (r == 0) {
			EQ_INT(ERR_TEXT(err, dra_checkpoint_parse(buf, len, &c, &_e)), 0,
			       "its own output parses");
			dra_checkpoint_free(c);
			c = NULL;
		}
		free(buf);
	}
	r = ERR_TEXT(err, dra_checkpoint_parse(text, strlen(text) - 1, &c, &_e));
	EQ_INT(r, -EBADMSG, "one byte short does not");
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		abort();
	test_absent();
	test_round_trip();
	test_corrupt();
	test_old_format();
	test_oversize();
	test_symlinks();
	test_longest_names();
	test_parse();
	rmdir(tmpdir);
	return tap_done();
}
