/*
 * runtime.c - the sandbox runtime's verbs as a client calls them
 * (sandbox/handle.h; docs/upstream.md#python-runtime-api and #commands-and-files): run a command, write,
 * read, list and probe files, with upstream's path guard and percent
 * encoding. Requests go through http.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "handle_internal.h"
#include "jsonutil.h"

/* The biggest JSON answer kept in memory (run output, listings). */
#define MAX_JSON_BODY (64u << 20)

/* ---- paths ---- */

char *sbx__path_encode(const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(path);
	char *out = malloc(3 * n + 1), *o = out;
	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_' || *p == '.' || *p == '-' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* Python's repr() of an ASCII-controlled string, for the guard's message. */
static void py_repr(char *out, size_t cap, const char *s)
{
	bool dq = strchr(s, '\'') && !strchr(s, '"');
	char q = dq ? '"' : '\'';
	size_t o = 0;
	out[o++] = q;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 6 < cap; p++) {
		if (*p == '\\' || *p == (unsigned char)q) {
			out[o++] = '\\';
			out[o++] = (char)*p;
		} else if (*p == '\n' || *p == '\r' || *p == '\t') {
			out[o++] = '\\';
			out[o++] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
		} else if (*p < 0x20 || *p == 0x7f) {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o++] = q;
	out[o] = '\0';
}

int sbx_path_guard(const char *path, char **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_path_guard: no output");
	*out = NULL;
	if (!path)
		return asb_error_set(ASB_EINVAL, 0, NULL, "Upload path cannot be empty.");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			char r[600];
			py_repr(r, sizeof(r), path);
			return asb_error_set(ASB_EINVAL, 0, NULL, "Upload path contains ASCII control "
			                     "characters: %s", r);
		}
	}
	/* strip surrounding whitespace (only spaces are left to strip) */
	while (*path == ' ')
		path++;
	size_t len = strlen(path);
	while (len > 0 && path[len - 1] == ' ')
		len--;
	if (len == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "Upload path cannot be empty.");
	char *p = strndup(path, len);
	/* posixpath.normpath() then lstrip('/'): a stack of segments */
	char *res = p ? malloc(len + 1) : NULL;
	const char **seg = res ? calloc(len + 1, sizeof(*seg)) : NULL;
	if (!seg) {
		free(p);
		free(res);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	bool absolute = p[0] == '/';
	size_t n = 0;
	char *save = NULL;
	char *work = strdup(p);
	for (char *s = work ? strtok_r(work, "/", &save) : NULL; s; s = strtok_r(NULL, "/", &save)) {
		if (strcmp(s, ".") == 0)
			continue;
		if (strcmp(s, "..") != 0 || (!absolute && n == 0) || (n > 0 && strcmp(seg[n - 1], "..") == 0))
			seg[n++] = s;
		else if (n > 0)
			n--;
	}
	int rc = work ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	size_t o = 0;
	bool escapes = false;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t l = strlen(seg[i]);
		if (i)
			res[o++] = '/';
		memcpy(res + o, seg[i], l);
		o += l;
		escapes = escapes || strcmp(seg[i], "..") == 0;
	}
	res[o] = '\0';
	if (rc == 0 && o == 0)
		rc = asb_error_set(ASB_EINVAL, 0, NULL, "Upload path '%s' does not name a file.", p);
	else if (rc == 0 && escapes)
		rc = asb_error_set(ASB_EINVAL, 0, NULL, "Upload path '%s' escapes the sandbox root.", p);
	free(work);
	free(seg);
	free(p);
	if (rc) {
		free(res);
		return rc;
	}
	*out = res;
	return 0;
}

/* The path to send: guarded unless the caller opted out. */
static int request_path(const char *path, unsigned int flags, char **out)
{
	if (flags & SBX_FILE_ALLOW_UNSAFE_PATHS) {
		*out = strdup(path ? path : "");
		return *out ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	return sbx_path_guard(path, out);
}

/* "<verb>/<path percent-encoded>" (path NULL: ""). */
static char *verb_path(const char *verb, const char *path)
{
	char *enc = sbx__path_encode(path ? path : "");
	char *r = enc ? ju_printf("%s/%s", verb, enc) : NULL;
	free(enc);
	return r;
}

/* ---- call options ---- */

int sbx_call_options_init(sbx_call_options *opts, unsigned int version)
{
	if (!opts || version != SBX_CALL_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "unknown sbx_call_options version %u",
		                     version);
	*opts = (sbx_call_options)SBX_CALL_OPTIONS_INIT;
	return 0;
}

/* The caller's options, or the defaults; checked. */
static int call_opts(const sbx_call_options *in, sbx_call_options *out)
{
	if (!in) {
		*out = (sbx_call_options)SBX_CALL_OPTIONS_INIT;
		return 0;
	}
	if (in->version != SBX_CALL_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "unknown sbx_call_options version %u",
		                     in->version);
	if (in->timeout_ms <= 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "a request timeout must be positive, got %ld ms",
		                     in->timeout_ms);
	*out = *in;
	return 0;
}

/* The options of a plain call: defaults with its timeout and flags. */
static sbx_call_options plain(long timeout_ms, unsigned int flags)
{
	sbx_call_options o = SBX_CALL_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	o.flags = flags;
	return o;
}

/* ---- run ---- */

void sbx_exec_result_free(sbx_exec_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err);
	free(r);
}

