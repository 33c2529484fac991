/*
 * Unit tests of libhttpd/src/exchange.c and the streaming paths of
 * server.c (httpd/exchange.h): real servers on loopback, driven by
 * libcurl and raw sockets (plain and, through libcurl's CONNECT_ONLY, TLS).
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "k8s/certs.h"
#include "httpd/exchange.h"
#include "httpd/server.h"
#include "k8s/object.h"

#define WAIT_MS 10000  /* generous bound for things that must happen */
#define UPLOAD_BYTES (64u * 1024 * 1024)
#define QUEUE_LIMIT (256u * 1024)     /* the handler's "downstream" capacity */

static httpd_server *srv;
static int port;

/* What handlers saw, read by the test thread once they are done. */
static struct {
	atomic_int calls;              /* handler invocations */
	atomic_int closes;             /* on_close runs */
	atomic_int last_reason;        /* reason of the last on_close */
	atomic_int errors;             /* reader on_error runs */
	atomic_int last_error;
	atomic_long received;          /* body bytes seen */
	atomic_long max_queued;        /* most body bytes the handler held at once */
	atomic_int pauses;
	atomic_int dones;              /* write done callbacks */
	atomic_int bad;                /* a check inside a handler failed */
	atomic_int loop_seen[4];
} st;

static void closed(httpd_exchange *ex, int reason, void *ud)
{
	atomic_store(&st.last_reason, reason);
	atomic_fetch_add(&st.closes, 1);
}

static bool wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < WAIT_MS / 5; i++) {
		if (atomic_load(v) >= want)
			return true;
		usleep(5000);
	}
	return false;
}

/* --- handlers: upload with backpressure ------------------------------------------- */

typedef struct {
	httpd_exchange *ex;
	uv_timer_t drain;
	size_t queued;                 /* bytes held, as if waiting for a slow downstream */
	uint64_t offset;
	bool pattern_ok, ended;
} upload;

static void upload_freed(uv_handle_t *h)
{
	free(h->data);
}

static void upload_close(httpd_exchange *ex, int reason, void *ud)
{
	upload *u = ud;
	uv_close((uv_handle_t *)&u->drain, upload_freed);
	closed(ex, reason, NULL);
}

/* The downstream drains on a timer: QUEUE_LIMIT per tick, then reading resumes. */
static void upload_drain(uv_timer_t *t)
{
	upload *u = t->data;
	u->queued = u->queued > QUEUE_LIMIT ? u->queued - QUEUE_LIMIT : 0;
	if (u->queued < QUEUE_LIMIT / 2 && !u->ended)
		httpd_exchange_read_resume(u->ex);
}

static void upload_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	upload *u = ud;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)data[i] != (unsigned char)((u->offset + i) % 251))
			u->pattern_ok = false;
	u->offset += len;
	u->queued += len;
	atomic_fetch_add(&st.received, (long)len);
	if ((long)u->queued > atomic_load(&st.max_queued))
		atomic_store(&st.max_queued, (long)u->queued);
	if (u->queued >= QUEUE_LIMIT) {
		httpd_exchange_read_pause(ex);
		atomic_fetch_add(&st.pauses, 1);
	}
}

static void upload_end(httpd_exchange *ex, void *ud)
{
	upload *u = ud;
	u->ended = true;
	char body[96];
	int n = snprintf(body, sizeof(body), "received=%llu ok=%d", (unsigned long long)u->offset,
	                 u->pattern_ok);
	if (httpd_exchange_respond(ex, 200, "text/plain", body, (size_t)n) != 0)
		atomic_fetch_add(&st.bad, 1);
}

static void upload_error(httpd_exchange *ex, int err, void *ud)
{
	((upload *)ud)->ended = true;
	atomic_store(&st.last_error, err);
	atomic_fetch_add(&st.errors, 1);
}

static const httpd_body_reader upload_reader = { upload_data, upload_end, upload_error };

static void upload_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	upload *u = calloc(1, sizeof(*u));
	u->ex = ex;
	u->pattern_ok = true;
	uv_timer_init(httpd_exchange_loop(ex), &u->drain);
	u->drain.data = u;
	uv_timer_start(&u->drain, upload_drain, 1, 1);
	httpd_exchange_on_close(ex, upload_close, u);
	if (httpd_request_header(httpd_exchange_request(ex), "X-Unlimited"))
		httpd_exchange_set_max_body(ex, 0);
	int rc = httpd_exchange_read_start(ex, &upload_reader, u);
	if (rc == ASB_ETOOLARGE) {
		atomic_store(&st.last_error, rc);
		atomic_fetch_add(&st.errors, 1);
	}
}

/* --- handlers: responses ------------------------------------------------------------ */

typedef struct {
	int next;
} chunker;

static void chunk_done(httpd_exchange *ex, void *ud);

/* Writes the next piece once the previous one reached the socket. */
static void chunk_next(httpd_exchange *ex, chunker *ck)
{
	if (ck->next == 100) {
		if (httpd_exchange_finish(ex) != 0)
			atomic_fetch_add(&st.bad, 1);
		return;
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "line %d\n", ck->next++);
	if (httpd_exchange_write(ex, line, (size_t)n, chunk_done, ck) != 0)
		atomic_fetch_add(&st.bad, 1);
	if (httpd_exchange_pending(ex) == 0)
		atomic_fetch_add(&st.bad, 1);  /* just queued: cannot be written yet */
}

static void chunk_done(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.dones, 1);
	chunk_next(ex, ud);
}

static void chunk_close(httpd_exchange *ex, int reason, void *ud)
{
	free(ud);
	closed(ex, reason, NULL);
}

static void chunked_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	chunker *ck = calloc(1, sizeof(*ck));
	httpd_exchange_on_close(ex, chunk_close, ck);
	httpd_response_add_header(httpd_exchange_response(ex), "Content-Type", "text/plain");
	if (httpd_exchange_send_head(ex, -1) != 0)
		atomic_fetch_add(&st.bad, 1);
	chunk_next(ex, ck);
}

static void length_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	httpd_response *res = httpd_exchange_response(ex);
	httpd_response_set_status(res, 203);
	if (httpd_response_add_header(res, "Content-Length", "3") != ASB_EINVAL)
		atomic_fetch_add(&st.bad, 1);
	if (httpd_exchange_write(ex, "x", 1, NULL, NULL) != ASB_EINVAL)
		atomic_fetch_add(&st.bad, 1);  /* no head yet */
	if (httpd_exchange_send_head(ex, 11) != 0 || httpd_exchange_send_head(ex, 11) != ASB_EINVAL)
		atomic_fetch_add(&st.bad, 1);
	if (httpd_exchange_write(ex, "hello", 5, NULL, NULL) != 0 ||
	    httpd_exchange_write(ex, " world!", 7, NULL, NULL) != ASB_EINVAL ||  /* past 11 */
	    httpd_exchange_write(ex, " world", 6, NULL, NULL) != 0 ||
	    httpd_exchange_finish(ex) != 0)
		atomic_fetch_add(&st.bad, 1);
	if (httpd_exchange_finish(ex) != ASB_EINVAL)
		atomic_fetch_add(&st.bad, 1);
}

