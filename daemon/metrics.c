/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' Prometheus endpoint (metrics.h): a registry of fixed series under one
 * mutex, rendered into the text exposition format on each scrape, and the liveness probe
 * the loop answers. We bind the listen socket ourselves so a bad address fails with its
 * real errno, then hand it to libmicrohttpd.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "build-config.h"
#include "common.h"
#include "loop.h"
#include "metrics.h"
#include "rdma-cdi-commit.h"

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
	int registered; /* -1: no series */
};

struct device {
	char *device, *pci, *pool;
	char reason[128];
	bool healthy;
	unsigned gen;
	int64_t since; /* Unix seconds */
};

struct metrics {
	pthread_mutex_t lock;
	const char *daemon;
	bool bridge, dra; /* the series only that daemon has */
	struct resource *res;
	size_t n_res;
	unsigned devices_gen;
	struct device *dev;
	size_t n_dev, cap_dev;
	unsigned health_gen;
	uint64_t rescans[N_REASONS][2];
	struct histogram rescan_h;
	uint64_t spec_write_failures;
	uint64_t reloads[2]; /* applied, rejected */
	bool config_rejected;
	const char *netns_mode;				     /* a constant, NULL: unknown */
	uint64_t prepare[2], unprepare[2], slice_publish[2]; /* ok, failed */

	/* /healthz: pings posted to the loop and answered by it (at most one out). */
	struct mailbox *mb;
	pthread_cond_t answered_cond;
	uint64_t pings_sent, pings_answered;
	bool stopping;

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
static struct resource *resource_get(struct metrics *m, const char *name)
{
	struct resource *r;

	for (size_t i = 0; i < m->n_res; i++)
		if (strcmp(m->res[i].name, name) == 0)
			return &m->res[i];
	if (m->n_res >= METRICS_RESOURCES_MAX)
		return NULL;
	r = realloc(m->res, (m->n_res + 1) * sizeof(*r));
	if (!r)
		return NULL;
	m->res = r;
	r = &m->res[m->n_res];
	*r = (struct resource){.name = strdup(name), .registered = -1};
	if (!r->name)
		return NULL;
	m->n_res++;
	return r;
}

void metrics_call(struct metrics *m, const char *resource, enum metrics_call call, bool ok,
		  uint64_t usec)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r && call == METRICS_ALLOCATE) {
		r->alloc[!ok]++;
		observe(&r->alloc_h, alloc_bounds, ELEMENTSOF(alloc_bounds), usec);
	} else if (r) {
		r->preferred[!ok]++;
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_registration(struct metrics *m, const char *resource, bool ok)
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

void metrics_kubelet_registered(struct metrics *m, const char *resource, int state)
{
	struct resource *r;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	r = resource_get(m, resource);
	if (r)
		r->registered = state < 0 ? -1 : state > 0;
	pthread_mutex_unlock(&m->lock);
}

void metrics_devices_begin(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->devices_gen++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_devices_set(struct metrics *m, const char *resource, size_t healthy, size_t unhealthy)
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

void metrics_devices_keep(struct metrics *m, const char *resource)
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

void metrics_devices_end(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_res; i++)
		if (m->res[i].devices_gen != m->devices_gen)
			m->res[i].has_devices = false;
	pthread_mutex_unlock(&m->lock);
}

/* ---- device health ---------------------------------------------------------------------- */

static void device_clear(struct device *d)
{
	free(d->device);
	free(d->pci);
	free(d->pool);
}

void metrics_health_begin(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->health_gen++;
	pthread_mutex_unlock(&m->lock);
}

/* The entry of (device, pci, pool), created on first use (since = now); NULL when out of
 * memory or full. Under the lock. */
static struct device *device_get(struct metrics *m, const char *device, const char *pci,
				 const char *pool)
{
	struct device *d;

	for (size_t i = 0; i < m->n_dev; i++) {
		d = &m->dev[i];
		if (strcmp(d->device, device) == 0 && strcmp(d->pci, pci) == 0 &&
		    strcmp(d->pool, pool) == 0)
			return d;
	}
	if (m->n_dev >= METRICS_DEVICES_MAX || ARRAY_RESERVE(m->dev, m->cap_dev, m->n_dev + 1) < 0)
		return NULL;
	d = &m->dev[m->n_dev];
	*d = (struct device){.device = strdup(device), .pci = strdup(pci), .pool = strdup(pool)};
	if (!d->device || !d->pci || !d->pool) {
		device_clear(d);
		return NULL;
	}
	d->since = -1; /* stamped by the caller */
	m->n_dev++;
	return d;
}

void metrics_health_set(struct metrics *m, const char *device, const char *pci, const char *pool,
			bool healthy, const char *reason)
{
	struct device *d;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	d = device_get(m, device, pci ? pci : "", pool ? pool : "");
	if (d) {
		if (d->since < 0 || d->healthy != healthy ||
		    strncmp(d->reason, reason ? reason : "", sizeof(d->reason) - 1) != 0)
			d->since = (int64_t)time(NULL);
		d->healthy = healthy;
		snprintf(d->reason, sizeof(d->reason), "%s", healthy || !reason ? "" : reason);
		d->gen = m->health_gen;
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_health_end(struct metrics *m)
{
	size_t n = 0;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->n_dev; i++) {
		if (m->dev[i].gen == m->health_gen)
			m->dev[n++] = m->dev[i];
		else
			device_clear(&m->dev[i]);
	}
	m->n_dev = n;
	pthread_mutex_unlock(&m->lock);
}

/* ---- counters --------------------------------------------------------------------------- */

void metrics_rescan(struct metrics *m, const char *reason, bool ok, uint64_t usec)
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

/* Adds one to v[!ok] under the lock: the plain counters. */
static void count(struct metrics *m, uint64_t *v, bool ok)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	v[!ok]++;
	pthread_mutex_unlock(&m->lock);
}

void metrics_spec_write_failed(struct metrics *m)
{
	if (m)
		count(m, &m->spec_write_failures, true);
}

void metrics_config_reload(struct metrics *m, bool applied)
{
	if (!m)
		return;
	count(m, m->reloads, applied);
	pthread_mutex_lock(&m->lock);
	m->config_rejected = !applied;
	pthread_mutex_unlock(&m->lock);
}

void metrics_netns_mode(struct metrics *m, const char *mode)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->netns_mode = mode;
	pthread_mutex_unlock(&m->lock);
}

