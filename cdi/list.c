/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading spec directories the way the runtimes do: regular *.json and *.yaml files
 * (a symlink counts when it points at a regular file), no subdirectories, file names in
 * lexical order; and finding the devices that one directory defines twice, which the
 * runtimes then refuse to resolve at all.
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "cdi-internal.h"

/*
 * Makes room for one more element in *array (n used, *cap allocated), doubling: arrays
 * that grow by one per realloc make a listing of 100,000 files quadratic.
 */
static int grow(void *array, size_t *cap, size_t n, size_t size)
{
	void **p = array;
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap < *cap || ncap > SIZE_MAX / size)
		return -ENOMEM;
	na = realloc(*p, ncap * size);
	if (!na)
		return -ENOMEM;
	*p = na;
	*cap = ncap;
	return 0;
}

static void entry_done(struct cdi_list_entry *e)
{
	free(e->dir);
	free(e->file);
	free(e->kind);
	for (size_t i = 0; i < e->n_names; i++)
		free(e->names[i]);
	free(e->names);
	free(e->error);
}

void cdi_listing_free(struct cdi_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_entries; i++)
		entry_done(&l->entries[i]);
	free(l->entries);
	for (size_t i = 0; i < l->n_conflicts; i++)
		free(l->conflicts[i]);
	free(l->conflicts);
	free(l);
}

/* Capacities of the listing's arrays, kept beside it: struct cdi_listing is public. */
struct listing_caps {
	size_t entries, conflicts;
};

static struct cdi_list_entry *new_entry(struct cdi_listing *l, struct listing_caps *caps,
					const char *dir, const char *file)
{
	struct cdi_list_entry *e;

	if (grow(&l->entries, &caps->entries, l->n_entries, sizeof(*e)) < 0)
		return NULL;
	e = &l->entries[l->n_entries];
	*e = (struct cdi_list_entry){.dir = strdup(dir), .file = strdup(file)};
	if (!e->dir || !e->file) {
		entry_done(e);
		return NULL;
	}
	l->n_entries++;
	return e;
}

