/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink (discovery/netlink.h): the requests byte for byte as the kernel's nldev
 * client reads them, the answers the kernel sends (SYS_GET's mode, GET's index and name,
 * the ACK and refusals), answers that lie about their lengths, and the last layer this
 * machine can show: a kernel without RDMA netlink.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <string.h>

#include "common.h"
#include "netlink.h"
#include "../tap.h"

#define NLDEV(cmd) RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)

/* A datagram under construction, aligned like the kernel's. */
struct dgram {
	_Alignas(4) unsigned char b[1024];
	size_t len;
	size_t msg; /* where the open message starts */
};

static void msg_begin(struct dgram *d, uint16_t type, uint32_t seq)
{
	struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN, .nlmsg_type = type, .nlmsg_seq = seq};

	d->msg = d->len;
	memcpy(d->b + d->len, &h, sizeof(h));
	d->len += NLMSG_HDRLEN;
}

static void msg_attr(struct dgram *d, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type};

	memset(d->b + d->len, 0, NLA_ALIGN(a.nla_len));
	memcpy(d->b + d->len, &a, sizeof(a));
	memcpy(d->b + d->len + NLA_HDRLEN, data, len);
	d->len += NLA_ALIGN(a.nla_len);
}

static void msg_end(struct dgram *d)
{
	uint32_t len = (uint32_t)(d->len - d->msg);

	memcpy(d->b + d->msg, &len, sizeof(len));
}

static void msg_ack(struct dgram *d, uint32_t seq, int error)
{
	struct nlmsgerr e = {.error = error};

	msg_begin(d, NLMSG_ERROR, seq);
	memcpy(d->b + d->len, &e, sizeof(e));
	d->len += NLMSG_ALIGN(sizeof(e));
	msg_end(d);
}

static struct disc_nl_answer fresh(void)
{
	return (struct disc_nl_answer){.netns_mode = -1};
}

static void test_requests(void)
{
	_Alignas(4) unsigned char buf[DISC_NL_REQUEST_MAX];
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
	const struct nlattr *a;
	uint32_t u;
	size_t n;

	n = disc_nl_sys_get(buf, 7);
	ok(n == NLMSG_HDRLEN && h->nlmsg_len == n && h->nlmsg_type == NLDEV(RDMA_NLDEV_CMD_SYS_GET) &&
		   h->nlmsg_flags == (NLM_F_REQUEST | NLM_F_ACK) && h->nlmsg_seq == 7,
	   "SYS_GET: a bare nldev header with REQUEST|ACK and the sequence");

	/* The kernel's GET of one device needs DEV_INDEX (EINVAL without, seen on 6.1): by
	 * name it is a dump, whose answers are matched by name. */
	n = disc_nl_dev_get(buf, 8, "mlx5_3");
	ok(n == NLMSG_HDRLEN && h->nlmsg_len == n && h->nlmsg_type == NLDEV(RDMA_NLDEV_CMD_GET) &&
		   h->nlmsg_flags == (NLM_F_REQUEST | NLM_F_DUMP) && h->nlmsg_seq == 8,
	   "GET by name: a bare REQUEST|DUMP (no DEV_NAME, which GET's doit ignores)");
	ok(disc_nl_dev_get(buf, 8, "") == 0, "GET: an empty name is no request");
	ok(disc_nl_dev_get(buf, 8, "0123456789012345678901234567890123456789012345678901234567890123") == 0,
	   "GET: a 64-char name does not fit the kernel's 64 bytes with its NUL");
	ok(disc_nl_dev_get(buf, 8, "012345678901234567890123456789012345678901234567890123456789012") > 0,
	   "GET: a 63-char name does");

	n = disc_nl_port_get(buf, 10, 6);
	a = (const struct nlattr *)(buf + NLMSG_HDRLEN + 8);
	memcpy(&u, (const char *)a + NLA_HDRLEN, 4);
	ok(n == NLMSG_HDRLEN + 16 && h->nlmsg_type == NLDEV(RDMA_NLDEV_CMD_PORT_GET) &&
		   a->nla_type == RDMA_NLDEV_ATTR_PORT_INDEX && u == 1,
	   "PORT_GET: the device's index, then port 1");

	n = disc_nl_set_netns(buf, 9, 4, 12);
	ok(n == NLMSG_HDRLEN + 2 * NLA_ALIGN(NLA_HDRLEN + 4) && h->nlmsg_len == n &&
		   h->nlmsg_type == NLDEV(RDMA_NLDEV_CMD_SET) &&
		   h->nlmsg_flags == (NLM_F_REQUEST | NLM_F_ACK),
	   "SET: header, length of two u32 attributes");
	a = (const struct nlattr *)(buf + NLMSG_HDRLEN);
	memcpy(&u, (const char *)a + NLA_HDRLEN, 4);
	ok(a->nla_type == RDMA_NLDEV_ATTR_DEV_INDEX && a->nla_len == 8 && u == 4,
	   "SET: DEV_INDEX first");
	a = (const struct nlattr *)(buf + NLMSG_HDRLEN + 8);
	memcpy(&u, (const char *)a + NLA_HDRLEN, 4);
	ok(a->nla_type == RDMA_NLDEV_NET_NS_FD && a->nla_len == 8 && u == 12, "SET: NET_NS_FD second");
}

