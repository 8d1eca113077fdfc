/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi bridge, as the rdma-cdi binary runs it: by exec'ing the daemon, a separate
 * executable (bridge-main.c), with the same arguments. The daemon is the only part that
 * needs gRPC core, Abseil and protobuf-c; keeping them out of this binary spares every
 * other command (and the podman hosts that never run the bridge) the dynamic loader's
 * work for ~45 shared libraries, which is most of `generate`'s time on a small node.
 * The daemon parses the options itself, so `rdma-cdi bridge --help` and every usage
 * error are its own; the process stays the same (same pid for the kubelet's DaemonSet,
 * systemd and signals).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common.h"
#include "build-config.h"

int cli_global_argc;
char **cli_global_argv;

#if RDMA_CDI_HAVE_BRIDGE
/*
 * Where the daemon is, first match: this build dir when the running binary is the build
 * dir's own (tests run it uninstalled); RDMA_CDI_BRIDGE_FROM_BINDIR from the running
 * binary's directory (the image, a relocated install); the install path. Returns a
 * malloc'd path, or NULL with errno set (the reason for the last candidate).
 */
static char *bridge_find(void)
{
	char exe[PATH_MAX];
	ssize_t n;
	char *slash, *p;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash && (size_t)(slash - exe) == strlen(RDMA_CDI_BUILD_ROOT) &&
		    strncmp(exe, RDMA_CDI_BUILD_ROOT, (size_t)(slash - exe)) == 0)
			return strdup(RDMA_CDI_BUILD_ROOT "/rdma-cdi-bridge");
		if (slash && RDMA_CDI_BRIDGE_FROM_BINDIR[0]) {
			*slash = '\0';
			if (asprintf(&p, "%s/%s", exe, RDMA_CDI_BRIDGE_FROM_BINDIR) < 0)
				return NULL;
			if (access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return strdup(RDMA_CDI_BRIDGE_PATH);
}

int cmd_bridge(int argc, char **argv)
{
	_cleanup_free_ char *path = bridge_find();
	_cleanup_free_ char **args = NULL;
	size_t n = 0;

	if (!path) {
		log_error("bridge: %s", strerror(ENOMEM));
		return EXIT_FAIL;
	}
	/* Global options given before the command come first: the daemon takes them too. */
	args = calloc((size_t)cli_global_argc + (size_t)argc + 1, sizeof(*args));
	if (!args) {
		log_error("bridge: %s", strerror(ENOMEM));
		return EXIT_FAIL;
	}
	args[n++] = (char *)"rdma-cdi-bridge";
	for (int i = 0; i < cli_global_argc; i++)
		if (strcmp(cli_global_argv[i], "--") != 0) /* it would end the daemon's options */
			args[n++] = cli_global_argv[i];
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(path, args);
	log_error("bridge: cannot run the daemon %s: %s%s", path, strerror(errno),
		  errno == ENOENT ? " (install it with 'meson install', or build with "
				    "-Dbridge=enabled)"
				  : "");
	return EXIT_FAIL;
}
#else
int cmd_bridge(int argc, char **argv)
{
	log_error("bridge: this rdma-cdi was built without the kubelet device plugin "
		  "(meson -Dbridge=disabled, or gRPC/protobuf-c missing at build time); the "
		  "other commands work without it");
	return EXIT_FAIL;
}
#endif