/* A result field: absent or null is the default, another type an error. */
static bool text_field(const cJSON *o, const char *key, char **out, size_t *len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (v && !cJSON_IsNull(v) && !cJSON_IsString(v))
		return false;
	const char *s = cJSON_IsString(v) ? v->valuestring : "";
	*len = strlen(s);
	*out = strdup(s);
	return true;
}

static int parse_exec(const char *body, sbx_exec_result **out)
{
	cJSON *j = cJSON_Parse(body ? body : "");
	if (!j)
		return asb_error_set(SBX_ERESPONSE, 0, NULL, "Failed to decode JSON response from "
		                     "sandbox: %.200s", body ? body : "");
	sbx_exec_result *r = calloc(1, sizeof(*r));
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "exit_code");
	bool ok = r && cJSON_IsObject(j) && text_field(j, "stdout", &r->out, &r->out_len) &&
	          text_field(j, "stderr", &r->err, &r->err_len) &&
	          (!code || cJSON_IsNull(code) ||
	           (cJSON_IsNumber(code) && code->valuedouble == (double)(int)code->valuedouble));
	int rc = 0;
	if (!ok) {
		rc = asb_error_set(SBX_ERESPONSE, 0, NULL, "Server returned invalid execution result "
		                   "format: %.200s", body);
	} else if (!r->out || !r->err) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	} else {
		r->exit_code = cJSON_IsNumber(code) ? (int)code->valuedouble : -1;
	}
	cJSON_Delete(j);
	if (rc) {
		sbx_exec_result_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int sbx_handle_run(sbx_handle *h, const char *command, long timeout_ms, sbx_exec_result **out)
{
	sbx_call_options o = plain(timeout_ms, 0);
	return sbx_handle_run_opts(h, command, &o, out);
}

int sbx_handle_run_opts(sbx_handle *h, const char *command, const sbx_call_options *opts,
                        sbx_exec_result **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_run: no output");
	*out = NULL;
	if (!h || ju_empty(command))
		return asb_error_set(ASB_EINVAL, 0, NULL, "a command is required");
	sbx_call_options o;
	int orc = call_opts(opts, &o);
	if (orc)
		return orc;
	cJSON *body = cJSON_CreateObject();
	char *json = body && ju_set_str(body, "command", command) ? cJSON_PrintUnformatted(body)
	                                                           : NULL;
	cJSON_Delete(body);
	if (!json)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	sbx_http_req req = { .method = "POST", .path = "execute", .json = json,
	                     .timeout_ms = o.timeout_ms, .max_body = MAX_JSON_BODY,
	                     .max_retries = o.max_retries, .cancel = o.cancel };
	sbx_http_resp resp;
	int rc = sbx__http_do(h, &req, &resp);
	free(json);
	if (rc == 0)
		rc = parse_exec(resp.body, out);
	free(resp.body);
	return rc;
}

/* ---- files ---- */

int sbx_handle_write(sbx_handle *h, const char *path, const sbx_upload_source *src,
                     long timeout_ms, unsigned int flags)
{
	sbx_call_options o = plain(timeout_ms, flags);
	return sbx_handle_write_opts(h, path, src, &o);
}

int sbx_handle_write_opts(sbx_handle *h, const char *path, const sbx_upload_source *src,
                          const sbx_call_options *opts)
{
	if (!h || !src || (!src->data && src->fd < 0 && !src->read))
		return asb_error_set(ASB_EINVAL, 0, NULL, "a write needs a handle and a source");
	if (src->data && src->size < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "a buffer source needs its size");
	sbx_call_options o;
	int rc = call_opts(opts, &o);
	if (rc)
		return rc;
	char *p = NULL;
	rc = request_path(path, o.flags, &p);
	if (rc)
		return rc;
	sbx_upload_source s = *src;
	if (s.data)
		s.fd = -1, s.read = NULL;
	else if (s.fd >= 0)
		s.read = NULL;
	struct stat st;
	if (!s.data && s.fd >= 0 && s.size < 0 && fstat(s.fd, &st) == 0 && S_ISREG(st.st_mode)) {
		/* a file: send its length, not a chunked body */
		off_t at = lseek(s.fd, 0, SEEK_CUR);
		if (at >= 0 && at <= st.st_size)
			s.size = st.st_size - at;
	}
	sbx_http_req req = { .method = "POST", .path = "upload", .upload = &s, .filename = p,
	                     .timeout_ms = o.timeout_ms, .max_body = MAX_JSON_BODY,
	                     .max_retries = o.max_retries, .cancel = o.cancel };
	sbx_http_resp resp;
	rc = sbx__http_do(h, &req, &resp);
	free(resp.body);
	free(p);
	return rc;
}

int sbx_handle_read_cb(sbx_handle *h, const char *path, sbx_write_fn fn, void *userdata,
                       long timeout_ms, unsigned int flags, int64_t *written)
{
	sbx_call_options o = plain(timeout_ms, flags);
	return sbx_handle_read_cb_opts(h, path, fn, userdata, &o, written);
}

int sbx_handle_read_cb_opts(sbx_handle *h, const char *path, sbx_write_fn fn, void *userdata,
                            const sbx_call_options *opts, int64_t *written)
{
	if (written)
		*written = 0;
	if (!h || !fn)
		return asb_error_set(ASB_EINVAL, 0, NULL, "a read needs a handle and a sink");
	sbx_call_options o;
	int rc = call_opts(opts, &o);
	if (rc)
		return rc;
	char *p = NULL;
	rc = request_path(path, o.flags, &p);
	if (rc)
		return rc;
	char *vp = verb_path("download", p);
	free(p);
	if (!vp)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	sbx_http_req req = { .method = "GET", .path = vp, .timeout_ms = o.timeout_ms, .sink = fn,
	                     .sink_ud = userdata, .max_retries = o.max_retries,
	                     .cancel = o.cancel };
	sbx_http_resp resp;
	rc = sbx__http_do(h, &req, &resp);
	if (written)
		*written = resp.streamed;
	free(resp.body);
	free(vp);
	return rc;
}

typedef struct {
	int fd;
	int error;
} fd_sink;

static int write_fd(void *ud, const char *buf, size_t len)
{
	fd_sink *s = ud;
	while (len > 0) {
		ssize_t n = write(s->fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->error = n < 0 ? errno : EIO;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_handle_read_fd(sbx_handle *h, const char *path, int fd, long timeout_ms,
                       unsigned int flags, int64_t *written)
{
	fd_sink s = { fd, 0 };
	int rc = sbx_handle_read_cb(h, path, write_fd, &s, timeout_ms, flags, written);
	if (rc == ASB_ECANCELED && s.error)
		rc = asb_error_set(ASB_ETRANSPORT, 0, NULL, "writing %s to file descriptor %d failed: %s",
		                   path, fd, strerror(s.error));
	return rc;
}

typedef struct {
	char *buf;
	size_t len, cap;
} mem_sink;

static int write_mem(void *ud, const char *buf, size_t len)
{
	mem_sink *m = ud;
	if (m->len + len + 1 > m->cap) {
		size_t cap = m->cap ? m->cap : 65536;
		while (cap < m->len + len + 1)
			cap *= 2;
		char *nb = realloc(m->buf, cap);
		if (!nb)
			return -1;
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, buf, len);
	m->len += len;
	m->buf[m->len] = '\0';
	return 0;
}

int sbx_handle_read(sbx_handle *h, const char *path, long timeout_ms, unsigned int flags,
                    char **data, size_t *len)
{
	if (!data || !len)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_read: no output");
	*data = NULL;
	*len = 0;
	mem_sink m = { NULL, 0, 0 };
	int rc = sbx_handle_read_cb(h, path, write_mem, &m, timeout_ms, flags, NULL);
	if (rc == ASB_ECANCELED)
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory reading %s", path);
	if (rc == 0 && !m.buf && !(m.buf = calloc(1, 1)))
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (rc) {
		free(m.buf);
		return rc;
	}
	*data = m.buf;
	*len = m.len;
	return 0;
}

/* GET <verb>/<path> and parse the JSON answer ("" and "null" parse as NULL). */
static int get_json(sbx_handle *h, const char *verb, const char *path,
                    const sbx_call_options *o, cJSON **out, bool *empty)
{
	*out = NULL;
	*empty = false;
	char *vp = verb_path(verb, path);
	if (!vp)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	sbx_http_req req = { .method = "GET", .path = vp, .timeout_ms = o->timeout_ms,
	                     .max_body = MAX_JSON_BODY, .max_retries = o->max_retries,
	                     .cancel = o->cancel };
	sbx_http_resp resp;
	int rc = sbx__http_do(h, &req, &resp);
	free(vp);
	if (rc)
		return rc;
	const char *b = resp.body ? resp.body : "";
	while (*b == ' ' || *b == '\n' || *b == '\r' || *b == '\t')
		b++;
	if (!*b) {
		*empty = true;
	} else if (!(*out = cJSON_Parse(b))) {
		rc = asb_error_set(SBX_ERESPONSE, 0, NULL, "the sandbox's answer to %s %s is not JSON: "
		                   "%.200s", verb, ju_nz(path), b);
	}
	free(resp.body);
	return rc;
}

void sbx_file_list_free(sbx_file_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		free(l->entries[i].name);
	free(l->entries);
	free(l);
}

/* One listing entry (FileEntry.from_legacy); false when malformed. */
static bool parse_entry(const cJSON *it, sbx_file_entry *e)
{
	const char *name = ju_str(it, "name"), *type = ju_str(it, "type");
	const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(it, "mod_time");
	if (!cJSON_IsObject(it) || !name || !type || !cJSON_IsNumber(size) ||
	    (strcmp(type, "file") != 0 && strcmp(type, "directory") != 0) ||
	    (mt && !cJSON_IsNull(mt) && !cJSON_IsNumber(mt)))
		return false;
	e->name = strdup(name);
	e->size = (int64_t)size->valuedouble;
	e->is_dir = strcmp(type, "directory") == 0;
	e->mod_time = cJSON_IsNumber(mt) ? mt->valuedouble : 0;
	return e->name != NULL;
}

int sbx_handle_list(sbx_handle *h, const char *path, long timeout_ms, sbx_file_list **out)
{
	sbx_call_options o = plain(timeout_ms, 0);
	return sbx_handle_list_opts(h, path, &o, out);
}

int sbx_handle_list_opts(sbx_handle *h, const char *path, const sbx_call_options *opts,
                         sbx_file_list **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_list: no output");
	*out = NULL;
	if (!h)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_list: no handle");
	sbx_call_options o;
	int rc = call_opts(opts, &o);
	if (rc)
		return rc;
	cJSON *j = NULL;
	bool empty;
	rc = get_json(h, "list", path, &o, &j, &empty);
	if (rc)
		return rc;
	sbx_file_list *l = calloc(1, sizeof(*l));
	int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
	if (l && n)
		l->entries = calloc((size_t)n, sizeof(*l->entries));
	bool falsy = empty || cJSON_IsNull(j) || cJSON_IsFalse(j) ||
	             (cJSON_IsArray(j) && n == 0);
	if (!l || (n && !l->entries)) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	} else if (!falsy && !cJSON_IsArray(j)) {
		rc = asb_error_set(SBX_ERESPONSE, 0, NULL, "the sandbox's listing of %s is not a JSON "
		                   "array", ju_nz(path));
	} else {
		const cJSON *it;
		cJSON_ArrayForEach(it, (falsy ? NULL : j)) {
			if (!parse_entry(it, &l->entries[l->count])) {
				char *t = cJSON_PrintUnformatted(it);
				rc = asb_error_set(SBX_ERESPONSE, 0, NULL, "the sandbox's listing of %s has an "
				                   "invalid entry: %.200s", ju_nz(path), t ? t : "?");
				free(t);
				break;
			}
			l->count++;
		}
	}
	cJSON_Delete(j);
	if (rc) {
		sbx_file_list_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

int sbx_handle_exists(sbx_handle *h, const char *path, long timeout_ms, bool *exists)
{
	sbx_call_options o = plain(timeout_ms, 0);
	return sbx_handle_exists_opts(h, path, &o, exists);
}

int sbx_handle_exists_opts(sbx_handle *h, const char *path, const sbx_call_options *opts,
                           bool *exists)
{
	if (!h || !exists)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_exists: no handle or output");
	*exists = false;
	sbx_call_options o;
	int rc = call_opts(opts, &o);
	if (rc)
		return rc;
	cJSON *j = NULL;
	bool empty;
	rc = get_json(h, "exists", path, &o, &j, &empty);
	if (rc)
		return rc;
	if (!empty && !cJSON_IsObject(j))
		rc = asb_error_set(SBX_ERESPONSE, 0, NULL, "the sandbox's answer to exists %s is not a "
		                   "JSON object", ju_nz(path));
	else
		*exists = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "exists"));
	cJSON_Delete(j);
	return rc;
}
