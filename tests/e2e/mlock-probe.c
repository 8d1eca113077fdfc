/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mlock-probe: runs inside a test container (statically linked, no libc in the rootfs
 * needed) and reports, one "key value" line each, what an RDMA application would meet:
 *
 *   node /dev/infiniband/uverbs3 c 231:195     (or "node PATH absent" / "... other")
 *   dir /dev/infiniband rdma_cm uverbs3       (sorted entries, or "dir PATH absent")
 *   memlock_soft 8388608                       ("unlimited" for RLIM_INFINITY)
 *   memlock_hard 8388608
 *   capeff 0000000000000000                    (CapEff from /proc/self/status)
 *   mlock ok                                   (or "mlock failed <errno name>")
 *
 * Arguments are the node paths to report. The test, not the probe, decides what is right.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define MLOCK_SIZE (4u << 20)

static void print_node(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		printf("node %s absent\n", path);
	else if (S_ISCHR(st.st_mode))
		printf("node %s c %u:%u\n", path, major(st.st_rdev), minor(st.st_rdev));
	else
		printf("node %s other\n", path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_dir(const char *path)
{
	char *names[256];
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(path);

	if (!d) {
		printf("dir %s absent\n", path);
		return;
	}
	while ((de = readdir(d)) && n < 256) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		names[n] = strdup(de->d_name);
		if (!names[n])
			exit(2);
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	printf("dir %s", path);
	for (size_t i = 0; i < n; i++) {
		printf(" %s", names[i]);
		free(names[i]);
	}
	printf("\n");
}

static void print_limit(const char *key, rlim_t v)
{
	if (v == RLIM_INFINITY)
		printf("%s unlimited\n", key);
	else
		printf("%s %llu\n", key, (unsigned long long)v);
}

static void print_capeff(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f) {
		printf("capeff unknown\n");
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0) {
			printf("capeff %s", line + 7 + strspn(line + 7, " \t"));
			fclose(f);
			return;
		}
	fclose(f);
	printf("capeff unknown\n");
}

static void print_mlock(void)
{
	void *p =
	    mmap(NULL, MLOCK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		printf("mlock failed mmap-%s\n", strerrorname_np(errno));
		return;
	}
	if (mlock(p, MLOCK_SIZE) < 0)
		printf("mlock failed %s\n", strerrorname_np(errno));
	else
		printf("mlock ok\n");
	munmap(p, MLOCK_SIZE);
}

int main(int argc, char **argv)
{
	struct rlimit rl;

	for (int i = 1; i < argc; i++)
		print_node(argv[i]);
	print_dir("/dev/infiniband");
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		printf("memlock_soft unknown\nmemlock_hard unknown\n");
	} else {
		print_limit("memlock_soft", rl.rlim_cur);
		print_limit("memlock_hard", rl.rlim_max);
	}
	print_capeff();
	print_mlock();
	return 0;
}
