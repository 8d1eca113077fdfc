/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names the bridge accepts or makes: --device-list-strategy, resource names (the
 * kubelet's IsExtendedResourceName), CDI annotation keys.
 */
#include <string.h>

#include "bridge-internal.h"
#include "config.h"

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

bool bridge_resource_name_is_valid(const char *name)
{
	return name && !cfg_resource_name_problem(name);
}

void dp_annotation_suffix(char *const *ids, size_t n_ids,
			  char buf[static DP_ANNOTATION_SUFFIX_MAX + 1])
{
	const char *first = n_ids > 0 ? ids[0] : "";
	size_t len = strlen(first), start = 0, n = 0;
	uint64_t h = FNV1A64_INIT;

	while (start < len && !ascii_is_alnum(first[start]))
		start++;
	while (len > start && !ascii_is_alnum(first[len - 1]))
		len--;
	if (len > start && len - start <= DP_ANNOTATION_SUFFIX_MAX) {
		for (size_t i = start; i < len; i++) {
			char c = first[i];

			buf[n++] = ascii_is_alnum(c) || c == '-' || c == '_' || c == '.' ? c : '_';
		}
		buf[n] = '\0';
		return;
	}
	for (size_t i = 0; i < n_ids; i++) {
		h = fnv1a64(ids[i], strlen(ids[i]), h);
		h = fnv1a64(",", 1, h);
	}
	snprintf(buf, DP_ANNOTATION_SUFFIX_MAX + 1, "h%016llx", (unsigned long long)h);
}
