/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi-node: the two jobs the DaemonSet needs done inside an image that has no shell.
 *
 *   rdma-cdi-node install --from DIR --to DIR
 *	Copies the self-contained hook bundle (bin/rdma-cdi-hook with its own loader and
 *	libraries in lib/, see deploy/image/build.sh) to the host directory the CDI spec
 *	names. Each file is written under a temporary name and renamed into place, so a
 *	container runtime starting the hook meanwhile runs either the old or the new file.
 *
 *   rdma-cdi-node probe [--plugin-dir DIR] [--socket NAME]... [--timeout SEC]
 *	The liveness check: calls GetDevicePluginOptions, as the kubelet does right after
 *	Register, on every plugin socket of rdma-cdi (default: each rdma-cdi*.sock in the
 *	plugin dir). A bridge whose process is stopped or whose loop no longer serves its
 *	completion queue still has a listening socket the kernel accepts connections on,
 *	so the file's existence proves nothing: only an answer does.
 *
 * Exit status: 0 success, 1 failure (the reason on stderr: the kubelet shows it in the
 * pod's events), 2 bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "common.h"

#define EXIT_USAGE 2
#define MAX_DEPTH 4
#define MAX_SOCKETS 64
#define PLUGIN_DIR_DEFAULT "/var/lib/kubelet/device-plugins"
#define PROBE_METHOD "/v1beta1.DevicePlugin/GetDevicePluginOptions"

/* ---- install ------------------------------------------------------------------------- */

static int copy_file_at(int sfd, int dfd, const char *name, mode_t mode)
{
	_cleanup_close_ int in = -1, out = -1;
	char tmp[NAME_MAX + 1], buf[65536];
	ssize_t n;
	int r;

	if (snprintf(tmp, sizeof(tmp), ".#%.200s.%d", name, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	in = openat(sfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	(void)unlinkat(dfd, tmp, 0);
	out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0755);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto unlink_tmp;
		}
		r = write_all(out, buf, (size_t)n);
		if (r < 0)
			goto unlink_tmp;
	}
	/* The umask must not decide whether the host can execute the hook. */
	if (fchmod(out, mode & 0755) < 0 || fsync(out) < 0) {
		r = -errno;
		goto unlink_tmp;
	}
	if (renameat(dfd, tmp, dfd, name) < 0) {
		r = -errno;
		goto unlink_tmp;
	}
	return 0;
unlink_tmp:
	(void)unlinkat(dfd, tmp, 0);
	return r;
}

static int copy_link_at(int sfd, int dfd, const char *name)
{
	char target[PATH_MAX], tmp[NAME_MAX + 1];
	ssize_t n;

	n = readlinkat(sfd, name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (snprintf(tmp, sizeof(tmp), ".#%.200s.%d", name, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlinkat(dfd, tmp, 0);
	if (symlinkat(target, dfd, tmp) < 0)
		return -errno;
	if (renameat(dfd, tmp, dfd, name) < 0) {
		int r = -errno;

		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	return 0;
}

/* Copies the tree under sfd into dfd; on failure names the entry in *err. */
static int copy_tree(int sfd, int dfd, const char *rel, int depth, struct rc_error **err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	char path[PATH_MAX];
	int fd, r;

	if (depth > MAX_DEPTH)
		return rc_error_set(err, -ELOOP, "%s: more than %d directory levels", rel,
				    MAX_DEPTH);
	fd = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", rel, de->d_name);
		if (fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			goto fail;
		}
		if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int s2 = -1, d2 = -1;

			if (mkdirat(dfd, de->d_name, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				goto fail;
			}
			s2 = openat(sfd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			d2 = openat(dfd, de->d_name,
				    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (s2 < 0 || d2 < 0) {
				r = -errno;
				goto fail;
			}
			r = copy_tree(s2, d2, path, depth + 1, err);
			if (r < 0)
				return r;
		} else if (S_ISREG(st.st_mode)) {
			r = copy_file_at(sfd, dfd, de->d_name, st.st_mode);
			if (r < 0)
				goto fail;
		} else if (S_ISLNK(st.st_mode)) {
			r = copy_link_at(sfd, dfd, de->d_name);
			if (r < 0)
				goto fail;
		} else {
			return rc_error_set(err, -EINVAL, "%s: not a file, directory or symlink",
					    path);
		}
	}
	if (errno != 0)
		return rc_error_wrap(err, -errno, "%s", rel);
	return 0;
fail:
	return rc_error_wrap(err, r, "%s", path);
}

static int cmd_install(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"to", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_close_ int sfd = -1, dfd = -1;
	const char *from = NULL, *to = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			from = optarg;
			break;
		case 't':
			to = optarg;
			break;
		case 'h':
			printf("Usage: rdma-cdi-node install --from DIR --to DIR\n");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (!from || !to || optind != argc || from[0] != '/' || to[0] != '/') {
		log_error("install: expected --from DIR --to DIR, both absolute");
		return EXIT_USAGE;
	}
	sfd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return log_error_errno(-errno, "install: cannot open %s", from), EXIT_FAILURE;
	if (mkdir(to, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "install: cannot create %s", to), EXIT_FAILURE;
	dfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return log_error_errno(-errno, "install: cannot open %s", to), EXIT_FAILURE;
	r = copy_tree(sfd, dfd, from, 0, &err);
	if (r < 0) {
		log_error("install: copying %s to %s failed: %s", from, to, rc_error_msg(err, r));
		return EXIT_FAILURE;
	}
	log_info("installed %s into %s", from, to);
	return 0;
}

/* ---- probe --------------------------------------------------------------------------- */

DEFINE_CLEANUP_FUNC(grpc_channel, grpc_channel_destroy)
DEFINE_CLEANUP_FUNC(grpc_call, grpc_call_unref)
DEFINE_CLEANUP_FUNC(grpc_byte_buffer, grpc_byte_buffer_destroy)

static void cq_drain_destroy(grpc_completion_queue *cq)
{
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
}
DEFINE_CLEANUP_FUNC(grpc_completion_queue, cq_drain_destroy)

/* 0 when the plugin at path answers GetDevicePluginOptions with OK within timeout_ms. */
static int probe_socket(const char *path, int timeout_ms, struct rc_error **err)
{
	_cleanup_(cq_drain_destroyp) grpc_completion_queue *cq = NULL;
	_cleanup_(grpc_channel_destroyp) grpc_channel *ch = NULL;
	_cleanup_(grpc_call_unrefp) grpc_call *call = NULL;
	_cleanup_(grpc_byte_buffer_destroyp) grpc_byte_buffer *send = NULL, *recv = NULL;
	_cleanup_free_ char *target = NULL;
	grpc_channel_credentials *creds;
	grpc_metadata_array im, tm;
	grpc_status_code status = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice(), empty = grpc_empty_slice();
	gpr_timespec deadline;
	grpc_op ops[6] = {};
	grpc_event ev;
	int r = 0;

	target = strdup_printf("unix:%s", path);
	if (!target)
		return -ENOMEM;
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_next(NULL);
	deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
				gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					grpc_slice_from_static_string(PROBE_METHOD), NULL, deadline,
					NULL);
	send = grpc_raw_byte_buffer_create(&empty, 1);
	grpc_metadata_array_init(&im);
	grpc_metadata_array_init(&tm);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &im;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &tm;
	ops[5].data.recv_status_on_client.status = &status;
	ops[5].data.recv_status_on_client.status_details = &details;
	if (grpc_call_start_batch(call, ops, ELEMENTSOF(ops), (void *)1, NULL) != GRPC_CALL_OK) {
		r = rc_error_set(err, -EIO, "cannot start the call");
		goto out;
	}
	/* The call's own deadline ends it; the extra second only guards against a gRPC bug. */
	ev = grpc_completion_queue_next(
	    cq, gpr_time_add(deadline, gpr_time_from_seconds(1, GPR_TIMESPAN)), NULL);
	if (ev.type != GRPC_OP_COMPLETE) {
		grpc_call_cancel(call, NULL);
		(void)grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		r = rc_error_set(err, -ETIMEDOUT, "no completion within %d ms", timeout_ms);
	} else if (status != GRPC_STATUS_OK || !recv) {
		char *d = grpc_slice_to_c_string(details);

		r = rc_error_set(err, status == GRPC_STATUS_DEADLINE_EXCEEDED ? -ETIMEDOUT : -EIO,
				 "%s: status %d%s%s",
				 status == GRPC_STATUS_DEADLINE_EXCEEDED
				     ? "no answer in time (stuck or stopped?)"
				     : "GetDevicePluginOptions failed",
				 (int)status, d && d[0] ? ", " : "", d ? d : "");
		gpr_free(d);
	}
out:
	grpc_metadata_array_destroy(&im);
	grpc_metadata_array_destroy(&tm);
	grpc_slice_unref(details);
	return r;
}

static bool is_rdma_cdi_socket(const char *name)
{
	size_t n = strlen(name);

	return strncmp(name, "rdma-cdi", 8) == 0 && n >= 13 && strcmp(name + n - 5, ".sock") == 0;
}

/* Collects the sockets to probe: the named ones, or each rdma-cdi*.sock in dir. */
static int find_sockets(const char *dir, char **names, size_t n_names, char **ret, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	size_t n = 0;

	if (n_names > 0) {
		for (size_t i = 0; i < n_names; i++)
			if (!(ret[n++] = strdup_printf("%s/%s", dir, names[i])))
				return -ENOMEM;
		*ret_n = n;
		return 0;
	}
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < MAX_SOCKETS) {
		struct stat st;

		if (!is_rdma_cdi_socket(de->d_name))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		if (!(ret[n++] = strdup_printf("%s/%s", dir, de->d_name)))
			return -ENOMEM;
	}
	*ret_n = n;
	return 0;
}

static int cmd_probe(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"plugin-dir", required_argument, NULL, 'p'},
	    {"socket", required_argument, NULL, 's'},
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	const char *dir = PLUGIN_DIR_DEFAULT;
	char *names[MAX_SOCKETS], *paths[MAX_SOCKETS] = {};
	size_t n_names = 0, n_paths = 0, failed = 0;
	long long timeout = 5;
	int c, r, ret = EXIT_FAILURE;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			dir = optarg;
			break;
		case 's':
			if (n_names == MAX_SOCKETS || !name_is_safe(optarg, NAME_MAX)) {
				log_error("probe: --socket %s: expected a file name in the plugin "
					  "dir (at most %d)",
					  optarg, MAX_SOCKETS);
				return EXIT_USAGE;
			}
			names[n_names++] = optarg;
			break;
		case 't':
			if (parse_int64(optarg, &timeout) < 0 || timeout < 1 || timeout > 60) {
				log_error("probe: --timeout %s: expected seconds from 1 to 60",
					  optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("Usage: rdma-cdi-node probe [--plugin-dir DIR] [--socket NAME]... "
			       "[--timeout SEC]\n");
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		log_error("probe: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	r = find_sockets(dir, names, n_names, paths, &n_paths);
	if (r < 0) {
		log_error_errno(r, "probe: cannot list %s", dir);
		goto out;
	}
	if (n_paths == 0) {
		log_error("probe: no rdma-cdi*.sock in %s: the bridge is not serving", dir);
		goto out;
	}
	grpc_init();
	for (size_t i = 0; i < n_paths; i++) {
		_cleanup_rc_error_ struct rc_error *err = NULL;

		r = probe_socket(paths[i], (int)timeout * 1000, &err);
		if (r < 0) {
			log_error("probe: %s: %s", paths[i], rc_error_msg(err, r));
			failed++;
		} else {
			log_debug("probe: %s answered", paths[i]);
		}
	}
	grpc_shutdown();
	ret = failed ? EXIT_FAILURE : 0;
out:
	for (size_t i = 0; i < n_paths; i++)
		free(paths[i]);
	return ret;
}

int main(int argc, char **argv)
{
	log_set_ident("rdma-cdi-node");
	if (argc >= 2 && strcmp(argv[1], "install") == 0)
		return cmd_install(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "probe") == 0)
		return cmd_probe(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: rdma-cdi-node install --from DIR --to DIR\n"
		       "       rdma-cdi-node probe [--plugin-dir DIR] [--socket NAME]... "
		       "[--timeout SEC]\n");
		return 0;
	}
	log_error("expected 'install' or 'probe' (see rdma-cdi-node --help)");
	return EXIT_USAGE;
}