void metrics_dra_claim(struct metrics *m, enum metrics_claim what, bool ok)
{
	if (m)
		count(m, what == METRICS_PREPARE ? m->prepare : m->unprepare, ok);
}

void metrics_dra_slice_publish(struct metrics *m, bool ok)
{
	if (m)
		count(m, m->slice_publish, ok);
}

uint64_t metrics_now_usec(void)
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
 * Names are validated already; this keeps the output valid whatever they are. */
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

/* `key="value"` with the value escaped, after sep ("" or ","). */
static void put_pair_label(struct text *t, const char *sep, const char *key, const char *v)
{
	put(t, "%s%s=\"", sep, key);
	put_label(t, v);
	put(t, "\"");
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

/* A counter family by result: its two series, with resource (NULL: none). */
static void put_results(struct text *t, const char *name, const char *resource, const uint64_t v[2],
			const char *ok, const char *bad)
{
	for (int i = 0; i < 2; i++) {
		put(t, "%s{", name);
		if (resource)
			put_pair_label(t, "", "resource", resource);
		put(t, "%sresult=\"%s\"} %llu\n", resource ? "," : "", i ? bad : ok,
		    (unsigned long long)v[i]);
	}
}

static void render_devices(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_device_healthy", "gauge",
		   "1 when the device offered is healthy, 0 when not (reason says why).");
	for (size_t i = 0; i < m->n_dev; i++) {
		const struct device *d = &m->dev[i];

		put_pair_label(t, "rdma_cdi_device_healthy{", "device", d->device);
		put_pair_label(t, ",", "pci", d->pci);
		put_pair_label(t, ",", "pool", d->pool);
		put_pair_label(t, ",", "reason", d->reason);
		put(t, "} %d\n", d->healthy);
	}
	put_family(t, "rdma_cdi_device_health_last_change_timestamp_seconds", "gauge",
		   "Unix time of the device's last health change (first seen counts).");
	for (size_t i = 0; i < m->n_dev; i++) {
		const struct device *d = &m->dev[i];

		put_pair_label(t, "rdma_cdi_device_health_last_change_timestamp_seconds{", "device",
			       d->device);
		put_pair_label(t, ",", "pci", d->pci);
		put_pair_label(t, ",", "pool", d->pool);
		put(t, "} %lld\n", (long long)d->since);
	}
	put_family(t, "rdma_cdi_devices", "gauge", "Devices offered for the resource, by health.");
	for (size_t i = 0; i < m->n_res; i++) {
		const struct resource *r = &m->res[i];

		if (!r->has_devices)
			continue;
		put_pair_label(t, "rdma_cdi_devices{", "resource", r->name);
		put(t, ",health=\"healthy\"} %zu\n", r->healthy);
		put_pair_label(t, "rdma_cdi_devices{", "resource", r->name);
		put(t, ",health=\"unhealthy\"} %zu\n", r->unhealthy);
	}
}

