/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The config file (docs/config.md): cfg_parse() on the input; when it parses, the pools
 * are assigned on the fixture nodes (cfg_assign) and `config check`'s text is written
 * (cfg_report), and the result is checked against the contract: an error has its
 * one-line reason, a config equals itself, every device lands in one pool at most.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"

static struct disc_node *nodes[2];

static void check_assign(const struct cfg *c, const struct disc_node *node)
{
	_cleanup_(cfg_assignment_freep) struct cfg_assignment *a = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	char *text = NULL;
	size_t len = 0, total = 0;
	FILE *out;
	int r;

	r = cfg_assign(c, node, &a, &err);
	if (r < 0) {
		fuzz_assert(r == -E2BIG || r == -ENOMEM);
		fuzz_assert(err && err->code == -r && !strchr(err->msg, '\n'));
		return;
	}
	fuzz_assert(a->n_devices == node->n_devices && a->n_pools == c->n_pools);
	for (size_t i = 0; i < a->n_devices; i++) {
		fuzz_assert(a->pool_of[i] >= -1 && a->pool_of[i] < (long)c->n_pools);
		fuzz_assert(a->pool_of[i] < 0 || disc_device_usable(&node->devices[i]));
		fuzz_assert(a->pool_of[i] < 0 ||
			    cfg_pool_matches(&c->pools[a->pool_of[i]], node, &node->devices[i]));
	}
	for (size_t p = 0; p < a->n_pools; p++)
		total += a->n_per_pool[p];
	fuzz_assert(total <= a->n_devices);
	for (size_t i = 0; i < a->n_warnings; i++)
		fuzz_assert(a->warnings[i] && !strchr(a->warnings[i], '\n'));

	out = open_memstream(&text, &len);
	if (!out)
		abort();
	r = cfg_report(c, node, out, &err);
	fclose(out);
	fuzz_assert(r == 0 || r == -ENOMEM);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(cfg_freep) struct cfg *c = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	if (!nodes[0]) {
		nodes[0] = fuzz_fixture_node("dgx");
		nodes[1] = fuzz_fixture_node("sriov");
	}
	r = cfg_parse((const char *)data, size, "fuzz.yaml", &c, &err);
	if (r < 0) {
		fuzz_assert(r == -EBADMSG || r == -EINVAL || r == -EFBIG || r == -ENOMEM);
		/* The reason names the file and is one line. */
		fuzz_assert(err && err->code == -r);
		fuzz_assert(!strncmp(err->msg, "fuzz.yaml", 9) && !strchr(err->msg, '\n'));
		fuzz_assert(!c);
		return 0;
	}
	fuzz_assert(c && c->n_pools >= 1 && c->n_pools <= CFG_POOLS_MAX);
	fuzz_assert(cfg_equal(c, c));
	for (size_t i = 0; i < c->n_pools; i++) {
		fuzz_assert(cfg_resource_name_problem(c->pools[i].resource_name) == NULL);
		fuzz_assert(cfg_pool_equal(&c->pools[i], &c->pools[i]));
	}
	for (size_t n = 0; n < 2; n++)
		check_assign(c, nodes[n]);
	return 0;
}
