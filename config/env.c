/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The environment values a container is given for its devices: the bridge's Allocate
 * and the DRA driver's Prepare both build them here, so the two never disagree.
 */
#include <stdio.h>
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

char *cfg_ucx_entries(const struct disc_device *dev)
{
	/* Port numbers are unsigned: at most 10 digits, ':' and ',' around them. */
	size_t len = 1 + (dev->n_ports ? dev->n_ports : 1) * (strlen(dev->name) + 12);
	size_t off = 0, n = 0;
	char *s = malloc(len);

	if (!s)
		return NULL;
	for (size_t i = 0; i < dev->n_ports; i++)
		if (dev->ports[i].state == DISC_PORT_ACTIVE)
			off += (size_t)snprintf(s + off, len - off, "%s%s:%u", n++ ? "," : "",
						dev->name, dev->ports[i].num);
	if (n == 0)
		snprintf(s, len, "%s:%u", dev->name, dev->n_ports ? dev->ports[0].num : 1);
	return s;
}
