/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device-plugin service of one resource on gRPC core (rpc.h does the
 * plumbing): the v1beta1 methods, the snapshot they answer from, and registration.
 *
 * Registration: a Register call towards kubelet.sock once our socket is served; retried
 * with backoff when it fails; started again when a new kubelet.sock appears (a kubelet
 * restart) or when our socket had to be served again. kubelet.sock is identified by
 * inode and ctime, so a restarted kubelet is not mistaken for the old one.
 */
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "plugin.h"

#define RETRY_MIN_MS 20
#define RETRY_MAX_MS 5000
#define REGISTER_TIMEOUT_MS 12000 /* the kubelet's own dial-back timeout is 10 s */

enum {
	M_OPTIONS,
	M_LIST,
	M_PREFERRED,
	M_ALLOCATE,
	M_PRESTART,
	M_N,
};

static const struct gc_method methods[M_N] = {
    [M_OPTIONS] = {"/v1beta1.DevicePlugin/GetDevicePluginOptions", false},
    [M_LIST] = {"/v1beta1.DevicePlugin/ListAndWatch", true},
    [M_PREFERRED] = {"/v1beta1.DevicePlugin/GetPreferredAllocation", false},
    [M_ALLOCATE] = {"/v1beta1.DevicePlugin/Allocate", false},
    [M_PRESTART] = {"/v1beta1.DevicePlugin/PreStartContainer", false},
};

/* An immutable table and its packed device list, shared by calls in flight. */
struct dp_snapshot {
	unsigned refs;
	struct dp_table *table;
	uint8_t *list;
	size_t list_len;
};

struct dp_plugin {
	sd_event *loop;
	struct gc_runtime *rt;
	char *plugin_dir, *socket_name, *socket_path, *kubelet_path, *resource;
	void (*failed)(void *userdata, struct dp_plugin *p, int error);
	void *userdata;
	struct metrics *metrics;
	struct gc_server *srv;
	bool started;	   /* dp_plugin_start() ran: from then on it is kept served */
	bool stopping_old; /* an old instance is shutting down; serve again when it is gone */
	bool freeing;
	pthread_mutex_t lock;
	struct dp_snapshot *snap; /* under lock */
	/* registration (loop thread) */
	struct gc_client_call *reg;
	sd_event_source *retry;
	bool registered, want_register, waiting_logged;
	ino_t reg_ino;
	struct timespec reg_ctime;
	unsigned retry_ms;
};

/* ---- snapshots ------------------------------------------------------------------------ */

static void snap_free(struct dp_snapshot *sn)
{
	dp_table_free(sn->table);
	free(sn->list);
	free(sn);
}

static struct dp_snapshot *snap_get(struct dp_plugin *p)
{
	struct dp_snapshot *sn;

	pthread_mutex_lock(&p->lock);
	sn = p->snap;
	if (sn)
		sn->refs++;
	pthread_mutex_unlock(&p->lock);
	return sn;
}

static void snap_put(struct dp_plugin *p, struct dp_snapshot *sn)
{
	bool last;

	if (!sn)
		return;
	pthread_mutex_lock(&p->lock);
	last = --sn->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (last)
		snap_free(sn);
}

/* ---- requests --------------------------------------------------------------------------- */

static grpc_byte_buffer *pack_message(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	grpc_slice slice = grpc_slice_malloc(len);
	grpc_byte_buffer *bb;

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(slice));
	bb = grpc_raw_byte_buffer_create(&slice, 1);
	grpc_slice_unref(slice);
	return bb;
}

/*
 * protobuf-c allocates every repeated element on its own: a 4 MiB request of empty
 * strings or empty submessages unpacks into 100+ MiB. Unpacking draws from a budget
 * (each block charged with a header and malloc's overhead) and fails beyond it. 16 MiB
 * unpacks about 150,000 PCI-address IDs (protobuf-c's transient per-field records
 * included): more than the 4 MiB ListAndWatch message a kubelet accepts can carry.
 */
