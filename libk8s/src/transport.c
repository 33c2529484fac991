/*
 * transport.c - connection shards: one libcurl multi handle and one thread
 * each, the idle easy-handle pool, and the response-header parsing the
 * client's retries and warnings rely on.
 *
 * Why a thread per shard: libcurl multiplexes HTTP/2 streams over one
 * connection only for transfers of the same multi handle, and a multi
 * handle must be driven from one thread. Callers keep their blocking API:
 * they prepare an easy handle, queue it (under the shard lock), wake the
 * shard with curl_multi_wakeup(), and sleep on the transfer's condition
 * variable until the shard thread reports it done. This is what makes
 * `api_connections` mean what upstream's --api-connections means: N
 * connections, each carrying many requests at once.
 *
 * The shard thread touches an easy handle only between adding it to the
 * multi and reporting it done; the caller touches it only outside that
 * window. The shard lock orders the two.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "asb/clock.h"
#include "transport.h"

struct k8s__shard {
	pthread_t thread;
	CURLM *multi;
	pthread_mutex_t lock;    /* guards the fields below and every xfer's
	                          * done/abort/cond */
	k8s__xfer *queue_head;   /* started, not yet added to the multi */
	k8s__xfer *queue_tail;
	bool aborts;             /* some transfer has `abort` set */
	bool stop;
	k8s__xfer *active;       /* in the multi; the shard thread's own list */
};

/* Idle connections a shard keeps open. */
#define SHARD_MAXCONNECTS 32L

/* --- the shard thread ------------------------------------------------------ */

static void unlink_active(k8s__shard *s, k8s__xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		s->active = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
}

/* Reports `x` done. The caller may free it as soon as the lock is released. */
static void finish(k8s__shard *s, k8s__xfer *x, CURLcode res)
{
	unlink_active(s, x);
	pthread_mutex_lock(&s->lock);
	x->result = res;
	x->done = true;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&s->lock);
}

static void add_queued(k8s__shard *s, k8s__xfer *q)
{
	while (q) {
		k8s__xfer *next = q->next;
		q->prev = NULL;
		q->next = s->active;
		if (s->active)
			s->active->prev = q;
		s->active = q;
		curl_easy_setopt(q->h, CURLOPT_PRIVATE, q);
		if (curl_multi_add_handle(s->multi, q->h) != CURLM_OK)
			finish(s, q, CURLE_FAILED_INIT);
		q = next;
	}
}

/* Drops the transfers whose caller gave up on them (or all, when stopping). */
static void drop_aborted(k8s__shard *s, bool all)
{
	k8s__xfer *x = s->active;
	while (x) {
		k8s__xfer *next = x->next;
		pthread_mutex_lock(&s->lock);
		bool drop = all || x->abort;
		pthread_mutex_unlock(&s->lock);
		if (drop) {
			curl_multi_remove_handle(s->multi, x->h);
			finish(s, x, CURLE_ABORTED_BY_CALLBACK);
		}
		x = next;
	}
}

static void *shard_main(void *ud)
{
	k8s__shard *s = ud;
	for (;;) {
		pthread_mutex_lock(&s->lock);
		k8s__xfer *queued = s->queue_head;
		s->queue_head = s->queue_tail = NULL;
		bool aborts = s->aborts, stop = s->stop;
		s->aborts = false;
		pthread_mutex_unlock(&s->lock);

		add_queued(s, queued);
		if (aborts || stop)
			drop_aborted(s, stop);
		if (stop)
			break;

		int running = 0;
		curl_multi_perform(s->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(s->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			/* Read the message before removing: removal frees it. */
			CURL *h = m->easy_handle;
			CURLcode res = m->data.result;
			k8s__xfer *x = NULL;
			curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&x);
			curl_multi_remove_handle(s->multi, h);
			if (x)
				finish(s, x, res);
		}
		/* Sleeps until socket activity, a curl timer, or a wakeup from a
		 * caller; the 1 s bound is only a safety net. */
		curl_multi_poll(s->multi, NULL, 0, 1000, NULL);
	}
	return NULL;
}

static void shard_free(k8s__shard *s)
{
	if (!s)
		return;
	curl_multi_cleanup(s->multi);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int shard_new(k8s__shard **out)
{
	k8s__shard *s = calloc(1, sizeof(*s));
	*out = NULL;
	if (!s)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return asb_error_set(ASB_ERROR, 0, NULL, "client: mutex init failed");
	}
	if (!(s->multi = curl_multi_init())) {
		shard_free(s);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "client: curl_multi_init failed");
	}
	/* HTTP/2 multiplexing is libcurl's default; say so, as it is the point. */
	curl_multi_setopt(s->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
	curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, SHARD_MAXCONNECTS);
	int err = pthread_create(&s->thread, NULL, shard_main, s);
	if (err) {
		shard_free(s);
		return asb_error_set(ASB_ERROR, 0, NULL,
		                     "client: cannot start a connection thread: %s",
		                     strerror(err));
	}
	*out = s;
	return 0;
}

