/*
 * client.c - the REST client: the verbs of client.h, credentials, client-
 * side rate limiting, retries, and the per-request libcurl options.
 *
 * Shape of a call: build the path (k8s_resource_path()) and query; then,
 * for each try, wait for the rate limiter, take the current credentials
 * (token file re-read when it rotated, exec plugin run when its credential
 * expired), prepare a CURL easy handle from the transport's pool, hand it
 * to a connection shard (transport.c) and wait for the answer. A failed
 * try is sent again when that is safe (k8s__retryable(), transport.c). Failures
 * become the codes of common.h: the Status body of an API answer is
 * decoded in error.c (status.h). Watch streaming is in watch.c.
 *
 * Secrets: the bearer token only ever goes into the Authorization header
 * list, which is wiped before it is freed; no log line carries a header,
 * a body, the token or the proxy URL.
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
#include "k8s/object.h"
#include "client_internal.h"
#include "status.h"
#include "watch_decoder.h"

#ifndef K8S_VERSION_STRING
#define K8S_VERSION_STRING "0.1.0"
#endif

/* Largest response body accepted (a big List); protects against a runaway. */
#define BODY_MAX ((size_t)1 << 30)
#define PATH_MAX_LEN 2048
/* Distinct Warning texts remembered (beyond, warnings are logged each time). */
#define WARNINGS_SEEN_MAX 1024
/* Page size of k8s_client_list_all() when the caller gives none (client-go's pager). */
#define LIST_ALL_PAGE 500

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
			return asb_error_set(ASB_ERROR, 0, NULL,
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

/* --- bodies and query strings ---------------------------------------------- */

int k8s__body_add(k8s__body *b, const char *s, size_t n)
{
	if (b->too_big)
		return -1;
	if (b->max && n > b->max - b->buf.len) {
		b->too_big = true;
		return -1;
	}
	return asb_strbuf_add(&b->buf, s, n);
}

/* Appends "&key=value" (or "?key=value" first), value percent-encoded. */
static void query_add(asb_strbuf *b, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	asb_strbuf_adds(b, b->len && strchr(b->data, '?') ? "&" : "?");
	asb_strbuf_adds(b, key);
	asb_strbuf_addc(b, '=');
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~')
			asb_strbuf_addc(b, (char)*p);
		else
			asb_strbuf_addf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

static void query_add_long(asb_strbuf *b, const char *key, long value)
{
	char num[32];
	snprintf(num, sizeof(num), "%ld", value);
	query_add(b, key, num);
}

static size_t body_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;
	return k8s__body_add(ud, ptr, n) == 0 ? n : CURL_WRITEFUNC_ERROR;
}

int64_t k8s__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- the client ------------------------------------------------------------ */

int k8s_client_options_init(k8s_client_options *opts, unsigned int version)
{
	k8s_client_options defaults = K8S_CLIENT_OPTIONS_INIT;
	if (!opts || version == 0 || version > K8S_CLIENT_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client options: unknown version %u", version);
	/* An older caller's struct is shorter: fill only what it has. */
	size_t size = version == 1 ? offsetof(k8s_client_options, qps)
	            : version == 2 ? offsetof(k8s_client_options, metrics)
	                           : sizeof(defaults);
	memcpy(opts, &defaults, size);
	opts->version = version;
	return 0;
}

const char *k8s_client_namespace(const k8s_client *c)
{
	return c ? c->cfg->namespace : NULL;
}

void k8s_client_free(k8s_client *c)
{
	if (!c)
		return;
	/* The shards first: nothing may run a callback into `c` afterwards. */
	k8s__transport_cleanup(&c->transport);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->exec_lock);
	curl_slist_free_all(c->connect_to);
	free(c->base_url);
	free(c->user_agent);
	k8s__free_secret(c->proxy);
	k8s__free_secret(c->token);
	k8s__exec_credential_clear(&c->exec_cred);
	asb_map_clear(&c->warnings_seen, NULL);
	if (c->own_limiter)
		k8s_ratelimiter_free(c->limiter);
	k8s__rest_metrics_free(c->metrics);
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

	if (cfg->proxy_url) {
		/* client-go's SOCKS5 dialer lets the proxy resolve host names:
		 * that is curl's socks5h. */
		const char *p = cfg->proxy_url;
		int socks = strncmp(p, "socks5://", 9) == 0;
		size_t n = strlen(p) + 2;
		if (!(c->proxy = malloc(n)))
			return asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
		snprintf(c->proxy, n, "%s%s", socks ? "socks5h://" : p,
		         socks ? p + 9 : "");
	}
	if (!cfg->tls_server_name || !https)
		return (c->base_url = strdup(cfg->server)) ? 0
			: asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");

	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *path = NULL;
	int rc = 0;
	if (!u) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, cfg->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "client: server URL \"%s\" (%s) can not be parsed",
		                   cfg->server, cfg->origin);
		goto out;
	}
	size_t plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		path[--plen] = '\0';
	asb_strbuf url = ASB_STRBUF_INIT, route = ASB_STRBUF_INIT;
	asb_strbuf_adds(&url, "https://");
	asb_strbuf_adds(&url, cfg->tls_server_name);
	asb_strbuf_adds(&url, ":");
	asb_strbuf_adds(&url, port);
	asb_strbuf_adds(&url, path);
	/* HOST:PORT:CONNECT-TO-HOST:CONNECT-TO-PORT; curl gives IPv6 hosts
	 * back bracketed, which is the form CONNECT_TO wants. */
	asb_strbuf_adds(&route, cfg->tls_server_name);
	asb_strbuf_adds(&route, ":");
	asb_strbuf_adds(&route, port);
	asb_strbuf_adds(&route, ":");
	asb_strbuf_adds(&route, host);
	asb_strbuf_adds(&route, ":");
	asb_strbuf_adds(&route, port);
	if (url.failed || route.failed ||
	    !(c->connect_to = curl_slist_append(NULL, route.data))) {
		free(url.data);
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
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
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: unsupported options version %u", what, version);
	return 0;
}