static int set_error(struct cdi_list_entry *e, const char *fmt, ...) _printf_(2, 3);
static int set_error(struct cdi_list_entry *e, const char *fmt, ...)
{
	va_list ap;
	int r;

	free(e->error);
	va_start(ap, fmt);
	r = vasprintf(&e->error, fmt, ap);
	va_end(ap);
	if (r < 0) {
		e->error = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Reads and checks one file; problems with the file end up in e->error. */
static int read_spec(int dirfd, const char *name, enum cdi_format fmt, struct cdi_list_entry *e)
{
	_cleanup_(cJSON_Deletep) cJSON *spec = NULL;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	const cJSON *kind, *dev;
	struct stat st, lst;
	size_t len, n;
	int r;

	/* The runtimes follow symlinks here. Opening a device node can have side effects:
	 * look before opening, and O_NONBLOCK keeps a FIFO swapped in from hanging us. */
	if (fstatat(dirfd, name, &st, 0) < 0)
		return set_error(e, "cannot stat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return set_error(e, "not a regular file");
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return set_error(e, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) < 0)
		return set_error(e, "cannot stat: %s", strerror(errno));
	if (!S_ISREG(st.st_mode))
		return set_error(e, "not a regular file");
	r = read_full_fd(fd, CDI_SPEC_MAX_BYTES, &buf, &len);
	if (r == -EFBIG)
		return set_error(e, "larger than %u bytes", CDI_SPEC_MAX_BYTES);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return set_error(e, "cannot read: %s", strerror(-r));

	r = cdi_spec_parse(buf, len, fmt, &spec, &err);
	if (r >= 0)
		r = cdi_spec_validate(spec, &err);
	if (r == -ENOMEM)
		return r;
	/* The reason quotes the file. A symlink (root's `list` follows it) or a hard link
	 * can be /etc/shadow under another name: such an alias of a file not everyone may
	 * read is not echoed. */
	if (r < 0 && !(st.st_mode & S_IROTH)) {
		const char *via = NULL;

		if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) < 0 || S_ISLNK(lst.st_mode))
			via = "symlink";
		else if (st.st_nlink > 1)
			via = "hard link";
		if (via)
			return set_error(e,
					 "not a valid spec; the reason is not shown: it would "
					 "quote a file not everyone may read (mode %04o), reached "
					 "through a %s",
					 (unsigned)(st.st_mode & 07777), via);
	}
	if (r < 0)
		return set_error(e, "%s", rc_error_msg(err, r));

	kind = cJSON_GetObjectItemCaseSensitive(spec, "kind");
	e->kind = strdup(kind->valuestring);
	if (!e->kind)
		return -ENOMEM;
	n = (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "devices"));
	e->names = calloc(n, sizeof(*e->names));
	if (!e->names)
		return -ENOMEM;
	cJSON_ArrayForEach (dev, cJSON_GetObjectItemCaseSensitive(spec, "devices")) {
		const cJSON *name_item = cJSON_GetObjectItemCaseSensitive(dev, "name");

		e->names[e->n_names] = strdup_printf("%s=%s", e->kind, name_item->valuestring);
		if (!e->names[e->n_names])
			return -ENOMEM;
		e->n_names++;
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The candidate file names of a directory, sorted; directories are left out. */
static int dir_files(int dirfd, char ***ret, size_t *ret_n)
{
	_cleanup_closedir_ DIR *d = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd, r = 0;

	fd = dup(dirfd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((errno = 0, de = readdir(d))) {
		enum cdi_format fmt;
		struct stat st;

		if (cdi_format_from_file_name(de->d_name, &fmt) < 0)
			continue;
		/* A subdirectory (or a symlink to one) is not a spec file: skip it quietly. */
		if (fstatat(dirfd, de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode))
			continue;
		if (grow(&names, &cap, n, sizeof(*names)) < 0) {
			r = -ENOMEM;
			goto fail;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			goto fail;
		}
		n++;
	}
	if (errno) {
		r = -errno;
		goto fail;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	*ret = names;
	*ret_n = n;
	return 0;

fail:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r;
}

struct defined {
	const char *name;
	size_t entry;
};

static int cmp_defined(const void *a, const void *b)
{
	const struct defined *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	if (r)
		return r;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

static int add_conflict(struct cdi_listing *l, struct listing_caps *caps, char *s)
{
	if (!s)
		return -ENOMEM;
	if (grow(&l->conflicts, &caps->conflicts, l->n_conflicts, sizeof(*l->conflicts)) < 0) {
		free(s);
		return -ENOMEM;
	}
	l->conflicts[l->n_conflicts++] = s;
	return 0;
}

/* "<name> in <dir>: <file1>, <file2>, ..." built in one pass: k files, O(k) bytes moved. */
static char *conflict_text(const struct cdi_listing *l, const struct defined *defs, size_t n,
			   const char *dir)
{
	size_t len = strlen(defs[0].name) + strlen(" in ") + strlen(dir) + strlen(": ") + 1, at;
	char *s;

	for (size_t k = 0; k < n; k++)
		len += strlen(l->entries[defs[k].entry].file) + 2;
	s = malloc(len);
	if (!s)
		return NULL;
	at = (size_t)snprintf(s, len, "%s in %s: ", defs[0].name, dir);
	for (size_t k = 0; k < n; k++) {
		const char *f = l->entries[defs[k].entry].file;
		size_t fl = strlen(f);

		if (k > 0) {
			memcpy(s + at, ", ", 2);
			at += 2;
		}
		memcpy(s + at, f, fl);
		at += fl;
	}
	s[at] = '\0';
	return s;
}

/* Names defined by more than one file among entries [first, end) of one directory. */
static int find_conflicts(struct cdi_listing *l, struct listing_caps *caps, const char *dir,
			  size_t first, size_t end)
{
	_cleanup_free_ struct defined *defs = NULL;
	size_t n = 0, i, j;

	for (i = first; i < end; i++)
		n += l->entries[i].n_names;
	if (n < 2)
		return 0;
	defs = malloc(n * sizeof(*defs));
	if (!defs)
		return -ENOMEM;
	n = 0;
	for (i = first; i < end; i++)
		for (size_t k = 0; k < l->entries[i].n_names; k++)
			defs[n++] = (struct defined){.name = l->entries[i].names[k], .entry = i};
	qsort(defs, n, sizeof(*defs), cmp_defined);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && strcmp(defs[i].name, defs[j].name) == 0; j++)
			;
		if (j - i < 2)
			continue;
		/* A valid file never defines a name twice, so these are distinct files. */
		if (add_conflict(l, caps, conflict_text(l, defs + i, j - i, dir)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int list_dir(struct cdi_listing *l, struct listing_caps *caps, const char *dir)
{
	_cleanup_close_ int dirfd = -1;
	char **files = NULL;
	size_t n_files = 0, first = l->n_entries;
	int r;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		struct cdi_list_entry *e;

		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		r = -errno;
		e = new_entry(l, caps, dir, "");
		if (!e)
			return -ENOMEM;
		return set_error(e, "cannot open the directory: %s", strerror(-r));
	}
	r = dir_files(dirfd, &files, &n_files);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		struct cdi_list_entry *e = new_entry(l, caps, dir, "");

		if (!e)
			return -ENOMEM;
		return set_error(e, "cannot read the directory: %s", strerror(-r));
	}
	for (size_t i = 0; i < n_files && r >= 0; i++) {
		struct cdi_list_entry *e = new_entry(l, caps, dir, files[i]);
		enum cdi_format fmt;

		if (!e) {
			r = -ENOMEM;
			break;
		}
		(void)cdi_format_from_file_name(files[i], &fmt);
		/* An invalid file gets no kind and no names: runtimes use nothing from it. */
		r = read_spec(dirfd, files[i], fmt, e);
	}
	for (size_t i = 0; i < n_files; i++)
		free(files[i]);
	free(files);
	if (r < 0)
		return r;
	return find_conflicts(l, caps, dir, first, l->n_entries);
}

int cdi_list_dirs(const char *const *dirs, size_t n_dirs, struct cdi_listing **ret)
{
	struct listing_caps caps = {};
	struct cdi_listing *l;
	int r;

	if (!ret || (n_dirs && !dirs))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < n_dirs; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		r = list_dir(l, &caps, dirs[i]);
		if (r < 0) {
			cdi_listing_free(l);
			return r;
		}
	}
	*ret = l;
	return 0;
}
