/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge_run(): the daemon of `rdma-cdi bridge`, on one sd-event loop.
 *
 * It owns the spec file, runs on the daemon core it shares with the DRA driver (daemon.h:
 * the loop, signals, scans, the config in force and its reload, the spec keeper, the
 * lifecycle), and wires the parts together:
 *   - the Sysfs Watcher (discovery/follow.h) hands it every new scan: hotplug through
 *     inotify on <dev-root>/infiniband, the periodic rescan, SIGHUP;
 *   - one plugin (plugin.h) per pool: its socket, registration and device table;
 *   - the plugin directory (libinotifytools, common/loop.h): kubelet.sock created ->
 *     register; one of our sockets deleted -> serve again and register (a kubelet
 *     restart deletes every socket there, then creates kubelet.sock);
 *   - signals (daemon.h): SIGTERM/SIGINT stop, SIGHUP rescans and resends.
 *
 * Order of a change: devices that leave, and every health change, are published first
 * (the table is built from the new scan but only with devices the spec on disk
 * defines); then the spec is written; then devices that arrive are advertised. When the
 * spec cannot be written, removals and health still reach the kubelet, the error is
 * logged with its fix, and the write is retried.
 */
#include <malloc.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "bridge.h"
#include "build-config.h"
#include "daemon.h"
#include "memory.h"
#include "plugin.h"
#include "rpc.h"

/* One pool of the config in force: one kubelet resource. */
struct pool {
	char *resource, *socket_name;
	unsigned shared; /* 0 = exclusive */
	bool nccl_env;
	struct dp_plugin *plugin;
};

struct bridge {
	const struct bridge_options *o;
	struct daemon dm; /* loop, signals, watcher, the config in force, keeper, stopping */
	struct gc_runtime *rt;
	char *plugin_dir;
	int dir_watch;
	sd_event_source *dir_poll;
	struct pool *pools;
	size_t n_pools;
	/* The names of the spec we last wrote or found up to date (NULL: none yet): the names
	 * the spec on disk defines, so the only ones we hand out. */
	struct spec_names *spec_on_disk;
};

/* ---- names ------------------------------------------------------------------------------ */

/*
 * The socket of a pool: "rdma-cdi_" + the resource name with '/' as '_' + ".sock"
 * ("rdma-cdi_rdma.example_hca.sock"). A DNS domain has no '_', so distinct resources
 * get distinct names. A name too long for a socket path ends in a hash instead.
 */
static char *pool_socket_name(const char *plugin_dir, const char *resource)
{
	struct sockaddr_un sa;
	char *name = strdup_printf("rdma-cdi_%s.sock", resource);

	if (!name)
		return NULL;
	for (char *c = name; *c; c++)
		if (*c == '/')
			*c = '_';
	if (strlen(plugin_dir) + 1 + strlen(name) >= sizeof(sa.sun_path)) {
		uint64_t h = fnv1a64(resource, strlen(resource), FNV1A64_INIT);

		free(name);
		name = strdup_printf("rdma-cdi_%016llx.sock", (unsigned long long)h);
	}
	return name;
}

/* ---- applying a scan ---------------------------------------------------------------------- */

