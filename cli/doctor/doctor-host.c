/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host checks: what sysfs says (devices, modules) and the device nodes that must
 * match it, read under --host-root; and what this process itself gets (RLIMIT_MEMLOCK,
 * CAP_IPC_LOCK, verbs and rdma_cm, the RDMA netns mode), whatever --host-root says.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common.h"
#include "discovery.h"
#include "netlink.h"
#include "doctor-internal.h"
#include "doctor.h"
#include "hooks.h"

static cJSON *limit_json(rlim_t v)
{
	return v == RLIM_INFINITY ? cJSON_CreateString("unlimited") : cJSON_CreateNumber((double)v);
}

/* ---- devices, modules, device nodes ------------------------------------------ */

/* The fix for "no RDMA device", naming the spec's kind. */
static const char *no_devices_fix(const struct doctor *d, char *buf, size_t size)
{
	snprintf(buf, size,
		 "modprobe ib_uverbs and your HCA's RDMA driver (mlx5_ib for ConnectX; irdma, "
		 "bnxt_re, efa, ...); inside a container: ask for a device through CDI (--device "
		 "%s=NAME)",
		 d->o->kind);
	return buf;
}

/* What sysfs shows: every device with its PCI address and uverbs node, and the problems
 * discovery met. NULL on OOM. */
