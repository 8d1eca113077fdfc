/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop: what the daemons hang off their sd-event loop besides sd-event's own sources
 * (timers, fds, signals, children): a mailbox through which other threads hand work to
 * the loop thread, and file-system events.
 *
 * File-system events come through libinotifytools.
 * libinotifytools is used as designed: one watcher thread sits in its blocking
 * inotifytools_next_event() and hands each event to the loop (a queue and an eventfd),
 * where the callbacks run. The library has process-wide state, so a process has at most
 * one struct fswatch at a time.
 *
 * Callbacks run on the loop thread, never on the watcher thread. A callback may add and
 * remove watches, including its own.
 */
#pragma once

#include <stdint.h>
#include <sys/inotify.h>

#include <systemd/sd-event.h>

/* ---- mailbox ------------------------------------------------------------------ */

struct mailbox;

/* An eventfd source on loop; posted functions run on the loop thread in post order. */
int mailbox_new(sd_event *loop, struct mailbox **ret);
/* Runs what is still queued, then frees. Accepts NULL. Nothing may post afterwards. */
void mailbox_free(struct mailbox *m);
/* From any thread: run fn(userdata) on the loop thread soon. -ENOMEM only. */
int mailbox_post(struct mailbox *m, void (*fn)(void *userdata), void *userdata);

/* ---- file-system events ---------------------------------------------------------- */

struct fswatch;

/*
 * One event for one registration: mask as inotify gives it (IN_CREATE, IN_DELETE, ...),
 * name the entry inside a watched directory ("" when the event is about the watched path
 * itself). IN_Q_OVERFLOW (events were lost: look at everything again) reaches every
 * registration with name "". IN_IGNORED means the watched path is gone; the registration
 * stays but sees nothing more until it is added again.
 */
typedef void (*fswatch_fn)(void *userdata, uint32_t mask, const char *name);

/* Starts the watcher thread. -EBUSY when the process already has one. Does not log. */
int fswatch_new(sd_event *loop, struct fswatch **ret);
/* Stops the thread (within milliseconds) and removes every watch. Accepts NULL. */
void fswatch_free(struct fswatch *w);

/*
 * Watches path (a directory or a file; symlinks followed, as inotify does) for the
 * events in mask. Several registrations may watch one path. Returns a registration id
 * (> 0) or -errno (-ENOENT: path does not exist; -ENOSPC: out of inotify watches).
 */
int fswatch_add(struct fswatch *w, const char *path, uint32_t mask, fswatch_fn fn, void *userdata);
/* Ends a registration; unknown ids are ignored. */
void fswatch_remove(struct fswatch *w, int id);
