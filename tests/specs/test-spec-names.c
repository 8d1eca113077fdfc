/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_names: the set of names a spec defines, which both daemons ask before they hand a
 * device out. Empty and malformed specs, repeats, hostile names, and a 2,000-HCA spec.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "specs.h"

#include "../tap.h"

static struct spec_names *names_of_json(const char *json)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = cJSON_Parse(json);

	if (!ok(spec, "parses: %s", json))
		return NULL;
	/* The set must not point into the spec: it goes now. */
	return spec_names_new(spec);
}

static void test_empty(void)
{
	static const char *const empty_specs[] = {
	    "{}",
	    "{\"devices\": []}",
	    "{\"devices\": null}",
	    "{\"devices\": \"mlx5_0\"}",
	    "{\"devices\": {\"a\": {\"name\": \"mlx5_0\"}}}", /* an object is no list */
	    "{\"devices\": [{}, {\"name\": null}, {\"name\": 7}, {\"name\": [\"x\"]}, 3]}",
	};
	struct spec_names *s = spec_names_new(NULL);

	ok(s && spec_names_count(s) == 0 && !spec_names_has(s, "mlx5_0") && !spec_names_has(s, ""),
	   "no spec: an empty set");
	spec_names_free(s);
	for (size_t i = 0; i < sizeof(empty_specs) / sizeof(*empty_specs); i++) {
		s = names_of_json(empty_specs[i]);
		ok(s && spec_names_count(s) == 0 && !spec_names_has(s, "mlx5_0") &&
		       !spec_names_has(s, "a") && !spec_names_has(s, "7"),
		   "defines no name: %s", empty_specs[i]);
		spec_names_free(s);
	}
	ok(spec_names_count(spec_names_empty()) == 0 &&
	       !spec_names_has(spec_names_empty(), "all"),
	   "spec_names_empty() defines nothing");
	spec_names_free((struct spec_names *)spec_names_empty()); /* must be ignored */
	spec_names_free(NULL);
	ok(!spec_names_has(NULL, "mlx5_0") && spec_names_count(NULL) == 0,
	   "a NULL set (no spec on disk) defines nothing");
}

static void test_duplicates(void)
{
	_cleanup_(spec_names_freep) struct spec_names *s = names_of_json(
	    "{\"devices\": [{\"name\": \"b\"}, {\"name\": \"a\"}, {\"name\": \"b\"}, "
	    "{\"name\": \"a\"}, {\"name\": \"a\"}, {\"other\": \"c\"}]}");

	ok(s && spec_names_count(s) == 2, "repeated names count once");
	ok(spec_names_has(s, "a") && spec_names_has(s, "b") && !spec_names_has(s, "c"),
	   "both repeated names are defined, the nameless entry's field is not");
	ok(!spec_names_has(s, NULL), "a NULL name is never defined");
}