static void render_kubelet(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_kubelet_registered", "gauge",
		   "1 while the resource is registered with the kubelet, else 0.");
	for (size_t i = 0; i < m->n_res; i++)
		if (m->res[i].registered >= 0) {
			put_pair_label(t, "rdma_cdi_kubelet_registered{", "resource",
				       m->res[i].name);
			put(t, "} %d\n", m->res[i].registered);
		}
	put_family(t, "rdma_cdi_registrations_total", "counter",
		   "Registrations with the kubelet, by result.");
	for (size_t i = 0; i < m->n_res; i++)
		if (m->res[i].registrations[0] || m->res[i].registrations[1] ||
		    m->res[i].registered >= 0)
			put_results(t, "rdma_cdi_registrations_total", m->res[i].name,
				    m->res[i].registrations, "ok", "failed");
}

static void render_bridge(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_allocate_total", "counter", "Allocate calls answered, by result.");
	for (size_t i = 0; i < m->n_res; i++)
		put_results(t, "rdma_cdi_allocate_total", m->res[i].name, m->res[i].alloc, "ok",
			    "rejected");
	put_family(t, "rdma_cdi_allocate_duration_seconds", "histogram",
		   "Time to answer an Allocate call.");
	for (size_t i = 0; i < m->n_res; i++) {
		struct text l = {0};

		put_pair_label(&l, "", "resource", m->res[i].name);
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
		put_results(t, "rdma_cdi_preferred_allocation_total", m->res[i].name,
			    m->res[i].preferred, "ok", "rejected");
}

static void render_dra(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_dra_prepare_total", "counter",
		   "Claims of NodePrepareResources calls answered, by result.");
	put_results(t, "rdma_cdi_dra_prepare_total", NULL, m->prepare, "ok", "failed");
	put_family(t, "rdma_cdi_dra_unprepare_total", "counter",
		   "Claims of NodeUnprepareResources calls answered, by result.");
	put_results(t, "rdma_cdi_dra_unprepare_total", NULL, m->unprepare, "ok", "failed");
	put_family(t, "rdma_cdi_dra_slice_publish_total", "counter",
		   "ResourceSlice creates, updates and deletes answered, by result.");
	put_results(t, "rdma_cdi_dra_slice_publish_total", NULL, m->slice_publish, "ok", "failed");
}

