/*
 * client.c - the REST client: libcurl transport, the verbs of client.h,
 * and watch streaming.
 *
 * Shape of a call: build the path (k8s_resource_path()) and query, borrow
 * a CURL easy handle from the client's pool, set every option afresh,
 * perform, give the handle back. A handle keeps its connection (and TLS
 * session) alive across curl_easy_reset(), so the pool is what makes calls
 * after the first cheap; a mutex guards it, which is what makes one client
 * usable from many threads. Failures become the codes of common.h: the
 * Status body of an API answer is decoded in error.c (status.h), watch
 * framing is in watch_decoder.c.
 *
 * Secrets: the bearer token only ever goes into the Authorization header
 * list, which is wiped before it is freed; no log line carries a header,
 * a body or the token.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <curl/curl.h>
#include "k8s/client.h"
#include "config_internal.h"
#include "status.h"
#include "watch_decoder.h"

#ifndef K8S_VERSION_STRING
#define K8S_VERSION_STRING "0.1.0"
#endif

/* Idle easy handles kept; more may exist while many threads call at once. */
#define POOL_MAX 32
/* Largest response body accepted (a big List); protects against a runaway. */
#define BODY_MAX ((size_t)1 << 30)
/* Largest error body kept from a failed watch. */
#define WATCH_ERROR_BODY_MAX ((size_t)1 << 20)
/* A watch with a server-side timeout gets this much client-side slack. */
#define WATCH_TIMEOUT_SLACK_S 60
#define PATH_MAX_LEN 2048

/* --- global init --------------------------------------------------------- */

static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static int global_refs;  /* guarded by global_lock */

int k8s_global_init(void)
{
	int rc;
	pthread_mutex_lock(&global_lock);
	if (global_refs == 0) {
		CURLcode res = curl_global_init(CURL_GLOBAL_DEFAULT);
		if (res != CURLE_OK) {
			pthread_mutex_unlock(&global_lock);
			return k8s_error_set(K8S_ERROR, 0, NULL,
			                     "curl_global_init failed: %s",
			                     curl_easy_strerror(res));
		}
	}
	rc = ++global_refs;
	pthread_mutex_unlock(&global_lock);
	return rc;
}

void k8s_global_cleanup(void)
{
	pthread_mutex_lock(&global_lock);
	if (global_refs > 0 && --global_refs == 0)
		curl_global_cleanup();
	pthread_mutex_unlock(&global_lock);
}

/* --- a growable string ---------------------------------------------------- */

typedef struct {
	char *data;
	size_t len;
	size_t cap;
	size_t max;   /* bytes accepted at most; 0: no limit */
	int failed;   /* SBUF_NOMEM or SBUF_TOOBIG; further adds are refused */
} sbuf;

enum { SBUF_NOMEM = 1, SBUF_TOOBIG = 2 };

static int sbuf_add(sbuf *b, const char *s, size_t n)
{
	if (b->failed)
		return -1;
	if (b->max && n > b->max - b->len) {
		b->failed = SBUF_TOOBIG;
		return -1;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d) {
			b->failed = SBUF_NOMEM;
			return -1;
		}
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static int sbuf_adds(sbuf *b, const char *s)
{
	return sbuf_add(b, s, strlen(s));
}

/* Appends "&key=value" (or "?key=value" first), value percent-encoded. */
static void sbuf_query(sbuf *b, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	sbuf_adds(b, b->len && strchr(b->data, '?') ? "&" : "?");
	sbuf_adds(b, key);
	sbuf_adds(b, "=");
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~')
			sbuf_add(b, (const char *)p, 1);
		else
			sbuf_add(b, esc, 3);
	}
}

static void sbuf_query_long(sbuf *b, const char *key, long value)
{
	char num[32];
	snprintf(num, sizeof(num), "%ld", value);
	sbuf_query(b, key, num);
}

static size_t sbuf_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;
	return sbuf_add(ud, ptr, n) == 0 ? n : CURL_WRITEFUNC_ERROR;
}

/* --- the client ------------------------------------------------------------ */

struct k8s_client {
	k8s_config *cfg;           /* own copy */
	char *user_agent;
	long timeout_ms;
	long connect_timeout_ms;
	k8s_logger *log;           /* borrowed */
	char *base_url;            /* what paths are appended to */
	struct curl_slist *connect_to;  /* tls-server-name routing, or NULL */

