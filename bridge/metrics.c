/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus endpoint of the bridge (metrics.h): a registry of fixed series under
 * one mutex, rendered into the text exposition format on each scrape by libmicrohttpd's
 * internal polling thread. We bind the listen socket ourselves so a bad address fails
 * with its real errno, then hand it to libmicrohttpd.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "common.h"
#include "metrics.h"

#define ADDRESS_MAX 64 /* "[ffff:...:ffff]:65535" is 47 */

/* Allocate answers in about 10 us here (docs/benchmarks.md): the buckets go from there. */
static const double alloc_bounds[] = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
				      0.001,   0.0025,	 0.005,	  0.01,	  0.025,   0.1};
/* A scan of 10 devices takes about a millisecond, one of 2,000 about a second. */
static const double rescan_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
				       0.1,    0.25,  0.5,    1,     2.5,  5,	  10};
#define BOUNDS_MAX 16

static const char *const rescan_reasons[] = {"start", "hotplug", "periodic", "request"};
#define N_REASONS ELEMENTSOF(rescan_reasons)

struct histogram {
	uint64_t bucket[BOUNDS_MAX + 1]; /* not cumulative; the last is +Inf */
	uint64_t count, sum_usec;
};

struct resource {
	char *name;
	uint64_t alloc[2], preferred[2], registrations[2]; /* [0] ok, [1] rejected/failed */
	struct histogram alloc_h;
	bool has_devices;
	unsigned devices_gen;
	size_t healthy, unhealthy;
};

struct dp_metrics {
	pthread_mutex_t lock;
	char *version;
	struct resource *res;
	size_t n_res;
	unsigned devices_gen;
	uint64_t rescans[N_REASONS][2];
	struct histogram rescan_h;
	uint64_t spec_write_failures;
	uint64_t reloads[2]; /* applied, rejected */
	const char *netns_mode; /* a constant, NULL: unknown */
	struct MHD_Daemon *httpd;
	char address[ADDRESS_MAX];
};

/* ---- recording ------------------------------------------------------------------------- */

static void observe(struct histogram *h, const double *bounds, size_t n, uint64_t usec)
{
	double s = (double)usec / 1e6;
	size_t i = 0;

	while (i < n && s > bounds[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_usec += usec;
}

/* The entry of a resource, created on first use; NULL when out of memory or full. Under
 * the lock. */
static struct resource *resource_get(struct dp_metrics *m, const char *name)
{
	struct resource *r;

	for (size_t i = 0; i < m->n_res; i++)
		if (strcmp(m->res[i].name, name) == 0)
			return &m->res[i];
	if (m->n_res >= DP_METRICS_RESOURCES_MAX)
		return NULL;
	r = realloc(m->res, (m->n_res + 1) * sizeof(*r));
	if (!r)
		return NULL;
	m->res = r;
	r = &m->res[m->n_res];
	*r = (struct resource){.name = strdup(name)};
	if (!r->name)
		return NULL;
	m->n_res++;
	return r;
}

void dp_metrics_call(struct dp_metrics *m, const char *resource, enum dp_metrics_call call, bool ok,
		     uint64_t usec)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r && call == DP_METRICS_ALLOCATE) {
		r->alloc[!ok]++;
		observe(&r->alloc_h, alloc_bounds, ELEMENTSOF(alloc_bounds), usec);
	} else if (r) {
		r->preferred[!ok]++;
	}
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_registration(struct dp_metrics *m, const char *resource, bool ok)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r)
		r->registrations[!ok]++;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_devices_begin(struct dp_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->devices_gen++;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_devices_set(struct dp_metrics *m, const char *resource, size_t healthy,
			    size_t unhealthy)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r) {
		r->has_devices = true;
		r->devices_gen = m->devices_gen;
		r->healthy = healthy;
		r->unhealthy = unhealthy;
	}
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_devices_keep(struct dp_metrics *m, const char *resource)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r)
		r->devices_gen = m->devices_gen;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_devices_end(struct dp_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_res; i++)
		if (m->res[i].devices_gen != m->devices_gen)
			m->res[i].has_devices = false;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_rescan(struct dp_metrics *m, const char *reason, bool ok, uint64_t usec)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < N_REASONS; i++)
		if (strcmp(rescan_reasons[i], reason) == 0)
			m->rescans[i][!ok]++;
	if (usec > 0)
		observe(&m->rescan_h, rescan_bounds, ELEMENTSOF(rescan_bounds), usec);
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_spec_write_failed(struct dp_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->spec_write_failures++;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_config_reload(struct dp_metrics *m, bool applied)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->reloads[!applied]++;
	pthread_mutex_unlock(&m->lock);
}

