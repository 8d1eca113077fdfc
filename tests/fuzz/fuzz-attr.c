/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sysfs attribute helpers of common/: read_attr_fd() on a file holding the input
 * (first byte: the buffer size), then parse_int64(), parse_dev_numbers(), name_is_safe()
 * and the untrusted-text quoting on what it read, each checked against its contract.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "fuzz.h"

static void check_parsers(const char *s)
{
	unsigned ma = 7, mi = 7;
	long long v;
	size_t n = strlen(s);

	/* A value that parsed holds a digit. */
	if (parse_int64(s, &v) == 0)
		fuzz_assert(strpbrk(s, "0123456789"));
	if (parse_dev_numbers(s, &ma, &mi) == 0)
		fuzz_assert(ma <= 0xfff && mi <= 0xfffff && strchr(s, ':'));
	else
		fuzz_assert(ma == 7 && mi == 7); /* out-parameters only on success */
	if (name_is_safe(s, 64)) {
		fuzz_assert(n > 0 && n <= 64);
		fuzz_assert(strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				      "0123456789_.:-") == n);
	}
}

static void check_quote(const char *s, size_t len)
{
	char small[16];
	size_t need = text_escape(small, sizeof(small), s, len, true);
	_cleanup_free_ char *full = malloc(need + 1), *q = quote_untrusted_len(s, len);

	fuzz_assert(strlen(small) < sizeof(small));
	if (!full || !q)
		return;
	fuzz_assert(text_escape(full, need + 1, s, len, true) == need);
	fuzz_assert(strlen(full) == need);
	/* Escaped text is one line of printable bytes (or UTF-8): no control byte is left. */
	for (const unsigned char *p = (const unsigned char *)full; *p; p++)
		fuzz_assert(*p >= 0x20 && *p != 0x7f);
	fuzz_assert(text_is_utf8(q, strlen(q)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_close_ int fd = -1;
	char buf[256];
	size_t bufsize;
	int r;

	if (size < 1)
		return 0;
	bufsize = data[0] % sizeof(buf) + 1;
	fd = memfd_create("fuzz-attr", MFD_CLOEXEC);
	if (fd < 0 || write_all(fd, data + 1, size - 1) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	memset(buf, 'x', sizeof(buf));
	r = read_attr_fd(fd, buf, bufsize);
	if (bufsize < 2) {
		fuzz_assert(r == -EINVAL);
		return 0;
	}
	if (r >= 0) {
		fuzz_assert((size_t)r < bufsize && strlen(buf) == (size_t)r);
		fuzz_assert(r == 0 || (buf[r - 1] != '\n' && buf[r - 1] != '\r'));
		check_parsers(buf);
	} else {
		fuzz_assert(r == -EFBIG || r == -EBADMSG);
		fuzz_assert(r != -EFBIG || size - 1 >= bufsize);
	}
	check_quote((const char *)data + 1, size - 1);
	return 0;
}
