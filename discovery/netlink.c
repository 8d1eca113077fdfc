/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink requests and answers (netlink.h). The format is the kernel's netlink: a
 * struct nlmsghdr, the nldev client's command in its type, then attributes (struct
 * nlattr, 4-byte aligned). The kernel answers a request with NLM_F_ACK by its answer (for
 * GET commands) and then an NLMSG_ERROR whose error is 0 (the ACK) or -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"
#include "netlink.h"

#define NL_DEV_NAME_MAX 64 /* IB_DEVICE_NAME_MAX, the NUL included */

const char *disc_netns_mode_name(enum disc_netns_mode mode)
{
	switch (mode) {
	case DISC_NETNS_SHARED:
		return "shared";
	case DISC_NETNS_EXCLUSIVE:
		return "exclusive";
	case DISC_NETNS_UNKNOWN:
		break;
	}
	return "unknown";
}

/* ---- requests --------------------------------------------------------------------- */

static size_t nl_header(void *buf, uint32_t seq, unsigned cmd)
{
	struct nlmsghdr *h = buf;

	memset(buf, 0, DISC_NL_REQUEST_MAX);
	h->nlmsg_len = NLMSG_HDRLEN;
	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	h->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	h->nlmsg_seq = seq;
	return h->nlmsg_len;
}

static size_t nl_put(void *buf, uint16_t type, const void *data, size_t len)
{
	struct nlmsghdr *h = buf;
	struct nlattr *a = (struct nlattr *)((char *)buf + NLMSG_ALIGN(h->nlmsg_len));

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((char *)a + NLA_HDRLEN, data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return h->nlmsg_len;
}

size_t disc_nl_sys_get(void *buf, uint32_t seq)
{
	return nl_header(buf, seq, RDMA_NLDEV_CMD_SYS_GET);
}

size_t disc_nl_dev_get(void *buf, uint32_t seq, const char *name)
{
	size_t n = strnlen(name, NL_DEV_NAME_MAX);
	size_t len;

	if (n == 0 || n >= NL_DEV_NAME_MAX)
		return 0;
	/* nldev_get_doit() refuses a request without RDMA_NLDEV_ATTR_DEV_INDEX (EINVAL, seen
	 * on Debian's 6.1): by name, only the dump finds a device. No ACK: a dump ends with
	 * NLMSG_DONE. */
	len = nl_header(buf, seq, RDMA_NLDEV_CMD_GET);
	((struct nlmsghdr *)buf)->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	return len;
}

size_t disc_nl_set_netns(void *buf, uint32_t seq, uint32_t dev_index, uint32_t netns_fd)
{
	nl_header(buf, seq, RDMA_NLDEV_CMD_SET);
	nl_put(buf, RDMA_NLDEV_ATTR_DEV_INDEX, &dev_index, sizeof(dev_index));
	return nl_put(buf, RDMA_NLDEV_NET_NS_FD, &netns_fd, sizeof(netns_fd));
}

size_t disc_nl_port_get(void *buf, uint32_t seq, uint32_t dev_index)
{
	uint32_t port = 1;

	nl_header(buf, seq, RDMA_NLDEV_CMD_PORT_GET);
	nl_put(buf, RDMA_NLDEV_ATTR_DEV_INDEX, &dev_index, sizeof(dev_index));
	return nl_put(buf, RDMA_NLDEV_ATTR_PORT_INDEX, &port, sizeof(port));
}

/* ---- answers ---------------------------------------------------------------------- */

static int nl_attr(const struct nlattr *a, struct disc_nl_answer *ans)
{
	const char *data = (const char *)a + NLA_HDRLEN;
	size_t dlen = a->nla_len - NLA_HDRLEN;
	uint32_t u32;

	switch (a->nla_type & NLA_TYPE_MASK) {
	case RDMA_NLDEV_SYS_ATTR_NETNS_MODE:
		if (dlen < 1)
			return -EBADMSG;
		ans->netns_mode = data[0] ? DISC_NETNS_SHARED : DISC_NETNS_EXCLUSIVE;
		return 0;
	case RDMA_NLDEV_ATTR_DEV_INDEX:
		if (dlen < sizeof(u32))
			return -EBADMSG;
		memcpy(&u32, data, sizeof(u32));
		ans->index = u32;
		ans->have_index = true;
		return 0;
	case RDMA_NLDEV_ATTR_NDEV_INDEX:
		if (dlen < sizeof(u32))
			return -EBADMSG;
		memcpy(&u32, data, sizeof(u32));
		ans->ndev_index = u32;
		ans->have_ndev = true;
		return 0;
	case RDMA_NLDEV_ATTR_DEV_NAME:
		/* A NUL-terminated string of at most 64 bytes; anything else is not a name. */
		if (dlen == 0 || dlen > NL_DEV_NAME_MAX || !memchr(data, '\0', dlen))
			return -EBADMSG;
		memcpy(ans->name, data, strlen(data) + 1);
		return 0;
	default:
		return 0; /* the many attributes we do not need */
	}
}

static int nl_attrs(const char *p, size_t len, struct disc_nl_answer *ans)
{
	while (len >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		size_t step;
		int r;

		if (a->nla_len < NLA_HDRLEN || a->nla_len > len)
			return -EBADMSG;
		r = nl_attr(a, ans);
		if (r < 0)
			return r;
		step = NLA_ALIGN(a->nla_len);
		if (step >= len)
			return 0;
		p += step;
		len -= step;
	}
	return len == 0 ? 0 : -EBADMSG;
}

static int nl_error(const struct nlmsghdr *h, struct disc_nl_answer *ans)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);

	if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(e->error))
		return -EBADMSG;
	/* error is 0 for the ACK, -errno for a refusal; a positive one is no kernel's. */
	if (e->error > 0 || e->error < -4095)
		return -EBADMSG;
	ans->error = e->error;
	ans->done = true;
	return 0;
}