/* The caller's options as a current-version struct (older ones are shorter). */
static int effective_options(k8s_client_options *eff, const k8s_client_options *opts)
{
	k8s_client_options defaults = K8S_CLIENT_OPTIONS_INIT;
	int rc;
	*eff = defaults;
	if (!opts)
		return 0;
	if ((rc = check_version(opts->version, K8S_CLIENT_OPTIONS_VERSION, "client")))
		return rc;
	memcpy(eff, opts, opts->version == 1 ? offsetof(k8s_client_options, qps)
	                  : opts->version == 2 ? offsetof(k8s_client_options, metrics)
	                                       : sizeof(*eff));
	if (eff->qps != eff->qps || eff->qps > 1e9)  /* NaN, infinite */
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: qps must be a finite number (got %g)", eff->qps);
	if (eff->qps > 0 && !eff->ratelimiter && eff->burst < 1)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: burst must be >= 1 with a qps limit (got %d)",
		                     eff->burst);
	if (eff->api_connections < 0 || eff->api_connections > K8S__SHARDS_MAX)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: api_connections must be 1..%d (got %d)",
		                     K8S__SHARDS_MAX, eff->api_connections);
	if (eff->max_retries < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: max_retries must be >= 0 (got %d)",
		                     eff->max_retries);
	return 0;
}

int k8s_client_new(k8s_client **out, const k8s_config *cfg,
                   const k8s_client_options *opts)
{
	k8s_client_options o;
	int rc;

	if (!out || !cfg)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: out and cfg are required");
	*out = NULL;
	if ((rc = effective_options(&o, opts)))
		return rc;

	k8s_client *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return asb_error_set(ASB_ERROR, 0, NULL, "client: mutex init failed");
	}
	if (pthread_mutex_init(&c->exec_lock, NULL) != 0) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return asb_error_set(ASB_ERROR, 0, NULL, "client: mutex init failed");
	}
	asb_map_init(&c->warnings_seen);
	c->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 0;
	c->connect_timeout_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 10000;
	c->max_retries = o.max_retries;
	c->max_retry_delay_ms = o.max_retry_delay_ms > 0 ? o.max_retry_delay_ms : 10000;
	c->exec_timeout_ms = o.exec_timeout_ms > 0 ? o.exec_timeout_ms : 60000;
	c->log = o.logger;
	if ((rc = k8s__transport_init(&c->transport, o.api_connections > 0
	                              ? (size_t)o.api_connections : 1,
	                              o.separate_watch_connection)))
		goto fail_early;
	if (o.ratelimiter) {
		c->limiter = o.ratelimiter;
	} else if (o.qps > 0) {
		if ((rc = k8s_ratelimiter_new(&c->limiter, o.qps, o.burst)))
			goto fail;
		c->own_limiter = true;
	}
	if ((rc = k8s__config_dup(&c->cfg, cfg)))
		goto fail;
	c->user_agent = strdup(o.user_agent ? o.user_agent
	                       : "libk8s/" K8S_VERSION_STRING);
	if (!c->user_agent || (cfg->token && !(c->token = strdup(cfg->token)))) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
		goto fail;
	}
	if ((rc = setup_routing(c)) ||
	    (rc = k8s__rest_metrics_new(&c->metrics, o.metrics, c->base_url)))
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
fail_early:
	/* The transport cleaned up after itself. */
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->exec_lock);
	free(c);
	return rc;
}

