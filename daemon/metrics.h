/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: the daemons' Prometheus endpoint (`--metrics-address`, both the bridge and the
 * DRA driver): text exposition format 0.0.4 on `GET /metrics`, and the liveness probe on
 * `GET /healthz`, served by libmicrohttpd, one thread per connection.
 *
 * /healthz is answered by the daemon's loop: the HTTP thread posts a ping to the loop's
 * mailbox and waits at most METRICS_HEALTHZ_WAIT_MSEC for the loop to run it: 200 "ok"
 * when it did, 503 with the reason when it did not (a loop stuck in a system call, a
 * callback that never returns). At most one ping is queued at a time: probes of a stuck
 * loop wait for the same one. /metrics never waits for the loop.
 *
 * The daemon core (daemon.h) owns the registry and records what it does: rescans, spec
 * write failures, config reloads, the netns mode, the health of each offered device. The
 * daemons record their own series through the same registry: the bridge Allocate calls
 * (gRPC completion-queue thread) and registrations, the DRA driver claims, slices and its
 * registration (loop thread). The HTTP threads render. One mutex guards every value;
 * each update holds it for a few adds. Every recording function accepts m == NULL and
 * then does nothing, so a daemon without --metrics-address calls them all the same.
 *
 * Series (resource = a bridge pool's extended resource name, or the DRA driver's name for
 * its registration; pool = the resourceName of the pool a device is in):
 *   rdma_cdi_build_info{daemon="bridge|dra",version,commit}           gauge, always 1
 *   rdma_cdi_device_healthy{device,pci,pool,reason}                   gauge 1|0: one per
 *       usable device a pool takes; device = its RDMA name, pci = its PCI address or "",
 *       reason = why it is unhealthy, "" when healthy. A lent device keeps its last value.
 *       The series of a device no longer offered go.
 *   rdma_cdi_device_health_last_change_timestamp_seconds{device,pci,pool}  gauge: Unix
 *       time of its last health change; first seen counts as one
 *   rdma_cdi_devices{resource,health="healthy|unhealthy"}             gauge: devices offered
 *   rdma_cdi_kubelet_registered{resource}                             gauge 1|0: registered
 *       with the kubelet now (0 from the moment it is known lost until registered again)
 *   rdma_cdi_registrations_total{resource,result="ok|failed"}         counter
 *   rdma_cdi_rescans_total{reason,result="ok|failed"}                 counter
 *   rdma_cdi_rescan_duration_seconds                                  histogram (finished scans)
 *   rdma_cdi_spec_write_failures_total                                counter
 *   rdma_cdi_config_reloads_total{result="applied|rejected"}          counter
 *   rdma_cdi_config_rejected                                          gauge 1 while the file
 *       on disk is refused (the previous config in force), else 0
 *   rdma_cdi_netns_mode{mode="exclusive|shared|unknown"}              gauge, always 1
 *  bridge only:
 *   rdma_cdi_allocate_total{resource,result="ok|rejected"}            counter
 *   rdma_cdi_allocate_duration_seconds{resource}                      histogram
 *   rdma_cdi_preferred_allocation_total{resource,result="ok|rejected"} counter
 *  DRA driver only (one per claim of a NodePrepare/NodeUnprepareResources call):
 *   rdma_cdi_dra_prepare_total{result="ok|failed"}                    counter
 *   rdma_cdi_dra_unprepare_total{result="ok|failed"}                  counter
 *   rdma_cdi_dra_slice_publish_total{result="ok|failed"}              counter: ResourceSlice
 *       creates, updates and deletes
 * Counters of a resource stay after its pool is removed (counters never go back); its
 * gauges go.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rc-error.h"

struct mailbox;

#define METRICS_PATH "/metrics"
#define METRICS_HEALTHZ_PATH "/healthz"
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_RESOURCES_MAX 1024 /* resources remembered; beyond, not counted */
#define METRICS_DEVICES_MAX 8192   /* device health series; beyond, not shown */
#define METRICS_CONNECTIONS_MAX 16
#define METRICS_REQUEST_MAX (16u << 10) /* bytes of request line and headers */
#define METRICS_TIMEOUT_SEC 10		/* idle connection */
#define METRICS_HEALTHZ_WAIT_MSEC 2000	/* for the loop's answer to /healthz */

struct metrics;

