/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The DevicePlugin server and the Registration client on gRPC core.
 *
 * One completion queue, drained by one thread (cq_thread), carries everything: requested
 * calls of the current server instance, ListAndWatch sends and closes, the shutdown of an
 * old instance and the Register call. Every tag is a struct dp_tag whose fn runs on that
 * thread. The control thread (bridge.c) creates and shuts down instances and publishes
 * tables; it never waits for the queue except for an instance shutdown, which the queue
 * thread completes on its own, so the kubelet's calls back into us during Register are
 * always answered.
 *
 * A kubelet restart deletes our socket; gRPC cannot re-add a port to a started server,
 * so serving again means a new instance. The old one must be gone before the new one
 * binds: gRPC unlinks the socket path when a listener shuts down.
 */
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "server.h"

#define DP_STREAMS_MAX 16	     /* concurrent ListAndWatch streams; the kubelet needs 1 */
#define DP_REGISTER_TIMEOUT_MS 12000 /* the kubelet's own dial-back timeout is 10 s */
#define DP_SHUTDOWN_WAIT_S 10

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

enum dp_method {
	M_OPTIONS,
	M_LIST,
	M_PREFERRED,
	M_ALLOCATE,
	M_PRESTART,
	M_REGISTERED,
	M_UNKNOWN = M_REGISTERED
};

static const char *const method_paths[M_REGISTERED] = {
    [M_OPTIONS] = "/v1beta1.DevicePlugin/GetDevicePluginOptions",
    [M_LIST] = "/v1beta1.DevicePlugin/ListAndWatch",
    [M_PREFERRED] = "/v1beta1.DevicePlugin/GetPreferredAllocation",
    [M_ALLOCATE] = "/v1beta1.DevicePlugin/Allocate",
    [M_PRESTART] = "/v1beta1.DevicePlugin/PreStartContainer",
};

struct dp_tag {
	void (*fn)(struct dp_tag *tag, bool ok);
};

/* An immutable table and its packed device list, shared by calls in flight. */
struct dp_snapshot {
	unsigned refs;
	struct dp_table *table;
	grpc_slice list;
	uint64_t gen;
};

/* One grpc_server; replaced when the socket must be bound again. */
struct dp_inst {
	struct dp_tag shutdown_tag;
	struct dp_server *s;
	grpc_server *server;
	void *methods[M_REGISTERED];
	unsigned refs; /* control thread + each requested call + pending shutdown */
	/* under lock: stopping = no new requested calls; the control thread destroys the
	 * server once shutdown_done, unless it gave up waiting (abandoned). */
	bool stopping, shutdown_done, abandoned;
};

/* A requested call, then (for unary methods) its answer. */
struct dp_call {
	struct dp_tag tag;
	struct dp_inst *inst;
	enum dp_method m;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_call_details details;
	grpc_byte_buffer *payload;
	grpc_byte_buffer *reply;
	grpc_slice status_details;
	int cancelled;
};

struct dp_stream {
	struct dp_tag send_tag, close_tag;
	struct dp_server *s;
	grpc_call *call;
	grpc_byte_buffer *buf;
	uint64_t sent_gen;
	unsigned id;
	bool sending, closed, sent_metadata;
	int cancelled;
	struct dp_stream *prev, *next;
};

struct dp_register {
	struct dp_tag tag;
	struct dp_server *s;
	grpc_channel *channel;
	grpc_call *call;
	grpc_metadata_array initial_md, trailing_md;
	grpc_byte_buffer *send, *recv;
	grpc_status_code status;
	grpc_slice details;
};

struct dp_server {
	struct dp_server_config cfg;
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started, grpc_inited;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock: */
	struct dp_inst *inst;
	struct dp_snapshot *snap;
	struct dp_stream *streams;
	size_t n_streams;
	unsigned next_stream_id;
	struct dp_register *reg;
	int reg_result;
	/* control thread only: */
	bool sock_bound;
	dev_t sock_dev;
	ino_t sock_ino;
};

static void *cq_thread(void *arg)
{
	struct dp_server *s = arg;

	for (;;) {
		grpc_event ev =
		    grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct dp_tag *tag = ev.tag;

			tag->fn(tag, ev.success != 0);
		}
	}
	return NULL;
}

/* ---- snapshots ------------------------------------------------------------------ */

static void snap_free(struct dp_snapshot *sn)
{
	dp_table_free(sn->table);
	grpc_slice_unref(sn->list);
	free(sn);
}

