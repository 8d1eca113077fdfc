/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment values a container is given for its devices: the bridge's Allocate
 * and the DRA driver's Prepare both build them here, so the two never disagree.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"

char *cfg_env_value(const char *key, const char *const *items, size_t n)
{
	/* "=" + names: NCCL's exact match ("mlx5_1" alone also selects mlx5_10). */
	const char *prefix = key && strcmp(key, CFG_ENV_NCCL_IB_HCA) == 0 ? "=" : "";
	size_t len = strlen(prefix) + 1, off = strlen(prefix);
	char *s;

	for (size_t i = 0; i < n; i++)
		len += strlen(items[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	memcpy(s, prefix, off + 1);
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(items[i]);

		if (i > 0)
			s[off++] = ',';
		memcpy(s + off, items[i], l + 1);
		off += l;
	}
	return s;
}
