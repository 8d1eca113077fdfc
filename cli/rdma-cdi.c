/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi: the command line. main() takes the global options and hands the rest to one
 * command of the table below; each command (cmd-*.c) parses its own options and decides
 * what the user sees. The work itself is in discovery/, specs/, cdi/, daemon/, bridge/
 * and dra/. The daemons' executables run this same main() and table (cli.h): run as a
 * helper's name, main() runs that helper's command.
 *
 * Exit status: 0 success; 1 failure (the cause is printed); 2 bad usage;
 * 3 no usable RDMA device (nothing written, an existing spec is left in place);
 * 4 `list` found invalid spec files or conflicting device names; 5 `config check
 * --strict` found a pool that gets no device on this node.
 */
#include <string.h>

#include "cli.h"
#include "common.h"
#include "build-config.h"
#include "rdma-cdi-commit.h"

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct cli_command commands[] = {
    {"discover", cmd_discover, NULL, true,
     "show the RDMA devices of this node (--json for scripts)"},
    {"generate", cmd_generate, CLI_WATCH_HELPER, true, "write the CDI spec for them"},
    {"list", cmd_list, NULL, true, "list the CDI device names in the spec directories"},
    {"bridge", cmd_bridge, "rdma-cdi-bridge", RDMA_CDI_HAVE_BRIDGE,
     "run the kubelet device plugin"},
    {"dra", cmd_dra, "rdma-cdi-dra", RDMA_CDI_HAVE_DRA,
     "run the kubelet DRA driver (resource.k8s.io/v1)"},
    {"config", cmd_config, NULL, true,
     "check a config file, or convert another plugin's into one"},
    {"doctor", cmd_doctor, NULL, true,
     "check that RDMA works here, and how to fix what does not"},
    {"help", cmd_help, NULL, true, "show the help of a command: rdma-cdi help COMMAND"},
    {"version", cmd_version, NULL, true, "print the version"},
};

static const struct option global_options[] = {
    {"log-level", required_argument, NULL, CLI_OPT_LOG_LEVEL},
    {"log-format", required_argument, NULL, CLI_OPT_LOG_FORMAT},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {},
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: rdma-cdi [GLOBAL OPTIONS] COMMAND [OPTIONS]\n"
		   "\n"
		   "Gives containers RDMA devices through the Container Device Interface.\n"
		   "\n"
		   "Commands:\n");
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n"
		   "Global options (also accepted after the command):\n"
		   "  --log-level LEVEL           error, warning, info (default) or debug\n"
		   "  --log-format text|json      log line format (default text)\n"
		   "  -V, --version               print the version\n"
		   "  -h, --help                  show this help\n"
		   "\n"
		   "'rdma-cdi COMMAND --help' or 'rdma-cdi help COMMAND' shows a command's "
		   "options.\n"
		   "Exit status: 0 success, 1 failure, 2 bad usage, 3 no usable RDMA device,\n"
		   "4 list found invalid spec files or conflicting names, 5 config check\n"
		   "--strict found a pool that gets no device.\n");
}

static const struct cli_command *find_command(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* Runs cmd here, or execs the executable that holds it. */
static int run_command(const struct cli_command *cmd, int argc, char **argv)
{
	if (cmd->run)
		return cmd->run(argc, argv);
	if (!cmd->built) {
		log_error("%s: this rdma-cdi was built without it (meson -Dbridge=disabled, or "
			  "gRPC, protobuf-c or libcurl missing at build time); the other commands "
			  "work without it",
			  cmd->name);
		return EXIT_FAIL;
	}
	return cli_exec_helper(cmd->name, cmd->helper, argc, argv);
}

/* The command an executable runs by its name (rdma-cdi-bridge: bridge), or NULL. */
static const struct cli_command *command_of_executable(const char *argv0)
{
	const char *slash = strrchr(argv0, '/'), *name = slash ? slash + 1 : argv0;

	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (commands[i].helper && strcmp(name, commands[i].helper) == 0)
			return &commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	_cleanup_free_ char *q = quote_untrusted(name);

	log_error("unknown command %s (see 'rdma-cdi --help')", q ? q : "?");
	return EXIT_USAGE;
}

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--help") != 0 && strcmp(argv[1], "-h") != 0)
		return cli_usage_error("version", "takes no arguments");
	if (argc > 1) {
		printf("Usage: rdma-cdi version\n\nPrints the version.\n");
		return 0;
	}
	/* The version first and alone in its field: scripts and build.sh read the second. */
	printf("rdma-cdi %s\n", cli_version());
	return 0;
}

const char *cli_version(void)
{
	return RDMA_CDI_COMMIT[0] ? RDMA_CDI_VERSION " (commit " RDMA_CDI_COMMIT ")"
				  : RDMA_CDI_VERSION;
}

const char *cli_commit(void)
{
	return RDMA_CDI_COMMIT;
}

static int cmd_help(int argc, char **argv)
{
	const struct cli_command *cmd;
	char *help_argv[] = {NULL, (char *)"--help", NULL};

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2)
		return cli_usage_error("help", "takes one command name");
	cmd = find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	if (cmd->run == cmd_help) {
		usage(stdout);
		return 0;
	}
	help_argv[0] = argv[1];
	return run_command(cmd, 2, help_argv);
}

int main(int argc, char **argv)
{
	const struct cli_command *cmd;
	enum log_level level;
	int c;

	log_set_ident("rdma-cdi");
	log_set_timestamps(true);
	if (argc < 1)
		return EXIT_USAGE;
	cmd = command_of_executable(argv[0]);
	if (cmd) {
		/* A daemon's executable: the command's own options follow, global ones too. */
		if (!cmd->run) { /* it would exec itself */
			log_error("%s is not in this executable", cmd->name);
			return EXIT_FAIL;
		}
		argv[0] = (char *)cmd->name;
		return cmd->run(argc, argv);
	}

	opterr = 0;
	/* "+": stop at the command; what follows is the command's. */
	while ((c = getopt_long(argc, argv, "+:hV", global_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			return cmd_version(1, argv);
		case CLI_OPT_LOG_LEVEL:
			if (log_parse_level(optarg, &level) < 0)
				return cli_usage_error(
				    NULL, "--log-level %s: expected error, warning, info or debug",
				    optarg);
			log_set_level(level);
			break;
		case CLI_OPT_LOG_FORMAT:
			if (log_parse_format(optarg) < 0)
				return cli_usage_error(
				    NULL, "--log-format %s: expected text or json", optarg);
			break;
		case ':':
			return cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt && optopt < 0x100)
				return cli_usage_error(NULL, "unknown option '-%c'", optopt);
			return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = find_command(argv[optind]);
	if (!cmd)
		return unknown_command(argv[optind]);
	cli_global_argc = optind - 1;
	cli_global_argv = argv + 1;
	return run_command(cmd, argc - optind, argv + optind);
}
