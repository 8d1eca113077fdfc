/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API-server client: libcurl's multi interface on the daemon's sd-event loop.
 *
 * curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION -> one sd-event io source
 * per socket) and when to wake it (CURLMOPT_TIMERFUNCTION -> one time source); we hand
 * readiness back with curl_multi_socket_action(). Nothing blocks: name resolution runs in
 * curl's resolver thread, connects and TLS are non-blocking.
 *
 * Callbacks of the caller never run inside a curl callback: the write callback only
 * buffers, and after each curl_multi_socket_action() dispatch() hands out watch events and
 * finished calls. So a caller may start, cancel or free anything from its callbacks;
 * calls cancelled or finished during dispatch() are freed when it ends.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>

#include "build-config.h"
#include "kube-internal.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

#define KUBE_ERROR_MAX 512
#define KUBE_RETRY_AFTER_MAX 3600
#define KUBE_KEEPALIVE_SEC 30

struct kube_sock {
	struct kube_client *c;
	curl_socket_t fd;
	sd_event_source *src;
	struct kube_sock *prev, *next;
};

struct kube_call {
	struct kube_client *c;
	struct kube_call *prev, *next; /* in c->calls, or c->zombies once done */
	CURL *easy;
	struct curl_slist *headers;
	sd_event_source *defer; /* a call that fails before anything is sent */
	kube_done_fn done;
	kube_event_fn ev;
	void *userdata;
	unsigned timeout_ms;
	bool watch, in_multi, cancelled, finished, done_pending;
	bool mode_known, events; /* watch: a 200 answer whose body is events */
	bool too_large;
	CURLcode result;
	char *body;
	size_t len, cap;
	struct kube_lines lines;
	unsigned retry_after;
	char abort_reason[256]; /* why we ended it (a bad watch event, no token) */
	char curl_err[CURL_ERROR_SIZE];
	char error[KUBE_ERROR_MAX];
};

struct kube_client {
	sd_event *loop;
	CURLM *multi;
	sd_event_source *timer;
	char *server, *ca_file, *ca_data, *token_file;
	size_t ca_len;
	char *token; /* the static token, or the token file's current content */
	bool token_known;
	struct stat token_st;
	struct kube_call *calls, *zombies;
	struct kube_sock *socks;
	unsigned dispatching;
	bool free_pending;
};

static void list_unlink(struct kube_call **head, struct kube_call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else if (*head == k)
		*head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
}

static void list_push(struct kube_call **head, struct kube_call *k)
{
	k->prev = NULL;
	k->next = *head;
	if (*head)
		(*head)->prev = k;
	*head = k;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void headers_free(struct curl_slist *h)
{
	/* The Authorization header holds the token: wipe it before it is freed. */
	for (struct curl_slist *p = h; p; p = p->next)
		explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

static void call_free(struct kube_call *k)
{
	if (!k)
		return;
	sd_event_source_unref(k->defer);
	if (k->easy)
		curl_easy_cleanup(k->easy);
	headers_free(k->headers);
	kube_lines_done(&k->lines);
	free(k->body);
	free(k);
}

/* Out of curl and out of c->calls; no callback of it runs afterwards unless the caller
 * runs it. */
static void call_detach(struct kube_call *k)
{
	struct kube_client *c = k->c;

	if (k->in_multi) {
		curl_multi_remove_handle(c->multi, k->easy);
		k->in_multi = false;
	}
	k->defer = sd_event_source_disable_unref(k->defer);
	list_unlink(&c->calls, k);
}

/* Freed now, or when dispatch() ends if it runs (it may still hold the pointer). */
static void call_release(struct kube_call *k)
{
	struct kube_client *c = k->c;

	if (c->dispatching)
		list_push(&c->zombies, k);
	else
		call_free(k);
}

/* ---- text for the log ----------------------------------------------------------- */

static void set_line(char *dst, size_t size, const char *s, size_t len)
{
	size_t n = text_escape(dst, size, s, len, false);

	if (n >= size && size > 4)
		strcpy(dst + size - 4, "...");
}

/* The message of a Status object in body, or "HTTP N" (with the start of a body that is
 * not a Status). */
static void status_error(struct kube_call *k, long status)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	const cJSON *kind, *msg;
	char line[200];

	j = k->len ? cJSON_ParseWithLength(k->body, k->len) : NULL;
	kind = cJSON_GetObjectItemCaseSensitive(j, "kind");
	msg = cJSON_GetObjectItemCaseSensitive(j, "message");
	if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "Status") && cJSON_IsString(msg) &&
	    msg->valuestring[0]) {
		set_line(k->error, sizeof(k->error), msg->valuestring, strlen(msg->valuestring));
		return;
	}
	if (status >= 300 && status < 400) {
		snprintf(k->error, sizeof(k->error), "HTTP %ld: redirects are not followed",
			 status);
		return;
	}
	if (k->len == 0) {
		snprintf(k->error, sizeof(k->error), "HTTP %ld", status);
		return;
	}
	set_line(line, sizeof(line), k->body, k->len < 120 ? k->len : 120);
	snprintf(k->error, sizeof(k->error), "HTTP %ld: %s", status, line);
}

