/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CDI spec reader behind `rdma-cdi list`: the input parsed as JSON and as YAML
 * (cdi_spec_parse) and, when it parses, validated (cdi_spec_validate). A valid spec must
 * survive a round trip: formatted in both formats and parsed again, it is the same tree.
 */
#include <errno.h>
#include <string.h>

#include "cdi.h"
#include "fuzz.h"

static void round_trip(const cJSON *spec, enum cdi_format fmt)
{
	_cleanup_(cJSON_Deletep) cJSON *back = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	size_t len;
	int r;

	r = cdi_spec_format(spec, fmt, &text, &len);
	if (r == -ENOMEM)
		return;
	fuzz_assert(r == 0 && strlen(text) == len);
	r = cdi_spec_parse(text, len, fmt, &back, &err);
	if (r != 0)
		fprintf(stderr, "%s output does not parse: %s\n%s\n",
			fmt == CDI_FORMAT_JSON ? "JSON" : "YAML", rc_error_msg(err, r), text);
	fuzz_assert(r == 0);
	if (!cJSON_Compare(spec, back, true))
		fprintf(stderr, "%s round trip changed the spec:\n%s\n",
			fmt == CDI_FORMAT_JSON ? "JSON" : "YAML", text);
	fuzz_assert(cJSON_Compare(spec, back, true));
	fuzz_assert(cdi_spec_validate(back, NULL) == 0);
}

static void check(const uint8_t *data, size_t size, enum cdi_format fmt)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	r = cdi_spec_parse((const char *)data, size, fmt, &spec, &err);
	if (r < 0) {
		fuzz_assert(r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
		fuzz_assert(r == -ENOMEM || (err && err->code == -r && !strchr(err->msg, '\n')));
		return;
	}
	fuzz_assert(spec && !err);
	(void)cdi_min_version(spec);
	r = cdi_spec_validate(spec, &err);
	if (r < 0) {
		fuzz_assert(r == -EINVAL || r == -ENOMEM);
		fuzz_assert(r == -ENOMEM ||
			    (err && err->code == EINVAL && !strchr(err->msg, '\n')));
		return;
	}
	round_trip(spec, CDI_FORMAT_JSON);
	round_trip(spec, CDI_FORMAT_YAML);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size, CDI_FORMAT_JSON);
	check(data, size, CDI_FORMAT_YAML);
	return 0;
}