static struct dp_snapshot *snap_get(struct dp_server *s)
{
	struct dp_snapshot *sn;

	pthread_mutex_lock(&s->lock);
	sn = s->snap;
	if (sn)
		sn->refs++;
	pthread_mutex_unlock(&s->lock);
	return sn;
}

static void snap_put(struct dp_server *s, struct dp_snapshot *sn)
{
	bool last;

	if (!sn)
		return;
	pthread_mutex_lock(&s->lock);
	last = --sn->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		snap_free(sn);
}

/* ---- helpers -------------------------------------------------------------------- */

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
	char *p;

	p = size > b->left || cost > b->left ? NULL : malloc(size + DP_UNPACK_HDR);
	if (!p) {
		b->exceeded = true;
		return NULL;
	}
	b->left -= cost;
	memcpy(p, &cost, sizeof(cost));
	return p + DP_UNPACK_HDR;
}

static void budget_free(void *data, void *ptr)
{
	struct unpack_budget *b = data;
	char *p = ptr;
	size_t cost;

	if (!p)
		return;
	p -= DP_UNPACK_HDR;
	memcpy(&cost, p, sizeof(cost));
	b->left += cost;
	free(p);
}

static void budget_init(struct unpack_budget *b)
{
	*b = (struct unpack_budget){
	    .a = {.alloc = budget_alloc, .free = budget_free, .allocator_data = b},
	    .left = DP_UNPACK_BUDGET,
	};
}

/* Unpacks a request payload (NULL payload = empty message) within budget b. NULL when it
 * does not parse or b->exceeded. Free with protobuf_c_message_free_unpacked(m, &b->a). */
static ProtobufCMessage *unpack_payload(grpc_byte_buffer *bb, const ProtobufCMessageDescriptor *d,
					struct unpack_budget *b)
{
	grpc_byte_buffer_reader reader;
	ProtobufCMessage *m;
	grpc_slice slice;

	if (!bb)
		return protobuf_c_message_unpack(d, &b->a, 0, (const uint8_t *)"");
	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return NULL;
	slice = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	m = protobuf_c_message_unpack(d, &b->a, GRPC_SLICE_LENGTH(slice),
				      GRPC_SLICE_START_PTR(slice));
	grpc_slice_unref(slice);
	return m;
}

static void inst_unref(struct dp_inst *inst)
{
	struct dp_server *s = inst->s;
	bool last;

	pthread_mutex_lock(&s->lock);
	last = --inst->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		free(inst);
}

/* ---- unary calls ---------------------------------------------------------------- */

static void call_free(struct dp_call *c)
{
	if (c->call)
		grpc_call_unref(c->call);
	grpc_metadata_array_destroy(&c->md);
	if (c->m == M_UNKNOWN)
		grpc_call_details_destroy(&c->details);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->reply)
		grpc_byte_buffer_destroy(c->reply);
	grpc_slice_unref(c->status_details);
	free(c);
}

static void on_request(struct dp_tag *tag, bool ok);

/* Asks gRPC for the next call of method m on inst. */
static void request_call(struct dp_inst *inst, enum dp_method m)
{
	struct dp_server *s = inst->s;
	struct dp_call *c = calloc(1, sizeof(*c));
	grpc_call_error e;

	if (!c) {
		log_error(
		    "out of memory requesting the next %s call, method disabled until re-serve",
		    m == M_UNKNOWN ? "unknown" : method_paths[m]);
		return;
	}
	c->tag.fn = on_request;
	c->inst = inst;
	c->m = m;
	c->status_details = grpc_empty_slice();
	grpc_metadata_array_init(&c->md);
	/* Under the lock, so the server cannot be destroyed meanwhile. */
	pthread_mutex_lock(&s->lock);
	if (inst->stopping) {
		pthread_mutex_unlock(&s->lock);
		call_free(c);
		return;
	}
	inst->refs++;
	if (m == M_UNKNOWN) {
		grpc_call_details_init(&c->details);
		e = grpc_server_request_call(inst->server, &c->call, &c->details, &c->md, s->cq,
					     s->cq, &c->tag);
	} else {
		e = grpc_server_request_registered_call(inst->server, inst->methods[m], &c->call,
							&c->deadline, &c->md, &c->payload, s->cq,
							s->cq, &c->tag);
	}
	pthread_mutex_unlock(&s->lock);
	if (e != GRPC_CALL_OK) {
		log_error("requesting calls failed (grpc_call_error %d)", (int)e);
		call_free(c);
		inst_unref(inst);
	}
}