/* Answers 20 ms later, from a timer on the exchange's loop. */
static void timer_fired(uv_timer_t *t)
{
	httpd_exchange *ex = t->data;
	httpd_exchange_respond(ex, 200, "text/plain", "timer", 5);
	uv_close((uv_handle_t *)t, (uv_close_cb)free);
}

static void timer_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	uv_timer_t *t = malloc(sizeof(*t));
	uv_timer_init(httpd_exchange_loop(ex), t);
	t->data = ex;
	uv_timer_start(t, timer_fired, 20, 0);
}

/* Answers from another thread through httpd_server_call(). */
typedef struct {
	httpd_exchange *ex;
	httpd_server *srv;
	unsigned int loop;
	pthread_t thread;
} worker;

static void worker_answer(void *ud)
{
	worker *w = ud;
	httpd_exchange_respond(w->ex, 200, "text/plain", "thread", 6);
}

static void *worker_main(void *ud)
{
	worker *w = ud;
	usleep(10000);
	if (httpd_server_call(w->srv, w->loop, worker_answer, w) != 0)
		atomic_fetch_add(&st.bad, 1);
	return NULL;
}

static void worker_close(httpd_exchange *ex, int reason, void *ud)
{
	worker *w = ud;
	pthread_join(w->thread, NULL);
	free(w);
	closed(ex, reason, NULL);
}

static void thread_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	worker *w = calloc(1, sizeof(*w));
	w->ex = ex;
	w->srv = httpd_exchange_server(ex);
	w->loop = httpd_exchange_loop_index(ex);
	httpd_exchange_on_close(ex, worker_close, w);
	pthread_create(&w->thread, NULL, worker_main, w);
}

/* Writes 64 KiB pieces until the client goes away. */
static void endless_done(httpd_exchange *ex, void *ud)
{
	static char piece[65536];
	atomic_fetch_add(&st.dones, 1);
	if (httpd_exchange_write(ex, piece, sizeof(piece), endless_done, NULL) != 0)
		atomic_fetch_add(&st.bad, 1);
}

static void endless_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	httpd_exchange_send_head(ex, -1);
	endless_done(ex, NULL);
}

/* Never answers (the shutdown or its timeout ends it). */
static void hang_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	const char *t = httpd_request_header(httpd_exchange_request(ex), "X-Timeout");
	httpd_exchange_set_timeout(ex, t ? atol(t) : 0);
	if (httpd_request_header(httpd_exchange_request(ex), "X-End-On-EOF"))
		httpd_exchange_end_on_client_eof(ex);
}

/* Sets a short timeout, then moves it (X-Retime ms, 0: none): the
 * connection's deadline is armed lazily, so the timer armed for the first
 * one fires early and must re-arm itself, or do nothing. */
static void retime_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	httpd_exchange_set_timeout(ex, 60);
	const char *t = httpd_request_header(httpd_exchange_request(ex), "X-Retime");
	httpd_exchange_set_timeout(ex, t ? atol(t) : 0);
}

/* Holds the exchange until the test thread posts held_answer. */
static httpd_exchange *held;           /* loop thread only */

static void held_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	held = ex;
}

static void held_answer(void *ud)
{
	if (!held || httpd_exchange_respond(held, 200, "text/plain", "held", 4) != 0)
		atomic_fetch_add(&st.bad, 1);
	held = NULL;
}

/* Answers at once without reading the body. */
static void early_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	char ip[64];
	int peer_port = 0;
	if (httpd_exchange_peer(ex, ip, sizeof(ip), &peer_port) != 0 || strcmp(ip, "127.0.0.1") != 0 ||
	    peer_port <= 0 || httpd_exchange_is_tls(ex))
		atomic_fetch_add(&st.bad, 1);
	char body[64];
	int n = snprintf(body, sizeof(body), "early cl=%lld",
	                 (long long)httpd_exchange_content_length(ex));
	httpd_exchange_respond(ex, 200, NULL, body, (size_t)n);
}

/* Echo tunnel: 101, then every byte back; the client's EOF ends it. */
static void tunnel_data(httpd_exchange *ex, const char *data, size_t len, void *ud)
{
	if (httpd_exchange_write(ex, data, len, NULL, NULL) != 0)
		atomic_fetch_add(&st.bad, 1);
}

static void tunnel_end(httpd_exchange *ex, void *ud)
{
	httpd_exchange_finish(ex);
}

static const httpd_body_reader tunnel_reader = { tunnel_data, tunnel_end, NULL };

static void tunnel_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	httpd_exchange_on_close(ex, closed, NULL);
	const char *proto = httpd_request_header(httpd_exchange_request(ex), "Upgrade");
	if (!httpd_exchange_wants_upgrade(ex) || !proto || strcmp(proto, "echo") != 0) {
		httpd_exchange_respond(ex, 400, NULL, "no upgrade", 10);
		return;
	}
	httpd_response_add_header(httpd_exchange_response(ex), "Upgrade", "echo");
	if (httpd_exchange_upgrade(ex, &tunnel_reader, NULL) != 0)
		atomic_fetch_add(&st.bad, 1);
}

static void which_loop(httpd_exchange *ex, void *ud)
{
	unsigned int i = httpd_exchange_loop_index(ex);
	if (i < 4)
		atomic_fetch_add(&st.loop_seen[i], 1);
	httpd_exchange_respond(ex, 200, NULL, "ok", 2);
}

/* --- fixtures -------------------------------------------------------------------- */

/* --- handlers: files by sendfile ------------------------------------------------------ */

#define FILE_BYTES (6u * 1024 * 1024)
#define FILE_SKIP 4097u                /* the first range starts here */
#define FILE_SECOND (300u * 1024)      /* the second range: the file's first bytes */
static char file_path[200];

static unsigned char file_byte(uint64_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

/* What /file sends: "head:", the file from FILE_SKIP, "-mid-", the file's
 * first FILE_SECOND bytes, ":tail". */
static unsigned char file_body_byte(uint64_t i)
{
	const uint64_t a = 5, b = a + FILE_BYTES - FILE_SKIP, c = b + 5, d = c + FILE_SECOND;
	if (i < a)
		return (unsigned char)"head:"[i];
	if (i < b)
		return file_byte(FILE_SKIP + i - a);
	if (i < c)
		return (unsigned char)"-mid-"[i - b];
	if (i < d)
		return file_byte(i - c);
	return (unsigned char)":tail"[i - d];
}
#define FILE_BODY_BYTES (5u + FILE_BYTES - FILE_SKIP + 5u + FILE_SECOND + 5u)

static void file_done(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.dones, 1);
}

static void file_close(httpd_exchange *ex, int reason, void *ud)
{
	close((int)(intptr_t)ud);
	closed(ex, reason, NULL);
}

static int file_open(httpd_exchange *ex, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		atomic_fetch_add(&st.bad, 1);
	else
		httpd_exchange_on_close(ex, file_close, (void *)(intptr_t)fd);
	return fd;
}