/* One nldev message into ans: all of it, or with ans->match only the device of that name
 * (a dump's other devices are read, checked and dropped). */
static int nl_message(const struct nlmsghdr *h, struct disc_nl_answer *ans)
{
	struct disc_nl_answer m = {.netns_mode = -1};
	int r = nl_attrs((const char *)h + NLMSG_HDRLEN, h->nlmsg_len - NLMSG_HDRLEN, &m);

	if (r < 0)
		return r;
	if (ans->match && strcmp(m.name, ans->match) != 0)
		return 0;
	if (m.netns_mode >= 0)
		ans->netns_mode = m.netns_mode;
	if (m.have_index) {
		ans->have_index = true;
		ans->index = m.index;
	}
	if (m.name[0])
		memcpy(ans->name, m.name, sizeof(ans->name));
	if (m.have_ndev) {
		ans->have_ndev = true;
		ans->ndev_index = m.ndev_index;
	}
	return 0;
}

int disc_nl_parse(const void *buf, size_t len, uint32_t seq, struct disc_nl_answer *ans)
{
	const char *p = buf;

	while (len >= NLMSG_HDRLEN) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)p;
		size_t step;
		int r = 0;

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len)
			return -EBADMSG;
		if (h->nlmsg_seq == seq) {
			if (h->nlmsg_type == NLMSG_ERROR)
				r = nl_error(h, ans);
			else if (h->nlmsg_type == NLMSG_DONE)
				ans->done = true;
			else if (RDMA_NL_GET_CLIENT(h->nlmsg_type) == RDMA_NL_NLDEV)
				r = nl_message(h, ans);
			if (r < 0)
				return r;
		}
		step = NLMSG_ALIGN(h->nlmsg_len);
		if (step >= len)
			return 0;
		p += step;
		len -= step;
	}
	return len == 0 ? 0 : -EBADMSG;
}

/* ---- the kernel ------------------------------------------------------------------- */

static int nl_open(void)
{
	struct timeval tv = {.tv_sec = 1};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);

	if (fd < 0)
		return -errno;
	/* The kernel answers at once; the bound only keeps a caller from waiting forever. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

/* Sends req and reads answers until the ACK: 0 with *ans filled (ans->error is the
 * kernel's verdict), or -errno when the exchange itself failed. */
static int nl_exchange(const void *req, size_t len, uint32_t seq, const char *match,
		       struct disc_nl_answer *ans)
{
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	_cleanup_free_ char *buf = malloc(DISC_NL_ANSWER_MAX);
	_cleanup_close_ int fd = nl_open();

