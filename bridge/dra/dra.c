/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dra_run(): the daemon of `rdma-cdi dra`, on one sd-event loop, built like the bridge's
 * (bridge.c) from the same pieces:
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
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "dra.h"
#include "follow.h"
#include "keeper.h"
#include "memory.h"
#include "watch.h"
#include "kube.h"
#include "inventory.h"
#include "slices.h"
#include "claims.h"
#include "service.h"

#define EXIT_WAIT_USEC (3 * 1000000ULL) /* for server shutdowns to complete at exit */
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
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct gc_runtime *rt;
	struct disc_follow *follow;
	/* The config in force and what it makes of the flags. */
	struct cfg *cfg;
	struct cfg_watch *cfg_watch;
	const char *cfg_path;
	struct spec_options spec;
	const char *spec_dir;
	bool pools_loud;
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
	bool first_done, stopping;
	sd_event_source *stop_tick;
	uint64_t stop_until;
	int exit_code;
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

static void begin_stop(struct dra *d, int exit_code);

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

	r = spec_build(node, &d->spec, &spec);
	if (r == -ENODEV) {
		if (!d->first_done)
			log_warning("no usable RDMA device found: publishing none, CDI spec left "
				    "as is");
		return true; /* nothing to resolve */
	}
	if (r < 0) {
		log_error_errno(r, "building the CDI spec failed");
		return false;
	}
	if (!spec_keeper_write(d->keeper, spec, disc_node_count_usable(node)))
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
	char err[512] = "";
	bool on_disk;
	int r;

	r = cfg_assign(d->cfg, node, &a, err, sizeof(err));
	if (r < 0) {
		log_error("%s; the slices stay as they were", err[0] ? err : strerror(-r));
		return;
	}
	for (size_t i = 0; i < a->n_warnings; i++) {
		if (d->pools_loud)
			log_warning("%s", a->warnings[i]);
		else
			log_debug("%s", a->warnings[i]);
	}
	d->pools_loud = false;
	if (write)
		d->spec_ok = write_spec(d, node);
	on_disk = d->spec_ok; /* unchanged node: as the spec was last judged */
	r = dra_inventory_build(node, d->cfg, a, d->spec.kind, &inv);
	if (r < 0) {
		log_error_errno(r, "building the device inventory failed");
		return;
	}
	if (!on_disk)
		inventory_keep_resolvable(inv, d->spec_on_disk);
	dra_inventory_free(d->inv);
	d->inv = inv;
	d->first_done = true;
	if (!write)
		return; /* the same node and config make the same slices and health */
	publish(d);
	malloc_trim(0);
}

static void on_spec_retry(void *userdata)
{
	struct dra *d = userdata;

	if (!d->stopping && disc_follow_node(d->follow))
		apply(d, disc_follow_node(d->follow), true);
}