#define DP_UNPACK_BUDGET (16u << 20)
#define DP_UNPACK_HDR 16 /* keeps malloc's alignment */
#define DP_TRIM_OVER (256u << 10)

struct unpack_budget {
	ProtobufCAllocator a;
	size_t left;
	bool exceeded;
};

static void *budget_alloc(void *data, size_t size)
{
	struct unpack_budget *b = data;
	size_t cost = size + DP_UNPACK_HDR + 16;
	char *q;

	q = size > b->left || cost > b->left ? NULL : malloc(size + DP_UNPACK_HDR);
	if (!q) {
		b->exceeded = true;
		return NULL;
	}
	b->left -= cost;
	memcpy(q, &cost, sizeof(cost));
	return q + DP_UNPACK_HDR;
}

static void budget_free(void *data, void *ptr)
{
	struct unpack_budget *b = data;
	char *q = ptr;
	size_t cost;

	if (!q)
		return;
	q -= DP_UNPACK_HDR;
	memcpy(&cost, q, sizeof(cost));
	b->left += cost;
	free(q);
}

static void budget_init(struct unpack_budget *b)
{
	*b = (struct unpack_budget){
	    .a = {.alloc = budget_alloc, .free = budget_free, .allocator_data = b},
	    .left = DP_UNPACK_BUDGET,
	};
}

/*
 * Unpacks a request payload (NULL payload = empty message) within budget b. NULL when it
 * does not parse or b->exceeded, or when a string holds a NUL byte (protobuf-c would cut
 * it there): then nul gets that string, escaped. Free with
 * protobuf_c_message_free_unpacked(m, &b->a).
 */
static ProtobufCMessage *unpack_payload(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d,
					struct unpack_budget *b, char *nul, size_t nul_size)
{
	grpc_byte_buffer_reader reader;
	ProtobufCMessage *m;
	grpc_slice slice;
	const uint8_t *s;
	size_t n;
	int r;

	nul[0] = '\0';
	if (!bb)
		return protobuf_c_message_unpack(d, &b->a, 0, (const uint8_t *)"");
	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return NULL;
	slice = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	m = protobuf_c_message_unpack(d, &b->a, GRPC_SLICE_LENGTH(slice),
				      GRPC_SLICE_START_PTR(slice));
	r = m ? rpc_wire_find_nul(d, GRPC_SLICE_START_PTR(slice), GRPC_SLICE_LENGTH(slice), &s, &n)
	      : 0;
	if (r > 0) {
		/* Enough of it to recognise the ID, never a log line's worth. */
		size_t shown = n < 64 ? n : 64;

		if (text_escape(nul, nul_size - 4, (const char *)s, shown, true) >= nul_size - 4 ||
		    shown < n)
			strcat(nul, "...");
	}
	if (r != 0) {
		protobuf_c_message_free_unpacked(m, &b->a);
		m = NULL;
	}
	grpc_slice_unref(slice);
	return m;
}

static void log_allocated(const struct dp_plugin *p, const V1beta1__AllocateResponse *resp)
{
	for (size_t i = 0; i < resp->n_container_responses; i++)
		log_info("%s: Allocate: container %zu gets %s", p->resource, i,
			 resp->container_responses[i]->envs[0]->value);
}

static void log_preferred(const V1beta1__PreferredAllocationRequest *req,
			  const V1beta1__PreferredAllocationResponse *resp)
{
	if (log_get_level() < LOG_LVL_DEBUG)
		return;
	for (size_t i = 0; i < resp->n_container_responses; i++) {
		const V1beta1__ContainerPreferredAllocationResponse *o =
		    resp->container_responses[i];

		log_debug("GetPreferredAllocation: container %zu: %zu of %zu IDs, first %s", i,
			  o->n_deviceids, req->container_requests[i]->n_available_deviceids,
			  o->n_deviceids ? o->deviceids[0] : "-");
	}
}

