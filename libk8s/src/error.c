/*
 * error.c - the thread-local last error, code names, and the mapping from
 * a Kubernetes Status (reason + HTTP code) to k8s_error_code.
 *
 * Every failing libk8s call records its detail here with k8s_error_set()
 * and returns the code; callers read the detail with k8s_error_last(). The
 * slot is per thread (_Thread_local), fixed-size and never allocated, so
 * recording an error can not itself fail, and there is no shared mutable
 * state: a watch thread's errors never overwrite a worker's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "k8s/common.h"
#include "status.h"

#define ERROR_MESSAGE_MAX 1024
#define ERROR_REASON_MAX 64
/* How much of a body that is not a Status is quoted in the message. */
#define BODY_QUOTE_MAX 200

typedef struct {
	k8s_error pub;                    /* what k8s_error_last() returns */
	char reason[ERROR_REASON_MAX];
	char message[ERROR_MESSAGE_MAX];
} error_slot;

static _Thread_local error_slot tls_error;

const k8s_error *k8s_error_last(void)
{
	/* The slot starts zeroed; point the strings at its buffers on every
	 * read so that a fresh thread sees "" rather than NULL. */
	tls_error.pub.reason = tls_error.reason;
	tls_error.pub.message = tls_error.message;
	return &tls_error.pub;
}

/*
 * Copies `src` into `dst` (`cap` bytes). When it does not fit, the cut is
 * moved back to a UTF-8 character boundary and "..." marks it, so that a
 * truncated message is still valid text (it may end up in a JSON log).
 */
static void copy_truncated(char *dst, size_t cap, const char *src, size_t len)
{
	if (len < cap) {
		memcpy(dst, src, len);
		dst[len] = '\0';
		return;
	}
	size_t cut = cap - 4;  /* room for "..." and the NUL */
	while (cut > 0 && ((unsigned char)src[cut] & 0xC0) == 0x80)
		cut--;
	memcpy(dst, src, cut);
	memcpy(dst + cut, "...", 4);
}

int k8s_error_set(int code, int http_status, const char *reason,
                  const char *fmt, ...)
{
	/* Format into a local buffer first: the arguments may point into the
	 * slot itself (wrapping the previous message is a common idiom). */
	char msg[ERROR_MESSAGE_MAX + 1];
	char rsn[ERROR_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt ? fmt : "", ap);
	va_end(ap);
	if (n < 0) {
		n = 0;
		msg[0] = '\0';
	}
	size_t len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	/* A vsnprintf-truncated msg reports the untruncated length, so `len`
	 * reaching ERROR_MESSAGE_MAX is what tells copy_truncated() to cut. */
	copy_truncated(rsn, sizeof(rsn), reason ? reason : "",
	               reason ? strlen(reason) : 0);

	copy_truncated(tls_error.message, sizeof(tls_error.message), msg, len);
	memcpy(tls_error.reason, rsn, sizeof(rsn));
	tls_error.pub.code = code;
	tls_error.pub.http_status = http_status;
	return code;
}

void k8s_error_clear(void)
{
	tls_error.pub.code = K8S_OK;
	tls_error.pub.http_status = 0;
	tls_error.reason[0] = '\0';
	tls_error.message[0] = '\0';
}

const char *k8s_strerror(int code)
{
	switch (code) {
	case K8S_OK: return "success";
	case K8S_ERROR: return "error";
	case K8S_ENOMEM: return "out of memory";
	case K8S_EINVAL: return "invalid argument";
	case K8S_ECONFIG: return "unusable configuration";
	case K8S_ETRANSPORT: return "transport error";
	case K8S_EDECODE: return "cannot decode answer";
	case K8S_ESHUTDOWN: return "shut down";
	case K8S_ECANCELED: return "canceled";
	case K8S_ETIMEOUT: return "timed out";
	case K8S_ETOOLARGE: return "too large";
	case K8S_EBADREQUEST: return "bad request";
	case K8S_EUNAUTHORIZED: return "unauthorized";
	case K8S_EFORBIDDEN: return "forbidden";
	case K8S_ENOTFOUND: return "not found";
	case K8S_EMETHODNOTALLOWED: return "method not allowed";
	case K8S_ENOTACCEPTABLE: return "not acceptable";
	case K8S_EALREADYEXISTS: return "already exists";
	case K8S_ECONFLICT: return "conflict";
	case K8S_EGONE: return "gone (resource version too old)";
	case K8S_EUNSUPPORTEDMEDIA: return "unsupported media type";
	case K8S_EINVALID: return "invalid object";
	case K8S_ETOOMANYREQUESTS: return "too many requests";
	case K8S_EINTERNAL: return "internal server error";
	case K8S_ESERVICEUNAVAILABLE: return "service unavailable";
	case K8S_ESERVERTIMEOUT: return "server timeout";
	case K8S_EAPI: return "API error";
	default: return "unknown error";
	}
}

