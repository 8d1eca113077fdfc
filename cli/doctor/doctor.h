/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor: checks, on a host or inside a container, everything an RDMA workload given
 * devices through CDI depends on, and says for each failure how to fix it. The report is
 * one list of checks (id, status, message, fix, data): the text and the JSON are both
 * made from it, so they never disagree. The JSON form is documented in docs/doctor.md.
 *
 * Two kinds of checks: what this process sees of the RDMA stack (verbs, rdma_cm, the
 * memlock limit, CAP_IPC_LOCK, the netns mode: never under --host-root), and files of a
 * host (sysfs, /dev, modules, runtime configs, units, spec dirs: read under --host-root,
 * with cli_host_path(), so a doctor in a DaemonSet pod can check the node it runs on).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cli.h"

#define DOCTOR_JSON_VERSION 1
#define DOCTOR_DEFAULT_MR_SIZE (64u << 20)
#define DOCTOR_MAX_MR_SIZE (1ull << 40)

struct doctor_options {
	/* Where host paths are read: cli_host_path(common, ...); only host_root is used. */
	const struct cli_common *common;
	const char *host_root;	/* for the report: "/" or a directory without a trailing '/' */
	bool host_root_given;	/* even as "/": this is the host, whatever else says otherwise */
	const char *sysfs_root; /* host paths, "/sys", "/dev" */
	const char *dev_root;
	const char *spec_dir; /* host path of the dir our spec is in */
	const char *kind;
	size_t mr_size; /* the memory region verbs registers, 1..DOCTOR_MAX_MR_SIZE */
};

struct doctor;
struct rc_error;
struct cJSON;

/*
 * Runs every check and returns the report in *ret (o must outlive it). A failing check
 * is part of the report, not an error: the only error is -ENOMEM. Does not log or print.
 */
int doctor_run(const struct doctor_options *o, struct doctor **ret, struct rc_error **err);

/* True when at least one check failed (warnings do not count). */
bool doctor_failed(const struct doctor *d);

/*
 * The report as one JSON object (docs/doctor.md), a new tree the caller deletes; NULL on
 * OOM. Its strings are valid UTF-8 (text from disk that is not is escaped), and it is
 * meant for cli_print_json(), which escapes DEL and the C1 controls as every JSON output
 * of rdma-cdi does.
 */
struct cJSON *doctor_json(const struct doctor *d);

/* The report as text: a line per check, the verdict, a fix per failure and warning.
 * Text from disk is escaped (common/quote.c). -EIO when f cannot be written. */
int doctor_print_text(const struct doctor *d, FILE *f);

/* Accepts NULL. */
void doctor_free(struct doctor *d);
