/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra_run(): the daemon of `rdma-cdi dra`, on one sd-event loop, on the daemon core it
 * shares with the bridge (daemon.h: loop, signals, scans, config reload, keeper, stopping),
 * from the same pieces:
 *   - the Sysfs Watcher (discovery/follow.h): hotplug, the periodic rescan, SIGHUP;
 *   - the config in force (config/watch.h): pools select what is published, and an edit
 *     applies at once (an invalid one is refused, the previous config stays);
 *   - the shared spec (specs/keeper.h), the same file the bridge writes;
 *   - the inventory (inventory.h) made of each scan, which the ResourceSlices
 *     (slices.h), NodePrepareResources (claims.h) and the health stream all read;
 *   - the kubelet's two sockets (service.h) and the API server (kube.h), which also gets
 *     the Node events of device health (events.h).
 *
 * Order of a scan: the spec is written first, then the inventory in force is replaced;
 * it keeps only devices whose names the spec on disk defines, the last one written (a
 * Prepare never hands out a name that does not resolve; docs/dra.md for a failed write).
 * Then slices and health.
 *
 * Claims: Prepare GETs each claim of a batch from the API server at once (in parallel)
 * and prepares each as its answer arrives; a claim is answered only once its per-claim
 * spec and the checkpoint holding it are on disk, and any failure leaves nothing behind.
 * A claim already in the checkpoint is answered from it (idempotent, and the API server
 * is not needed for it). Unprepare reads only the checkpoint: the claim may be gone.
 */
#include <dirent.h>
#include <malloc.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include "dra.h"
#include "daemon.h"
#include "memory.h"
#include "rpc.h"
#include "kube.h"
#include "inventory.h"
#include "slices.h"
#include "events.h"
#include "claims.h"
#include "service.h"

#define CLAIM_GET_TIMEOUT_MS 10000 /* well inside the kubelet's 45 s per call */

struct dra;

/* One claim of a prepare batch whose GET is in flight. */
struct claim_op {
	struct prepare_batch *pb;
	size_t i;		/* its index in the batch */
	struct kube_call *call; /* NULL once answered */
};

/* A prepare batch waiting for the API server. */
struct prepare_batch {
	struct dra *d;
	struct dra_batch *b;
	size_t left; /* GETs in flight */
	struct prepare_batch *next;
	size_t n_ops;
	struct claim_op ops[];
};

/* What the health streams were last given about one device. */
struct health_entry {
	char device[DRA_DEVICE_NAME_MAX + 1];
	enum dra_health health;
	char message[160];
	int64_t since; /* Unix seconds: when it last changed */
};

struct dra {
	const struct dra_options *o;
	const char *driver, *node_name;
	char *plugin_dir, *registry_dir;
	struct daemon dm; /* loop, signals, watcher, the config in force, keeper, stopping */
	struct gc_runtime *rt;
	/* The device names of the spec we last wrote or found up to date, sorted: only
	 * they are needed, and the spec's tree costs megabytes at 2,000 devices. */
	struct spec_names *spec_on_disk;
	struct dra_inventory *inv; /* in force: what is published and prepared from */
	struct kube_config *kcfg;
	struct kube_client *kube;
	struct dra_publisher *pub;
	struct dra_events *events; /* the Node events of device health */
	struct dra_service *svc;
	struct dra_checkpoint *ckpt;
	bool ckpt_dirty; /* memory holds a removal the file may still lack */
	struct prepare_batch *batches;
	struct health_entry *health;
	size_t n_health;
	bool health_sent;
};

/* ---- names ------------------------------------------------------------------------------- */

bool dra_driver_name_is_valid(const char *name)
{
	return name && strnlen(name, DRA_DRIVER_NAME_MAX + 1) <= DRA_DRIVER_NAME_MAX &&
	       dns_subdomain_is_valid(name);
}

bool dra_node_name_is_valid(const char *name)
{
	return dns_subdomain_is_valid(name);
}

/* ---- health -------------------------------------------------------------------------------- */

static const struct health_entry *health_find(const struct health_entry *h, size_t n,
					      const char *device)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(h[i].device, device) == 0)
			return &h[i];
	return NULL;
}

static void health_set(struct health_entry *e, const char *device, enum dra_health health,
		       const char *message)
{
	snprintf(e->device, sizeof(e->device), "%s", device);
	e->health = health;
	snprintf(e->message, sizeof(e->message), "%s", message);
}

