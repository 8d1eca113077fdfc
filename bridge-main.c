/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi-bridge: the kubelet device plugin's executable, installed in
 * libexecdir/rdma-cdi/ and exec'd by `rdma-cdi bridge` (cmd-bridge-exec.c) with the
 * command's arguments, preceded by any global option (--log-level, --log-format) given
 * before the command. It is `rdma-cdi bridge` in every other way: same options, help,
 * log identity and exit status (cmd-bridge.c).
 */
#include "cli.h"
#include "common.h"

int main(int argc, char **argv)
{
	char *name = (char *)"bridge";

	log_set_ident("rdma-cdi");
	log_set_timestamps(true);
	if (argc < 1)
		return EXIT_USAGE;
	argv[0] = name;
	return cmd_bridge(argc, argv);
}
