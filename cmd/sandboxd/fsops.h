/*
 * fsops.h - the file operations of both HTTP APIs, on a confined root
 * (confine.h): stat, directory listing, atomic write, delete. Every one
 * works on descriptors obtained beneath the root, never on a host path
 * string, so a symbolic link swapped in mid-request cannot redirect it.
 *
 * Errors: error codes and last-error slot (asb/common.h), reasons as in confine.h.
 * Functions block on the file system (metadata operations and page-cache
 * writes); the slow part of a write, fsync, is done by
 * sbxd_writer_commit(), which callers may run on a worker thread.
 * Thread-safety: distinct objects on distinct threads.
 */
#ifndef SBXD_FSOPS_H
#define SBXD_FSOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "confine.h"

/** One entry of a listing. */
typedef struct {
	char *name;          /**< entry name (malloc'd) */
	int64_t size;        /**< bytes (of the link's target when followed) */
	bool is_dir;         /**< a directory (after following an inside link) */
	struct timespec mtime;
	mode_t mode;         /**< st_mode */
} sbxd_entry;

/** Sort order of sbxd_list(). */
typedef enum { SBXD_LIST_BY_NAME = 0, SBXD_LIST_DIR_ORDER = 1 } sbxd_list_order;

/**
 * stat(2) of cleaned path `rel`, following symbolic links beneath the root.
 * Returns 0 or a confine.h error.
 */
int sbxd_stat(const sbxd_root *r, const char *rel, struct stat *st);

/**
 * Lists directory `rel`: every entry but "." and "..". A symbolic link is
 * followed when its target stays inside the root (its target's size and
 * type are reported); one that escapes or dangles is left out, as are
 * entries that vanish while listing. `*out` (malloc'd array, free with
 * sbxd_entries_free) and `*n` receive the entries.
 * @return 0; ASB_EINVAL (reason INVALID: not a directory); confine.h errors.
 */
int sbxd_list(const sbxd_root *r, const char *rel, sbxd_list_order order,
              sbxd_entry **out, size_t *n);

/** Frees what sbxd_list() returned; NULL is accepted. */
void sbxd_entries_free(sbxd_entry *e, size_t n);

/**
 * Opens a regular file `rel` for reading (following links beneath the
 * root); `*fd` (caller closes) and `*st` receive it. A directory gives
 * ASB_EINVAL with reason "IsDirectory".
 */
int sbxd_open_read(const sbxd_root *r, const char *rel, int *fd, struct stat *st);

#define SBXD_REASON_ISDIR "IsDirectory"
#define SBXD_REASON_NOTEMPTY "NotEmpty"
#define SBXD_REASON_ROOT "Root"

/** An atomic write in progress: a temporary file beside the target. */
typedef struct sbxd_writer sbxd_writer;

/**
 * Starts an atomic write of `rel` with permission bits `mode` (applied by
 * fchmod, so the umask does not apply): missing parents are created (0755),
 * a temporary file ".sandboxd-tmp-XXXXXXXX" is created next to the target.
 * A target that is a directory (after following links beneath the root)
 * gives ASB_EINVAL reason SBXD_REASON_ISDIR. A target that is itself a
 * symbolic link is replaced by the new file (the link's target is left
 * alone) when the link resolves inside the root, refused as an escape
 * otherwise.
 * @return 0 or a confine.h error.
 */
int sbxd_writer_begin(sbxd_writer **out, const sbxd_root *r, const char *rel, mode_t mode);

/** Appends `len` bytes. Returns 0 or an error (ENOSPC: INTERNAL). */
int sbxd_writer_write(sbxd_writer *w, const void *data, size_t len);

/**
 * fsync, close, rename over the target (atomic: readers see the old or the
 * new content). May run on another thread than begin/write. Returns 0 or
 * an error (the temporary file is then removed).
 */
int sbxd_writer_commit(sbxd_writer *w);

/** Frees; removes the temporary file unless committed. NULL is accepted. */
void sbxd_writer_free(sbxd_writer *w);

/**
 * Deletes `rel` (its last component is not followed: a symbolic link is
 * removed, not its target, and only when it does not resolve outside the
 * root). Not recursive: a file or an empty directory; a non-empty one gives
 * ASB_ECONFLICT reason SBXD_REASON_NOTEMPTY. Recursive: the whole tree,
 * never following links inside it. The root itself: ASB_ECONFLICT reason
 * SBXD_REASON_ROOT unless recursive, then its contents are removed and the
 * root stays. Missing: ASB_ENOTFOUND.
 */
int sbxd_delete(const sbxd_root *r, const char *rel, bool recursive);

/**
 * Whether `rel` exists (an lstat of its last component beneath the root,
 * so a dangling link counts). Returns 1, 0, or a confine.h error other
 * than not-found.
 */
int sbxd_exists_nofollow(const sbxd_root *r, const char *rel);

#endif
