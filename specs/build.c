/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device model -> CDI spec tree.
 *
 * Layout of what we emit (cdi-facts.md): per-device edits carry that HCA's uverbs node
 * (and umad/issm with --with-mad); spec-level edits carry what every RDMA container needs
 * once: the rdma_cm node and the createRuntime hook that raises RLIMIT_MEMLOCK. A device
 * of a pool with `netns: move` also carries its own createRuntime hook that moves it into
 * the container's network namespace: CDI merges each injected device's hooks, so a
 * container given two devices runs two moves, one per device.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "specs.h"

#define CONTAINER_DEV_DIR "/dev/infiniband"

char *spec_qualified_name(const char *kind, const char *device)
{
	return strdup_printf("%s=%s", kind, device);
}

/* Appends one deviceNodes entry for a char device, or returns -ENOMEM. */
static int add_node(cJSON *nodes, const char *dev_root, const struct disc_chardev *cd)
{
	_cleanup_free_ char *path = NULL, *host = NULL;
	cJSON *n;

	path = strdup_printf(CONTAINER_DEV_DIR "/%s", cd->name);
	host = strdup_printf("%s/infiniband/%s", dev_root, cd->name);
	if (!path || !host)
		return -ENOMEM;
	n = cJSON_CreateObject();
	if (!n || !cJSON_AddItemToArray(nodes, n))
		return cJSON_Delete(n), -ENOMEM;
	if (!cJSON_AddStringToObject(n, "path", path) ||
	    !cJSON_AddStringToObject(n, "hostPath", host) ||
	    !cJSON_AddStringToObject(n, "type", "c") ||
	    !cJSON_AddNumberToObject(n, "major", cd->major) ||
	    !cJSON_AddNumberToObject(n, "minor", cd->minor) ||
	    /* No "m": a container has no business creating device nodes. */
	    !cJSON_AddStringToObject(n, "permissions", "rw"))
		return -ENOMEM;
	return 0;
}

/* The nodes one RDMA device brings into a container. */
static int add_device_nodes(cJSON *nodes, const struct disc_device *dev,
			    const struct spec_options *opts, const char *dev_root)
{
	int r = add_node(nodes, dev_root, &dev->uverbs);

	if (r < 0 || !opts->with_mad)
		return r;
	for (size_t i = 0; i < dev->n_ports; i++) {
		const struct disc_port *p = &dev->ports[i];

		if (p->has_umad && (r = add_node(nodes, dev_root, &p->umad)) < 0)
			return r;
		if (p->has_issm && (r = add_node(nodes, dev_root, &p->issm)) < 0)
			return r;
	}
	return 0;
}

/* Appends to edits' hooks (created when missing) one createRuntime hook running the
 * hook binary with args[0] SPEC_HOOK_ARG0 and arg; -ENOMEM. */
static int add_hook(cJSON *edits, const struct spec_options *opts, const char *arg)
{
	const char *hook = opts->hook_path ? opts->hook_path : RDMA_CDI_HOOK_PATH;
	cJSON *hooks = cJSON_GetObjectItemCaseSensitive(edits, "hooks"), *h, *args;

	if (!hooks)
		hooks = cJSON_AddArrayToObject(edits, "hooks");
	h = cJSON_CreateObject();
	if (!hooks || !h || !cJSON_AddItemToArray(hooks, h))
		return cJSON_Delete(h), -ENOMEM;
	/* createRuntime: the only hook stage whose pid is the container's init as seen from
	 * the host with both runc and crun (cdi-facts.md). */
	if (!cJSON_AddStringToObject(h, "hookName", "createRuntime") ||
	    !cJSON_AddStringToObject(h, "path", hook))
		return -ENOMEM;
	args = cJSON_AddArrayToObject(h, "args");
	if (!args || !cJSON_AddItemToArray(args, cJSON_CreateString(SPEC_HOOK_ARG0)) ||
	    !cJSON_AddItemToArray(args, cJSON_CreateString(arg)))
		return -ENOMEM;
	return 0;
}

/* A RoCE device's netdev must be in the namespace too, which the hook checks. */
int spec_add_netns_hook(cJSON *edits, const struct disc_device *dev,
			const struct spec_options *opts)
{
	_cleanup_free_ char *arg = NULL;
	bool roce = dev->n_ports > 0 && strcmp(dev->ports[0].link_layer, "Ethernet") == 0;

	arg = strdup_printf("--netns-move%s=%s", roce ? "-roce" : "", dev->name);
	if (!arg)
		return -ENOMEM;
	return add_hook(edits, opts, arg);
}

static bool moves_netns(const struct spec_options *opts, size_t i)
{
	return opts->netns_move || (opts->netns_move_of && opts->netns_move_of[i]);
}

cJSON *spec_new(const char *kind, cJSON **ret_devices)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = cJSON_CreateObject();

	/* Placeholder first, so cdiVersion leads the file: spec_set_version() fills it. */
	if (!spec || !cJSON_AddStringToObject(spec, "cdiVersion", "") ||
	    !cJSON_AddStringToObject(spec, "kind", kind))
		return NULL;
	*ret_devices = cJSON_AddArrayToObject(spec, "devices");
	return *ret_devices ? TAKE_PTR(spec) : NULL;
}

