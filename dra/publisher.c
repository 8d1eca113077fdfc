/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publisher: keeps the node's ResourceSlices on the API server equal to what was set
 * (slices.h). One call at a time besides the watch: list, then one create/update/delete
 * after another, each chosen by dra_slice_plan() from what the server was last seen
 * holding (the list, the watch's events and our own calls' answers), until the plan is
 * empty. Everything runs on the loop thread.
 *
 * Memory: at 2,000 devices a cJSON tree of the devices costs about 8 MiB (100+ bytes a
 * node), so nothing is kept as a tree while idle: what was set and what the server holds
 * are kept as their unformatted JSON text (a tenth of that), parsed only while a plan is
 * made, and the slice specs cut from the devices are dropped once in sync.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "slices-internal.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 30000
/* A watch that ends sooner than this after it started is re-opened after a backoff, so a
 * server that closes every watch at once costs no busy loop. */
#define WATCH_SHORT_MS 1000
#define LOGGED_KINDS_MAX 32
#define GONE_MAX 256

enum op_kind { OP_NONE, OP_LIST, OP_CREATE, OP_UPDATE, OP_DELETE };

/* A slice the server holds, as listed or seen by the watch or in a call's answer. */
struct listed_slice {
	char *name, *rv;
	long long generation; /* dra_slice_generation() of the object */
	char *json;	      /* the whole object, unformatted */
};

struct dra_publisher {
	sd_event *loop;
	struct kube_client *kube;
	char *driver, *node;
	char *list_path; /* DRA_SLICE_API?fieldSelector=... */

	char *devices; /* what was set (JSON text); NULL before the first set */
	int n_devices;
	cJSON *specs; /* devices cut at generation; NULL when stale or in sync */
	long long generation;
	bool listed_once; /* generation is known to be above the server's */

	struct listed_slice *listed; /* what the server holds */
	size_t n_listed, cap_listed;
	char *list_rv; /* resourceVersion of the last list, for the watch */
	bool need_list;
	/* Names the watch saw deleted since the last list: a call's answer that arrives
	 * after the watch's DELETED event must not bring the object back (names come from
	 * generateName and are never reused). */
	char *gone[GONE_MAX];
	size_t n_gone;

	void (*written)(void *userdata, bool ok);
	void *userdata;

	struct kube_call *call; /* the list or the operation in flight */
	enum op_kind op;
	char *op_name; /* the slice name of an update or delete */

	struct kube_call *watch;
	uint64_t watch_since; /* CLOCK_MONOTONIC ms */
	unsigned watch_backoff_ms;

	sd_event_source *timer; /* deferred work, and the backoff */
	bool in_backoff;
	unsigned backoff_ms;

	bool synced;
	bool dirty;			/* something was done since the last "in sync" line */
	char *logged[LOGGED_KINDS_MAX]; /* failure kinds logged since the last sync */
	size_t n_logged;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *obj_name(const cJSON *o)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metadata");

	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "name"));
}

static const char *obj_rv(const cJSON *o)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "metadata");

	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "resourceVersion"));
}

/* Ours: this driver's slice of this node (the field selector says so; a proxy or a
 * server that ignores it must not make us delete others' slices). */
static bool obj_ours(const struct dra_publisher *p, const cJSON *o)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
	const char *d = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "driver"));
	const char *n = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "nodeName"));
	const char *name = obj_name(o);

	return d && n && name && *name && strcmp(d, p->driver) == 0 && strcmp(n, p->node) == 0;
}

/* resourceVersions are opaque; etcd's are increasing integers, and only when both are
 * such is an event recognised as older than what a call's answer already gave. */
static bool rv_older(const char *a, const char *b)
{
	char *ea, *eb;
	unsigned long long x, y;

	if (!a || !b || !*a || !*b)
		return false;
	errno = 0;
	x = strtoull(a, &ea, 10);
	y = strtoull(b, &eb, 10);
	return errno == 0 && !*ea && !*eb && x < y;
}

