/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-cdi bridge: the kubelet device plugin (the work is in bridge/). */
#include <string.h>
#include <sys/utsname.h>

#include "bridge.h"
#include "cli.h"
#include "daemon.h"
#include "common.h"
#include "build-config.h"

enum {
	OPT_PLUGIN_DIR = CLI_OPT_COMMAND,
	OPT_RESOURCE,
	OPT_STRATEGY,
	OPT_SHARED,
};

struct bridge_args {
	struct cli_common common;
	struct daemon_options daemon;
	struct bridge_options bridge;
};

static const struct cli_option bridge_cli_options[] = {
    CLI_OPTIONS_NODE,
    {"spec-dir", required_argument, CLI_OPT_SPEC_DIR, "DIR",
     "CDI spec directory to write into (default: the config's specDir, else " SPEC_DYNAMIC_DIR ")"},
    CLI_OPTION_CONFIG,
    CLI_OPTIONS_SPEC,
    {"plugin-dir", required_argument, OPT_PLUGIN_DIR, "DIR",
     "kubelet device-plugin directory (default " BRIDGE_DEFAULT_PLUGIN_DIR ")"},
    {"resource", required_argument, OPT_RESOURCE, "NAME",
     "extended resource name of the default pool, when the config defines none "
     "(default " BRIDGE_DEFAULT_RESOURCE ")"},
    {"device-list-strategy", required_argument, OPT_STRATEGY, "LIST",
     "how Allocate names devices: a comma-separated list of cdi-cri, cdi-annotations, "
     "device-specs (default cdi-cri,cdi-annotations)"},
    {"shared", required_argument, OPT_SHARED, "N",
     "advertise each HCA of the default pool N times (1 to 1000)"},
    CLI_OPTION_RESCAN_INTERVAL,
    CLI_OPTION_METRICS_ADDRESS,
    CLI_OPTIONS_GLOBAL,
    {},
};

static int bridge_option(void *ctx, int opt, const char *arg)
{
	struct bridge_options *b = &((struct bridge_args *)ctx)->bridge;
	long long n;

	switch (opt) {
	case OPT_PLUGIN_DIR:
		if (arg[0] != '/')
			return cli_usage_error("bridge",
					       "--plugin-dir must be an absolute path: %s", arg);
		b->plugin_dir = arg;
		break;
	case OPT_RESOURCE:
		if (!bridge_resource_name_is_valid(arg))
			return cli_usage_error(
			    "bridge",
			    "--resource %s: not an extended resource name "
			    "(domain/name, no kubernetes.io/ or requests. prefix, "
			    "name at most 63 characters)",
			    arg);
		b->resource = arg;
		break;
	case OPT_STRATEGY:
		if (bridge_parse_strategies(arg, &b->strategies) < 0)
			return cli_usage_error(
			    "bridge",
			    "--device-list-strategy %s: expected a comma-separated "
			    "list of cdi-cri, cdi-annotations, device-specs",
			    arg);
		break;
	case OPT_SHARED:
		if (parse_int64(arg, &n) < 0 || n < 1 || n > 1000)
			return cli_usage_error("bridge",
					       "--shared %s: expected a number from 1 to "
					       "1000",
					       arg);
		b->shared = (unsigned)n;
		break;
	}
	return 0;
}

static const struct cli_parser bridge_parser = {
    .name = "bridge",
    .synopsis = "[OPTIONS]",
    .description =
	"Runs the kubelet device plugin: one device per HCA (ID = its PCI address) with its "
	"NUMA node and health, preferred allocation, and Allocate answers that carry CDI "
	"device names; one kubelet resource, on its own socket, per pool of the config file. "
	"Follows the node live: device nodes coming and going (inotify), port state and "
	"renames (every --rescan-interval), config edits (the file's directory is watched; an "
	"invalid file is refused and the previous config stays). Writes the CDI spec before "
	"it advertises a device and withdraws a device before the spec loses it; re-registers "
	"when the kubelet restarts; stops on SIGTERM or SIGINT.",
    .options = bridge_cli_options,
    .footer = "Exit status: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 bad usage.",
    .option = bridge_option,
};

/* One line an operator can read the effective settings from. */
static void log_start(const struct bridge_args *a)
{
	const struct bridge_options *b = &a->bridge;
	const struct daemon_options *d = &a->daemon;
	struct utsname u;
	char shared[16];

	snprintf(shared, sizeof(shared), "%u", b->shared ? b->shared : 1);
	log_struct(
	    LOG_LVL_INFO,
	    LOG_FIELDS("version", RDMA_CDI_VERSION, "commit", cli_commit(), "node", uname(&u) == 0 ? u.nodename : NULL,
		       "resource", b->resource ? b->resource : BRIDGE_DEFAULT_RESOURCE, "kind",
		       d->spec.kind, "shared", shared, "sysfs", a->common.disc.sysfs_root, "dev",
		       a->common.disc.dev_root, "host_dev", a->common.spec.dev_root, "spec_dir",
		       d->spec_dir, "config", d->config_path ? d->config_path : CFG_DEFAULT_PATH,
		       "plugin_dir", b->plugin_dir ? b->plugin_dir : BRIDGE_DEFAULT_PLUGIN_DIR),
	    "rdma-cdi %s bridge starting", cli_version());
}

int cmd_bridge(int argc, char **argv)
{
	struct bridge_args a = {};
	int r;

	r = cli_parse(&bridge_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		goto out;
	r = cli_resolve_node(&a.common, "bridge");
	if (r == 0)
		r = cli_daemon_options(&a.common, "bridge", &a.daemon);
	if (r != 0)
		goto out;
	log_start(&a);
	r = bridge_run(&a.daemon, &a.bridge) < 0 ? EXIT_FAIL : 0;
out:
	cli_common_done(&a.common);
	return r;
}