/* meta/v1 StatusReason values (k8s.io/apimachinery/pkg/apis/meta/v1/types.go). */
static const struct {
	const char *reason;
	int code;
} reason_codes[] = {
	{ "BadRequest", K8S_EBADREQUEST },
	{ "Unauthorized", K8S_EUNAUTHORIZED },
	{ "Forbidden", K8S_EFORBIDDEN },
	{ "NotFound", K8S_ENOTFOUND },
	{ "MethodNotAllowed", K8S_EMETHODNOTALLOWED },
	{ "NotAcceptable", K8S_ENOTACCEPTABLE },
	{ "AlreadyExists", K8S_EALREADYEXISTS },
	{ "Conflict", K8S_ECONFLICT },
	{ "Gone", K8S_EGONE },
	{ "Expired", K8S_EGONE },
	{ "UnsupportedMediaType", K8S_EUNSUPPORTEDMEDIA },
	{ "Invalid", K8S_EINVALID },
	{ "TooManyRequests", K8S_ETOOMANYREQUESTS },
	{ "InternalError", K8S_EINTERNAL },
	{ "ServiceUnavailable", K8S_ESERVICEUNAVAILABLE },
	{ "Timeout", K8S_ESERVERTIMEOUT },
	{ "ServerTimeout", K8S_ESERVERTIMEOUT },
	{ "RequestEntityTooLarge", K8S_EAPI },
};

static int code_from_http(int http_status)
{
	if (http_status >= 200 && http_status < 300)
		return K8S_OK;
	switch (http_status) {
	case 400: return K8S_EBADREQUEST;
	case 401: return K8S_EUNAUTHORIZED;
	case 403: return K8S_EFORBIDDEN;
	case 404: return K8S_ENOTFOUND;
	case 405: return K8S_EMETHODNOTALLOWED;
	case 406: return K8S_ENOTACCEPTABLE;
	case 409: return K8S_ECONFLICT;
	case 410: return K8S_EGONE;
	case 415: return K8S_EUNSUPPORTEDMEDIA;
	case 422: return K8S_EINVALID;
	case 429: return K8S_ETOOMANYREQUESTS;
	case 500: return K8S_EINTERNAL;
	case 503: return K8S_ESERVICEUNAVAILABLE;
	case 504: return K8S_ESERVERTIMEOUT;
	default: return K8S_EAPI;
	}
}

int k8s_error_code_from_status(const char *reason, int http_status)
{
	if (reason && reason[0]) {
		for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
			if (strcmp(reason, reason_codes[i].reason) == 0)
				return reason_codes[i].code;
	}
	return code_from_http(http_status);
}

/* A bounded string for assembling a message before k8s_error_set(); what
 * does not fit is dropped, and k8s_error_set() marks the cut. */
typedef struct {
	char buf[ERROR_MESSAGE_MAX + 1];
	size_t len;
} msgbuf;

static void msg_add(msgbuf *m, const char *s, size_t n)
{
	size_t room = sizeof(m->buf) - 1 - m->len;
	if (n > room)
		n = room;
	memcpy(m->buf + m->len, s, n);
	m->len += n;
	m->buf[m->len] = '\0';
}

static void msg_adds(msgbuf *m, const char *s)
{
	msg_add(m, s, strlen(s));
}

