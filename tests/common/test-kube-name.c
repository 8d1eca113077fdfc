/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one Kubernetes name checker (common/kube-name.c) against the API server's rules
 * (IsDNS1123Label, IsDNS1123Subdomain): every daemon option, claim and resource name
 * goes through it, so what it accepts is what a cluster can hold.
 */
#include <string.h>

#include "common.h"
#include "../tap.h"

static const struct {
	const char *name;
	bool label, subdomain;
} cases[] = {
    {"a", true, true},
    {"0", true, true},
    {"abc-123", true, true},
    {"a--b", true, true},
    {"kube-system", true, true},
    {"a.b", false, true},
    {"rdma.example.com", false, true},
    {"1.2.3", false, true},
    {"a-b.c-d", false, true},
    {"", false, false},
    {"a..b", false, false},
    {".a", false, false},
    {"a.", false, false},
    {".", false, false},
    {"a.-b", false, false},
    {"a-.b", false, false},
    {"-a", false, false},
    {"a-", false, false},
    {"A", false, false},
    {"aB", false, false},
    {"a_b", false, false},
    {"a b", false, false},
    {"a/b", false, false},
    {"caf\xc3\xa9", false, false},
    {"a\nb", false, false},
};

static const struct {
	size_t n;
	bool label, subdomain;
} lengths[] = {{63, true, true}, {64, false, true}, {253, false, true}, {254, false, false}};

int main(void)
{
	char s[300];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		ok(dns_label_is_valid(cases[i].name) == cases[i].label, "label \"%s\": %s",
		   cases[i].name, cases[i].label ? "valid" : "refused");
		ok(dns_subdomain_is_valid(cases[i].name) == cases[i].subdomain,
		   "subdomain \"%s\": %s", cases[i].name, cases[i].subdomain ? "valid" : "refused");
	}
	ok(!dns_label_is_valid(NULL) && !dns_subdomain_is_valid(NULL), "NULL is refused");

	/* The length limits, at and one past. */
	for (size_t i = 0; i < ELEMENTSOF(lengths); i++) {
		memset(s, 'a', lengths[i].n);
		s[lengths[i].n] = '\0';
		ok(dns_label_is_valid(s) == lengths[i].label &&
		       dns_subdomain_is_valid(s) == lengths[i].subdomain,
		   "%zu characters: label %s, subdomain %s", lengths[i].n,
		   lengths[i].label ? "valid" : "refused",
		   lengths[i].subdomain ? "valid" : "refused");
	}
	memset(s, 'a', 100);
	/* Kubernetes limits a subdomain's length, not its labels'. */
	strcpy(s + 100, ".b");
	ok(dns_subdomain_is_valid(s), "a subdomain's label may be longer than 63");

	ok(dns_subdomain_is_valid_len("rdma.example/hca", 12), "the length variant stops at len");
	ok(!dns_subdomain_is_valid_len("rdma.example/hca", 13), "and sees what is in it");
	ok(!dns_subdomain_is_valid_len("a\0b", 3), "an embedded NUL is refused");
	ok(dns_label_is_valid_len("nic/big", 3) && !dns_label_is_valid_len("nic/big", 4),
	   "label length variant");
	ok(!dns_label_is_valid_len("a\0b", 3), "an embedded NUL in a label is refused");
	return tap_done();
}
