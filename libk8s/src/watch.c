/*
 * watch.c - streaming a watch over a connection shard.
 *
 * A watch is one long GET whose body is a stream of events. Its transfer
 * runs on a shard thread like any request (so that, without a separate
 * watch connection, it is one more HTTP/2 stream on the shared
 * connection), but the events must reach the caller's callback on the
 * caller's thread (client.h promises it). So the write callback only
 * appends the bytes to a buffer under the shard lock and signals; the
 * caller's thread swaps the buffer out and runs the decoder
 * (watch_decoder.c), which calls the callback. A consumer that falls more
 * than WATCH_BACKLOG_MAX behind ends the watch rather than let memory grow
 * without bound; the informer then resumes from its last resourceVersion.
 */
#include <stdlib.h>
#include <string.h>
#include "client_internal.h"
#include "status.h"

/* Bytes received and not yet decoded, at most. */
#define WATCH_BACKLOG_MAX ((size_t)64 << 20)
/* A receive buffer that grew past this while the consumer fell behind (a
 * burst of events) is freed once decoded rather than kept at its
 * high-water mark for the life of the watch. */
#define WATCH_BUFFER_KEEP ((size_t)64 << 10)
/* Largest error body kept from a failed watch. */
#define WATCH_ERROR_BODY_MAX ((size_t)1 << 20)
/* A watch with a server-side timeout gets this much client-side slack. */
#define WATCH_TIMEOUT_SLACK_S 60
/* How often a waiting consumer looks at `cancel`. */
#define CANCEL_POLL_MS 250

/* Why a stream was cut short. */
enum { CUT_NOMEM = 1, CUT_TOOBIG = 2 };

typedef struct {
	k8s__xfer x;
	/* Guarded by the shard lock (k8s__xfer_lock()). */
	k8s__body pending;      /* received, not yet decoded */
	k8s__body error_body;   /* body of a non-2xx answer */
	long status;            /* HTTP status, once the body starts */
	int overflow;           /* CUT_TOOBIG or CUT_NOMEM: the stream was cut */
} stream;

/* Runs on the shard thread. */
static size_t stream_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	stream *s = ud;
	size_t n = size * nmemb, rc = n;
	long status = 0;

	curl_easy_getinfo(s->x.h, CURLINFO_RESPONSE_CODE, &status);
	k8s__xfer_lock(&s->x);
	s->status = status;
	if (status < 200 || status > 299)
		k8s__body_add(&s->error_body, ptr, n);  /* past the bound: dropped */
	else if (k8s__body_add(&s->pending, ptr, n) != 0) {
		/* consumer too far behind, or no memory */
		s->overflow = s->pending.too_big ? CUT_TOOBIG : CUT_NOMEM;
		rc = CURL_WRITEFUNC_ERROR;
	}
	pthread_cond_broadcast(&s->x.cond);
	k8s__xfer_unlock(&s->x);
	return rc;
}

int k8s__client_stream(k8s_client *c, const k8s__request *rq,
                       k8s__watch_decoder *dec, const atomic_int *cancel,
                       long timeout_seconds)
{
	k8s__try t;
	stream s = { .pending = { .max = WATCH_BACKLOG_MAX },
	             .error_body = { .max = WATCH_ERROR_BODY_MAX } };
	k8s__body taken = { .max = 0 };
	int rc, decoded = 0;   /* decoder result: 0, K8S__WATCH_STOPPED or < 0 */
	bool stopping = false, cancelled = false;

	if ((rc = k8s__try_begin(c, rq, &t, &s.x)))
		goto out;
	CURL *h = t.h;
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, stream_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	/* No request timeout: a watch may be idle for minutes. TCP keepalive
	 * (k8s__client_prepare) finds a dead peer; when the server is asked to
	 * end the watch itself, a generous client-side bound backs that up. */
	if (timeout_seconds > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
		                 (timeout_seconds + WATCH_TIMEOUT_SLACK_S) * 1000L);

	int64_t started = k8s__now_ms();
	if ((rc = k8s__xfer_start(k8s__transport_pick(&c->transport, true), &s.x))) {
		k8s__xfer_destroy(&s.x);
		goto out;
	}
	for (;;) {
		k8s__xfer_lock(&s.x);
		while (!s.pending.buf.len && !s.x.done) {
			if (!stopping && cancel && atomic_load(cancel)) {
				stopping = cancelled = true;
				k8s__xfer_abort_locked(&s.x);
			}
			k8s__xfer_timedwait(&s.x, CANCEL_POLL_MS);
		}
		/* Take what arrived; the shard appends to the emptied buffer. */
		k8s__body fresh = taken;
		taken = s.pending;
		s.pending = fresh;
		s.pending.buf.len = 0;
		s.pending.buf.failed = false;
		s.pending.too_big = false;
		s.pending.max = WATCH_BACKLOG_MAX;
		bool done = s.x.done;
		long status = s.status;
		k8s__xfer_unlock(&s.x);

		if (taken.buf.len && !stopping && status >= 200 && status <= 299) {
			decoded = k8s__watch_decoder_feed(dec, taken.buf.data, taken.buf.len);
			if (decoded != 0) {
				/* The callback asked to stop, or the stream is bad. */
				stopping = true;
				k8s__xfer_lock(&s.x);
				k8s__xfer_abort_locked(&s.x);
				k8s__xfer_unlock(&s.x);
			}
		}
		taken.buf.len = 0;
		if (taken.buf.cap > WATCH_BUFFER_KEEP)
			asb_strbuf_free(&taken.buf);
		if (done)
			break;
	}
	k8s__xfer_destroy(&s.x);

	CURLcode res = s.x.result;
	long status = s.status;
	if (status == 0)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	k8s__client_after(c, h, rq, status, started, 0, &t.resp);
	bool http_error = status && (status < 200 || status > 299);

	if (decoded == K8S__WATCH_STOPPED)
		rc = 0;
	else if (decoded < 0)
		rc = decoded;  /* recorded by the decoder */
	else if (cancelled)
		rc = asb_error_set(ASB_ECANCELED, 0, NULL, "%s: cancelled", rq->subject);
	else if (res == CURLE_WRITE_ERROR && s.overflow == CUT_TOOBIG)
		rc = asb_error_set(ASB_ETRANSPORT, (int)status, NULL,
		                   "%s: the consumer fell more than %zu bytes behind "
		                   "the stream; ended it", rq->subject,
		                   (size_t)WATCH_BACKLOG_MAX);
	else if (res == CURLE_WRITE_ERROR && s.overflow)
		rc = asb_error_set(ASB_ENOMEM, (int)status, NULL,
		                   "%s: out of memory reading the stream", rq->subject);
	else if (res != CURLE_OK && !http_error)
		rc = k8s__transport_error(rq, res, t.errbuf);
	else if (http_error)
		rc = k8s__status_record((int)status, s.error_body.buf.data,
		                        s.error_body.buf.len, rq->subject);
	else {
		rc = k8s__watch_decoder_finish(dec);
		if (rc == K8S__WATCH_STOPPED)
			rc = 0;
	}
	/* A refused plugin credential: the next request runs the plugin. */
	if (status == 401)
		k8s__client_auth_failed(c, &t.cr);
out:
	k8s__try_end(c, &t);
	asb_strbuf_free(&s.pending.buf);
	asb_strbuf_free(&s.error_body.buf);
	asb_strbuf_free(&taken.buf);
	return rc;
}
