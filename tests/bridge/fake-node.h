/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The bridge unit tests' helpers on top of the shared TAP producer: a synthetic device
 * model builder, so the protocol logic is tested without sysfs, sockets or threads.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "bridge-internal.h"

/* Like the shared EQ_STR, with a printf-style description. */
#define is_str(a, b, ...)                                                                          \
	({                                                                                         \
		const char *_a = (a), *_b = (b);                                                   \
		bool _r = ok(_a && _b && strcmp(_a, _b) == 0, __VA_ARGS__);                        \
		if (!_r)                                                                           \
			printf("#   got \"%s\", want \"%s\"\n", _a ? _a : "(null)",                \
			       _b ? _b : "(null)");                                                \
		_r;                                                                                \
	})

/* ---- synthetic device model --------------------------------------------------------- */

struct fake_node {
	struct disc_node node;
	size_t cap;
};

static inline struct fake_node *fake_new(size_t cap)
{
	struct fake_node *f = calloc(1, sizeof(*f));

	if (!f)
		abort();
	f->cap = cap;
	f->node.devices = calloc(cap, sizeof(*f->node.devices));
	if (!f->node.devices)
		abort();
	f->node.has_rdma_cm = true;
	snprintf(f->node.rdma_cm.name, sizeof(f->node.rdma_cm.name), "rdma_cm");
	return f;
}

/* Adds a device with one port (ACTIVE when active) and uverbs<N> when usable. */
static inline struct disc_device *fake_add(struct fake_node *f, const char *name, const char *pci,
					   const char *dev_path, int numa, bool usable, bool active)
{
	struct disc_device *d;

	if (f->node.n_devices == f->cap)
		abort();
	d = &f->node.devices[f->node.n_devices];
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->pci, sizeof(d->pci), "%s", pci);
	snprintf(d->dev_path, sizeof(d->dev_path), "%s", dev_path);
	d->numa_node = numa;
	d->has_uverbs = usable;
	snprintf(d->uverbs.name, sizeof(d->uverbs.name), "uverbs%zu", f->node.n_devices);
	d->uverbs.node_present = usable;
	d->ports = calloc(1, sizeof(*d->ports));
	if (!d->ports)
		abort();
	d->n_ports = 1;
	d->ports[0].num = 1;
	d->ports[0].state = active ? 4 : 1;
	d->ports[0].has_umad = true;
	snprintf(d->ports[0].umad.name, sizeof(d->ports[0].umad.name), "umad%zu",
		 f->node.n_devices);
	f->node.n_devices++;
	return d;
}

static inline void fake_free(struct fake_node *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->node.n_devices; i++)
		free(f->node.devices[i].ports);
	free(f->node.devices);
	free(f);
}

/*
 * A DGX-like node: 8 IB HCAs, pairs behind 4 PCIe switches, 2 switches per NUMA node,
 * plus one RoCE NIC per NUMA node directly on a root port; the last one's port is DOWN.
 * Same layout as the dgx fixture of mksysfs.py.
 */
static inline struct fake_node *fake_dgx(void)
{
	static const struct {
		const char *name, *pci, *path;
		int numa;
		bool active;
	} devs[] = {
	    {"mlx5_0", "0000:1a:00.0",
	     "devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1a:00.0", 0, true},
	    {"mlx5_1", "0000:1b:00.0",
	     "devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0", 0, true},
	    {"mlx5_2", "0000:3b:00.0",
	     "devices/pci0000:38/0000:38:01.0/0000:39:00.0/0000:3a:00.0/0000:3b:00.0", 0, true},
	    {"mlx5_3", "0000:3c:00.0",
	     "devices/pci0000:38/0000:38:01.0/0000:39:00.0/0000:3a:01.0/0000:3c:00.0", 0, true},
	    {"mlx5_8", "0000:5e:00.0", "devices/pci0000:5d/0000:5d:00.0/0000:5e:00.0", 0, true},
	    {"mlx5_4", "0000:9a:00.0",
	     "devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0", 1, true},
	    {"mlx5_5", "0000:9b:00.0",
	     "devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:01.0/0000:9b:00.0", 1, true},
	    {"mlx5_6", "0000:ba:00.0",
	     "devices/pci0000:b7/0000:b7:01.0/0000:b8:00.0/0000:b9:00.0/0000:ba:00.0", 1, true},
	    {"mlx5_7", "0000:bb:00.0",
	     "devices/pci0000:b7/0000:b7:01.0/0000:b8:00.0/0000:b9:01.0/0000:bb:00.0", 1, true},
	    {"mlx5_9", "0000:d8:00.0", "devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0", 1, false},
	};
	struct fake_node *f = fake_new(ELEMENTSOF(devs));

	for (size_t i = 0; i < ELEMENTSOF(devs); i++) {
		struct disc_device *d = fake_add(f, devs[i].name, devs[i].pci, devs[i].path,
						 devs[i].numa, true, devs[i].active);

		/* mlx5_8 and mlx5_9 are the RoCE functions. */
		snprintf(d->ports[0].link_layer, sizeof(d->ports[0].link_layer), "%s",
			 strcmp(d->name, "mlx5_8") && strcmp(d->name, "mlx5_9") ? "InfiniBand"
										: "Ethernet");
	}
	return f;
}

static inline struct dp_table *table_of(const struct disc_node *node, unsigned shared,
					unsigned strategies)
{
	struct dp_table_options o = {
	    .dev_root = "/host/dev", .shared = shared, .strategies = strategies};
	struct dp_table *t = NULL;

	if (dp_table_build(node, NULL, &o, &t) < 0)
		abort();
	return t;
}

static inline bool ids_unique_and_short(const struct dp_table *t)
{
	for (size_t i = 0; i < t->n_ids; i++) {
		if (strlen(t->ids[i].id) == 0 || strlen(t->ids[i].id) > DP_ID_MAX)
			return false;
		for (size_t j = i + 1; j < t->n_ids; j++)
			if (strcmp(t->ids[i].id, t->ids[j].id) == 0)
				return false;
	}
	return true;
}
