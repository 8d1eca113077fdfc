/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The readers behind `rdma-cdi doctor`'s runtime checks on buffers: the TOML subset
 * (containerd's and CRI-O's configs, every value type a real config.toml has, syntax
 * errors with line:column), systemd's rlimit syntax and unit settings. TAP output.
 */
#include <string.h>

#include "common.h"
#include "doctor-internal.h"
#include "rc-error.h"

#include "../tap.h"

/* Every callback as one line "key|type|value|line:col" ('\n' in keys shown as '/'). */
static char seen[8192];

static void collect(void *ud, const char *key, const struct doctor_toml_value *v)
{
	size_t n = strlen(seen);
	char k[512], val[512] = "";

	snprintf(k, sizeof(k), "%s", key);
	for (char *p = k; *p; p++)
		if (*p == '\n')
			*p = '/';
	switch (v->type) {
	case DOCTOR_TOML_BOOL:
		snprintf(val, sizeof(val), "bool|%s", v->b ? "true" : "false");
		break;
	case DOCTOR_TOML_INT:
		snprintf(val, sizeof(val), "int|%lld", v->i);
		break;
	case DOCTOR_TOML_STRING:
		snprintf(val, sizeof(val), "str|%s", v->s);
		break;
	case DOCTOR_TOML_STRINGS: {
		char *s = cJSON_PrintUnformatted(v->strs);

		snprintf(val, sizeof(val), "strs|%s", s ? s : "?");
		free(s);
		break;
	}
	case DOCTOR_TOML_OTHER:
		snprintf(val, sizeof(val), "other");
		break;
	}
	snprintf(seen + n, sizeof(seen) - n, "%s|%s|%d:%d\n", k, val, v->line, v->col);
}

static void toml_good(const char *what, const char *doc, const char *want)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r;

	seen[0] = '\0';
	r = doctor_toml_parse(doc, strlen(doc), collect, NULL, &err);
	if (!ok(r == 0 && !err && strcmp(seen, want) == 0, "TOML %s", what))
		printf("#   r=%d err=%s\n#   got:\n%s#   want:\n%s", r, rc_error_msg(err, r), seen,
		       want);
}

static void toml_bad(const char *doc, size_t len, const char *want_err)
{
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = doctor_toml_parse(doc, len, NULL, NULL, &err);
	const char *msg = rc_error_msg(err, r);

	ok(r == -EBADMSG && err && err->code == EBADMSG &&
	       strncmp(msg, want_err, strlen(want_err)) == 0,
	   "TOML %.30s refused: \"%s\" (got r=%d \"%s\")", doc, want_err, r, msg);
}

