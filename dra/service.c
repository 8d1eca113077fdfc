/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service: the DRA driver's two gRPC endpoints (service.h). The registration socket is
 * answered synchronously on the completion-queue thread (GetInfo is constant); a
 * NodePrepareResources/NodeUnprepareResources call is decoded and validated there, then
 * deferred: the batch travels to the loop through the mailbox and is answered when the
 * daemon finishes it (grpc-core drops the answer when the kubelet is gone by then).
 *
 * A batch never points back at the service, so the daemon may finish it after
 * dra_service_free(). The service itself lives until both server instances are gone and
 * every message it posted has run: the handlers read its configuration until then.
 *
 * The plugin watcher re-registers a plugin whose socket it sees created; a removed
 * registration socket is served again at once (an inotify watch on the registry dir, and
 * a poll every 0.4 s that also covers a lost watch and the DRA socket). The same poll
 * sends the health list again when it has not changed for a while (service.h).
 */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "rpc.h"
#include "common.h"
#include "dra-health-v1.pb-c.h"
#include "dra.h"
#include "dra-v1.pb-c.h"
#include "pluginregistration.pb-c.h"
#include "service-internal.h"

/* The generated names spell the whole package. */
#define PB(x) K8s__Io__Kubelet__Pkg__Apis__Dra__V1__##x
#define pb_(x) k8s__io__kubelet__pkg__apis__dra__v1__##x

#define REG_SUFFIX "-reg.sock"
#define REG_MESSAGE_MAX 4096
#define POLL_USEC 400000

enum dra_method {
	M_PREPARE_V1,
	M_UNPREPARE_V1,
	M_PREPARE_V1BETA1,
	M_UNPREPARE_V1BETA1,
	M_HEALTH_V1,
	M_HEALTH_V1ALPHA1,
	N_DRA_METHODS
};

static const struct gc_method dra_methods[N_DRA_METHODS] = {
    [M_PREPARE_V1] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"},
    [M_UNPREPARE_V1] = {"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"},
    [M_PREPARE_V1BETA1] = {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources"},
    [M_UNPREPARE_V1BETA1] = {"/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"
			     "NodeUnprepareResources"},
    [M_HEALTH_V1] = {"/v1.DRAResourceHealth/NodeWatchResources", true},
    [M_HEALTH_V1ALPHA1] = {"/v1alpha1.DRAResourceHealth/NodeWatchResources", true},
};

enum reg_method { M_GET_INFO, M_NOTIFY, N_REG_METHODS };

static const struct gc_method reg_methods[N_REG_METHODS] = {
    [M_GET_INFO] = {"/pluginregistration.Registration/GetInfo"},
    [M_NOTIFY] = {"/pluginregistration.Registration/NotifyRegistrationStatus"},
};

/* The versions the kubelet may pick from (labels, not gRPC service names). */
static const char *const supported_versions[] = {
    "v1.DRAPlugin", "v1beta1.DRAPlugin", "v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"};

/* One socket: the running instance, or none while the previous one shuts down. */
struct endpoint {
	struct dra_service *s;
	const char *what; /* "registration", "DRA" */
	char *path;
	struct gc_server *srv;
	bool stopping; /* an instance is shutting down; start again when it is gone */
	bool failing;  /* the last start failed: log the next failure at debug level */
};

struct dra_service {
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct gc_runtime *rt;
	char *driver, *registry_dir, *plugin_dir, *reg_name;
	void (*batch)(void *userdata, struct dra_batch *b);
	void (*registered)(void *userdata, bool ok, const char *error);
	void *userdata;
	struct endpoint reg, dra;
	uint8_t *info; /* the packed PluginInfo, constant */
	size_t info_len;
	uint8_t *health; /* the latest packed NodeWatchResourcesResponse */
	size_t health_len;
	bool has_health;
	uint64_t health_resend_usec;
	uint64_t health_sent; /* CLOCK_MONOTONIC usec of the last send */
	int dir_watch;
	sd_event_source *poll;
	bool freed;
	unsigned live;	   /* instances not yet gone (loop thread) */
	atomic_uint posts; /* messages posted and not yet run */
};

/* ---- requests ---------------------------------------------------------------------------- */

/* Counts the top-level claims (field 1) without unpacking anything: a small message can
 * otherwise hold a million empty claims, each an allocation. */
static int count_claims(const uint8_t *p, size_t len, size_t *ret)
{
	const uint8_t *data;
	uint64_t field;
	size_t at = 0, n = 0, dlen;
	int r;

	while ((r = rpc_wire_next(p, len, &at, &field, &data, &dlen)) > 0)
		if (data && field == 1)
			n++;
	if (r < 0)
		return r;
	*ret = n;
	return 0;
}

static int check_claim(const PB(Claim) * c, size_t i, struct rc_error **err)
{
	char b[96];

	if (!c->uid || !*c->uid)
		return rc_error_set(err, -EINVAL, "claim %zu: empty uid", i);
	if (!name_is_safe(c->uid, DRA_UID_MAX))
		return rc_error_set(err, -EINVAL, "claim %zu: uid %s is not [A-Za-z0-9_.:-]{1,%d}",
				    i, text_quote(b, sizeof(b), c->uid, strlen(c->uid)), DRA_UID_MAX);
	if (!c->namespace_ || !*c->namespace_)
		return rc_error_set(err, -EINVAL, "claim %zu (uid %s): empty namespace", i, c->uid);
	if (!dns_label_is_valid(c->namespace_))
		return rc_error_set(err, -EINVAL, "claim %zu (uid %s): namespace %s is not a DNS label",
				    i, c->uid,
				    text_quote(b, sizeof(b), c->namespace_, strlen(c->namespace_)));
	if (!c->name || !*c->name)
		return rc_error_set(err, -EINVAL, "claim %zu (uid %s): empty name", i, c->uid);
	if (!dns_subdomain_is_valid(c->name))
		return rc_error_set(err, -EINVAL, "claim %zu (uid %s): name %s is not a DNS subdomain",
				    i, c->uid, text_quote(b, sizeof(b), c->name, strlen(c->name)));
	return 0;
}

void dra_request_free(struct dra_request *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_claims; i++) {
		free((char *)r->claims[i].namespace);
		free((char *)r->claims[i].uid);
		free((char *)r->claims[i].name);
	}
	free(r->claims);
	free(r);
}

