/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC core plumbing. One completion queue, drained by one thread (cq_thread), carries
 * everything: requested calls of every server instance, stream sends and closes,
 * instance shutdowns and client calls. Every tag is a struct gc_tag whose fn runs on that
 * thread. What the loop must see (an instance gone, a client call finished) is posted to
 * the mailbox and runs on the loop thread.
 *
 * A kubelet restart deletes our socket; gRPC cannot re-add a port to a started server,
 * so serving again means a new instance, bound only after the old one's shutdown has
 * completed (gRPC unlinks the socket path when a listener shuts down).
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "common.h"
#include "rpc.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct gc_tag {
	void (*fn)(struct gc_tag *tag, bool ok);
};

struct gc_runtime {
	struct mailbox *mb;
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started, grpc_inited;
	pthread_mutex_t lock;
	/* loop thread only: instances not yet finalized, client calls not yet finished */
	unsigned n_servers, n_calls;
	/* under lock: deferred calls their holder has not answered yet */
	unsigned n_deferred;
};

struct gc_stream;

struct gc_server {
	struct gc_tag shutdown_tag;
	struct gc_runtime *rt;
	grpc_server *server;
	char *path, *name;
	struct gc_method methods[GC_METHODS_MAX];
	size_t n_methods;
	void *handles[GC_METHODS_MAX];
	gc_unary_fn unary;
	gc_unary_deferrable_fn unary_deferrable;
	void *userdata;
	/* under rt->lock */
	unsigned refs; /* owner + requested calls + streams + pending shutdown */
	bool stopping;
	struct gc_stream *streams;
	size_t n_streams;
	unsigned next_stream_id;
	grpc_slice latest[GC_METHODS_MAX];
	uint64_t gen[GC_METHODS_MAX]; /* 0 = nothing published yet */
	/* loop thread only */
	bool bound;
	dev_t dev;
	ino_t ino;
	void (*done)(void *userdata);
	void *done_userdata;
};

/*
 * A requested call, then (for unary methods) its answer. A call of a deferrable server
 * is a struct gc_deferred for its handler: its RECV_CLOSE_ON_SERVER is posted before the
 * handler runs, so a cancel, the deadline or a server stop shows up as an event; then
 * the grpc_call is released at once (a server shutdown waits for it) while the struct
 * stays until its holder answered. refs count the holder, the close and send batches
 * and on_request itself.
 */
struct gc_call {
	struct gc_tag tag;
	struct gc_server *s;
	unsigned method; /* n_methods = unknown method */
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_call_details details;
	grpc_byte_buffer *payload, *reply;
	grpc_slice status_details;
	int cancelled;
	/* deferrable calls only, under rt->lock */
	struct gc_tag close_tag, send_tag;
	unsigned refs;
	bool closed, sending, answered;
};

struct gc_stream {
	struct gc_tag send_tag, close_tag;
	struct gc_server *s;
	unsigned method, id;
	grpc_call *call;
	grpc_byte_buffer *buf;
	uint64_t sent_gen;
	bool sending, closed, sent_metadata;
	int cancelled;
	struct gc_stream *prev, *next;
};

struct gc_client_call {
	struct gc_tag tag;
	struct gc_runtime *rt;
	grpc_channel *channel;
	grpc_call *call;
	grpc_metadata_array initial_md, trailing_md;
	grpc_byte_buffer *send, *recv;
	grpc_status_code status;
	grpc_slice details;
	gc_client_fn done;
	void *userdata;
	bool abandoned; /* loop thread only */
};

static void *cq_thread(void *arg)
{
	struct gc_runtime *rt = arg;

	for (;;) {
		grpc_event ev =
		    grpc_completion_queue_next(rt->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct gc_tag *tag = ev.tag;

			tag->fn(tag, ev.success != 0);
		}
	}
	return NULL;
}

/* ---- servers: references ----------------------------------------------------------- */

static void server_free(struct gc_server *s)
{
	for (size_t m = 0; m < s->n_methods; m++)
		if (s->gen[m])
			grpc_slice_unref(s->latest[m]);
	for (size_t m = 0; m < s->n_methods; m++)
		free((char *)s->methods[m].path);
	free(s->path);
	free(s->name);
	free(s);
}

