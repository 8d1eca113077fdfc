/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi config check [FILE]: validates a config file offline and prints the pools it
 * would make on this node (config/config.h does the work).
 */
#include <string.h>

#include "cli.h"
#include "common.h"

struct config_args {
	struct cli_common common;
};

static const struct cli_option config_options[] = {
    CLI_OPTIONS_NODE,
    CLI_OPTIONS_GLOBAL,
    {},
};

static int config_option(void *ctx, int opt, const char *arg)
{
	return 0;
}

static const struct cli_parser config_parser = {
    .name = "config",
    .synopsis = "check [OPTIONS] [FILE]",
    .description = "Validates FILE (default " CFG_DEFAULT_PATH ") as the bridge and generate "
		   "would, and prints the pools it makes on this node: each pool's mode and "
		   "devices, the usable devices no pool takes, and the warnings (a device "
		   "several pools match, a pool that matches nothing). Errors name the file, "
		   "line, column and key.",
    .options = config_options,
    .footer = "Exit status: 0 valid, 1 invalid or unreadable, 2 bad usage.",
    .max_args = 2,
    .option = config_option,
};

int cmd_config(int argc, char **argv)
{
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	struct config_args a = {};
	struct disc_node *node = NULL;
	const char *path;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int first, r;

	r = cli_parse(&config_parser, &a, &a.common, argc, argv, &first);
	if (r != CLI_CONTINUE)
		goto out;
	if (first >= argc || strcmp(argv[first], "check") != 0) {
		r = cli_usage_error("config", "expected 'config check [FILE]'");
		goto out;
	}
	path = first + 1 < argc ? argv[first + 1] : CFG_DEFAULT_PATH;
	r = cfg_load(path, &c, &err);
	if (r < 0) {
		log_error("%s", rc_error_msg(err, r));
		r = EXIT_FAIL;
		goto out;
	}
	r = cli_resolve_node(&a.common, "config");
	if (r == 0)
		r = cli_scan(&a.common, &node);
	if (r != 0)
		goto out;
	printf("%s: valid\n", path);
	r = cfg_report(c, node, stdout, &err);
	disc_node_free(node);
	if (r < 0) {
		log_error("%s", rc_error_msg(err, r));
		r = EXIT_FAIL;
	}
out:
	cli_common_done(&a.common);
	return r;
}
