/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gRPC core plumbing for the daemons, protocol-agnostic: one completion queue drained by
 * one thread, tags, server instances on unix sockets with their lifecycle, server
 * streams that always carry the latest published message, and unary client calls.
 *
 * Threads: gc_*() functions are called from the loop thread (gc_deferred_answer() from
 * any). Unary handlers run on the completion-queue thread (so calls are answered while
 * the loop is busy); a deferrable handler may keep the call and answer it later, from the
 * loop, after work the completion-queue thread must not wait for; every other
 * callback (server stopped, client call finished) runs on the loop thread, through the
 * mailbox. Nothing here blocks the loop: stopping a server returns at once and its
 * grpc_server is destroyed on the loop thread when its shutdown completes.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include "loop.h"

#define GC_METHODS_MAX 8
#define GC_STREAMS_MAX 16 /* concurrent streams per server; a kubelet needs one */

struct gc_runtime;
struct gc_server;
struct gc_client_call;
struct gc_deferred;

/* grpc_init() and the completion-queue thread; callbacks reach the loop through mb. */
int gc_runtime_new(struct mailbox *mb, struct gc_runtime **ret);
/* True when no server instance, client call or unanswered deferred call is alive (all
 * shutdowns completed, every deferred call answered). */
bool gc_runtime_idle(struct gc_runtime *rt);
/* Shuts the queue down, joins the thread, grpc_shutdown(). Servers and calls still
 * alive are abandoned (leaked, not freed) rather than destroyed under a running call.
 * Accepts NULL. */
void gc_runtime_free(struct gc_runtime *rt);

struct gc_method {
	const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
	bool streaming;	  /* server streaming of published messages (ListAndWatch) */
};

/*
 * Answers one unary call, on the completion-queue thread; must not block. request is
 * the payload (NULL for an empty message). Returns the status; on GRPC_STATUS_OK *reply
 * (owned by the caller afterwards) is the answer, else details (NUL-terminated) says why.
 */
typedef grpc_status_code (*gc_unary_fn)(void *userdata, unsigned method, grpc_byte_buffer *request,
					grpc_byte_buffer **reply, char *details,
					size_t details_len);

/* What a gc_unary_deferrable_fn returns when it keeps the call to answer it later. */
#define GC_STATUS_DEFERRED (-1)

/*
 * As gc_unary_fn, but the handler may keep call: it returns GC_STATUS_DEFERRED and answers
 * later with gc_deferred_answer() (exactly once, from any thread; it may have done so
 * already by the time it returns). Any other return value is the status, answered at once
 * as for gc_unary_fn, and call must not be used afterwards.
 */
typedef int (*gc_unary_deferrable_fn)(void *userdata, unsigned method, grpc_byte_buffer *request,
				      struct gc_deferred *call, grpc_byte_buffer **reply,
				      char *details, size_t details_len);

struct gc_server_config {
	const char *socket_path; /* absolute */
	const struct gc_method *methods;
	size_t n_methods; /* <= GC_METHODS_MAX */
	gc_unary_fn unary;
	gc_unary_deferrable_fn unary_deferrable; /* used instead of unary when set */
	void *userdata;
	int max_message;  /* largest request accepted, bytes */
	const char *name; /* for log lines: the resource */
};

/*
 * Binds socket_path (mode 0600 through the umask; removes a stale socket first; a
 * live one gives -EADDRINUSE, a non-socket -EEXIST) and starts serving. Unknown methods
 * are answered UNIMPLEMENTED. Strings in cfg are copied.
 */
int gc_server_start(struct gc_runtime *rt, const struct gc_server_config *cfg,
		    struct gc_server **ret);
/* True while socket_path is still the socket this instance bound. */
bool gc_server_socket_is_current(struct gc_server *s);
/*
 * Every stream of a streaming method gets msg (a copy is kept for streams opened
 * later). Returns the number of open streams of that method.
 */
size_t gc_server_publish(struct gc_server *s, unsigned method, const void *msg, size_t len);
/*
 * Stops serving: streams end, the socket is removed when it is still ours. Returns at
 * once; done(userdata) runs on the loop thread once the instance is gone and its
 * socket path may be bound again. s must not be used afterwards. Accepts NULL.
 */
void gc_server_stop(struct gc_server *s, void (*done)(void *userdata), void *userdata);

/*
 * Answers a deferred call: status, the packed reply (copied; sent only with
 * GRPC_STATUS_OK, len 0 = an empty message) and details (NULL or one line). When the peer
 * cancelled, the deadline passed or the server stopped meanwhile, the answer is dropped.
 * Consumes call in every case. Any thread.
 */
void gc_deferred_answer(struct gc_deferred *call, grpc_status_code status, const void *reply,
			size_t len, const char *details);
/* True once the call can no longer be answered (cancelled, deadline, server stopped). */
bool gc_deferred_is_gone(struct gc_deferred *call);

/* Result of a unary client call, on the loop thread; reply NULL unless status is OK. */
typedef void (*gc_client_fn)(void *userdata, grpc_status_code status, const char *details,
			     grpc_byte_buffer *reply);

/*
 * Calls method on unix:target_path with request (copied) and a deadline. done runs
 * exactly once unless the call is abandoned. Returns 0 or -errno.
 */
int gc_client_call(struct gc_runtime *rt, const char *target_path, const char *method,
		   const void *request, size_t len, unsigned timeout_ms, gc_client_fn done,
		   void *userdata, struct gc_client_call **ret);
/* Cancels the call and drops its callback (it will not run). Accepts NULL. */
void gc_client_abandon(struct gc_client_call *c);

/* Removes a socket nobody listens on; refuses anything else (-EEXIST, -EADDRINUSE). */
int gc_remove_stale_socket(const char *path);

/* ---- the protobuf wire format (wire.c) ---- */

/*
 * The next field of the packed message buf[0..len) at *at, for counting or scanning a
 * request before it is unpacked (unpacking allocates per element): its number and, for a
 * length-delimited field, its payload (*ret_data into buf, NULL for the other wire
 * types). 1 with *at past the field, 0 at the end, -EBADMSG when buf is not well formed
 * (groups included: protobuf-c refuses them too). Does not allocate.
 */
int rpc_wire_next(const uint8_t *buf, size_t len, size_t *at, uint64_t *ret_field,
		 const uint8_t **ret_data, size_t *ret_len);

/*
 * protobuf strings are length-delimited but protobuf-c hands them over NUL-terminated:
 * "0000:18:00.0\0evil" would unpack as "0000:18:00.0". Scans the packed message buf of
 * type d (nested messages included) for a string field holding a NUL byte: 1 with
 * *ret_s and *ret_len the whole string (pointing into buf), 0 when there is none, -EBADMSG
 * when buf is not a well-formed message. Does not allocate.
 */
int rpc_wire_find_nul(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     const uint8_t **ret_s, size_t *ret_len);