	if (fd < 0)
		return fd;
	if (!buf)
		return -ENOMEM;
	*ans = (struct disc_nl_answer){.netns_mode = -1, .match = match};
	if (sendto(fd, req, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	/* Only the kernel's datagrams count (port id 0), and a bounded number of others: a
	 * process flooding our port cannot keep us here. */
	for (int others = 0; !ans->done;) {
		struct sockaddr_nl from = {0};
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, DISC_NL_ANSWER_MAX, 0, (struct sockaddr *)&from,
				     &fromlen);
		int r;

		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		if (from.nl_pid != 0) {
			if (++others > 64)
				return -EBADMSG;
			continue;
		}
		r = disc_nl_parse(buf, (size_t)n, seq, ans);
		if (r < 0)
			return r;
	}
	return 0;
}

int disc_netns_mode_read(enum disc_netns_mode *ret_mode, struct rc_error **err)
{
	char req[DISC_NL_REQUEST_MAX];
	struct disc_nl_answer ans;
	int r;

	r = nl_exchange(req, disc_nl_sys_get(req, 1), 1, NULL, &ans);
	/* No RDMA netlink at all, or a kernel that does not know SYS_GET (before 5.2). */
	if (r == -EPROTONOSUPPORT || r == -EAFNOSUPPORT ||
	    (r == 0 && (ans.error == -EOPNOTSUPP || ans.error == -EINVAL))) {
		*ret_mode = DISC_NETNS_UNKNOWN;
		return 0;
	}
	if (r < 0)
		return rc_error_set(err, r, "RDMA netlink: reading the netns mode: %s",
				    strerror(-r));
	if (ans.error < 0)
		return rc_error_set(err, ans.error, "RDMA netlink: the kernel refused SYS_GET: %s",
				    strerror(-ans.error));
	if (ans.netns_mode < 0)
		return rc_error_set(err, -EBADMSG, "RDMA netlink: SYS_GET answer without a mode");
	*ret_mode = (enum disc_netns_mode)ans.netns_mode;
	return 0;
}

int disc_nl_dev_index(const char *name, uint32_t *ret_index, struct rc_error **err)
{
	char req[DISC_NL_REQUEST_MAX];
	struct disc_nl_answer ans;
	size_t len = disc_nl_dev_get(req, 2, name);
	int r;

	if (len == 0)
		return rc_error_set(err, -EINVAL, "not an RDMA device name: %zu bytes",
				    strlen(name));
	r = nl_exchange(req, len, 2, name, &ans);
	if (r < 0)
		return rc_error_set(err, r, "RDMA netlink: looking up %s: %s", name, strerror(-r));
	if (ans.error == -ENODEV || (ans.error == 0 && !ans.have_index))
		return rc_error_set(err, -ENODEV, "%s: no such RDMA device in this network "
				    "namespace", name);
	if (ans.error < 0)
		return rc_error_set(err, ans.error, "RDMA netlink: looking up %s: %s", name,
				    strerror(-ans.error));
	*ret_index = ans.index;
	return 0;
}

int disc_nl_port_has_netdev(const char *name, uint32_t dev_index, struct rc_error **err)
{
	char req[DISC_NL_REQUEST_MAX];
	struct disc_nl_answer ans;
	int r;

	r = nl_exchange(req, disc_nl_port_get(req, 4, dev_index), 4, NULL, &ans);
	if (r < 0)
		return rc_error_set(err, r, "RDMA netlink: port 1 of %s: %s", name, strerror(-r));
	if (ans.error < 0)
		return rc_error_set(err, ans.error, "RDMA netlink: port 1 of %s: %s", name,
				    strerror(-ans.error));
	return ans.have_ndev;
}

int disc_nl_move_to_netns(const char *name, uint32_t dev_index, int netns_fd,
			  struct rc_error **err)
{
	char req[DISC_NL_REQUEST_MAX];
	struct disc_nl_answer ans;
	int r;

	if (netns_fd < 0)
		return rc_error_set(err, -EBADF, "%s: no network namespace to move to", name);
	r = nl_exchange(req, disc_nl_set_netns(req, 3, dev_index, (uint32_t)netns_fd), 3, NULL,
			&ans);
	if (r < 0)
		return rc_error_set(err, r, "RDMA netlink: moving %s: %s", name, strerror(-r));
	if (ans.error < 0)
		return rc_error_set(err, ans.error, "%s: the kernel refused the move: %s", name,
				    strerror(-ans.error));
	return 0;
}
