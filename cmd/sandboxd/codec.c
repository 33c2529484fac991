/*
 * codec.c - JSON shapes (cJSON), base64 (mbedTLS), percent-decoding and
 * UTF-8 clean-up for sandboxd's HTTP APIs (codec.h).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <mbedtls/base64.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "asb/common.h"
#include "asb/json.h"
#include "codec.h"

#define MAX_TIMEOUT_S 31536000.0  /* a year: beyond is a typo, not a wish */

static int oom(void)
{
	return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
}

char *sbxd_b64_encode(const void *data, size_t n, size_t *len)
{
	size_t need = 0;
	mbedtls_base64_encode(NULL, 0, &need, data, n);
	if (need == 0)
		need = 1;
	unsigned char *out = malloc(need);
	if (!out)
		return NULL;
	size_t olen = 0;
	if (mbedtls_base64_encode(out, need, &olen, data, n) != 0) {
		free(out);
		return NULL;
	}
	out[olen] = '\0';
	if (len)
		*len = olen;
	return (char *)out;
}

static int b64_decode(const char *s, unsigned char **out, size_t *n)
{
	size_t slen = strlen(s), need = 0;
	*out = NULL;
	*n = 0;
	if (slen == 0)
		return 0;
	int rc = mbedtls_base64_decode(NULL, 0, &need, (const unsigned char *)s, slen);
	if (rc == MBEDTLS_ERR_BASE64_INVALID_CHARACTER)
		return asb_error_set(ASB_EINVAL, 400, NULL, "input is not valid base64");
	unsigned char *buf = malloc(need ? need : 1);
	if (!buf)
		return oom();
	if (mbedtls_base64_decode(buf, need, n, (const unsigned char *)s, slen) != 0) {
		free(buf);
		return asb_error_set(ASB_EINVAL, 400, NULL, "input is not valid base64");
	}
	*out = buf;
	return 0;
}

static cJSON *parse_object(const char *json, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(json, len);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		asb_error_set(ASB_EINVAL, 400, NULL, "request body must be a JSON object");
		return NULL;
	}
	return root;
}

/* A member by its lowerCamel name or its proto name (proto3 JSON accepts both). */
static cJSON *member(const cJSON *o, const char *camel, const char *proto)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(o, camel);
	if (!m && proto)
		m = cJSON_GetObjectItemCaseSensitive(o, proto);
	return m;
}

/* ---- byte buffers ---- */

int sbxd_bytes_add(sbxd_bytes *b, const char *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;
		while (ncap < b->len + n)
			ncap *= 2;
		char *nd = realloc(b->data, ncap);
		if (!nd)
			return -1;
		b->data = nd;
		b->cap = ncap;
	}
	memcpy(b->data + b->len, d, n);
	b->len += n;
	return 0;
}

void sbxd_bytes_free(sbxd_bytes *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- process requests ---- */

void sbxd_proc_request_clear(sbxd_proc_request *r)
{
	for (char **a = r->argv; a && *a; a++)
		free(*a);
	free(r->argv);
	for (char **e = r->env; e && *e; e++)
		free(*e);
	free(r->env);
	free(r->cwd);
	memset(r, 0, sizeof(*r));
}

static int dim(const cJSON *o, const char *name, unsigned short *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 65535 ||
	    v->valuedouble != floor(v->valuedouble))
		return asb_error_set(ASB_EINVAL, 400, NULL, "pty.%s must be an integer in [0, 65535]",
		                     name);
	*out = (unsigned short)v->valuedouble;
	return 0;
}