static void transport_error(struct kube_call *k)
{
	const char *what = k->curl_err[0] ? k->curl_err : curl_easy_strerror(k->result);
	char line[CURL_ERROR_SIZE + 16];

	set_line(line, sizeof(line), what, strlen(what));
	if (k->abort_reason[0])
		snprintf(k->error, sizeof(k->error), "%s", k->abort_reason);
	else if (k->too_large || k->result == CURLE_FILESIZE_EXCEEDED)
		snprintf(k->error, sizeof(k->error), "%s larger than %u bytes",
			 k->events ? "watch event" : "answer", KUBE_BODY_MAX);
	else if (k->result == CURLE_OPERATION_TIMEDOUT)
		snprintf(k->error, sizeof(k->error), "timed out after %u ms", k->timeout_ms);
	else if (k->result == CURLE_PEER_FAILED_VERIFICATION ||
		 k->result == CURLE_SSL_CONNECT_ERROR || k->result == CURLE_SSL_CACERT_BADFILE ||
		 k->result == CURLE_SSL_CERTPROBLEM)
		snprintf(k->error, sizeof(k->error), "TLS: %s", line);
	else if (k->result == CURLE_COULDNT_CONNECT || k->result == CURLE_COULDNT_RESOLVE_HOST)
		snprintf(k->error, sizeof(k->error), "connect: %s", line);
	else
		snprintf(k->error, sizeof(k->error), "%s", line);
}

/* ---- finishing ------------------------------------------------------------------ */

static bool deliver_line(struct kube_call *k, const char *line, size_t len);

static void call_finish(struct kube_call *k)
{
	struct kube_reply r = {0};
	long status = 0;
	const char *rest;
	size_t n;

	/* A stream that ended without a final newline: its last bytes are one more event. */
	if (k->watch && k->events && k->result == CURLE_OK && !k->abort_reason[0] &&
	    (n = kube_lines_pending(&k->lines, &rest)) > 0) {
		while (n > 0 && isspace((unsigned char)rest[n - 1]))
			n--;
		if (n > k->lines.max)
			k->too_large = true;
		else if (n > 0 && !deliver_line(k, rest, n))
			return; /* cancelled by its event callback */
	}
	if (k->easy)
		curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
	call_detach(k);
	k->finished = true;
	if (k->result != CURLE_OK || k->abort_reason[0] || k->too_large) {
		status = 0;
		transport_error(k);
		r.error = k->error;
	} else if (status >= 300) {
		status_error(k, status);
		r.error = k->error;
	}
	r.status = status;
	r.body = k->body && !k->events ? k->body : "";
	r.len = k->body && !k->events ? k->len : 0;
	if (status == 429 || status >= 500)
		r.retry_after_sec = k->retry_after;
	k->done(k->userdata, &r);
	call_release(k);
}

/* One event to the watch's callback; false when the call ended (cancelled, or finished
 * because the line is not an event). */
static bool deliver_line(struct kube_call *k, const char *line, size_t len)
{
	_cleanup_(cJSON_Deletep) cJSON *root = NULL;
	const cJSON *obj;
	_cleanup_rc_error_ struct rc_error *why = NULL;
	const char *type;
	int r;

	r = kube_event_parse(line, len, &root, &type, &obj, &why);
	if (r < 0) {
		snprintf(k->abort_reason, sizeof(k->abort_reason), "watch: %s",
			 rc_error_msg(why, r));
		call_finish(k);
		return false;
	}
	k->ev(k->userdata, type, obj);
	return !k->cancelled && !k->c->free_pending;
}

static bool call_has_line(const struct kube_call *k)
{
	return k->watch && k->events && !k->cancelled && !k->finished && k->lines.buf &&
	       memchr(k->lines.buf + k->lines.start, '\n', k->lines.len - k->lines.start);
}

