/* SPDX-License-Identifier: Apache-2.0 */
/*
 * discovery internals shared by sysfs-scan.c, refresh.c, model.c and the unit tests.
 * The parsers (parse.c) are pure functions on strings: no I/O, no logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "discovery.h"

/* Bounds: a scan never holds more than this; the excess is reported as a problem. */
#define DISC_MAX_DEVICES 65536
#define DISC_MAX_PORTS 256
#define DISC_MAX_CLASS_ENTRIES (1 << 20)
#define DISC_MAX_PROBLEMS 1000
#define DISC_MAX_NUMA_NODE 1023 /* MAX_NUMNODES is at most 1 << 10 */
#define DISC_PATH_BUF 4096	/* a root-relative path being resolved */

/*
 * Joins the symlink target rel onto the root-relative directory base, lexically: "."
 * and empty components vanish, ".." drops one component but never climbs above the
 * root, an absolute rel restarts at the root. The result has no leading or trailing
 * "/" ("" is the root itself). -ENAMETOOLONG when it does not fit in size.
 */
int disc_path_join(const char *base, const char *rel, char *out, size_t size);

/*
 * disc_scan() with the link-resolution strategy chosen: use_openat2 = false forces the
 * fallback that walks links in user space (kernels before 5.6, seccomp profiles that
 * refuse openat2), so tests can prove both give the same model.
 */
int disc_scan_with(const struct disc_options *opts, bool use_openat2, struct disc_node **ret_node);

/*
 * What a scan listed, kept with its snapshot so disc_refresh() can tell what changed:
 * the names of class/infiniband (every entry, kept or skipped) and of class/net, each
 * sorted with strcmp and packed as NUL-terminated strings one after the other.
 */
struct disc_scan_state {
	char *class_names;
	size_t class_len;
	char *net_names;
	size_t net_len;
	/* class/infiniband_verbs: a driver loading or unbinding changes it alone */
	char *verbs_names;
	size_t verbs_len;
};

/*
 * disc_refresh() with its strategy chosen: phys_always = true reads every port's
 * phys_state too, false only when the port's state changed (the default; the benchmark
 * measures both).
 */
int disc_refresh_with(const struct disc_options *opts, const struct disc_node *old,
		      bool phys_always, struct disc_node **ret_node, bool *ret_need_full);

/* A deep copy of node (devices, ports, problems, scan state); NULL on OOM. */
struct disc_node *disc_node_copy(const struct disc_node *node);
void disc_scan_state_free(struct disc_scan_state *st);

/* "DDDD:BB:DD.F" (domain 4-8 hex digits, lower case as the kernel prints it). */
bool disc_pci_addr_valid(const char *s);
/* Orders PCI addresses numerically (domain, bus, device, function). */
int disc_pci_compare(const char *a, const char *b);

/*
 * An RDMA device name that may become a file name and a CDI device name: [A-Za-z0-9_.:-],
 * at most DISC_NAME_MAX - 1 chars, first and last alphanumeric, no "..", and neither
 * "all" nor digits only (the spec's alias names). Other names are skipped with a problem.
 */
bool disc_ibdev_name_ok(const char *name);

/*
 * Parses a port "state"/"phys_state" attribute, "%d: %s" (kernel sysfs.c), into the
 * number and the name (printable, fits in name_size). -EINVAL on anything else.
 */
int disc_parse_state(const char *s, int *ret_num, char *name, size_t name_size);

/* Parses "0x15b3" (a PCI id file) into 0..0xffff. */
int disc_parse_pci_id(const char *s, unsigned *ret);

/* True when s is printable ASCII only (sysfs strings we pass on verbatim). */
bool disc_printable(const char *s);

/* "xxxx:xxxx:xxxx:xxxx" in lower-case hex (a node_guid as the kernel prints it). */
bool disc_guid_valid(const char *g);
