/*
 * yaml_json.c - builds a cJSON tree from libyaml's event stream.
 *
 * libyaml does all of the parsing (indentation, flow style, quoting,
 * escapes, encodings); this file only keeps a stack of the open containers
 * and resolves the types of plain scalars, as described in k8s/yaml.h.
 * The stack is explicit rather than recursive so that a hostile document
 * can not exhaust the C stack; its depth is bounded like cJSON's.
 */
#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "k8s/yaml.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

/* An open container; for a mapping, `key` holds a key awaiting its value. */
typedef struct {
	cJSON *node;
	char *key;
} frame;

typedef struct {
	const char *origin;
	unsigned flags;     /* K8S_YAML_* */
	cJSON *root;
	frame *stack;
	size_t depth;
	size_t cap;
	int documents;
} builder;

static int fail(const builder *b, yaml_mark_t mark, int code,
                const char *what, const char *detail)
{
	return asb_error_set(code, 0, NULL, "%s: line %zu, column %zu: %s%s%s",
	                     b->origin, mark.line + 1, mark.column + 1, what,
	                     detail ? " " : "", detail ? detail : "");
}

/* --- scalar resolution -------------------------------------------------- */

static int is_one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "true", "True", "TRUE", "yes", "Yes",
	"YES", "on", "On", "ON", NULL };
static const char *const false_words[] = { "false", "False", "FALSE", "no", "No",
	"NO", "off", "Off", "OFF", NULL };

static int digit_value(char ch, int base)
{
	int v;
	if (ch >= '0' && ch <= '9')
		v = ch - '0';
	else if (ch >= 'a' && ch <= 'f')
		v = ch - 'a' + 10;
	else if (ch >= 'A' && ch <= 'F')
		v = ch - 'A' + 10;
	else
		return -1;
	return v < base ? v : -1;
}

/*
 * Integers up to this print back digit for digit from a cJSON number.
 * A double holds every integer up to 2^53, but cJSON prints with 15
 * significant digits when that reads back "close enough", so 16-digit
 * integers would come out rounded: those are kept as raw numbers.
 */
#define EXACT_INT_MAX UINT64_C(999999999999999)

/*
 * Resolves an integer: [-+]?[0-9]+ (with YAML 1.1's leading-zero octal,
 * so that `defaultMode: 0644` means what kubectl makes of it), 0x..., 0o...,
 * 0b.... Returns NULL when `s` is not an integer, or sets *oom.
 */
static cJSON *resolve_int(const char *s, int *oom)
{
	const char *p = s;
	int neg = 0, base = 10, prefixed = 0;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'b')) {
		if (p != s)
			return NULL;  /* the core schema gives no sign to 0x/0o */
		base = p[1] == 'x' ? 16 : p[1] == 'o' ? 8 : 2;
		p += 2;
		prefixed = 1;
	} else if (p[0] == '0' && p[1] != '\0') {
		base = 8;
		for (const char *q = p; *q; q++)
			if (*q < '0' || *q > '7')
				base = 10;  /* "09" is not octal: plain decimal */
	}
	if (*p == '\0')
		return NULL;

	uint64_t v = 0;
	int overflow = 0;
	for (const char *q = p; *q; q++) {
		int d = digit_value(*q, base);
		if (d < 0)
			return NULL;
		if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			overflow = 1;
		else
			v = v * (uint64_t)base + (uint64_t)d;
	}

	cJSON *n;
	if (!overflow && v <= EXACT_INT_MAX) {
		n = cJSON_CreateNumber(v == 0 ? 0.0 : neg ? -(double)v : (double)v);
	} else if (!overflow || (base == 10 && !prefixed)) {
		/* Too big for a double: keep every digit as a raw JSON number. */
		char text[80];
		if (!overflow) {
			snprintf(text, sizeof(text), "%s%llu", neg ? "-" : "",
			         (unsigned long long)v);
			n = cJSON_CreateRaw(text);
		} else {
			while (*p == '0')
				p++;
			size_t len = strlen(p);
			char *raw = malloc(len + 2);
			if (!raw) {
				*oom = 1;
				return NULL;
			}
			raw[0] = '-';
			memcpy(raw + 1, p, len + 1);
			n = cJSON_CreateRaw(neg ? raw : raw + 1);
			free(raw);
		}
	} else {
		return NULL;  /* beyond 64 bits in hex/octal/binary: a string */
	}
	if (!n)
		*oom = 1;
	return n;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int is_float(const char *s)
{
	const char *p = s;
	size_t before = 0, after = 0;

	if (*p == '-' || *p == '+')
		p++;
	while (*p >= '0' && *p <= '9')
		p++, before++;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++, after++;
	}
	if (before == 0 && after == 0)
		return 0;
	if (*p == 'e' || *p == 'E') {
		size_t exp = 0;
		p++;
		if (*p == '-' || *p == '+')
			p++;
		while (*p >= '0' && *p <= '9')
			p++, exp++;
		if (exp == 0)
			return 0;
	}
	return *p == '\0';
}

