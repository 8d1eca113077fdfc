/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge_run(): the control thread of `rdma-cdi bridge`.
 *
 * It owns discovery, the spec file and the lifecycle: it serves our socket, registers
 * with the kubelet once serving, and reacts to
 *   - signals (signalfd): SIGTERM/SIGINT stop, SIGHUP rescans and resends the list;
 *   - the plugin directory (a libinotifytools watch whose descriptor sits in the same
 *     poll(); events are read from it directly, without blocking):
 *     kubelet.sock created -> register; our socket deleted -> serve again and register
 *     (a kubelet restart deletes every socket there, then creates kubelet.sock);
 *   - the end of a Register call (eventfd from the gRPC thread) and a retry timer;
 *   - the periodic health rescan (timerfd).
 * Everything else sleeps in poll(): an idle bridge wakes once per rescan period.
 */
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include <inotifytools/inotifytools.h>

#include "server.h"

#define RETRY_MIN_MS 20
#define RETRY_MAX_MS 5000

/* What an inotify event in the plugin directory means for us. */
enum {
	EV_NONE,
	EV_KUBELET,  /* kubelet.sock created or moved in */
	EV_OURS,     /* our socket deleted or moved away */
	EV_RECHECK,  /* queue overflow: check everything */
	EV_DIR_GONE, /* the plugin directory itself went away */
};

struct bridge {
	const struct bridge_options *o;
	char *plugin_dir, *socket_path, *kubelet_path;
	struct dp_table_options topts;
	struct dp_server *srv;
	int sig_fd, notify_fd, retry_fd, rescan_fd;
	int inotify_fd; /* libinotifytools' own; not ours to close */
	bool inotify_inited;
	/* registration state */
	bool registered, in_flight, want_register, waiting_logged;
	/* kubelet.sock of the last Register attempt: inode and ctime (inodes get reused) */
	ino_t reg_ino;
	struct timespec reg_ctime;
	unsigned retry_ms;
};

static int classify(const struct inotify_event *ev)
{
	if (ev->mask & IN_Q_OVERFLOW)
		return EV_RECHECK;
	if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED))
		return EV_DIR_GONE;
	if (ev->len > 0 && strcmp(ev->name, BRIDGE_KUBELET_SOCKET) == 0 &&
	    (ev->mask & (IN_CREATE | IN_MOVED_TO)))
		return EV_KUBELET;
	if (ev->len > 0 && strcmp(ev->name, BRIDGE_SOCKET_NAME) == 0 &&
	    (ev->mask & (IN_DELETE | IN_MOVED_FROM)))
		return EV_OURS;
	return EV_NONE;
}

/* The inotify descriptors of this process, from /proc/self/fd. */
static int list_inotify_fds(int *fds, size_t max, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char target[64];
		ssize_t l = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		if (l < 0)
			continue;
		target[l] = '\0';
		if (strcmp(target, "anon_inode:inotify") == 0 && n < max)
			fds[n++] = atoi(de->d_name);
	}
	*ret_n = n;
	return 0;
}

static int watch_start(struct bridge *b)
{
	int before[64], after[64];
	size_t n_before = 0, n_after = 0;
	int r;

	/* libinotifytools keeps its descriptor to itself and its next_event() blocks for a
	 * timeout of 0 too; we want the descriptor in our poll() (one control thread,
	 * nothing to cancel at exit). It is the inotify descriptor that appears across
	 * inotifytools_initialize(). */
	r = list_inotify_fds(before, ELEMENTSOF(before), &n_before);
	if (r < 0)
		return log_error_errno(r, "cannot list /proc/self/fd");
	if (!inotifytools_initialize())
		return log_error_errno(-inotifytools_error(), "inotify initialisation failed");
	b->inotify_inited = true;
	r = list_inotify_fds(after, ELEMENTSOF(after), &n_after);
	if (r < 0)
		return log_error_errno(r, "cannot list /proc/self/fd");
	for (size_t i = 0; i < n_after && b->inotify_fd < 0; i++) {
		bool old = false;

		for (size_t j = 0; j < n_before; j++)
			old |= before[j] == after[i];
		if (!old)
			b->inotify_fd = after[i];
	}
	if (b->inotify_fd < 0)
		return log_error_errno(-EBADF,
				       "cannot find the inotify descriptor of libinotifytools");
	if (fcntl(b->inotify_fd, F_SETFD, FD_CLOEXEC) < 0 ||
	    fcntl(b->inotify_fd, F_SETFL, fcntl(b->inotify_fd, F_GETFL) | O_NONBLOCK) < 0)
		return log_error_errno(-errno, "cannot set up the inotify descriptor");
	if (!inotifytools_watch_file(b->plugin_dir, IN_CREATE | IN_MOVED_TO | IN_DELETE |
							IN_MOVED_FROM | IN_DELETE_SELF |
							IN_MOVE_SELF | IN_ONLYDIR))
		return log_error_errno(-inotifytools_error(), "cannot watch %s", b->plugin_dir);
	return 0;
}

