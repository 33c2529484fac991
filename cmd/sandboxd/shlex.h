/*
 * shlex.h - splits a command line into words the way Python's
 * shlex.split(s) does (POSIX mode, no comments), which is how the
 * python-runtime's POST /execute reads its "command"
 * (docs/upstream.md#python-runtime-api): quotes and backslashes are honoured, nothing else is interpreted
 * (no variables, globs, pipes or redirections).
 *
 * Rules: blanks (space, tab, CR, LF) separate words; a backslash outside
 * quotes takes the next character literally; '...' is literal; inside
 * "..." a backslash escapes only '"' and '\' and is kept before anything
 * else; '' and "" make an empty word.
 */
#ifndef SBXD_SHLEX_H
#define SBXD_SHLEX_H

#include <stddef.h>

/**
 * Splits `s` (`len` bytes; a NUL byte is an ordinary character and ends
 * the word list there as execve would need: refused with ASB_EINVAL) into
 * a NULL-terminated, malloc'd argv (free with sbxd_shlex_free); `*argc`
 * (may be NULL) gets the count. Pure; thread-safe.
 * @return 0; ASB_EINVAL with Python's message: "No closing quotation",
 *         "No escaped character", or "command contains a NUL byte";
 *         ASB_ENOMEM.
 */
int sbxd_shlex_split(const char *s, size_t len, char ***argv, size_t *argc);

/** Frees an argv from sbxd_shlex_split(); NULL is accepted. */
void sbxd_shlex_free(char **argv);

#endif
