/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi_write_file_atomic in a private temp dir: modes whatever the umask, unchanged
 * content untouched, replacement by rename, symlinks and non-files refused, no temp
 * files left behind, the directory created when missing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cdi-internal.h"
#include "../tap.h"

static char base[] = "/tmp/test-cdi-write.XXXXXX";

static char *path_of(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
	return buf[i];
}

static bool file_is(const char *path, const char *want)
{
	_cleanup_free_ char *buf = NULL;
	size_t len;

	if (read_full_file_at(AT_FDCWD, path, 1 << 20, true, &buf, &len) < 0)
		return false;
	return len == strlen(want) && memcmp(buf, want, len) == 0;
}

/* Entries of dir other than . and .., as a count; names starting with '.' counted apart. */
static void count_entries(const char *dir, int *ret_all, int *ret_hidden)
{
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;

	*ret_all = *ret_hidden = 0;
	while (d && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		(*ret_all)++;
		if (de->d_name[0] == '.')
			(*ret_hidden)++;
	}
}

static void rm_rf(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", path);
}

static void test_new_and_unchanged(void)
{
	_cleanup_free_ char *dir = strdup(path_of("specs"));
	struct stat st1 = {}, st2 = {}, st3 = {};
	int all, hidden, r;
	mode_t old_umask;

	old_umask = umask(077);
	r = cdi_write_file_atomic(dir, "a.json", "one\n", 4);
	umask(old_umask);
	ok(r == CDI_WRITE_UPDATED, "new file: UPDATED (%d)", r);
	r = stat(path_of("specs/a.json"), &st1);
	ok(r == 0 && (st1.st_mode & 07777) == 0644, "new file has mode 0644 under umask 077 (%o)",
	   st1.st_mode & 07777);
	ok(file_is(path_of("specs/a.json"), "one\n"), "new file has the content");
	r = stat(dir, &st2);
	ok(r == 0 && S_ISDIR(st2.st_mode) && (st2.st_mode & 07777) == 0755,
	   "missing dir created with mode 0755 under umask 077 (%o)", st2.st_mode & 07777);
	count_entries(dir, &all, &hidden);
	ok(all == 1 && hidden == 0, "no temp file left (%d entries)", all);

	/* Same bytes again: nothing touched, not even the timestamps. */
	r = cdi_write_file_atomic(dir, "a.json", "one\n", 4);
	ok(r == CDI_WRITE_UNCHANGED, "same content: UNCHANGED (%d)", r);
	ok(stat(path_of("specs/a.json"), &st2) == 0 && st2.st_ino == st1.st_ino &&
	       st2.st_mtim.tv_sec == st1.st_mtim.tv_sec &&
	       st2.st_mtim.tv_nsec == st1.st_mtim.tv_nsec &&
	       st2.st_ctim.tv_nsec == st1.st_ctim.tv_nsec,
	   "unchanged file keeps inode, mtime and ctime");

	/* New content: a new inode renamed over the old one. */
	r = cdi_write_file_atomic(dir, "a.json", "two\n", 4);
	ok(r == CDI_WRITE_UPDATED, "changed content: UPDATED (%d)", r);
	ok(stat(path_of("specs/a.json"), &st3) == 0 && st3.st_ino != st1.st_ino,
	   "changed file is a new inode");
	ok(file_is(path_of("specs/a.json"), "two\n"), "changed file has the new content");

	/* Same content but a wrong mode: rewritten, so the result is 0644. */
	ok(chmod(path_of("specs/a.json"), 0600) == 0, "chmod 0600");
	r = cdi_write_file_atomic(dir, "a.json", "two\n", 4);
	ok(r == CDI_WRITE_UPDATED && stat(path_of("specs/a.json"), &st1) == 0 &&
	       (st1.st_mode & 07777) == 0644,
	   "same content with mode 0600: rewritten as 0644 (%d)", r);

	/* Same length, different bytes. */
	r = cdi_write_file_atomic(dir, "a.json", "owt\n", 4);
	ok(r == CDI_WRITE_UPDATED && file_is(path_of("specs/a.json"), "owt\n"),
	   "same length, other bytes: UPDATED");

	/* Empty content is a valid file. */
	r = cdi_write_file_atomic(dir, "empty.json", "", 0);
	ok(r == CDI_WRITE_UPDATED && file_is(path_of("specs/empty.json"), ""),
	   "empty file written");
	r = cdi_write_file_atomic(dir, "empty.json", NULL, 0);
	ok(r == CDI_WRITE_UNCHANGED, "empty again: UNCHANGED (%d)", r);
	count_entries(dir, &all, &hidden);
	ok(all == 2 && hidden == 0, "still no temp files (%d entries)", all);
}

