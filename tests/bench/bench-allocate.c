/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-allocate: the bridge under load, measured with a small client on gRPC core.
 *
 *   bench-allocate --rdma-cdi BIN --mksysfs mksysfs.py [--calls N] [--devices N]
 *
 * Builds the dgx fixture and a scale fixture of --devices RDMA devices (default 2000),
 * starts `rdma-cdi bridge` on each (default log level: one info line per Allocate, as in
 * production) and reports:
 *   - Allocate latency p50/p99/max with one caller, and GetPreferredAllocation's;
 *   - Allocate throughput with 64 calls in flight on one channel;
 *   - the bridge's memory from /proc/<pid>/smaps_rollup after that load: anonymous
 *     (private) pages apart from file-backed (shared library) pages;
 *   - re-registration: this program also plays the kubelet's Registration server; it
 *     deletes every socket in the plugin dir, creates kubelet.sock again and times the
 *     arrival of Register.
 * Each beside a floor measured in the same run: a bare gRPC core server (this program
 * again, --bare-server SOCK) that answers every call with an empty message, loaded with
 * the same calls (latency, throughput, memory); for re-registration, a new channel and
 * its first call to the bridge's socket (what a Register needs at least).
 * Targets (issue 3): p99 < 1 ms with one caller, anonymous < 8 MiB at 2,000 devices,
 * re-registration < 100 ms. Exit status 1 when a target is missed or a call fails.
 * --markdown prints the section of docs/benchmarks.md instead of plain lines.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "deviceplugin.h"

#define IN_FLIGHT 64
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static const char *opt_rdma_cdi, *opt_mksysfs, *opt_python = "/usr/bin/python3";
static unsigned opt_calls = 20000, opt_devices = 2000;
static bool failed, opt_markdown;

