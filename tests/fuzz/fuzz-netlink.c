/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RDMA netlink answers (discovery/netlink.h): the input is one datagram as the kernel
 * would send it, read for request sequence 1 (what the corpus' seeds use) and 2. Whatever
 * the bytes, the parser reads nothing outside them and what it keeps is well formed.
 */
#include <errno.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "netlink.h"

static void check(const void *buf, size_t size, uint32_t seq)
{
	struct disc_nl_answer ans = {.netns_mode = -1};
	int r = disc_nl_parse(buf, size, seq, &ans);

	fuzz_assert(r == 0 || r == -EBADMSG);
	if (r < 0)
		return;
	fuzz_assert(ans.netns_mode == -1 || ans.netns_mode == DISC_NETNS_SHARED ||
		    ans.netns_mode == DISC_NETNS_EXCLUSIVE);
	fuzz_assert(ans.error <= 0 && ans.error >= -4095);
	fuzz_assert(!ans.error || ans.done);
	fuzz_assert(memchr(ans.name, '\0', sizeof(ans.name)) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The kernel's datagrams start aligned: so does the copy. */
	_cleanup_free_ void *buf = malloc(size ? size : 1);

	if (!buf)
		abort();
	memcpy(buf, data, size);
	check(buf, size, 1);
	check(buf, size, 2);
	return 0;
}