static void shard_stop(k8s__shard *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_mutex_unlock(&s->lock);
	curl_multi_wakeup(s->multi);
	pthread_join(s->thread, NULL);
	shard_free(s);
}

/* --- transport -------------------------------------------------------------- */

int k8s__transport_init(k8s__transport *t, size_t nshards, bool separate_watch)
{
	int rc = 0;
	memset(t, 0, sizeof(*t));
	atomic_init(&t->next, 0);
	if (nshards < 1 || nshards > K8S__SHARDS_MAX)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: api_connections must be 1..%d (got %zu)",
		                     K8S__SHARDS_MAX, nshards);
	if (pthread_mutex_init(&t->lock, NULL) != 0)
		return asb_error_set(ASB_ERROR, 0, NULL, "client: mutex init failed");
	for (size_t i = 0; i < nshards && !rc; i++)
		if ((rc = shard_new(&t->shards[i])) == 0)
			t->nshards++;
	if (!rc && separate_watch)
		rc = shard_new(&t->watch);
	if (rc)
		k8s__transport_cleanup(t);
	return rc;
}

void k8s__transport_cleanup(k8s__transport *t)
{
	for (size_t i = 0; i < t->nshards; i++)
		shard_stop(t->shards[i]);
	shard_stop(t->watch);
	for (size_t i = 0; i < t->nidle; i++)
		curl_easy_cleanup(t->idle[i]);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

k8s__shard *k8s__transport_pick(k8s__transport *t, bool list_or_watch)
{
	if (list_or_watch && t->watch)
		return t->watch;
	unsigned n = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
	return t->shards[n % t->nshards];
}

CURL *k8s__transport_handle(k8s__transport *t)
{
	CURL *h = NULL;
	pthread_mutex_lock(&t->lock);
	if (t->nidle > 0)
		h = t->idle[--t->nidle];
	pthread_mutex_unlock(&t->lock);
	if (h)
		curl_easy_reset(h);
	else
		h = curl_easy_init();
	return h;
}

void k8s__transport_release(k8s__transport *t, CURL *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->nidle < K8S__POOL_MAX) {
		t->idle[t->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&t->lock);
	if (h)
		curl_easy_cleanup(h);
}

/* --- transfers ---------------------------------------------------------------- */

int k8s__xfer_init(k8s__xfer *x, CURL *h)
{
	memset(x, 0, sizeof(*x));
	x->h = h;
	int err = asb_cond_init_monotonic(&x->cond);
	if (err)
		return asb_error_set(ASB_ERROR, 0, NULL, "client: cond init failed: %s",
		                     strerror(err));
	return 0;
}

void k8s__xfer_destroy(k8s__xfer *x)
{
	pthread_cond_destroy(&x->cond);
}

int k8s__xfer_start(k8s__shard *s, k8s__xfer *x)
{
	x->shard = s;
	x->next = x->prev = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->stop) {
		pthread_mutex_unlock(&s->lock);
		return asb_error_set(ASB_ESHUTDOWN, 0, NULL,
		                     "client: the client is being freed");
	}
	if (s->queue_tail)
		s->queue_tail->next = x;
	else
		s->queue_head = x;
	s->queue_tail = x;
	pthread_mutex_unlock(&s->lock);
	curl_multi_wakeup(s->multi);
	return 0;
}

void k8s__xfer_wait(k8s__xfer *x)
{
	pthread_mutex_lock(&x->shard->lock);
	while (!x->done)
		pthread_cond_wait(&x->cond, &x->shard->lock);
	pthread_mutex_unlock(&x->shard->lock);
}

CURLcode k8s__xfer_perform(k8s__shard *s, k8s__xfer *x)
{
	if (k8s__xfer_start(s, x) != 0)
		return CURLE_ABORTED_BY_CALLBACK;
	k8s__xfer_wait(x);
	return x->result;
}

void k8s__xfer_abort_locked(k8s__xfer *x)
{
	if (x->done || x->abort)
		return;
	x->abort = true;
	x->shard->aborts = true;
	curl_multi_wakeup(x->shard->multi);
}

void k8s__xfer_lock(k8s__xfer *x)
{
	pthread_mutex_lock(&x->shard->lock);
}

void k8s__xfer_unlock(k8s__xfer *x)
{
	pthread_mutex_unlock(&x->shard->lock);
}

void k8s__xfer_timedwait(k8s__xfer *x, long ms)
{
	struct timespec ts;
	asb_deadline_after_ms(&ts, ms);
	pthread_cond_timedwait(&x->cond, &x->shard->lock, &ts);
}

/* --- response headers ---------------------------------------------------------- */

void k8s__resp_init(k8s__resp *r)
{
	r->retry_after_ms = -1;
	r->warnings_len = 0;
	r->warnings[0] = '\0';
}

