/* SPDX-License-Identifier: Apache-2.0 */
/*
 * daemon/metrics: --metrics-address parsing, the exposition text the registry renders
 * (series present, values, label escaping, cumulative buckets, pools and devices that
 * go, each daemon's own series), updates from several threads while scrapes render, and
 * the server refusing what it must. /healthz against real loops: the daemons' scenarios
 * (tests/bridge/test-kubelet.py, tests/dra/test-dra.py).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "build-config.h"
#include "common.h"
#include "metrics.h"
#include "rdma-cdi-commit.h"
#include "../tap.h"

/* The functions under test with their error's message in err ("" when none is set). */
static int parse_address(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err,
			 size_t errlen)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	int r = parse_listen_address(s, ss, len, &e);

	snprintf(err, errlen, "%s", e ? e->msg : "");
	return r;
}

static int server_new(const char *address, struct metrics **ret, char *err, size_t errlen)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	int r = metrics_new(address, "bridge", NULL, ret, &e);

	snprintf(err, errlen, "%s", e ? e->msg : "");
	return r;
}

static void test_parse_address(void)
{
	static const struct {
		const char *s;
		int family; /* 0: -EINVAL */
		unsigned port;
		const char *why;
	} cases[] = {
	    {"127.0.0.1:9400", AF_INET, 9400, NULL},
	    {"0.0.0.0:1", AF_INET, 1, NULL},
	    {"[::1]:9400", AF_INET6, 9400, NULL},
	    {"[::]:65535", AF_INET6, 65535, NULL},
	    {"127.0.0.1:0", 0, 0, "port"},
	    {"127.0.0.1:65536", 0, 0, "port"},
	    {"127.0.0.1:", 0, 0, "port"},
	    {"127.0.0.1:+80", 0, 0, "port"},
	    {"127.0.0.1:0x50", 0, 0, "port"},
	    {"127.0.0.1:000009400", 0, 0, "port"},
	    {"localhost:9400", 0, 0, "numeric"},
	    {":9400", 0, 0, "numeric"},
	    {"9400", 0, 0, "numeric"},
	    {"", 0, 0, "numeric"},
	    {"127.1:9400", 0, 0, "numeric"},
	    {"::1:9400", 0, 0, "brackets"},
	    {"[::1]9400", 0, 0, "numeric"},
	    {"[::1:9400", 0, 0, "numeric"},
	    {"[127.0.0.1]:9400", 0, 0, "numeric"},
	    {"[fe80::1%eth0]:9400", 0, 0, "numeric"},
	    {"1.2.3.4:80 ", 0, 0, "port"},
	};
	char long_addr[200];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss = {0};
		socklen_t len = 0;
		char err[256] = "";
		int r = parse_address(cases[i].s, &ss, &len, err, sizeof(err));

		if (cases[i].family) {
			unsigned port = ss.ss_family == AF_INET
					    ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
					    : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);

			ok(r == 0 && ss.ss_family == cases[i].family && port == cases[i].port,
			   "\"%s\" parses (port %u)", cases[i].s, port);
		} else {
			ok(r == -EINVAL && strstr(err, cases[i].why) && strstr(err, cases[i].s),
			   "\"%s\" refused, naming it and the %s rule: %s", cases[i].s,
			   cases[i].why, err);
		}
	}
	memset(long_addr, '1', sizeof(long_addr) - 1);
	long_addr[sizeof(long_addr) - 1] = '\0';
	{
		struct sockaddr_storage ss;
		socklen_t len;
		char err[256] = "";

		ok(parse_address(long_addr, &ss, &len, err, sizeof(err)) == -EINVAL &&
		       strlen(err) < 200,
		   "a 199-character address is refused with a bounded message");
	}
}

