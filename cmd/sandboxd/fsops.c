/*
 * fsops.c - stat, listing, atomic write and delete beneath the root
 * (fsops.h). Everything goes through descriptors from confine.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "k8s/common.h"
#include "fsops.h"

int sbxd_stat(const sbxd_root *r, const char *rel, struct stat *st)
{
	int fd;
	int rc = sbxd_root_openat(r, rel, O_PATH, 0, &fd);
	if (rc)
		return rc;
	rc = fstat(fd, st) < 0 ? sbxd_confine_error(errno, NULL) : 0;
	close(fd);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const sbxd_entry *)a)->name, ((const sbxd_entry *)b)->name);
}

void sbxd_entries_free(sbxd_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		free(e[i].name);
	free(e);
}

/* stat of a symbolic link's target when it resolves beneath the root. */
static bool follow_inside(const sbxd_root *r, const char *rel, const char *name,
                          struct stat *st)
{
	char *path;
	if (strcmp(rel, ".") == 0)
		path = strdup(name);
	else if (asprintf(&path, "%s/%s", rel, name) < 0)
		path = NULL;
	if (!path)
		return false;
	bool ok = sbxd_stat(r, path, st) == 0;
	free(path);
	k8s_error_clear();
	return ok;
}

int sbxd_list(const sbxd_root *r, const char *rel, sbxd_list_order order,
              sbxd_entry **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	int fd;
	int rc = sbxd_root_openat(r, rel, O_RDONLY | O_DIRECTORY, 0, &fd);
	if (rc) {
		if (errno == ENOTDIR)
			return k8s_error_set(K8S_EINVAL, 400, SBXD_REASON_INVALID,
			                     "path is not a directory");
		return rc;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		rc = sbxd_confine_error(errno, NULL);
		close(fd);
		return rc;
	}
	sbxd_entry *v = NULL;
	size_t len = 0, cap = 0;
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;  /* vanished meanwhile */
		if (S_ISLNK(st.st_mode) && !follow_inside(r, rel, de->d_name, &st))
			continue;  /* escaping or dangling */
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			sbxd_entry *nv = realloc(v, ncap * sizeof(*nv));
			if (!nv)
				goto oom;
			v = nv;
			cap = ncap;
		}
		v[len].name = strdup(de->d_name);
		if (!v[len].name)
			goto oom;
		v[len].size = (int64_t)st.st_size;
		v[len].is_dir = S_ISDIR(st.st_mode);
		v[len].mtime = st.st_mtim;
		v[len].mode = st.st_mode;
		len++;
	}
	closedir(d);
	if (order == SBXD_LIST_BY_NAME && len > 1)
		qsort(v, len, sizeof(*v), by_name);
	*out = v;
	*n = len;
	return 0;
oom:
	closedir(d);
	sbxd_entries_free(v, len);
	return k8s_error_set(K8S_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
}

int sbxd_open_read(const sbxd_root *r, const char *rel, int *fd, struct stat *st)
{
	int rc = sbxd_root_openat(r, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, fd);
	if (rc)
		return rc;
	if (fstat(*fd, st) < 0) {
		rc = sbxd_confine_error(errno, NULL);
	} else if (S_ISDIR(st->st_mode)) {
		rc = k8s_error_set(K8S_EINVAL, 400, SBXD_REASON_ISDIR, "path is a directory");
	} else if (!S_ISREG(st->st_mode)) {
		/* a FIFO or device would block or never end */
		rc = k8s_error_set(K8S_EINVAL, 400, SBXD_REASON_INVALID,
		                   "path is not a regular file");
	} else {
		/* back to blocking reads for a regular file */
		int fl = fcntl(*fd, F_GETFL);
		if (fl >= 0)
			fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
		return 0;
	}
	close(*fd);
	*fd = -1;
	return rc;
}

/* ---- atomic writes ---- */

struct sbxd_writer {
	int dirfd;
	int fd;
	char *name;       /* target's last component */
	char tmp[32];     /* temporary file's name in dirfd */
	mode_t mode;
	bool committed;
};

/* The last component `name` in `dirfd`, when it is a symbolic link: refuse
 * it when its target resolves outside the root. Returns 0 or an error. */
