/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sysfs readers (discovery.h, "reading sysfs") on a tree made here, with openat2 and
 * with the user-space walk: links resolve inside the root whatever they say, attributes
 * are read without their newline, and what is no regular file is refused without
 * blocking.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "discovery.h"

static char root[] = "/tmp/rdma-cdi-test-sysfs-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

static void make_tree(void)
{
	char path[512];
	static const char *const dirs[] = {"devices", "devices/a", "class", "etc"};

	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp\n");
		exit(1);
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(*dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		mkdir(path, 0755);
	}
	put("devices/a/vendor", "0x15b3\n");
	put("etc/secret", "inside the root\n");
	snprintf(path, sizeof(path), "%s/devices/a/fifo", root);
	mkfifo(path, 0600);
	/* Relative, absolute and escaping targets: all resolve inside the root. */
	snprintf(path, sizeof(path), "%s/class/rel", root);
	symlink("../devices/a", path);
	snprintf(path, sizeof(path), "%s/class/abs", root);
	symlink("/devices/a", path);
	snprintf(path, sizeof(path), "%s/class/up", root);
	symlink("../../../../../etc", path);
	snprintf(path, sizeof(path), "%s/devices/a/link", root);
	symlink("vendor", path);
}

static void check(bool use_openat2)
{
	const char *how = use_openat2 ? "openat2" : "walk";
	struct disc_sysfs sys;
	char buf[64];
	int dirfd;

	if (!ok(disc_sysfs_open(root, use_openat2, &sys) == 0, "%s: root opens", how))
		return;
	ok(use_openat2 || !sys.openat2, "%s: the walk is used when asked", how);
	EQ_INT(disc_sysfs_read_in_root(&sys, "class/rel/vendor", buf, sizeof(buf)), 6,
	       "relative link: the attribute's length");
	EQ_STR(buf, "0x15b3", "the newline is stripped");
	ok(disc_sysfs_read_in_root(&sys, "class/abs/vendor", buf, sizeof(buf)) == 6 &&
	       !strcmp(buf, "0x15b3"),
	   "%s: an absolute link restarts at the root", how);
	ok(disc_sysfs_read_in_root(&sys, "class/up/secret", buf, sizeof(buf)) > 0 &&
	       !strcmp(buf, "inside the root"),
	   "%s: \"..\" stops at the root", how);
	EQ_INT(disc_sysfs_read_in_root(&sys, "devices/a/fifo", buf, sizeof(buf)), -EBADFD,
	       "a FIFO is refused without blocking");
	EQ_INT(disc_sysfs_read_in_root(&sys, "devices/a/none", buf, sizeof(buf)), -ENOENT,
	       "a missing attribute is -ENOENT");
	EQ_INT(disc_sysfs_read_in_root(&sys, "class/rel/vendor", buf, 4), -EFBIG,
	       "an attribute longer than the buffer is -EFBIG");
	dirfd = disc_sysfs_open_in_root(&sys, "class/rel", O_PATH | O_DIRECTORY);
	ok(dirfd >= 0, "%s: a class link opens as a directory", how);
	EQ_INT(disc_sysfs_read_beneath(&sys, dirfd, "vendor", buf, sizeof(buf)), 6,
	       "an attribute below it reads");
	ok(disc_sysfs_read_beneath(&sys, dirfd, "link", buf, sizeof(buf)) < 0,
	   "%s: no symlink is followed below a resolved directory", how);
	ok(disc_sysfs_read_beneath(&sys, dirfd, "../a/vendor", buf, sizeof(buf)) < 0,
	   "%s: no \"..\" below a resolved directory", how);
	EQ_INT(disc_sysfs_read_link(dirfd, "link", buf, sizeof(buf)), 6, "a link's target");
	EQ_STR(buf, "vendor", "read as it is");
	if (dirfd >= 0)
		close(dirfd);
	disc_sysfs_close(&sys);
	EQ_INT(sys.root_fd, -1, "closed");
}

static void check_list(void)
{
	struct disc_sysfs sys;
	struct disc_names l = {};
	int fd;

	if (disc_sysfs_open(root, true, &sys) < 0)
		return;
	fd = disc_sysfs_open_in_root(&sys, "class", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	EQ_INT(disc_sysfs_list_dir(fd, NULL, 10, &l), 0, "list: everything fits");
	ok(l.n == 3 && !strcmp(l.v[0], "abs") && !strcmp(l.v[1], "rel") && !strcmp(l.v[2], "up"),
	   "list: every name but . and .., sorted (%zu)", l.n);
	disc_names_clear(&l);
	fd = disc_sysfs_open_in_root(&sys, "class", O_RDONLY | O_DIRECTORY | O_NONBLOCK);
	EQ_INT(disc_sysfs_list_dir(fd, NULL, 2, &l), 1, "list: how many did not fit");
	EQ_INT((int)l.n, 2, "list: the bound is kept");
	disc_names_clear(&l);
	disc_sysfs_close(&sys);
}

int main(void)
{
	char cmd[600];

	make_tree();
	check(true);
	check(false);
	check_list();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", root);
	return tap_done();
}