/* Every completion-queue tag starts with this. */
struct ev {
	bool done, ok;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static gpr_timespec in_ms(long ms)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* Processes completions until target is done; false on timeout. */
static bool wait_for(grpc_completion_queue *cq, struct ev *target, long timeout_ms)
{
	gpr_timespec deadline = in_ms(timeout_ms);

	while (!target->done) {
		grpc_event e = grpc_completion_queue_next(cq, deadline, NULL);

		if (e.type != GRPC_OP_COMPLETE)
			return false;
		((struct ev *)e.tag)->done = true;
		((struct ev *)e.tag)->ok = e.success;
	}
	return true;
}

static int run(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pid_t start_bridge(const char *work, const char *sys, const char *dev, const char *plugins)
{
	char spec[512], log[512];
	pid_t pid;

	snprintf(spec, sizeof(spec), "%s/cdi", work);
	snprintf(log, sizeof(log), "%s/bridge.log", work);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(opt_rdma_cdi, opt_rdma_cdi, "bridge", "--plugin-dir", plugins, "--sysfs-root",
		      sys, "--dev-root", dev, "--spec-dir", spec, "--hook-path",
		      "/usr/libexec/rdma-cdi/rdma-cdi-hook", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Until path is a socket that accepts a connection (bind() comes before listen()). */
static bool wait_path(const char *path, long timeout_ms)
{
	double end = now_us() + timeout_ms * 1e3;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	while (now_us() < end) {
		if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			bool up = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

			if (fd >= 0)
				close(fd);
			if (up)
				return true;
		}
		usleep(2000);
	}
	return false;
}

static void stop_bridge(pid_t pid, const char *work)
{
	int status;

	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char log[600];

		fprintf(stderr, "bridge exited abnormally (status 0x%x); end of its log:\n",
			status);
		fflush(stdout);
		snprintf(log, sizeof(log), "%s/bridge.log", work);
		run((char *[]){"/bin/sh", "-c", "tail -n 20 \"$0\" >&2", log, NULL});
		failed = true;
	}
}

/* ---- client calls ------------------------------------------------------------- */

struct call {
	struct ev ev;
	grpc_call *call;
	grpc_byte_buffer *send, *recv;
	grpc_metadata_array im, tm;
	grpc_status_code status;
	grpc_slice details;
	double t0;
};

static void call_start(grpc_channel *ch, grpc_completion_queue *cq, struct call *c,
		       const char *method, grpc_slice payload)
{
	grpc_op ops[6];

	memset(c, 0, sizeof(*c));
	memset(ops, 0, sizeof(ops));
	grpc_metadata_array_init(&c->im);
	grpc_metadata_array_init(&c->tm);
	c->send = grpc_raw_byte_buffer_create(&payload, 1);
	c->t0 = now_us();
	c->call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
					   grpc_slice_from_static_string(method), NULL,
					   in_ms(10000), NULL);
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = c->send;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &c->im;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &c->recv;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &c->tm;
	ops[5].data.recv_status_on_client.status = &c->status;
	ops[5].data.recv_status_on_client.status_details = &c->details;
	if (grpc_call_start_batch(c->call, ops, 6, c, NULL) != GRPC_CALL_OK) {
		fprintf(stderr, "grpc_call_start_batch failed\n");
		exit(1);
	}
}

/* Finishes a call; returns its latency in us, or -1 when it did not succeed. */
static double call_end(struct call *c)
{
	double dt = now_us() - c->t0;
	bool good = c->ev.ok && c->status == GRPC_STATUS_OK && c->recv;

	if (!good && !failed) {
		char *d = grpc_slice_to_c_string(c->details);

		fprintf(stderr, "call failed: status %d %s\n", (int)c->status, d);
		gpr_free(d);
		failed = true;
	}
	grpc_call_unref(c->call);
	grpc_byte_buffer_destroy(c->send);
	if (c->recv)
		grpc_byte_buffer_destroy(c->recv);
	grpc_metadata_array_destroy(&c->im);
	grpc_metadata_array_destroy(&c->tm);
	grpc_slice_unref(c->details);
	return good ? dt : -1;
}

static grpc_slice pack(const ProtobufCMessage *m)
{
	grpc_slice s = grpc_slice_malloc(protobuf_c_message_get_packed_size(m));

	protobuf_c_message_pack(m, GRPC_SLICE_START_PTR(s));
	return s;
}

static grpc_slice allocate_request(const char *id)
{
	V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
	V1beta1__ContainerAllocateRequest c = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
	V1beta1__ContainerAllocateRequest *cs[] = {&c};
	char *ids[] = {(char *)id};

	c.devices_ids = ids;
	c.n_devices_ids = 1;
	req.container_requests = cs;
	req.n_container_requests = 1;
	return pack(&req.base);
}

static grpc_slice preferred_request(char **avail, size_t n, char *must)
{
	V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
	V1beta1__ContainerPreferredAllocationRequest c =
	    V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
	V1beta1__ContainerPreferredAllocationRequest *cs[] = {&c};

	c.available_deviceids = avail;
	c.n_available_deviceids = n;
	c.must_include_deviceids = &must;
	c.n_must_include_deviceids = 1;
	c.allocation_size = 2;
	req.container_requests = cs;
	req.n_container_requests = 1;
	return pack(&req.base);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stats {
	double p50, p99, max;
};

static struct stats percentiles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return (struct stats){v[n / 2], v[(size_t)(n * 0.99)], v[n - 1]};
}

/* One caller, calls in sequence. */
static struct stats serial(grpc_channel *ch, grpc_completion_queue *cq, const char *method,
			   grpc_slice payload, unsigned n)
{
	double *lat = malloc(n * sizeof(*lat));
	struct call c;

	for (unsigned i = 0; i < 200; i++) { /* warm-up */
		call_start(ch, cq, &c, method, payload);
		wait_for(cq, &c.ev, 10000);
		call_end(&c);
	}
	for (unsigned i = 0; i < n; i++) {
		call_start(ch, cq, &c, method, payload);
		if (!wait_for(cq, &c.ev, 10000)) {
			fprintf(stderr, "call timed out\n");
			exit(1);
		}
		lat[i] = call_end(&c);
	}
	struct stats s = percentiles(lat, n);
	free(lat);
	return s;
}

/* IN_FLIGHT calls outstanding at all times; returns calls per second. */
static double concurrent(grpc_channel *ch, grpc_completion_queue *cq, const char *method,
			 grpc_slice payload, unsigned n)
{
	struct call *calls = calloc(IN_FLIGHT, sizeof(*calls));
	unsigned started = 0, finished = 0;
	double t0 = now_us();

	for (; started < IN_FLIGHT && started < n; started++)
		call_start(ch, cq, &calls[started], method, payload);
	while (finished < n) {
		grpc_event e = grpc_completion_queue_next(cq, in_ms(10000), NULL);
		struct call *c = e.tag;

		if (e.type != GRPC_OP_COMPLETE) {
			fprintf(stderr, "concurrent calls timed out\n");
			exit(1);
		}
		c->ev.ok = e.success;
		call_end(c);
		finished++;
		if (started < n) {
			call_start(ch, cq, c, method, payload);
			started++;
		}
	}
	free(calls);
	return n / ((now_us() - t0) / 1e6);
}

/* ---- the kubelet's Registration server -------------------------------------------- */

struct regsrv {
	grpc_server *server;
	void *method;
	struct ev req, answered, shutdown;
	grpc_call *call;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
	gpr_timespec deadline;
	grpc_byte_buffer *reply;
	int cancelled;
	double created_us; /* just before kubelet.sock is bound */
};

static bool regsrv_start(struct regsrv *r, const char *sock, grpc_completion_queue *cq)
{
	char target[600];
	grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
	int port;

	memset(r, 0, sizeof(*r));
	snprintf(target, sizeof(target), "unix:%s", sock);
	r->server = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(r->server, cq, NULL);
	r->method = grpc_server_register_method(r->server, "/v1beta1.Registration/Register", NULL,
						GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
	r->created_us = now_us();
	port = grpc_server_add_http2_port(r->server, target, creds);
	grpc_server_credentials_release(creds);
	if (!port)
		return false;
	grpc_server_start(r->server);
	grpc_metadata_array_init(&r->md);
	grpc_server_request_registered_call(r->server, r->method, &r->call, &r->deadline, &r->md,
					    &r->payload, cq, cq, &r->req);
	return true;
}

/* Waits for Register, answers it; returns the time since kubelet.sock was bound (us). */
static double regsrv_wait(struct regsrv *r, grpc_completion_queue *cq)
{
	V1beta1__Empty empty = V1BETA1__EMPTY__INIT;
	grpc_slice s = pack(&empty.base);
	double dt;
	grpc_op ops[4];

	if (!wait_for(cq, &r->req, 5000) || !r->req.ok)
		return -1;
	dt = now_us() - r->created_us;
	r->reply = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = r->reply;
	ops[2].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[2].data.send_status_from_server.status = GRPC_STATUS_OK;
	ops[3].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[3].data.recv_close_on_server.cancelled = &r->cancelled;
	grpc_call_start_batch(r->call, ops, 4, &r->answered, NULL);
	wait_for(cq, &r->answered, 5000);
	return dt;
}

static void regsrv_stop(struct regsrv *r, grpc_completion_queue *cq)
{
	grpc_server_shutdown_and_notify(r->server, cq, &r->shutdown);
	grpc_server_cancel_all_calls(r->server);
	wait_for(cq, &r->shutdown, 5000);
	grpc_server_destroy(r->server);
	if (r->call)
		grpc_call_unref(r->call);
	if (r->payload)
		grpc_byte_buffer_destroy(r->payload);
	if (r->reply)
		grpc_byte_buffer_destroy(r->reply);
	grpc_metadata_array_destroy(&r->md);
}

/* What the kubelet does on start: delete every socket in its dir. */
static void delete_sockets(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		struct stat st;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISSOCK(st.st_mode))
			unlinkat(dirfd(d), de->d_name, 0);
	}
	if (d)
		closedir(d);
}

