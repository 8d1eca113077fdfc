/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device model: queries and the stable JSON form of `rdma-cdi discover --json`
 * (docs/discover-json.md). Bump DISC_JSON_VERSION on any incompatible change.
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "discovery-internal.h"
#include "discovery.h"

#define DISC_JSON_VERSION 1

void disc_node_free(struct disc_node *node)
{
	if (!node)
		return;
	for (size_t i = 0; i < node->n_devices; i++)
		free(node->devices[i].ports);
	free(node->devices);
	for (size_t i = 0; i < node->n_problems; i++)
		free(node->problems[i]);
	free(node->problems);
	free(node);
}

bool disc_device_usable(const struct disc_device *dev)
{
	return dev && dev->has_uverbs;
}

bool disc_device_healthy(const struct disc_device *dev)
{
	if (!disc_device_usable(dev) || !dev->uverbs.node_present)
		return false;
	for (size_t i = 0; i < dev->n_ports; i++)
		if (dev->ports[i].state == 4)
			return true;
	return false;
}

size_t disc_node_count_usable(const struct disc_node *node)
{
	size_t n = 0;

	for (size_t i = 0; node && i < node->n_devices; i++)
		n += disc_device_usable(&node->devices[i]);
	return n;
}

const struct disc_device *disc_node_find(const struct disc_node *node, const char *name)
{
	for (size_t i = 0; node && name && i < node->n_devices; i++)
		if (!strcmp(node->devices[i].name, name))
			return &node->devices[i];
	return NULL;
}

/* ---- JSON ------------------------------------------------------------------------- */

/* Each helper returns false on OOM; the caller drops the whole tree. */
static bool add_str_or_null(cJSON *o, const char *key, const char *v)
{
	return v && v[0] ? cJSON_AddStringToObject(o, key, v) != NULL
			 : cJSON_AddNullToObject(o, key) != NULL;
}

static bool add_int_or_null(cJSON *o, const char *key, long v, bool known)
{
	return known ? cJSON_AddNumberToObject(o, key, (double)v) != NULL
		     : cJSON_AddNullToObject(o, key) != NULL;
}

static bool add_hex_id(cJSON *o, const char *key, unsigned v)
{
	char buf[8];

	if (!v)
		return cJSON_AddNullToObject(o, key) != NULL;
	snprintf(buf, sizeof(buf), "0x%04x", v & 0xffff);
	return cJSON_AddStringToObject(o, key, buf) != NULL;
}

static bool add_chardev(cJSON *o, const char *key, const struct disc_chardev *c, bool has)
{
	cJSON *j;

	if (!has)
		return cJSON_AddNullToObject(o, key) != NULL;
	j = cJSON_AddObjectToObject(o, key);
	return j && cJSON_AddStringToObject(j, "name", c->name) &&
	       cJSON_AddNumberToObject(j, "major", c->major) &&
	       cJSON_AddNumberToObject(j, "minor", c->minor) &&
	       cJSON_AddBoolToObject(j, "present", c->node_present);
}

static bool add_port(cJSON *arr, const struct disc_port *p)
{
	cJSON *j = cJSON_CreateObject();

	if (!j || !cJSON_AddItemToArray(arr, j)) {
		cJSON_Delete(j);
		return false;
	}
	return cJSON_AddNumberToObject(j, "port", p->num) &&
	       add_str_or_null(j, "link_layer", p->link_layer) &&
	       add_str_or_null(j, "state", p->state >= 0 ? p->state_name : NULL) &&
	       add_int_or_null(j, "state_id", p->state, p->state >= 0) &&
	       add_str_or_null(j, "phys_state", p->phys_state >= 0 ? p->phys_state_name : NULL) &&
	       add_int_or_null(j, "phys_state_id", p->phys_state, p->phys_state >= 0) &&
	       add_str_or_null(j, "rate", p->rate) && add_str_or_null(j, "netdev", p->netdev) &&
	       add_chardev(j, "umad", &p->umad, p->has_umad) &&
	       add_chardev(j, "issm", &p->issm, p->has_issm);
}

static bool add_device(cJSON *arr, size_t index, long cdi_index, const struct disc_device *d)
{
	cJSON *j = cJSON_CreateObject(), *ports;

	if (!j || !cJSON_AddItemToArray(arr, j)) {
		cJSON_Delete(j);
		return false;
	}
	if (!(cJSON_AddNumberToObject(j, "index", (double)index) &&
	      add_int_or_null(j, "cdi_index", cdi_index, cdi_index >= 0) &&
	      cJSON_AddStringToObject(j, "name", d->name) && add_str_or_null(j, "pci", d->pci) &&
	      add_str_or_null(j, "dev_path", d->dev_path) &&
	      add_hex_id(j, "vendor_id", d->vendor_id) &&
	      add_hex_id(j, "device_id", d->device_id) && add_str_or_null(j, "driver", d->driver) &&
	      add_int_or_null(j, "numa_node", d->numa_node, d->numa_node >= 0) &&
	      cJSON_AddBoolToObject(j, "pf", d->pci[0] && !d->is_vf) &&
	      cJSON_AddBoolToObject(j, "vf", d->is_vf) &&
	      add_str_or_null(j, "vf_of", d->is_vf ? d->pf_pci : NULL) &&
	      add_str_or_null(j, "node_guid", d->node_guid) &&
	      add_str_or_null(j, "node_type", d->node_type) &&
	      add_str_or_null(j, "fw_ver", d->fw_ver) &&
	      cJSON_AddBoolToObject(j, "usable", disc_device_usable(d)) &&
	      cJSON_AddBoolToObject(j, "healthy", disc_device_healthy(d)) &&
	      add_chardev(j, "uverbs", &d->uverbs, d->has_uverbs)))
		return false;
	ports = cJSON_AddArrayToObject(j, "ports");
	if (!ports)
		return false;
	for (size_t i = 0; i < d->n_ports; i++)
		if (!add_port(ports, &d->ports[i]))
			return false;
	return true;
}

cJSON *disc_node_to_json(const struct disc_node *node)
{
	cJSON *root = cJSON_CreateObject(), *devs, *probs;

	if (!root)
		return NULL;
	if (!cJSON_AddNumberToObject(root, "version", DISC_JSON_VERSION))
		goto oom;
	devs = cJSON_AddArrayToObject(root, "devices");
	if (!devs)
		goto oom;
	for (size_t i = 0, usable = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		long cdi_index = disc_device_usable(d) ? (long)usable++ : -1;

		if (!add_device(devs, i, cdi_index, d))
			goto oom;
	}
	if (!add_chardev(root, "rdma_cm", &node->rdma_cm, node->has_rdma_cm))
		goto oom;
	probs = cJSON_AddArrayToObject(root, "problems");
	if (!probs)
		goto oom;
	for (size_t i = 0; i < node->n_problems; i++) {
		cJSON *s = cJSON_CreateString(node->problems[i]);

		if (!s || !cJSON_AddItemToArray(probs, s)) {
			cJSON_Delete(s);
			goto oom;
		}
	}
	return root;
oom:
	cJSON_Delete(root);
	return NULL;
}
