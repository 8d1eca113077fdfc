/* SPDX-License-Identifier: Apache-2.0 */
/*
 * doctor_run(): where doctor runs (a host, or inside a container looking at itself), then
 * every check in the order the report shows them.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "discovery.h"
#include "doctor-internal.h"
#include "doctor.h"
#include "rc-error.h"

bool doctor_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool doctor_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * podman and CRI-O write /run/.containerenv, Docker /.dockerenv; systemd-nspawn, podman
 * and LXC set $container; every Kubernetes pod has $KUBERNETES_SERVICE_HOST.
 */
static const char *container_evidence(void)
{
	if (access("/run/.containerenv", F_OK) == 0)
		return "/run/.containerenv exists";
	if (access("/.dockerenv", F_OK) == 0)
		return "/.dockerenv exists";
	if (getenv("container"))
		return "$container is set";
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return "$KUBERNETES_SERVICE_HOST is set";
	return NULL;
}

static void check_context(struct doctor *d)
{
	cJSON *data = cJSON_CreateObject();

	/* An explicit --host-root, even "/", says: this is the host. */
	d->container_why = !d->o->host_root_given ? container_evidence() : NULL;
	d->container = d->container_why != NULL;
	if (!data || !cJSON_AddBoolToObject(data, "container", d->container) ||
	    !(d->container ? cJSON_AddStringToObject(data, "evidence", d->container_why)
			   : cJSON_AddNullToObject(data, "evidence"))) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	if (d->container)
		doctor_add_check(d, "context", DOCTOR_INFO, data, NULL,
				 "inside a container (%s): checking what it was given",
				 d->container_why);
	else
		doctor_add_check(d, "context", DOCTOR_INFO, data, NULL, "checking the host at %s",
				 d->o->host_root);
}

int doctor_run(const struct doctor_options *o, struct doctor **ret, struct rc_error **err)
{
	struct doctor *d = calloc(1, sizeof(*d));
	struct disc_node *node = NULL;
	int r;

	if (!d)
		return rc_error_set(err, -ENOMEM, NULL);
	d->o = o;
	d->checks = cJSON_CreateArray();
	if (!d->checks) {
		doctor_free(d);
		return rc_error_set(err, -ENOMEM, NULL);
	}
	check_context(d);
	r = doctor_check_devices(d, &node);
	if (r >= 0) {
		doctor_check_modules(d);
		doctor_check_nodes(d, node);
		doctor_check_memlock(d);
		doctor_check_verbs(d, node ? disc_node_count_usable(node) : 0);
		doctor_check_netns_isolation(d, doctor_check_netns(d));
		doctor_check_containerd(d);
		doctor_check_containerd_unit(d);
		doctor_check_crio(d);
		doctor_check_spec_dirs(d);
		doctor_check_spec(d, node);
	}
	disc_node_free(node);
	if (r < 0 || d->oom) {
		doctor_free(d);
		return rc_error_set(err, -ENOMEM, "running the checks");
	}
	*ret = d;
	return 0;
}

void doctor_free(struct doctor *d)
{
	if (!d)
		return;
	cJSON_Delete(d->checks);
	free(d);
}
