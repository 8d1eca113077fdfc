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
 *   - the kubelet's two sockets (service.h) and the API server (kube.h).
 *
 * Order of a scan: the spec is written first, then the inventory in force is replaced;
 * when the write fails, the inventory keeps only devices the spec on disk still defines
 * (a Prepare never hands out a name that does not resolve). Then slices and health.
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
#include "follow.h"
#include "keeper.h"
#include "memory.h"
#include "kube.h"
#include "inventory.h"
#include "slices.h"
#include "claims.h"
#include "service.h"

#define DRA_DEFAULT_RESCAN_SEC 5
#define CLAIM_GET_TIMEOUT_MS 10000 /* well inside the kubelet's 45 s per call */
#define DNS_SUBDOMAIN_MAX 253

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
	/* The device names of the spec we last wrote or found up to date, sorted: only
	 * they are needed, and the spec's tree costs megabytes at 2,000 devices. */
	struct spec_names *spec_on_disk;
	bool spec_ok; /* the last scan's names all resolve from it */
	struct spec_keeper *keeper;
	struct dra_inventory *inv; /* in force: what is published and prepared from */
	struct kube_config *kcfg;
	struct kube_client *kube;
	struct dra_publisher *pub;
	struct dra_service *svc;
	struct dra_checkpoint *ckpt;
	bool ckpt_dirty; /* memory holds a removal the file may still lack */
	struct prepare_batch *batches;
	struct health_entry *health;
	size_t n_health;
	bool health_sent;
};

