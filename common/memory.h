/* SPDX-License-Identifier: Apache-2.0 */
/*
 * memory: glibc malloc settings for the long-running daemons (`rdma-cdi bridge`,
 * `rdma-cdi dra`), whose private memory at rest is the figure issue 3 bounds.
 *
 * What it fixes, measured on the 2,000-device node (docs/benchmarks-notes.md):
 *   - the dynamic mmap threshold: glibc serves a block over 128 KiB with its own mapping
 *     until one such block is freed, then raises the threshold to that block's size (up
 *     to 32 MiB), so every later snapshot array, device table and JSON text of that size
 *     lands in a heap or a thread's arena and stays there, pinned by whatever small
 *     block was allocated above it. Fixed at 128 KiB, a big block is unmapped when it is
 *     freed;
 *   - the number of arenas: by default up to 8 per core, one per thread that happens to
 *     contend (gRPC's pollers and executors, the scan worker, libcurl's resolver); each
 *     keeps its own free memory. Two serve threads that mostly sleep.
 * Call it once, first thing in the daemon, before any thread exists.
 */
#pragma once

/* Never fails in a way that matters: a setting glibc refuses (or a sanitizer's allocator
 * ignores) leaves its default in force. */
void daemon_memory_tune(void);
