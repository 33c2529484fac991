/*
 * confine.c - the sandbox root and the path resolver (confine.h): a lexical
 * clean of the client's path, then openat2(RESOLVE_BENEATH) from the root's
 * descriptor so that the kernel, not a userspace check, keeps every lookup
 * inside the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "asb/common.h"
#include "confine.h"

#define RESOLVE_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)
/* openat2 answers EAGAIN when a rename raced a `..` walk; a few tries. */
#define EAGAIN_TRIES 16

struct sbxd_root {
	char *path;
	int fd;
	sbxd_resolver resolver;
};

/* Linux's limit of symbolic links followed in one lookup (MAXSYMLINKS). */
#define MAX_LINKS 40

static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned long long)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_FLAGS,
	};
	long rc;
	int tries = 0;
	do
		rc = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (rc < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < EAGAIN_TRIES);
	return (int)rc;
}

/*
 * The fallback resolver: the lookup done by hand, one component at a time,
 * each opened with O_NOFOLLOW relative to the descriptor of its parent,
 * which is held. A symbolic link is read through a descriptor of the link
 * itself (readlinkat on an O_PATH fd, so a swap cannot change what is
 * read), an absolute target is refused (EXDEV, as RESOLVE_BENEATH does),
 * and `..` pops the stack of held directories, refusing to climb above
 * the root (EXDEV). Returns a descriptor, or -1 with errno.
 */