int sbxd_proc_request_parse(const char *json, size_t len, bool allow_pty, sbxd_proc_request *r)
{
	memset(r, 0, sizeof(*r));
	cJSON *root = parse_object(json, len);
	if (!root)
		return ASB_EINVAL;
	int rc = 0;
	const cJSON *cfg = member(root, "config", NULL);
	if (cfg && !cJSON_IsObject(cfg) && !cJSON_IsNull(cfg)) {
		rc = asb_error_set(ASB_EINVAL, 400, NULL, "config must be an object");
		goto out;
	}
	const cJSON *cmd = cfg ? member(cfg, "command", NULL) : NULL;
	const cJSON *shell = cfg ? member(cfg, "shell", NULL) : NULL;
	if (cmd && shell) {
		rc = asb_error_set(ASB_EINVAL, 400, NULL,
		                   "config.command and config.shell are exclusive");
		goto out;
	}
	if (shell) {
		if (!cJSON_IsString(shell) || !*shell->valuestring) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "command is required");
			goto out;
		}
		r->argv = calloc(4, sizeof(char *));
		if (!r->argv || !(r->argv[0] = strdup("/bin/sh")) || !(r->argv[1] = strdup("-c")) ||
		    !(r->argv[2] = strdup(shell->valuestring))) {
			rc = oom();
			goto out;
		}
	} else {
		int n = cJSON_IsArray(cmd) ? cJSON_GetArraySize(cmd) : 0;
		if (cmd && !cJSON_IsArray(cmd)) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL,
			                   "config.command must be an array of strings");
			goto out;
		}
		if (n == 0) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "command is required");
			goto out;
		}
		r->argv = calloc((size_t)n + 1, sizeof(char *));
		if (!r->argv) {
			rc = oom();
			goto out;
		}
		int i = 0;
		const cJSON *a;
		cJSON_ArrayForEach(a, cmd) {
			if (!cJSON_IsString(a)) {
				rc = asb_error_set(ASB_EINVAL, 400, NULL,
				                   "config.command[%d] must be a string", i);
				goto out;
			}
			if (!(r->argv[i++] = strdup(a->valuestring))) {
				rc = oom();
				goto out;
			}
		}
		if (!*r->argv[0]) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "command is required");
			goto out;
		}
	}
	const cJSON *env = cfg ? member(cfg, "envVars", "env_vars") : NULL;
	if (env && !cJSON_IsNull(env)) {
		if (!cJSON_IsObject(env)) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "config.envVars must be an object");
			goto out;
		}
		int n = cJSON_GetArraySize(env), i = 0;
		r->env = calloc((size_t)n + 1, sizeof(char *));
		if (!r->env) {
			rc = oom();
			goto out;
		}
		const cJSON *e;
		cJSON_ArrayForEach(e, env) {
			if (!cJSON_IsString(e) || !e->string[0] || strchr(e->string, '=')) {
				rc = asb_error_set(ASB_EINVAL, 400, NULL,
				                   "config.envVars: \"%s\" needs a name without '=' "
				                   "and a string value", e->string);
				goto out;
			}
			if (asprintf(&r->env[i++], "%s=%s", e->string, e->valuestring) < 0) {
				r->env[i - 1] = NULL;
				rc = oom();
				goto out;
			}
		}
	}
	const cJSON *cwd = cfg ? member(cfg, "cwd", NULL) : NULL;
	if (cwd && !cJSON_IsNull(cwd)) {
		if (!cJSON_IsString(cwd)) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "config.cwd must be a string");
			goto out;
		}
		if (*cwd->valuestring && !(r->cwd = strdup(cwd->valuestring))) {
			rc = oom();
			goto out;
		}
	}
	const cJSON *pty = member(root, "pty", NULL);
	if (pty && !cJSON_IsNull(pty)) {
		if (!allow_pty || !cJSON_IsObject(pty)) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL,
			                   allow_pty ? "pty must be an object"
			                             : "pty is not supported here (use a streamed start)");
			goto out;
		}
		r->pty = true;
		if ((rc = dim(pty, "cols", &r->cols)) || (rc = dim(pty, "rows", &r->rows)))
			goto out;
	}
	const cJSON *to = member(root, "timeoutSeconds", "timeout_seconds");
	if (to && !cJSON_IsNull(to)) {
		if (!cJSON_IsNumber(to) || !isfinite(to->valuedouble) || to->valuedouble < 0 ||
		    to->valuedouble > MAX_TIMEOUT_S) {
			rc = asb_error_set(ASB_EINVAL, 400, NULL,
			                   "timeoutSeconds must be a number in [0, %.0f]", MAX_TIMEOUT_S);
			goto out;
		}
		r->timeout_ms = (long)ceil(to->valuedouble * 1000.0);
	}