static void test_refusals(void)
{
	_cleanup_free_ char *dir = strdup(path_of("refuse"));
	struct stat st;
	int all, hidden, r;

	ok(mkdir(dir, 0755) == 0, "mkdir refuse");
	ok(cdi_write_file_atomic(dir, "victim", "secret\n", 7) == CDI_WRITE_UPDATED,
	   "victim written");
	ok(symlink("victim", path_of("refuse/link.json")) == 0, "symlink link.json -> victim");
	r = cdi_write_file_atomic(dir, "link.json", "evil\n", 5);
	ok(r == -ELOOP, "target is a symlink: -ELOOP (%d)", r);
	ok(file_is(path_of("refuse/victim"), "secret\n"), "symlink target untouched");
	ok(lstat(path_of("refuse/link.json"), &st) == 0 && S_ISLNK(st.st_mode),
	   "symlink itself still there");

	ok(symlink("/nonexistent/x", path_of("refuse/dangling.json")) == 0, "dangling symlink");
	r = cdi_write_file_atomic(dir, "dangling.json", "x", 1);
	ok(r == -ELOOP, "target is a dangling symlink: -ELOOP (%d)", r);
	ok(access("/nonexistent/x", F_OK) < 0, "nothing created through the dangling link");

	ok(mkdir(path_of("refuse/sub.json"), 0755) == 0, "mkdir sub.json");
	r = cdi_write_file_atomic(dir, "sub.json", "x", 1);
	ok(r == -EEXIST, "target is a directory: -EEXIST (%d)", r);
	ok(mkfifo(path_of("refuse/fifo.json"), 0644) == 0, "mkfifo fifo.json");
	r = cdi_write_file_atomic(dir, "fifo.json", "x", 1);
	ok(r == -EEXIST, "target is a FIFO: -EEXIST (%d)", r);

	count_entries(dir, &all, &hidden);
	ok(all == 5 && hidden == 0, "refusals leave no temp file (%d entries, %d hidden)", all,
	   hidden);

	/* The directory itself must not be a symlink either. */
	ok(symlink("refuse", path_of("dirlink")) == 0, "symlink dirlink -> refuse");
	r = cdi_write_file_atomic(path_of("dirlink"), "new.json", "x", 1);
	ok(r == -ELOOP || r == -ENOTDIR, "spec dir is a symlink: refused (%d)", r);
	ok(access(path_of("refuse/new.json"), F_OK) < 0, "nothing written through the dir link");

	/* Bad arguments. */
	ok(cdi_write_file_atomic(dir, "a/b.json", "x", 1) == -EINVAL, "name with '/' refused");
	ok(cdi_write_file_atomic(dir, "..", "x", 1) == -EINVAL, "name '..' refused");
	ok(cdi_write_file_atomic(dir, "", "x", 1) == -EINVAL, "empty name refused");
	ok(cdi_write_file_atomic("", "a.json", "x", 1) == -EINVAL, "empty dir refused");
	ok(cdi_write_file_atomic(dir, "a.json", NULL, 1) == -EINVAL,
	   "NULL buffer with length refused");
}

