/*
 * http.c - one request from a handle to its sandbox
 * (docs/upstream.md#router-request-contract, #connector): the router headers, a pooled libcurl connection, streamed
 * bodies both ways, retries on the statuses and failures upstream's SDK
 * retries, and errors that say what happened. When a request fails
 * because nothing answers, or with a 404 (a router's "Sandbox not found"),
 * the Sandbox is looked up: if it is gone, the error says it was deleted
 * rather than quoting a 502 or 404.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "handle_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "sandbox/clientclaim.h"

/* How much of an error body is kept for the message. */
#define ERROR_BODY_MAX 512

/* ---- the connection pool ---- */

static CURL *pool_take(sbx_handle *h)
{
	CURL *c = NULL;
	pthread_mutex_lock(&h->lock);
	if (h->npool > 0)
		c = h->pool[--h->npool];
	pthread_mutex_unlock(&h->lock);
	if (c)
		curl_easy_reset(c);  /* keeps its live connections */
	else
		c = curl_easy_init();
	return c;
}

/* Gives a handle back, or frees it (closed handle, full pool, or a
 * connection that failed and should not be reused). */
static void pool_give(sbx_handle *h, CURL *c, bool healthy)
{
	pthread_mutex_lock(&h->lock);
	if (healthy && !h->closed && h->npool < SBX_HANDLE_POOL_MAX) {
		h->pool[h->npool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (c)
		curl_easy_cleanup(c);
}

void sbx__http_pool_clear(sbx_handle *h)
{
	while (h->npool > 0)
		curl_easy_cleanup(h->pool[--h->npool]);
}

/* ---- bodies ---- */

typedef struct {
	const sbx_http_req *req;
	sbx_http_resp *resp;
	CURL *curl;
	bool decided, to_sink, sink_aborted, too_large;
	char *buf;
	size_t len, cap, limit;
} body_in;

static bool buf_add(body_in *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *nb = realloc(b->buf, cap);
		if (!nb)
			return false;
		b->buf = nb;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
	return true;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
	body_in *b = ud;
	size_t n = size * nmemb;
	if (!b->decided) {
		/* Only a success body goes to the caller's sink; an error body
		 * is kept (in part) for the message. */
		long status = 0;
		curl_easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &status);
		b->to_sink = b->req->sink && status >= 200 && status < 300;
		b->limit = b->req->sink ? ERROR_BODY_MAX : b->req->max_body;
		b->decided = true;
	}
	if (b->to_sink) {
		if (b->req->sink(b->req->sink_ud, p, n) != 0) {
			b->sink_aborted = true;
			return 0;
		}
		b->resp->streamed += (int64_t)n;
		return n;
	}
	size_t room = b->limit > b->len ? b->limit - b->len : 0;
	if (n > room) {
		if (!b->req->sink) {
			b->too_large = true;
			return 0;
		}
		n = room;  /* an error body: its head is enough */
	}
	if (n && !buf_add(b, p, n))
		return 0;
	return size * nmemb;
}

typedef struct {
	const sbx_upload_source *src;
	int64_t sent;
	off_t start;             /* fd offset at the start, or -1 */
	int error;               /* errno of a failed read(2) */
	bool aborted;            /* the callback said stop */
} body_out;

static size_t on_upload(char *buf, size_t size, size_t nmemb, void *ud)
{
	body_out *u = ud;
	const sbx_upload_source *s = u->src;
	size_t cap = size * nmemb;
	if (s->size >= 0 && (int64_t)cap > s->size - u->sent)
		cap = (size_t)(s->size - u->sent);
	if (cap == 0)
		return 0;
	ssize_t n;
	if (s->data) {
		memcpy(buf, (const char *)s->data + u->sent, cap);
		n = (ssize_t)cap;
	} else if (s->fd >= 0) {
		do
			n = read(s->fd, buf, cap);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			u->error = errno;
			return CURL_READFUNC_ABORT;
		}
	} else {
		n = s->read(s->userdata, buf, cap);
		if (n < 0 || (size_t)n > cap) {
			u->aborted = true;
			return CURL_READFUNC_ABORT;
		}
	}
	u->sent += n;
	return (size_t)n;
}

