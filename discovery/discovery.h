/* SPDX-License-Identifier: Apache-2.0 */
/*
 * discovery: sysfs -> device model.
 *
 * disc_scan() reads a sysfs tree (default /sys, or a synthetic one for tests) and
 * returns a self-contained, immutable snapshot of every RDMA device: its PCI function,
 * ports and character devices. A snapshot owns all its memory; rebuild it at any time
 * (rescan, hotplug) by scanning again and freeing the old one. Nothing here writes.
 *
 * Everything read from sysfs is hostile: names are checked with name_is_safe(), numbers
 * are range-checked, unreadable or garbage attributes degrade to "unknown" and a problem
 * is recorded in disc_node.problems instead of failing the scan. No open or read can
 * block: every file is opened O_NONBLOCK and anything but a regular file where an
 * attribute should be (a FIFO, a device node) is refused with a problem line.
 *
 * Threads: there is no global state. disc_scan() and disc_refresh() may run on any
 * thread, several at once, each with its own options; a snapshot is immutable, so any
 * number of threads may read one while another scans. A daemon that must stay
 * responsive runs the scan on a worker thread and bounds it with disc_options.cancel or
 * .deadline_usec (checked before each device and each class entry; the scan then
 * returns -ECANCELED / -ETIMEDOUT and frees what it built). A read stuck inside the
 * kernel cannot be interrupted from user space: then the worker returns late, and a
 * caller that gave up on it must have left it everything it uses (the options and their
 * strings) and free its result. The scan needs about 64 KiB of stack and holds at most 8
 * file descriptors at a time.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rc-error.h"

#define DISC_NAME_MAX 64     /* RDMA device names: IB_DEVICE_NAME_MAX is 64 */
#define DISC_PCI_MAX 32      /* "0000:3b:00.0" */
#define DISC_NETDEV_MAX 16   /* IFNAMSIZ */
#define DISC_ATTR_MAX 64
#define DISC_PATH_MAX 512
#define DISC_PORT_ACTIVE 4 /* IB_PORT_ACTIVE in ports/N/state */

/* A character device node as described by a sysfs "dev" file. */
struct disc_chardev {
	char name[DISC_NAME_MAX];  /* "uverbs0", "umad1", "issm1", "rdma_cm" */
	unsigned major, minor;
	bool node_present;  /* <dev-root>/infiniband/<name> exists and is that char device */
};

struct disc_port {
	unsigned num;                       /* 1-based port number */
	char link_layer[DISC_ATTR_MAX];     /* "InfiniBand", "Ethernet", "Unknown" */
	int state;                          /* DISC_PORT_ACTIVE (4); -1 unknown */
	char state_name[DISC_ATTR_MAX];     /* "ACTIVE", "DOWN", ... or "" */
	int phys_state;                     /* 5 = LinkUp; -1 unknown */
	char phys_state_name[DISC_ATTR_MAX];
	char rate[DISC_ATTR_MAX];           /* "100 Gb/sec (4X EDR)" or "" */
	char netdev[DISC_NETDEV_MAX + 1];   /* "" when none */
	bool has_umad, has_issm;
	struct disc_chardev umad, issm;
};

