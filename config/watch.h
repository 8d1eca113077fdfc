/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch: the loop-facing part of config/ - live reload. The file's directory is watched
 * (inotify through common/loop.h), so every way a file gets replaced is seen: an edit in
 * place, an editor's rename over it, and a Kubernetes ConfigMap volume's atomic swap of
 * its `..data` symlink. Events are coalesced for 100 ms, then the file is loaded; an
 * unchanged config (cfg_equal) is not reported, unless the file was refused in between.
 */
#pragma once

#include "config.h"
#include "loop.h"

struct cfg_watch;

/*
 * A new valid config (ownership passes to the callee), or cfg NULL and err set (one
 * line naming the file, line, column and key) when the file changed but cannot be
 * used: the caller keeps the config in force. A removed file is reported as an error.
 */
typedef void (*cfg_watch_fn)(void *userdata, struct cfg *cfg, const char *err);

/*
 * Watches path's directory, then loads the file: *ret_initial is the config in force
 * from now on, or NULL when the file does not exist (yet: creating it later is reported
 * like any change). -ENOENT when the directory does not exist, or cfg_load()'s errors
 * (err says why); nothing is watched then.
 */
int cfg_watch_new(sd_event *loop, struct fswatch *fw, const char *path, cfg_watch_fn fn,
		  void *userdata, struct cfg **ret_initial, struct cfg_watch **ret,
		  struct rc_error **err);
void cfg_watch_free(struct cfg_watch *w);
