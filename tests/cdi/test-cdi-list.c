/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdi_list_dirs over two spec directories built in a temp dir: what runtimes read and
 * skip, invalid files flagged with a reason, conflicts within one directory reported,
 * the same name across directories not a conflict.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "cdi-internal.h"
#include "../tap.h"

static char base[] = "/tmp/test-cdi-list.XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
		printf("# cannot write %s\n", path);
}

static char *in_base(const char *rel)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
	return buf[i];
}

#define JSPEC(kind, names_json)                                                                    \
	"{\"cdiVersion\":\"0.5.0\",\"kind\":\"" kind "\",\"devices\":[" names_json "]}"
#define JDEV(name) "{\"name\":\"" name "\",\"containerEdits\":{\"env\":[\"A=1\"]}}"

static const struct cdi_list_entry *find(const struct cdi_listing *l, const char *dir_rel,
					 const char *file)
{
	for (size_t i = 0; i < l->n_entries; i++)
		if (strcmp(l->entries[i].dir, in_base(dir_rel)) == 0 &&
		    strcmp(l->entries[i].file, file) == 0)
			return &l->entries[i];
	return NULL;
}

static bool has_conflict(const struct cdi_listing *l, const char *want)
{
	for (size_t i = 0; i < l->n_conflicts; i++)
		if (strcmp(l->conflicts[i], want) == 0)
			return true;
	return false;
}

static void rm_rf(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		printf("# cleanup of %s failed\n", path);
}