static int listed_index(const struct dra_publisher *p, const char *name)
{
	for (size_t i = 0; i < p->n_listed; i++)
		if (strcmp(p->listed[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void listed_slice_done(struct listed_slice *l)
{
	free(l->name);
	free(l->rv);
	free(l->json);
}

static void listed_remove(struct dra_publisher *p, const char *name)
{
	int i = listed_index(p, name);

	if (i < 0)
		return;
	listed_slice_done(&p->listed[i]);
	memmove(p->listed + i, p->listed + i + 1, (p->n_listed - i - 1) * sizeof(*p->listed));
	p->n_listed--;
}

static void listed_clear(struct dra_publisher *p)
{
	for (size_t i = 0; i < p->n_listed; i++)
		listed_slice_done(&p->listed[i]);
	p->n_listed = 0;
}

/* What the server holds as the array of objects dra_slice_plan() takes; NULL on OOM or
 * when a kept text does not parse (it was printed by cJSON: OOM only). */
static cJSON *listed_tree(const struct dra_publisher *p)
{
	_cleanup_(cJSON_Deletep) cJSON *a = cJSON_CreateArray();

	if (!a)
		return NULL;
	for (size_t i = 0; i < p->n_listed; i++) {
		cJSON *o = cJSON_Parse(p->listed[i].json);

		if (!o || !cJSON_AddItemToArray(a, o)) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return TAKE_PTR(a);
}

static bool gone_has(const struct dra_publisher *p, const char *name)
{
	for (size_t i = 0; i < p->n_gone; i++)
		if (strcmp(p->gone[i], name) == 0)
			return true;
	return false;
}

static void gone_add(struct dra_publisher *p, const char *name)
{
	char *s = strdup(name);

	if (!s)
		return;
	if (p->n_gone == GONE_MAX) {
		free(p->gone[0]);
		memmove(p->gone, p->gone + 1, (GONE_MAX - 1) * sizeof(*p->gone));
		p->n_gone--;
	}
	p->gone[p->n_gone++] = s;
}

static void gone_forget(struct dra_publisher *p)
{
	for (size_t i = 0; i < p->n_gone; i++)
		free(p->gone[i]);
	p->n_gone = 0;
}

/* Puts a copy of o in place of the entry of its name (unless that one is newer, or the
 * watch saw it deleted). */
static int listed_put(struct dra_publisher *p, const cJSON *o)
{
	const char *name = obj_name(o), *rv = obj_rv(o);
	struct listed_slice l = {0};
	int i;

	if (!obj_ours(p, o) || gone_has(p, name))
		return 0;
	i = listed_index(p, name);
	if (i >= 0 && rv_older(rv, p->listed[i].rv))
		return 0;
	l.name = strdup(name);
	l.rv = rv ? strdup(rv) : NULL;
	l.generation = dra_slice_generation(o);
	l.json = cJSON_PrintUnformatted(o);
	if (!l.name || (rv && !l.rv) || !l.json) {
		listed_slice_done(&l);
		return -ENOMEM;
	}
	if (i >= 0) {
		listed_slice_done(&p->listed[i]);
		p->listed[i] = l;
		return 0;
	}
	if (ARRAY_RESERVE(p->listed, p->cap_listed, p->n_listed + 1) < 0) {
		listed_slice_done(&l);
		return -ENOMEM;
	}
	p->listed[p->n_listed++] = l;
	return 0;
}

static long long listed_max_generation(const struct dra_publisher *p)
{
	long long m = -1;

	for (size_t i = 0; i < p->n_listed; i++)
		if (p->listed[i].generation > m)
			m = p->listed[i].generation;
	return m;
}

/* The generation never falls behind the server's (another instance, a restart). */
static void generation_follow(struct dra_publisher *p)
{
	long long m = listed_max_generation(p);

	if (m > p->generation || (!p->listed_once && m >= p->generation)) {
		p->generation = m + 1;
		cJSON_Delete(TAKE_PTR(p->specs));
	}
	if (p->generation < 1) {
		p->generation = 1;
		cJSON_Delete(TAKE_PTR(p->specs));
	}
	p->listed_once = true;
}

static void failures_forget(struct dra_publisher *p)
{
	for (size_t i = 0; i < p->n_logged; i++)
		free(p->logged[i]);
	p->n_logged = 0;
}

/* Logs a failure the first time its kind ("create HTTP 500") is seen since the last sync. */
static void failure_log(struct dra_publisher *p, const char *what, const struct kube_reply *r)
{
	char kind[64];
	char *k;

	if (r->status)
		snprintf(kind, sizeof(kind), "%s HTTP %ld", what, r->status);
	else
		snprintf(kind, sizeof(kind), "%s transport", what);
	for (size_t i = 0; i < p->n_logged; i++)
		if (strcmp(p->logged[i], kind) == 0)
			return;
	if (p->n_logged < LOGGED_KINDS_MAX && (k = strdup(kind)))
		p->logged[p->n_logged++] = k;
	log_struct(
	    LOG_LVL_WARNING, LOG_FIELDS("driver", p->driver, "node", p->node, "operation", what),
	    "ResourceSlice %s failed: %s%s%s, retrying with backoff", what, kind + strlen(what) + 1,
	    r->error && *r->error ? ": " : "", r->error ? r->error : "");
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata);

static void arm(struct dra_publisher *p, unsigned delay_ms)
{
	uint64_t now = 0;

	sd_event_now(p->loop, CLOCK_MONOTONIC, &now);
	if (!p->timer) {
		if (sd_event_add_time(p->loop, &p->timer, CLOCK_MONOTONIC, now + delay_ms * 1000ULL,
				      1000, on_timer, p) < 0) {
			log_error("ResourceSlice publisher: cannot add a timer");
			p->timer = NULL;
		}
		return;
	}
	sd_event_source_set_time(p->timer, now + delay_ms * 1000ULL);
	sd_event_source_set_enabled(p->timer, SD_EVENT_ONESHOT);
}

/* Something changed: work soon (from the loop, never inside a caller's callback). */
static void kick(struct dra_publisher *p)
{
	if (p->in_backoff || p->call)
		return;
	arm(p, 0);
}

static void backoff(struct dra_publisher *p, unsigned retry_after_sec)
{
	unsigned delay;

	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (p->backoff_ms > BACKOFF_MAX_MS)
		p->backoff_ms = BACKOFF_MAX_MS;
	delay = p->backoff_ms;
	if (retry_after_sec && retry_after_sec * 1000ULL > delay)
		delay = retry_after_sec > BACKOFF_MAX_MS / 1000 ? BACKOFF_MAX_MS
								: retry_after_sec * 1000;
	p->in_backoff = true;
	arm(p, delay);
}

static void work(struct dra_publisher *p);

/* ---- the watch ---------------------------------------------------------------------- */

static void on_watch_event(void *userdata, const char *type, const cJSON *object)
{
	struct dra_publisher *p = userdata;
	const char *name = obj_name(object);

	if (strcmp(type, "ERROR") == 0) {
		/* 410 Expired and friends: list again (the list replaces this watch; it is
		 * not cancelled from inside its own callback). */
		p->need_list = true;
		p->synced = false;
		kick(p);
		return;
	}
	if (!name || !obj_ours(p, object))
		return;
	if (strcmp(type, "DELETED") == 0) {
		listed_remove(p, name);
		gone_add(p, name);
	} else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		if (listed_put(p, object) < 0)
			p->need_list = true;
		if (dra_slice_generation(object) > p->generation)
			generation_follow(p);
	} else {
		return; /* BOOKMARK */
	}
	kick(p);
}

static void on_watch_end(void *userdata, const struct kube_reply *r)
{
	struct dra_publisher *p = userdata;

	p->watch = NULL;
	p->need_list = true;
	p->synced = false;
	if (r->status != 200 && r->status != 0)
		failure_log(p, "watch", r);
	/* A server that ends every watch at once: wait longer each time (its own backoff,
	 * as the list between two watches succeeds and resets the calls' one). */
	if (now_ms() - p->watch_since >= WATCH_SHORT_MS) {
		p->watch_backoff_ms = 0;
		kick(p);
		return;
	}
	p->watch_backoff_ms = p->watch_backoff_ms ? p->watch_backoff_ms * 2 : BACKOFF_MIN_MS;
	if (p->watch_backoff_ms > BACKOFF_MAX_MS)
		p->watch_backoff_ms = BACKOFF_MAX_MS;
	if (p->call || p->in_backoff)
		return;
	p->in_backoff = true;
	arm(p, p->watch_backoff_ms);
}

static void watch_start(struct dra_publisher *p)
{
	_cleanup_free_ char *path = NULL, *rv = NULL;
	int r;

	if (p->watch)
		return;
	rv = kube_escape(p->list_rv ? p->list_rv : "");
	if (!rv ||
	    asprintf(&path,
		     "%s&watch=true&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s",
		     p->list_path, rv) < 0) {
		path = NULL;
		p->need_list = true;
		return;
	}
	/* The server ends it after 5 minutes: the list that follows catches up on anything a
	 * silently dead connection would have missed. */
	p->watch_since = now_ms();
	r = kube_watch(p->kube, path, on_watch_event, on_watch_end, p, &p->watch);
	if (r < 0) {
		p->watch = NULL;
		p->need_list = true;
		log_warning_errno(r, "ResourceSlice watch cannot start, listing again");
	}
}

/* ---- calls ---------------------------------------------------------------------------- */

static const char *op_what(enum op_kind op)
{
	switch (op) {
	case OP_LIST:
		return "list";
	case OP_CREATE:
		return "create";
	case OP_UPDATE:
		return "update";
	case OP_DELETE:
		return "delete";
	default:
		return "?";
	}
}

static int list_done(struct dra_publisher *p, const struct kube_reply *r)
{
	_cleanup_(cJSON_Deletep) cJSON *body = cJSON_ParseWithLength(r->body, r->len);
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(body, "items"), *o;
	const char *rv = obj_rv(body);

	if (!cJSON_IsArray(items) || !rv)
		return -EBADMSG;
	listed_clear(p);
	cJSON_ArrayForEach (o, items) {
		if (listed_put(p, o) < 0)
			return -ENOMEM;
	}
	free(p->list_rv);
	p->list_rv = strdup(rv);
	if (!p->list_rv)
		return -ENOMEM;
	p->need_list = false;
	generation_follow(p);
	/* The old watch's events may predate this list: start over from its version. */
	kube_call_cancel(TAKE_PTR(p->watch));
	watch_start(p);
	return 0;
}

static void on_call_done(void *userdata, const struct kube_reply *r)
{
	struct dra_publisher *p = userdata;
	enum op_kind op = p->op;
	_cleanup_free_ char *name = TAKE_PTR(p->op_name);
	bool fine = r->status >= 200 && r->status < 300;
	int k = 0;

	p->call = NULL;
	p->op = OP_NONE;
	if (op == OP_LIST && fine) {
		k = list_done(p, r);
	} else if ((op == OP_CREATE || op == OP_UPDATE) && fine) {
		_cleanup_(cJSON_Deletep) cJSON *o = cJSON_ParseWithLength(r->body, r->len);

		/* An answer we cannot read: what the server holds is unknown, list it. */
		if (!o || !obj_ours(p, o) || listed_put(p, o) < 0)
			p->need_list = true;
	} else if (op == OP_DELETE && (fine || r->status == 404)) {
		listed_remove(p, name);
	} else if (op == OP_UPDATE && r->status == 404) {
		/* Deleted behind our back meanwhile: the plan creates it. */
		listed_remove(p, name);
	} else {
		if (op != OP_LIST && p->written)
			p->written(p->userdata, false);
		failure_log(p, op_what(op), r);
		if (r->status == 409 || op == OP_LIST)
			p->need_list = true;
		backoff(p, r->retry_after_sec);
		return;
	}
	if (op != OP_LIST && p->written)
		p->written(p->userdata, true);
	if (k < 0) {
		struct kube_reply bad = {.status = r->status, .error = "an answer that is no list"};

		failure_log(p, op_what(op), &bad);
		p->need_list = true;
		backoff(p, 0);
		return;
	}
	p->backoff_ms = 0;
	kick(p);
}

static int start_list(struct dra_publisher *p)
{
	p->op = OP_LIST;
	return kube_call(p->kube, "GET", p->list_path, NULL, 0, on_call_done, p, &p->call);
}

static int start_op(struct dra_publisher *p, const struct dra_slice_op *op)
{
	const cJSON *spec = cJSON_GetArrayItem(p->specs, (int)op->spec);
	_cleanup_(cJSON_Deletep) cJSON *obj = NULL;
	_cleanup_free_ char *body = NULL, *path = NULL, *esc = NULL;
	const char *name = op->listed ? obj_name(op->listed) : NULL;

	if (op->kind != DRA_SLICE_CREATE) {
		esc = kube_escape(name);
		p->op_name = strdup(name);
		if (!esc || !p->op_name || asprintf(&path, "%s/%s", DRA_SLICE_API, esc) < 0)
			return -ENOMEM;
	}
	if (op->kind == DRA_SLICE_DELETE) {
		p->op = OP_DELETE;
		return kube_call(p->kube, "DELETE", path, NULL, 0, on_call_done, p, &p->call);
	}
	obj = dra_slice_object(p->driver, p->node, spec, name, name ? obj_rv(op->listed) : NULL);
	body = obj ? cJSON_PrintUnformatted(obj) : NULL;
	if (!body)
		return -ENOMEM;
	if (op->kind == DRA_SLICE_UPDATE) {
		p->op = OP_UPDATE;
		return kube_call(p->kube, "PUT", path, body, 0, on_call_done, p, &p->call);
	}
	p->op = OP_CREATE;
	return kube_call(p->kube, "POST", DRA_SLICE_API, body, 0, on_call_done, p, &p->call);
}

static void in_sync(struct dra_publisher *p)
{
	int n_slices = cJSON_GetArraySize(p->specs);

	/* The next plan cuts them again from the text (same devices, same generation). */
	cJSON_Delete(TAKE_PTR(p->specs));
	p->synced = true;
	/* The plan's trees (megabytes at 2,000 devices) are freed by now: give the pages
	 * back, as the bridge does after a rescan, instead of keeping the peak. Also after
	 * a watch event that changed nothing: its plan parsed the same trees. */
	malloc_trim(0);
	if (!p->dirty)
		return;
	p->dirty = false;
	failures_forget(p);
	log_struct(LOG_LVL_INFO, LOG_FIELDS("driver", p->driver, "node", p->node),
		   "slices in sync (%d devices, %d slices, generation %lld)", p->n_devices,
		   n_slices, p->generation);
}

static void work(struct dra_publisher *p)
{
	_cleanup_free_ struct dra_slice_op *ops = NULL;
	_cleanup_(cJSON_Deletep) cJSON *devices = NULL, *listed = NULL;
	size_t n = 0;
	int r;

	if (p->call || p->in_backoff)
		return;
	if (p->need_list || !p->listed_once) {
		p->synced = false;
		p->dirty = true;
		r = start_list(p);
		goto started;
	}
	if (!p->watch)
		watch_start(p);
	if (!p->devices)
		return;
	if (!p->specs) {
		devices = cJSON_Parse(p->devices);
		p->specs =
		    devices ? dra_slice_specs(p->driver, p->node, p->generation, devices) : NULL;
	}
	listed = listed_tree(p);
	/* ops point into listed, which start_op() reads before it goes. */
	if (!p->specs || !listed || dra_slice_plan(p->specs, listed, &ops, &n) < 0) {
		r = -ENOMEM;
		goto started;
	}
	if (n == 0) {
		in_sync(p);
		return;
	}
	p->synced = false;
	p->dirty = true;
	r = start_op(p, &ops[0]);
started:
	if (r >= 0)
		return;
	p->call = NULL;
	p->op = OP_NONE;
	free(TAKE_PTR(p->op_name));
	log_warning_errno(r, "ResourceSlice publisher: cannot start a call, retrying");
	backoff(p, 0);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct dra_publisher *p = userdata;

	p->in_backoff = false;
	work(p);
	return 0;
}

/* ---- API ---------------------------------------------------------------------------- */

int dra_publisher_new(sd_event *loop, const struct dra_publisher_config *cfg,
		      struct dra_publisher **ret)
{
	struct dra_publisher *p;
	_cleanup_free_ char *sel = NULL, *esc = NULL;

	if (!loop || !cfg || !cfg->driver || !cfg->node_name || !cfg->kube || !ret ||
	    !*cfg->driver || !*cfg->node_name)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->loop = sd_event_ref(loop);
	p->kube = cfg->kube;
	p->written = cfg->written;
	p->userdata = cfg->userdata;
	p->driver = strdup(cfg->driver);
	p->node = strdup(cfg->node_name);
	if (asprintf(&sel, "spec.driver=%s,spec.nodeName=%s", cfg->driver, cfg->node_name) < 0)
		sel = NULL;
	esc = sel ? kube_escape(sel) : NULL;
	if (!esc || asprintf(&p->list_path, "%s?fieldSelector=%s", DRA_SLICE_API, esc) < 0)
		p->list_path = NULL;
	if (!p->driver || !p->node || !p->list_path) {
		dra_publisher_free(p);
		return -ENOMEM;
	}
	/* List (and watch) right away: the generation to start from is the server's. */
	arm(p, 0);
	if (!p->timer) {
		dra_publisher_free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

void dra_publisher_set(struct dra_publisher *p, cJSON *devices)
{
	_cleanup_(cJSON_Deletep) cJSON *tree = devices;
	char *text;

	if (!p || !tree)
		return;
	/* dra_slice_devices() prints the same inventory as the same text (keys in a fixed
	 * order), so equal text is the "equal to the last set" of the contract. */
	text = cJSON_PrintUnformatted(devices);
	if (!text) {
		log_error("ResourceSlice publisher: out of memory, keeping the devices set before");
		return;
	}
	if (p->devices && strcmp(p->devices, text) == 0) {
		free(text);
		return;
	}
	free(p->devices);
	p->devices = text;
	p->n_devices = cJSON_GetArraySize(devices);
	cJSON_Delete(TAKE_PTR(p->specs));
	/* Before the first list the server's generation decides (generation_follow). */
	if (p->listed_once)
		p->generation++;
	p->synced = false;
	p->dirty = true;
	kick(p);
}

bool dra_publisher_synced(const struct dra_publisher *p)
{
	return p && p->synced;
}

void dra_publisher_free(struct dra_publisher *p)
{
	if (!p)
		return;
	kube_call_cancel(p->call);
	kube_call_cancel(p->watch);
	sd_event_source_disable_unref(p->timer);
	sd_event_unref(p->loop);
	failures_forget(p);
	gone_forget(p);
	free(p->op_name);
	free(p->list_rv);
	free(p->list_path);
	free(p->driver);
	free(p->node);
	free(p->devices);
	cJSON_Delete(p->specs);
	listed_clear(p);
	free(p->listed);
	free(p);
}
