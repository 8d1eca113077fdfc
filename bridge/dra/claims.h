/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claims: NodePrepareResources/NodeUnprepareResources as pure logic over the inventory,
 * plus what they keep on disk - the checkpoint (what is prepared, so that Unprepare works
 * after a restart, a SIGKILL, or the claim's deletion) and one transient CDI spec per
 * claim. No sockets, no threads, no logging; errors are one line in err.
 *
 * Per-claim spec: kind "<driver>/claim" (DRA_CLAIM_KIND_CLASS), one device named by the
 * claim UID, file "<driver>-claim_<uid>.json" in the spec dir, whose env carries
 * RDMA_CDI_DEVICES (the claim's RDMA names, comma-separated) and, when the pool asks for
 * it (ncclEnv), NCCL_IB_HCA and UCX_NET_DEVICES as the bridge sets them. Files are
 * written through cdi_write_file_atomic and removed only when they are ours (a regular
 * file whose spec carries our kind and claim UID).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "inventory.h"

/* One result of the claim's allocation that is ours (driver and pool match). */
struct dra_result {
	char *request; /* the request name */
	char *device;  /* the device name in our slices */
	char *share_id; /* NULL when none */
};

/*
 * Takes a ResourceClaim (the API server's JSON) apart: metadata.uid must equal uid,
 * status.allocation must be set, and at least one result must carry driver and pool.
 * -ENOENT/-EINVAL with the reason ("claim default/c1: UID 1234 differs from the
 * kubelet's 5678", "... is not allocated", "... holds no device of driver rdma.example
 * in pool node1"), -ENOMEM. Everything read is bounded and type-checked.
 */
int dra_claim_results(const cJSON *claim, const char *uid, const char *driver, const char *pool,
		      struct dra_result **ret, size_t *ret_n, char *err, size_t errlen);
void dra_results_free(struct dra_result *r, size_t n);

/* One device as prepared for a claim. */
struct dra_prepared_device {
	char **requests; /* the request names it serves */
	size_t n_requests;
	char *device;	 /* device name */
	char **cdi_ids;	 /* what the kubelet got: the HCA's spec name, then the claim's */
	size_t n_cdi_ids;
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
 * Loads <dir>/checkpoint.json (DRA_CHECKPOINT_NAME; absent: empty). A corrupt file is
 * -EBADMSG with the reason and is left in place for the operator (never overwritten
 * without notice: the caller logs and decides). Symlinks are not followed.
 */
int dra_checkpoint_load(const char *dir, struct dra_checkpoint **ret, char *err, size_t errlen);
/* Writes it atomically (temp file, fsync, rename, fsync dir; mode 0600). */
int dra_checkpoint_save(const struct dra_checkpoint *c, const char *dir, char *err, size_t errlen);
void dra_checkpoint_free(struct dra_checkpoint *c);
const struct dra_prepared_claim *dra_checkpoint_find(const struct dra_checkpoint *c,
						     const char *uid);
/* The UID of another claim than uid holding device, or NULL. */
const char *dra_checkpoint_holder(const struct dra_checkpoint *c, const char *device,
				  const char *uid);

/*
 * Prepares one claim: checks each result's device exists in inv and is not held by
 * another claim (unless its pool is shared), then builds the prepared claim (the HCA's
 * cdi_id, then "<driver>/claim=<uid>") and the per-claim spec (*ret_spec, caller writes
 * it with dra_claim_spec_write). Does not touch c: the caller adds the entry once the
 * spec is on disk and saves. An already prepared uid returns the recorded answer
 * (idempotent). -ENODEV/-EBUSY/-EINVAL with the reason.
 */
int dra_prepare(const struct dra_checkpoint *c, const struct dra_inventory *inv,
		const char *driver, const char *ns, const char *name, const char *uid,
		const struct dra_result *results, size_t n_results,
		struct dra_prepared_claim **ret, cJSON **ret_spec, char *err, size_t errlen);
/* Adds p (ownership taken) / removes uid (absent: 0). */
int dra_checkpoint_add(struct dra_checkpoint *c, struct dra_prepared_claim *p);
int dra_checkpoint_remove(struct dra_checkpoint *c, const char *uid);
void dra_prepared_claim_free(struct dra_prepared_claim *p);

/* Writes the per-claim spec into spec_dir; *ret_file its base name (malloc'd). */
int dra_claim_spec_write(const char *spec_dir, const char *driver, const char *uid,
			 const cJSON *spec, char **ret_file, char *err, size_t errlen);
/* Removes it when it is ours (absent: 0; not ours: -EEXIST and kept). */
int dra_claim_spec_remove(const char *spec_dir, const char *driver, const char *uid,
			  const char *file, char *err, size_t errlen);