static void test_answers(void)
{
	struct disc_nl_answer ans = fresh();
	struct dgram d = {0};
	uint8_t mode = 0;
	uint32_t idx = 5;

	/* SYS_GET: the answer and the ACK in one datagram, as the kernel sends them. */
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_SYS_GET), 1);
	msg_attr(&d, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, &mode, 1);
	msg_end(&d);
	msg_ack(&d, 1, 0);
	ok(disc_nl_parse(d.b, d.len, 1, &ans) == 0 && ans.done && ans.error == 0 &&
		   ans.netns_mode == DISC_NETNS_EXCLUSIVE,
	   "SYS_GET answer: mode 0 is exclusive, the ACK ends it");
	mode = 1;
	d = (struct dgram){0};
	ans = fresh();
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_SYS_GET), 1);
	msg_attr(&d, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, &mode, 1);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 1, &ans) == 0 && !ans.done &&
		   ans.netns_mode == DISC_NETNS_SHARED,
	   "mode 1 is shared; without the ACK more is to come");

	/* GET: index and name among attributes we do not read. */
	d = (struct dgram){0};
	ans = fresh();
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 2);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0", 5);
	msg_attr(&d, RDMA_NLDEV_ATTR_FW_VERSION, "1.2.3", 6);
	msg_end(&d);
	msg_ack(&d, 2, 0);
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == 0 && ans.have_index && ans.index == 5 &&
		   strcmp(ans.name, "rxe0") == 0 && ans.done,
	   "GET answer: index and name, other attributes skipped");

	/* A dump: one message per device, then NLMSG_DONE; only the asked name counts. */
	d = (struct dgram){0};
	ans = fresh();
	ans.match = "rxe1";
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 8);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0", 5);
	msg_end(&d);
	idx = 9;
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 8);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_NAME, "rxe1", 5);
	msg_end(&d);
	idx = 11;
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 8);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_NAME, "rxe10", 6);
	msg_end(&d);
	msg_begin(&d, NLMSG_DONE, 8);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 8, &ans) == 0 && ans.have_index && ans.index == 9 &&
		   strcmp(ans.name, "rxe1") == 0 && ans.done && ans.error == 0,
	   "GET dump: the index of the device asked for, not its neighbours'; DONE ends it");
	ans = fresh();
	ans.match = "mlx5_0";
	ok(disc_nl_parse(d.b, d.len, 8, &ans) == 0 && !ans.have_index && ans.done,
	   "GET dump without the name asked for: no index (no such device here)");

	/* PORT_GET: the netdev's index only when it is in the asking namespace. */
	d = (struct dgram){0};
	ans = fresh();
	idx = 17;
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_PORT_GET), 6);
	msg_attr(&d, RDMA_NLDEV_ATTR_NDEV_INDEX, &idx, 4);
	msg_attr(&d, RDMA_NLDEV_ATTR_NDEV_NAME, "eth1", 5);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 6, &ans) == 0 && ans.have_ndev && ans.ndev_index == 17 &&
		   !ans.have_index,
	   "PORT_GET answer: the port's netdev");

	/* Refusals: the kernel's -errno in NLMSG_ERROR. */
	d = (struct dgram){0};
	ans = fresh();
	msg_ack(&d, 3, -EOPNOTSUPP);
	ok(disc_nl_parse(d.b, d.len, 3, &ans) == 0 && ans.done && ans.error == -EOPNOTSUPP,
	   "a refusal: EOPNOTSUPP (rxe cannot change namespace)");

	/* Another request's messages are not ours. */
	ans = fresh();
	ok(disc_nl_parse(d.b, d.len, 4, &ans) == 0 && !ans.done && ans.error == 0,
	   "a message of another sequence number is skipped");
}