static void publish_all(struct bridge *b, const struct disc_node *node,
			const struct spec_names *defined, const struct cfg_assignment *a, bool force)
{
	_cleanup_free_ bool *include = calloc(node->n_devices ?: 1, sizeof(bool));

	if (!include) {
		log_error("out of memory publishing the device lists");
		return;
	}
	metrics_devices_begin(b->dm.metrics);
	for (size_t i = 0; i < b->n_pools; i++) {
		struct pool *p = &b->pools[i];
		struct dp_table *t = NULL;
		size_t healthy = 0;
		int r;

		/* Until a new list goes out, the gauges show the one the kubelet has. */
		metrics_devices_keep(b->dm.metrics, p->resource);

		for (size_t d = 0; d < node->n_devices; d++)
			include[d] = a->pool_of[d] == (long)i;
		r = dp_table_build(
		    node, defined,
		    &(struct dp_table_options){
			.kind = b->dm.spec.kind,
			.dev_root = b->dm.spec.dev_root ? b->dm.spec.dev_root : b->dm.o.disc.dev_root,
			.shared = p->shared,
			.strategies = b->o->strategies,
			.with_mad = b->dm.spec.with_mad,
			.include = include,
			.nccl_env = p->nccl_env,
		    },
		    &t);
		if (r == -E2BIG) {
			size_t n = 0;

			for (size_t d = 0; d < node->n_devices; d++)
				n += include[d] && disc_device_usable(&node->devices[d]);
			log_error(
			    "%s: %zu HCAs x %u shared slots = %zu device IDs exceeds %d: the "
			    "kubelet drops a ListAndWatch message over 4 MiB; lower --shared or "
			    "sharedSlots, or split the pool. Its device list stays as it was",
			    p->resource, n, p->shared, dp_list_ids_needed(n, p->shared),
			    DP_LIST_IDS_MAX);
			continue;
		}
		if (r < 0) {
			log_error_errno(r, "%s: building the device table failed", p->resource);
			continue;
		}
		if (t->n_skipped > 0)
			log_warning("%s: %zu device(s) left out: their device ID collides with "
				    "another's",
				    p->resource, t->n_skipped);
		/* Set before the kubelet can see the list: a scrape never lags behind it. */
		for (size_t h = 0; h < t->n_hcas; h++)
			healthy += t->hcas[h].healthy;
		metrics_devices_set(b->dm.metrics, p->resource, healthy, t->n_hcas - healthy);
		r = dp_plugin_publish(p->plugin, t, force);
		if (r < 0)
			log_error_errno(r, "%s: publishing the device list failed", p->resource);
	}
	metrics_devices_end(b->dm.metrics);
}

/* What the daemon offers: the devices of the current scan whose names the spec on disk
 * defines (docs/bridge.md). */
static const struct spec_names *names_on_disk(const struct bridge *b)
{
	return b->spec_on_disk ? b->spec_on_disk : spec_names_empty();
}

/* A write succeeded: the file on disk now defines spec's names. */
static void spec_written(struct bridge *b, const cJSON *spec)
{
	spec_names_free(b->spec_on_disk);
	b->spec_on_disk = spec_names_new(spec);
	if (!b->spec_on_disk)
		log_error("out of memory keeping the names of the CDI spec: advertising no device "
			  "until the next write");
}

/*
 * A failed write leaves the previous file on disk, so its names stay the ones in force:
 * devices that left are withdrawn at once (the table is built from the new scan), devices
 * that arrived wait for a write that succeeds (the keeper retries), and one that left and
 * came back is offered again when the file on disk still defines it.
 */
static int apply(struct bridge *b, const struct disc_node *node, bool force)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	int r;

	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;

	r = daemon_assign(&b->dm, node, "the device lists stay as they were", &a);
	if (r < 0)
		return r;
	r = daemon_build_spec(&b->dm, node, a, true, &spec);
	if (r < 0 && r != -ENODEV)
		return log_error_errno(r, "building the CDI spec failed");
	if (r == -ENODEV) {
		if (!b->dm.applied || disc_node_count_usable(node) == 0)
			log_warning("no usable RDMA device found: advertising none, CDI spec left "
				    "as is");
		publish_all(b, node, names_on_disk(b), a, force);
		return 0;
	}
	/* Removals and health first, against the names the spec on disk defines; with none
	 * yet (or one the config moved), the lists wait for the write. */
	if (b->spec_on_disk)
		publish_all(b, node, b->spec_on_disk, a, false);
	if (daemon_write_spec(&b->dm, spec, disc_node_count_usable(node))) {
		spec_written(b, spec);
		cJSON_Delete(TAKE_PTR(spec)); /* the tree is megabytes: gone before the trim */
		publish_all(b, node, names_on_disk(b), a, force);
	} else {
		if (force || !b->spec_on_disk) /* else published above */
			publish_all(b, node, names_on_disk(b), a, force);
	}
	/* A rescan of a big node frees a few MiB; give them back instead of keeping them. */
	malloc_trim(0);
	return 0;
}

static int on_apply(void *userdata, const struct disc_node *node, bool changed, bool force)
{
	/* Unchanged: the steady state of a periodic rescan, nothing to build or send. */
	return changed ? apply(userdata, node, force) : 0;
}

/* ---- the plugin directory ------------------------------------------------------------------ */

