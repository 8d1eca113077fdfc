/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slices: the node's ResourceSlices (resource.k8s.io/v1) - what they hold, and keeping
 * them so on the API server.
 *
 * dra_slice_devices() is pure: the inventory as the JSON array of slice devices, each with
 * its attributes (docs/dra.md lists every key) and, when unhealthy, the NoSchedule taint
 * "<driver>/unhealthy" whose value is the reason made a label value.
 *
 * The publisher owns one pool (pool name = node name): it cuts the devices into slices of
 * at most DRA_SLICE_DEVICES_MAX (DRA_SLICE_TAINTED_MAX when a device in it carries a
 * taint), bumps the generation on every change (starting above the highest found on the
 * server, so a restart never goes back), creates/updates/deletes until the server holds
 * exactly that, lists and watches the node's slices of this driver, and re-creates what
 * anyone deletes. 5xx, 409, 429 and transport errors (and any other failure: RBAC may be
 * fixed meanwhile) are retried with backoff (200 ms doubling to 30 s, or Retry-After); a
 * 409 lists again first. Each failure is logged once per kind ("create HTTP 500") until
 * the next sync, and "slices in sync (N devices, M slices, generation G)" when reached.
 * The pure decisions (cut, slice objects, plan) are in slices-internal.h.
 */
#pragma once

#include <stdbool.h>

#include <cjson/cJSON.h>
#include <systemd/sd-event.h>

#include "inventory.h"
#include "kube.h"

#define DRA_SLICE_DEVICES_MAX 128
#define DRA_SLICE_TAINTED_MAX 64

/* The slice devices of inv (a cJSON array, caller owns) for driver; NULL on OOM. */
cJSON *dra_slice_devices(const struct dra_inventory *inv, const char *driver);

struct dra_publisher;

struct dra_publisher_config {
	const char *driver;
	const char *node_name;
	struct kube_client *kube; /* must outlive the publisher */
	/* Optional: each create, update or delete the server answered, ok or not (metrics). */
	void (*written)(void *userdata, bool ok);
	void *userdata;
};

/* Starts listing at once (publishing nothing before the first set). -EINVAL, -ENOMEM. */
int dra_publisher_new(sd_event *loop, const struct dra_publisher_config *cfg,
		      struct dra_publisher **ret);
/* The devices to publish (a cJSON array as dra_slice_devices() makes; ownership taken;
 * NULL is ignored). Equal to the last set: nothing happens; else the generation goes up. */
void dra_publisher_set(struct dra_publisher *p, cJSON *devices);
/* True when the server was last seen holding exactly what was set. */
bool dra_publisher_synced(const struct dra_publisher *p);
/* Stops (calls in flight are cancelled; the slices stay on the server: the kubelet
 * removes them 30 s after the driver deregisters). Accepts NULL. */
void dra_publisher_free(struct dra_publisher *p);