out:
	cJSON_Delete(root);
	if (rc)
		sbxd_proc_request_clear(r);
	return rc;
}

int sbxd_stdin_request_parse(const char *json, size_t len, unsigned char **data, size_t *n,
                             bool *eof)
{
	*data = NULL;
	*n = 0;
	*eof = false;
	cJSON *root = parse_object(json, len);
	if (!root)
		return ASB_EINVAL;
	int rc = 0;
	const cJSON *in = member(root, "input", NULL);
	const cJSON *e = member(root, "eof", NULL);
	if (in && e && !cJSON_IsNull(in) && !cJSON_IsNull(e)) {
		rc = asb_error_set(ASB_EINVAL, 400, NULL, "input and eof are exclusive");
	} else if (e && !cJSON_IsNull(e)) {
		if (!cJSON_IsObject(e) && !cJSON_IsTrue(e))
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "eof must be {}");
		else
			*eof = true;
	} else if (in && !cJSON_IsNull(in)) {
		if (!cJSON_IsString(in))
			rc = asb_error_set(ASB_EINVAL, 400, NULL, "input must be a base64 string");
		else
			rc = b64_decode(in->valuestring, data, n);
	}
	cJSON_Delete(root);
	return rc;
}

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "SIGINT", SIGINT }, { "SIGKILL", SIGKILL }, { "SIGTERM", SIGTERM },
	{ "SIGHUP", SIGHUP }, { "SIGQUIT", SIGQUIT }, { "SIGUSR1", SIGUSR1 },
	{ "SIGUSR2", SIGUSR2 }, { "SIGCONT", SIGCONT }, { "SIGSTOP", SIGSTOP },
};

int sbxd_signal_request_parse(const char *json, size_t len, int *sig)
{
	*sig = 0;
	cJSON *root = parse_object(json, len);
	if (!root)
		return ASB_EINVAL;
	const cJSON *s = member(root, "signal", NULL);
	int found = 0;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]) && !found; i++) {
		if (cJSON_IsString(s)) {
			const char *v = s->valuestring;
			if (strncmp(v, "SIGNAL_", 7) == 0)
				v += 7;
			if (strcmp(v, signals[i].name) == 0)
				found = signals[i].sig;
		} else if (cJSON_IsNumber(s) && s->valuedouble == signals[i].sig) {
			found = signals[i].sig;
		}
	}
	cJSON_Delete(root);
	if (!found)
		return asb_error_set(ASB_EINVAL, 400, NULL,
		                     "unspecified or unsupported signal (want SIGNAL_SIGINT, "
		                     "SIGNAL_SIGKILL, SIGNAL_SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, "
		                     "SIGUSR2, SIGCONT or SIGSTOP)");
	*sig = found;
	return 0;
}

int sbxd_resize_request_parse(const char *json, size_t len, unsigned short *cols,
                              unsigned short *rows)
{
	cJSON *root = parse_object(json, len);
	if (!root)
		return ASB_EINVAL;
	int rc = 0;
	const char *names[] = { "cols", "rows" };
	unsigned short *dst[] = { cols, rows };
	for (int i = 0; i < 2 && !rc; i++) {
		const cJSON *v = member(root, names[i], NULL);
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 65535 ||
		    v->valuedouble != floor(v->valuedouble))
			rc = asb_error_set(ASB_EINVAL, 400, NULL,
			                   "%s must be an integer in [1, 65535]", names[i]);
		else
			*dst[i] = (unsigned short)v->valuedouble;
	}
	cJSON_Delete(root);
	return rc;
}

