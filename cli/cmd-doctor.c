/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rdma-cdi doctor: checks, on a host or inside a container, everything an RDMA workload
 * given devices through CDI depends on, and says for each failure how to fix it.
 *
 * Every check appends one entry to a JSON array (id, status, message, fix, data); the text
 * output is rendered from that array, so `--json` and the text never disagree. The JSON
 * form is documented in docs/doctor.md.
 *
 * Two kinds of checks: what this process sees of the RDMA stack (verbs, rdma_cm, the
 * memlock limit, CAP_IPC_LOCK, the netns mode: never under --host-root), and files of a
 * host (sysfs, /dev, modules, runtime configs, units, spec dirs: read under --host-root,
 * default /, so a doctor in a DaemonSet pod can check the node it runs on).
 *
 * Exit status: 0 nothing failed (warnings allowed), 1 at least one check failed, 2 bad
 * usage.
 */
#include <fcntl.h>
#include <getopt.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "cdi.h"
#include "common.h"
#include "build-config.h"
#include "discovery.h"
#include "doctor-config.h"
#include "hooks.h"
#include "specs.h"

/* The command's entry point, as every command of rdma-cdi's command table has. */
int cmd_doctor(int argc, char **argv);

#define DOCTOR_JSON_VERSION 1
#define DEFAULT_MR_SIZE (64u << 20)
#define MAX_MR_SIZE (1ull << 40)
#define CONFIG_MAX_BYTES (1u << 20)

enum status { ST_OK, ST_INFO, ST_WARN, ST_FAIL, ST_SKIP };

static const char *const status_names[] = {
    [ST_OK] = "ok", [ST_INFO] = "info", [ST_WARN] = "warn", [ST_FAIL] = "fail", [ST_SKIP] = "skip",
};

struct doctor {
	const char *host_root;	/* "/" */
	const char *sysfs_root; /* host paths */
	const char *dev_root;
	const char *spec_dir;
	const char *kind;
	size_t mr_size;
	bool json;
	/* Inside a container, looking at itself (no --host-root): device nodes of devices it
	 * was not given are expected to be missing, the host's spec is not visible. */
	bool host_root_given;
	bool container;
	const char *container_why;
	size_t nodes_given;
	cJSON *checks;
	unsigned n[ST_SKIP + 1];
	bool oom;
};

/* ---- the report --------------------------------------------------------------- */

/* Records one check; takes ownership of data (may be NULL). fix NULL = nothing to do. */
static void add_check(struct doctor *d, const char *id, enum status st, cJSON *data,
		      const char *fix, const char *fmt, ...) _printf_(6, 7);
static void add_check(struct doctor *d, const char *id, enum status st, cJSON *data,
		      const char *fix, const char *fmt, ...)
{
	char msg[2048];
	cJSON *c = cJSON_CreateObject();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->n[st]++;
	if (!c || !cJSON_AddStringToObject(c, "id", id) ||
	    !cJSON_AddStringToObject(c, "status", status_names[st]) ||
	    !cJSON_AddStringToObject(c, "message", msg) ||
	    !(fix ? cJSON_AddStringToObject(c, "fix", fix) : cJSON_AddNullToObject(c, "fix")) ||
	    !cJSON_AddItemToObject(c, "data", data ? data : cJSON_CreateObject()) ||
	    !cJSON_AddItemToArray(d->checks, c)) {
		d->oom = true;
		cJSON_Delete(c);
		return;
	}
}