static void file_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	int fd = file_open(ex, file_path);
	if (fd < 0) {
		httpd_exchange_abort(ex);
		return;
	}
	if (httpd_exchange_can_write_file(ex) ||
	    httpd_exchange_write_file(ex, fd, 0, 1, NULL, NULL) != ASB_EINVAL)
		atomic_fetch_add(&st.bad, 1);  /* no head yet */
	httpd_exchange_send_head(ex, FILE_BODY_BYTES);
	if (!httpd_exchange_can_write_file(ex)) {
		/* TLS: the caller must copy */
		if (httpd_exchange_write_file(ex, fd, 0, 1, NULL, NULL) != ASB_EINVAL)
			atomic_fetch_add(&st.bad, 1);
		httpd_exchange_abort(ex);
		return;
	}
	if (httpd_exchange_write(ex, "head:", 5, NULL, NULL) != 0 ||
	    httpd_exchange_write_file(ex, fd, FILE_SKIP, FILE_BYTES - FILE_SKIP, file_done, NULL) != 0 ||
	    httpd_exchange_write(ex, "-mid-", 5, NULL, NULL) != 0 ||
	    httpd_exchange_write_file(ex, -1, 0, 1, NULL, NULL) != ASB_EINVAL ||
	    httpd_exchange_write_file(ex, fd, 0, 0, NULL, NULL) != ASB_EINVAL ||
	    httpd_exchange_write_file(ex, fd, 0, FILE_BODY_BYTES, NULL, NULL) != ASB_EINVAL ||  /* past it */
	    httpd_exchange_write_file(ex, fd, 0, FILE_SECOND, file_done, NULL) != 0 ||
	    httpd_exchange_write(ex, ":tail", 5, NULL, NULL) != 0 ||
	    httpd_exchange_finish(ex) != 0)
		atomic_fetch_add(&st.bad, 1);
}

/* Promises more bytes than the file has. */
static void file_short_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	int fd = file_open(ex, file_path);
	if (fd < 0) {
		httpd_exchange_abort(ex);
		return;
	}
	httpd_exchange_send_head(ex, FILE_BYTES + 100);
	if (httpd_exchange_write_file(ex, fd, 0, FILE_BYTES + 100, file_done, NULL) != 0 ||
	    httpd_exchange_finish(ex) != 0)
		atomic_fetch_add(&st.bad, 1);
}

/* A file sendfile(2) refuses (procfs): copied through the buffer. */
static void file_proc_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	int fd = file_open(ex, "/proc/self/auxv");
	if (fd < 0) {
		httpd_exchange_abort(ex);
		return;
	}
	char buf[8192];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		atomic_fetch_add(&st.bad, 1);
		httpd_exchange_abort(ex);
		return;
	}
	httpd_exchange_send_head(ex, n);
	if (httpd_exchange_write_file(ex, fd, 0, (size_t)n, file_done, NULL) != 0 ||
	    httpd_exchange_finish(ex) != 0)
		atomic_fetch_add(&st.bad, 1);
}

/* Like a download pump: each range's done callback queues the next range
 * (bare: two in flight, as sandboxd does) or a 64 KiB write and the next
 * range (blocks: the write must go out before the range), and the one
 * that queues the last range finishes at once (inside a file's
 * completion, ranges still queued, on a connection that closes after the
 * answer). */
#define CHAIN_N 20
#define CHAIN_BLOCK (64u * 1024)
#define CHAIN_RANGE (256u * 1024)
#define CHAIN_BODY_BYTES ((uint64_t)CHAIN_N * (CHAIN_BLOCK + CHAIN_RANGE))
#define CHAIN_BARE_BYTES ((uint64_t)CHAIN_N * CHAIN_RANGE)

typedef struct {
	int fd;
	int next;
	bool blocks;    /* false (/file-chain-bare): ranges only, as sandboxd's downloads */
} chain;

static unsigned char chain_block_byte(uint64_t seg, uint64_t j)
{
	return (unsigned char)(0xa5 ^ seg ^ (j >> 8));
}

static unsigned char chain_body_byte(uint64_t i, bool blocks)
{
	if (!blocks)
		return file_byte(i);
	uint64_t seg = i / (CHAIN_BLOCK + CHAIN_RANGE), in = i % (CHAIN_BLOCK + CHAIN_RANGE);
	return in < CHAIN_BLOCK ? chain_block_byte(seg, in)
	                        : file_byte(seg * CHAIN_RANGE + in - CHAIN_BLOCK);
}

static void chain_close(httpd_exchange *ex, int reason, void *ud)
{
	chain *ch = ud;
	close(ch->fd);
	free(ch);
	closed(ex, reason, NULL);
}

static void chain_queue(httpd_exchange *ex, chain *ch);

static void chain_done(httpd_exchange *ex, void *ud)
{
	chain *ch = ud;
	atomic_fetch_add(&st.dones, 1);
	if (ch->next < CHAIN_N)
		chain_queue(ex, ch);
}

static void chain_queue(httpd_exchange *ex, chain *ch)
{
	static unsigned char block[CHAIN_BLOCK];
	int i = ch->next++;
	for (uint64_t j = 0; j < CHAIN_BLOCK; j++)
		block[j] = chain_block_byte((uint64_t)i, j);
	if ((ch->blocks && httpd_exchange_write(ex, block, CHAIN_BLOCK, NULL, NULL) != 0) ||
	    httpd_exchange_write_file(ex, ch->fd, (uint64_t)i * CHAIN_RANGE, CHAIN_RANGE, chain_done,
	                              ch) != 0)
		atomic_fetch_add(&st.bad, 1);
	if (ch->next == CHAIN_N && httpd_exchange_finish(ex) != 0)
		atomic_fetch_add(&st.bad, 1);
}

static void file_chain_handler(httpd_exchange *ex, void *ud)
{
	atomic_fetch_add(&st.calls, 1);
	chain *ch = calloc(1, sizeof(*ch));
	ch->fd = open(file_path, O_RDONLY | O_CLOEXEC);
	if (ch->fd < 0) {
		atomic_fetch_add(&st.bad, 1);
		free(ch);
		httpd_exchange_abort(ex);
		return;
	}
	ch->blocks = ud == NULL;
	httpd_exchange_on_close(ex, chain_close, ch);
	httpd_exchange_send_head(ex, (int64_t)(ch->blocks ? CHAIN_BODY_BYTES : CHAIN_BARE_BYTES));
	chain_queue(ex, ch);
	if (!ch->blocks)
		chain_queue(ex, ch);  /* two ranges in flight; with blocks, one pair */
}

static char dir[] = "/tmp/k8s-exchange-test-XXXXXX";
static char cert_path[160], key_path[160], ca_path[160];
static k8s_cert_bundle bundle;
static bool have_bundle;

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void new_bundle(k8s_cert_bundle *b)
{
	static const char *const ips[] = { "127.0.0.1", NULL };
	k8s_cert_options o = K8S_CERT_OPTIONS_INIT;
	o.ca_common_name = "test-ca";
	o.common_name = "localhost";
	o.ip_addresses = ips;
	o.not_before_ms = k8s_now_ms() - 3600000;
	o.not_after_ms = k8s_now_ms() + 86400000;
	ck_assert_int_eq(k8s_cert_bundle_generate(b, &o), 0);
}

