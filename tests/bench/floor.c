/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The floor for the generate benchmark: the least any sysfs discovery must do. It only
 * lists the class directories and opens, reads and closes the attribute files (and reads
 * the links) that a device model needs, with dirfd-relative paths and no checking,
 * parsing or output. Whatever rdma-cdi spends beyond this is its own overhead.
 *
 * Usage: sysfs-floor SYSFS_ROOT   (prints the number of devices and bytes read)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long bytes;

static void rd(int dirfd, const char *path)
{
	char buf[256];
	ssize_t n;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	if (n > 0)
		bytes += n;
	close(fd);
}

static void rl(int dirfd, const char *path)
{
	char buf[4096];
	ssize_t n = readlinkat(dirfd, path, buf, sizeof(buf));

	if (n > 0)
		bytes += n;
}

static DIR *opendir_at(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
	return d;
}

static int skip(const char *name)
{
	return name[0] == '.';
}

static void ports(int devfd)
{
	DIR *d = opendir_at(devfd, "ports");
	struct dirent *de;
	char p[300];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (skip(de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/state", de->d_name);
		rd(dirfd(d), p);
		snprintf(p, sizeof(p), "%s/phys_state", de->d_name);
		rd(dirfd(d), p);
		snprintf(p, sizeof(p), "%s/link_layer", de->d_name);
		rd(dirfd(d), p);
		snprintf(p, sizeof(p), "%s/rate", de->d_name);
		rd(dirfd(d), p);
		snprintf(p, sizeof(p), "%s/gid_attrs/ndevs/0", de->d_name);
		rd(dirfd(d), p);
	}
	closedir(d);
}

/* Reads the listed attributes of every entry of a class directory. */
static void class_attrs(int root, const char *cls, const char *const *attrs)
{
	DIR *d = opendir_at(root, cls);
	struct dirent *de;
	char p[300];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (skip(de->d_name) || !strcmp(de->d_name, "abi_version"))
			continue;
		for (const char *const *a = attrs; *a; a++) {
			snprintf(p, sizeof(p), "%s/%s", de->d_name, *a);
			rd(dirfd(d), p);
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	static const char *const verbs[] = {"ibdev", "dev", NULL};
	static const char *const mad[] = {"ibdev", "port", "dev", NULL};
	struct dirent *de;
	int root, n = 0;
	DIR *d;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SYSFS_ROOT\n", argv[0]);
		return 2;
	}
	root = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		perror(argv[1]);
		return 1;
	}
	d = opendir_at(root, "class/infiniband");
	while (d && (de = readdir(d))) {
		int devfd, pcifd;

		if (skip(de->d_name))
			continue;
		rl(dirfd(d), de->d_name);
		devfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (devfd < 0)
			continue;
		n++;
		rl(devfd, "device");
		pcifd = openat(devfd, "device", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (pcifd >= 0) {
			rd(pcifd, "vendor");
			rd(pcifd, "device");
			rd(pcifd, "numa_node");
			rl(pcifd, "driver");
			rl(pcifd, "physfn");
			close(pcifd);
		}
		rd(devfd, "node_guid");
		rd(devfd, "fw_ver");
		ports(devfd);
		close(devfd);
	}
	if (d)
		closedir(d);
	class_attrs(root, "class/infiniband_verbs", verbs);
	class_attrs(root, "class/infiniband_mad", mad);
	close(root);
	printf("%d devices, %ld bytes\n", n, bytes);
	return 0;
}
