/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Sysfs Watcher on a real sd-event loop: a scan that never returns is abandoned at
 * its deadline while the loop keeps running; device nodes appearing and vanishing (and
 * the whole infiniband/ dir coming late or going away) start scans at once; the owner
 * may free the follower from inside its callback (a daemon whose first scan fails stops).
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"
#include "follow.h"
#include "tap.h"

static int block_fd = -1; /* a scan blocks reading this while it is set */
static int n_scans;
static struct {
	int n, errors, last_error;
	enum disc_follow_reason last_reason;
} seen;
static int ticks;

static int fake_scan(const struct disc_options *o, struct disc_node **ret)
{
	int fd = __atomic_load_n(&block_fd, __ATOMIC_SEQ_CST);
	char c;

	__atomic_add_fetch(&n_scans, 1, __ATOMIC_SEQ_CST);
	if (fd >= 0 && read(fd, &c, 1) < 0)
		return -errno;
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	seen.n++;
	seen.last_reason = reason;
	seen.last_error = error;
	if (error < 0)
		seen.errors++;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	ticks++;
	sd_event_source_set_time_relative(s, 50000);
	return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

/* Runs the loop until cond() or timeout_ms; true when cond() became true. */
static bool run_until(sd_event *e, bool (*cond)(void), int timeout_ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (cond())
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			return false;
		sd_event_run(e, 20000);
	}
}

static int want_n;
static bool got_n(void)
{
	return seen.n >= want_n;
}

static void test_deadline(sd_event *e, struct mailbox *mb, struct fswatch *fw, const char *dev)
{
	struct disc_follow *f = NULL;
	sd_event_source *tick = NULL;
	int p[2];

	ok(pipe2(p, O_CLOEXEC) == 0, "pipe");
	block_fd = p[0];
	memset(&seen, 0, sizeof(seen));
	sd_event_add_time_relative(e, &tick, CLOCK_MONOTONIC, 50000, 1000, on_tick, NULL);
	ok(disc_follow_new(e, mb, fw,
			   &(struct disc_follow_config){
			       .disc = {.dev_root = dev},
			       .timeout_sec = 1,
			       .fn = on_scan,
			       .scan = fake_scan,
			   },
			   &f) == 0,
	   "follower starts");
	want_n = 1;
	ok(run_until(e, got_n, 3000), "a scan that never returns is given up");
	EQ_INT(seen.last_error, -ETIMEDOUT, "reported as a timeout");
	ok(ticks >= 10, "the loop kept running meanwhile (%d ticks of 50 ms)", ticks);
	/* The stuck scan returns later: its result is dropped, nothing is delivered. */
	block_fd = -1;
	ok(write(p[1], "x", 1) == 1, "release the stuck scan");
	disc_follow_rescan(f, DISC_FOLLOW_REQUEST);
	want_n = 2;
	ok(run_until(e, got_n, 2000), "the next scan works");
	EQ_INT(seen.last_error, 0, "without error");
	EQ_INT(seen.last_reason, DISC_FOLLOW_REQUEST, "for the request");
	ok(disc_follow_node(f) != NULL, "and is the current snapshot");
	disc_follow_free(f);
	sd_event_source_disable_unref(tick);
	close(p[0]);
	close(p[1]);
	usleep(100000); /* the orphaned thread frees its job */
}

/* The daemons stop when their first scan fails, and stopping frees the follower: from
 * inside the follower's own callback. Under ASan/valgrind a touch after that is caught. */
static struct disc_follow *owned;
static int fail_scan(const struct disc_options *o, struct disc_node **ret)
{
	int fd = __atomic_load_n(&block_fd, __ATOMIC_SEQ_CST);
	char c;

	if (fd >= 0 && read(fd, &c, 1) < 0)
		return -errno;
	return -EIO;
}

static void on_scan_free(void *userdata, const struct disc_node *node, const struct disc_node *prev,
			 int error, enum disc_follow_reason reason)
{
	on_scan(userdata, node, prev, error, reason);
	disc_follow_free(owned);
	owned = NULL;
}