DEFINE_CLEANUP_FUNC(struct dra_request, dra_request_free);

static bool seen_uid(const struct dra_request *r, const char *uid)
{
	for (size_t i = 0; i < r->n_claims; i++)
		if (strcmp(r->claims[i].uid, uid) == 0)
			return true;
	return false;
}

/* The claims of an unpacked request, checked, each UID once. */
static int take_claims(const PB(NodePrepareResourcesRequest) * req, struct dra_request **ret,
		       struct rc_error **err)
{
	_cleanup_(dra_request_freep) struct dra_request *r = calloc(1, sizeof(*r));
	int e;

	if (r)
		r->claims = calloc(req->n_claims ? req->n_claims : 1, sizeof(*r->claims));
	if (!r || !r->claims)
		return rc_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < req->n_claims; i++) {
		const PB(Claim) *c = req->claims[i];
		struct dra_claim_ref *o;

		e = check_claim(c, i, err);
		if (e < 0)
			return e;
		if (seen_uid(r, c->uid))
			continue;
		o = &r->claims[r->n_claims];
		o->uid = strdup(c->uid);
		o->namespace = strdup(c->namespace_);
		o->name = strdup(c->name);
		r->n_claims++;
		if (!o->uid || !o->namespace || !o->name)
			return rc_error_set(err, -ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(r);
	return 0;
}

/* NodePrepareResourcesRequest and NodeUnprepareResourcesRequest: one layout, one decoder. */
int dra_request_decode(const uint8_t *buf, size_t len, struct dra_request **ret,
		       struct rc_error **err)
{
	PB(NodePrepareResourcesRequest) * req;
	const uint8_t *nul;
	size_t n, nul_len;
	char b[96];
	int e;

	if (count_claims(buf, len, &n) < 0)
		return rc_error_set(err, -EBADMSG,
				    "the request is not a well-formed protobuf message");
	if (n > DRA_CLAIMS_PER_CALL_MAX)
		return rc_error_set(err, -E2BIG, "%zu claims in one call, at most %d", n,
				    DRA_CLAIMS_PER_CALL_MAX);
	e = rpc_wire_find_nul(&pb_(node_prepare_resources_request__descriptor), buf, len, &nul,
			      &nul_len);
	if (e > 0) {
		text_escape(b, sizeof(b) - 3, (const char *)nul, nul_len < 64 ? nul_len : 64, true);
		if (nul_len > 64)
			strcat(b, "...");
		return rc_error_set(err, -EINVAL, "a claim's string holds a NUL byte: \"%s\"", b);
	}
	req = e < 0 ? NULL : pb_(node_prepare_resources_request__unpack)(NULL, len, buf);
	if (!req)
		return rc_error_set(err, -EBADMSG, "the request is not a well-formed claims list");
	e = take_claims(req, ret, err);
	pb_(node_prepare_resources_request__free_unpacked)(req, NULL);
	return e;
}

/* ---- batches ----------------------------------------------------------------------------- */

struct answer {
	bool done;
	char *error;	       /* NULL: succeeded */
	PB(Device) * *devices; /* Prepare */
	size_t n_devices;
};

struct dra_batch {
	struct gc_deferred *call;
	enum dra_batch_kind kind;
	bool v1beta1; /* its Device has no share_id (field 5 is v1's) */
	struct dra_request *req;
	struct answer *answers;
};

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void device_free(PB(Device) * d)
{
	if (!d)
		return;
	strv_free(d->request_names, d->n_request_names);
	strv_free(d->cdi_device_ids, d->n_cdi_device_ids);
	free(d->pool_name);
	free(d->device_name);
	if (d->share_id != protobuf_c_empty_string)
		free(d->share_id);
	free(d);
}

static void answer_clear(struct answer *a)
{
	free(a->error);
	a->error = NULL;
	for (size_t i = 0; i < a->n_devices; i++)
		device_free(a->devices[i]);
	free(a->devices);
	a->devices = NULL;
	a->n_devices = 0;
}

void dra_batch_free(struct dra_batch *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->answers && i < b->req->n_claims; i++)
		answer_clear(&b->answers[i]);
	free(b->answers);
	dra_request_free(b->req);
	free(b);
}

