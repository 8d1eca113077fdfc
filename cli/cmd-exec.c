/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running a daemon's own executable (cli.h: the same main(), run as the helper's name)
 * in place of this process. The daemons
 * are the only parts that need gRPC core, Abseil and protobuf-c (the bridge) or
 * libsystemd and libinotifytools (generate --watch); keeping those out of the rdma-cdi
 * binary spares every one-shot command the dynamic loader's work for them, which was most
 * of `generate`'s time on a small node. The process stays the same (the same pid for the
 * kubelet's DaemonSet, systemd's Type=notify and signals).
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

/*
 * Where helper name is, first match: this build dir when the running binary is the build
 * dir's own (tests run it uninstalled); RDMA_CDI_LIBEXEC_FROM_BINDIR from the running
 * binary's directory (the image, a relocated install); the install path. malloc'd, or
 * NULL on ENOMEM.
 */
static char *helper_find(const char *name)
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
			return strdup_printf("%s/%s", RDMA_CDI_BUILD_ROOT, name);
		if (slash && RDMA_CDI_LIBEXEC_FROM_BINDIR[0]) {
			*slash = '\0';
			p = strdup_printf("%s/%s/%s", exe, RDMA_CDI_LIBEXEC_FROM_BINDIR, name);
			if (!p || access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	return strdup_printf("%s/%s", RDMA_CDI_LIBEXEC_DIR, name);
}

int cli_exec_helper(const char *cmd, const char *name, int argc, char **argv)
{
	_cleanup_free_ char *path = helper_find(name);
	_cleanup_free_ char **args = NULL;
	size_t n = 0;

	/* Global options given before the command come first: the daemon takes them too. */
	args = calloc((size_t)cli_global_argc + (size_t)argc + 1, sizeof(*args));
	if (!path || !args) {
		log_error("%s: %s", cmd, strerror(ENOMEM));
		return EXIT_FAIL;
	}
	args[n++] = (char *)name;
	for (int i = 0; i < cli_global_argc; i++)
		if (strcmp(cli_global_argv[i], "--") != 0) /* it would end the daemon's options */
			args[n++] = cli_global_argv[i];
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(path, args);
	log_error("%s: cannot run %s: %s%s", cmd, path, strerror(errno),
		  errno == ENOENT ? " (is rdma-cdi fully installed? 'meson install' puts it there)"
				  : "");
	return EXIT_FAIL;
}