	pthread_mutex_t lock;      /* guards everything below */
	CURL *pool[POOL_MAX];
	size_t npool;
	char *token;               /* current bearer token, or NULL */
	struct timespec token_mtime;   /* of token_file when last read */
	ino_t token_ino;
	off_t token_size;
};

int k8s_client_options_init(k8s_client_options *opts, unsigned int version)
{
	k8s_client_options defaults = K8S_CLIENT_OPTIONS_INIT;
	if (!opts || version != K8S_CLIENT_OPTIONS_VERSION)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "client options: unknown version %u", version);
	*opts = defaults;
	return 0;
}

const char *k8s_client_namespace(const k8s_client *c)
{
	return c ? c->cfg->namespace : NULL;
}

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void k8s_client_free(k8s_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->npool; i++)
		curl_easy_cleanup(c->pool[i]);
	pthread_mutex_destroy(&c->lock);
	curl_slist_free_all(c->connect_to);
	free(c->base_url);
	free(c->user_agent);
	free_secret(c->token);
	k8s_config_free(c->cfg);
	free(c);
}

/*
 * Works out where requests go. With tls-server-name the URL names that host
 * (so that SNI and certificate verification use it, as client-go's
 * ServerName does) and CURLOPT_CONNECT_TO routes the connection to the real
 * address.
 */
static int setup_routing(k8s_client *c)
{
	const k8s_config *cfg = c->cfg;
	int https = strncmp(cfg->server, "https://", 8) == 0;

	if (!cfg->tls_server_name || !https)
		return (c->base_url = strdup(cfg->server)) ? 0
			: k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");

	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *path = NULL;
	int rc = 0;
	if (!u) {
		rc = k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, cfg->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		rc = k8s_error_set(K8S_ECONFIG, 0, NULL,
		                   "client: server URL \"%s\" (%s) can not be parsed",
		                   cfg->server, cfg->origin);
		goto out;
	}
	size_t plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		path[--plen] = '\0';
	sbuf url = { 0 }, route = { 0 };
	sbuf_adds(&url, "https://");
	sbuf_adds(&url, cfg->tls_server_name);
	sbuf_adds(&url, ":");
	sbuf_adds(&url, port);
	sbuf_adds(&url, path);
	/* HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT; curl gives IPv6 hosts
	 * back bracketed, which is the form CONNECT_TO wants. */
	sbuf_adds(&route, cfg->tls_server_name);
	sbuf_adds(&route, ":");
	sbuf_adds(&route, port);
	sbuf_adds(&route, ":");
	sbuf_adds(&route, host);
	sbuf_adds(&route, ":");
	sbuf_adds(&route, port);
	if (url.failed || route.failed ||
	    !(c->connect_to = curl_slist_append(NULL, route.data))) {
		free(url.data);
		rc = k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");
	} else {
		c->base_url = url.data;
	}
	free(route.data);
out:
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

static int check_version(unsigned int version, unsigned int current,
                         const char *what)
{
	if (version == 0 || version > current)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: unsupported options version %u", what, version);
	return 0;
}

int k8s_client_new(k8s_client **out, const k8s_config *cfg,
                   const k8s_client_options *opts)
{
	k8s_client_options defaults = K8S_CLIENT_OPTIONS_INIT;
	int rc;

	if (!out || !cfg)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "client: out and cfg are required");
	*out = NULL;
	if (!opts)
		opts = &defaults;
	if ((rc = check_version(opts->version, K8S_CLIENT_OPTIONS_VERSION,
	                        "client")))
		return rc;

	k8s_client *c = calloc(1, sizeof(*c));
	if (!c)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return k8s_error_set(K8S_ERROR, 0, NULL, "client: mutex init failed");
	}
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 0;
	c->connect_timeout_ms = opts->connect_timeout_ms > 0
		? opts->connect_timeout_ms : 10000;
	c->log = opts->logger;
	if ((rc = k8s__config_dup(&c->cfg, cfg)))
		goto fail;
	c->user_agent = strdup(opts->user_agent ? opts->user_agent
	                       : "libk8s/" K8S_VERSION_STRING);
	if (!c->user_agent || (cfg->token && !(c->token = strdup(cfg->token)))) {
		rc = k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");
		goto fail;
	}
	if ((rc = setup_routing(c)))
		goto fail;
	/* The token was read at load time; remember which version of the file
	 * that was, so that the first request does not read it again. */
	struct stat st;
	if (cfg->token_file && stat(cfg->token_file, &st) == 0) {
		c->token_mtime = st.st_mtim;
		c->token_ino = st.st_ino;
		c->token_size = st.st_size;
	}
	*out = c;
	return 0;
