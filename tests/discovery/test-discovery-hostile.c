/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disc_scan() on trees an attacker or a broken driver could leave: FIFOs where attributes
 * should be (the scan must not block), class links that loop, and files or class
 * directories the scan may not read (permission errors are reported, never "no devices").
 * Usage: test-discovery-hostile PYTHON3 MKSYSFS_PY TESTS_DATA_DIR (TAP on stdout).
 *
 * Permission errors as root: root passes every mode check through CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH, so the scan runs in a child that drops both from its effective set
 * (capset(2); uid stays 0, so the mode bits of the root-owned fixture apply). The child
 * sends what it found back through a pipe and the parent checks it.
 */
#include "fixture-util.h"

#include <linux/capability.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "discovery-internal.h"
#include "discovery.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define FN "devices/pci0000:3a/0000:3a:00.0/0000:3b:00."

/* Replaces the file root/rel with a FIFO nobody writes to. */
static void make_fifo(const char *root, const char *rel)
{
	char *p = at(root, rel);

	if (unlink(p) < 0 || mkfifo(p, 0644) < 0) {
		printf("Bail out! mkfifo %s: %s\n", p, strerror(errno));
		exit(1);
	}
	free(p);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- FIFOs -------------------------------------------------------------------------- */

static void test_fifos(void)
{
	char *sys = build_tree("sriov", NULL), *dev = make_devroot(sys, NULL);

	printf("# FIFOs in place of attributes: the scan neither blocks nor trusts them\n");
	make_fifo(sys, FN "0/infiniband/mlx5_0/ports/1/state");
	make_fifo(sys, FN "2/infiniband/mlx5_1/node_guid");
	make_fifo(sys, FN "3/infiniband_verbs/uverbs2/dev");
	make_fifo(sys, FN "4/numa_node");
	make_fifo(sys, FN "5/infiniband/mlx5_4/ports/1/gid_attrs/ndevs/0");
	make_fifo(sys, FN "5/infiniband_mad/umad4/port");
	{
		char *p = at(sys, "class/infiniband/fifo0");

		if (mkfifo(p, 0644) < 0)
			abort();
		free(p);
	}
	for (int use = 1; use >= 0; use--) {
		struct disc_options o = {.sysfs_root = sys, .dev_root = dev};
		struct disc_node *node = NULL;
		const struct disc_device *d;
		double t0 = now_s();
		int r;

		/* A blocking open would hang here: SIGALRM then kills the test, a failure. */
		alarm(5);
		r = disc_scan_with(&o, use, &node);
		alarm(0);
		ok(r == 0 && node, "scan with FIFOs returns (openat2 = %d)", use);
		ok(now_s() - t0 < 5, "... promptly (%.3f s)", now_s() - t0);
		if (!node)
			continue;
		EQ_INT(node->n_devices, 5, "the 5 devices are still there");
		d = disc_node_find(node, "mlx5_0");
		ok(d && d->n_ports == 1 && d->ports[0].state == -1 && !d->ports[0].state_name[0],
		   "mlx5_0: FIFO state -> unknown");
		ok(d && !disc_device_healthy(d), "mlx5_0: unknown state is not healthy");
		PROBLEM(node,
			"class/infiniband/mlx5_0/ports/1/state: not a regular file, ignoring");
		ok(!has_problem(node, "mlx5_0: port 1 state unreadable"),
		   "the FIFO is reported once, not also as 'unreadable'");
		d = disc_node_find(node, "mlx5_1");
		ok(d && !d->node_guid[0], "mlx5_1: FIFO node_guid -> none");
		PROBLEM(node, "class/infiniband/mlx5_1/node_guid: not a regular file, ignoring");
		d = disc_node_find(node, "mlx5_2");
		ok(d && !disc_device_usable(d), "mlx5_2: FIFO uverbs dev -> not usable");
		PROBLEM(node, "class/infiniband_verbs/uverbs2/dev: not a regular file, ignoring");
		d = disc_node_find(node, "mlx5_3");
		ok(d && d->numa_node == -1, "mlx5_3: FIFO numa_node -> none");
		PROBLEM(node,
			"class/infiniband/mlx5_3/device/numa_node: not a regular file, ignoring");
		d = disc_node_find(node, "mlx5_4");
		ok(d && d->n_ports == 1 && !strcmp(d->ports[0].netdev, "enp59s0f0v3"),
		   "mlx5_4: FIFO GID netdev -> the function's net/");
		ok(d && !d->ports[0].has_umad, "mlx5_4: umad4 with a FIFO port dropped");
		PROBLEM(node, "class/infiniband_mad/umad4/port: not a regular file, ignoring");
		ok(!disc_node_find(node, "fifo0"), "a FIFO class entry is no device");
		PROBLEM(node, "fifo0: class/infiniband entry is not a directory, ignoring");
		disc_node_free(node);
	}
	rm_rf(dev);
	free(dev);
	rm_rf(sys);
	free(sys);
}

/* ---- blank numbers ------------------------------------------------------------------ */

/* Found by tests/fuzz/fuzz-attr: a numa_node of blanks and newlines parsed as node 0. */
static void test_blank_numbers(void)
{
	char *sys = build_tree("sriov", NULL), *p = at(sys, FN "4/numa_node");
	struct disc_options o = {.sysfs_root = sys, .dev_root = "/nonexistent"};
	struct disc_node *node = NULL;
	const struct disc_device *d;
	bool reported = false;

	printf("# an attribute of blanks is no number\n");
	write_file(p, "\n \t\n");
	ok(disc_scan(&o, &node) == 0, "scan with a blank numa_node");
	d = node ? disc_node_find(node, "mlx5_3") : NULL;
	ok(d && d->numa_node == -1, "mlx5_3: blank numa_node -> none, not node 0");
	for (size_t i = 0; node && i < node->n_problems; i++)
		reported |= !strncmp(node->problems[i], "mlx5_3: numa_node ", 18) &&
			    strstr(node->problems[i], "is not a number, using none");
	ok(reported, "... reported as not a number");
	disc_node_free(node);
	node = NULL;

	/* The value is quoted escaped as in every message: C0, DEL and C1 (CSI) alike. */
	write_file(p, "1\x1b[2J\x7f\xc2\x9b");
	ok(disc_scan(&o, &node) == 0, "scan with terminal controls in numa_node");
	reported = false;
	for (size_t i = 0; node && i < node->n_problems; i++)
		reported |=
		    !strcmp(node->problems[i], "mlx5_3: numa_node '1\\x1b[2J\\x7f\\xc2\\x9b' "
					       "is not a number, using none");
	ok(reported, "... reported with the controls escaped as \\xNN");
	disc_node_free(node);
	free(p);
	rm_rf(sys);
	free(sys);
}

/* ---- loops -------------------------------------------------------------------------- */

static void test_loops(void)
{
	char *sys = build_tree("sriov", NULL);
	static const char *links[][2] = {
	    {"class/infiniband/loop0", "loop0"},
	    {"class/infiniband/loopa", "loopb"},
	    {"class/infiniband/loopb", "loopa"},
	    {"class/infiniband/loopabs", "/class/infiniband/loopabs"},
	};

	printf("# class links that loop are reported as loops, not as dangling\n");
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		char *p = at(sys, links[i][0]);

		if (symlink(links[i][1], p) < 0)
			abort();
		free(p);
	}
	for (int use = 1; use >= 0; use--) {
		struct disc_options o = {.sysfs_root = sys, .dev_root = "/nonexistent"};
		struct disc_node *node = NULL;

		ok(disc_scan_with(&o, use, &node) == 0 && node, "scan (openat2 = %d)", use);
		if (!node)
			continue;
		EQ_INT(node->n_devices, 5, "loops are skipped, the 5 devices kept");
		PROBLEM(node, "loop0: symlink loop in class/infiniband");
		PROBLEM(node, "loopa: symlink loop in class/infiniband");
		PROBLEM(node, "loopb: symlink loop in class/infiniband");
		PROBLEM(node, "loopabs: symlink loop in class/infiniband");
		ok(!has_problem(node, "dangling"), "no loop is called dangling");
		disc_node_free(node);
	}
	rm_rf(sys);
	free(sys);
}

