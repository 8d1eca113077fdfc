/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi dra, as the rdma-cdi binary runs it: it execs the daemon, rdma-cdi-dra
 * (cmd-exec.c), with the same arguments; the daemon parses them, so `rdma-cdi dra --help`
 * and every usage error are its own. A build without it says so.
 */
#include "cli.h"
#include "common.h"
#include "build-config.h"

int cmd_dra(int argc, char **argv)
{
#if RDMA_CDI_HAVE_DRA
	return cli_exec_helper("dra", "rdma-cdi-dra", argc, argv);
#else
	log_error("dra: this rdma-cdi was built without the DRA driver (meson -Dbridge=disabled, "
		  "or gRPC, protobuf-c or libcurl missing at build time); the other commands "
		  "work without it");
	return EXIT_FAIL;
#endif
}
