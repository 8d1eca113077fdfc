/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-claim CDI spec file: written atomically beside the node's spec, and removed
 * only when the file in its place is still the one we wrote for that claim. The spec dir
 * is shared with other tools (and /var/run/cdi with every CDI user on the node), so a
 * name we compute from a UID must never leave the dir, and a file someone else put there
 * is never deleted.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi.h"
#include "claims-internal.h"
#include "dra.h"

bool dra_uid_is_valid(const char *uid)
{
	/* A CDI device name has no '/'; ".." is refused too, so no name reads as a path. */
	return uid && strnlen(uid, DRA_UID_MAX + 1) <= DRA_UID_MAX &&
	       cdi_device_name_is_valid(uid) && !strstr(uid, "..");
}

static char *claim_kind(const char *driver)
{
	char *kind;

	if (!driver || strnlen(driver, CDI_KIND_MAX + 1) > CDI_KIND_MAX)
		return NULL;
	kind = strdup_printf("%s/" DRA_CLAIM_KIND_CLASS, driver);
	if (kind && !cdi_kind_is_valid(kind)) {
		free(kind);
		return NULL;
	}
	return kind;
}

char *dra_claim_spec_file_name(const char *driver, const char *uid)
{
	_cleanup_free_ char *kind = claim_kind(driver);
	char *name;

	if (!kind || !dra_uid_is_valid(uid))
		return NULL;
	name = strdup_printf("%s-" DRA_CLAIM_KIND_CLASS "_%s.json", driver, uid);
	/* Room for the writer's ".<name>.XXXXXX" temp file. */
	if (name && strlen(name) + 8 > NAME_MAX) {
		free(name);
		return NULL;
	}
	return name;
}

/* True when spec is of kind and holds exactly one device, named uid. */
static bool spec_is_claims(const cJSON *spec, const char *kind, const char *uid)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(spec, "kind");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices");
	const cJSON *d0 = cJSON_IsArray(devs) ? cJSON_GetArrayItem(devs, 0) : NULL;
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(d0, "name");

	return cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0 && d0 && !d0->next &&
	       cJSON_IsString(name) && strcmp(name->valuestring, uid) == 0;
}

int dra_claim_spec_write(const char *spec_dir, const char *driver, const char *uid,
			 const cJSON *spec, char **ret_file, char *err, size_t errlen)
{
	_cleanup_free_ char *kind = NULL, *file = NULL, *buf = NULL, *qdir = NULL;
	_cleanup_rc_error_ struct rc_error *verr = NULL;
	size_t len;
	int r;

	if (!spec_dir || !*spec_dir || !spec || !ret_file)
		return err_fail(err, errlen, -EINVAL, "claim spec: invalid arguments");
	kind = claim_kind(driver);
	file = dra_claim_spec_file_name(driver, uid);
	qdir = quote_untrusted(spec_dir);
	if (!qdir)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	if (!kind || !file)
		return err_fail(err, errlen, -EINVAL,
				"claim spec: driver or UID makes no valid CDI kind, name or file");
	if (!spec_is_claims(spec, kind, uid))
		return err_fail(err, errlen, -EINVAL,
				"claim spec: not a spec of kind %s for claim %s", kind, uid);
	r = cdi_spec_validate(spec, &verr);
	if (r == -ENOMEM)
		return err_fail(err, errlen, r, "out of memory");
	if (r < 0)
		return err_fail(err, errlen, -EINVAL, "claim spec: %s", rc_error_msg(verr, r));
	r = cdi_spec_format(spec, CDI_FORMAT_JSON, &buf, &len);
	if (r < 0)
		return err_fail(err, errlen, r, "claim spec: cannot format it: %s", strerror(-r));
	r = cdi_write_file_atomic(spec_dir, file, buf, len);
	if (r == -ELOOP)
		return err_fail(err, errlen, r, "%s/%s: it or its dir is a symlink, not followed",
				qdir, file);
	if (r == -EEXIST)
		return err_fail(err, errlen, r, "%s/%s: not a regular file, kept", qdir, file);
	if (r < 0)
		return err_fail(err, errlen, r, "%s/%s: %s", qdir, file, strerror(-r));
	*ret_file = TAKE_PTR(file);
	return 0;
}

