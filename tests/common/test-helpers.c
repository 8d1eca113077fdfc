/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common's small helpers. Printing untrusted text (quote.c): messages, one-line quotes and
 * JSON documents escape C0 controls, DEL and the C1 controls alike, whichever module
 * prints them. Then the growable array, cmp_strp and the directory helpers (util.c).
 */
#include <fcntl.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common.h"
#include "../tap.h"

static void test_text_quote(void)
{
	char buf[96], small[16], longer[200];

	EQ_STR(text_quote(buf, sizeof(buf), "a\x01\"b", 4), "\"a\\x01\\\"b\"",
	       "controls and quotes escaped");
	EQ_STR(text_quote(buf, sizeof(buf), "x\xc2\x9b[31m", 7), "\"x\\xc2\\x9b[31m\"",
	       "a C1 control (CSI) escaped");
	EQ_STR(text_quote(buf, sizeof(buf), "caf\xc3\xa9", 5), "\"caf\xc3\xa9\"",
	       "printable UTF-8 kept");
	EQ_STR(text_quote(buf, sizeof(buf), "a\x7f", 2), "\"a\\x7f\"", "DEL escaped");
	memset(longer, 'x', 100);
	EQ_STR(text_quote(buf, sizeof(buf), longer, 100),
	       "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\"",
	       "the first 64 bytes, then ...");
	/* 63 x 'a' then a 2-byte sequence across the 64-byte cut: not split. */
	memset(longer, 'a', 63);
	memcpy(longer + 63, "\xc3\xa9zz", 4);
	text_quote(buf, sizeof(buf), longer, 67);
	ok(strstr(buf, "\\x") == NULL && strstr(buf, "a...\""),
	   "a cut never splits a UTF-8 sequence: %s", buf);
	EQ_STR(text_quote(small, sizeof(small), "abcdefghijklmnop", 16), "\"abcdefghij...\"",
	       "cut to the buffer");
	EQ_STR(text_quote(small, 7, "abc", 3), "", "a buffer under 8 bytes gives \"\"");
}

static void test_printable(void)
{
	ok(text_is_printable("caf\xc3\xa9 x", 7), "printable UTF-8");
	ok(!text_is_printable("", 0), "empty is not");
	ok(!text_is_printable("a\tb", 3), "a tab is a control");
	ok(!text_is_printable("a\x7f", 2), "DEL");
	ok(!text_is_printable("a\xc2\x85", 3), "a C1 control (NEL)");
	ok(!text_is_printable("a\xff", 2), "invalid UTF-8");

	ok(text_is_utf8("a\x01\xc2\x85\xc3\xa9", 6), "controls, C1 and UTF-8 are valid UTF-8");
	EQ_INT(utf8_invalid_at("ab\xc0\xafx", 5), 2, "an overlong '/' is not");
	EQ_INT(utf8_invalid_at("a\xed\xa0\x80", 4), 1, "nor a surrogate");
	EQ_INT(utf8_invalid_at("a\xf4\x90\x80\x80", 5), 1, "nor a code point past U+10FFFF");
	EQ_INT(utf8_invalid_at("a\xe2\x82", 3), 1, "nor a cut sequence");
	EQ_INT(utf8_invalid_at("a\xf0\x9f\x98\x80", 5), 5, "a 4-byte sequence is");
}

static void test_json_escape(void)
{
	char buf[128];
	size_t n;

	n = json_escape(buf, sizeof(buf), "a\"b\\c\nd\x01\x7f\xc2\x9b\xc3\xa9", 13);
	EQ_STR(buf, "a\\\"b\\\\c\\nd\\u0001\\u007f\\u009b\xc3\xa9",
	       "quotes, backslashes, C0, DEL and C1 escaped; UTF-8 kept");
	EQ_INT(n, strlen(buf), "returns the length");
	EQ_INT(json_escape(NULL, 0, "\x01", 1), 6, "measures without writing");
	n = json_escape(buf, 4, "ab\x01", 3);
	ok(n == 8 && strcmp(buf, "ab") == 0, "an escape that does not fit is left out whole");
}

