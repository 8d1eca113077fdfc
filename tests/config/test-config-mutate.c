/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hostile files: 50000 seeded random mutations of a full config (bytes replaced,
 * inserted, deleted; YAML punctuation favoured). Whatever the parser gets, it returns
 * 0 or -EINVAL/-EBADMSG, an error is exactly one "FILE:LINE:COLUMN: " line pointing into
 * the file, and an accepted file assigns and reports on a fixture node. Then 20000
 * mutations each of an rdma-shared and an sriov-dp config.json through the converter:
 * 0, -EINVAL or -EBADMSG, every error one line naming the file, and every conversion a
 * config the parser accepts. Under ASan this is the memory-safety net for both.
 * Usage: test-config-mutate TESTS_DATA_DIR (TAP on stdout).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "config.h"

static const char cfg_seed[] = "kind: rdma.example/hca\n"
			   "specDir: /var/run/cdi\n"
			   "withMad: false\n"
			   "memlock: 64M\n"
			   "pools:\n"
			   "  - resourceName: rdma.example/ib\n"
			   "    mode: shared\n"
			   "    sharedSlots: 16\n"
			   "    ncclEnv: false\n"
			   "    selectors:\n"
			   "      linkLayers: [InfiniBand]\n"
			   "      vendors: [\"15b3\"]\n"
			   "      deviceIDs: [\"1021\"]\n"
			   "      drivers: [mlx5_core]\n"
			   "      names: [\"mlx5_*\"]\n"
			   "      netdevs: [\"ib*\"]\n"
			   "      pciAddresses: [\"0000:*\"]\n"
			   "      numaNodes: [0, 1]\n"
			   "  - {resourceName: a.io/vf, selectors: {pfNames: [ens1f0], vf: true}}\n"
			   "  - resourceName: a.io/rest\n";

static const char rs_seed[] =
    "{\"periodicUpdateInterval\": 300, \"configList\": [\n"
    " {\"resourceName\": \"hca_a\", \"resourcePrefix\": \"example.com\", \"rdmaHcaMax\": 1000,\n"
    "  \"devices\": [\"ib0\", \"ib1\"]},\n"
    " {\"resourceName\": \"hca_b\", \"rdmaHcaMax\": 500, \"selectors\": {\"vendors\": [\"15b3\"],\n"
    "  \"deviceIDs\": [\"1017\"], \"drivers\": [\"mlx5_core\"], \"ifNames\": [\"ib3\", \"ib*\"],\n"
    "  \"linkTypes\": [\"infiniband\"]}}]}\n";

static const char sd_seed[] =
    "{\"resourceList\": [\n"
    " {\"resourceName\": \"mlnx_rdma\", \"resourcePrefix\": \"mellanox.com\",\n"
    "  \"isRdma\": true, \"deviceType\": \"netDevice\", \"excludeTopology\": true,\n"
    "  \"SelectorObj\": null, \"selectors\": [{\"vendors\": [\"15b3\"],\n"
    "  \"devices\": [\"1018\"], \"drivers\": [\"mlx5_ib\"], \"pfNames\": [\"ens1f0\"],\n"
    "  \"pciAddresses\": [\"0000:3b:00.2\"], \"needVhostNet\": false}]},\n"
    " {\"resourceName\": \"ib\", \"selectors\": {\"linkTypes\": [\"ether\"], \"isRdma\": "
    "true}}]}\n";

static const char punct[] = "[]{},:-*&!?#'\"\\\n \t0aZ~|>%@`";

/* Deterministic across libcs, unlike rand(). */
static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static unsigned next(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static size_t mutate(const char *seed, char *buf, size_t cap)
{
	size_t len = strlen(seed);
	unsigned n = 1 + next(3);

	memcpy(buf, seed, len);
	for (unsigned m = 0; m < n; m++) {
		size_t pos = next((unsigned)len);
		char c = next(4) ? punct[next(sizeof(punct) - 1)] : (char)next(256);

		switch (next(3)) {
		case 0:
			buf[pos] = c;
			break;
		case 1:
			if (len + 1 < cap) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = c;
				len++;
			}
			break;
		default:
			if (len > 1) {
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
			}
		}
	}
	return len;
}

static unsigned count_lines(const char *buf, size_t len)
{
	unsigned n = 1;

	for (size_t i = 0; i < len; i++)
		/* Over-counts on purpose: libyaml also breaks lines at NEL, LS and PS
		 * (UTF-8 c2 85, e2 80 a8/a9); this is an upper bound. */
		n += buf[i] == '\n' || buf[i] == '\r' || (unsigned char)buf[i] == 0x85 ||
		     (unsigned char)buf[i] == 0xa8 || (unsigned char)buf[i] == 0xa9;
	return n;
}