fail:
	k8s_client_free(c);
	return rc;
}

/*
 * Returns a copy of the current token (NULL: none), re-reading the token
 * file when it changed on disk. A failed re-read keeps the old token: a
 * rotating writer may be between truncate and write.
 */
static char *current_token(k8s_client *c)
{
	struct stat st;
	char *copy = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->cfg->token_file && stat(c->cfg->token_file, &st) == 0 &&
	    (st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
	     st.st_mtim.tv_nsec != c->token_mtime.tv_nsec ||
	     st.st_ino != c->token_ino || st.st_size != c->token_size)) {
		k8s__blob b;
		if (k8s__read_file(c->cfg->token_file, &b) == 0) {
			size_t n = b.len;
			while (n > 0 && strchr(" \t\r\n", b.data[n - 1]))
				b.data[--n] = '\0';
			size_t start = strspn(b.data, " \t\r\n");
			if (start < n) {
				char *fresh = strdup(b.data + start);
				if (fresh) {
					free_secret(c->token);
					c->token = fresh;
					c->token_mtime = st.st_mtim;
					c->token_ino = st.st_ino;
					c->token_size = st.st_size;
					k8s_log(c->log, K8S_LOG_DEBUG, "token file re-read",
					        "path", c->cfg->token_file, NULL);
				}
			}
			k8s__blob_free(&b);
		}
	}
	if (c->token)
		copy = strdup(c->token);
	pthread_mutex_unlock(&c->lock);
	return copy;
}

static CURL *borrow(k8s_client *c)
{
	CURL *h = NULL;
	pthread_mutex_lock(&c->lock);
	if (c->npool > 0)
		h = c->pool[--c->npool];
	pthread_mutex_unlock(&c->lock);
	if (h)
		curl_easy_reset(h);  /* options go, the live connection stays */
	else
		h = curl_easy_init();
	return h;
}