/* ---- permission errors -------------------------------------------------------------- */

/* Drops the two capabilities that let root ignore mode bits; 0 or -errno. */
static int drop_dac_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

struct child_scan {
	int r; /* disc_scan's return, or 1000 when the denial could not be set up */
	size_t n_devices;
	char *problems; /* one per line */
};

/* Scans sys in a child without DAC override; probe must then be unreadable. */
static struct child_scan scan_denied(const char *sys, const char *probe)
{
	struct child_scan res = {.r = 1000};
	int fds[2];
	pid_t pid;
	FILE *f;
	char *line = NULL;
	size_t cap = 0;

	if (pipe(fds) < 0)
		abort();
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		struct disc_options o = {.sysfs_root = sys, .dev_root = "/nonexistent"};
		struct disc_node *node = NULL;
		FILE *out = fdopen(fds[1], "w");
		int r, pfd;

		close(fds[0]);
		if (!out || drop_dac_caps() < 0)
			_exit(1);
		pfd = open(probe, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (pfd >= 0 || errno != EACCES) {
			fprintf(out, "1000 0\n");
			fclose(out);
			_exit(0);
		}
		r = disc_scan(&o, &node);
		fprintf(out, "%d %zu\n", r, node ? node->n_devices : 0);
		for (size_t i = 0; node && i < node->n_problems; i++)
			fprintf(out, "%s\n", node->problems[i]);
		disc_node_free(node);
		fclose(out);
		_exit(0);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f)
		abort();
	if (getline(&line, &cap, f) > 0)
		sscanf(line, "%d %zu", &res.r, &res.n_devices);
	{
		size_t len = 0;
		FILE *m = open_memstream(&res.problems, &len);
		ssize_t n;

		while ((n = getline(&line, &cap, f)) > 0)
			fwrite(line, 1, (size_t)n, m);
		fclose(m);
	}
	free(line);
	fclose(f);
	waitpid(pid, NULL, 0);
	return res;
}

