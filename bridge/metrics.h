/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics: the bridge's Prometheus endpoint (`--metrics-address`), text exposition format
 * 0.0.4 on `GET /metrics`, served by libmicrohttpd on its own thread.
 *
 * The daemon records events here from two threads: Allocate and GetPreferredAllocation
 * on the gRPC completion-queue thread, everything else on the loop thread; the HTTP
 * thread renders. One mutex guards every value; each update holds it for a few adds.
 * Every recording function accepts m == NULL and then does nothing, so a bridge without
 * --metrics-address calls them all the same.
 *
 * Series (resource = the pool's extended resource name):
 *   rdma_cdi_build_info{version}                                  gauge, always 1
 *   rdma_cdi_devices{resource,health="healthy|unhealthy"}        gauge: HCAs advertised
 *   rdma_cdi_allocate_total{resource,result="ok|rejected"}       counter
 *   rdma_cdi_allocate_duration_seconds{resource}                 histogram
 *   rdma_cdi_preferred_allocation_total{resource,result}          counter
 *   rdma_cdi_registrations_total{resource,result="ok|failed"}    counter
 *   rdma_cdi_rescans_total{reason,result="ok|failed"}            counter
 *   rdma_cdi_rescan_duration_seconds                              histogram (finished scans)
 *   rdma_cdi_spec_write_failures_total                            counter
 *   rdma_cdi_config_reloads_total{result="applied|rejected"}     counter
 * Counters of a resource stay after its pool is removed (counters never go back); its
 * device gauges go.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rc-error.h"

#define DP_METRICS_PATH "/metrics"
#define DP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define DP_METRICS_RESOURCES_MAX 1024 /* resources remembered; beyond, not counted */
#define DP_METRICS_CONNECTIONS_MAX 16
#define DP_METRICS_REQUEST_MAX (16u << 10) /* bytes of request line and headers */
#define DP_METRICS_TIMEOUT_SEC 10	   /* idle connection */

struct dp_metrics;

enum dp_metrics_call {
	DP_METRICS_ALLOCATE,
	DP_METRICS_PREFERRED,
};

/*
 * Parses a listen address: "IPv4:PORT" or "[IPv6]:PORT", numeric only (no host names:
 * a daemon's bind address must not depend on DNS), port 1 to 65535. Returns 0 or -EINVAL
 * with a one-line reason in *err. Does not log.
 */
int dp_metrics_parse_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			     struct rc_error **err);

/*
 * Creates the registry; with address non-NULL also binds it (SO_REUSEADDR) and serves
 * it. Returns 0, -EINVAL (address does not parse), the bind/listen errno
 * (-EADDRINUSE, -EADDRNOTAVAIL, -EACCES), -ENOMEM; *err says why. Does not log.
 */
int dp_metrics_new(const char *address, const char *version, struct dp_metrics **ret,
		   struct rc_error **err);
/* Stops the server (waits for its thread) and frees. Accepts NULL. */
void dp_metrics_free(struct dp_metrics *m);
/* The address actually served ("127.0.0.1:9400", "[::1]:9400"), "" without a server. */
const char *dp_metrics_address(const struct dp_metrics *m);

/* A finished Allocate / GetPreferredAllocation call; usec its handling time. */
void dp_metrics_call(struct dp_metrics *m, const char *resource, enum dp_metrics_call call, bool ok,
		     uint64_t usec);
/* A Register call's outcome. */
void dp_metrics_registration(struct dp_metrics *m, const char *resource, bool ok);

/*
 * The device gauges: between _begin() and _end() each pool in force either sets its
 * counts or keeps the last ones (its list stayed as it was); the gauges of a resource
 * that did neither are dropped at _end() (its pool is gone).
 */
void dp_metrics_devices_begin(struct dp_metrics *m);
void dp_metrics_devices_set(struct dp_metrics *m, const char *resource, size_t healthy,
			    size_t unhealthy);
void dp_metrics_devices_keep(struct dp_metrics *m, const char *resource);
void dp_metrics_devices_end(struct dp_metrics *m);

/* A rescan's outcome; reason "start", "hotplug", "periodic", "request"; usec its wall
 * time (0 = unknown: not observed in the histogram). */
void dp_metrics_rescan(struct dp_metrics *m, const char *reason, bool ok, uint64_t usec);
void dp_metrics_spec_write_failed(struct dp_metrics *m);
void dp_metrics_config_reload(struct dp_metrics *m, bool applied);
/* The kernel's RDMA netns mode, a constant string ("exclusive", "shared", "unknown"):
 * rdma_cdi_netns_mode{mode="..."} 1. Before the first call the mode is "unknown". */
void dp_metrics_netns_mode(struct dp_metrics *m, const char *mode);

/* Microseconds of CLOCK_MONOTONIC, for the durations above. */
uint64_t dp_metrics_now_usec(void);

/*
 * The exposition text (what GET /metrics answers): *ret malloc'd, NUL-terminated, length
 * in *ret_len. Returns 0 or -ENOMEM.
 */
int dp_metrics_render(struct dp_metrics *m, char **ret, size_t *ret_len);