struct disc_device {
	char name[DISC_NAME_MAX];           /* RDMA device name: "mlx5_0", "rocep59s0f0", "smi1" */
	char pci[DISC_PCI_MAX];             /* PCI function "0000:3b:00.0"; "" when not on PCI */
	/* Path of the parent device relative to the sysfs root, e.g.
	 * "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0"; "" when unknown. Its leading
	 * components are the upstream bridges: used for PCIe-switch affinity. */
	char dev_path[DISC_PATH_MAX];
	/* The RDMA device's own directory relative to the sysfs root (class/infiniband/<name>
	 * resolved), e.g. "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_0". */
	char ibdev_path[DISC_PATH_MAX];
	unsigned vendor_id, device_id;      /* 0 when unknown */
	char driver[DISC_NAME_MAX];         /* "mlx5_core", "bnxt_en", "irdma"; "" unknown */
	int numa_node;                      /* -1 when unknown or garbage */
	bool is_vf;
	char pf_pci[DISC_PCI_MAX];          /* PF of a VF, "" otherwise */
	/* A VF's PF netdev: the first valid interface name in the PF function's net/
	 * ("ens1f0np0"), what the config's pfNames selector matches. "" for PFs, or when the
	 * PF has no netdev in this network namespace. */
	char pf_netdev[DISC_NETDEV_MAX + 1];
	char node_guid[DISC_ATTR_MAX];      /* "e8eb:d303:00dd:188f" or "" */
	char fw_ver[DISC_ATTR_MAX];
	char node_type[DISC_ATTR_MAX];      /* "1: CA" */
	struct disc_port *ports;
	size_t n_ports;
	bool has_uverbs;                    /* usable through verbs only when true */
	struct disc_chardev uverbs;
	/* Lent to another network namespace (RDMA netns mode exclusive, moved into a pod's
	 * namespace): no class/infiniband entry here, but its uverbs device is listed and
	 * its PCI function is present and bound to a driver. The scan knows no ports, GUID
	 * or firmware of it; the Sysfs Watcher carries over the last ones it knew. */
	bool lent;
};

struct disc_scan_state;

struct disc_node {
	/* Sorted by PCI address, then name (devices without PCI address last). The
	 * position is the "index" used by convenience names; it is not stable across
	 * hotplug. */
	struct disc_device *devices;
	size_t n_devices;
	bool has_rdma_cm;
	struct disc_chardev rdma_cm;
	/* Human-readable, one line each: "mlx5_4: no uverbs device, not usable through
	 * verbs", "uverbs3: node /dev/infiniband/uverbs3 missing", garbage attributes... */
	char **problems;
	size_t n_problems;
	/* Discovery's own record of what the scan listed, for disc_refresh(); NULL in nodes
	 * not made by disc_scan()/disc_refresh() (then a refresh asks for a full scan). */
	struct disc_scan_state *scan_state;
};

struct disc_options {
	const char *sysfs_root;  /* NULL = "/sys" */
	const char *dev_root;    /* NULL = "/dev" */
	/* Optional: set to true (from any thread) to abandon a running scan or refresh. */
	const atomic_bool *cancel;
	/* Optional: CLOCK_MONOTONIC time in microseconds after which the scan gives up; 0 =
	 * none. */
	uint64_t deadline_usec;
};

/*
 * Scans the sysfs tree. Returns 0 and a snapshot (possibly with zero devices when the
 * tree has no class/infiniband), -ENOENT/-ENOTDIR when sysfs_root itself cannot be
 * opened, -EACCES/-EPERM when class/infiniband exists but may not be listed (never "no
 * devices" for what is a permission problem), -ECANCELED/-ETIMEDOUT when abandoned
 * through opts->cancel/deadline_usec, -ENOMEM. Unreadable attributes are problem lines
 * naming the file. A device lent to another network namespace (disc_device.lent) is a
 * device of the snapshot, not a problem. Does not log. ret_node is written only on success.
 */
int disc_scan(const struct disc_options *opts, struct disc_node **ret_node);
void disc_node_free(struct disc_node *node);

/*
 * The cheap periodic rescan: re-reads only what changes without a device node appearing
 * or vanishing, for a node scanned earlier with the same options:
 *  - the listing of class/infiniband: any name added, removed or renamed (`rdma dev set
 *    NAME name NEW`) sets *ret_need_full and gives no node;
 *  - each port's state (and phys_state when the state changed, see docs/benchmarks-notes.md);
 *  - the netdev names: the listing of class/net is compared with the scan's; only when it
 *    changed are the netdevs (and VFs' pf_netdev) of devices whose name vanished, or who
 *    had none, read again the way disc_scan() reads them.
 * Returns 0 with either *ret_node = a new snapshot (a copy of old with the new values;
 * old is untouched) and *ret_need_full = false, or *ret_node = NULL and *ret_need_full =
 * true: the device set changed, old was not made by disc_scan(), or a value that used
 * to be good became unreadable (the full scan reports why). The new snapshot carries
 * old's problems. Errors as disc_scan() (-EACCES, -ECANCELED, ...), -EINVAL when old,
 * ret_node or ret_need_full is NULL. Does not log.
 * Not seen: a device replaced under the same name, a change of node presence under the
 * dev root, two netdevs swapping names between two refreshes (the listing is unchanged):
 * the first two come with device-node events that call for disc_scan().
 */