static void give_back(k8s_client *c, CURL *h)
{
	pthread_mutex_lock(&c->lock);
	if (c->npool < POOL_MAX) {
		c->pool[c->npool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (h)
		curl_easy_cleanup(h);
}

/* Wipes the Authorization header before the list is freed. */
static void free_headers(struct curl_slist *headers)
{
	for (struct curl_slist *s = headers; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));
	curl_slist_free_all(headers);
}

/* One request: what to send and what it is about. */
typedef struct {
	const char *method;        /* GET, POST, PUT, PATCH, DELETE */
	const char *path;          /* path and query, from '/' */
	const char *content_type;  /* of `body`; NULL when no body */
	const char *body;
	const char *subject;       /* e.g. `Pod "default/x"`, for messages */
} request;

/*
 * Sets the options every request shares: URL, TLS, identity, headers.
 * `headers` receives the list to free with free_headers() after the
 * transfer. Returns 0 or an error code.
 */
static int setup_handle(k8s_client *c, CURL *h, const request *rq,
                        char *errbuf, struct curl_slist **headers)
{
	const k8s_config *cfg = c->cfg;
	struct curl_slist *hl = NULL, *next;
	sbuf url = { 0 };
	int rc = 0;

	*headers = NULL;
	sbuf_adds(&url, c->base_url);
	sbuf_adds(&url, rq->path);
	if (url.failed)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");

	curl_easy_setopt(h, CURLOPT_URL, url.data);  /* curl copies it */
	free(url.data);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  /* threads: no SIGALRM */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");  /* gzip for big lists */
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 15L);
	if (c->connect_to)
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);

	if (cfg->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca.data) {
		/* The config outlives every transfer: no need for curl to copy. */
		struct curl_blob ca = { cfg->ca.data, cfg->ca.len, CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
	}
	if (cfg->cert.data) {
		struct curl_blob cert = { cfg->cert.data, cfg->cert.len, CURL_BLOB_NOCOPY };
		struct curl_blob key = { cfg->key.data, cfg->key.len, CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
	}

	char *token = current_token(c);
	if (token) {
		size_t n = strlen(token) + sizeof("Authorization: Bearer ");
		char *line = malloc(n);
		if (line) {
			snprintf(line, n, "Authorization: Bearer %s", token);
			next = curl_slist_append(hl, line);
			explicit_bzero(line, n);
			free(line);
			if (next)
				hl = next;
			else
				rc = K8S_ENOMEM;
		} else {
			rc = K8S_ENOMEM;
		}
		free_secret(token);
	}
	const char *fixed[] = {
		"Accept: application/json",
		/* Ask for the body at once rather than after "100 Continue". */
		"Expect:",
	};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && !rc; i++) {
		if ((next = curl_slist_append(hl, fixed[i])))
			hl = next;
		else
			rc = K8S_ENOMEM;
	}
	if (rq->content_type && !rc) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s", rq->content_type);
		if ((next = curl_slist_append(hl, ct)))
			hl = next;
		else
			rc = K8S_ENOMEM;
	}
	if (rc) {
		free_headers(hl);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "client: out of memory");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	*headers = hl;

	if (strcmp(rq->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
	} else if (strcmp(rq->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
	}
	if (rq->body || strcmp(rq->method, "POST") == 0) {
		/* A POST without a body must still not make curl read stdin. */
		const char *body = rq->body ? rq->body : "";
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Records a transfer failure (no HTTP answer) and returns its code. */
static int transport_error(const request *rq, CURLcode res, const char *errbuf)
{
	int code = res == CURLE_OPERATION_TIMEDOUT ? K8S_ETIMEOUT : K8S_ETRANSPORT;
	if (res == CURLE_OUT_OF_MEMORY)
		code = K8S_ENOMEM;
	return k8s_error_set(code, 0, NULL, "%s: %s %s: %s", rq->subject,
	                     rq->method, rq->path,
	                     errbuf[0] ? errbuf : curl_easy_strerror(res));
}

/* One debug line per request: never headers, bodies or the token. */
static void log_request(k8s_client *c, CURL *h, const request *rq, long status,
                        int64_t started)
{
	if (!k8s_log_enabled(c->log, K8S_LOG_DEBUG))
		return;
	char code[16], ms[24];
	long connects = 0;
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
	snprintf(code, sizeof(code), "%ld", status);
	snprintf(ms, sizeof(ms), "%" PRId64, now_ms() - started);
	k8s_log(c->log, K8S_LOG_DEBUG, "api request", "verb", rq->method,
	        "path", rq->path, "status", code, "duration_ms", ms,
	        "new_connection", connects > 0 ? "true" : "false", NULL);
}

/*
 * Performs a request and decodes its answer: 2xx JSON into *out (when
 * `out` is not NULL), anything else into the recorded error.
 */
static int do_request(k8s_client *c, const request *rq, cJSON **out)
{
	char errbuf[CURL_ERROR_SIZE];
	struct curl_slist *headers = NULL;
	sbuf body = { .max = BODY_MAX };
	long status = 0;
	int rc;

	if (out)
		*out = NULL;
	CURL *h = borrow(c);
	if (!h)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory",
		                     rq->subject);
	errbuf[0] = '\0';
	if ((rc = setup_handle(c, h, rq, errbuf, &headers))) {
		give_back(c, h);
		return rc;
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sbuf_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	if (c->timeout_ms > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);

	int64_t started = now_ms();
	CURLcode res = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	log_request(c, h, rq, status, started);
	/* Nothing may point at this call's stack once the handle is pooled. */
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	give_back(c, h);
	free_headers(headers);

	if (res == CURLE_WRITE_ERROR && body.failed == SBUF_TOOBIG)
		rc = k8s_error_set(K8S_EDECODE, (int)status, NULL,
		                   "%s: %s %s: the answer is larger than %zu bytes",
		                   rq->subject, rq->method, rq->path, (size_t)BODY_MAX);
	else if (res == CURLE_WRITE_ERROR && body.failed)
		rc = k8s_error_set(K8S_ENOMEM, (int)status, NULL,
		                   "%s: %s %s: out of memory reading the answer",
		                   rq->subject, rq->method, rq->path);
	else if (res != CURLE_OK)
		rc = transport_error(rq, res, errbuf);
	else if (status < 200 || status > 299)
		rc = k8s__status_record((int)status, body.data, body.len, rq->subject);
	else if (out) {
		*out = body.data ? cJSON_ParseWithLength(body.data, body.len) : NULL;
		if (!*out)
			rc = k8s_error_set(K8S_EDECODE, (int)status, NULL,
			                   "%s: %s %s: the answer (HTTP %ld, %zu bytes) "
			                   "is not JSON", rq->subject, rq->method,
			                   rq->path, status, body.len);
	}
	free(body.data);
	return rc;
}

/* --- naming and paths ------------------------------------------------------ */

static const char *kind_of(const k8s_resource *r)
{
	return r->kind && r->kind[0] ? r->kind : r->resource;
}

/* `Kind "ns/name"`, or `Kind "name"` for cluster-scoped objects. */
static void subject_object(char *buf, size_t cap, const k8s_resource *r,
                           const char *ns, const char *name)
{
	if (r->namespaced && ns && ns[0])
		snprintf(buf, cap, "%s \"%s/%s\"", kind_of(r), ns, name);
	else
		snprintf(buf, cap, "%s \"%s\"", kind_of(r), name);
}

static void subject_collection(char *buf, size_t cap, const char *verb,
                               const k8s_resource *r, const char *ns)
{
	if (r->namespaced && ns && ns[0])
		snprintf(buf, cap, "%s %s in namespace \"%s\"", verb, kind_of(r), ns);
	else
		snprintf(buf, cap, "%s %s", verb, kind_of(r));
}

/*
 * The namespace an object call uses: the caller's, else the object's own
 * metadata.namespace, else the client's default. "" for cluster-scoped.
 */
static const char *object_ns(const k8s_client *c, const k8s_resource *r,
                             const char *ns, const cJSON *obj)
{
	if (!r->namespaced)
		return "";
	if (ns && ns[0])
		return ns;
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	if (cJSON_IsString(v) && v->valuestring[0])
		return v->valuestring;
	return c->cfg->namespace;
}

static const char *meta_str(const cJSON *obj, const char *key)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, key);
	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static int check_args(const k8s_client *c, const k8s_resource *r)
{
	if (!c || !r || !r->resource || !r->version || !r->group)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "client: client and resource are required");
	return 0;
}

/* Builds PATH into `path`; returns 0 or K8S_EINVAL (recorded). */
static int make_path(sbuf *out, const k8s_resource *r, const char *ns,
                     const char *name, const char *sub)
{
	char path[PATH_MAX_LEN];
	if (k8s_resource_path(path, sizeof(path), r, ns, name, sub) < 0)
		return K8S_EINVAL;
	sbuf_adds(out, path);
	return 0;
}

static void add_write_query(sbuf *q, const k8s_write_options *o)
{
	if (!o)
		return;
	if (o->field_manager && o->field_manager[0])
		sbuf_query(q, "fieldManager", o->field_manager);
	if (o->dry_run)
		sbuf_query(q, "dryRun", "All");
	if (o->force)
		sbuf_query(q, "force", "true");
}

/* Runs a request whose path is in `path` and whose body is `json`; frees both. */
static int run(k8s_client *c, const char *method, sbuf *path,
               const char *content_type, char *json, const char *subject,
               cJSON **out)
{
	int rc;
	if (path->failed) {
		rc = k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	} else {
		request rq = { method, path->data, json ? content_type : NULL,
		               json, subject };
		rc = do_request(c, &rq, out);
	}
	free(path->data);
	if (json)
		cJSON_free(json);
	return rc;
}

/* --- the verbs ----------------------------------------------------------- */

int k8s_client_get(k8s_client *c, const k8s_resource *r, const char *ns,
                   const char *name, cJSON **out)
{
	char subject[512];
	sbuf path = { 0 };
	int rc;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)))
		return rc;
	ns = object_ns(c, r, ns, NULL);
	subject_object(subject, sizeof(subject), r, ns, name ? name : "");
	if ((rc = make_path(&path, r, ns, name ? name : "", NULL)))
		return rc;
	return run(c, "GET", &path, NULL, NULL, subject, out);
}