static void start_server(unsigned int loops, bool tls, bool mtls)
{
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = "127.0.0.1:0";
	o.name = "stream-test";
	o.max_body_bytes = 1024 * 1024;
	o.max_header_bytes = 4096;
	o.loops = loops;
	if (tls) {
		new_bundle(&bundle);
		have_bundle = true;
		write_file(cert_path, bundle.cert);
		write_file(key_path, bundle.key);
		write_file(ca_path, bundle.ca_cert);
		o.tls_cert_file = cert_path;
		o.tls_key_file = key_path;
		if (mtls)
			o.tls_client_ca_file = ca_path;
	}
	ck_assert_int_eq(httpd_server_new(&srv, &o), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "POST", "/upload", upload_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/chunked", chunked_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/length", length_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/timer", timer_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/thread", thread_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/endless", endless_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/hang", hang_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/retime", retime_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/held", held_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, NULL, "/early/*", early_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/tunnel", tunnel_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/which", which_loop, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/file", file_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/file-short", file_short_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/file-proc", file_proc_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/file-chain", file_chain_handler, NULL), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/file-chain-bare", file_chain_handler,
	                                           (void *)1), 0);
	ck_assert_int_eq(httpd_server_route_stream(srv, "GET", "/x", NULL, NULL), ASB_EINVAL);
	ck_assert_int_eq(httpd_server_call(srv, 0, (void (*)(void *))free, NULL), ASB_EINVAL);
	ck_assert_int_eq(httpd_server_start(srv), 0);
	ck_assert_int_eq(httpd_server_loops(srv), loops > 1 ? loops : 1);
	port = httpd_server_port(srv);
}

static void setup(void)
{
	memset(&st, 0, sizeof(st));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
	snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
	snprintf(ca_path, sizeof(ca_path), "%s/ca.crt", dir);
	snprintf(file_path, sizeof(file_path), "%s/data.bin", dir);
}

static void teardown(void)
{
	httpd_server_free(srv);
	srv = NULL;
	if (have_bundle)
		k8s_cert_bundle_dispose(&bundle);
	have_bundle = false;
	char path[200];
	const char *files[] = { "tls.crt", "tls.key", "ca.crt", "client.crt", "client.key",
	                        "data.bin", NULL };
	for (int i = 0; files[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	strcpy(dir, "/tmp/k8s-exchange-test-XXXXXX");
}

/* --- clients --------------------------------------------------------------------- */

#include "curlreply.h"

static CURL *client(const char *path, reply *r)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	memset(r, 0, sizeof(*r));
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS * 3);
	return h;
}

static void get(const char *path, reply *r)
{
	CURL *h = client(path, r);
	CURLcode rc = curl_easy_perform(h);
	ck_assert_msg(rc == CURLE_OK, "curl %s: %s", path, curl_easy_strerror(rc));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(h);
}

static int connect_raw(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void send_str(int fd, const char *s)
{
	size_t len = strlen(s);
	while (len > 0) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
		ck_assert_int_gt(n, 0);
		s += n;
		len -= (size_t)n;
	}
}

/* Reads until `want` appears (true) or EOF/timeout (false); buf gets what came. */
static bool read_until(int fd, char *buf, size_t cap, const char *want)
{
	size_t len = 0;
	buf[0] = '\0';
	while (!strstr(buf, want)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (len + 1 >= cap || poll(&p, 1, WAIT_MS) != 1)
			return false;
		ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
	}
	return true;
}

static bool eof_within(int fd)
{
	char c;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, WAIT_MS) != 1)
		return false;
	ssize_t n = recv(fd, &c, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* --- tests: body streaming ------------------------------------------------------------- */

typedef struct {
	uint64_t sent;
} source;

static size_t upload_source(char *buf, size_t size, size_t n, void *ud)
{
	source *s = ud;
	size_t len = size * n;
	if (len > UPLOAD_BYTES - s->sent)
		len = UPLOAD_BYTES - s->sent;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((s->sent + i) % 251);
	s->sent += len;
	return len;
}

static void upload_with_curl(bool chunked)
{
	reply r;
	source src = { 0 };
	CURL *h = client("/upload", &r);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, upload_source);
	curl_easy_setopt(h, CURLOPT_READDATA, &src);
	struct curl_slist *hd = curl_slist_append(NULL, "Expect:");
	hd = curl_slist_append(hd, "X-Unlimited: 1");
	if (chunked)
		hd = curl_slist_append(hd, "Transfer-Encoding: chunked");
	else
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)UPLOAD_BYTES);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(h);
	curl_slist_free_all(hd);
	ck_assert_msg(rc == CURLE_OK, "curl: %s", curl_easy_strerror(rc));
	ck_assert_int_eq(r.status, 200);
	char want[64];
	snprintf(want, sizeof(want), "received=%u ok=1", UPLOAD_BYTES);
	ck_assert_str_eq(r.body, want);
}