/*
 * The complete list the health streams carry: every device of the inventory, and every
 * prepared device that is no longer in it (unplugged, or no pool takes it any more: its
 * claim stays prepared until Unprepare, and the kubelet should know). Sent only when it
 * differs from the last one; a device's time is when its status last changed.
 */
static void publish_health(struct dra *d)
{
	size_t max = d->inv ? d->inv->n_hcas : 0, n = 0;
	_cleanup_free_ struct health_entry *h = NULL;
	_cleanup_free_ struct dra_device_health *out = NULL;
	bool same;
	int64_t now = (int64_t)time(NULL);

	for (size_t c = 0; d->ckpt && c < d->ckpt->n_claims; c++)
		max += d->ckpt->claims[c].n_devices;
	h = calloc(max ?: 1, sizeof(*h));
	out = calloc(max ?: 1, sizeof(*out));
	if (!h || !out) {
		log_error("out of memory building the device health list");
		return;
	}
	for (size_t i = 0; d->inv && i < d->inv->n_hcas; i++) {
		const struct dra_hca *hca = &d->inv->hcas[i];

		health_set(&h[n++], hca->name,
			   hca->healthy ? DRA_HEALTH_HEALTHY : DRA_HEALTH_UNHEALTHY, hca->reason);
	}
	for (size_t c = 0; d->ckpt && c < d->ckpt->n_claims; c++) {
		const struct dra_prepared_claim *p = &d->ckpt->claims[c];

		for (size_t k = 0; k < p->n_devices; k++) {
			const char *dev = p->devices[k].device;

			if (!dev || health_find(h, n, dev))
				continue;
			health_set(&h[n++], dev, DRA_HEALTH_UNHEALTHY,
				   "prepared, but no longer on the node (unplugged, or no pool "
				   "takes it)");
		}
	}
	same = d->health_sent && n == d->n_health;
	for (size_t i = 0; i < n; i++) {
		const struct health_entry *old = health_find(d->health, d->n_health, h[i].device);

		if (old && old->health == h[i].health && strcmp(old->message, h[i].message) == 0) {
			h[i].since = old->since;
		} else {
			h[i].since = now;
			same = false;
		}
	}
	if (same)
		return;
	for (size_t i = 0; i < n; i++)
		out[i] = (struct dra_device_health){
		    .pool = d->node_name,
		    .device = h[i].device,
		    .health = h[i].health,
		    .message = h[i].message,
		    .last_updated = h[i].since,
		};
	free(d->health);
	d->health = TAKE_PTR(h);
	d->n_health = n;
	if (d->svc) {
		dra_service_publish_health(d->svc, out, n);
		d->health_sent = true;
	}
}

/* ---- applying a scan --------------------------------------------------------------------- */

/* rdma_cdi_devices: what the inventory in force offers, per pool. */
static void count_devices(struct dra *d)
{
	const struct cfg *c = d->inv->cfg;

	metrics_devices_begin(d->dm.metrics);
	for (size_t p = 0; c && p < c->n_pools; p++) {
		size_t healthy = 0, unhealthy = 0;

		for (size_t i = 0; i < d->inv->n_hcas; i++)
			if (d->inv->hcas[i].pool == (long)p) {
				healthy += d->inv->hcas[i].healthy;
				unhealthy += !d->inv->hcas[i].healthy;
			}
		metrics_devices_set(d->dm.metrics, c->pools[p].resource_name, healthy, unhealthy);
	}
	metrics_devices_end(d->dm.metrics);
}

static void on_slice_written(void *userdata, bool ok)
{
	struct dra *d = userdata;

	metrics_dra_slice_publish(d->dm.metrics, ok);
}

static void publish(struct dra *d)
{
	cJSON *devices = d->inv ? dra_slice_devices(d->inv, d->driver) : NULL;

	if (!d->inv)
		return;
	if (!devices) {
		log_error("out of memory building the slice devices; the slices stay as they were");
		return;
	}
	dra_publisher_set(d->pub, devices);
	dra_events_update(d->events, d->inv);
	publish_health(d);
	count_devices(d);
}

/*
 * Writes the spec of node. A failed write leaves the previous file on disk, so its names
 * stay the ones in force: devices that left are withdrawn at once (the inventory is built
 * from the new scan), devices that arrived wait for a write that succeeds (the keeper
 * retries), and one that left and came back is offered again when the file on disk still
 * defines it.
 */