static int check_link(const sbxd_root *r, const char *rel, int dirfd, const char *name,
                      struct stat *target, bool *exists)
{
	struct stat st;
	*exists = false;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : sbxd_confine_error(errno, NULL);
	*exists = true;
	*target = st;
	if (!S_ISLNK(st.st_mode))
		return 0;
	int fd;
	int rc = sbxd_root_openat(r, rel, O_PATH, 0, &fd);
	if (rc == K8S_ENOTFOUND) {   /* dangling, inside: the link is just a name */
		k8s_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	if (fstat(fd, target) < 0)
		rc = sbxd_confine_error(errno, NULL);
	close(fd);
	return rc;
}

int sbxd_writer_begin(sbxd_writer **out, const sbxd_root *r, const char *rel, mode_t mode)
{
	*out = NULL;
	sbxd_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return k8s_error_set(K8S_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
	w->fd = -1;
	w->mode = mode & 07777;
	const char *name;
	int rc = sbxd_root_open_parent(r, rel, true, &w->dirfd, &name);
	if (rc) {
		free(w);
		return rc;
	}
	struct stat st;
	bool exists;
	rc = check_link(r, rel, w->dirfd, name, &st, &exists);
	if (!rc && exists && S_ISDIR(st.st_mode))
		rc = k8s_error_set(K8S_EINVAL, 400, SBXD_REASON_ISDIR, "target path is a directory");
	if (!rc && !(w->name = strdup(name)))
		rc = k8s_error_set(K8S_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
	for (int tries = 0; !rc && tries < 8; tries++) {
		uint32_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)getpid() ^ (uint32_t)tries * 2654435761u;
		snprintf(w->tmp, sizeof(w->tmp), ".sandboxd-tmp-%08x", rnd);
		w->fd = openat(w->dirfd, w->tmp,
		               O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (w->fd >= 0)
			break;
		if (errno != EEXIST)
			rc = sbxd_confine_error(errno, NULL);
	}
	if (!rc && w->fd < 0)
		rc = k8s_error_set(K8S_ERROR, 500, SBXD_REASON_INTERNAL,
		                   "no free temporary file name");
	if (!rc && fchmod(w->fd, w->mode) < 0)
		rc = sbxd_confine_error(errno, NULL);
	if (rc) {
		sbxd_writer_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int sbxd_writer_write(sbxd_writer *w, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return sbxd_confine_error(errno, NULL);
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbxd_writer_commit(sbxd_writer *w)
{
	int rc = 0;
	if (fsync(w->fd) < 0)
		rc = sbxd_confine_error(errno, NULL);
	if (close(w->fd) < 0 && !rc)
		rc = sbxd_confine_error(errno, NULL);
	w->fd = -1;
	if (!rc && renameat(w->dirfd, w->tmp, w->dirfd, w->name) < 0)
		rc = sbxd_confine_error(errno, NULL);
	if (!rc)
		w->committed = true;
	return rc;
}

void sbxd_writer_free(sbxd_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (!w->committed && w->tmp[0])
		unlinkat(w->dirfd, w->tmp, 0);
	if (w->dirfd >= 0)
		close(w->dirfd);
	free(w->name);
	free(w);
}

/* ---- delete ---- */

/* Removes every entry of directory `fd` (consumed), never following links. */
static int clear_dir(int fd)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		int rc = sbxd_confine_error(errno, NULL);
		close(fd);
		return rc;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				rc = sbxd_confine_error(errno, NULL);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = sbxd_confine_error(errno, NULL);
				continue;
			}
			rc = clear_dir(sub);
			if (rc == 0 && unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0 &&
			    errno != ENOENT)
				rc = sbxd_confine_error(errno, NULL);
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT) {
			rc = sbxd_confine_error(errno, NULL);
		}
	}
	closedir(d);
	return rc;
}

int sbxd_exists_nofollow(const sbxd_root *r, const char *rel)
{
	if (strcmp(rel, ".") == 0)
		return 1;
	int dfd;
	const char *name;
	int rc = sbxd_root_open_parent(r, rel, false, &dfd, &name);
	if (rc == K8S_ENOTFOUND) {
		k8s_error_clear();
		return 0;
	}
	if (rc)
		return rc;
	struct stat st;
	rc = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? 1
	     : errno == ENOENT ? 0 : sbxd_confine_error(errno, NULL);
	close(dfd);
	return rc;
}

int sbxd_delete(const sbxd_root *r, const char *rel, bool recursive)
{
	if (strcmp(rel, ".") == 0) {
		if (!recursive)
			return k8s_error_set(K8S_ECONFLICT, 409, SBXD_REASON_ROOT,
			                     "cannot delete the sandbox root; pass recursive=true "
			                     "to clear its contents");
		int fd;
		int rc = sbxd_root_openat(r, ".", O_RDONLY | O_DIRECTORY, 0, &fd);
		return rc ? rc : clear_dir(fd);
	}
	int dfd;
	const char *name;
	int rc = sbxd_root_open_parent(r, rel, false, &dfd, &name);
	if (rc)
		return rc;
	struct stat st;
	bool exists;
	rc = check_link(r, rel, dfd, name, &st, &exists);
	if (!rc && !exists)
		rc = sbxd_confine_error(ENOENT, NULL);
	if (!rc && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		rc = sbxd_confine_error(errno, NULL);
	if (!rc && S_ISDIR(st.st_mode)) {
		if (recursive) {
			int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			rc = sub < 0 ? sbxd_confine_error(errno, NULL) : clear_dir(sub);
		}
		if (!rc && unlinkat(dfd, name, AT_REMOVEDIR) < 0) {
			if (errno == ENOTEMPTY || errno == EEXIST)
				rc = k8s_error_set(K8S_ECONFLICT, 409, SBXD_REASON_NOTEMPTY,
				                   "directory is not empty; pass recursive=true to "
				                   "remove it");
			else
				rc = sbxd_confine_error(errno, NULL);
		}
	} else if (!rc && unlinkat(dfd, name, 0) < 0) {
		rc = sbxd_confine_error(errno, NULL);
	}
	close(dfd);
	return rc;
}