/* ---- events and responses ---- */

char *sbxd_event_init(int32_t id, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	cJSON *init = cJSON_AddObjectToObject(j, "init");
	if (!init || !cJSON_AddNumberToObject(init, "processId", id)) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, true, len);
}

char *sbxd_event_output(sbxd_stream s, const char *data, size_t n, size_t *len)
{
	char *b = sbxd_b64_encode(data, n, NULL);
	if (!b)
		return NULL;
	cJSON *j = cJSON_CreateObject();
	if (!j || !cJSON_AddStringToObject(j, s == SBXD_STDERR ? "stderr" : "stdout", b)) {
		cJSON_Delete(j);
		free(b);
		return NULL;
	}
	free(b);
	return asb_json_print(j, true, len);
}

/* The exit fields shared by the exit event and ExecuteResponse. */
static bool add_exit(cJSON *o, const sbxd_exit *ex)
{
	if (!cJSON_AddNumberToObject(o, "exitCode", ex->exit_code))
		return false;
	if (ex->signal && !cJSON_AddNumberToObject(o, "signal", ex->signal))
		return false;
	if (ex->timed_out && !cJSON_AddTrueToObject(o, "timedOut"))
		return false;
	if (ex->truncated[SBXD_STDOUT] && !cJSON_AddTrueToObject(o, "stdoutTruncated"))
		return false;
	if (ex->truncated[SBXD_STDERR] && !cJSON_AddTrueToObject(o, "stderrTruncated"))
		return false;
	return true;
}

char *sbxd_event_exit(const sbxd_exit *ex, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	cJSON *e = cJSON_AddObjectToObject(j, "exit");
	if (!e || !add_exit(e, ex)) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, true, len);
}

char *sbxd_execute_response(const sbxd_exit *ex, const char *out, size_t out_len,
                            const char *err, size_t err_len, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	char *bo = sbxd_b64_encode(out, out_len, NULL);
	char *be = sbxd_b64_encode(err, err_len, NULL);
	bool ok = j && bo && be && add_exit(j, ex) && cJSON_AddStringToObject(j, "stdout", bo) &&
	          cJSON_AddStringToObject(j, "stderr", be);
	free(bo);
	free(be);
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, true, len);
}

char *sbxd_runtime_execute_response(const char *out, size_t out_len, const char *err,
                                    size_t err_len, int exit_code, size_t *len)
{
	char *o = sbxd_utf8_clean(out, out_len);
	char *e = sbxd_utf8_clean(err, err_len);
	cJSON *j = cJSON_CreateObject();
	bool ok = j && o && e && cJSON_AddStringToObject(j, "stdout", o) &&
	          cJSON_AddStringToObject(j, "stderr", e) &&
	          cJSON_AddNumberToObject(j, "exit_code", exit_code);
	free(o);
	free(e);
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, false, len);
}

size_t sbxd_runtime_answer_tail(int exit_code, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "\",\"exit_code\":%d}", exit_code);
	return n < 0 ? 0 : (size_t)n;
}

char *sbxd_text_cursor_next(sbxd_out_cursor *c, size_t in_max, size_t *len)
{
	size_t left = c->n - c->off;
	size_t take = left < in_max ? left : in_max;
	if (take < left) {
		/* Cut before the last byte that is not a continuation byte when it
		 * is among the last three: a sequence starting there might go on
		 * past the cut, and one starting earlier cannot reach past it. Any
		 * byte that is not a continuation byte starts afresh in the clean-up,
		 * so the two sides are cleaned as the whole would be. */
		for (size_t k = 1; k <= 3 && k < take; k++)
			if (((unsigned char)c->s[c->off + take - k] & 0xC0) != 0x80) {
				take -= k;
				break;
			}
	}
	char *clean = sbxd_utf8_clean(c->s + c->off, take);
	cJSON *j = clean ? cJSON_CreateStringReference(clean) : NULL;
	char *p = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	free(clean);
	if (!p)
		return NULL;
	/* "..." without its quotes */
	size_t pl = strlen(p);
	memmove(p, p + 1, pl - 2);
	p[pl - 2] = '\0';
	*len = pl - 2;
	c->off += take;
	return p;
}