static void write_spec(struct dra *d, const struct disc_node *node,
		       const struct cfg_assignment *a)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	int r;

	r = daemon_build_spec(&d->dm, node, a, false, &spec);
	if (r == -ENODEV) {
		if (!d->dm.applied)
			log_warning("no usable RDMA device found: publishing none, CDI spec left "
				    "as is");
		return;
	}
	if (r < 0) {
		log_error_errno(r, "building the CDI spec failed");
		return;
	}
	if (!daemon_write_spec(&d->dm, spec, disc_node_count_usable(node)))
		return;
	spec_names_free(d->spec_on_disk);
	d->spec_on_disk = spec_names_new(spec);
	if (!d->spec_on_disk)
		log_error("out of memory keeping the names of the CDI spec: publishing no device "
			  "until the next write");
}

/* Rebuilds the inventory in force from node; write: the node (or the config) changed, so
 * the spec is written first and slices and health follow. */
static int apply(struct dra *d, const struct disc_node *node, bool write)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	struct dra_inventory *inv = NULL;
	size_t left_out;
	int r;

	r = daemon_assign(&d->dm, node, "the slices stay as they were", &a);
	if (r < 0)
		return r;
	if (write)
		write_spec(d, node, a);
	r = dra_inventory_build(node, d->dm.cfg, a, d->dm.spec.kind, &inv);
	if (r < 0)
		return log_error_errno(r, "building the device inventory failed");
	left_out = dra_inventory_keep_defined(inv, d->spec_on_disk);
	if (left_out > 0 && write) /* else the same as the last scan's */
		log_warning("%zu device(s) not published: the CDI spec on disk does not define "
			    "them",
			    left_out);
	dra_inventory_free(d->inv);
	d->inv = inv;
	if (!write)
		return 0; /* the same node and config make the same slices and health */
	publish(d);
	malloc_trim(0);
	return 0;
}

/* A scan, the node again (changed false: the inventory points into the previous scan,
 * which goes now), a spec write due again or a new config (daemon.h). */
static int on_apply(void *userdata, const struct disc_node *node, bool changed, bool force)
{
	return apply(userdata, node, changed);
}

/* ---- claims: NodePrepareResources ---------------------------------------------------------- */

static void batch_fail(struct dra_batch *b, size_t i, const char *fmt, ...) _printf_(3, 4);
static void batch_fail(struct dra_batch *b, size_t i, const char *fmt, ...)
{
	const struct dra_claim_ref *ref = dra_batch_claim(b, i);
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_struct(
	    LOG_LVL_WARNING,
	    LOG_FIELDS("claim_uid", ref->uid, "claim", ref->name, "namespace", ref->namespace),
	    "%s %s/%s refused: %s",
	    dra_batch_kind(b) == DRA_BATCH_PREPARE ? "prepare" : "unprepare", ref->namespace,
	    ref->name, msg);
	if (dra_batch_fail(b, i, msg) < 0)
		log_error("out of memory answering claim %s", ref->uid);
}

/* Sends b's reply; each of its claims counts in the prepare/unprepare metrics. */
static void finish_batch(struct dra *d, struct dra_batch *b)
{
	enum metrics_claim what =
	    dra_batch_kind(b) == DRA_BATCH_PREPARE ? METRICS_PREPARE : METRICS_UNPREPARE;
	size_t failed = dra_batch_n_failed(b);

	for (size_t i = 0; i < dra_batch_n_claims(b); i++)
		metrics_dra_claim(d->dm.metrics, what, i >= failed); /* as many failed as failed */
	dra_batch_finish(b);
}

static void batch_answer(struct dra *d, struct dra_batch *b, size_t i,
			 const struct dra_prepared_claim *p)
{
	if (dra_batch_answer(b, i, p, p ? d->node_name : NULL) < 0)
		log_error("out of memory answering claim %s", dra_batch_claim(b, i)->uid);
}

/* Logs a failure too: the file lags behind memory until a save succeeds. */
static int save_checkpoint(struct dra *d, struct rc_error **err)
{
	int r = dra_checkpoint_save(d->ckpt, d->plugin_dir, err);

	d->ckpt_dirty = r < 0;
	if (r < 0) {
		log_error("saving the checkpoint in %s failed: %s", d->plugin_dir,
			  rc_error_msg(err ? *err : NULL, r));
	}
	return r;
}