static void server_unref(struct gc_server *s)
{
	bool last;

	pthread_mutex_lock(&s->rt->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock(&s->rt->lock);
	if (last)
		server_free(s);
}

/* ---- unary calls --------------------------------------------------------------------- */

static void call_free(struct gc_call *c)
{
	if (c->call)
		grpc_call_unref(c->call);
	grpc_metadata_array_destroy(&c->md);
	if (c->method == c->s->n_methods)
		grpc_call_details_destroy(&c->details);
	if (c->payload)
		grpc_byte_buffer_destroy(c->payload);
	if (c->reply)
		grpc_byte_buffer_destroy(c->reply);
	grpc_slice_unref(c->status_details);
	free(c);
}

static void on_request(struct gc_tag *tag, bool ok);

/* Asks gRPC for the next call of method m (n_methods: any unregistered method). */
static void request_call(struct gc_server *s, unsigned m)
{
	struct gc_runtime *rt = s->rt;
	struct gc_call *c = calloc(1, sizeof(*c));
	grpc_call_error e;

	if (!c) {
		log_error("%s: out of memory requesting the next call, method disabled until the "
			  "socket is served again",
			  s->name);
		return;
	}
	c->tag.fn = on_request;
	c->s = s;
	c->method = m;
	c->status_details = grpc_empty_slice();
	grpc_metadata_array_init(&c->md);
	if (m == s->n_methods)
		grpc_call_details_init(&c->details);
	/* Under the lock, so the instance cannot start shutting down meanwhile. */
	pthread_mutex_lock(&rt->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&rt->lock);
		call_free(c);
		return;
	}
	s->refs++;
	if (m == s->n_methods)
		e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, rt->cq,
					     rt->cq, &c->tag);
	else
		e = grpc_server_request_registered_call(s->server, s->handles[m], &c->call,
							&c->deadline, &c->md, &c->payload, rt->cq,
							rt->cq, &c->tag);
	pthread_mutex_unlock(&rt->lock);
	if (e != GRPC_CALL_OK) {
		log_error("%s: requesting calls failed (grpc_call_error %d)", s->name, (int)e);
		call_free(c);
		server_unref(s);
	}
}

static void on_call_done(struct gc_tag *tag, bool ok)
{
	struct gc_call *c = container_of(tag, struct gc_call, tag);
	struct gc_server *s = c->s;

	call_free(c);
	server_unref(s);
}

/* The ops that answer c (its initial metadata, c->reply when code is OK, the status with
 * details): 3 at most, the count returned. */
static size_t answer_ops(struct gc_call *c, grpc_op *ops, grpc_status_code code,
			 const char *details)
{
	size_t n = 0;

	ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	if (code == GRPC_STATUS_OK && c->reply) {
		ops[n].op = GRPC_OP_SEND_MESSAGE;
		ops[n++].data.send_message.send_message = c->reply;
	}
	if (details && *details)
		c->status_details = grpc_slice_from_copied_string(details);
	ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[n].data.send_status_from_server.status = code;
	ops[n++].data.send_status_from_server.status_details =
	    details && *details ? &c->status_details : NULL;
	return n;
}

static void answer(struct gc_call *c, grpc_status_code code, const char *details)
{
	grpc_op ops[4];
	size_t n = 0;
	grpc_call_error e;

	memset(ops, 0, sizeof(ops));
	n = answer_ops(c, ops, code, details);
	ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
	c->tag.fn = on_call_done;
	e = grpc_call_start_batch(c->call, ops, n, &c->tag, NULL);
	if (e != GRPC_CALL_OK) {
		struct gc_server *s = c->s;

		log_error("%s: answering a call failed (grpc_call_error %d)", s->name, (int)e);
		call_free(c);
		server_unref(s);
	}
}

/* ---- deferrable unary calls ------------------------------------------------------------ */

/* Once the call is over and nothing is in flight, gRPC may have it back. */
static void deferred_release_call_locked(struct gc_call *c)
{
	if (c->call && c->closed && !c->sending) {
		grpc_call_unref(c->call);
		c->call = NULL;
	}
}

static void deferred_unref(struct gc_call *c)
{
	struct gc_server *s = c->s;
	bool last;

	pthread_mutex_lock(&s->rt->lock);
	last = --c->refs == 0;
	pthread_mutex_unlock(&s->rt->lock);
	if (last) {
		call_free(c);
		server_unref(s);
	}
}

