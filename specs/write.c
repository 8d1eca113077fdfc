/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Putting our spec file in place without touching anyone else's.
 *
 * A file is "ours" when it parses as a spec of our kind that carries our hook
 * (spec_is_ours). We only ever replace or remove such files: the kind-named file in the
 * other format is removed after the new one is in place, because the same device
 * defined twice in one directory makes runtimes drop it.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "specs.h"

enum owner { OWNER_ABSENT, OWNER_US, OWNER_OTHER };

/* The reason for a failed write, as cdi_write_file_atomic() and we report it. */
static const char *symlink_or_other(int r)
{
	if (r == -ELOOP)
		return "is a symlink, refusing to follow it";
	if (r == -EEXIST)
		return "exists and is not a regular file, refusing to replace it";
	return strerror(-r);
}

/*
 * Whose file dirfd/name is. ret_st gets the identity of the file judged (st_ino 0 when
 * absent), so the write or removal that follows can refuse a file swapped in meanwhile.
 * A file holding exactly ours (the spec about to be written) is ours without parsing it:
 * the steady state of a rescan.
 */
static int file_owner(int dirfd, const char *name, enum cdi_format fmt, const char *kind,
		      const char *ours, size_t ours_len, enum owner *ret, struct stat *ret_st)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_close_ int fd = -1;
	size_t len;
	int r;

	*ret_st = (struct stat){};
	/* O_NONBLOCK: a FIFO put here must not hang us; it is refused below. */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		*ret = OWNER_ABSENT;
		return 0;
	}
	if (fd < 0 && errno != ELOOP)
		return -errno;
	if (fd >= 0 && fstat(fd, ret_st) < 0)
		return -errno;
	if (fd < 0)
		r = -ELOOP;
	else if (!S_ISREG(ret_st->st_mode))
		r = -EBADFD;
	else
		r = read_full_fd(fd, CDI_SPEC_MAX_BYTES, &buf, &len);
	if (r == -ELOOP || r == -EBADFD || r == -EFBIG) {
		/* A symlink, a directory, a device, a huge file: not something we wrote. */
		*ret = OWNER_OTHER;
		return 0;
	}
	if (r < 0)
		return r;
	if (ours && len == ours_len && memcmp(buf, ours, len) == 0) {
		*ret = OWNER_US;
		return 0;
	}
	r = cdi_spec_parse(buf, len, fmt, &spec, NULL);
	*ret = r >= 0 && spec_is_ours(spec, kind) ? OWNER_US : OWNER_OTHER;
	return 0;
}

static bool same_file(int dirfd, const char *name, const struct stat *st)
{
	struct stat now;

	return fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st->st_ino &&
	       now.st_dev == st->st_dev;
}

static int split_path(const char *path, char **ret_dir, char **ret_base)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = NULL, *base = NULL;

	if (!slash) {
		dir = strdup(".");
		base = strdup(path);
	} else {
		dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		base = strdup(slash + 1);
	}
	if (!dir || !base)
		return -ENOMEM;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EISDIR;
	*ret_dir = TAKE_PTR(dir);
	*ret_base = TAKE_PTR(base);
	return 0;
}

/* Best effort: a temp we cannot remove does not stop the write (runtimes skip it). */
static void remove_stale_temps(const char *dir, const char *name)
{
	int r = cdi_remove_stale_temps(dir, name);

	if (r > 0)
		log_debug("removed %d stale temp file(s) of %s/%s", r, dir, name);
	else if (r < 0)
		log_debug("removing stale temp files of %s/%s: %s, ignoring", dir, name,
			  strerror(-r));
}

static int write_output(const char *output, const char *buf, size_t len, bool remove_temps,
			char **ret_path, bool *ret_changed, struct rc_error **err)
{
	_cleanup_free_ char *dir = NULL, *base = NULL, *path = NULL;
	int r;

	if (strcmp(output, "-") == 0) {
		r = write_all(STDOUT_FILENO, buf, len);
		if (r < 0) {
			return rc_error_wrap(err, r, "stdout");
		}
		path = strdup("-");
		if (!path)
			return -ENOMEM;
		if (ret_changed)
			*ret_changed = true;
	} else {
		r = split_path(output, &dir, &base);
		if (r < 0) {
			return rc_error_set(err, r, "%s: not a file name", output);
		}
		if (remove_temps)
			remove_stale_temps(dir, base);
		r = cdi_write_file_atomic(dir, base, buf, len);
		if (r < 0) {
			return rc_error_set(err, r, "%s: %s", output, symlink_or_other(r));
		}
		path = strdup(output);
		if (!path)
			return -ENOMEM;
		if (ret_changed)
			*ret_changed = r == CDI_WRITE_UPDATED;
	}
	if (ret_path)
		*ret_path = TAKE_PTR(path);
	return 0;
}

/*
 * Another rdma-cdi (a second `generate`, the daemon) may replace the file between our
 * look at it and our rename. Each lost race means another writer's rename landed, and
 * a writer that lands stops, so looking again converges; the bound is for writers
 * that never stop.
 */
#define SPEC_WRITE_TRIES 64

struct judged {
	enum owner other_owner;
	struct stat name_st, other_st;
};