/* Drains the inotify descriptor; *what gets a bit per EV_* seen. */
static int read_events(struct bridge *b, int *what)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(b->inotify_fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return log_error_errno(n < 0 ? -errno : -EIO,
					       "reading inotify events failed");
		for (char *p = buf; p + sizeof(struct inotify_event) <= buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			*what |= 1 << classify(ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

static void watch_stop(struct bridge *b)
{
	if (b->inotify_inited)
		inotifytools_cleanup();
}

/* ---- discovery, spec, table ----------------------------------------------------- */

static int rescan(struct bridge *b, bool force, bool first)
{
	const struct bridge_options *o = b->o;
	struct spec_write_options wo = {.spec_dir = o->spec_dir, .format = CDI_FORMAT_JSON};
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_free_ char *path = NULL;
	struct disc_node *node = NULL;
	struct dp_table *t = NULL;
	bool changed = false;
	int r;

	r = disc_scan(&o->disc, &node);
	if (r < 0)
		return log_error_errno(r, "scanning %s failed",
				       o->disc.sysfs_root ? o->disc.sysfs_root : "/sys");
	for (size_t i = 0; i < node->n_problems; i++) {
		if (first || force)
			log_warning("%s", node->problems[i]);
		else
			log_debug("%s", node->problems[i]);
	}

	r = spec_build(node, &o->spec, &spec);
	if (r == -ENODEV) {
		log_warning("no usable RDMA device found: advertising none, CDI spec left as is");
	} else if (r < 0) {
		log_error_errno(r, "building the CDI spec failed");
		goto out;
	} else {
		char err[512] = "";

		r = spec_write(spec, &wo, &path, &changed, err, sizeof(err));
		if (r < 0) {
			log_error_errno(r, "writing the CDI spec into %s failed: %s",
					o->spec_dir ? o->spec_dir : SPEC_DEFAULT_DIR, err);
			goto out;
		}
		if (changed || first)
			log_info("CDI spec %s %s (%zu usable devices)", path,
				 changed ? "written" : "up to date", disc_node_count_usable(node));
	}

	/* The table only holds devices the spec just written defines. */
	r = dp_table_build(node, spec, &b->topts, &t);
	if (r < 0) {
		log_error_errno(r, "building the device table failed");
		goto out;
	}
	if (t->n_skipped > 0)
		log_warning("%zu device(s) left out: their device ID collides with another's",
			    t->n_skipped);
	/* Transients go before anything long-lived is allocated (the packed list). */
	disc_node_free(TAKE_PTR(node));
	cJSON_Delete(TAKE_PTR(spec));
	r = dp_server_publish(b->srv, t, force);
	if (r < 0)
		log_error_errno(r, "publishing the device list failed");
out:
	disc_node_free(node);
	/* A rescan of a big node frees a few MiB; give them back instead of keeping them. */
	malloc_trim(0);
	return r < 0 ? r : 0;
}

/* ---- registration --------------------------------------------------------------- */

static void arm_timer_ms(int fd, unsigned ms)
{
	struct itimerspec its = {
	    .it_value = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000},
	};

	if (timerfd_settime(fd, 0, &its, NULL) < 0)
		log_error("arming a timer failed: %m");
}

static void schedule_retry(struct bridge *b)
{
	log_info("retrying registration in %u ms", b->retry_ms);
	arm_timer_ms(b->retry_fd, b->retry_ms);
	b->retry_ms = b->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : b->retry_ms * 2;
}

/* Starts a Register call when kubelet.sock is there; restart = even if that kubelet
 * already has us (a new server instance needs a new registration). */
static void try_register(struct bridge *b, bool restart)
{
	struct stat st;
	int r;

	r = lstat(b->kubelet_path, &st) < 0 ? -errno : S_ISSOCK(st.st_mode) ? 0 : -ENOTSOCK;
	if (r < 0) {
		if (!b->waiting_logged)
			log_info("waiting for the kubelet: %s %s", b->kubelet_path,
				 r == -ENOENT	  ? "does not exist yet"
				 : r == -ENOTSOCK ? "is not a socket"
						  : strerror(-r));
		b->waiting_logged = true;
		b->registered = false;
		return;
	}
	b->waiting_logged = false;
	if (!restart && st.st_ino == b->reg_ino && st.st_ctim.tv_sec == b->reg_ctime.tv_sec &&
	    st.st_ctim.tv_nsec == b->reg_ctime.tv_nsec &&
	    (b->registered || b->in_flight || b->want_register))
		return; /* this kubelet has us, or an attempt on it is under way */
	r = dp_server_register(b->srv);
	if (r == -EBUSY) {
		/* An attempt towards an older socket is in flight: replace it. */
		b->want_register = true;
		b->reg_ino = st.st_ino;
		b->reg_ctime = st.st_ctim;
		dp_server_register_cancel(b->srv);
		return;
	}
	b->registered = false;
	b->want_register = false;
	b->in_flight = r == 0;
	b->reg_ino = st.st_ino;
	b->reg_ctime = st.st_ctim;
	if (r < 0) {
		log_error_errno(r, "starting the Register call failed");
		schedule_retry(b);
	}
}

static void on_register_done(struct bridge *b)
{
	int r = dp_server_register_result(b->srv);

	b->in_flight = false;
	if (b->want_register) {
		b->want_register = false;
		try_register(b, true);
		return;
	}
	if (r > 0) {
		b->registered = true;
		b->retry_ms = RETRY_MIN_MS;
	} else if (r < 0) {
		b->registered = false;
		schedule_retry(b);
	}
}

static int serve(struct bridge *b)
{
	int r = dp_server_serve(b->srv);

	if (r == -EADDRINUSE)
		return log_error_errno(r, "%s answers connections: another device plugin serves it",
				       b->socket_path);
	if (r == -EEXIST)
		return log_error_errno(r, "%s exists and is not a socket, refusing to replace it",
				       b->socket_path);
	if (r < 0)
		return log_error_errno(r, "cannot serve on %s", b->socket_path);
	return 0;
}

/* After an event in the plugin dir: serve again if our socket is gone, register if the
 * kubelet is (new) there. */
static int reconcile(struct bridge *b, bool kubelet_event)
{
	if (!dp_server_socket_is_current(b->srv)) {
		int r;

		log_info("%s was removed (kubelet restart?): serving again", b->socket_path);
		r = serve(b);
		if (r < 0)
			return r;
		b->registered = false;
		try_register(b, true);
		return 0;
	}
	if (kubelet_event) {
		log_info("%s appeared: registering", b->kubelet_path);
		try_register(b, false);
	}
	return 0;
}

/* ---- setup ---------------------------------------------------------------------- */

static int mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int setup_paths(struct bridge *b)
{
	const char *dir = b->o->plugin_dir ? b->o->plugin_dir : BRIDGE_DEFAULT_PLUGIN_DIR;
	struct sockaddr_un sa;
	struct stat st;
	int r;

	if (dir[0] == '/') {
		b->plugin_dir = strdup(dir);
	} else {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);

		if (!cwd)
			return log_error_errno(-errno, "getcwd failed");
		b->plugin_dir = strdup_printf("%s/%s", cwd, dir);
	}
	if (!b->plugin_dir)
		return -ENOMEM;
	/* Trailing slashes would make "dir//rdma-cdi.sock". */
	for (size_t l = strlen(b->plugin_dir); l > 1 && b->plugin_dir[l - 1] == '/'; l--)
		b->plugin_dir[l - 1] = '\0';
	b->socket_path = strdup_printf("%s/%s", b->plugin_dir, BRIDGE_SOCKET_NAME);
	b->kubelet_path = strdup_printf("%s/%s", b->plugin_dir, BRIDGE_KUBELET_SOCKET);
	if (!b->socket_path || !b->kubelet_path)
		return -ENOMEM;
	if (strlen(b->socket_path) >= sizeof(sa.sun_path) ||
	    strlen(b->kubelet_path) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "plugin directory %s: socket paths too long",
				       b->plugin_dir);

	if (stat(b->plugin_dir, &st) < 0) {
		if (errno != ENOENT)
			return log_error_errno(-errno, "plugin directory %s", b->plugin_dir);
		/* The kubelet creates it 0750 too; we may simply be first. */
		r = mkdir_p(b->plugin_dir, 0750);
		if (r < 0)
			return log_error_errno(r, "cannot create plugin directory %s",
					       b->plugin_dir);
		log_info("created plugin directory %s", b->plugin_dir);
	} else if (!S_ISDIR(st.st_mode)) {
		return log_error_errno(-ENOTDIR, "plugin directory %s", b->plugin_dir);
	}
	return 0;
}

static int check_options(const struct bridge_options *o)
{
	const char *res = o->resource ? o->resource : BRIDGE_DEFAULT_RESOURCE;

	if (!bridge_resource_name_is_valid(res))
		return log_error_errno(-EINVAL, "invalid resource name \"%s\"", res);
	if (o->shared > BRIDGE_SHARED_MAX)
		return log_error_errno(-EINVAL, "--shared %u exceeds %d", o->shared,
				       BRIDGE_SHARED_MAX);
	if (o->strategies & ~(unsigned)(BRIDGE_STRATEGY_CDI_CRI | BRIDGE_STRATEGY_CDI_ANNOTATIONS |
					BRIDGE_STRATEGY_DEVICE_SPECS))
		return log_error_errno(-EINVAL, "invalid device list strategy mask 0x%x",
				       o->strategies);
	if (o->spec.kind && !cdi_kind_is_valid(o->spec.kind))
		return log_error_errno(-EINVAL, "invalid CDI kind \"%s\"", o->spec.kind);
	return 0;
}

static void bridge_close(struct bridge *b)
{
	watch_stop(b);
	dp_server_free(b->srv);
	int fds[] = {b->sig_fd, b->notify_fd, b->retry_fd, b->rescan_fd};

	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(b->plugin_dir);
	free(b->socket_path);
	free(b->kubelet_path);
}

/* ---- main loop ------------------------------------------------------------------ */

static int loop(struct bridge *b)
{
	enum { P_SIG, P_WATCH, P_NOTIFY, P_RETRY, P_RESCAN, P_N };
	struct pollfd p[P_N] = {
	    [P_SIG] = {.fd = b->sig_fd, .events = POLLIN},
	    [P_WATCH] = {.fd = b->inotify_fd, .events = POLLIN},
	    [P_NOTIFY] = {.fd = b->notify_fd, .events = POLLIN},
	    [P_RETRY] = {.fd = b->retry_fd, .events = POLLIN},
	    [P_RESCAN] = {.fd = b->rescan_fd, .events = POLLIN},
	};
	uint64_t u;
	int r;

	for (;;) {
		if (poll(p, P_N, -1) < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "poll failed");
		}
		if (p[P_SIG].revents) {
			struct signalfd_siginfo si;

			if (read(b->sig_fd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					log_info("SIGHUP: rescanning");
					(void)rescan(b, true, false);
				} else {
					log_info("SIG%s: stopping",
						 sigabbrev_np((int)si.ssi_signo));
					return 0;
				}
			}
		}
		if (p[P_WATCH].revents) {
			bool kubelet = false, check = false;
			int what = 0;

			r = read_events(b, &what);
			if (r < 0)
				return r;
			if (what & (1 << EV_DIR_GONE))
				return log_error_errno(
				    -ENOENT,
				    "plugin directory %s went away: exiting so the "
				    "supervisor restarts us",
				    b->plugin_dir);
			kubelet = what & ((1 << EV_KUBELET) | (1 << EV_RECHECK));
			check = what & ~(1 << EV_NONE);
			if (check) {
				r = reconcile(b, kubelet);
				if (r < 0)
					return r;
			}
		}
		if (p[P_NOTIFY].revents && read(b->notify_fd, &u, sizeof(u)) == sizeof(u))
			on_register_done(b);
		if (p[P_RETRY].revents && read(b->retry_fd, &u, sizeof(u)) == sizeof(u))
			try_register(b, true);
		if (p[P_RESCAN].revents && read(b->rescan_fd, &u, sizeof(u)) == sizeof(u))
			(void)rescan(b, false, false);
	}
}

