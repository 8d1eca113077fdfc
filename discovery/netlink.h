/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink (NETLINK_RDMA, the "nldev" client): what sysfs does not say. The RDMA
 * network-namespace mode of the kernel (`rdma system`), the index of an RDMA device, and
 * moving a device into a network namespace (`rdma dev set DEV netns NS`, what rdma-cni
 * does).
 *
 * The messages are built and read by pure functions on buffers (the unit tests and the
 * fuzzer drive them); the few functions that talk to the kernel are at the end. Every
 * answer is treated as hostile: lengths are checked before anything is read. Nothing here
 * logs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "discovery.h"
#include "rc-error.h"

/* A request message is at most this long (the longest is a device name lookup). */
#define DISC_NL_REQUEST_MAX 128
/* A buffer that holds any one answer the kernel sends for these requests. */
#define DISC_NL_ANSWER_MAX 32768

/*
 * Requests, written into buf (at least DISC_NL_REQUEST_MAX bytes): their length.
 *   sys_get   RDMA_NLDEV_CMD_SYS_GET (the netns mode), with an ACK;
 *   dev_get   RDMA_NLDEV_CMD_GET as a dump of every device of the namespace (REQUEST|DUMP,
 *             no attribute, ended by NLMSG_DONE): the kernel's GET of one device needs its
 *             index and answers EINVAL without, so a name is found among the dump's answers
 *             (disc_nl_answer.match); 0 when name is empty or longer than the kernel's 64
 *             bytes;
 *   set_netns RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_INDEX and RDMA_NLDEV_NET_NS_FD,
 *             with an ACK.
 */
size_t disc_nl_sys_get(void *buf, uint32_t seq);
size_t disc_nl_dev_get(void *buf, uint32_t seq, const char *name);
size_t disc_nl_set_netns(void *buf, uint32_t seq, uint32_t dev_index, uint32_t netns_fd);
/*   port_get  RDMA_NLDEV_CMD_PORT_GET for port 1 of device dev_index, with an ACK: the
 *             kernel names the port's netdev only when it is in the asking namespace. */
size_t disc_nl_port_get(void *buf, uint32_t seq, uint32_t dev_index);

/* What one received datagram said about the request seq. */
struct disc_nl_answer {
	/* Set by the caller: only the GET answer for this device name counts (a dump answers
	 * one message per device); NULL takes every message. */
	const char *match;
	bool done;	   /* the ACK (or an error) arrived: nothing more will come */
	int error;	   /* the kernel's error for the request (-errno), 0 when none */
	int netns_mode;	   /* from a SYS_GET answer: enum disc_netns_mode, -1 when none */
	bool have_index;   /* from a GET answer: */
	uint32_t index;	   /* RDMA_NLDEV_ATTR_DEV_INDEX */
	char name[65];	   /* RDMA_NLDEV_ATTR_DEV_NAME, "" when none */
	bool have_ndev;	   /* from a PORT_GET answer: RDMA_NLDEV_ATTR_NDEV_INDEX */
	uint32_t ndev_index;
};

/*
 * Reads one datagram buf[0..len) of answers to request seq into *ans (which the caller
 * zeroes once per request, netns_mode -1, match set; several datagrams accumulate). Messages of
 * other sequence numbers are skipped. 0, or -EBADMSG when a message or an attribute is
 * cut or lies about its length (*ans is then undefined).
 */
int disc_nl_parse(const void *buf, size_t len, uint32_t seq, struct disc_nl_answer *ans);

/* ---- talking to the kernel -------------------------------------------------------- */

/*
 * The kernel's RDMA netns mode (disc_netns_mode_name() in discovery.h names it; it lives
 * in netlink.c). DISC_NETNS_UNKNOWN when the kernel has no RDMA netlink
 * (socket refused, or a kernel that does not know the command), which is no error; -errno
 * with err set on anything else (a kernel answer that is not well formed, a time-out of
 * one second).
 */
int disc_netns_mode_read(enum disc_netns_mode *ret_mode, struct rc_error **err);

/* The kernel's index of RDMA device name, in the caller's network namespace: 0, -ENODEV
 * when no such device is visible there, other -errno with err set. */
int disc_nl_dev_index(const char *name, uint32_t *ret_index, struct rc_error **err);

/* Whether port 1 of RDMA device dev_index has its netdev in the caller's network namespace
 * (RoCE: the netdev must be where the device is). 1 yes, 0 no, -errno with err set. */
int disc_nl_port_has_netdev(const char *name, uint32_t dev_index, struct rc_error **err);

/*
 * Moves RDMA device dev_index into the network namespace netns_fd refers to. The kernel's
 * answer as -errno: -EOPNOTSUPP (a driver that cannot change namespace, e.g. rxe), -EPERM
 * (no CAP_NET_ADMIN), -EBUSY / -EINVAL (shared mode: the kernel refuses to move devices),
 * with err naming the device and the answer.
 */
int disc_nl_move_to_netns(const char *name, uint32_t dev_index, int netns_fd,
			  struct rc_error **err);