/* ---- memory ----------------------------------------------------------------------- */

static long smaps_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, klen) == 0 && line[klen] == ':')
			v = atol(line + klen + 1);
	if (f)
		fclose(f);
	return v;
}

/* ---- the floor: a bare gRPC core server ----------------------------------------------- */

struct slot {
	bool answering;
	grpc_call *call;
	grpc_call_details details;
	grpc_metadata_array md;
	grpc_byte_buffer *recv, *reply;
	int cancelled;
};

static void slot_request(grpc_server *srv, grpc_completion_queue *cq, struct slot *sl)
{
	memset(sl, 0, sizeof(*sl));
	grpc_call_details_init(&sl->details);
	grpc_metadata_array_init(&sl->md);
	grpc_server_request_call(srv, &sl->call, &sl->details, &sl->md, cq, cq, sl);
}

/* --bare-server SOCK: answers every call, whatever its method, with an empty message; what
 * any device plugin on gRPC core costs at least. Runs until killed. */
static int bare_server(const char *sock)
{
	grpc_completion_queue *cq;
	grpc_server_credentials *creds;
	grpc_server *srv;
	struct slot slots[IN_FLIGHT];
	char target[600];

	grpc_init();
	cq = grpc_completion_queue_create_for_next(NULL);
	srv = grpc_server_create(NULL, NULL);
	grpc_server_register_completion_queue(srv, cq, NULL);
	snprintf(target, sizeof(target), "unix:%s", sock);
	creds = grpc_insecure_server_credentials_create();
	if (!grpc_server_add_http2_port(srv, target, creds))
		return 1;
	grpc_server_credentials_release(creds);
	grpc_server_start(srv);
	for (size_t i = 0; i < ELEMENTSOF(slots); i++)
		slot_request(srv, cq, &slots[i]);
	for (;;) {
		grpc_event e =
		    grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
		struct slot *sl = e.tag;
		grpc_op ops[5];

		if (e.type != GRPC_OP_COMPLETE)
			return 1;
		if (sl->answering || !e.success) {
			if (sl->call)
				grpc_call_unref(sl->call);
			if (sl->recv)
				grpc_byte_buffer_destroy(sl->recv);
			if (sl->reply)
				grpc_byte_buffer_destroy(sl->reply);
			grpc_call_details_destroy(&sl->details);
			grpc_metadata_array_destroy(&sl->md);
			slot_request(srv, cq, sl);
			continue;
		}
		sl->answering = true;
		sl->reply = grpc_raw_byte_buffer_create(NULL, 0);
		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_RECV_MESSAGE;
		ops[0].data.recv_message.recv_message = &sl->recv;
		ops[1].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[2].op = GRPC_OP_SEND_MESSAGE;
		ops[2].data.send_message.send_message = sl->reply;
		ops[3].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
		ops[3].data.send_status_from_server.status = GRPC_STATUS_OK;
		ops[4].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
		ops[4].data.recv_close_on_server.cancelled = &sl->cancelled;
		if (grpc_call_start_batch(sl->call, ops, 5, sl, NULL) != GRPC_CALL_OK)
			return 1;
	}
}

