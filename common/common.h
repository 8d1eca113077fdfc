/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common: the few helpers every module shares - cleanup attributes, logging and
 * small, hostile-input-safe file reads. Nothing here knows about RDMA or CDI.
 *
 * Error contract (whole project): functions return int, >= 0 on success and
 * -errno on failure; constructors return NULL only on out-of-memory; out-parameters
 * are named ret_* and written only on success. Library modules log at debug level at
 * most; main(), the daemon and the hook decide what the user sees.
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "rc-error.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p)
{
	free(*(void **)p);
}
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete) defines cJSON_Deletep() for _cleanup_(). */
#define DEFINE_CLEANUP_FUNC(type, fn)                                                              \
	static inline void fn##p(type **p)                                                         \
	{                                                                                          \
		if (*p)                                                                            \
			fn(*p);                                                                    \
	}

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _tp = (p);                                                           \
		(p) = NULL;                                                                        \
		_tp;                                                                               \
	})
#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _tf = (fd);                                                                    \
		(fd) = -1;                                                                         \
		_tf;                                                                               \
	})

/* ---- logging ---------------------------------------------------------------- */

/*
 * One line per event on stderr. Text: "[TS ]IDENT: [LEVEL: ]MESSAGE[ key=value...]", TS an
 * RFC 3339 UTC time with milliseconds when timestamps are on (log_set_timestamps), values
 * quoted when they need it. JSON (log_set_json): one object per line,
 * {"ts":..,"level":..,"ident":..,"msg":..,"errno":N,<fields>}, always with "ts". Messages
 * and values are escaped (quote.c): text from disk can neither split a line nor reach the
 * terminal raw. Never fails visibly; errno is preserved.
 */
enum log_level { LOG_LVL_ERROR, LOG_LVL_WARNING, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Parses "error|warning|info|debug"; -EINVAL otherwise. */
int log_parse_level(const char *s, enum log_level *ret_level);
/* json = one JSON object per line, else plain text. */
void log_set_json(bool json);
/* Parses "text|json" and applies it; -EINVAL otherwise. */
int log_parse_format(const char *s);
/* Program name printed in front of text lines. */
void log_set_ident(const char *ident);
/* RFC 3339 timestamps in front of text lines (off by default: the hook's stderr is shown
 * to users by the runtime; the daemon turns them on). JSON lines always carry "ts". */
void log_set_timestamps(bool on);

/*
 * Structured fields: LOG_FIELDS("device", name, "pci", pci, "reason", why) - string keys
 * and values in pairs (checked at compile time), a NULL value leaves its field out. Keys
 * are plain identifiers chosen by the caller; "ts", "level", "ident", "msg" and "errno"
 * are the logger's own and are written as "_<key>" instead.
 */
struct log_fields {
	const char *const *kv;
	size_t n; /* number of strings: 2 x fields */
};
/* The number of arguments, 1 to 32, as an integer constant (more: a compile error). */
#define LOG_NARGS(...)                                                                             \
	LOG_NARGS_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17,    \
		   16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, LOG_NARGS_TOO_MANY)
#define LOG_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,   \
		   a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, n,   \
		   ...)                                                                            \
	n
/* Counted by the preprocessor: clang refuses a compound literal of run-time values inside
 * _Static_assert. */
#define LOG_FIELDS(...)                                                                            \
	((struct log_fields){                                                                      \
	    .kv = (const char *const[]){__VA_ARGS__},                                              \
	    .n = LOG_NARGS(__VA_ARGS__) + 0 * sizeof(struct {                                      \
		    _Static_assert(LOG_NARGS(__VA_ARGS__) % 2 == 0,                                \
				   "LOG_FIELDS takes key, value pairs");                           \
		    int lf_pad;                                                                    \
	    })})
#define LOG_NO_FIELDS ((struct log_fields){.kv = NULL, .n = 0})

/* error != 0: ": <strerror(|error|)>" is appended unless the message already ends so. */
void log_full(enum log_level level, int error, struct log_fields fields, const char *fmt, ...)
    _printf_(4, 5);
void log_fullv(enum log_level level, int error, struct log_fields fields, const char *fmt,
	       va_list ap) _printf_(4, 0);

#define log_msg(level, error, ...) log_full(level, error, LOG_NO_FIELDS, __VA_ARGS__)
/* log_struct(LOG_LVL_WARNING, LOG_FIELDS("device", d, "reason", why), "%s unhealthy", d) */
#define log_struct(level, fields, ...) log_full(level, 0, fields, __VA_ARGS__)
/* The same with an error appended; evaluates to r. */
#define log_struct_errno(level, r, fields, ...)                                                    \
	({                                                                                         \
		int _r = (r);                                                                      \
		log_full(level, _r, fields, __VA_ARGS__);                                          \
		_r;                                                                                \
	})

