/*
 * confine.h - every path a client names, resolved beneath the sandbox root
 * so that neither `..`, an absolute path, nor a symbolic link (one already
 * there, or one swapped in while a request runs) reaches outside it.
 *
 * Two steps (docs/upstream.md#path-confinement, with one deliberate difference below):
 * 1. sbxd_path_clean(): lexical. The decoded client path is cleaned like
 *    Go's path.Clean; an absolute path is re-rooted under the root (a
 *    prefix equal to the root's own absolute path is stripped first); a
 *    relative path whose `..` climbs above the root is refused.
 * 2. sbxd_root_openat() and friends: the cleaned relative path is opened
 *    with openat2(2) from a descriptor of the root, with RESOLVE_BENEATH |
 *    RESOLVE_NO_MAGICLINKS. The kernel resolves every component and fails
 *    with EXDEV the moment resolution would leave the root, so a symbolic
 *    link that stays inside the root is followed, one that points outside
 *    is refused, and there is no window between a check and a use: every
 *    later operation works on the descriptor obtained (or on a parent
 *    directory descriptor and one plain name).
 *    Difference from upstream's realpath check: an ABSOLUTE symbolic link
 *    is refused even when its target lies inside the root (RESOLVE_BENEATH
 *    never resolves an absolute path); relative links are the portable way.
 *
 * Errors use libasb's codes and last-error slot (asb/common.h); the message
 * never names a host path, only the client's own path or none. The reason
 * field tells the HTTP layer which answer to give:
 *   SBXD_REASON_ESCAPE   ASB_EFORBIDDEN  the path leaves the root
 *   SBXD_REASON_DENIED   ASB_EFORBIDDEN  the OS said EACCES/EPERM
 *   SBXD_REASON_MISSING  ASB_ENOTFOUND   nothing there
 *   SBXD_REASON_INVALID  ASB_EINVAL      NUL byte, too long, not a name
 *   SBXD_REASON_INTERNAL ASB_ERROR       anything else (OS error text)
 *
 * Where openat2 is missing (Linux < 5.6) or refused (a seccomp profile),
 * the same rules are applied by a userspace walk (SBXD_RESOLVE_WALK): one
 * component at a time with O_NOFOLLOW from the held descriptor of its
 * parent, links read through a descriptor of the link itself, absolute
 * targets and climbs above the root refused; equally immune to swapped
 * links, only slower. sbxd_root_open() picks openat2 when the kernel has
 * it. Thread-safe: a root is read-only after sbxd_root_open() (and
 * sbxd_root_set_resolver(), a test hook).
 */
#ifndef SBXD_CONFINE_H
#define SBXD_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SBXD_REASON_ESCAPE "PathEscape"
#define SBXD_REASON_DENIED "PermissionDenied"
#define SBXD_REASON_MISSING "NotFound"
#define SBXD_REASON_INVALID "InvalidPath"
#define SBXD_REASON_INTERNAL "Internal"

/** Longest cleaned path accepted, in bytes (Linux PATH_MAX less the NUL). */
#define SBXD_PATH_MAX 4095

/** How paths are resolved beneath the root. */
typedef enum {
	SBXD_RESOLVE_OPENAT2 = 0,  /**< openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) */
	SBXD_RESOLVE_WALK = 1      /**< the userspace walk (see above) */
} sbxd_resolver;

/** Opaque sandbox root: its absolute real path and an O_PATH descriptor. */
typedef struct sbxd_root sbxd_root;

/**
 * Opens the root directory `dir` (absolute or relative to the working
 * directory; created with mode 0755, parents too, when missing and `create`
 * is true), resolves its own symbolic links once, and checks that the
 * kernel has openat2 (else the walk resolver is used). Returns 0;
 * ASB_EINVAL (empty `dir`); ASB_ECONFIG (not creatable, not a directory:
 * the message says which and names `dir`, which is the operator's own
 * flag); ASB_ENOMEM.
 */
int sbxd_root_open(sbxd_root **out, const char *dir, bool create);

/** Closes and frees; NULL is accepted. */
void sbxd_root_free(sbxd_root *r);

/** The root's absolute real path (owned by `r`). */
const char *sbxd_root_path(const sbxd_root *r);

/** The root's O_PATH directory descriptor (owned by `r`). */
int sbxd_root_fd(const sbxd_root *r);

/** The resolver in use. */
sbxd_resolver sbxd_root_resolver(const sbxd_root *r);

/**
 * Chooses the resolver (tests run every case with both). Returns 0, or
 * ASB_EINVAL when SBXD_RESOLVE_OPENAT2 is asked for and the kernel does
 * not have it. Not thread-safe: call before sharing the root.
 */
int sbxd_root_set_resolver(sbxd_root *r, sbxd_resolver resolver);

/** How sbxd_path_clean() treats an absolute client path. */
typedef enum {
	/** sandboxd REST (docs/upstream.md#path-confinement): an absolute path under the root's own absolute
	 *  path loses that prefix; any other absolute path is re-rooted. */
	SBXD_CLEAN_STRIP_ROOT = 0,
	/** python-runtime (docs/upstream.md#python-runtime-api): leading slashes are removed, nothing else. */
	SBXD_CLEAN_LSTRIP = 1
} sbxd_clean_mode;

/**
 * Lexical step: cleans the decoded client path `user` (`len` bytes, may
 * hold anything) into a path relative to the root, without `.`, `..`,
 * empty components or a trailing slash; the root itself is ".". `root_abs`
 * is sbxd_root_path() (used by SBXD_CLEAN_STRIP_ROOT only; may be NULL with
 * SBXD_CLEAN_LSTRIP). Writes a malloc'd string to `*out` (caller frees).
 * Pure; thread-safe.
 * @return 0; ASB_EFORBIDDEN (reason ESCAPE: `..` above the root);
 *         ASB_EINVAL (reason INVALID: a NUL byte, a result longer than
 *         SBXD_PATH_MAX or a component longer than 255 bytes); ASB_ENOMEM.
 */
int sbxd_path_clean(const char *root_abs, sbxd_clean_mode mode, const char *user,
                    size_t len, char **out);

/**
 * openat2(root, rel, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS):
 * `rel` is a cleaned path (sbxd_path_clean); O_CLOEXEC is added. `*fd`
 * receives the descriptor (caller closes). With O_NOFOLLOW the last
 * component is not followed (a symbolic link is opened as itself only with
 * O_PATH). Retries the kernel's EAGAIN (a concurrent rename).
 * @return 0 or the error described in the file comment (the errno is also
 *         left in errno for callers that need finer detail).
 */
int sbxd_root_openat(const sbxd_root *r, const char *rel, int flags, mode_t mode, int *fd);

/**
 * Opens the directory that holds the last component of `rel` (O_PATH |
 * O_DIRECTORY, beneath the root) and writes it to `*dirfd` and a pointer to
 * that last component (inside `rel`) to `*name`. With `mkdirs`, missing
 * parent directories are created (mode 0755, each with mkdirat on its own
 * parent's descriptor). `rel` must not be "." (the root has no parent in
 * the sandbox): ASB_EINVAL.
 * @return as sbxd_root_openat().
 */
int sbxd_root_open_parent(const sbxd_root *r, const char *rel, bool mkdirs, int *dirfd,
                          const char **name);

/**
 * Records the error for an errno from an operation on client path `shown`
 * (which may be NULL: the message then names no path) and returns the code
 * (see the file comment). EXDEV and ELOOP count as an escape. Exposed for
 * the file operations built on top of the root.
 */
int sbxd_confine_error(int err, const char *shown);

#endif