cJSON *spec_new_device(cJSON *devices, const char *name)
{
	cJSON *d = cJSON_CreateObject();

	if (!d || !cJSON_AddItemToArray(devices, d))
		return cJSON_Delete(d), NULL;
	if (!cJSON_AddStringToObject(d, "name", name))
		return NULL;
	return cJSON_AddObjectToObject(d, "containerEdits");
}

int spec_set_version(cJSON *spec)
{
	cJSON *version = cJSON_GetObjectItemCaseSensitive(spec, "cdiVersion");

	if (!cJSON_IsString(version))
		return -EINVAL;
	return cJSON_SetValuestring(version, cdi_min_version(spec)) ? 0 : -ENOMEM;
}

/* A new device entry: its deviceNodes array (in *ret_nodes) and its edits. */
static cJSON *new_device(cJSON *devices, const char *name, cJSON **ret_nodes)
{
	cJSON *edits = spec_new_device(devices, name);

	if (!edits)
		return NULL;
	*ret_nodes = cJSON_AddArrayToObject(edits, "deviceNodes");
	return *ret_nodes ? edits : NULL;
}

/*
 * A kernel name that could be mistaken for one of our aliases ("all", an index) or that
 * CDI rejects cannot become a device name.
 */
static bool rdma_name_is_cdi_safe(const char *name)
{
	if (!cdi_device_name_is_valid(name) || strcmp(name, SPEC_ALL_DEVICE) == 0)
		return false;
	return name[strspn(name, "0123456789")] != '\0';
}

static int add_spec_edits(cJSON *spec, const struct disc_node *node,
			  const struct spec_options *opts, const char *dev_root)
{
	const char *memlock = opts->memlock ? opts->memlock : "unlimited";
	_cleanup_free_ char *memlock_arg = strdup_printf("--memlock=%s", memlock);
	cJSON *edits;
	int r;

	if (!memlock_arg)
		return -ENOMEM;
	edits = cJSON_AddObjectToObject(spec, "containerEdits");
	if (!edits)
		return -ENOMEM;
	if (node->has_rdma_cm) {
		cJSON *nodes = cJSON_AddArrayToObject(edits, "deviceNodes");

		if (!nodes)
			return -ENOMEM;
		r = add_node(nodes, dev_root, &node->rdma_cm);
		if (r < 0)
			return r;
	}
	return add_hook(edits, opts, memlock_arg);
}

void spec_device_id(const struct disc_node *node, size_t i, char buf[static SPEC_ID_MAX + 1])
{
	const struct disc_device *dev = &node->devices[i];
	int n;

	if (dev->pci[0] == '\0')
		n = snprintf(buf, SPEC_ID_MAX + 1, "%s", dev->name);
	else if (!disc_device_shares_function(node, i))
		n = snprintf(buf, SPEC_ID_MAX + 1, "%s", dev->pci);
	else
		n = snprintf(buf, SPEC_ID_MAX + 1, "%s-%s", dev->pci, dev->name);
	if (n >= 0 && n <= SPEC_ID_MAX)
		return;
	/* Too long: a hash keeps it unique and deterministic. */
	snprintf(buf, SPEC_ID_MAX + 1, "%.*s%sx%08x", SPEC_ID_MAX - 16, dev->pci,
		 dev->pci[0] ? "-" : "",
		 (unsigned)fnv1a64(dev->name, strlen(dev->name), FNV1A64_INIT));
}

struct id_entry {
	const char *id;
	size_t dev; /* index into node->devices */
};

static int cmp_id_entry(const void *a, const void *b)
{
	const struct id_entry *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	return c ? c : (x->dev > y->dev) - (x->dev < y->dev);
}

/*
 * The device ID of each device the spec gets, or "" where the spec gets no ID device: the
 * ID is the RDMA name itself (no PCI address), is no safe CDI name, or (hostile names
 * only) equals an RDMA name in the spec or an earlier device's ID. Indexed like
 * node->devices; NULL on OOM.
 */
static char (*spec_ids(const struct disc_node *node, const bool *emit))[SPEC_ID_MAX + 1]
{
	char(*ids)[SPEC_ID_MAX + 1] = calloc(node->n_devices ? node->n_devices : 1, sizeof(*ids));
	_cleanup_free_ const char **names = NULL;
	_cleanup_free_ struct id_entry *byid = NULL;
	size_t n_names = 0, n_ids = 0;

	names = calloc(node->n_devices ? node->n_devices : 1, sizeof(*names));
	byid = calloc(node->n_devices ? node->n_devices : 1, sizeof(*byid));
	if (!ids || !names || !byid) {
		free(ids);
		return NULL;
	}
	for (size_t i = 0; i < node->n_devices; i++) {
		if (!emit[i])
			continue;
		names[n_names++] = node->devices[i].name;
		spec_device_id(node, i, ids[i]);
		if (strcmp(ids[i], node->devices[i].name) == 0 || !rdma_name_is_cdi_safe(ids[i]))
			ids[i][0] = '\0';
		else
			byid[n_ids++] = (struct id_entry){.id = ids[i], .dev = i};
	}
	/* O(n log n): a 2,000-device node must not cost 4 million comparisons per rescan. */
	qsort(names, n_names, sizeof(*names), cmp_strp);
	qsort(byid, n_ids, sizeof(*byid), cmp_id_entry);
	for (size_t k = 0; k < n_ids; k++) {
		const char *id = byid[k].id;

		if ((k > 0 && strcmp(byid[k - 1].id, id) == 0) ||
		    bsearch(&id, names, n_names, sizeof(*names), cmp_strp))
			ids[byid[k].dev][0] = '\0';
	}
	return ids;
}

