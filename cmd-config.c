/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdma-cdi config check [FILE]`: validates a config file offline and prints the pools
 * it would make on this node (config/config.h does the work).
 */
#include <getopt.h>
#include <string.h>

#include "config.h"
#include "discovery.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2

static void config_usage(FILE *f)
{
	fprintf(f, "Usage: rdma-cdi config check [OPTIONS] [FILE]\n"
		   "\n"
		   "Validates FILE (default " CFG_DEFAULT_PATH ") and prints the pools it\n"
		   "would make on this node: their devices, and the warnings (overlaps, pools\n"
		   "that match nothing). Exit 0 valid, 1 invalid or unreadable, 2 bad usage.\n"
		   "\n"
		   "Options:\n"
		   "  --sysfs-root DIR   sysfs to read (default /sys)\n"
		   "  --dev-root DIR     where the device nodes live (default /dev)\n"
		   "  -h, --help         this text\n");
}

int cmd_config(int argc, char **argv);

int cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"sysfs-root", required_argument, NULL, 's'},
	    {"dev-root", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	struct disc_options disc = {0};
	struct disc_node *node = NULL;
	const char *path;
	char err[512] = "";
	int opt, r;

	if (argc < 2 || strcmp(argv[1], "check") != 0) {
		if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
			config_usage(stdout);
			return 0;
		}
		config_usage(stderr);
		return EXIT_USAGE;
	}
	argc--;
	argv++;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			disc.sysfs_root = optarg;
			break;
		case 'd':
			disc.dev_root = optarg;
			break;
		case 'h':
			config_usage(stdout);
			return 0;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		log_error("config check takes one FILE");
		return EXIT_USAGE;
	}
	path = optind < argc ? argv[optind] : CFG_DEFAULT_PATH;
	r = cfg_load(path, &c, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err[0] ? err : strerror(-r));
		return EXIT_FAIL;
	}
	r = disc_scan(&disc, &node);
	if (r < 0) {
		log_error_errno(r, "reading sysfs at %s",
				disc.sysfs_root ? disc.sysfs_root : "/sys");
		return EXIT_FAIL;
	}
	printf("%s: valid\n", path);
	r = cfg_report(c, node, stdout, err, sizeof(err));
	disc_node_free(node);
	if (r < 0) {
		log_error("%s", err[0] ? err : strerror(-r));
		return EXIT_FAIL;
	}
	return 0;
}