/* --- credentials -------------------------------------------------------------- */

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
					k8s__free_secret(c->token);
					c->token = fresh;
					c->token_mtime = st.st_mtim;
					c->token_ino = st.st_ino;
					c->token_size = st.st_size;
					asb_log(c->log, ASB_LOG_DEBUG, "token file re-read",
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

/* True when the user authenticates with its exec plugin: it has one, and no
 * static credentials (which win, see config.h). */
static bool uses_exec(const k8s_client *c)
{
	return c->cfg->exec && !c->cfg->token && !c->cfg->cert.data;
}

static int copy_blob(k8s__blob *dst, const k8s__blob *src)
{
	dst->data = NULL;
	dst->len = 0;
	if (!src->data)
		return 0;
	if (!(dst->data = malloc(src->len + 1)))
		return -1;
	memcpy(dst->data, src->data, src->len + 1);
	dst->len = src->len;
	return 0;
}

/*
 * The plugin's credential, run again when there is none, it expired, or a
 * 401 condemned it. One run at a time: concurrent callers wait for it and
 * share its result (the lock is held across the run on purpose).
 */
static int exec_creds(k8s_client *c, k8s__creds *cr)
{
	int rc = 0;
	pthread_mutex_lock(&c->exec_lock);
	if (c->exec_valid && c->exec_cred.expiry_ms &&
	    k8s_now_ms() >= c->exec_cred.expiry_ms) {
		c->exec_valid = false;
		asb_log(c->log, ASB_LOG_DEBUG, "exec credential expired", NULL);
	}
	if (!c->exec_valid) {
		k8s__exec_credential fresh;
		atomic_fetch_add_explicit(&c->stats.credential_runs, 1, memory_order_relaxed);
		if ((rc = k8s__exec_run(c->cfg->exec, c->exec_timeout_ms, &fresh))) {
			pthread_mutex_unlock(&c->exec_lock);
			return rc;
		}
		k8s__exec_credential_clear(&c->exec_cred);
		c->exec_cred = fresh;
		c->exec_valid = true;
		c->exec_gen++;
		char expiry[40] = "none";
		if (fresh.expiry_ms)
			k8s_time_format(fresh.expiry_ms, expiry, sizeof(expiry));
		asb_log(c->log, ASB_LOG_DEBUG, "exec credential obtained",
		        "command", c->cfg->exec->command,
		        "kind", fresh.token ? "token" : "client certificate",
		        "expires", expiry, NULL);
	}
	if ((c->exec_cred.token && !(cr->token = strdup(c->exec_cred.token))) ||
	    copy_blob(&cr->cert, &c->exec_cred.cert) ||
	    copy_blob(&cr->key, &c->exec_cred.key))
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
	cr->exec_gen = c->exec_gen;
	pthread_mutex_unlock(&c->exec_lock);
	return rc;
}

void k8s__creds_free(k8s__creds *cr)
{
	k8s__free_secret(cr->token);
	k8s__blob_free(&cr->cert);
	k8s__blob_free(&cr->key);
	memset(cr, 0, sizeof(*cr));
}

int k8s__client_creds(k8s_client *c, k8s__creds *cr)
{
	memset(cr, 0, sizeof(*cr));
	if (uses_exec(c)) {
		int rc = exec_creds(c, cr);
		if (rc)
			k8s__creds_free(cr);
		return rc;
	}
	cr->token = current_token(c);
	return 0;
}

bool k8s__client_auth_failed(k8s_client *c, const k8s__creds *cr)
{
	if (!cr->exec_gen)
		return false;  /* a static token: running nothing would help */
	pthread_mutex_lock(&c->exec_lock);
	if (c->exec_gen == cr->exec_gen && c->exec_valid) {
		c->exec_valid = false;
		asb_log(c->log, ASB_LOG_DEBUG,
		        "exec credential rejected (401); running the plugin again", NULL);
	}
	pthread_mutex_unlock(&c->exec_lock);
	return true;
}

/* --- one try -------------------------------------------------------------------- */

void k8s__free_headers(struct curl_slist *headers)
{
	for (struct curl_slist *s = headers; s; s = s->next)
		explicit_bzero(s->data, strlen(s->data));
	curl_slist_free_all(headers);
}

static int append_header(struct curl_slist **hl, const char *line)
{
	struct curl_slist *next = curl_slist_append(*hl, line);
	if (!next)
		return -1;
	*hl = next;
	return 0;
}

int k8s__client_prepare(k8s_client *c, CURL *h, const k8s__request *rq,
                        const k8s__creds *cr, char *errbuf,
                        struct curl_slist **headers, k8s__resp *resp)
{
	const k8s_config *cfg = c->cfg;
	struct curl_slist *hl = NULL;
	asb_strbuf url = ASB_STRBUF_INIT;
	int failed = 0;

	*headers = NULL;
	asb_strbuf_adds(&url, c->base_url);
	asb_strbuf_adds(&url, rq->path);
	if (url.failed)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");

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
	/* HTTP/2 when TLS negotiates it (ALPN), as kube-apiserver offers;
	 * a new request waits for a connection being set up rather than
	 * open a second one, so that it can become a stream of the first. */
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, k8s__header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
	if (c->connect_to)
		curl_easy_setopt(h, CURLOPT_CONNECT_TO, c->connect_to);
	if (c->proxy)
		curl_easy_setopt(h, CURLOPT_PROXY, c->proxy);

	if (cfg->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca.data) {
		/* The config outlives every transfer: no need for curl to copy. */
		struct curl_blob ca = { cfg->ca.data, cfg->ca.len, CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
	}
	/* A plugin's certificate may be replaced while this try runs: curl
	 * keeps its own copy. A different certificate also means a different
	 * connection (curl matches connections on it). */
	const k8s__blob *cert = cr->cert.data ? &cr->cert : &cfg->cert;
	const k8s__blob *key = cr->cert.data ? &cr->key : &cfg->key;
	unsigned int copy = cr->cert.data ? CURL_BLOB_COPY : CURL_BLOB_NOCOPY;
	if (cert->data) {
		struct curl_blob cb = { cert->data, cert->len, copy };
		struct curl_blob kb = { key->data, key->len, copy };
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
	}

	if (cr->token) {
		size_t n = strlen(cr->token) + sizeof("Authorization: Bearer ");
		char *line = malloc(n);
		if (line) {
			snprintf(line, n, "Authorization: Bearer %s", cr->token);
			failed = append_header(&hl, line);
			explicit_bzero(line, n);
			free(line);
		} else {
			failed = 1;
		}
	}
	/* Ask for the body at once rather than after "100 Continue". */
	failed = failed || append_header(&hl, "Accept: application/json") ||
	         append_header(&hl, "Expect:");
	if (rq->content_type && !failed) {
		char ct[128];
		snprintf(ct, sizeof(ct), "Content-Type: %s", rq->content_type);
		failed = append_header(&hl, ct);
	}
	if (failed) {
		k8s__free_headers(hl);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "client: out of memory");
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

int k8s__transport_error(const k8s__request *rq, CURLcode res, const char *errbuf)
{
	int code = res == CURLE_OPERATION_TIMEDOUT ? ASB_ETIMEOUT : ASB_ETRANSPORT;
	if (res == CURLE_OUT_OF_MEMORY)
		code = ASB_ENOMEM;
	return asb_error_set(code, 0, NULL, "%s: %s %s: %s", rq->subject,
	                     rq->method, rq->path,
	                     errbuf[0] ? errbuf : curl_easy_strerror(res));
}

static const char *http_version_name(long v)
{
	switch (v) {
	case CURL_HTTP_VERSION_1_0: return "1.0";
	case CURL_HTTP_VERSION_1_1: return "1.1";
	case CURL_HTTP_VERSION_2_0: return "2";
	case CURL_HTTP_VERSION_3: return "3";
	default: return "none";
	}
}

typedef struct {
	k8s_client *c;
	const k8s__request *rq;
} warning_ctx;

/* Logs a warning text the first time this client sees it (client-go's
 * deduplicating warning handler). */
static void log_warning(const char *text, void *ud)
{
	warning_ctx *w = ud;
	k8s_client *c = w->c;
	bool fresh;

	pthread_mutex_lock(&c->lock);
	fresh = !asb_map_has(&c->warnings_seen, text);
	if (fresh && asb_map_count(&c->warnings_seen) < WARNINGS_SEEN_MAX)
		asb_map_set(&c->warnings_seen, text, NULL, NULL);
	pthread_mutex_unlock(&c->lock);
	if (!fresh)
		return;
	atomic_fetch_add_explicit(&c->stats.warnings, 1, memory_order_relaxed);
	asb_log(c->log, ASB_LOG_WARN, "API server warning", "text", text,
	        "verb", w->rq->method, "path", w->rq->path, NULL);
}

void k8s__client_after(k8s_client *c, CURL *h, const k8s__request *rq,
                       long status, int64_t started_ms, int attempt,
                       const k8s__resp *resp)
{
	long connects = 0, version = 0;
	k8s__rest_metrics_observe(c->metrics, rq->method, status,
	                          (double)(k8s__now_ms() - started_ms) / 1000.0, rq->watch);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
	curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &version);
	atomic_fetch_add_explicit(&c->stats.requests, 1, memory_order_relaxed);
	if (connects > 0)
		atomic_fetch_add_explicit(&c->stats.connections, (uint64_t)connects,
		                          memory_order_relaxed);
	if (status && version == CURL_HTTP_VERSION_2_0)
		atomic_fetch_add_explicit(&c->stats.http2, 1, memory_order_relaxed);

	if (resp->warnings_len) {
		warning_ctx w = { c, rq };
		const char *p = resp->warnings;
		while (*p) {
			size_t n = strcspn(p, "\n");
			char *one = strndup(p, n);
			if (one) {
				k8s__warning_parse(one, log_warning, &w);
				free(one);
			}
			p += n + (p[n] == '\n');
		}
	}
	if (!asb_log_enabled(c->log, ASB_LOG_DEBUG))
		return;
	asb_log_typed(c->log, ASB_LOG_DEBUG, "api request", ASB_LOG_STR("verb", rq->method),
	              ASB_LOG_STR("path", rq->path), ASB_LOG_INT("status", status),
	              ASB_LOG_INT("duration_ms", k8s__now_ms() - started_ms),
	              ASB_LOG_STR("http_version", http_version_name(status ? version : 0)),
	              ASB_LOG_BOOL("new_connection", connects > 0), ASB_LOG_INT("try", attempt + 1));
}

/* --- retries ---------------------------------------------------------------------- */

typedef struct {
	bool retry;        /* send again */
	bool auth_retry;   /* ...with fresh plugin credentials (once, not counted) */
	long delay_ms;     /* Retry-After, or -1 */
} try_outcome;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Waits for the client's rate limiter (not bounded past the request timeout). */
static int throttle(k8s_client *c, const k8s__request *rq)
{
	long waited = 0;
	if (!c->limiter)
		return 0;
	if (k8s_ratelimiter_wait(c->limiter, c->timeout_ms > 0 ? c->timeout_ms : -1,
	                         &waited) != 0)
		return asb_error_set(ASB_ETIMEOUT, 0, NULL,
		                     "%s: %s %s: the client-side rate limit (qps %g, "
		                     "burst %d) would delay it past the %ld ms timeout",
		                     rq->subject, rq->method, rq->path,
		                     k8s_ratelimiter_qps(c->limiter),
		                     k8s_ratelimiter_burst(c->limiter), c->timeout_ms);
	if (waited > 0) {
		atomic_fetch_add_explicit(&c->stats.throttled, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->stats.throttle_wait_ms, (uint64_t)waited,
		                          memory_order_relaxed);
		asb_log_typed(c->log, ASB_LOG_DEBUG, "client-side throttling",
		              ASB_LOG_STR("verb", rq->method), ASB_LOG_STR("path", rq->path),
		              ASB_LOG_INT("waited_ms", waited));
	}
	return 0;
}

/*
 * One try: 2xx JSON into *out (when `out` is not NULL), anything else into
 * the recorded error; `oc` says whether to try again.
 */
static int try_once(k8s_client *c, const k8s__request *rq, int attempt,
                    bool auth_retried, cJSON **out, try_outcome *oc)
{
	k8s__try t;
	k8s__body body = { .max = BODY_MAX };
	k8s__xfer x;
	long status = 0;
	CURLcode res = CURLE_OK;
	int rc;

	oc->retry = oc->auth_retry = false;
	oc->delay_ms = -1;
	if ((rc = throttle(c, rq)))
		return rc;
	if ((rc = k8s__try_begin(c, rq, &t, &x)))
		goto out;
	CURL *h = t.h;
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	if (c->timeout_ms > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);

	int64_t started = k8s__now_ms();
	res = k8s__xfer_perform(k8s__transport_pick(&c->transport, rq->list_or_watch), &x);
	k8s__xfer_destroy(&x);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	k8s__client_after(c, h, rq, status, started, attempt, &t.resp);

	if (res == CURLE_WRITE_ERROR && body.too_big)
		rc = asb_error_set(ASB_EDECODE, (int)status, NULL,
		                   "%s: %s %s: the answer is larger than %zu bytes",
		                   rq->subject, rq->method, rq->path, (size_t)BODY_MAX);
	else if (res == CURLE_WRITE_ERROR && body.buf.failed)
		rc = asb_error_set(ASB_ENOMEM, (int)status, NULL,
		                   "%s: %s %s: out of memory reading the answer",
		                   rq->subject, rq->method, rq->path);
	else if (res != CURLE_OK)
		rc = k8s__transport_error(rq, res, t.errbuf);
	else if (status < 200 || status > 299)
		rc = k8s__status_record((int)status, body.buf.data, body.buf.len, rq->subject);
	else if (out) {
		*out = body.buf.data ? cJSON_ParseWithLength(body.buf.data, body.buf.len) : NULL;
		if (!*out)
			rc = asb_error_set(ASB_EDECODE, (int)status, NULL,
			                   "%s: %s %s: the answer (HTTP %ld, %zu bytes) "
			                   "is not JSON", rq->subject, rq->method,
			                   rq->path, status, body.buf.len);
	}
	if (rc && status == 401 && !auth_retried && k8s__client_auth_failed(c, &t.cr)) {
		/* The plugin's credential was refused: a 401 is answered before
		 * anything runs, so any verb may go again, with a fresh one. */
		oc->retry = oc->auth_retry = true;
	} else if (rc && !(res == CURLE_WRITE_ERROR && (body.too_big || body.buf.failed))) {
		oc->retry = k8s__retryable(rq->idempotent, res, status);
		oc->delay_ms = t.resp.retry_after_ms;
	}
out:
	k8s__try_end(c, &t);
	asb_strbuf_free(&body.buf);
	return rc;
}

int k8s__try_begin(k8s_client *c, const k8s__request *rq, k8s__try *t,
                   k8s__xfer *x)
{
	int rc;
	t->h = NULL;
	t->headers = NULL;
	t->errbuf[0] = '\0';
	k8s__resp_init(&t->resp);
	t->resp.now = 0;
	if ((rc = k8s__client_creds(c, &t->cr)))
		return rc;
	if (!(t->h = k8s__transport_handle(&c->transport)))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", rq->subject);
	if ((rc = k8s__client_prepare(c, t->h, rq, &t->cr, t->errbuf, &t->headers,
	                              &t->resp)))
		return rc;
	return k8s__xfer_init(x, t->h);
}

void k8s__try_end(k8s_client *c, k8s__try *t)
{
	if (t->h) {
		/* Nothing may point at the caller's stack once the handle is pooled. */
		curl_easy_setopt(t->h, CURLOPT_ERRORBUFFER, NULL);
		curl_easy_setopt(t->h, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(t->h, CURLOPT_HEADERDATA, NULL);
		curl_easy_setopt(t->h, CURLOPT_WRITEDATA, NULL);
		k8s__transport_release(&c->transport, t->h);
		t->h = NULL;
	}
	k8s__free_headers(t->headers);
	t->headers = NULL;
	k8s__creds_free(&t->cr);
}

/*
 * Performs a request, trying again (after a backoff, or the server's
 * Retry-After) while k8s__retryable() allows and tries remain.
 */
static int do_request(k8s_client *c, const k8s__request *rq, cJSON **out)
{
	unsigned seed = (unsigned)k8s__now_ms() ^ (unsigned)(uintptr_t)rq;
	bool auth_retried = false;
	int retries = 0;

	if (out)
		*out = NULL;
	for (int attempt = 0;; attempt++) {
		try_outcome oc;
		int rc = try_once(c, rq, attempt, auth_retried, out, &oc);
		if (!oc.retry || (!oc.auth_retry && retries >= c->max_retries))
			return rc;
		long delay = 0;
		if (oc.auth_retry) {
			auth_retried = true;
		} else {
			delay = oc.delay_ms >= 0 ? oc.delay_ms
				: k8s__backoff_ms(retries, c->max_retry_delay_ms, &seed);
			if (delay > c->max_retry_delay_ms)
				delay = c->max_retry_delay_ms;
			retries++;
		}
		atomic_fetch_add_explicit(&c->stats.retries, 1, memory_order_relaxed);
		asb_log_typed(c->log, ASB_LOG_DEBUG, "retrying api request",
		              ASB_LOG_STR("verb", rq->method), ASB_LOG_STR("path", rq->path),
		              ASB_LOG_STR("error", asb_error_last()->message),
		              ASB_LOG_INT("delay_ms", delay));
		if (delay > 0)
			sleep_ms(delay);
	}
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
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "client: client and resource are required");
	return 0;
}

/* Builds PATH into `path`; returns 0 or ASB_EINVAL (recorded). */
static int make_path(asb_strbuf *out, const k8s_resource *r, const char *ns,
                     const char *name, const char *sub)
{
	char path[PATH_MAX_LEN];
	if (k8s_resource_path(path, sizeof(path), r, ns, name, sub) < 0)
		return ASB_EINVAL;
	asb_strbuf_adds(out, path);
	return 0;
}

static void add_write_query(asb_strbuf *q, const k8s_write_options *o)
{
	if (!o)
		return;
	if (o->field_manager && o->field_manager[0])
		query_add(q, "fieldManager", o->field_manager);
	if (o->dry_run)
		query_add(q, "dryRun", "All");
	if (o->force)
		query_add(q, "force", "true");
}

/* How a request may be treated: sent again after a failure, or routed to
 * the list/watch shard. */
enum { REQ_IDEMPOTENT = 1, REQ_LIST = 2 };

/* Runs a request whose path is in `path` and whose body is `json`; frees both. */
static int run(k8s_client *c, const char *method, asb_strbuf *path,
               const char *content_type, char *json, const char *subject,
               int flags, cJSON **out)
{
	int rc;
	if (path->failed) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", subject);
	} else {
		k8s__request rq = { method, path->data, json ? content_type : NULL,
		                    json, subject, (flags & REQ_IDEMPOTENT) != 0,
		                    (flags & REQ_LIST) != 0, false };
		rc = do_request(c, &rq, out);
	}
	free(path->data);
	if (json)
		cJSON_free(json);
	return rc;
}

/* --- the verbs ----------------------------------------------------------- */

/*
 * What every verb on one named object starts with: check the arguments,
 * settle the namespace, name the object for messages and build the path
 * (of `subresource`, when not NULL).
 */
static int object_request(k8s_client *c, const k8s_resource *r, const char **ns,
                          const char *name, const char *subresource,
                          char *subject, size_t cap, asb_strbuf *path)
{
	int rc;
	if ((rc = check_args(c, r)))
		return rc;
	*ns = object_ns(c, r, *ns, NULL);
	subject_object(subject, cap, r, *ns, name ? name : "");
	return make_path(path, r, *ns, name ? name : "", subresource);
}

/* GET of an object or of one of its subresources. */
static int get_object(k8s_client *c, const k8s_resource *r, const char *ns,
                      const char *name, const char *subresource, cJSON **out)
{
	char subject[512];
	asb_strbuf path = ASB_STRBUF_INIT;
	if (out)
		*out = NULL;
	int rc = object_request(c, r, &ns, name, subresource, subject, sizeof(subject), &path);
	if (rc)
		return rc;
	return run(c, "GET", &path, NULL, NULL, subject, REQ_IDEMPOTENT, out);
}

int k8s_client_get(k8s_client *c, const k8s_resource *r, const char *ns,
                   const char *name, cJSON **out)
{
	return get_object(c, r, ns, name, NULL, out);
}

static void add_list_query(asb_strbuf *q, const k8s_list_options *o)
{
	if (!o)
		return;
	if (o->label_selector && o->label_selector[0])
		query_add(q, "labelSelector", o->label_selector);
	if (o->field_selector && o->field_selector[0])
		query_add(q, "fieldSelector", o->field_selector);
	if (o->resource_version && o->resource_version[0])
		query_add(q, "resourceVersion", o->resource_version);
	if (o->timeout_seconds > 0)
		query_add_long(q, "timeoutSeconds", o->timeout_seconds);
}

int k8s_client_list(k8s_client *c, const k8s_resource *r, const char *ns,
                    const k8s_list_options *opts, cJSON **out)
{
	char subject[512];
	asb_strbuf path = ASB_STRBUF_INIT;
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
		query_add_long(&path, "limit", opts->limit);
	if (opts && opts->continue_token && opts->continue_token[0])
		query_add(&path, "continue", opts->continue_token);
	return run(c, "GET", &path, NULL, NULL, subject, REQ_IDEMPOTENT | REQ_LIST, out);
}

/* Common to create, update and update_status. */
static int write_object(k8s_client *c, const k8s_resource *r, const char *ns,
                        const cJSON *obj, const k8s_write_options *opts,
                        const char *method, const char *sub, cJSON **out)
{
	char subject[512];
	asb_strbuf path = ASB_STRBUF_INIT;
	int rc;
	int create = strcmp(method, "POST") == 0;

	if (out)
		*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_WRITE_OPTIONS_VERSION,
	                                 "write"))))
		return rc;
	if (!cJSON_IsObject(obj))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: the object must be a JSON object", kind_of(r));
	ns = object_ns(c, r, ns, obj);
	const char *name = meta_str(obj, "name");
	if (!name && !create)
		return asb_error_set(ASB_EINVAL, 0, NULL,
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
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: force applies to server-side apply only",
		                     subject);
	if ((rc = make_path(&path, r, ns, create ? NULL : name, sub)))
		return rc;
	add_write_query(&path, opts);
	char *json = cJSON_PrintUnformatted(obj);
	if (!json) {
		free(path.data);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	/* A PUT carrying a resourceVersion can not overwrite a change made
	 * since: sending it twice yields a Conflict at worst. */
	int flags = !create && meta_str(obj, "resourceVersion") ? REQ_IDEMPOTENT : 0;
	return run(c, method, &path, "application/json", json, subject, flags, out);
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

static int patch_object(k8s_client *c, const k8s_resource *r, const char *ns,
                        const char *name, const char *subresource,
                        k8s_patch_type type, const cJSON *patch,
                        const k8s_write_options *opts, int flags, cJSON **out)
{
	char subject[512];
	asb_strbuf path = ASB_STRBUF_INIT;
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
		return asb_error_set(ASB_EINVAL, 0, NULL, "%s: unknown patch type %d",
		                     subject, (int)type);
	if (type == K8S_PATCH_JSON ? !cJSON_IsArray(patch) : !cJSON_IsObject(patch))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: a %s patch must be a JSON %s", subject,
		                     type == K8S_PATCH_JSON ? "JSON" : "merge/apply",
		                     type == K8S_PATCH_JSON ? "array" : "object");
	if (type == K8S_PATCH_APPLY &&
	    (!opts || !opts->field_manager || !opts->field_manager[0]))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: server-side apply needs a field manager",
		                     subject);
	if (type != K8S_PATCH_APPLY && opts && opts->force)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "%s: force applies to server-side apply only",
		                     subject);
	if ((rc = make_path(&path, r, ns, name ? name : "", subresource)))
		return rc;
	add_write_query(&path, opts);
	char *json = cJSON_PrintUnformatted(patch);
	if (!json) {
		free(path.data);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	return run(c, "PATCH", &path, ctype, json, subject, flags, out);
}

