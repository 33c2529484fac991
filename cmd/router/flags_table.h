/*
 * flags_table.h - the flag table shared by flags.c (command line, --help)
 * and flags_file.c (config file): one entry per flag, its type and where
 * its value lives in rt_flags (an asb_flag table). Private to cmd/router.
 */
#ifndef RT_FLAGS_TABLE_H
#define RT_FLAGS_TABLE_H

#include <stdio.h>
#include "asb/flags.h"
#include "flags.h"

/* A row of the table: asb/flags.h's, with the router's setters for its
 * enumerated values. */
typedef asb_flag rt_flag_def;

/* Upper bound of the number of flags (sizes `seen` arrays). */
#define RT_FLAG_MAX 64

/* The table, ended by ASB_FLAGS_END. */
extern const rt_flag_def rt_flag_table[];

/* The flag named by the first `len` bytes of `name`, or NULL. */
const rt_flag_def *rt_flag_find(const char *name, size_t len);

/* Sets one flag from its text; `origin` (may be NULL) names where the value
 * came from for the message. 0, or -1 with "invalid value ... for flag
 * --NAME ...: ..." in `err`. */
int rt_flag_set(rt_flags *f, const rt_flag_def *d, const char *v, const char *origin,
                char *err, size_t cap);

/* rt_flags_apply_file(), also marking seen[i] for each flag the file set. */
int rt_flags_apply_file_seen(rt_flags *f, const char *path, bool *seen, char *err, size_t cap);

#endif
