/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A kubeconfig file: kube_config_parse() on the input (files it names resolve under a
 * directory that does not exist, so only absolute paths reach the disk). The contract: an
 * error has its one-line reason and no result; a result has an https:// server without a
 * trailing slash, a CA (file or PEM data), a token that passes the token check or a token
 * file.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "kube-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_config *c = (struct kube_config *)&c; /* must stay untouched on error */
	_cleanup_rc_error_ struct rc_error *err = NULL;
	size_t start, len, n;
	int r;

	r = kube_config_parse((const char *)data, size, "/nonexistent-fuzz/kubeconfig", &c, &err);
	if (r < 0) {
		fuzz_assert(c == (struct kube_config *)&c);
		fuzz_assert(r == -ENOMEM || (err && err->code == -r && !strchr(err->msg, '\n')));
		fuzz_assert(r == -ENOMEM || !strncmp(err->msg, "/nonexistent-fuzz/kubeconfig", 28));
		return 0;
	}
	fuzz_assert(r == 0 && c);
	n = strlen(c->server);
	fuzz_assert(n > 8 && !strncmp(c->server, "https://", 8) && c->server[n - 1] != '/');
	for (size_t i = 0; i < n; i++)
		fuzz_assert((unsigned char)c->server[i] > 0x20 &&
			    (unsigned char)c->server[i] < 0x7f);
	fuzz_assert(!!c->ca_file != !!c->ca_data);
	fuzz_assert(!c->ca_data ||
		    memmem(c->ca_data, c->ca_len, "-----BEGIN CERTIFICATE-----", 27));
	fuzz_assert(!!c->token != !!c->token_file);
	if (c->token) {
		fuzz_assert(kube_token_check(c->token, strlen(c->token), &start, &len) == 0);
		fuzz_assert(start == 0 && len == strlen(c->token));
	}
	fuzz_assert(c->source && !strcmp(c->source, "/nonexistent-fuzz/kubeconfig"));
	kube_config_free(c);
	return 0;
}
