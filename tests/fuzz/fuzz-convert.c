/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdma-cdi config convert` (config/convert.c): byte 0 chooses the source (bit 0: 0
 * rdma-shared, 1 sriov-dp), the rest is its config.json. The contract: a conversion is a
 * config cfg_parse() accepts; a refusal is -EINVAL, -EBADMSG or -EFBIG with every error
 * one line naming the file, the first of them in err.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_rc_error_ struct rc_error *err = NULL, *perr = NULL;
	struct cfg_errors errs = {};
	struct cfg *c = NULL;
	char *text = NULL;
	enum cfg_source from;
	int r;

	if (size < 1)
		return 0;
	from = data[0] & 1 ? CFG_SOURCE_SRIOV_DP : CFG_SOURCE_RDMA_SHARED;
	r = cfg_convert(from, (const char *)data + 1, size - 1, "fuzz.json", &text, &errs, &err);
	if (r == 0) {
		fuzz_assert(text && errs.n == 0 && !err);
		fuzz_assert(cfg_parse(text, strlen(text), "out", &c, &perr) == 0 && c);
		fuzz_assert(c->pools_set && c->n_pools >= 1);
		cfg_free(c);
		free(text);
		return 0;
	}
	fuzz_assert(r == -EINVAL || r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
	fuzz_assert(!text);
	fuzz_assert_error(err, r);
	fuzz_assert(!strncmp(err->msg, "fuzz.json", 9));
	fuzz_assert(r == -ENOMEM || errs.n >= 1);
	for (size_t i = 0; i < errs.n; i++)
		fuzz_assert(!strncmp(errs.v[i].msg, "fuzz.json", 9) &&
			    !strchr(errs.v[i].msg, '\n'));
	cfg_errors_clear(&errs);
	return 0;
}