char *sbxd_b64_cursor_next(sbxd_out_cursor *c, size_t in_max, size_t *len)
{
	size_t left = c->n - c->off;
	size_t take = left <= in_max ? left : in_max - in_max % 3;
	char *p = sbxd_b64_encode(c->s + c->off, take, len);
	if (p)
		c->off += take;
	return p;
}

char *sbxd_execute_answer_head(const sbxd_exit *ex, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	if (!j || !add_exit(j, ex)) {
		cJSON_Delete(j);
		return NULL;
	}
	size_t n;
	char *s = asb_json_print(j, false, &n);  /* {"exitCode":N,...} */
	static const char field[] = ",\"stdout\":\"";
	char *t = s ? realloc(s, n + sizeof(field)) : NULL;
	if (!t) {
		free(s);
		return NULL;
	}
	memcpy(t + n - 1, field, sizeof(field));  /* over the closing brace */
	*len = n - 1 + sizeof(field) - 1;
	return t;
}

char *sbxd_error_body(const char *code, const char *message, size_t *len)
{
	char *m = sbxd_utf8_clean(message, strlen(message));
	cJSON *j = cJSON_CreateObject();
	bool ok = j && m && cJSON_AddStringToObject(j, "code", code) &&
	          cJSON_AddStringToObject(j, "message", m);
	free(m);
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, true, len);
}

char *sbxd_message_body(const char *message, size_t *len)
{
	char *m = sbxd_utf8_clean(message, strlen(message));
	cJSON *j = cJSON_CreateObject();
	bool ok = j && m && cJSON_AddStringToObject(j, "message", m);
	free(m);
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return asb_json_print(j, false, len);
}

char *sbxd_validation_body(const char *where, const char *field, const char *msg, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	cJSON *detail = cJSON_AddArrayToObject(j, "detail");
	cJSON *d = cJSON_CreateObject();
	cJSON *loc = cJSON_CreateArray();
	if (!detail || !d || !loc) {
		cJSON_Delete(d);
		cJSON_Delete(loc);
		cJSON_Delete(j);
		return NULL;
	}
	cJSON_AddItemToArray(detail, d);
	cJSON_AddStringToObject(d, "type", "missing");
	cJSON_AddItemToArray(loc, cJSON_CreateString(where));
	cJSON_AddItemToArray(loc, cJSON_CreateString(field));
	cJSON_AddItemToObject(d, "loc", loc);
	cJSON_AddStringToObject(d, "msg", msg);
	cJSON_AddNullToObject(d, "input");
	return asb_json_print(j, false, len);
}

/* ---- listings ---- */

void sbxd_rfc3339(time_t t, char *buf, size_t cap)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *sbxd_listing_json(const char *path, const sbxd_entry *e, size_t n, size_t *len)
{
	cJSON *j = cJSON_CreateObject();
	char *p = NULL;
	if (asprintf(&p, "%s%s", path[0] == '/' ? "" : "/", path) < 0)
		p = NULL;
	char *clean = p ? sbxd_utf8_clean(p, strlen(p)) : NULL;
	free(p);
	cJSON *arr = j && clean && cJSON_AddStringToObject(j, "path", clean)
	             ? cJSON_AddArrayToObject(j, "entries") : NULL;
	free(clean);
	if (!arr) {
		cJSON_Delete(j);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char *name = sbxd_utf8_clean(e[i].name, strlen(e[i].name));
		char when[32], mode[8];
		sbxd_rfc3339(e[i].mtime.tv_sec, when, sizeof(when));
		snprintf(mode, sizeof(mode), "%04o", (unsigned)(e[i].mode & 0777));
		bool ok = o && name && cJSON_AddStringToObject(o, "name", name) &&
		          cJSON_AddNumberToObject(o, "size", (double)e[i].size) &&
		          cJSON_AddStringToObject(o, "type", e[i].is_dir ? "directory" : "file") &&
		          cJSON_AddStringToObject(o, "modified_at", when) &&
		          cJSON_AddStringToObject(o, "mode", mode);
		free(name);
		if (!ok) {
			cJSON_Delete(o);
			cJSON_Delete(j);
			return NULL;
		}
		cJSON_AddItemToArray(arr, o);
	}
	return asb_json_print(j, true, len);
}

