/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Node events of device health (events.h): the limits, the record of each device, and
 * the fire-and-forget POSTs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "events-internal.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

#ifndef USEC_PER_SEC
#define USEC_PER_SEC 1000000ULL
#endif
#define EVENT_NAME_MAX 253	   /* metadata.name: a DNS subdomain */
#define REPORTING_INSTANCE_MAX 128 /* the API server's limit */

/* ---- the limits (pure) ------------------------------------------------------------------- */

void dra_events_bucket_init(struct dra_events_bucket *b, const struct dra_events_limits *l,
			    uint64_t now)
{
	b->credit_usec = (uint64_t)l->burst * l->refill_usec;
	b->at_usec = now;
}

int dra_events_admit(struct dra_events_state *s, struct dra_events_bucket *b,
		     const struct dra_events_limits *l, uint64_t now, uint64_t *next)
{
	uint64_t cap = (uint64_t)l->burst * l->refill_usec, due;

	if (s->healthy == s->told)
		return 0;
	due = s->told_at ? s->told_at + l->interval_usec : 0;
	if (now < due) {
		*next = due < *next ? due : *next;
		return 0;
	}
	if (now > b->at_usec) {
		b->credit_usec = now - b->at_usec >= cap - b->credit_usec
					 ? cap
					 : b->credit_usec + (now - b->at_usec);
		b->at_usec = now;
	}
	if (b->credit_usec < l->refill_usec) {
		due = now + (l->refill_usec - b->credit_usec);
		*next = due < *next ? due : *next;
		return 0;
	}
	b->credit_usec -= l->refill_usec;
	s->told = s->healthy;
	s->told_at = now ? now : 1;
	return 1;
}

/* ---- the recorder ------------------------------------------------------------------------- */

struct ev_device {
	struct dra_events_state st;
	char name[DRA_DEVICE_NAME_MAX + 1];
	char rdma[DISC_NAME_MAX];
	char pci[DISC_PCI_MAX];
	char pool[128];
	char reason[128]; /* why it is unhealthy now */
	char said[128];	  /* the reason its last Warning gave, for the message of its return */
};

/* A POST in flight. */
struct ev_post {
	struct dra_events *e;
	struct kube_call *call;
	struct ev_post *next;
};

struct dra_events {
	sd_event *loop;
	sd_event_source *timer;
	struct kube_client *kube;
	char *driver, *node, *path;
	struct dra_events_limits limits;
	struct dra_events_bucket bucket;
	struct ev_device *devs; /* sorted by name */
	size_t n_devs;
	struct ev_post *posts;
	bool failing;	    /* the last POST failed: the next failures go unlogged */
	uint64_t last_name; /* the last name's suffix: names never repeat */
};

static int cmp_device(const void *a, const void *b)
{
	return strcmp(((const struct ev_device *)a)->name, ((const struct ev_device *)b)->name);
}