static int walk_open(int rootfd, const char *path, int flags, mode_t mode)
{
	int stack[SBXD_PATH_MAX / 2 + 2];
	int depth = 0, links = 0, result = -1, err = 0;
	size_t cap = strlen(path) + 1;
	char *work = malloc(cap);
	if (!work) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(work, path, cap);
	stack[0] = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	if (stack[0] < 0) {
		free(work);
		return -1;
	}
	size_t pos = 0;
	for (;;) {
		while (work[pos] == '/')
			pos++;
		char *comp = work + pos;
		size_t clen = strcspn(comp, "/");
		size_t next = pos + clen;
		while (work[next] == '/')
			next++;
		bool last = work[next] == '\0';
		char save = comp[clen];
		comp[clen] = '\0';
		bool dotdot = strcmp(comp, "..") == 0;
		if (clen == 0 || strcmp(comp, ".") == 0 || dotdot) {
			if (dotdot) {
				if (depth == 0) {
					err = EXDEV;
					break;
				}
				close(stack[depth--]);
			}
			/* a path ending in "." or ".." names the directory reached */
			if (last) {
				result = openat(stack[depth], ".", (flags & ~(O_CREAT | O_EXCL)) | O_CLOEXEC,
				                mode);
				if (result < 0)
					err = errno;
				break;
			}
			pos = next;
			continue;
		}
		int fd;
		bool follow = !last || !(flags & O_NOFOLLOW);
		if (last && !(flags & O_PATH)) {
			fd = openat(stack[depth], comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
			if (fd >= 0 || !follow || (errno != ELOOP && errno != ENOTDIR)) {
				result = fd;
				err = fd < 0 ? errno : 0;
				break;
			}
			/* ELOOP (ENOTDIR with O_DIRECTORY): maybe a symbolic link to
			 * follow; the checks below tell, or report the error */
			int first = errno;
			fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			struct stat lst;
			if (fd >= 0 && (fstat(fd, &lst) < 0 || !S_ISLNK(lst.st_mode))) {
				close(fd);
				fd = -1;
				errno = first;
			}
		} else {
			fd = openat(stack[depth], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0) {
			err = errno;
			break;
		}
		struct stat st;
		if (fstat(fd, &st) < 0) {
			err = errno;
			close(fd);
			break;
		}
		if (S_ISLNK(st.st_mode) && follow) {
			char target[SBXD_PATH_MAX + 1];
			ssize_t tl = readlinkat(fd, "", target, sizeof(target) - 1);
			close(fd);
			if (tl < 0) {
				err = errno;
				break;
			}
			if (++links > MAX_LINKS) {
				err = ELOOP;
				break;
			}
			if (tl == 0 || target[0] == '/') {
				err = tl == 0 ? ENOENT : EXDEV;
				break;
			}
			/* the rest of the path now starts with the link's target */
			comp[clen] = save;
			size_t rest = strlen(work + next);
			char *nw = malloc((size_t)tl + 1 + rest + 1);
			if (!nw) {
				err = ENOMEM;
				break;
			}
			memcpy(nw, target, (size_t)tl);
			nw[tl] = '/';
			memcpy(nw + tl + 1, work + next, rest + 1);
			free(work);
			work = nw;
			pos = 0;
			continue;
		}
		if (last) {
			/* O_PATH asked for: this descriptor is the answer */
			if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) {
				close(fd);
				err = ENOTDIR;
			} else {
				result = fd;
			}
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			err = ENOTDIR;
			break;
		}
		if (depth + 1 >= (int)(sizeof(stack) / sizeof(stack[0]))) {
			close(fd);
			err = ENAMETOOLONG;
			break;
		}
		stack[++depth] = fd;
		pos = next;
	}
	for (int i = 0; i <= depth; i++)
		close(stack[i]);
	free(work);
	if (result < 0)
		errno = err ? err : EIO;
	return result;
}

static int resolve_open(const sbxd_root *r, const char *path, int flags, mode_t mode)
{
	if (r->resolver == SBXD_RESOLVE_WALK)
		return walk_open(r->fd, path, flags, mode);
	return sys_openat2(r->fd, path, flags, mode);
}

int sbxd_confine_error(int err, const char *shown)
{
	const char *p = shown ? shown : "";
	const char *sep = shown ? ": " : "";
	switch (err) {
	case EXDEV:
	case ELOOP:
		return asb_error_set(ASB_EFORBIDDEN, 403, SBXD_REASON_ESCAPE,
		                     "%s%spath traversal outside sandbox root is forbidden", p, sep);
	case EACCES:
	case EPERM:
		return asb_error_set(ASB_EFORBIDDEN, 403, SBXD_REASON_DENIED,
		                     "%s%spermission denied", p, sep);
	case ENOENT:
		return asb_error_set(ASB_ENOTFOUND, 404, SBXD_REASON_MISSING,
		                     "%s%spath does not exist within the sandbox", p, sep);
	case ENAMETOOLONG:
		return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
		                     "%s%spath is too long", p, sep);
	case ENOMEM:
		return asb_error_set(ASB_ENOMEM, 500, SBXD_REASON_INTERNAL, "out of memory");
	default:
		return asb_error_set(ASB_ERROR, 500, SBXD_REASON_INTERNAL, "%s%s%s", p, sep,
		                     strerror(err));
	}
}

int sbxd_root_open(sbxd_root **out, const char *dir, bool create)
{
	*out = NULL;
	if (!dir || !*dir)
		return asb_error_set(ASB_EINVAL, 0, NULL, "the root directory must not be empty");
	struct stat st;
	if (create && stat(dir, &st) < 0) {
		/* mkdir -p, each component in turn; EEXIST is fine */
		char *tmp = strdup(dir);
		if (!tmp)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		for (char *p = tmp + 1;; p++) {
			if (*p == '/' || *p == '\0') {
				char c = *p;
				*p = '\0';
				if (mkdir(tmp, 0755) < 0 && errno != EEXIST) {
					int e = errno;
					free(tmp);
					return asb_error_set(ASB_ECONFIG, 0, NULL,
					                     "root directory %s cannot be created: %s",
					                     dir, strerror(e));
				}
				*p = c;
				if (!c)
					break;
			}
		}
		free(tmp);
	}
	char *real = realpath(dir, NULL);
	if (!real)
		return asb_error_set(ASB_ECONFIG, 0, NULL, "root directory %s: %s", dir,
		                     strerror(errno));
	int fd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(real);
		return asb_error_set(ASB_ECONFIG, 0, NULL, "root directory %s: %s", dir, strerror(e));
	}
	/* openat2 may be missing (Linux < 5.6) or refused by a seccomp
	 * profile (ENOSYS or EPERM): the walk resolver does the same job */
	sbxd_resolver resolver = SBXD_RESOLVE_OPENAT2;
	int probe = sys_openat2(fd, ".", O_PATH | O_DIRECTORY, 0);
	if (probe < 0)
		resolver = SBXD_RESOLVE_WALK;
	else
		close(probe);
	sbxd_root *r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		free(real);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	r->path = real;
	r->fd = fd;
	r->resolver = resolver;
	*out = r;
	return 0;
}