static void on_call_done(struct dp_tag *tag, bool ok)
{
	call_free(container_of(tag, struct dp_call, tag));
}

static void answer(struct dp_call *c, grpc_status_code code, const char *details)
{
	grpc_op ops[4];
	size_t n = 0;
	grpc_call_error e;

	memset(ops, 0, sizeof(ops));
	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (code == GRPC_STATUS_OK && c->reply) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->reply;
	}
	if (details)
		c->status_details = grpc_slice_from_copied_string(details);
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details = details ? &c->status_details : NULL;
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	c->tag.fn = on_call_done;
	e = grpc_call_start_batch(c->call, ops, n, &c->tag, NULL);
	if (e != GRPC_CALL_OK) {
		log_error("answering a call failed (grpc_call_error %d)", (int)e);
		call_free(c);
	}
}

static void log_allocated(const V1beta1__AllocateResponse *resp)
{
	for (size_t i = 0; i < resp->n_container_responses; i++)
		log_info("Allocate: container %zu gets %s", i,
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

/* Allocate and GetPreferredAllocation: unpack within a budget, answer from sn's table. */
static void handle_request(struct dp_call *c, struct dp_snapshot *sn)
{
	bool alloc = c->m == M_ALLOCATE;
	const char *name = alloc ? "Allocate" : "GetPreferredAllocation";
	struct unpack_budget budget;
	ProtobufCMessage *req;
	union {
		V1beta1__AllocateResponse *alloc;
		V1beta1__PreferredAllocationResponse *pref;
	} resp = {NULL};
	char err[256];
	int r;

	budget_init(&budget);
	req = unpack_payload(c->payload,
			     alloc ? &v1beta1__allocate_request__descriptor
				   : &v1beta1__preferred_allocation_request__descriptor,
			     &budget);
	if (!req) {
		if (budget.exceeded)
			snprintf(err, sizeof(err), "request does not fit the %u MiB unpack budget",
				 DP_UNPACK_BUDGET >> 20);
		else
			snprintf(err, sizeof(err), "request does not parse");
		log_warning("%s rejected: %s", name, err);
		answer(c,
		       budget.exceeded ? GRPC_STATUS_RESOURCE_EXHAUSTED
				       : GRPC_STATUS_INVALID_ARGUMENT,
		       err);
		return;
	}
	if (alloc)
		r = dp_allocate(sn->table, (V1beta1__AllocateRequest *)req, &resp.alloc, err,
				sizeof(err));
	else
		r = dp_preferred_allocation(sn->table, (V1beta1__PreferredAllocationRequest *)req,
					    &resp.pref, err, sizeof(err));
	if (r < 0) {
		log_warning("%s rejected: %s", name, err);
		answer(c,
		       r == -EINVAL ? GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_RESOURCE_EXHAUSTED,
		       err);
	} else {
		ProtobufCMessage *m = alloc ? &resp.alloc->base : &resp.pref->base;

		if (alloc)
			log_allocated(resp.alloc);
		else
			log_preferred((V1beta1__PreferredAllocationRequest *)req, resp.pref);
		c->reply = pack_message(m);
		answer(c, GRPC_STATUS_OK, NULL);
		protobuf_c_message_free_unpacked(m, NULL);
	}
	protobuf_c_message_free_unpacked(req, &budget.a);
}

static void stream_open(struct dp_server *s, struct dp_call *c);

static void on_request(struct dp_tag *tag, bool ok)
{
	struct dp_call *c = container_of(tag, struct dp_call, tag);
	struct dp_inst *inst = c->inst;
	struct dp_server *s = inst->s;
	struct dp_snapshot *sn;
	size_t len;

	if (!ok) {
		/* The instance is shutting down: no more calls of this method. */
		call_free(c);
		inst_unref(inst);
		return;
	}
	/* Keep one call of each method requested; a shut-down server fails it at once. */
	request_call(inst, c->m);
	inst_unref(inst);
	c->inst = NULL;

	switch (c->m) {
	case M_OPTIONS: {
		V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

		o.pre_start_required = false;
		o.get_preferred_allocation_available = true;
		log_debug("GetDevicePluginOptions");
		c->reply = pack_message(&o.base);
		answer(c, GRPC_STATUS_OK, NULL);
		return;
	}
	case M_PRESTART: {
		V1beta1__PreStartContainerResponse o = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;

		c->reply = pack_message(&o.base);
		answer(c, GRPC_STATUS_OK, NULL);
		return;
	}
	case M_LIST:
		stream_open(s, c);
		return;
	case M_UNKNOWN:
		log_debug("call of unknown method answered UNIMPLEMENTED");
		answer(c, GRPC_STATUS_UNIMPLEMENTED, "method not implemented by rdma-cdi");
		return;
	default:
		break;
	}

	sn = snap_get(s);
	if (!sn) {
		answer(c, GRPC_STATUS_UNAVAILABLE, "no device table yet");
		return;
	}
	len = c->payload ? grpc_byte_buffer_length(c->payload) : 0;
	handle_request(c, sn);
	snap_put(s, sn);
	/* A big request leaves MiB of freed heap behind that glibc keeps: give them back. */
	if (len > DP_TRIM_OVER)
		malloc_trim(0);
}

/* ---- ListAndWatch streams --------------------------------------------------------- */

static void stream_maybe_free_locked(struct dp_stream *st)
{
	struct dp_server *s = st->s;

	if (!st->closed || st->sending)
		return;
	if (st->prev)
		st->prev->next = st->next;
	else
		s->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	s->n_streams--;
	grpc_call_unref(st->call);
	free(st);
}

/* Sends the current list when this stream has not seen it and nothing is in flight. */
static void stream_send_locked(struct dp_stream *st)
{
	struct dp_server *s = st->s;
	grpc_op ops[2];
	size_t n = 0;
	grpc_call_error e;

	if (st->sending || st->closed || !s->snap || st->sent_gen == s->snap->gen)
		return;
	memset(ops, 0, sizeof(ops));
	if (!st->sent_metadata)
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	st->buf = grpc_raw_byte_buffer_create(&s->snap->list, 1);
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = st->buf;
	e = grpc_call_start_batch(st->call, ops, n, &st->send_tag, NULL);
	if (e != GRPC_CALL_OK) {
		log_error("ListAndWatch stream %u: send failed (grpc_call_error %d), ending it",
			  st->id, (int)e);
		grpc_byte_buffer_destroy(st->buf);
		st->buf = NULL;
		grpc_call_cancel(st->call, NULL);
		return;
	}
	st->sent_metadata = true;
	st->sending = true;
	st->sent_gen = s->snap->gen;
}

static void on_stream_sent(struct dp_tag *tag, bool ok)
{
	struct dp_stream *st = container_of(tag, struct dp_stream, send_tag);
	struct dp_server *s = st->s;

	pthread_mutex_lock(&s->lock);
	grpc_byte_buffer_destroy(st->buf);
	st->buf = NULL;
	st->sending = false;
	if (ok)
		stream_send_locked(st); /* a newer list arrived meanwhile */
	stream_maybe_free_locked(st);
	pthread_mutex_unlock(&s->lock);
}

static void on_stream_closed(struct dp_tag *tag, bool ok)
{
	struct dp_stream *st = container_of(tag, struct dp_stream, close_tag);
	struct dp_server *s = st->s;
	unsigned id = st->id;
	size_t n;

	pthread_mutex_lock(&s->lock);
	st->closed = true;
	stream_maybe_free_locked(st);
	n = s->n_streams;
	pthread_mutex_unlock(&s->lock);
	log_info("ListAndWatch stream %u closed by the peer or shutdown (%zu left)", id, n);
}

static void stream_open(struct dp_server *s, struct dp_call *c)
{
	struct dp_stream *st;
	grpc_op op;
	unsigned id;
	size_t n;

	pthread_mutex_lock(&s->lock);
	if (s->n_streams >= DP_STREAMS_MAX) {
		pthread_mutex_unlock(&s->lock);
		log_warning("ListAndWatch refused: %d streams already open", DP_STREAMS_MAX);
		answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "too many ListAndWatch streams");
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		pthread_mutex_unlock(&s->lock);
		answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	st->s = s;
	st->call = c->call;
	c->call = NULL;
	st->send_tag.fn = on_stream_sent;
	st->close_tag.fn = on_stream_closed;
	st->id = id = ++s->next_stream_id;
	st->next = s->streams;
	if (s->streams)
		s->streams->prev = st;
	s->streams = st;
	n = ++s->n_streams;

	/* Posted first, so a kubelet that goes away shows up as an event. */
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &st->cancelled;
	if (grpc_call_start_batch(st->call, &op, 1, &st->close_tag, NULL) != GRPC_CALL_OK) {
		st->closed = true;
		stream_maybe_free_locked(st);
		pthread_mutex_unlock(&s->lock);
		log_error("ListAndWatch stream could not be started");
		call_free(c);
		return;
	}
	stream_send_locked(st);
	pthread_mutex_unlock(&s->lock);
	log_info("ListAndWatch stream %u opened (%zu active)", id, n);
	call_free(c);
}

/* ---- instances ------------------------------------------------------------------ */

static void on_shutdown(struct dp_tag *tag, bool ok)
{
	struct dp_inst *inst = container_of(tag, struct dp_inst, shutdown_tag);
	struct dp_server *s = inst->s;

	pthread_mutex_lock(&s->lock);
	inst->shutdown_done = true;
	if (inst->abandoned) {
		grpc_server_destroy(inst->server);
		inst->server = NULL;
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	inst_unref(inst);
}

static void stop_serving(struct dp_server *s)
{
	struct dp_inst *inst;
	struct timespec until;
	bool done;

	pthread_mutex_lock(&s->lock);
	inst = s->inst;
	s->inst = NULL;
	if (inst) {
		inst->refs++; /* for the shutdown tag */
		inst->stopping = true;
	}
	pthread_mutex_unlock(&s->lock);
	if (!inst)
		return;

	/* The server is destroyed here, not on the queue thread: the shutdown may complete
	 * before grpc_server_cancel_all_calls() returns. */
	grpc_server_shutdown_and_notify(inst->server, s->cq, &inst->shutdown_tag);
	/* Ends the ListAndWatch streams; the server would otherwise wait for them. */
	grpc_server_cancel_all_calls(inst->server);

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += DP_SHUTDOWN_WAIT_S;
	pthread_mutex_lock(&s->lock);
	while (!inst->shutdown_done)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) != 0)
			break;
	done = inst->shutdown_done;
	inst->abandoned = !done;
	pthread_mutex_unlock(&s->lock);
	/* Nothing else touches the server once it is stopping and shut down. */
	if (done) {
		grpc_server_destroy(inst->server);
		inst->server = NULL;
	} else {
		log_warning("server shutdown did not finish within %d s", DP_SHUTDOWN_WAIT_S);
	}
	inst_unref(inst);
	s->sock_bound = false;
}

bool dp_server_socket_is_current(struct dp_server *s)
{
	struct stat st;

	if (!s->sock_bound || lstat(s->cfg.socket_path, &st) < 0)
		return false;
	return S_ISSOCK(st.st_mode) && st.st_dev == s->sock_dev && st.st_ino == s->sock_ino;
}

/* Removes a socket nobody listens on; refuses anything else. */
static int remove_stale_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	_cleanup_close_ int fd = -1;
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST; /* a symlink or file is not ours to remove */
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	/* Non-blocking: a listener with a full backlog would block connect() forever;
	 * it answers EAGAIN instead, and is just as much in use. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN)
		return -EADDRINUSE;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	log_info("removed stale socket %s", path);
	return 0;
}

int dp_server_serve(struct dp_server *s)
{
	grpc_arg arg = {
	    .type = GRPC_ARG_INTEGER,
	    .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
	    .value.integer = (int)DP_MAX_MESSAGE,
	};
	grpc_channel_args args = {.num_args = 1, .args = &arg};
	_cleanup_free_ char *target = NULL;
	grpc_server_credentials *creds;
	struct dp_inst *inst;
	struct stat st;
	mode_t old_mask;
	int port, r;

	stop_serving(s);

	r = remove_stale_socket(s->cfg.socket_path);
	if (r < 0)
		return r;
	target = strdup_printf("unix:%s", s->cfg.socket_path);
	inst = calloc(1, sizeof(*inst));
	if (!target || !inst) {
		free(inst);
		return -ENOMEM;
	}
	inst->s = s;
	inst->refs = 1;
	inst->shutdown_tag.fn = on_shutdown;
	inst->server = grpc_server_create(&args, NULL);
	grpc_server_register_completion_queue(inst->server, s->cq, NULL);
	for (int m = 0; m < M_REGISTERED; m++)
		inst->methods[m] =
		    grpc_server_register_method(inst->server, method_paths[m], NULL,
						GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);

	creds = grpc_insecure_server_credentials_create();
	/* Only root (the kubelet) may talk to us: bind() creates the socket 0600 under this
	 * umask (no chmod by path afterwards, which would follow a symlink put there). The
	 * control thread is the only one creating files, so the process-wide umask is safe. */
	old_mask = umask(0177);
	port = grpc_server_add_http2_port(inst->server, target, creds);
	umask(old_mask);
	grpc_server_credentials_release(creds);
	if (port == 0) {
		grpc_server_destroy(inst->server);
		free(inst);
		return -EADDRNOTAVAIL;
	}
	grpc_server_start(inst->server);

	if (lstat(s->cfg.socket_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		s->sock_dev = st.st_dev;
		s->sock_ino = st.st_ino;
		s->sock_bound = true;
	}
	for (int m = 0; m <= M_UNKNOWN; m++)
		request_call(inst, (enum dp_method)m);
	pthread_mutex_lock(&s->lock);
	s->inst = inst;
	pthread_mutex_unlock(&s->lock);
	log_info("serving device plugin API v1beta1 on %s", s->cfg.socket_path);
	return 0;
}

/* ---- publishing ----------------------------------------------------------------- */

int dp_server_publish(struct dp_server *s, struct dp_table *t, bool force)
{
	V1beta1__ListAndWatchResponse *msg = NULL;
	struct dp_snapshot *sn, *old;
	size_t len, n_streams = 0, healthy = 0;
	bool changed;
	int r;

	r = dp_list_response(t, &msg);
	if (r < 0) {
		dp_table_free(t);
		return r;
	}
	sn = calloc(1, sizeof(*sn));
	if (!sn) {
		protobuf_c_message_free_unpacked(&msg->base, NULL);
		dp_table_free(t);
		return -ENOMEM;
	}
	len = protobuf_c_message_get_packed_size(&msg->base);
	sn->list = grpc_slice_malloc(len);
	protobuf_c_message_pack(&msg->base, GRPC_SLICE_START_PTR(sn->list));
	protobuf_c_message_free_unpacked(&msg->base, NULL);
	sn->table = t;
	sn->refs = 1;
	for (size_t i = 0; i < t->n_ids; i++)
		healthy += t->hcas[t->ids[i].hca].healthy;

	pthread_mutex_lock(&s->lock);
	old = s->snap;
	changed = force || !old || !grpc_slice_eq(old->list, sn->list);
	sn->gen = (old ? old->gen : 0) + changed;
	s->snap = sn;
	if (changed)
		for (struct dp_stream *st = s->streams; st; st = st->next) {
			stream_send_locked(st);
			n_streams++;
		}
	pthread_mutex_unlock(&s->lock);
	snap_put(s, old);

	if (changed)
		log_info("advertising %zu device IDs (%zu healthy) on %zu ListAndWatch stream(s)",
			 t->n_ids, healthy, n_streams);
	return changed;
}

/* ---- Register ------------------------------------------------------------------- */

static void register_free(struct dp_register *r)
{
	if (r->call)
		grpc_call_unref(r->call);
	if (r->channel)
		grpc_channel_destroy(r->channel);
	grpc_metadata_array_destroy(&r->initial_md);
	grpc_metadata_array_destroy(&r->trailing_md);
	if (r->send)
		grpc_byte_buffer_destroy(r->send);
	if (r->recv)
		grpc_byte_buffer_destroy(r->recv);
	grpc_slice_unref(r->details);
	free(r);
}

static void on_registered(struct dp_tag *tag, bool ok)
{
	struct dp_register *r = container_of(tag, struct dp_register, tag);
	struct dp_server *s = r->s;
	uint64_t one = 1;
	int result;

	if (ok && r->status == GRPC_STATUS_OK) {
		log_info("registered %s with the kubelet (%s)", s->cfg.resource,
			 s->cfg.kubelet_path);
		result = 1;
	} else {
		char *d = grpc_slice_to_c_string(r->details);
		char buf[160];

		log_warning("Register with %s failed: status %d: %s", s->cfg.kubelet_path,
			    (int)r->status, dp_sanitize(d, buf, sizeof(buf)));
		gpr_free(d);
		result = r->status == GRPC_STATUS_UNAVAILABLE ? -ECONNREFUSED : -EPROTO;
	}
	pthread_mutex_lock(&s->lock);
	s->reg = NULL;
	s->reg_result = result;
	pthread_mutex_unlock(&s->lock);
	register_free(r);
	if (s->cfg.notify_fd >= 0 && write(s->cfg.notify_fd, &one, sizeof(one)) < 0)
		log_error("waking the control thread failed");
}

int dp_server_register(struct dp_server *s)
{
	V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
	V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
	grpc_channel_credentials *creds;
	_cleanup_free_ char *target = NULL;
	struct dp_register *r;
	grpc_op ops[6];
	grpc_call_error e;

	pthread_mutex_lock(&s->lock);
	if (s->reg) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	s->reg_result = 0;
	pthread_mutex_unlock(&s->lock);

	target = strdup_printf("unix:%s", s->cfg.kubelet_path);
	r = calloc(1, sizeof(*r));
	if (!target || !r) {
		free(r);
		return -ENOMEM;
	}
	r->tag.fn = on_registered;
	r->s = s;
	r->details = grpc_empty_slice();
	grpc_metadata_array_init(&r->initial_md);
	grpc_metadata_array_init(&r->trailing_md);

	o.pre_start_required = false;
	o.get_preferred_allocation_available = true;
	req.version = (char *)"v1beta1";
	req.endpoint = (char *)s->cfg.endpoint;
	req.resource_name = (char *)s->cfg.resource;
	req.options = &o;
	r->send = pack_message(&req.base);

	creds = grpc_insecure_credentials_create();
	r->channel = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	r->call = grpc_channel_create_call(
	    r->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
	    grpc_slice_from_static_string("/v1beta1.Registration/Register"), NULL,
	    gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
			 gpr_time_from_millis(DP_REGISTER_TIMEOUT_MS, GPR_TIMESPAN)),
	    NULL);
	if (!r->call) {
		register_free(r);
		return -ENOMEM;
	}

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = r->send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &r->initial_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &r->recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &r->trailing_md;
	ops[5].data.recv_status_on_client.status = &r->status;
	ops[5].data.recv_status_on_client.status_details = &r->details;

	pthread_mutex_lock(&s->lock);
	e = grpc_call_start_batch(r->call, ops, ELEMENTSOF(ops), &r->tag, NULL);
	if (e == GRPC_CALL_OK)
		s->reg = r;
	pthread_mutex_unlock(&s->lock);
	if (e != GRPC_CALL_OK) {
		register_free(r);
		return -EIO;
	}
	log_info("registering %s with the kubelet at %s", s->cfg.resource, s->cfg.kubelet_path);
	return 0;
}