static void log_change(void *userdata, enum disc_change what, const struct disc_device *dev,
		       const char *reason)
{
	disc_log_change(what, dev, reason);
}

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	struct dra *d = userdata;
	bool loud = reason == DISC_FOLLOW_START || reason == DISC_FOLLOW_REQUEST;

	d->pools_loud |= loud;
	if (error < 0 && !d->first_done) {
		begin_stop(d, error); /* the first scan must work */
		return;
	}
	if (error < 0 || !node)
		return; /* logged; the last good snapshot stays in force */
	for (size_t i = 0; i < node->n_problems; i++) {
		if (loud)
			log_warning("%s", node->problems[i]);
		else
			log_debug("%s", node->problems[i]);
	}
	if (prev && reason != DISC_FOLLOW_REQUEST && disc_node_equal(prev, node)) {
		/* Nothing changed, but the inventory points into prev, which goes now. */
		apply(d, node, false);
		return;
	}
	if (prev)
		disc_node_changes(prev, node, log_change, d);
	apply(d, node, true);
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
		r = dra_claim_spec_write(d->spec_dir, d->driver, ref->uid, spec, &file, err,
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
				(void)dra_claim_spec_remove(d->spec_dir, d->driver, ref->uid, f,
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
			(void)dra_claim_spec_remove(d->spec_dir, d->driver, ref->uid, f, err2,
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
	r = dra_claim_spec_remove(d->spec_dir, d->driver, uid, p->spec_file, err, errlen);
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

	if (d->stopping) {
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

static int on_stop_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct dra *d = userdata;
	uint64_t now = 0;

	sd_event_now(d->loop, CLOCK_MONOTONIC, &now);
	if (gc_runtime_idle(d->rt) || now >= d->stop_until) {
		sd_event_exit(d->loop, 0);
		return 0;
	}
	return sd_event_source_set_time_relative(s, 5000) < 0
		   ? sd_event_exit(d->loop, 0)
		   : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* Stops serving and talking; the loop exits once every gRPC instance is gone (or after
 * EXIT_WAIT_USEC). The slices stay: the kubelet removes them after deregistration. */
static void begin_stop(struct dra *d, int exit_code)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d->exit_code = exit_code;
	disc_follow_free(d->follow);
	d->follow = NULL;
	cfg_watch_free(d->cfg_watch);
	d->cfg_watch = NULL;
	fail_pending_batches(d);
	dra_service_free(d->svc);
	d->svc = NULL;
	dra_publisher_free(d->pub);
	d->pub = NULL;
	sd_event_now(d->loop, CLOCK_MONOTONIC, &d->stop_until);
	d->stop_until += EXIT_WAIT_USEC;
	if (sd_event_add_time_relative(d->loop, &d->stop_tick, CLOCK_MONOTONIC, 0, 1000,
				       on_stop_tick, d) < 0)
		sd_event_exit(d->loop, 0);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct dra *d = userdata;

	if (si->ssi_signo == SIGHUP) {
		log_info("SIGHUP: rescanning");
		disc_follow_rescan(d->follow, DISC_FOLLOW_REQUEST);
		return 0;
	}
	log_info("SIG%s: stopping", sigabbrev_np((int)si->ssi_signo));
	begin_stop(d, 0);
	return 0;
}

/* ---- the config in force ------------------------------------------------------------------- */

/* Flags first, then the file, then the defaults. */
static void settings_from(struct dra *d, const struct cfg *c)
{
	const struct dra_options *o = d->o;

	d->spec = o->spec;
	if (!d->spec.kind)
		d->spec.kind = c->kind ? c->kind : SPEC_DEFAULT_KIND;
	if (!d->spec.memlock)
		d->spec.memlock = c->memlock;
	d->spec.with_mad = o->spec.with_mad || c->with_mad == 1;
	d->spec_dir = o->spec_dir ? o->spec_dir : c->spec_dir ? c->spec_dir : SPEC_DYNAMIC_DIR;
}

static int new_keeper(struct dra *d)
{
	spec_keeper_free(d->keeper);
	d->keeper = NULL;
	return spec_keeper_new(d->loop,
			       &(struct spec_keeper_config){
				   .wo = {.spec_dir = d->spec_dir, .format = CDI_FORMAT_JSON},
				   .retry = on_spec_retry,
				   .userdata = d,
			       },
			       &d->keeper);
}

static void log_pools(struct dra *d)
{
	for (size_t i = 0; i < d->cfg->n_pools; i++) {
		const struct cfg_pool *p = &d->cfg->pools[i];

		log_info("pool %s: %s%s", p->resource_name, cfg_mode_to_string(p->mode),
			 p->nccl_env ? ", ncclEnv" : "");
	}
}

/* A new valid config while running: what is published follows at once. */
static void on_config(void *userdata, struct cfg *c, const char *err)
{
	struct dra *d = userdata;
	_cleanup_(cfg_freep) struct cfg *nc = c;
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	const struct disc_node *node = disc_follow_node(d->follow);
	_cleanup_free_ char *old_kind = NULL, *old_dir = NULL;
	char why[512] = "";
	int r;

	if (d->stopping)
		return;
	if (!nc) {
		log_error("config %s rejected, the previous config stays in force: %s", d->cfg_path,
			  err);
		return;
	}
	if (node) {
		r = cfg_assign(nc, node, &a, why, sizeof(why));
		if (r < 0) {
			log_error("config %s rejected, the previous config stays in force: %s",
				  d->cfg_path, why[0] ? why : strerror(-r));
			return;
		}
	}
	old_kind = strdup(d->spec.kind);
	old_dir = strdup(d->spec_dir);
	settings_from(d, nc);
	if (!old_kind || !old_dir || strcmp(old_kind, d->spec.kind) != 0 ||
	    strcmp(old_dir, d->spec_dir) != 0) {
		spec_names_free(d->spec_on_disk); /* other names or another file */
		d->spec_on_disk = NULL;
	}
	dra_inventory_free(d->inv); /* it points into the old config */
	d->inv = NULL;
	cfg_free(d->cfg);
	d->cfg = TAKE_PTR(nc);
	if (new_keeper(d) < 0)
		log_error("out of memory renewing the spec keeper");
	log_info("config %s applied: %zu pool(s)", d->cfg_path, d->cfg->n_pools);
	log_pools(d);
	d->pools_loud = true;
	if (node)
		apply(d, node, true);
}

static int load_config(struct dra *d)
{
	const struct dra_options *o = d->o;
	char err[512] = "";
	int r;

	d->cfg_path = o->config_path ? o->config_path : CFG_DEFAULT_PATH;
	r = cfg_watch_new(d->loop, d->fw, d->cfg_path, on_config, d, &d->cfg, err, sizeof(err),
			  &d->cfg_watch);
	if (r == -ENOENT && !o->config_explicit)
		log_info("no config directory for %s: using the defaults, not watching",
			 d->cfg_path);
	else if (r < 0)
		return log_error_errno(r, "config %s: %s", d->cfg_path, err);
	else if (!d->cfg && o->config_explicit)
		return log_error_errno(-ENOENT, "config %s does not exist", d->cfg_path);
	if (!d->cfg) {
		r = cfg_default(&d->cfg);
		if (r < 0)
			return log_error_errno(r, "out of memory");
		if (d->cfg_watch)
			log_info("%s does not exist: using the defaults (creating it applies it)",
				 d->cfg_path);
	} else {
		log_info("config %s loaded (%zu pool(s))", d->cfg_path, d->cfg->n_pools);
	}
	settings_from(d, d->cfg);
	log_pools(d);
	d->pools_loud = true;
	return 0;
}

/* ---- setup ------------------------------------------------------------------------------------
 */

/* An absolute copy of dir without trailing slashes. */
static char *absolute_dir(const char *dir)
{
	char *p;

	if (dir[0] == '/') {
		p = strdup(dir);
	} else {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);

		p = cwd ? strdup_printf("%s/%s", cwd, dir) : NULL;
	}
	for (size_t l = p ? strlen(p) : 0; l > 1 && p[l - 1] == '/'; l--)
		p[l - 1] = '\0';
	return p;
}

/* The kubelet creates these 0750 too; we may simply be first. */
static int setup_dir(const char *what, const char *dir, const char *socket_name)
{
	struct sockaddr_un sa;
	struct stat st;
	int r;

	if (strlen(dir) + 1 + strlen(socket_name) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "%s %s: socket path %s/%s too long", what,
				       dir, dir, socket_name);
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return log_error_errno(-ENOTDIR, "%s %s", what, dir);
		return 0;
	}
	if (errno != ENOENT)
		return log_error_errno(-errno, "%s %s", what, dir);
	r = mkdir_all(dir, 0750);
	if (r < 0)
		return log_error_errno(r, "cannot create %s %s", what, dir);
	log_info("created %s %s", what, dir);
	return 0;
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
	d->plugin_dir = absolute_dir(o->plugin_dir ? o->plugin_dir : def_plugin);
	d->registry_dir =
	    absolute_dir(o->registry_dir ? o->registry_dir : DRA_DEFAULT_REGISTRY_DIR);
	if (!d->plugin_dir || !d->registry_dir)
		return log_error_errno(-ENOMEM, "out of memory");
	r = setup_dir("plugin directory", d->plugin_dir, DRA_SOCKET_NAME);
	if (r >= 0)
		r = setup_dir("plugin registry directory", d->registry_dir, reg_sock);
	return r;
}

static int setup_kube(struct dra *d)
{
	const struct dra_options *o = d->o;
	char err[512] = "";
	int r;

	if (o->kubeconfig)
		r = kube_config_load(o->kubeconfig, &d->kcfg, err, sizeof(err));
	else
		r = kube_config_in_cluster(o->sa_dir, &d->kcfg, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "API server credentials (%s): %s",
				       o->kubeconfig ? "--kubeconfig" : "in-cluster",
				       err[0] ? err : strerror(-r));
	log_info("API server %s (credentials: %s)", d->kcfg->server, d->kcfg->source);
	r = kube_client_new(d->loop, d->kcfg, &d->kube);
	if (r < 0)
		return log_error_errno(r, "creating the API server client failed");
	r = dra_publisher_new(d->loop,
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
				       err[0] ? err : strerror(-r), d->spec_dir);
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
	_cleanup_closedir_ DIR *dir = opendir(d->spec_dir);
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
		if (dra_claim_spec_remove(d->spec_dir, d->driver, uid, de->d_name, err,
					  sizeof(err)) > 0)
			log_info("removed %s/%s: a claim spec no checkpoint entry holds",
				 d->spec_dir, de->d_name);
	}
}

