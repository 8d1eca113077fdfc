/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The names a spec defines, as a sorted set in one allocation (see specs.h): the one copy
 * of "only hand out names the spec on disk defines" that the bridge and the DRA driver ask.
 * One block rather than a tree or thousands of strdup()s: the daemons keep it for as long
 * as the spec stays on disk, and scattered small blocks would pin heap pages (the tree of a
 * 2,000-HCA spec is about 7 MiB; its names 77 KB).
 */
#include <stdlib.h>
#include <string.h>

#include "specs.h"

struct spec_names {
	size_t n;
	const char *names[]; /* sorted, each once; the bytes they point to follow the array */
};

static const struct spec_names empty;

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char *device_name(const cJSON *device)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(device, "name"));
}

/* Sorts the n names and drops repeats: a spec may not hold one, but the set stays a set
 * whatever it is given. Returns how many remain. */
static size_t sort_unique(const char **names, size_t n)
{
	size_t w = 0;

	qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++)
		if (w == 0 || strcmp(names[w - 1], names[i]) != 0)
			names[w++] = names[i];
	return w;
}

struct spec_names *spec_names_new(const cJSON *spec)
{
	const cJSON *devices = cJSON_GetObjectItemCaseSensitive(spec, "devices"), *d;
	size_t n = 0, bytes = 0;
	struct spec_names *s;
	char *pool;

	if (!cJSON_IsArray(devices))
		devices = NULL; /* no device list: no name */
	cJSON_ArrayForEach (d, devices)
		if (device_name(d)) {
			n++;
			bytes += strlen(device_name(d)) + 1;
		}
	s = malloc(sizeof(*s) + n * sizeof(*s->names) + bytes);
	if (!s)
		return NULL;
	s->n = 0;
	pool = (char *)(s->names + n);
	cJSON_ArrayForEach (d, devices) {
		const char *name = device_name(d);
		size_t len;

		if (!name)
			continue;
		len = strlen(name) + 1;
		s->names[s->n++] = memcpy(pool, name, len);
		pool += len;
	}
	s->n = sort_unique(s->names, s->n);
	return s;
}

const struct spec_names *spec_names_empty(void)
{
	return &empty;
}

bool spec_names_has(const struct spec_names *s, const char *name)
{
	/* bsearch() keeps no state: lookups may run on any thread. */
	return s && name && bsearch(&name, s->names, s->n, sizeof(*s->names), cmp_name);
}

size_t spec_names_count(const struct spec_names *s)
{
	return s ? s->n : 0;
}

void spec_names_free(struct spec_names *s)
{
	if (s != &empty)
		free(s);
}