void dp_metrics_netns_mode(struct dp_metrics *m, const char *mode)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->netns_mode = mode;
	pthread_mutex_unlock(&m->lock);
}

uint64_t dp_metrics_now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- rendering ------------------------------------------------------------------------- */

struct text {
	char *buf;
	size_t len, size;
	bool oom;
};

static void _printf_(2, 3) put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->size - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if ((size_t)n < t->size - t->len)
			break;
		if (ARRAY_RESERVE(t->buf, t->size, t->len + (size_t)n + 1) < 0) {
			t->oom = true;
			return;
		}
	}
	t->len += (size_t)n;
}

/* A label value as the format quotes it: backslash, double quote and newline escaped.
 * Resource names are validated already; this keeps the output valid whatever they are. */
static void put_label(struct text *t, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			put(t, "\\%c", *v);
		else if (*v == '\n')
			put(t, "\\n");
		else
			put(t, "%c", *v);
	}
}

static void put_family(struct text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One histogram's series; labels is "" or `resource="..."` already escaped. */
static void put_histogram(struct text *t, const char *name, const char *labels,
			  const struct histogram *h, const double *bounds, size_t n)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";

	for (size_t i = 0; i < n; i++) {
		cum += h->bucket[i];
		put(t, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
		    (unsigned long long)cum);
	}
	put(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	    (unsigned long long)h->count);
	if (labels[0]) {
		put(t, "%s_sum{%s} %.6f\n", name, labels, (double)h->sum_usec / 1e6);
		put(t, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
	} else {
		put(t, "%s_sum %.6f\n", name, (double)h->sum_usec / 1e6);
		put(t, "%s_count %llu\n", name, (unsigned long long)h->count);
	}
}

static void put_pair(struct text *t, const char *name, const struct resource *r,
		     const uint64_t v[2], const char *ok, const char *bad)
{
	for (int i = 0; i < 2; i++) {
		put(t, "%s{resource=\"", name);
		put_label(t, r->name);
		put(t, "\",result=\"%s\"} %llu\n", i ? bad : ok, (unsigned long long)v[i]);
	}
}

static void render_resources(struct text *t, const struct dp_metrics *m)
{
	put_family(t, "rdma_cdi_devices", "gauge",
		   "HCAs in the device list advertised for the resource, by health.");
	for (size_t i = 0; i < m->n_res; i++) {
		const struct resource *r = &m->res[i];

		if (!r->has_devices)
			continue;
		put(t, "rdma_cdi_devices{resource=\"");
		put_label(t, r->name);
		put(t, "\",health=\"healthy\"} %zu\n", r->healthy);
		put(t, "rdma_cdi_devices{resource=\"");
		put_label(t, r->name);
		put(t, "\",health=\"unhealthy\"} %zu\n", r->unhealthy);
	}
	put_family(t, "rdma_cdi_allocate_total", "counter", "Allocate calls answered, by result.");
	for (size_t i = 0; i < m->n_res; i++)
		put_pair(t, "rdma_cdi_allocate_total", &m->res[i], m->res[i].alloc, "ok",
			 "rejected");
	put_family(t, "rdma_cdi_allocate_duration_seconds", "histogram",
		   "Time to answer an Allocate call.");
	for (size_t i = 0; i < m->n_res; i++) {
		struct text l = {0};

		put(&l, "resource=\"");
		put_label(&l, m->res[i].name);
		put(&l, "\"");
		if (l.oom)
			t->oom = true;
		else
			put_histogram(t, "rdma_cdi_allocate_duration_seconds", l.buf,
				      &m->res[i].alloc_h, alloc_bounds, ELEMENTSOF(alloc_bounds));
		free(l.buf);
	}
	put_family(t, "rdma_cdi_preferred_allocation_total", "counter",
		   "GetPreferredAllocation calls answered, by result.");
	for (size_t i = 0; i < m->n_res; i++)
		put_pair(t, "rdma_cdi_preferred_allocation_total", &m->res[i], m->res[i].preferred,
			 "ok", "rejected");
	put_family(t, "rdma_cdi_registrations_total", "counter",
		   "Register calls to the kubelet, by result.");
	for (size_t i = 0; i < m->n_res; i++)
		put_pair(t, "rdma_cdi_registrations_total", &m->res[i], m->res[i].registrations,
			 "ok", "failed");
}

static void render(struct text *t, const struct dp_metrics *m)
{
	put_family(t, "rdma_cdi_build_info", "gauge", "The running rdma-cdi's version; always 1.");
	put(t, "rdma_cdi_build_info{version=\"");
	put_label(t, m->version);
	put(t, "\"} 1\n");
	render_resources(t, m);
	put_family(t, "rdma_cdi_rescans_total", "counter",
		   "Scans of sysfs, by what started them and result.");
	for (size_t i = 0; i < N_REASONS; i++)
		for (int k = 0; k < 2; k++)
			put(t, "rdma_cdi_rescans_total{reason=\"%s\",result=\"%s\"} %llu\n",
			    rescan_reasons[i], k ? "failed" : "ok",
			    (unsigned long long)m->rescans[i][k]);
	put_family(t, "rdma_cdi_rescan_duration_seconds", "histogram",
		   "Wall time of a finished scan of sysfs.");
	put_histogram(t, "rdma_cdi_rescan_duration_seconds", "", &m->rescan_h, rescan_bounds,
		      ELEMENTSOF(rescan_bounds));
	put_family(t, "rdma_cdi_spec_write_failures_total", "counter",
		   "Writes of the CDI spec that failed (each retry counts).");
	put(t, "rdma_cdi_spec_write_failures_total %llu\n",
	    (unsigned long long)m->spec_write_failures);
	put_family(t, "rdma_cdi_config_reloads_total", "counter",
		   "Config file changes seen while running, by result.");
	put(t, "rdma_cdi_config_reloads_total{result=\"applied\"} %llu\n",
	    (unsigned long long)m->reloads[0]);
	put(t, "rdma_cdi_config_reloads_total{result=\"rejected\"} %llu\n",
	    (unsigned long long)m->reloads[1]);
	put_family(t, "rdma_cdi_netns_mode", "gauge",
		   "The kernel's RDMA netns mode (unknown: no RDMA netlink); always 1.");
	put(t, "rdma_cdi_netns_mode{mode=\"");
	put_label(t, m->netns_mode ? m->netns_mode : "unknown");
	put(t, "\"} 1\n");
}

int dp_metrics_render(struct dp_metrics *m, char **ret, size_t *ret_len)
{
	struct text t = {0};

	pthread_mutex_lock(&m->lock);
	render(&t, m);
	pthread_mutex_unlock(&m->lock);
	if (t.oom || !t.buf) {
		free(t.buf);
		return -ENOMEM;
	}
	*ret = t.buf;
	*ret_len = t.len;
	return 0;
}

/* ---- serving --------------------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/*
 * Answers at the first call of each request, before any body is read: we take no
 * body, and libmicrohttpd closes a connection whose body was not consumed.
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **req_cls)
{
	struct dp_metrics *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result r;
	char *text;
	size_t len;

	if (strcmp(url, DP_METRICS_PATH) != 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (dp_metrics_render(m, &text, &len) < 0)
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, DP_METRICS_CONTENT_TYPE);
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* host (numeric, of the family) and port as a socket address; -EINVAL when host is none. */
static int make_sockaddr(const char *host, bool ipv6, uint16_t port, struct sockaddr_storage *ret,
			 socklen_t *ret_len)
{
	struct sockaddr_storage ss = {0};

	if (ipv6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		*ret_len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		*ret_len = sizeof(*a);
	}
	*ret = ss;
	return 0;
}

int dp_metrics_parse_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			     struct rc_error **err)
{
	char host[ADDRESS_MAX];
	const char *port, *colon;
	long long p = 0;
	size_t hl;

	if (strnlen(s, ADDRESS_MAX) >= ADDRESS_MAX)
		goto bad;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			goto bad;
		hl = (size_t)(end - s - 1);
		port = end + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		if (memchr(s, ':', (size_t)(colon - s)))
			return rc_error_set(err, -EINVAL,
					    "\"%s\": put an IPv6 address in brackets: [ADDR]:PORT",
					    s);
		hl = (size_t)(colon - s);
		port = colon + 1;
	}
	memcpy(host, s[0] == '[' ? s + 1 : s, hl);
	host[hl] = '\0';
	if (!port[0] || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    (p = strtoll(port, NULL, 10)) < 1 || p > 65535)
		return rc_error_set(err, -EINVAL,
				    "\"%s\": the port must be a number from 1 to 65535", s);
	if (make_sockaddr(host, s[0] == '[', (uint16_t)p, ret, ret_len) == 0)
		return 0;