static void on_deferred_closed(struct gc_tag *tag, bool ok)
{
	struct gc_call *c = container_of(tag, struct gc_call, close_tag);

	pthread_mutex_lock(&c->s->rt->lock);
	c->closed = true;
	if (!c->answered)
		log_debug("%s: a call was cancelled before its answer", c->s->name);
	deferred_release_call_locked(c);
	pthread_mutex_unlock(&c->s->rt->lock);
	deferred_unref(c);
}

static void on_deferred_sent(struct gc_tag *tag, bool ok)
{
	struct gc_call *c = container_of(tag, struct gc_call, send_tag);

	pthread_mutex_lock(&c->s->rt->lock);
	c->sending = false;
	deferred_release_call_locked(c);
	pthread_mutex_unlock(&c->s->rt->lock);
	deferred_unref(c);
}

/* Sends the answer (bb owned, may be NULL) unless the call is gone; drops the holder's
 * reference. */
static void deferred_send(struct gc_call *c, grpc_status_code code, grpc_byte_buffer *bb,
			  const char *details)
{
	struct gc_server *s = c->s;
	grpc_op ops[3];
	size_t n = 0;
	grpc_call_error e;
	bool twice;

	memset(ops, 0, sizeof(ops));
	pthread_mutex_lock(&s->rt->lock);
	twice = c->answered;
	if (twice) {
		log_error("%s: a deferred call was answered twice, ignoring", s->name);
	} else if (!c->closed && c->call) {
		if (code == GRPC_STATUS_OK) {
			/* A unary OK carries a message, an empty one at least. */
			if (!bb)
				bb = grpc_raw_byte_buffer_create(NULL, 0);
			c->reply = bb;
			bb = NULL;
		}
		n = answer_ops(c, ops, code, details);
		e = grpc_call_start_batch(c->call, ops, n, &c->send_tag, NULL);
		if (e == GRPC_CALL_OK) {
			c->sending = true;
			c->refs++;
		} else {
			log_error("%s: answering a call failed (grpc_call_error %d)", s->name,
				  (int)e);
			grpc_call_cancel(c->call, NULL);
		}
	} else {
		log_debug("%s: the answer to a call that is gone is dropped", s->name);
	}
	if (!twice)
		s->rt->n_deferred--;
	c->answered = true;
	pthread_mutex_unlock(&s->rt->lock);
	if (bb)
		grpc_byte_buffer_destroy(bb);
	if (!twice)
		deferred_unref(c);
}

void gc_deferred_answer(struct gc_deferred *call, grpc_status_code status, const void *reply,
			size_t len, const char *details)
{
	struct gc_call *c = (struct gc_call *)call;
	grpc_byte_buffer *bb = NULL;

	if (status == GRPC_STATUS_OK) {
		grpc_slice slice = grpc_slice_from_copied_buffer(reply, len);

		bb = grpc_raw_byte_buffer_create(&slice, 1);
		grpc_slice_unref(slice);
	}
	deferred_send(c, status, bb, details);
}

bool gc_deferred_is_gone(struct gc_deferred *call)
{
	struct gc_call *c = (struct gc_call *)call;
	bool gone;

	pthread_mutex_lock(&c->s->rt->lock);
	gone = c->closed;
	pthread_mutex_unlock(&c->s->rt->lock);
	return gone;
}

static void deferred_run(struct gc_call *c)
{
	struct gc_server *s = c->s;
	grpc_byte_buffer *reply = NULL;
	char details[256] = "";
	grpc_call_error e;
	grpc_op op;
	int code;

	c->close_tag.fn = on_deferred_closed;
	c->send_tag.fn = on_deferred_sent;
	c->refs = 3; /* the handler, the close batch, this function */
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &c->cancelled;
	pthread_mutex_lock(&s->rt->lock);
	e = grpc_call_start_batch(c->call, &op, 1, &c->close_tag, NULL);
	if (e == GRPC_CALL_OK)
		s->rt->n_deferred++;
	pthread_mutex_unlock(&s->rt->lock);
	if (e != GRPC_CALL_OK) {
		log_error("%s: a call could not be started (grpc_call_error %d)", s->name, (int)e);
		grpc_call_cancel(c->call, NULL);
		call_free(c);
		server_unref(s);
		return;
	}
	code = s->unary_deferrable(s->userdata, c->method, c->payload, (struct gc_deferred *)c,
				   &reply, details, sizeof(details));
	/* Read by now; a deferred call may wait long for its answer. Only this thread
	 * touches the payload, and our reference keeps c. */
	if (c->payload) {
		grpc_byte_buffer_destroy(c->payload);
		c->payload = NULL;
	}
	if (code != GC_STATUS_DEFERRED) {
		if (code != GRPC_STATUS_OK && reply) {
			grpc_byte_buffer_destroy(reply);
			reply = NULL;
		}
		deferred_send(c, (grpc_status_code)code, reply, details);
	} else if (reply) {
		grpc_byte_buffer_destroy(reply);
	}
	deferred_unref(c);
}