/* ---- scenarios -------------------------------------------------------------------- */

struct memory {
	double anon, files; /* MiB */
};

/* The figures of one server: the bridge on one node, or the floor. */
struct figures {
	const char *name;
	struct stats alloc, pref, rereg;
	double tput;
	struct memory mem;
	bool has_pref, has_rereg;
};

static struct memory memory_of(pid_t pid)
{
	long rss = smaps_kb(pid, "Rss"), anon = smaps_kb(pid, "Anonymous");

	return (struct memory){anon / 1024.0, (rss - anon) / 1024.0};
}

static bool fixture(const char *work, const char *profile, unsigned devices, char *sys, char *dev)
{
	char n[16];

	snprintf(sys, 512, "%s/sys", work);
	snprintf(dev, 512, "%s/dev", work);
	snprintf(n, sizeof(n), "%u", devices);
	if (devices)
		return run((char *[]){(char *)opt_python, (char *)opt_mksysfs, "build",
				      (char *)profile, sys, "--devices", n, NULL}) == 0 &&
		       run((char *[]){(char *)opt_python, (char *)opt_mksysfs, "mkdev", sys, dev,
				      NULL}) == 0;
	return run((char *[]){(char *)opt_python, (char *)opt_mksysfs, "build", (char *)profile,
			      sys, NULL}) == 0 &&
	       run((char *[]){(char *)opt_python, (char *)opt_mksysfs, "mkdev", sys, dev, NULL}) ==
		   0;
}

static grpc_channel *channel_to(const char *sock)
{
	char target[720];
	grpc_channel_credentials *creds = grpc_insecure_credentials_create();
	grpc_channel *ch;

	snprintf(target, sizeof(target), "unix:%s", sock);
	ch = grpc_channel_create(target, creds, NULL);
	grpc_channel_credentials_release(creds);
	return ch;
}

static void drain(grpc_completion_queue *cq)
{
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
}

/* The same Allocate load on a bare server; the floor of re-registration: a new channel and
 * its first call, 20 times. */