static void post_done(void *userdata, const struct kube_reply *r)
{
	struct ev_post *p = userdata, **pp;
	struct dra_events *e = p->e;

	for (pp = &e->posts; *pp && *pp != p; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = p->next;
	free(p);
	if (r->status >= 200 && r->status < 300) {
		if (e->failing)
			log_info("Node events are recorded again");
		e->failing = false;
		return;
	}
	if (!e->failing)
		log_warning("recording a Node event failed: %s; it is not retried, and further "
			    "failures are not logged until one succeeds",
			    r->error ? r->error : "no answer");
	e->failing = true;
}

/* "2026-12-04T00:30:00Z": the Time of firstTimestamp/lastTimestamp. */
static void rfc3339_now(char buf[static 32])
{
	time_t t = time(NULL);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

/* "<node>.<16 hex digits>", as the kubelet names its events: unique, a DNS subdomain. */
static void event_name(struct dra_events *e, char buf[static EVENT_NAME_MAX + 1])
{
	struct timespec ts;
	uint64_t ns = 0;
	int n = (int)strlen(e->node);

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	e->last_name = ns > e->last_name ? ns : e->last_name + 1;
	if (n > EVENT_NAME_MAX - 17)
		n = EVENT_NAME_MAX - 17;
	/* A cut node name must still end in an alphanumeric before the '.'. */
	while (n > 0 && (e->node[n - 1] == '.' || e->node[n - 1] == '-'))
		n--;
	snprintf(buf, EVENT_NAME_MAX + 1, "%.*s.%016llx", n, e->node,
		 (unsigned long long)e->last_name);
}

static char *event_message(const struct ev_device *d)
{
	const char *pci = d->pci[0] ? d->pci : "none";

	if (!d->st.told)
		return strdup_printf("RDMA device %s (%s, PCI %s, pool %s) is unhealthy: %s",
				     d->rdma, d->name, pci, d->pool, d->reason);
	return strdup_printf("RDMA device %s (%s, PCI %s, pool %s) is healthy again (was: %s)",
			     d->rdma, d->name, pci, d->pool, d->said[0] ? d->said : "unhealthy");
}

/* The Event saying d's health as d->st.told now holds it; NULL on OOM. */
static cJSON *event_new(struct dra_events *e, const struct ev_device *d)
{
	_cleanup_(cJSON_Deletep) cJSON *ev = cJSON_CreateObject();
	_cleanup_free_ char *msg = event_message(d);
	char name[EVENT_NAME_MAX + 1], now[32];
	cJSON *meta, *inv, *src;

	event_name(e, name);
	rfc3339_now(now);
	if (!ev || !msg || !cJSON_AddStringToObject(ev, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(ev, "kind", "Event") ||
	    !(meta = cJSON_AddObjectToObject(ev, "metadata")) ||
	    !cJSON_AddStringToObject(meta, "name", name) ||
	    !cJSON_AddStringToObject(meta, "namespace", DRA_EVENTS_NAMESPACE) ||
	    !(inv = cJSON_AddObjectToObject(ev, "involvedObject")) ||
	    !cJSON_AddStringToObject(inv, "apiVersion", "v1") ||
	    !cJSON_AddStringToObject(inv, "kind", "Node") ||
	    !cJSON_AddStringToObject(inv, "name", e->node) ||
	    !cJSON_AddStringToObject(inv, "uid", e->node) ||
	    !cJSON_AddStringToObject(ev, "type", d->st.told ? "Normal" : "Warning") ||
	    !cJSON_AddStringToObject(ev, "reason",
				     d->st.told ? DRA_EVENT_HEALTHY : DRA_EVENT_UNHEALTHY) ||
	    !cJSON_AddStringToObject(ev, "message", msg) ||
	    !(src = cJSON_AddObjectToObject(ev, "source")) ||
	    !cJSON_AddStringToObject(src, "component", e->driver) ||
	    !cJSON_AddStringToObject(src, "host", e->node) ||
	    !cJSON_AddStringToObject(ev, "reportingComponent", e->driver) ||
	    !cJSON_AddStringToObject(ev, "firstTimestamp", now) ||
	    !cJSON_AddStringToObject(ev, "lastTimestamp", now) ||
	    !cJSON_AddNumberToObject(ev, "count", 1))
		return NULL;
	/* Longer node names (up to 253) go without: the API server would refuse the event. */
	if (strlen(e->node) <= REPORTING_INSTANCE_MAX &&
	    !cJSON_AddStringToObject(ev, "reportingInstance", e->node))
		return NULL;
	return TAKE_PTR(ev);
}

static void post(struct dra_events *e, struct ev_device *d)
{
	_cleanup_(cJSON_Deletep) cJSON *ev = event_new(e, d);
	_cleanup_free_ char *body = ev ? cJSON_PrintUnformatted(ev) : NULL;
	struct ev_post *p = body ? calloc(1, sizeof(*p)) : NULL;
	int r;

	if (!d->st.told)
		snprintf(d->said, sizeof(d->said), "%s", d->reason);
	if (!p) {
		log_error("out of memory building a Node event for %s, dropped", d->rdma);
		return;
	}
	p->e = e;
	r = kube_call(e->kube, "POST", e->path, body, 0, post_done, p, &p->call);
	if (r < 0) {
		free(p);
		if (!e->failing)
			log_warning_errno(r, "recording a Node event failed, not retried");
		e->failing = true;
		return;
	}
	p->next = e->posts;
	e->posts = p;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* Records what the limits allow now; the timer looks again for the rest. */
static void work(struct dra_events *e)
{
	uint64_t now = 0, next = UINT64_MAX;

	sd_event_now(e->loop, CLOCK_MONOTONIC, &now);
	for (size_t i = 0; i < e->n_devs; i++)
		if (dra_events_admit(&e->devs[i].st, &e->bucket, &e->limits, now, &next) > 0)
			post(e, &e->devs[i]);
	if (next == UINT64_MAX) {
		if (e->timer)
			sd_event_source_set_enabled(e->timer, SD_EVENT_OFF);
		return;
	}
	if (!e->timer) {
		if (sd_event_add_time(e->loop, &e->timer, CLOCK_MONOTONIC, next, 100000, on_timer,
				      e) < 0) {
			e->timer = NULL;
			log_error("Node events: cannot add a timer; the next change is recorded "
				  "with the next scan");
		}
		return;
	}
	sd_event_source_set_time(e->timer, next);
	sd_event_source_set_enabled(e->timer, SD_EVENT_ONESHOT);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	work(userdata);
	return 0;
}

static void device_from(struct ev_device *d, const struct dra_inventory *inv,
			const struct dra_hca *h)
{
	const struct cfg_pool *p = dra_hca_pool(inv, h);
	const char *pool = p ? p->resource_name : NULL;

	snprintf(d->name, sizeof(d->name), "%s", h->name);
	snprintf(d->rdma, sizeof(d->rdma), "%s", h->d->name);
	snprintf(d->pci, sizeof(d->pci), "%s", h->d->pci);
	snprintf(d->pool, sizeof(d->pool), "%s", pool ? pool : "none");
	snprintf(d->reason, sizeof(d->reason), "%s", h->reason[0] ? h->reason : "unhealthy");
	d->st.healthy = h->healthy;
}

void dra_events_update(struct dra_events *e, const struct dra_inventory *inv)
{
	size_t n = inv ? inv->n_hcas : 0;
	struct ev_device *devs;

	if (!e)
		return;
	devs = calloc(n ?: 1, sizeof(*devs));
	if (!devs) {
		log_error("out of memory following device health for Node events");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct ev_device *d = &devs[i], key;
		const struct ev_device *old;

		snprintf(key.name, sizeof(key.name), "%s", inv->hcas[i].name);
		old = e->n_devs ? bsearch(&key, e->devs, e->n_devs, sizeof(*e->devs), cmp_device)
				: NULL;
		if (old)
			*d = *old;
		device_from(d, inv, &inv->hcas[i]);
		if (!old) { /* its first state is no event */
			d->st.told = d->st.healthy;
			if (!d->st.healthy)
				snprintf(d->said, sizeof(d->said), "%s", d->reason);
		}
	}
	qsort(devs, n, sizeof(*devs), cmp_device);
	free(e->devs);
	e->devs = devs;
	e->n_devs = n;
	work(e);
}

int dra_events_new(sd_event *loop, const struct dra_events_config *cfg, struct dra_events **ret)
{
	struct dra_events *e;
	uint64_t now = 0;

	if (!loop || !cfg || !cfg->driver || !*cfg->driver || !cfg->node_name ||
	    !*cfg->node_name || !cfg->kube || !ret)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->loop = sd_event_ref(loop);
	e->kube = cfg->kube;
	e->driver = strdup(cfg->driver);
	e->node = strdup(cfg->node_name);
	e->path = strdup("/api/v1/namespaces/" DRA_EVENTS_NAMESPACE "/events");
	if (!e->driver || !e->node || !e->path) {
		dra_events_free(e);
		return -ENOMEM;
	}
	e->limits = (struct dra_events_limits){
	    .interval_usec = DRA_EVENTS_INTERVAL_SEC * USEC_PER_SEC,
	    .refill_usec = DRA_EVENTS_REFILL_SEC * USEC_PER_SEC,
	    .burst = DRA_EVENTS_BURST,
	};
	sd_event_now(loop, CLOCK_MONOTONIC, &now);
	dra_events_bucket_init(&e->bucket, &e->limits, now);
	*ret = e;
	return 0;
}

void dra_events_free(struct dra_events *e)
{
	if (!e)
		return;
	while (e->posts) {
		struct ev_post *p = e->posts;

		e->posts = p->next;
		kube_call_cancel(p->call);
		free(p);
	}
	sd_event_source_disable_unref(e->timer);
	sd_event_unref(e->loop);
	free(e->devs);
	free(e->driver);
	free(e->node);
	free(e->path);
	free(e);
}
