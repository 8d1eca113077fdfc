/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every fuzzer shares: the libFuzzer entry points (declared here for
 * -Wmissing-prototypes), an invariant check that aborts so both libFuzzer and the corpus
 * replay report it, and the fixture nodes scanned once from tests/data.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery.h"
#include "rc-error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant the code promises: a violation is a bug like a crash. */
#define fuzz_assert(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__,       \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The error contract (rc-error.h): a failure r comes with one error of its code, one line. */
#define fuzz_assert_error(e, r)                                                                    \
	fuzz_assert((e) && (e)->code == -(r) && (e)->msg[0] && !strchr((e)->msg, '\n'))

/* A fixture tree of tests/data (FUZZ_DATA_DIR): "dgx", "sriov", "quirks". Scanned once,
 * kept for the process; aborts when the fixture cannot be scanned. */
static inline struct disc_node *fuzz_fixture_node(const char *name)
{
	struct disc_options o = {0};
	struct disc_node *node = NULL;
	char root[4096];

	snprintf(root, sizeof(root), "%s/%s/sys", FUZZ_DATA_DIR, name);
	o.sysfs_root = root;
	o.dev_root = "/nonexistent";
	if (disc_scan(&o, &node) < 0) {
		fprintf(stderr, "cannot scan fixture %s\n", root);
		abort();
	}
	return node;
}