void dp_server_register_cancel(struct dp_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->reg)
		grpc_call_cancel(s->reg->call, NULL);
	pthread_mutex_unlock(&s->lock);
}

int dp_server_register_result(struct dp_server *s)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = s->reg ? 0 : s->reg_result;
	if (!s->reg)
		s->reg_result = 0;
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ---- lifetime ------------------------------------------------------------------- */

int dp_server_new(const struct dp_server_config *cfg, struct dp_server **ret)
{
	struct dp_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	grpc_init();
	s->grpc_inited = true;
	s->cq = grpc_completion_queue_create_for_next(NULL);
	r = -pthread_create(&s->thread, NULL, cq_thread, s);
	if (r < 0) {
		dp_server_free(s);
		return r;
	}
	s->thread_started = true;
	*ret = s;
	return 0;
}

void dp_server_free(struct dp_server *s)
{
	struct stat st;
	bool ours;
	dev_t dev;
	ino_t ino;

	if (!s)
		return;
	ours = dp_server_socket_is_current(s);
	dev = s->sock_dev;
	ino = s->sock_ino;
	stop_serving(s);
	/* gRPC unlinks the path when its listener goes; make sure, but only our socket. */
	if (ours && lstat(s->cfg.socket_path, &st) == 0 && st.st_dev == dev && st.st_ino == ino &&
	    unlink(s->cfg.socket_path) == 0)
		log_debug("removed %s", s->cfg.socket_path);
	dp_server_register_cancel(s);
	if (s->cq) {
		grpc_completion_queue_shutdown(s->cq);
		if (s->thread_started)
			pthread_join(s->thread, NULL);
		else
			while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME),
							  NULL)
				   .type != GRPC_QUEUE_SHUTDOWN)
				;
		grpc_completion_queue_destroy(s->cq);
	}
	if (s->snap)
		snap_free(s->snap);
	if (s->grpc_inited)
		grpc_shutdown();
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
