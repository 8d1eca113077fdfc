/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Sysfs Watcher. A scan is a job on its own detached thread; its result comes back
 * through the mailbox. A job that misses its deadline is orphaned: the follower forgets
 * it, and the thread frees its result whenever it finishes. At most SCANS_STUCK_MAX
 * orphaned jobs may still be running before no new scan is started (each may hold a
 * thread stuck in the kernel).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "follow.h"

#define HOTPLUG_SETTLE_USEC 20000 /* coalesce the burst of nodes one HCA brings */
#define SCANS_STUCK_MAX 4

#define FULL_EVERY 12 /* every 12th periodic scan is a full one (what a refresh cannot see) */
/* The periodic rescan may take at most 1/CPU_SHARE_INV of a core: on a node where one
 * costs more than interval/1000, its period stretches (up to STRETCH_MAX_USEC). */
#define CPU_SHARE_INV 1000
#define STRETCH_MAX_USEC (120 * 1000000ULL)

static atomic_uint scans_stuck;

/* A snapshot shared between the follower and a refresh job that may outlive it. */
struct node_ref {
	atomic_uint refs;
	struct disc_node *node;
};

static struct node_ref *node_ref_new(struct disc_node *node)
{
	struct node_ref *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	atomic_init(&r->refs, 1);
	r->node = node;
	return r;
}

static struct node_ref *node_ref_get(struct node_ref *r)
{
	if (r)
		atomic_fetch_add(&r->refs, 1);
	return r;
}

static void node_ref_put(struct node_ref *r)
{
	if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
		disc_node_free(r->node);
		free(r);
	}
}

struct scan_job {
	pthread_mutex_t lock;
	struct mailbox *mb;
	char *sysfs_root, *dev_root;
	enum disc_follow_reason reason;
	int (*scan)(const struct disc_options *opts, struct disc_node **ret_node);
	struct node_ref *old; /* set: try a cheap refresh of it first */
	struct disc_node *node;
	int error;
	uint64_t cpu_usec;  /* the worker's CPU time for this job */
	uint64_t wall_usec; /* and its wall time */
	atomic_bool cancel;
	bool scan_custom; /* a test's scan: no refresh */
	bool orphaned;	  /* under lock */
	struct disc_follow *f;
};

struct disc_follow {
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct disc_follow_config cfg;
	char *ib_dir;
	int ib_watch, dev_watch;
	sd_event_source *settle, *periodic, *deadline;
	struct scan_job *job; /* in flight */
	bool pending;	      /* another scan wanted after it */
	enum disc_follow_reason pending_reason;
	struct node_ref *cur;
	unsigned periodic_count;
	uint64_t period_usec; /* the periodic rescan's period now (>= the configured one) */
	uint64_t cost_usec;   /* moving average of a periodic rescan's CPU time */
	bool stuck_logged;
	uint64_t last_usec; /* wall time of the scan being handed over, 0 = none */
	/* The owner may free the follower from inside its callback (a failed first scan
	 * stops the daemon): disc_follow_free() then only marks it, and the follower is
	 * destroyed when the callback returns, before anything else touches it. */
	unsigned calling;
	bool doomed;
};

