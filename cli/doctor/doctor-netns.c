/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netns.isolation: in RDMA netns mode exclusive a container sees an RDMA device only once
 * the device is moved into its network namespace. Something must move it: rdma-cni chained
 * in the node's CNI config, or the hook of a pool with `netns: move`. This check names
 * the devices away from the host's namespace (lent to a pod), and what moves devices
 * here, and says what to fix when nothing does. Host files are read under --host-root.
 *
 * A device is away when its uverbs device stays (class/infiniband_verbs/uverbsN, not
 * namespace-tagged, names it in ibdev) while class/infiniband/<ibdev> is gone: the host
 * sees that only for a device in another namespace, so such a device means exclusive
 * mode even when the mode cannot be read here.
 */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "config.h"
#include "discovery.h"
#include "doctor-internal.h"
#include "doctor.h"

#define CNI_CONF_DIR "/etc/cni/net.d"
#define CNI_CONF_MAX (1024 * 1024)
#define CNI_FILES_MAX 256
#define AWAY_MAX 4096

static int sysfs_path(const struct doctor *d, const char *rel, char **ret)
{
	_cleanup_free_ char *p = strdup_printf("%s/%s", d->o->sysfs_root, rel);

	*ret = p ? cli_host_path(d->o->common, p) : NULL;
	return *ret ? 0 : -ENOMEM;
}