static void bench_floor(struct figures *f)
{
	char work[] = "/tmp/bench-allocate-XXXXXX", sock[600];
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	grpc_slice payload = allocate_request("0000:1a:00.0");
	double dt[20];
	grpc_channel *ch;
	int status;
	pid_t pid;

	f->name = "bare gRPC core server";
	if (!mkdtemp(work))
		exit(1);
	snprintf(sock, sizeof(sock), "%s/bare.sock", work);
	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", "bench-allocate", "--bare-server", sock, (char *)NULL);
		_exit(127);
	}
	if (!wait_path(sock, 10000)) {
		fprintf(stderr, "the bare server did not serve\n");
		exit(1);
	}
	ch = channel_to(sock);
	f->alloc = serial(ch, cq, "/v1beta1.DevicePlugin/Allocate", payload, opt_calls);
	f->tput = concurrent(ch, cq, "/v1beta1.DevicePlugin/Allocate", payload, opt_calls * 2);
	f->mem = memory_of(pid);
	grpc_channel_destroy(ch);
	for (int i = 0; i < 20; i++) {
		struct call c;
		double t0 = now_us();

		ch = channel_to(sock);
		call_start(ch, cq, &c, "/v1beta1.Registration/Register", payload);
		if (!wait_for(cq, &c.ev, 5000) || call_end(&c) < 0) {
			fprintf(stderr, "the bare server did not answer a new channel\n");
			exit(1);
		}
		dt[i] = now_us() - t0;
		grpc_channel_destroy(ch);
	}
	f->rereg = percentiles(dt, 20);
	f->has_rereg = true;
	grpc_slice_unref(payload);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	drain(cq);
	run((char *[]){"/bin/rm", "-rf", work, NULL});
}

static void bench_node(struct figures *f, const char *profile, unsigned devices, const char *id,
		       bool registration)
{
	char work[] = "/tmp/bench-allocate-XXXXXX", sys[512], dev[512], plugins[600], sock[700],
	     ksock[700];
	grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
	grpc_channel *ch;
	grpc_slice payload;
	struct regsrv reg;
	pid_t pid;

	if (!mkdtemp(work) || !fixture(work, profile, devices, sys, dev)) {
		fprintf(stderr, "%s: fixture failed\n", f->name);
		exit(1);
	}
	snprintf(plugins, sizeof(plugins), "%s/plugins", work);
	mkdir(plugins, 0750);
	snprintf(sock, sizeof(sock), "%s/rdma-cdi_rdma.example_hca.sock", plugins);
	snprintf(ksock, sizeof(ksock), "%s/kubelet.sock", plugins);
	if (registration && !regsrv_start(&reg, ksock, cq)) {
		fprintf(stderr, "cannot serve %s\n", ksock);
		exit(1);
	}
	pid = start_bridge(work, sys, dev, plugins);
	if (!wait_path(sock, 60000)) {
		fprintf(stderr, "%s: bridge did not serve\n", f->name);
		exit(1);
	}
	if (registration && regsrv_wait(&reg, cq) < 0) {
		fprintf(stderr, "%s: no Register\n", f->name);
		exit(1);
	}
	ch = channel_to(sock);
	payload = allocate_request(id);
	f->alloc = serial(ch, cq, "/v1beta1.DevicePlugin/Allocate", payload, opt_calls);
	f->tput = concurrent(ch, cq, "/v1beta1.DevicePlugin/Allocate", payload, opt_calls * 2);
	grpc_slice_unref(payload);
	if (!devices) {
		char *avail[] = {"0000:1a:00.0", "0000:1b:00.0", "0000:3b:00.0", "0000:3c:00.0",
				 "0000:9a:00.0", "0000:9b:00.0", "0000:ba:00.0", "0000:bb:00.0"};

		payload = preferred_request(avail, ELEMENTSOF(avail), avail[0]);
		f->pref = serial(ch, cq, "/v1beta1.DevicePlugin/GetPreferredAllocation", payload,
				 opt_calls / 4);
		f->has_pref = true;
		grpc_slice_unref(payload);
	}
	f->mem = memory_of(pid);
	if (registration) {
		double dt[20];

		for (int i = 0; i < 20; i++) {
			regsrv_stop(&reg, cq);
			delete_sockets(plugins);
			if (!regsrv_start(&reg, ksock, cq) || (dt[i] = regsrv_wait(&reg, cq)) < 0) {
				fprintf(stderr, "%s: no re-registration after kubelet restart %d\n",
					f->name, i);
				exit(1);
			}
		}
		f->rereg = percentiles(dt, 20);
		f->has_rereg = true;
		regsrv_stop(&reg, cq);
	}
	grpc_channel_destroy(ch);
	stop_bridge(pid, work);
	drain(cq);
	run((char *[]){"/bin/rm", "-rf", work, NULL});
}

static const char *verdict(bool met)
{
	if (!met)
		failed = true;
	return met ? "met" : "**MISSED**";
}