/* The same bytes quoted for a terminal: control characters escaped. */
static void print_safe(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

/* Two failures with one cause (no devices: sysfs and verbs agree) get one fix line. */
static bool fix_printed_before(const cJSON *checks, const cJSON *upto, const char *fix)
{
	const cJSON *c, *f, *st;

	cJSON_ArrayForEach (c, checks) {
		if (c == upto)
			return false;
		f = cJSON_GetObjectItem(c, "fix");
		st = cJSON_GetObjectItem(c, "status");
		if (cJSON_IsString(f) && strcmp(f->valuestring, fix) == 0 &&
		    strcmp(st->valuestring, cJSON_GetObjectItem(upto, "status")->valuestring) == 0)
			return true;
	}
	return false;
}

static void print_text(const struct doctor *d)
{
	static const char *const tags[] = {
	    [ST_OK] = " ok ",	[ST_INFO] = "info", [ST_WARN] = "WARN",
	    [ST_FAIL] = "FAIL", [ST_SKIP] = "skip",
	};
	const cJSON *c;
	unsigned k = 0;

	printf("rdma-cdi doctor %s (host root %s, memory region %zu bytes)\n", RDMA_CDI_VERSION,
	       d->host_root, d->mr_size);
	cJSON_ArrayForEach (c, d->checks) {
		const char *st = cJSON_GetObjectItem(c, "status")->valuestring;
		enum status s = ST_OK;

		for (size_t i = 0; i < ELEMENTSOF(status_names); i++)
			if (strcmp(st, status_names[i]) == 0)
				s = (enum status)i;
		printf("[%s] %s: ", tags[s], cJSON_GetObjectItem(c, "id")->valuestring);
		print_safe(stdout, cJSON_GetObjectItem(c, "message")->valuestring);
		printf("\n");
	}
	printf("\nverdict: %s: %u failed, %u warnings, %u ok\n",
	       d->n[ST_FAIL]   ? "FAIL"
	       : d->n[ST_WARN] ? "OK with warnings"
			       : "OK",
	       d->n[ST_FAIL], d->n[ST_WARN], d->n[ST_OK]);
	for (enum status want = ST_FAIL; want >= ST_WARN; want--)
		cJSON_ArrayForEach (c, d->checks) {
			const cJSON *fix = cJSON_GetObjectItem(c, "fix");

			if (strcmp(cJSON_GetObjectItem(c, "status")->valuestring,
				   status_names[want]) != 0 ||
			    !cJSON_IsString(fix))
				continue;
			if (fix_printed_before(d->checks, c, fix->valuestring))
				continue;
			if (k++ == 0)
				printf("\nto fix:\n");
			printf("  %u. %s (%s): ", k, cJSON_GetObjectItem(c, "id")->valuestring,
			       want == ST_FAIL ? "failed" : "warning");
			print_safe(stdout, fix->valuestring);
			printf("\n");
		}
}

/* ---- small helpers ------------------------------------------------------------ */

/* A path on the host as this process reads it: under --host-root. */
static char *host_path(const struct doctor *d, const char *path)
{
	if (strcmp(d->host_root, "/") == 0)
		return strdup(path);
	return strdup_printf("%s%s", d->host_root, path);
}

static cJSON *limit_json(rlim_t v)
{
	return v == RLIM_INFINITY ? cJSON_CreateString("unlimited") : cJSON_CreateNumber((double)v);
}

static const char *fmt_limit(rlim_t v, char *buf, size_t size)
{
	return hook_format_limit(v, buf, size);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- devices, modules, device nodes ------------------------------------------ */

/* The fix for "no RDMA device", naming the spec's kind. */
static const char *no_devices_fix(const struct doctor *d, char *buf, size_t size)
{
	snprintf(buf, size,
		 "modprobe ib_uverbs and your HCA's RDMA driver (mlx5_ib for ConnectX; irdma, "
		 "bnxt_re, efa, ...); inside a container: ask for a device through CDI (--device "
		 "%s=NAME)",
		 d->kind);
	return buf;
}

static int check_devices(struct doctor *d, struct disc_node **ret_node)
{
	_cleanup_free_ char *sysfs = host_path(d, d->sysfs_root), *dev = host_path(d, d->dev_root);
	struct disc_options o = {.sysfs_root = sysfs, .dev_root = dev};
	struct disc_node *node = NULL;
	cJSON *data, *list;
	char fix[512];
	size_t usable;
	int r;

	if (!sysfs || !dev)
		return -ENOMEM;
	r = disc_scan(&o, &node);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		add_check(d, "devices", ST_FAIL, NULL,
			  "check --sysfs-root/--host-root: sysfs is normally mounted at /sys",
			  "cannot read sysfs at %s: %s", sysfs, strerror(-r));
		*ret_node = NULL;
		return 0;
	}
	data = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(data, "devices");
	for (size_t i = 0; list && i < node->n_devices; i++) {
		const struct disc_device *dev_i = &node->devices[i];
		cJSON *o2 = cJSON_CreateObject();

		cJSON_AddItemToArray(list, o2);
		cJSON_AddStringToObject(o2, "name", dev_i->name);
		if (dev_i->pci[0])
			cJSON_AddStringToObject(o2, "pci", dev_i->pci);
		else
			cJSON_AddNullToObject(o2, "pci");
		if (dev_i->has_uverbs)
			cJSON_AddStringToObject(o2, "uverbs", dev_i->uverbs.name);
		else
			cJSON_AddNullToObject(o2, "uverbs");
		cJSON_AddBoolToObject(o2, "usable", disc_device_usable(dev_i));
	}
	list = cJSON_AddArrayToObject(data, "problems");
	for (size_t i = 0; list && i < node->n_problems; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(node->problems[i]));
	usable = disc_node_count_usable(node);
	if (node->n_devices == 0) {
		_cleanup_free_ char *nested = strdup_printf("%s/sys/class", sysfs);
		const char *slash = strcmp(d->sysfs_root, "/") == 0 ? "" : d->sysfs_root;

		/* A host's / given as --sysfs-root: say so rather than "no devices". */
		if (nested && is_dir(nested)) {
			snprintf(fix, sizeof(fix), "--sysfs-root %s/sys", slash);
			add_check(d, "devices", ST_FAIL, data, fix,
				  "no class/infiniband under %s, but %s/sys/class exists: did you "
				  "mean --sysfs-root %s/sys (or --host-root)?",
				  d->sysfs_root, slash, slash);
		} else {
			add_check(d, "devices", ST_FAIL, data, no_devices_fix(d, fix, sizeof(fix)),
				  "the kernel has no RDMA devices: load ib_uverbs and your HCA's "
				  "driver (mlx5_ib ...); nothing in %s/class/infiniband",
				  d->sysfs_root);
		}
	} else if (usable == 0)
		add_check(d, "devices", ST_FAIL, data, "modprobe ib_uverbs",
			  "%zu RDMA devices but none has a uverbs device (class/infiniband_verbs): "
			  "load ib_uverbs",
			  node->n_devices);
	else
		add_check(d, "devices", ST_OK, data, NULL,
			  "%zu RDMA devices, %zu usable through verbs", node->n_devices, usable);
	*ret_node = node;
	return 0;
}

static void check_module(struct doctor *d, const char *name, const char *builtin_evidence,
			 enum status missing)
{
	_cleanup_free_ char *dir = strdup_printf("%s/module/%s", d->sysfs_root, name);
	_cleanup_free_ char *ev = strdup_printf("%s/%s", d->sysfs_root, builtin_evidence);
	_cleanup_free_ char *hdir = dir ? host_path(d, dir) : NULL,
			    *hev = ev ? host_path(d, ev) : NULL;
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
	if (is_dir(hdir)) {
		cJSON_AddStringToObject(data, "state", "loaded");
		add_check(d, id, ST_OK, data, NULL, "%s is loaded", name);
	} else if (exists(hev)) {
		/* Built-in modules have no /sys/module entry unless they take parameters. */
		cJSON_AddStringToObject(data, "state", "builtin");
		add_check(d, id, ST_OK, data, NULL, "%s is built into the kernel (%s exists)", name,
			  ev);
	} else {
		cJSON_AddStringToObject(data, "state", "missing");
		add_check(d, id, missing, data, fix, "%s is not loaded (no %s)", name, dir);
	}
}

/* One device node under the host's dev root, against what sysfs says it must be. */
static void check_node(struct doctor *d, const struct disc_chardev *cd)
{
	_cleanup_free_ char *path = strdup_printf("%s/infiniband/%s", d->dev_root, cd->name);
	_cleanup_free_ char *hpath = path ? host_path(d, path) : NULL;
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
			add_check(d, id, ST_INFO, data, NULL, "%s: not given to this container",
				  path);
		else
			add_check(d, id, ST_FAIL, data, r == -ENOENT ? mknod : "run as root",
				  "%s: %s", path, strerror(-r));
		return;
	}
	if (strcmp(cd->name, "rdma_cm") != 0)
		d->nodes_given++;
	if (!S_ISCHR(st.st_mode)) {
		add_check(d, id, ST_FAIL, data, mknod, "%s is not a character device", path);
		return;
	}
	if (major(st.st_rdev) != cd->major || minor(st.st_rdev) != cd->minor) {
		_cleanup_free_ char *fix =
		    strdup_printf("rm %s, then: mknod -m 0666 %s c %u %u (or udevadm trigger)",
				  path, path, cd->major, cd->minor);

		add_check(d, id, ST_FAIL, data, fix, "%s is %u:%u but the kernel says %u:%u", path,
			  major(st.st_rdev), minor(st.st_rdev), cd->major, cd->minor);
		return;
	}
	if (faccessat(AT_FDCWD, hpath, R_OK | W_OK, AT_EACCESS) < 0) {
		int r = -errno;

		add_check(d, id, ST_FAIL, data,
			  "run as root, or give users access with a udev rule: "
			  "KERNEL==\"uverbs*|rdma_cm\", MODE=\"0666\"",
			  "%s %u:%u: not readable and writable here: %s", path, cd->major,
			  cd->minor, strerror(-r));
		return;
	}
	add_check(d, id, ST_OK, data, NULL, "%s: character device %u:%u, accessible", path,
		  cd->major, cd->minor);
}

static void check_nodes(struct doctor *d, const struct disc_node *node)
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
		 d->kind, d->kind);
	if (d->nodes_given == 0)
		add_check(d, "container.devices", ST_FAIL, NULL, fix,
			  "this container was given none of the node's %zu RDMA devices (no "
			  "%s/infiniband/uverbs* node)",
			  usable, d->dev_root);
	else
		add_check(d, "container.devices", ST_OK, NULL, NULL,
			  "this container was given %zu of the node's %zu RDMA devices",
			  d->nodes_given, usable);
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

static void check_memlock(struct doctor *d, bool cap)
{
	struct rlimit rl;
	cJSON *data = cJSON_CreateObject();
	char s[32], h[32];

	cJSON_AddBoolToObject(data, "cap_ipc_lock", cap);
	add_check(d, "capability.ipc_lock", ST_INFO, data, NULL,
		  cap ? "CAP_IPC_LOCK is in the effective set: RLIMIT_MEMLOCK does not limit "
			"memory registration"
		      : "CAP_IPC_LOCK is not in the effective set: memory registration is bounded "
			"by RLIMIT_MEMLOCK");

	data = cJSON_CreateObject();
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		add_check(d, "memlock", ST_FAIL, data, NULL, "getrlimit(RLIMIT_MEMLOCK): %s",
			  strerror(errno));
		return;
	}
	cJSON_AddItemToObject(data, "soft", limit_json(rl.rlim_cur));
	cJSON_AddItemToObject(data, "hard", limit_json(rl.rlim_max));
	cJSON_AddNumberToObject(data, "mr_size", (double)d->mr_size);
	fmt_limit(rl.rlim_cur, s, sizeof(s));
	fmt_limit(rl.rlim_max, h, sizeof(h));
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= d->mr_size)
		add_check(d, "memlock", ST_OK, data, NULL,
			  "RLIMIT_MEMLOCK soft %s, hard %s: enough for a %zu-byte memory region", s,
			  h, d->mr_size);
	else if (cap)
		add_check(
		    d, "memlock", ST_OK, data, NULL,
		    "RLIMIT_MEMLOCK soft %s, hard %s is below the %zu-byte memory region, but "
		    "CAP_IPC_LOCK lifts the limit",
		    s, h, d->mr_size);
	else
		add_check(d, "memlock", ST_FAIL, data, MEMLOCK_FIX,
			  "RLIMIT_MEMLOCK soft %s, hard %s is below the %zu-byte memory region and "
			  "CAP_IPC_LOCK is not held: registering it fails",
			  s, h, d->mr_size);
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