static void add_list_query(sbuf *q, const k8s_list_options *o)
{
	if (!o)
		return;
	if (o->label_selector && o->label_selector[0])
		sbuf_query(q, "labelSelector", o->label_selector);
	if (o->field_selector && o->field_selector[0])
		sbuf_query(q, "fieldSelector", o->field_selector);
	if (o->resource_version && o->resource_version[0])
		sbuf_query(q, "resourceVersion", o->resource_version);
	if (o->timeout_seconds > 0)
		sbuf_query_long(q, "timeoutSeconds", o->timeout_seconds);
}

int k8s_client_list(k8s_client *c, const k8s_resource *r, const char *ns,
                    const k8s_list_options *opts, cJSON **out)
{
	char subject[512];
	sbuf path = { 0 };
	int rc;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_LIST_OPTIONS_VERSION,
	                                 "list"))))
		return rc;
	subject_collection(subject, sizeof(subject), "list", r, ns);
	if ((rc = make_path(&path, r, r->namespaced ? ns : NULL, NULL, NULL)))
		return rc;
	add_list_query(&path, opts);
	if (opts && opts->limit > 0)
		sbuf_query_long(&path, "limit", opts->limit);
	if (opts && opts->continue_token && opts->continue_token[0])
		sbuf_query(&path, "continue", opts->continue_token);
	return run(c, "GET", &path, NULL, NULL, subject, out);
}

