/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-cdi generate: scan the node and write its CDI spec; --watch keeps it current as a
 * daemon (generate-watch.c, in rdma-cdi-watch: see cli.h). */
#include <string.h>

#include <cjson/cJSON.h>

#include "cdi.h"
#include "cli.h"
#include "common.h"
#include "build-config.h"
#include "daemon.h"

enum {
	OPT_OUTPUT = CLI_OPT_COMMAND,
	OPT_FORMAT,
	OPT_WATCH,
	OPT_NETNS_MOVE,
};

struct generate_args {
	struct cli_common common;
	const char *output;
	const char *format; /* as given, NULL = from --output's extension, else json */
	bool watch;
};

static const struct cli_option generate_options[] = {
    CLI_OPTIONS_NODE,
    {"spec-dir", required_argument, CLI_OPT_SPEC_DIR, "DIR",
     "CDI spec directory to write into (default " SPEC_DEFAULT_DIR ")"},
    {"output", required_argument, OPT_OUTPUT, "FILE",
     "write the spec to FILE instead (- for stdout); a .json, .yaml or .yml name chooses "
     "the format"},
    {"format", required_argument, OPT_FORMAT, "json|yaml",
     "spec format (default: from --output's extension, else json)"},
    CLI_OPTION_CONFIG,
    {"watch", no_argument, OPT_WATCH, NULL,
     "keep the spec current in the foreground: device nodes coming and going, port state "
     "and renames, SIGHUP, config edits (an invalid one is refused and the previous config "
     "stays); for a systemd unit (sd_notify READY=1)"},
    CLI_OPTION_RESCAN_INTERVAL,
    {"netns-move", no_argument, OPT_NETNS_MOVE, NULL,
     "each device's hook moves it into the container's network namespace (RDMA netns mode "
     "exclusive; a container in the host's namespace is left alone); the container fails "
     "to start when the kernel cannot move it"},
    CLI_OPTIONS_SPEC,
    CLI_OPTIONS_GLOBAL,
    {},
};

static int generate_option(void *ctx, int opt, const char *arg)
{
	struct generate_args *a = ctx;

	switch (opt) {
	case OPT_OUTPUT:
		a->output = arg;
		break;
	case OPT_FORMAT:
		if (strcmp(arg, "json") != 0 && strcmp(arg, "yaml") != 0)
			return cli_usage_error("generate", "--format %s: expected json or yaml",
					       arg);
		a->format = arg;
		break;
	case OPT_WATCH:
		a->watch = true;
		break;
	case OPT_NETNS_MOVE:
		a->common.spec.netns_move = true;
		break;
	}
	return 0;
}

static const struct cli_parser generate_parser = {
    .name = "generate",
    .synopsis = "[OPTIONS]",
    .description =
	"Scans the node and writes the CDI spec of its usable RDMA devices (each HCA by its "
	"RDMA name, by its index in PCI order, and 'all') into the spec directory as "
	"<vendor>-<class>.json or .yaml, atomically; an unchanged spec is left untouched and "
	"files rdma-cdi did not write are never replaced. When the node has no usable device "
	"nothing is written and an existing spec stays in force.",
    .options = generate_options,
    .footer = "Exit status: 0 success, 1 failure (the cause is printed), 2 bad usage, 3 no "
	      "usable RDMA device (nothing written).",
    .option = generate_option,
};

