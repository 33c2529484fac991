/*
 * tls.c - the TLS transport of the HTTP server (mbedTLS).
 *
 * The server (server.c) hands the bytes it reads from a socket to
 * httpd__tls_conn_input(); the decrypted bytes come back through the
 * connection's `deliver` callback into the HTTP parser. Responses go the
 * other way through httpd__tls_conn_write(), whose records leave through
 * `send_raw` (a queued uv_write). mbedTLS never touches the socket: its
 * BIO callbacks read from the bytes received so far and append to the
 * write queue, so nothing here blocks the loop thread.
 *
 * Certificates: one certificate chain and key, PEM files read at start.
 * When the files change (a cert manager writes new ones, a Secret volume
 * is updated) the next connection after a check (at most once a second)
 * loads them again; connections already open keep the configuration they
 * started with (reference counted). A pair that does not load, or whose
 * key does not match the certificate (caught between the writes of the
 * two files), is ignored until the files change again.
 *
 * TLS 1.2 or later, ALPN "http/1.1"; a client certificate is required and
 * verified against a CA bundle when one is configured (mutual TLS), not
 * asked for otherwise. A server with several loop threads shares one
 * httpd__tls_server: the current configuration, its reference counts and
 * the reload check are guarded by a mutex (the DRBG locks itself,
 * MBEDTLS_THREADING_C); connections are used by their own loop only.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include "asb/common.h"
#include "server_internal.h"
#include "asb/strbuf.h"

#define RELOAD_CHECK_MS 1000

/* One loaded certificate + key, shared by the connections that use it. */
typedef struct {
	int refs;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt chain;
	mbedtls_pk_context key;
	mbedtls_x509_crt client_ca;    /* empty without mutual TLS */
} tls_cfg;

typedef struct {
	struct timespec mtime;
	off_t size;
	ino_t ino;
} file_id;

struct httpd__tls_server {
	char *cert_file, *key_file, *name;
	char *client_ca_file;          /* NULL: no client certificate asked */
	pthread_mutex_t lock;          /* guards cfg, its refs, the ids, last_check_ms */
	asb_logger *log;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	tls_cfg *cfg;                  /* the current one */
	file_id cert_id, key_id;       /* of the files behind cfg, or a failed try */
	uint64_t last_check_ms;
};

struct httpd__tls_conn {
	mbedtls_ssl_context ssl;
	tls_cfg *cfg;
	httpd__tls_server *srv;
	asb_strbuf in;                 /* received, not yet consumed by mbedTLS */
	size_t in_off;
	bool handshake_done;
	void *owner;
	int (*send_raw)(void *owner, char *data, size_t len);
	bool (*deliver)(void *owner, const char *data, size_t len);
};

static const char *alpn_protocols[] = { "http/1.1", NULL };

/* Called with the server's lock held (or before the server is shared). */
static void cfg_unref(tls_cfg *c)
{
	if (!c || --c->refs > 0)
		return;
	mbedtls_ssl_config_free(&c->conf);
	mbedtls_x509_crt_free(&c->client_ca);
	mbedtls_x509_crt_free(&c->chain);
	mbedtls_pk_free(&c->key);
	free(c);
}

static void tls_strerror(int err, char *buf, size_t cap)
{
	mbedtls_strerror(err, buf, cap);
}

static bool file_stat(const char *path, file_id *id)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return false;
	id->mtime = st.st_mtim;
	id->size = st.st_size;
	id->ino = st.st_ino;
	return true;
}

static bool file_id_eq(const file_id *a, const file_id *b)
{
	return a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->size == b->size && a->ino == b->ino;
}