struct dra_batch *dra_batch_new(enum dra_batch_kind kind, struct dra_request *req,
				struct gc_deferred *call)
{
	struct dra_batch *b = calloc(1, sizeof(*b));

	if (b)
		b->answers = calloc(req->n_claims ? req->n_claims : 1, sizeof(*b->answers));
	if (!b || !b->answers) {
		free(b);
		dra_request_free(req);
		return NULL;
	}
	b->call = call;
	b->kind = kind;
	b->req = req;
	return b;
}

enum dra_batch_kind dra_batch_kind(const struct dra_batch *b)
{
	return b->kind;
}

size_t dra_batch_n_claims(const struct dra_batch *b)
{
	return b->req->n_claims;
}

const struct dra_claim_ref *dra_batch_claim(const struct dra_batch *b, size_t i)
{
	return i < b->req->n_claims ? &b->req->claims[i] : NULL;
}

static char **strv_copy(char *const *v, size_t n)
{
	char **c = calloc(n ? n : 1, sizeof(*c));

	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i] ? v[i] : ""))) {
			strv_free(c, i);
			return NULL;
		}
	return c;
}

static PB(Device) *
    device_copy(const struct dra_prepared_device *p, const char *pool, bool share_id)
{
	PB(Device) *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pb_(device__init)(d);
	d->request_names = strv_copy(p->requests, p->n_requests);
	if (d->request_names)
		d->n_request_names = p->n_requests;
	d->cdi_device_ids = strv_copy(p->cdi_ids, p->n_cdi_ids);
	if (d->cdi_device_ids)
		d->n_cdi_device_ids = p->n_cdi_ids;
	d->pool_name = strdup(pool);
	d->device_name = strdup(p->device ? p->device : "");
	/* The allocation's share, so that the kubelet tells the shares of a device apart. */
	d->share_id =
	    share_id && p->share_id ? strdup(p->share_id) : (char *)protobuf_c_empty_string;
	if (!d->request_names || !d->cdi_device_ids || !d->pool_name || !d->device_name ||
	    !d->share_id) {
		device_free(d);
		return NULL;
	}
	return d;
}

int dra_batch_answer(struct dra_batch *b, size_t i, const struct dra_prepared_claim *p,
		     const char *pool)
{
	struct answer *a;

	if (i >= b->req->n_claims || (b->kind == DRA_BATCH_PREPARE && (!p || !pool)))
		return -EINVAL;
	a = &b->answers[i];
	answer_clear(a);
	a->done = true;
	if (b->kind != DRA_BATCH_PREPARE)
		return 0;
	a->devices = calloc(p->n_devices ? p->n_devices : 1, sizeof(*a->devices));
	if (!a->devices)
		goto oom;
	for (size_t j = 0; j < p->n_devices; j++) {
		a->devices[j] = device_copy(&p->devices[j], pool, !b->v1beta1);
		if (!a->devices[j])
			goto oom;
		a->n_devices++;
	}
	return 0;
oom:
	/* The claim is not left looking prepared with some of its devices. */
	answer_clear(a);
	a->done = false;
	return -ENOMEM;
}