/* The format: --format, else the output file's extension, else JSON. */
static int choose_format(const struct generate_args *a, enum cdi_format *ret)
{
	enum cdi_format by_name = CDI_FORMAT_JSON;
	size_t n = a->output ? strlen(a->output) : 0;
	bool yml = n > 4 && strcmp(a->output + n - 4, ".yml") == 0;
	bool named = yml || (a->output && cdi_format_from_file_name(a->output, &by_name) == 0);

	if (yml) /* runtimes read only *.json and *.yaml from a spec dir */
		by_name = CDI_FORMAT_YAML;

	if (!a->format) {
		*ret = named ? by_name : CDI_FORMAT_JSON;
		return 0;
	}
	*ret = strcmp(a->format, "yaml") == 0 ? CDI_FORMAT_YAML : CDI_FORMAT_JSON;
	if (named && by_name != *ret) {
		_cleanup_free_ char *q = quote_untrusted(a->output);

		return cli_usage_error("generate",
				       "--format %s contradicts --output %s: drop "
				       "--format or rename the file",
				       a->format, q);
	}
	return 0;
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

static int generate(struct generate_args *a, const struct spec_write_options *wo)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_free_ char *path = NULL, *hook = NULL, *qpath = NULL;
	struct cli_common *c = &a->common;
	struct disc_node *node = NULL;
	const char *kind = c->spec.kind ? c->spec.kind : SPEC_DEFAULT_KIND;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	size_t usable;
	bool changed = false;
	int r;

	r = cli_scan(c, &node);
	if (r != 0)
		return r;
	usable = disc_node_count_usable(node);
	r = spec_build(node, &c->spec, &spec);
	if (r == -ENODEV) {
		_cleanup_free_ char *q = quote_untrusted(cli_sysfs_root(c));

		log_error("no usable RDMA device under %s (a device needs a uverbs entry in "
			  "class/infiniband_verbs); nothing written, any existing spec is left "
			  "in place",
			  q);
		cli_explain_no_device(c, node, LOG_LVL_ERROR);
		disc_node_free(node);
		return EXIT_NO_DEVICE;
	}
	disc_node_free(node);
	if (r < 0) {
		log_error_errno(r, "building the CDI spec");
		return EXIT_FAIL;
	}
	r = spec_write(spec, wo, &path, &changed, &err);
	if (r < 0) {
		log_error("%s (%s)", rc_error_msg(err, r), spec_write_fix(r));
		return EXIT_FAIL;
	}
	hook = cli_host_path(c, c->spec.hook_path ? c->spec.hook_path : RDMA_CDI_HOOK_PATH);
	if (hook && access(hook, X_OK) < 0) {
		_cleanup_free_ char *q = quote_untrusted(hook);

		log_warning("hook %s does not exist or is not executable here: containers that "
			    "use this spec will fail to start until it is installed",
			    q);
	}
	if (strcmp(path, "-") == 0)
		return 0;
	qpath = quote_untrusted(path);
	log_info("%s %s: %zu devices of kind %s (cdiVersion %s)", changed ? "wrote" : "unchanged",
		 qpath, usable, kind, cJSON_GetObjectItem(spec, "cdiVersion")->valuestring);
	if (!wo->output)
		warn_conflicts(wo->spec_dir ? wo->spec_dir : SPEC_DEFAULT_DIR, kind);
	return 0;
}

/* The config file's settings under the flags; a missing default file is no config. */
static int apply_config(struct generate_args *a, struct spec_write_options *wo, struct cfg **ret)
{
	struct cli_common *c = &a->common;
	const char *path = c->config_path ? c->config_path : CFG_DEFAULT_PATH;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = cfg_load(path, ret, &err);

	if (r == -ENOENT && !c->config_path)
		return 0;
	if (r < 0) {
		log_error("%s", rc_error_msg(err, r));
		return EXIT_FAIL;
	}
	if (!c->spec.kind)
		c->spec.kind = (*ret)->kind;
	if (!c->spec.memlock)
		c->spec.memlock = (*ret)->memlock;
	c->spec.with_mad |= (*ret)->with_mad == 1;
	if (!wo->spec_dir && !wo->output)
		wo->spec_dir = (*ret)->spec_dir;
	return 0;
}

/* --watch: the daemon, in rdma-cdi-watch (this function is not reached elsewhere). */
static int watch(struct generate_args *a, const struct spec_write_options *wo)
{
	struct daemon_options o;
	int r;

	if (wo->output)
		return cli_usage_error("generate", "--watch keeps the spec dir current: it does "
						   "not take --output");
	r = cli_daemon_options(&a->common, "generate", &o);
	if (r != 0)
		return r;
	o.spec_format = wo->format;
	return cli_generate_watch(&o) < 0 ? EXIT_FAIL : 0;
}

int cmd_generate(int argc, char **argv)
{
	_cleanup_(cfg_freep) struct cfg *cfg = NULL;
	struct generate_args a = {};
	struct spec_write_options wo = {};
	int r;

	r = cli_parse(&generate_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		goto out;
	if (a.watch && !cli_generate_watch) {
		/* rdma-cdi-watch checks the arguments again, and says what is wrong once. */
		cli_common_done(&a.common);
		return cli_exec_helper("generate", CLI_WATCH_HELPER, argc, argv);
	}
	r = EXIT_USAGE;
	if (a.common.n_spec_dirs > 1) {
		cli_usage_error("generate", "takes one --spec-dir");
		goto out;
	}
	if (a.output && a.common.n_spec_dirs > 0) {
		cli_usage_error("generate", "--output and --spec-dir exclude each other");
		goto out;
	}
	if (choose_format(&a, &wo.format) != 0)
		goto out;
	wo.output = a.output;
	wo.spec_dir = a.common.n_spec_dirs ? a.common.spec_dirs[0] : NULL;
	/* Each `generate` is a start: a killed one may have left its temp file. */
	wo.remove_stale_temps = true;
	if (a.common.rescan_given && !a.watch) {
		cli_usage_error("generate", "--rescan-interval applies to --watch only");
		goto out;
	}
	/* The daemon loads the config itself, and follows its edits. */
	r = a.watch ? 0 : apply_config(&a, &wo, &cfg);
	if (r == 0)
		r = cli_resolve_node(&a.common, "generate");
	if (r == 0)
		r = a.watch ? watch(&a, &wo) : generate(&a, &wo);
out:
	cli_common_done(&a.common);
	return r;
}