int k8s_client_patch(k8s_client *c, const k8s_resource *r, const char *ns,
                     const char *name, const char *subresource,
                     k8s_patch_type type, const cJSON *patch,
                     const k8s_write_options *opts, cJSON **out)
{
	/* A patch may be relative (a JSON patch `add` to a list, a strategic
	 * merge appending): never sent twice. */
	return patch_object(c, r, ns, name, subresource, type, patch, opts, 0, out);
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
	asb_strbuf path = ASB_STRBUF_INIT;
	char *json = NULL;
	int rc;

	if (out)
		*out = NULL;
	if ((opts && (rc = check_version(opts->version, K8S_DELETE_OPTIONS_VERSION,
	                                 "delete"))) ||
	    (rc = object_request(c, r, &ns, name, NULL, subject, sizeof(subject), &path)))
		return rc;
	if (opts && !(json = delete_body(opts))) {
		free(path.data);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	/* Deleting twice deletes once; the second may answer NotFound. */
	return run(c, "DELETE", &path, "application/json", json, subject,
	           REQ_IDEMPOTENT, out);
}


/* --- all pages of a list ------------------------------------------------------- */

/* The `items` array of a List, created when the server sent none. */
static cJSON *list_items(cJSON *list)
{
	cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
	if (cJSON_IsArray(items))
		return items;
	cJSON_DeleteItemFromObjectCaseSensitive(list, "items");
	return cJSON_AddArrayToObject(list, "items");
}

static const char *list_meta(const cJSON *list, const char *key)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(list, "metadata");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(md, key);
	return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* Moves the items of `page` to the end of `items` (no copies). */
static void move_items(cJSON *items, cJSON *page)
{
	cJSON *from = cJSON_GetObjectItemCaseSensitive(page, "items");
	if (!cJSON_IsArray(from))
		return;
	while (from->child) {
		cJSON *it = cJSON_DetachItemViaPointer(from, from->child);
		cJSON_AddItemToArray(items, it);
	}
}

/* The List keeps the last page's resourceVersion and loses its paging fields. */
static int finish_list(cJSON *all, const cJSON *last)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(all, "metadata");
	if (!cJSON_IsObject(md)) {
		cJSON_DeleteItemFromObjectCaseSensitive(all, "metadata");
		if (!(md = cJSON_AddObjectToObject(all, "metadata")))
			return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(md, "continue");
	cJSON_DeleteItemFromObjectCaseSensitive(md, "remainingItemCount");
	/* The first page already carries its own. */
	const char *rv = last && last != all ? list_meta(last, "resourceVersion") : NULL;
	if (rv) {
		cJSON *v = cJSON_CreateString(rv);
		if (!v)
			return -1;
		cJSON_DeleteItemFromObjectCaseSensitive(md, "resourceVersion");
		cJSON_AddItemToObject(md, "resourceVersion", v);
	}
	return 0;
}

int k8s_client_list_all(k8s_client *c, const k8s_resource *r, const char *ns,
                        const k8s_list_options *opts, cJSON **out)
{
	k8s_list_options o = K8S_LIST_OPTIONS_INIT;
	cJSON *all = NULL, *items = NULL;
	char *cont = NULL;
	int rc;

	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "list_all: out is required");
	*out = NULL;
	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_LIST_OPTIONS_VERSION,
	                                 "list_all"))))
		return rc;
	if (opts)
		o = *opts;
	if (o.limit <= 0)
		o.limit = LIST_ALL_PAGE;
	if (o.continue_token && o.continue_token[0] &&
	    !(cont = strdup(o.continue_token)))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "list_all: out of memory");

	for (;;) {
		cJSON *page = NULL;
		k8s_list_options po = o;
		po.continue_token = cont;
		/* The server refuses a resourceVersion with a continue token:
		 * the token already pins the snapshot. */
		if (cont)
			po.resource_version = NULL;
		rc = k8s_client_list(c, r, ns, &po, &page);
		if (rc == ASB_EGONE && cont) {
			/* The continue token expired (the snapshot was compacted
			 * away): start over with one unpaged list, as client-go's
			 * pager does (FullListIfExpired). */
			asb_log(c->log, ASB_LOG_INFO,
			        "list continue token expired; listing again in one page",
			        "resource", r->resource, NULL);
			cJSON_Delete(all);
			all = items = NULL;
			free(cont);
			cont = NULL;
			po = o;
			po.limit = 0;
			po.continue_token = NULL;
			rc = k8s_client_list(c, r, ns, &po, &page);
		}
		if (rc)
			goto fail;
		if (!all) {
			all = page;
			if (!(items = list_items(all)))
				goto nomem;
		} else {
			move_items(items, page);
		}
		const char *next = po.limit > 0 ? list_meta(page, "continue") : NULL;
		char *copy = next ? strdup(next) : NULL;
		if (next && !copy) {
			if (page != all)
				cJSON_Delete(page);
			goto nomem;
		}
		free(cont);
		cont = copy;
		if (!cont) {
			rc = finish_list(all, page) ? ASB_ENOMEM : 0;
			if (page != all)
				cJSON_Delete(page);
			if (rc)
				goto nomem;
			break;
		}
		if (page != all)
			cJSON_Delete(page);
	}
	*out = all;
	return 0;