int main(void)
{
	struct cdi_listing *l = NULL;
	const struct cdi_list_entry *e;
	char want[1024];
	const char *dirs[4];
	int r;

	if (!mkdtemp(base)) {
		printf("Bail out! mkdtemp: %m\n");
		return 1;
	}
	mkdir(in_base("etc"), 0755);
	mkdir(in_base("run"), 0755);
	mkdir(in_base("etc/sub.json"), 0755);

	/* /etc/cdi-like dir */
	put("etc/rdma.example-hca.json", JSPEC("rdma.example/hca", JDEV("mlx5_0") "," JDEV("0")));
	put("etc/other.yaml", "cdiVersion: \"0.5.0\"\nkind: other.example/xx\ndevices:\n"
			      "- name: \"0\"\n  containerEdits:\n    env: [\"A=1\"]\n");
	/* The same name as rdma.example-hca.json defines: a conflict in this dir. */
	put("etc/rdma.example-hca.yaml", "cdiVersion: \"0.5.0\"\nkind: rdma.example/hca\ndevices:\n"
					 "- name: mlx5_0\n  containerEdits:\n    env: [\"B=1\"]\n");
	put("etc/broken.json", "{\"cdiVersion\": \"0.5.0\",");
	put("etc/invalid.json", JSPEC("rdma.example/hca", JDEV("-bad")));
	put("etc/ignored.yml", JSPEC("yml.example/x", JDEV("a")));
	put("etc/ignored.json.tmp", JSPEC("tmp.example/x", JDEV("a")));
	put("etc/.rdma.example-hca.json.AbC123", JSPEC("tmp.example/x", JDEV("a")));
	put("etc/sub.json/inner.json", JSPEC("sub.example/x", JDEV("a")));
	symlink("rdma.example-hca.json", in_base("etc/zlink.json"));
	symlink("/nonexistent", in_base("etc/zdangling.json"));
	symlink("sub.json", in_base("etc/zsubdir.json"));
	mkfifo(in_base("etc/zfifo.json"), 0644);
	/* A char device whose open() fails (no driver for major 240): looked at, never opened. */
	mknod(in_base("etc/zchardev.json"), S_IFCHR | 0600, makedev(240, 0));

	/* /var/run/cdi-like dir: the same name again, in another directory. */
	put("run/rdma.example-hca.json", JSPEC("rdma.example/hca", JDEV("mlx5_0") "," JDEV("all")));

	dirs[0] = in_base("etc");
	dirs[1] = in_base("missing");
	dirs[2] = in_base("run");
	dirs[3] = in_base("etc/rdma.example-hca.json"); /* not a directory: skipped */
	r = cdi_list_dirs(dirs, 4, &l);
	ok(r == 0 && l, "cdi_list_dirs succeeds (%d)", r);
	if (!l)
		return tap_done();

	for (size_t i = 0; i < l->n_entries; i++)
		printf("# %s/%s: %s %s\n", l->entries[i].dir, l->entries[i].file,
		       l->entries[i].kind ? l->entries[i].kind : "-",
		       l->entries[i].error ? l->entries[i].error : "ok");
	for (size_t i = 0; i < l->n_conflicts; i++)
		printf("# conflict: %s\n", l->conflicts[i]);

	/* Read: 5 regular files, 2 symlinks, a FIFO and a device node in etc; 1 file in run. */
	ok(l->n_entries == 10, "10 entries (%zu)", l->n_entries);
	for (size_t i = 1; i < l->n_entries; i++)
		if (strcmp(l->entries[i - 1].dir, l->entries[i].dir) == 0 &&
		    strcmp(l->entries[i - 1].file, l->entries[i].file) >= 0)
			ok(false, "entries sorted by name within a dir (%s, %s)",
			   l->entries[i - 1].file, l->entries[i].file);
	ok(strcmp(l->entries[0].dir, in_base("etc")) == 0 &&
	       strcmp(l->entries[l->n_entries - 1].dir, in_base("run")) == 0,
	   "directories in the order given");

	e = find(l, "etc", "rdma.example-hca.json");
	ok(e && !e->error && e->kind && strcmp(e->kind, "rdma.example/hca") == 0 &&
	       e->n_names == 2 && strcmp(e->names[0], "rdma.example/hca=mlx5_0") == 0 &&
	       strcmp(e->names[1], "rdma.example/hca=0") == 0,
	   "valid JSON file: kind and fully qualified names");
	e = find(l, "etc", "other.yaml");
	ok(e && !e->error && e->n_names == 1 && strcmp(e->names[0], "other.example/xx=0") == 0,
	   "valid YAML file read");
	e = find(l, "etc", "broken.json");
	ok(e && e->error && strcmp(e->error, "1:24: unexpected end of JSON") == 0 && !e->kind &&
	       e->n_names == 0,
	   "unparsable file flagged with line:column (%s)", e && e->error ? e->error : "-");
	e = find(l, "etc", "invalid.json");
	ok(e && e->error && strncmp(e->error, "devices[0].name:", 16) == 0 && !e->kind &&
	       e->n_names == 0 && !e->names,
	   "invalid file flagged with the field path (%s)", e && e->error ? e->error : "-");
	ok(!find(l, "etc", "ignored.yml"), ".yml ignored");
	ok(!find(l, "etc", "ignored.json.tmp"), "*.json.tmp ignored");
	ok(!find(l, "etc", ".rdma.example-hca.json.AbC123"), "our temp files ignored");
	ok(!find(l, "etc", "sub.json") && !find(l, "etc/sub.json", "inner.json"),
	   "subdirectory ignored and not descended into");
	ok(!find(l, "etc", "zsubdir.json"), "symlink to a directory ignored");
	e = find(l, "etc", "zlink.json");
	ok(e && !e->error && e->n_names == 2, "symlink to a regular file read, like runtimes do");
	e = find(l, "etc", "zdangling.json");
	ok(e && e->error && strstr(e->error, "cannot stat"), "dangling symlink flagged (%s)",
	   e && e->error ? e->error : "-");
	e = find(l, "etc", "zfifo.json");
	ok(e && e->error && strcmp(e->error, "not a regular file") == 0,
	   "FIFO flagged without blocking");
	e = find(l, "etc", "zchardev.json");
	ok(e && e->error && strcmp(e->error, "not a regular file") == 0,
	   "device node flagged without being opened (%s)", e && e->error ? e->error : "-");
	e = find(l, "run", "rdma.example-hca.json");
	ok(e && !e->error && e->n_names == 2, "second directory read");

	/* mlx5_0 is defined by three files in etc (json, yaml, and the symlink); 0 by one
	 * in etc (other.yaml has another kind); mlx5_0 in run is no conflict. */
	snprintf(want, sizeof(want),
		 "rdma.example/hca=mlx5_0 in %s: rdma.example-hca.json, rdma.example-hca.yaml, "
		 "zlink.json",
		 in_base("etc"));
	ok(has_conflict(l, want), "conflict within one directory reported: %s", want);
	snprintf(want, sizeof(want), "rdma.example/hca=0 in %s: rdma.example-hca.json, zlink.json",
		 in_base("etc"));
	ok(has_conflict(l, want), "second conflict reported: %s", want);
	ok(l->n_conflicts == 2, "no conflict across directories (%zu conflicts)", l->n_conflicts);
	cdi_listing_free(l);
	l = NULL;

	/* Only the run dir: no conflicts at all. */
	dirs[0] = in_base("run");
	r = cdi_list_dirs(dirs, 1, &l);
	ok(r == 0 && l->n_entries == 1 && l->n_conflicts == 0, "single clean dir: no conflicts");
	cdi_listing_free(l);
	l = NULL;

	/* Another name for a file not everyone may read (a symlink, a hard link): flagged,
	 * but its content is not quoted. The same bytes in a file of its own are. */
	mkdir(in_base("alias"), 0755);
	put("secret", "TOKEN-s3cr3t: x\n");
	put("public", "TOKEN-s3cr3t: x\n");
	put("alias/own.yaml", "TOKEN-s3cr3t: x\n");
	chmod(in_base("secret"), 0600);
	chmod(in_base("alias/own.yaml"), 0600);
	symlink("../secret", in_base("alias/link.yaml"));
	link(in_base("secret"), in_base("alias/hard.yaml"));
	symlink("../public", in_base("alias/open.yaml"));
	dirs[0] = in_base("alias");
	r = cdi_list_dirs(dirs, 1, &l);
	ok(r == 0 && l && l->n_entries == 4, "alias dir listed (%d)", r);
	for (size_t i = 0; l && i < l->n_entries; i++)
		printf("# %s: %s\n", l->entries[i].file,
		       l->entries[i].error ? l->entries[i].error : "ok");
	e = l ? find(l, "alias", "link.yaml") : NULL;
	ok(e && e->error && !strstr(e->error, "s3cr3t") && strstr(e->error, "not shown") &&
	       strstr(e->error, "symlink") && !e->kind,
	   "symlink to a 0600 file: invalid, its content not quoted");
	e = l ? find(l, "alias", "hard.yaml") : NULL;
	ok(e && e->error && !strstr(e->error, "s3cr3t") && strstr(e->error, "hard link"),
	   "hard link to a 0600 file: invalid, its content not quoted");
	e = l ? find(l, "alias", "own.yaml") : NULL;
	ok(e && e->error && strstr(e->error, "TOKEN-s3cr3t"),
	   "a 0600 spec of its own: the reason names the field");
	e = l ? find(l, "alias", "open.yaml") : NULL;
	ok(e && e->error && strstr(e->error, "TOKEN-s3cr3t"),
	   "symlink to a file anyone may read: the reason names the field");
	cdi_listing_free(l);
	l = NULL;

	/* An unreadable directory (not for root, who reads everything) and no dirs at all. */
	r = cdi_list_dirs(NULL, 0, &l);
	ok(r == 0 && l && l->n_entries == 0 && l->n_conflicts == 0,
	   "no directories: empty listing");
	cdi_listing_free(l);
	cdi_listing_free(NULL);

	rm_rf(base);
	return tap_done();
}
