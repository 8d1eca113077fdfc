/* SPDX-License-Identifier: Apache-2.0 */
/*
 * service-probe: dra_service on an sd-event loop, answering batches by a script the
 * test knows, so test-service.py can drive it with the kubelet double.
 *
 *   service-probe DRIVER REGISTRY_DIR PLUGIN_DIR [SLOW_MS [OPTION...]]
 *
 * no-fswatch: the service gets no inotify watcher and relies on its poll alone.
 * resend-ms=N: the unchanged health list is sent again every N ms (default: the service's).
 *
 * Claims by UID: "fail-*" fail with "probe refuses <uid>"; "skip-*" are left unanswered
 * (the service must answer them itself); "slow-*" hold the whole batch back SLOW_MS
 * (default 2000) before it is finished; any other succeeds, Prepare with two canned
 * devices per claim, the second a share (see prepare_one). Events go to stdout, one line each,
 * flushed: ready | registered ok | registered failed <error> | registration lost
 *   | batch prepare|unprepare <n> <uids> | finished <n> | stopped
 * stdin takes health lists, one command a line:
 *   health <device>=<healthy|unhealthy|unknown>[:<message>] ...   (pool "node1")
 * SIGTERM/SIGINT: stop, wait until gRPC is idle, exit 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "rpc.h"
#include "loop.h"
#include "service.h"

#define POOL "node1"
#define PROBE_SHARE_ID "11111111-2222-4333-8444-555555555555" /* the second device's */

struct probe {
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct gc_runtime *rt;
	struct dra_service *svc;
	unsigned slow_ms;
	unsigned pending; /* slow batches not yet finished */
	bool stopping;
	char line[8192];
	size_t line_len;
};

struct slow {
	struct probe *p;
	struct dra_batch *b;
	sd_event_source *timer;
};

static void emit(const char *fmt, ...) _printf_(1, 2);
static void emit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int prepare_one(struct dra_batch *b, size_t i, const char *uid)
{
	char *req0[] = {(char *)"nic"}, *req1[] = {(char *)"nic", (char *)"extra"};
	char id0[300], id1[300], claim[300];
	char *ids0[] = {id0, claim}, *ids1[] = {id1, claim};
	struct dra_prepared_device d[2] = {
	    {.requests = req0,
	     .n_requests = 1,
	     .device = (char *)"pci-0000-3b-00-0",
	     .cdi_ids = ids0,
	     .n_cdi_ids = 2},
	    {.requests = req1,
	     .n_requests = 2,
	     .device = (char *)"pci-0000-86-00-1",
	     .cdi_ids = ids1,
	     .n_cdi_ids = 2,
	     .share_id = (char *)PROBE_SHARE_ID},
	};
	struct dra_prepared_claim pc = {.uid = (char *)uid, .devices = d, .n_devices = 2};

	snprintf(id0, sizeof(id0), "rdma.example/hca=mlx5_0");
	snprintf(id1, sizeof(id1), "rdma.example/hca=mlx5_3");
	snprintf(claim, sizeof(claim), "rdma.example/claim=%s", uid);
	return dra_batch_answer(b, i, &pc, POOL);
}

static void answer_all(struct dra_batch *b)
{
	size_t n = dra_batch_n_claims(b);

	for (size_t i = 0; i < n; i++) {
		const struct dra_claim_ref *c = dra_batch_claim(b, i);
		char msg[300];
		int r = 0;

		if (strncmp(c->uid, "skip-", 5) == 0)
			continue;
		if (strncmp(c->uid, "fail-", 5) == 0) {
			snprintf(msg, sizeof(msg), "probe refuses %s (%s/%s)", c->uid, c->namespace,
				 c->name);
			r = dra_batch_fail(b, i, msg);
		} else if (dra_batch_kind(b) == DRA_BATCH_PREPARE) {
			r = prepare_one(b, i, c->uid);
		} else {
			r = dra_batch_answer(b, i, NULL, NULL);
		}
		if (r < 0)
			log_error_errno(r, "answering claim %s failed", c->uid);
	}
	emit("finished %zu", n);
	dra_batch_finish(b);
}

static int on_slow(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct slow *s = userdata;

	answer_all(s->b);
	s->p->pending--;
	sd_event_source_disable_unref(s->timer);
	free(s);
	return 0;
}

static void on_batch(void *userdata, struct dra_batch *b)
{
	struct probe *p = userdata;
	size_t n = dra_batch_n_claims(b);
	bool slow = false;
	char uids[1024] = "";
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		const char *uid = dra_batch_claim(b, i)->uid;

		slow |= strncmp(uid, "slow-", 5) == 0;
		if (at < sizeof(uids) - 1)
			at += (size_t)snprintf(uids + at, sizeof(uids) - at, "%s%s", i ? "," : "",
					       uid);
	}
	if (at >= sizeof(uids))
		strcpy(uids + sizeof(uids) - 4, "...");
	emit("batch %s %zu %s", dra_batch_kind(b) == DRA_BATCH_PREPARE ? "prepare" : "unprepare", n,
	     uids);
	if (slow) {
		struct slow *s = calloc(1, sizeof(*s));

		if (s && sd_event_add_time_relative(p->loop, &s->timer, CLOCK_MONOTONIC,
						    (uint64_t)p->slow_ms * 1000, 1000, on_slow,
						    s) >= 0) {
			s->p = p;
			s->b = b;
			p->pending++;
			return;
		}
		free(s);
	}
	answer_all(b);
}