nomem:
	rc = asb_error_set(ASB_ENOMEM, 0, NULL, "list_all %s: out of memory",
	                   kind_of(r));
fail:
	cJSON_Delete(all);
	free(cont);
	return rc;
}

/* --- the scale subresource --------------------------------------------------------- */

int k8s_client_get_scale(k8s_client *c, const k8s_resource *r, const char *ns,
                         const char *name, cJSON **out)
{
	return get_object(c, r, ns, name, "scale", out);
}

int k8s_client_update_scale(k8s_client *c, const k8s_resource *r,
                            const char *ns, const char *name, int32_t replicas,
                            const k8s_write_options *opts, cJSON **out)
{
	if (out)
		*out = NULL;
	if (replicas < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "update_scale: replicas must be >= 0 (got %d)",
		                     (int)replicas);
	cJSON *patch = cJSON_CreateObject();
	cJSON *spec = patch ? cJSON_AddObjectToObject(patch, "spec") : NULL;
	if (!spec || !cJSON_AddNumberToObject(spec, "replicas", replicas)) {
		cJSON_Delete(patch);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "update_scale: out of memory");
	}
	/* Setting an absolute count is idempotent: safe to send again. */
	int rc = patch_object(c, r, ns, name, "scale", K8S_PATCH_MERGE, patch, opts,
	                      REQ_IDEMPOTENT, out);
	cJSON_Delete(patch);
	return rc;
}

