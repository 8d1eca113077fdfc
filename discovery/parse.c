/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parsers of what sysfs holds (discovery-internal.h): paths, PCI addresses, device
 * names, port states, PCI ids, GUIDs. Pure functions on strings: no I/O, so the unit
 * tests and the fuzzers call them directly.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "discovery-internal.h"

int disc_path_join(const char *base, const char *rel, char *out, size_t size)
{
	size_t len = 0;
	const char *parts[2] = {base, rel};

	if (size == 0)
		return -ENAMETOOLONG;
	if (rel[0] == '/')
		parts[0] = "";
	out[0] = '\0';
	for (size_t i = 0; i < 2; i++) {
		const char *p = parts[i];

		while (*p) {
			const char *e;
			size_t n;

			while (*p == '/')
				p++;
			if (!*p)
				break;
			e = strchrnul(p, '/');
			n = (size_t)(e - p);
			if (n == 1 && p[0] == '.') {
				/* nothing */
			} else if (n == 2 && p[0] == '.' && p[1] == '.') {
				while (len > 0 && out[len - 1] != '/')
					len--;
				if (len > 0)
					len--;
				out[len] = '\0';
			} else {
				if (len + (len ? 1 : 0) + n + 1 > size)
					return -ENAMETOOLONG;
				if (len)
					out[len++] = '/';
				memcpy(out + len, p, n);
				len += n;
				out[len] = '\0';
			}
			p = e;
		}
	}
	return (int)len;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool hex_run(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hexval(s[i]) < 0)
			return false;
	return true;
}

bool disc_pci_addr_valid(const char *s)
{
	size_t len = strlen(s), dom;

	/* domain ":" bus(2) ":" dev(2) "." fn(1) */
	if (len < 4 + 8 || len > 8 + 8)
		return false;
	dom = len - 8;
	return hex_run(s, dom) && s[dom] == ':' && hex_run(s + dom + 1, 2) && s[dom + 3] == ':' &&
	       hex_run(s + dom + 4, 2) && s[dom + 6] == '.' && s[dom + 7] >= '0' &&
	       s[dom + 7] <= '7';
}

static unsigned long long pci_key(const char *s)
{
	size_t dom = strlen(s) - 8;
	unsigned long long d = strtoull(s, NULL, 16);

	return (d << 24) | (strtoull(s + dom + 1, NULL, 16) << 16) |
	       (strtoull(s + dom + 4, NULL, 16) << 8) | (unsigned long long)(s[dom + 7] - '0');
}

int disc_pci_compare(const char *a, const char *b)
{
	unsigned long long ka, kb;

	if (!disc_pci_addr_valid(a) || !disc_pci_addr_valid(b))
		return strcmp(a, b);
	ka = pci_key(a);
	kb = pci_key(b);
	return ka < kb ? -1 : ka > kb;
}

bool disc_ibdev_name_ok(const char *name)
{
	size_t n;

	/* name_is_safe() lets dots through; ".." has no business in a device name that
	 * ends up in file names and CDI names. */
	if (!name_is_safe(name, DISC_NAME_MAX - 1) || strstr(name, ".."))
		return false;
	/* The CDI device-name rule (first and last character alphanumeric), and no name
	 * the spec's aliases take ("all", an index): such a device would be left out of
	 * the spec while still counted by `discover`, shifting every index after it. */
	n = strlen(name);
	if (!isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[n - 1]))
		return false;
	return strcmp(name, "all") != 0 && name[strspn(name, "0123456789")] != '\0';
}

bool disc_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

int disc_parse_state(const char *s, int *ret_num, char *name, size_t name_size)
{
	long v = 0;
	const char *p = s;
	size_t n;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > 255)
			return -EINVAL;
	}
	if (p[0] != ':' || p[1] != ' ')
		return -EINVAL;
	p += 2;
	n = strlen(p);
	if (n == 0 || n >= name_size || !disc_printable(p))
		return -EINVAL;
	memcpy(name, p, n + 1);
	*ret_num = (int)v;
	return 0;
}

int disc_parse_pci_id(const char *s, unsigned *ret)
{
	unsigned long v;
	char *end;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !isxdigit((unsigned char)s[2]))
		return -EINVAL;
	errno = 0;
	v = strtoul(s + 2, &end, 16);
	if (errno || *end)
		return -EINVAL;
	if (v > 0xffff)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

/* "xxxx:xxxx:xxxx:xxxx" in lower-case hex, as the kernel prints a GUID. */
bool disc_guid_valid(const char *g)
{
	if (strlen(g) != 19)
		return false;
	for (int i = 0; i < 19; i++)
		if ((i % 5 == 4) ? g[i] != ':' : hexval(g[i]) < 0)
			return false;
	return true;
}
