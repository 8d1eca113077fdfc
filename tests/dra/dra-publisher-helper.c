/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ResourceSlice publisher on a real sd-event loop and kube client, steered line by
 * line on stdin by test-dra-publisher.py (which runs the API-server double):
 *
 *   dra-publisher-helper SERVER CA_FILE TOKEN_FILE DRIVER NODE
 *   set N [I,J,...]        N synthetic devices, those at I, J... tainted  -> "ok"
 *   scan SYSROOT DEVROOT   the devices of a scanned tree (default pool)  -> "ok N"
 *   synced                 -> "synced 0|1"
 *   quit
 * The publisher's log lines go to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common.h"
#include "config.h"
#include "inventory.h"
#include "slices.h"

struct helper {
	sd_event *loop;
	struct dra_publisher *pub;
	const char *driver;
	char buf[4096];
	size_t len;
};

static cJSON *synthetic(struct helper *h, long n, const char *tainted)
{
	cJSON *arr = cJSON_CreateArray();
	char key[300];

	for (long i = 0; arr && i < n; i++) {
		cJSON *d = cJSON_CreateObject(), *attrs, *a;
		char name[64], list[4096];
		bool t = false;

		snprintf(name, sizeof(name), "pci-0000-%02lx-%02lx-0", (i / 32) & 0xff, i % 32);
		cJSON_AddStringToObject(d, "name", name);
		attrs = cJSON_AddObjectToObject(d, "attributes");
		snprintf(key, sizeof(key), "%s/rdmaDevice", h->driver);
		a = cJSON_AddObjectToObject(attrs, key);
		snprintf(name, sizeof(name), "mlx5_%ld", i);
		cJSON_AddStringToObject(a, "string", name);
		if (tainted) {
			snprintf(list, sizeof(list), ",%s,", tainted);
			snprintf(name, sizeof(name), ",%ld,", i);
			t = strstr(list, name) != NULL;
		}
		if (t) {
			cJSON *ta = cJSON_CreateObject();

			snprintf(key, sizeof(key), "%s%s", h->driver, DRA_TAINT_SUFFIX);
			cJSON_AddStringToObject(ta, "key", key);
			cJSON_AddStringToObject(ta, "value", "port-1-DOWN");
			cJSON_AddStringToObject(ta, "effect", "NoSchedule");
			cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "taints"), ta);
		}
		cJSON_AddItemToArray(arr, d);
	}
	return arr;
}

static cJSON *scanned(struct helper *h, const char *sys, const char *dev)
{
	struct disc_options o = {.sysfs_root = sys, .dev_root = dev};
	struct disc_node *node = NULL;
	struct cfg *cfg = NULL;
	struct cfg_assignment *a = NULL;
	struct dra_inventory *inv = NULL;
	cJSON *devs = NULL;

	if (disc_scan(&o, &node) == 0 && cfg_default(&cfg) == 0 &&
	    cfg_assign(cfg, node, &a, NULL) == 0 &&
	    dra_inventory_build(node, cfg, a, "rdma.example/hca", &inv) == 0)
		devs = dra_slice_devices(inv, h->driver);
	dra_inventory_free(inv);
	cfg_assignment_free(a);
	cfg_free(cfg);
	disc_node_free(node);
	return devs;
}

static void command(struct helper *h, char *line)
{
	char *save = NULL, *cmd = strtok_r(line, " ", &save);
	char *a1 = strtok_r(NULL, " ", &save), *a2 = strtok_r(NULL, " ", &save);

	if (!cmd)
		return;
	if (strcmp(cmd, "set") == 0 && a1) {
		dra_publisher_set(h->pub, synthetic(h, strtol(a1, NULL, 10), a2));
		printf("ok\n");
	} else if (strcmp(cmd, "scan") == 0 && a1 && a2) {
		cJSON *d = scanned(h, a1, a2);

		printf("ok %d\n", d ? cJSON_GetArraySize(d) : -1);
		dra_publisher_set(h->pub, d);
	} else if (strcmp(cmd, "synced") == 0) {
		printf("synced %d\n", dra_publisher_synced(h->pub));
	} else if (strcmp(cmd, "quit") == 0) {
		sd_event_exit(h->loop, 0);
	} else {
		printf("error unknown command\n");
	}
	fflush(stdout);
}

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct helper *h = userdata;
	ssize_t n = read(fd, h->buf + h->len, sizeof(h->buf) - 1 - h->len);
	char *nl;

	if (n <= 0) {
		sd_event_exit(h->loop, 0);
		return 0;
	}
	h->len += (size_t)n;
	h->buf[h->len] = '\0';
	while ((nl = strchr(h->buf, '\n'))) {
		*nl = '\0';
		command(h, h->buf);
		h->len -= (size_t)(nl + 1 - h->buf);
		memmove(h->buf, nl + 1, h->len + 1);
	}
	if (h->len == sizeof(h->buf) - 1)
		h->len = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct helper h = {0};
	struct kube_client *kube = NULL;
	struct kube_config kc = {0};
	sd_event_source *in = NULL;
	int r;

	if (argc != 6) {
		fprintf(stderr, "usage: %s SERVER CA_FILE TOKEN_FILE DRIVER NODE\n", argv[0]);
		return 2;
	}
	kc.server = argv[1];
	kc.ca_file = argv[2];
	kc.token_file = argv[3];
	kc.source = (char *)"test";
	h.driver = argv[4];
	r = sd_event_default(&h.loop);
	if (r >= 0)
		r = kube_client_new(h.loop, &kc, &kube);
	if (r >= 0) {
		struct dra_publisher_config pc = {
		    .driver = argv[4], .node_name = argv[5], .kube = kube};

		r = dra_publisher_new(h.loop, &pc, &h.pub);
	}
	if (r >= 0)
		r = sd_event_add_io(h.loop, &in, STDIN_FILENO, EPOLLIN, on_stdin, &h);
	if (r < 0) {
		fprintf(stderr, "setup failed: %s\n", strerror(-r));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	r = sd_event_loop(h.loop);
	sd_event_source_unref(in);
	dra_publisher_free(h.pub);
	kube_client_free(kube);
	sd_event_unref(h.loop);
	return r < 0 ? 1 : 0;
}