/* sysfs_usable: devices the (host's) sysfs shows; verbs seeing none of them means this
 * process cannot reach them, not that the kernel has none. */
static void check_verbs(struct doctor *d, size_t sysfs_usable)
{
	struct disc_verbs_report *rep = NULL;
	cJSON *data, *list;
	char fix[512];
	int r;

	r = disc_verbs_probe(d->mr_size, &rep);
	if (r < 0) {
		d->oom = d->oom || r == -ENOMEM;
		add_check(d, "verbs", ST_FAIL, NULL, NULL, "probing verbs: %s", strerror(-r));
		return;
	}
	data = cJSON_CreateObject();
	if (rep->list_error)
		cJSON_AddStringToObject(data, "list_error", strerror(-rep->list_error));
	else
		cJSON_AddNullToObject(data, "list_error");
	list = cJSON_AddArrayToObject(data, "devices");
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

	if (rep->list_error || rep->n_devices == 0) {
		char why[128] = "";

		if (rep->list_error)
			snprintf(why, sizeof(why), " (ibv_get_device_list: %s)",
				 strerror(-rep->list_error));
		if (sysfs_usable) {
			snprintf(fix, sizeof(fix),
				 "inside a container: ask for the devices through CDI (--device "
				 "%s=NAME, or the bridge's resource in the pod spec); on the host: "
				 "modprobe ib_uverbs",
				 d->kind);
			add_check(d, "verbs", ST_FAIL, data, fix,
				  "verbs sees no RDMA device%s although %s/class/infiniband_verbs "
				  "has %zu: this process cannot reach them (no "
				  "/dev/infiniband/uverbs* node here?)",
				  why, d->sysfs_root, sysfs_usable);
		} else {
			add_check(
			    d, "verbs", ST_FAIL, data, no_devices_fix(d, fix, sizeof(fix)),
			    "verbs sees no RDMA device%s: the kernel has no RDMA devices: load "
			    "ib_uverbs and your HCA's driver (mlx5_ib ...)",
			    why);
		}
	} else {
		size_t good = 0;

		for (size_t i = 0; i < rep->n_devices; i++)
			good += rep->devices[i].failed == DISC_VERBS_STEP_NONE;
		add_check(d, "verbs", good ? ST_OK : ST_FAIL, data, NULL,
			  "verbs sees %zu devices%s, %zu of them fully usable", rep->n_devices,
			  rep->truncated ? " (list truncated)" : "", good);
		for (size_t i = 0; i < rep->n_devices; i++) {
			const struct disc_verbs_device *v = &rep->devices[i];
			_cleanup_free_ char *id = strdup_printf("verbs.%s", v->name);

			if (!id) {
				d->oom = true;
				break;
			}
			if (v->failed == DISC_VERBS_STEP_NONE)
				add_check(
				    d, id, ST_OK, NULL, NULL,
				    "%s: opened, protection domain allocated, %zu-byte memory "
				    "region registered",
				    v->name, rep->mr_size);
			else
				add_check(d, id, ST_FAIL, NULL, verbs_fix(v), "%s: %s failed: %s",
					  v->name, disc_verbs_step_name(v->failed),
					  strerror(-v->error));
		}
	}

	data = cJSON_CreateObject();
	if (rep->cm_error) {
		cJSON_AddStringToObject(data, "error", strerror(-rep->cm_error));
		add_check(d, "rdma_cm", ST_WARN, data,
			  "modprobe rdma_ucm; inside a container the spec's rdma_cm node must be "
			  "there (rdma-cdi generate adds it when the host has it)",
			  "librdmacm cannot open an event channel (/dev/infiniband/rdma_cm): %s; "
			  "applications that connect through rdma_cm (UCX, MPI on RoCE) fail",
			  strerror(-rep->cm_error));
	} else {
		cJSON_AddNullToObject(data, "error");
		add_check(d, "rdma_cm", ST_OK, data, NULL, "librdmacm opened an event channel");
	}
	disc_verbs_report_free(rep);
}

static void check_netns(struct doctor *d)
{
	enum disc_netns_mode mode = DISC_NETNS_UNKNOWN;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	cJSON *data = cJSON_CreateObject();
	int r = disc_rdma_netns_mode(&mode, &err);

	cJSON_AddStringToObject(data, "mode", disc_netns_mode_name(mode));
	if (r < 0) {
		cJSON_AddStringToObject(data, "reason", rc_error_msg(err, r));
		add_check(d, "netns", ST_WARN, data, NULL, "RDMA netns mode unknown: %s",
			  rc_error_msg(err, r));
	} else if (mode == DISC_NETNS_EXCLUSIVE) {
		cJSON_AddNullToObject(data, "reason");
		add_check(d, "netns", ST_WARN, data,
			  "rdma system set netns shared (or move each device into its pod's "
			  "network namespace with rdma-cni)",
			  "RDMA netns mode exclusive: a container sees an RDMA device only once it "
			  "is moved into its network namespace");
	} else {
		cJSON_AddNullToObject(data, "reason");
		add_check(d, "netns", ST_OK, data, NULL,
			  "RDMA netns mode shared: every network namespace sees every device");
	}
}

/* ---- containerd and CRI-O --------------------------------------------------------- */

struct cri_settings {
	long long version; /* containerd: 1 when absent */
	int enable_cdi[2]; /* per section below: -1 absent, 0, 1; and its line */
	int enable_cdi_line[2];
	cJSON *spec_dirs[2]; /* NULL = absent */
	const char *const *sections;
	size_t n_sections;
};

/* containerd 1.7 (config version 2) and 2.x (version 3) keep the CRI's CDI settings here. */
static const char *const containerd_sections[] = {
    "plugins\nio.containerd.grpc.v1.cri",
    "plugins\nio.containerd.cri.v1.runtime",
};
static const char *const crio_sections[] = {"crio\nruntime"};

static void cri_cb(void *ud, const char *key, const struct doctor_toml_value *v)
{
	struct cri_settings *s = ud;
	size_t n;

	if (strcmp(key, "version") == 0 && v->type == DOCTOR_TOML_INT)
		s->version = v->i;
	for (size_t i = 0; i < s->n_sections; i++) {
		n = strlen(s->sections[i]);
		if (strncmp(key, s->sections[i], n) != 0 || key[n] != '\n')
			continue;
		if (strcmp(key + n + 1, "enable_cdi") == 0 && v->type == DOCTOR_TOML_BOOL) {
			s->enable_cdi[i] = v->b;
			s->enable_cdi_line[i] = v->line;
		}
		if (strcmp(key + n + 1, "cdi_spec_dirs") == 0 && v->type == DOCTOR_TOML_STRINGS) {
			cJSON_Delete(s->spec_dirs[i]);
			s->spec_dirs[i] = cJSON_Duplicate(v->strs, true);
		}
	}
}