static void stream_open(struct gc_call *c);

static void on_request(struct gc_tag *tag, bool ok)
{
	struct gc_call *c = container_of(tag, struct gc_call, tag);
	struct gc_server *s = c->s;
	char details[256] = "";
	grpc_status_code code;

	if (!ok) {
		/* The instance is shutting down: no more calls of this method. */
		call_free(c);
		server_unref(s);
		return;
	}
	/* Keep one call of each method requested; a stopping instance refuses quietly. */
	request_call(s, c->method);

	if (c->method == s->n_methods) {
		log_debug("%s: call of an unknown method answered UNIMPLEMENTED", s->name);
		answer(c, GRPC_STATUS_UNIMPLEMENTED, "method not implemented by rdma-cdi");
		return;
	}
	if (s->methods[c->method].streaming) {
		stream_open(c);
		return;
	}
	if (s->unary_deferrable) {
		deferred_run(c);
		return;
	}
	code = s->unary(s->userdata, c->method, c->payload, &c->reply, details, sizeof(details));
	if (code != GRPC_STATUS_OK && c->reply) {
		grpc_byte_buffer_destroy(c->reply);
		c->reply = NULL;
	}
	answer(c, code, details);
}

/* ---- streams --------------------------------------------------------------------------- */

/* Frees a closed stream with nothing in flight; true when it held the last reference on
 * its server, which the caller then frees outside the lock. */
static bool stream_maybe_free_locked(struct gc_stream *st)
{
	struct gc_server *s = st->s;

	if (!st->closed || st->sending)
		return false;
	if (st->prev)
		st->prev->next = st->next;
	else
		s->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	s->n_streams--;
	grpc_call_unref(st->call);
	free(st);
	return --s->refs == 0;
}

/* Sends the latest message when this stream has not seen it and nothing is in flight. */
static void stream_send_locked(struct gc_stream *st)
{
	struct gc_server *s = st->s;
	grpc_op ops[2];
	size_t n = 0;
	grpc_call_error e;

	if (st->sending || st->closed || !s->gen[st->method] || st->sent_gen == s->gen[st->method])
		return;
	memset(ops, 0, sizeof(ops));
	if (!st->sent_metadata)
		ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
	st->buf = grpc_raw_byte_buffer_create(&s->latest[st->method], 1);
	ops[n].op = GRPC_OP_SEND_MESSAGE;
	ops[n++].data.send_message.send_message = st->buf;
	e = grpc_call_start_batch(st->call, ops, n, &st->send_tag, NULL);
	if (e != GRPC_CALL_OK) {
		log_error("%s: stream %u: send failed (grpc_call_error %d), ending it", s->name,
			  st->id, (int)e);
		grpc_byte_buffer_destroy(st->buf);
		st->buf = NULL;
		grpc_call_cancel(st->call, NULL);
		return;
	}
	st->sent_metadata = true;
	st->sending = true;
	st->sent_gen = s->gen[st->method];
}

static void on_stream_sent(struct gc_tag *tag, bool ok)
{
	struct gc_stream *st = container_of(tag, struct gc_stream, send_tag);
	struct gc_server *s = st->s;
	bool last;

	pthread_mutex_lock(&s->rt->lock);
	grpc_byte_buffer_destroy(st->buf);
	st->buf = NULL;
	st->sending = false;
	if (ok)
		stream_send_locked(st); /* a newer message arrived meanwhile */
	last = stream_maybe_free_locked(st);
	pthread_mutex_unlock(&s->rt->lock);
	if (last)
		server_free(s);
}

