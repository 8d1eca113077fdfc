/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Atomic replacement under a reader: 10,000 rewrites of the spec file between two node
 * states while another process opens, reads and parses it continuously (as a runtime's
 * CDI cache does). Every read must be a complete, valid spec of one of the two states:
 * 0 partial or invalid reads, and no temporary file left behind.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "specs.h"
#include "tap.h"

#define REWRITES 10000

/* A spec with n devices named d0..d(n-1): enough to tell the two states apart. */
static cJSON *make_spec(int n)
{
	cJSON *spec = cJSON_CreateObject(), *devs, *hooks, *h, *args;

	cJSON_AddStringToObject(spec, "cdiVersion", "0.5.0");
	cJSON_AddStringToObject(spec, "kind", SPEC_DEFAULT_KIND);
	devs = cJSON_AddArrayToObject(spec, "devices");
	for (int i = 0; i < n; i++) {
		cJSON *d = cJSON_CreateObject(), *e = cJSON_CreateObject(), *nodes, *node;
		char name[16], path[64];

		snprintf(name, sizeof(name), "d%d", i);
		snprintf(path, sizeof(path), "/dev/infiniband/uverbs%d", i);
		cJSON_AddStringToObject(d, "name", name);
		nodes = cJSON_AddArrayToObject(e, "deviceNodes");
		node = cJSON_CreateObject();
		cJSON_AddStringToObject(node, "path", path);
		cJSON_AddItemToArray(nodes, node);
		cJSON_AddItemToObject(d, "containerEdits", e);
		cJSON_AddItemToArray(devs, d);
	}
	/* The spec-level hook with args[0] "rdma-cdi-hook" is what makes the file ours. */
	h = cJSON_CreateObject();
	cJSON_AddStringToObject(h, "hookName", "createRuntime");
	cJSON_AddStringToObject(h, "path", "/usr/libexec/rdma-cdi/rdma-cdi-hook");
	args = cJSON_AddArrayToObject(h, "args");
	cJSON_AddItemToArray(args, cJSON_CreateString(SPEC_HOOK_ARG0));
	hooks = cJSON_CreateArray();
	cJSON_AddItemToArray(hooks, h);
	{
		cJSON *edits = cJSON_CreateObject();

		cJSON_AddItemToObject(edits, "hooks", hooks);
		cJSON_AddItemToObject(spec, "containerEdits", edits);
	}
	return spec;
}

/* The reader: counts good and bad reads until *stop. */
static void reader(const char *path, volatile int *stop, long *counts)
{
	while (!*stop) {
		_cleanup_free_ char *buf = NULL;
		cJSON *spec = NULL;
		size_t len = 0;
		int n;

		if (read_full_file_at(AT_FDCWD, path, 1 << 20, true, &buf, &len) < 0) {
			counts[2]++; /* between states no file is never expected: counted apart */
			continue;
		}
		if (cdi_spec_parse(buf, len, CDI_FORMAT_JSON, &spec, NULL) < 0) {
			counts[1]++;
			continue;
		}
		n = cJSON_GetArraySize(cJSON_GetObjectItem(spec, "devices"));
		counts[n == 3 || n == 40 ? 0 : 1]++;
		cJSON_Delete(spec);
	}
}

int main(void)
{
	char dir[] = "/dev/shm/rdma-cdi-rewrite-XXXXXX"; /* tmpfs: fsync is cheap */
	_cleanup_free_ char *path = NULL;
	cJSON *a, *b;
	long *counts;
	volatile int *stop;
	int failures = 0, leftovers = 0;
	pid_t pid;
	DIR *d;
	struct dirent *de;

	if (!mkdtemp(dir))
		return 1;
	a = make_spec(3);
	b = make_spec(40);
	path = strdup_printf("%s/%s", dir, "rdma.example-hca.json");
	/* Shared with the reader: its counts and the stop flag. */
	counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ok(counts != MAP_FAILED, "shared counters");
	stop = (volatile int *)(counts + 8);
	ok(spec_write(a, &(struct spec_write_options){.spec_dir = dir}, NULL, NULL, NULL) == 0,
	   "first write");
	pid = fork();
	if (pid == 0) {
		reader(path, stop, counts);
		_exit(0);
	}
	for (int i = 0; i < REWRITES; i++) {
		_cleanup_rc_error_ struct rc_error *err = NULL;
		int r = spec_write(i % 2 ? a : b, &(struct spec_write_options){.spec_dir = dir},
				   NULL, NULL, &err);

		if (r < 0 && failures++ == 0)
			printf("# rewrite %d failed: %s\n", i, rc_error_msg(err, r));
	}
	*stop = 1;
	waitpid(pid, NULL, 0);
	EQ_INT(failures, 0, "10,000 rewrites between two states: every one succeeded");
	ok(counts[0] > 1000, "the reader parsed the file %ld times meanwhile", counts[0]);
	EQ_INT(counts[1], 0, "no partial or invalid read");
	EQ_INT(counts[2], 0, "the file never vanished (rename over it, never unlink first)");
	d = opendir(dir);
	while (d && (de = readdir(d)))
		leftovers += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
			     strcmp(de->d_name, "rdma.example-hca.json") != 0;
	if (d)
		closedir(d);
	EQ_INT(leftovers, 0, "no temporary file left");
	cJSON_Delete(a);
	cJSON_Delete(b);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