/* Reads and parses one config file; 0, -ENOENT, or -errno with a reason in err. */
static int read_toml(const char *path, struct cri_settings *s, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	char why[256];
	size_t len;
	int r;

	r = read_full_file_at(AT_FDCWD, path, CONFIG_MAX_BYTES, false, &buf, &len);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 r == -EFBIG ? "larger than 1 MiB, not a runtime config" : strerror(-r));
		return r;
	}
	r = doctor_toml_parse(buf, len, cri_cb, s, why, sizeof(why));
	if (r < 0)
		snprintf(err, errlen, "%s:%s", path, why);
	return r;
}

static void cri_settings_done(struct cri_settings *s)
{
	for (size_t i = 0; i < ELEMENTSOF(s->spec_dirs); i++)
		cJSON_Delete(s->spec_dirs[i]);
}

/* True when dirs (NULL = the runtimes' default /etc/cdi, /var/run/cdi) holds dir. */
static bool dirs_hold(const cJSON *dirs, const char *dir)
{
	static const char *const defaults[] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR};
	size_t n = strlen(dir);
	const cJSON *e;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (!dirs) {
		for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
			if (strlen(defaults[i]) == n && strncmp(defaults[i], dir, n) == 0)
				return true;
		return false;
	}
	cJSON_ArrayForEach (e, dirs) {
		size_t m = strlen(e->valuestring);

		while (m > 1 && e->valuestring[m - 1] == '/')
			m--;
		if (m == n && strncmp(e->valuestring, dir, n) == 0)
			return true;
	}
	return false;
}

static const char *section_header(const char *section, char *buf, size_t size)
{
	const char *nl = strchr(section, '\n');

	snprintf(buf, size, "[%.*s.\"%s\"]", (int)(nl - section), section, nl + 1);
	return buf;
}