/* Judges dir/name and dir/other before a write: 0 when name may be written (j says what
 * was found, *dirfd the dir or -1 when it is missing), else -errno with the reason in err. */
static int judge(const char *dir, const char *name, const char *other, const char *path,
		 enum cdi_format fmt, const char *kind, const char *buf, size_t len, int *dirfd,
		 struct judged *j, struct rc_error **err)
{
	enum cdi_format other_fmt = fmt == CDI_FORMAT_JSON ? CDI_FORMAT_YAML : CDI_FORMAT_JSON;
	enum owner owner;
	struct stat st;
	int r;

	*j = (struct judged){};
	if (*dirfd >= 0)
		close(*dirfd);
	*dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*dirfd < 0 && errno == ENOENT)
		return 0;
	if (*dirfd < 0) {
		/* O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR: name the real cause. */
		r = lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) ? -ELOOP : -errno;
		return rc_error_set(err, r, "%s: %s", dir, symlink_or_other(r));
	}
	if (fstatat(*dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
		r = S_ISLNK(st.st_mode) ? -ELOOP : -EEXIST;
		return rc_error_set(err, r, "%s: %s", path, symlink_or_other(r));
	}
	r = file_owner(*dirfd, name, fmt, kind, buf, len, &owner, &j->name_st);
	if (r >= 0 && owner == OWNER_OTHER) {
		return rc_error_set(err, -EEXIST,
				    "%s exists and was not written by rdma-cdi, refusing to "
				    "replace it",
				    path);
	}
	if (r >= 0)
		r = file_owner(*dirfd, other, other_fmt, kind, NULL, 0, &j->other_owner,
			       &j->other_st);
	if (r < 0) {
		return rc_error_wrap(err, r, "%s", dir);
	}
	return 0;
}

int spec_write(const cJSON *spec, const struct spec_write_options *opts, char **ret_path,
	       bool *ret_changed, struct rc_error **err)
{
	const char *dir = opts->spec_dir ? opts->spec_dir : SPEC_DEFAULT_DIR;
	const cJSON *kind_item = cJSON_GetObjectItemCaseSensitive(spec, "kind");
	_cleanup_free_ char *buf = NULL, *name = NULL, *other = NULL, *path = NULL;
	_cleanup_close_ int dirfd = -1;
	struct judged j;
	size_t len;
	int r;

	if (!cJSON_IsString(kind_item)) {
		return rc_error_set(err, -EINVAL, "spec has no kind");
	}
	r = cdi_spec_format(spec, opts->format, &buf, &len);
	if (r < 0) {
		return rc_error_wrap(err, r, "formatting the spec");
	}
	if (opts->output)
		return write_output(opts->output, buf, len, opts->remove_stale_temps, ret_path,
				    ret_changed, err);

	name = cdi_spec_file_name(kind_item->valuestring, opts->format);
	other =
	    cdi_spec_file_name(kind_item->valuestring,
			       opts->format == CDI_FORMAT_JSON ? CDI_FORMAT_YAML : CDI_FORMAT_JSON);
	path = strdup_printf("%s/%s", dir, name);
	if (!name || !other || !path)
		return -ENOMEM;
	if (opts->remove_stale_temps) {
		remove_stale_temps(dir, name);
		remove_stale_temps(dir, other);
	}

	for (int tries = 1;; tries++) {
		r = judge(dir, name, other, path, opts->format, kind_item->valuestring, buf, len,
			  &dirfd, &j, err);
		if (r < 0)
			return r;
		/* Only the file judged ours above (or still no file) is replaced. -EEXIST: it
		 * changed since; judge it again (the same bytes now are success). */
		r = cdi_write_file_atomic_expect(dir, name, buf, len, &j.name_st);
		if (r != -EEXIST)
			break;
		if (tries == SPEC_WRITE_TRIES) {
			return rc_error_set(err, -EBUSY,
					    "%s kept changing while rdma-cdi was writing it (%d "
					    "tries), giving up for now",
					    path, tries);
		}
	}
	if (r < 0) {
		return rc_error_set(err, r, "%s: %s", path, symlink_or_other(r));
	}
	if (ret_changed)
		*ret_changed = r == CDI_WRITE_UPDATED;

	if (j.other_owner == OWNER_US && !same_file(dirfd, other, &j.other_st))
		j.other_owner = OWNER_OTHER; /* replaced since we judged it: not ours any more */
	if (j.other_owner == OWNER_US && unlinkat(dirfd, other, 0) < 0 && errno != ENOENT) {
		r = -errno;
		return rc_error_wrap(err, r, "%s/%s: removing our copy in the other format", dir,
				     other);
	}
	if (ret_path)
		*ret_path = TAKE_PTR(path);
	return 0;
}

const char *spec_write_fix(int error)
{
	switch (error) {
	case -EEXIST:
		return "move the file that is in the way, or point --spec-dir elsewhere";
	case -ENOSPC:
	case -EDQUOT:
		return "free space in the file system; nothing was replaced";
	case -EROFS:
		return "the file system is read-only: give a writable --spec-dir (or --output)";
	case -EACCES:
	case -EPERM:
		return "run as root, or fix the spec dir's permissions";
	case -ENOENT:
	case -ENOTDIR:
		return "create the spec dir";
	default:
		return "fix the cause";
	}
}