static void log_prepared(struct dra *d, const struct dra_prepared_claim *p)
{
	char devices[512] = "";
	size_t len = 0;

	for (size_t k = 0; k < p->n_devices && len < sizeof(devices); k++)
		len += (size_t)snprintf(devices + len, sizeof(devices) - len, "%s%s", k ? "," : "",
					p->devices[k].device);
	log_struct(LOG_LVL_INFO,
		   LOG_FIELDS("claim_uid", p->uid, "claim", p->name, "namespace", p->namespace,
			      "devices", devices, "spec", p->spec_file),
		   "claim %s/%s prepared: %s", p->namespace, p->name, devices);
}

/* A refused answer from the API server: the claim fails; true when it did. */
static bool reply_failed(struct dra_batch *b, size_t i, const struct kube_reply *rep)
{
	const struct dra_claim_ref *ref = dra_batch_claim(b, i);

	if (rep->status == 404)
		batch_fail(b, i, "claim %s/%s not found on the API server", ref->namespace,
			   ref->name);
	else if (rep->status == 0)
		batch_fail(b, i, "getting claim %s/%s from the API server failed: %s",
			   ref->namespace, ref->name, rep->error ? rep->error : "no answer");
	else if (rep->status != 200)
		batch_fail(b, i, "getting claim %s/%s from the API server failed: HTTP %ld%s%s",
			   ref->namespace, ref->name, rep->status, rep->error ? ": " : "",
			   rep->error ? rep->error : "");
	return rep->status != 200;
}

/* Undoes a claim spec written for a claim that could not be recorded. */
static void remove_claim_spec(struct dra *d, const char *uid, const char *file)
{
	if (file)
		(void)dra_claim_spec_remove(d->dm.spec_dir, d->driver, uid, file, NULL);
}

/*
 * A newly prepared claim p (taken) with its spec (NULL: none) on disk and in the
 * checkpoint, in that order; anything that fails leaves nothing behind. The record in
 * the checkpoint, or NULL after failing the claim.
 */
static const struct dra_prepared_claim *record_claim(struct dra *d, struct dra_batch *b, size_t i,
						     struct dra_prepared_claim *p, const cJSON *spec)
{
	const char *uid = dra_batch_claim(b, i)->uid;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	_cleanup_free_ char *file = NULL;
	int r;

	if (spec) {
		char *written = NULL;

		r = dra_claim_spec_write(d->dm.spec_dir, d->driver, uid, spec, &written, &e);
		if (r < 0) {
			dra_prepared_claim_free(p);
			batch_fail(b, i, "writing the claim's CDI spec failed: %s", rc_error_msg(e, r));
			return NULL;
		}
		free(p->spec_file);
		p->spec_file = written;
		file = strdup(written);
	}
	r = dra_checkpoint_add(d->ckpt, p); /* takes p, also when it fails */
	if (r < 0) {
		remove_claim_spec(d, uid, file);
		batch_fail(b, i, "recording the claim failed: %s", strerror(-r));
		return NULL;
	}
	r = save_checkpoint(d, &e);
	if (r < 0) {
		(void)dra_checkpoint_remove(d->ckpt, uid);
		remove_claim_spec(d, uid, file);
		batch_fail(b, i, "saving the checkpoint failed: %s", rc_error_msg(e, r));
		return NULL;
	}
	return dra_checkpoint_find(d->ckpt, uid);
}

/* The claim's answer from the API server, prepared or refused. */
static void prepare_one(struct dra *d, struct dra_batch *b, size_t i, const struct kube_reply *rep)
{
	const struct dra_claim_ref *ref = dra_batch_claim(b, i);
	_cleanup_(cJSON_Deletep) cJSON *claim = NULL, *spec = NULL;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	const struct dra_prepared_claim *done;
	struct dra_result *res = NULL;
	struct dra_prepared_claim *p = NULL;
	size_t n_res = 0;
	int r;

	if (reply_failed(b, i, rep))
		return;
	if (!d->inv) {
		batch_fail(b, i,
			   "no device inventory: the last scan or config could not be "
			   "applied (see the log)");
		return;
	}
	claim = cJSON_ParseWithLength(rep->body, rep->len);
	if (!claim) {
		batch_fail(b, i, "claim %s/%s: the API server's answer is not JSON", ref->namespace,
			   ref->name);
		return;
	}
	/* Two batches may race for one claim: the first one prepared it. */
	if (dra_checkpoint_find(d->ckpt, ref->uid)) {
		batch_answer(d, b, i, dra_checkpoint_find(d->ckpt, ref->uid));
		return;
	}
	r = dra_claim_results(claim, ref->uid, d->driver, d->node_name, &res, &n_res, &e);
	if (r >= 0)
		r = dra_prepare(&(struct dra_prepare_input){.ckpt = d->ckpt,
							    .inv = d->inv,
							    .driver = d->driver,
							    .spec = &d->dm.spec,
							    .namespace = ref->namespace,
							    .name = ref->name,
							    .uid = ref->uid,
							    .results = res,
							    .n_results = n_res},
				&p, &spec, &e);
	dra_results_free(res, n_res);
	if (r < 0) {
		batch_fail(b, i, "%s", rc_error_msg(e, r));
		return;
	}
	if (r == 1) { /* prepared meanwhile: p is a copy of the record */
		batch_answer(d, b, i, p);
		dra_prepared_claim_free(p);
		return;
	}
	done = record_claim(d, b, i, p, spec);
	if (!done)
		return;
	log_prepared(d, done);
	batch_answer(d, b, i, done);
}