static int add_device(cJSON *devices, const char *name, const struct disc_device *dev,
		      bool move, const struct spec_options *opts, const char *dev_root)
{
	cJSON *nodes, *edits = new_device(devices, name, &nodes);
	int r;

	if (!edits)
		return -ENOMEM;
	r = add_device_nodes(nodes, dev, opts, dev_root);
	if (r >= 0 && move)
		r = spec_add_netns_hook(edits, dev, opts);
	return r;
}

/* Each emitted device by its RDMA name, its ID and its index, then "all". -ENODEV when
 * none is emitted. */
static int add_devices(cJSON *devices, const struct disc_node *node, const bool *emit,
		       char (*ids)[SPEC_ID_MAX + 1], const struct spec_options *opts,
		       const char *dev_root)
{
	cJSON *all_nodes, *all_edits;
	size_t index = 0;
	int r;

	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *dev = &node->devices[i];
		bool move = moves_netns(opts, i);
		char index_name[32];

		if (!emit[i])
			continue;
		r = add_device(devices, dev->name, dev, move, opts, dev_root);
		if (r >= 0 && ids[i][0])
			r = add_device(devices, ids[i], dev, move, opts, dev_root);
		/* The index alias: a convenience for podman users, not stable across hotplug. */
		snprintf(index_name, sizeof(index_name), "%zu", index++);
		if (r >= 0)
			r = add_device(devices, index_name, dev, move, opts, dev_root);
		if (r < 0)
			return r;
	}
	if (index == 0)
		return -ENODEV;

	all_edits = new_device(devices, SPEC_ALL_DEVICE, &all_nodes);
	if (!all_edits)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_devices; i++) {
		if (!emit[i])
			continue;
		r = add_device_nodes(all_nodes, &node->devices[i], opts, dev_root);
		if (r >= 0 && moves_netns(opts, i))
			r = spec_add_netns_hook(all_edits, &node->devices[i], opts);
		if (r < 0)
			return r;
	}
	return 0;
}

int spec_build(const struct disc_node *node, const struct spec_options *opts, cJSON **ret_spec)
{
	const char *kind = opts->kind ? opts->kind : SPEC_DEFAULT_KIND;
	const char *dev_root = opts->dev_root ? opts->dev_root : "/dev";
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_free_ char(*ids)[SPEC_ID_MAX + 1] = NULL;
	_cleanup_free_ bool *emit = NULL;
	cJSON *devices;
	int r;

	if (!cdi_kind_is_valid(kind))
		return -EINVAL;
	if (dev_root[0] != '/')
		return -EINVAL;

	emit = calloc(node->n_devices ? node->n_devices : 1, sizeof(*emit));
	if (!emit)
		return -ENOMEM;
	for (size_t i = 0; i < node->n_devices; i++)
		emit[i] = disc_device_usable(&node->devices[i]) &&
			  rdma_name_is_cdi_safe(node->devices[i].name);
	ids = spec_ids(node, emit);
	if (!ids)
		return -ENOMEM;

	spec = spec_new(kind, &devices);
	if (!spec)
		return -ENOMEM;

	r = add_devices(devices, node, emit, ids, opts, dev_root);
	if (r < 0)
		return r;

	r = add_spec_edits(spec, node, opts, dev_root);
	if (r < 0)
		return r;

	r = spec_set_version(spec);
	if (r < 0)
		return r;
	r = cdi_spec_validate(spec, NULL);
	if (r < 0)
		return r;
	*ret_spec = TAKE_PTR(spec);
	return 0;
}

bool spec_is_ours(const cJSON *spec, const char *kind)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(spec, "kind");
	const cJSON *edits = cJSON_GetObjectItemCaseSensitive(spec, "containerEdits");
	const cJSON *hooks = cJSON_GetObjectItemCaseSensitive(edits, "hooks");
	const cJSON *h;

	if (!cJSON_IsString(k) || strcmp(k->valuestring, kind) != 0)
		return false;
	cJSON_ArrayForEach (h, hooks) {
		const cJSON *args = cJSON_GetObjectItemCaseSensitive(h, "args");
		const cJSON *arg0 = cJSON_GetArrayItem(args, 0);

		if (cJSON_IsString(arg0) && strcmp(arg0->valuestring, SPEC_HOOK_ARG0) == 0)
			return true;
	}
	return false;
}