static void test_toml(void)
{
	char deep[200];
	size_t n = 0;

	toml_good("containerd 1.7 config",
		  "version = 2\n"
		  "root = \"/var/lib/containerd\" # comment\n"
		  "\n"
		  "[plugins]\n"
		  "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
		  "    enable_cdi = true\n"
		  "    cdi_spec_dirs = [\"/etc/cdi\", '/var/run/cdi']\n"
		  "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
		  "    runtime_type = \"io.containerd.runc.v2\"\n",
		  "version|int|2|1:11\n"
		  "root|str|/var/lib/containerd|2:8\n"
		  "plugins/io.containerd.grpc.v1.cri/enable_cdi|bool|true|6:18\n"
		  "plugins/io.containerd.grpc.v1.cri/cdi_spec_dirs|strs|[\"/etc/cdi\",\"/var/run/"
		  "cdi\"]|7:21\n"
		  "plugins/io.containerd.grpc.v1.cri/containerd/runtimes/runc/runtime_type|str|io."
		  "containerd.runc.v2|9:20\n");
	toml_good("dotted and quoted keys at the top level",
		  "plugins.\"io.containerd.grpc.v1.cri\" . enable_cdi = false\n"
		  "'a.b'.c = 1\n",
		  "plugins/io.containerd.grpc.v1.cri/enable_cdi|bool|false|1:52\n"
		  "a.b/c|int|1|2:11\n");
	toml_good("multi-line arrays with comments and a trailing comma",
		  "[crio.runtime]\n"
		  "cdi_spec_dirs = [\n"
		  "  \"/etc/cdi\",  # static\n"
		  "\n"
		  "  \"/var/run/cdi\",\n"
		  "]\n"
		  "after = true\n",
		  "crio/runtime/cdi_spec_dirs|strs|[\"/etc/cdi\",\"/var/run/cdi\"]|2:17\n"
		  "crio/runtime/after|bool|true|7:9\n");
	toml_good("values we do not read are skipped, not misread",
		  "motd = \"\"\"\n"
		  "enable_cdi = true\n"
		  "\"\"\"\n"
		  "lit = '''x\n"
		  "y'''\n"
		  "when = 1979-05-27T07:32:00Z\n"
		  "day = 1979-05-27 07:32:00\n"
		  "f = 1.5\n"
		  "neg = -12\n"
		  "mixed = [1, \"a\"]\n"
		  "nested = [[1, 2], [\"x\"]]\n"
		  "t = { a = 1, b = { c = \"}\" } }\n"
		  "[[runtimes]]\n"
		  "name = \"runc\"\n"
		  "last = 'ok'\n",
		  "motd|other|1:8\n"
		  "lit|other|4:7\n"
		  "when|other|6:8\n"
		  "day|other|7:7\n"
		  "f|other|8:5\n"
		  "neg|int|-12|9:7\n"
		  "mixed|other|10:9\n"
		  "nested|other|11:10\n"
		  "t|other|12:5\n"
		  "runtimes/name|str|runc|14:8\n"
		  "runtimes/last|str|ok|15:8\n");
	toml_good("CRLF line ends and escapes in strings",
		  "a = \"x\\\"y\\\\z\\tw\"\r\nb = true\r\n",
		  "a|str|x\"y\\z\tw|1:5\n"
		  "b|bool|true|2:5\n");
	toml_good("empty document", "", "");

	/* The length bounds the parse: the bytes after it are never read. */
	seen[0] = '\0';
	ok(doctor_toml_parse("a = 12", 5, collect, NULL, NULL) == 0 &&
	       strcmp(seen, "a|int|1|1:5\n") == 0,
	   "the length bounds the parse (got %s)", seen);

	toml_bad("[plugins\n", 9, "1:9: expected ']'");
	toml_bad("version = 2\nenable_cdi = tru e\n", 31, "2:18: expected the end of the line");
	toml_bad("x = \"unterminated\n", 18, "1:18: unterminated string");
	toml_bad("a = [1, 2\nb = 3\n", 16, "2:1: expected ',' or ']'");
	toml_bad("= 1\n", 4, "1:1: expected a key");
	toml_bad("a\n", 2, "1:2: expected '='");
	toml_bad("a =\n", 4, "1:4: expected a value");
	toml_bad("a = \"\\x\"\n", 9, "1:6: unsupported escape");
	toml_bad("m = \"\"\"never closed\n", 20, "2:1: unterminated multi-line");
	toml_bad("t = { a = 1\n", 12, "1:12: expected ',' or '}'");
	toml_bad("a = 1\0b = 2\n", 12, "contains a NUL byte");
	n += (size_t)snprintf(deep, sizeof(deep), "a = ");
	while (n < 4 + 40)
		deep[n++] = '[';
	deep[n] = '\0';
	toml_bad(deep, n, "1:38: nesting deeper than 32");
}

static void limit_good(const char *s, rlim_t soft, rlim_t hard)
{
	rlim_t a = 7, b = 7;
	int r = doctor_systemd_limit_parse(s, &a, &b);

	ok(r == 0 && a == soft && b == hard, "LimitMEMLOCK=%s -> %llu:%llu (got r=%d %llu:%llu)", s,
	   (unsigned long long)soft, (unsigned long long)hard, r, (unsigned long long)a,
	   (unsigned long long)b);
}