static void print_plain(const struct figures *f)
{
	printf("%s: Allocate, 1 caller, %u calls: p50 %.0f us, p99 %.0f us, max %.0f us\n", f->name,
	       opt_calls, f->alloc.p50, f->alloc.p99, f->alloc.max);
	printf("%s: Allocate, %d in flight: %.0f calls/s\n", f->name, IN_FLIGHT, f->tput);
	if (f->has_pref)
		printf("%s: GetPreferredAllocation (8 available, 1 must, size 2), 1 caller: "
		       "p50 %.0f us, p99 %.0f us\n",
		       f->name, f->pref.p50, f->pref.p99);
	printf("%s: memory after the load: anonymous (private) %.2f MiB, file-backed %.2f MiB\n",
	       f->name, f->mem.anon, f->mem.files);
	if (f->has_rereg)
		printf("%s: %s (20x): p50 %.2f ms, max %.2f ms\n", f->name,
		       strcmp(f->name, "bare gRPC core server") == 0
			   ? "new channel + first call"
			   : "re-registration after kubelet restart",
		       f->rereg.p50 / 1e3, f->rereg.max / 1e3);
}

static void row_us(const char *what, double v, double floor, const char *target)
{
	printf("| %s | **%.2fx** | %.0f us | %.0f us | %s |\n", what, v / floor, v, floor, target);
}