/* The end of a section that ran callbacks: what they ended is freed now. */
static void dispatch_leave(struct kube_client *c)
{
	struct kube_call *k;

	if (--c->dispatching > 0)
		return;
	while ((k = c->zombies)) {
		list_unlink(&c->zombies, k);
		call_free(k);
	}
	if (c->free_pending) {
		c->free_pending = false;
		kube_client_free(c);
	}
}

/* Hands out what the last curl_multi_socket_action() produced: watch events first (so
 * they precede the end of their stream), then finished calls. */
static void dispatch(struct kube_client *c)
{
	struct kube_call *k;
	CURLMsg *m;
	int left;

	c->dispatching++;
	for (;;) {
		const char *line;
		size_t len;

		for (k = c->calls; k && !call_has_line(k); k = k->next)
			;
		if (!k || c->free_pending)
			break;
		while (kube_lines_next(&k->lines, &line, &len) > 0)
			if (!deliver_line(k, line, len))
				break;
	}
	while (!c->free_pending && (m = curl_multi_info_read(c->multi, &left))) {
		char *p = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &p);
		k = (struct kube_call *)p;
		k->result = m->data.result;
		k->done_pending = true;
	}
	/* The messages are not touched again: finishing one call may remove others. */
	while (!c->free_pending) {
		for (k = c->calls; k && !k->done_pending; k = k->next)
			;
		if (!k)
			break;
		call_finish(k);
	}
	dispatch_leave(c);
}

/* ---- curl <-> sd-event ---------------------------------------------------------- */

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct kube_sock *s = userdata;
	struct kube_client *c = s->c;
	int flags = 0, running;

	if (revents & (EPOLLIN | EPOLLHUP))
		flags |= CURL_CSELECT_IN;
	if (revents & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (revents & EPOLLERR)
		flags |= CURL_CSELECT_ERR;
	/* s may be freed inside (CURL_POLL_REMOVE). */
	curl_multi_socket_action(c->multi, fd, flags, &running);
	dispatch(c);
	return 0;
}

static int on_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct kube_client *c = userdata;
	int running;

	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	dispatch(c);
	return 0;
}

static void sock_free(struct kube_sock *s)
{
	struct kube_client *c = s->c;

	sd_event_source_disable_unref(s->src);
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	struct kube_client *c = userp;
	struct kube_sock *s = socketp;
	uint32_t events = 0;

	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_free(s);
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		events |= EPOLLOUT;
	if (s)
		return sd_event_source_set_io_events(s->src, events) < 0 ? -1 : 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->c = c;
	s->fd = fd;
	if (sd_event_add_io(c->loop, &s->src, fd, events, on_io, s) < 0) {
		free(s);
		return -1;
	}
	s->next = c->socks;
	if (c->socks)
		c->socks->prev = s;
	c->socks = s;
	curl_multi_assign(c->multi, fd, s);
	return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct kube_client *c = userp;
	uint64_t now = 0;

	if (timeout_ms < 0)
		return sd_event_source_set_enabled(c->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
	if (sd_event_now(c->loop, CLOCK_MONOTONIC, &now) < 0)
		return -1;
	if (sd_event_source_set_time(c->timer, now + (uint64_t)timeout_ms * 1000) < 0 ||
	    sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT) < 0)
		return -1;
	return 0;
}

/* ---- answers -------------------------------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct kube_call *k = userdata;
	size_t n = size * nmemb;

	if (k->watch && !k->mode_known) {
		long status = 0;

		curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &status);
		k->events = status == 200;
		k->mode_known = true;
	}
	if (k->events) {
		int r = kube_lines_feed(&k->lines, ptr, n);

		if (r == -E2BIG)
			k->too_large = true;
		else if (r < 0)
			snprintf(k->abort_reason, sizeof(k->abort_reason), "out of memory");
		return r < 0 ? 0 : n;
	}
	if (n > KUBE_BODY_MAX - k->len) {
		k->too_large = true;
		return 0;
	}
	if (ARRAY_RESERVE(k->body, k->cap, k->len + n + 1) < 0) {
		snprintf(k->abort_reason, sizeof(k->abort_reason), "out of memory");
		return 0;
	}
	memcpy(k->body + k->len, ptr, n);
	k->len += n;
	k->body[k->len] = '\0';
	return n;
}

/* Retry-After: delta-seconds or an HTTP date (RFC 9110 10.2.3), capped. */
static unsigned parse_retry_after(const char *v, size_t len)
{
	char buf[64];
	long long s;
	time_t t;

	while (len && isspace((unsigned char)v[len - 1]))
		len--;
	while (len && isspace((unsigned char)*v))
		v++, len--;
	if (len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, v, len);
	buf[len] = '\0';
	if (isdigit((unsigned char)buf[0])) {
		if (parse_int64(buf, &s) < 0 || s < 0)
			return 0;
	} else {
		t = curl_getdate(buf, NULL);
		if (t < 0)
			return 0;
		s = (long long)t - (long long)time(NULL);
		if (s < 0)
			s = 0;
	}
	return s > KUBE_RETRY_AFTER_MAX ? KUBE_RETRY_AFTER_MAX : (unsigned)s;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct kube_call *k = userdata;
	size_t n = size * nmemb;

	if (n >= 5 && !strncmp(ptr, "HTTP/", 5)) {
		/* A new answer (after a 1xx): forget what the previous one said. */
		k->retry_after = 0;
		k->mode_known = false;
	} else if (n > 12 && !strncasecmp(ptr, "Retry-After:", 12)) {
		k->retry_after = parse_retry_after(ptr + 12, n - 12);
	}
	return n;
}