START_TEST(large_upload_is_streamed_with_backpressure)
{
	start_server(1, false, false);
	upload_with_curl(false);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	ck_assert_int_eq(atomic_load(&st.received), (long)UPLOAD_BYTES);
	/* the handler paused many times and never held more than its limit plus one read */
	ck_assert_int_gt(atomic_load(&st.pauses), 10);
	ck_assert_int_le(atomic_load(&st.max_queued), (long)(QUEUE_LIMIT + 65536));
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(upload_over_the_limit_gets_413)
{
	start_server(1, false, false);
	/* declared: refused at read_start, before a byte is read */
	int fd = connect_raw();
	send_str(fd, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n");
	char buf[4096];
	ck_assert(read_until(fd, buf, sizeof(buf), "\r\n\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 413 "));
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETOOLARGE);
	ck_assert_int_eq(atomic_load(&st.last_error), ASB_ETOOLARGE);
	/* chunked: found while reading; the reader gets on_error */
	atomic_store(&st.errors, 0);
	fd = connect_raw();
	send_str(fd, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
	static char chunk[70000];
	snprintf(chunk, sizeof(chunk), "%x\r\n", 65536);
	size_t hl = strlen(chunk);
	memset(chunk + hl, 'a', 65536);
	memcpy(chunk + hl + 65536, "\r\n", 3);
	for (int i = 0; i < 17; i++) {  /* 17 x 64 KiB > 1 MiB */
		if (send(fd, chunk, hl + 65538, MSG_NOSIGNAL) < 0)
			break;
	}
	ck_assert(read_until(fd, buf, sizeof(buf), "\r\n\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 413 "));
	close(fd);
	ck_assert(wait_for(&st.closes, 2));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETOOLARGE);
	ck_assert(wait_for(&st.errors, 1));
	ck_assert_int_eq(atomic_load(&st.last_error), ASB_ETOOLARGE);
	/* header limit on a stream route: 431, no handler */
	fd = connect_raw();
	static char big[6000];
	memset(big, 'h', sizeof(big) - 1);
	send_str(fd, "GET /early/x HTTP/1.1\r\nX-Big: ");
	send_str(fd, big);
	send_str(fd, "\r\n\r\n");
	ck_assert(read_until(fd, buf, sizeof(buf), "\r\n\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 431 "));
	close(fd);
	ck_assert_int_eq(atomic_load(&st.calls), 2);
}
END_TEST

START_TEST(client_gone_mid_body_closes_once)
{
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 500000\r\n\r\n");
	static char part[1000];
	memset(part, 'z', sizeof(part));
	ck_assert_int_eq(send(fd, part, sizeof(part), MSG_NOSIGNAL), (ssize_t)sizeof(part));
	for (int i = 0; i < WAIT_MS / 5 && atomic_load(&st.received) < 1000; i++)
		usleep(5000);
	ck_assert_int_eq(atomic_load(&st.received), 1000);
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
	ck_assert_int_eq(atomic_load(&st.errors), 1);
	ck_assert_int_eq(atomic_load(&st.last_error), ASB_ETRANSPORT);
	usleep(50000);
	ck_assert_int_eq(atomic_load(&st.closes), 1);  /* once */
}
END_TEST

START_TEST(early_answer_drops_the_body_and_serves_the_next_request)
{
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "POST /early/a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"
	             "GET /early/b HTTP/1.1\r\nHost: x\r\n\r\n");
	char buf[4096];
	ck_assert(read_until(fd, buf, sizeof(buf), "early cl=0"));  /* both answers, in order */
	ck_assert_ptr_nonnull(strstr(buf, "early cl=10"));
	ck_assert(strstr(buf, "early cl=10") < strstr(buf, "early cl=0"));
	ck_assert_ptr_null(strstr(buf, "Content-Type"));  /* none was set */
	close(fd);
	ck_assert(wait_for(&st.closes, 2));
	ck_assert_int_eq(atomic_load(&st.calls), 2);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

/* --- tests: responses --------------------------------------------------------------- */

START_TEST(chunked_response_read_by_curl)
{
	start_server(1, false, false);
	reply r;
	get("/chunked", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.headers, "Transfer-Encoding: chunked\r\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "line 0\nline 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "line 98\nline 99\n"));
	ck_assert_int_eq(r.len, 10 * 7 + 90 * 8);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	ck_assert_int_eq(atomic_load(&st.dones), 100);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
	/* HTTP/1.0 gets the body delimited by the connection's end */
	int fd = connect_raw();
	send_str(fd, "GET /chunked HTTP/1.0\r\n\r\n");
	static char buf[16384];
	ck_assert(read_until(fd, buf, sizeof(buf), "line 99\n"));
	ck_assert_ptr_null(strstr(buf, "Transfer-Encoding"));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	ck_assert(eof_within(fd));
	close(fd);
}
END_TEST

START_TEST(content_length_response_and_head)
{
	start_server(1, false, false);
	reply r;
	get("/length", &r);
	ck_assert_int_eq(r.status, 203);
	ck_assert_str_eq(r.body, "hello world");
	ck_assert_ptr_nonnull(strstr(r.headers, "Content-Length: 11\r\n"));
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	/* HEAD: the GET handler's head, no body */
	CURL *h = client("/length", &r);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_cleanup(h);
	ck_assert_ptr_nonnull(strstr(r.headers, "Content-Length: 11\r\n"));
	ck_assert_int_eq(r.len, 0);
	ck_assert(wait_for(&st.closes, 2));
	ck_assert_int_eq(atomic_load(&st.bad), 0);
	/* 405 and 404 around stream routes, as for buffered ones */
	h = client("/length", &r);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
	curl_easy_cleanup(h);
	ck_assert_int_eq(r.status, 405);
	get("/nothing", &r);
	ck_assert_int_eq(r.status, 404);
}
END_TEST

START_TEST(async_answers_from_a_timer_and_another_thread)
{
	start_server(1, false, false);
	reply r;
	get("/timer", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "timer");
	get("/thread", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "thread");
	ck_assert(wait_for(&st.closes, 2));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(client_gone_mid_response_closes_once)
{
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "GET /endless HTTP/1.1\r\nHost: x\r\n\r\n");
	static char buf[200000];
	ck_assert(read_until(fd, buf, sizeof(buf), "\r\n\r\n"));
	ck_assert(wait_for(&st.dones, 3));
	close(fd);  /* unread bytes: the kernel resets the connection */
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
	usleep(50000);
	ck_assert_int_eq(atomic_load(&st.closes), 1);
}
END_TEST

START_TEST(exchange_timeout_cuts_it)
{
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "GET /hang HTTP/1.1\r\nHost: x\r\nX-Timeout: 50\r\n\r\n");
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETIMEOUT);
}
END_TEST

/* True when nothing arrives and the connection stays open for `ms`. */
static bool quiet_for(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 0;
}

START_TEST(exchange_timeout_moved_later_or_off)
{
	start_server(1, false, false);
	/* 60 ms, then 600: still open well past 60, cut after 600 */
	int fd = connect_raw();
	send_str(fd, "GET /retime HTTP/1.1\r\nHost: x\r\nX-Retime: 600\r\n\r\n");
	ck_assert(quiet_for(fd, 300));
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETIMEOUT);
	/* 60 ms, then none: never cut by the server */
	fd = connect_raw();
	send_str(fd, "GET /retime HTTP/1.1\r\nHost: x\r\nX-Retime: 0\r\n\r\n");
	ck_assert(quiet_for(fd, 500));
	ck_assert_int_eq(atomic_load(&st.closes), 1);
	close(fd);  /* the server's shutdown ends the exchange */
}
END_TEST

START_TEST(client_eof_ends_an_exchange_that_asks)
{
	start_server(1, false, false);
	/* by default a client that half-closes still gets its answer */
	int fd = connect_raw();
	send_str(fd, "GET /timer HTTP/1.1\r\nHost: x\r\n\r\n");
	shutdown(fd, SHUT_WR);
	char buf[4096];
	ck_assert(read_until(fd, buf, sizeof(buf), "timer"));
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	/* a handler that asked: its exchange ends at the client's EOF, later */
	fd = connect_raw();
	send_str(fd, "GET /hang HTTP/1.1\r\nHost: x\r\nX-End-On-EOF: 1\r\n\r\n");
	ck_assert(wait_for(&st.calls, 2));
	usleep(20000);
	ck_assert_int_eq(atomic_load(&st.closes), 1);  /* nothing ends it before */
	shutdown(fd, SHUT_WR);
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 2));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
	/* ... or one that came with the request */
	fd = connect_raw();
	send_str(fd, "GET /hang HTTP/1.1\r\nHost: x\r\nX-End-On-EOF: 1\r\n\r\n");
	shutdown(fd, SHUT_WR);
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 3));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
}
END_TEST

/* --- tests: upgrade tunnels ------------------------------------------------------------ */