/* Puts the upload back at its start; false when it can not be. */
static bool upload_rewind(body_out *u)
{
	const sbx_upload_source *s = u->src;
	if (s->data) {
		u->sent = 0;
		return true;
	}
	if (s->fd >= 0 && u->start >= 0 && lseek(s->fd, u->start, SEEK_SET) == u->start) {
		u->sent = 0;
		return true;
	}
	return u->sent == 0;  /* a callback or pipe that gave nothing yet */
}

/* ---- cancellation ---- */

static bool cancelled(const sbx_http_req *req)
{
	return req->cancel && atomic_load(req->cancel);
}

/* libcurl's progress callback: called at once while bytes move and about
 * once a second while the connection is silent; non-zero aborts. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return cancelled(ud) ? 1 : 0;
}

/* Sleeps `ms`, looking at the cancel flag every 50 ms; false when it was
 * set. */
static bool sleep_unless_cancelled(const sbx_http_req *req, long ms)
{
	while (ms > 0) {
		if (cancelled(req))
			return false;
		long step = ms < 50 ? ms : 50;
		sbx__sleep_ms(step);
		ms -= step;
	}
	return !cancelled(req);
}

static int cancel_error(const sbx_http_req *req)
{
	return asb_error_set(ASB_ECANCELED, 0, NULL, "the request %s %s was cancelled", req->method,
	                     req->path);
}

/* ---- headers ---- */

/* X-Sandbox-Timeout as Python's str() prints the seconds: "60", "2.5". */
static void timeout_header(char *buf, size_t cap, long ms)
{
	if (ms % 1000 == 0)
		snprintf(buf, cap, "X-Sandbox-Timeout: %ld", ms / 1000);
	else
		snprintf(buf, cap, "X-Sandbox-Timeout: %g", (double)ms / 1000.0);
}

/*
 * Reads the pod IP from the Sandbox until known (upstream sends
 * X-Sandbox-Pod-IP once it resolves; warm-pool sandboxes are reachable
 * only that way). A 401/403 turns the lookup off for the handle; other
 * failures are ignored (the router falls back to DNS).
 */
static char *pod_ip_for_header(sbx_handle *h)
{
	pthread_mutex_lock(&h->lock);
	char *ip = h->pod_ip ? strdup(h->pod_ip) : NULL;
	bool lookup = !h->pod_ip && !h->pod_ip_disabled;
	pthread_mutex_unlock(&h->lock);
	if (!lookup)
		return ip;
	cJSON *sb = NULL;
	int rc = sbx__handle_get_sandbox(h, &sb);
	char buf[SBX_IP_SIZE];
	const char *found = rc == 0 ? sbx_pick_pod_ip(k8s_obj_at(sb, "status.podIPs"), buf) : NULL;
	cJSON_Delete(sb);
	pthread_mutex_lock(&h->lock);
	if (rc == ASB_EUNAUTHORIZED || rc == ASB_EFORBIDDEN)
		h->pod_ip_disabled = true;
	if (found && !h->pod_ip)
		h->pod_ip = strdup(found);
	pthread_mutex_unlock(&h->lock);
	return found ? strdup(found) : NULL;
}

static struct curl_slist *add_header(struct curl_slist *l, const char *fmt, const char *v,
                                     bool *failed)
{
	char line[512];
	snprintf(line, sizeof(line), fmt, v);
	struct curl_slist *n = curl_slist_append(l, line);
	if (!n)
		*failed = true;
	return n ? n : l;
}

static struct curl_slist *build_headers(sbx_handle *h, const sbx_http_req *req, bool router)
{
	bool failed = false;
	struct curl_slist *l = NULL;
	char port[16], line[64];
	if (router) {
		snprintf(port, sizeof(port), "%d", h->conn.server_port);
		l = add_header(l, "X-Sandbox-ID: %s", h->sandbox_id, &failed);
		l = add_header(l, "X-Sandbox-Namespace: %s", h->ns, &failed);
		l = add_header(l, "X-Sandbox-Port: %s", port, &failed);
		timeout_header(line, sizeof(line), req->timeout_ms);
		l = add_header(l, "%s", line, &failed);
		char *ip = pod_ip_for_header(h);
		if (ip)
			l = add_header(l, "X-Sandbox-Pod-IP: %s", ip, &failed);
		free(ip);
	}
	if (req->json)
		l = add_header(l, "%s", "Content-Type: application/json", &failed);
	/* No "Expect: 100-continue" round trip before an upload. */
	l = add_header(l, "%s", "Expect:", &failed);
	if (failed) {
		curl_slist_free_all(l);
		return NULL;
	}
	return l;
}