static void prepare_batch_free(struct dra *d, struct prepare_batch *pb)
{
	for (struct prepare_batch **pp = &d->batches; *pp; pp = &(*pp)->next)
		if (*pp == pb) {
			*pp = pb->next;
			break;
		}
	free(pb);
}

static void on_claim(void *userdata, const struct kube_reply *rep)
{
	struct claim_op *op = userdata;
	struct prepare_batch *pb = op->pb;
	struct dra *d = pb->d;

	op->call = NULL;
	prepare_one(d, pb->b, op->i, rep);
	if (--pb->left > 0)
		return;
	finish_batch(d, pb->b);
	prepare_batch_free(d, pb);
	publish_health(d);
}

/* What goes into the claim's URL is a namespace (DNS label) and a name (DNS subdomain),
 * which also makes it safe in a path without escaping. The service checks the same on
 * the gRPC thread; this keeps the URL safe whatever a batch holds. */
static const char *claim_ref_problem(const struct dra_claim_ref *ref)
{
	if (!dns_label_is_valid(ref->namespace))
		return "its namespace is not a DNS label";
	if (!dns_subdomain_is_valid(ref->name))
		return "its name is not a DNS subdomain";
	return NULL;
}

static void prepare_batch(struct dra *d, struct dra_batch *b)
{
	size_t n = dra_batch_n_claims(b);
	struct prepare_batch *pb = calloc(1, sizeof(*pb) + n * sizeof(pb->ops[0]));

	if (!pb) {
		for (size_t i = 0; i < n; i++)
			batch_fail(b, i, "out of memory");
		finish_batch(d, b);
		return;
	}
	pb->d = d;
	pb->b = b;
	pb->n_ops = n;
	pb->left = 1; /* held until every call is sent */
	for (size_t i = 0; i < n; i++) {
		const struct dra_claim_ref *ref = dra_batch_claim(b, i);
		const struct dra_prepared_claim *p = dra_checkpoint_find(d->ckpt, ref->uid);
		const char *why = claim_ref_problem(ref);
		_cleanup_free_ char *path = NULL;
		int r;

		pb->ops[i] = (struct claim_op){.pb = pb, .i = i};
		if (p) {
			batch_answer(d, b, i, p); /* prepared before: the same answer */
			continue;
		}
		if (why) {
			batch_fail(b, i, "claim %s/%s: %s", ref->namespace, ref->name, why);
			continue;
		}
		path = strdup_printf("/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
				     ref->namespace, ref->name);
		r = path ? kube_call(d->kube, "GET", path, NULL, CLAIM_GET_TIMEOUT_MS, on_claim,
				     &pb->ops[i], &pb->ops[i].call)
			 : -ENOMEM;
		if (r < 0) {
			pb->ops[i].call = NULL;
			batch_fail(b, i, "cannot ask the API server for claim %s/%s: %s",
				   ref->namespace, ref->name, strerror(-r));
			continue;
		}
		pb->left++;
	}
	pb->next = d->batches;
	d->batches = pb;
	if (--pb->left == 0) {
		finish_batch(d, b);
		prepare_batch_free(d, pb);
	}
}

/* ---- claims: NodeUnprepareResources -------------------------------------------------------- */