START_TEST(upgrade_echo_tunnel)
{
	start_server(1, false, false);
	int fd = connect_raw();
	/* bytes right behind the head belong to the tunnel */
	send_str(fd, "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly;");
	char buf[4096];
	ck_assert(read_until(fd, buf, sizeof(buf), "early;"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 101 Switching Protocols\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: Upgrade\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Upgrade: echo\r\n"));
	ck_assert_ptr_null(strstr(buf, "Content-Length"));
	send_str(fd, "GET / HTTP/1.1\r\n\r\n");  /* not HTTP any more: echoed */
	ck_assert(read_until(fd, buf, sizeof(buf), "GET / HTTP/1.1\r\n\r\n"));
	shutdown(fd, SHUT_WR);
	ck_assert(eof_within(fd));
	close(fd);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	/* no upgrade asked: the handler answers 400 */
	reply r;
	get("/tunnel", &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

static CURLcode tls_send_all(CURL *h, const char *s, size_t len)
{
	while (len > 0) {
		size_t n = 0;
		CURLcode rc = curl_easy_send(h, s, len, &n);
		if (rc == CURLE_AGAIN) {
			usleep(1000);
			continue;
		}
		if (rc != CURLE_OK)
			return rc;
		s += n;
		len -= n;
	}
	return CURLE_OK;
}

/* Reads until `want` is in buf; true when found. */
static bool tls_read_until(CURL *h, char *buf, size_t cap, const char *want)
{
	size_t len = 0;
	buf[0] = '\0';
	curl_socket_t sock;
	curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock);
	while (!strstr(buf, want)) {
		size_t n = 0;
		CURLcode rc = curl_easy_recv(h, buf + len, cap - len - 1, &n);
		if (rc == CURLE_AGAIN) {
			struct pollfd p = { .fd = sock, .events = POLLIN };
			if (poll(&p, 1, WAIT_MS) != 1)
				return false;
			continue;
		}
		if (rc != CURLE_OK || n == 0)
			return false;
		len += n;
		buf[len] = '\0';
	}
	return true;
}

START_TEST(upgrade_echo_tunnel_over_tls)
{
	start_server(1, true, false);
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", port);
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca_path);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);  /* TLS handshake done */
	const char *req = "GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";
	ck_assert_int_eq(tls_send_all(h, req, strlen(req)), CURLE_OK);
	char buf[4096];
	ck_assert(tls_read_until(h, buf, sizeof(buf), "\r\n\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 101 "));
	ck_assert_int_eq(tls_send_all(h, "secret bytes", 12), CURLE_OK);
	ck_assert(tls_read_until(h, buf, sizeof(buf), "secret bytes"));
	curl_easy_cleanup(h);  /* close_notify: the tunnel's end */
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

/* --- tests: loops, mTLS, smuggling, shutdown ------------------------------------------- */

START_TEST(two_loops_serve_concurrent_clients)
{
	start_server(2, false, false);
	enum { N = 32 };
	CURLM *m = curl_multi_init();
	CURL *hs[N];
	static reply rs[N];
	for (int i = 0; i < N; i++) {
		hs[i] = client("/which", &rs[i]);
		curl_easy_setopt(hs[i], CURLOPT_FRESH_CONNECT, 1L);
		curl_easy_setopt(hs[i], CURLOPT_FORBID_REUSE, 1L);
		curl_multi_add_handle(m, hs[i]);
	}
	int running = 1;
	while (running) {
		curl_multi_perform(m, &running);
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (int i = 0; i < N; i++) {
		curl_easy_getinfo(hs[i], CURLINFO_RESPONSE_CODE, &rs[i].status);
		ck_assert_int_eq(rs[i].status, 200);
		curl_multi_remove_handle(m, hs[i]);
		curl_easy_cleanup(hs[i]);
	}
	curl_multi_cleanup(m);
	/* the kernel spread the connections over both listeners (2^-31 odds otherwise) */
	ck_assert_int_gt(atomic_load(&st.loop_seen[0]), 0);
	ck_assert_int_gt(atomic_load(&st.loop_seen[1]), 0);
	ck_assert_int_eq(atomic_load(&st.loop_seen[0]) + atomic_load(&st.loop_seen[1]), N);
	ck_assert_int_eq(httpd_server_call(srv, 2, (void (*)(void *))free, NULL), ASB_EINVAL);
}
END_TEST

/* A client certificate signed by `ca_key` (EC, P-256), subject CN=client. */
static void make_client_cert(const char *ca_cert_pem, const char *ca_key_pem, const char *crt_path,
                             const char *key_path_out)
{
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context key, ca_key;
	mbedtls_x509_crt ca;
	mbedtls_x509write_cert w;
	mbedtls_mpi serial;
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&key);
	mbedtls_pk_init(&ca_key);
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509write_crt_init(&w);
	mbedtls_mpi_init(&serial);
	ck_assert_int_eq(mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, NULL, 0), 0);
	ck_assert_int_eq(mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)), 0);
	ck_assert_int_eq(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key),
	                                     mbedtls_ctr_drbg_random, &drbg), 0);
	ck_assert_int_eq(mbedtls_pk_parse_key(&ca_key, (const unsigned char *)ca_key_pem,
	                                      strlen(ca_key_pem) + 1, NULL, 0), 0);
	ck_assert_int_eq(mbedtls_x509_crt_parse(&ca, (const unsigned char *)ca_cert_pem,
	                                        strlen(ca_cert_pem) + 1), 0);
	char issuer[256];
	ck_assert_int_gt(mbedtls_x509_dn_gets(issuer, sizeof(issuer), &ca.subject), 0);
	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, &key);
	mbedtls_x509write_crt_set_issuer_key(&w, &ca_key);
	ck_assert_int_eq(mbedtls_x509write_crt_set_subject_name(&w, "CN=client"), 0);
	ck_assert_int_eq(mbedtls_x509write_crt_set_issuer_name(&w, issuer), 0);
	mbedtls_mpi_lset(&serial, 7);
	ck_assert_int_eq(mbedtls_x509write_crt_set_serial(&w, &serial), 0);
	ck_assert_int_eq(mbedtls_x509write_crt_set_validity(&w, "20200101000000", "20400101000000"), 0);
	ck_assert_int_eq(mbedtls_x509write_crt_set_basic_constraints(&w, 0, -1), 0);
	static unsigned char pem[4096];
	ck_assert_int_eq(mbedtls_x509write_crt_pem(&w, pem, sizeof(pem), mbedtls_ctr_drbg_random, &drbg), 0);
	write_file(crt_path, (const char *)pem);
	ck_assert_int_eq(mbedtls_pk_write_key_pem(&key, pem, sizeof(pem)), 0);
	write_file(key_path_out, (const char *)pem);
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&w);
	mbedtls_x509_crt_free(&ca);
	mbedtls_pk_free(&ca_key);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
}

static CURLcode mtls_get(const char *cert, const char *key, reply *r)
{
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/early/m", port);
	memset(r, 0, sizeof(*r));
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca_path);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	if (cert) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, key);
	}
	CURLcode rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(h);
	return rc;
}