/* One converter result against the contract; false when it breaks it. */
static bool convert_ok(int r, const char *text, const struct cfg_errors *errs,
		       const struct rc_error *e)
{
	struct cfg *c = NULL;
	bool good;

	if (r == 0) {
		good = text && errs->n == 0 && cfg_parse(text, strlen(text), "out", &c, NULL) == 0;
		cfg_free(c);
		return good;
	}
	if ((r != -EINVAL && r != -EBADMSG) || errs->n == 0 || !e || strncmp(e->msg, "f:", 2))
		return false;
	for (size_t i = 0; i < errs->n; i++)
		if (strncmp(errs->v[i].msg, "f:", 2) || strchr(errs->v[i].msg, '\n'))
			return false;
	return true;
}

static void test_convert(enum cfg_source from, const char *seed, const char *what)
{
	size_t converted = 0, bad = 0;

	for (int it = 0; it < 20000; it++) {
		_cleanup_rc_error_ struct rc_error *e = NULL;
		struct cfg_errors errs = {};
		char buf[4096], *text = NULL;
		size_t len = mutate(seed, buf, sizeof(buf));
		int r = cfg_convert(from, buf, len, "f", &text, &errs, &e);

		converted += r == 0;
		if (!convert_ok(r, text, &errs, e) && bad++ < 5)
			printf("#   r = %d (%s) for: %.*s\n", r, rc_error_msg(e, r), (int)len, buf);
		free(text);
		cfg_errors_clear(&errs);
	}
	ok(bad == 0, "%s: every conversion parses, every refusal is one line per error naming "
		     "the file (%zu not)",
	   what, bad);
	/* Both sides must be exercised, or the check above proves nothing. */
	ok(converted > 500 && converted < 19000, "%s: converted %zu of 20000 mutated files", what,
	   converted);
}

int main(int argc, char **argv)
{
	struct disc_options o = {.dev_root = "/nonexistent-rdma-cdi-dev"};
	struct disc_node *node = NULL;
	size_t accepted = 0, bad_r = 0, bad_msg = 0, bad_assign = 0;
	char root[512];
	FILE *devnull;

	if (argc != 2) {
		fprintf(stderr, "usage: %s TESTS_DATA_DIR\n", argv[0]);
		return 2;
	}
	snprintf(root, sizeof(root), "%s/dgx/sys", argv[1]);
	o.sysfs_root = root;
	if (!ok(disc_scan(&o, &node) == 0, "scan dgx")) {
		printf("Bail out! no fixture\n");
		return 1;
	}
	devnull = fopen("/dev/null", "we");
	if (!devnull)
		return 1;

	for (int it = 0; it < 50000; it++) {
		_cleanup_rc_error_ struct rc_error *e = NULL;
		char buf[4096];
		const char *err;
		size_t len = mutate(cfg_seed, buf, sizeof(buf));
		struct cfg *c = NULL;
		struct cfg_assignment *a = NULL;
		unsigned line = 0, col = 0;
		int r = cfg_parse(buf, len, "f", &c, &e), used = 0;

		err = rc_error_msg(e, r);

		if ((r == 0) != !!c || (r != 0 && r != -EINVAL && r != -EBADMSG)) {
			if (bad_r++ < 5)
				printf("#   r = %d for: %.*s\n", r, (int)len, buf);
		}
		if (r < 0 &&
		    (sscanf(err, "f:%u:%u: %n", &line, &col, &used) != 2 || used == 0 ||
		     strchr(err, '\n') || line == 0 || col == 0 || line > count_lines(buf, len))) {
			if (bad_msg++ < 5)
				printf("#   message '%s'\n", err);
		}
		if (r == 0) {
			int ra = cfg_assign(c, node, &a, NULL);

			accepted++;
			if ((ra != 0 && ra != -E2BIG) || cfg_report(c, node, devnull, NULL) != ra)
				bad_assign++;
			cfg_assignment_free(a);
		}
		cfg_free(c);
	}
	ok(bad_r == 0, "every result is 0, -EINVAL or -EBADMSG (%zu not)", bad_r);
	ok(bad_msg == 0, "every error is one f:LINE:COLUMN line inside the file (%zu not)",
	   bad_msg);
	ok(bad_assign == 0, "every accepted file assigns and reports (%zu not)", bad_assign);
	/* The mutations must exercise both sides, or the checks above prove nothing. */
	ok(accepted > 1000 && accepted < 45000, "accepted %zu of 50000 mutated files", accepted);
	fclose(devnull);
	disc_node_free(node);
	test_convert(CFG_SOURCE_RDMA_SHARED, rs_seed, "rdma-shared");
	test_convert(CFG_SOURCE_SRIOV_DP, sd_seed, "sriov-dp");
	return tap_done();
}
