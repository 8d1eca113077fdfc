/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi config check [--strict] [FILE]: validates a config file offline and prints the
 * pools it would make on this node. rdma-cdi config convert --from SOURCE FILE: writes the
 * rdma-cdi config equivalent to another plugin's config.json. config/config.h does the
 * work; this file reads the files and decides what is printed and the exit status.
 */
#include <fcntl.h>
#include <string.h>

#include "cli.h"
#include "common.h"

enum { OPT_STRICT = CLI_OPT_COMMAND, OPT_FROM };

struct config_args {
	struct cli_common common;
	bool strict;
	const char *from;
};

static const struct cli_option config_options[] = {
    {"strict", no_argument, OPT_STRICT, NULL,
     "check: a pool that gets no device on this node makes the exit status 5"},
    {"from", required_argument, OPT_FROM, "rdma-shared|sriov-dp",
     "convert: the plugin whose config.json FILE is (k8s-rdma-shared-dev-plugin, "
     "sriov-network-device-plugin)"},
    CLI_OPTIONS_NODE,
    CLI_OPTIONS_GLOBAL,
    {},
};

static int config_option(void *ctx, int opt, const char *arg)
{
	struct config_args *a = ctx;
	enum cfg_source s;

	switch (opt) {
	case OPT_STRICT:
		a->strict = true;
		break;
	case OPT_FROM:
		if (cfg_source_from_string(arg, &s) < 0)
			return cli_usage_error("config",
					       "--from %s: expected rdma-shared or sriov-dp", arg);
		a->from = arg;
		break;
	}
	return 0;
}

static const struct cli_parser config_parser = {
    .name = "config",
    .synopsis = "check [--strict] [OPTIONS] [FILE]\n"
		"       rdma-cdi config convert --from rdma-shared|sriov-dp FILE|-",
    .description = "check validates FILE (default " CFG_DEFAULT_PATH ") as the bridge and "
		   "generate would, and prints the pools it makes on this node: each pool's mode "
		   "and devices, the usable devices no pool takes, and the warnings (a device "
		   "several pools match, a pool that gets no device). Each error of the file is "
		   "printed on a line of its own, naming the file, line, column and key. "
		   "convert reads the config.json of k8s-rdma-shared-dev-plugin or "
		   "sriov-network-device-plugin (- for standard input) and writes the equivalent "
		   "rdma-cdi config to standard output, with a comment wherever the meaning "
		   "changes; what has no equivalent is refused, one line per key.",
    .options = config_options,
    .footer = "Exit status: 0 valid (check) or converted (convert); 1 invalid, unreadable or "
	      "not convertible; 2 bad usage; 5 check --strict: a pool gets no device on this "
	      "node.",
    .max_args = 2,
    .option = config_option,
};

/* Every error of a file, one line each; a syntax error is said to end the reading. */
static int print_errors(const struct cfg_errors *e, int r, const struct rc_error *err)
{
	if (e->n == 0) {
		log_error("%s", rc_error_msg(err, r));
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < e->n; i++)
		log_error("%s", e->v[i].msg);
	if (e->n_more > 0)
		log_error("... and %zu more error%s", e->n_more, e->n_more == 1 ? "" : "s");
	if (r == -EBADMSG)
		log_info("a syntax error ends the reading: errors after it show once it is fixed");
	return EXIT_FAIL;
}

/* Pools that get no device on node (--strict), or -errno. */
static int empty_pools(const struct cfg *c, const struct disc_node *node, struct rc_error **err)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	int r = cfg_assign(c, node, &a, err), n = 0;

	if (r < 0)
		return r;
	for (size_t j = 0; j < a->n_pools; j++)
		n += a->n_per_pool[j] == 0;
	return n;
}

static int config_check(struct config_args *a, const char *path)
{
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	struct cfg_errors errs = {};
	struct disc_node *node = NULL;
	int r;

	r = cfg_load_all(path, &c, &errs, &err);
	if (r < 0) {
		r = print_errors(&errs, r, err);
		cfg_errors_clear(&errs);
		return r;
	}
	r = cli_resolve_node(&a->common, "config");
	if (r == 0)
		r = cli_scan(&a->common, &node);
	if (r != 0)
		return r;
	printf("%s: valid\n", path);
	r = cfg_report(c, node, stdout, &err);
	if (r == 0 && a->strict)
		r = empty_pools(c, node, &err);
	disc_node_free(node);
	if (r < 0) {
		log_error("%s", rc_error_msg(err, r));
		return EXIT_FAIL;
	}
	if (r > 0) {
		log_error("%s: --strict: %d pool%s no device on this node", path, r,
			  r == 1 ? " gets" : "s get");
		return EXIT_CONFIG_UNMATCHED;
	}
	return 0;
}

static int config_convert(const struct config_args *a, const char *path)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	_cleanup_free_ char *buf = NULL, *text = NULL;
	bool in = !strcmp(path, "-");
	const char *name = in ? "<stdin>" : path;
	struct cfg_errors errs = {};
	enum cfg_source from;
	size_t len;
	int r;

	if (cfg_source_from_string(a->from, &from) < 0) /* usage_problem() saw to it */
		return EXIT_USAGE;
	r = in ? read_full_fd(STDIN_FILENO, CFG_FILE_MAX, &buf, &len)
	       : read_full_file_at(AT_FDCWD, path, CFG_FILE_MAX, false, &buf, &len);
	if (r == -EFBIG)
		log_error("%s: larger than %d bytes", name, CFG_FILE_MAX);
	else if (r == -EBADFD)
		log_error("%s: not a regular file", name);
	else if (r < 0)
		log_error_errno(r, "%s", name);
	if (r < 0)
		return EXIT_FAIL;
	r = cfg_convert(from, buf, len, name, &text, &errs, &err);
	if (r < 0) {
		r = print_errors(&errs, r, err);
		cfg_errors_clear(&errs);
		return r;
	}
	if (fputs(text, stdout) < 0 || fflush(stdout) != 0) {
		log_error_errno(-EIO, "writing to stdout");
		return EXIT_FAIL;
	}
	return 0;
}

/* Why the arguments make no command, or NULL. */
static const char *usage_problem(const struct config_args *a, const char *sub, const char *file)
{
	if (!strcmp(sub, "check"))
		return a->from ? "--from is an option of convert, not of check" : NULL;
	if (strcmp(sub, "convert"))
		return "expected 'config check [FILE]' or 'config convert --from "
		       "rdma-shared|sriov-dp FILE'";
	if (a->strict)
		return "--strict is an option of check, not of convert";
	if (a->common.host_root || a->common.sysfs_root || a->common.dev_root)
		return "convert reads no node: --host-root, --sysfs-root and --dev-root are "
		       "check's";
	if (!a->from)
		return "convert needs --from rdma-shared or sriov-dp";
	if (!file)
		return "convert needs FILE (- for standard input)";
	return NULL;
}

int cmd_config(int argc, char **argv)
{
	struct config_args a = {};
	const char *sub, *file, *why;
	int first, r;

	r = cli_parse(&config_parser, &a, &a.common, argc, argv, &first);
	if (r != CLI_CONTINUE)
		goto out;
	sub = first < argc ? argv[first] : "";
	file = first + 1 < argc ? argv[first + 1] : NULL;
	why = usage_problem(&a, sub, file);
	if (why)
		r = cli_usage_error("config", "%s", why);
	else if (!strcmp(sub, "check"))
		r = config_check(&a, file ? file : CFG_DEFAULT_PATH);
	else
		r = config_convert(&a, file);
out:
	cli_common_done(&a.common);
	return r;
}