/* Common to create, update and update_status. */
static int write_object(k8s_client *c, const k8s_resource *r, const char *ns,
                        const cJSON *obj, const k8s_write_options *opts,
                        const char *method, const char *sub, cJSON **out)
{
	char subject[512];
	sbuf path = { 0 };
	int rc;
	int create = strcmp(method, "POST") == 0;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_WRITE_OPTIONS_VERSION,
	                                 "write"))))
		return rc;
	if (!cJSON_IsObject(obj))
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: the object must be a JSON object", kind_of(r));
	ns = object_ns(c, r, ns, obj);
	const char *name = meta_str(obj, "name");
	if (!name && !create)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: the object has no metadata.name", kind_of(r));
	if (name) {
		subject_object(subject, sizeof(subject), r, ns, name);
	} else {
		/* generateName: the server picks the name. */
		const char *gen = meta_str(obj, "generateName");
		char pattern[300];
		snprintf(pattern, sizeof(pattern), "%s*", gen ? gen : "");
		subject_object(subject, sizeof(subject), r, ns, pattern);
	}
	if (opts && opts->force)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: force applies to server-side apply only",
		                     subject);
	if ((rc = make_path(&path, r, ns, create ? NULL : name, sub)))
		return rc;
	add_write_query(&path, opts);
	char *json = cJSON_PrintUnformatted(obj);
	if (!json) {
		free(path.data);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	return run(c, method, &path, "application/json", json, subject, out);
}

int k8s_client_create(k8s_client *c, const k8s_resource *r, const char *ns,
                      const cJSON *obj, const k8s_write_options *opts,
                      cJSON **out)
{
	return write_object(c, r, ns, obj, opts, "POST", NULL, out);
}

int k8s_client_update(k8s_client *c, const k8s_resource *r, const char *ns,
                      const cJSON *obj, const k8s_write_options *opts,
                      cJSON **out)
{
	return write_object(c, r, ns, obj, opts, "PUT", NULL, out);
}

int k8s_client_update_status(k8s_client *c, const k8s_resource *r,
                             const char *ns, const cJSON *obj,
                             const k8s_write_options *opts, cJSON **out)
{
	return write_object(c, r, ns, obj, opts, "PUT", "status", out);
}

static const char *patch_content_type(k8s_patch_type type)
{
	switch (type) {
	case K8S_PATCH_MERGE: return "application/merge-patch+json";
	case K8S_PATCH_JSON: return "application/json-patch+json";
	case K8S_PATCH_STRATEGIC: return "application/strategic-merge-patch+json";
	/* JSON is YAML: the apply body can be sent as JSON. */
	case K8S_PATCH_APPLY: return "application/apply-patch+yaml";
	default: return NULL;
	}
}