static void test_json_print(void)
{
	cJSON *o = cJSON_CreateObject(), *back;
	char *s;

	cJSON_AddStringToObject(o, "name", "x\xc2\x9b[2J\x7f\x01y\xc3\xa9");
	s = json_print(o);
	ok(s && strstr(s, "\"x\\u009b[2J\\u007f\\u0001y\xc3\xa9\""),
	   "C0, DEL and C1 inside strings all escaped: %s", s ? s : "(null)");
	ok(s && !strchr(s, 0x7f) && !strstr(s, "\xc2\x9b"), "no raw DEL or C1 left");
	back = s ? cJSON_Parse(s) : NULL;
	ok(back && strcmp(cJSON_GetObjectItem(back, "name")->valuestring,
			  "x\xc2\x9b[2J\x7f\x01y\xc3\xa9") == 0,
	   "and it parses back to the same string");
	cJSON_Delete(back);
	free(s);
	cJSON_Delete(o);
	ok(json_print(NULL) == NULL, "NULL in, NULL out");
}

static void test_helpers(void)
{
	const char *v[] = {"mlx5_2", "mlx5_10", "mlx5_1"};
	int *a = NULL;
	size_t cap = 0, n = 0;
	bool all = true;
	void *p = NULL;
	size_t pcap = 0;

	qsort(v, ELEMENTSOF(v), sizeof(*v), cmp_strp);
	ok(strcmp(v[0], "mlx5_1") == 0 && strcmp(v[1], "mlx5_10") == 0 &&
	       strcmp(v[2], "mlx5_2") == 0,
	   "cmp_strp sorts char * arrays with strcmp");

	for (int i = 0; i < 1000; i++) {
		if (ARRAY_RESERVE(a, cap, n + 1) < 0) {
			all = false;
			break;
		}
		a[n++] = i;
	}
	for (size_t i = 0; all && i < n; i++)
		all = a[i] == (int)i;
	ok(all && n == 1000 && cap == 1024, "1000 pushes keep every value, capacity %zu", cap);
	ok(ARRAY_RESERVE(a, cap, 10) == 0 && cap == 1024, "reserving less changes nothing");
	free(a);

	ok(array_reserve(&p, &pcap, SIZE_MAX / 2, 4) == -ENOMEM && !p && pcap == 0,
	   "an overflowing size is -ENOMEM and changes nothing");
	ok(array_reserve(&p, &pcap, SIZE_MAX, 1) == -ENOMEM && !p && pcap == 0,
	   "a count past SIZE_MAX / 2 too");
}

static void test_dirs(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	DIR *d;

	errno = 0;
	ok(fd >= 0 && !fdopendir_consume(fd) && errno == ENOTDIR,
	   "fdopendir_consume of a non-directory: NULL, errno kept");
	ok(fcntl(fd, F_GETFD) < 0 && errno == EBADF, "and the fd is closed");
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fdopendir_consume(fd);
	ok(d && dirfd(d) == fd, "a directory: the DIR owns the fd");
	if (d)
		closedir(d);
	ok(dot_or_dot_dot(".") && dot_or_dot_dot("..") && !dot_or_dot_dot("...") &&
	       !dot_or_dot_dot(".a") && !dot_or_dot_dot("a"),
	   "dot_or_dot_dot: exactly . and ..");
}

static void test_path_clean(void)
{
	static const char *const cases[][2] = {
	    {"/", "/"},
	    {"/a/b", "/a/b"},
	    {"/a//b/", "/a/b"},
	    {"/a/./b/../c", "/a/c"},
	    {"/etc/containerd/conf.d/../config.toml", "/etc/containerd/config.toml"},
	    {"/../../x", "/x"},
	    {"/a/..", "/"},
	    {"/a/...", "/a/..."},
	    {"/.a/b.", "/.a/b."},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *c = path_clean(cases[i][0]);

		EQ_STR(c, cases[i][1], cases[i][0]);
		free(c);
	}
	ok(!path_clean("rel/a") && !path_clean(""), "path_clean: a relative path is refused");
}

int main(void)
{
	test_text_quote();
	test_printable();
	test_json_escape();
	test_json_print();
	test_helpers();
	test_dirs();
	test_path_clean();
	return tap_done();
}