#define log_debug(...) log_msg(LOG_LVL_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, 0, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LVL_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, 0, __VA_ARGS__)
/* Logs with ": <strerror(-r)>" appended and evaluates to r (negative). */
#define log_error_errno(r, ...) log_struct_errno(LOG_LVL_ERROR, r, LOG_NO_FIELDS, __VA_ARGS__)
#define log_warning_errno(r, ...) log_struct_errno(LOG_LVL_WARNING, r, LOG_NO_FIELDS, __VA_ARGS__)
#define log_debug_errno(r, ...) log_struct_errno(LOG_LVL_DEBUG, r, LOG_NO_FIELDS, __VA_ARGS__)

/* ---- printing untrusted text (quote.c) --------------------------------------------- */

/*
 * Escapes s[0..len) for one line of output: \n \t \r, \xNN for other control bytes,
 * DEL, C1 controls and bytes that are not UTF-8; with quote also \" and \\. Writes at
 * most size-1 bytes plus a NUL (never a cut UTF-8 sequence) and returns the length the
 * whole escaped text needs, as snprintf does.
 */
size_t text_escape(char *dst, size_t size, const char *s, size_t len, bool quote);
/* True when s[0..len) is valid UTF-8 (controls included): safe to hand to a JSON writer. */
bool text_is_utf8(const char *s, size_t len);
/* The offset of the first byte of s[0..len) that is not strict UTF-8 (no overlong forms,
 * no surrogates, nothing above U+10FFFF); len when all of it is. */
size_t utf8_invalid_at(const char *s, size_t len);
/* True when s is empty or holds a space, quote, backslash or anything text_escape changes. */
bool text_needs_quotes(const char *s, size_t len);
/*
 * s as it is when it needs no quotes, else "..." with text_escape(quote) inside: a file
 * name from disk printed this way is one unambiguous token. malloc'd; NULL on OOM;
 * NULL s gives "(null)".
 */
char *quote_untrusted(const char *s);
char *quote_untrusted_len(const char *s, size_t len);
/* s with text_escape(), without quotes: for a message line. malloc'd; NULL on OOM. */
char *escape_untrusted(const char *s);
/*
 * A cJSON string of text from disk: s itself when it is UTF-8 (cJSON escapes the C0
 * controls, and the printer must escape DEL and C1: cli_print_json() does), else s with
 * text_escape() so that the JSON stays valid. NULL on OOM.
 */
struct cJSON;
struct cJSON *json_untrusted_string(const char *s);
/*
 * s[0..len) for a one-line message: "..." with text_escape(quote) inside, at most the first
 * 64 bytes of s, then "..." before the closing quote when cut; NULL s is "". size must
 * be at least 8 (else buf is ""). Returns buf.
 */
const char *text_quote(char *buf, size_t size, const char *s, size_t len);
/* True when s[0..len) is non-empty and text_escape leaves it as it is: valid UTF-8 with no
 * control character (C0, DEL, C1). */
bool text_is_printable(const char *s, size_t len);
/* The 1-based line and column (in UTF-8 characters) of byte off of buf[0..len), for
 * messages about a parser's error offset. */
void text_position(const char *buf, size_t len, size_t off, unsigned *ret_line,
		   unsigned *ret_column);

/*
 * Escapes s[0..len) as the inside of a JSON string, the way cJSON does and more: \" \\
 * \n \t \r, \u00XX for the other C0 controls, DEL and the C1 controls (cJSON copies
 * these raw; U+009B is a CSI on some terminals). Other bytes are copied: the caller makes
 * sure of UTF-8 (text_is_utf8). Writes and returns as text_escape does.
 */
size_t json_escape(char *dst, size_t size, const char *s, size_t len);
/* cJSON_Print(j) with DEL and the C1 controls escaped as json_escape does: every JSON
 * document we print goes through here. malloc'd; NULL on OOM. */
char *json_print(const struct cJSON *j);

/* ---- file reading ---------------------------------------------------------------- */

/*
 * Reads a small attribute file (sysfs style) from fd into buf (NUL-terminated, trailing
 * newlines stripped) with one read(), so that it is read atomically. Files longer than
 * size-1 bytes give -EFBIG. Returns the length. Never logs.
 */
int read_attr_fd(int fd, char *buf, size_t size);

/*
 * Reads a whole regular file relative to dirfd (AT_FDCWD for cwd), at most max bytes
 * (-EFBIG beyond). *ret_buf is malloc'd and NUL-terminated. O_NOFOLLOW when nofollow.
 * Anything but a regular file gives -EBADFD; a FIFO does not block the open. Never logs.
 */