/* Why unpack_payload() gave no request. */
static grpc_status_code unpack_failed(const char *nul, const struct unpack_budget *budget,
				      struct rc_error **err)
{
	if (nul[0])
		rc_error_set(err, -EINVAL, "device ID \"%s\" holds a NUL byte", nul);
	else if (budget->exceeded)
		rc_error_set(err, -E2BIG, "request does not fit the %u MiB unpack budget",
			     DP_UNPACK_BUDGET >> 20);
	else
		rc_error_set(err, -EBADMSG, "request does not parse");
	return budget->exceeded && !nul[0] ? GRPC_STATUS_RESOURCE_EXHAUSTED
					   : GRPC_STATUS_INVALID_ARGUMENT;
}

/* Allocate and GetPreferredAllocation: unpack within a budget, answer from sn's table. */
static grpc_status_code handle_request(struct dp_plugin *p, bool alloc, struct dp_snapshot *sn,
				       grpc_byte_buffer *payload, grpc_byte_buffer **reply,
				       struct rc_error **err)
{
	const char *name = alloc ? "Allocate" : "GetPreferredAllocation";
	struct unpack_budget budget;
	char nul[96];
	ProtobufCMessage *req;
	union {
		V1beta1__AllocateResponse *alloc;
		V1beta1__PreferredAllocationResponse *pref;
	} resp = {NULL};
	grpc_status_code code = GRPC_STATUS_OK;
	int r;

	budget_init(&budget);
	req = unpack_payload(payload,
			     alloc ? &v1beta1__allocate_request__descriptor
				   : &v1beta1__preferred_allocation_request__descriptor,
			     &budget, nul, sizeof(nul));
	if (!req) {
		code = unpack_failed(nul, &budget, err);
		log_warning("%s: %s rejected: %s", p->resource, name, rc_error_msg(*err, -EINVAL));
		return code;
	}
	if (alloc)
		r = dp_allocate(sn->table, (V1beta1__AllocateRequest *)req, &resp.alloc, err);
	else
		r = dp_preferred_allocation(sn->table, (V1beta1__PreferredAllocationRequest *)req,
					    &resp.pref, err);
	if (r < 0) {
		log_warning("%s: %s rejected: %s", p->resource, name, rc_error_msg(*err, r));
		code = r == -EINVAL ? GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_RESOURCE_EXHAUSTED;
	} else {
		ProtobufCMessage *m = alloc ? &resp.alloc->base : &resp.pref->base;

		if (alloc)
			log_allocated(p, resp.alloc);
		else
			log_preferred((V1beta1__PreferredAllocationRequest *)req, resp.pref);
		*reply = pack_message(m);
		protobuf_c_message_free_unpacked(m, NULL);
	}
	protobuf_c_message_free_unpacked(req, &budget.a);
	return code;
}

static grpc_status_code on_unary(void *userdata, unsigned method, grpc_byte_buffer *payload,
				 grpc_byte_buffer **reply, char *err, size_t errlen)
{
	struct dp_plugin *p = userdata;
	struct dp_snapshot *sn;
	grpc_status_code code;
	uint64_t t0;
	size_t len = 0;

	switch (method) {
	case M_OPTIONS: {
		V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

		o.pre_start_required = false;
		o.get_preferred_allocation_available = true;
		log_debug("%s: GetDevicePluginOptions", p->resource);
		*reply = pack_message(&o.base);
		return GRPC_STATUS_OK;
	}
	case M_PRESTART: {
		V1beta1__PreStartContainerResponse o = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;

		*reply = pack_message(&o.base);
		return GRPC_STATUS_OK;
	}
	case M_PREFERRED:
	case M_ALLOCATE:
		break;
	default:
		snprintf(err, errlen, "method not implemented by rdma-cdi");
		return GRPC_STATUS_UNIMPLEMENTED;
	}
	t0 = metrics_now_usec();
	sn = snap_get(p);
	if (sn) {
		_cleanup_rc_error_ struct rc_error *e = NULL;

		len = payload ? grpc_byte_buffer_length(payload) : 0;
		code = handle_request(p, method == M_ALLOCATE, sn, payload, reply, &e);
		snap_put(p, sn);
		/* The status details the kubelet shows. */
		if (e)
			snprintf(err, errlen, "%s", e->msg);
	} else {
		snprintf(err, errlen, "no device table yet");
		code = GRPC_STATUS_UNAVAILABLE;
	}
	metrics_call(p->metrics, p->resource,
		     method == M_ALLOCATE ? METRICS_ALLOCATE : METRICS_PREFERRED,
		     code == GRPC_STATUS_OK, metrics_now_usec() - t0);
	/* A big request leaves MiB of freed heap behind that glibc keeps: give them back. */
	if (len > DP_TRIM_OVER)
		malloc_trim(0);
	return code;
}

