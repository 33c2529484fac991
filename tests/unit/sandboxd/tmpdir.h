/*
 * tmpdir.h - scratch directories for the sandboxd unit tests: a root and,
 * beside it, an "outside" directory that nothing may touch.
 */
#ifndef SBXD_TEST_TMPDIR_H
#define SBXD_TEST_TMPDIR_H

#include <stddef.h>

/** Creates <tmp>/sbxd-XXXXXX with "root" and "outside" in it; writes the
 *  base into `base` (cap bytes). Aborts on failure. */
void tmpdir_make(char *base, size_t cap);

/** Removes the whole tree (rm -rf). */
void tmpdir_remove(const char *base);

/** Writes `content` to base/rel (parents must exist). */
void tmpdir_write(const char *base, const char *rel, const char *content);

/** Reads base/rel into a malloc'd string (NULL if missing). */
char *tmpdir_read(const char *base, const char *rel);

/** True when base/rel exists (lstat). */
int tmpdir_exists(const char *base, const char *rel);

#endif
