/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi bridge, as the rdma-cdi binary runs it: it execs the daemon, rdma-cdi-bridge
 * (cmd-exec.c), with the same arguments; the daemon parses them, so `rdma-cdi bridge
 * --help` and every usage error are its own. A build without the bridge
 * (-Dbridge=disabled) says so.
 */
#include "cli.h"
#include "common.h"
#include "build-config.h"

int cmd_bridge(int argc, char **argv)
{
#if RDMA_CDI_HAVE_BRIDGE
	return cli_exec_helper("bridge", "rdma-cdi-bridge", argc, argv);
#else
	log_error("bridge: this rdma-cdi was built without the kubelet device plugin "
		  "(meson -Dbridge=disabled, or gRPC/protobuf-c missing at build time); the "
		  "other commands work without it");
	return EXIT_FAIL;
#endif
}