int read_full_file_at(int dirfd, const char *path, size_t max, bool nofollow, char **ret_buf,
		      size_t *ret_len);

/* Reads all of fd (stdin, pipes) up to max bytes (-EFBIG beyond). */
int read_full_fd(int fd, size_t max, char **ret_buf, size_t *ret_len);

/* fdopendir() that always takes fd: on failure fd is closed and NULL returned with errno
 * set, so that the caller has one thing to clean up either way. */
DIR *fdopendir_consume(int fd);
/* True for "." and "..", which readdir() lists and nobody wants. */
bool dot_or_dot_dot(const char *name);

/* The shortest path lexically equal to the absolute path p: no "//", "." or "..", no
 * trailing '/' ("/a/./b/../c/" -> "/a/c"; ".." at the root stays at the root). Symlinks
 * are not looked at. malloc'd, NULL on OOM or when p is not absolute. */
char *path_clean(const char *p);

/* Writes all of buf to fd, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len);

/* FNV-1a over len bytes, continuing from h (FNV1A64_INIT to start): tiny, and the same on
 * every host and release, for names and IDs that must never change. */
#define FNV1A64_INIT 0xcbf29ce484222325ULL
uint64_t fnv1a64(const void *p, size_t len, uint64_t h);

/* mkdir -p: creates the missing directories of path, each with exactly mode (whatever
 * the umask); existing ones are left as they are. 0 or -errno. */
int mkdir_all(const char *path, mode_t mode);

/* Parses a decimal integer filling the whole string (after trimming spaces). */
int parse_int64(const char *s, long long *ret);
/* "major:minor" as in sysfs dev files. */
int parse_dev_numbers(const char *s, unsigned *ret_major, unsigned *ret_minor);

/*
 * Parses a listen address: "IPv4:PORT" or "[IPv6]:PORT", numeric only (no host names:
 * a daemon's bind address must not depend on DNS), port 1 to 65535 (listen-address.c).
 * Returns 0 or -EINVAL with a one-line reason in *err. Does not log.
 */
int parse_listen_address(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len,
			 struct rc_error **err);
/* ss as parse_listen_address() takes it ("127.0.0.1:9400", "[::1]:9400") into buf. */
void format_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t size);

/* qsort()/bsearch() comparator for an array of char * (strcmp of the pointed-to strings). */
int cmp_strp(const void *a, const void *b);

static inline bool ascii_is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
/* isalnum() without the locale: names are checked byte for byte. */
static inline bool ascii_is_alnum(char c)
{
	return ascii_is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/*
 * Parses a memory lock limit (the hook's --memlock, the config's memlock): "unlimited"
 * (any case; RLIM_INFINITY) or a positive decimal byte count with an optional binary
 * suffix K, M or G (any case). -EINVAL on garbage or zero, -ERANGE when it overflows or
 * equals RLIM_INFINITY (a byte count must not silently mean "unlimited").
 */
int parse_memlock(const char *s, rlim_t *ret);

/* ---- Kubernetes names (kube-name.c): the API server's rules, so that we accept what it
 * accepts and nothing more ---------------------------------------------------------- */
#define DNS_LABEL_MAX 63
#define DNS_SUBDOMAIN_MAX 253
/* A DNS-1123 label (namespaces, request names): at most 63 of [a-z0-9-], alphanumeric at
 * both ends. NULL is not valid. */
bool dns_label_is_valid(const char *s);
bool dns_label_is_valid_len(const char *s, size_t len);
/* A DNS-1123 subdomain (most object names, node names, driver names): at most 253
 * characters, dot-separated labels as above (each non-empty: "a..b" is refused; no
 * per-label length limit, as in Kubernetes). NULL is not valid. */
bool dns_subdomain_is_valid(const char *s);
bool dns_subdomain_is_valid_len(const char *s, size_t len);

/* ---- growable arrays (array.c) ------------------------------------------------------ */
/*
 * Makes *array (of *cap elements of size bytes) hold at least need elements: the
 * capacity doubles from 16, so n pushes cost O(n) copies. 0, or -ENOMEM (on overflow too)
 * with *array and *cap unchanged. ARRAY_RESERVE(v, cap, n + 1) before v[n++] = x.
 */
int array_reserve(void **array, size_t *cap, size_t need, size_t size);
#define ARRAY_RESERVE(array, cap, need)                                                            \
	array_reserve((void **)&(array), &(cap), (need), sizeof(*(array)))

/* True when s is non-empty, at most max chars and every char is in [A-Za-z0-9_.:-]. */
bool name_is_safe(const char *s, size_t max);

/* strdup that aborts on OOM is not used: callers get NULL and return -ENOMEM. */
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);