/* ---- publishing ------------------------------------------------------------------------- */

int dp_plugin_publish(struct dp_plugin *p, struct dp_table *t, bool force)
{
	V1beta1__ListAndWatchResponse *msg = NULL;
	struct dp_snapshot *sn, *old;
	size_t healthy = 0, n_streams = 0;
	bool changed;
	int r;

	r = dp_list_response(t, &msg);
	if (r < 0) {
		dp_table_free(t);
		return r;
	}
	sn = calloc(1, sizeof(*sn));
	if (sn)
		sn->list_len = protobuf_c_message_get_packed_size(&msg->base);
	if (sn)
		sn->list = malloc(sn->list_len ?: 1);
	if (!sn || !sn->list) {
		free(sn);
		protobuf_c_message_free_unpacked(&msg->base, NULL);
		dp_table_free(t);
		return -ENOMEM;
	}
	protobuf_c_message_pack(&msg->base, sn->list);
	protobuf_c_message_free_unpacked(&msg->base, NULL);
	sn->table = t;
	sn->refs = 1;
	for (size_t i = 0; i < t->n_ids; i++)
		healthy += t->hcas[t->ids[i].hca].healthy;

	pthread_mutex_lock(&p->lock);
	old = p->snap;
	changed = force || !old || old->list_len != sn->list_len ||
		  memcmp(old->list, sn->list, sn->list_len) != 0;
	p->snap = sn;
	pthread_mutex_unlock(&p->lock);
	if (changed && p->srv)
		n_streams = gc_server_publish(p->srv, M_LIST, sn->list, sn->list_len);
	snap_put(p, old);
	if (changed)
		log_info("%s: advertising %zu device IDs (%zu healthy) on %zu ListAndWatch "
			 "stream(s)",
			 p->resource, t->n_ids, healthy, n_streams);
	return changed;
}

/* ---- registration ----------------------------------------------------------------------- */

static void try_register(struct dp_plugin *p, bool restart);

/* Whether the kubelet has us, and rdma_cdi_kubelet_registered with it: 0 from the moment
 * the registration is known lost (our socket or kubelet.sock went, a new kubelet). */
static void set_registered(struct dp_plugin *p, bool registered)
{
	p->registered = registered;
	metrics_kubelet_registered(p->metrics, p->resource, registered);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	try_register(userdata, true);
	return 0;
}

static void schedule_retry(struct dp_plugin *p)
{
	int r;

	log_info("%s: retrying registration in %u ms", p->resource, p->retry_ms);
	sd_event_source_disable_unref(p->retry);
	p->retry = NULL;
	r = sd_event_add_time_relative(p->loop, &p->retry, CLOCK_MONOTONIC,
				       (uint64_t)p->retry_ms * 1000, 1000, on_retry, p);
	if (r < 0)
		log_error_errno(r, "%s: arming the registration retry failed", p->resource);
	p->retry_ms = p->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : p->retry_ms * 2;
}

static void on_registered(void *userdata, grpc_status_code status, const char *details,
			  grpc_byte_buffer *reply)
{
	struct dp_plugin *p = userdata;

	p->reg = NULL;
	if (p->want_register) {
		p->want_register = false;
		try_register(p, true);
		return;
	}
	metrics_registration(p->metrics, p->resource, status == GRPC_STATUS_OK);
	if (status == GRPC_STATUS_OK) {
		log_info("registered %s with the kubelet (%s)", p->resource, p->kubelet_path);
		set_registered(p, true);
		p->retry_ms = RETRY_MIN_MS;
		return;
	}
	{
		char buf[160];

		log_warning("%s: Register with %s failed: status %d: %s", p->resource,
			    p->kubelet_path, (int)status,
			    text_quote(buf, sizeof(buf), details, details ? strlen(details) : 0));
	}
	set_registered(p, false);
	schedule_retry(p);
}

