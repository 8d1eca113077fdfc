/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi: the command line. Parses options, runs one job and decides what the user
 * sees; the work itself is in discovery/, specs/, cdi/ and bridge/.
 *
 * Exit status: 0 success; 1 failure (the cause is printed); 2 bad usage;
 * 3 no usable RDMA device (nothing written, an existing spec is left in place);
 * 4 `list` found invalid spec files or conflicting device names.
 */
#include <getopt.h>
#include <string.h>

#include "bridge.h"
#include "build-config.h"
#include "follow.h"
#include "keeper.h"
#include "cdi.h"
#include "common.h"
#include "config.h"
#include "discovery.h"
#include "hooks.h"
#include "specs.h"

enum {
	EXIT_FAIL = 1,
	EXIT_USAGE = 2,
	EXIT_NO_DEVICE = 3,
	EXIT_LIST_PROBLEMS = 4,
};

enum command {
	CMD_DISCOVER = 1 << 0,
	CMD_GENERATE = 1 << 1,
	CMD_LIST = 1 << 2,
	CMD_BRIDGE = 1 << 3
};

#define MAX_SPEC_DIRS 8

struct cli {
	enum command cmd;
	bool watch;
	struct disc_options disc;
	struct spec_options spec;
	struct spec_write_options write;
	struct bridge_options bridge;
	const char *spec_dirs[MAX_SPEC_DIRS];
	size_t n_spec_dirs;
	bool json;
};

enum {
	OPT_SYSFS_ROOT = 0x100,
	OPT_DEV_ROOT,
	OPT_SPEC_DIR,
	OPT_OUTPUT,
	OPT_KIND,
	OPT_FORMAT,
	OPT_WITH_MAD,
	OPT_HOOK_PATH,
	OPT_MEMLOCK,
	OPT_JSON,
	OPT_PLUGIN_DIR,
	OPT_RESOURCE,
	OPT_STRATEGY,
	OPT_SHARED,
	OPT_RESCAN_INTERVAL,
	OPT_LOG_LEVEL,
	OPT_LOG_FORMAT,
	OPT_WATCH,
	OPT_CONFIG,
};

/* Which commands take which option: anything else is a usage error, not silently ignored. */
static const struct {
	int opt;
	unsigned cmds;
} option_scope[] = {
    {OPT_SYSFS_ROOT, CMD_DISCOVER | CMD_GENERATE | CMD_BRIDGE},
    {OPT_DEV_ROOT, CMD_DISCOVER | CMD_GENERATE | CMD_BRIDGE},
    {OPT_SPEC_DIR, CMD_GENERATE | CMD_LIST | CMD_BRIDGE},
    {OPT_OUTPUT, CMD_GENERATE},
    {OPT_KIND, CMD_GENERATE | CMD_BRIDGE},
    {OPT_FORMAT, CMD_GENERATE},
    {OPT_WITH_MAD, CMD_GENERATE | CMD_BRIDGE},
    {OPT_HOOK_PATH, CMD_GENERATE | CMD_BRIDGE},
    {OPT_MEMLOCK, CMD_GENERATE | CMD_BRIDGE},
    {OPT_JSON, CMD_DISCOVER},
    {OPT_PLUGIN_DIR, CMD_BRIDGE},
    {OPT_RESOURCE, CMD_BRIDGE},
    {OPT_STRATEGY, CMD_BRIDGE},
    {OPT_SHARED, CMD_BRIDGE},
    {OPT_RESCAN_INTERVAL, CMD_BRIDGE | CMD_GENERATE},
    {OPT_WATCH, CMD_GENERATE},
    {OPT_CONFIG, CMD_GENERATE | CMD_BRIDGE},
};

