/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>

#include "common.h"

int array_reserve(void **array, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	/* Doubling: arrays grown by one per realloc make 100,000 entries quadratic. */
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (size == 0 || ncap > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*array, ncap * size);
	if (!p)
		return -ENOMEM;
	*array = p;
	*cap = ncap;
	return 0;
}
