/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bridge_run(): the daemon of `rdma-cdi bridge`, on one sd-event loop.
 *
 * It owns the spec file and the lifecycle, and wires the parts together:
 *   - the Sysfs Watcher (discovery/follow.h) hands it every new scan: hotplug through
 *     inotify on <dev-root>/infiniband, the periodic rescan, SIGHUP;
 *   - one plugin (plugin.h) per pool: its socket, registration and device table;
 *   - the plugin directory (libinotifytools, common/loop.h): kubelet.sock created ->
 *     register; one of our sockets deleted -> serve again and register (a kubelet
 *     restart deletes every socket there, then creates kubelet.sock);
 *   - signals (sd-event signal sources): SIGTERM/SIGINT stop, SIGHUP rescans and resends.
 *
 * Order of a change: devices that leave, and every health change, are published first
 * (the table is built from the new scan but only with devices the spec on disk
 * defines); then the spec is written; then devices that arrive are advertised. When the
 * spec cannot be written, removals and health still reach the kubelet, the error is
 * logged with its fix, and the write is retried.
 */
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>

#include "build-config.h"
#include "follow.h"
#include "keeper.h"
#include "memory.h"
#include "watch.h"
#include "plugin.h"

#define EXIT_WAIT_USEC (3 * 1000000ULL) /* for server shutdowns to complete at exit */

/* One pool of the config in force: one kubelet resource. */
struct pool {
	char *resource, *socket_name;
	unsigned shared; /* 0 = exclusive */
	bool nccl_env;
	struct dp_plugin *plugin;
};

