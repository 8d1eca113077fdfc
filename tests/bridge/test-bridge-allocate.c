/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocate over the device table: validation of hostile requests, the response of each
 * device-list strategy, shared mode, ncclEnv, and the CDI annotation key.
 */
#include "fake-node.h"
#include "rpc.h"

/* An AllocateRequest from NULL-separated container lists of IDs; ends with two NULLs. */
static V1beta1__AllocateRequest *request(const char *const *ids)
{
	V1beta1__AllocateRequest *req = malloc(sizeof(*req));

	v1beta1__allocate_request__init(req);
	req->container_requests = calloc(16, sizeof(*req->container_requests));
	for (size_t i = 0; ids[i] || ids[i + 1]; i++) {
		V1beta1__ContainerAllocateRequest *c = malloc(sizeof(*c));

		v1beta1__container_allocate_request__init(c);
		c->devices_ids = calloc(16, sizeof(char *));
		while (ids[i])
			c->devices_ids[c->n_devices_ids++] = strdup(ids[i++]);
		req->container_requests[req->n_container_requests++] = c;
		if (!ids[i + 1])
			break;
	}
	return req;
}

/* One container request with n copies of id (or n distinct "dev-<k>" when id is NULL). */
static V1beta1__AllocateRequest *big_request(size_t n, const char *id)
{
	V1beta1__AllocateRequest *req = malloc(sizeof(*req));
	V1beta1__ContainerAllocateRequest *c = malloc(sizeof(*c));

	v1beta1__allocate_request__init(req);
	v1beta1__container_allocate_request__init(c);
	req->container_requests = malloc(sizeof(*req->container_requests));
	req->container_requests[0] = c;
	req->n_container_requests = 1;
	c->devices_ids = malloc(n * sizeof(char *));
	for (size_t i = 0; i < n; i++)
		c->devices_ids[c->n_devices_ids++] = id ? strdup(id) : strdup_printf("dev-%zu", i);
	return req;
}

static void free_req(V1beta1__AllocateRequest *req)
{
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static const char *map_get(size_t n, V1beta1__ContainerAllocateResponse__EnvsEntry **e,
			   const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(e[i]->key, key) == 0)
			return e[i]->value;
	return NULL;
}

/* Runs Allocate expecting failure; true when its error contains want (copied to err). */
static bool rejects(const struct dp_table *t, V1beta1__AllocateRequest *req, const char *want,
		    char *err, size_t errlen)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	V1beta1__AllocateResponse *resp = NULL;
	int r = dp_allocate(t, req, &resp, &e);

	free_req(req);
	if (r != -EINVAL || resp || !e || e->code != EINVAL) {
		printf("#   r=%d\n", r);
		return false;
	}
	snprintf(err, errlen, "%s", e->msg);
	if (!strstr(err, want)) {
		printf("#   err \"%s\" lacks \"%s\"\n", err, want);
		return false;
	}
	return true;
}

static void test_default_strategies(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 0, 0);
	V1beta1__AllocateRequest *req = request(
	    (const char *[]){"0000:1a:00.0", NULL, "0000:3c:00.0", "0000:3b:00.0", NULL, NULL});
	V1beta1__AllocateResponse *resp = NULL, *back;
	V1beta1__ContainerAllocateResponse *c0, *c1;
	uint8_t *buf;
	size_t len;

	ok(dp_allocate(t, req, &resp, NULL) == 0, "two containers allocated");
	/* What the kubelet receives. */
	len = protobuf_c_message_get_packed_size(&resp->base);
	buf = malloc(len);
	protobuf_c_message_pack(&resp->base, buf);
	back = v1beta1__allocate_response__unpack(NULL, len, buf);
	ok(back && back->n_container_responses == 2, "one response per container request");
	c0 = back->container_responses[0];
	c1 = back->container_responses[1];
	ok(c0->n_cdi_devices == 1, "container 0: one CDI device");
	is_str(c0->cdi_devices[0]->name, "rdma.example/hca=mlx5_0",
	       "cdi-cri: fully qualified name");
	is_str(
	    map_get(c0->n_annotations, (void *)c0->annotations, "cdi.k8s.io/rdma-cdi_0000_1a_00.0"),
	    "rdma.example/hca=mlx5_0", "cdi-annotations: key from the first ID, value the names");
	is_str(map_get(c0->n_envs, c0->envs, "RDMA_CDI_DEVICES"), "mlx5_0", "env lists RDMA names");
	ok(c0->n_devices == 0 && c0->n_mounts == 0, "no DeviceSpecs without device-specs");
	ok(c1->n_cdi_devices == 2, "container 1: two CDI devices");
	is_str(c1->cdi_devices[0]->name, "rdma.example/hca=mlx5_2",
	       "names in table order, not request order");
	is_str(c1->cdi_devices[1]->name, "rdma.example/hca=mlx5_3", "second name");
	is_str(
	    map_get(c1->n_annotations, (void *)c1->annotations, "cdi.k8s.io/rdma-cdi_0000_3c_00.0"),
	    "rdma.example/hca=mlx5_2,rdma.example/hca=mlx5_3", "annotation value comma-separated");
	is_str(map_get(c1->n_envs, c1->envs, "RDMA_CDI_DEVICES"), "mlx5_2,mlx5_3",
	       "env comma-separated");
	v1beta1__allocate_response__free_unpacked(back, NULL);
	free(buf);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	dp_table_free(t);
	fake_free(f);
}

