/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube: the smallest Kubernetes API-server client the DRA driver needs - JSON over HTTPS
 * with libcurl's multi interface, driven by the daemon's sd-event loop (no thread, and
 * nothing here ever blocks the loop: a stuck server costs a timeout, not a freeze).
 *
 * Credentials: a kubeconfig (`server`, `certificate-authority` or `-data`, `token` or
 * `tokenFile`) or the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, its token
 * re-read whenever the file changes, as projected tokens rotate, and ca.crt). TLS is
 * always verified against that CA and nothing else: a server whose certificate does not
 * chain to it gets no request (no bearer token leaves the process).
 *
 * Threads: everything on the loop thread; callbacks run on the loop.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>
#include <systemd/sd-event.h>

#include "common.h"

#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define KUBE_DEFAULT_TIMEOUT_MS 10000
#define KUBE_BODY_MAX (16u * 1024 * 1024) /* largest answer (or watch event) accepted */

struct kube_config {
	char *server;	  /* "https://host:port", no trailing slash */
	char *ca_file;	  /* PEM file, or NULL when ca_data */
	char *ca_data;	  /* PEM bytes (certificate-authority-data decoded), or NULL */
	size_t ca_len;
	char *token;	  /* a static bearer token, or NULL */
	char *token_file; /* read before each request when it changed; or NULL */
	char *source;	  /* for messages: the kubeconfig's path, or "in-cluster" */
};

/*
 * Reads a kubeconfig (YAML through libyaml; the current-context's cluster and user).
 * Relative paths in it are relative to the file's directory. -ENOENT, -EINVAL with
 * "FILE:LINE:COLUMN: key: reason" in *err ("FILE: key: reason" for a key that is absent;
 * missing server, no CA, no token, a client-certificate-only user, an http:// server,
 * insecure-skip-tls-verify: true), -EBADMSG (not YAML), -ENOMEM. When the user has both,
 * tokenFile wins over token (it is the one that rotates): ret has one of them.
 */
int kube_config_load(const char *path, struct kube_config **ret, struct rc_error **err);
/* In-cluster config: env KUBERNETES_SERVICE_HOST/PORT (IPv6 hosts bracketed), sa_dir
 * (NULL = KUBE_SA_DIR) holding token and ca.crt. -ENOENT/-EINVAL with the reason. */
int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, struct rc_error **err);
void kube_config_free(struct kube_config *c);
DEFINE_CLEANUP_FUNC(struct kube_config, kube_config_free)

struct kube_client;

/* cfg is copied. */
int kube_client_new(sd_event *loop, const struct kube_config *cfg, struct kube_client **ret);
/* Cancels every call in flight; their callbacks do not run. Accepts NULL. */
void kube_client_free(struct kube_client *c);

struct kube_reply {
	long status;	  /* HTTP status; 0 = no answer (connect, TLS, timeout, too large) */
	const char *body; /* NUL-terminated; "" when none */
	size_t len;
	/* One line for the log when status is 0 or >= 300 (redirects are never followed):
	 * the transport error ("TLS: certificate verify failed ...", "timed out after 10000
	 * ms", "connect: ...", "answer larger than N bytes", "token file F: reason"), or the
	 * Status object's message the server sent ("resourceclaims \"x\" not found"),
	 * else "HTTP N: <start of the body>". NULL otherwise. */
	const char *error;
	unsigned retry_after_sec; /* Retry-After of a 429/5xx answer, 0 = none */
};

/* Runs once on the loop, unless the call was cancelled. r is valid during the call. */
typedef void (*kube_done_fn)(void *userdata, const struct kube_reply *r);

struct kube_call;

/*
 * Sends method ("GET", "POST", "PUT", "DELETE") to path (starting with '/', query
 * included, already escaped: see kube_escape) with body (JSON text, or NULL) and
 * Accept/Content-Type application/json. timeout_ms 0 = KUBE_DEFAULT_TIMEOUT_MS.
 * ret may be NULL. Returns 0 or -errno (-EINVAL: another method, a path with blanks or
 * control bytes, done NULL; -E2BIG: body over KUBE_BODY_MAX; nothing was sent, done will
 * not run). done never runs inside kube_call(); a token file that cannot be read (and no
 * earlier token) makes done run on the loop with status 0 and the reason.
 */
int kube_call(struct kube_client *c, const char *method, const char *path, const char *body,
	      unsigned timeout_ms, kube_done_fn done, void *userdata, struct kube_call **ret);

/* One watch event: type "ADDED", "MODIFIED", "DELETED", "BOOKMARK" or "ERROR"; object
 * owned by the client (valid during the call). */
typedef void (*kube_event_fn)(void *userdata, const char *type, const cJSON *object);

/*
 * A watch: GET path (which must carry watch=true and the resourceVersion to start at)
 * with no overall timeout; each newline-delimited event goes to ev. end runs once when
 * the stream ends for any reason (the server closed it, an error, an event that is not
 * JSON or exceeds KUBE_BODY_MAX): the caller lists again and re-watches. end's reply:
 * status 200 and no error when the server closed the stream cleanly; the server's status
 * and Status message when it refused the watch (e.g. 410); status 0 with the reason when
 * the stream broke. ev and end may cancel the watch or free the client.
 */
int kube_watch(struct kube_client *c, const char *path, kube_event_fn ev, kube_done_fn end,
	       void *userdata, struct kube_call **ret);

/* Cancels: its callbacks will not run. Accepts NULL (and a call that already finished
 * is not valid here: the pointer dies when done/end returns). */
void kube_call_cancel(struct kube_call *call);

/* Percent-encodes s for a query value (malloc'd; NULL on OOM). */
char *kube_escape(const char *s);