static void on_stream_closed(struct gc_tag *tag, bool ok)
{
	struct gc_stream *st = container_of(tag, struct gc_stream, close_tag);
	struct gc_server *s = st->s;
	unsigned id = st->id;
	bool last;
	size_t n;

	pthread_mutex_lock(&s->rt->lock);
	st->closed = true;
	last = stream_maybe_free_locked(st);
	n = s->n_streams;
	pthread_mutex_unlock(&s->rt->lock);
	log_info("%s: stream %u closed by the peer or shutdown (%zu left)", s->name, id, n);
	if (last)
		server_free(s);
}

static void stream_open(struct gc_call *c)
{
	struct gc_server *s = c->s;
	struct gc_stream *st;
	grpc_op op;
	unsigned id;
	size_t n;

	pthread_mutex_lock(&s->rt->lock);
	if (s->n_streams >= GC_STREAMS_MAX) {
		pthread_mutex_unlock(&s->rt->lock);
		log_warning("%s: stream refused: %d streams already open", s->name, GC_STREAMS_MAX);
		answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "too many streams");
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		pthread_mutex_unlock(&s->rt->lock);
		answer(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	st->s = s;
	st->method = c->method;
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
	/* The call's reference on s passes to the stream. */

	/* Posted first, so a peer that goes away shows up as an event. */
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	op.data.recv_close_on_server.cancelled = &st->cancelled;
	if (grpc_call_start_batch(st->call, &op, 1, &st->close_tag, NULL) != GRPC_CALL_OK) {
		bool last;

		st->closed = true;
		last = stream_maybe_free_locked(st);
		pthread_mutex_unlock(&s->rt->lock);
		log_error("%s: stream could not be started", s->name);
		call_free(c);
		if (last)
			server_free(s);
		return;
	}
	stream_send_locked(st);
	pthread_mutex_unlock(&s->rt->lock);
	log_info("%s: %s stream %u opened (%zu active)", s->name, s->methods[st->method].path, id,
		 n);
	call_free(c);
}

size_t gc_server_publish(struct gc_server *s, unsigned method, const void *msg, size_t len)
{
	grpc_slice slice = grpc_slice_from_copied_buffer(msg, len);
	size_t n = 0;

	pthread_mutex_lock(&s->rt->lock);
	if (s->gen[method])
		grpc_slice_unref(s->latest[method]);
	s->latest[method] = slice;
	s->gen[method]++;
	for (struct gc_stream *st = s->streams; st; st = st->next)
		if (st->method == method) {
			stream_send_locked(st);
			n++;
		}
	pthread_mutex_unlock(&s->rt->lock);
	return n;
}

/* ---- instances -------------------------------------------------------------------------- */

int gc_remove_stale_socket(const char *path)
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

bool gc_server_socket_is_current(struct gc_server *s)
{
	struct stat st;

	if (!s->bound || lstat(s->path, &st) < 0)
		return false;
	return S_ISSOCK(st.st_mode) && st.st_dev == s->dev && st.st_ino == s->ino;
}

int gc_server_start(struct gc_runtime *rt, const struct gc_server_config *cfg,
		    struct gc_server **ret)
{
	grpc_arg arg = {
	    .type = GRPC_ARG_INTEGER,
	    .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
	    .value.integer = cfg->max_message,
	};
	grpc_channel_args args = {.num_args = 1, .args = &arg};
	_cleanup_free_ char *target = NULL;
	grpc_server_credentials *creds;
	struct gc_server *s;
	struct stat st;
	mode_t old_mask;
	int port, r;

	if (cfg->n_methods > GC_METHODS_MAX)
		return -EINVAL;
	r = gc_remove_stale_socket(cfg->socket_path);
	if (r < 0)
		return r;
	target = strdup_printf("unix:%s", cfg->socket_path);
	s = calloc(1, sizeof(*s));
	if (!target || !s) {
		free(s);
		return -ENOMEM;
	}
	s->rt = rt;
	s->refs = 1;
	s->shutdown_tag.fn = NULL;
	s->path = strdup(cfg->socket_path);
	s->name = strdup(cfg->name ? cfg->name : cfg->socket_path);
	s->n_methods = cfg->n_methods;
	s->unary = cfg->unary;
	s->unary_deferrable = cfg->unary_deferrable;
	s->userdata = cfg->userdata;
	for (size_t m = 0; m < cfg->n_methods; m++) {
		s->methods[m] = cfg->methods[m];
		s->methods[m].path = strdup(cfg->methods[m].path);
		if (!s->methods[m].path)
			r = -ENOMEM;
	}
	if (!s->path || !s->name || r < 0) {
		server_free(s);
		return -ENOMEM;
	}
	s->server = grpc_server_create(&args, NULL);
	grpc_server_register_completion_queue(s->server, rt->cq, NULL);
	for (size_t m = 0; m < s->n_methods; m++)
		s->handles[m] =
		    grpc_server_register_method(s->server, s->methods[m].path, NULL,
						GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);

	creds = grpc_insecure_server_credentials_create();
	/* Only root (the kubelet) may talk to us: bind() creates the socket 0600 under this
	 * umask (no chmod by path afterwards, which would follow a symlink put there). The
	 * loop thread is the only one creating files, so the process-wide umask is safe. */
	old_mask = umask(0177);
	port = grpc_server_add_http2_port(s->server, target, creds);
	umask(old_mask);
	grpc_server_credentials_release(creds);
	if (port == 0) {
		grpc_server_destroy(s->server);
		server_free(s);
		return -EADDRNOTAVAIL;
	}
	grpc_server_start(s->server);
	if (lstat(s->path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		s->bound = true;
	}
	for (size_t m = 0; m <= s->n_methods; m++)
		request_call(s, (unsigned)m);
	rt->n_servers++;
	*ret = s;
	return 0;
}

/* On the loop thread, after the shutdown completed: nothing uses the grpc_server now. */
static void server_finalize(void *userdata)
{
	struct gc_server *s = userdata;
	struct stat st;

	grpc_server_destroy(s->server);
	s->server = NULL;
	/* gRPC unlinks the path when its listener goes; make sure, but only our socket. */
	if (s->bound && lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino &&
	    unlink(s->path) == 0)
		log_debug("removed %s", s->path);
	s->rt->n_servers--;
	if (s->done)
		s->done(s->done_userdata);
	server_unref(s);
}

static void on_shutdown(struct gc_tag *tag, bool ok)
{
	struct gc_server *s = container_of(tag, struct gc_server, shutdown_tag);

	if (mailbox_post(s->rt->mb, server_finalize, s) < 0)
		log_error("%s: out of memory finishing a server shutdown: instance leaked",
			  s->name);
}

void gc_server_stop(struct gc_server *s, void (*done)(void *userdata), void *userdata)
{
	if (!s)
		return;
	s->done = done;
	s->done_userdata = userdata;
	s->shutdown_tag.fn = on_shutdown;
	pthread_mutex_lock(&s->rt->lock);
	s->stopping = true;
	pthread_mutex_unlock(&s->rt->lock);
	grpc_server_shutdown_and_notify(s->server, s->rt->cq, &s->shutdown_tag);
	/* Ends the streams; the shutdown would otherwise wait for them. */
	grpc_server_cancel_all_calls(s->server);
}

/* ---- client calls ---------------------------------------------------------------------- */

static void client_free(struct gc_client_call *c)
{
	if (c->call)
		grpc_call_unref(c->call);
	if (c->channel)
		grpc_channel_destroy(c->channel);
	grpc_metadata_array_destroy(&c->initial_md);
	grpc_metadata_array_destroy(&c->trailing_md);
	if (c->send)
		grpc_byte_buffer_destroy(c->send);
	if (c->recv)
		grpc_byte_buffer_destroy(c->recv);
	grpc_slice_unref(c->details);
	free(c);
}

static void client_finish(void *userdata)
{
	struct gc_client_call *c = userdata;

	c->rt->n_calls--;
	if (!c->abandoned && c->done) {
		char *d = grpc_slice_to_c_string(c->details);

		c->done(c->userdata, c->status, d ? d : "",
			c->status == GRPC_STATUS_OK ? c->recv : NULL);
		gpr_free(d);
	}
	client_free(c);
}

static void on_client_done(struct gc_tag *tag, bool ok)
{
	struct gc_client_call *c = container_of(tag, struct gc_client_call, tag);

	if (!ok)
		c->status = GRPC_STATUS_UNAVAILABLE;
	if (mailbox_post(c->rt->mb, client_finish, c) < 0)
		log_error("out of memory finishing a client call: its result is lost");
}

int gc_client_call(struct gc_runtime *rt, const char *target_path, const char *method,
		   const void *request, size_t len, unsigned timeout_ms, gc_client_fn done,
		   void *userdata, struct gc_client_call **ret)
{
	_cleanup_free_ char *target = strdup_printf("unix:%s", target_path);
	grpc_channel_credentials *creds;
	struct gc_client_call *c;
	grpc_slice slice;
	grpc_op ops[6];
	grpc_call_error e;

	c = calloc(1, sizeof(*c));
	if (!target || !c) {
		free(c);
		return -ENOMEM;
	}
	c->tag.fn = on_client_done;
	c->rt = rt;
	c->done = done;
	c->userdata = userdata;
	c->details = grpc_empty_slice();
	grpc_metadata_array_init(&c->initial_md);
	grpc_metadata_array_init(&c->trailing_md);
	slice = grpc_slice_from_copied_buffer(request, len);
	c->send = grpc_raw_byte_buffer_create(&slice, 1);
	grpc_slice_unref(slice);

	creds = grpc_insecure_credentials_create();
	c->channel = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	slice = grpc_slice_from_copied_string(method);
	c->call =
	    grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, rt->cq, slice, NULL,
				     /* monotonic: a wall-clock step moves no deadline */
				     gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
						  gpr_time_from_millis(timeout_ms, GPR_TIMESPAN)),
				     NULL);
	grpc_slice_unref(slice); /* the call holds its own reference */
	if (!c->call) {
		client_free(c);
		return -ENOMEM;
	}
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = c->send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->initial_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &c->recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &c->trailing_md;
	ops[5].data.recv_status_on_client.status = &c->status;
	ops[5].data.recv_status_on_client.status_details = &c->details;
	e = grpc_call_start_batch(c->call, ops, ELEMENTSOF(ops), &c->tag, NULL);
	if (e != GRPC_CALL_OK) {
		client_free(c);
		return -EIO;
	}
	rt->n_calls++;
	if (ret)
		*ret = c;
	return 0;
}