static void test_strategies(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t;
	V1beta1__AllocateRequest *req;
	V1beta1__AllocateResponse *resp = NULL;
	V1beta1__ContainerAllocateResponse *c;

	t = table_of(&f->node, 0, BRIDGE_STRATEGY_DEVICE_SPECS);
	req = request((const char *[]){"0000:1b:00.0", "0000:1a:00.0", NULL, NULL});
	ok(dp_allocate(t, req, &resp, NULL) == 0, "device-specs: allocated");
	c = resp->container_responses[0];
	ok(c->n_cdi_devices == 0 && c->n_annotations == 0, "device-specs alone: no CDI names");
	ok(c->n_devices == 3, "device-specs: uverbs of each HCA + rdma_cm (%zu)", c->n_devices);
	is_str(c->devices[0]->container_path, "/dev/infiniband/uverbs0", "container path");
	is_str(c->devices[0]->host_path, "/host/dev/infiniband/uverbs0",
	       "host path under --dev-root");
	is_str(c->devices[0]->permissions, "rw", "permissions rw (no mknod)");
	is_str(c->devices[1]->container_path, "/dev/infiniband/uverbs1", "second HCA");
	is_str(c->devices[2]->host_path, "/host/dev/infiniband/rdma_cm", "rdma_cm once");
	is_str(map_get(c->n_envs, c->envs, "RDMA_CDI_DEVICES"), "mlx5_0,mlx5_1",
	       "env with every strategy");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	dp_table_free(t);

	/* with_mad: umad/issm as in the spec. */
	{
		struct dp_table_options o = {.dev_root = "/dev",
					     .strategies = BRIDGE_STRATEGY_DEVICE_SPECS,
					     .with_mad = true};
		ok(dp_table_build(&f->node, NULL, &o, &t) == 0, "table with --with-mad");
		req = request((const char *[]){"0000:1a:00.0", NULL, NULL});
		ok(dp_allocate(t, req, &resp, NULL) == 0 &&
		       resp->container_responses[0]->n_devices == 3 &&
		       strcmp(resp->container_responses[0]->devices[1]->container_path,
			      "/dev/infiniband/umad0") == 0,
		   "--with-mad: device-specs carry umad too");
		protobuf_c_message_free_unpacked(&resp->base, NULL);
		free_req(req);
		dp_table_free(t);
	}

	t = table_of(&f->node, 0, BRIDGE_STRATEGY_CDI_CRI);
	req = request((const char *[]){"0000:1a:00.0", NULL, NULL});
	ok(dp_allocate(t, req, &resp, NULL) == 0 &&
	       resp->container_responses[0]->n_cdi_devices == 1 &&
	       resp->container_responses[0]->n_annotations == 0,
	   "cdi-cri alone: no annotation");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	dp_table_free(t);

	t = table_of(&f->node, 0, BRIDGE_STRATEGY_CDI_ANNOTATIONS);
	req = request((const char *[]){"0000:1a:00.0", NULL, NULL});
	ok(dp_allocate(t, req, &resp, NULL) == 0 &&
	       resp->container_responses[0]->n_cdi_devices == 0 &&
	       resp->container_responses[0]->n_annotations == 1,
	   "cdi-annotations alone: no cdi_devices");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	dp_table_free(t);
	fake_free(f);
}

