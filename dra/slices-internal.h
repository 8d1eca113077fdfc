/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slices-internal: the publisher's pure decisions (no sockets, no loop), for publisher.c
 * and the unit tests - how devices are cut into slices, what the slices look like, and
 * what to create, update and delete given what the API server lists.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "slices.h"

#define DRA_SLICE_API "/apis/resource.k8s.io/v1/resourceslices"

/* One slice's share of the device array: devices[start .. start + count). */
struct dra_slice_cut {
	size_t start, count;
};

/*
 * Cuts devices (as dra_slice_devices() makes them) in order into slices of at most
 * DRA_SLICE_DEVICES_MAX devices, DRA_SLICE_TAINTED_MAX when one of the slice's devices has
 * a non-empty "taints" array: a slice is closed when the next device would break its
 * limit. The same array always gives the same cut. No devices: one empty slice (the pool
 * and its generation stay visible). *ret_n >= 1. 0, -EINVAL (not an array), -ENOMEM.
 */
int dra_slice_cut(const cJSON *devices, struct dra_slice_cut **ret, size_t *ret_n);

/*
 * The specs of the pool's slices: a cJSON array of n ResourceSlice "spec" objects
 * ({driver, nodeName, pool {name: node, generation, resourceSliceCount}, devices}), the
 * devices copied. NULL on OOM or when devices is no array.
 */
cJSON *dra_slice_specs(const char *driver, const char *node, long long generation,
		       const cJSON *devices);

/* The whole object for POST (metadata.generateName "<node>-<driver>-") or, with name and
 * resource_version, for PUT. spec is copied. NULL on OOM. */
cJSON *dra_slice_object(const char *driver, const char *node, const cJSON *spec, const char *name,
			const char *resource_version);

/* spec.pool.generation of a listed object, -1 when absent or not an integer. */
long long dra_slice_generation(const cJSON *object);

/* True when the server's spec have says what want says: equal JSON, except that the
 * fields the API server fills in itself (taints[].timeAdded) are ignored, and so is an
 * allowMultipleAllocations want has and have lacks (a server without the feature drops
 * it). */
bool dra_slice_spec_equal(const cJSON *want, const cJSON *have);

enum dra_slice_op_kind {
	DRA_SLICE_UPDATE, /* PUT specs[spec] over listed (its name and resourceVersion) */
	DRA_SLICE_CREATE, /* POST specs[spec] */
	DRA_SLICE_DELETE, /* DELETE listed */
};

struct dra_slice_op {
	enum dra_slice_op_kind kind;
	size_t spec;	     /* index into specs (create, update) */
	const cJSON *listed; /* an element of listed (update, delete); NULL for create */
};

/*
 * What turns listed (a cJSON array of ResourceSlice objects: this driver's slices of this
 * node) into specs: each spec kept by the first listed slice (in metadata.name order)
 * that already says it, else an update of the first slice left, else a create; every
 * listed slice left over (duplicates, stale generations, slices of another pool, objects
 * without a name) deleted. Updates first, then creates, then deletes, so the pool is never
 * without its slices of the newest generation longer than needed. *ret_n == 0: in sync
 * (*ret is NULL then). 0, -EINVAL, -ENOMEM.
 */
int dra_slice_plan(const cJSON *specs, const cJSON *listed, struct dra_slice_op **ret,
		   size_t *ret_n);

/* The reason made a Kubernetes label value (at most 63 characters of [A-Za-z0-9._-],
 * alphanumeric at both ends; runs of other characters become one '-'; "unknown" when
 * nothing is left): "port 1 DOWN" -> "port-1-DOWN". */
void dra_label_value(const char *reason, char buf[static 64]);