static bool is_our_socket(struct bridge *b, const char *name)
{
	for (size_t i = 0; i < b->n_pools; i++)
		if (strcmp(b->pools[i].socket_name, name) == 0)
			return true;
	return false;
}

static void on_plugin_dir(void *userdata, uint32_t mask, const char *name);

static int watch_plugin_dir(struct bridge *b)
{
	int r = fswatch_add(b->dm.fw, b->plugin_dir,
			    IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF |
				IN_MOVE_SELF | IN_ONLYDIR,
			    on_plugin_dir, b);

	if (r > 0)
		b->dir_watch = r;
	return r;
}

/* The plugin dir is gone (a kubelet reinstall, an operator): look for it twice a second,
 * which only happens in this state; once it is back, serve again and register. */
static int on_dir_poll(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct bridge *b = userdata;
	struct stat st;

	if (b->dm.stopping || stat(b->plugin_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    watch_plugin_dir(b) < 0) {
		if (sd_event_source_set_time_relative(s, 500000) < 0 ||
		    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) < 0)
			log_error("re-arming the plugin dir poll failed");
		return 0;
	}
	b->dir_poll = sd_event_source_disable_unref(b->dir_poll);
	log_info("plugin directory %s is back: serving again", b->plugin_dir);
	for (size_t i = 0; i < b->n_pools; i++)
		dp_plugin_reconcile(b->pools[i].plugin, true);
	return 0;
}

static void on_plugin_dir(void *userdata, uint32_t mask, const char *name)
{
	struct bridge *b = userdata;
	bool kubelet = false;

	if (b->dm.stopping)
		return;
	if (mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
		return; /* IN_IGNORED follows */
	if (mask & IN_IGNORED) {
		log_warning("plugin directory %s went away: waiting for it to come back",
			    b->plugin_dir);
		fswatch_remove(b->dm.fw, b->dir_watch);
		b->dir_watch = 0;
		if (!b->dir_poll &&
		    sd_event_add_time_relative(b->dm.loop, &b->dir_poll, CLOCK_MONOTONIC, 500000,
					       100000, on_dir_poll, b) < 0) {
			log_error("plugin directory %s went away and cannot be waited for: "
				  "exiting so the supervisor restarts us",
				  b->plugin_dir);
			daemon_stop(&b->dm, -ENOENT);
		}
		return;
	}
	if (mask & IN_Q_OVERFLOW)
		kubelet = true;
	else if (strcmp(name, BRIDGE_KUBELET_SOCKET) == 0 && (mask & (IN_CREATE | IN_MOVED_TO)))
		kubelet = true;
	else if (!is_our_socket(b, name) || !(mask & (IN_DELETE | IN_MOVED_FROM)))
		return;
	for (size_t i = 0; i < b->n_pools; i++)
		dp_plugin_reconcile(b->pools[i].plugin, kubelet);
}

static void on_plugin_failed(void *userdata, struct dp_plugin *p, int error)
{
	struct bridge *b = userdata;

	daemon_stop(&b->dm, error);
}

/* ---- the config in force --------------------------------------------------------------- */

static void pool_clear(struct pool *p)
{
	dp_plugin_free(p->plugin);
	free(p->resource);
	free(p->socket_name);
	*p = (struct pool){0};
}

static void pools_free(struct pool *pools, size_t n)
{
	for (size_t i = 0; pools && i < n; i++)
		pool_clear(&pools[i]);
	free(pools);
}

/* The pools a config makes of the flags: each pool's resource, sharing and ncclEnv. */
static int pools_from(struct bridge *b, const struct cfg *c, struct pool **ret, size_t *ret_n,
		      struct rc_error **err)
{
	const struct bridge_options *o = b->o;
	struct pool *pools;

	if (c->pools_set && (o->resource || o->shared > 1))
		return rc_error_set(err, -EINVAL,
				    "--resource and --shared shape the default pool only; the "
				    "config defines its pools");
	pools = calloc(c->n_pools, sizeof(*pools));
	if (!pools)
		return rc_error_set(err, -ENOMEM, NULL);
	for (size_t i = 0; i < c->n_pools; i++) {
		const struct cfg_pool *cp = &c->pools[i];
		const char *res = c->pools_set	? cp->resource_name
				  : o->resource ? o->resource
						: cp->resource_name;

		pools[i].resource = strdup(res);
		pools[i].socket_name = pool_socket_name(b->plugin_dir, res);
		pools[i].shared =
		    c->pools_set ? (cp->mode == CFG_MODE_SHARED ? cp->shared_slots : 0) : o->shared;
		pools[i].nccl_env = cp->nccl_env;
		if (!pools[i].resource || !pools[i].socket_name) {
			pools_free(pools, i + 1);
			return rc_error_set(err, -ENOMEM, NULL);
		}
	}
	*ret = pools;
	*ret_n = c->n_pools;
	return 0;
}

static int plugin_for(struct bridge *b, struct pool *p)
{
	return dp_plugin_new(b->dm.loop, b->rt,
			     &(struct dp_plugin_config){
				 .plugin_dir = b->plugin_dir,
				 .socket_name = p->socket_name,
				 .resource = p->resource,
				 .failed = on_plugin_failed,
				 .userdata = b,
				 .metrics = b->dm.metrics,
			     },
			     &p->plugin);
}

static void log_pools(struct bridge *b)
{
	for (size_t i = 0; i < b->n_pools; i++)
		log_info("pool %s: %s%s, socket %s", b->pools[i].resource,
			 b->pools[i].shared > 1 ? "shared" : "exclusive",
			 b->pools[i].nccl_env ? ", ncclEnv" : "", b->pools[i].socket_name);
}

/* Moves the plugins of pools that stay into pools (their socket, registration and
 * streams carry over); the others stop serving, which unregisters them (the kubelet
 * sees the socket go). The number kept. */
static size_t carry_plugins(struct bridge *b, struct pool *pools, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < b->n_pools; j++)
			if (b->pools[j].plugin &&
			    strcmp(b->pools[j].resource, pools[i].resource) == 0) {
				pools[i].plugin = TAKE_PTR(b->pools[j].plugin);
				kept++;
			}
	for (size_t j = 0; j < b->n_pools; j++)
		if (b->pools[j].plugin)
			log_info("pool %s removed: unregistering (its socket goes)",
				 b->pools[j].resource);
	return kept;
}