int k8s_client_patch(k8s_client *c, const k8s_resource *r, const char *ns,
                     const char *name, const char *subresource,
                     k8s_patch_type type, const cJSON *patch,
                     const k8s_write_options *opts, cJSON **out)
{
	char subject[512];
	sbuf path = { 0 };
	int rc;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_WRITE_OPTIONS_VERSION,
	                                 "patch"))))
		return rc;
	ns = object_ns(c, r, ns, NULL);
	subject_object(subject, sizeof(subject), r, ns, name ? name : "");
	const char *ctype = patch_content_type(type);
	if (!ctype)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "%s: unknown patch type %d",
		                     subject, (int)type);
	if (type == K8S_PATCH_JSON ? !cJSON_IsArray(patch) : !cJSON_IsObject(patch))
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: a %s patch must be a JSON %s", subject,
		                     type == K8S_PATCH_JSON ? "JSON" : "merge/apply",
		                     type == K8S_PATCH_JSON ? "array" : "object");
	if (type == K8S_PATCH_APPLY &&
	    (!opts || !opts->field_manager || !opts->field_manager[0]))
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: server-side apply needs a field manager",
		                     subject);
	if (type != K8S_PATCH_APPLY && opts && opts->force)
		return k8s_error_set(K8S_EINVAL, 0, NULL,
		                     "%s: force applies to server-side apply only",
		                     subject);
	if ((rc = make_path(&path, r, ns, name ? name : "", subresource)))
		return rc;
	add_write_query(&path, opts);
	char *json = cJSON_PrintUnformatted(patch);
	if (!json) {
		free(path.data);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	return run(c, "PATCH", &path, ctype, json, subject, out);
}

/* meta/v1 DeleteOptions as JSON; NULL when out of memory. */
static char *delete_body(const k8s_delete_options *o)
{
	cJSON *d = cJSON_CreateObject();
	int ok = d && cJSON_AddStringToObject(d, "kind", "DeleteOptions") &&
	         cJSON_AddStringToObject(d, "apiVersion", "v1");
	if (ok && o->propagation_policy && o->propagation_policy[0])
		ok = cJSON_AddStringToObject(d, "propagationPolicy",
		                             o->propagation_policy) != NULL;
	if (ok && o->grace_period_seconds >= 0)
		ok = cJSON_AddNumberToObject(d, "gracePeriodSeconds",
		                             (double)o->grace_period_seconds) != NULL;
	if (ok && ((o->precondition_uid && o->precondition_uid[0]) ||
	           (o->precondition_resource_version &&
	            o->precondition_resource_version[0]))) {
		cJSON *pre = cJSON_AddObjectToObject(d, "preconditions");
		ok = pre != NULL;
		if (ok && o->precondition_uid && o->precondition_uid[0])
			ok = cJSON_AddStringToObject(pre, "uid", o->precondition_uid) != NULL;
		if (ok && o->precondition_resource_version &&
		    o->precondition_resource_version[0])
			ok = cJSON_AddStringToObject(pre, "resourceVersion",
			                             o->precondition_resource_version) != NULL;
	}
	if (ok && o->dry_run) {
		cJSON *dry = cJSON_AddArrayToObject(d, "dryRun");
		cJSON *all = cJSON_CreateString("All");
		ok = dry && all;
		if (ok)
			cJSON_AddItemToArray(dry, all);
		else
			cJSON_Delete(all);
	}
	char *json = ok ? cJSON_PrintUnformatted(d) : NULL;
	cJSON_Delete(d);
	return json;
}

int k8s_client_delete(k8s_client *c, const k8s_resource *r, const char *ns,
                      const char *name, const k8s_delete_options *opts,
                      cJSON **out)
{
	char subject[512];
	sbuf path = { 0 };
	char *json = NULL;
	int rc;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_DELETE_OPTIONS_VERSION,
	                                 "delete"))))
		return rc;
	ns = object_ns(c, r, ns, NULL);
	subject_object(subject, sizeof(subject), r, ns, name ? name : "");
	if ((rc = make_path(&path, r, ns, name ? name : "", NULL)))
		return rc;
	if (opts && !(json = delete_body(opts))) {
		free(path.data);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	return run(c, "DELETE", &path, "application/json", json, subject, out);
}

/* --- watch ------------------------------------------------------------------ */

typedef struct {
	CURL *h;
	k8s__watch_decoder *dec;
	const atomic_int *cancel;
	long status;      /* HTTP status, once the body starts */
	sbuf error_body;  /* body of a non-2xx answer */
	int rc;           /* decoder result: 0, K8S__WATCH_STOPPED or an error */
} watch_ctx;