static int setup(struct dra *d)
{
	const struct dra_options *o = d->o;
	int interval = o->rescan_interval == 0 ? DRA_DEFAULT_RESCAN_SEC : o->rescan_interval;
	int r;

	r = setup_dirs(d);
	if (r < 0)
		return r;
	r = sd_event_new(&d->loop);
	if (r < 0)
		return log_error_errno(r, "creating the event loop failed");
	for (int sig = SIGHUP; sig <= SIGTERM; sig++)
		if (sig == SIGHUP || sig == SIGINT || sig == SIGTERM) {
			r = sd_event_add_signal(d->loop, NULL, sig, on_signal, d);
			if (r < 0)
				return log_error_errno(r, "watching signals failed");
		}
	r = mailbox_new(d->loop, &d->mb);
	if (r >= 0)
		r = fswatch_new(d->loop, &d->fw);
	if (r < 0)
		return log_error_errno(r, "inotify initialisation failed");
	r = gc_runtime_new(d->mb, &d->rt);
	if (r < 0)
		return log_error_errno(r, "starting gRPC failed");
	r = load_config(d);
	if (r < 0)
		return r;
	r = load_checkpoint(d);
	if (r < 0)
		return r;
	remove_orphan_claim_specs(d);
	r = new_keeper(d);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	r = setup_kube(d);
	if (r < 0)
		return r;
	r = disc_follow_new(d->loop, d->mb, d->fw,
			    &(struct disc_follow_config){
				.disc = o->disc,
				.interval_sec = interval > 0 ? interval : 0,
				.fn = on_scan,
				.userdata = d,
			    },
			    &d->follow);
	if (r < 0)
		return log_error_errno(r, "starting the sysfs watcher failed");
	return 0;
}