/* ---- the token ------------------------------------------------------------------ */

/* The token to send: the static one, or the token file's content, read again when the
 * file changed (a projected token rotates by replacing the file). A file that cannot be
 * read keeps the last good token, if there is one; *why says why it was not read (NULL
 * returned when there is no token at all). */
static const char *current_token(struct kube_client *c, struct rc_error **why)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, start, n;
	struct stat st;
	char *t;
	int r;

	if (!c->token_file)
		return c->token;
	if (stat(c->token_file, &st) < 0) {
		rc_error_set(why, -errno, "token file %s: %s", c->token_file, strerror(errno));
		return c->token;
	}
	if (c->token_known && st.st_dev == c->token_st.st_dev && st.st_ino == c->token_st.st_ino &&
	    st.st_size == c->token_st.st_size && st.st_mtim.tv_sec == c->token_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == c->token_st.st_mtim.tv_nsec)
		return c->token;
	r = read_full_file_at(AT_FDCWD, c->token_file, KUBE_TOKEN_MAX + 1024, false, &buf, &len);
	if (r < 0) {
		rc_error_set(why, r, "token file %s: %s", c->token_file,
			     r == -EFBIG ? "too large" : strerror(-r));
		return c->token;
	}
	if (kube_token_check(buf, len, &start, &n) < 0) {
		explicit_bzero(buf, len);
		rc_error_set(why, -EINVAL, "token file %s: not a bearer token", c->token_file);
		return c->token;
	}
	t = strndup(buf + start, n);
	explicit_bzero(buf, len);
	if (!t) {
		rc_error_set(why, -ENOMEM, "out of memory");
		return c->token;
	}
	free_secret(c->token);
	c->token = t;
	c->token_st = st;
	c->token_known = true;
	return c->token;
}

/* ---- calls ---------------------------------------------------------------------- */

static int on_defer(sd_event_source *src, void *userdata)
{
	struct kube_call *k = userdata;
	struct kube_client *c = k->c;

	c->dispatching++;
	k->result = CURLE_OK;
	call_finish(k);
	dispatch_leave(c);
	return 0;
}

static bool path_ok(const char *path)
{
	if (!path || path[0] != '/')
		return false;
	for (const char *p = path; *p; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

static int set_method(struct kube_call *k, const char *method, const char *body)
{
	CURL *e = k->easy;

	if (!strcmp(method, "GET") && !body)
		return curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK ? 0 : -EINVAL;
	if (strcmp(method, "POST") && strcmp(method, "PUT") && strcmp(method, "DELETE"))
		return -EINVAL;
	if (strcmp(method, "POST") &&
	    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK)
		return -ENOMEM;
	if (!body && !strcmp(method, "DELETE"))
		return 0;
	if (curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
			     (curl_off_t)(body ? strlen(body) : 0)) != CURLE_OK ||
	    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body ? body : "") != CURLE_OK)
		return -ENOMEM;
	return 0;
}

static int add_header(struct curl_slist **h, const char *line)
{
	struct curl_slist *n = curl_slist_append(*h, line);

	if (!n)
		return -ENOMEM;
	*h = n;
	return 0;
}