char *sbxd_runtime_list_json(const sbxd_entry *e, size_t n, size_t *len)
{
	cJSON *arr = cJSON_CreateArray();
	if (!arr)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		char *name = sbxd_utf8_clean(e[i].name, strlen(e[i].name));
		double mt = (double)e[i].mtime.tv_sec + (double)e[i].mtime.tv_nsec / 1e9;
		bool ok = o && name && cJSON_AddStringToObject(o, "name", name) &&
		          cJSON_AddNumberToObject(o, "size", (double)e[i].size) &&
		          cJSON_AddStringToObject(o, "type", e[i].is_dir ? "directory" : "file") &&
		          cJSON_AddNumberToObject(o, "mod_time", mt);
		free(name);
		if (!ok) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return NULL;
		}
		cJSON_AddItemToArray(arr, o);
	}
	return asb_json_print(arr, false, len);
}

/* ---- text ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sbxd_percent_decode(const char *s, size_t n, char **out, size_t *olen)
{
	*out = NULL;
	char *d = malloc(n + 1);
	if (!d)
		return oom();
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			d[w++] = s[i];
			continue;
		}
		int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
		int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			free(d);
			return asb_error_set(ASB_EINVAL, 400, NULL, "invalid percent-encoding in the path");
		}
		d[w++] = (char)(hi * 16 + lo);
		i += 2;
	}
	d[w] = '\0';
	*out = d;
	if (olen)
		*olen = w;
	return 0;
}

char *sbxd_query_param(const char *query, const char *name)
{
	size_t nl = strlen(name);
	for (const char *q = query; q && *q;) {
		const char *amp = strchr(q, '&');
		size_t l = amp ? (size_t)(amp - q) : strlen(q);
		if (l >= nl && strncmp(q, name, nl) == 0 && (l == nl || q[nl] == '=')) {
			const char *v = l == nl ? q + l : q + nl + 1;
			size_t vl = l == nl ? 0 : l - nl - 1;
			/* '+' is a space in a form-encoded query */
			char *raw = strndup(v, vl);
			if (!raw)
				return NULL;
			for (char *c = raw; *c; c++)
				if (*c == '+')
					*c = ' ';
			char *out;
			size_t ol;
			if (sbxd_percent_decode(raw, vl, &out, &ol) != 0)
				out = raw, raw = NULL;
			free(raw);
			return out;
		}
		q += l + (amp ? 1 : 0);
	}
	return NULL;
}

/* Length of the valid UTF-8 sequence at `s` (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c >= 0x01 && c < 0x80)
		return 1;
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else
		return 0;
	if (n < need)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return need;
}

char *sbxd_utf8_clean(const char *s, size_t n)
{
	/* each invalid byte may grow to 3 (U+FFFD) */
	char *d = malloc(n * 3 + 1);
	if (!d)
		return NULL;
	const unsigned char *u = (const unsigned char *)s;
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq(u + i, n - i);
		if (k) {
			memcpy(d + w, u + i, k);
			w += k;
			i += k;
		} else {
			memcpy(d + w, "\xEF\xBF\xBD", 3);
			w += 3;
			i++;
		}
	}
	d[w] = '\0';
	char *shrunk = realloc(d, w + 1);
	return shrunk ? shrunk : d;
}
