/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The watcher thread blocks in inotifytools_next_event(-1); it copies each event into a
 * bounded queue and writes an eventfd that the loop watches. Stopping: a flag, then
 * SIGUSR1 at the thread (a no-op handler, so select() inside the library returns EINTR),
 * repeated until the thread has gone, since the signal can land just before select().
 *
 * The library keeps its watch tables without locks. next_event() does not touch them as
 * long as statistics and regex filters stay off, so the loop thread adds and removes
 * watches while the thread waits; all other library calls happen on the loop thread.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>

#include <inotifytools/inotifytools.h>

#include "common.h"
#include "loop.h"

#define QUEUE_MAX 4096 /* pending events; beyond, one overflow event replaces them */
#define WAKE_SIGNAL SIGUSR1

struct qev {
	int wd;
	uint32_t mask;
	struct qev *next;
	char name[];
};

struct reg {
	int id, wd;
	uint32_t mask;
	fswatch_fn fn;
	void *userdata;
	struct reg *next;
};

struct fswatch {
	sd_event_source *src;
	int efd;
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	pthread_mutex_t lock;
	/* under lock */
	struct qev *head, *tail;
	size_t n_queued;
	bool overflow;
	int thread_error;
	/* loop thread only */
	struct reg *regs;
	int next_id;
	bool dispatching;
};

static atomic_bool instance_exists;

static void wake_handler(int sig)
{
}

static void queue_event(struct fswatch *w, const struct inotify_event *ev)
{
	size_t len = ev->len ? strnlen(ev->name, ev->len) : 0;
	struct qev *q = NULL;
	uint64_t one = 1;

	if (!(ev->mask & IN_Q_OVERFLOW))
		q = malloc(sizeof(*q) + len + 1);
	pthread_mutex_lock(&w->lock);
	if (!q || w->n_queued >= QUEUE_MAX) {
		w->overflow = true;
		free(q);
	} else {
		q->wd = ev->wd;
		q->mask = ev->mask;
		q->next = NULL;
		memcpy(q->name, ev->name, len);
		q->name[len] = '\0';
		if (w->tail)
			w->tail->next = q;
		else
			w->head = q;
		w->tail = q;
		w->n_queued++;
	}
	pthread_mutex_unlock(&w->lock);
	if (write(w->efd, &one, sizeof(one)) < 0) {
		/* The counter is saturated: the loop has a wake-up pending anyway. */
	}
}

static void *watch_thread(void *arg)
{
	struct fswatch *w = arg;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	while (!atomic_load(&w->stop)) {
		struct inotify_event *ev = inotifytools_next_event(-1);
		int e;

		if (ev) {
			queue_event(w, ev);
			continue;
		}
		e = inotifytools_error();
		if (e == EINTR || e == 0)
			continue;
		/* Nothing more will come: say so once and stop reading. */
		pthread_mutex_lock(&w->lock);
		w->thread_error = -e;
		w->overflow = true;
		pthread_mutex_unlock(&w->lock);
		queue_event(w, &(struct inotify_event){.mask = IN_Q_OVERFLOW});
		break;
	}
	return NULL;
}

static void deliver(struct fswatch *w, int wd, uint32_t mask, const char *name)
{
	/* A callback may remove registrations (its own included): walk by id. */
	int last = 0;

	for (;;) {
		struct reg *next = NULL;

		for (struct reg *r = w->regs; r; r = r->next)
			if (r->id > last && (!next || r->id < next->id) &&
			    (wd < 0 || r->wd == wd) &&
			    (mask & (r->mask | IN_Q_OVERFLOW | IN_IGNORED)))
				next = r;
		if (!next)
			return;
		last = next->id;
		if (mask & IN_IGNORED)
			next->wd = -1;
		next->fn(next->userdata, mask, name);
	}
}

static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct fswatch *w = userdata;
	struct qev *q;
	uint64_t u;
	bool overflow;

	if (read(w->efd, &u, sizeof(u)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&w->lock);
	q = w->head;
	w->head = w->tail = NULL;
	w->n_queued = 0;
	overflow = w->overflow;
	w->overflow = false;
	pthread_mutex_unlock(&w->lock);

	w->dispatching = true;
	while (q) {
		struct qev *n = q->next;

		if (!overflow)
			deliver(w, q->wd, q->mask, q->name);
		if (q->mask & IN_IGNORED) {
			/* The kernel dropped the watch (the path went away). Removing it through
			 * the library would fail loudly; renaming its record frees the path, so
			 * watching it again once it is back makes a new record. */
			char gone[32];

			snprintf(gone, sizeof(gone), "//ignored/%d", q->wd);
			inotifytools_set_filename_by_wd(q->wd, gone);
		}
		free(q);
		q = n;
	}
	if (overflow)
		deliver(w, -1, IN_Q_OVERFLOW, "");
	w->dispatching = false;
	return 0;
}