bad:
	return rc_error_set(
	    err, -EINVAL,
	    "\"%.*s\": expected a numeric IPv4:PORT or [IPv6]:PORT (127.0.0.1:9400, "
	    "[::1]:9400, 0.0.0.0:9400 for every interface)",
	    ADDRESS_MAX, s);
}

static void format_address(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(a->sin_port));
	}
}

static int listen_on(const char *address, char *bound, size_t boundlen, struct rc_error **err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	_cleanup_close_ int fd = -1;
	int one = 1, r;

	r = dp_metrics_parse_address(address, &ss, &len, err);
	if (r < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	/* Restarting the bridge must not wait out TIME_WAIT connections of the last one. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, DP_METRICS_CONNECTIONS_MAX) < 0)
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		format_address(&ss, bound, boundlen);
	return TAKE_FD(fd);
fail:
	return rc_error_set(err, -errno, "cannot listen on %s: %s%s", address, strerror(errno),
			    errno == EADDRNOTAVAIL ? " (not an address of this host)"
			    : errno == EADDRINUSE  ? " (another process serves that port)"
			    : errno == EACCES	   ? " (ports below 1024 need CAP_NET_BIND_SERVICE)"
						   : "");
}

int dp_metrics_new(const char *address, const char *version, struct dp_metrics **ret,
		   struct rc_error **err)
{
	struct dp_metrics *m = calloc(1, sizeof(*m));
	int fd;

	if (!m)
		return rc_error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->lock, NULL);
	m->version = strdup(version ? version : "");
	if (!m->version) {
		dp_metrics_free(m);
		return rc_error_set(err, -ENOMEM, "out of memory");
	}
	if (address) {
		fd = listen_on(address, m->address, sizeof(m->address), err);
		if (fd < 0) {
			dp_metrics_free(m);
			return fd;
		}
		/* Its own thread: scrapes never wait for the loop or the gRPC queue. */
		m->httpd = MHD_start_daemon(
		    MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC, 0, NULL, NULL, on_request, m,
		    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
		    (unsigned)DP_METRICS_CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
		    (unsigned)DP_METRICS_TIMEOUT_SEC, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		    (size_t)DP_METRICS_REQUEST_MAX, MHD_OPTION_END);
		if (!m->httpd) {
			int e = errno ? -errno : -ENOMEM;

			/* fd is not closed here: libmicrohttpd may have closed it already. */
			dp_metrics_free(m);
			return rc_error_set(err, e, "starting the HTTP server on %s failed: %s",
					    address, strerror(-e));
		}
	}
	*ret = m;
	return 0;
}

void dp_metrics_free(struct dp_metrics *m)
{
	if (!m)
		return;
	if (m->httpd) {
		int fd = (int)MHD_quiesce_daemon(m->httpd);

		MHD_stop_daemon(m->httpd);
		/* The listen socket is ours: libmicrohttpd does not close one it was given
		 * after quiescing. */
		if (fd >= 0)
			close(fd);
	}
	for (size_t i = 0; i < m->n_res; i++)
		free(m->res[i].name);
	free(m->res);
	free(m->version);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

const char *dp_metrics_address(const struct dp_metrics *m)
{
	return m ? m->address : "";
}