static void test_rejects(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 0, 0);
	V1beta1__AllocateResponse *resp = NULL;
	V1beta1__AllocateRequest *req;
	char err[256], *huge;

	ok(rejects(t, request((const char *[]){"0000:1a:00.0", "0000:ff:00.0", NULL, NULL}),
		   "unknown device ID \"0000:ff:00.0\"", err, sizeof(err)),
	   "unknown ID: -EINVAL naming it");
	ok(rejects(t, request((const char *[]){"0000:1a:00.0", "0000:1a:00.0", NULL, NULL}),
		   "duplicate device ID \"0000:1a:00.0\"", err, sizeof(err)),
	   "duplicate ID within a container: -EINVAL naming it");
	ok(rejects(t, request((const char *[]){"0000:d8:00.0", NULL, NULL}),
		   "device ID \"0000:d8:00.0\" (mlx5_9) is unhealthy", err, sizeof(err)),
	   "unhealthy ID: -EINVAL naming it and its device");
	req = malloc(sizeof(*req));
	v1beta1__allocate_request__init(req);
	ok(rejects(t, req, "no container requests", err, sizeof(err)), "empty request: -EINVAL");
	req = big_request(0, NULL);
	ok(rejects(t, req, "container request 0 has no device IDs", err, sizeof(err)),
	   "empty container request: -EINVAL");
	ok(rejects(t, big_request(10000, NULL), "unknown device ID \"dev-0\"", err, sizeof(err)),
	   "10,000 unknown IDs: -EINVAL naming the first");
	ok(rejects(t, big_request(10000, "0000:1a:00.0"), "duplicate", err, sizeof(err)),
	   "10,000 copies of one ID: -EINVAL (duplicate)");
	ok(rejects(t, request((const char *[]){"evil\"\n\x01id", NULL, NULL}),
		   "unknown device ID \"evil\\\"\\n\\x01id\"", err, sizeof(err)) &&
	       !strchr(err, '\n'),
	   "hostile ID is escaped in the error as every message is: %s", err);
	huge = malloc(100001);
	memset(huge, 'a', 100000);
	huge[100000] = '\0';
	ok(rejects(t, request((const char *[]){huge, NULL, NULL}), "...", err, sizeof(err)) &&
	       strlen(err) < 120,
	   "100 kB ID: error stays one short line (%zu chars)", strlen(err));
	free(huge);
	/* A container request that is fine after a bad one still fails the whole call. */
	ok(rejects(t, request((const char *[]){"0000:1a:00.0", NULL, "bad", NULL, NULL}),
		   "unknown device ID \"bad\"", err, sizeof(err)),
	   "one bad container fails the call");
	/* The same ID in two containers is the kubelet's business, not a duplicate. */
	req = request((const char *[]){"0000:1a:00.0", NULL, "0000:1a:00.0", NULL, NULL});
	ok(dp_allocate(t, req, &resp, NULL) == 0 && resp->n_container_responses == 2,
	   "duplicates are per container request");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	/* ... but not without bound: the response would grow with every repetition. */
	req = big_request(1, "0000:1a:00.0");
	req->container_requests =
	    realloc(req->container_requests, 11 * sizeof(*req->container_requests));
	for (size_t i = 1; i < 11; i++)
		req->container_requests[req->n_container_requests++] =
		    (V1beta1__ContainerAllocateRequest *)protobuf_c_message_unpack(
			&v1beta1__container_allocate_request__descriptor, NULL, 14,
			(const uint8_t *)"\x0a\x0c"
					 "0000:1a:00.0");
	ok(rejects(t, req, "request names more than the 10 device IDs advertised", err,
		   sizeof(err)),
	   "one ID in 11 container requests on a 10-ID table: -EINVAL");
	req = request((const char *[]){"0000:1a:00.0", NULL, "0000:1b:00.0", NULL, "0000:1a:00.0",
				       NULL, "0000:1b:00.0", "0000:3b:00.0", NULL, NULL});
	ok(dp_allocate(t, req, &resp, NULL) == 0 && resp->n_container_responses == 4,
	   "5 IDs over 4 container requests on a 10-ID table: allocated");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);
	dp_table_free(t);
	fake_free(f);
}

