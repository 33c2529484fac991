/*
 * error.c - the thread-local last error and the code names.
 *
 * Every failing call records its detail here with asb_error_set()
 * and returns the code; callers read the detail with asb_error_last(). The
 * slot is per thread (_Thread_local), fixed-size and never allocated, so
 * recording an error can not itself fail, and there is no shared mutable
 * state: a watch thread's errors never overwrite a worker's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "asb/common.h"

#define ERROR_MESSAGE_MAX 1024
#define ERROR_REASON_MAX 64

typedef struct {
	asb_error pub;                    /* what asb_error_last() returns */
	char reason[ERROR_REASON_MAX];
	char message[ERROR_MESSAGE_MAX];
} error_slot;

static _Thread_local error_slot tls_error;

const asb_error *asb_error_last(void)
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

int asb_error_set(int code, int http_status, const char *reason,
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

void asb_error_clear(void)
{
	tls_error.pub.code = ASB_OK;
	tls_error.pub.http_status = 0;
	tls_error.reason[0] = '\0';
	tls_error.message[0] = '\0';
}

const char *asb_strerror(int code)
{
	switch (code) {
	case ASB_OK: return "success";
	case ASB_ERROR: return "error";
	case ASB_ENOMEM: return "out of memory";
	case ASB_EINVAL: return "invalid argument";
	case ASB_ECONFIG: return "unusable configuration";
	case ASB_ETRANSPORT: return "transport error";
	case ASB_EDECODE: return "cannot decode answer";
	case ASB_ESHUTDOWN: return "shut down";
	case ASB_ECANCELED: return "canceled";
	case ASB_ETIMEOUT: return "timed out";
	case ASB_ETOOLARGE: return "too large";
	case ASB_EBADREQUEST: return "bad request";
	case ASB_EUNAUTHORIZED: return "unauthorized";
	case ASB_EFORBIDDEN: return "forbidden";
	case ASB_ENOTFOUND: return "not found";
	case ASB_EMETHODNOTALLOWED: return "method not allowed";
	case ASB_ENOTACCEPTABLE: return "not acceptable";
	case ASB_EALREADYEXISTS: return "already exists";
	case ASB_ECONFLICT: return "conflict";
	case ASB_EGONE: return "gone (resource version too old)";
	case ASB_EUNSUPPORTEDMEDIA: return "unsupported media type";
	case ASB_EINVALID: return "invalid object";
	case ASB_ETOOMANYREQUESTS: return "too many requests";
	case ASB_EINTERNAL: return "internal server error";
	case ASB_ESERVICEUNAVAILABLE: return "service unavailable";
	case ASB_ESERVERTIMEOUT: return "server timeout";
	case ASB_EAPI: return "API error";
	default: return "unknown error";
	}
}