/* Serves the pools that have no plugin yet: the config's new ones. The number served. */
static size_t serve_new_pools(struct bridge *b)
{
	size_t added = 0;

	for (size_t i = 0; i < b->n_pools; i++) {
		struct pool *p = &b->pools[i];
		int r;

		if (p->plugin)
			continue;
		r = plugin_for(b, p);
		if (r >= 0)
			r = dp_plugin_start(p->plugin);
		if (r < 0) {
			log_error_errno(r, "pool %s cannot be served", p->resource);
			continue;
		}
		added++;
	}
	return added;
}

/* A new valid config while running (daemon.h): the pools follow at once, the spec after. */
static int on_reconfigure(void *userdata, const struct cfg *c, bool spec_moved,
			  struct rc_error **err)
{
	struct bridge *b = userdata;
	struct pool *pools = NULL;
	size_t n = 0, kept, removed, added;
	int r;

	r = pools_from(b, c, &pools, &n, err);
	if (r < 0)
		return r;
	kept = carry_plugins(b, pools, n);
	removed = b->n_pools - kept;
	pools_free(b->pools, b->n_pools);
	b->pools = pools;
	b->n_pools = n;
	if (spec_moved) {
		/* Other names or another file: nothing of the old spec counts. */
		spec_names_free(b->spec_on_disk);
		b->spec_on_disk = NULL;
	}
	added = serve_new_pools(b);
	log_info("pools: %zu added, %zu kept, %zu removed", added, kept, removed);
	log_pools(b);
	return 0;
}

/* ---- start and stop ------------------------------------------------------------------------ */

static int setup_plugin_dir(struct bridge *b)
{
	const char *dir = b->o->plugin_dir ? b->o->plugin_dir : BRIDGE_DEFAULT_PLUGIN_DIR;
	struct sockaddr_un sa;
	int r;

	r = daemon_absolute_dir(dir, &b->plugin_dir);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return log_error_errno(r, "getcwd failed");
	if (strlen(b->plugin_dir) + sizeof("/" BRIDGE_KUBELET_SOCKET) > sizeof(sa.sun_path) ||
	    strlen(b->plugin_dir) + sizeof("/rdma-cdi_0123456789abcdef.sock") > sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "plugin directory %s: socket paths too long",
				       b->plugin_dir);
	return daemon_socket_dir("plugin directory", b->plugin_dir);
}