struct bridge {
	const struct bridge_options *o;
	sd_event *loop;
	struct mailbox *mb;
	struct fswatch *fw;
	struct gc_runtime *rt;
	struct disc_follow *follow;
	char *plugin_dir;
	int dir_watch;
	sd_event_source *dir_poll;
	struct pool *pools;
	size_t n_pools;
	/* The config in force and what it makes of the flags. */
	struct cfg *cfg;
	struct cfg_watch *cfg_watch;
	const char *cfg_path;
	struct spec_options spec;
	const char *spec_dir;
	bool pools_loud; /* log the pool warnings of the next scan at warning level */
	/* The spec we last wrote or found up to date: the names that resolve right now. */
	cJSON *spec_on_disk;
	struct spec_keeper *keeper;
	bool first_done, force_next, stopping;
	sd_event_source *stop_tick;
	uint64_t stop_until;
	int exit_code;
	struct dp_metrics *metrics; /* NULL without --metrics-address */
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

static void publish_all(struct bridge *b, const struct disc_node *node, const cJSON *spec,
			const struct cfg_assignment *a, bool force)
{
	_cleanup_free_ bool *include = calloc(node->n_devices ?: 1, sizeof(bool));

	if (!include) {
		log_error("out of memory publishing the device lists");
		return;
	}
	dp_metrics_devices_begin(b->metrics);
	for (size_t i = 0; i < b->n_pools; i++) {
		struct pool *p = &b->pools[i];
		struct dp_table *t = NULL;
		size_t healthy = 0;
		int r;

		/* Until a new list goes out, the gauges show the one the kubelet has. */
		dp_metrics_devices_keep(b->metrics, p->resource);

		for (size_t d = 0; d < node->n_devices; d++)
			include[d] = a->pool_of[d] == (long)i;
		r = dp_table_build(
		    node, spec,
		    &(struct dp_table_options){
			.kind = b->spec.kind,
			.dev_root = b->spec.dev_root ? b->spec.dev_root : b->o->disc.dev_root,
			.shared = p->shared,
			.strategies = b->o->strategies,
			.with_mad = b->spec.with_mad,
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
		dp_metrics_devices_set(b->metrics, p->resource, healthy, t->n_hcas - healthy);
		r = dp_plugin_publish(p->plugin, t, force);
		if (r < 0)
			log_error_errno(r, "%s: publishing the device list failed", p->resource);
	}
	dp_metrics_devices_end(b->metrics);
}

static void apply(struct bridge *b, const struct disc_node *node, bool force);
static void begin_stop(struct bridge *b, int exit_code);

static void on_spec_retry(void *userdata)
{
	struct bridge *b = userdata;

	if (!b->stopping && disc_follow_node(b->follow))
		apply(b, disc_follow_node(b->follow), false);
}

/*
 * After a failed write: the names that still resolve are those of the last good spec
 * that the new one keeps too. A device that left meanwhile does not come back into the
 * tables before a write succeeds (the file may no longer define it). NULL on OOM.
 */
static const char *device_name(const cJSON *d)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
}

/* Failure path only: quadratic in the number of names, which is fine there. */
static bool spec_defines(const cJSON *spec, const char *name)
{
	const cJSON *d;

	cJSON_ArrayForEach (d, cJSON_GetObjectItemCaseSensitive(spec, "devices"))
		if (device_name(d) && strcmp(device_name(d), name) == 0)
			return true;
	return false;
}

static cJSON *names_kept(const cJSON *old, const cJSON *new)
{
	cJSON *out = cJSON_CreateObject(), *devices;
	const cJSON *d;

	devices = out ? cJSON_AddArrayToObject(out, "devices") : NULL;
	if (!devices) {
		cJSON_Delete(out);
		return NULL;
	}
	cJSON_ArrayForEach (d, cJSON_GetObjectItemCaseSensitive(old, "devices")) {
		const char *name = device_name(d);
		cJSON *c;

		if (!name || !spec_defines(new, name))
			continue;
		c = cJSON_CreateObject();
		if (!c || !cJSON_AddStringToObject(c, "name", name)) {
			cJSON_Delete(c);
			cJSON_Delete(out);
			return NULL;
		}
		cJSON_AddItemToArray(devices, c);
	}
	return out;
}

static void apply(struct bridge *b, const struct disc_node *node, bool force)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	bool on_disk = false;
	int r;

	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	char err[512] = "";

	force |= b->force_next;
	b->force_next = false;
	r = cfg_assign(b->cfg, node, &a, err, sizeof(err));
	if (r < 0) {
		log_error("%s; the device lists stay as they were", err[0] ? err : strerror(-r));
		return;
	}
	for (size_t i = 0; i < a->n_warnings; i++) {
		if (b->pools_loud)
			log_warning("%s", a->warnings[i]);
		else
			log_debug("%s", a->warnings[i]);
	}
	b->pools_loud = false;
	r = spec_build(node, &b->spec, &spec);
	if (r < 0 && r != -ENODEV) {
		log_error_errno(r, "building the CDI spec failed");
		return;
	}
	/* Removals and health first, against the names that resolve now. */
	if (b->spec_on_disk)
		publish_all(b, node, b->spec_on_disk, a, false);
	if (r == -ENODEV) {
		if (!b->first_done || disc_node_count_usable(node) == 0)
			log_warning("no usable RDMA device found: advertising none, CDI spec left "
				    "as is");
		if (!b->spec_on_disk) {
			_cleanup_(cJSON_Deletep) cJSON *none = cJSON_CreateObject();

			if (none)
				publish_all(b, node, none, a, force);
		} else if (force) {
			publish_all(b, node, b->spec_on_disk, a, true);
		}
		b->first_done = true;
		return;
	}
	on_disk = spec_keeper_write(b->keeper, spec, disc_node_count_usable(node));
	if (!on_disk)
		dp_metrics_spec_write_failed(b->metrics);
	if (on_disk) {
		cJSON_Delete(b->spec_on_disk);
		b->spec_on_disk = spec_names_only(TAKE_PTR(spec));
		publish_all(b, node, b->spec_on_disk, a, force);
	} else if (!b->spec_on_disk) {
		_cleanup_(cJSON_Deletep) cJSON *none = cJSON_CreateObject();

		if (none)
			publish_all(b, node, none, a, force);
	} else {
		cJSON *kept = names_kept(b->spec_on_disk, spec);

		if (kept) {
			cJSON_Delete(b->spec_on_disk);
			b->spec_on_disk = kept;
		}
		if (force)
			publish_all(b, node, b->spec_on_disk, a, true);
	}
	b->first_done = true;
	/* A rescan of a big node frees a few MiB; give them back instead of keeping them. */
	malloc_trim(0);
}

static void log_change(void *userdata, enum disc_change what, const struct disc_device *d,
		       const char *reason)
{
	disc_log_change(what, d, reason);
}

static void on_scan(void *userdata, const struct disc_node *node, const struct disc_node *prev,
		    int error, enum disc_follow_reason reason)
{
	static const char *const reason_name[] = {
	    [DISC_FOLLOW_START] = "start",
	    [DISC_FOLLOW_HOTPLUG] = "hotplug",
	    [DISC_FOLLOW_PERIODIC] = "periodic",
	    [DISC_FOLLOW_REQUEST] = "request",
	};
	struct bridge *b = userdata;
	bool loud = reason == DISC_FOLLOW_START || reason == DISC_FOLLOW_REQUEST;

	/* b->follow is NULL while disc_follow_new() reports a scan it could not start. */
	dp_metrics_rescan(b->metrics, reason_name[reason], error >= 0,
			  b->follow ? disc_follow_last_scan_usec(b->follow) : 0);
	b->pools_loud |= loud;
	if (error < 0 && !b->first_done) {
		begin_stop(b, error); /* the first scan must work */
		return;
	}
	if (error < 0 || !node)
		return; /* logged; the last good state stays in force */
	for (size_t i = 0; i < node->n_problems; i++) {
		if (loud)
			log_warning("%s", node->problems[i]);
		else
			log_debug("%s", node->problems[i]);
	}
	if (prev && reason != DISC_FOLLOW_REQUEST && disc_node_equal(prev, node))
		return; /* the steady state of a periodic rescan: nothing to build or send */
	if (prev)
		disc_node_changes(prev, node, log_change, b);
	apply(b, node, reason == DISC_FOLLOW_REQUEST);
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
	int r = fswatch_add(b->fw, b->plugin_dir,
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

	if (b->stopping || stat(b->plugin_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
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

	if (b->stopping)
		return;
	if (mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT))
		return; /* IN_IGNORED follows */
	if (mask & IN_IGNORED) {
		log_warning("plugin directory %s went away: waiting for it to come back",
			    b->plugin_dir);
		fswatch_remove(b->fw, b->dir_watch);
		b->dir_watch = 0;
		if (!b->dir_poll &&
		    sd_event_add_time_relative(b->loop, &b->dir_poll, CLOCK_MONOTONIC, 500000,
					       100000, on_dir_poll, b) < 0) {
			log_error("plugin directory %s went away and cannot be waited for: "
				  "exiting so the supervisor restarts us",
				  b->plugin_dir);
			begin_stop(b, -ENOENT);
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

	begin_stop(b, error);
}

/* ---- stopping -------------------------------------------------------------------------------- */

/*
 * Stopping runs on the loop: the plugins stop their servers (streams end, sockets go)
 * and the loop exits once every gRPC instance and call is gone, or after EXIT_WAIT_USEC.
 */
static int on_stop_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct bridge *b = userdata;
	uint64_t now = 0;

	sd_event_now(b->loop, CLOCK_MONOTONIC, &now);
	if (gc_runtime_idle(b->rt) || now >= b->stop_until) {
		sd_event_exit(b->loop, 0);
		return 0;
	}
	return sd_event_source_set_time_relative(s, 5000) < 0
		   ? sd_event_exit(b->loop, 0)
		   : sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void stop_plugins(struct bridge *b)
{
	for (size_t i = 0; i < b->n_pools; i++) {
		dp_plugin_free(b->pools[i].plugin);
		b->pools[i].plugin = NULL;
	}
}

static void begin_stop(struct bridge *b, int exit_code)
{
	int r;

	if (b->stopping)
		return;
	b->stopping = true;
	b->exit_code = exit_code;
	disc_follow_free(b->follow);
	b->follow = NULL;
	cfg_watch_free(b->cfg_watch);
	b->cfg_watch = NULL;
	stop_plugins(b);
	sd_event_now(b->loop, CLOCK_MONOTONIC, &b->stop_until);
	b->stop_until += EXIT_WAIT_USEC;
	r = sd_event_add_time_relative(b->loop, &b->stop_tick, CLOCK_MONOTONIC, 0, 1000,
				       on_stop_tick, b);
	if (r < 0)
		sd_event_exit(b->loop, 0);
}

/* ---- signals -------------------------------------------------------------------------------- */

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct bridge *b = userdata;

	if (si->ssi_signo == SIGHUP) {
		log_info("SIGHUP: rescanning");
		disc_follow_rescan(b->follow, DISC_FOLLOW_REQUEST);
		return 0;
	}
	log_info("SIG%s: stopping", sigabbrev_np((int)si->ssi_signo));
	begin_stop(b, 0);
	return 0;
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int setup_plugin_dir(struct bridge *b)
{
	const char *dir = b->o->plugin_dir ? b->o->plugin_dir : BRIDGE_DEFAULT_PLUGIN_DIR;
	struct sockaddr_un sa;
	struct stat st;
	int r;

	if (dir[0] == '/') {
		b->plugin_dir = strdup(dir);
	} else {
		_cleanup_free_ char *cwd = getcwd(NULL, 0);

		if (!cwd)
			return log_error_errno(-errno, "getcwd failed");
		b->plugin_dir = strdup_printf("%s/%s", cwd, dir);
	}
	if (!b->plugin_dir)
		return -ENOMEM;
	/* Trailing slashes would make "dir//rdma-cdi_....sock". */
	for (size_t l = strlen(b->plugin_dir); l > 1 && b->plugin_dir[l - 1] == '/'; l--)
		b->plugin_dir[l - 1] = '\0';
	if (strlen(b->plugin_dir) + sizeof("/" BRIDGE_KUBELET_SOCKET) > sizeof(sa.sun_path) ||
	    strlen(b->plugin_dir) + sizeof("/rdma-cdi_0123456789abcdef.sock") > sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "plugin directory %s: socket paths too long",
				       b->plugin_dir);

	if (stat(b->plugin_dir, &st) < 0) {
		if (errno != ENOENT)
			return log_error_errno(-errno, "plugin directory %s", b->plugin_dir);
		/* The kubelet creates it 0750 too; we may simply be first. */
		r = mkdir_all(b->plugin_dir, 0750);
		if (r < 0)
			return log_error_errno(r, "cannot create plugin directory %s",
					       b->plugin_dir);
		log_info("created plugin directory %s", b->plugin_dir);
	} else if (!S_ISDIR(st.st_mode)) {
		return log_error_errno(-ENOTDIR, "plugin directory %s", b->plugin_dir);
	}
	return 0;
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
	if (o->spec.kind && !cdi_kind_is_valid(o->spec.kind))
		return log_error_errno(-EINVAL, "invalid CDI kind \"%s\"", o->spec.kind);
	return 0;
}

/* ---- the config in force --------------------------------------------------------------- */

static void pool_clear(struct pool *p)
{
	dp_plugin_free(p->plugin);
	free(p->resource);
	free(p->socket_name);
	*p = (struct pool){0};
}

/* The pools a config makes of the flags: each pool's resource, sharing and ncclEnv. */
static int pools_from(struct bridge *b, const struct cfg *c, struct pool **ret, size_t *ret_n,
		      char *err, size_t errlen)
{
	const struct bridge_options *o = b->o;
	struct pool *pools;

	if (c->pools_set && (o->resource || o->shared > 1)) {
		snprintf(err, errlen,
			 "--resource and --shared shape the default pool only; the config "
			 "defines its pools");
		return -EINVAL;
	}
	pools = calloc(c->n_pools, sizeof(*pools));
	if (!pools)
		return -ENOMEM;
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
			for (size_t j = 0; j <= i; j++)
				pool_clear(&pools[j]);
			free(pools);
			return -ENOMEM;
		}
	}
	*ret = pools;
	*ret_n = c->n_pools;
	return 0;
}

/* Flags first, then the file, then the bridge's defaults. */
static void settings_from(struct bridge *b, const struct cfg *c)
{
	const struct bridge_options *o = b->o;

	b->spec = o->spec;
	if (!b->spec.kind)
		b->spec.kind = c->kind ? c->kind : SPEC_DEFAULT_KIND;
	if (!b->spec.memlock)
		b->spec.memlock = c->memlock;
	b->spec.with_mad = o->spec.with_mad || c->with_mad == 1;
	b->spec_dir = o->spec_dir ? o->spec_dir : c->spec_dir ? c->spec_dir : SPEC_DYNAMIC_DIR;
}

static int new_keeper(struct bridge *b)
{
	spec_keeper_free(b->keeper);
	b->keeper = NULL;
	return spec_keeper_new(b->loop,
			       &(struct spec_keeper_config){
				   .wo = {.spec_dir = b->spec_dir, .format = CDI_FORMAT_JSON},
				   .retry = on_spec_retry,
				   .userdata = b,
			       },
			       &b->keeper);
}

static int plugin_for(struct bridge *b, struct pool *p)
{
	return dp_plugin_new(b->loop, b->rt,
			     &(struct dp_plugin_config){
				 .plugin_dir = b->plugin_dir,
				 .socket_name = p->socket_name,
				 .resource = p->resource,
				 .failed = on_plugin_failed,
				 .userdata = b,
				 .metrics = b->metrics,
			     },
			     &p->plugin);
}

static void log_pools(struct bridge *b, const char *what)
{
	for (size_t i = 0; i < b->n_pools; i++)
		log_info("%s pool %s: %s%s, socket %s", what, b->pools[i].resource,
			 b->pools[i].shared > 1 ? "shared" : "exclusive",
			 b->pools[i].nccl_env ? ", ncclEnv" : "", b->pools[i].socket_name);
}

/*
 * A new valid config while running: pools that stay keep their plugin (socket,
 * registration, streams); new ones serve and register; removed ones stop serving,
 * which unregisters them (the kubelet sees the socket go). The spec follows.
 */
static void on_config(void *userdata, struct cfg *c, const char *err)
{
	struct bridge *b = userdata;
	_cleanup_(cfg_freep) struct cfg *nc = c;
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	const struct disc_node *node = disc_follow_node(b->follow);
	struct pool *pools = NULL;
	size_t n = 0, added = 0, kept = 0, removed = 0;
	const char *old_kind, *old_dir;
	char why[512] = "";
	int r;

	if (b->stopping)
		return;
	if (!nc) {
		log_error("config %s rejected, the previous config stays in force: %s", b->cfg_path,
			  err);
		dp_metrics_config_reload(b->metrics, false);
		return;
	}
	r = pools_from(b, nc, &pools, &n, why, sizeof(why));
	if (r == 0 && node)
		r = cfg_assign(nc, node, &a, why, sizeof(why));
	if (r < 0) {
		log_error("config %s rejected, the previous config stays in force: %s", b->cfg_path,
			  why[0] ? why : strerror(-r));
		dp_metrics_config_reload(b->metrics, false);
		for (size_t i = 0; pools && i < n; i++)
			pool_clear(&pools[i]);
		free(pools);
		return;
	}
	/* Carry the plugins of pools that stay over. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < b->n_pools; j++)
			if (b->pools[j].plugin &&
			    strcmp(b->pools[j].resource, pools[i].resource) == 0) {
				pools[i].plugin = TAKE_PTR(b->pools[j].plugin);
				kept++;
			}
	for (size_t j = 0; j < b->n_pools; j++) {
		removed += b->pools[j].plugin != NULL;
		if (b->pools[j].plugin)
			log_info("pool %s removed: unregistering (its socket goes)",
				 b->pools[j].resource);
		pool_clear(&b->pools[j]);
	}
	free(b->pools);
	b->pools = pools;
	b->n_pools = n;

	old_kind = b->spec.kind;
	old_dir = b->spec_dir;
	{
		_cleanup_free_ char *k = strdup(old_kind), *d = strdup(old_dir);

		settings_from(b, nc);
		if (!k || !d || strcmp(k, b->spec.kind) != 0 || strcmp(d, b->spec_dir) != 0) {
			/* Other names or another file: nothing of the old spec counts. */
			cJSON_Delete(b->spec_on_disk);
			b->spec_on_disk = NULL;
		}
	}
	cfg_free(b->cfg);
	b->cfg = TAKE_PTR(nc);
	if (new_keeper(b) < 0)
		log_error("out of memory renewing the spec keeper");

	for (size_t i = 0; i < b->n_pools; i++) {
		struct pool *p = &b->pools[i];

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
	log_info("config %s applied: %zu pool(s), %zu added, %zu kept, %zu removed", b->cfg_path,
		 b->n_pools, added, kept, removed);
	dp_metrics_config_reload(b->metrics, true);
	log_pools(b, "");
	b->pools_loud = true;
	if (node)
		apply(b, node, true);
}

/* The config at start: the file if there is one (watched from now on), else defaults. */
static int load_config(struct bridge *b)
{
	const struct bridge_options *o = b->o;
	char err[512] = "";
	int r;

	b->cfg_path = o->config_path ? o->config_path : CFG_DEFAULT_PATH;
	r = cfg_watch_new(b->loop, b->fw, b->cfg_path, on_config, b, &b->cfg, err, sizeof(err),
			  &b->cfg_watch);
	if (r == -ENOENT && !o->config_explicit) {
		log_info("no config directory for %s: using the defaults, not watching",
			 b->cfg_path);
	} else if (r < 0) {
		return log_error_errno(r, "config %s: %s", b->cfg_path, err);
	} else if (!b->cfg && o->config_explicit) {
		return log_error_errno(-ENOENT, "config %s does not exist", b->cfg_path);
	}
	if (!b->cfg) {
		r = cfg_default(&b->cfg);
		if (r < 0)
			return log_error_errno(r, "out of memory");
		if (b->cfg_watch)
			log_info("%s does not exist: using the defaults (creating it applies it)",
				 b->cfg_path);
	} else {
		log_info("config %s loaded (%zu pool(s))", b->cfg_path, b->cfg->n_pools);
	}
	r = pools_from(b, b->cfg, &b->pools, &b->n_pools, err, sizeof(err));
	if (r < 0)
		return log_error_errno(r, "config %s: %s", b->cfg_path, err);
	settings_from(b, b->cfg);
	for (size_t i = 0; i < b->n_pools; i++) {
		r = plugin_for(b, &b->pools[i]);
		if (r < 0)
			return log_error_errno(r, "creating the plugin failed");
	}
	log_pools(b, "");
	b->pools_loud = true;
	return 0;
}

static int setup(struct bridge *b)
{
	const struct bridge_options *o = b->o;
	int interval = o->rescan_interval == 0 ? BRIDGE_DEFAULT_RESCAN_SEC : o->rescan_interval;
	int r;

	r = setup_plugin_dir(b);
	if (r < 0)
		return r;
	r = sd_event_new(&b->loop);
	if (r < 0)
		return log_error_errno(r, "creating the event loop failed");
	for (int sig = SIGHUP; sig <= SIGTERM; sig++)
		if (sig == SIGHUP || sig == SIGINT || sig == SIGTERM) {
			r = sd_event_add_signal(b->loop, NULL, sig, on_signal, b);
			if (r < 0)
				return log_error_errno(r, "watching signals failed");
		}
	r = mailbox_new(b->loop, &b->mb);
	if (r >= 0)
		r = fswatch_new(b->loop, &b->fw);
	if (r < 0)
		return log_error_errno(r, "inotify initialisation failed");
	r = gc_runtime_new(b->mb, &b->rt);
	if (r < 0)
		return log_error_errno(r, "starting gRPC failed");
	if (o->metrics_address) {
		char err[256] = "";

		r = dp_metrics_new(o->metrics_address, RDMA_CDI_VERSION, &b->metrics, err,
				   sizeof(err));
		if (r < 0) {
			log_error("--metrics-address: %s", err[0] ? err : strerror(-r));
			return r;
		}
		log_info("serving metrics on http://%s%s", dp_metrics_address(b->metrics),
			 DP_METRICS_PATH);
	}
	r = load_config(b);
	if (r < 0)
		return r;
	r = new_keeper(b);
	if (r < 0)
		return log_error_errno(r, "out of memory");
	/* Watch before looking at kubelet.sock, so its creation cannot slip between. */
	r = watch_plugin_dir(b);
	if (r < 0)
		return log_error_errno(r, "cannot watch %s", b->plugin_dir);
	r = disc_follow_new(b->loop, b->mb, b->fw,
			    &(struct disc_follow_config){
				.disc = o->disc,
				.interval_sec = interval > 0 ? interval : 0,
				.fn = on_scan,
				.userdata = b,
			    },
			    &b->follow);
	if (r < 0)
		return log_error_errno(r, "starting the sysfs watcher failed");
	return 0;
}

/* The first scan, before anything is served: the spec is on disk before any device is
 * advertised, and a scan that fails is a start-up error. */
static int first_scan(struct bridge *b)
{
	while (!b->first_done && !b->stopping) {
		int r = sd_event_run(b->loop, UINT64_MAX);

		if (r < 0)
			return log_error_errno(r, "event loop failed");
	}
	return b->stopping ? 1 : 0; /* 1: stopping (a signal, a failed first scan) */
}

static void teardown(struct bridge *b)
{
	disc_follow_free(b->follow);
	stop_plugins(b);
	for (size_t i = 0; i < b->n_pools; i++)
		pool_clear(&b->pools[i]);
	free(b->pools);
	cfg_watch_free(b->cfg_watch);
	b->cfg_watch = NULL;
	if (b->rt && !gc_runtime_idle(b->rt)) {
		/* The completion-queue thread may still post: leave the rest to exit. */
		gc_runtime_free(b->rt);
		return;
	}
	gc_runtime_free(b->rt);
	if (b->dir_watch > 0)
		fswatch_remove(b->fw, b->dir_watch);
	fswatch_free(b->fw);
	mailbox_free(b->mb);
	spec_keeper_free(b->keeper);
	sd_event_source_disable_unref(b->stop_tick);
	sd_event_source_disable_unref(b->dir_poll);
	sd_event_unref(b->loop);
	cJSON_Delete(b->spec_on_disk);
	cfg_free(b->cfg);
	free(b->plugin_dir);
	dp_metrics_free(b->metrics); /* last: every caller of it is gone */
}

int bridge_run(const struct bridge_options *o)
{
	struct bridge b = {.o = o};
	sigset_t mask, old_mask;
	int r;

	r = check_options(o);
	if (r < 0)
		return r;
	daemon_memory_tune();
	/* Blocked before any thread exists (gRPC and the watchers start their own), so only
	 * the loop's signal sources see them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGPIPE);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, &old_mask);
	sigdelset(&mask, SIGPIPE);
	sigdelset(&mask, SIGUSR1);

	r = setup(&b);
	if (r < 0)
		goto out;
	r = first_scan(&b);
	if (r < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < b.n_pools; i++) {
		r = dp_plugin_start(b.pools[i].plugin);
		if (r < 0)
			begin_stop(&b, r);
	}
	if (!b.stopping)
		(void)sd_notify(0, "READY=1");
	r = sd_event_loop(b.loop);
	if (r < 0)
		log_error_errno(r, "event loop failed");
	else
		r = b.exit_code;
out:
	teardown(&b);
	/* SIGTERM, SIGINT and SIGHUP stay blocked: one that arrived after the one we acted
	 * on (SIGTERM and SIGINT together, a second Ctrl-C) would otherwise be delivered
	 * here and kill a cleanly stopped process. */
	sigorset(&old_mask, &old_mask, &mask);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (r == 0)
		log_info("stopped");
	return r;
}