int dra_batch_fail(struct dra_batch *b, size_t i, const char *error)
{
	struct answer *a;

	if (i >= b->req->n_claims)
		return -EINVAL;
	a = &b->answers[i];
	answer_clear(a);
	/* An empty error would read as success to the kubelet. */
	a->error = strdup(error && *error ? error : "failed");
	a->done = a->error != NULL;
	return a->error ? 0 : -ENOMEM;
}

static const char *answer_error(const struct dra_batch *b, size_t i)
{
	const struct answer *a = &b->answers[i];

	if (!a->done)
		return b->kind == DRA_BATCH_PREPARE ? "the driver did not prepare this claim"
						    : "the driver did not unprepare this claim";
	return a->error ? a->error : "";
}

size_t dra_batch_n_failed(const struct dra_batch *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->req->n_claims; i++)
		n += answer_error(b, i)[0] != '\0';
	return n;
}

static void *member(void *msg, unsigned offset)
{
	return (char *)msg + offset;
}

static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *d,
						const char *name)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field_by_name(d, name);

	assert(f);
	return f;
}

/*
 * Both responses are map<string, X> claims = 1 keyed by claim UID, X holding the error
 * and, for Prepare, the devices: one filler through the generated descriptors (map
 * entries are messages with "key" and "value").
 */
static int pack_answers(const struct dra_batch *b, const ProtobufCMessageDescriptor *rd,
			uint8_t **ret, size_t *ret_len)
{
	const ProtobufCFieldDescriptor *claims = field_of(rd, "claims");
	const ProtobufCMessageDescriptor *ed = claims->descriptor;
	const ProtobufCFieldDescriptor *key = field_of(ed, "key"), *value = field_of(ed, "value");
	const ProtobufCMessageDescriptor *vd = value->descriptor;
	const ProtobufCFieldDescriptor *error = field_of(vd, "error");
	const ProtobufCFieldDescriptor *devices =
	    protobuf_c_message_descriptor_get_field_by_name(vd, "devices");
	size_t n = b->req->n_claims, len;
	_cleanup_free_ void *resp = calloc(1, rd->sizeof_message);
	_cleanup_free_ char *entries = calloc(n ?: 1, ed->sizeof_message);
	_cleanup_free_ char *vals = calloc(n ?: 1, vd->sizeof_message);
	_cleanup_free_ void **ep = calloc(n ?: 1, sizeof(*ep));
	uint8_t *buf;

	if (!resp || !entries || !vals || !ep)
		return -ENOMEM;
	protobuf_c_message_init(rd, resp);
	for (size_t i = 0; i < n; i++) {
		const struct answer *a = &b->answers[i];
		void *e = entries + i * ed->sizeof_message, *v = vals + i * vd->sizeof_message;

		protobuf_c_message_init(ed, e);
		protobuf_c_message_init(vd, v);
		*(const char **)member(e, key->offset) = b->req->claims[i].uid;
		*(void **)member(e, value->offset) = v;
		*(const char **)member(v, error->offset) = answer_error(b, i);
		if (devices && a->done && !a->error) {
			*(void **)member(v, devices->offset) = a->devices;
			*(size_t *)member(v, devices->quantifier_offset) = a->n_devices;
		}
		ep[i] = e;
	}
	*(void **)member(resp, claims->offset) = ep;
	*(size_t *)member(resp, claims->quantifier_offset) = n;
	len = protobuf_c_message_get_packed_size(resp);
	buf = malloc(len ?: 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(resp, buf);
	*ret = buf;
	*ret_len = len;
	return 0;
}

int dra_batch_pack(const struct dra_batch *b, uint8_t **ret, size_t *ret_len)
{
	return pack_answers(b,
			    b->kind == DRA_BATCH_PREPARE
				? &pb_(node_prepare_resources_response__descriptor)
				: &pb_(node_unprepare_resources_response__descriptor),
			    ret, ret_len);
}

void dra_batch_finish(struct dra_batch *b)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	if (!b)
		return;
	if (gc_deferred_is_gone(b->call)) {
		log_info("%s of %zu claim(s): the kubelet gave up before the answer (deadline or "
			 "cancel), dropping it",
			 b->kind == DRA_BATCH_PREPARE ? "NodePrepareResources"
						      : "NodeUnprepareResources",
			 b->req->n_claims);
		gc_deferred_answer(b->call, GRPC_STATUS_CANCELLED, NULL, 0, NULL);
		dra_batch_free(b);
		return;
	}
	r = dra_batch_pack(b, &buf, &len);
	if (r < 0)
		gc_deferred_answer(b->call, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, 0,
				   "out of memory building the answer");
	else
		gc_deferred_answer(b->call, GRPC_STATUS_OK, buf, len, NULL);
	dra_batch_free(b);
}

