/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi_write_file_atomic in a private temp dir: modes whatever the umask, unchanged
 * content untouched, replacement by rename, symlinks and non-files refused, no temp
 * files left behind, the directory created when missing; the sweep of temp files that a
 * killed writer left (only those), also while writers in other processes are in flight.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

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

static void plant(const char *rel, const char *content)
{
	FILE *f = fopen(path_of(rel), "we");

	if (f) {
		fputs(content, f);
		fclose(f);
	}
}

/* What a writer SIGKILLed between its create and its rename leaves, and look-alikes that
 * are not ours to remove. */
static void test_stale_temps(void)
{
	static const char *kept[] = {
	    ".s.json.LINKED",  ".s.json.NOBODY", ".s.json.LOCKED",     ".s.json.subdir",
	    ".s.json.ABCDEFG", ".s.json.AB-DEF", ".other.json.abcdef", ".s.yaml.abcdef",
	    "s.json.abcdef",   ".s.json.fifo00",
	};
	_cleanup_free_ char *dir = strdup(path_of("stale"));
	_cleanup_close_ int held = -1;
	struct stat st;
	bool all_kept = true;
	int all, hidden, r;

	ok(mkdir(dir, 0755) == 0, "mkdir stale");
	ok(cdi_remove_stale_temps(path_of("nonexistent"), "s.json") == 0, "no dir: nothing to do");
	ok(cdi_remove_stale_temps(dir, "a/b") == -EINVAL, "a bad name is refused");
	plant("stale/s.json", "spec\n");
	plant("stale/.s.json.dead01", "half a spec");
	plant("stale/.s.json.DEAD02", "");
	plant("stale/victim", "not a temp\n");
	ok(symlink("victim", path_of("stale/.s.json.LINKED")) == 0, "symlink named like a temp");
	plant("stale/.s.json.NOBODY", "x");
	ok(chown(path_of("stale/.s.json.NOBODY"), 65534, 65534) == 0, "temp of another user");
	plant("stale/.s.json.LOCKED", "in flight");
	held = open(path_of("stale/.s.json.LOCKED"), O_RDONLY | O_CLOEXEC);
	ok(held >= 0 && flock(held, LOCK_EX) == 0, "a temp locked by a live writer");
	ok(mkdir(path_of("stale/.s.json.subdir"), 0755) == 0, "directory named like a temp");
	ok(mkfifo(path_of("stale/.s.json.fifo00"), 0644) == 0, "FIFO named like a temp");
	for (size_t i = 4; i < 9; i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "stale/%s", kept[i]);
		plant(rel, "look-alike");
	}

	r = cdi_remove_stale_temps(dir, "s.json");
	ok(r == 2, "the two dead writers' temps are removed (%d)", r);
	ok(lstat(path_of("stale/.s.json.dead01"), &st) < 0 &&
	       lstat(path_of("stale/.s.json.DEAD02"), &st) < 0,
	   "and are gone");
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "stale/%s", kept[i]);
		if (lstat(path_of(rel), &st) < 0) {
			printf("# %s was removed\n", kept[i]);
			all_kept = false;
		}
	}
	ok(all_kept, "symlink, other owner, locked, directory, FIFO, other names: all kept");
	ok(file_is(path_of("stale/victim"), "not a temp\n") &&
	       file_is(path_of("stale/s.json"), "spec\n"),
	   "the symlink's target and the spec are untouched");
	ok(cdi_remove_stale_temps(dir, "s.json") == 0, "a second sweep finds nothing");
	close(TAKE_FD(held));
	r = cdi_remove_stale_temps(dir, "s.json");
	ok(r == 1 && lstat(path_of("stale/.s.json.LOCKED"), &st) < 0,
	   "once its writer is gone, the unlocked temp goes too (%d)", r);
	count_entries(dir, &all, &hidden);
	ok(all == 11 && hidden == 8, "the rest stays (%d entries, %d hidden)", all, hidden);
}

#define RACE_WRITERS 4
#define RACE_WRITES 400

/* Writers in other processes and a sweeper at full speed: every write succeeds and the
 * sweeper never takes a temp, because every temp here belongs to a live writer. */
static void test_sweep_vs_writers(void)
{
	_cleanup_free_ char *dir = strdup(path_of("race"));
	pid_t pids[RACE_WRITERS];
	int sweeper[2], failed = 0, removed = 0, sweeps = 0, all, hidden;
	pid_t sp;

	ok(mkdir(dir, 0755) == 0 && pipe(sweeper) == 0, "mkdir race");
	for (int w = 0; w < RACE_WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			int bad = 0;

			for (int i = 0; i < RACE_WRITES; i++) {
				char buf[32];
				int len = snprintf(buf, sizeof(buf), "writer %d write %d\n", w, i);

				if (cdi_write_file_atomic(dir, "s.json", buf, (size_t)len) < 0)
					bad++;
			}
			_exit(bad > 255 ? 255 : bad);
		}
	}
	sp = fork();
	if (sp == 0) {
		int n = 0, sweeps_done = 0;

		close(sweeper[0]);
		for (;;) {
			int r = cdi_remove_stale_temps(dir, "s.json");
			bool writers_left = false;

			n += r > 0 ? r : 0;
			sweeps_done++;
			/* The parent reaps the writers before it reads us. */
			for (int w = 0; w < RACE_WRITERS; w++)
				writers_left |= kill(pids[w], 0) == 0;
			if (!writers_left)
				break;
		}
		dprintf(sweeper[1], "%d %d", n, sweeps_done);
		_exit(0);
	}
	close(sweeper[1]);
	for (int w = 0; w < RACE_WRITERS; w++) {
		int status;

		if (waitpid(pids[w], &status, 0) != pids[w] || !WIFEXITED(status))
			failed += RACE_WRITES;
		else
			failed += WEXITSTATUS(status);
	}
	{
		char buf[64] = "";
		int status;

		if (read(sweeper[0], buf, sizeof(buf) - 1) < 0 ||
		    sscanf(buf, "%d %d", &removed, &sweeps) != 2)
			removed = -1;
		close(sweeper[0]);
		waitpid(sp, &status, 0);
	}
	ok(failed == 0, "%d writes from %d processes beside a sweeper: %d failed",
	   RACE_WRITERS * RACE_WRITES, RACE_WRITERS, failed);
	/* With O_TMPFILE a temp is locked before it has a name: no sweep can take it. Without
	 * (no /proc: the named fallback) one may go in the instant before its lock, and its
	 * writer makes another: then only the writes above must all have succeeded. */
	if (access("/proc/self/fd", X_OK) == 0)
		ok(removed == 0 && sweeps > 0, "%d sweeps removed %d temps of live writers", sweeps,
		   removed);
	else
		ok(removed >= 0 && sweeps > 0,
		   "without /proc (named temps): %d sweeps took %d temps before their lock, every "
		   "write still succeeded",
		   sweeps, removed);
	count_entries(dir, &all, &hidden);
	ok(all == 1 && hidden == 0, "one spec, no temp left (%d entries, %d hidden)", all, hidden);
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
	test_stale_temps();
	test_sweep_vs_writers();
	rm_rf(base);
	return tap_done();
}