static int unprepare_one(struct dra *d, const char *uid, struct rc_error **err)
{
	const struct dra_prepared_claim *p = dra_checkpoint_find(d->ckpt, uid);
	char ns[256], name[256];
	int r;

	if (!p) /* never prepared, or done before: success, once the file agrees */
		return d->ckpt_dirty ? save_checkpoint(d, err) : 0;
	/* The spec dir in force: a config that moved it since leaves the file behind. */
	{
		_cleanup_rc_error_ struct rc_error *spec_err = NULL;

		r = dra_claim_spec_remove(d->dm.spec_dir, d->driver, uid, p->spec_file, &spec_err);
		if (r == -EEXIST)
			log_warning("claim %s: %s is not a spec of ours, left in place, ignoring",
				    uid, p->spec_file);
		else if (r < 0)
			return rc_error_set(err, r, "%s", rc_error_msg(spec_err, r));
	}
	snprintf(ns, sizeof(ns), "%s", p->namespace ? p->namespace : "");
	snprintf(name, sizeof(name), "%s", p->name ? p->name : "");
	r = dra_checkpoint_remove(d->ckpt, uid);
	if (r < 0)
		return rc_error_set(err, r, NULL);
	r = save_checkpoint(d, err);
	if (r < 0)
		return r;
	log_struct(LOG_LVL_INFO, LOG_FIELDS("claim_uid", uid, "claim", name, "namespace", ns),
		   "claim %s/%s unprepared", ns, name);
	return 0;
}

static void unprepare_batch(struct dra *d, struct dra_batch *b)
{
	for (size_t i = 0; i < dra_batch_n_claims(b); i++) {
		const struct dra_claim_ref *ref = dra_batch_claim(b, i);
		_cleanup_rc_error_ struct rc_error *e = NULL;
		int r = unprepare_one(d, ref->uid, &e);

		if (r < 0)
			batch_fail(b, i, "%s", rc_error_msg(e, r));
		else
			batch_answer(d, b, i, NULL);
	}
	finish_batch(d, b);
	publish_health(d);
}

static void on_batch(void *userdata, struct dra_batch *b)
{
	struct dra *d = userdata;

	if (d->dm.stopping) {
		for (size_t i = 0; i < dra_batch_n_claims(b); i++)
			batch_fail(b, i, "the DRA driver is stopping");
		finish_batch(d, b);
		return;
	}
	if (dra_batch_kind(b) == DRA_BATCH_PREPARE)
		prepare_batch(d, b);
	else
		unprepare_batch(d, b);
}

static void on_registered(void *userdata, bool ok, const char *error)
{
	struct dra *d = userdata;

	metrics_kubelet_registered(d->dm.metrics, d->driver, ok);
	if (!error)
		return; /* lost: the service logged why */
	metrics_registration(d->dm.metrics, d->driver, ok);
	if (ok)
		log_info("registered with the kubelet");
	else
		log_error("the kubelet refused the registration: %s", error ? error : "");
}

/* Claims whose GET is still out at stop are answered now (their calls cancelled). */
static void fail_pending_batches(struct dra *d)
{
	while (d->batches) {
		struct prepare_batch *pb = d->batches;

		for (size_t i = 0; i < pb->n_ops; i++) {
			if (!pb->ops[i].call)
				continue;
			kube_call_cancel(pb->ops[i].call);
			pb->ops[i].call = NULL;
			batch_fail(pb->b, i, "the DRA driver is stopping");
		}
		finish_batch(d, pb->b);
		prepare_batch_free(d, pb);
	}
}

/* ---- the config in force ------------------------------------------------------------------- */

static void log_pools(const struct cfg *c)
{
	for (size_t i = 0; i < c->n_pools; i++) {
		const struct cfg_pool *p = &c->pools[i];

		log_info("pool %s: %s%s", p->resource_name, cfg_mode_to_string(p->mode),
			 p->nccl_env ? ", ncclEnv" : "");
	}
}

/* A new valid config while running (daemon.h): what is published follows at once. */
static int on_reconfigure(void *userdata, const struct cfg *c, bool spec_moved,
			  struct rc_error **err)
{
	struct dra *d = userdata;

	if (spec_moved) {
		spec_names_free(d->spec_on_disk); /* other names or another file */
		d->spec_on_disk = NULL;
	}
	dra_inventory_free(d->inv); /* it points into the old config */
	d->inv = NULL;
	log_pools(c);
	return 0;
}

/* ---- start and stop ---------------------------------------------------------------------------- */

static int setup_dir(const char *what, const char *dir, const char *socket_name)
{
	struct sockaddr_un sa;

	if (strlen(dir) + 1 + strlen(socket_name) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "%s %s: socket path %s/%s too long", what,
				       dir, dir, socket_name);
	return daemon_socket_dir(what, dir);
}