static const struct option long_options[] = {
    {"sysfs-root", required_argument, NULL, OPT_SYSFS_ROOT},
    {"dev-root", required_argument, NULL, OPT_DEV_ROOT},
    {"spec-dir", required_argument, NULL, OPT_SPEC_DIR},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"kind", required_argument, NULL, OPT_KIND},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"with-mad", no_argument, NULL, OPT_WITH_MAD},
    {"hook-path", required_argument, NULL, OPT_HOOK_PATH},
    {"memlock", required_argument, NULL, OPT_MEMLOCK},
    {"json", no_argument, NULL, OPT_JSON},
    {"plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR},
    {"resource", required_argument, NULL, OPT_RESOURCE},
    {"device-list-strategy", required_argument, NULL, OPT_STRATEGY},
    {"shared", required_argument, NULL, OPT_SHARED},
    {"rescan-interval", required_argument, NULL, OPT_RESCAN_INTERVAL},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"watch", no_argument, NULL, OPT_WATCH},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"help", no_argument, NULL, 'h'},
    {},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: rdma-cdi COMMAND [OPTIONS]\n"
	    "\n"
	    "Gives containers RDMA devices through the Container Device Interface.\n"
	    "\n"
	    "Commands:\n"
	    "  discover          show the RDMA devices of this node (--json for scripts)\n"
	    "  generate          write the CDI spec for them\n"
	    "  list              list the CDI device names in the spec directories\n"
	    "  bridge            run the kubelet device plugin\n"
	    "  config check FILE validate a config file, show the pools it makes here\n"
	    "  version           print the version\n"
	    "\n"
	    "Options:\n"
	    "  --sysfs-root DIR            sysfs to read (default /sys)\n"
	    "  --dev-root DIR              where the device nodes live (default /dev)\n"
	    "  --spec-dir DIR              CDI spec directory (default /etc/cdi; list: "
	    "/etc/cdi and /var/run/cdi; repeatable)\n"
	    "  --output FILE               generate: write the spec here instead, - for stdout\n"
	    "  --kind VENDOR/CLASS         CDI kind (default " SPEC_DEFAULT_KIND ")\n"
	    "  --format json|yaml          generate: spec format (default json)\n"
	    "  --with-mad                  also give each HCA its umadN/issmN nodes\n"
	    "  --hook-path PATH            the memlock hook the spec runs (default %s)\n"
	    "  --memlock unlimited|BYTES   RLIMIT_MEMLOCK the hook sets (K, M, G suffixes)\n"
	    "  --json                      discover: print JSON\n"
	    "  --plugin-dir DIR            bridge: kubelet device-plugin dir "
	    "(default " BRIDGE_DEFAULT_PLUGIN_DIR ")\n"
	    "  --resource NAME             bridge: extended resource "
	    "(default " BRIDGE_DEFAULT_RESOURCE ")\n"
	    "  --device-list-strategy LIST bridge: cdi-cri,cdi-annotations,device-specs\n"
	    "                              (default cdi-cri,cdi-annotations)\n"
	    "  --shared N                  bridge: advertise each HCA N times\n"
	    "  --rescan-interval SEC       bridge, generate --watch: rescan devices and health\n"
	    "                              every SEC seconds (default 5; 0 = only on hotplug\n"
	    "                              and SIGHUP)\n"
	    "  --watch                     generate: keep the spec current in the foreground\n"
	    "  --config FILE               generate, bridge: the pools/settings file (default\n"
	    "                              " CFG_DEFAULT_PATH "; flags override it)\n"
	    "  --log-level LEVEL           error, warning, info (default), debug\n"
	    "  --log-format text|json      log line format\n"
	    "\n"
	    "Exit status: 0 success, 1 failure, 2 bad usage, 3 no usable RDMA device,\n"
	    "4 list found invalid spec files or conflicting names.\n",
	    RDMA_CDI_HOOK_PATH);
}

/* The hook's own parser: the spec never carries a value the hook would refuse. */
static bool memlock_is_valid(const char *s)
{
	rlim_t v;

	return hook_parse_memlock(s, &v) == 0;
}

static int parse_command(const char *s, enum command *ret)
{
	static const struct {
		const char *name;
		enum command cmd;
	} table[] = {
	    {"discover", CMD_DISCOVER},
	    {"generate", CMD_GENERATE},
	    {"list", CMD_LIST},
	    {"bridge", CMD_BRIDGE},
	};

	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (strcmp(s, table[i].name) == 0) {
			*ret = table[i].cmd;
			return 0;
		}
	return -EINVAL;
}