static cJSON *resolve_float(const char *s, int *oom)
{
	if (!is_float(s))
		return NULL;
	/* strtod follows LC_NUMERIC; YAML always uses '.', so swap it for the
	 * locale's decimal point first, as cJSON does when it parses. */
	char buf[128];
	size_t len = strlen(s);
	if (len >= sizeof(buf))
		return NULL;  /* no float needs that many digits: keep the text */
	const char *dp = localeconv()->decimal_point;
	for (size_t i = 0; i <= len; i++)
		buf[i] = (s[i] == '.' && dp && dp[0]) ? dp[0] : s[i];
	char *end;
	errno = 0;
	double d = strtod(buf, &end);
	if (*end != '\0' || errno == ERANGE)
		return NULL;  /* overflow to inf has no JSON form */
	cJSON *n = cJSON_CreateNumber(d);
	if (!n)
		*oom = 1;
	return n;
}

static cJSON *resolve_bool_null(const char *s, int want_bool, int want_null)
{
	if (want_null && is_one_of(s, null_words))
		return cJSON_CreateNull();
	if (want_bool && is_one_of(s, true_words))
		return cJSON_CreateTrue();
	if (want_bool && is_one_of(s, false_words))
		return cJSON_CreateFalse();
	return NULL;
}

/*
 * Builds the node of a scalar event, honouring an explicit core tag.
 * Returns 0 and sets *out, or records an error.
 */
static int scalar_node(const builder *b, const yaml_event_t *ev, cJSON **out)
{
	const char *text = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;
	int oom = 0;
	cJSON *n = NULL;

	*out = NULL;
	if (strlen(text) != ev->data.scalar.length)
		return fail(b, ev->start_mark, ASB_EDECODE,
		            "a NUL character in a scalar is not supported", NULL);

	if (tag && strcmp(tag, "!") != 0) {
		if (strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) != 0)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "unsupported tag", tag);
		const char *t = tag + strlen(TAG_PREFIX);
		if (strcmp(t, "str") == 0 || strcmp(t, "binary") == 0 ||
		    strcmp(t, "timestamp") == 0) {
			n = cJSON_CreateString(text);
		} else if (strcmp(t, "int") == 0) {
			n = resolve_int(text, &oom);
		} else if (strcmp(t, "float") == 0) {
			n = resolve_int(text, &oom);
			if (!n && !oom)
				n = resolve_float(text, &oom);
		} else if (strcmp(t, "bool") == 0) {
			n = resolve_bool_null(text, 1, 0);
		} else if (strcmp(t, "null") == 0) {
			n = resolve_bool_null(text, 0, 1);
		} else {
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "unsupported tag", tag);
		}
		if (!n && !oom)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "value does not match its tag", tag);
	} else if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !tag) {
		n = resolve_bool_null(text, 1, 1);
		if (!n)
			n = resolve_int(text, &oom);
		if (!n && !oom)
			n = resolve_float(text, &oom);
		if (!n && !oom)
			n = cJSON_CreateString(text);
	} else {
		n = cJSON_CreateString(text);
	}
	if (n && (b->flags & K8S_YAML_SCALAR_TEXT) &&
	    (cJSON_IsBool(n) || cJSON_IsNumber(n) || cJSON_IsRaw(n))) {
		cJSON_Delete(n);
		n = cJSON_CreateRaw(text);
	}
	if (!n)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
		                     b->origin);
	*out = n;
	return 0;
}

/* --- the container stack ------------------------------------------------ */

/*
 * Attaches `node` to the innermost open container, or makes it the root.
 * Takes ownership of `node` in every case (it is freed on error).
 */
static int attach(builder *b, cJSON *node, const yaml_event_t *ev)
{
	if (b->depth == 0) {
		b->root = node;
		return 0;
	}
	frame *top = &b->stack[b->depth - 1];
	if (cJSON_IsArray(top->node)) {
		cJSON_AddItemToArray(top->node, node);
		return 0;
	}
	if (!top->key) {
		/* This node is a key: JSON keys are the scalar's text, whatever
		 * type it resolved to (open_container() refuses other keys). */
		top->key = strdup((const char *)ev->data.scalar.value);
		cJSON_Delete(node);
		if (!top->key)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
			                     b->origin);
		if (cJSON_GetObjectItemCaseSensitive(top->node, top->key))
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "duplicate mapping key", top->key);
		return 0;
	}
	cJSON_AddItemToObject(top->node, top->key, node);
	free(top->key);
	top->key = NULL;
	return 0;
}