static void render_core(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_rescans_total", "counter",
		   "Scans of the node by reason and result.");
	for (size_t i = 0; i < N_REASONS; i++)
		for (int j = 0; j < 2; j++)
			put(t, "rdma_cdi_rescans_total{reason=\"%s\",result=\"%s\"} %llu\n",
			    rescan_reasons[i], j ? "failed" : "ok",
			    (unsigned long long)m->rescans[i][j]);
	put_family(t, "rdma_cdi_rescan_duration_seconds", "histogram",
		   "Wall time of a finished scan.");
	put_histogram(t, "rdma_cdi_rescan_duration_seconds", "", &m->rescan_h, rescan_bounds,
		      ELEMENTSOF(rescan_bounds));
	put_family(t, "rdma_cdi_spec_write_failures_total", "counter",
		   "CDI spec writes that failed (the last good spec stayed).");
	put(t, "rdma_cdi_spec_write_failures_total %llu\n",
	    (unsigned long long)m->spec_write_failures);
	put_family(t, "rdma_cdi_config_reloads_total", "counter",
		   "Changed config files applied or rejected.");
	put(t, "rdma_cdi_config_reloads_total{result=\"applied\"} %llu\n",
	    (unsigned long long)m->reloads[0]);
	put(t, "rdma_cdi_config_reloads_total{result=\"rejected\"} %llu\n",
	    (unsigned long long)m->reloads[1]);
	put_family(t, "rdma_cdi_config_rejected", "gauge",
		   "1 while the config file on disk is rejected (the previous one in force).");
	put(t, "rdma_cdi_config_rejected %d\n", m->config_rejected);
	put_family(t, "rdma_cdi_netns_mode", "gauge",
		   "The kernel's RDMA netns mode (unknown: no RDMA netlink); always 1.");
	put_pair_label(t, "rdma_cdi_netns_mode{", "mode",
		       m->netns_mode ? m->netns_mode : "unknown");
	put(t, "} 1\n");
}

static void render(struct text *t, const struct metrics *m)
{
	put_family(t, "rdma_cdi_build_info", "gauge",
		   "The running daemon, its version and commit; always 1.");
	put_pair_label(t, "rdma_cdi_build_info{", "daemon", m->daemon);
	put_pair_label(t, ",", "version", RDMA_CDI_VERSION);
	put_pair_label(t, ",", "commit", RDMA_CDI_COMMIT);
	put(t, "} 1\n");
	render_devices(t, m);
	render_kubelet(t, m);
	if (m->bridge)
		render_bridge(t, m);
	if (m->dra)
		render_dra(t, m);
	render_core(t, m);
}

int metrics_render(struct metrics *m, char **ret, size_t *ret_len)
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

/* ---- /healthz: asking the loop ---------------------------------------------------------- */

/* On the loop thread: the loop is alive, every ping out is answered. */
static void on_ping(void *userdata)
{
	struct metrics *m = userdata;

	pthread_mutex_lock(&m->lock);
	m->pings_answered = m->pings_sent;
	pthread_cond_broadcast(&m->answered_cond);
	pthread_mutex_unlock(&m->lock);
}

/* On an HTTP thread: NULL when the loop answered within METRICS_HEALTHZ_WAIT_MSEC, else
 * why not. */
static const char *ask_loop(struct metrics *m)
{
	const char *why = NULL;
	struct timespec until;
	uint64_t want;

	if (!m->mb)
		return "no event loop to ask";
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += METRICS_HEALTHZ_WAIT_MSEC / 1000;
	until.tv_nsec += (METRICS_HEALTHZ_WAIT_MSEC % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&m->lock);
	/* One ping out at a time: probes of a stuck loop must not grow its queue. */
	if (m->pings_answered == m->pings_sent && !m->stopping) {
		if (mailbox_post(m->mb, on_ping, m) < 0)
			why = "out of memory";
		else
			m->pings_sent++;
	}
	want = m->pings_sent;
	while (!why && !m->stopping && m->pings_answered < want)
		if (pthread_cond_timedwait(&m->answered_cond, &m->lock, &until) == ETIMEDOUT)
			break;
	if (!why && m->stopping)
		why = "the daemon is stopping";
	else if (!why && m->pings_answered < want)
		why = "the event loop did not answer in time: it is stuck or overloaded";
	pthread_mutex_unlock(&m->lock);
	return why;
}