/* ---- messages to the loop ---------------------------------------------------------------- */

static void service_maybe_destroy(struct dra_service *s);

struct post {
	struct dra_service *s;
	struct dra_batch *b; /* or a registration status: */
	bool ok;
	char *error;
};

static void run_post(void *userdata)
{
	struct post *p = userdata;
	struct dra_service *s = p->s;

	if (p->b && s->freed) {
		gc_deferred_answer(p->b->call, GRPC_STATUS_UNAVAILABLE, NULL, 0,
				   "the DRA driver is stopping");
		dra_batch_free(p->b);
	} else if (p->b) {
		s->batch(s->userdata, p->b);
	} else if (!s->freed && s->registered) {
		s->registered(s->userdata, p->ok, p->error ? p->error : "");
	}
	free(p->error);
	free(p);
	atomic_fetch_sub(&s->posts, 1);
	service_maybe_destroy(s);
}

/* From the completion-queue thread. p is freed either way. */
static int post(struct dra_service *s, struct post *p)
{
	p->s = s;
	atomic_fetch_add(&s->posts, 1);
	if (mailbox_post(s->mb, run_post, p) < 0) {
		atomic_fetch_sub(&s->posts, 1);
		free(p->error);
		free(p);
		return -ENOMEM;
	}
	return 0;
}

/* ---- the DRA socket ---------------------------------------------------------------------- */

static int read_payload(grpc_byte_buffer *bb, grpc_slice *ret)
{
	grpc_byte_buffer_reader reader;

	if (!bb) {
		*ret = grpc_empty_slice();
		return 0;
	}
	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return -EBADMSG;
	*ret = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	return 0;
}

static int on_dra_call(void *userdata, unsigned method, grpc_byte_buffer *request,
		       struct gc_deferred *call, grpc_byte_buffer **reply, char *details,
		       size_t details_len)
{
	struct dra_service *s = userdata;
	bool prepare = method == M_PREPARE_V1 || method == M_PREPARE_V1BETA1;
	const char *what = prepare ? "NodePrepareResources" : "NodeUnprepareResources";
	struct dra_request *req = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	struct dra_batch *b;
	struct post *p;
	grpc_slice slice;
	size_t n;
	int r;

	if (read_payload(request, &slice) < 0) {
		snprintf(details, details_len, "%s: the request could not be read", what);
		return GRPC_STATUS_INVALID_ARGUMENT;
	}
	r = dra_request_decode(GRPC_SLICE_START_PTR(slice), GRPC_SLICE_LENGTH(slice), &req, &err);
	grpc_slice_unref(slice);
	if (r < 0) {
		log_warning("%s refused: %s", what, rc_error_msg(err, r));
		snprintf(details, details_len, "%s: %s", what, rc_error_msg(err, r));
		return r == -ENOMEM ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INVALID_ARGUMENT;
	}
	n = req->n_claims;
	b = dra_batch_new(prepare ? DRA_BATCH_PREPARE : DRA_BATCH_UNPREPARE, req, call);
	if (b)
		b->v1beta1 = method == M_PREPARE_V1BETA1 || method == M_UNPREPARE_V1BETA1;
	p = b ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		dra_batch_free(b);
		snprintf(details, details_len, "%s: out of memory", what);
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	}
	log_debug("%s (%s) of %zu claim(s) handed to the driver", what,
		  method == M_PREPARE_V1 || method == M_UNPREPARE_V1 ? "v1" : "v1beta1", n);
	p->b = b;
	if (post(s, p) < 0) {
		b->call = NULL;
		dra_batch_free(b);
		snprintf(details, details_len, "%s: out of memory", what);
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	}
	return GC_STATUS_DEFERRED;
}

/* ---- the registration socket ------------------------------------------------------------- */

static grpc_byte_buffer *byte_buffer_of(const void *buf, size_t len)
{
	grpc_slice slice = grpc_slice_from_copied_buffer(buf, len);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);

	grpc_slice_unref(slice);
	return bb;
}

