/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdma-cdi generate --watch` on the daemon runtime (daemon.h), linked only into
 * rdma-cdi-watch (cli.h): the spec follows the node and the config file; nothing else is
 * served. The runtime does the rest: hotplug, the periodic rescan, SIGHUP, config edits
 * (an invalid one refused, the previous config staying), the write retries, READY=1.
 */
#include <cjson/cJSON.h>

#include "cli.h"
#include "common.h"
#include "daemon.h"

static int apply(void *userdata, const struct disc_node *node, bool changed, bool force)
{
	struct daemon *dm = userdata;
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	int r;

	if (!changed)
		return 0; /* the steady state of a periodic rescan: nothing to write */
	/* A spec that cannot be built is logged and waits for the next scan; there is
	 * nothing to serve meanwhile, so the start goes on (0). */
	r = spec_build(node, &dm->spec, &spec);
	if (r == -ENODEV)
		log_warning("no usable RDMA device found: CDI spec left as is");
	else if (r < 0)
		log_error_errno(r, "building the CDI spec failed");
	else
		(void)daemon_write_spec(dm, spec, disc_node_count_usable(node));
	return 0;
}

int cli_generate_watch(const struct daemon_options *o)
{
	static const struct daemon_ops ops = {
	    .spec_dir = SPEC_DEFAULT_DIR,
	    .apply = apply,
	};
	struct daemon dm = {};

	return daemon_run(&dm, o, &ops, &dm);
}