/* ---- one request ---- */

typedef enum { DONE, RETRY, FAIL } verdict;

static bool retryable_status(long s)
{
	return s == 500 || s == 502 || s == 503 || s == 504;
}

/* As upstream's client (k8s-agent-sandbox 1.0.8: urllib3 Retry with
 * allowed_methods GET, PUT, DELETE): statuses and failures after the
 * request went out are retried for idempotent methods only; a POST
 * (execute, upload) that may have run is never sent twice. */
static bool idempotent(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "DELETE") == 0;
}

/* The request never left: no connection was made. Safe to retry for any
 * method (urllib3's connect retries). */
static bool never_sent(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
	       cc == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Sandbox gone? Then record that and return ASB_ENOTFOUND; else 0. */
static int check_gone(sbx_handle *h)
{
	if (sbx__handle_get_sandbox(h, NULL) != ASB_ENOTFOUND)
		return 0;
	return asb_error_set(ASB_ENOTFOUND, 404, "NotFound", "Sandbox %s/%s (claim %s) no longer "
	                     "exists: it was deleted while this client was using it", h->ns,
	                     h->sandbox_id, h->claim);
}

/* Formats the failure of an attempt (status 0: no answer) into `msg`. */
static void failure_message(char *msg, size_t cap, const char *url, long status, CURLcode cc,
                            const char *cerr, const body_in *b, const char *location)
{
	if (status == 0) {
		snprintf(msg, cap, "Failed to communicate with the sandbox at %s: %s", url,
		         cerr[0] ? cerr : curl_easy_strerror(cc));
	} else if (location) {
		snprintf(msg, cap, "Failed to communicate with the sandbox at %s. HTTP %ld redirect "
		         "to %s (not followed)", url, status, location);
	} else {
		snprintf(msg, cap, "Failed to communicate with the sandbox at %s. HTTP %ld: %.*s", url,
		         status, b->len > 300 ? 300 : (int)b->len, b->buf ? b->buf : "");
	}
}

int sbx__http_do(sbx_handle *h, const sbx_http_req *req, sbx_http_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	if (req->timeout_ms <= 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "a request timeout must be positive, got %ld ms",
		                     req->timeout_ms);
	body_out up = { req->upload, 0, -1, 0, false };
	if (req->upload && req->upload->fd >= 0 && !req->upload->data)
		up.start = lseek(req->upload->fd, 0, SEEK_CUR);
	bool checked_gone = false, stale_ip = false;
	int rc = 0;
	int max_retries = req->max_retries >= 0 ? req->max_retries : h->conn.max_retries;
	for (int attempt = 0;; attempt++) {
		if (cancelled(req))
			return cancel_error(req);
		char *base = NULL;
		bool router = false;
		if ((rc = sbx__handle_base_url(h, &base, &router)) != 0)
			return rc;
		char *url = ju_printf("%s/%s", base, req->path);
		free(base);
		struct curl_slist *hdrs = url ? build_headers(h, req, router) : NULL;
		CURL *c = hdrs ? pool_take(h) : NULL;
		curl_mime *mime = NULL;
		if (!c) {
			free(url);
			curl_slist_free_all(hdrs);
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory preparing a request");
		}
		body_in b = { req, resp, c, false, false, false, false, NULL, 0, 0, 0 };
		char cerr[CURL_ERROR_SIZE] = "";
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->conn.connect_timeout_ms > 0
		                 ? h->conn.connect_timeout_ms : 10000L);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 131072L);
		curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 131072L);
		if (req->cancel) {
			curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
			curl_easy_setopt(c, CURLOPT_XFERINFODATA, req);
			curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		}
		if (req->json) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->json);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req->json));
		} else if (req->upload) {
			mime = curl_mime_init(c);
			curl_mimepart *part = mime ? curl_mime_addpart(mime) : NULL;
			if (!part || curl_mime_name(part, "file") != CURLE_OK ||
			    curl_mime_filename(part, req->filename) != CURLE_OK ||
			    curl_mime_data_cb(part, req->upload->size, on_upload, NULL, NULL, &up) != CURLE_OK) {
				curl_mime_free(mime);
				pool_give(h, c, false);
				free(url);
				curl_slist_free_all(hdrs);
				return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory preparing an upload");
			}
			curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
		} else if (strcmp(req->method, "GET") != 0) {
			curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
		}
		CURLcode cc = curl_easy_perform(c);
		long status = 0;
		if (cc == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		char *location = NULL;
		if (cc == CURLE_OK && (status == 301 || status == 302 || status == 303 ||
		                       status == 307 || status == 308))
			curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
		char msg[1024];
		failure_message(msg, sizeof(msg), url, status, cc, cerr, &b, location);
		curl_mime_free(mime);
		curl_slist_free_all(hdrs);
		pool_give(h, c, cc == CURLE_OK);
		free(url);

		verdict v;
		if (cc == CURLE_ABORTED_BY_CALLBACK && cancelled(req) && !b.sink_aborted &&
		    !up.aborted) {
			/* nothing to learn from the Sandbox or to retry: the caller
			 * gave up */
			free(b.buf);
			return cancel_error(req);
		}
		if (b.sink_aborted) {
			rc = asb_error_set(ASB_ECANCELED, 0, NULL, "the download of %s was stopped by the "
			                   "caller", req->path);
			v = FAIL;
		} else if (up.aborted) {
			rc = asb_error_set(ASB_ECANCELED, 0, NULL, "the upload was stopped by its source");
			v = FAIL;
		} else if (up.error) {
			rc = asb_error_set(ASB_ETRANSPORT, 0, NULL, "reading the upload failed: %s",
			                   strerror(up.error));
			v = FAIL;
		} else if (b.too_large) {
			rc = asb_error_set(ASB_ETOOLARGE, 0, NULL, "the sandbox's answer to %s is larger "
			                   "than %zu bytes", req->path, req->max_body);
			v = FAIL;
		} else if (cc == CURLE_OK && status < 400 && !location) {
			v = DONE;
		} else {
			rc = asb_error_set(SBX_EREQUEST, (int)status, NULL, "%s", msg);
			bool again = (status == 0 && never_sent(cc)) ||
			             (idempotent(req->method) && (status == 0 || retryable_status(status)));
			v = again ? RETRY : FAIL;
		}
		/* The router (not a sandbox reached directly, whose own 400 this
		 * could be) refused the pod IP this handle remembered: the
		 * Sandbox has a new pod (resumed after a suspend, its pod
		 * recreated). Nothing reached the sandbox, so any method is
		 * safe to send again, once, without the stale address. */
		if (v == FAIL && status == 400 && router && !stale_ip && b.buf &&
		    memmem(b.buf, b.len, "Invalid target IP address", 25) &&
		    (!req->upload || upload_rewind(&up))) {
			stale_ip = true;
			free(b.buf);
			b.buf = NULL;
			sbx__handle_disconnect(h);
			attempt--;
			continue;
		}
		if (v == DONE) {
			resp->status = status;
			resp->body = b.buf;
			resp->len = b.len;
			return 0;
		}
		free(b.buf);
		b.buf = NULL;
		bool unreachable = status == 0 || status == 502 || status == 503 || status == 504;
		/* A router with a Sandbox cache answers 404 for a Sandbox it no
		 * longer has; a 404 of the sandbox itself (a missing file) costs
		 * one lookup that finds the Sandbox and keeps the error as is. */
		if (v != DONE && unreachable) /* a cached pod IP or tunnel may be what is stale */
			sbx__handle_disconnect(h);
		if (v != DONE && (unreachable || status == 404)) {
			if (!checked_gone) {
				checked_gone = true;
				char saved[1024];
				snprintf(saved, sizeof(saved), "%s", asb_error_last()->message);
				int grc = check_gone(h);
				if (grc)
					return grc;
				asb_error_set(SBX_EREQUEST, (int)status, NULL, "%s", saved);
			}
		}
		if (v == FAIL || attempt >= max_retries || resp->streamed > 0 ||
		    (req->upload && !upload_rewind(&up)))
			return rc;
		/* urllib3's schedule with backoff_factor b: 0, 2b, 4b, 8b, ... */
		long delay = attempt == 0 ? 0 : h->conn.retry_backoff_ms << attempt;
		asb_log(h->client->logger, ASB_LOG_DEBUG, "sandbox request retried", "sandbox",
		        h->sandbox_id, "path", req->path, "error", asb_error_last()->message, NULL);
		if (!sleep_unless_cancelled(req, delay))
			return cancel_error(req);
	}
}