/* Loads the two files into a new configuration; ASB_ECONFIG with a message on failure. */
static int cfg_load(httpd__tls_server *s, tls_cfg **out)
{
	tls_cfg *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "https server %s: out of memory", s->name);
	c->refs = 1;
	mbedtls_ssl_config_init(&c->conf);
	mbedtls_x509_crt_init(&c->chain);
	mbedtls_pk_init(&c->key);
	mbedtls_x509_crt_init(&c->client_ca);
	char why[160];
	int err = mbedtls_x509_crt_parse_file(&c->chain, s->cert_file);
	if (err != 0) {
		tls_strerror(err, why, sizeof(why));
		cfg_unref(c);
		return asb_error_set(ASB_ECONFIG, 0, NULL, "https server %s: cannot load certificate %s: %s",
		                     s->name, s->cert_file, why);
	}
	err = mbedtls_pk_parse_keyfile(&c->key, s->key_file, NULL);
	if (err != 0) {
		tls_strerror(err, why, sizeof(why));
		cfg_unref(c);
		return asb_error_set(ASB_ECONFIG, 0, NULL, "https server %s: cannot load key %s: %s",
		                     s->name, s->key_file, why);
	}
	if (mbedtls_pk_check_pair(&c->chain.pk, &c->key) != 0) {
		cfg_unref(c);
		return asb_error_set(ASB_ECONFIG, 0, NULL, "https server %s: key %s does not match certificate %s",
		                     s->name, s->key_file, s->cert_file);
	}
	if (s->client_ca_file) {
		err = mbedtls_x509_crt_parse_file(&c->client_ca, s->client_ca_file);
		if (err != 0) {
			tls_strerror(err, why, sizeof(why));
			cfg_unref(c);
			return asb_error_set(ASB_ECONFIG, 0, NULL, "https server %s: cannot load client CA %s: %s",
			                     s->name, s->client_ca_file, why);
		}
	}
	err = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
	                                  MBEDTLS_SSL_PRESET_DEFAULT);
	if (err == 0) {
		mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &s->drbg);
		/* TLS 1.2 is the floor (RFC 8996 retires 1.0 and 1.1) */
		mbedtls_ssl_conf_min_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
		if (s->client_ca_file) {
			/* mutual TLS: no certificate, or one not from the CA, fails the handshake */
			mbedtls_ssl_conf_ca_chain(&c->conf, &c->client_ca, NULL);
			mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
		} else {
			mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_NONE);
		}
		err = mbedtls_ssl_conf_alpn_protocols(&c->conf, alpn_protocols);
	}
	if (err == 0)
		err = mbedtls_ssl_conf_own_cert(&c->conf, &c->chain, &c->key);
	if (err != 0) {
		tls_strerror(err, why, sizeof(why));
		cfg_unref(c);
		return asb_error_set(ASB_ECONFIG, 0, NULL, "https server %s: TLS configuration: %s", s->name, why);
	}
	*out = c;
	return 0;
}

int httpd__tls_server_new(httpd__tls_server **out, const char *name, const char *cert_file,
                        const char *key_file, const char *client_ca_file, asb_logger *log)
{
	*out = NULL;
	httpd__tls_server *s = calloc(1, sizeof(*s));
	if (!s)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "https server: out of memory");
	mbedtls_entropy_init(&s->entropy);
	mbedtls_ctr_drbg_init(&s->drbg);
	pthread_mutex_init(&s->lock, NULL);
	s->log = log;
	s->name = strdup(name);
	s->cert_file = strdup(cert_file);
	s->key_file = strdup(key_file);
	s->client_ca_file = client_ca_file ? strdup(client_ca_file) : NULL;
	if (!s->name || !s->cert_file || !s->key_file || (client_ca_file && !s->client_ca_file)) {
		httpd__tls_server_free(s);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "https server: out of memory");
	}
	static const unsigned char pers[] = "k8s-httpserver-tls";
	if (mbedtls_ctr_drbg_seed(&s->drbg, mbedtls_entropy_func, &s->entropy, pers, sizeof(pers) - 1) != 0) {
		httpd__tls_server_free(s);
		return asb_error_set(ASB_ERROR, 0, NULL, "https server %s: cannot seed the random generator", name);
	}
	/* ids first: a file replaced between stat and load is seen as changed next time */
	file_stat(cert_file, &s->cert_id);
	file_stat(key_file, &s->key_id);
	int rc = cfg_load(s, &s->cfg);
	if (rc < 0) {
		httpd__tls_server_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void httpd__tls_server_free(httpd__tls_server *s)
{
	if (!s)
		return;
	cfg_unref(s->cfg);
	mbedtls_ctr_drbg_free(&s->drbg);
	mbedtls_entropy_free(&s->entropy);
	pthread_mutex_destroy(&s->lock);
	free(s->client_ca_file);
	free(s->name);
	free(s->cert_file);
	free(s->key_file);
	free(s);
}

/* Reloads the files when they changed since the last look. */
static void maybe_reload(httpd__tls_server *s, uint64_t now_ms)
{
	if (s->last_check_ms && now_ms - s->last_check_ms < RELOAD_CHECK_MS)
		return;
	s->last_check_ms = now_ms;
	file_id cid, kid;
	if (!file_stat(s->cert_file, &cid) || !file_stat(s->key_file, &kid))
		return;
	if (file_id_eq(&cid, &s->cert_id) && file_id_eq(&kid, &s->key_id))
		return;
	s->cert_id = cid;
	s->key_id = kid;
	tls_cfg *c = NULL;
	if (cfg_load(s, &c) < 0) {
		asb_log(s->log, ASB_LOG_WARN, "https certificate files changed but cannot be used; keeping the old ones",
		        "server", s->name, "error", asb_error_last()->message, NULL);
		return;
	}
	cfg_unref(s->cfg);
	s->cfg = c;
	asb_log(s->log, ASB_LOG_INFO, "https certificate reloaded", "server", s->name,
	        "cert", s->cert_file, NULL);
}

/* --- BIO: mbedTLS reads what arrived and writes into the socket queue --- */

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	httpd__tls_conn *t = ctx;
	char *copy = malloc(len ? len : 1);
	if (!copy)
		return MBEDTLS_ERR_SSL_ALLOC_FAILED;
	memcpy(copy, buf, len);
	if (t->send_raw(t->owner, copy, len) < 0)  /* takes `copy` */
		return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
	return (int)len;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	httpd__tls_conn *t = ctx;
	size_t avail = t->in.len - t->in_off;
	if (avail == 0)
		return MBEDTLS_ERR_SSL_WANT_READ;
	size_t n = avail < len ? avail : len;
	memcpy(buf, t->in.data + t->in_off, n);
	t->in_off += n;
	if (t->in_off == t->in.len) {
		t->in.len = 0;
		t->in_off = 0;
	}
	return (int)n;
}

