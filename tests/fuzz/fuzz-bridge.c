/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device plugin's request handlers on hostile requests: the input's first byte picks
 * one of a few tables (fixture nodes, exclusive or shared, strategies, ncclEnv), the rest
 * is unpacked with protobuf-c as a v1beta1 AllocateRequest and as a
 * PreferredAllocationRequest (their container requests share field 1) and handed to
 * dp_allocate() and dp_preferred_allocation(); dp_list_response() runs on the table too.
 * The answers are checked against the contract: errors come with one line, an answer is
 * bounded by the table, preferred IDs are known and distinct.
 */
#include <errno.h>
#include <string.h>

#include "bridge-internal.h"
#include "fuzz.h"

struct table_kind {
	const char *fixture;
	struct dp_table_options o;
};

static const struct table_kind kinds[] = {
    {"dgx", {.dev_root = "/dev"}},
    {"dgx",
     {.dev_root = "/dev",
      .with_mad = true,
      .strategies = BRIDGE_STRATEGY_CDI_CRI | BRIDGE_STRATEGY_CDI_ANNOTATIONS |
		    BRIDGE_STRATEGY_DEVICE_SPECS}},
    {"dgx", {.dev_root = "/dev", .shared = 4, .nccl_env = true}},
    {"sriov", {.dev_root = "/dev", .nccl_env = true}},
    {"sriov", {.dev_root = "/dev", .shared = 3, .strategies = BRIDGE_STRATEGY_DEVICE_SPECS}},
};
#define N_KINDS (sizeof(kinds) / sizeof(*kinds))

static struct dp_table *tables[N_KINDS];

static struct dp_table *table_build(const struct table_kind *k)
{
	struct disc_node *node = fuzz_fixture_node(k->fixture);
	struct dp_table *t = NULL;

	/* The fixtures have no /dev: pretend every node exists, so that healthy devices (an
	 * ACTIVE port) are allocatable. */
	for (size_t i = 0; i < node->n_devices; i++)
		node->devices[i].uverbs.node_present = node->devices[i].has_uverbs;
	if (dp_table_build(node, NULL, &k->o, &t) < 0 || t->n_ids == 0)
		abort();
	disc_node_free(node);
	return t;
}

static void check_allocate(const struct dp_table *t, const uint8_t *data, size_t size)
{
	V1beta1__AllocateRequest *req;
	V1beta1__AllocateResponse *resp = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	req = v1beta1__allocate_request__unpack(NULL, size, data);
	if (!req)
		return;
	r = dp_allocate(t, req, &resp, &err);
	if (r < 0) {
		fuzz_assert(r == -EINVAL || r == -ENOMEM);
		fuzz_assert(!resp);
		fuzz_assert_error(err, r);
	} else {
		fuzz_assert(!err);
		size_t ids = 0;

		fuzz_assert(resp && resp->n_container_responses == req->n_container_requests);
		for (size_t i = 0; i < req->n_container_requests; i++)
			ids += req->container_requests[i]->n_devices_ids;
		/* Every ID named is a known one: no more than the table has. */
		fuzz_assert(ids >= 1 && ids <= t->n_ids);
		for (size_t i = 0; i < req->n_container_requests; i++)
			for (size_t k = 0; k < req->container_requests[i]->n_devices_ids; k++)
				fuzz_assert(
				    dp_table_find(t, req->container_requests[i]->devices_ids[k]) >=
				    0);
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	}
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

static void check_preferred(const struct dp_table *t, const uint8_t *data, size_t size)
{
	V1beta1__PreferredAllocationRequest *req;
	V1beta1__PreferredAllocationResponse *resp = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	req = v1beta1__preferred_allocation_request__unpack(NULL, size, data);
	if (!req)
		return;
	r = dp_preferred_allocation(t, req, &resp, &err);
	if (r < 0) {
		fuzz_assert(r == -EINVAL || r == -ENOMEM);
		fuzz_assert_error(err, r);
		protobuf_c_message_free_unpacked(&req->base, NULL);
		return;
	}
	fuzz_assert(resp->n_container_responses == req->n_container_requests);
	for (size_t i = 0; i < resp->n_container_responses; i++) {
		const V1beta1__ContainerPreferredAllocationResponse *c =
		    resp->container_responses[i];
		const V1beta1__ContainerPreferredAllocationRequest *q = req->container_requests[i];

		fuzz_assert(c->n_deviceids <= t->n_ids);
		fuzz_assert(q->allocation_size < 0 ||
			    c->n_deviceids <= (size_t)q->allocation_size ||
			    c->n_deviceids <= q->n_must_include_deviceids);
		for (size_t k = 0; k < c->n_deviceids; k++) {
			fuzz_assert(dp_table_find(t, c->deviceids[k]) >= 0);
			for (size_t m = 0; m < k; m++)
				fuzz_assert(strcmp(c->deviceids[k], c->deviceids[m]) != 0);
		}
	}
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	protobuf_c_message_free_unpacked(&req->base, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	V1beta1__ListAndWatchResponse *list = NULL;
	const struct dp_table *t;

	if (!tables[0])
		for (size_t i = 0; i < N_KINDS; i++)
			tables[i] = table_build(&kinds[i]);
	if (size < 1 || size > DP_MAX_MESSAGE)
		return 0;
	t = tables[data[0] % N_KINDS];
	check_allocate(t, data + 1, size - 1);
	check_preferred(t, data + 1, size - 1);

	fuzz_assert(dp_list_response(t, &list) == 0);
	fuzz_assert(list->n_devices == t->n_ids);
	protobuf_c_message_free_unpacked(&list->base, NULL);
	return 0;
}