int disc_refresh(const struct disc_options *opts, const struct disc_node *old,
		 struct disc_node **ret_node, bool *ret_need_full);

/*
 * True when a and b hold the same devices in the same order with every field the CDI
 * spec, the kubelet or `discover --json` shows (names, addresses, ids, NUMA, ports and
 * their states, netdevs, character devices and node presence, rdma_cm). Problems are not
 * compared. NULL equals only NULL.
 */
bool disc_node_equal(const struct disc_node *a, const struct disc_node *b);

/* A device goes into the CDI spec and to the kubelet only when it has a uverbs device. */
bool disc_device_usable(const struct disc_device *dev);
/* True when another usable device sits on the same PCI function as node->devices[i]
 * (devices in discovery order: siblings adjacent). spec_device_id() and the DRA device
 * names both decide with it, so an ID and a name never disagree. */
bool disc_device_shares_function(const struct disc_node *node, size_t i);
/* Healthy for the kubelet: usable, uverbs node present, at least one port ACTIVE. */
bool disc_device_healthy(const struct disc_device *dev);
/*
 * Why dev is not healthy, for log lines: "port 1 DOWN", "uverbs node missing", "no
 * ACTIVE port: port 1 DOWN, port 2 INIT", "no uverbs device", several joined by "; ".
 * Writes "" and returns 0 when healthy, returns 1 when not; always NUL-terminates buf
 * (len > 0), cutting long reasons with "...". -EINVAL when buf is NULL or len 0.
 */
int disc_device_health_reason(const struct disc_device *dev, char *buf, size_t len);
size_t disc_node_count_usable(const struct disc_node *node);
/* The health reason (and the log line) of a lent device. */
#define DISC_LENT_REASON "lent to another network namespace"

/* The device of node with dev's name and PCI address (the same device); NULL if absent. */
const struct disc_device *disc_node_find_same(const struct disc_node *node,
					      const struct disc_device *dev);
/*
 * Gives each lent device of node that has no ports (a scan cannot read them) what prev,
 * the snapshot before, knew of the same device: its ports (states, netdevs, umad/issm),
 * GUID, firmware and node type, its last known health and topology. For the owner of a
 * node not yet shared. 0 or -ENOMEM (node then keeps what it had).
 */
int disc_node_carry_lent(struct disc_node *node, const struct disc_node *prev);
/* Looks a device up by RDMA name; NULL if absent. */
const struct disc_device *disc_node_find(const struct disc_node *node, const char *name);

/*
 * The stable JSON form printed by `rdma-cdi discover --json` (documented in
 * docs/discover-json.md). Returns NULL on OOM.
 */
cJSON *disc_node_to_json(const struct disc_node *node);

/* ---- verbs probe (discovery/verbs.c; the only part that uses libibverbs and
 * librdmacm, dlopen'ed when it runs; its own library: disc_verbs_dep) --------------- */

/* The steps disc_verbs_probe() runs for each device, in order. */
enum disc_verbs_step {
	DISC_VERBS_STEP_NONE, /* every step worked */
	DISC_VERBS_STEP_OPEN, /* ibv_open_device */
	DISC_VERBS_STEP_PD,   /* ibv_alloc_pd */
	DISC_VERBS_STEP_MMAP, /* mmap of the memory region's buffer */
	DISC_VERBS_STEP_REG_MR, /* ibv_reg_mr: pins the pages, RLIMIT_MEMLOCK applies */
};

struct disc_verbs_device {
	char name[DISC_NAME_MAX];    /* as verbs names it; "?" when it gave none */
	enum disc_verbs_step failed; /* the step that failed, DISC_VERBS_STEP_NONE */
	int error;                   /* -errno of that step, 0 */
};

#define DISC_VERBS_MAX_DEVICES 1024

struct disc_verbs_report {
	size_t mr_size;
	/* ibv_get_device_list(): 0, or -errno (-ENOSYS: the kernel has no uverbs;
	 * -ELIBACC: libibverbs.so.1 cannot be loaded). */
	int list_error;
	struct disc_verbs_device *devices;
	size_t n_devices;
	bool truncated; /* more than DISC_VERBS_MAX_DEVICES devices */
	/* rdma_create_event_channel() (opens rdma_cm): 0, or -errno (-ELIBACC: no
	 * librdmacm.so.1). */
	int cm_error;
};

