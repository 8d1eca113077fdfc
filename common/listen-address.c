/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listen addresses for the daemons' HTTP endpoint (--metrics-address): parsed where the
 * command line is read (exit 2 on a bad one) and where the daemon binds it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "common.h"

#define ADDRESS_MAX 64 /* "[ffff:...:ffff]:65535" is 47 */

/* host (numeric, of the family) and port as a socket address; -EINVAL when host is none. */
static int make_sockaddr(const char *host, bool ipv6, uint16_t port, struct sockaddr_storage *ret,
			 socklen_t *ret_len)
{
	struct sockaddr_storage ss = {0};

	if (ipv6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		*ret_len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		*ret_len = sizeof(*a);
	}
	*ret = ss;
	return 0;
}

int parse_listen_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			 struct rc_error **err)
{
	char host[ADDRESS_MAX];
	const char *port, *colon;
	long long p = 0;
	size_t hl;

	if (strnlen(s, ADDRESS_MAX) >= ADDRESS_MAX)
		goto bad;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			goto bad;
		hl = (size_t)(end - s - 1);
		port = end + 2;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		if (memchr(s, ':', (size_t)(colon - s)))
			return rc_error_set(err, -EINVAL,
					    "\"%s\": put an IPv6 address in brackets: [ADDR]:PORT",
					    s);
		hl = (size_t)(colon - s);
		port = colon + 1;
	}
	memcpy(host, s[0] == '[' ? s + 1 : s, hl);
	host[hl] = '\0';
	if (!port[0] || strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 ||
	    (p = strtoll(port, NULL, 10)) < 1 || p > 65535)
		return rc_error_set(err, -EINVAL,
				    "\"%s\": the port must be a number from 1 to 65535", s);
	if (make_sockaddr(host, s[0] == '[', (uint16_t)p, ret, ret_len) == 0)
		return 0;
bad:
	return rc_error_set(
	    err, -EINVAL,
	    "\"%.*s\": expected a numeric IPv4:PORT or [IPv6]:PORT (127.0.0.1:9400, "
	    "[::1]:9400, 0.0.0.0:9400 for every interface)",
	    ADDRESS_MAX, s);
}

void format_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(buf, size, "[%s]:%u", host, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(buf, size, "%s:%u", host, ntohs(a->sin_port));
	}
}