static size_t watch_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	watch_ctx *w = ud;
	size_t n = size * nmemb;

	if (w->status == 0)
		curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->status);
	if (w->status < 200 || w->status > 299) {
		/* Keep the Status for the error; past the bound, drop the rest. */
		sbuf_add(&w->error_body, ptr, n);
		return n;
	}
	w->rc = k8s__watch_decoder_feed(w->dec, ptr, n);
	return w->rc == 0 ? n : CURL_WRITEFUNC_ERROR;
}

/* libcurl calls this about once a second even while the stream is idle. */
static int watch_progress_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow,
                             curl_off_t ultotal, curl_off_t ulnow)
{
	const watch_ctx *w = ud;
	return w->cancel && atomic_load(w->cancel) ? 1 : 0;
}

int k8s_client_watch(k8s_client *c, const k8s_resource *r, const char *ns,
                     const k8s_list_options *opts, k8s_watch_fn fn,
                     void *userdata, const atomic_int *cancel)
{
	char subject[512], errbuf[CURL_ERROR_SIZE];
	struct curl_slist *headers = NULL;
	sbuf path = { 0 };
	watch_ctx w = { .cancel = cancel, .error_body = { .max = WATCH_ERROR_BODY_MAX } };
	int rc;

	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_LIST_OPTIONS_VERSION,
	                                 "watch"))))
		return rc;
	if (!fn)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "watch: fn is required");
	subject_collection(subject, sizeof(subject), "watch", r, ns);
	if ((rc = make_path(&path, r, r->namespaced ? ns : NULL, NULL, NULL)))
		return rc;
	sbuf_query(&path, "watch", "1");
	add_list_query(&path, opts);
	if (opts && opts->allow_watch_bookmarks)
		sbuf_query(&path, "allowWatchBookmarks", "true");
	if (path.failed) {
		free(path.data);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	if ((rc = k8s__watch_decoder_new(&w.dec, 0, subject, fn, userdata))) {
		free(path.data);
		return rc;
	}
	if (!(w.h = borrow(c))) {
		k8s__watch_decoder_free(w.dec);
		free(path.data);
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}

	request rq = { "GET", path.data, NULL, NULL, subject };
	errbuf[0] = '\0';
	if ((rc = setup_handle(c, w.h, &rq, errbuf, &headers)))
		goto out;
	curl_easy_setopt(w.h, CURLOPT_WRITEFUNCTION, watch_write_cb);
	curl_easy_setopt(w.h, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(w.h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(w.h, CURLOPT_XFERINFOFUNCTION, watch_progress_cb);
	curl_easy_setopt(w.h, CURLOPT_XFERINFODATA, &w);
	/* No request timeout: a watch may be idle for minutes. TCP keepalive
	 * (setup_handle) finds a dead peer; when the server is asked to end
	 * the watch itself, a generous client-side bound backs that up. */
	if (opts && opts->timeout_seconds > 0)
		curl_easy_setopt(w.h, CURLOPT_TIMEOUT_MS,
		                 (opts->timeout_seconds + WATCH_TIMEOUT_SLACK_S) * 1000L);

	int64_t started = now_ms();
	CURLcode res = curl_easy_perform(w.h);
	if (w.status == 0)
		curl_easy_getinfo(w.h, CURLINFO_RESPONSE_CODE, &w.status);
	log_request(c, w.h, &rq, w.status, started);

	if (w.rc == K8S__WATCH_STOPPED)
		rc = 0;
	else if (w.rc < 0)
		rc = w.rc;  /* recorded by the decoder */
	else if (res == CURLE_ABORTED_BY_CALLBACK)
		rc = k8s_error_set(K8S_ECANCELED, 0, NULL, "%s: cancelled", subject);
	else if (res != CURLE_OK && !(w.status && (w.status < 200 || w.status > 299)))
		rc = transport_error(&rq, res, errbuf);
	else if (w.status < 200 || w.status > 299)
		rc = k8s__status_record((int)w.status, w.error_body.data,
		                        w.error_body.len, subject);
	else {
		rc = k8s__watch_decoder_finish(w.dec);
		if (rc == K8S__WATCH_STOPPED)
			rc = 0;
	}
out:
	curl_easy_setopt(w.h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(w.h, CURLOPT_HTTPHEADER, NULL);
	give_back(c, w.h);
	free_headers(headers);
	k8s__watch_decoder_free(w.dec);
	free(w.error_body.data);
	free(path.data);
	return rc;
}
