/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: cdi-convert FROM TO [--validate] < in > out
 * FROM, TO: json | yaml. Parses stdin with cdi_spec_parse(), optionally validates, and
 * writes cdi_spec_format() output. "cdi-convert FROM min-version" prints
 * cdi_min_version() and the field that needs it instead; "cdi-convert FROM
 * min-versions" does so for each element of an array of specs, one line each. Errors
 * go to stderr, exit 1.
 */
#include <string.h>
#include <unistd.h>

#include "cdi-internal.h"

static int parse_fmt(const char *s, enum cdi_format *ret)
{
	if (strcmp(s, "json") == 0)
		*ret = CDI_FORMAT_JSON;
	else if (strcmp(s, "yaml") == 0)
		*ret = CDI_FORMAT_YAML;
	else
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_free_ char *in = NULL, *out = NULL;
	enum cdi_format from, to = CDI_FORMAT_JSON;
	bool min_version = false, min_versions = false, validate = false;
	size_t in_len, out_len;
	_cleanup_rc_error_ struct rc_error *e = NULL;
	char err[512];
	int r;

	if (argc >= 3) {
		min_version = strcmp(argv[2], "min-version") == 0;
		min_versions = strcmp(argv[2], "min-versions") == 0;
	}
	if (argc < 3 || argc > 4 || parse_fmt(argv[1], &from) < 0 ||
	    (!min_version && !min_versions && parse_fmt(argv[2], &to) < 0) ||
	    (argc == 4 && !(validate = strcmp(argv[3], "--validate") == 0))) {
		fprintf(stderr, "usage: cdi-convert json|yaml json|yaml|min-version|min-versions "
				"[--validate]\n");
		return 2;
	}
	r = read_full_fd(STDIN_FILENO, CDI_SPEC_MAX_BYTES, &in, &in_len);
	if (r < 0) {
		fprintf(stderr, "stdin: %s\n", strerror(-r));
		return 1;
	}
	r = cdi_spec_parse(in, in_len, from, &spec, &e);
	if (r < 0) {
		fprintf(stderr, "parse: %s\n", rc_error_msg(e, r));
		return 1;
	}
	if (validate && (r = cdi_spec_validate(spec, &e)) < 0) {
		fprintf(stderr, "invalid: %s\n", rc_error_msg(e, r));
		return 1;
	}
	if (min_versions) {
		const cJSON *s;

		cJSON_ArrayForEach (s, spec)
			printf("%s %s\n", cdi_min_version_why(s, err, sizeof(err)), err);
		return 0;
	}
	if (min_version) {
		const char *v = cdi_min_version_why(spec, err, sizeof(err));

		printf("%s %s\n", v, err);
		return 0;
	}
	r = cdi_spec_format(spec, to, &out, &out_len);
	if (r < 0) {
		fprintf(stderr, "format: %s\n", strerror(-r));
		return 1;
	}
	return write_all(STDOUT_FILENO, out, out_len) < 0;
}