/* The first scan, before the kubelet is served: nothing is prepared from nothing. */
static int first_scan(struct dra *d)
{
	while (!d->first_done && !d->stopping) {
		int r = sd_event_run(d->loop, UINT64_MAX);

		if (r < 0)
			return log_error_errno(r, "event loop failed");
	}
	return d->stopping ? 1 : 0;
}

static int start_service(struct dra *d)
{
	int r = dra_service_start(d->loop, d->mb, d->fw, d->rt,
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

static void teardown(struct dra *d)
{
	disc_follow_free(d->follow);
	cfg_watch_free(d->cfg_watch);
	d->cfg_watch = NULL;
	fail_pending_batches(d);
	dra_service_free(d->svc);
	dra_publisher_free(d->pub);
	kube_client_free(d->kube);
	if (d->rt && !gc_runtime_idle(d->rt)) {
		/* The completion-queue thread may still post: leave the rest to exit. */
		gc_runtime_free(d->rt);
		return;
	}
	gc_runtime_free(d->rt);
	fswatch_free(d->fw);
	mailbox_free(d->mb);
	spec_keeper_free(d->keeper);
	sd_event_source_disable_unref(d->stop_tick);
	sd_event_unref(d->loop);
	dra_inventory_free(d->inv);
	dra_checkpoint_free(d->ckpt);
	kube_config_free(d->kcfg);
	spec_names_free(d->spec_on_disk);
	cfg_free(d->cfg);
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
	struct dra d = {.o = o};
	sigset_t mask, old_mask;
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	daemon_memory_tune();
	d.driver = o->driver_name ? o->driver_name : DRA_DEFAULT_DRIVER;
	d.node_name = o->node_name;
	/* Blocked before any thread exists (gRPC, libcurl's resolver and the watchers start
	 * their own), so only the loop's signal sources see them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
	sigdelset(&mask, SIGPIPE);
	sigdelset(&mask, SIGUSR1);

	r = setup(&d);
	if (r < 0)
		goto out;
	r = first_scan(&d);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = start_service(&d);
		if (r < 0)
			begin_stop(&d, r);
	}
	if (!d.stopping)
		(void)sd_notify(0, "READY=1");
	r = sd_event_loop(d.loop);
	if (r < 0)
		log_error_errno(r, "event loop failed");
	else
		r = d.exit_code;
out:
	teardown(&d);
	/* SIGTERM, SIGINT and SIGHUP stay blocked (as bridge_run: a second one would kill
	 * a cleanly stopped process). */
	sigorset(&old_mask, &old_mask, &mask);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (r == 0)
		log_info("stopped");
	return r;
}