static void on_registered(void *userdata, bool ok, const char *error)
{
	if (ok)
		emit("registered ok");
	else if (!error)
		emit("registration lost");
	else
		emit("registered failed %s", error);
}

/* "health a=healthy b=unhealthy:port1-down" */
static void health_command(struct probe *p, char *line)
{
	struct dra_device_health h[64];
	size_t n = 0;
	char *save = NULL;

	strtok_r(line, " ", &save);
	for (char *tok = strtok_r(NULL, " ", &save); tok && n < ELEMENTSOF(h);
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), *colon;

		if (!eq)
			continue;
		*eq++ = '\0';
		colon = strchr(eq, ':');
		if (colon)
			*colon++ = '\0';
		h[n] = (struct dra_device_health){
		    .pool = POOL,
		    .device = tok,
		    .health = strcmp(eq, "healthy") == 0     ? DRA_HEALTH_HEALTHY
			      : strcmp(eq, "unhealthy") == 0 ? DRA_HEALTH_UNHEALTHY
							     : DRA_HEALTH_UNKNOWN,
		    .message = colon ? colon : "",
		    .last_updated = (int64_t)time(NULL),
		};
		n++;
	}
	dra_service_publish_health(p->svc, h, n);
	emit("health %zu", n);
}

static void begin_stop(struct probe *p)
{
	if (p->stopping)
		return;
	p->stopping = true;
	dra_service_free(p->svc);
	p->svc = NULL;
}

static int on_stdin(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	struct probe *p = userdata;
	ssize_t n = read(fd, p->line + p->line_len, sizeof(p->line) - 1 - p->line_len);
	char *nl;

	if (n <= 0) {
		sd_event_source_set_enabled(src, SD_EVENT_OFF);
		return 0;
	}
	p->line_len += (size_t)n;
	p->line[p->line_len] = '\0';
	while ((nl = strchr(p->line, '\n'))) {
		*nl = '\0';
		if (strncmp(p->line, "health", 6) == 0 && p->svc)
			health_command(p, p->line);
		memmove(p->line, nl + 1, p->line_len - (size_t)(nl + 1 - p->line) + 1);
		p->line_len -= (size_t)(nl + 1 - p->line);
	}
	if (p->line_len == sizeof(p->line) - 1)
		p->line_len = 0; /* a line too long: dropped */
	return 0;
}

static int on_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *userdata)
{
	begin_stop(userdata);
	return 0;
}

int main(int argc, char **argv)
{
	struct probe p = {.slow_ms = 2000};
	bool fswatch = true;
	uint64_t resend_usec = 0;
	sd_event_source *in = NULL;
	sigset_t mask;
	int r;

	if (argc < 4) {
		fprintf(stderr, "usage: %s DRIVER REGISTRY_DIR PLUGIN_DIR [SLOW_MS [OPTION...]]\n",
			argv[0]);
		return 2;
	}
	if (argc > 4)
		p.slow_ms = (unsigned)atoi(argv[4]);
	for (int i = 5; i < argc; i++) {
		if (strcmp(argv[i], "no-fswatch") == 0)
			fswatch = false;
		else if (strncmp(argv[i], "resend-ms=", 10) == 0)
			resend_usec = strtoull(argv[i] + 10, NULL, 10) * 1000;
	}
	log_set_level(LOG_LVL_DEBUG);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (sd_event_new(&p.loop) < 0 || mailbox_new(p.loop, &p.mb) < 0 ||
	    (fswatch && fswatch_new(p.loop, &p.fw) < 0) || gc_runtime_new(p.mb, &p.rt) < 0)
		return 1;
	sd_event_add_signal(p.loop, NULL, SIGTERM, on_signal, &p);
	sd_event_add_signal(p.loop, NULL, SIGINT, on_signal, &p);
	sd_event_add_io(p.loop, &in, STDIN_FILENO, EPOLLIN, on_stdin, &p);
	r = dra_service_start(p.loop, p.mb, p.fw, p.rt,
			      &(struct dra_service_config){
				  .driver = argv[1],
				  .registry_dir = argv[2],
				  .plugin_dir = argv[3],
				  .batch = on_batch,
				  .registered = on_registered,
				  .userdata = &p,
				  .health_resend_usec = resend_usec,
			      },
			      &p.svc);
	if (r < 0) {
		emit("start failed %d", r);
		p.stopping = true;
	} else {
		emit("ready");
	}
	/* Stopping: slow batches still finish (after the service is gone: the answer is
	 * dropped or sent, never a crash), then every instance's shutdown completes. */
	while (!p.stopping || p.pending > 0 || !gc_runtime_idle(p.rt)) {
		r = sd_event_run(p.loop, UINT64_MAX);
		if (r < 0)
			break;
	}
	sd_event_source_disable_unref(in);
	gc_runtime_free(p.rt);
	fswatch_free(p.fw);
	mailbox_free(p.mb);
	sd_event_unref(p.loop);
	emit("stopped");
	return 0;
}