static void test_failure_cleanup(void)
{
	static char big[8192];
	_cleanup_free_ char *dir = strdup(path_of("ro"));
	struct rlimit old_lim, lim = {.rlim_cur = 1024};
	int all, hidden, r;

	ok(mkdir(dir, 0755) == 0, "mkdir ro");
	ok(cdi_write_file_atomic(dir, "keep.json", "old\n", 4) == CDI_WRITE_UPDATED,
	   "keep.json written");

	/* A write that fails half-way (file size limit, which binds root too): the temp
	 * file goes away and the old file stays as it was. */
	memset(big, 'b', sizeof(big));
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old_lim);
	lim.rlim_max = old_lim.rlim_max;
	setrlimit(RLIMIT_FSIZE, &lim);
	r = cdi_write_file_atomic(dir, "keep.json", big, sizeof(big));
	setrlimit(RLIMIT_FSIZE, &old_lim);
	ok(r == -EFBIG, "write failing half-way: -EFBIG (%d)", r);
	count_entries(dir, &all, &hidden);
	ok(all == 1 && hidden == 0 && file_is(path_of("ro/keep.json"), "old\n"),
	   "failed write: temp file removed, old file intact (%d entries)", all);
	/* A parent that is a file: creating the dir fails cleanly. */
	r = cdi_write_file_atomic(path_of("ro/keep.json/sub"), "x.json", "x", 1);
	ok(r == -ENOTDIR, "dir under a regular file: -ENOTDIR (%d)", r);
	/* mkdir -p of several levels. */
	r = cdi_write_file_atomic(path_of("deep/er/still/"), "x.json", "x", 1);
	ok(r == CDI_WRITE_UPDATED && file_is(path_of("deep/er/still/x.json"), "x"),
	   "several missing levels created (%d)", r);
	count_entries(dir, &all, &hidden);
	ok(all == 1 && file_is(path_of("ro/keep.json"), "old\n"), "old file intact");
}

/* The caller judged one file (ours) or no file; anything else in its place is left alone. */
static void test_expect(void)
{
	_cleanup_free_ char *dir = strdup(path_of("expect"));
	struct stat judged, absent = {}, now;
	int all, hidden, r;

	ok(mkdir(dir, 0755) == 0, "mkdir expect");
	ok(cdi_write_file_atomic(dir, "ours.json", "ours\n", 5) == CDI_WRITE_UPDATED,
	   "ours.json written");
	ok(stat(path_of("expect/ours.json"), &judged) == 0, "stat ours.json");
	r = cdi_write_file_atomic_expect(dir, "ours.json", "new\n", 4, &judged);
	ok(r == CDI_WRITE_UPDATED && file_is(path_of("expect/ours.json"), "new\n"),
	   "the judged file is replaced (%d)", r);

	/* Swapped for someone else's file after we judged the old one. */
	ok(stat(path_of("expect/ours.json"), &judged) == 0, "stat the new ours.json");
	ok(rename(path_of("expect/ours.json"), path_of("expect/old")) == 0 &&
	       cdi_write_file_atomic(dir, "ours.json", "theirs\n", 7) == CDI_WRITE_UPDATED,
	   "ours.json swapped for a foreign file");
	r = cdi_write_file_atomic_expect(dir, "ours.json", "new2\n", 5, &judged);
	ok(r == -EEXIST && file_is(path_of("expect/ours.json"), "theirs\n"),
	   "a file swapped in since is refused and untouched (%d)", r);

	/* Judged absent, but a file appeared. */
	r = cdi_write_file_atomic_expect(dir, "ours.json", "new3\n", 5, &absent);
	ok(r == -EEXIST && file_is(path_of("expect/ours.json"), "theirs\n"),
	   "a file that appeared since is refused and untouched (%d)", r);
	r = cdi_write_file_atomic_expect(dir, "fresh.json", "f\n", 2, &absent);
	ok(r == CDI_WRITE_UPDATED && stat(path_of("expect/fresh.json"), &now) == 0,
	   "still absent: written (%d)", r);
	count_entries(dir, &all, &hidden);
	ok(all == 3 && hidden == 0, "no temp file left (%d entries, %d hidden)", all, hidden);
}

int main(void)
{
	if (!mkdtemp(base)) {
		printf("Bail out! mkdtemp: %m\n");
		return 1;
	}
	test_new_and_unchanged();
	test_refusals();
	test_failure_cleanup();
	test_expect();
	rm_rf(base);
	return tap_done();
}
