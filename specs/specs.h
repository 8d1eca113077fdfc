/* SPDX-License-Identifier: Apache-2.0 */
/*
 * specs: device model -> CDI spec for rdma-cdi, and the spec files rdma-cdi owns.
 *
 * This is rdma-cdi's policy on top of the generic cdi/ module: which devices a node
 * gets (one per usable RDMA device, by name, by device ID and by index, plus "all"),
 * which edits they carry (uverbs per device, umad/issm with --with-mad, rdma_cm and the memlock hook once
 * per spec), and how the file is put in place without touching anything we did not
 * write. `generate` and the bridge share it, so both always write the same spec.
 */
#pragma once

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "cdi.h"
#include "discovery.h"

#define SPEC_DEFAULT_KIND "rdma.example/hca"
#define SPEC_DEFAULT_DIR "/etc/cdi"
#define SPEC_DYNAMIC_DIR "/var/run/cdi"
#define SPEC_HOOK_ARG0 "rdma-cdi-hook"  /* args[0] of our hook: marks specs we wrote */
#define SPEC_ALL_DEVICE "all"
/* Longest device ID: 63 (kubelet device IDs) minus the longest "-s<k>" the bridge appends
 * in shared mode (k < 1000), so an HCA's ID is the same whatever --shared says. */
#define SPEC_ID_SUFFIX_MAX 5
#define SPEC_ID_MAX (63 - SPEC_ID_SUFFIX_MAX)

struct spec_options {
	const char *kind;       /* NULL = SPEC_DEFAULT_KIND */
	const char *dev_root;   /* NULL = "/dev": hostPath prefix */
	const char *hook_path;  /* NULL = the installed rdma-cdi-hook */
	const char *memlock;    /* hook target, NULL = "unlimited" */
	bool with_mad;          /* add umadN/issmN of every port */
	/* Each device's own edits get a createRuntime hook `rdma-cdi-hook --netns-move=DEV`
	 * (--netns-move-roce=DEV for an Ethernet link layer) that moves it into the
	 * container's network namespace (RDMA netns mode exclusive): every device with
	 * netns_move (`generate --netns-move`), else those whose netns_move_of[i] is true,
	 * indexed like node->devices (the pools with `netns: move`; NULL: none). */
	bool netns_move;
	const bool *netns_move_of;
};

/*
 * Builds the spec for every usable device of node: per HCA a device named by its RDMA
 * name, one named by its device ID (spec_device_id(), when that differs from the RDMA
 * name, is a valid CDI name and names nothing else in the spec) and one by its index;
 * then "all". Returns 0, -ENODEV when the node has no usable device, -EINVAL on an
 * invalid kind, -ENOMEM. The tree is validated (cdi_spec_validate) before it is
 * returned; cdiVersion is cdi_min_version().
 */
int spec_build(const struct disc_node *node, const struct spec_options *opts, cJSON **ret_spec);

/*
 * The device ID of node->devices[i]: the name the kubelet sees (the bridge appends "-s<k>"
 * in shared mode) and the spec's second name of the device, so the two never disagree:
 *   - the PCI address of its function, "0000:3b:00.0";
 *   - "<pci>-<rdma-name>" for every usable device of a function that carries more than one
 *     usable RDMA device, so no ID depends on which of them was found first;
 *   - the RDMA name for a device without PCI address (rxe, siw, SFs);
 *   - an ID longer than SPEC_ID_MAX has "<rdma-name>" replaced by "x" + 8 hex digits of
 *     the FNV-1a hash of the name.
 * IDs never contain an index, so they survive hotplug of other devices. node's devices
 * must be in discovery order (siblings on a function adjacent).
 */
void spec_device_id(const struct disc_node *node, size_t i, char buf[static SPEC_ID_MAX + 1]);

/*
 * The shape every spec rdma-cdi writes shares (the node spec, the DRA driver's per-claim
 * spec): spec_new() returns {"cdiVersion": "", "kind": kind, "devices": []} with
 * *ret_devices the array, or NULL on OOM; spec_new_device() appends {"name": name,
 * "containerEdits": {}} to devices and returns its containerEdits, or NULL on OOM;
 * spec_set_version() sets cdiVersion to cdi_min_version() of the finished tree (0,
 * -ENOMEM, -EINVAL when spec has no cdiVersion string).
 */
