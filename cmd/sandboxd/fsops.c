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

#include "asb/array.h"
#include "asb/common.h"
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
	asb_error_clear();
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
			return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
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
		if (ASB_ARRAY_GROW(v, cap, len + 1, 16))
			goto oom;
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
	return asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
}

int sbxd_open_read(const sbxd_root *r, const char *rel, int *fd, struct stat *st)
{
	int rc = sbxd_root_openat(r, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, fd);
	if (rc)
		return rc;
	if (fstat(*fd, st) < 0) {
		rc = sbxd_confine_error(errno, NULL);
	} else if (S_ISDIR(st->st_mode)) {
		rc = asb_error_set(ASB_EINVAL, 400, SBXD_REASON_ISDIR, "path is a directory");
	} else if (!S_ISREG(st->st_mode)) {
		/* a FIFO or device would block or never end */
		rc = asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
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
	if (rc == ASB_ENOTFOUND) {   /* dangling, inside: the link is just a name */
		asb_error_clear();
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
		return asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
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
		rc = asb_error_set(ASB_EINVAL, 400, SBXD_REASON_ISDIR, "target path is a directory");
	if (!rc && !(w->name = strdup(name)))
		rc = asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
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
		rc = asb_error_set(ASB_ERROR, 500, SBXD_REASON_INTERNAL,
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

/*
 * Deleting a tree: one directory at a time, without recursion and with
 * three descriptors open at most, however deep the tree is (a command can
 * build one far deeper than any path a client can send). The walk goes
 * down into the first subdirectory it meets and back up through ".." once
 * a directory is empty. Going up checks that ".." is the directory it came
 * down from (same device and inode), and that the name about to be
 * removed is still the directory just emptied: a directory moved meanwhile
 * (out of the root, say) stops the walk with an error instead of leading
 * it elsewhere. Each level keeps where its listing stopped (telldir), so a
 * wide directory is read once, not once per subdirectory; before a
 * directory counts as empty, one more pass reads it from its start
 * (entries a resumed listing skipped, or that appeared meanwhile).
 */

/* One directory on the way down. */
typedef struct {
	dev_t dev;
	ino_t ino;
	char *name;      /* its name in its parent; NULL for the top */
	long resume;     /* telldir() after its last subdirectory; 0: from the start */
} del_level;

/* Unlinks the non-directories of `dirfd` from position `*resume` on, up
 * to the first subdirectory, whose name it returns in `*sub` (malloc'd;
 * NULL when the listing ended) with `*resume` just past it. */
static int del_scan(int dirfd, long *resume, char **sub)
{
	*sub = NULL;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int rc = sbxd_confine_error(errno, NULL);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (*resume)
		seekdir(d, *resume);
	int rc = 0;
	struct dirent *de;
	errno = 0;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				rc = sbxd_confine_error(errno, NULL);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (!(*sub = strdup(de->d_name)))
				rc = asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
			*resume = telldir(d);
			break;
		}
		if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT)
			rc = sbxd_confine_error(errno, NULL);
		errno = 0;
	}
	if (rc == 0 && !*sub && errno)
		rc = sbxd_confine_error(errno, NULL);
	if (!*sub)
		*resume = 0;
	closedir(d);
	return rc;
}

static bool same_dir(const struct stat *st, const del_level *l)
{
	return S_ISDIR(st->st_mode) && st->st_dev == l->dev && st->st_ino == l->ino;
}

static int tree_changed(void)
{
	return asb_error_set(ASB_ERROR, 500, SBXD_REASON_INTERNAL,
	                     "the tree changed while it was being removed");
}

/* Removes every entry of directory `fd` (consumed), never following links. */
static int clear_dir(int fd)
{
	del_level *lv = malloc(16 * sizeof(*lv));
	size_t depth = 0, cap = 16;
	struct stat st;
	int rc = 0;
	if (!lv)
		rc = asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
	else if (fstat(fd, &st) < 0)
		rc = sbxd_confine_error(errno, NULL);
	else
		lv[depth++] = (del_level){ st.st_dev, st.st_ino, NULL, 0 };
	int cur = fd;
	bool full_pass = false;  /* the last scan of `cur` began at its start */
	while (rc == 0) {
		del_level *top = &lv[depth - 1];
		char *sub;
		full_pass = top->resume == 0;
		rc = del_scan(cur, &top->resume, &sub);
		if (rc)
			break;
		if (sub) {
			/* down */
			int child = openat(cur, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (child < 0 || fstat(child, &st) < 0) {
				if (child < 0 && errno == ENOENT) {
					free(sub);  /* removed meanwhile */
					continue;
				}
				rc = sbxd_confine_error(errno, NULL);
				if (child >= 0)
					close(child);
				free(sub);
				break;
			}
			if (depth == cap) {
				del_level *n = realloc(lv, cap * 2 * sizeof(*lv));
				if (!n) {
					close(child);
					free(sub);
					rc = asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL,
					                   "out of memory");
					break;
				}
				lv = n;
				cap *= 2;
			}
			lv[depth++] = (del_level){ st.st_dev, st.st_ino, sub, 0 };
			close(cur);
			cur = child;
			continue;
		}
		if (!full_pass)
			continue;  /* once more from the start before it counts as empty */
		if (depth == 1)
			break;     /* the top is empty: done */
		/* up: ".." must be the parent we came from, the name still us */
		del_level *me = &lv[depth - 1], *parent = &lv[depth - 2];
		int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (up < 0) {
			rc = sbxd_confine_error(errno, NULL);
			break;
		}
		struct stat ust, mst;
		if (fstat(up, &ust) < 0 || !same_dir(&ust, parent)) {
			close(up);
			rc = tree_changed();
			break;
		}
		close(cur);
		cur = up;
		if (fstatat(cur, me->name, &mst, AT_SYMLINK_NOFOLLOW) == 0) {
			if (!same_dir(&mst, me)) {
				rc = tree_changed();
				break;
			}
			if (unlinkat(cur, me->name, AT_REMOVEDIR) < 0 && errno != ENOENT)
				rc = sbxd_confine_error(errno, NULL);
		} else if (errno != ENOENT) {
			rc = sbxd_confine_error(errno, NULL);
		}
		free(me->name);
		depth--;
	}
	close(cur);
	for (size_t i = 0; lv && i < depth; i++)
		free(lv[i].name);
	free(lv);
	return rc;
}

int sbxd_exists_nofollow(const sbxd_root *r, const char *rel)
{
	if (strcmp(rel, ".") == 0)
		return 1;
	int dfd;
	const char *name;
	int rc = sbxd_root_open_parent(r, rel, false, &dfd, &name);
	if (rc == ASB_ENOTFOUND) {
		asb_error_clear();
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
			return asb_error_set(ASB_ECONFLICT, 409, SBXD_REASON_ROOT,
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
				rc = asb_error_set(ASB_ECONFLICT, 409, SBXD_REASON_NOTEMPTY,
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