static int set_options(struct kube_call *k, const char *path)
{
	struct kube_client *c = k->c;
	_cleanup_free_ char *url = NULL;
	CURL *e = k->easy;
	CURLcode rc = CURLE_OK;

	if (asprintf(&url, "%s%s", c->server, path) < 0) {
		url = NULL;
		return -ENOMEM;
	}
#define SET(opt, val)                                                                              \
	do {                                                                                       \
		if (rc == CURLE_OK)                                                                \
			rc = curl_easy_setopt(e, opt, val);                                        \
	} while (0)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_PRIVATE, (void *)k);
	SET(CURLOPT_PROTOCOLS_STR, "https");
	SET(CURLOPT_REDIR_PROTOCOLS_STR, "https");
	SET(CURLOPT_FOLLOWLOCATION, 0L);
	SET(CURLOPT_PATH_AS_IS, 1L);
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_ERRORBUFFER, k->curl_err);
	SET(CURLOPT_WRITEFUNCTION, on_write);
	SET(CURLOPT_WRITEDATA, (void *)k);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, (void *)k);
	SET(CURLOPT_USERAGENT, "rdma-cdi/" RDMA_CDI_VERSION);
	SET(CURLOPT_ACCEPT_ENCODING, "");
	/* TLS: always verified, against the configured CA alone (no system store). */
	SET(CURLOPT_SSL_VERIFYPEER, 1L);
	SET(CURLOPT_SSL_VERIFYHOST, 2L);
	SET(CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
	SET(CURLOPT_CAPATH, NULL);
	if (c->ca_data) {
		struct curl_blob blob = {
		    .data = c->ca_data, .len = c->ca_len, .flags = CURL_BLOB_COPY};

		SET(CURLOPT_CAINFO, NULL);
		SET(CURLOPT_CAINFO_BLOB, &blob);
	} else {
		SET(CURLOPT_CAINFO, c->ca_file);
		/* libcurl keeps a CA file it loaded for 24 h by default: the in-cluster
		 * ca.crt is rotated in place, so a new connection reads it again after a
		 * minute at most. */
		SET(CURLOPT_CA_CACHE_TIMEOUT, 60L);
	}
	SET(CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(k->watch || k->timeout_ms > KUBE_DEFAULT_TIMEOUT_MS ? KUBE_DEFAULT_TIMEOUT_MS
								       : k->timeout_ms));
	/* A watch is silent for minutes when nothing changes: keepalive finds a dead peer. */
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_TCP_KEEPIDLE, (long)KUBE_KEEPALIVE_SEC);
	SET(CURLOPT_TCP_KEEPINTVL, (long)KUBE_KEEPALIVE_SEC / 3);
	if (!k->watch) {
		SET(CURLOPT_TIMEOUT_MS, (long)k->timeout_ms);
		SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)KUBE_BODY_MAX);
	}
#undef SET
	if (rc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return rc == CURLE_OK ? 0 : -EINVAL;
}

static int call_start(struct kube_client *c, const char *method, const char *path, const char *body,
		      unsigned timeout_ms, kube_event_fn ev, kube_done_fn done, void *userdata,
		      struct kube_call **ret)
{
	struct kube_call *k;
	const char *token;
	_cleanup_rc_error_ struct rc_error *why = NULL;
	char *auth = NULL;
	int r;

	if (!c || !done || !method || !path_ok(path))
		return -EINVAL;
	if (body && strlen(body) > KUBE_BODY_MAX)
		return -E2BIG;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->c = c;
	k->done = done;
	k->ev = ev;
	k->watch = ev != NULL;
	k->userdata = userdata;
	k->timeout_ms = timeout_ms ? timeout_ms : KUBE_DEFAULT_TIMEOUT_MS;
	kube_lines_init(&k->lines, KUBE_BODY_MAX);
	k->easy = curl_easy_init();
	if (!k->easy) {
		call_free(k);
		return -ENOMEM;
	}
	r = set_options(k, path);
	if (r >= 0)
		r = set_method(k, method, body);
	if (r >= 0)
		r = add_header(&k->headers, "Accept: application/json");
	if (r >= 0 && body)
		r = add_header(&k->headers, "Content-Type: application/json");
	if (r >= 0)
		r = add_header(&k->headers, "Expect:");
	token = current_token(c, &why);
	if (r >= 0 && token) {
		if (asprintf(&auth, "Authorization: Bearer %s", token) < 0)
			auth = NULL, r = -ENOMEM;
		else
			r = add_header(&k->headers, auth);
		free_secret(auth);
	}
	if (r >= 0 && curl_easy_setopt(k->easy, CURLOPT_HTTPHEADER, k->headers) != CURLE_OK)
		r = -ENOMEM;
	if (r < 0) {
		call_free(k);
		return r;
	}
	if (!token) {
		/* Nothing to authenticate with: the call fails on the loop, with the reason. */
		snprintf(k->abort_reason, sizeof(k->abort_reason), "%s",
			 why ? rc_error_msg(why, -EACCES) : "no bearer token");
		r = sd_event_add_defer(c->loop, &k->defer, on_defer, k);
	} else if (curl_multi_add_handle(c->multi, k->easy) != CURLM_OK) {
		r = -ENOMEM;
	} else {
		k->in_multi = true;
	}
	if (r < 0) {
		call_free(k);
		return r;
	}
	list_push(&c->calls, k);
	if (ret)
		*ret = k;
	return 0;
}