static grpc_status_code on_reg_call(void *userdata, unsigned method, grpc_byte_buffer *request,
				    grpc_byte_buffer **reply, char *details, size_t details_len)
{
	struct dra_service *s = userdata;
	Pluginregistration__RegistrationStatus *st;
	struct post *p;
	grpc_slice slice;
	char err[160];

	if (method == M_GET_INFO) {
		log_debug("GetInfo from the plugin watcher");
		*reply = byte_buffer_of(s->info, s->info_len);
		return GRPC_STATUS_OK;
	}
	if (read_payload(request, &slice) < 0)
		return GRPC_STATUS_INVALID_ARGUMENT;
	st = pluginregistration__registration_status__unpack(NULL, GRPC_SLICE_LENGTH(slice),
							     GRPC_SLICE_START_PTR(slice));
	grpc_slice_unref(slice);
	if (!st) {
		snprintf(details, details_len, "RegistrationStatus does not parse");
		return GRPC_STATUS_INVALID_ARGUMENT;
	}
	text_escape(err, sizeof(err), st->error ? st->error : "", st->error ? strlen(st->error) : 0,
		    false);
	if (st->plugin_registered)
		log_info("the kubelet registered DRA driver %s", s->driver);
	else
		log_warning("the kubelet refused DRA driver %s: %s", s->driver,
			    *err ? err : "(no reason given)");
	p = calloc(1, sizeof(*p));
	if (p) {
		p->ok = st->plugin_registered;
		p->error = strdup(st->plugin_registered ? "" : err);
	}
	pluginregistration__registration_status__free_unpacked(st, NULL);
	if (!p || !p->error || post(s, p) < 0) {
		if (p)
			free(p->error);
		free(p);
		log_error("out of memory passing the registration status on, ignoring");
	}
	*reply = byte_buffer_of("", 0);
	return GRPC_STATUS_OK;
}

static int pack_info(struct dra_service *s)
{
	Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
	_cleanup_free_ char *endpoint = strdup(s->dra.path);

	if (!endpoint)
		return -ENOMEM;
	info.type = (char *)"DRAPlugin";
	info.name = s->driver;
	info.endpoint = endpoint;
	info.supported_versions = (char **)supported_versions;
	info.n_supported_versions = ELEMENTSOF(supported_versions);
	s->info_len = pluginregistration__plugin_info__get_packed_size(&info);
	s->info = malloc(s->info_len);
	if (!s->info)
		return -ENOMEM;
	pluginregistration__plugin_info__pack(&info, s->info);
	return 0;
}

/* ---- instances --------------------------------------------------------------------------- */

static int endpoint_start(struct endpoint *ep)
{
	struct dra_service *s = ep->s;
	bool dra = ep == &s->dra;
	struct gc_server_config c = {
	    .socket_path = ep->path,
	    .methods = dra ? dra_methods : reg_methods,
	    .n_methods = dra ? N_DRA_METHODS : N_REG_METHODS,
	    .unary = dra ? NULL : on_reg_call,
	    .unary_deferrable = dra ? on_dra_call : NULL,
	    .userdata = s,
	    .max_message = dra ? DRA_MESSAGE_MAX : REG_MESSAGE_MAX,
	    .name = dra ? "dra.sock" : s->reg_name,
	};
	int r = gc_server_start(s->rt, &c, &ep->srv);

	if (r < 0) {
		if (!ep->failing)
			log_error_errno(r, "cannot serve the %s socket %s: %s", ep->what, ep->path,
					r == -EADDRINUSE ? "another process listens there"
					: r == -EEXIST	 ? "something that is not a socket is there"
							 : strerror(-r));
		ep->failing = true;
		ep->srv = NULL;
		return r;
	}
	if (ep->failing)
		log_info("serving the %s socket %s again", ep->what, ep->path);
	ep->failing = false;
	s->live++;
	if (dra && s->has_health) {
		gc_server_publish(ep->srv, M_HEALTH_V1, s->health, s->health_len);
		gc_server_publish(ep->srv, M_HEALTH_V1ALPHA1, s->health, s->health_len);
	}
	return 0;
}

static void on_endpoint_gone(void *userdata)
{
	struct endpoint *ep = userdata;
	struct dra_service *s = ep->s;

	ep->stopping = false;
	s->live--;
	if (s->freed) {
		service_maybe_destroy(s);
		return;
	}
	if (endpoint_start(ep) == 0)
		log_info("%s socket %s served again", ep->what, ep->path);
}