static int setup_dirs(struct dra *d)
{
	const struct dra_options *o = d->o;
	_cleanup_free_ char *reg_sock = strdup_printf("%s-reg.sock", d->driver);
	_cleanup_free_ char *def_plugin =
	    strdup_printf("%s/%s", DRA_DEFAULT_PLUGIN_ROOT, d->driver);
	int r;

	if (!reg_sock || !def_plugin)
		return log_error_errno(-ENOMEM, "out of memory");
	if (daemon_absolute_dir(o->plugin_dir ? o->plugin_dir : def_plugin, &d->plugin_dir) < 0 ||
	    daemon_absolute_dir(o->registry_dir ? o->registry_dir : DRA_DEFAULT_REGISTRY_DIR,
				&d->registry_dir) < 0)
		return log_error_errno(-ENOMEM, "out of memory");
	r = setup_dir("plugin directory", d->plugin_dir, DRA_SOCKET_NAME);
	if (r >= 0)
		r = setup_dir("plugin registry directory", d->registry_dir, reg_sock);
	return r;
}

static int setup_kube(struct dra *d)
{
	const struct dra_options *o = d->o;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	if (o->kubeconfig)
		r = kube_config_load(o->kubeconfig, &d->kcfg, &err);
	else
		r = kube_config_in_cluster(o->sa_dir, &d->kcfg, &err);
	if (r < 0)
		return log_error_errno(r, "API server credentials (%s): %s",
				       o->kubeconfig ? "--kubeconfig" : "in-cluster",
				       rc_error_msg(err, r));
	log_info("API server %s (credentials: %s)", d->kcfg->server, d->kcfg->source);
	r = kube_client_new(d->dm.loop, d->kcfg, &d->kube);
	if (r < 0)
		return log_error_errno(r, "creating the API server client failed");
	r = dra_publisher_new(d->dm.loop,
			      &(struct dra_publisher_config){
				  .driver = d->driver,
				  .node_name = d->node_name,
				  .kube = d->kube,
				  .written = on_slice_written,
				  .userdata = d,
			      },
			      &d->pub);
	if (r < 0)
		return log_error_errno(r, "creating the ResourceSlice publisher failed");
	r = dra_events_new(d->dm.loop,
			   &(struct dra_events_config){
			       .driver = d->driver,
			       .node_name = d->node_name,
			       .kube = d->kube,
			   },
			   &d->events);
	if (r < 0)
		return log_error_errno(r, "creating the Node event recorder failed");
	return 0;
}

/*
 * A corrupt checkpoint stops the start: it is the only record of which claims hold
 * which devices and of their spec files, and starting without it would hand a device
 * to a second claim and leave the first one's spec behind. The operator gets the file
 * and the reason; moving the file away starts with no claim prepared.
 */
static int load_checkpoint(struct dra *d)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	int r = dra_checkpoint_load(d->plugin_dir, &d->ckpt, &e);

	if (r == -EBADMSG)
		return log_error_errno(r,
				       "checkpoint %s/%s is corrupt: %s; it is left in place. "
				       "Move it away to start with no claim prepared (the pods "
				       "using them lose nothing, but their claim specs in %s "
				       "stay until removed by hand)",
				       d->plugin_dir, DRA_CHECKPOINT_NAME, rc_error_msg(e, r),
				       d->dm.spec_dir);
	if (r < 0)
		return log_error_errno(r, "loading the checkpoint %s/%s failed: %s", d->plugin_dir,
				       DRA_CHECKPOINT_NAME, rc_error_msg(e, r));
	if (d->ckpt->n_claims > 0)
		log_info("checkpoint: %zu claim(s) prepared", d->ckpt->n_claims);
	return 0;
}

/*
 * Per-claim specs of ours that the checkpoint does not hold: a SIGKILL between writing
 * one and saving the checkpoint. Nobody was told their names; they go.
 */
static void remove_orphan_claim_specs(struct dra *d)
{
	_cleanup_closedir_ DIR *dir = opendir(d->dm.spec_dir);
	_cleanup_free_ char *prefix = strdup_printf("%s-" DRA_CLAIM_KIND_CLASS "_", d->driver);
	struct dirent *de;

	if (!dir || !prefix)
		return;
	while ((de = readdir(dir))) {
		size_t pl = strlen(prefix), l = strlen(de->d_name);
		char uid[256];

		if (l <= pl + 5 || strncmp(de->d_name, prefix, pl) != 0 ||
		    strcmp(de->d_name + l - 5, ".json") != 0 || l - pl - 5 >= sizeof(uid))
			continue;
		memcpy(uid, de->d_name + pl, l - pl - 5);
		uid[l - pl - 5] = '\0';
		if (dra_checkpoint_find(d->ckpt, uid))
			continue;
		if (dra_claim_spec_remove(d->dm.spec_dir, d->driver, uid, de->d_name, NULL) > 0)
			log_info("removed %s/%s: a claim spec no checkpoint entry holds",
				 d->dm.spec_dir, de->d_name);
	}
}