START_TEST(mtls_requires_a_client_certificate_from_the_ca)
{
	start_server(1, true, true);
	char crt[200], key[200];
	snprintf(crt, sizeof(crt), "%s/client.crt", dir);
	snprintf(key, sizeof(key), "%s/client.key", dir);
	reply r;
	/* none: refused in the handshake */
	ck_assert_int_ne(mtls_get(NULL, NULL, &r), CURLE_OK);
	/* from another CA: refused */
	k8s_cert_bundle other;
	new_bundle(&other);
	make_client_cert(other.ca_cert, other.ca_key, crt, key);
	k8s_cert_bundle_dispose(&other);
	ck_assert_int_ne(mtls_get(crt, key, &r), CURLE_OK);
	/* from the CA: served */
	make_client_cert(bundle.ca_cert, bundle.ca_key, crt, key);
	ck_assert_int_eq(mtls_get(crt, key, &r), CURLE_OK);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "early cl=0");
	ck_assert_int_eq(atomic_load(&st.calls), 1);
	/* a client CA without TLS is refused */
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = "127.0.0.1:0";
	o.tls_client_ca_file = ca_path;
	httpd_server *s = NULL;
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_EINVAL);
}
END_TEST

START_TEST(ambiguous_framing_is_refused)
{
	start_server(1, false, false);
	const char *bad[] = {
		"POST /early/s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
		"0\r\n\r\n",
		"POST /early/s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
		"0\r\n\r\n",
		"POST /early/s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nabcde",
		"POST /early/s HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef",
		NULL,
	};
	for (int i = 0; bad[i]; i++) {
		int fd = connect_raw();
		send_str(fd, bad[i]);
		char buf[4096];
		ck_assert_msg(read_until(fd, buf, sizeof(buf), "\r\n\r\n"), "case %d: no answer", i);
		ck_assert_msg(strstr(buf, "HTTP/1.1 400 ") != NULL, "case %d: %s", i, buf);
		ck_assert(eof_within(fd));
		close(fd);
	}
	ck_assert_int_eq(atomic_load(&st.calls), 0);  /* no handler saw them */
}
END_TEST

/* --- tests: files by sendfile -------------------------------------------------------- */

static void make_data_file(void)
{
	FILE *f = fopen(file_path, "wb");
	ck_assert_ptr_nonnull(f);
	for (uint64_t i = 0; i < FILE_BYTES; i++)
		fputc(file_byte(i), f);
	ck_assert_int_eq(fclose(f), 0);
}

typedef struct {
	uint64_t got, bad_at;
	bool bad;
} body_check;

static size_t check_body(char *p, size_t size, size_t n, void *ud)
{
	body_check *b = ud;
	for (size_t i = 0; i < size * n; i++, b->got++)
		if (!b->bad && (b->got >= FILE_BODY_BYTES || (unsigned char)p[i] != file_body_byte(b->got))) {
			b->bad = true;
			b->bad_at = b->got;
		}
	return size * n;
}

START_TEST(file_ranges_between_writes_keep_their_order_on_a_kept_alive_connection)
{
	make_data_file();
	start_server(1, false, false);
	char url[96];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/file", port);
	CURL *h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, check_body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS * 3);
	for (int round = 0; round < 2; round++) {
		body_check b = { 0 };
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
		long status = 0, connects = -1;
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
		ck_assert_int_eq(status, 200);
		ck_assert_msg(!b.bad, "body differs at byte %llu", (unsigned long long)b.bad_at);
		ck_assert_uint_eq(b.got, FILE_BODY_BYTES);
		ck_assert_int_eq(connects, round == 0 ? 1 : 0);  /* the second one reused it */
		ck_assert(wait_for(&st.closes, round + 1));
		ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	}
	ck_assert_int_eq(atomic_load(&st.dones), 4);
	/* HEAD: no body, done callbacks still run */
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
	curl_easy_cleanup(h);
	ck_assert(wait_for(&st.closes, 3));
	ck_assert(wait_for(&st.dones, 6));
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(file_to_a_slow_reader_waits_for_the_socket)
{
	make_data_file();
	start_server(1, false, false);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int small = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	send_str(fd, "GET /file HTTP/1.1\r\nHost: x\r\n\r\n");
	/* the head, then reads in small steps with pauses: the socket fills up */
	static char buf[1 << 16];
	size_t have = 0, head_end = 0;
	while (!head_end) {
		ssize_t n = recv(fd, buf + have, 512, 0);
		ck_assert_int_gt(n, 0);
		have += (size_t)n;
		for (size_t i = 3; i < have; i++)
			if (memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
				head_end = i + 1;
				break;
			}
	}
	ck_assert_ptr_nonnull(strstr(buf, "Content-Length: "));
	body_check b = { 0 };
	check_body(buf + head_end, 1, have - head_end, &b);
	for (int i = 0; i < 20; i++) {
		usleep(10000);
		ssize_t n = recv(fd, buf, 2048, 0);
		ck_assert_int_gt(n, 0);
		check_body(buf, 1, (size_t)n, &b);
	}
	while (b.got < FILE_BODY_BYTES) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		ck_assert_int_gt(n, 0);
		check_body(buf, 1, (size_t)n, &b);
	}
	ck_assert_msg(!b.bad, "body differs at byte %llu", (unsigned long long)b.bad_at);
	ck_assert_uint_eq(b.got, FILE_BODY_BYTES);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	/* the connection goes on */
	send_str(fd, "GET /length HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert(read_until(fd, buf, sizeof(buf), "hello world"));
	close(fd);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

/* A slow reader of a closing connection: the ranges chained from done
 * callbacks, with writes between them, arrive whole and in order, then EOF. */
static void chain_read(const char *request, bool slow, bool blocks)
{
	const uint64_t want = blocks ? CHAIN_BODY_BYTES : CHAIN_BARE_BYTES;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int small = 4096;
	if (slow)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	send_str(fd, request);
	static char buf[32768 + 1];
	char head[4096];
	size_t hlen = 0;
	uint64_t got = 0, bad_at = 0;
	bool bad = false, in_body = false;
	for (int reads = 0;; reads++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, WAIT_MS), 1);
		ssize_t n = recv(fd, buf, 32768, 0);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		size_t at = 0;
		while (!in_body && at < (size_t)n) {
			ck_assert_uint_lt(hlen, sizeof(head) - 1);
			head[hlen++] = buf[at++];
			head[hlen] = '\0';
			in_body = hlen >= 4 && memcmp(head + hlen - 4, "\r\n\r\n", 4) == 0;
		}
		for (; at < (size_t)n; at++, got++)
			if (!bad && (got >= want || (unsigned char)buf[at] != chain_body_byte(got, blocks))) {
				bad = true;
				bad_at = got;
			}
		if (slow && reads % 4 == 0)
			usleep(500);
	}
	close(fd);
	ck_assert_ptr_nonnull(strstr(head, "Connection: close\r\n"));
	ck_assert_msg(!bad, "body differs at byte %llu", (unsigned long long)bad_at);
	ck_assert_uint_eq(got, want);
}

