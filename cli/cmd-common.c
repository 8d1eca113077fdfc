/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the commands share: the option-table parser and --help printer, the node options
 * (--host-root, --sysfs-root, --dev-root), the spec options, and the messages that turn
 * "no device" or "cannot read" into a cause and a fix.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common.h"
#include "build-config.h"
#include "daemon.h"

#define HELP_INDENT 30
#define HELP_WIDTH 79

void cli_common_done(struct cli_common *c)
{
	free(c->sysfs_buf);
	free(c->dev_buf);
	c->sysfs_buf = c->dev_buf = NULL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	_cleanup_free_ char *msg = NULL;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	log_error("%s%s%s (see 'rdma-cdi %s%s--help')", cmd ? cmd : "", cmd ? ": " : "",
		  msg ? msg : fmt, cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

/* Writes text from column col on, wrapped at HELP_WIDTH, continuation lines at indent. */
static void print_wrapped(FILE *f, const char *text, size_t col, size_t indent)
{
	const char *p = text;

	while (*p) {
		size_t room = col < HELP_WIDTH ? HELP_WIDTH - col : 1, n = strlen(p), cut = n;

		if (n > room) {
			cut = room;
			while (cut > 0 && p[cut] != ' ')
				cut--;
			if (cut == 0) /* one long word: let it overflow */
				for (cut = room; p[cut] && p[cut] != ' '; cut++)
					;
		}
		fprintf(f, "%.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
		if (*p)
			fprintf(f, "%*s", (int)indent, "");
		col = indent;
	}
}

void cli_print_help(const struct cli_parser *p, FILE *f)
{
	fprintf(f, "Usage: rdma-cdi %s %s\n\n", p->name, p->synopsis);
	print_wrapped(f, p->description, 0, 0);
	fprintf(f, "\nOptions:\n");
	for (const struct cli_option *o = p->options; o->name; o++) {
		int n = fprintf(f, "  %s--%s%s%s", o->val == CLI_OPT_HELP ? "-h, " : "", o->name,
				o->arg ? " " : "", o->arg ? o->arg : "");

		if (n < 0)
			return;
		if (n >= HELP_INDENT - 1) {
			fprintf(f, "\n%*s", HELP_INDENT, "");
		} else {
			fprintf(f, "%*s", HELP_INDENT - n, "");
		}
		print_wrapped(f, o->help, HELP_INDENT, HELP_INDENT);
	}
	if (p->footer) {
		fprintf(f, "\n");
		print_wrapped(f, p->footer, 0, 0);
	}
}

/* --rescan-interval: 1, or EXIT_USAGE. */
static int rescan_option(const char *cmd, struct cli_common *c, const char *arg)
{
	long long n;

	if (parse_int64(arg, &n) < 0 || n < 0 || n > 86400)
		return cli_usage_error(cmd,
				       "--rescan-interval %s: expected seconds from 0 (only hotplug "
				       "events and SIGHUP) to 86400",
				       arg);
	c->rescan_sec = (unsigned)n;
	c->rescan_given = true;
	return 1;
}

/* --metrics-address: 1, or EXIT_USAGE naming the cause. */
static int metrics_address_option(const char *cmd, struct cli_common *c, const char *arg)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	struct sockaddr_storage ss;
	socklen_t len;
	int r = parse_listen_address(arg, &ss, &len, &err);

	if (r < 0)
		return cli_usage_error(cmd, "--metrics-address %s", rc_error_msg(err, r));
	c->metrics_address = arg;
	return 1;
}

/* 1 handled, 0 not shared, EXIT_USAGE. */
static int shared_option(const struct cli_parser *p, struct cli_common *c, int opt, const char *arg)
{
	const char *cmd = p->name;
	enum log_level level;

	switch (opt) {
	case CLI_OPT_LOG_LEVEL:
		if (log_parse_level(arg, &level) < 0)
			return cli_usage_error(
			    cmd, "--log-level %s: expected error, warning, info or debug", arg);
		log_set_level(level);
		return 1;
	case CLI_OPT_LOG_FORMAT:
		if (log_parse_format(arg) < 0)
			return cli_usage_error(cmd, "--log-format %s: expected text or json", arg);
		return 1;
	case CLI_OPT_HOST_ROOT:
		if (arg[0] != '/')
			return cli_usage_error(cmd, "--host-root must be an absolute path: %s",
					       arg);
		c->host_root = arg;
		return 1;
	case CLI_OPT_SYSFS_ROOT:
		c->sysfs_root = arg;
		return 1;
	case CLI_OPT_DEV_ROOT:
		if (arg[0] != '/')
			return cli_usage_error(cmd, "--dev-root must be an absolute path: %s", arg);
		c->dev_root = arg;
		return 1;
	case CLI_OPT_KIND:
		if (!cdi_kind_is_valid(arg))
			return cli_usage_error(
			    cmd,
			    "--kind %s: not a CDI kind: expected vendor/class, each at least 2 "
			    "characters of letters, digits, '_', '-' (and '.' in the vendor), "
			    "starting with a letter",
			    arg);
		c->spec.kind = arg;
		return 1;
	case CLI_OPT_WITH_MAD:
		c->spec.with_mad = true;
		return 1;
	case CLI_OPT_HOOK_PATH:
		if (arg[0] != '/')
			return cli_usage_error(cmd, "--hook-path must be an absolute path: %s",
					       arg);
		c->spec.hook_path = arg;
		return 1;
	case CLI_OPT_MEMLOCK:
		/* The hook's own parser: the spec never carries a value the hook would refuse. */
		if (parse_memlock(arg, &(rlim_t){0}) < 0)
			return cli_usage_error(
			    cmd,
			    "--memlock %s: expected 'unlimited' or a positive byte "
			    "count with an optional K, M or G suffix",
			    arg);
		c->spec.memlock = arg;
		return 1;
	case CLI_OPT_SPEC_DIR:
		if (c->n_spec_dirs >= CLI_MAX_SPEC_DIRS)
			return cli_usage_error(cmd, "at most %d --spec-dir", CLI_MAX_SPEC_DIRS);
		c->spec_dirs[c->n_spec_dirs++] = arg;
		return 1;
	case CLI_OPT_CONFIG:
		c->config_path = arg;
		return 1;
	case CLI_OPT_RESCAN_INTERVAL:
		return rescan_option(cmd, c, arg);
	case CLI_OPT_METRICS_ADDRESS:
		return metrics_address_option(cmd, c, arg);
	}
	return 0;
}

int cli_parse(const struct cli_parser *p, void *ctx, struct cli_common *c, int argc, char **argv,
	      int *ret_optind)
{
	struct option opts[64];
	size_t n = 0;
	int opt, r;

	for (const struct cli_option *o = p->options; o->name; o++) {
		if (n + 1 >= ELEMENTSOF(opts))
			abort(); /* a programming error caught by any test */
		opts[n++] = (struct option){o->name, o->has_arg, NULL, o->val};
	}
	opts[n] = (struct option){};

	optind = 0; /* glibc: full re-initialisation, argv[0] is skipped */
	opterr = 0; /* our own message, in the log format, with the hint */
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		const char *bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";

		if (opt == '?') {
			if (optopt && optopt < 0x100 && optopt != CLI_OPT_HELP)
				return cli_usage_error(p->name, "unknown option '-%c'", optopt);
			if (optopt) /* a known long option given "=value" */
				return cli_usage_error(p->name, "option '%s' takes no value", bad);
			return cli_usage_error(p->name, "unknown option '%s'", bad);
		}
		if (opt == ':')
			return cli_usage_error(p->name, "option '%s' needs a value", bad);
		if (opt == CLI_OPT_HELP) {
			cli_print_help(p, stdout);
			return 0;
		}
		r = opt < CLI_OPT_COMMAND ? shared_option(p, c, opt, optarg) : 0;
		if (r == EXIT_USAGE)
			return r;
		if (r == 0 && p->option) {
			r = p->option(ctx, opt, optarg);
			if (r != 0)
				return r;
		}
	}
	if ((unsigned)(argc - optind) > p->max_args)
		return cli_usage_error(p->name, "unexpected argument '%s'", argv[optind]);
	if (ret_optind)
		*ret_optind = optind;
	return CLI_CONTINUE;
}

/* DIR + path, without a doubled slash; host_root "/" or NULL gives path itself. */
char *cli_host_path(const struct cli_common *c, const char *path)
{
	const char *root = c->host_root;
	size_t n;

	if (!root)
		return strdup(path);
	n = strlen(root);
	while (n > 0 && root[n - 1] == '/')
		n--;
	if (n == 0)
		return strdup(path);
	return strdup_printf("%.*s%s%s", (int)n, root, path[0] == '/' ? "" : "/", path);
}

int cli_resolve_node(struct cli_common *c, const char *cmd)
{
	const char *dev = c->dev_root ? c->dev_root : "/dev";

	if (c->host_root) {
		_cleanup_free_ char *q = quote_untrusted(c->host_root);
		struct stat st;

		if (stat(c->host_root, &st) < 0) {
			log_error_errno(-errno, "%s: --host-root %s", cmd, q);
			return EXIT_FAIL;
		}
		if (!S_ISDIR(st.st_mode)) {
			log_error_errno(-ENOTDIR, "%s: --host-root %s", cmd, q);
			return EXIT_FAIL;
		}
	}
	c->dev_buf = cli_host_path(c, dev);
	c->sysfs_buf = c->sysfs_root ? strdup(c->sysfs_root) : cli_host_path(c, "/sys");
	if (!c->dev_buf || !c->sysfs_buf) {
		log_error_errno(-ENOMEM, "%s", cmd);
		return EXIT_FAIL;
	}
	c->disc = (struct disc_options){.sysfs_root = c->sysfs_buf, .dev_root = c->dev_buf};
	/* What the spec says is the host's path, never where we happen to see it. */
	c->spec.dev_root = dev;
	return 0;
}

int cli_daemon_options(const struct cli_common *c, const char *cmd, struct daemon_options *ret)
{
	struct daemon_options o = DAEMON_OPTIONS_INIT;

	if (c->n_spec_dirs > 1)
		return cli_usage_error(cmd, "takes one --spec-dir");
	o.disc = c->disc;
	o.spec = c->spec; /* unset fields: the config's, then the defaults */
	o.spec_dir = c->n_spec_dirs ? c->spec_dirs[0] : NULL;
	o.config_path = c->config_path;
	if (c->rescan_given)
		o.rescan_sec = c->rescan_sec;
	o.metrics_address = c->metrics_address;
	*ret = o;
	return 0;
}

const char *cli_sysfs_root(const struct cli_common *c)
{
	return c->disc.sysfs_root ? c->disc.sysfs_root : "/sys";
}

static bool is_dir_at(const char *root, const char *sub)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, sub);
	struct stat st;

	return p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 0 when root/sub can be listed, else -errno. */
