/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rdma-cdi command line's internal header: the command table's contract and the
 * options several commands share (cmd-common.c). Not a library: these functions print.
 *
 * A command is `int cmd_NAME(int argc, char **argv)`: argv[0] is the command's name, the
 * rest its arguments; it parses them with getopt_long (optind already reset), handles
 * --help itself and returns the exit status below.
 *
 * One command table (rdma-cdi.c) and one main() serve every executable, as kmod's tools
 * do: rdma-cdi runs the one-shot commands, and the daemons run in executables of their
 * own (rdma-cdi-bridge, rdma-cdi-dra, rdma-cdi-watch for `generate --watch`), so that
 * only they load gRPC, libcurl, libsystemd or libinotifytools. Such an executable is the
 * same main() and table plus the daemon's code; main() tells them apart by the name it
 * was run as (a table entry's helper), and rdma-cdi execs the helper for a command it
 * does not hold (cmd-exec.c), in the same process.
 */
#pragma once

#include <getopt.h>
#include <stdbool.h>

#include "config.h"
#include "discovery.h"
#include "specs.h"

struct daemon_options;

enum {
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_NO_DEVICE = 3,
	EXIT_LIST_PROBLEMS = 4,
	EXIT_CONFIG_UNMATCHED = 5, /* config check --strict: a pool gets no device */
};

struct cli_command {
	const char *name;
	/* NULL: not in this executable; rdma-cdi execs helper, which holds it. */
	int (*run)(int argc, char **argv);
	/* The executable that runs this command when run as that name, or NULL. */
	const char *helper;
	bool built; /* false: this build left the command out (-Dbridge=disabled) */
	const char *help; /* one line for `rdma-cdi --help` */
};

#define CLI_WATCH_HELPER "rdma-cdi-watch"

int cmd_discover(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_doctor(int argc, char **argv); /* cmd-doctor.c */
int cmd_config(int argc, char **argv); /* cmd-config.c */

/*
 * The daemons' code, defined only in the executable that runs it (cmd-bridge.c in
 * rdma-cdi-bridge, cmd-dra.c in rdma-cdi-dra, generate-watch.c in rdma-cdi-watch). Weak:
 * NULL in every other executable, which execs the daemon's instead.
 */
int cmd_bridge(int argc, char **argv) __attribute__((weak));
int cmd_dra(int argc, char **argv) __attribute__((weak));
/* `generate --watch` (cmd-generate.c parses it): runs the daemon until stopped; 0 on a
 * clean stop, -errno when it cannot start (logged). */
int cli_generate_watch(const struct daemon_options *o) __attribute__((weak));

/* The global options main() took before the command (argv[1] up to it), which
 * cli_exec_helper() hands on to the daemon. */
extern int cli_global_argc;
extern char **cli_global_argv;

/*
 * Replaces this process with the daemon executable name (libexecdir/rdma-cdi/NAME) given
 * the global options and argv[1..] (cmd-exec.c). Returns only on failure: EXIT_FAIL after
 * printing why, as cmd.
 */
int cli_exec_helper(const char *cmd, const char *name, int argc, char **argv);

/* ---- options: one table per command ------------------------------------------- */

/*
 * A command's options are one table of struct cli_option: getopt_long's table and the
 * --help page are both made from it, so they cannot disagree (and tests check the man
 * page and the bash completion against --help). Values below CLI_OPT_COMMAND are the
 * shared options cli_parse() handles itself into struct cli_common; a command's own start
 * at CLI_OPT_COMMAND and go to its parser's option() callback.
 */
enum {
	CLI_OPT_HELP = 'h',
	CLI_OPT_LOG_LEVEL = 0x100,
	CLI_OPT_LOG_FORMAT,
	/* node: where the host is read from */
	CLI_OPT_HOST_ROOT,
	CLI_OPT_SYSFS_ROOT,
	CLI_OPT_DEV_ROOT,
	/* spec: what goes into it */
	CLI_OPT_KIND,
	CLI_OPT_WITH_MAD,
	CLI_OPT_HOOK_PATH,
	CLI_OPT_MEMLOCK,
	CLI_OPT_SPEC_DIR,
	CLI_OPT_CONFIG,
	/* daemons */
	CLI_OPT_RESCAN_INTERVAL,
	CLI_OPT_METRICS_ADDRESS,
	CLI_OPT_COMMAND = 0x200,
};

struct cli_option {
	const char *name;
	int has_arg;	  /* no_argument, required_argument */
	int val;	  /* CLI_OPT_* or the command's own (>= CLI_OPT_COMMAND) */
	const char *arg;  /* the value's name in --help, NULL for flags */
	const char *help; /* one sentence; wrapped by --help */
};

/* The shared groups, to put into a command's table. */
#define CLI_OPTIONS_NODE                                                                           \
	{"host-root", required_argument, CLI_OPT_HOST_ROOT, "DIR",                                 \
	 "read the host mounted at DIR (default /): sysfs at DIR/sys, device nodes under DIR; "    \
	 "the spec still names the host's own paths (/dev/infiniband/...)"},                       \
	    {"sysfs-root", required_argument, CLI_OPT_SYSFS_ROOT, "DIR",                           \
	     "sysfs to read (default HOST-ROOT/sys)"},                                             \
	{                                                                                          \
		"dev-root", required_argument, CLI_OPT_DEV_ROOT, "DIR",                            \
		    "the host's device directory, as the spec names it (default /dev; read under " \
		    "HOST-ROOT)"                                                                   \
	}
#define CLI_OPTIONS_SPEC                                                                           \
	{"kind", required_argument, CLI_OPT_KIND, "VENDOR/CLASS",                                  \
	 "CDI kind (default " SPEC_DEFAULT_KIND ")"},                                              \
	    {"with-mad", no_argument, CLI_OPT_WITH_MAD, NULL,                                      \
	     "also give each HCA its umadN/issmN nodes"},                                          \
	    {"hook-path", required_argument, CLI_OPT_HOOK_PATH, "PATH",                            \
	     "the memlock hook the spec runs, a host path (default " RDMA_CDI_HOOK_PATH ")"},      \
	{                                                                                          \
		"memlock", required_argument, CLI_OPT_MEMLOCK, "unlimited|BYTES",                  \
		    "RLIMIT_MEMLOCK the hook sets (K, M, G suffixes; default unlimited)"           \
	}
#define CLI_OPTIONS_GLOBAL                                                                         \
	{"log-level", required_argument, CLI_OPT_LOG_LEVEL, "LEVEL",                               \
	 "error, warning, info (default) or debug"},                                               \
	    {"log-format", required_argument, CLI_OPT_LOG_FORMAT, "text|json",                     \
	     "log line format (default text)"},                                                    \
	{                                                                                          \
		"help", no_argument, CLI_OPT_HELP, NULL, "show this help"                          \
	}

#define CLI_OPTION_CONFIG                                                                          \
	{                                                                                          \
		"config", required_argument, CLI_OPT_CONFIG, "FILE",                               \
		    "the pools and settings file (default " CFG_DEFAULT_PATH                       \
		    ", used when it exists); flags override it"                                    \
	}

/* The daemons' rescan (struct daemon_options.rescan_sec: the same meaning). */
#define CLI_OPTION_RESCAN_INTERVAL                                                                 \
	{                                                                                          \
		"rescan-interval", required_argument, CLI_OPT_RESCAN_INTERVAL, "SEC",              \
		    "cheap rescan of port state and renames every SEC seconds, 0 to 86400 "        \
		    "(default 5; 0 = only hotplug events and SIGHUP); while a rescan costs more "  \
		    "than 0.1 % of a core, its period is stretched to stay under that"             \
	}

/* The daemons' metrics endpoint and liveness probe (struct daemon_options.metrics_address). */
#define CLI_OPTION_METRICS_ADDRESS                                                                 \
	{                                                                                          \
		"metrics-address", required_argument, CLI_OPT_METRICS_ADDRESS, "ADDR:PORT",        \
		    "serve Prometheus metrics at http://ADDR:PORT/metrics and the liveness probe " \
		    "at /healthz, answered by the daemon's loop (IPv4:PORT or [IPv6]:PORT; "       \
		    "default off)"                                                                 \
	}

#define CLI_MAX_SPEC_DIRS 8

/* Everything the shared options set. Commands embed it; a new shared option goes here. */
struct cli_common {
	const char *host_root;	/* NULL = "/" */
	const char *sysfs_root; /* NULL = HOST-ROOT/sys */
	const char *dev_root;	/* host path, NULL = "/dev" */
	struct spec_options spec;
	const char *spec_dirs[CLI_MAX_SPEC_DIRS];
	size_t n_spec_dirs;
	const char *config_path; /* --config, NULL = CFG_DEFAULT_PATH if it exists */
	unsigned rescan_sec;	 /* --rescan-interval, when rescan_given */
	bool rescan_given;
	const char *metrics_address; /* --metrics-address, validated */

	/* Filled by cli_resolve_node(): what discovery reads. */
	struct disc_options disc;
	char *sysfs_buf, *dev_buf;
};

void cli_common_done(struct cli_common *c);

/*
 * The daemon options the shared options make (after cli_resolve_node()): the node, the
 * spec, one --spec-dir, --config, --rescan-interval (else the default), --metrics-address. 0, or
 * EXIT_USAGE after printing why, as cmd.
 */
int cli_daemon_options(const struct cli_common *c, const char *cmd, struct daemon_options *ret);

struct cli_parser {
	const char *name;		  /* "generate" */
	const char *synopsis;		  /* after "rdma-cdi NAME ": "[OPTIONS]" */
	const char *description;	  /* what the command does, one paragraph */
	const struct cli_option *options; /* ends with {} */
	const char *footer;		  /* printed after the options (exit status), or NULL */
	unsigned max_args;		  /* positional arguments allowed */
	/* The command's own options: 0, or EXIT_USAGE after cli_usage_error(). */
	int (*option)(void *ctx, int opt, const char *arg);
};

#define CLI_CONTINUE (-1)

/*
 * Parses argv (argv[0] = the command's name) with p's table: shared options into c, the
 * command's own through p->option(ctx). Returns CLI_CONTINUE with *ret_optind at the
 * first positional argument, or an exit status to return at once: 0 after --help,
 * EXIT_USAGE after printing why and the hint to --help.
 */
int cli_parse(const struct cli_parser *p, void *ctx, struct cli_common *c, int argc, char **argv,
	      int *ret_optind);

void cli_print_help(const struct cli_parser *p, FILE *f);

/* Usage error: prints "CMD: MESSAGE" and the hint to CMD's --help; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) _printf_(2, 3);

/* "0.4.0 (commit 0123456789ab)", or the version alone when the build knows no commit:
 * what --version prints and the daemons' start line says. cli_commit(): the commit, "". */
const char *cli_version(void);
const char *cli_commit(void);

/*
 * Resolves --host-root/--sysfs-root/--dev-root into c->disc (where discovery reads) and
 * c->spec.dev_root (what the spec says): 0, or EXIT_USAGE / EXIT_FAIL after printing.
 */
int cli_resolve_node(struct cli_common *c, const char *cmd);

/* A host path (the hook, /dev/...) as this process sees it: under --host-root. malloc'd. */
char *cli_host_path(const struct cli_common *c, const char *path);

/* The sysfs root in use, for messages. */
const char *cli_sysfs_root(const struct cli_common *c);

/*
 * Scans the node the options name and prints discovery's problems as warnings. On a
 * failure the message names the cause and the fix (did you mean DIR/sys?, run as root).
 * 0, or EXIT_FAIL.
 */
int cli_scan(const struct cli_common *c, struct disc_node **ret_node);

/* Prints why a node has no usable RDMA device and what to do about it (which modules to
 * load, run as root, the right --sysfs-root), at level. */
void cli_explain_no_device(const struct cli_common *c, const struct disc_node *node,
			   enum log_level level);

/* Prints a JSON tree on stdout; 0 or EXIT_FAIL. */
struct cJSON;
int cli_print_json(const struct cJSON *j);