static int open_container(builder *b, const yaml_event_t *ev, int mapping)
{
	if (b->depth >= K8S_YAML_MAX_DEPTH)
		return fail(b, ev->start_mark, ASB_EDECODE,
		            "nesting too deep", NULL);
	if (b->depth > 0) {
		frame *top = &b->stack[b->depth - 1];
		if (cJSON_IsObject(top->node) && !top->key)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "a mapping key must be a scalar", NULL);
	}
	if (b->depth == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		frame *s = realloc(b->stack, cap * sizeof(*s));
		if (!s)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
			                     b->origin);
		b->stack = s;
		b->cap = cap;
	}
	cJSON *node = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
	if (!node)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
		                     b->origin);
	int rc = attach(b, node, ev);
	if (rc)
		return rc;
	b->stack[b->depth].node = node;
	b->stack[b->depth].key = NULL;
	b->depth++;
	return 0;
}

static int container_tag_ok(const char *tag, const char *want)
{
	if (!tag || strcmp(tag, "!") == 0)
		return 1;
	return strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0 &&
	       strcmp(tag + strlen(TAG_PREFIX), want) == 0;
}

/* Handles one event. Returns 0 to go on, or an error code. */
static int on_event(builder *b, const yaml_event_t *ev)
{
	cJSON *node;
	int rc;

	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT:
		if (++b->documents > 1)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "expected a single YAML document, found another",
			            NULL);
		return 0;
	case YAML_ALIAS_EVENT:
		return fail(b, ev->start_mark, ASB_EDECODE,
		            "aliases are not supported:",
		            (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "anchors are not supported:",
			            (const char *)ev->data.scalar.anchor);
		rc = scalar_node(b, ev, &node);
		return rc ? rc : attach(b, node, ev);
	case YAML_SEQUENCE_START_EVENT:
		if (ev->data.sequence_start.anchor)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "anchors are not supported:",
			            (const char *)ev->data.sequence_start.anchor);
		if (!container_tag_ok((const char *)ev->data.sequence_start.tag, "seq"))
			return fail(b, ev->start_mark, ASB_EDECODE, "unsupported tag",
			            (const char *)ev->data.sequence_start.tag);
		return open_container(b, ev, 0);
	case YAML_MAPPING_START_EVENT:
		if (ev->data.mapping_start.anchor)
			return fail(b, ev->start_mark, ASB_EDECODE,
			            "anchors are not supported:",
			            (const char *)ev->data.mapping_start.anchor);
		if (!container_tag_ok((const char *)ev->data.mapping_start.tag, "map"))
			return fail(b, ev->start_mark, ASB_EDECODE, "unsupported tag",
			            (const char *)ev->data.mapping_start.tag);
		return open_container(b, ev, 1);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		/* libyaml guarantees balance; the key of a mapping is always
		 * followed by a value (possibly an empty scalar). */
		if (b->depth > 0)
			b->depth--;
		return 0;
	default:
		return 0;
	}
}

static int parser_error(const builder *b, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "syntax error";

	if (p->error == YAML_MEMORY_ERROR)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
		                     b->origin);
	/* Reader errors (bad encoding) have an offset but no line; scanner
	 * and parser errors have a problem mark and sometimes a context. */
	if (p->error == YAML_READER_ERROR)
		return asb_error_set(ASB_EDECODE, 0, NULL,
		                     "%s: byte %zu: not valid YAML: %s", b->origin,
		                     p->problem_offset, problem);
	if (p->context)
		return asb_error_set(ASB_EDECODE, 0, NULL,
		                     "%s: line %zu, column %zu: not valid YAML: %s "
		                     "(%s started at line %zu, column %zu)",
		                     b->origin, p->problem_mark.line + 1,
		                     p->problem_mark.column + 1, problem,
		                     p->context, p->context_mark.line + 1,
		                     p->context_mark.column + 1);
	return asb_error_set(ASB_EDECODE, 0, NULL,
	                     "%s: line %zu, column %zu: not valid YAML: %s",
	                     b->origin, p->problem_mark.line + 1,
	                     p->problem_mark.column + 1, problem);
}

int k8s_yaml_to_json(cJSON **out, const char *yaml, size_t len,
                     const char *origin, unsigned flags)
{
	builder b = { .origin = origin ? origin : "<memory>", .flags = flags };
	yaml_parser_t parser;
	int rc = 0;

	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "yaml: out is NULL");
	*out = NULL;
	if (!yaml && len)
		return asb_error_set(ASB_EINVAL, 0, NULL, "yaml: NULL input");
	if (!yaml_parser_initialize(&parser))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
		                     b.origin);
	yaml_parser_set_input_string(&parser, (const unsigned char *)(yaml ? yaml : ""),
	                             len);

	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			rc = parser_error(&b, &parser);
			break;
		}
		int done = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(&b, &ev);
		yaml_event_delete(&ev);
		if (rc || done)
			break;
	}
	yaml_parser_delete(&parser);

	/* Keys awaiting values are only left over on error. */
	for (size_t i = 0; i < b.cap && i < b.depth; i++)
		free(b.stack[i].key);
	free(b.stack);
	if (rc) {
		cJSON_Delete(b.root);
		return rc;
	}
	if (!b.root) {
		b.root = cJSON_CreateNull();
		if (!b.root)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory",
			                     b.origin);
	}
	*out = b.root;
	return 0;
}