static int start_register(struct dp_plugin *p)
{
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;
	int r;

	o.pre_start_required = false;
	o.get_preferred_allocation_available = true;
	req.version = (char *)"v1beta1";
	req.endpoint = p->socket_name;
	req.resource_name = p->resource;
	req.options = &o;
	len = protobuf_c_message_get_packed_size(&req.base);
	buf = malloc(len ?: 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(&req.base, buf);
	r = gc_client_call(p->rt, p->kubelet_path, "/v1beta1.Registration/Register", buf, len,
			   REGISTER_TIMEOUT_MS, on_registered, p, &p->reg);
	if (r < 0)
		return r;
	log_info("registering %s with the kubelet at %s", p->resource, p->kubelet_path);
	return 0;
}

/* Starts a Register call when kubelet.sock is there; restart = even if that kubelet
 * already has us (a new server instance needs a new registration). */
static void try_register(struct dp_plugin *p, bool restart)
{
	struct stat st;
	int r;

	if (!p->srv)
		return; /* registered once the socket is served again */
	r = lstat(p->kubelet_path, &st) < 0 ? -errno : S_ISSOCK(st.st_mode) ? 0 : -ENOTSOCK;
	if (r < 0) {
		if (!p->waiting_logged)
			log_info("%s: waiting for the kubelet: %s %s", p->resource, p->kubelet_path,
				 r == -ENOENT	  ? "does not exist yet"
				 : r == -ENOTSOCK ? "is not a socket"
						  : strerror(-r));
		p->waiting_logged = true;
		set_registered(p, false);
		return;
	}
	p->waiting_logged = false;
	if (!restart && st.st_ino == p->reg_ino && st.st_ctim.tv_sec == p->reg_ctime.tv_sec &&
	    st.st_ctim.tv_nsec == p->reg_ctime.tv_nsec && (p->registered || p->reg))
		return; /* this kubelet has us, or an attempt on it is under way */
	p->reg_ino = st.st_ino;
	p->reg_ctime = st.st_ctim;
	if (p->reg) {
		/* An attempt towards an older socket is in flight: replace it. */
		gc_client_abandon(p->reg);
		p->reg = NULL;
	}
	p->want_register = false;
	set_registered(p, false);
	sd_event_source_disable_unref(p->retry);
	p->retry = NULL;
	r = start_register(p);
	if (r < 0) {
		log_error_errno(r, "%s: starting the Register call failed", p->resource);
		schedule_retry(p);
	}
}

static void plugin_release(void *userdata);

/* ---- serving ---------------------------------------------------------------------------- */

static int serve(struct dp_plugin *p)
{
	int r = gc_server_start(p->rt,
				&(struct gc_server_config){
				    .socket_path = p->socket_path,
				    .methods = methods,
				    .n_methods = M_N,
				    .unary = on_unary,
				    .userdata = p,
				    .max_message = (int)DP_MAX_MESSAGE,
				    .name = p->resource,
				},
				&p->srv);

	if (r == -EADDRINUSE)
		return log_error_errno(r, "%s answers connections: another device plugin serves it",
				       p->socket_path);
	if (r == -EEXIST)
		return log_error_errno(r, "%s exists and is not a socket, refusing to replace it",
				       p->socket_path);
	if (r < 0)
		return log_error_errno(r, "cannot serve on %s", p->socket_path);
	log_info("serving device plugin API v1beta1 for %s on %s", p->resource, p->socket_path);
	pthread_mutex_lock(&p->lock);
	if (p->snap)
		gc_server_publish(p->srv, M_LIST, p->snap->list, p->snap->list_len);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* Serves again after the old instance went; a plugin dir that is gone for now is waited
 * for (the daemon reconciles once it is back), anything else is the daemon's to judge. */
static void serve_again(struct dp_plugin *p)
{
	struct stat st;
	int r;

	if (stat(p->plugin_dir, &st) < 0 && errno == ENOENT) {
		log_info("%s: %s does not exist: serving once it is back", p->resource,
			 p->plugin_dir);
		return;
	}
	r = serve(p);
	if (r < 0) {
		if (p->failed)
			p->failed(p->userdata, p, r);
		return;
	}
	try_register(p, true);
}

static void on_old_stopped(void *userdata)
{
	struct dp_plugin *p = userdata;

	p->stopping_old = false;
	if (p->freeing) {
		plugin_release(p);
		return;
	}
	serve_again(p);
}

void dp_plugin_reconcile(struct dp_plugin *p, bool kubelet_event)
{
	if (p->stopping_old || !p->started)
		return; /* serving again is under way, or not yet served at all */
	if (!p->srv) {
		serve_again(p); /* the plugin dir was gone and may be back */
		return;
	}
	if (!gc_server_socket_is_current(p->srv)) {
		log_info("%s was removed (kubelet restart?): serving again", p->socket_path);
		set_registered(p, false);
		if (p->reg) {
			gc_client_abandon(p->reg);
			p->reg = NULL;
		}
		p->stopping_old = true;
		gc_server_stop(p->srv, on_old_stopped, p);
		p->srv = NULL;
		return;
	}
	if (kubelet_event) {
		log_info("%s appeared: registering %s", p->kubelet_path, p->resource);
		try_register(p, false);
	}
}

int dp_plugin_start(struct dp_plugin *p)
{
	int r = serve(p);

	p->started = true;
	if (r < 0)
		return r;
	try_register(p, true);
	return 0;
}

/* ---- lifetime --------------------------------------------------------------------------- */

int dp_plugin_new(sd_event *loop, struct gc_runtime *rt, const struct dp_plugin_config *cfg,
		  struct dp_plugin **ret)
{
	struct dp_plugin *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	p->loop = sd_event_ref(loop);
	p->rt = rt;
	p->failed = cfg->failed;
	p->userdata = cfg->userdata;
	p->metrics = cfg->metrics;
	p->retry_ms = RETRY_MIN_MS;
	p->plugin_dir = strdup(cfg->plugin_dir);
	p->socket_name = strdup(cfg->socket_name);
	p->resource = strdup(cfg->resource);
	p->socket_path = strdup_printf("%s/%s", cfg->plugin_dir, cfg->socket_name);
	p->kubelet_path = strdup_printf("%s/%s", cfg->plugin_dir, BRIDGE_KUBELET_SOCKET);
	if (!p->plugin_dir || !p->socket_name || !p->resource || !p->socket_path ||
	    !p->kubelet_path) {
		p->freeing = true;
		dp_plugin_free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

static void plugin_release(void *userdata)
{
	struct dp_plugin *p = userdata;

	if (p->snap)
		snap_free(p->snap);
	sd_event_unref(p->loop);
	pthread_mutex_destroy(&p->lock);
	free(p->plugin_dir);
	free(p->socket_name);
	free(p->socket_path);
	free(p->kubelet_path);
	free(p->resource);
	free(p);
}

void dp_plugin_free(struct dp_plugin *p)
{
	if (!p)
		return;
	p->freeing = true;
	p->failed = NULL;
	if (p->resource) /* its pool is gone */
		metrics_kubelet_registered(p->metrics, p->resource, -1);
	gc_client_abandon(p->reg);
	p->reg = NULL;
	sd_event_source_disable_unref(p->retry);
	p->retry = NULL;
	if (p->stopping_old) {
		/* on_old_stopped must not serve again: it releases instead. */
		return;
	}
	if (p->srv) {
		gc_server_stop(p->srv, plugin_release, p);
		p->srv = NULL;
		return;
	}
	plugin_release(p);
}