/* The RDMA names of uverbs devices whose class/infiniband entry is gone, into away. */
static int find_away(const struct doctor *d, cJSON *away)
{
	_cleanup_free_ char *verbs = NULL, *ib = NULL;
	_cleanup_closedir_ DIR *dh = NULL;
	_cleanup_close_ int ibfd = -1;
	struct dirent *de;

	if (sysfs_path(d, "class/infiniband_verbs", &verbs) < 0 ||
	    sysfs_path(d, "class/infiniband", &ib) < 0)
		return -ENOMEM;
	dh = opendir(verbs);
	if (!dh)
		return 0; /* no uverbs at all: nothing can be away */
	ibfd = open(ib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while ((de = readdir(dh)) && cJSON_GetArraySize(away) < AWAY_MAX) {
		_cleanup_free_ char *attr = NULL;
		char name[DISC_NAME_MAX + 1];
		int fd;

		if (strncmp(de->d_name, "uverbs", 6) != 0)
			continue;
		attr = strdup_printf("%s/%s/ibdev", verbs, de->d_name);
		if (!attr)
			return -ENOMEM;
		fd = open(attr, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (read_attr_fd(fd, name, sizeof(name)) <= 0 || strchr(name, '/') ||
		    name[0] == '.' || faccessat(ibfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
			close(fd);
			continue;
		}
		close(fd);
		if (!cJSON_AddItemToArray(away, cJSON_CreateString(name)))
			return -ENOMEM;
	}
	return 0;
}

/* The resource names of the pools of the host's config that ask for the move. A missing
 * or invalid config asks for nothing (`config check` says what is wrong with it). */
static int find_move_pools(const struct doctor *d, cJSON *pools)
{
	_cleanup_free_ char *path = cli_host_path(d->o->common, CFG_DEFAULT_PATH);
	_cleanup_(cfg_freep) struct cfg *c = NULL;

	if (!path)
		return -ENOMEM;
	if (cfg_load(path, &c, NULL) < 0)
		return 0;
	for (size_t i = 0; i < c->n_pools; i++)
		if (c->pools[i].netns == CFG_NETNS_MOVE &&
		    !cJSON_AddItemToArray(pools, cJSON_CreateString(c->pools[i].resource_name)))
			return -ENOMEM;
	return 0;
}

/* Whether one CNI network config (a .conflist's "plugins", or a single .conf) has a
 * plugin of type "rdma": rdma-cni. */
static bool cni_has_rdma(const char *buf, size_t len)
{
	_cleanup_(cJSON_Deletep) cJSON *j = cJSON_ParseWithLength(buf, len);
	const cJSON *plugins = cJSON_GetObjectItemCaseSensitive(j, "plugins"), *p;
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");

	if (cJSON_IsString(type) && strcmp(type->valuestring, "rdma") == 0)
		return true;
	if (!cJSON_IsArray(plugins))
		return false;
	cJSON_ArrayForEach (p, plugins) {
		type = cJSON_GetObjectItemCaseSensitive(p, "type");
		if (cJSON_IsString(type) && strcmp(type->valuestring, "rdma") == 0)
			return true;
	}
	return false;
}

/* The host paths of the CNI configs in CNI_CONF_DIR that chain rdma-cni. */
static int find_rdma_cni(const struct doctor *d, cJSON *files)
{
	_cleanup_free_ char *dir = cli_host_path(d->o->common, CNI_CONF_DIR);
	_cleanup_closedir_ DIR *dh = NULL;
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -ENOMEM;
	dh = opendir(dir);
	while (dh && (de = readdir(dh)) && n++ < CNI_FILES_MAX) {
		_cleanup_free_ char *path = NULL, *buf = NULL;
		const char *ext = strrchr(de->d_name, '.');
		size_t len;

		if (de->d_name[0] == '.' || !ext ||
		    (strcmp(ext, ".conflist") != 0 && strcmp(ext, ".conf") != 0 &&
		     strcmp(ext, ".json") != 0))
			continue;
		path = strdup_printf("%s/%s", dir, de->d_name);
		if (!path)
			return -ENOMEM;
		if (read_full_file_at(AT_FDCWD, path, CNI_CONF_MAX, false, &buf, &len) < 0 ||
		    !cni_has_rdma(buf, len))
			continue;
		free(path);
		path = strdup_printf("%s/%s", CNI_CONF_DIR, de->d_name);
		if (!path || !cJSON_AddItemToArray(files, cJSON_CreateString(path)))
			return -ENOMEM;
	}
	return 0;
}

/* A JSON array joined by ", " (at most size bytes, cut with "..."). */
static const char *joined(const cJSON *a, char *buf, size_t size)
{
	const cJSON *e;
	size_t n = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach (e, a) {
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s", n ? ", " : "",
				      e->valuestring);
		if (n >= size) {
			snprintf(buf + size - 4, 4, "...");
			break;
		}
	}
	return buf;
}

static void report(struct doctor *d, enum disc_netns_mode mode, cJSON *data)
{
	const cJSON *away = cJSON_GetObjectItem(data, "away");
	const cJSON *pools = cJSON_GetObjectItem(data, "move_pools");
	const cJSON *cni = cJSON_GetObjectItem(data, "rdma_cni");
	char a[512], p[512], c[512];
	bool moved = cJSON_GetArraySize(pools) + cJSON_GetArraySize(cni) > 0;
	/* A device away from the host's namespace is exclusive mode, read or not. */
	const char *m = mode == DISC_NETNS_EXCLUSIVE ? "exclusive"
						     : "exclusive by sysfs (the kernel's mode unread)";

	if (mode != DISC_NETNS_EXCLUSIVE && cJSON_GetArraySize(away) == 0) {
		doctor_add_check(d, "netns.isolation", DOCTOR_SKIP, data, NULL,
				 "RDMA netns mode %s: no device is away from the host's network "
				 "namespace",
				 disc_netns_mode_name(mode));
		return;
	}
	if (!cJSON_GetArraySize(away))
		snprintf(a, sizeof(a), "none");
	else
		joined(away, a, sizeof(a));
	if (moved) {
		doctor_add_check(d, "netns.isolation", DOCTOR_OK, data, NULL,
				 "RDMA netns mode %s; away from the host's namespace (lent to "
				 "pods): %s; moved by: %s%s%s%s%s",
				 m, a,
				 cJSON_GetArraySize(pools) ? "netns: move in pools " : "",
				 joined(pools, p, sizeof(p)),
				 cJSON_GetArraySize(pools) && cJSON_GetArraySize(cni) ? "; " : "",
				 cJSON_GetArraySize(cni) ? "rdma-cni in " : "", joined(cni, c, sizeof(c)));
		return;
	}
	doctor_add_check(d, "netns.isolation", DOCTOR_WARN, data,
			 "give the pools that need isolation `netns: move` in " CFG_DEFAULT_PATH
			 " (the hook moves each device into its container's network namespace), "
			 "or chain rdma-cni after the SR-IOV CNI in a conflist in " CNI_CONF_DIR
			 "; else rdma system set netns shared (docs/guides/netns-multus.md)",
			 "RDMA netns mode %s (away from the host's namespace: %s), but no pool "
			 "asks for netns: move and no CNI config chains rdma-cni: a container sees "
			 "no RDMA device that nothing moved into its network namespace",
			 m, a);
}

void doctor_check_netns_isolation(struct doctor *d, int netns_mode)
{
	enum disc_netns_mode mode = (enum disc_netns_mode)netns_mode;
	cJSON *data = cJSON_CreateObject();
	cJSON *away = cJSON_AddArrayToObject(data, "away");
	cJSON *pools = cJSON_AddArrayToObject(data, "move_pools");
	cJSON *cni = cJSON_AddArrayToObject(data, "rdma_cni");

	if (!data || !away || !pools || !cni || find_away(d, away) < 0 ||
	    find_move_pools(d, pools) < 0 || find_rdma_cni(d, cni) < 0 ||
	    !cJSON_AddStringToObject(data, "mode", disc_netns_mode_name(mode))) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	report(d, mode, data);
}
