/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One kubelet resource: the DevicePlugin service (v1beta1) on its own socket in the
 * plugin dir, its Register call towards kubelet.sock with retries, and the device table
 * its calls answer from. A daemon with N pools has N plugins.
 *
 * Threads: dp_plugin_*() run on the loop thread. Calls are answered on the gRPC
 * completion-queue thread from the last published table (an immutable snapshot).
 * Logs one line per event.
 */
#pragma once

#include <stdbool.h>

#include <systemd/sd-event.h>

#include "bridge-internal.h"
#include "rpc.h"
#include "metrics.h"

struct dp_plugin;

struct dp_plugin_config {
	const char *plugin_dir;	 /* absolute, no trailing slash */
	const char *socket_name; /* file name inside plugin_dir */
	const char *resource;	 /* extended resource name */
	/* Called (loop thread) when the socket cannot be served again after the kubelet
	 * removed it: the daemon decides whether to exit. */
	void (*failed)(void *userdata, struct dp_plugin *p, int error);
	void *userdata;
	struct metrics *metrics; /* NULL = none; must outlive the plugin */
};

/* Strings are copied. Nothing is served before dp_plugin_start(). */
int dp_plugin_new(sd_event *loop, struct gc_runtime *rt, const struct dp_plugin_config *cfg,
		  struct dp_plugin **ret);
/*
 * Serves the socket and registers when kubelet.sock is there. -EADDRINUSE: another
 * plugin answers on the socket; -EEXIST: a non-socket is in the way (both logged).
 */
int dp_plugin_start(struct dp_plugin *p);
/*
 * Makes t (ownership taken) the table calls see; when its device list differs from the
 * last one, or force, every ListAndWatch stream gets it. Returns 1 when sent, 0 when
 * unchanged, -errno.
 */
int dp_plugin_publish(struct dp_plugin *p, struct dp_table *t, bool force);
/*
 * After events in the plugin dir: serves again if our socket is gone (kubelet restart),
 * registers if kubelet.sock is new.
 */
void dp_plugin_reconcile(struct dp_plugin *p, bool kubelet_event);
/* Stops serving and registering, removes our socket; the object goes when the server
 * has shut down, without blocking. Accepts NULL. */
void dp_plugin_free(struct dp_plugin *p);
