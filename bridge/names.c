/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names the bridge accepts or makes: --device-list-strategy, resource names (the
 * kubelet's IsExtendedResourceName), CDI annotation keys.
 */
#include <ctype.h>
#include <string.h>

#include "bridge-internal.h"

static const struct {
	const char *name;
	unsigned bit;
} strategies[] = {
    {"cdi-cri", BRIDGE_STRATEGY_CDI_CRI},
    {"cdi-annotations", BRIDGE_STRATEGY_CDI_ANNOTATIONS},
    {"device-specs", BRIDGE_STRATEGY_DEVICE_SPECS},
};

int bridge_parse_strategies(const char *s, unsigned *ret_mask)
{
	unsigned mask = 0;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		size_t len = strcspn(s, ",");
		bool found = false;

		for (size_t i = 0; i < ELEMENTSOF(strategies); i++)
			if (strlen(strategies[i].name) == len &&
			    strncmp(s, strategies[i].name, len) == 0) {
				mask |= strategies[i].bit;
				found = true;
			}
		if (!found)
			return -EINVAL; /* also catches empty items: "a,,b", "a," */
		if (s[len] == '\0')
			break;
		s += len + 1;
	}
	*ret_mask = mask;
	return 0;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c)
{
	return isascii((unsigned char)c) && isalnum((unsigned char)c);
}

/* DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each alphanumeric at both ends. */
static bool dns_subdomain_is_valid(const char *s, size_t len)
{
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i < len;) {
		size_t l = 0;

		while (i + l < len && s[i + l] != '.')
			l++;
		if (l == 0 || !is_lower_alnum(s[i]) || !is_lower_alnum(s[i + l - 1]))
			return false;
		for (size_t k = i; k < i + l; k++)
			if (!is_lower_alnum(s[k]) && s[k] != '-')
				return false;
		i += l;
		if (i < len && ++i == len)
			return false; /* trailing dot */
	}
	return true;
}

/* Name part of a qualified name: <= 63 of [A-Za-z0-9_.-], alphanumeric at both ends. */
static bool qualified_name_part_is_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool bridge_resource_name_is_valid(const char *name)
{
	static const char requests[] = "requests.";
	const char *slash;

	if (!name)
		return false;
	/* Native resources: no domain, or the kubernetes.io namespace. */
	slash = strchr(name, '/');
	if (!slash || strstr(name, "kubernetes.io/"))
		return false;
	if (strncmp(name, requests, sizeof(requests) - 1) == 0)
		return false;
	if (strchr(slash + 1, '/'))
		return false;
	/* The kubelet validates "requests." + name as a qualified name (for quota), so
	 * the domain gets 253 - 9 characters. */
	if ((size_t)(slash - name) + sizeof(requests) - 1 > 253)
		return false;
	return dns_subdomain_is_valid(name, (size_t)(slash - name)) &&
	       qualified_name_part_is_valid(slash + 1);
}

void dp_annotation_suffix(char *const *ids, size_t n_ids,
			  char buf[static DP_ANNOTATION_SUFFIX_MAX + 1])
{
	const char *first = n_ids > 0 ? ids[0] : "";
	size_t len = strlen(first), start = 0, n = 0;
	uint64_t h = DP_HASH_INIT;

	while (start < len && !is_alnum(first[start]))
		start++;
	while (len > start && !is_alnum(first[len - 1]))
		len--;
	if (len > start && len - start <= DP_ANNOTATION_SUFFIX_MAX) {
		for (size_t i = start; i < len; i++) {
			char c = first[i];

			buf[n++] = is_alnum(c) || c == '-' || c == '_' || c == '.' ? c : '_';
		}
		buf[n] = '\0';
		return;
	}
	for (size_t i = 0; i < n_ids; i++) {
		h = dp_hash64(ids[i], strlen(ids[i]), h);
		h = dp_hash64(",", 1, h);
	}
	snprintf(buf, DP_ANNOTATION_SUFFIX_MAX + 1, "h%016llx", (unsigned long long)h);
}
