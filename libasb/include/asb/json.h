/*
 * json.h - a cJSON tree printed as one compact line, as the JSON bodies,
 * access-log lines and event streams of the router and sandboxd are
 * written (Go's json.Encoder ends each value with a newline).
 */
#ifndef ASB_JSON_H
#define ASB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Prints `j` unformatted (cJSON_PrintUnformatted()), followed by "\n" when
 * `newline`, and deletes `j` in every case (NULL accepted).
 *
 * @param len  when not NULL, receives the length in bytes, newline included
 *             and the terminating NUL not.
 * @return a new NUL-terminated string the caller frees with free(), or NULL
 *         when `j` is NULL or memory ran out (no last error is recorded).
 *         Thread-safe (no shared state).
 */
ASB_EXTERN char *asb_json_print(cJSON *j, bool newline, size_t *len);

#ifdef __cplusplus
}
#endif

#endif