static void limit_bad(const char *s, int want)
{
	rlim_t a = 7, b = 7;
	int r = doctor_systemd_limit_parse(s, &a, &b);

	ok(r == want && a == 7 && b == 7, "LimitMEMLOCK=%s refused with %d (got %d)", s, want, r);
}

static void test_limits(void)
{
	limit_good("infinity", RLIM_INFINITY, RLIM_INFINITY);
	limit_good("65536", 65536, 65536);
	limit_good("64K", 65536, 65536);
	limit_good("8M", 8 << 20, 8 << 20);
	limit_good("1G:2G", 1ull << 30, 2ull << 30);
	limit_good("64K:infinity", 65536, RLIM_INFINITY);
	limit_good("1E", 1ull << 60, 1ull << 60);
	limit_bad("", -EINVAL);
	limit_bad("lots", -EINVAL);
	limit_bad("64Q", -EINVAL);
	limit_bad("64KB", -EINVAL);
	limit_bad(":8M", -EINVAL);
	limit_bad("8M:", -EINVAL);
	limit_bad("-1", -EINVAL);
	limit_bad("16E", -ERANGE);
	limit_bad("99999999999999999999999", -ERANGE);
}

static void unit_case(const char *what, const char *doc, int want_r, const char *want_value,
		      int want_line)
{
	char value[64] = "unset";
	int line = -1, r;

	r = doctor_unit_setting(doc, strlen(doc), "Service", "LimitMEMLOCK", value, sizeof(value),
				&line);
	ok(r == want_r && (r != 1 || (strcmp(value, want_value) == 0 && line == want_line)),
	   "unit %s: r=%d value '%s' line %d (got r=%d '%s' %d)", what, want_r, want_value,
	   want_line, r, value, line);
}

static void test_unit(void)
{
	char longv[200];

	unit_case("without the key", "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n", 0,
		  "", 0);
	unit_case("blank lines counted",
		  "[Unit]\n\nDescription=x\n\n[Service]\n\nLimitMEMLOCK=64K\n", 1, "64K", 7);
	unit_case("spaces around = and value", "[Service]\n  LimitMEMLOCK  =  infinity  \n", 1,
		  "infinity", 2);
	unit_case("only [Service] counts", "[Install]\nLimitMEMLOCK=1\n[Service]\nX=1\n", 0, "", 0);
	unit_case(
	    "the last one wins",
	    "[Service]\nLimitMEMLOCK=1K\n[Install]\nLimitMEMLOCK=9\n[Service]\nLimitMEMLOCK=2K\n",
	    1, "2K", 6);
	unit_case("an empty value resets", "[Service]\nLimitMEMLOCK=1K\nLimitMEMLOCK=\n", 1, "", 3);
	unit_case("comments and other keys",
		  "[Service]\n#LimitMEMLOCK=1\n;LimitMEMLOCK=2\n"
		  "LimitMEMLOCKX=3\n",
		  0, "", 0);
	unit_case("continuation lines",
		  "[Service]\nExecStart=/bin/x \\\n  --a\nLimitMEMLOCK=\\\n 8M\n", 1, "8M", 4);
	unit_case("CRLF", "[Service]\r\nLimitMEMLOCK=16M\r\n", 1, "16M", 2);
	ok(doctor_unit_setting("[Service]\0LimitMEMLOCK=1\n", 25, "Service", "LimitMEMLOCK", longv,
			       sizeof(longv), &(int){0}) == -EBADMSG,
	   "a NUL byte in a unit: -EBADMSG");
	memset(longv, 'x', sizeof(longv));
	memcpy(longv, "[Service]\nLimitMEMLOCK=", 23);
	longv[sizeof(longv) - 1] = '\0';
	unit_case("a value longer than the buffer", longv, -ENAMETOOLONG, "", 0);
}

int main(void)
{
	test_toml();
	test_limits();
	test_unit();
	return tap_done();
}
