/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A mailbox: a locked queue of closures and an eventfd in the loop. Other threads (the
 * gRPC completion queue, scan workers) never touch loop-owned state; they post here.
 */
#include <pthread.h>
#include <sys/eventfd.h>

#include "common.h"
#include "loop.h"

struct item {
	void (*fn)(void *userdata);
	void *userdata;
	struct item *next;
};

struct mailbox {
	sd_event_source *src;
	int efd;
	pthread_mutex_t lock;
	struct item *head, *tail;
};

static void run_all(struct mailbox *m)
{
	for (;;) {
		struct item *it;

		pthread_mutex_lock(&m->lock);
		it = m->head;
		m->head = m->tail = NULL;
		pthread_mutex_unlock(&m->lock);
		if (!it)
			return;
		while (it) {
			struct item *n = it->next;

			it->fn(it->userdata);
			free(it);
			it = n;
		}
	}
}

static int on_wake(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct mailbox *m = userdata;
	uint64_t u;

	if (read(m->efd, &u, sizeof(u)) < 0 && errno != EAGAIN)
		return 0;
	run_all(m);
	return 0;
}

int mailbox_new(sd_event *loop, struct mailbox **ret)
{
	struct mailbox *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->efd < 0) {
		r = -errno;
		mailbox_free(m);
		return r;
	}
	r = sd_event_add_io(loop, &m->src, m->efd, EPOLLIN, on_wake, m);
	if (r < 0) {
		mailbox_free(m);
		return r;
	}
	*ret = m;
	return 0;
}

void mailbox_free(struct mailbox *m)
{
	if (!m)
		return;
	run_all(m);
	sd_event_source_disable_unref(m->src);
	if (m->efd >= 0)
		close(m->efd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int mailbox_post(struct mailbox *m, void (*fn)(void *userdata), void *userdata)
{
	struct item *it = malloc(sizeof(*it));
	uint64_t one = 1;

	if (!it)
		return -ENOMEM;
	*it = (struct item){.fn = fn, .userdata = userdata};
	pthread_mutex_lock(&m->lock);
	if (m->tail)
		m->tail->next = it;
	else
		m->head = it;
	m->tail = it;
	pthread_mutex_unlock(&m->lock);
	if (write(m->efd, &one, sizeof(one)) < 0) {
		/* Saturated counter: a wake-up is pending anyway. */
	}
	return 0;
}