/* At start, with the loop and the config (daemon.h): the dirs, the checkpoint, the API
 * server; the kubelet is served only after the first scan. */
static int attach(void *userdata)
{
	struct dra *d = userdata;
	int r;

	r = setup_dirs(d);
	if (r < 0)
		return r;
	r = gc_runtime_new(d->dm.mb, &d->rt);
	if (r < 0)
		return log_error_errno(r, "starting gRPC failed");
	log_pools(d->dm.cfg);
	r = load_checkpoint(d);
	if (r < 0)
		return r;
	remove_orphan_claim_specs(d);
	return setup_kube(d);
}

/* After the first scan, the kubelet is served: nothing is prepared from nothing. */
static int serve(void *userdata)
{
	struct dra *d = userdata;
	int r = dra_service_start(d->dm.loop, d->dm.mb, d->dm.fw, d->rt,
				  &(struct dra_service_config){
				      .driver = d->driver,
				      .registry_dir = d->registry_dir,
				      .plugin_dir = d->plugin_dir,
				      .batch = on_batch,
				      .registered = on_registered,
				      .userdata = d,
				  },
				  &d->svc);

	if (r < 0)
		return log_error_errno(r, "serving the kubelet failed");
	metrics_kubelet_registered(d->dm.metrics, d->driver, 0); /* until the kubelet says */
	d->health_sent = false; /* the first list goes out whatever it holds */
	publish_health(d);
	return 0;
}

/* Stops serving and talking (daemon.h); done once every gRPC instance and call is gone.
 * The slices stay: the kubelet removes them after deregistration. */
static bool stop(void *userdata)
{
	struct dra *d = userdata;

	fail_pending_batches(d);
	dra_service_free(d->svc);
	d->svc = NULL;
	dra_publisher_free(d->pub);
	d->pub = NULL;
	dra_events_free(d->events);
	d->events = NULL;
	return !d->rt || gc_runtime_idle(d->rt);
}

static bool close_dra(void *userdata)
{
	struct dra *d = userdata;
	bool idle;

	idle = stop(d);
	kube_client_free(d->kube);
	d->kube = NULL;
	gc_runtime_free(d->rt); /* not idle: it leaves what is alive to exit */
	if (!idle)
		return false; /* the completion-queue thread may still post */
	dra_inventory_free(d->inv);
	dra_checkpoint_free(d->ckpt);
	kube_config_free(d->kcfg);
	spec_names_free(d->spec_on_disk);
	free(d->health);
	free(d->plugin_dir);
	free(d->registry_dir);
	return true;
}

static int check_options(const struct dra_options *o)
{
	const char *driver = o->driver_name ? o->driver_name : DRA_DEFAULT_DRIVER;

	if (!dra_driver_name_is_valid(driver))
		return log_error_errno(-EINVAL,
				       "invalid driver name \"%s\": a DNS subdomain of at most "
				       "%d characters",
				       driver, DRA_DRIVER_NAME_MAX);
	if (!o->node_name || !o->node_name[0])
		return log_error_errno(-EINVAL, "no node name: give --node-name or set NODE_NAME");
	if (!dra_node_name_is_valid(o->node_name))
		return log_error_errno(-EINVAL, "invalid node name \"%s\": not a DNS subdomain",
				       o->node_name);
	return 0;
}

int dra_run(const struct daemon_options *dopts, const struct dra_options *o)
{
	static const struct daemon_ops ops = {
	    .name = "dra",
	    .spec_dir = SPEC_DYNAMIC_DIR,
	    .attach = attach,
	    .serve = serve,
	    .apply = on_apply,
	    .reconfigure = on_reconfigure,
	    .stop = stop,
	    .close = close_dra,
	};
	struct dra d = {.o = o};
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	daemon_memory_tune();
	d.driver = o->driver_name ? o->driver_name : DRA_DEFAULT_DRIVER;
	d.node_name = o->node_name;
	return daemon_run(&d.dm, dopts, &ops, &d);
}