/*
 * Lists the RDMA devices verbs sees in this process (its own /sys and /dev: not
 * --sysfs-root), opens each, allocates a protection domain and registers an anonymous
 * mapping of mr_size bytes (> 0) as a memory region, then undoes all of it; also opens
 * and closes an rdma_cm event channel. Failures of those steps are results, recorded in
 * the report, not errors: returns 0 with *ret set, -EINVAL, -ENOMEM. Does not log.
 */
int disc_verbs_probe(size_t mr_size, struct disc_verbs_report **ret);
void disc_verbs_report_free(struct disc_verbs_report *report);
/* "ibv_open_device", "ibv_alloc_pd", ...; "" for DISC_VERBS_STEP_NONE. */
const char *disc_verbs_step_name(enum disc_verbs_step step);

enum disc_netns_mode {
	DISC_NETNS_UNKNOWN,
	DISC_NETNS_SHARED,    /* every netns sees every RDMA device (the kernel default) */
	DISC_NETNS_EXCLUSIVE, /* a device is visible only in the netns it was moved to */
};

/* "shared", "exclusive", "unknown". */
const char *disc_netns_mode_name(enum disc_netns_mode mode);

/* ---- reading sysfs --------------------------------------------------------------------- */

/*
 * The readers the scan uses, for every caller that reads sysfs (doctor too), as
 * rdma-core's libibverbs/sysfs.c serves SYSFS_PATH: paths are relative to a root (the
 * --sysfs-root), class links are resolved inside it (openat2 RESOLVE_IN_ROOT, or a walk
 * in user space with the same rules where the kernel or a seccomp profile refuses
 * openat2), files are opened O_NONBLOCK|O_CLOEXEC and must be regular files. Plain
 * -errno functions: none of them logs.
 */
struct disc_sysfs {
	int root_fd;
	bool openat2; /* false: the user-space walk */
};

/* Opens root (NULL: "/sys"); use_openat2 = false forces the user-space walk. -errno. */
int disc_sysfs_open(const char *root, bool use_openat2, struct disc_sysfs *ret);
/* Closes the root; sys->root_fd is -1 after. */
void disc_sysfs_close(struct disc_sysfs *sys);
/* Opens the root-relative path ("" is the root), links resolved inside the root. */
int disc_sysfs_open_in_root(const struct disc_sysfs *sys, const char *path, int flags);
/* Opens path below dirfd following no symlink and no "..": an attribute of a directory
 * already resolved. */
int disc_sysfs_open_beneath(const struct disc_sysfs *sys, int dirfd, const char *path, int flags);
/*
 * One attribute into buf, its trailing newline stripped (read_attr_fd): the length, or
 * -EBADFD for anything but a regular file, -EFBIG when it does not fit, -errno. _fd reads
 * an fd the caller opened O_NONBLOCK (a negative fd is returned as it is).
 */
int disc_sysfs_read_fd(int fd, char *buf, size_t size);
int disc_sysfs_read_in_root(const struct disc_sysfs *sys, const char *path, char *buf, size_t size);
int disc_sysfs_read_beneath(const struct disc_sysfs *sys, int dirfd, const char *path, char *buf,
			    size_t size);
/* A link's target below dirfd, bounded and NUL-terminated: its length, -ENAMETOOLONG when
 * it does not fit, -EINVAL when path is no link, -errno. */
int disc_sysfs_read_link(int dirfd, const char *path, char *buf, size_t size);

/* A directory listing: names malloc'd, sorted in version order ("uverbs9" < "uverbs10"). */
struct disc_names {
	char **v;
	size_t n, cap;
};
/* Lists the directory fd (consumed), keeping what keep() accepts (NULL: everything but
 * "." and ".."), at most max names: returns how many more there were, or -errno. */
int disc_sysfs_list_dir(int fd, bool (*keep)(const char *), size_t max, struct disc_names *ret);
void disc_names_clear(struct disc_names *l);