static int check_options(const struct bridge_options *o)
{
	const char *res = o->resource ? o->resource : BRIDGE_DEFAULT_RESOURCE;

	if (!bridge_resource_name_is_valid(res))
		return log_error_errno(-EINVAL, "invalid resource name \"%s\"", res);
	if (o->shared > BRIDGE_SHARED_MAX)
		return log_error_errno(-EINVAL, "--shared %u exceeds %d", o->shared,
				       BRIDGE_SHARED_MAX);
	if (o->strategies & ~(unsigned)(BRIDGE_STRATEGY_CDI_CRI | BRIDGE_STRATEGY_CDI_ANNOTATIONS |
					BRIDGE_STRATEGY_DEVICE_SPECS))
		return log_error_errno(-EINVAL, "invalid device list strategy mask 0x%x",
				       o->strategies);
	return 0;
}

/* The pools of the config at start, each with its plugin (not serving yet). */
static int load_pools(struct bridge *b)
{
	_cleanup_rc_error_ struct rc_error *e = NULL;
	int r;

	r = pools_from(b, b->dm.cfg, &b->pools, &b->n_pools, &e);
	if (r < 0)
		return log_error_errno(r, "config %s: %s", b->dm.cfg_path, rc_error_msg(e, r));
	for (size_t i = 0; i < b->n_pools; i++) {
		r = plugin_for(b, &b->pools[i]);
		if (r < 0)
			return log_error_errno(r, "creating the plugin failed");
	}
	log_pools(b);
	return 0;
}

/* At start, with the loop and the config (daemon.h): the plugins, not serving yet. */
static int attach(void *userdata)
{
	struct bridge *b = userdata;
	int r;

	r = setup_plugin_dir(b);
	if (r < 0)
		return r;
	r = gc_runtime_new(b->dm.mb, &b->rt);
	if (r < 0)
		return log_error_errno(r, "starting gRPC failed");
	b->dm.default_pool_name = b->o->resource;
	r = load_pools(b);
	if (r < 0)
		return r;
	/* Watch before looking at kubelet.sock, so its creation cannot slip between. */
	r = watch_plugin_dir(b);
	if (r < 0)
		return log_error_errno(r, "cannot watch %s", b->plugin_dir);
	return 0;
}

/* After the first scan: the spec is on disk before any device is advertised. */
static int serve(void *userdata)
{
	struct bridge *b = userdata;

	for (size_t i = 0; i < b->n_pools; i++) {
		int r = dp_plugin_start(b->pools[i].plugin);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Stopping (daemon.h): the plugins stop their servers (streams end, sockets go); done
 * once every gRPC instance and call is gone. */
static bool stop(void *userdata)
{
	struct bridge *b = userdata;

	for (size_t i = 0; i < b->n_pools; i++) {
		dp_plugin_free(b->pools[i].plugin);
		b->pools[i].plugin = NULL;
	}
	return !b->rt || gc_runtime_idle(b->rt);
}

static bool close_bridge(void *userdata)
{
	struct bridge *b = userdata;
	bool idle;

	pools_free(b->pools, b->n_pools);
	b->pools = NULL;
	b->n_pools = 0;
	if (b->dir_watch > 0)
		fswatch_remove(b->dm.fw, b->dir_watch);
	b->dir_watch = 0;
	idle = !b->rt || gc_runtime_idle(b->rt);
	gc_runtime_free(b->rt); /* not idle: it leaves what is alive to exit */
	if (!idle)
		return false; /* the completion-queue thread may still post */
	sd_event_source_disable_unref(b->dir_poll);
	spec_names_free(b->spec_on_disk);
	free(b->plugin_dir);
	return true;
}

int bridge_run(const struct daemon_options *d, const struct bridge_options *o)
{
	static const struct daemon_ops ops = {
	    .name = "bridge",
	    .spec_dir = SPEC_DYNAMIC_DIR,
	    .attach = attach,
	    .serve = serve,
	    .apply = on_apply,
	    .reconfigure = on_reconfigure,
	    .stop = stop,
	    .close = close_bridge,
	};
	struct bridge b = {.o = o};
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	daemon_memory_tune();
	return daemon_run(&b.dm, d, &ops, &b);
}