void gc_client_abandon(struct gc_client_call *c)
{
	if (!c)
		return;
	c->abandoned = true;
	grpc_call_cancel(c->call, NULL);
}

/* ---- runtime -------------------------------------------------------------------------- */

int gc_runtime_new(struct mailbox *mb, struct gc_runtime **ret)
{
	struct gc_runtime *rt = calloc(1, sizeof(*rt));
	int r;

	if (!rt)
		return -ENOMEM;
	rt->mb = mb;
	pthread_mutex_init(&rt->lock, NULL);
	grpc_init();
	rt->grpc_inited = true;
	rt->cq = grpc_completion_queue_create_for_next(NULL);
	r = -pthread_create(&rt->thread, NULL, cq_thread, rt);
	if (r < 0) {
		gc_runtime_free(rt);
		return r;
	}
	rt->thread_started = true;
	*ret = rt;
	return 0;
}

bool gc_runtime_idle(struct gc_runtime *rt)
{
	unsigned deferred;

	pthread_mutex_lock(&rt->lock);
	deferred = rt->n_deferred;
	pthread_mutex_unlock(&rt->lock);
	return rt->n_servers == 0 && rt->n_calls == 0 && deferred == 0;
}

void gc_runtime_free(struct gc_runtime *rt)
{
	if (!rt)
		return;
	if (!gc_runtime_idle(rt)) {
		/* A server whose shutdown never completed still uses the queue: leave it all
		 * to process exit rather than destroy it under a running call. */
		log_warning("%u server(s), %u call(s) and %u unanswered deferred call(s) still "
			    "alive at exit",
			    rt->n_servers, rt->n_calls, rt->n_deferred);
		return;
	}
	if (rt->cq) {
		grpc_completion_queue_shutdown(rt->cq);
		if (rt->thread_started)
			pthread_join(rt->thread, NULL);
		else
			while (grpc_completion_queue_next(rt->cq,
							  gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
				   .type != GRPC_QUEUE_SHUTDOWN)
				;
		grpc_completion_queue_destroy(rt->cq);
	}
	if (rt->grpc_inited)
		grpc_shutdown();
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}