int dra_claim_spec_remove(const char *spec_dir, const char *driver, const char *uid,
			  const char *file, char *err, size_t errlen)
{
	_cleanup_free_ char *kind = NULL, *own = NULL, *buf = NULL, *qdir = NULL, *qfile = NULL;
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_close_ int dirfd = -1, fd = -1;
	enum cdi_format fmt;
	struct stat st, st2;
	_cleanup_rc_error_ struct rc_error *perr = NULL;
	size_t len;
	int r;

	if (!spec_dir || !*spec_dir)
		return err_fail(err, errlen, -EINVAL, "claim spec: invalid arguments");
	kind = claim_kind(driver);
	own = dra_claim_spec_file_name(driver, uid);
	if (!kind || !own)
		return err_fail(err, errlen, -EINVAL, "claim spec: driver or UID is not valid");
	if (!file)
		file = own;
	qdir = quote_untrusted(spec_dir);
	qfile = quote_untrusted(file);
	if (!qdir || !qfile)
		return err_fail(err, errlen, -ENOMEM, "out of memory");
	/* A recorded name is checked as the checkpoint checks it: never a path. */
	if (!name_is_safe(file, NAME_MAX) || file[0] == '.' ||
	    cdi_format_from_file_name(file, &fmt) < 0)
		return err_fail(err, errlen, -EINVAL, "claim spec: %s is not a spec file name",
				qfile);

	dirfd = open(spec_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 && errno == ENOENT)
		return 0;
	if (dirfd < 0)
		return err_fail(err, errlen, -errno, "%s: %s", qdir, strerror(errno));
	if (fstatat(dirfd, file, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_fail(err, errlen, -errno, "%s/%s: %s", qdir, qfile, strerror(errno));
	}
	if (!S_ISREG(st.st_mode))
		return err_fail(err, errlen, -EEXIST, "%s/%s: %s, not ours: kept", qdir, qfile,
				S_ISLNK(st.st_mode) ? "a symlink" : "not a regular file");

	fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return err_fail(err, errlen, -errno, "%s/%s: %s", qdir, qfile, strerror(errno));
	if (fstat(fd, &st2) < 0)
		return err_fail(err, errlen, -errno, "%s/%s: %s", qdir, qfile, strerror(errno));
	if (st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)
		return err_fail(err, errlen, -EEXIST, "%s/%s: replaced while being read, kept",
				qdir, qfile);
	r = read_full_fd(fd, CDI_SPEC_MAX_BYTES, &buf, &len);
	if (r == -EFBIG)
		return err_fail(err, errlen, -EEXIST, "%s/%s: too large to be ours, kept", qdir,
				qfile);
	if (r < 0)
		return err_fail(err, errlen, r, "%s/%s: %s", qdir, qfile, strerror(-r));
	r = cdi_spec_parse(buf, len, fmt, &spec, &perr);
	if (r == -ENOMEM)
		return err_fail(err, errlen, r, "out of memory");
	if (r < 0)
		return err_fail(err, errlen, -EEXIST, "%s/%s: not a spec (%s), kept", qdir, qfile,
				rc_error_msg(perr, r));
	if (!spec_is_claims(spec, kind, uid))
		return err_fail(err, errlen, -EEXIST,
				"%s/%s: not the spec of claim %s (kind %s), kept", qdir, qfile, uid,
				kind);
	/* What we judged must still be what we unlink; the window between this check and
	 * the unlink is left to the spec dir's permissions. */
	if (fstatat(dirfd, file, &st2, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_fail(err, errlen, -errno, "%s/%s: %s", qdir, qfile, strerror(errno));
	}
	if (st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)
		return err_fail(err, errlen, -EEXIST, "%s/%s: replaced while being read, kept",
				qdir, qfile);
	if (unlinkat(dirfd, file, 0) < 0 && errno != ENOENT)
		return err_fail(err, errlen, -errno, "%s/%s: %s", qdir, qfile, strerror(errno));
	/* The removal must survive a crash like the write did. */
	if (fsync(dirfd) < 0)
		return err_fail(err, errlen, -errno, "%s: %s", qdir, strerror(errno));
	return 1;
}
