/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device model: queries and the stable JSON form of `rdma-cdi discover --json`
 * (docs/discover-json.md). Bump DISC_JSON_VERSION on any incompatible change.
 */
#include <stdarg.h>
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
	disc_scan_state_free(node->scan_state);
	free(node);
}

static void *memdup(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

static struct disc_scan_state *scan_state_copy(const struct disc_scan_state *st)
{
	struct disc_scan_state *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->class_len = st->class_len;
	c->net_len = st->net_len;
	c->class_names = st->class_names ? memdup(st->class_names, st->class_len) : NULL;
	c->net_names = st->net_names ? memdup(st->net_names, st->net_len) : NULL;
	c->verbs_len = st->verbs_len;
	c->verbs_names = st->verbs_names ? memdup(st->verbs_names, st->verbs_len) : NULL;
	if ((st->class_names && !c->class_names) || (st->net_names && !c->net_names) ||
	    (st->verbs_names && !c->verbs_names)) {
		disc_scan_state_free(c);
		return NULL;
	}
	return c;
}

struct disc_node *disc_node_copy(const struct disc_node *node)
{
	struct disc_node *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->has_rdma_cm = node->has_rdma_cm;
	c->rdma_cm = node->rdma_cm;
	c->devices = memdup(node->devices, node->n_devices * sizeof(*node->devices));
	if (!c->devices)
		goto oom;
	/* Until each device owns its copy of the ports, free nothing of the original's. */
	for (size_t i = 0; i < node->n_devices; i++)
		c->devices[i].ports = NULL;
	c->n_devices = node->n_devices;
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];

		if (!d->n_ports)
			continue;
		c->devices[i].ports = memdup(d->ports, d->n_ports * sizeof(*d->ports));
		if (!c->devices[i].ports)
			goto oom;
	}
	c->problems = calloc(node->n_problems + 1, sizeof(*c->problems));
	if (!c->problems)
		goto oom;
	for (; c->n_problems < node->n_problems; c->n_problems++) {
		c->problems[c->n_problems] = strdup(node->problems[c->n_problems]);
		if (!c->problems[c->n_problems])
			goto oom;
	}
	if (node->scan_state) {
		c->scan_state = scan_state_copy(node->scan_state);
		if (!c->scan_state)
			goto oom;
	}
	return c;
oom:
	disc_node_free(c);
	return NULL;
}

const struct disc_device *disc_node_find_same(const struct disc_node *node,
					      const struct disc_device *dev)
{
	for (size_t i = 0; node && i < node->n_devices; i++)
		if (!strcmp(node->devices[i].name, dev->name) &&
		    !strcmp(node->devices[i].pci, dev->pci))
			return &node->devices[i];
	return NULL;
}

int disc_node_carry_lent(struct disc_node *node, const struct disc_node *prev)
{
	for (size_t i = 0; node && i < node->n_devices; i++) {
		struct disc_device *d = &node->devices[i];
		const struct disc_device *o;

		if (!d->lent || d->n_ports > 0)
			continue;
		o = disc_node_find_same(prev, d);
		if (!o)
			continue;
		if (o->n_ports) {
			d->ports = memdup(o->ports, o->n_ports * sizeof(*o->ports));
			if (!d->ports)
				return -ENOMEM;
			d->n_ports = o->n_ports;
		}
		strcpy(d->node_guid, o->node_guid);
		strcpy(d->fw_ver, o->fw_ver);
		strcpy(d->node_type, o->node_type);
	}
	return 0;
}

/* ---- comparing ---------------------------------------------------------------------- */

static bool chardev_equal(const struct disc_chardev *a, const struct disc_chardev *b)
{
	return !strcmp(a->name, b->name) && a->major == b->major && a->minor == b->minor &&
	       a->node_present == b->node_present;
}

static bool port_equal(const struct disc_port *a, const struct disc_port *b)
{
	return a->num == b->num && !strcmp(a->link_layer, b->link_layer) && a->state == b->state &&
	       !strcmp(a->state_name, b->state_name) && a->phys_state == b->phys_state &&
	       !strcmp(a->phys_state_name, b->phys_state_name) && !strcmp(a->rate, b->rate) &&
	       !strcmp(a->netdev, b->netdev) && a->has_umad == b->has_umad &&
	       a->has_issm == b->has_issm && (!a->has_umad || chardev_equal(&a->umad, &b->umad)) &&
	       (!a->has_issm || chardev_equal(&a->issm, &b->issm));
}

/* Field by field (not memcmp: padding and bytes after a string's NUL are not data).
 * A field added to struct disc_device or disc_port belongs here too. */