int httpd__tls_conn_new(httpd__tls_conn **out, httpd__tls_server *s, uint64_t now_ms, void *owner,
                      int (*send_raw)(void *owner, char *data, size_t len),
                      bool (*deliver)(void *owner, const char *data, size_t len))
{
	*out = NULL;
	httpd__tls_conn *t = calloc(1, sizeof(*t));
	if (!t)
		return ASB_ENOMEM;
	mbedtls_ssl_init(&t->ssl);
	pthread_mutex_lock(&s->lock);
	maybe_reload(s, now_ms);
	t->cfg = s->cfg;
	t->cfg->refs++;
	pthread_mutex_unlock(&s->lock);
	t->srv = s;
	t->owner = owner;
	t->send_raw = send_raw;
	t->deliver = deliver;
	if (mbedtls_ssl_setup(&t->ssl, &t->cfg->conf) != 0) {
		httpd__tls_conn_free(t);
		return ASB_ENOMEM;
	}
	mbedtls_ssl_set_bio(&t->ssl, t, bio_send, bio_recv, NULL);
	*out = t;
	return 0;
}

void httpd__tls_conn_free(httpd__tls_conn *t)
{
	if (!t)
		return;
	mbedtls_ssl_free(&t->ssl);
	pthread_mutex_lock(&t->srv->lock);
	cfg_unref(t->cfg);
	pthread_mutex_unlock(&t->srv->lock);
	asb_strbuf_free(&t->in);
	free(t);
}

int httpd__tls_conn_input(httpd__tls_conn *t, const char *data, size_t len)
{
	if (asb_strbuf_add(&t->in, data, len) < 0)
		return -1;
	char why[160];
	if (!t->handshake_done) {
		int err = mbedtls_ssl_handshake(&t->ssl);
		if (err == MBEDTLS_ERR_SSL_WANT_READ || err == MBEDTLS_ERR_SSL_WANT_WRITE)
			return 0;
		if (err != 0) {
			/* a port scanner, a plain-HTTP client, an untrusting peer: debug only */
			tls_strerror(err, why, sizeof(why));
			asb_log(t->srv->log, ASB_LOG_DEBUG, "tls handshake failed", "server", t->srv->name,
			        "error", why, NULL);
			return -1;
		}
		t->handshake_done = true;
	}
	unsigned char buf[16384];
	for (;;) {
		int n = mbedtls_ssl_read(&t->ssl, buf, sizeof(buf));
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			return 0;
		if (n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || n == 0)
			return 1;  /* the client is done sending: like EOF */
		if (n < 0) {
			tls_strerror(n, why, sizeof(why));
			asb_log(t->srv->log, ASB_LOG_DEBUG, "tls read failed", "server", t->srv->name,
			        "error", why, NULL);
			return -1;
		}
		if (!t->deliver(t->owner, (const char *)buf, (size_t)n))
			return 0;  /* the connection stopped reading (closing, paused) */
	}
}

int httpd__tls_conn_write(httpd__tls_conn *t, char *data, size_t len)
{
	size_t off = 0;
	int rc = 0;
	while (off < len) {
		int n = mbedtls_ssl_write(&t->ssl, (const unsigned char *)data + off, len - off);
		if (n < 0) {
			rc = -1;  /* our BIO never blocks: any error is fatal */
			break;
		}
		off += (size_t)n;
	}
	free(data);
	return rc;
}

void httpd__tls_conn_close_notify(httpd__tls_conn *t)
{
	if (t->handshake_done)
		mbedtls_ssl_close_notify(&t->ssl);
}
