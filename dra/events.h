/* SPDX-License-Identifier: Apache-2.0 */
/*
 * events: Kubernetes Events on the driver's Node when one of its devices turns unhealthy
 * (type Warning, reason RdmaDeviceUnhealthy) or comes back (Normal, RdmaDeviceHealthy), so
 * `kubectl describe node` and event pipelines show it next to the kubelet's own.
 *
 * Core v1 Events (POST /api/v1/namespaces/default/events), not events.k8s.io/v1: the
 * two are the same stored objects, but the core API takes firstTimestamp/lastTimestamp
 * and source without the eventTime, action and series the events.k8s.io API makes
 * mandatory, which a one-shot record of a transition does not need. A Node has no
 * namespace, and the API server keeps Events about an object without one in "default"
 * only (it refuses another namespace: "does not match event.namespace"), where the
 * kubelet and the node controller put theirs. involvedObject.uid is the node name, the
 * kubelet's convention that `kubectl describe node` searches for, so the driver needs no
 * read of the Node.
 *
 * Rate limits (events-internal.h): a device's events alternate (unhealthy, healthy,
 * ...), at most one per DRA_EVENTS_INTERVAL_SEC per device; what happens in between is
 * coalesced into its state at the end of the interval (a flap that ends where it began
 * records nothing more). All devices share a bucket of DRA_EVENTS_BURST events refilled by
 * one every DRA_EVENTS_REFILL_SEC: a switch failure that takes down every port of a node
 * costs a burst and then a trickle, each event telling the device's state when it is sent.
 * Identical events are never repeated, so count stays 1 and no series is kept. A device's
 * first state (at start, or when it appears) is no event: it is what the slices say.
 *
 * A failed POST is not retried (the next transition makes a new one) and never delays
 * anything else; the first failure of a series is logged as a warning, the next success
 * at info. Everything runs on the loop thread.
 */
#pragma once

#include <systemd/sd-event.h>

#include "inventory.h"
#include "kube.h"

#define DRA_EVENTS_NAMESPACE "default"
#define DRA_EVENT_UNHEALTHY "RdmaDeviceUnhealthy"
#define DRA_EVENT_HEALTHY "RdmaDeviceHealthy"

struct dra_events_config {
	const char *driver;	 /* reportingComponent and source.component */
	const char *node_name;	 /* the Node; source.host and reportingInstance */
	struct kube_client *kube; /* not owned; must outlive the recorder */
};

struct dra_events;

/* 0, -EINVAL (a NULL or empty member), -ENOMEM. The strings are copied. */
int dra_events_new(sd_event *loop, const struct dra_events_config *cfg, struct dra_events **ret);
/* Cancels the POSTs in flight. Accepts NULL. */
void dra_events_free(struct dra_events *e);

/*
 * The devices of inv in force now (inv is not kept): a device whose health differs from
 * what its last event said gets an event as the limits allow, now or from a timer; a
 * device no longer in inv is forgotten (no event). Logs only out of memory.
 */
void dra_events_update(struct dra_events *e, const struct dra_inventory *inv);