static void test_permissions(void)
{
	char *sys = build_tree("sriov", NULL), *p;
	struct child_scan res;

	printf("# permission errors are reported, never silent\n");
	p = at(sys, "class/infiniband");
	if (chmod(p, 0) < 0)
		abort();
	res = scan_denied(sys, p);
	if (res.r == 1000) {
		printf("ok %u - class/infiniband unreadable # SKIP cannot drop "
		       "CAP_DAC_OVERRIDE here\n",
		       ++tap_count);
	} else {
		EQ_INT(res.r, -EACCES, "unreadable class/infiniband: disc_scan fails with -EACCES");
	}
	free(res.problems);
	if (chmod(p, 0755) < 0)
		abort();
	free(p);

	/* Attributes and a char-device class the scan may not read: named problem lines. */
	{
		static const char *denied[] = {FN "0/infiniband/mlx5_0/node_guid",
					       FN "2/infiniband/mlx5_1/ports/1/state",
					       FN "3/numa_node", "class/infiniband_mad"};

		for (size_t i = 0; i < ELEMENTSOF(denied); i++) {
			p = at(sys, denied[i]);
			if (chmod(p, 0) < 0)
				abort();
			free(p);
		}
		p = at(sys, denied[0]);
		res = scan_denied(sys, p);
		free(p);
	}
	if (res.r == 1000) {
		printf("ok %u - unreadable attributes # SKIP cannot drop CAP_DAC_OVERRIDE here\n",
		       ++tap_count);
	} else {
		static const char *want[] = {
		    "class/infiniband/mlx5_0/node_guid: Permission denied, ignoring",
		    "class/infiniband/mlx5_1/ports/1/state: Permission denied, ignoring",
		    "class/infiniband/mlx5_2/device/numa_node: Permission denied, ignoring",
		    "class/infiniband_mad: cannot be listed (Permission denied), ignoring",
		};

		EQ_INT(res.r, 0, "scan with unreadable attributes succeeds");
		EQ_INT(res.n_devices, 5, "all 5 devices found");
		for (size_t i = 0; i < ELEMENTSOF(want); i++)
			if (!ok(res.problems && strstr(res.problems, want[i]), "problem: %s",
				want[i]))
				printf("#   problems:\n%s", res.problems ? res.problems : "");
		ok(res.problems && !strstr(res.problems, "mlx5_1: port 1 state unreadable"),
		   "a denied state is reported once");
	}
	free(res.problems);
	rm_rf(sys);
	free(sys);
}

int main(int argc, char **argv)
{
	fixture_args(argc, argv);
	test_fifos();
	test_blank_numbers();
	test_loops();
	test_permissions();
	return tap_done();
}