int fswatch_new(sd_event *loop, struct fswatch **ret)
{
	struct sigaction sa = {.sa_handler = wake_handler};
	struct fswatch *w;
	sigset_t set, old;
	int r;

	if (atomic_exchange(&instance_exists, true))
		return -EBUSY;
	w = calloc(1, sizeof(*w));
	if (!w) {
		atomic_store(&instance_exists, false);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		r = -errno;
		goto fail;
	}
	if (!inotifytools_initialize()) {
		r = -(inotifytools_error() ?: EMFILE);
		goto fail;
	}
	r = sd_event_add_io(loop, &w->src, w->efd, EPOLLIN, on_wake, w);
	if (r < 0)
		goto fail;
	/* No SA_RESTART: select() returns EINTR whatever, but be explicit. */
	sigemptyset(&sa.sa_mask);
	if (sigaction(WAKE_SIGNAL, &sa, NULL) < 0) {
		r = -errno;
		goto fail;
	}
	/* The thread starts with every signal blocked and unblocks only its wake-up. */
	sigfillset(&set);
	pthread_sigmask(SIG_SETMASK, &set, &old);
	r = -pthread_create(&w->thread, NULL, watch_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		goto fail;
	w->thread_started = true;
	*ret = w;
	return 0;
fail:
	fswatch_free(w);
	return r;
}

void fswatch_free(struct fswatch *w)
{
	if (!w)
		return;
	if (w->thread_started) {
		atomic_store(&w->stop, true);
		for (;;) {
			struct timespec ts;

			pthread_kill(w->thread, WAKE_SIGNAL);
			/* Monotonic: a wall-clock step must not stretch the 2 ms into hours. */
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 2000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			if (pthread_clockjoin_np(w->thread, NULL, CLOCK_MONOTONIC, &ts) == 0)
				break;
		}
	}
	sd_event_source_disable_unref(w->src);
	while (w->regs) {
		struct reg *r = w->regs;

		w->regs = r->next;
		free(r);
	}
	for (struct qev *q = w->head, *n; q; q = n) {
		n = q->next;
		free(q);
	}
	inotifytools_cleanup();
	if (w->efd >= 0)
		close(w->efd);
	pthread_mutex_destroy(&w->lock);
	free(w);
	atomic_store(&instance_exists, false);
}

/* The library stores directories with a trailing slash. */
static int lookup_wd(const char *path)
{
	_cleanup_free_ char *slash = NULL;
	int wd = inotifytools_wd_from_filename(path);

	if (wd >= 0 || (path[0] && path[strlen(path) - 1] == '/'))
		return wd;
	slash = strdup_printf("%s/", path);
	return slash ? inotifytools_wd_from_filename(slash) : -1;
}

static uint32_t wd_mask(struct fswatch *w, int wd, int except_id)
{
	uint32_t m = 0;

	for (struct reg *r = w->regs; r; r = r->next)
		if (r->wd == wd && r->id != except_id)
			m |= r->mask;
	return m;
}

int fswatch_add(struct fswatch *w, const char *path, uint32_t mask, fswatch_fn fn, void *userdata)
{
	struct reg *r;
	int wd;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* The union with what other registrations of this path want; inotify keeps one
	 * mask per inode and watch descriptor. */
	wd = lookup_wd(path);
	if (wd >= 0)
		mask |= wd_mask(w, wd, 0);
	if (!inotifytools_watch_file(path, (int)mask)) {
		int e = inotifytools_error();

		free(r);
		return -(e ?: EINVAL);
	}
	wd = lookup_wd(path);
	if (wd < 0) {
		free(r);
		return -ENOENT;
	}
	r->id = ++w->next_id;
	r->wd = wd;
	r->mask = mask;
	r->fn = fn;
	r->userdata = userdata;
	r->next = w->regs;
	w->regs = r;
	return r->id;
}

void fswatch_remove(struct fswatch *w, int id)
{
	for (struct reg **p = &w->regs; *p; p = &(*p)->next) {
		struct reg *r = *p;

		if (r->id != id)
			continue;
		*p = r->next;
		if (r->wd >= 0 && wd_mask(w, r->wd, id) == 0)
			inotifytools_remove_watch_by_wd(r->wd);
		free(r);
		return;
	}
}
