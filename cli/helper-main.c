/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' executables, installed in libexecdir/rdma-cdi/ and exec'd by the rdma-cdi
 * binary (cmd-exec.c) with the command's arguments, preceded by any global option
 * (--log-level, --log-format) given before the command:
 *   rdma-cdi-bridge  `rdma-cdi bridge` (cmd-bridge.c), which loads gRPC;
 *   rdma-cdi-dra     `rdma-cdi dra` (cmd-dra.c), which loads gRPC and libcurl;
 *   rdma-cdi-watch   `rdma-cdi generate --watch` (cmd-generate.c), the only one that
 *                    loads libsystemd (sd-event, sd_notify) and libinotifytools.
 * Each is that command in every other way: same options, help, log identity and exit
 * status. HELPER_COMMAND names the command's function, HELPER_NAME its argv[0].
 */
#include "cli.h"
#include "common.h"

int main(int argc, char **argv)
{
	char *name = (char *)HELPER_NAME;

	log_set_ident("rdma-cdi");
	log_set_timestamps(true);
	if (argc < 1)
		return EXIT_USAGE;
	argv[0] = name;
	return HELPER_COMMAND(argc, argv);
}