enum metrics_call {
	METRICS_ALLOCATE,
	METRICS_PREFERRED,
};

enum metrics_claim {
	METRICS_PREPARE,
	METRICS_UNPREPARE,
};

/*
 * Creates the registry of daemon ("bridge", "dra": its build_info label and the series
 * only it has); with address non-NULL also binds it (SO_REUSEADDR) and serves it. mb:
 * the loop's mailbox /healthz asks (NULL: /healthz answers 503, there is no loop). The
 * mailbox must stay until metrics_stop() returned. Returns 0, -EINVAL (address does not
 * parse), the bind/listen errno (-EADDRINUSE, -EADDRNOTAVAIL, -EACCES), -ENOMEM; *err
 * says why. Does not log.
 */
int metrics_new(const char *address, const char *daemon, struct mailbox *mb, struct metrics **ret,
		struct rc_error **err);
/* Stops serving (a /healthz waiting for the loop answers 503 at once; waits for the
 * HTTP threads): nothing is posted to the mailbox afterwards. Accepts NULL; idempotent. */
void metrics_stop(struct metrics *m);
/* Stops, then frees. A ping still queued in the mailbox must have run (mailbox_free()).
 * Accepts NULL. */
void metrics_free(struct metrics *m);
/* The address actually served ("127.0.0.1:9400", "[::1]:9400"), "" without a server. */
const char *metrics_address(const struct metrics *m);

/* A finished Allocate / GetPreferredAllocation call; usec its handling time. */
void metrics_call(struct metrics *m, const char *resource, enum metrics_call call, bool ok,
		  uint64_t usec);
/* A Register call's outcome (the bridge's Register, the DRA driver's NotifyRegistrationStatus). */
void metrics_registration(struct metrics *m, const char *resource, bool ok);
/* Whether resource is registered with the kubelet now: 1, 0, or -1 to drop its series
 * (the pool is gone). */
void metrics_kubelet_registered(struct metrics *m, const char *resource, int state);

/*
 * The device count gauges: between _begin() and _end() each pool in force either sets its
 * counts or keeps the last ones (its list stayed as it was); the gauges of a resource
 * that did neither are dropped at _end() (its pool is gone).
 */
void metrics_devices_begin(struct metrics *m);
void metrics_devices_set(struct metrics *m, const char *resource, size_t healthy, size_t unhealthy);
void metrics_devices_keep(struct metrics *m, const char *resource);
void metrics_devices_end(struct metrics *m);

/*
 * The per-device health gauges, the same way: between _begin() and _end() every device
 * offered is set (reason "" when healthy); the series of one not set go at _end(). A
 * change of healthy or reason stamps the wall clock as its last change; so does a device
 * (device, pci, pool) seen for the first time.
 */
void metrics_health_begin(struct metrics *m);
void metrics_health_set(struct metrics *m, const char *device, const char *pci, const char *pool,
			bool healthy, const char *reason);
void metrics_health_end(struct metrics *m);

/* A rescan's outcome; reason "start", "hotplug", "periodic", "request"; usec its wall
 * time (0 = unknown: not observed in the histogram). */
void metrics_rescan(struct metrics *m, const char *reason, bool ok, uint64_t usec);
void metrics_spec_write_failed(struct metrics *m);
/* A changed config file applied or refused; rdma_cdi_config_rejected follows. */
void metrics_config_reload(struct metrics *m, bool applied);
/* The kernel's RDMA netns mode, a constant string ("exclusive", "shared", "unknown"):
 * rdma_cdi_netns_mode{mode="..."} 1. Before the first call the mode is "unknown". */
void metrics_netns_mode(struct metrics *m, const char *mode);
/* One claim of a NodePrepareResources / NodeUnprepareResources call answered. */
void metrics_dra_claim(struct metrics *m, enum metrics_claim what, bool ok);
/* One ResourceSlice create, update or delete answered. */
void metrics_dra_slice_publish(struct metrics *m, bool ok);

/* Microseconds of CLOCK_MONOTONIC, for the durations above. */
uint64_t metrics_now_usec(void);

/*
 * The exposition text (what GET /metrics answers): *ret malloc'd, NUL-terminated, length
 * in *ret_len. Returns 0 or -ENOMEM.
 */
int metrics_render(struct metrics *m, char **ret, size_t *ret_len);
