/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-cdi dra: the kubelet DRA plugin (the work is in dra/). */
#include <string.h>

#include "cli.h"
#include "daemon.h"
#include "common.h"
#include "dra.h"
#include "build-config.h"

enum {
	OPT_DRIVER_NAME = CLI_OPT_COMMAND,
	OPT_NODE_NAME,
	OPT_REGISTRY_DIR,
	OPT_PLUGIN_DIR,
	OPT_KUBECONFIG,
};

struct dra_args {
	struct cli_common common;
	struct daemon_options daemon;
	struct dra_options dra;
};

static const struct cli_option dra_cli_options[] = {
    {"driver-name", required_argument, OPT_DRIVER_NAME, "NAME",
     "the DRA driver's name, a DNS subdomain of at most 63 characters (default " DRA_DEFAULT_DRIVER
     ")"},
    {"node-name", required_argument, OPT_NODE_NAME, "NAME",
     "this node's Kubernetes name, also the name of its device pool (default $NODE_NAME; "
     "required)"},
    {"registry-dir", required_argument, OPT_REGISTRY_DIR, "DIR",
     "the kubelet's plugin registry directory (default " DRA_DEFAULT_REGISTRY_DIR ")"},
    {"plugin-dir", required_argument, OPT_PLUGIN_DIR, "DIR",
     "the driver's directory: its socket and checkpoint (default " DRA_DEFAULT_PLUGIN_ROOT
     "/DRIVER)"},
    {"kubeconfig", required_argument, OPT_KUBECONFIG, "FILE",
     "API server credentials (default: the in-cluster service account)"},
    CLI_OPTION_RESCAN_INTERVAL,
    CLI_OPTION_METRICS_ADDRESS,
    CLI_OPTIONS_NODE,
    {"spec-dir", required_argument, CLI_OPT_SPEC_DIR, "DIR",
     "CDI spec directory for the shared spec and the per-claim specs (default: the config's "
     "specDir, else " SPEC_DYNAMIC_DIR ")"},
    CLI_OPTION_CONFIG,
    CLI_OPTIONS_SPEC,
    CLI_OPTIONS_GLOBAL,
    {},
};

static int absolute_dir(const char *opt, const char *arg, const char **ret)
{
	if (arg[0] != '/')
		return cli_usage_error("dra", "%s must be an absolute path: %s", opt, arg);
	*ret = arg;
	return 0;
}

static int dra_option(void *ctx, int opt, const char *arg)
{
	struct dra_options *o = &((struct dra_args *)ctx)->dra;

	switch (opt) {
	case OPT_DRIVER_NAME:
		if (!dra_driver_name_is_valid(arg))
			return cli_usage_error(
			    "dra",
			    "--driver-name %s: not a DNS subdomain of at most "
			    "%d characters (lowercase letters, digits, '-', '.')",
			    arg, DRA_DRIVER_NAME_MAX);
		o->driver_name = arg;
		break;
	case OPT_NODE_NAME:
		if (!dra_node_name_is_valid(arg))
			return cli_usage_error("dra", "--node-name %s: not a DNS subdomain", arg);
		o->node_name = arg;
		break;
	case OPT_REGISTRY_DIR:
		return absolute_dir("--registry-dir", arg, &o->registry_dir);
	case OPT_PLUGIN_DIR:
		return absolute_dir("--plugin-dir", arg, &o->plugin_dir);
	case OPT_KUBECONFIG:
		o->kubeconfig = arg;
		break;
	}
	return 0;
}

static const struct cli_parser dra_parser = {
    .name = "dra",
    .synopsis = "[OPTIONS]",
    .description =
	"Runs the kubelet DRA plugin (resource.k8s.io/v1): registers with the kubelet's plugin "
	"watcher, publishes this node's usable HCAs as ResourceSlices (one pool named after the "
	"node, devices named after their PCI address, with their PCIe root, NUMA node and RDMA "
	"attributes, and a NoSchedule taint while unhealthy), answers NodePrepareResources with "
	"the CDI names of the allocated HCAs plus a per-claim CDI device carrying the claim's "
	"environment, and streams device health. Shares the CDI spec, the config pools and the "
	"sysfs watching with the bridge; follows hotplug, port state and config edits live; "
	"keeps what is prepared in a checkpoint in the plugin dir, so Unprepare works after a "
	"restart; stops on SIGTERM or SIGINT.",
    .options = dra_cli_options,
    .footer = "Exit status: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 bad usage.",
    .option = dra_option,
};

static void log_start(const struct dra_args *a)
{
	const struct dra_options *o = &a->dra;
	const struct daemon_options *d = &a->daemon;

	log_struct(LOG_LVL_INFO,
		   LOG_FIELDS("version", RDMA_CDI_VERSION, "commit", cli_commit(), "driver",
			      o->driver_name ? o->driver_name : DRA_DEFAULT_DRIVER, "node",
			      o->node_name, "kind", d->spec.kind, "sysfs",
			      a->common.disc.sysfs_root, "dev", a->common.disc.dev_root, "host_dev",
			      a->common.spec.dev_root, "spec_dir", d->spec_dir, "config",
			      d->config_path ? d->config_path : CFG_DEFAULT_PATH, "plugin_dir",
			      o->plugin_dir, "registry_dir",
			      o->registry_dir ? o->registry_dir : DRA_DEFAULT_REGISTRY_DIR,
			      "kubeconfig", o->kubeconfig ? o->kubeconfig : "in-cluster"),
		   "rdma-cdi %s dra starting", cli_version());
}

int cmd_dra(int argc, char **argv)
{
	struct dra_args a = {};
	int r;

	r = cli_parse(&dra_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		goto out;
	if (!a.dra.node_name) {
		const char *env = getenv("NODE_NAME");

		if (!env || !env[0]) {
			r = cli_usage_error("dra", "no node name: give --node-name or set "
						   "NODE_NAME (a DaemonSet sets it from "
						   "spec.nodeName)");
			goto out;
		}
		if (!dra_node_name_is_valid(env)) {
			r = cli_usage_error("dra", "NODE_NAME=%s: not a DNS subdomain", env);
			goto out;
		}
		a.dra.node_name = env;
	}
	r = cli_resolve_node(&a.common, "dra");
	if (r == 0)
		r = cli_daemon_options(&a.common, "dra", &a.daemon);
	if (r != 0)
		goto out;
	log_start(&a);
	r = dra_run(&a.daemon, &a.dra) < 0 ? EXIT_FAIL : 0;
out:
	cli_common_done(&a.common);
	return r;
}
