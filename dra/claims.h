/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claims: NodePrepareResources/NodeUnprepareResources as pure logic over the inventory,
 * plus what they keep on disk - the checkpoint (what is prepared, so that Unprepare works
 * after a restart, a SIGKILL, or the claim's deletion) and one transient CDI spec per
 * claim. No sockets, no threads, no logging; a failure sets *err (common/rc-error.h) to one
 * line naming its cause.
 *
 * Per-claim spec: kind "<driver>/claim" (DRA_CLAIM_KIND_CLASS), one device named by the
 * claim UID, file "<driver>-claim_<uid>.json" in the spec dir, whose env carries
 * RDMA_CDI_DEVICES (the claim's RDMA names, comma-separated) and, when the pool of any
 * of the claim's devices asks for it (ncclEnv), NCCL_IB_HCA and UCX_NET_DEVICES over all
 * of them, as the bridge sets them (bridge-internal.h). Its cdiVersion is
 * cdi_min_version()'s: 0.5.0 for a UID that starts with a digit, as most UUIDs do. Files
 * are written through cdi_write_file_atomic and removed only when they are ours (a
 * regular file whose spec carries our kind and claim UID). The checkpoint's format:
 * claims-internal.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "inventory.h"
#include "rc-error.h"
#include "specs.h"

/* Bounds on what a claim, the kubelet or the checkpoint hands us. */
#define DRA_UID_MAX 128		 /* a claim UID (a UUID has 36 characters) */
#define DRA_RESULTS_MAX 256	 /* results of one claim (the API allows 32) */
#define DRA_TOLERATIONS_MAX 64	 /* tolerations of one result (the API allows 16) */
#define DRA_CLAIM_STRING_MAX 253 /* namespace, name, request, toleration fields */
#define DRA_SHARE_ID_MAX 64	 /* a result's shareID (a UUID has 36 characters) */
#define DRA_CHECKPOINT_MAX_BYTES (64u * 1024 * 1024)
#define DRA_CHECKPOINT_CLAIMS_MAX 65536

/* One result of the claim's allocation that is ours (driver and pool match). */
struct dra_result {
	char *request; /* the request name */
	char *device;  /* the device name in our slices */
	/* The allocation's share of a device that allows multiple allocations: 1 to
	 * DRA_SHARE_ID_MAX hex digits and '-' (a UUID); NULL when none. */
	char *share_id;
	/* adminAccess: the claim reaches the device without holding it (Prepare does not
	 * refuse it because another claim holds the device, nor a later claim because of it). */
	bool admin_access;
	/*
	 * The result's tolerations tolerate the NoSchedule taint "<driver>/unhealthy": one
	 * with that key (or an empty key and operator Exists) and effect "" or NoSchedule.
	 * Its value is not compared: the taint's value is the reason in the words of the
	 * moment, which the scheduler already matched when it allocated the device.
	 */
	bool tolerates_unhealthy;
};

/*
 * Takes a ResourceClaim (the API server's JSON) apart: metadata.uid must equal uid,
 * status.allocation must be set, and at least one result must carry driver and pool.
 * Messages name the claim by its metadata's namespace/name (escaped) and the cause:
 * -EINVAL "claim default/c1: UID 1234 differs from the kubelet's 5678", -ENOENT
 * "claim default/c1: is not allocated", -ENOENT "claim default/c1: holds no device of
 * driver rdma.example in pool node1", -EINVAL for a malformed claim naming the JSON
 * path ("claim default/c1: status.allocation.devices.results[2].device: not a string"),
 * -ENOMEM. Everything read is bounded (DRA_*_MAX) and type-checked. Results of other
 * drivers or pools are skipped unread beyond driver and pool.
 */
int dra_claim_results(const cJSON *claim, const char *uid, const char *driver, const char *pool,
		      struct dra_result **ret, size_t *ret_n, struct rc_error **err);
void dra_results_free(struct dra_result *r, size_t n);

/* One device as prepared for a claim. */
struct dra_prepared_device {
	char **requests; /* the request names it serves */
	size_t n_requests;
	char *device;	/* device name */
	char **cdi_ids; /* what the kubelet got: the HCA's spec name, then the claim's */
	size_t n_cdi_ids;
	char *share_id; /* the results' shareID, echoed to the kubelet; NULL when none */
	bool admin;	/* every result for it has adminAccess: it does not hold the device */
};

struct dra_prepared_claim {
	char *uid, *namespace, *name;
	struct dra_prepared_device *devices;
	size_t n_devices;
	char *spec_file; /* the per-claim spec's base name, NULL when none was written */
};

struct dra_checkpoint {
	struct dra_prepared_claim *claims;
	size_t n_claims;
};

/*
 * Loads <dir>/checkpoint.json (DRA_CHECKPOINT_NAME; absent, or dir absent: empty). A
 * corrupt file (not JSON, version other than 1, a bad field, over
 * DRA_CHECKPOINT_MAX_BYTES) is -EBADMSG with the reason and is left in place for the
 * operator (never overwritten without notice: the caller logs and decides). Symlinks are
 * not followed: a symlink is -ELOOP, anything but a regular file -EBADMSG.
 */
int dra_checkpoint_load(const char *dir, struct dra_checkpoint **ret, struct rc_error **err);
/* Writes it atomically (temp file, fsync, rename, fsync dir; mode 0600; creates dir;
 * a symlink in its place is -ELOOP and kept). */
int dra_checkpoint_save(const struct dra_checkpoint *c, const char *dir, struct rc_error **err);
void dra_checkpoint_free(struct dra_checkpoint *c);
const struct dra_prepared_claim *dra_checkpoint_find(const struct dra_checkpoint *c,
						     const char *uid);
/* The UID of another claim than uid holding device, or NULL. A device a claim reaches
 * with admin access (dra_prepared_device.admin) is not held by it. */
const char *dra_checkpoint_holder(const struct dra_checkpoint *c, const char *device,
				  const char *uid);

/* What dra_prepare() decides over. */
struct dra_prepare_input {
	const struct dra_checkpoint *ckpt; /* what is prepared; NULL: nothing yet */
	const struct dra_inventory *inv;
	const char *driver;
	/* The hook path of the netns-move hook (spec_add_netns_hook); NULL = defaults. */
	const struct spec_options *spec;
	const char *namespace, *name, *uid; /* the claim, as the kubelet names it */
	const struct dra_result *results;   /* from dra_claim_results() */
	size_t n_results;
};

/*
 * Prepares one claim: checks each result's device exists in in->inv and is not held by
 * another claim (unless its pool is shared or the result has admin access) and is
 * healthy (unless the result tolerates the unhealthy taint), then builds the prepared
 * claim (the HCA's cdi_id, then "<driver>/claim=<uid>"; results naming one device with
 * the same share ID for several requests make one device with several requests, admin
 * only when all of them are; another share ID makes another device) and the per-claim
 * spec (its env, and the netns-move hook of each HCA of a `netns: move` pool; *ret_spec,
 * validated; caller writes it with dra_claim_spec_write). Does not
 * touch in->ckpt: the caller adds the entry once the spec is on disk and saves. Returns
 * 0, or 1 when uid is already prepared: then *ret is a copy of the recorded answer and
 * *ret_spec NULL (idempotent). With the reason ("claim default/c1: device
 * pci-0000-3b-00-0 is ..."): -ENODEV not on this node (anymore), -EBUSY already prepared
 * for claim <uid>, -EIO unhealthy (<reason>), -EINVAL (no results or more than
 * DRA_RESULTS_MAX, a UID that is no CDI device name or longer than DRA_UID_MAX or holds
 * "..", a namespace or name that is empty, over DRA_CLAIM_STRING_MAX or not UTF-8, a
 * driver that makes no CDI kind), -ENOMEM.
 */
int dra_prepare(const struct dra_prepare_input *in, struct dra_prepared_claim **ret,
		cJSON **ret_spec, struct rc_error **err);
/* Adds p (ownership taken, also on failure; replaces an entry of the same UID): 0,
 * -ENOMEM, -EINVAL (NULL c or p). Removes uid: 1, or 0 when absent. */
int dra_checkpoint_add(struct dra_checkpoint *c, struct dra_prepared_claim *p);
int dra_checkpoint_remove(struct dra_checkpoint *c, const char *uid);
void dra_prepared_claim_free(struct dra_prepared_claim *p);

/* Writes the per-claim spec into spec_dir; *ret_file its base name (malloc'd). The
 * spec must be valid, of kind "<driver>/claim" with the one device uid. */
int dra_claim_spec_write(const char *spec_dir, const char *driver, const char *uid,
			 const cJSON *spec, char **ret_file, struct rc_error **err);
/* Removes it when it is ours: 1 removed, 0 absent, -EEXIST and kept when not ours (a
 * symlink, not a regular file, not a spec of our kind with the one device uid). file
 * NULL = the name dra_claim_spec_write gives; else the recorded base name (no '/', not
 * hidden, *.json or *.yaml). */
int dra_claim_spec_remove(const char *spec_dir, const char *driver, const char *uid,
			  const char *file, struct rc_error **err);