/* ---- serving --------------------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
			     enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(body), (void *)body, mode);
	enum MHD_Result r;

	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free((void *)body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	r = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result reply_const(struct MHD_Connection *c, unsigned status, const char *body)
{
	return reply(c, status, body, MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result on_healthz(struct metrics *m, struct MHD_Connection *c)
{
	const char *why = ask_loop(m);
	char *body;

	if (!why)
		return reply_const(c, MHD_HTTP_OK, "ok\n");
	body = strdup_printf("unhealthy: %s\n", why);
	if (!body)
		return reply_const(c, MHD_HTTP_SERVICE_UNAVAILABLE, "unhealthy: out of memory\n");
	return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, body, MHD_RESPMEM_MUST_FREE);
}

static enum MHD_Result on_metrics(struct metrics *m, struct MHD_Connection *c)
{
	struct MHD_Response *resp;
	enum MHD_Result r;
	char *text;
	size_t len;

	if (metrics_render(m, &text, &len) < 0)
		return reply_const(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
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
	struct metrics *m = cls;
	bool healthz = strcmp(url, METRICS_HEALTHZ_PATH) == 0;

	if (!healthz && strcmp(url, METRICS_PATH) != 0)
		return reply_const(c, MHD_HTTP_NOT_FOUND,
				   "not found: the metrics are at " METRICS_PATH
				   ", the liveness probe at " METRICS_HEALTHZ_PATH "\n");
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_const(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	return healthz ? on_healthz(m, c) : on_metrics(m, c);
}

static int listen_on(const char *address, char *bound, size_t boundlen, struct rc_error **err)
{
	struct sockaddr_storage ss;
	socklen_t len;
	_cleanup_close_ int fd = -1;
	int one = 1, r;

	r = parse_listen_address(address, &ss, &len, err);
	if (r < 0)
		return r;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	/* Restarting the daemon must not wait out TIME_WAIT connections of the last one. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, METRICS_CONNECTIONS_MAX) < 0)
		goto fail;
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		format_sockaddr(&ss, bound, boundlen);
	return TAKE_FD(fd);
fail:
	return rc_error_set(err, -errno, "cannot listen on %s: %s%s", address, strerror(errno),
			    errno == EADDRNOTAVAIL ? " (not an address of this host)"
			    : errno == EADDRINUSE  ? " (another process serves that port)"
			    : errno == EACCES	   ? " (ports below 1024 need CAP_NET_BIND_SERVICE)"
						   : "");
}

/* Serves m on address. A thread per connection: a /healthz waiting for a stuck loop must
 * not hold up a scrape. */
static int serve(struct metrics *m, const char *address, struct rc_error **err)
{
	int fd = listen_on(address, m->address, sizeof(m->address), err);

	if (fd < 0)
		return fd;
	m->httpd = MHD_start_daemon(
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC, 0, NULL,
	    NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONNECTIONS_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_TIMEOUT_SEC,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_REQUEST_MAX, MHD_OPTION_END);
	if (!m->httpd) {
		int e = errno ? -errno : -ENOMEM;

		/* fd is not closed here: libmicrohttpd may have closed it already. */
		return rc_error_set(err, e, "starting the HTTP server on %s failed: %s", address,
				    strerror(-e));
	}
	return 0;
}

int metrics_new(const char *address, const char *daemon, struct mailbox *mb, struct metrics **ret,
		struct rc_error **err)
{
	struct metrics *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;
	int r;

	if (!m)
		return rc_error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&m->lock, NULL);
	/* The /healthz deadline must not move with the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->answered_cond, &ca);
	pthread_condattr_destroy(&ca);
	m->daemon = daemon ? daemon : "";
	m->bridge = strcmp(m->daemon, "bridge") == 0;
	m->dra = strcmp(m->daemon, "dra") == 0;
	m->mb = mb;
	if (address) {
		r = serve(m, address, err);
		if (r < 0) {
			metrics_free(m);
			return r;
		}
	}
	*ret = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	int fd;

	if (!m || !m->httpd)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->answered_cond);
	pthread_mutex_unlock(&m->lock);
	fd = (int)MHD_quiesce_daemon(m->httpd);
	MHD_stop_daemon(m->httpd);
	m->httpd = NULL;
	/* The listen socket is ours: libmicrohttpd does not close one it was given after
	 * quiescing. */
	if (fd >= 0)
		close(fd);
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	metrics_stop(m);
	for (size_t i = 0; i < m->n_res; i++)
		free(m->res[i].name);
	free(m->res);
	for (size_t i = 0; i < m->n_dev; i++)
		device_clear(&m->dev[i]);
	free(m->dev);
	pthread_cond_destroy(&m->answered_cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

const char *metrics_address(const struct metrics *m)
{
	return m ? m->address : "";
}