static bool device_equal(const struct disc_device *a, const struct disc_device *b)
{
	if (strcmp(a->name, b->name) || strcmp(a->pci, b->pci) ||
	    strcmp(a->dev_path, b->dev_path) || strcmp(a->ibdev_path, b->ibdev_path) ||
	    a->vendor_id != b->vendor_id || a->device_id != b->device_id ||
	    strcmp(a->driver, b->driver) || a->numa_node != b->numa_node || a->is_vf != b->is_vf ||
	    strcmp(a->pf_pci, b->pf_pci) || strcmp(a->pf_netdev, b->pf_netdev) ||
	    strcmp(a->node_guid, b->node_guid) || strcmp(a->fw_ver, b->fw_ver) ||
	    strcmp(a->node_type, b->node_type) || a->n_ports != b->n_ports ||
	    a->has_uverbs != b->has_uverbs || a->lent != b->lent ||
	    (a->has_uverbs && !chardev_equal(&a->uverbs, &b->uverbs)))
		return false;
	for (size_t i = 0; i < a->n_ports; i++)
		if (!port_equal(&a->ports[i], &b->ports[i]))
			return false;
	return true;
}

bool disc_node_equal(const struct disc_node *a, const struct disc_node *b)
{
	if (!a || !b)
		return a == b;
	if (a->n_devices != b->n_devices || a->has_rdma_cm != b->has_rdma_cm ||
	    (a->has_rdma_cm && !chardev_equal(&a->rdma_cm, &b->rdma_cm)))
		return false;
	for (size_t i = 0; i < a->n_devices; i++)
		if (!device_equal(&a->devices[i], &b->devices[i]))
			return false;
	return true;
}

bool disc_device_usable(const struct disc_device *dev)
{
	return dev && dev->has_uverbs;
}

bool disc_device_shares_function(const struct disc_node *node, size_t i)
{
	const char *pci = node->devices[i].pci;

	if (pci[0] == '\0')
		return false;
	/* Devices are sorted by PCI address: siblings are adjacent. */
	for (size_t j = i; j-- > 0 && strcmp(node->devices[j].pci, pci) == 0;)
		if (disc_device_usable(&node->devices[j]))
			return true;
	for (size_t j = i + 1; j < node->n_devices && strcmp(node->devices[j].pci, pci) == 0; j++)
		if (disc_device_usable(&node->devices[j]))
			return true;
	return false;
}

bool disc_device_healthy(const struct disc_device *dev)
{
	if (!disc_device_usable(dev) || !dev->uverbs.node_present)
		return false;
	for (size_t i = 0; i < dev->n_ports; i++)
		if (dev->ports[i].state == DISC_PORT_ACTIVE)
			return true;
	return false;
}

/* Appends to buf like snprintf at its end; marks a cut with "...". */
static void reason_add(char *buf, size_t len, const char *fmt, ...) _printf_(3, 4);
static void reason_add(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	int n;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= len - used && len >= 4)
		memcpy(buf + len - 4, "...", 4);
}

static const char *port_state_shown(const struct disc_port *p)
{
	return p->state >= 0 && p->state_name[0] ? p->state_name : "state unknown";
}

int disc_device_health_reason(const struct disc_device *dev, char *buf, size_t len)
{
	const char *sep = "";

	if (!buf || !len)
		return -EINVAL;
	buf[0] = '\0';
	if (!dev) {
		reason_add(buf, len, "no device");
		return 1;
	}
	if (disc_device_healthy(dev))
		return 0;
	if (dev->lent) {
		/* Its ports are not known here: saying "no ports" would mislead. */
		reason_add(buf, len, "%s", DISC_LENT_REASON);
		sep = "; ";
	}
	if (!disc_device_usable(dev)) {
		reason_add(buf, len, "no uverbs device");
		sep = "; ";
	} else if (!dev->uverbs.node_present) {
		reason_add(buf, len, "uverbs node missing");
		sep = "; ";
	}
	if (dev->n_ports == 0) {
		if (!dev->lent)
			reason_add(buf, len, "%sno ports", sep);
	} else if (dev->n_ports == 1) {
		if (dev->ports[0].state != DISC_PORT_ACTIVE)
			reason_add(buf, len, "%sport %u %s", sep, dev->ports[0].num,
				   port_state_shown(&dev->ports[0]));
	} else {
		bool active = false;

		for (size_t i = 0; i < dev->n_ports; i++)
			active = active || dev->ports[i].state == 4;
		if (!active) {
			reason_add(buf, len, "%sno ACTIVE port:", sep);
			for (size_t i = 0; i < dev->n_ports; i++)
				reason_add(buf, len, "%s port %u %s", i ? "," : "",
					   dev->ports[i].num, port_state_shown(&dev->ports[i]));
		}
	}
	return 1;
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
	/* sysfs bytes that are not UTF-8 (a firmware string, a link target) would make the
	 * whole document invalid JSON: such a value is shown escaped (\xNN). */
	char buf[DISC_PATH_MAX * 4];

	if (v && v[0] && !text_is_utf8(v, strlen(v))) {
		text_escape(buf, sizeof(buf), v, strlen(v), false);
		v = buf;
	}
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
	      add_str_or_null(j, "pf_netdev", d->is_vf ? d->pf_netdev : NULL) &&
	      add_str_or_null(j, "node_guid", d->node_guid) &&
	      add_str_or_null(j, "node_type", d->node_type) &&
	      add_str_or_null(j, "fw_ver", d->fw_ver) &&
	      cJSON_AddBoolToObject(j, "usable", disc_device_usable(d)) &&
	      cJSON_AddBoolToObject(j, "healthy", disc_device_healthy(d)) &&
	      cJSON_AddBoolToObject(j, "lent", d->lent) &&
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