/* Returns 0, or EXIT_USAGE after printing why. */
static int parse_options(struct cli *cli, int argc, char **argv)
{
	int c;

	while ((c = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		const char *name = NULL;

		if (c == '?')
			return EXIT_USAGE;
		for (size_t i = 0; i < ELEMENTSOF(option_scope); i++)
			if (option_scope[i].opt == c && !(option_scope[i].cmds & cli->cmd)) {
				for (const struct option *o = long_options; o->name; o++)
					if (o->val == c)
						name = o->name;
				log_error("--%s does not apply to %s", name, argv[0]);
				return EXIT_USAGE;
			}

		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_SYSFS_ROOT:
			cli->disc.sysfs_root = optarg;
			break;
		case OPT_DEV_ROOT:
			if (optarg[0] != '/') {
				log_error("--dev-root must be an absolute path: %s", optarg);
				return EXIT_USAGE;
			}
			cli->disc.dev_root = optarg;
			cli->spec.dev_root = optarg;
			break;
		case OPT_SPEC_DIR:
			if (cli->n_spec_dirs >= MAX_SPEC_DIRS) {
				log_error("at most %d --spec-dir", MAX_SPEC_DIRS);
				return EXIT_USAGE;
			}
			cli->spec_dirs[cli->n_spec_dirs++] = optarg;
			break;
		case OPT_OUTPUT:
			cli->write.output = optarg;
			break;
		case OPT_KIND:
			if (!cdi_kind_is_valid(optarg)) {
				log_error(
				    "--kind %s: not a CDI kind: expected vendor/class, each at "
				    "least 2 characters of letters, digits, '_', '-' (and '.' "
				    "in the vendor), starting with a letter",
				    optarg);
				return EXIT_USAGE;
			}
			cli->spec.kind = optarg;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") == 0)
				cli->write.format = CDI_FORMAT_JSON;
			else if (strcmp(optarg, "yaml") == 0)
				cli->write.format = CDI_FORMAT_YAML;
			else {
				log_error("--format %s: expected json or yaml", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_WITH_MAD:
			cli->spec.with_mad = true;
			break;
		case OPT_HOOK_PATH:
			if (optarg[0] != '/') {
				log_error("--hook-path must be an absolute path: %s", optarg);
				return EXIT_USAGE;
			}
			cli->spec.hook_path = optarg;
			break;
		case OPT_MEMLOCK:
			if (!memlock_is_valid(optarg)) {
				log_error("--memlock %s: expected 'unlimited' or a positive byte "
					  "count with an optional K, M or G suffix",
					  optarg);
				return EXIT_USAGE;
			}
			cli->spec.memlock = optarg;
			break;
		case OPT_JSON:
			cli->json = true;
			break;
		case OPT_PLUGIN_DIR:
			if (optarg[0] != '/') {
				log_error("--plugin-dir must be an absolute path: %s", optarg);
				return EXIT_USAGE;
			}
			cli->bridge.plugin_dir = optarg;
			break;
		case OPT_RESOURCE:
			if (!bridge_resource_name_is_valid(optarg)) {
				log_error("--resource %s: not an extended resource name "
					  "(domain/name, no kubernetes.io/ or requests. prefix, "
					  "name at most 63 characters)",
					  optarg);
				return EXIT_USAGE;
			}
			cli->bridge.resource = optarg;
			break;
		case OPT_STRATEGY:
			if (bridge_parse_strategies(optarg, &cli->bridge.strategies) < 0) {
				log_error(
				    "--device-list-strategy %s: expected a comma-separated list "
				    "of cdi-cri, cdi-annotations, device-specs",
				    optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SHARED: {
			long long n;

			if (parse_int64(optarg, &n) < 0 || n < 1 || n > 1000) {
				log_error("--shared %s: expected a number from 1 to 1000", optarg);
				return EXIT_USAGE;
			}
			cli->bridge.shared = (unsigned)n;
			break;
		}
		case OPT_RESCAN_INTERVAL: {
			long long n;

			if (parse_int64(optarg, &n) < 0 || n < 0 || n > 86400) {
				log_error("--rescan-interval %s: expected seconds from 0 (only on "
					  "SIGHUP) to 86400",
					  optarg);
				return EXIT_USAGE;
			}
			/* The bridge's own convention: < 0 means no periodic rescan. */
			cli->bridge.rescan_interval = n == 0 ? -1 : (int)n;
			break;
		}
		case OPT_WATCH:
			cli->watch = true;
			break;
		case OPT_CONFIG:
			cli->bridge.config_path = optarg;
			cli->bridge.config_explicit = true;
			break;
		case OPT_LOG_LEVEL: {
			enum log_level l;

			if (log_parse_level(optarg, &l) < 0) {
				log_error("--log-level %s: expected error, warning, info or debug",
					  optarg);
				return EXIT_USAGE;
			}
			log_set_level(l);
			break;
		}
		case OPT_LOG_FORMAT:
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				log_error("--log-format %s: expected text or json", optarg);
				return EXIT_USAGE;
			}
			log_set_json(strcmp(optarg, "json") == 0);
			break;
		}
	}
	if (optind < argc) {
		log_error("%s: unexpected argument '%s'", argv[0], argv[optind]);
		return EXIT_USAGE;
	}
	if (cli->cmd != CMD_LIST && cli->n_spec_dirs > 1) {
		log_error("%s takes one --spec-dir", argv[0]);
		return EXIT_USAGE;
	}
	if (cli->write.output && cli->n_spec_dirs > 0) {
		log_error("--output and --spec-dir exclude each other");
		return EXIT_USAGE;
	}
	return 0;
}

/* Scans and prints what discovery found wrong, one warning each. */
static int scan(const struct cli *cli, struct disc_node **ret_node)
{
	const char *root = cli->disc.sysfs_root ? cli->disc.sysfs_root : "/sys";
	int r = disc_scan(&cli->disc, ret_node);

	if (r < 0)
		return log_error_errno(r, "reading sysfs at %s", root);
	for (size_t i = 0; i < (*ret_node)->n_problems; i++)
		log_warning("%s", (*ret_node)->problems[i]);
	return 0;
}

static void print_table(const struct disc_node *node)
{
	size_t index = 0;

	printf("%-5s %-14s %-13s %-17s %-4s %-9s %-4s %-10s %-7s %s\n", "INDEX", "NAME", "PCI",
	       "FUNCTION", "NUMA", "UVERBS", "PORT", "LINK", "STATE", "NETDEV");
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		char idx[16] = "-", numa[16] = "-", func[48];

		if (disc_device_usable(d))
			snprintf(idx, sizeof(idx), "%zu", index++);
		if (d->numa_node >= 0)
			snprintf(numa, sizeof(numa), "%d", d->numa_node);
		if (d->is_vf)
			snprintf(func, sizeof(func), "VF of %s", d->pf_pci[0] ? d->pf_pci : "?");
		else
			snprintf(func, sizeof(func), "%s", d->pci[0] ? "PF" : "-");

		for (size_t p = 0; p < (d->n_ports ? d->n_ports : 1); p++) {
			const struct disc_port *port = d->n_ports ? &d->ports[p] : NULL;
			char pnum[16] = "-";

			if (port)
				snprintf(pnum, sizeof(pnum), "%u", port->num);
			if (p == 0)
				printf("%-5s %-14s %-13s %-17s %-4s %-9s ", idx, d->name,
				       d->pci[0] ? d->pci : "-", func, numa,
				       d->has_uverbs ? d->uverbs.name : "-");
			else
				printf("%-5s %-14s %-13s %-17s %-4s %-9s ", "", "", "", "", "", "");
			printf("%-4s %-10s %-7s %s\n", pnum,
			       port && port->link_layer[0] ? port->link_layer : "-",
			       port && port->state_name[0] ? port->state_name : "-",
			       port && port->netdev[0] ? port->netdev : "-");
		}
	}
	if (node->has_rdma_cm)
		printf("rdma_cm: %u:%u\n", node->rdma_cm.major, node->rdma_cm.minor);
	else
		printf("rdma_cm: none (rdma_ucm not loaded?)\n");
}

static int cmd_discover(const struct cli *cli)
{
	struct disc_node *node = NULL;
	int r = scan(cli, &node);

	if (r < 0)
		return EXIT_FAIL;
	if (cli->json) {
		cJSON *j = disc_node_to_json(node);
		char *s = j ? cJSON_Print(j) : NULL;

		if (s)
			printf("%s\n", s);
		else
			r = log_error_errno(-ENOMEM, "formatting JSON");
		free(s);
		cJSON_Delete(j);
	} else {
		print_table(node);
	}
	disc_node_free(node);
	return r < 0 ? EXIT_FAIL : 0;
}

/* Warns when another file in our spec dir defines one of our names: runtimes drop it. */
static void warn_conflicts(const char *dir, const char *kind)
{
	struct cdi_listing *l = NULL;
	size_t klen = strlen(kind);

	if (cdi_list_dirs(&dir, 1, &l) < 0)
		return;
	for (size_t i = 0; i < l->n_conflicts; i++)
		if (strncmp(l->conflicts[i], kind, klen) == 0 && l->conflicts[i][klen] == '=')
			log_warning("%s: runtimes will refuse this device until the other "
				    "definition is removed",
				    l->conflicts[i]);
	cdi_listing_free(l);
}

int cmd_config(int argc, char **argv);

/* generate's settings from the config file (flags win); a missing default file is fine. */
static int generate_config(struct cli *cli, struct cfg **ret)
{
	const char *path = cli->bridge.config_path ? cli->bridge.config_path : CFG_DEFAULT_PATH;
	char err[512] = "";
	int r = cfg_load(path, ret, err, sizeof(err));

	if (r == -ENOENT && !cli->bridge.config_explicit)
		return 0;
	if (r < 0)
		return log_error_errno(r, "%s", err[0] ? err : path);
	if (!cli->spec.kind)
		cli->spec.kind = (*ret)->kind;
	if (!cli->spec.memlock)
		cli->spec.memlock = (*ret)->memlock;
	cli->spec.with_mad |= (*ret)->with_mad == 1;
	if (!cli->write.spec_dir && !cli->write.output)
		cli->write.spec_dir = (*ret)->spec_dir;
	return 0;
}

static int cmd_generate(struct cli *cli)
{
	_cleanup_(cfg_freep) struct cfg *cfg = NULL;
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_free_ char *path = NULL;
	struct disc_node *node = NULL;
	const char *kind = cli->spec.kind ? cli->spec.kind : SPEC_DEFAULT_KIND;
	const char *hook;
	char err[1024];
	size_t usable;
	bool changed = false;
	int r;

	if (cli->n_spec_dirs == 1)
		cli->write.spec_dir = cli->spec_dirs[0];
	if (generate_config(cli, &cfg) < 0)
		return EXIT_FAIL;
	if (!cli->watch && cli->bridge.rescan_interval != 0) {
		log_error("--rescan-interval applies to generate --watch only");
		return EXIT_USAGE;
	}
	if (cli->watch) {
		int interval = cli->bridge.rescan_interval;

		if (cli->write.output) {
			log_error("--watch keeps the spec dir current: it does not take --output");
			return EXIT_USAGE;
		}
		r = spec_watch_run(&(struct spec_watch_options){
		    .disc = cli->disc,
		    .spec = cli->spec,
		    .wo = cli->write,
		    .interval_sec = interval == 0  ? DISC_FOLLOW_DEFAULT_INTERVAL_SEC
				    : interval < 0 ? 0
						   : interval,
		});
		return r < 0 ? EXIT_FAIL : 0;
	}
	if (scan(cli, &node) < 0)
		return EXIT_FAIL;
	usable = disc_node_count_usable(node);
	r = spec_build(node, &cli->spec, &spec);
	disc_node_free(node);
	if (r == -ENODEV) {
		log_error("no usable RDMA device under %s (a device needs a uverbs entry in "
			  "class/infiniband_verbs); nothing written, any existing spec is left "
			  "in place",
			  cli->disc.sysfs_root ? cli->disc.sysfs_root : "/sys");
		return EXIT_NO_DEVICE;
	}
	if (r < 0) {
		log_error_errno(r, "building the CDI spec");
		return EXIT_FAIL;
	}
	r = spec_write(spec, &cli->write, &path, &changed, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return EXIT_FAIL;
	}
	hook = cli->spec.hook_path ? cli->spec.hook_path : RDMA_CDI_HOOK_PATH;
	if (access(hook, X_OK) < 0)
		log_warning("hook %s does not exist or is not executable here: containers that "
			    "use this spec will fail to start until it is installed",
			    hook);
	if (strcmp(path, "-") != 0) {
		log_info("%s %s: %zu devices of kind %s (cdiVersion %s)",
			 changed ? "wrote" : "unchanged", path, usable, kind,
			 cJSON_GetObjectItem(spec, "cdiVersion")->valuestring);
		if (!cli->write.output)
			warn_conflicts(cli->write.spec_dir ? cli->write.spec_dir : SPEC_DEFAULT_DIR,
				       kind);
	}
	return 0;
}

static int cmd_list(const struct cli *cli)
{
	static const char *const default_dirs[] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR};
	const char *const *dirs = cli->n_spec_dirs ? cli->spec_dirs : default_dirs;
	size_t n = cli->n_spec_dirs ? cli->n_spec_dirs : ELEMENTSOF(default_dirs);
	struct cdi_listing *l = NULL;
	bool problems;
	int r;

	r = cdi_list_dirs(dirs, n, &l);
	if (r < 0) {
		log_error_errno(r, "reading the spec directories");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < l->n_entries; i++) {
		const struct cdi_list_entry *e = &l->entries[i];

		if (e->error) {
			log_warning("%s/%s: invalid, runtimes ignore it: %s", e->dir, e->file,
				    e->error);
			continue;
		}
		for (size_t k = 0; k < e->n_names; k++)
			printf("%s\t%s/%s\n", e->names[k], e->dir, e->file);
	}
	for (size_t i = 0; i < l->n_conflicts; i++)
		log_warning("defined twice, runtimes drop it: %s", l->conflicts[i]);
	problems = l->n_conflicts > 0;
	for (size_t i = 0; i < l->n_entries; i++)
		problems = problems || l->entries[i].error;
	cdi_listing_free(l);
	return problems ? EXIT_LIST_PROBLEMS : 0;
}

static int cmd_bridge(struct cli *cli)
{
	int r;

	cli->bridge.disc = cli->disc;
	cli->bridge.spec = cli->spec;
	if (cli->n_spec_dirs == 1)
		cli->bridge.spec_dir = cli->spec_dirs[0];
	if (!cli->bridge.spec.kind)
		cli->bridge.spec.kind = SPEC_DEFAULT_KIND;
	r = bridge_run(&cli->bridge);
	return r < 0 ? EXIT_FAIL : 0;
}

int cmd_doctor(int argc, char **argv); /* cmd-doctor.c */

int main(int argc, char **argv)
{
	struct cli cli = {};
	int r;

	log_set_ident("rdma-cdi");
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("rdma-cdi %s\n", RDMA_CDI_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "config") == 0)
		return cmd_config(argc - 1, argv + 1);
	if (strcmp(argv[1], "doctor") == 0)
		return cmd_doctor(argc - 1, argv + 1);
	if (parse_command(argv[1], &cli.cmd) < 0) {
		log_error("unknown command '%s' (see rdma-cdi --help)", argv[1]);
		return EXIT_USAGE;
	}
	r = parse_options(&cli, argc - 1, argv + 1);
	if (r != 0)
		return r;

	switch (cli.cmd) {
	case CMD_DISCOVER:
		return cmd_discover(&cli);
	case CMD_GENERATE:
		return cmd_generate(&cli);
	case CMD_LIST:
		return cmd_list(&cli);
	case CMD_BRIDGE:
		return cmd_bridge(&cli);
	}
	return EXIT_FAIL;
}