static void check_containerd(struct doctor *d)
{
	_cleanup_free_ char *path = host_path(d, "/etc/containerd/config.toml");
	_cleanup_free_ char *bin1 = host_path(d, "/usr/bin/containerd");
	_cleanup_free_ char *bin2 = host_path(d, "/usr/local/bin/containerd");
	struct cri_settings s = {.version = 1,
				 .enable_cdi = {-1, -1},
				 .sections = containerd_sections,
				 .n_sections = ELEMENTSOF(containerd_sections)};
	char err[512], hdr[128], fix[512];
	cJSON *data;
	size_t sec;
	int enable, r;
	bool v3;

	if (!path || !bin1 || !bin2) {
		d->oom = true;
		return;
	}
	r = read_toml(path, &s, err, sizeof(err));
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "path", "/etc/containerd/config.toml");
	if (r == -ENOENT) {
		bool installed = exists(bin1) || exists(bin2);

		cJSON_AddBoolToObject(data, "exists", false);
		if (installed)
			add_check(d, "containerd.config", ST_WARN, data,
				  "containerd config default > /etc/containerd/config.toml, set "
				  "enable_cdi = true in [plugins.\"io.containerd.grpc.v1.cri\"], "
				  "systemctl restart containerd",
				  "containerd is installed but has no /etc/containerd/config.toml: "
				  "containerd 1.7 then runs with CDI off (2.x has it on)");
		else
			add_check(d, "containerd.config", ST_SKIP, data, NULL,
				  "no containerd here (no /etc/containerd/config.toml)");
		return;
	}
	cJSON_AddBoolToObject(data, "exists", true);
	if (r < 0) {
		add_check(d, "containerd.config", ST_FAIL, data,
			  "fix the syntax error: containerd refuses to start with this file", "%s",
			  err);
		cri_settings_done(&s);
		return;
	}
	/* Config version 3 is containerd 2.x, where CDI is on unless turned off. */
	v3 = s.version >= 3;
	sec = v3 ? 1 : 0;
	enable = s.enable_cdi[sec];
	cJSON_AddNumberToObject(data, "config_version", (double)s.version);
	cJSON_AddStringToObject(data, "section",
				section_header(containerd_sections[sec], hdr, sizeof(hdr)));
	if (enable < 0)
		cJSON_AddNullToObject(data, "enable_cdi");
	else
		cJSON_AddBoolToObject(data, "enable_cdi", enable);
	cJSON_AddItemToObject(data, "cdi_spec_dirs",
			      s.spec_dirs[sec] ? cJSON_Duplicate(s.spec_dirs[sec], true)
					       : cJSON_CreateNull());
	snprintf(fix, sizeof(fix),
		 "set enable_cdi = true under %s in /etc/containerd/config.toml, then systemctl "
		 "restart containerd",
		 hdr);
	if (enable == 0)
		add_check(d, "containerd.config", ST_FAIL, data, fix,
			  "/etc/containerd/config.toml:%d: enable_cdi = false: containerd ignores "
			  "CDI devices",
			  s.enable_cdi_line[sec]);
	else if (enable < 0 && !v3)
		add_check(d, "containerd.config", ST_FAIL, data, fix,
			  "/etc/containerd/config.toml (config version %lld) does not set "
			  "enable_cdi: containerd 1.7 leaves CDI off (2.x turns it on; the line is "
			  "harmless there)",
			  s.version);
	else if (!dirs_hold(s.spec_dirs[sec], d->spec_dir)) {
		snprintf(fix, sizeof(fix),
			 "add \"%s\" to cdi_spec_dirs under %s in /etc/containerd/config.toml, "
			 "then systemctl restart containerd",
			 d->spec_dir, hdr);
		add_check(d, "containerd.config", ST_FAIL, data, fix,
			  "CDI is on, but cdi_spec_dirs does not include %s, where the spec is",
			  d->spec_dir);
	} else
		add_check(d, "containerd.config", ST_OK, data, NULL,
			  "CDI is on (%s), spec dirs include %s",
			  enable > 0 ? "enable_cdi = true" : "the 2.x default", d->spec_dir);
	cri_settings_done(&s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#define MAX_DROPINS 256

struct names {
	char *v[MAX_DROPINS];
	size_t n;
};

static void names_done(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

/* Adds the "*.conf" file names in the host directory dir (skipping hidden ones and names
 * already there), at most MAX_DROPINS. A missing directory adds nothing. */
static int add_conf_names(const struct doctor *d, const char *dir, struct names *l)
{
	_cleanup_free_ char *hdir = host_path(d, dir);
	_cleanup_closedir_ DIR *dh = NULL;
	struct dirent *de;

	if (!hdir)
		return -ENOMEM;
	dh = opendir(hdir);
	if (!dh)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((de = readdir(dh)) && l->n < MAX_DROPINS) {
		size_t n = strlen(de->d_name);
		bool dup = false;

		if (de->d_name[0] == '.' || n <= 5 || strcmp(de->d_name + n - 5, ".conf") != 0)
			continue;
		for (size_t i = 0; i < l->n; i++)
			dup = dup || strcmp(strrchr(l->v[i], '/') + 1, de->d_name) == 0;
		if (dup)
			continue;
		l->v[l->n] = strdup_printf("%s/%s", dir, de->d_name);
		if (!l->v[l->n])
			return -ENOMEM;
		l->n++;
	}
	return 0;
}

static int cmp_base(const void *a, const void *b)
{
	return strcmp(strrchr(*(char *const *)a, '/'), strrchr(*(char *const *)b, '/'));
}

static void check_crio(struct doctor *d)
{
	_cleanup_free_ char *main_conf = host_path(d, "/etc/crio/crio.conf");
	struct cri_settings s = {.enable_cdi = {-1, -1},
				 .sections = crio_sections,
				 .n_sections = ELEMENTSOF(crio_sections)};
	cJSON *data = cJSON_CreateObject(), *files = cJSON_AddArrayToObject(data, "files");
	struct names drop = {};
	char err[512], fix[512];
	size_t found = 0;
	int r;

	if (!main_conf || !files) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	/* CRI-O applies crio.conf, then the drop-ins in lexical order: later ones win. */
	r = read_toml(main_conf, &s, err, sizeof(err));
	if (r >= 0) {
		found++;
		cJSON_AddItemToArray(files, cJSON_CreateString("/etc/crio/crio.conf"));
	}
	if (r != -ENOENT && r < 0)
		goto fail;
	if (add_conf_names(d, "/etc/crio/crio.conf.d", &drop) < 0) {
		d->oom = true;
		goto out;
	}
	qsort(drop.v, drop.n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < drop.n; i++) {
		_cleanup_free_ char *hp = host_path(d, drop.v[i]);

		if (!hp) {
			d->oom = true;
			goto out;
		}
		r = read_toml(hp, &s, err, sizeof(err));
		if (r == -ENOENT)
			continue;
		if (r < 0)
			goto fail;
		found++;
		cJSON_AddItemToArray(files, cJSON_CreateString(drop.v[i]));
	}
	if (!found) {
		add_check(d, "crio.config", ST_SKIP, data, NULL,
			  "no CRI-O here (no /etc/crio/crio.conf or crio.conf.d)");
		goto out;
	}
	cJSON_AddItemToObject(data, "cdi_spec_dirs",
			      s.spec_dirs[0] ? cJSON_Duplicate(s.spec_dirs[0], true)
					     : cJSON_CreateNull());
	if (!dirs_hold(s.spec_dirs[0], d->spec_dir)) {
		snprintf(fix, sizeof(fix),
			 "add \"%s\" to cdi_spec_dirs under [crio.runtime] (e.g. in "
			 "/etc/crio/crio.conf.d/99-cdi.conf), then systemctl restart crio",
			 d->spec_dir);
		add_check(d, "crio.config", ST_FAIL, data, fix,
			  "CRI-O's cdi_spec_dirs does not include %s, where the spec is",
			  d->spec_dir);
	} else
		add_check(d, "crio.config", ST_OK, data, NULL, "CRI-O reads CDI specs from %s",
			  d->spec_dir);
	goto out;
fail:
	add_check(d, "crio.config", ST_FAIL, data,
		  "fix the syntax error: CRI-O refuses to start with this file", "%s", err);
out:
	names_done(&drop);
	cri_settings_done(&s);
}

/* ---- the containerd unit's LimitMEMLOCK ----------------------------------------- */

struct unit_limit {
	char value[128]; /* "" = not set */
	char file[512];
	int line;
};

/* Applies one unit file's [Service] LimitMEMLOCK= (the last one wins; an empty value
 * resets). */
static int scan_unit(const char *hpath, const char *shown, struct unit_limit *lim)
{
	_cleanup_free_ char *buf = NULL;
	char value[sizeof(lim->value)];
	size_t len;
	int line, r;

	r = read_full_file_at(AT_FDCWD, hpath, CONFIG_MAX_BYTES, false, &buf, &len);
	if (r < 0)
		return r;
	r = doctor_unit_setting(buf, len, "Service", "LimitMEMLOCK", value, sizeof(value), &line);
	if (r <= 0)
		return r;
	memcpy(lim->value, value, sizeof(value));
	snprintf(lim->file, sizeof(lim->file), "%s", shown);
	lim->line = line;
	return 0;
}

static void check_containerd_unit(struct doctor *d)
{
	/* systemd's unit search path, most important first: the first unit file found is
	 * used; drop-ins from every directory apply, one per file name (/etc masks /lib). */
	static const char *const dirs[] = {"/etc/systemd/system", "/run/systemd/system",
					   "/usr/local/lib/systemd/system", "/lib/systemd/system",
					   "/usr/lib/systemd/system"};
	struct unit_limit lim = {};
	cJSON *data = cJSON_CreateObject(), *dropins = cJSON_AddArrayToObject(data, "dropins");
	struct names drop = {};
	const char *unit = NULL;
	rlim_t soft, hard;

	if (!dropins) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	for (size_t i = 0; i < ELEMENTSOF(dirs) && !unit; i++) {
		_cleanup_free_ char *p = strdup_printf("%s/containerd.service", dirs[i]);
		_cleanup_free_ char *hp = p ? host_path(d, p) : NULL;

		if (hp && scan_unit(hp, p, &lim) == 0)
			unit = dirs[i];
	}
	if (!unit) {
		add_check(d, "containerd.unit", ST_SKIP, data, NULL,
			  "no containerd.service unit here");
		return;
	}
	{
		_cleanup_free_ char *u = strdup_printf("%s/containerd.service", unit);

		cJSON_AddStringToObject(data, "unit", u ? u : "");
	}
	/* Drop-in names across all dirs, first occurrence wins, applied in name order. */
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		_cleanup_free_ char *p = strdup_printf("%s/containerd.service.d", dirs[i]);

		if (!p || add_conf_names(d, p, &drop) == -ENOMEM) {
			d->oom = true;
			break;
		}
	}
	qsort(drop.v, drop.n, sizeof(char *), cmp_base);
	for (size_t i = 0; i < drop.n; i++) {
		_cleanup_free_ char *hp = host_path(d, drop.v[i]);

		if (hp && scan_unit(hp, drop.v[i], &lim) == 0)
			cJSON_AddItemToArray(dropins, cJSON_CreateString(drop.v[i]));
	}
	names_done(&drop);
	if (lim.value[0])
		cJSON_AddStringToObject(data, "limit_memlock", lim.value);
	else
		cJSON_AddNullToObject(data, "limit_memlock");

#define UNIT_FIX                                                                                   \
	"mkdir -p /etc/systemd/system/containerd.service.d && printf "                             \
	"'[Service]\\nLimitMEMLOCK=infinity\\n' > "                                                \
	"/etc/systemd/system/containerd.service.d/memlock.conf && systemctl daemon-reload && "     \
	"systemctl restart containerd"
	if (!lim.value[0]) {
		add_check(
		    d, "containerd.unit", ST_WARN, data, UNIT_FIX,
		    "containerd.service sets no LimitMEMLOCK: containers start with systemd's "
		    "default (8 MiB since systemd 253, 64 KiB before) unless the rdma-cdi "
		    "hook raises it");
	} else if (doctor_systemd_limit_parse(lim.value, &soft, &hard) < 0) {
		add_check(d, "containerd.unit", ST_WARN, data, UNIT_FIX,
			  "%s:%d: LimitMEMLOCK=%s is not a limit systemd understands", lim.file,
			  lim.line, lim.value);
	} else if (soft != RLIM_INFINITY && soft < d->mr_size) {
		add_check(d, "containerd.unit", ST_WARN, data, UNIT_FIX,
			  "%s:%d: LimitMEMLOCK=%s is below the %zu-byte memory region", lim.file,
			  lim.line, lim.value, d->mr_size);
	} else {
		add_check(d, "containerd.unit", ST_OK, data, NULL, "%s:%d: LimitMEMLOCK=%s",
			  lim.file, lim.line, lim.value);
	}
}

/* ---- spec dirs and our spec --------------------------------------------------------- */

static void check_spec_dirs(struct doctor *d)
{
	const char *shown[3] = {SPEC_DEFAULT_DIR, SPEC_DYNAMIC_DIR, d->spec_dir};
	size_t n =
	    strcmp(d->spec_dir, SPEC_DEFAULT_DIR) == 0 || strcmp(d->spec_dir, SPEC_DYNAMIC_DIR) == 0
		? 2
		: 3;
	char *paths[3] = {};
	struct cdi_listing *l = NULL;
	cJSON *data = cJSON_CreateObject(), *jd = cJSON_AddArrayToObject(data, "dirs");
	size_t klen = strlen(d->kind), invalid = 0, ours_conflicts = 0, present = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		if (!(paths[i] = host_path(d, shown[i])))
			d->oom = true;
	r = d->oom || !jd ? -ENOMEM : cdi_list_dirs((const char *const *)paths, n, &l);
	if (r < 0) {
		d->oom = true;
		cJSON_Delete(data);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject(), *files = cJSON_CreateArray();
		bool ex = is_dir(paths[i]);

		present += ex;
		cJSON_AddItemToArray(jd, o);
		cJSON_AddStringToObject(o, "path", shown[i]);
		cJSON_AddBoolToObject(o, "exists", ex);
		cJSON_AddItemToObject(o, "files", files);
		for (size_t k = 0; k < l->n_entries; k++) {
			const struct cdi_list_entry *e = &l->entries[k];
			cJSON *f, *names;

			if (strcmp(e->dir, paths[i]) != 0)
				continue;
			f = cJSON_CreateObject();
			cJSON_AddItemToArray(files, f);
			cJSON_AddStringToObject(f, "file", e->file);
			if (e->kind)
				cJSON_AddStringToObject(f, "kind", e->kind);
			else
				cJSON_AddNullToObject(f, "kind");
			names = cJSON_AddArrayToObject(f, "names");
			for (size_t m = 0; names && m < e->n_names; m++)
				cJSON_AddItemToArray(names, cJSON_CreateString(e->names[m]));
			if (e->error) {
				cJSON_AddStringToObject(f, "error", e->error);
				invalid++;
			} else {
				cJSON_AddNullToObject(f, "error");
			}
		}
	}
	jd = cJSON_AddArrayToObject(data, "conflicts");
	for (size_t i = 0; jd && i < l->n_conflicts; i++) {
		cJSON_AddItemToArray(jd, cJSON_CreateString(l->conflicts[i]));
		if (strncmp(l->conflicts[i], d->kind, klen) == 0 && l->conflicts[i][klen] == '=')
			ours_conflicts++;
	}
	if (ours_conflicts)
		add_check(
		    d, "spec_dirs", ST_FAIL, data,
		    "remove the other file defining these names (see rdma-cdi list)",
		    "%zu device names of %s are defined twice in one spec dir: runtimes refuse "
		    "them",
		    ours_conflicts, d->kind);
	else if (invalid)
		add_check(d, "spec_dirs", ST_WARN, data, "fix or remove them (see rdma-cdi list)",
			  "%zu invalid spec files: runtimes ignore them", invalid);
	else if (!present && d->container)
		add_check(d, "spec_dirs", ST_SKIP, data, NULL,
			  "no CDI spec directory inside this container (the host's are checked "
			  "with --host-root)");
	else if (!present)
		add_check(d, "spec_dirs", ST_WARN, data, "rdma-cdi generate",
			  "no CDI spec directory (%s, %s) exists", SPEC_DEFAULT_DIR,
			  SPEC_DYNAMIC_DIR);
	else
		add_check(d, "spec_dirs", ST_OK, data, NULL, "%zu spec files, all valid",
			  l->n_entries);
out:
	cdi_listing_free(l);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
}

/* How the spec on disk was generated: its hook's path and --memlock, and --with-mad. */
static void spec_options_from(const cJSON *spec, struct spec_options *o)
{
	const cJSON *edits = cJSON_GetObjectItemCaseSensitive(spec, "containerEdits");
	const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(edits, "hooks");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices");
	const cJSON *h, *dv;
	rlim_t v;

	cJSON_ArrayForEach (h, hooks) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(h, "path");
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(h, "args");
		const cJSON *a0 = cJSON_GetArrayItem(args, 0), *a1 = cJSON_GetArrayItem(args, 1);

		if (!cJSON_IsString(a0) || strcmp(a0->valuestring, SPEC_HOOK_ARG0) != 0 ||
		    !cJSON_IsString(path) || path->valuestring[0] != '/')
			continue;
		o->hook_path = path->valuestring;
		if (cJSON_IsString(a1) && strncmp(a1->valuestring, "--memlock=", 10) == 0 &&
		    hook_parse_memlock(a1->valuestring + 10, &v) == 0)
			o->memlock = a1->valuestring + 10;
	}
	cJSON_ArrayForEach (dv, devs) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(dv, "containerEdits");
		const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(e, "deviceNodes"), *n;

		cJSON_ArrayForEach (n, nodes) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(n, "path");

			if (cJSON_IsString(p) &&
			    strncmp(p->valuestring, "/dev/infiniband/umad", 20) == 0)
				o->with_mad = true;
		}
	}
}