/* Names no spec of ours carries: the set answers byte for byte, nothing more. */
static void test_hostile(void)
{
	static const char *const defined[] = {
	    "", "mlx5_1", "MLX5_0", "a=b", "../../etc", "rdma.example/hca=mlx5_0", " sp ",
	    "\x01\x1f\x7f", "\xc3\xa9", "\xff\xfe", "mlx5_1\n",
	};
	static const char *const not_defined[] = {
	    "mlx5_0", "mlx5_", "mlx5_10", "mlx5_1 ", "mlx5_1\r", "Mlx5_1", "a", "a=", "sp",
	    "\x01", "\xc3", "\xff\xfe\xff", "..",
	};
	_cleanup_(spec_names_freep) struct spec_names *s = NULL;
	_cleanup_(cJSON_Deletep) cJSON *spec = cJSON_CreateObject();
	_cleanup_free_ char *longname = malloc(65537);
	cJSON *devices = spec ? cJSON_AddArrayToObject(spec, "devices") : NULL;
	size_t found = 0, wrong = 0;

	if (!ok(devices && longname, "a spec of hostile names"))
		return;
	for (size_t i = 0; i < sizeof(defined) / sizeof(*defined); i++) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "name", defined[i]);
		cJSON_AddItemToArray(devices, d);
	}
	memset(longname, 'x', 65536);
	longname[65536] = '\0';
	cJSON_AddItemToArray(devices, cJSON_CreateObject()); /* no name at all */
	cJSON_AddItemToArray(devices, cJSON_CreateObject());
	cJSON_AddStringToObject(cJSON_GetArrayItem(devices, cJSON_GetArraySize(devices) - 1),
				"name", longname);
	s = spec_names_new(spec);
	cJSON_Delete(TAKE_PTR(spec));
	if (!ok(s, "the set builds"))
		return;
	for (size_t i = 0; i < sizeof(defined) / sizeof(*defined); i++)
		found += spec_names_has(s, defined[i]);
	for (size_t i = 0; i < sizeof(not_defined) / sizeof(*not_defined); i++)
		wrong += spec_names_has(s, not_defined[i]);
	ok(found == sizeof(defined) / sizeof(*defined) && spec_names_has(s, longname),
	   "every hostile name, the empty one and a 64 KiB one are found as given");
	ok(wrong == 0, "no near miss (prefix, case, trailing byte, half a UTF-8 sequence)");
	longname[65535] = 'y';
	ok(!spec_names_has(s, longname), "the 64 KiB name differing in its last byte is not");
	EQ_INT(spec_names_count(s), sizeof(defined) / sizeof(*defined) + 1, "hostile: count");
}

/* The names of a 2,000-HCA spec: 2,000 RDMA names, 2,000 PCI addresses and "all", given in
 * reverse order. */
static cJSON *big_spec(void)
{
	cJSON *spec = cJSON_CreateObject();
	cJSON *devices = spec ? cJSON_AddArrayToObject(spec, "devices") : NULL;
	char name[32];

	for (int i = 1999; devices && i >= 0; i--) {
		cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();

		snprintf(name, sizeof(name), "mlx5_%d", i);
		cJSON_AddStringToObject(a, "name", name);
		snprintf(name, sizeof(name), "0000:%02x:%02x.%x", i / 128, i / 8 % 16, i % 8);
		cJSON_AddStringToObject(b, "name", name);
		if (!cJSON_AddItemToArray(devices, a) || !cJSON_AddItemToArray(devices, b)) {
			cJSON_Delete(spec);
			return NULL;
		}
	}
	if (devices)
		cJSON_AddItemToArray(devices, cJSON_CreateObject());
	if (!cJSON_AddStringToObject(cJSON_GetArrayItem(devices, 4000), "name", "all")) {
		cJSON_Delete(spec);
		return NULL;
	}
	return spec;
}

static void test_2000(void)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = big_spec();
	_cleanup_(spec_names_freep) struct spec_names *s = spec ? spec_names_new(spec) : NULL;
	size_t found = 0, wrong = 0;
	char name[32];

	if (!ok(s, "the set of a 2,000-HCA spec builds"))
		return;
	EQ_INT(spec_names_count(s), 4001, "2,000 HCAs: count");
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "mlx5_%d", i);
		found += spec_names_has(s, name);
		snprintf(name, sizeof(name), "0000:%02x:%02x.%x", i / 128, i / 8 % 16, i % 8);
		found += spec_names_has(s, name);
		snprintf(name, sizeof(name), "mlx5_%d", i + 2000);
		wrong += spec_names_has(s, name);
		snprintf(name, sizeof(name), "%d", i);
		wrong += spec_names_has(s, name);
	}
	ok(found == 4000 && spec_names_has(s, "all"), "every one of the 4,001 names is found");
	ok(wrong == 0, "none of 4,000 names it does not define is");
	/* What a daemon keeps for as long as the spec stays on disk: one block, a pointer
	 * and the bytes of each name, where the spec's tree is megabytes. */
	ok(malloc_usable_size(s) < 4001 * (sizeof(char *) + 16) + 64,
	   "one block of %zu bytes for 4,001 names", malloc_usable_size(s));
}

int main(void)
{
	test_empty();
	test_duplicates();
	test_hostile();
	test_2000();
	return tap_done();
}