/* The value of the sample line that starts with `series ` in text, or -1. */
static double value_of(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static char *render(struct metrics *m)
{
	char *text = NULL;
	size_t len = 0;

	if (metrics_render(m, &text, &len) < 0 || strlen(text) != len)
		return NULL;
	return text;
}

static void test_render(void)
{
	struct metrics *m = NULL;
	char *t;

	ok(metrics_new(NULL, "bridge", NULL, &m, NULL) == 0 && m, "a registry without a server");
	if (!m)
		return;
	EQ_STR(metrics_address(m), "", "no address without a server");
	metrics_registration(m, "rdma.example/ib", true);
	metrics_registration(m, "rdma.example/ib", false);
	metrics_call(m, "rdma.example/ib", METRICS_ALLOCATE, true, 7);	     /* 7 us */
	metrics_call(m, "rdma.example/ib", METRICS_ALLOCATE, false, 300000); /* 0.3 s */
	metrics_call(m, "rdma.example/ib", METRICS_PREFERRED, true, 5);
	metrics_devices_begin(m);
	metrics_devices_set(m, "rdma.example/ib", 3, 1);
	metrics_devices_set(m, "we\"ird\\name\n", 1, 0);
	metrics_devices_end(m);
	metrics_rescan(m, "start", true, 1500);
	metrics_rescan(m, "hotplug", false, 0);
	metrics_rescan(m, "nonsense", true, 0);
	metrics_spec_write_failed(m);
	metrics_config_reload(m, true);
	metrics_config_reload(m, false);
	metrics_config_reload(m, false);
	t = render(m);
	ok(t != NULL, "renders");
	if (!t) {
		metrics_free(m);
		return;
	}
	{
		char bi[256];

		snprintf(bi, sizeof(bi),
			 "rdma_cdi_build_info{daemon=\"bridge\",version=\"%s\",commit=\"%s\"}",
			 RDMA_CDI_VERSION, RDMA_CDI_COMMIT);
		EQ_INT(value_of(t, bi), 1, "build_info names the daemon, version and commit");
	}
	ok(!strstr(t, "rdma_cdi_dra_"), "a bridge has no DRA series");
	EQ_INT(value_of(t, "rdma_cdi_config_rejected"), 1, "the last reload was refused");
	EQ_INT(value_of(t, "rdma_cdi_devices{resource=\"rdma.example/ib\",health=\"healthy\"}"), 3,
	       "healthy devices");
	EQ_INT(value_of(t, "rdma_cdi_devices{resource=\"rdma.example/ib\",health=\"unhealthy\"}"),
	       1, "unhealthy devices");
	ok(value_of(t, "rdma_cdi_devices{resource=\"we\\\"ird\\\\name\\n\",health=\"healthy\"}") ==
	       1,
	   "a label value with quote, backslash and newline is escaped");
	EQ_INT(value_of(t, "rdma_cdi_allocate_total{resource=\"rdma.example/ib\",result=\"ok\"}"),
	       1, "Allocate ok");
	EQ_INT(value_of(t, "rdma_cdi_allocate_total{resource=\"rdma.example/ib\",result="
			   "\"rejected\"}"),
	       1, "Allocate rejected");
	EQ_INT(value_of(t, "rdma_cdi_allocate_duration_seconds_bucket{resource=\"rdma.example/"
			   "ib\",le=\"1e-05\"}"),
	       1, "7 us falls into the 10 us bucket");
	EQ_INT(value_of(t, "rdma_cdi_allocate_duration_seconds_bucket{resource=\"rdma.example/"
			   "ib\",le=\"0.1\"}"),
	       1, "0.3 s is beyond the last bound");
	EQ_INT(value_of(t, "rdma_cdi_allocate_duration_seconds_bucket{resource=\"rdma.example/"
			   "ib\",le=\"+Inf\"}"),
	       2, "+Inf holds both");
	ok(value_of(t, "rdma_cdi_allocate_duration_seconds_sum{resource=\"rdma.example/ib\"}") ==
	       0.300007,
	   "the sum in seconds");
	EQ_INT(value_of(t, "rdma_cdi_preferred_allocation_total{resource=\"rdma.example/ib\","
			   "result=\"ok\"}"),
	       1, "GetPreferredAllocation ok");
	EQ_INT(value_of(t, "rdma_cdi_registrations_total{resource=\"rdma.example/ib\",result="
			   "\"failed\"}"),
	       1, "a failed registration");
	EQ_INT(value_of(t, "rdma_cdi_rescans_total{reason=\"start\",result=\"ok\"}"), 1,
	       "the start scan");
	EQ_INT(value_of(t, "rdma_cdi_rescans_total{reason=\"hotplug\",result=\"failed\"}"), 1,
	       "a failed hotplug scan");
	EQ_INT(value_of(t, "rdma_cdi_rescan_duration_seconds_count"), 1,
	       "only a scan with a duration is observed");
	EQ_INT(value_of(t, "rdma_cdi_rescan_duration_seconds_bucket{le=\"0.001\"}"), 0,
	       "1.5 ms is not under 1 ms");
	EQ_INT(value_of(t, "rdma_cdi_rescan_duration_seconds_bucket{le=\"0.0025\"}"), 1,
	       "but under 2.5 ms");
	ok(!strstr(t, "nonsense"), "an unknown reason is not a series");
	EQ_INT(value_of(t, "rdma_cdi_spec_write_failures_total"), 1, "spec write failures");
	EQ_INT(value_of(t, "rdma_cdi_config_reloads_total{result=\"rejected\"}"), 2,
	       "rejected reloads");
	ok(t[strlen(t) - 1] == '\n', "ends in a newline");
	free(t);

	/* A pool that is neither set nor kept in a round is gone; one kept stays. */
	metrics_devices_begin(m);
	metrics_devices_keep(m, "rdma.example/ib");
	metrics_devices_end(m);
	t = render(m);
	ok(t &&
	       value_of(t, "rdma_cdi_devices{resource=\"rdma.example/ib\",health=\"healthy\"}") ==
		   3 &&
	       !strstr(t, "rdma_cdi_devices{resource=\"we"),
	   "kept gauges stay, the others go");
	ok(t && value_of(t, "rdma_cdi_allocate_total{resource=\"we\\\"ird\\\\name\\n\",result="
			    "\"ok\"}") == 0,
	   "a gone pool's counters stay");
	free(t);
	metrics_free(m);

	/* NULL: every recording call is a no-op. */
	metrics_call(NULL, "x/y", METRICS_ALLOCATE, true, 1);
	metrics_devices_begin(NULL);
	metrics_devices_set(NULL, "x/y", 1, 1);
	metrics_devices_end(NULL);
	metrics_rescan(NULL, "start", true, 1);
	metrics_free(NULL);
	ok(true, "NULL registry: recording is a no-op");
}

/* The device health series: set in a round, kept with their change time, gone when not
 * set; the DRA driver's own series; the registration gauge. */
static void test_health(void)
{
	struct metrics *m = NULL;
	char *t;
	double since;

	if (metrics_new(NULL, "dra", NULL, &m, NULL) < 0)
		return;
	metrics_health_begin(m);
	metrics_health_set(m, "mlx5_0", "0000:1a:00.0", "rdma.example/ib", true, "");
	metrics_health_set(m, "mlx5_1", "", "rdma.example/ib", false, "port 1 DOWN");
	metrics_health_end(m);
	metrics_kubelet_registered(m, "rdma.example", 0);
	metrics_dra_claim(m, METRICS_PREPARE, true);
	metrics_dra_claim(m, METRICS_PREPARE, false);
	metrics_dra_claim(m, METRICS_UNPREPARE, true);
	metrics_dra_slice_publish(m, false);
	t = render(m);
	EQ_INT(value_of(t, "rdma_cdi_device_healthy{device=\"mlx5_0\",pci=\"0000:1a:00.0\","
			   "pool=\"rdma.example/ib\",reason=\"\"}"),
	       1, "a healthy device: 1, no reason");
	EQ_INT(value_of(t, "rdma_cdi_device_healthy{device=\"mlx5_1\",pci=\"\",pool=\"rdma."
			   "example/ib\",reason=\"port 1 DOWN\"}"),
	       0, "an unhealthy one: 0 with its reason, pci \"\" off PCI");
	since = value_of(t, "rdma_cdi_device_health_last_change_timestamp_seconds{device="
			    "\"mlx5_0\",pci=\"0000:1a:00.0\",pool=\"rdma.example/ib\"}");
	ok(since > 1.7e9 && since <= (double)time(NULL), "first seen is a change: %.0f", since);
	EQ_INT(value_of(t, "rdma_cdi_kubelet_registered{resource=\"rdma.example\"}"), 0,
	       "not registered yet");
	EQ_INT(value_of(t, "rdma_cdi_dra_prepare_total{result=\"ok\"}"), 1, "prepare ok");
	EQ_INT(value_of(t, "rdma_cdi_dra_prepare_total{result=\"failed\"}"), 1, "prepare failed");
	EQ_INT(value_of(t, "rdma_cdi_dra_unprepare_total{result=\"ok\"}"), 1, "unprepare ok");
	EQ_INT(value_of(t, "rdma_cdi_dra_slice_publish_total{result=\"failed\"}"), 1,
	       "slice write failed");
	ok(t && !strstr(t, "rdma_cdi_allocate_total"), "a DRA driver has no Allocate series");
	EQ_INT(value_of(t, "rdma_cdi_config_rejected"), 0, "no config refused");
	free(t);

	/* mlx5_0 turns unhealthy, mlx5_1 is no longer offered. */
	sleep(1);
	metrics_health_begin(m);
	metrics_health_set(m, "mlx5_0", "0000:1a:00.0", "rdma.example/ib", false, "port 1 DOWN");
	metrics_health_end(m);
	metrics_kubelet_registered(m, "rdma.example", 1);
	t = render(m);
	EQ_INT(value_of(t, "rdma_cdi_device_healthy{device=\"mlx5_0\",pci=\"0000:1a:00.0\","
			   "pool=\"rdma.example/ib\",reason=\"port 1 DOWN\"}"),
	       0, "turned unhealthy, with the reason");
	ok(t && !strstr(t, "reason=\"\"}") && !strstr(t, "mlx5_1"),
	   "the old series and the device no longer offered are gone");
	ok(value_of(t, "rdma_cdi_device_health_last_change_timestamp_seconds{device=\"mlx5_0\","
		       "pci=\"0000:1a:00.0\",pool=\"rdma.example/ib\"}") > since,
	   "the change is stamped");
	EQ_INT(value_of(t, "rdma_cdi_kubelet_registered{resource=\"rdma.example\"}"), 1,
	       "registered");
	free(t);
	metrics_kubelet_registered(m, "rdma.example", -1);
	t = render(m);
	ok(t && !strstr(t, "rdma_cdi_kubelet_registered{"), "-1 drops the series");
	free(t);
	metrics_free(m);
}

static void test_bounded_resources(void)
{
	struct metrics *m = NULL;
	char name[32], *t;

	if (metrics_new(NULL, "bridge", NULL, &m, NULL) < 0)
		return;
	for (int i = 0; i < METRICS_RESOURCES_MAX + 10; i++) {
		snprintf(name, sizeof(name), "r.example/%d", i);
		metrics_registration(m, name, true);
	}
	t = render(m);
	snprintf(name, sizeof(name), "r.example/%d", METRICS_RESOURCES_MAX - 1);
	ok(t && strstr(t, name), "resources up to the bound are counted");
	snprintf(name, sizeof(name), "r.example/%d\"", METRICS_RESOURCES_MAX);
	ok(t && !strstr(t, name), "beyond METRICS_RESOURCES_MAX not");
	free(t);
	metrics_free(m);
}

#define THREADS 4
#define CALLS 20000

static void *hammer(void *arg)
{
	struct metrics *m = arg;

	for (int i = 0; i < CALLS; i++)
		metrics_call(m, i % 2 ? "a.example/x" : "b.example/y", METRICS_ALLOCATE, true,
			     (uint64_t)i);
	return NULL;
}

static void test_threads(void)
{
	struct metrics *m = NULL;
	pthread_t th[THREADS];
	char *t;
	bool rendered = true;

	if (metrics_new(NULL, "bridge", NULL, &m, NULL) < 0)
		return;
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hammer, m);
	for (int i = 0; i < 50; i++) {
		t = render(m);
		rendered &= t != NULL;
		free(t);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	t = render(m);
	ok(rendered && t &&
	       value_of(t, "rdma_cdi_allocate_total{resource=\"a.example/x\",result=\"ok\"}") +
		       value_of(t, "rdma_cdi_allocate_total{resource=\"b.example/y\",result="
				   "\"ok\"}") ==
		   THREADS * CALLS,
	   "%d threads x %d calls while scrapes render: every call counted", THREADS, CALLS);
	free(t);
	metrics_free(m);
}

static void test_server_refuses(void)
{
	struct metrics *a = NULL, *b = NULL;
	char err[256] = "";
	int r;

	/* Port 1 as root binds; as non-root it is EACCES. Take a free one from the kernel. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	char addr[64];

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		ok(false, "a free port");
		return;
	}
	close(fd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	r = server_new(addr, &a, err, sizeof(err));
	ok(r == 0 && strcmp(metrics_address(a), addr) == 0, "serves on %s: %s", addr, err);
	r = server_new(addr, &b, err, sizeof(err));
	ok(r == -EADDRINUSE && strstr(err, addr) && strstr(err, "another process"),
	   "the same port again: -EADDRINUSE, said so: %s", err);
	r = server_new("192.0.2.1:9400", &b, err, sizeof(err));
	ok(r == -EADDRNOTAVAIL && strstr(err, "not an address of this host"),
	   "an address not on this host: -EADDRNOTAVAIL: %s", err);
	r = server_new("nope:1", &b, err, sizeof(err));
	ok(r == -EINVAL && !b, "an address that does not parse: -EINVAL");
	metrics_free(a);
	r = server_new(addr, &a, err, sizeof(err));
	ok(r == 0, "freed: the port can be served again at once: %s", err);
	metrics_free(a);
}

int main(void)
{
	test_parse_address();
	test_render();
	test_health();
	test_bounded_resources();
	test_threads();
	test_server_refuses();
	return tap_done();
}