static void test_free_in_callback(sd_event *e, struct mailbox *mb, struct fswatch *fw,
				  const char *dev)
{
	int p[2];

	for (int timed_out = 0; timed_out <= 1; timed_out++) {
		ok(pipe2(p, O_CLOEXEC) == 0, "pipe");
		block_fd = timed_out ? p[0] : -1;
		memset(&seen, 0, sizeof(seen));
		ok(disc_follow_new(e, mb, fw,
				   &(struct disc_follow_config){
				       .disc = {.dev_root = dev},
				       .timeout_sec = 1,
				       .fn = on_scan_free,
				       .scan = fail_scan,
				   },
				   &owned) == 0,
		   "follower starts (%s)", timed_out ? "its scan hangs" : "its scan fails");
		want_n = 1;
		ok(run_until(e, got_n, 3000), "the failure is reported");
		EQ_INT(seen.last_error, timed_out ? -ETIMEDOUT : -EIO, "with its error");
		ok(owned == NULL, "the owner freed the follower in the callback");
		/* Nothing of the freed follower runs afterwards: no second report. */
		run_until(e, got_n, 300);
		EQ_INT(seen.n, 1, "and heard nothing more from it");
		block_fd = -1;
		ok(write(p[1], "x", 1) == 1, "release the scan");
		close(p[0]);
		close(p[1]);
		usleep(100000); /* the orphaned thread frees its job */
	}
}

static void test_hotplug(sd_event *e, struct mailbox *mb, struct fswatch *fw, const char *dev)
{
	char ib[512], node[600];
	struct disc_follow *f = NULL;
	int fd;

	snprintf(ib, sizeof(ib), "%s/infiniband", dev);
	snprintf(node, sizeof(node), "%s/uverbs9", ib);
	memset(&seen, 0, sizeof(seen));
	ok(disc_follow_new(e, mb, fw,
			   &(struct disc_follow_config){
			       .disc = {.dev_root = dev},
			       .fn = on_scan,
			       .scan = fake_scan,
			   },
			   &f) == 0,
	   "follower starts without a dev/infiniband");
	want_n = 1;
	ok(run_until(e, got_n, 2000) && seen.last_reason == DISC_FOLLOW_START, "first scan");
	ok(mkdir(ib, 0755) == 0, "infiniband/ appears (the driver loads)");
	want_n = 2;
	ok(run_until(e, got_n, 1000) && seen.last_reason == DISC_FOLLOW_HOTPLUG,
	   "its appearance starts a scan");
	fd = open(node, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	ok(fd >= 0, "a device node appears");
	close(fd);
	want_n = 3;
	ok(run_until(e, got_n, 1000) && seen.last_reason == DISC_FOLLOW_HOTPLUG,
	   "a new node starts a scan within 1 s");
	ok(unlink(node) == 0 && rmdir(ib) == 0, "node and dir go away");
	want_n = 4;
	ok(run_until(e, got_n, 1000), "their removal starts a scan");
	/* Settle: both events may land in one or two scans. */
	run_until(e, got_n, 100);
	want_n = seen.n + 1;
	ok(mkdir(ib, 0755) == 0, "infiniband/ comes back");
	ok(run_until(e, got_n, 1000), "watched again once it is back");
	want_n = seen.n + 1;
	fd = open(node, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(fd);
	ok(run_until(e, got_n, 1000), "and its nodes are followed again");
	EQ_INT(seen.errors, 0, "no scan failed");
	disc_follow_free(f);
	unlink(node);
	rmdir(ib);
}

int main(void)
{
	char dev[] = "/tmp/rdma-cdi-follow-XXXXXX";
	struct mailbox *mb = NULL;
	struct fswatch *fw = NULL;
	sd_event *e = NULL;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (!mkdtemp(dev))
		return 1;
	ok(sd_event_new(&e) >= 0 && mailbox_new(e, &mb) == 0 && fswatch_new(e, &fw) == 0,
	   "loop, mailbox, watcher");
	ok(fswatch_new(e, &(struct fswatch *){NULL}) == -EBUSY, "one watcher per process");
	test_deadline(e, mb, fw, dev);
	test_hotplug(e, mb, fw, dev);
	test_free_in_callback(e, mb, fw, dev);
	fswatch_free(fw);
	mailbox_free(mb);
	sd_event_unref(e);
	rmdir(dev);
	return tap_done();
}