static void job_free(struct scan_job *j)
{
	node_ref_put(j->old);
	disc_node_free(j->node);
	free(j->sysfs_root);
	free(j->dev_root);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static bool start_scan(struct disc_follow *f, enum disc_follow_reason reason);
static void destroy(struct disc_follow *f);

/* Calls the owner's callback. false: the owner freed the follower meanwhile, and it is
 * gone: the caller must return without touching it. */
static bool notify(struct disc_follow *f, const struct disc_node *node,
		   const struct disc_node *prev, int error, enum disc_follow_reason reason)
{
	f->calling++;
	f->cfg.fn(f->cfg.userdata, node, prev, error, reason);
	f->calling--;
	if (f->doomed && f->calling == 0) {
		destroy(f);
		return false;
	}
	return !f->doomed;
}

/* Keeps the periodic rescan under 1/CPU_SHARE_INV of a core, whatever the node's size. */
static void adapt_period(struct disc_follow *f, uint64_t cpu_usec)
{
	uint64_t base = (uint64_t)f->cfg.interval_sec * 1000000, want = base;

	if (base == 0)
		return;
	/* An average: the full scan every FULL_EVERY-th time costs more than a refresh. */
	f->cost_usec = f->cost_usec ? (f->cost_usec * 7 + cpu_usec) / 8 : cpu_usec;
	cpu_usec = f->cost_usec;
	if (cpu_usec * CPU_SHARE_INV > want)
		want = cpu_usec * CPU_SHARE_INV;
	if (want > STRETCH_MAX_USEC)
		want = STRETCH_MAX_USEC > base ? STRETCH_MAX_USEC : base;
	/* Only a real change is worth a log line: beyond 25 % either way. */
	if (want * 4 > f->period_usec * 5 || want * 5 < f->period_usec * 4) {
		if (want != base || f->period_usec != base)
			log_info("a periodic rescan costs %.1f ms of CPU here: running it every "
				 "%.0f s (--rescan-interval %d) to stay under %.1f %% of a core",
				 cpu_usec / 1000.0, want / 1e6, f->cfg.interval_sec,
				 100.0 / CPU_SHARE_INV);
		f->period_usec = want;
	}
}

static void job_done(void *userdata)
{
	struct scan_job *j = userdata;
	struct disc_follow *f;
	struct node_ref *prev, *next;
	bool orphaned, alive;

	pthread_mutex_lock(&j->lock);
	orphaned = j->orphaned;
	pthread_mutex_unlock(&j->lock);
	if (orphaned) {
		atomic_fetch_sub(&scans_stuck, 1);
		job_free(j);
		return;
	}
	f = j->f;
	f->job = NULL;
	f->deadline = sd_event_source_disable_unref(f->deadline);
	if (j->reason == DISC_FOLLOW_PERIODIC)
		adapt_period(f, j->cpu_usec);
	f->last_usec = j->wall_usec;
	/* A lent device keeps its last known health and topology (discovery.h). */
	if (j->error >= 0 && f->cur && disc_node_carry_lent(j->node, f->cur->node) < 0)
		j->error = -ENOMEM;
	next = j->error >= 0 ? node_ref_new(j->node) : NULL;
	if (next)
		j->node = NULL;
	else if (j->error >= 0)
		j->error = -ENOMEM;
	if (j->error < 0) {
		log_error_errno(j->error, "scanning %s failed",
				f->cfg.disc.sysfs_root ? f->cfg.disc.sysfs_root : "/sys");
		alive = notify(f, f->cur ? f->cur->node : NULL, NULL, j->error, j->reason);
	} else {
		prev = f->cur;
		f->cur = next;
		alive = notify(f, next->node, prev ? prev->node : NULL, 0, j->reason);
		node_ref_put(prev);
	}
	job_free(j);
	if (!alive)
		return;
	f->last_usec = 0;
	if (f->pending) {
		f->pending = false;
		start_scan(f, f->pending_reason);
	}
}

static void *scan_thread(void *arg)
{
	struct scan_job *j = arg;
	struct disc_options o = {
	    .sysfs_root = j->sysfs_root, .dev_root = j->dev_root, .cancel = &j->cancel};
	bool orphaned, need_full = true;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Between full scans read only what can change without a device-node event. */
	if (j->old && !j->scan_custom)
		j->error = disc_refresh(&o, j->old->node, &j->node, &need_full);
	if (need_full)
		j->error = j->scan(&o, &j->node);
	{
		struct timespec ts;

		if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
			j->cpu_usec = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	j->wall_usec =
	    (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000);
	if (j->wall_usec == 0)
		j->wall_usec = 1; /* 0 means "none" to disc_follow_last_scan_usec()'s callers */
	pthread_mutex_lock(&j->lock);
	orphaned = j->orphaned;
	/* Posted under the lock: once the follower orphans a job, no post follows. */
	if (!orphaned && mailbox_post(j->mb, job_done, j) < 0)
		orphaned = true; /* out of memory: the deadline reports it */
	pthread_mutex_unlock(&j->lock);
	if (orphaned && j->orphaned) {
		atomic_fetch_sub(&scans_stuck, 1);
		job_free(j);
	}
	return NULL;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct disc_follow *f = userdata;
	struct scan_job *j = f->job;
	int timeout = f->cfg.timeout_sec ?: DISC_FOLLOW_SCAN_TIMEOUT_SEC;

	f->deadline = sd_event_source_disable_unref(f->deadline);
	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	j->orphaned = true;
	pthread_mutex_unlock(&j->lock);
	atomic_store(&j->cancel, true); /* it gives up at the next device, if it gets there */
	atomic_fetch_add(&scans_stuck, 1);
	f->job = NULL;
	log_error("scanning %s did not finish within %d s (a sysfs read that never returns?): "
		  "abandoned, the last good state stays in force",
		  f->cfg.disc.sysfs_root ? f->cfg.disc.sysfs_root : "/sys", timeout);
	if (!notify(f, f->cur ? f->cur->node : NULL, NULL, -ETIMEDOUT, j->reason))
		return 0;
	if (f->pending) {
		f->pending = false;
		start_scan(f, f->pending_reason);
	}
	return 0;
}

/* false: the follower is gone (its owner freed it from the callback that reported a
 * failure to start the scan). */
static bool start_scan(struct disc_follow *f, enum disc_follow_reason reason)
{
	int timeout = f->cfg.timeout_sec ?: DISC_FOLLOW_SCAN_TIMEOUT_SEC;
	struct scan_job *j;
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	int r;

	if (f->job) {
		/* A hotplug beats a periodic scan in the log; either way one more scan. */
		if (!f->pending || reason != DISC_FOLLOW_PERIODIC)
			f->pending_reason = reason;
		f->pending = true;
		return true;
	}
	if (atomic_load(&scans_stuck) >= SCANS_STUCK_MAX) {
		if (!f->stuck_logged)
			log_error("%d scans are stuck in sysfs: not starting more until one "
				  "returns",
				  SCANS_STUCK_MAX);
		f->stuck_logged = true;
		return true;
	}
	f->stuck_logged = false;
	j = calloc(1, sizeof(*j));
	if (!j)
		goto oom;
	pthread_mutex_init(&j->lock, NULL);
	j->mb = f->mb;
	j->f = f;
	j->reason = reason;
	j->scan = f->cfg.scan ? f->cfg.scan : disc_scan;
	j->scan_custom = f->cfg.scan != NULL;
	atomic_init(&j->cancel, false);
	if (reason == DISC_FOLLOW_PERIODIC && f->cur && ++f->periodic_count % FULL_EVERY != 0)
		j->old = node_ref_get(f->cur);
	j->sysfs_root = f->cfg.disc.sysfs_root ? strdup(f->cfg.disc.sysfs_root) : NULL;
	j->dev_root = f->cfg.disc.dev_root ? strdup(f->cfg.disc.dev_root) : NULL;
	if ((f->cfg.disc.sysfs_root && !j->sysfs_root) || (f->cfg.disc.dev_root && !j->dev_root)) {
		job_free(j);
		goto oom;
	}
	/* The worker takes no signal: they are for the loop's signalfd. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = -pthread_create(&t, &attr, scan_thread, j);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		job_free(j);
		log_error_errno(r, "starting a scan thread failed");
		return notify(f, f->cur ? f->cur->node : NULL, NULL, r, reason);
	}
	f->job = j;
	r = sd_event_add_time_relative(f->loop, &f->deadline, CLOCK_MONOTONIC,
				       (uint64_t)timeout * 1000000, 100000, on_deadline, f);
	if (r < 0)
		log_error_errno(r, "arming the scan deadline failed");
	return true;
oom:
	log_error("out of memory starting a scan");
	return notify(f, f->cur ? f->cur->node : NULL, NULL, -ENOMEM, reason);
}

void disc_follow_rescan(struct disc_follow *f, enum disc_follow_reason reason)
{
	(void)start_scan(f, reason);
}

uint64_t disc_follow_last_scan_usec(const struct disc_follow *f)
{
	return f->last_usec;
}

const struct disc_node *disc_follow_node(const struct disc_follow *f)
{
	return f->cur ? f->cur->node : NULL;
}

/* ---- events ---------------------------------------------------------------------------- */

static int on_settled(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct disc_follow *f = userdata;

	f->settle = sd_event_source_disable_unref(f->settle);
	(void)start_scan(f, DISC_FOLLOW_HOTPLUG);
	return 0;
}

/* false: the follower is gone (see start_scan()). */
static bool hotplug(struct disc_follow *f, const char *what, const char *name)
{
	int r;

	log_info("%s%s%s: rescanning", what, name && *name ? " " : "", name ? name : "");
	if (f->settle)
		return true;
	r = sd_event_add_time_relative(f->loop, &f->settle, CLOCK_MONOTONIC, HOTPLUG_SETTLE_USEC,
				       1000, on_settled, f);
	return r >= 0 || start_scan(f, DISC_FOLLOW_HOTPLUG);
}

static void watch_ib_dir(struct disc_follow *f);

static void on_ib_event(void *userdata, uint32_t mask, const char *name)
{
	struct disc_follow *f = userdata;

	if (mask & IN_DELETE_SELF)
		return; /* IN_IGNORED follows: the kernel drops the watch itself */
	if (mask & (IN_IGNORED | IN_MOVE_SELF)) {
		if (f->ib_watch > 0)
			fswatch_remove(f->fw, f->ib_watch);
		f->ib_watch = 0;
		if (hotplug(f, f->ib_dir, "went away"))
			watch_ib_dir(f);
		return;
	}
	if (mask & IN_Q_OVERFLOW) {
		(void)hotplug(f, "inotify queue overflow", NULL);
		return;
	}
	(void)hotplug(f,
		      mask & (IN_CREATE | IN_MOVED_TO)	   ? "device node appeared:"
		      : mask & (IN_DELETE | IN_MOVED_FROM) ? "device node removed:"
							   : "device node changed:",
		      name);
}

static void on_dev_event(void *userdata, uint32_t mask, const char *name)
{
	struct disc_follow *f = userdata;

	if (strcmp(name, "infiniband") != 0 && !(mask & IN_Q_OVERFLOW))
		return;
	if (f->ib_watch <= 0)
		watch_ib_dir(f);
}

static int add_ib_watch(struct disc_follow *f)
{
	return fswatch_add(f->fw, f->ib_dir,
			   IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
			       IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR,
			   on_ib_event, f);
}

/* Watches <dev-root>/infiniband, or <dev-root> until it appears. */
static void watch_ib_dir(struct disc_follow *f)
{
	const char *dev = f->cfg.disc.dev_root ? f->cfg.disc.dev_root : "/dev";
	int r;

	r = add_ib_watch(f);
	if (r > 0) {
		f->ib_watch = r;
		if (f->dev_watch > 0) {
			fswatch_remove(f->fw, f->dev_watch);
			f->dev_watch = 0;
			hotplug(f, f->ib_dir, "appeared");
		}
		return;
	}
	if (r != -ENOENT && r != -ENOTDIR) {
		log_warning_errno(r, "cannot watch %s: hotplug is seen by the periodic rescan only",
				  f->ib_dir);
		return;
	}
	if (f->dev_watch > 0)
		return;
	r = fswatch_add(f->fw, dev, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR, on_dev_event, f);
	if (r < 0) {
		log_warning_errno(r, "cannot watch %s: hotplug is seen by the periodic rescan only",
				  dev);
		return;
	}
	f->dev_watch = r;
	/* It may have appeared between the two calls. */
	r = add_ib_watch(f);
	if (r > 0) {
		f->ib_watch = r;
		fswatch_remove(f->fw, f->dev_watch);
		f->dev_watch = 0;
	}
}

static int on_periodic(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct disc_follow *f = userdata;
	int r;

	r = sd_event_source_set_time_relative(s, f->period_usec);
	if (r >= 0)
		r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	if (r < 0)
		log_error_errno(r, "re-arming the periodic rescan failed");
	(void)start_scan(f, DISC_FOLLOW_PERIODIC);
	return 0;
}

int disc_follow_new(sd_event *loop, struct mailbox *mb, struct fswatch *fw,
		    const struct disc_follow_config *cfg, struct disc_follow **ret)
{
	const char *dev = cfg->disc.dev_root ? cfg->disc.dev_root : "/dev";
	struct disc_follow *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return -ENOMEM;
	f->loop = sd_event_ref(loop);
	f->mb = mb;
	f->fw = fw;
	f->cfg = *cfg;
	f->ib_dir = strdup_printf("%s/infiniband", dev);
	if (!f->ib_dir) {
		disc_follow_free(f);
		return -ENOMEM;
	}
	watch_ib_dir(f);
	f->period_usec = (uint64_t)cfg->interval_sec * 1000000;
	if (cfg->interval_sec > 0) {
		r = sd_event_add_time_relative(loop, &f->periodic, CLOCK_MONOTONIC,
					       (uint64_t)cfg->interval_sec * 1000000, 100000,
					       on_periodic, f);
		if (r < 0) {
			disc_follow_free(f);
			return r;
		}
	}
	(void)start_scan(f, DISC_FOLLOW_START); /* not ours yet to the owner: it cannot free it */
	*ret = f;
	return 0;
}

void disc_follow_free(struct disc_follow *f)
{
	if (!f)
		return;
	if (f->calling) {
		f->doomed = true; /* destroyed when the callback returns (notify()) */
		return;
	}
	destroy(f);
}

static void destroy(struct disc_follow *f)
{
	if (f->job) {
		pthread_mutex_lock(&f->job->lock);
		f->job->orphaned = true;
		pthread_mutex_unlock(&f->job->lock);
		atomic_store(&f->job->cancel, true);
		atomic_fetch_add(&scans_stuck, 1);
	}
	if (f->ib_watch > 0)
		fswatch_remove(f->fw, f->ib_watch);
	if (f->dev_watch > 0)
		fswatch_remove(f->fw, f->dev_watch);
	sd_event_source_disable_unref(f->settle);
	sd_event_source_disable_unref(f->periodic);
	sd_event_source_disable_unref(f->deadline);
	sd_event_unref(f->loop);
	node_ref_put(f->cur);
	free(f->ib_dir);
	free(f);
}

/* ---- what changed ---------------------------------------------------------------------- */

void disc_node_changes(const struct disc_node *old, const struct disc_node *new, disc_change_fn fn,
		       void *userdata)
{
	char why[256];

	for (size_t i = 0; old && i < old->n_devices; i++) {
		const struct disc_device *d = &old->devices[i];
		const struct disc_device *n = disc_node_find_same(new, d);

		if (disc_device_usable(d) && (!n || !disc_device_usable(n)))
			fn(userdata, DISC_REMOVED, d, n ? "no uverbs device any more" : "gone");
	}
	for (size_t i = 0; new &&i < new->n_devices; i++) {
		const struct disc_device *d = &new->devices[i];
		const struct disc_device *o = disc_node_find_same(old, d);
		bool healthy = disc_device_healthy(d);

		if (!disc_device_usable(d))
			continue;
		if (disc_device_health_reason(d, why, sizeof(why)) == 0)
			snprintf(why, sizeof(why), "healthy");
		if (!o || !disc_device_usable(o)) {
			fn(userdata, DISC_ADDED, d, why);
			continue;
		}
		if (o->lent != d->lent)
			fn(userdata, d->lent ? DISC_LENT : DISC_RETURNED, d, DISC_LENT_REASON);
		if (disc_device_healthy(o) != healthy)
			fn(userdata, healthy ? DISC_HEALTHY : DISC_UNHEALTHY, d, why);
	}
}

void disc_log_change(enum disc_change what, const struct disc_device *d, const char *reason)
{
	static const char *const what_name[] = {
	    [DISC_ADDED] = "added",
	    [DISC_REMOVED] = "removed",
	    [DISC_UNHEALTHY] = "unhealthy",
	    [DISC_HEALTHY] = "healthy",
	    [DISC_LENT] = "lent",
	    [DISC_RETURNED] = "returned",
	};
	static const char *const shown[] = {
	    [DISC_ADDED] = "added",
	    [DISC_REMOVED] = "removed",
	    [DISC_UNHEALTHY] = "Unhealthy",
	    [DISC_HEALTHY] = "Healthy again",
	    [DISC_LENT] = DISC_LENT_REASON,
	    [DISC_RETURNED] = "back from another network namespace",
	};
	/* The last three say all there is: no reason after them. */
	bool plain = what == DISC_HEALTHY || what == DISC_LENT || what == DISC_RETURNED;
	const char *pci = d->pci[0] ? d->pci : "no PCI address";

	log_struct(what == DISC_UNHEALTHY ? LOG_LVL_WARNING : LOG_LVL_INFO,
		   LOG_FIELDS("device", d->name, "pci", d->pci[0] ? d->pci : NULL, "change",
			      what_name[what], "reason", plain ? NULL : reason),
		   "%s (%s): %s%s%s", d->name, pci, shown[what], plain ? "" : ": ",
		   plain ? "" : reason);
}