void sbxd_root_free(sbxd_root *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->path);
	free(r);
}

const char *sbxd_root_path(const sbxd_root *r)
{
	return r->path;
}

int sbxd_root_fd(const sbxd_root *r)
{
	return r->fd;
}

sbxd_resolver sbxd_root_resolver(const sbxd_root *r)
{
	return r->resolver;
}

int sbxd_root_set_resolver(sbxd_root *r, sbxd_resolver resolver)
{
	if (resolver == SBXD_RESOLVE_OPENAT2) {
		int probe = sys_openat2(r->fd, ".", O_PATH | O_DIRECTORY, 0);
		if (probe < 0)
			return asb_error_set(ASB_EINVAL, 0, NULL, "openat2 is not available: %s",
			                     strerror(errno));
		close(probe);
	} else if (resolver != SBXD_RESOLVE_WALK) {
		return asb_error_set(ASB_EINVAL, 0, NULL, "unknown resolver %d", (int)resolver);
	}
	r->resolver = resolver;
	return 0;
}

/*
 * Go's path.Clean on `in` (NUL-free), written to `out` (at least len+2
 * bytes): rooted paths stay rooted, `..` that cannot climb in a relative
 * path is kept at its front. Returns the length written.
 */
static size_t clean(const char *in, size_t n, char *out)
{
	bool rooted = n > 0 && in[0] == '/';
	size_t w = 0, r = 0, dotdot = 0;
	if (rooted) {
		out[w++] = '/';
		r = dotdot = 1;
	}
	while (r < n) {
		if (in[r] == '/') {
			r++;
		} else if (in[r] == '.' && (r + 1 == n || in[r + 1] == '/')) {
			r++;
		} else if (in[r] == '.' && in[r + 1] == '.' && (r + 2 == n || in[r + 2] == '/')) {
			r += 2;
			if (w > dotdot) {
				w--;
				while (w > dotdot && out[w] != '/')
					w--;
			} else if (!rooted) {
				if (w > 0)
					out[w++] = '/';
				out[w++] = '.';
				out[w++] = '.';
				dotdot = w;
			}
		} else {
			if ((rooted && w != 1) || (!rooted && w != 0))
				out[w++] = '/';
			for (; r < n && in[r] != '/'; r++)
				out[w++] = in[r];
		}
	}
	if (w == 0)
		out[w++] = '.';
	out[w] = '\0';
	return w;
}