START_TEST(file_ranges_chained_from_done_callbacks_on_a_closing_connection)
{
	make_data_file();
	start_server(1, false, false);
	for (int i = 0; i < 12; i++) {
		bool blocks = i < 6;
		char req[128];
		snprintf(req, sizeof(req), i % 2 ? "GET /file-chain%s HTTP/1.0\r\n\r\n"
		         : "GET /file-chain%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		         blocks ? "" : "-bare");
		chain_read(req, i % 6 >= 2, blocks);
		ck_assert(wait_for(&st.closes, i + 1));
		ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	}
	ck_assert_int_eq(atomic_load(&st.dones), 12 * CHAIN_N);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(client_gone_mid_file_closes_once)
{
	make_data_file();
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "GET /file HTTP/1.1\r\nHost: x\r\n\r\n");
	static char buf[8192];
	ck_assert(read_until(fd, buf, sizeof(buf), "\r\n\r\n"));
	close(fd);  /* unread bytes: the kernel resets the connection */
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
	usleep(50000);
	ck_assert_int_eq(atomic_load(&st.closes), 1);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(file_shorter_than_promised_cuts_the_connection)
{
	make_data_file();
	start_server(1, false, false);
	char url[96];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/file-short", port);
	CURL *h = curl_easy_init();
	body_check b = { 0 };
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, check_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_cleanup(h);
	ck_assert_int_eq(rc, CURLE_PARTIAL_FILE);
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ETRANSPORT);
	ck_assert_int_eq(atomic_load(&st.dones), 0);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(file_sendfile_refuses_is_copied)
{
	start_server(1, false, false);
	reply r;
	get("/file-proc", &r);
	ck_assert_int_eq(r.status, 200);
	char want[8192];
	int fd = open("/proc/self/auxv", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, want, sizeof(want));
	close(fd);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(r.len, (size_t)n);
	ck_assert(memcmp(r.body, want, (size_t)n) == 0);
	ck_assert(wait_for(&st.dones, 1));
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(file_over_tls_is_refused_for_a_copy)
{
	make_data_file();
	start_server(1, true, false);
	char url[96];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/file", port);
	CURL *h = curl_easy_init();
	body_check b = { 0 };
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca_path);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, check_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_cleanup(h);
	ck_assert_int_ne(rc, CURLE_OK);  /* the handler aborted */
	ck_assert(wait_for(&st.closes, 1));
	ck_assert_int_eq(atomic_load(&st.calls), 1);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

START_TEST(shutdown_cuts_open_exchanges_and_runs_on_close)
{
	start_server(2, false, false);
	int fds[2];
	for (int i = 0; i < 2; i++) {
		fds[i] = connect_raw();
		send_str(fds[i], "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
	}
	ck_assert(wait_for(&st.calls, 2));
	ck_assert_int_eq(httpd_server_shutdown(srv, 100), ASB_ETIMEOUT);
	/* both on_close ran before shutdown returned */
	ck_assert_int_eq(atomic_load(&st.closes), 2);
	ck_assert_int_eq(atomic_load(&st.last_reason), ASB_ESHUTDOWN);
	for (int i = 0; i < 2; i++) {
		ck_assert(eof_within(fds[i]));
		close(fds[i]);
	}
	ck_assert_int_eq(httpd_server_call(srv, 0, (void (*)(void *))free, NULL), ASB_ESHUTDOWN);
}
END_TEST

static atomic_int shutdown_rc = 1;

static void *shutdown_main(void *ud)
{
	atomic_store(&shutdown_rc, httpd_server_shutdown(ud, 5000));
	return NULL;
}

START_TEST(shutdown_lets_a_finishing_exchange_finish)
{
	start_server(1, false, false);
	int fd = connect_raw();
	send_str(fd, "GET /held HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert(wait_for(&st.calls, 1));
	/* a shutdown with a 5 s deadline; once the listener is closed (the
	 * drain began), the held exchange answers */
	pthread_t t;
	pthread_create(&t, NULL, shutdown_main, srv);
	bool draining = false;
	for (int i = 0; i < WAIT_MS / 5 && !draining; i++) {
		int probe = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		draining = connect(probe, (struct sockaddr *)&a, sizeof(a)) != 0;
		close(probe);
		if (!draining)
			usleep(5000);
	}
	ck_assert(draining);
	ck_assert_int_eq(httpd_server_call(srv, 0, held_answer, NULL), 0);
	char buf[4096];
	ck_assert(read_until(fd, buf, sizeof(buf), "held"));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	ck_assert(eof_within(fd));
	close(fd);
	pthread_join(t, NULL);
	ck_assert_int_eq(atomic_load(&shutdown_rc), 0);
	ck_assert_int_eq(atomic_load(&st.closes), 1);
	ck_assert_int_eq(atomic_load(&st.last_reason), 0);
	ck_assert_int_eq(atomic_load(&st.bad), 0);
}
END_TEST

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	Suite *s = suite_create("httpexchange");
	TCase *tc = tcase_create("stream");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, large_upload_is_streamed_with_backpressure);
	tcase_add_test(tc, upload_over_the_limit_gets_413);
	tcase_add_test(tc, client_gone_mid_body_closes_once);
	tcase_add_test(tc, early_answer_drops_the_body_and_serves_the_next_request);
	tcase_add_test(tc, chunked_response_read_by_curl);
	tcase_add_test(tc, content_length_response_and_head);
	tcase_add_test(tc, async_answers_from_a_timer_and_another_thread);
	tcase_add_test(tc, client_gone_mid_response_closes_once);
	tcase_add_test(tc, exchange_timeout_cuts_it);
	tcase_add_test(tc, exchange_timeout_moved_later_or_off);
	tcase_add_test(tc, client_eof_ends_an_exchange_that_asks);
	tcase_add_test(tc, upgrade_echo_tunnel);
	tcase_add_test(tc, upgrade_echo_tunnel_over_tls);
	tcase_add_test(tc, two_loops_serve_concurrent_clients);
	tcase_add_test(tc, mtls_requires_a_client_certificate_from_the_ca);
	tcase_add_test(tc, ambiguous_framing_is_refused);
	tcase_add_test(tc, file_ranges_between_writes_keep_their_order_on_a_kept_alive_connection);
	tcase_add_test(tc, file_to_a_slow_reader_waits_for_the_socket);
	tcase_add_test(tc, file_ranges_chained_from_done_callbacks_on_a_closing_connection);
	tcase_add_test(tc, client_gone_mid_file_closes_once);
	tcase_add_test(tc, file_shorter_than_promised_cuts_the_connection);
	tcase_add_test(tc, file_sendfile_refuses_is_copied);
	tcase_add_test(tc, file_over_tls_is_refused_for_a_copy);
	tcase_add_test(tc, shutdown_cuts_open_exchanges_and_runs_on_close);
	tcase_add_test(tc, shutdown_lets_a_finishing_exchange_finish);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