int bridge_run(const struct bridge_options *o)
{
	struct bridge b = {
	    .o = o,
	    .sig_fd = -1,
	    .notify_fd = -1,
	    .retry_fd = -1,
	    .rescan_fd = -1,
	    .inotify_fd = -1,
	    .retry_ms = RETRY_MIN_MS,
	};
	int interval = o->rescan_interval == 0 ? BRIDGE_DEFAULT_RESCAN_SEC : o->rescan_interval;
	sigset_t mask, old_mask;
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	b.topts = (struct dp_table_options){
	    .kind = o->spec.kind,
	    .dev_root = o->spec.dev_root ? o->spec.dev_root : o->disc.dev_root,
	    .shared = o->shared,
	    .strategies = o->strategies,
	    .with_mad = o->spec.with_mad,
	};

	/* Blocked before any thread exists (gRPC starts its own), so only signalfd sees them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
	sigdelset(&mask, SIGPIPE);

	r = setup_paths(&b);
	if (r < 0)
		goto out;
	b.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	b.notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b.retry_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	b.rescan_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (b.sig_fd < 0 || b.notify_fd < 0 || b.retry_fd < 0 || b.rescan_fd < 0) {
		r = log_error_errno(-errno, "creating event descriptors failed");
		goto out;
	}

	r = dp_server_new(
	    &(struct dp_server_config){
		.socket_path = b.socket_path,
		.kubelet_path = b.kubelet_path,
		.endpoint = BRIDGE_SOCKET_NAME,
		.resource = o->resource ? o->resource : BRIDGE_DEFAULT_RESOURCE,
		.notify_fd = b.notify_fd,
	    },
	    &b.srv);
	if (r < 0) {
		log_error_errno(r, "starting gRPC failed");
		goto out;
	}
	/* The spec is on disk before any device is advertised. */
	r = rescan(&b, false, true);
	if (r < 0)
		goto out;
	/* Watch before looking at kubelet.sock, so its creation cannot slip between. */
	r = watch_start(&b);
	if (r < 0)
		goto out;
	r = serve(&b);
	if (r < 0)
		goto out;
	try_register(&b, true);
	if (interval > 0) {
		struct itimerspec its = {.it_value = {.tv_sec = interval},
					 .it_interval = {.tv_sec = interval}};

		timerfd_settime(b.rescan_fd, 0, &its, NULL);
	}

	r = loop(&b);
out:
	bridge_close(&b);
	/* SIGTERM, SIGINT and SIGHUP stay blocked: one that arrived after the one we acted
	 * on (SIGTERM and SIGINT together, a second Ctrl-C) would otherwise be delivered
	 * here and kill a cleanly stopped process. */
	sigorset(&old_mask, &old_mask, &mask);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (r == 0)
		log_info("stopped");
	return r;
}