static int dir_readable(const char *root, const char *sub)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", root, sub);
	_cleanup_close_ int fd = -1;

	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : 0;
}

/* The --sysfs-root a user probably meant, or NULL. */
static char *sysfs_suggestion(const char *root)
{
	if (is_dir_at(root, "class/infiniband") || !is_dir_at(root, "sys/class/infiniband"))
		return NULL;
	return strdup_printf("%s/sys", strcmp(root, "/") == 0 ? "" : root);
}

int cli_scan(const struct cli_common *c, struct disc_node **ret_node)
{
	const char *root = cli_sysfs_root(c);
	_cleanup_free_ char *qroot = quote_untrusted(root);
	_cleanup_free_ char *hint = sysfs_suggestion(root);
	int r = disc_scan(&c->disc, ret_node);

	if (r < 0) {
		if (r == -EACCES || r == -EPERM)
			log_error_errno(
			    r,
			    "reading sysfs at %s: class/infiniband cannot be listed (run as root)",
			    qroot);
		else if (r == -ENOENT && c->host_root && !c->sysfs_root)
			log_error_errno(r,
					"reading sysfs at %s (--host-root %s has no sys/: mount "
					"the host's /sys there, or give --sysfs-root)",
					qroot, c->host_root);
		else if (hint)
			log_error_errno(r, "reading sysfs at %s (did you mean --sysfs-root %s?)",
					qroot, hint);
		else
			log_error_errno(r, "reading sysfs at %s", qroot);
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < (*ret_node)->n_problems; i++)
		log_warning("%s", (*ret_node)->problems[i]);
	return 0;
}