/* Names one spec has and the other lacks: all into arr, the first few as "a, b" into out.
 * The spec on disk is hostile: the quadratic compare is bounded. */
#define NAMES_COMPARE_MAX 4096
static void names_missing(const cJSON *from, const cJSON *in, cJSON *arr, char *out, size_t size)
{
	const cJSON *fd = cJSON_GetObjectItemCaseSensitive(from, "devices");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "devices");
	const cJSON *a, *b;
	size_t used = 0, count = 0;

	out[0] = '\0';
	if (cJSON_GetArraySize(fd) > NAMES_COMPARE_MAX ||
	    cJSON_GetArraySize(id) > NAMES_COMPARE_MAX)
		return;
	cJSON_ArrayForEach (a, fd) {
		const cJSON *na = cJSON_GetObjectItemCaseSensitive(a, "name");
		bool found = false;

		if (!cJSON_IsString(na))
			continue;
		cJSON_ArrayForEach (b, id) {
			const cJSON *nb = cJSON_GetObjectItemCaseSensitive(b, "name");

			found = found || (cJSON_IsString(nb) &&
					  strcmp(na->valuestring, nb->valuestring) == 0);
		}
		if (found)
			continue;
		cJSON_AddItemToArray(arr, cJSON_CreateString(na->valuestring));
		if (++count > 8 || used >= size)
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "",
					 na->valuestring);
	}
}

/* The hook our spec runs must exist on the host: a runtime aborts container creation
 * when a hook cannot be executed. hook NULL: the spec has none of ours. */