static void test_shared(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table *t = table_of(&f->node, 4, 0);
	V1beta1__AllocateRequest *req = request(
	    (const char *[]){"0000:1a:00.0-s3", "0000:1b:00.0-s0", "0000:1a:00.0-s1", NULL, NULL});
	V1beta1__AllocateResponse *resp = NULL;
	V1beta1__ContainerAllocateResponse *c;
	struct rc_error *e = NULL;
	char err[256];

	ok(dp_allocate(t, req, &resp, NULL) == 0, "shared: allocated");
	c = resp->container_responses[0];
	ok(c->n_cdi_devices == 2, "two replicas of one HCA give its CDI name once (%zu names)",
	   c->n_cdi_devices);
	is_str(c->cdi_devices[0]->name, "rdma.example/hca=mlx5_0", "replica -> HCA's CDI name");
	is_str(c->cdi_devices[1]->name, "rdma.example/hca=mlx5_1", "other HCA");
	is_str(map_get(c->n_envs, c->envs, "RDMA_CDI_DEVICES"), "mlx5_0,mlx5_1",
	       "env once per HCA");
	is_str(c->annotations[0]->key, "cdi.k8s.io/rdma-cdi_0000_1a_00.0-s3",
	       "annotation key from the first ID");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	free_req(req);

	ok(rejects(t, request((const char *[]){"0000:1a:00.0-s3", "0000:1a:00.0-s3", NULL, NULL}),
		   "duplicate", err, sizeof(err)),
	   "shared: the same replica twice is a duplicate");
	ok(rejects(t, request((const char *[]){"0000:1a:00.0", NULL, NULL}), "unknown", err,
		   sizeof(err)),
	   "shared: the bare PCI address is unknown");

	/* 10,000 valid IDs: 10 HCAs x 1,000 replicas. */
	dp_table_free(t);
	t = table_of(&f->node, 1000, 0);
	req = big_request(0, NULL);
	for (size_t i = 0; i < t->n_ids; i++) {
		req->container_requests[0]->devices_ids =
		    realloc(req->container_requests[0]->devices_ids, (i + 1) * sizeof(char *));
		req->container_requests[0]->devices_ids[i] = strdup(t->ids[i].id);
		req->container_requests[0]->n_devices_ids++;
	}
	ok(dp_allocate(t, req, &resp, &e) == -EINVAL && strstr(e->msg, "unhealthy"),
	   "10,000 valid replica IDs incl. an unhealthy HCA: -EINVAL");
	rc_error_freep(&e);
	req->container_requests[0]->n_devices_ids = 9000; /* drop mlx5_9's replicas */
	ok(dp_allocate(t, req, &resp, NULL) == 0 &&
	       resp->container_responses[0]->n_cdi_devices == 9,
	   "9,000 valid replica IDs: 9 CDI names");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	req->container_requests[0]->n_devices_ids = 10000;
	free_req(req);
	dp_table_free(t);
	fake_free(f);
}

/* Allocate on a table with nccl_env, packed and unpacked as the kubelet receives it. */
static V1beta1__AllocateResponse *allocate_wire(const struct dp_table *t, const char *const *ids)
{
	V1beta1__AllocateRequest *req = request(ids);
	V1beta1__AllocateResponse *resp = NULL, *back = NULL;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	uint8_t *buf;
	size_t len;

	if (dp_allocate(t, req, &resp, &e) == 0) {
		len = protobuf_c_message_get_packed_size(&resp->base);
		buf = malloc(len);
		protobuf_c_message_pack(&resp->base, buf);
		back = v1beta1__allocate_response__unpack(NULL, len, buf);
		free(buf);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	} else {
		printf("#   allocate: %s\n", e->msg);
	}
	free_req(req);
	return back;
}

static const char *env_of(const V1beta1__AllocateResponse *r, size_t c, const char *key)
{
	if (!r || c >= r->n_container_responses)
		return NULL;
	return map_get(r->container_responses[c]->n_envs, r->container_responses[c]->envs, key);
}

