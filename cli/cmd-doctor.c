/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi doctor: the command around the doctor module (cli/doctor/doctor.h): its
 * options, then the report as text or JSON. Unlike the other commands, every node path
 * (--sysfs-root, --dev-root, --spec-dir) is a host path read under --host-root, so that
 * one --host-root moves them all; doctor checks them itself.
 */
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common.h"
#include "doctor.h"
#include "hooks.h"
#include "rc-error.h"
#include "specs.h"

enum { OPT_MR_SIZE = CLI_OPT_COMMAND, OPT_JSON };

struct doctor_args {
	struct cli_common common;
	size_t mr_size;
	bool json;
};

static const struct cli_option doctor_options[] = {
    {"host-root", required_argument, CLI_OPT_HOST_ROOT, "DIR",
     "read the host's /sys, /dev and /etc under DIR (default /); given, even as /, it also "
     "says this is not a container"},
    {"sysfs-root", required_argument, CLI_OPT_SYSFS_ROOT, "DIR",
     "sysfs on the host, read under HOST-ROOT (default /sys)"},
    {"dev-root", required_argument, CLI_OPT_DEV_ROOT, "DIR",
     "device nodes on the host, read under HOST-ROOT (default /dev)"},
    {"spec-dir", required_argument, CLI_OPT_SPEC_DIR, "DIR",
     "where the spec is on the host (default " SPEC_DEFAULT_DIR ")"},
    {"kind", required_argument, CLI_OPT_KIND, "VENDOR/CLASS",
     "CDI kind (default " SPEC_DEFAULT_KIND ")"},
    {"mr-size", required_argument, OPT_MR_SIZE, "BYTES",
     "memory region to register (K, M, G suffixes; default 64M)"},
    {"json", no_argument, OPT_JSON, NULL, "print the report as JSON (docs/doctor.md)"},
    CLI_OPTIONS_GLOBAL,
    {},
};

static int doctor_option(void *ctx, int opt, const char *arg)
{
	struct doctor_args *a = ctx;
	rlim_t v;

	if (opt == OPT_JSON) {
		a->json = true;
	} else if (opt == OPT_MR_SIZE) {
		if (parse_memlock(arg, &v) < 0 || v == RLIM_INFINITY || v > DOCTOR_MAX_MR_SIZE)
			return cli_usage_error("doctor",
					       "--mr-size %s: expected a byte count from 1 to 1T "
					       "with an optional K, M or G suffix",
					       arg);
		a->mr_size = (size_t)v;
	}
	return 0;
}

static const struct cli_parser doctor_parser = {
    .name = "doctor",
    .synopsis = "[OPTIONS]",
    .description = "Checks what RDMA in containers needs, on a host or inside a container: the "
		   "devices verbs can open (protection domain, memory region), rdma_cm, "
		   "RLIMIT_MEMLOCK and CAP_IPC_LOCK, the device nodes, the kernel modules, the "
		   "RDMA netns mode, containerd's and CRI-O's CDI settings, the containerd "
		   "unit's LimitMEMLOCK, the CDI spec dirs, and whether the spec on disk is what "
		   "`rdma-cdi generate` writes now. Ends with a verdict and a fix per failure. "
		   "verbs, rdma_cm, memlock, CAP_IPC_LOCK and the netns mode are those of this "
		   "process, whatever --host-root says.",
    .options = doctor_options,
    .footer = "Exit status: 0 nothing failed (warnings allowed), 1 a check failed, 2 bad "
	      "usage.",
    .option = doctor_option,
};

/* A host path doctor reads under --host-root: absolute, and no ".." to climb out. */
static int host_path_ok(const char *opt, const char *v)
{
	size_t n = v ? strlen(v) : 0;

	if (!v || (v[0] == '/' && !strstr(v, "/../") && (n < 3 || strcmp(v + n - 3, "/..") != 0)))
		return 0;
	return cli_usage_error("doctor", "%s %s: expected an absolute path without '..'", opt, v);
}

/* The options as doctor_run() takes them; *ret_root holds the host root it points to. */
static int doctor_options_from(const struct doctor_args *a, struct doctor_options *o,
			       char **ret_root)
{
	const struct cli_common *c = &a->common;
	const char *spec_dir = c->n_spec_dirs ? c->spec_dirs[c->n_spec_dirs - 1] : NULL;
	const char *root = c->host_root ? c->host_root : "/";
	size_t n = strlen(root);
	struct stat st;

	if (host_path_ok("--host-root", c->host_root) ||
	    host_path_ok("--sysfs-root", c->sysfs_root) ||
	    host_path_ok("--dev-root", c->dev_root) || host_path_ok("--spec-dir", spec_dir))
		return EXIT_USAGE;
	/* "/host/" and "/host" are the same root; "/" stays "/". */
	while (n > 1 && root[n - 1] == '/')
		n--;
	*ret_root = strndup(root, n);
	if (!*ret_root) {
		log_error_errno(-ENOMEM, "doctor");
		return EXIT_FAIL;
	}
	if (stat(*ret_root, &st) < 0 || !S_ISDIR(st.st_mode))
		return cli_usage_error("doctor", "--host-root %s: not a directory", *ret_root);
	*o = (struct doctor_options){
	    .common = c,
	    .host_root = *ret_root,
	    .host_root_given = c->host_root != NULL,
	    .sysfs_root = c->sysfs_root ? c->sysfs_root : "/sys",
	    .dev_root = c->dev_root ? c->dev_root : "/dev",
	    .spec_dir = spec_dir ? spec_dir : SPEC_DEFAULT_DIR,
	    .kind = c->spec.kind ? c->spec.kind : SPEC_DEFAULT_KIND,
	    .mr_size = a->mr_size,
	};
	return 0;
}

static int print_report(const struct doctor *d, bool json)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	int r;

	if (json) {
		j = doctor_json(d);
		if (!j) {
			log_error_errno(-ENOMEM, "doctor: formatting JSON");
			return EXIT_FAIL;
		}
		return cli_print_json(j);
	}
	r = doctor_print_text(d, stdout);
	if (r < 0) {
		log_error_errno(r, "doctor: writing the report");
		return EXIT_FAIL;
	}
	return 0;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_args a = {.mr_size = DOCTOR_DEFAULT_MR_SIZE};
	_cleanup_rc_error_ struct rc_error *err = NULL;
	_cleanup_free_ char *root = NULL;
	struct doctor_options o;
	struct doctor *d = NULL;
	int r;

	r = cli_parse(&doctor_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		return r;
	r = doctor_options_from(&a, &o, &root);
	if (r != 0)
		return r;
	r = doctor_run(&o, &d, &err);
	if (r < 0) {
		log_error("doctor: %s", rc_error_msg(err, r));
		return EXIT_FAIL;
	}
	r = print_report(d, a.json);
	if (r == 0 && doctor_failed(d))
		r = EXIT_FAIL;
	doctor_free(d);
	return r;
}