static const char *json_str(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) && v->valuestring ? v->valuestring : NULL;
}

/* Appends "; field: message" for each cause the message does not repeat. */
static void add_causes(msgbuf *m, const cJSON *status, const char *message)
{
	const cJSON *details = cJSON_GetObjectItemCaseSensitive(status, "details");
	const cJSON *causes = cJSON_GetObjectItemCaseSensitive(details, "causes");
	const cJSON *cause;

	if (!cJSON_IsArray(causes))
		return;
	cJSON_ArrayForEach(cause, causes) {
		const char *cmsg = json_str(cause, "message");
		const char *field = json_str(cause, "field");
		if (!cmsg || !cmsg[0])
			continue;
		/* The server usually folds causes into the message already
		 * (Invalid): repeating them would only make it longer. */
		if (message && strstr(message, cmsg))
			continue;
		msg_adds(m, "; ");
		if (field && field[0]) {
			msg_adds(m, field);
			msg_adds(m, ": ");
		}
		msg_adds(m, cmsg);
	}
}

int k8s__status_record_json(const cJSON *status, int http_status,
                            const char *subject)
{
	msgbuf m = { .len = 0 };
	char tail[64];

	m.buf[0] = '\0';
	if (!cJSON_IsObject(status))
		return k8s_error_set(K8S_EDECODE, http_status, NULL,
		                     "%s%sanswer is not a Status object",
		                     subject ? subject : "", subject ? ": " : "");
	const char *reason = json_str(status, "reason");
	const char *message = json_str(status, "message");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");
	if (http_status == 0 && cJSON_IsNumber(code))
		http_status = code->valueint;

	int rc = k8s_error_code_from_status(reason, http_status);
	if (rc == K8S_OK)  /* a failure Status with a 2xx code is still a failure */
		rc = K8S_EAPI;

	if (subject) {
		msg_adds(&m, subject);
		msg_adds(&m, ": ");
	}
	msg_adds(&m, message && message[0] ? message : k8s_strerror(rc));
	add_causes(&m, status, message);
	if (reason && reason[0])
		snprintf(tail, sizeof(tail), " (%.40s)", reason);
	else
		snprintf(tail, sizeof(tail), " (HTTP %d)", http_status);
	msg_adds(&m, tail);
	return k8s_error_set(rc, http_status, reason, "%s", m.buf);
}

/* True when the parsed body looks like a meta/v1 Status. */
static int is_status(const cJSON *obj)
{
	const char *kind = json_str(obj, "kind");
	return cJSON_IsObject(obj) && kind && strcmp(kind, "Status") == 0;
}

int k8s__status_record(int http_status, const char *body, size_t len,
                       const char *subject)
{
	cJSON *obj = body && len ? cJSON_ParseWithLength(body, len) : NULL;

	if (is_status(obj)) {
		int rc = k8s__status_record_json(obj, http_status, subject);
		cJSON_Delete(obj);
		return rc;
	}
	cJSON_Delete(obj);

	/* Not a Status (a proxy's HTML page, plain text, nothing): the HTTP
	 * code decides, and the start of the body helps whoever reads it. */
	int rc = code_from_http(http_status);
	if (rc == K8S_OK)
		rc = K8S_EAPI;
	/* Quote at most BODY_QUOTE_MAX bytes, cut before a UTF-8 character
	 * that would not fit whole. */
	size_t n = body ? (len < BODY_QUOTE_MAX ? len : BODY_QUOTE_MAX) : 0;
	while (n > 0 && n < len && ((unsigned char)body[n] & 0xC0) == 0x80)
		n--;
	char quote[BODY_QUOTE_MAX + 1];
	size_t q = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)body[i];
		quote[q++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	quote[q] = '\0';
	while (q > 0 && quote[q - 1] == ' ')
		quote[--q] = '\0';

	return k8s_error_set(rc, http_status, NULL, "%s%sHTTP %d (%s)%s%s%s",
	                     subject ? subject : "", subject ? ": " : "",
	                     http_status, k8s_strerror(rc),
	                     q ? ": " : "", quote,
	                     body && n < len ? "..." : "");
}
