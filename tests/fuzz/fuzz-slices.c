/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the API server lists: byte 0 picks the generation and how many devices the pool
 * has (0..7); the rest is the JSON of the list's items, which go to dra_slice_plan()
 * against the pool's specs as the publisher does after every list. The contract: every
 * op names a spec that exists or an element of the list; no spec and no listed slice is
 * acted on twice; updates come before creates, creates before deletes; and every spec
 * the plan does not write is already said, unchanged, by a listed slice it leaves alone.
 */
#include <errno.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz.h"
#include "slices-internal.h"

static bool is_element(const cJSON *array, const cJSON *item)
{
	const cJSON *e;

	cJSON_ArrayForEach (e, array)
		if (e == item)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *devices, *specs, *listed;
	struct dra_slice_op *ops = NULL;
	size_t n_ops = 0, n_specs, n_listed;
	bool *spec_written, *listed_used;
	int r, last_kind = DRA_SLICE_UPDATE;

	if (size < 1)
		return 0;
	listed = cJSON_ParseWithLength((const char *)data + 1, size - 1);
	if (!listed)
		return 0;
	devices = cJSON_CreateArray();
	fuzz_assert(devices);
	for (int i = 0; i < (data[0] & 7); i++) {
		cJSON *d = cJSON_CreateObject();
		char name[32];

		snprintf(name, sizeof(name), "pci-0000-%02x-00-0", 0x10 + i);
		fuzz_assert(d && cJSON_AddStringToObject(d, "name", name));
		cJSON_AddItemToArray(devices, d);
	}
	specs = dra_slice_specs("rdma.example", "node1", 1 + (data[0] >> 3), devices);
	fuzz_assert(specs);
	n_specs = (size_t)cJSON_GetArraySize(specs);
	n_listed = cJSON_IsArray(listed) ? (size_t)cJSON_GetArraySize(listed) : 0;

	r = dra_slice_plan(specs, listed, &ops, &n_ops);
	fuzz_assert(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r < 0 || !cJSON_IsArray(listed))
		goto out;
	fuzz_assert(n_ops == 0 ? ops == NULL : ops != NULL);
	spec_written = calloc(n_specs + 1, sizeof(bool));
	listed_used = calloc(n_listed + 1, sizeof(bool));
	fuzz_assert(spec_written && listed_used);
	for (size_t i = 0; i < n_ops; i++) {
		const struct dra_slice_op *op = &ops[i];

		fuzz_assert((int)op->kind >= last_kind);
		last_kind = op->kind;
		if (op->kind != DRA_SLICE_DELETE) {
			fuzz_assert(op->spec < n_specs && !spec_written[op->spec]);
			spec_written[op->spec] = true;
		}
		if (op->kind == DRA_SLICE_CREATE) {
			fuzz_assert(!op->listed);
			continue;
		}
		fuzz_assert(op->listed && is_element(listed, op->listed));
		for (size_t j = 0; j < n_listed; j++)
			if (cJSON_GetArrayItem(listed, (int)j) == op->listed) {
				fuzz_assert(!listed_used[j]);
				listed_used[j] = true;
			}
	}
	/* A spec left alone is said by a listed slice left alone. */
	for (size_t s = 0; s < n_specs; s++) {
		bool said = false;

		if (spec_written[s])
			continue;
		for (size_t j = 0; j < n_listed && !said; j++) {
			const cJSON *o = cJSON_GetArrayItem(listed, (int)j);

			said = !listed_used[j] &&
			       dra_slice_spec_equal(cJSON_GetArrayItem(specs, (int)s),
						    cJSON_GetObjectItemCaseSensitive(o, "spec"));
		}
		fuzz_assert(said);
	}
	free(spec_written);
	free(listed_used);
out:
	free(ops);
	cJSON_Delete(specs);
	cJSON_Delete(devices);
	cJSON_Delete(listed);
	return 0;
}
