/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes object names, checked as the API server checks them
 * (k8s.io/apimachinery/pkg/util/validation IsDNS1123Label, IsDNS1123Subdomain): a name
 * we accept and the API server refuses fails later and far from its cause, and one we
 * refuse that it accepts locks a valid cluster out.
 */
#include <string.h>

#include "common.h"

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? with no length limit: a subdomain's labels have none. */
static bool label_chars_ok(const char *s, size_t len)
{
	if (len == 0 || !ascii_is_lower_alnum(s[0]) || !ascii_is_lower_alnum(s[len - 1]))
		return false;
	for (size_t i = 1; i + 1 < len; i++)
		if (!ascii_is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool dns_label_is_valid_len(const char *s, size_t len)
{
	return s && len <= DNS_LABEL_MAX && !memchr(s, '\0', len) && label_chars_ok(s, len);
}

bool dns_label_is_valid(const char *s)
{
	return s && dns_label_is_valid_len(s, strnlen(s, DNS_LABEL_MAX + 1));
}

bool dns_subdomain_is_valid_len(const char *s, size_t len)
{
	if (!s || len == 0 || len > DNS_SUBDOMAIN_MAX || memchr(s, '\0', len))
		return false;
	/* Empty labels ("a..b", ".a", "a.") fail label_chars_ok. */
	for (size_t i = 0;;) {
		const char *dot = memchr(s + i, '.', len - i);
		size_t l = dot ? (size_t)(dot - (s + i)) : len - i;

		if (!label_chars_ok(s + i, l))
			return false;
		if (!dot)
			return true;
		i += l + 1;
	}
}

bool dns_subdomain_is_valid(const char *s)
{
	return s && dns_subdomain_is_valid_len(s, strnlen(s, DNS_SUBDOMAIN_MAX + 1));
}