/* Serves ep again when its socket is no longer the one we bound. */
static void endpoint_check(struct endpoint *ep)
{
	if (ep->s->freed || ep->stopping)
		return;
	if (!ep->srv) {
		endpoint_start(ep); /* a start failed before: try again */
		return;
	}
	if (gc_server_socket_is_current(ep->srv))
		return;
	log_warning("%s socket %s was removed or replaced: serving it again", ep->what, ep->path);
	/* The kubelet knows a plugin by its registration socket: without it, not registered. */
	if (ep == &ep->s->reg && ep->s->registered)
		ep->s->registered(ep->s->userdata, false, NULL);
	ep->stopping = true;
	gc_server_stop(ep->srv, on_endpoint_gone, ep);
	ep->srv = NULL;
}

static void on_registry_dir(void *userdata, uint32_t mask, const char *name);

static void watch_registry_dir(struct dra_service *s)
{
	int r;

	if (!s->fw || s->dir_watch > 0)
		return;
	r = fswatch_add(s->fw, s->registry_dir,
			IN_DELETE | IN_MOVED_FROM | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF |
			    IN_MOVE_SELF | IN_ONLYDIR,
			on_registry_dir, s);
	if (r > 0)
		s->dir_watch = r;
}

static void on_registry_dir(void *userdata, uint32_t mask, const char *name)
{
	struct dra_service *s = userdata;

	if (s->freed)
		return;
	if (mask & IN_IGNORED) {
		/* The dir went away: the poll watches it again once it is back. */
		fswatch_remove(s->fw, s->dir_watch);
		s->dir_watch = 0;
		return;
	}
	if (!(mask & IN_Q_OVERFLOW) && strcmp(name, s->reg_name) != 0)
		return;
	endpoint_check(&s->reg);
}

/* A lost re-send must not let the kubelet's view go stale. */
_Static_assert(2 * DRA_HEALTH_RESEND_SEC < DRA_HEALTH_TIMEOUT_SEC,
	       "the health list is re-sent at least twice within its timeout");

static void health_send(struct dra_service *s)
{
	uint64_t now = 0;

	(void)sd_event_now(s->loop, CLOCK_MONOTONIC, &now);
	s->health_sent = now;
	if (s->dra.srv) {
		size_t a = gc_server_publish(s->dra.srv, M_HEALTH_V1, s->health, s->health_len);
		size_t b =
		    gc_server_publish(s->dra.srv, M_HEALTH_V1ALPHA1, s->health, s->health_len);

		log_debug("health list sent to %zu stream(s)", a + b);
	}
}

static int on_poll(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct dra_service *s = userdata;

	/* The kubelet forgets a device's health that is not repeated (service.h). */
	if (s->has_health && usec >= s->health_sent + s->health_resend_usec)
		health_send(s);
	watch_registry_dir(s);
	endpoint_check(&s->reg);
	endpoint_check(&s->dra);
	if (sd_event_source_set_time_relative(src, POLL_USEC) < 0 ||
	    sd_event_source_set_enabled(src, SD_EVENT_ON) < 0)
		log_error("re-arming the socket poll failed: a removed socket is noticed only "
			  "through inotify now");
	return 0;
}

static void service_destroy(struct dra_service *s)
{
	free(s->driver);
	free(s->registry_dir);
	free(s->plugin_dir);
	free(s->reg_name);
	free(s->reg.path);
	free(s->dra.path);
	free(s->info);
	free(s->health);
	free(s);
}

static void service_maybe_destroy(struct dra_service *s)
{
	if (s->freed && s->live == 0 && atomic_load(&s->posts) == 0)
		service_destroy(s);
}

