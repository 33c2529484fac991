/*
 * yaml.h - a YAML document (a kubeconfig, a manifest, a configuration
 * file) as a cJSON tree, the form every other libk8s function reads.
 *
 * libyaml does the parsing; libk8s only turns its event stream into cJSON
 * nodes: mappings become objects, sequences arrays, and scalars strings,
 * except plain (unquoted) scalars that the YAML core schema resolves to
 * another type:
 *   null   ~, null, Null, NULL, and the empty plain scalar
 *   bool   true/True/TRUE, false/False/FALSE, and YAML 1.1's
 *          yes/Yes/YES, no/No/NO, on/On/ON, off/Off/OFF (what kubectl's
 *          YAML 1.1 parser accepts; the one-letter y/n are left strings)
 *   int    [-+]?[0-9]+, 0x[0-9a-fA-F]+, 0o[0-7]+, and YAML 1.1's 0b[01]+
 *          and leading-zero octal 0[0-7]+ (`defaultMode: 0644` means
 *          420, as kubectl reads it)
 *   float  [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
 * Integers of 16 digits or more, which a cJSON number would print
 * rounded, become raw numbers (cJSON_IsRaw(), printed digit for digit).
 * .inf and .nan have no JSON form and stay strings. Explicit core tags
 * (!!str, !!int, !!float, !!bool, !!null) are honoured; other tags, anchors
 * and aliases, non-scalar keys, duplicate keys and a second document are
 * rejected. Mapping keys are always the scalar's text.
 */
#ifndef K8S_YAML_H
#define K8S_YAML_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Nesting depth beyond which a document is rejected (as cJSON does). */
#define K8S_YAML_MAX_DEPTH 1000

/**
 * Flag of k8s_yaml_to_json(): scalars that resolve to a bool or a number
 * (plain, or tagged !!bool, !!int, !!float) become raw nodes
 * (cJSON_IsRaw()) holding the scalar's text as written ("yes", "0644",
 * "3.0"), for callers that interpret the text themselves, e.g. flag values.
 * Nulls and strings are as without the flag. Such a tree is for reading:
 * printed as JSON it may not be valid ("yes").
 */
#define K8S_YAML_SCALAR_TEXT 1u

/**
 * Converts the single YAML document in `yaml` (`len` bytes, UTF-8/16 as
 * libyaml detects; need not be NUL-terminated) to a new cJSON tree.
 *
 * @param out     receives the tree (free with cJSON_Delete()); an empty
 *                stream (nothing but comments/whitespace) gives a cJSON
 *                null node. Set to NULL on error.
 * @param yaml    the text; may be NULL when `len` is 0.
 * @param origin  names the input in error messages (NULL: "<memory>"),
 *                e.g. a file name.
 * @param flags   0, or K8S_YAML_SCALAR_TEXT.
 *
 * @return 0; ASB_EDECODE with a message
 *         "ORIGIN: line L, column C: PROBLEM" (1-based) when the input is
 *         not YAML ("not valid YAML: ...") or uses an unsupported feature;
 *         ASB_EINVAL (NULL `out`, NULL `yaml` with a length); ASB_ENOMEM.
 *         The message is asb_error_last()'s. Thread-safe (no shared state).
 */
K8S_EXTERN int k8s_yaml_to_json(cJSON **out, const char *yaml, size_t len,
                                const char *origin, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