int sbxd_path_clean(const char *root_abs, sbxd_clean_mode mode, const char *user,
                    size_t len, char **out)
{
	*out = NULL;
	if (memchr(user, '\0', len))
		return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
		                     "path contains a NUL byte");
	if (len > 4 * SBXD_PATH_MAX)  /* cleaning only shrinks, but bound the work */
		return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID, "path is too long");
	char *buf = malloc(len + 3);
	if (!buf)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	const char *p = user;
	size_t n = len;
	if (mode == SBXD_CLEAN_LSTRIP)
		while (n > 0 && *p == '/')
			p++, n--;
	size_t w = clean(p, n, buf);
	char *rel = buf;
	if (buf[0] == '/') {
		size_t rl = root_abs ? strlen(root_abs) : 0;
		if (rl > 1 && w >= rl && memcmp(buf, root_abs, rl) == 0 &&
		    (buf[rl] == '\0' || buf[rl] == '/'))
			rel = buf + rl;   /* "/workspace/x" with root /workspace */
		while (*rel == '/')
			rel++;
		if (!*rel)
			rel = ".";
	} else if (strcmp(buf, "..") == 0 || strncmp(buf, "../", 3) == 0) {
		free(buf);
		return asb_error_set(ASB_EFORBIDDEN, 403, SBXD_REASON_ESCAPE,
		                     "path traversal outside sandbox root is forbidden");
	}
	size_t rlen = strlen(rel);
	if (rlen > SBXD_PATH_MAX) {
		free(buf);
		return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID, "path is too long");
	}
	for (const char *c = rel; *c;) {
		const char *e = strchr(c, '/');
		size_t cl = e ? (size_t)(e - c) : strlen(c);
		if (cl > NAME_MAX) {
			free(buf);
			return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
			                     "a path component is longer than %d bytes", NAME_MAX);
		}
		c += cl + (e ? 1 : 0);
	}
	char *res = strdup(rel);
	free(buf);
	if (!res)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	*out = res;
	return 0;
}

int sbxd_root_openat(const sbxd_root *r, const char *rel, int flags, mode_t mode, int *fd)
{
	*fd = -1;
	int f;
	int tries = 0;
	do
		f = resolve_open(r, rel, flags, mode);
	while (f < 0 && errno == EAGAIN && ++tries < EAGAIN_TRIES);
	if (f < 0) {
		int e = errno;
		int rc = sbxd_confine_error(e, NULL);
		errno = e;
		return rc;
	}
	*fd = f;
	return 0;
}

int sbxd_root_open_parent(const sbxd_root *r, const char *rel, bool mkdirs, int *dirfd,
                          const char **name)
{
	*dirfd = -1;
	*name = NULL;
	if (strcmp(rel, ".") == 0 || !*rel)
		return asb_error_set(ASB_EINVAL, 400, SBXD_REASON_INVALID,
		                     "the sandbox root has no parent");
	const char *slash = strrchr(rel, '/');
	if (!slash) {
		int f = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		if (f < 0)
			return sbxd_confine_error(errno, NULL);
		*dirfd = f;
		*name = rel;
		return 0;
	}
	size_t plen = (size_t)(slash - rel);
	char *parent = strndup(rel, plen);
	if (!parent)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	int rc = sbxd_root_openat(r, parent, O_PATH | O_DIRECTORY, 0, dirfd);
	if (rc == ASB_ENOTFOUND && mkdirs) {
		/* Walk down from the root: open each prefix beneath the root, and
		 * create a missing one with mkdirat on its parent's descriptor (a
		 * single plain name: nothing there to follow). */
		int cur = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
		rc = cur < 0 ? sbxd_confine_error(errno, NULL) : 0;
		for (size_t i = 0; rc == 0 && i <= plen; i++) {
			if (i < plen && parent[i] != '/')
				continue;
			char save = parent[i];
			parent[i] = '\0';
			const char *comp = strrchr(parent, '/');
			comp = comp ? comp + 1 : parent;
			int next = -1;
			rc = sbxd_root_openat(r, parent, O_PATH | O_DIRECTORY, 0, &next);
			if (rc == ASB_ENOTFOUND) {
				if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
					rc = sbxd_confine_error(errno, NULL);
				else
					rc = sbxd_root_openat(r, parent, O_PATH | O_DIRECTORY, 0, &next);
			}
			parent[i] = save;
			close(cur);
			cur = next;
		}
		if (rc == 0)
			*dirfd = cur;
		else if (cur >= 0)
			close(cur);
	}
	free(parent);
	if (rc == 0)
		*name = slash + 1;
	return rc;
}