/* ---- names ------------------------------------------------------------------------------- */

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool dns_label_ok(const char *s, size_t len)
{
	if (len == 0 || len > 63 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* RFC 1123 subdomain: dot-separated labels, at most max characters. */
static bool dns_subdomain_ok(const char *s, size_t max)
{
	size_t len = s ? strnlen(s, max + 1) : 0;

	if (len == 0 || len > max)
		return false;
	for (const char *p = s; *p;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (!dns_label_ok(p, l))
			return false;
		p += l + (dot != NULL);
		if (dot && !*p)
			return false;
	}
	return true;
}

bool dra_driver_name_is_valid(const char *name)
{
	return dns_subdomain_ok(name, DRA_DRIVER_NAME_MAX);
}

bool dra_node_name_is_valid(const char *name)
{
	return dns_subdomain_ok(name, DNS_SUBDOMAIN_MAX);
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

struct spec_names {
	size_t n;
	char *names[];
};

static void spec_names_free(struct spec_names *s)
{
	for (size_t i = 0; s && i < s->n; i++)
		free(s->names[i]);
	free(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of spec's devices, sorted; NULL on OOM. */
static struct spec_names *spec_names_of(const cJSON *spec)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices"), *dev;
	struct spec_names *s =
	    calloc(1, sizeof(*s) + (size_t)cJSON_GetArraySize(devs) * sizeof(char *));

	if (!s)
		return NULL;
	cJSON_ArrayForEach (dev, devs) {
		const char *name =
		    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(dev, "name"));

		if (!name)
			continue;
		s->names[s->n] = strdup(name);
		if (!s->names[s->n]) {
			spec_names_free(s);
			return NULL;
		}
		s->n++;
	}
	qsort(s->names, s->n, sizeof(char *), cmp_str);
	return s;
}

static bool spec_defines(const struct spec_names *spec, const char *name)
{
	return spec && bsearch(&name, spec->names, spec->n, sizeof(char *), cmp_str);
}

/* After a failed write: only devices whose name the spec on disk defines stay. */
static void inventory_keep_resolvable(struct dra_inventory *inv, const struct spec_names *spec)
{
	size_t n = 0;

	for (size_t i = 0; i < inv->n_hcas; i++) {
		const char *eq = strchr(inv->hcas[i].cdi_id, '=');

		if (spec && eq && spec_defines(spec, eq + 1))
			inv->hcas[n++] = inv->hcas[i];
	}
	if (n < inv->n_hcas)
		log_warning("%zu device(s) not published until the CDI spec can be written",
			    inv->n_hcas - n);
	inv->n_hcas = n;
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
	publish_health(d);
}

/* The spec: true when the names of node's devices resolve from the file on disk. */
static bool write_spec(struct dra *d, const struct disc_node *node)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	int r;

	r = spec_build(node, &d->dm.spec, &spec);
	if (r == -ENODEV) {
		if (!d->dm.first_done)
			log_warning("no usable RDMA device found: publishing none, CDI spec left "
				    "as is");
		return true; /* nothing to resolve */
	}
	if (r < 0) {
		log_error_errno(r, "building the CDI spec failed");
		return false;
	}
	if (!spec_keeper_write(d->dm.keeper, spec, disc_node_count_usable(node)))
		return false;
	spec_names_free(d->spec_on_disk);
	/* Out of memory: no name resolves, so a later failed write publishes none. */
	d->spec_on_disk = spec_names_of(spec);
	return true;
}

/* Rebuilds the inventory in force from node; write: the node (or the config) changed, so
 * the spec is written first and slices and health follow. */
static void apply(struct dra *d, const struct disc_node *node, bool write)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	struct dra_inventory *inv = NULL;
	bool on_disk;
	int r;

	if (daemon_assign(&d->dm, node, "the slices stay as they were", &a) < 0)
		return;
	if (write)
		d->spec_ok = write_spec(d, node);
	on_disk = d->spec_ok; /* unchanged node: as the spec was last judged */
	r = dra_inventory_build(node, d->dm.cfg, a, d->dm.spec.kind, &inv);
	if (r < 0) {
		log_error_errno(r, "building the device inventory failed");
		return;
	}
	if (!on_disk)
		inventory_keep_resolvable(inv, d->spec_on_disk);
	dra_inventory_free(d->inv);
	d->inv = inv;
	d->dm.first_done = true;
	if (!write)
		return; /* the same node and config make the same slices and health */
	publish(d);
	malloc_trim(0);
}

/* A scan, the node again (changed false: the inventory points into the previous scan,
 * which goes now), a spec write due again or a new config (daemon.h). */
static void on_apply(void *userdata, const struct disc_node *node, bool changed, bool force)
{
	apply(userdata, node, changed);
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

static void batch_answer(struct dra *d, struct dra_batch *b, size_t i,
			 const struct dra_prepared_claim *p)
{
	if (dra_batch_answer(b, i, p, p ? d->node_name : NULL) < 0)
		log_error("out of memory answering claim %s", dra_batch_claim(b, i)->uid);
}

static int save_checkpoint(struct dra *d, char *err, size_t errlen)
{
	int r = dra_checkpoint_save(d->ckpt, d->plugin_dir, err, errlen);

	if (r < 0) {
		d->ckpt_dirty = true;
		log_error("saving the checkpoint in %s failed: %s", d->plugin_dir,
			  err[0] ? err : strerror(-r));
		return r;
	}
	d->ckpt_dirty = false;
	return 0;
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

/* The claim's answer from the API server, prepared or refused. */
static void prepare_one(struct dra *d, struct dra_batch *b, size_t i, const struct kube_reply *rep)
{
	const struct dra_claim_ref *ref = dra_batch_claim(b, i);
	_cleanup_(cJSON_Deletep) cJSON *claim = NULL, *spec = NULL;
	struct dra_result *res = NULL;
	struct dra_prepared_claim *p = NULL;
	char *file = NULL;
	size_t n_res = 0;
	char err[512] = "";
	int r;

	if (rep->status == 404) {
		batch_fail(b, i, "claim %s/%s not found on the API server", ref->namespace,
			   ref->name);
		return;
	}
	if (rep->status == 0) {
		batch_fail(b, i, "getting claim %s/%s from the API server failed: %s",
			   ref->namespace, ref->name, rep->error ? rep->error : "no answer");
		return;
	}
	if (rep->status != 200) {
		batch_fail(b, i, "getting claim %s/%s from the API server failed: HTTP %ld%s%s",
			   ref->namespace, ref->name, rep->status, rep->error ? ": " : "",
			   rep->error ? rep->error : "");
		return;
	}
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
	r = dra_claim_results(claim, ref->uid, d->driver, d->node_name, &res, &n_res, err,
			      sizeof(err));
	if (r >= 0)
		r = dra_prepare(d->ckpt, d->inv, d->driver, ref->namespace, ref->name, ref->uid,
				res, n_res, &p, &spec, err, sizeof(err));
	dra_results_free(res, n_res);
	if (r < 0) {
		batch_fail(b, i, "%s", err[0] ? err : strerror(-r));
		return;
	}
	if (r == 1) { /* prepared meanwhile: p is a copy of the record */
		batch_answer(d, b, i, p);
		dra_prepared_claim_free(p);
		return;
	}
	if (spec) {
		r = dra_claim_spec_write(d->dm.spec_dir, d->driver, ref->uid, spec, &file, err,
					 sizeof(err));
		if (r < 0) {
			dra_prepared_claim_free(p);
			batch_fail(b, i, "writing the claim's CDI spec failed: %s",
				   err[0] ? err : strerror(-r));
			return;
		}
		free(p->spec_file);
		p->spec_file = file;
	}
	{
		_cleanup_free_ char *f = file ? strdup(file) : NULL;

		r = dra_checkpoint_add(d->ckpt, p); /* takes p, also when it fails */
		if (r < 0) {
			if (f)
				(void)dra_claim_spec_remove(d->dm.spec_dir, d->driver, ref->uid, f,
							    err, sizeof(err));
			batch_fail(b, i, "recording the claim failed: %s", strerror(-r));
			return;
		}
	}
	r = save_checkpoint(d, err, sizeof(err));
	if (r < 0) {
		char err2[512] = "";
		_cleanup_free_ char *f = file ? strdup(file) : NULL;

		(void)dra_checkpoint_remove(d->ckpt, ref->uid);
		if (f)
			(void)dra_claim_spec_remove(d->dm.spec_dir, d->driver, ref->uid, f, err2,
						    sizeof(err2));
		batch_fail(b, i, "saving the checkpoint failed: %s", err[0] ? err : strerror(-r));
		return;
	}
	p = (struct dra_prepared_claim *)dra_checkpoint_find(d->ckpt, ref->uid);
	log_prepared(d, p);
	batch_answer(d, b, i, p);
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
	dra_batch_finish(pb->b);
	prepare_batch_free(d, pb);
	publish_health(d);
}

/* What goes into the claim's URL is a namespace (DNS label) and a name (DNS subdomain),
 * which also makes it safe in a path without escaping. The service checks the same on
 * the gRPC thread; this keeps the URL safe whatever a batch holds. */
static const char *claim_ref_problem(const struct dra_claim_ref *ref)
{
	if (!dns_label_ok(ref->namespace, strnlen(ref->namespace, 64)))
		return "its namespace is not a DNS label";
	if (!dns_subdomain_ok(ref->name, DNS_SUBDOMAIN_MAX))
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
		dra_batch_finish(b);
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
		dra_batch_finish(b);
		prepare_batch_free(d, pb);
	}
}

/* ---- claims: NodeUnprepareResources -------------------------------------------------------- */

static int unprepare_one(struct dra *d, const char *uid, char *err, size_t errlen)
{
	const struct dra_prepared_claim *p = dra_checkpoint_find(d->ckpt, uid);
	char ns[256], name[256];
	int r;

	if (!p) /* never prepared, or done before: success, once the file agrees */
		return d->ckpt_dirty ? save_checkpoint(d, err, errlen) : 0;
	/* The spec dir in force: a config that moved it since leaves the file behind. */
	r = dra_claim_spec_remove(d->dm.spec_dir, d->driver, uid, p->spec_file, err, errlen);
	if (r == -EEXIST) {
		log_warning("claim %s: %s is not a spec of ours, left in place, ignoring", uid,
			    p->spec_file);
	} else if (r < 0) {
		return r;
	}
	snprintf(ns, sizeof(ns), "%s", p->namespace ? p->namespace : "");
	snprintf(name, sizeof(name), "%s", p->name ? p->name : "");
	r = dra_checkpoint_remove(d->ckpt, uid);
	if (r < 0) {
		snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	r = save_checkpoint(d, err, errlen);
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
		char err[512] = "";
		int r = unprepare_one(d, ref->uid, err, sizeof(err));

		if (r < 0)
			batch_fail(b, i, "%s", err[0] ? err : strerror(-r));
		else
			batch_answer(d, b, i, NULL);
	}
	dra_batch_finish(b);
	publish_health(d);
}

static void on_batch(void *userdata, struct dra_batch *b)
{
	struct dra *d = userdata;

	if (d->dm.stopping) {
		for (size_t i = 0; i < dra_batch_n_claims(b); i++)
			batch_fail(b, i, "the DRA driver is stopping");
		dra_batch_finish(b);
		return;
	}
	if (dra_batch_kind(b) == DRA_BATCH_PREPARE)
		prepare_batch(d, b);
	else
		unprepare_batch(d, b);
}

static void on_registered(void *userdata, bool ok, const char *error)
{
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
		dra_batch_finish(pb->b);
		prepare_batch_free(d, pb);
	}
}

/* ---- stopping -------------------------------------------------------------------------------- */

/* Stops serving and talking (daemon.h). The slices stay: the kubelet removes them after
 * deregistration. */
static void stop_serving(void *userdata)
{
	struct dra *d = userdata;

	fail_pending_batches(d);
	dra_service_free(d->svc);
	d->svc = NULL;
	dra_publisher_free(d->pub);
	d->pub = NULL;
}

/* ---- the config in force ------------------------------------------------------------------- */

static void log_pools(struct dra *d)
{
	for (size_t i = 0; i < d->dm.cfg->n_pools; i++) {
		const struct cfg_pool *p = &d->dm.cfg->pools[i];

		log_info("pool %s: %s%s", p->resource_name, cfg_mode_to_string(p->mode),
			 p->nccl_env ? ", ncclEnv" : "");
	}
}

/* A new valid config while running (daemon.h): what is published follows at once. */
static void on_config_adopt(void *userdata, bool spec_moved)
{
	struct dra *d = userdata;

	if (spec_moved) {
		spec_names_free(d->spec_on_disk); /* other names or another file */
		d->spec_on_disk = NULL;
	}
	dra_inventory_free(d->inv); /* it points into the old config */
	d->inv = NULL;
}

static void on_config_applied(void *userdata)
{
	struct dra *d = userdata;

	log_info("config %s applied: %zu pool(s)", d->dm.cfg_path, d->dm.cfg->n_pools);
	log_pools(d);
}

/* ---- setup ------------------------------------------------------------------------------------
 */

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
			      },
			      &d->pub);
	if (r < 0)
		return log_error_errno(r, "creating the ResourceSlice publisher failed");
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
	char err[512] = "";
	int r = dra_checkpoint_load(d->plugin_dir, &d->ckpt, err, sizeof(err));

	if (r == -EBADMSG)
		return log_error_errno(r,
				       "checkpoint %s/%s is corrupt: %s; it is left in place. "
				       "Move it away to start with no claim prepared (the pods "
				       "using them lose nothing, but their claim specs in %s "
				       "stay until removed by hand)",
				       d->plugin_dir, DRA_CHECKPOINT_NAME,
				       err[0] ? err : strerror(-r), d->dm.spec_dir);
	if (r < 0)
		return log_error_errno(r, "loading the checkpoint %s/%s failed: %s", d->plugin_dir,
				       DRA_CHECKPOINT_NAME, err[0] ? err : strerror(-r));
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
		char uid[256], err[512] = "";

		if (l <= pl + 5 || strncmp(de->d_name, prefix, pl) != 0 ||
		    strcmp(de->d_name + l - 5, ".json") != 0 || l - pl - 5 >= sizeof(uid))
			continue;
		memcpy(uid, de->d_name + pl, l - pl - 5);
		uid[l - pl - 5] = '\0';
		if (dra_checkpoint_find(d->ckpt, uid))
			continue;
		if (dra_claim_spec_remove(d->dm.spec_dir, d->driver, uid, de->d_name, err,
					  sizeof(err)) > 0)
			log_info("removed %s/%s: a claim spec no checkpoint entry holds",
				 d->dm.spec_dir, de->d_name);
	}
}

