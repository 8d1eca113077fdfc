/* SPDX-License-Identifier: Apache-2.0 */
#include <malloc.h>

#include "memory.h"

/* glibc's default (and least) dynamic threshold: the size it starts from. */
#define MMAP_THRESHOLD (128 * 1024)
#define ARENA_MAX 2

void daemon_memory_tune(void)
{
	/* Setting either threshold also stops glibc from raising both on its own. */
	(void)mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	(void)mallopt(M_TRIM_THRESHOLD, MMAP_THRESHOLD);
	(void)mallopt(M_ARENA_MAX, ARENA_MAX);
}