cJSON *spec_new(const char *kind, cJSON **ret_devices);
cJSON *spec_new_device(cJSON *devices, const char *name);
int spec_set_version(cJSON *spec);

/*
 * Appends to edits' hooks (created when missing) the createRuntime hook that moves dev into
 * the container's network namespace: `rdma-cdi-hook --netns-move=DEV`, or
 * `--netns-move-roce=DEV` when its first port's link layer is Ethernet; the hook binary is
 * opts->hook_path (NULL = the installed one). The node spec's devices of `netns: move` pools
 * and the DRA driver's per-claim specs carry it. 0 or -ENOMEM.
 */
int spec_add_netns_hook(cJSON *edits, const struct disc_device *dev,
			const struct spec_options *opts);

/* "rdma.example/hca" + "mlx5_0" -> "rdma.example/hca=mlx5_0" (malloc'd, NULL on OOM). */
char *spec_qualified_name(const char *kind, const char *device);

/* True when a parsed spec was written by rdma-cdi for this kind (kind matches and its
 * spec-level hook has args[0] == SPEC_HOOK_ARG0). */
bool spec_is_ours(const cJSON *spec, const char *kind);

/*
 * The names a spec defines, as a set: what a daemon keeps of the spec on disk. The rule
 * both daemons follow (docs/bridge.md, docs/dra.md): they offer the devices of the current
 * scan whose names the spec on disk defines, and the spec on disk is the last one written
 * successfully (a failed write leaves the previous file in place). One block, a pointer
 * and the bytes of each name: 77 KB for the 4,001 names of 2,000 HCAs, whose spec tree is
 * about 7 MiB. Does not log.
 */
struct spec_names;

/*
 * The names of spec's devices: the "name" strings of the "devices" array (entries without
 * one are skipped), each once, compared byte for byte. A NULL spec, or one without a
 * devices array, gives the empty set. Does not keep spec. NULL only on out of memory.
 */
struct spec_names *spec_names_new(const cJSON *spec);

/* A set that defines nothing, for "no spec on disk yet"; never fails, spec_names_free()
 * ignores it. */
const struct spec_names *spec_names_empty(void);

/* True when s defines name; false for s NULL (no spec) or name NULL. Thread-safe:
 * lookups may run on any thread while s lives. O(log n). */
bool spec_names_has(const struct spec_names *s, const char *name);

/* How many distinct names s holds (0 for NULL). */
size_t spec_names_count(const struct spec_names *s);

/* Accepts NULL and spec_names_empty(). */
void spec_names_free(struct spec_names *s);
DEFINE_CLEANUP_FUNC(struct spec_names, spec_names_free)

struct spec_write_options {
	const char *spec_dir;   /* NULL = SPEC_DEFAULT_DIR; ignored with output */
	const char *output;     /* write here instead ("-" = stdout); NULL = spec dir */
	enum cdi_format format;
	/* Also remove the temp files of our spec (either format; or of output) that a
	 * killed writer left (cdi_remove_stale_temps): a daemon's first write, `generate`. */
	bool remove_stale_temps;
};

/*
 * Formats and writes spec. Into the spec dir it goes as cdi_spec_file_name(kind,
 * format), atomically, untouched when unchanged; a copy of ours in the other format
 * (.json vs .yaml) in the same dir is removed so no device is defined twice there;
 * files not ours are never modified or removed (-EEXIST when one is in the way).
 * Another rdma-cdi writing the same file concurrently is no error: the file is judged
 * again (the same bytes: success, unchanged; another spec of ours: replaced), -EBUSY
 * only when it keeps changing through 64 looks.
 * --output FILE is written atomically too; "-" writes to stdout.
 * ret_path (optional) gets the path written; ret_changed (optional) whether the file's
 * bytes changed. On failure *err gets a one-line reason naming the file.
 * Does not log.
 */
int spec_write(const cJSON *spec, const struct spec_write_options *opts, char **ret_path,
	       bool *ret_changed, struct rc_error **err);

/* The one-line fix for a spec_write() error ("free space in the file system; nothing was
 * replaced"); "fix the cause" for an error without a known fix. The CLI and the daemons
 * print the same advice. */
const char *spec_write_fix(int error);