static void check_hook(struct doctor *d, const char *hook, const char *spec)
{
	_cleanup_free_ char *hp = hook ? host_path(d, hook) : NULL;
	_cleanup_free_ char *fix = NULL;
	cJSON *data = cJSON_CreateObject();
	struct stat st;

	if (hook && !hp) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	if (!hook) {
		cJSON_AddNullToObject(data, "path");
		add_check(d, "hook", ST_WARN, data,
			  "rdma-cdi generate (its spec runs rdma-cdi-hook to raise RLIMIT_MEMLOCK)",
			  "%s runs no rdma-cdi-hook: containers keep the runtime's RLIMIT_MEMLOCK",
			  spec);
		return;
	}
	cJSON_AddStringToObject(data, "path", hook);
	fix = strdup_printf("install rdma-cdi-hook at %s (meson install puts it at %s), or "
			    "rdma-cdi generate --hook-path WHERE_IT_IS",
			    hook, RDMA_CDI_HOOK_PATH);
	if (stat(hp, &st) < 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		add_check(d, "hook", ST_FAIL, data, fix,
			  "%s runs the hook %s, which %s: runtimes refuse to create containers "
			  "that ask for these devices",
			  spec, hook,
			  stat(hp, &st) < 0 ? "does not exist" : "is not an executable file");
	else
		add_check(d, "hook", ST_OK, data, NULL, "the spec's hook %s is installed", hook);
}

static void check_spec(struct doctor *d, const struct disc_node *node)
{
	_cleanup_free_ char *dir = host_path(d, d->spec_dir), *fj = NULL, *fy = NULL;
	_cleanup_free_ char *path = NULL, *shown = NULL, *buf = NULL, *want = NULL, *fix = NULL;
	_cleanup_(cJSON_Deletep) cJSON *disk = NULL, *built = NULL;
	struct spec_options o = {.kind = d->kind, .dev_root = d->dev_root};
	enum cdi_format fmt = CDI_FORMAT_JSON;
	cJSON *data = cJSON_CreateObject();
	size_t len, want_len;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	char added[512], removed[512];
	int r = -ENOENT;

	fj = cdi_spec_file_name(d->kind, CDI_FORMAT_JSON);
	fy = cdi_spec_file_name(d->kind, CDI_FORMAT_YAML);
	if (!dir || !fj || !fy || !data) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	for (int i = 0; i < 2 && !buf; i++) {
		free(path);
		free(shown);
		path = strdup_printf("%s/%s", dir, i ? fy : fj);
		shown = strdup_printf("%s/%s", d->spec_dir, i ? fy : fj);
		if (!path || !shown) {
			cJSON_Delete(data);
			d->oom = true;
			return;
		}
		r = read_full_file_at(AT_FDCWD, path, CDI_SPEC_MAX_BYTES, true, &buf, &len);
		if (r >= 0)
			fmt = i ? CDI_FORMAT_YAML : CDI_FORMAT_JSON;
		else if (r != -ENOENT)
			break;
	}
	cJSON_AddStringToObject(data, "path", shown);
	if (!buf && r != -ENOENT) {
		cJSON_AddStringToObject(data, "state", "unreadable");
		add_check(d, "spec", ST_FAIL, data,
			  "replace it with a regular file readable by root: rm it, then rdma-cdi "
			  "generate",
			  "%s: %s", shown, r == -ELOOP ? "is a symlink" : strerror(-r));
		return;
	}
	r = node ? spec_build(node, &o, &built) : -ENODEV;
	if (!buf) {
		cJSON_AddStringToObject(data, "path", shown);
		cJSON_AddStringToObject(data, "state", "missing");
		fix = strdup_printf("rdma-cdi generate --spec-dir %s%s%s", d->spec_dir,
				    strcmp(d->kind, SPEC_DEFAULT_KIND) ? " --kind " : "",
				    strcmp(d->kind, SPEC_DEFAULT_KIND) ? d->kind : "");
		if (d->container)
			add_check(d, "spec", ST_SKIP, data, NULL,
				  "no spec for %s in %s inside this container (the host's is "
				  "checked with --host-root)",
				  d->kind, d->spec_dir);
		else if (r == -ENODEV)
			add_check(d, "spec", ST_SKIP, data, NULL,
				  "no spec for %s in %s, and no usable device to write one for",
				  d->kind, d->spec_dir);
		else
			add_check(
			    d, "spec", ST_FAIL, data, fix,
			    "no spec for %s in %s (neither %s nor %s): runtimes cannot resolve "
			    "%s=... names",
			    d->kind, d->spec_dir, fj, fy, d->kind);
		return;
	}
	cJSON_Delete(built);
	built = NULL;
	r = cdi_spec_parse(buf, len, fmt, &disk, &err);
	if (r < 0) {
		cJSON_AddStringToObject(data, "state", "invalid");
		add_check(d, "spec", ST_FAIL, data,
			  "rdma-cdi generate (it replaces the file only "
			  "when it is ours; otherwise remove it first)",
			  "%s:%s", shown, rc_error_msg(err, r));
		return;
	}
	spec_options_from(disk, &o);
	check_hook(d, o.hook_path, shown);
	/* The fix repeats only what differs from generate's defaults. */
	if (o.hook_path && strcmp(o.hook_path, RDMA_CDI_HOOK_PATH) == 0)
		o.hook_path = NULL;
	if (o.memlock && strcmp(o.memlock, "unlimited") == 0)
		o.memlock = NULL;
	fix = strdup_printf("rdma-cdi generate --spec-dir %s%s%s%s%s%s%s%s", d->spec_dir,
			    strcmp(d->kind, SPEC_DEFAULT_KIND) ? " --kind " : "",
			    strcmp(d->kind, SPEC_DEFAULT_KIND) ? d->kind : "",
			    o.with_mad ? " --with-mad" : "", o.hook_path ? " --hook-path " : "",
			    o.hook_path ? o.hook_path : "", o.memlock ? " --memlock " : "",
			    o.memlock ? o.memlock : "");
	if (!fix) {
		cJSON_Delete(data);
		d->oom = true;
		return;
	}
	r = node ? spec_build(node, &o, &built) : -ENODEV;
	if (r == -ENODEV) {
		cJSON_AddStringToObject(data, "state", "stale");
		free(fix);
		fix = strdup_printf("load the devices' drivers (modprobe ib_uverbs mlx5_ib ...), "
				    "or rm %s if this node has no RDMA devices any more",
				    shown);
		add_check(d, "spec", ST_FAIL, data, fix,
			  "%s names devices, but this node has no usable RDMA device: containers "
			  "asking for them fail to start",
			  shown);
		return;
	}
	if (r >= 0)
		r = cdi_spec_format(built, fmt, &want, &want_len);
	if (r < 0) {
		cJSON_AddStringToObject(data, "state", "unknown");
		add_check(d, "spec", ST_WARN, data, NULL,
			  "cannot build the spec generate would write, to compare: %s",
			  strerror(-r));
		return;
	}
	if (want_len == len && memcmp(want, buf, len) == 0) {
		cJSON_AddStringToObject(data, "state", "match");
		add_check(d, "spec", ST_OK, data, NULL,
			  "%s matches what rdma-cdi generate writes now", shown);
		return;
	}
	cJSON_AddStringToObject(data, "state", "differs");
	names_missing(built, disk, cJSON_AddArrayToObject(data, "new_devices"), added,
		      sizeof(added));
	names_missing(disk, built, cJSON_AddArrayToObject(data, "gone_devices"), removed,
		      sizeof(removed));
	add_check(d, "spec", ST_FAIL, data, fix,
		  "%s differs from what rdma-cdi generate writes now%s%s%s%s%s", shown,
		  added[0] ? "; not in it: " : "", added, removed[0] ? "; no longer here: " : "",
		  removed, !added[0] && !removed[0] ? " (device numbers or edits changed)" : "");
}

/* ---- command line --------------------------------------------------------------------- */

static void doctor_help(FILE *f)
{
	fprintf(f,
		"Usage: rdma-cdi doctor [OPTIONS]\n"
		"\n"
		"Checks what RDMA in containers needs, on a host or inside a container: the\n"
		"devices verbs can open (protection domain, memory region), rdma_cm,\n"
		"RLIMIT_MEMLOCK and CAP_IPC_LOCK, the device nodes, the kernel modules, the RDMA\n"
		"netns mode, containerd's and CRI-O's CDI settings, the containerd unit's\n"
		"LimitMEMLOCK, the CDI spec dirs, and whether the spec on disk is what\n"
		"`rdma-cdi generate` writes now. Ends with a verdict and a fix per failure.\n"
		"\n"
		"Options:\n"
		"  --host-root DIR     read the host's /sys, /dev and /etc under DIR (default /);\n"
		"                      given, even as /, it also says this is not a container\n"
		"  --sysfs-root DIR    sysfs on the host (default /sys)\n"
		"  --dev-root DIR      device nodes on the host (default /dev)\n"
		"  --spec-dir DIR      where the spec is (default " SPEC_DEFAULT_DIR ")\n"
		"  --kind VENDOR/CLASS CDI kind (default " SPEC_DEFAULT_KIND ")\n"
		"  --mr-size BYTES     memory region to register (K, M, G suffixes; default 64M)\n"
		"  --json              print the report as JSON (docs/doctor.md)\n"
		"  --log-level LEVEL   error, warning, info (default) or debug\n"
		"  --log-format text|json log line format (default text)\n"
		"  --help              show this help\n"
		"\n"
		"verbs, rdma_cm, memlock, CAP_IPC_LOCK and the netns mode are those of this\n"
		"process, whatever --host-root says.\n"
		"\n"
		"Exit status: 0 nothing failed, 1 a check failed, 2 bad usage.\n");
}

static bool abs_path_ok(const char *opt, const char *v)
{
	if (v[0] == '/' && !strstr(v, "/../") &&
	    strcmp(v + strlen(v) - (strlen(v) >= 3 ? 3 : 0), "/..") != 0)
		return true;
	log_error("%s %s: expected an absolute path without '..'", opt, v);
	return false;
}

static int parse_doctor_options(struct doctor *d, int argc, char **argv)
{
	enum { O_HOST = 0x100, O_SYSFS, O_DEV, O_SPEC, O_KIND, O_MR, O_JSON, O_LEVEL, O_FORMAT };
	static const struct option opts[] = {
	    {"host-root", required_argument, NULL, O_HOST},
	    {"sysfs-root", required_argument, NULL, O_SYSFS},
	    {"dev-root", required_argument, NULL, O_DEV},
	    {"spec-dir", required_argument, NULL, O_SPEC},
	    {"kind", required_argument, NULL, O_KIND},
	    {"mr-size", required_argument, NULL, O_MR},
	    {"json", no_argument, NULL, O_JSON},
	    {"log-level", required_argument, NULL, O_LEVEL},
	    {"log-format", required_argument, NULL, O_FORMAT},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	int c;

	/* 0: GNU getopt starts over, whatever parsed argv before us. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		rlim_t v;

		switch (c) {
		case 'h':
			doctor_help(stdout);
			return 0;
		case O_LEVEL: {
			enum log_level l;

			if (log_parse_level(optarg, &l) < 0) {
				log_error("--log-level %s: expected error, warning, info or debug",
					  optarg);
				return 2;
			}
			log_set_level(l);
			break;
		}
		case O_FORMAT:
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0) {
				log_error("--log-format %s: expected text or json", optarg);
				return 2;
			}
			log_set_json(strcmp(optarg, "json") == 0);
			break;
		case O_HOST:
			if (!abs_path_ok("--host-root", optarg))
				return 2;
			d->host_root = optarg;
			d->host_root_given = true;
			break;
		case O_SYSFS:
			if (!abs_path_ok("--sysfs-root", optarg))
				return 2;
			d->sysfs_root = optarg;
			break;
		case O_DEV:
			if (!abs_path_ok("--dev-root", optarg))
				return 2;
			d->dev_root = optarg;
			break;
		case O_SPEC:
			if (!abs_path_ok("--spec-dir", optarg))
				return 2;
			d->spec_dir = optarg;
			break;
		case O_KIND:
			if (!cdi_kind_is_valid(optarg)) {
				log_error("--kind %s: not a CDI kind (vendor/class)", optarg);
				return 2;
			}
			d->kind = optarg;
			break;
		case O_MR:
			if (hook_parse_memlock(optarg, &v) < 0 || v == RLIM_INFINITY ||
			    v > MAX_MR_SIZE) {
				log_error(
				    "--mr-size %s: expected a byte count from 1 to 1T with an "
				    "optional K, M or G suffix",
				    optarg);
				return 2;
			}
			d->mr_size = (size_t)v;
			break;
		case O_JSON:
			d->json = true;
			break;
		default:
			log_error("doctor: unknown or incomplete option '%s' (see rdma-cdi doctor "
				  "--help)",
				  argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		log_error("doctor: unexpected argument '%s'", argv[optind]);
		return 2;
	}
	return -1;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor d = {.host_root = "/",
			   .sysfs_root = "/sys",
			   .dev_root = "/dev",
			   .spec_dir = SPEC_DEFAULT_DIR,
			   .kind = SPEC_DEFAULT_KIND,
			   .mr_size = DEFAULT_MR_SIZE};
	struct disc_node *node = NULL;
	size_t hl;
	int r;

	r = parse_doctor_options(&d, argc, argv);
	if (r >= 0)
		return r;
	/* "/host/" and "/host" are the same root; "/" stays "/". */
	hl = strlen(d.host_root);
	while (hl > 1 && d.host_root[hl - 1] == '/')
		hl--;
	_cleanup_free_ char *root = strndup(d.host_root, hl);
	if (!root)
		return log_error_errno(-ENOMEM, "doctor"), 1;
	d.host_root = root;
	if (!is_dir(root)) {
		log_error("--host-root %s: not a directory", root);
		return 2;
	}
	d.checks = cJSON_CreateArray();
	if (!d.checks)
		return log_error_errno(-ENOMEM, "doctor"), 1;

	/* An explicit --host-root, even "/", says: this is the host. */
	d.container_why = !d.host_root_given ? container_evidence() : NULL;
	d.container = d.container_why != NULL;
	{
		cJSON *data = cJSON_CreateObject();

		cJSON_AddBoolToObject(data, "container", d.container);
		if (d.container)
			cJSON_AddStringToObject(data, "evidence", d.container_why);
		else
			cJSON_AddNullToObject(data, "evidence");
		if (d.container)
			add_check(&d, "context", ST_INFO, data, NULL,
				  "inside a container (%s): checking what it was given",
				  d.container_why);
		else
			add_check(&d, "context", ST_INFO, data, NULL, "checking the host at %s",
				  root);
	}
	r = check_devices(&d, &node);
	if (r >= 0) {
		check_module(&d, "ib_uverbs", "class/infiniband_verbs", ST_FAIL);
		check_module(&d, "rdma_ucm", "class/misc/rdma_cm", ST_WARN);
		check_nodes(&d, node);
		check_memlock(&d, has_cap_ipc_lock());
		check_verbs(&d, node ? disc_node_count_usable(node) : 0);
		check_netns(&d);
		check_containerd(&d);
		check_containerd_unit(&d);
		check_crio(&d);
		check_spec_dirs(&d);
		check_spec(&d, node);
	}
	disc_node_free(node);
	if (r < 0 || d.oom) {
		cJSON_Delete(d.checks);
		return log_error_errno(-ENOMEM, "doctor"), 1;
	}

	if (d.json) {
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddNumberToObject(o, "doctor_version", DOCTOR_JSON_VERSION);
		cJSON_AddStringToObject(o, "rdma_cdi_version", RDMA_CDI_VERSION);
		cJSON_AddStringToObject(o, "host_root", d.host_root);
		cJSON_AddNumberToObject(o, "mr_size", (double)d.mr_size);
		cJSON_AddStringToObject(o, "verdict", d.n[ST_FAIL] ? "fail" : "ok");
		cJSON_AddNumberToObject(o, "failed", d.n[ST_FAIL]);
		cJSON_AddNumberToObject(o, "warnings", d.n[ST_WARN]);
		cJSON_AddItemToObject(o, "checks", d.checks);
		s = cJSON_Print(o);
		if (s)
			printf("%s\n", s);
		free(s);
		cJSON_Delete(o);
		if (!s)
			return log_error_errno(-ENOMEM, "doctor"), 1;
	} else {
		print_text(&d);
		cJSON_Delete(d.checks);
	}
	fflush(stdout);
	return d.n[ST_FAIL] ? 1 : 0;
}
