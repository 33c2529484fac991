/*
 * yaml_json.h - a YAML document as a cJSON tree.
 *
 * Private to libk8s (kubeconfig loading; manifests later). libyaml does the
 * parsing; yaml_json.c only turns its event stream into cJSON nodes:
 * mappings become objects, sequences arrays, and scalars strings, except
 * plain (unquoted) scalars that the YAML core schema resolves to another
 * type:
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
 * rejected.
 *
 * Exported (K8S_EXTERN) only for the unit tests; not part of the public API.
 */
#ifndef K8S_YAML_JSON_H
#define K8S_YAML_JSON_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"

/** Nesting depth beyond which a document is rejected (as cJSON does). */
#define K8S_YAML_MAX_DEPTH 1000

/**
 * Converts the single YAML document in `yaml` (`len` bytes, UTF-8/16 as
 * libyaml detects; need not be NUL-terminated) to a new cJSON tree.
 *
 * @param out     receives the tree (free with cJSON_Delete()); an empty
 *                stream (nothing but comments/whitespace) gives a cJSON
 *                null node. Set to NULL on error.
 * @param origin  names the input in error messages (NULL: "<memory>").
 *
 * @return 0; ASB_EDECODE with a message
 *         "ORIGIN: line L, column C: PROBLEM" (1-based) when the input is
 *         not YAML ("not valid YAML: ...") or uses an unsupported feature;
 *         ASB_ENOMEM. Thread-safe (no shared state).
 */
K8S_EXTERN int k8s__yaml_to_json(cJSON **out, const char *yaml, size_t len,
                                 const char *origin);

#endif
