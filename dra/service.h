/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service: the DRA driver's two gRPC endpoints, protocol only (the daemon decides):
 *   - <registry-dir>/<driver>-reg.sock: pluginregistration.Registration for the kubelet's
 *     plugin watcher (GetInfo: type DRAPlugin, endpoint <plugin-dir>/dra.sock, versions
 *     v1.DRAPlugin, v1beta1.DRAPlugin, v1.DRAResourceHealth, v1alpha1.DRAResourceHealth;
 *     NotifyRegistrationStatus logged). Served again within 1 s when it is removed.
 *   - <plugin-dir>/dra.sock: DRAPlugin v1 and v1beta1 (NodePrepareResources,
 *     NodeUnprepareResources; the v1 messages serve both paths, they are wire-identical)
 *     and DRAResourceHealth v1 and v1alpha1 (NodeWatchResources streams carrying the
 *     complete list each time).
 *
 * Requests are decoded and bounded on the gRPC thread and handed to the loop as a batch;
 * the daemon answers every claim of it and finishes it (then the reply is sent). A
 * malformed request is answered INVALID_ARGUMENT without reaching the daemon.
 * Threads: dra_service_*() and the batch functions run on the loop thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "claims.h"
#include "rpc.h"
#include "loop.h"

#define DRA_CLAIMS_PER_CALL_MAX 1024

/*
 * Health freshness. The kubelet stamps each device of a NodeWatchResources message with
 * the time it arrives and reports a device Unknown in pod status once that is older than
 * the device's health_check_timeout_seconds (30 s when 0). Every device says
 * DRA_HEALTH_TIMEOUT_SEC, and the streams get the complete list again every
 * DRA_HEALTH_RESEND_SEC without a change, so two lost re-sends still leave it fresh.
 */
#define DRA_HEALTH_TIMEOUT_SEC 60
#define DRA_HEALTH_RESEND_SEC 20

enum dra_batch_kind { DRA_BATCH_PREPARE, DRA_BATCH_UNPREPARE };

/* Validated on the gRPC thread (service-internal.h): uid [A-Za-z0-9_.:-]{1,128}, namespace
 * a DNS label, name a DNS subdomain; a UID appears once per batch. */
struct dra_claim_ref {
	const char *namespace, *uid, *name;
};

struct dra_batch;
struct dra_service;

struct dra_service_config {
	const char *driver;	  /* "rdma.example" */
	const char *registry_dir; /* absolute */
	const char *plugin_dir;	  /* absolute */
	/* A decoded batch, on the loop: answer each claim, then dra_batch_finish(). */
	void (*batch)(void *userdata, struct dra_batch *b);
	/* The kubelet's NotifyRegistrationStatus, on the loop (error "" when registered);
	 * error NULL: the registration is lost (our registration socket was removed or
	 * replaced; the kubelet registers us again when it sees the new one). */
	void (*registered)(void *userdata, bool ok, const char *error);
	void *userdata;
	/* The health list is sent again after this long without a change; 0:
	 * DRA_HEALTH_RESEND_SEC (tests shorten it). */
	uint64_t health_resend_usec;
};

/* Serves both sockets (0600; stale sockets replaced, a live one -EADDRINUSE, a
 * non-socket -EEXIST, each logged). Watches the registry dir through fw (NULL: the poll
 * alone). -EINVAL when driver, the absolute dirs or the batch callback are missing. As
 * after dra_service_free(), keep the loop running until gc_runtime_idle(rt): instances
 * that were started finish their shutdown there. */
int dra_service_start(sd_event *loop, struct mailbox *mb, struct fswatch *fw, struct gc_runtime *rt,
		      const struct dra_service_config *cfg, struct dra_service **ret);
/* Stops serving and removes our sockets without blocking; batches handed out stay valid
 * (finish them as usual), those not yet delivered are answered UNAVAILABLE. Accepts NULL. */
void dra_service_free(struct dra_service *s);

enum dra_batch_kind dra_batch_kind(const struct dra_batch *b);
size_t dra_batch_n_claims(const struct dra_batch *b);
const struct dra_claim_ref *dra_batch_claim(const struct dra_batch *b, size_t i);
/* Claim i succeeded: prepared devices (Prepare; pool = the slice pool, the node name;
 * p is copied); p NULL for Unprepare. A second answer or fail replaces the first.
 * -EINVAL (i out of range, Prepare without p or pool), -ENOMEM (claim left unanswered). */
int dra_batch_answer(struct dra_batch *b, size_t i, const struct dra_prepared_claim *p,
		     const char *pool);
/* Claim i failed with error (one line; "" becomes "failed"). -EINVAL, -ENOMEM. */
int dra_batch_fail(struct dra_batch *b, size_t i, const char *error);
/* The claims of b answered with an error, or not answered yet (what finish fails). */
size_t dra_batch_n_failed(const struct dra_batch *b);
/* Sends the reply (claims left unanswered get an error saying so) and frees b. When the
 * kubelet gave up meanwhile (deadline, cancel), b is simply freed. */
void dra_batch_finish(struct dra_batch *b);

enum dra_health { DRA_HEALTH_UNKNOWN = 0, DRA_HEALTH_HEALTHY = 1, DRA_HEALTH_UNHEALTHY = 2 };

struct dra_device_health {
	const char *pool, *device;
	enum dra_health health;
	const char *message;  /* the reason, "" when healthy */
	int64_t last_updated; /* Unix seconds */
};

/* The complete health list for every NodeWatchResources stream (v1 and v1alpha1), each
 * device with health_check_timeout_seconds DRA_HEALTH_TIMEOUT_SEC; the last one is kept
 * for streams opened later and sent again every health_resend_usec (above). */
void dra_service_publish_health(struct dra_service *s, const struct dra_device_health *h, size_t n);