void cli_explain_no_device(const struct cli_common *c, const struct disc_node *node,
			   enum log_level level)
{
	const char *root = cli_sysfs_root(c);
	_cleanup_free_ char *qroot = quote_untrusted(root);
	_cleanup_free_ char *hint = sysfs_suggestion(root);
	int r;

	if (hint) {
		log_msg(
		    level, 0,
		    "%s has no class/infiniband but %s/sys/class/infiniband exists: did you mean "
		    "--sysfs-root %s?",
		    qroot, qroot, hint);
		return;
	}
	if (!is_dir_at(root, "class")) {
		log_msg(level, 0,
			"%s does not look like sysfs (no class/ directory): give "
			"--sysfs-root the directory that holds class/ and devices/",
			qroot);
		return;
	}
	r = dir_readable(root, "class/infiniband");
	if (r == -EACCES || r == -EPERM) {
		log_msg(level, r, "cannot read %s/class/infiniband (run as root)", qroot);
		return;
	}
	if (!node || node->n_devices == 0) {
		log_msg(level, 0,
			"no RDMA device in %s/class/infiniband: the kernel has no RDMA driver "
			"bound; load the modules: modprobe ib_uverbs rdma_ucm and the NIC's RDMA "
			"driver (mlx5_ib for NVIDIA ConnectX/BlueField, irdma for Intel E810, "
			"bnxt_re for Broadcom, efa for AWS EFA)",
			qroot);
		return;
	}
	r = dir_readable(root, "class/infiniband_verbs");
	if (r == -EACCES || r == -EPERM) {
		log_msg(level, r, "cannot read %s/class/infiniband_verbs (run as root)", qroot);
		return;
	}
	log_msg(level, 0,
		"%zu RDMA device(s) but none with a uverbs entry in %s/class/infiniband_verbs: "
		"load the verbs module: modprobe ib_uverbs",
		node->n_devices, qroot);
}

int cli_print_json(const struct cJSON *j)
{
	/* cJSON leaves DEL and the C1 controls of a hostile file name raw: json_print not. */
	_cleanup_free_ char *s = json_print(j);

	if (!s) {
		log_error_errno(-ENOMEM, "formatting JSON");
		return EXIT_FAIL;
	}
	if (puts(s) < 0 || fflush(stdout) != 0) {
		log_error_errno(-errno, "writing to stdout");
		return EXIT_FAIL;
	}
	return 0;
}
