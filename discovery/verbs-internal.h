/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verbs.c internals for the unit tests: the probe over a table of verbs functions (so a
 * test can make any step fail), and the RDMA netlink answer parser on a buffer.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "discovery.h"

struct ibv_device;
struct ibv_context;
struct ibv_pd;
struct ibv_mr;
struct rdma_event_channel;

/* The calls disc_verbs_probe() makes, each with libibverbs'/librdmacm's contract (NULL or
 * non-zero with errno set on failure). */
struct disc_verbs_ops {
	struct ibv_device **(*get_device_list)(int *ret_n);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *ch);
};

int disc_verbs_probe_ops(const struct disc_verbs_ops *ops, size_t mr_size,
			 struct disc_verbs_report **ret);