static void print_markdown(const struct figures *bare, const struct figures *dgx,
			   const struct figures *scale)
{
	char t[64];

	printf("## The bridge: Allocate, memory, re-registration\n\n");
	printf("`tests/bench/bench-allocate.c`, a client on gRPC core (the C API the bridge "
	       "uses; no Python in the measured path), against `rdma-cdi bridge` with its "
	       "default flags (one info log line per Allocate, to a file) on the `dgx` fixture "
	       "(10 HCAs) and on `mksysfs.py build scale --devices %u`. Latency: one caller, "
	       "%u calls of one container asking for one device after 200 warm-up calls, from "
	       "`grpc_channel_create_call` to the status. Throughput: %d calls in flight on one "
	       "channel, %u calls. Memory: `/proc/PID/smaps_rollup` right after that load, "
	       "anonymous (private) pages apart from file-backed (shared library) pages. "
	       "Re-registration: this program plays the kubelet's Registration server; 20 times "
	       "it deletes every socket in the plugin dir, binds `kubelet.sock` again and times "
	       "the bridge's Register call from just before the bind.\n\n",
	       opt_devices, opt_calls, IN_FLIGHT, opt_calls * 2);
	printf("**Floor**, measured in the same run: a bare gRPC core server (this program with "
	       "`--bare-server`) that answers every call with an empty message, under the same "
	       "calls; for re-registration, a new channel to it and its first call (connect, "
	       "HTTP/2 handshake, one call: what a Register costs at least). The ratio is the "
	       "bridge's cost over the floor's.\n\n");
	printf("| figure | **ratio to the floor** | bridge | floor | target |\n");
	printf("|---|---:|---:|---:|---|\n");
	row_us("Allocate p50, 1 caller, dgx", dgx->alloc.p50, bare->alloc.p50, "");
	snprintf(t, sizeof(t), "< 1 ms: %s", verdict(dgx->alloc.p99 < 1000));
	row_us("Allocate p99, 1 caller, dgx", dgx->alloc.p99, bare->alloc.p99, t);
	snprintf(t, sizeof(t), "%s", "");
	row_us("Allocate p50, 1 caller, 2,000 devices", scale->alloc.p50, bare->alloc.p50, "");
	snprintf(t, sizeof(t), "< 1 ms: %s", verdict(scale->alloc.p99 < 1000));
	row_us("Allocate p99, 1 caller, 2,000 devices", scale->alloc.p99, bare->alloc.p99, t);
	printf("| Allocate max, 1 caller, dgx / 2,000 devices | | %.0f / %.0f us | %.0f us | |\n",
	       dgx->alloc.max, scale->alloc.max, bare->alloc.max);
	printf("| Allocate, %d in flight, dgx (time per call) | **%.2fx** | %.0f calls/s | "
	       "%.0f calls/s | |\n",
	       IN_FLIGHT, bare->tput / dgx->tput, dgx->tput, bare->tput);
	printf("| Allocate, %d in flight, 2,000 devices (time per call) | **%.2fx** | %.0f "
	       "calls/s | %.0f calls/s | |\n",
	       IN_FLIGHT, bare->tput / scale->tput, scale->tput, bare->tput);
	row_us("GetPreferredAllocation p50 (8 available, 1 must, size 2)", dgx->pref.p50,
	       bare->alloc.p50, "");
	row_us("GetPreferredAllocation p99", dgx->pref.p99, bare->alloc.p99, "");
	printf("| anonymous (private) memory after the load, dgx | **%.2fx** | %.2f MiB | %.2f "
	       "MiB | |\n",
	       dgx->mem.anon / bare->mem.anon, dgx->mem.anon, bare->mem.anon);
	printf("| anonymous (private) memory after the load, 2,000 devices | **%.2fx** | %.2f MiB "
	       "| %.2f MiB | < 8 MiB: %s |\n",
	       scale->mem.anon / bare->mem.anon, scale->mem.anon, bare->mem.anon,
	       verdict(scale->mem.anon < 8));
	printf("| file-backed (library) pages, 2,000 devices | **%.2fx** | %.2f MiB | %.2f MiB | "
	       "|\n",
	       scale->mem.files / bare->mem.files, scale->mem.files, bare->mem.files);
	printf("| re-registration p50 (20 kubelet restarts) | **%.2fx** | %.2f ms | %.2f ms | |\n",
	       dgx->rereg.p50 / bare->rereg.p50, dgx->rereg.p50 / 1e3, bare->rereg.p50 / 1e3);
	printf("| re-registration max | **%.2fx** | %.2f ms | %.2f ms | < 100 ms: %s |\n\n",
	       dgx->rereg.max / bare->rereg.max, dgx->rereg.max / 1e3, bare->rereg.max / 1e3,
	       verdict(dgx->rereg.max < 100e3));
	printf("- Re-registration includes the bridge noticing the kubelet's restart (inotify "
	       "on the plugin dir: its socket deleted, `kubelet.sock` created), serving a new "
	       "instance and dialing; no polling interval is involved.\n");
	printf("- The client, the server and the bridge's log share the machine's cores, so "
	       "the latency floor includes the client's own cost; the ratio is what the "
	       "bridge's work (validation, CDI names, the log line, the loop hop) adds.\n\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"rdma-cdi", required_argument, NULL, 'r'},
	    {"mksysfs", required_argument, NULL, 'm'},
	    {"python", required_argument, NULL, 'p'},
	    {"calls", required_argument, NULL, 'c'},
	    {"devices", required_argument, NULL, 'd'},
	    {"markdown", no_argument, NULL, 'M'},
	    {"bare-server", required_argument, NULL, 'B'},
	    {},
	};
	struct figures bare = {}, dgx = {.name = "dgx (10 devices)"}, scale = {};
	char scale_name[64];
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) >= 0) {
		switch (c) {
		case 'r':
			opt_rdma_cdi = optarg;
			break;
		case 'm':
			opt_mksysfs = optarg;
			break;
		case 'p':
			opt_python = optarg;
			break;
		case 'c':
			opt_calls = (unsigned)atoi(optarg);
			break;
		case 'd':
			opt_devices = (unsigned)atoi(optarg);
			break;
		case 'M':
			opt_markdown = true;
			break;
		case 'B':
			return bare_server(optarg);
		default:
			return 2;
		}
	}
	if (!opt_rdma_cdi || !opt_mksysfs || opt_calls < 100) {
		fprintf(
		    stderr,
		    "usage: bench-allocate --rdma-cdi BIN --mksysfs mksysfs.py [--calls N>=100] "
		    "[--devices N] [--markdown]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	grpc_init();
	bench_floor(&bare);
	bench_node(&dgx, "dgx", 0, "0000:1a:00.0", true);
	snprintf(scale_name, sizeof(scale_name), "scale (%u devices)", opt_devices);
	scale.name = scale_name;
	bench_node(&scale, "scale", opt_devices, "0000:01:00.0", false);
	grpc_shutdown();
	if (opt_markdown) {
		print_markdown(&bare, &dgx, &scale);
	} else {
		print_plain(&bare);
		print_plain(&dgx);
		print_plain(&scale);
		(void)verdict(dgx.alloc.p99 < 1000 && scale.alloc.p99 < 1000 &&
			      scale.mem.anon < 8 && dgx.rereg.max < 100e3);
		printf("%s\n", failed ? "RESULT: a target was missed or a call failed"
				      : "RESULT: all targets met");
	}
	return failed ? 1 : 0;
}