int kube_call(struct kube_client *c, const char *method, const char *path, const char *body,
	      unsigned timeout_ms, kube_done_fn done, void *userdata, struct kube_call **ret)
{
	return call_start(c, method, path, body, timeout_ms, NULL, done, userdata, ret);
}

int kube_watch(struct kube_client *c, const char *path, kube_event_fn ev, kube_done_fn end,
	       void *userdata, struct kube_call **ret)
{
	if (!ev || !path || (!strstr(path, "watch=true") && !strstr(path, "watch=1")))
		return -EINVAL;
	return call_start(c, "GET", path, NULL, 0, ev, end, userdata, ret);
}

void kube_call_cancel(struct kube_call *k)
{
	if (!k || k->cancelled || k->finished)
		return;
	k->cancelled = true;
	call_detach(k);
	call_release(k);
}

/* ---- the client ----------------------------------------------------------------- */

static int global_init(void)
{
	static int done;

	/* curl_global_init is thread-safe in curl >= 7.84 when built so; the daemon calls
	 * this from its loop thread only. */
	if (!done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -ENOMEM;
		done = 1;
	}
	return 0;
}

static int dup_str(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int kube_client_new(sd_event *loop, const struct kube_config *cfg, struct kube_client **ret)
{
	struct kube_client *c;
	int r;

	if (!loop || !cfg || !cfg->server || strncmp(cfg->server, "https://", 8) ||
	    (!cfg->ca_file && !cfg->ca_data) || (!cfg->token && !cfg->token_file))
		return -EINVAL;
	r = global_init();
	if (r < 0)
		return r;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = sd_event_ref(loop);
	if ((r = dup_str(cfg->server, &c->server)) < 0 ||
	    (r = dup_str(cfg->ca_file, &c->ca_file)) < 0 ||
	    (r = dup_str(cfg->token_file, &c->token_file)) < 0 ||
	    (r = dup_str(cfg->token_file ? NULL : cfg->token, &c->token)) < 0)
		goto fail;
	if (cfg->ca_data) {
		c->ca_data = malloc(cfg->ca_len + 1);
		if (!c->ca_data) {
			r = -ENOMEM;
			goto fail;
		}
		memcpy(c->ca_data, cfg->ca_data, cfg->ca_len);
		c->ca_data[cfg->ca_len] = '\0';
		c->ca_len = cfg->ca_len;
	}
	r = sd_event_add_time(loop, &c->timer, CLOCK_MONOTONIC, 0, 1000, on_timer, c);
	if (r < 0)
		goto fail;
	r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
	if (r < 0)
		goto fail;
	c->multi = curl_multi_init();
	if (!c->multi) {
		r = -ENOMEM;
		goto fail;
	}
	if (curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer) != CURLM_OK ||
	    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c) != CURLM_OK) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	kube_client_free(c);
	return r;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	while (c->calls) {
		struct kube_call *k = c->calls;

		k->cancelled = true;
		call_detach(k);
		call_release(k);
	}
	if (c->dispatching) {
		/* A callback of ours is on the stack: dispatch() finishes the job. */
		c->free_pending = true;
		return;
	}
	if (c->multi)
		curl_multi_cleanup(c->multi);
	while (c->socks)
		sock_free(c->socks);
	sd_event_source_disable_unref(c->timer);
	sd_event_unref(c->loop);
	free(c->server);
	free(c->ca_file);
	free(c->ca_data);
	free(c->token_file);
	free_secret(c->token);
	free(c);
}

char *kube_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1), *p = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			*p++ = (char)ch;
		} else {
			*p++ = '%';
			*p++ = hex[ch >> 4];
			*p++ = hex[ch & 15];
		}
	}
	*p = '\0';
	return out;
}