static void test_nccl_env(void)
{
	struct fake_node *f = fake_dgx();
	struct dp_table_options o = {.nccl_env = true};
	struct dp_table *t = table_of(&f->node, 0, 0);
	V1beta1__AllocateResponse *r;
	struct disc_device *dev;

	/* Off by default: a pod that did not ask gets no NCCL or UCX variable. */
	r = allocate_wire(t, (const char *[]){"0000:3c:00.0", NULL, NULL});
	ok(r && env_of(r, 0, "RDMA_CDI_DEVICES") && !env_of(r, 0, "NCCL_IB_HCA") &&
	       !env_of(r, 0, "UCX_NET_DEVICES") && r->container_responses[0]->n_envs == 1,
	   "ncclEnv off: only RDMA_CDI_DEVICES");
	v1beta1__allocate_response__free_unpacked(r, NULL);
	dp_table_free(t);

	/* mlx5_4 gets a second port, ACTIVE; its first goes DOWN: health stays (one is up). */
	dev = &f->node.devices[5];
	dev->ports = realloc(dev->ports, 2 * sizeof(*dev->ports));
	dev->ports[1] = dev->ports[0];
	dev->ports[1].num = 2;
	dev->ports[0].state = 1;
	dev->n_ports = 2;
	/* mlx5_6: both ports ACTIVE. */
	dev = &f->node.devices[7];
	dev->ports = realloc(dev->ports, 2 * sizeof(*dev->ports));
	dev->ports[1] = dev->ports[0];
	dev->ports[1].num = 2;
	dev->n_ports = 2;
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0 && t->nccl_env, "table with ncclEnv");

	r = allocate_wire(
	    t, (const char *[]){"0000:9b:00.0", "0000:3c:00.0", NULL, "0000:1a:00.0", NULL, NULL});
	is_str(env_of(r, 0, "NCCL_IB_HCA"), "=mlx5_3,mlx5_5",
	       "NCCL_IB_HCA: exact-match form, the container's HCAs in table order");
	is_str(env_of(r, 0, "UCX_NET_DEVICES"), "mlx5_3:1,mlx5_5:1",
	       "UCX_NET_DEVICES: each HCA with its ACTIVE port");
	is_str(env_of(r, 0, "RDMA_CDI_DEVICES"), "mlx5_3,mlx5_5", "RDMA_CDI_DEVICES still there");
	is_str(env_of(r, 1, "NCCL_IB_HCA"), "=mlx5_0", "second container: its own HCA only");
	is_str(env_of(r, 1, "UCX_NET_DEVICES"), "mlx5_0:1", "second container: its own port");
	v1beta1__allocate_response__free_unpacked(r, NULL);

	r = allocate_wire(t, (const char *[]){"0000:ba:00.0", "0000:9a:00.0", NULL, NULL});
	is_str(env_of(r, 0, "NCCL_IB_HCA"), "=mlx5_4,mlx5_6", "two-port HCAs: named once each");
	is_str(env_of(r, 0, "UCX_NET_DEVICES"), "mlx5_4:2,mlx5_6:1,mlx5_6:2",
	       "UCX_NET_DEVICES: only ACTIVE ports (mlx5_4's port 1 is DOWN), every ACTIVE one");
	v1beta1__allocate_response__free_unpacked(r, NULL);

	/* An HCA whose ports are all down is refused, so the variables never name it; were
	 * its health set otherwise, UCX gets its first port rather than losing the HCA. */
	t->hcas[9].healthy = true;
	r = allocate_wire(t, (const char *[]){"0000:d8:00.0", NULL, NULL});
	is_str(env_of(r, 0, "UCX_NET_DEVICES"), "mlx5_9:1", "no ACTIVE port: the first port");
	v1beta1__allocate_response__free_unpacked(r, NULL);
	dp_table_free(t);

	/* Shared mode: several slots of one HCA name it once. */
	o.shared = 4;
	ok(dp_table_build(&f->node, NULL, &o, &t) == 0, "shared table with ncclEnv");
	r = allocate_wire(t, (const char *[]){"0000:3c:00.0-s2", "0000:1a:00.0-s0",
					      "0000:3c:00.0-s0", NULL, NULL});
	is_str(env_of(r, 0, "NCCL_IB_HCA"), "=mlx5_0,mlx5_3", "shared: each HCA once");
	is_str(env_of(r, 0, "UCX_NET_DEVICES"), "mlx5_0:1,mlx5_3:1", "shared: each port once");
	v1beta1__allocate_response__free_unpacked(r, NULL);
	dp_table_free(t);
	fake_free(f);
}