long k8s__retry_after_ms(const char *value, time_t now)
{
	while (*value == ' ' || *value == '\t')
		value++;
	if (*value >= '0' && *value <= '9') {
		char *end;
		errno = 0;
		unsigned long long secs = strtoull(value, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end || errno)
			return -1;
		/* More than a day is nonsense for a retry: cap it (the client
		 * bounds it far lower anyway) rather than overflow. */
		return secs > 86400 ? 86400000L : (long)secs * 1000;
	}
	/* An HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT"). */
	time_t when = curl_getdate(value, NULL);
	if (when == -1)
		return -1;
	if (when <= now)
		return 0;
	return when - now > 86400 ? 86400000L : (long)(when - now) * 1000;
}

/* Appends a header value to r->warnings if it fits whole. */
static void keep_warning(k8s__resp *r, const char *v, size_t n)
{
	if (r->warnings_len + n + 2 > sizeof(r->warnings))
		return;
	memcpy(r->warnings + r->warnings_len, v, n);
	r->warnings_len += n;
	r->warnings[r->warnings_len++] = '\n';
	r->warnings[r->warnings_len] = '\0';
}

size_t k8s__header_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	k8s__resp *r = ud;
	size_t n = size * nitems;

	/* A new status line starts a new header block (after a 100 Continue
	 * or a redirect): forget the previous one. */
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		k8s__resp_init(r);
		return n;
	}
	const char *colon = memchr(buf, ':', n);
	if (!colon)
		return n;
	size_t name_len = (size_t)(colon - buf);
	const char *v = colon + 1, *end = buf + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	size_t vlen = (size_t)(end - v);
	/* Header names are case-insensitive (HTTP/2 sends them lower-case). */
	if (name_len == 11 && strncasecmp(buf, "Retry-After", 11) == 0) {
		char tmp[128];
		if (vlen < sizeof(tmp)) {
			memcpy(tmp, v, vlen);
			tmp[vlen] = '\0';
			r->retry_after_ms = k8s__retry_after_ms(tmp, r->now ? r->now
			                                        : time(NULL));
		}
	} else if (name_len == 7 && strncasecmp(buf, "Warning", 7) == 0) {
		keep_warning(r, v, vlen);
	}
	return n;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

size_t k8s__warning_parse(const char *value, k8s__warning_fn fn, void *ud)
{
	const char *p = value;
	size_t found = 0;
	char *text = malloc(strlen(value) + 1);
	if (!text)
		return 0;
	for (;;) {
		p = skip_ws(p);
		if (!*p)
			break;
		/* warn-code: three digits */
		if (!(p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9' &&
		      p[2] >= '0' && p[2] <= '9' && (p[3] == ' ' || p[3] == '\t')))
			break;
		int code = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
		p = skip_ws(p + 3);
		/* warn-agent: host[:port] or pseudonym ("-" from the API server) */
		const char *agent = p;
		while (*p && *p != ' ' && *p != '\t' && *p != ',')
			p++;
		if (p == agent)
			break;
		p = skip_ws(p);
		/* warn-text: quoted-string */
		if (*p != '"')
			break;
		p++;
		size_t t = 0;
		int closed = 0;
		while (*p) {
			if (*p == '\\' && p[1]) {
				text[t++] = p[1];
				p += 2;
			} else if (*p == '"') {
				closed = 1;
				p++;
				break;
			} else {
				text[t++] = *p++;
			}
		}
		if (!closed)
			break;
		text[t] = '\0';
		p = skip_ws(p);
		/* optional warn-date: a quoted HTTP-date */
		if (*p == '"') {
			const char *close = strchr(p + 1, '"');
			if (!close)
				break;
			p = skip_ws(close + 1);
		}
		if (code == 299 && t > 0) {
			fn(text, ud);
			found++;
		}
		if (*p == ',')
			p++;
		else if (*p)
			break;
	}
	free(text);
	return found;
}

long k8s__backoff_ms(int attempt, long max_ms, unsigned *seed)
{
	long base = 100;
	for (int i = 0; i < attempt && base < max_ms; i++)
		base *= 2;
	long jitter = base / 5 > 0 ? (long)(rand_r(seed) % (base / 5 + 1)) : 0;
	long d = base + jitter;
	return d > max_ms ? max_ms : d;
}

/* Failures where the request provably never reached the server. */
static bool never_sent(CURLcode res)
{
	return res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST ||
	       res == CURLE_COULDNT_RESOLVE_PROXY;
}

/* Connection failures after which the request may or may not have run. */
static bool broken_connection(CURLcode res)
{
	return res == CURLE_SEND_ERROR || res == CURLE_RECV_ERROR ||
	       res == CURLE_GOT_NOTHING || res == CURLE_HTTP2 ||
	       res == CURLE_HTTP2_STREAM || res == CURLE_PARTIAL_FILE;
}

bool k8s__retryable(bool idempotent, CURLcode res, long status)
{
	if (res != CURLE_OK && status == 0)
		return never_sent(res) || (idempotent && broken_connection(res));
	if (status == 429)
		return true;
	if (status == 500 || status == 502 || status == 503 || status == 504)
		return idempotent;
	return false;
}