/* --- watch ------------------------------------------------------------------------- */

int k8s_client_watch(k8s_client *c, const k8s_resource *r, const char *ns,
                     const k8s_list_options *opts, k8s_watch_fn fn,
                     void *userdata, const atomic_int *cancel)
{
	char subject[512];
	asb_strbuf path = ASB_STRBUF_INIT;
	k8s__watch_decoder *dec = NULL;
	int rc;

	if ((rc = check_args(c, r)) ||
	    (opts && (rc = check_version(opts->version, K8S_LIST_OPTIONS_VERSION,
	                                 "watch"))))
		return rc;
	if (!fn)
		return asb_error_set(ASB_EINVAL, 0, NULL, "watch: fn is required");
	subject_collection(subject, sizeof(subject), "watch", r, ns);
	if ((rc = make_path(&path, r, r->namespaced ? ns : NULL, NULL, NULL)))
		return rc;
	query_add(&path, "watch", "1");
	add_list_query(&path, opts);
	if (opts && opts->allow_watch_bookmarks)
		query_add(&path, "allowWatchBookmarks", "true");
	if (path.failed) {
		free(path.data);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "%s: out of memory", subject);
	}
	if ((rc = k8s__watch_decoder_new(&dec, 0, subject, fn, userdata))) {
		free(path.data);
		return rc;
	}
	k8s__request rq = { "GET", path.data, NULL, NULL, subject, true, true, true };
	rc = k8s__client_stream(c, &rq, dec, cancel,
	                        opts ? opts->timeout_seconds : 0);
	k8s__watch_decoder_free(dec);
	free(path.data);
	return rc;
}

/* --- stats --------------------------------------------------------------------------- */

int k8s_client_stats_get(k8s_client *c, k8s_client_stats *out)
{
	int rc;
	if (!c || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "stats: client and out are required");
	if ((rc = check_version(out->version, K8S_CLIENT_STATS_VERSION, "stats")))
		return rc;
#define LOAD(f) atomic_load_explicit(&c->stats.f, memory_order_relaxed)
	out->requests = LOAD(requests);
	out->retries = LOAD(retries);
	out->throttled = LOAD(throttled);
	out->throttle_wait_ms = LOAD(throttle_wait_ms);
	out->connections = LOAD(connections);
	out->http2 = LOAD(http2);
	out->credential_runs = LOAD(credential_runs);
	out->warnings = LOAD(warnings);
#undef LOAD
	return 0;
}