static void test_annotation_suffix(void)
{
	char buf[DP_ANNOTATION_SUFFIX_MAX + 1], buf2[DP_ANNOTATION_SUFFIX_MAX + 1];
	char long_id[64];

	dp_annotation_suffix((char *[]){(char *)"0000:3b:00.0"}, 1, buf);
	is_str(buf, "0000_3b_00.0", "':' becomes '_'");
	dp_annotation_suffix((char *[]){(char *)"_x.y-"}, 1, buf);
	is_str(buf, "x.y", "non-alphanumeric ends trimmed");
	memset(long_id, 'a', 60);
	long_id[60] = '\0';
	dp_annotation_suffix((char *[]){long_id, (char *)"b"}, 2, buf);
	ok(buf[0] == 'h' && strlen(buf) == 17, "too long: h + 16 hex digits (%s)", buf);
	dp_annotation_suffix((char *[]){long_id, (char *)"c"}, 2, buf2);
	ok(strcmp(buf, buf2) != 0, "the hash covers every ID");
	dp_annotation_suffix((char *[]){long_id, (char *)"b"}, 2, buf2);
	is_str(buf, buf2, "deterministic");
	dp_annotation_suffix((char *[]){(char *)"::"}, 1, buf);
	ok(buf[0] == 'h', "nothing alphanumeric: hashed");
	ok(strlen("rdma-cdi_") + DP_ANNOTATION_SUFFIX_MAX == 63,
	   "key after cdi.k8s.io/ is at most 63 chars");
}

/* IDs as a kubelet sends them, embedded NULs included (protobuf-c can only pack C strings). */
static void test_wire_nul(void)
{
	static const uint8_t clean[] = "\x0a\x0e\x0a\x0c"
				       "0000:1a:00.0";
	static const uint8_t evil[] = "\x0a\x21\x0a\x0c"
				      "0000:1b:00.0"
				      "\x0a\x11"
				      "0000:1a:00.0\0evil";
	static const uint8_t lead[] = "\x0a\x05\x0a\x03\0ab";
	/* Preferred: allocation_size = 2, then a must-include ID ending in NUL. */
	static const uint8_t pref[] = "\x0a\x0a\x18\x02\x12\x06"
				      "0000:\0";
	/* A NUL in a field this protocol does not have (field 9) is not an ID. */
	static const uint8_t unknown[] = "\x4a\x02\0x\x0a\x04\x0a\x02id";
	static const uint8_t cut[] = "\x0a\x0e\x0a\x0c"
				     "0000:1a";
	const uint8_t *s = NULL;
	size_t n = 0;
	int r;

	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, clean, sizeof(clean) - 1, &s,
			     &n);
	ok(r == 0, "an ordinary ID holds no NUL (%d)", r);
	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, evil, sizeof(evil) - 1, &s,
			     &n);
	ok(r == 1 && n == 17 && memcmp(s, "0000:1a:00.0\0evil", 17) == 0,
	   "the second ID's NUL found, the whole ID returned (%d, %zu)", r, n);
	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, lead, sizeof(lead) - 1, &s,
			     &n);
	ok(r == 1 && n == 3 && s[0] == '\0', "a leading NUL found (%d)", r);
	r = rpc_wire_find_nul(&v1beta1__preferred_allocation_request__descriptor, pref,
			     sizeof(pref) - 1, &s, &n);
	ok(r == 1 && n == 6 && s[5] == '\0', "GetPreferredAllocation: a must-include ID's NUL (%d)",
	   r);
	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, unknown, sizeof(unknown) - 1,
			     &s, &n);
	ok(r == 0, "a NUL in an unknown field is no ID's (%d)", r);
	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, cut, sizeof(cut) - 1, &s, &n);
	ok(r == -EBADMSG, "a truncated message: -EBADMSG (%d)", r);
	r = rpc_wire_find_nul(&v1beta1__allocate_request__descriptor, (const uint8_t *)"", 0, &s,
			     &n);
	ok(r == 0, "an empty message: no NUL (%d)", r);
}

int main(void)
{
	test_default_strategies();
	test_strategies();
	test_rejects();
	test_shared();
	test_nccl_env();
	test_annotation_suffix();
	test_wire_nul();
	return tap_done();
}