static cJSON *devices_json(const struct disc_node *node)
{
	_cleanup_(cJSON_Deletep) cJSON *data = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(data, "devices");

	for (size_t i = 0; list && i < node->n_devices; i++) {
		const struct disc_device *dev = &node->devices[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_AddStringToObject(o, "name", dev->name);
		if (dev->pci[0])
			cJSON_AddStringToObject(o, "pci", dev->pci);
		else
			cJSON_AddNullToObject(o, "pci");
		if (dev->has_uverbs)
			cJSON_AddStringToObject(o, "uverbs", dev->uverbs.name);
		else
			cJSON_AddNullToObject(o, "uverbs");
		cJSON_AddBoolToObject(o, "usable", disc_device_usable(dev));
	}
	list = cJSON_AddArrayToObject(data, "problems");
	for (size_t i = 0; list && i < node->n_problems; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(node->problems[i]));
	return list ? TAKE_PTR(data) : NULL;
}

/* No device in sysfs: a host's / given as --sysfs-root says so rather than "no devices". */
static void no_devices(struct doctor *d, const char *sysfs, cJSON *data)
{
	_cleanup_free_ char *nested = strdup_printf("%s/sys/class", sysfs);
	const char *slash = strcmp(d->o->sysfs_root, "/") == 0 ? "" : d->o->sysfs_root;
	char fix[512];

	if (nested && doctor_is_dir(nested)) {
		snprintf(fix, sizeof(fix), "--sysfs-root %s/sys", slash);
		doctor_add_check(d, "devices", DOCTOR_FAIL, data, fix,
				 "no class/infiniband under %s, but %s/sys/class exists: did you "
				 "mean --sysfs-root %s/sys (or --host-root)?",
				 d->o->sysfs_root, slash, slash);
	} else {
		doctor_add_check(d, "devices", DOCTOR_FAIL, data,
				 no_devices_fix(d, fix, sizeof(fix)),
				 "the kernel has no RDMA devices: load ib_uverbs and your HCA's "
				 "driver (mlx5_ib ...); nothing in %s/class/infiniband",
				 d->o->sysfs_root);
	}
}

int doctor_check_devices(struct doctor *d, struct disc_node **ret_node)
{
	_cleanup_free_ char *sysfs = cli_host_path(d->o->common, d->o->sysfs_root);
	_cleanup_free_ char *dev = cli_host_path(d->o->common, d->o->dev_root);
	struct disc_options o = {.sysfs_root = sysfs, .dev_root = dev};
	struct disc_node *node = NULL;
	cJSON *data;
	size_t usable;
	int r;

	if (!sysfs || !dev)
		return -ENOMEM;
	r = disc_scan(&o, &node);
	if (r == -ENOMEM)
		return r;
	*ret_node = NULL;
	if (r < 0) {
		doctor_add_check(
		    d, "devices", DOCTOR_FAIL, NULL,
		    "check --sysfs-root/--host-root: sysfs is normally mounted at /sys",
		    "cannot read sysfs at %s: %s", sysfs, strerror(-r));
		return 0;
	}
	data = devices_json(node);
	if (!data) {
		disc_node_free(node);
		return -ENOMEM;
	}
	usable = disc_node_count_usable(node);
	if (node->n_devices == 0)
		no_devices(d, sysfs, data);
	else if (usable == 0)
		doctor_add_check(
		    d, "devices", DOCTOR_FAIL, data, "modprobe ib_uverbs",
		    "%zu RDMA devices but none has a uverbs device (class/infiniband_verbs): "
		    "load ib_uverbs",
		    node->n_devices);
	else
		doctor_add_check(d, "devices", DOCTOR_OK, data, NULL,
				 "%zu RDMA devices, %zu usable through verbs", node->n_devices,
				 usable);
	*ret_node = node;
	return 0;
}

static void check_module(struct doctor *d, const char *name, const char *builtin_evidence,
			 enum doctor_status missing)
{
	_cleanup_free_ char *dir = strdup_printf("%s/module/%s", d->o->sysfs_root, name);
	_cleanup_free_ char *ev = strdup_printf("%s/%s", d->o->sysfs_root, builtin_evidence);
	_cleanup_free_ char *hdir = dir ? cli_host_path(d->o->common, dir) : NULL,
			    *hev = ev ? cli_host_path(d->o->common, ev) : NULL;
	_cleanup_free_ char *id = strdup_printf("module.%s", name);
	_cleanup_free_ char *fix =
	    strdup_printf("modprobe %s (and list it in "
			  "/etc/modules-load.d/rdma.conf to load it at boot)",
			  name);
	cJSON *data = cJSON_CreateObject();

	if (!hdir || !hev || !id || !fix || !data) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	if (doctor_is_dir(hdir)) {
		cJSON_AddStringToObject(data, "state", "loaded");
		doctor_add_check(d, id, DOCTOR_OK, data, NULL, "%s is loaded", name);
	} else if (doctor_exists(hev)) {
		/* Built-in modules have no /sys/module entry unless they take parameters. */
		cJSON_AddStringToObject(data, "state", "builtin");
		doctor_add_check(d, id, DOCTOR_OK, data, NULL,
				 "%s is built into the kernel (%s exists)", name, ev);
	} else {
		cJSON_AddStringToObject(data, "state", "missing");
		doctor_add_check(d, id, missing, data, fix, "%s is not loaded (no %s)", name, dir);
	}
}

void doctor_check_modules(struct doctor *d)
{
	check_module(d, "ib_uverbs", "class/infiniband_verbs", DOCTOR_FAIL);
	check_module(d, "rdma_ucm", "class/misc/rdma_cm", DOCTOR_WARN);
}

/* One device node under the host's dev root, against what sysfs says it must be. */
static void check_node(struct doctor *d, const struct disc_chardev *cd)
{
	_cleanup_free_ char *path = strdup_printf("%s/infiniband/%s", d->o->dev_root, cd->name);
	_cleanup_free_ char *hpath = path ? cli_host_path(d->o->common, path) : NULL;
	_cleanup_free_ char *id = strdup_printf("node.%s", cd->name);
	_cleanup_free_ char *mknod = strdup_printf(
	    "the node appears when udev sees the device (udevadm trigger --subsystem-match="
	    "infiniband); or create it: mknod -m 0666 %s c %u %u",
	    path ? path : "", cd->major, cd->minor);
	cJSON *data = cJSON_CreateObject();
	struct stat st;

	if (!hpath || !id || !mknod || !data) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	cJSON_AddStringToObject(data, "path", path);
	cJSON_AddNumberToObject(data, "major", cd->major);
	cJSON_AddNumberToObject(data, "minor", cd->minor);
	if (lstat(hpath, &st) < 0) {
		int r = -errno;

		if (r == -ENOENT && d->container && strcmp(cd->name, "rdma_cm") != 0)
			doctor_add_check(d, id, DOCTOR_INFO, data, NULL,
					 "%s: not given to this container", path);
		else
			doctor_add_check(d, id, DOCTOR_FAIL, data,
					 r == -ENOENT ? mknod : "run as root", "%s: %s", path,
					 strerror(-r));
		return;
	}
	if (strcmp(cd->name, "rdma_cm") != 0)
		d->nodes_given++;
	if (!S_ISCHR(st.st_mode)) {
		doctor_add_check(d, id, DOCTOR_FAIL, data, mknod, "%s is not a character device",
				 path);
		return;
	}
	if (major(st.st_rdev) != cd->major || minor(st.st_rdev) != cd->minor) {
		_cleanup_free_ char *fix =
		    strdup_printf("rm %s, then: mknod -m 0666 %s c %u %u (or udevadm trigger)",
				  path, path, cd->major, cd->minor);

		doctor_add_check(d, id, DOCTOR_FAIL, data, fix,
				 "%s is %u:%u but the kernel says %u:%u", path, major(st.st_rdev),
				 minor(st.st_rdev), cd->major, cd->minor);
		return;
	}
	if (faccessat(AT_FDCWD, hpath, R_OK | W_OK, AT_EACCESS) < 0) {
		int r = -errno;

		doctor_add_check(d, id, DOCTOR_FAIL, data,
				 "run as root, or give users access with a udev rule: "
				 "KERNEL==\"uverbs*|rdma_cm\", MODE=\"0666\"",
				 "%s %u:%u: not readable and writable here: %s", path, cd->major,
				 cd->minor, strerror(-r));
		return;
	}
	doctor_add_check(d, id, DOCTOR_OK, data, NULL, "%s: character device %u:%u, accessible",
			 path, cd->major, cd->minor);
}

void doctor_check_nodes(struct doctor *d, const struct disc_node *node)
{
	size_t usable = node ? disc_node_count_usable(node) : 0;
	char fix[512];

	for (size_t i = 0; node && i < node->n_devices; i++)
		if (disc_device_usable(&node->devices[i]))
			check_node(d, &node->devices[i].uverbs);
	if (node && node->has_rdma_cm)
		check_node(d, &node->rdma_cm);
	if (!d->container || usable == 0)
		return;
	snprintf(fix, sizeof(fix),
		 "ask for devices when starting the container: podman run --device %s=NAME (or "
		 "%s=all); Kubernetes: the bridge's resource under resources.limits",
		 d->o->kind, d->o->kind);
	if (d->nodes_given == 0)
		doctor_add_check(d, "container.devices", DOCTOR_FAIL, NULL, fix,
				 "this container was given none of the node's %zu RDMA devices (no "
				 "%s/infiniband/uverbs* node)",
				 usable, d->o->dev_root);
	else
		doctor_add_check(d, "container.devices", DOCTOR_OK, NULL, NULL,
				 "this container was given %zu of the node's %zu RDMA devices",
				 d->nodes_given, usable);
}

/* ---- this process: memlock, CAP_IPC_LOCK, verbs, rdma_cm, netns ---------------- */

static bool has_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct c[2] = {};

	if (syscall(SYS_capget, &h, c) < 0)
		return false;
	return c[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

#define MEMLOCK_FIX                                                                                \
	"let the rdma-cdi-hook of the CDI spec raise it (rdma-cdi generate), or start the "        \
	"container with --ulimit memlock=-1:-1 (podman, docker) or --cap-add IPC_LOCK; on a "      \
	"host shell: ulimit -l unlimited (the hard limit comes from "                              \
	"/etc/security/limits.conf: '* - memlock unlimited')"

void doctor_check_memlock(struct doctor *d)
{
	bool cap = has_cap_ipc_lock();
	struct rlimit rl;
	cJSON *data = cJSON_CreateObject();
	char s[32], h[32];

	cJSON_AddBoolToObject(data, "cap_ipc_lock", cap);
	doctor_add_check(
	    d, "capability.ipc_lock", DOCTOR_INFO, data, NULL,
	    cap ? "CAP_IPC_LOCK is in the effective set: RLIMIT_MEMLOCK does not limit "
		  "memory registration"
		: "CAP_IPC_LOCK is not in the effective set: memory registration is bounded "
		  "by RLIMIT_MEMLOCK");

	data = cJSON_CreateObject();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		doctor_add_check(d, "memlock", DOCTOR_FAIL, data, NULL,
				 "getrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
		return;
	}
	cJSON_AddItemToObject(data, "soft", limit_json(rl.rlim_cur));
	cJSON_AddItemToObject(data, "hard", limit_json(rl.rlim_max));
	cJSON_AddNumberToObject(data, "mr_size", (double)d->o->mr_size);
	hook_format_limit(rl.rlim_cur, s, sizeof(s));
	hook_format_limit(rl.rlim_max, h, sizeof(h));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= d->o->mr_size)
		doctor_add_check(
		    d, "memlock", DOCTOR_OK, data, NULL,
		    "RLIMIT_MEMLOCK soft %s, hard %s: enough for a %zu-byte memory region", s, h,
		    d->o->mr_size);
	else if (cap)
		doctor_add_check(
		    d, "memlock", DOCTOR_OK, data, NULL,
		    "RLIMIT_MEMLOCK soft %s, hard %s is below the %zu-byte memory region, but "
		    "CAP_IPC_LOCK lifts the limit",
		    s, h, d->o->mr_size);
	else
		doctor_add_check(
		    d, "memlock", DOCTOR_FAIL, data, MEMLOCK_FIX,
		    "RLIMIT_MEMLOCK soft %s, hard %s is below the %zu-byte memory region and "
		    "CAP_IPC_LOCK is not held: registering it fails",
		    s, h, d->o->mr_size);
}

static const char *verbs_fix(const struct disc_verbs_device *v)
{
	int e = -v->error;

	if (v->failed == DISC_VERBS_STEP_REG_MR && (e == ENOMEM || e == EPERM || e == EAGAIN))
		return "raise RLIMIT_MEMLOCK above the memory region size or grant "
		       "CAP_IPC_LOCK: " MEMLOCK_FIX;
	if (v->failed == DISC_VERBS_STEP_OPEN && (e == EACCES || e == EPERM))
		return "run as root, or make /dev/infiniband/uverbs* readable and writable (udev "
		       "rule KERNEL==\"uverbs*\", MODE=\"0666\")";
	if (v->failed == DISC_VERBS_STEP_OPEN && (e == ENOENT || e == ENODEV || e == ENXIO))
		return "the device's uverbs node is missing here: inside a container, ask for this "
		       "device through CDI; on a host: modprobe ib_uverbs";
	if (v->failed == DISC_VERBS_STEP_MMAP)
		return "use a smaller --mr-size or free memory";
	return "check dmesg for the HCA driver's error; a firmware or driver reset may help";
}

static cJSON *verbs_json(const struct disc_verbs_report *rep)
{
	cJSON *data = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(data, "devices");

	if (rep->list_error)
		cJSON_AddStringToObject(data, "list_error", strerror(-rep->list_error));
	else
		cJSON_AddNullToObject(data, "list_error");
	for (size_t i = 0; list && i < rep->n_devices; i++) {
		const struct disc_verbs_device *v = &rep->devices[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddItemToArray(list, o);
		cJSON_AddStringToObject(o, "name", v->name);
		if (v->failed == DISC_VERBS_STEP_NONE) {
			cJSON_AddNullToObject(o, "failed_step");
			cJSON_AddNullToObject(o, "error");
		} else {
			cJSON_AddStringToObject(o, "failed_step", disc_verbs_step_name(v->failed));
			cJSON_AddStringToObject(o, "error", strerror(-v->error));
		}
	}
	cJSON_AddNumberToObject(data, "mr_size", (double)rep->mr_size);
	return data;
}

/* sysfs_usable: devices the (host's) sysfs shows; verbs seeing none of them means this
 * process cannot reach them, not that the kernel has none. */
static void verbs_none(struct doctor *d, const struct disc_verbs_report *rep, size_t sysfs_usable,
		       cJSON *data)
{
	char why[128] = "", fix[512];

	if (rep->list_error)
		snprintf(why, sizeof(why), " (ibv_get_device_list: %s)",
			 strerror(-rep->list_error));
	if (!sysfs_usable) {
		doctor_add_check(
		    d, "verbs", DOCTOR_FAIL, data, no_devices_fix(d, fix, sizeof(fix)),
		    "verbs sees no RDMA device%s: the kernel has no RDMA devices: load "
		    "ib_uverbs and your HCA's driver (mlx5_ib ...)",
		    why);
		return;
	}
	snprintf(fix, sizeof(fix),
		 "inside a container: ask for the devices through CDI (--device %s=NAME, or the "
		 "bridge's resource in the pod spec); on the host: modprobe ib_uverbs",
		 d->o->kind);
	doctor_add_check(d, "verbs", DOCTOR_FAIL, data, fix,
			 "verbs sees no RDMA device%s although %s/class/infiniband_verbs has %zu: "
			 "this process cannot reach them (no /dev/infiniband/uverbs* node here?)",
			 why, d->o->sysfs_root, sysfs_usable);
}

/* The summary, then one check per device verbs lists. */
static void verbs_devices(struct doctor *d, const struct disc_verbs_report *rep, cJSON *data)
{
	size_t good = 0;

	for (size_t i = 0; i < rep->n_devices; i++)
		good += rep->devices[i].failed == DISC_VERBS_STEP_NONE;
	doctor_add_check(d, "verbs", good ? DOCTOR_OK : DOCTOR_FAIL, data, NULL,
			 "verbs sees %zu devices%s, %zu of them fully usable", rep->n_devices,
			 rep->truncated ? " (list truncated)" : "", good);
	for (size_t i = 0; i < rep->n_devices; i++) {
		const struct disc_verbs_device *v = &rep->devices[i];
		_cleanup_free_ char *id = strdup_printf("verbs.%s", v->name);

		if (!id) {
			d->oom = true;
			return;
		}
		if (v->failed == DISC_VERBS_STEP_NONE)
			doctor_add_check(d, id, DOCTOR_OK, NULL, NULL,
					 "%s: opened, protection domain allocated, %zu-byte memory "
					 "region registered",
					 v->name, rep->mr_size);
		else
			doctor_add_check(d, id, DOCTOR_FAIL, NULL, verbs_fix(v),
					 "%s: %s failed: %s", v->name,
					 disc_verbs_step_name(v->failed), strerror(-v->error));
	}
}

static void check_rdma_cm(struct doctor *d, const struct disc_verbs_report *rep)
{
	cJSON *data = cJSON_CreateObject();

	if (!rep->cm_error) {
		cJSON_AddNullToObject(data, "error");
		doctor_add_check(d, "rdma_cm", DOCTOR_OK, data, NULL,
				 "librdmacm opened an event channel");
		return;
	}
	cJSON_AddStringToObject(data, "error", strerror(-rep->cm_error));
	doctor_add_check(d, "rdma_cm", DOCTOR_WARN, data,
			 "modprobe rdma_ucm; inside a container the spec's rdma_cm node must be "
			 "there (rdma-cdi generate adds it when the host has it)",
			 "librdmacm cannot open an event channel (/dev/infiniband/rdma_cm): %s; "
			 "applications that connect through rdma_cm (UCX, MPI on RoCE) fail",
			 strerror(-rep->cm_error));
}

void doctor_check_verbs(struct doctor *d, size_t sysfs_usable)
{
	struct disc_verbs_report *rep = NULL;
	int r;

	r = disc_verbs_probe(d->o->mr_size, &rep);
	if (r < 0) {
		d->oom = d->oom || r == -ENOMEM;
		doctor_add_check(d, "verbs", DOCTOR_FAIL, NULL, NULL, "probing verbs: %s",
				 strerror(-r));
		return;
	}
	if (rep->list_error || rep->n_devices == 0)
		verbs_none(d, rep, sysfs_usable, verbs_json(rep));
	else
		verbs_devices(d, rep, verbs_json(rep));
	check_rdma_cm(d, rep);
	disc_verbs_report_free(rep);
}

int doctor_check_netns(struct doctor *d)
{
	enum disc_netns_mode mode = DISC_NETNS_UNKNOWN;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	cJSON *data = cJSON_CreateObject();
	int r = disc_netns_mode_read(&mode, &err);

	/* No RDMA netlink is no failure of the read: the mode is unknown, and why. */
	if (r == 0 && mode == DISC_NETNS_UNKNOWN)
		r = rc_error_set(&err, -EPROTONOSUPPORT,
				 "the kernel has no RDMA netlink: no RDMA core (ib_core) in this "
				 "kernel");
	cJSON_AddStringToObject(data, "mode", disc_netns_mode_name(mode));
	if (r < 0) {
		cJSON_AddStringToObject(data, "reason", rc_error_msg(err, r));
		doctor_add_check(d, "netns", DOCTOR_WARN, data, NULL, "RDMA netns mode unknown: %s",
				 rc_error_msg(err, r));
	} else if (mode == DISC_NETNS_EXCLUSIVE) {
		cJSON_AddNullToObject(data, "reason");
		doctor_add_check(
		    d, "netns", DOCTOR_WARN, data,
		    "move each device into its pod's network namespace (netns.isolation says "
		    "what does), or rdma system set netns shared",
		    "RDMA netns mode exclusive: a container sees an RDMA device only once it "
		    "is moved into its network namespace");
	} else {
		cJSON_AddNullToObject(data, "reason");
		doctor_add_check(
		    d, "netns", DOCTOR_OK, data, NULL,
		    "RDMA netns mode shared: every network namespace sees every device");
	}
	return r < 0 ? DISC_NETNS_UNKNOWN : mode;
}
