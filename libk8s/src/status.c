/*
 * status.c - the mapping from a Kubernetes Status (reason + HTTP code) to an
 * error code, and the recording of a failed API answer as the thread-local
 * error (status.h).
 */
#include <stdio.h>
#include <string.h>
#include "k8s/common.h"
#include "status.h"

#define ERROR_MESSAGE_MAX 1024
/* How much of a body that is not a Status is quoted in the message. */
#define BODY_QUOTE_MAX 200

/* meta/v1 StatusReason values (k8s.io/apimachinery/pkg/apis/meta/v1/types.go). */
static const struct {
	const char *reason;
	int code;
} reason_codes[] = {
	{ "BadRequest", ASB_EBADREQUEST },
	{ "Unauthorized", ASB_EUNAUTHORIZED },
	{ "Forbidden", ASB_EFORBIDDEN },
	{ "NotFound", ASB_ENOTFOUND },
	{ "MethodNotAllowed", ASB_EMETHODNOTALLOWED },
	{ "NotAcceptable", ASB_ENOTACCEPTABLE },
	{ "AlreadyExists", ASB_EALREADYEXISTS },
	{ "Conflict", ASB_ECONFLICT },
	{ "Gone", ASB_EGONE },
	{ "Expired", ASB_EGONE },
	{ "UnsupportedMediaType", ASB_EUNSUPPORTEDMEDIA },
	{ "Invalid", ASB_EINVALID },
	{ "TooManyRequests", ASB_ETOOMANYREQUESTS },
	{ "InternalError", ASB_EINTERNAL },
	{ "ServiceUnavailable", ASB_ESERVICEUNAVAILABLE },
	{ "Timeout", ASB_ESERVERTIMEOUT },
	{ "ServerTimeout", ASB_ESERVERTIMEOUT },
	{ "RequestEntityTooLarge", ASB_EAPI },
};

static int code_from_http(int http_status)
{
	if (http_status >= 200 && http_status < 300)
		return ASB_OK;
	switch (http_status) {
	case 400: return ASB_EBADREQUEST;
	case 401: return ASB_EUNAUTHORIZED;
	case 403: return ASB_EFORBIDDEN;
	case 404: return ASB_ENOTFOUND;
	case 405: return ASB_EMETHODNOTALLOWED;
	case 406: return ASB_ENOTACCEPTABLE;
	case 409: return ASB_ECONFLICT;
	case 410: return ASB_EGONE;
	case 415: return ASB_EUNSUPPORTEDMEDIA;
	case 422: return ASB_EINVALID;
	case 429: return ASB_ETOOMANYREQUESTS;
	case 500: return ASB_EINTERNAL;
	case 503: return ASB_ESERVICEUNAVAILABLE;
	case 504: return ASB_ESERVERTIMEOUT;
	default: return ASB_EAPI;
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

/* A bounded string for assembling a message before asb_error_set(); what
 * does not fit is dropped, and asb_error_set() marks the cut. */
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
		return asb_error_set(ASB_EDECODE, http_status, NULL,
		                     "%s%sanswer is not a Status object",
		                     subject ? subject : "", subject ? ": " : "");
	const char *reason = json_str(status, "reason");
	const char *message = json_str(status, "message");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(status, "code");
	if (http_status == 0 && cJSON_IsNumber(code))
		http_status = code->valueint;

	int rc = k8s_error_code_from_status(reason, http_status);
	if (rc == ASB_OK)  /* a failure Status with a 2xx code is still a failure */
		rc = ASB_EAPI;

	if (subject) {
		msg_adds(&m, subject);
		msg_adds(&m, ": ");
	}
	msg_adds(&m, message && message[0] ? message : asb_strerror(rc));
	add_causes(&m, status, message);
	if (reason && reason[0])
		snprintf(tail, sizeof(tail), " (%.40s)", reason);
	else
		snprintf(tail, sizeof(tail), " (HTTP %d)", http_status);
	msg_adds(&m, tail);
	return asb_error_set(rc, http_status, reason, "%s", m.buf);
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
	if (rc == ASB_OK)
		rc = ASB_EAPI;
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

	return asb_error_set(rc, http_status, NULL, "%s%sHTTP %d (%s)%s%s%s",
	                     subject ? subject : "", subject ? ": " : "",
	                     http_status, asb_strerror(rc),
	                     q ? ": " : "", quote,
	                     body && n < len ? "..." : "");
}