int dra_service_start(sd_event *loop, struct mailbox *mb, struct fswatch *fw, struct gc_runtime *rt,
		      const struct dra_service_config *cfg, struct dra_service **ret)
{
	struct dra_service *s;
	int r;

	if (!cfg->driver || !*cfg->driver || !cfg->registry_dir || cfg->registry_dir[0] != '/' ||
	    !cfg->plugin_dir || cfg->plugin_dir[0] != '/' || !cfg->batch)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->mb = mb;
	s->fw = fw;
	s->rt = rt;
	s->batch = cfg->batch;
	s->registered = cfg->registered;
	s->userdata = cfg->userdata;
	s->health_resend_usec = cfg->health_resend_usec ?: DRA_HEALTH_RESEND_SEC * 1000000ull;
	atomic_init(&s->posts, 0);
	s->driver = strdup(cfg->driver);
	s->registry_dir = strdup(cfg->registry_dir);
	s->plugin_dir = strdup(cfg->plugin_dir);
	s->reg_name = strdup_printf("%s%s", cfg->driver, REG_SUFFIX);
	s->reg = (struct endpoint){.s = s, .what = "registration"};
	s->dra = (struct endpoint){.s = s, .what = "DRA"};
	s->reg.path = strdup_printf("%s/%s%s", cfg->registry_dir, cfg->driver, REG_SUFFIX);
	s->dra.path = strdup_printf("%s/%s", cfg->plugin_dir, DRA_SOCKET_NAME);
	if (!s->driver || !s->registry_dir || !s->plugin_dir || !s->reg_name || !s->reg.path ||
	    !s->dra.path || pack_info(s) < 0) {
		service_destroy(s);
		return -ENOMEM;
	}
	/* The DRA socket first: the kubelet dials it as soon as it sees the registration. */
	r = endpoint_start(&s->dra);
	if (r >= 0) {
		r = endpoint_start(&s->reg);
		if (r < 0) {
			/* Stopping takes a loop turn; the instance goes on its own. */
			s->freed = true;
			s->dra.stopping = true;
			gc_server_stop(s->dra.srv, on_endpoint_gone, &s->dra);
			s->dra.srv = NULL;
			return r;
		}
	}
	if (r < 0) {
		service_destroy(s);
		return r;
	}
	watch_registry_dir(s);
	r = sd_event_add_time_relative(loop, &s->poll, CLOCK_MONOTONIC, POLL_USEC, 50000, on_poll,
				       s);
	if (r < 0) {
		dra_service_free(s);
		return r;
	}
	(void)sd_event_source_set_enabled(s->poll, SD_EVENT_ON);
	log_info("DRA driver %s: registration on %s, DRA service on %s", s->driver, s->reg.path,
		 s->dra.path);
	*ret = s;
	return 0;
}

void dra_service_free(struct dra_service *s)
{
	if (!s)
		return;
	s->freed = true;
	s->poll = sd_event_source_disable_unref(s->poll);
	if (s->dir_watch > 0)
		fswatch_remove(s->fw, s->dir_watch);
	s->dir_watch = 0;
	for (struct endpoint *ep = &s->reg; ep; ep = ep == &s->reg ? &s->dra : NULL)
		if (ep->srv) {
			ep->stopping = true;
			gc_server_stop(ep->srv, on_endpoint_gone, ep);
			ep->srv = NULL;
		}
	service_maybe_destroy(s);
}

/* ---- health ------------------------------------------------------------------------------ */

void dra_service_publish_health(struct dra_service *s, const struct dra_device_health *h, size_t n)
{
	V1__NodeWatchResourcesResponse resp = V1__NODE_WATCH_RESOURCES_RESPONSE__INIT;
	V1__DeviceHealth *dh = calloc(n ? n : 1, sizeof(*dh));
	V1__DeviceHealth **dp = calloc(n ? n : 1, sizeof(*dp));
	V1__DeviceIdentifier *id = calloc(n ? n : 1, sizeof(*id));
	uint8_t *buf = NULL;
	size_t len = 0;

	if (dh && dp && id) {
		for (size_t i = 0; i < n; i++) {
			v1__device_health__init(&dh[i]);
			v1__device_identifier__init(&id[i]);
			id[i].pool_name = (char *)(h[i].pool ? h[i].pool : "");
			id[i].device_name = (char *)(h[i].device ? h[i].device : "");
			dh[i].device = &id[i];
			dh[i].health = (V1__HealthStatus)h[i].health;
			dh[i].last_updated_time = h[i].last_updated;
			dh[i].health_check_timeout_seconds = DRA_HEALTH_TIMEOUT_SEC;
			dh[i].message = (char *)(h[i].message ? h[i].message : "");
			dp[i] = &dh[i];
		}
		resp.devices = dp;
		resp.n_devices = n;
		len = v1__node_watch_resources_response__get_packed_size(&resp);
		buf = malloc(len ? len : 1);
		if (buf)
			v1__node_watch_resources_response__pack(&resp, buf);
	}
	free(dh);
	free(dp);
	free(id);
	if (!buf) {
		log_error("out of memory packing the health of %zu devices: the streams keep the "
			  "previous list",
			  n);
		return;
	}
	free(s->health);
	s->health = buf;
	s->health_len = len;
	s->has_health = true;
	log_debug("health of %zu devices published", n);
	health_send(s);
}