static int setup(void *userdata)
{
	struct dra *d = userdata;
	int r;

	r = setup_dirs(d);
	if (r < 0)
		return r;
	r = daemon_open(&d->dm);
	if (r < 0)
		return r;
	r = daemon_load_config(&d->dm);
	if (r < 0)
		return r;
	log_pools(d);
	r = load_checkpoint(d);
	if (r < 0)
		return r;
	remove_orphan_claim_specs(d);
	r = setup_kube(d);
	if (r < 0)
		return r;
	return daemon_follow(&d->dm);
}

/* After the first scan, the kubelet is served: nothing is prepared from nothing. */
static int start_service(void *userdata)
{
	struct dra *d = userdata;
	int r = dra_service_start(d->dm.loop, d->dm.mb, d->dm.fw, d->dm.rt,
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
	d->health_sent = false; /* the first list goes out whatever it holds */
	publish_health(d);
	return 0;
}

static void teardown_servers(void *userdata)
{
	struct dra *d = userdata;

	stop_serving(d);
	kube_client_free(d->kube);
	d->kube = NULL;
}

static void release(void *userdata)
{
	struct dra *d = userdata;

	dra_inventory_free(d->inv);
	dra_checkpoint_free(d->ckpt);
	kube_config_free(d->kcfg);
	spec_names_free(d->spec_on_disk);
	free(d->health);
	free(d->plugin_dir);
	free(d->registry_dir);
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
	if (o->spec.kind && !cdi_kind_is_valid(o->spec.kind))
		return log_error_errno(-EINVAL, "invalid CDI kind \"%s\"", o->spec.kind);
	return 0;
}

int dra_run(const struct dra_options *o)
{
	static const struct daemon_ops ops = {
	    .setup = setup,
	    .start = start_service,
	    .apply = on_apply,
	    .config_adopt = on_config_adopt,
	    .config_applied = on_config_applied,
	    .stop = stop_serving,
	    .close = teardown_servers,
	    .release = release,
	};
	struct dra d = {.o = o};
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	daemon_memory_tune();
	d.driver = o->driver_name ? o->driver_name : DRA_DEFAULT_DRIVER;
	d.node_name = o->node_name;
	return daemon_run(&d.dm, &DAEMON_OPTIONS_OF(o, DRA_DEFAULT_RESCAN_SEC), &ops, &d);
}