static void test_hostile(void)
{
	struct disc_nl_answer ans = fresh();
	struct dgram d = {0};
	uint32_t big = 4096, idx = 1;
	int pos = 3;

	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 2);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len - 1, 2, &ans) == -EBADMSG,
	   "a message longer than the datagram: EBADMSG");
	memcpy(d.b, &big, 4);
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == -EBADMSG, "nlmsg_len past the end: EBADMSG");

	d = (struct dgram){0};
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 2);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 2);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == -EBADMSG, "a u32 attribute of 2 bytes: EBADMSG");

	d = (struct dgram){0};
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 2);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_NAME, "rxe0", 4);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == -EBADMSG, "a name without its NUL: EBADMSG");

	d = (struct dgram){0};
	msg_begin(&d, NLDEV(RDMA_NLDEV_CMD_GET), 2);
	msg_attr(&d, RDMA_NLDEV_ATTR_DEV_INDEX, &idx, 4);
	msg_end(&d);
	((struct nlattr *)(d.b + NLMSG_HDRLEN))->nla_len = 200;
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == -EBADMSG, "an attribute past its message: EBADMSG");
	((struct nlattr *)(d.b + NLMSG_HDRLEN))->nla_len = 2;
	ok(disc_nl_parse(d.b, d.len, 2, &ans) == -EBADMSG, "an attribute shorter than its header");

	d = (struct dgram){0};
	msg_begin(&d, NLMSG_ERROR, 5);
	memcpy(d.b + d.len, &pos, sizeof(pos));
	d.len += 16;
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 5, &ans) == -EBADMSG, "a positive error is no kernel's");

	d = (struct dgram){0};
	msg_begin(&d, NLMSG_ERROR, 5);
	msg_end(&d);
	ok(disc_nl_parse(d.b, d.len, 5, &ans) == -EBADMSG, "an error message without its error");

	ans = fresh();
	ok(disc_nl_parse(d.b, 3, 5, &ans) == -EBADMSG, "a datagram shorter than a header");
	ok(disc_nl_parse(d.b, 0, 5, &ans) == 0 && !ans.done, "an empty datagram says nothing");
}

/* This machine's kernel: RDMA netlink or not, the answer is a mode or "unknown". */
static void test_kernel(void)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	enum disc_netns_mode mode = -2;
	uint32_t idx;
	int r;

	r = disc_netns_mode_read(&mode, &err);
	ok(r == 0 && (mode == DISC_NETNS_UNKNOWN || mode == DISC_NETNS_SHARED ||
		      mode == DISC_NETNS_EXCLUSIVE),
	   "the kernel's mode: %s (%s)", disc_netns_mode_name(mode), rc_error_msg(err, r));
	rc_error_freep(&err);
	r = disc_nl_dev_index("rdma-cdi-no-such-dev", &idx, &err);
	ok(r < 0 && err && strstr(err->msg, "rdma-cdi-no-such-dev"),
	   "a device that is not there: an error naming it (%s)", rc_error_msg(err, r));
	rc_error_freep(&err);
	r = disc_nl_move_to_netns("rxe0", 1, -1, &err);
	ok(r == -EBADF && err && strstr(err->msg, "rxe0"), "no namespace fd: refused before asking");
	ok(strcmp(disc_netns_mode_name(DISC_NETNS_SHARED), "shared") == 0 &&
		   strcmp(disc_netns_mode_name(DISC_NETNS_EXCLUSIVE), "exclusive") == 0 &&
		   strcmp(disc_netns_mode_name(DISC_NETNS_UNKNOWN), "unknown") == 0,
	   "the modes' names");
}

int main(void)
{
	test_requests();
	test_answers();
	test_hostile();
	test_kernel();
	return tap_done();
}
