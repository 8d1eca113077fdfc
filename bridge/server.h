/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gRPC side of the bridge: the DevicePlugin server on our socket and the
 * Registration client towards kubelet.sock, both driven by one completion-queue thread.
 *
 * Threads: dp_server_*() are called from the control thread only; the completion-queue
 * thread answers calls and pushes ListAndWatch updates. Shared state is under one lock.
 * Logs one line per event (info), per call (debug; Allocate at info).
 */
#pragma once

#include <stdbool.h>

#include "bridge-internal.h"

struct dp_server;

struct dp_server_config {
	const char *socket_path;  /* absolute: <plugin-dir>/rdma-cdi.sock */
	const char *kubelet_path; /* absolute: <plugin-dir>/kubelet.sock */
	const char *endpoint;	  /* socket file name sent in RegisterRequest */
	const char *resource;
	int notify_fd; /* eventfd written when a Register call finishes */
};

/* grpc_init() and the completion-queue thread. The config strings must outlive it. */
int dp_server_new(const struct dp_server_config *cfg, struct dp_server **ret);
/* Stops serving, cancels Register, joins the thread, grpc_shutdown(). Accepts NULL. */
void dp_server_free(struct dp_server *s);

/*
 * (Re)starts serving on socket_path: a running instance is shut down first (its streams
 * end). A stale socket at the path is removed; one that answers connections (another
 * plugin) gives -EADDRINUSE, a non-socket -EEXIST. The socket is mode 0600.
 */
int dp_server_serve(struct dp_server *s);
/* True when socket_path is still the socket we bound (not deleted or replaced). */
bool dp_server_socket_is_current(struct dp_server *s);

/*
 * Makes t (ownership taken) the table that calls see. When its device list differs
 * from the last one, or force, every ListAndWatch stream gets the new list.
 */
int dp_server_publish(struct dp_server *s, struct dp_table *t, bool force);

/* Starts a Register call; -EBUSY while one is in flight. */
int dp_server_register(struct dp_server *s);
/* Cancels an in-flight Register call (its result still arrives, as a failure). */
void dp_server_register_cancel(struct dp_server *s);
/* Result of the last finished Register call: 1 registered, 0 none finished yet or in
 * flight, -errno failed. Consumes the result. */
int dp_server_register_result(struct dp_server *s);
