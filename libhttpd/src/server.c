/*
 * server.c - HTTP/1.1 server on libuv and http-parser (see httpd/server.h).
 *
 * The server runs one or more loops (struct httpd__loop), each a thread
 * with its own listener (SO_REUSEPORT when there are several) and its own
 * connections, parsers and timers. Other threads talk to a loop through its
 * uv_async_t only: a locked queue of posted calls (httpd_server_call,
 * deferred callbacks) and the shutdown flag. Options and routes are fixed
 * before the threads start.
 *
 * A connection (struct httpd__conn) goes through:
 *   idle -> receiving a request (parser callbacks fill conn->req) ->
 *   buffered route: handler -> response queued -> idle again (keep-alive);
 *   stream route: an exchange (exchange.c) gets the head, reads the
 *   body through the parser as it asks for it, answers when it likes ->
 *   idle again, or a tunnel after an upgrade; or -> closing.
 * An answer that closes the connection (errors, Connection: close,
 * shutdown) is followed by a "lingering close": the write side is shut
 * down and what the client still sends is read and dropped for a moment,
 * so that a client still sending a body gets our answer instead of a TCP
 * reset (the same reason Go's server lingers).
 *
 * Input: received plaintext is consumed at once by the parser (or a
 * tunnel) as long as the connection may parse; what it may not take yet
 * (an exchange paused, or not reading its body, or still answering while
 * the client pipelines) waits in conn->in, and reading from the socket
 * stops once 64 KiB wait there: memory per connection stays bounded and
 * TCP flow control holds the client back.
 *
 * Bytes move through a `transport`: plain TCP, or TLS (tls.c),
 * which decrypts in on_read and encrypts in write.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>
#include "httpd/parser.h"
#include "httpd/server.h"
#include "httpd/exchange.h"
#include "server_internal.h"
#include "asb/strbuf.h"

#define READ_BUFFER_BYTES HTTPD__READ_BUFFER_BYTES
#define INPUT_HELD_BYTES 65536         /* unconsumed input before reading stops */
#define DISCARD_MAX_BYTES (256 * 1024) /* unread body dropped after an early answer */
#define LINGER_MS 500
#define MAX_LOOPS 256

typedef httpd__conn conn;
typedef httpd__loop loop;

typedef struct route {
	char *method;                  /* NULL: any */
	char *path;                    /* without the trailing '*' of a prefix */
	size_t path_len;
	bool prefix;
	httpd_handler_fn fn;        /* buffered; or */
	httpd_stream_fn stream_fn;  /* streaming */
	void *userdata;
	void (*free_userdata)(void *);  /* NULL: the caller owns userdata */
} route;

struct httpd_server {
	char *name;
	char *host;                    /* "" : every interface */
	int port;
	bool disabled;
	size_t max_header_bytes, max_body_bytes;
	unsigned int max_connections;
	long idle_timeout_ms, read_timeout_ms;
	asb_logger *log;
	httpd__tls_server *tls;          /* NULL: plain HTTP */
	route *routes;
	size_t nroutes;

	loop *loops;
	unsigned int nloops;
	bool started, joined;
	int bound_port;
	atomic_long shutdown_timeout_ms;
	atomic_int shutdown_rc;
};

static void conn_feed(conn *c, const char *data, size_t len);
static void conn_after_input(conn *c);
static void conn_on_eof(conn *c);
static void maybe_accept_or_finish(loop *lp);

/* --- options and addresses -------------------------------------------------- */

int httpd_server_options_init(httpd_server_options *opts, unsigned int version)
{
	httpd_server_options def = HTTPD_SERVER_OPTIONS_INIT;
	if (!opts || version < 1 || version > HTTPD_SERVER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server options: unknown version %u", version);
	/* an older caller's struct ends before the fields of later versions */
	def.version = version;
	size_t size = version == 1 ? offsetof(httpd_server_options, tls_cert_file)
		: version == 2 ? offsetof(httpd_server_options, loops) : sizeof(def);
	memcpy(opts, &def, size);
	return 0;
}

bool httpd_address_disabled(const char *address)
{
	return address && strcmp(address, "0") == 0;
}

/* Go's net.SplitHostPort: "host:port", "[v6]:port", ":port"; numeric ports. */
static int split_host_port(const char *addr, char **host, int *port)
{
	const char *colon = strrchr(addr, ':');
	if (!colon)
		return -1;
	const char *h = addr;
	size_t hlen = (size_t)(colon - addr);
	if (hlen > 0 && addr[0] == '[') {
		if (addr[hlen - 1] != ']')
			return -1;
		h = addr + 1;
		hlen -= 2;
	} else if (memchr(addr, ':', hlen) || memchr(addr, '[', hlen) || memchr(addr, ']', hlen)) {
		return -1;  /* "::1:80": IPv6 needs brackets */
	}
	const char *p = colon + 1;
	if (!*p || strlen(p) > 5)
		return -1;
	long v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v > 65535)
		return -1;
	if (!(*host = strndup(h, hlen)))
		return -2;
	*port = (int)v;
	return 0;
}

/* --- posted calls ------------------------------------------------------------------ */

/* A call for a list; NULL (with the error set) without memory. */
static httpd__call *call_new(void (*fn)(void *), void *ud)
{
	httpd__call *call = malloc(sizeof(*call));
	if (!call) {
		asb_error_set(ASB_ENOMEM, 0, NULL, "http server: out of memory");
		return NULL;
	}
	call->fn = fn;
	call->ud = ud;
	call->next = NULL;
	return call;
}

static void call_append(httpd__call **head, httpd__call **tail, httpd__call *call)
{
	if (*tail)
		(*tail)->next = call;
	else
		*head = call;
	*tail = call;
}

/* Records a loop keeps for reuse, of each kind. */
#define SPARE_MAX 64

/* Runs and frees a detached list of calls, in order (on lp's thread: the
 * records are kept for the next deferred calls). */
static void run_list(loop *lp, httpd__call *call)
{
	while (call) {
		httpd__call *next = call->next;
		call->fn(call->ud);
		if (lp->nspare_calls < SPARE_MAX) {
			call->next = lp->spare_calls;
			lp->spare_calls = call;
			lp->nspare_calls++;
		} else {
			free(call);
		}
		call = next;
	}
}

static int loop_ended(loop *lp)
{
	return asb_error_set(ASB_ESHUTDOWN, 0, NULL, "http server %s: loop %u has ended",
	                     lp->srv->name, lp->index);
}

int httpd__loop_post(loop *lp, void (*fn)(void *), void *ud)
{
	httpd__call *call = call_new(fn, ud);
	if (!call)
		return ASB_ENOMEM;
	pthread_mutex_lock(&lp->calls_lock);
	if (lp->calls_closed) {
		pthread_mutex_unlock(&lp->calls_lock);
		free(call);
		return loop_ended(lp);
	}
	call_append(&lp->calls, &lp->calls_tail, call);
	pthread_mutex_unlock(&lp->calls_lock);
	uv_async_send(&lp->wake);
	return 0;
}

static void on_cork_idle(uv_idle_t *h);

int httpd__loop_defer(loop *lp, void (*fn)(void *), void *ud)
{
	if (lp->calls_closed)  /* written on this thread only */
		return loop_ended(lp);
	httpd__call *call = lp->spare_calls;
	if (call) {
		lp->spare_calls = call->next;
		lp->nspare_calls--;
		call->fn = fn;
		call->ud = ud;
		call->next = NULL;
	} else if (!(call = call_new(fn, ud))) {
		return ASB_ENOMEM;
	}
	call_append(&lp->local, &lp->local_tail, call);
	/* the idle handle keeps the poll from blocking, and the loop alive,
	 * until the check phase ran it */
	if (!uv_is_active((uv_handle_t *)&lp->cork_idle))
		uv_idle_start(&lp->cork_idle, on_cork_idle);
	uv_ref((uv_handle_t *)&lp->cork_idle);
	return 0;
}

/* Runs the calls deferred so far on the loop's thread (later ones: the
 * next iteration). */
static void run_local(loop *lp)
{
	httpd__call *call = lp->local;
	lp->local = lp->local_tail = NULL;
	run_list(lp, call);
}

/* Runs the calls queued so far (later ones wait for the next wake-up). */
static void run_calls(loop *lp, bool close)
{
	pthread_mutex_lock(&lp->calls_lock);
	httpd__call *call = lp->calls;
	lp->calls = lp->calls_tail = NULL;
	if (close)
		lp->calls_closed = true;
	pthread_mutex_unlock(&lp->calls_lock);
	run_list(lp, call);
}

int httpd_server_call(httpd_server *s, unsigned int loop_index, void (*fn)(void *ud), void *ud)
{
	if (!s || !fn || !s->started || loop_index >= s->nloops)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server call: no loop %u on a started server",
		                     loop_index);
	return httpd__loop_post(&s->loops[loop_index], fn, ud);
}

unsigned int httpd_server_loops(const httpd_server *s)
{
	return s && s->started ? s->nloops : 0;
}

/* --- connections: writes ------------------------------------------------------------ */

/* A zeroed write record, reused when the loop has one. */
static httpd__write *write_new(loop *lp)
{
	httpd__write *wr = lp->spare_writes;
	if (!wr)
		return calloc(1, sizeof(*wr));
	lp->spare_writes = wr->next;
	lp->nspare_writes--;
	memset(wr, 0, sizeof(*wr));
	return wr;
}

static void write_free(loop *lp, httpd__write *wr)
{
	if (lp->nspare_writes < SPARE_MAX) {
		wr->next = lp->spare_writes;
		lp->spare_writes = wr;
		lp->nspare_writes++;
	} else {
		free(wr);
	}
}

/* One write of a batch is done (or cancelled). */
static void write_done(httpd__write *wr, int status)
{
	conn *c = wr->c;
	free(wr->data);
	c->pending_writes--;
	if (status < 0) {
		if (status != UV_ECANCELED)
			asb_log(c->srv->log, ASB_LOG_DEBUG, "http write failed", "server", c->srv->name,
			        "error", uv_strerror(status), NULL);
		httpd__conn_close(c, ASB_ETRANSPORT);
	}
	if (wr->ex)
		httpd__exchange_write_done(wr, status);  /* drops wr's reference */
	write_free(c->lp, wr);
}

/* Completes a batch of writes, in order (or cancels them). */
static void batch_done(httpd__write *first, int status)
{
	for (httpd__write *wr = first, *next; wr; wr = next) {
		next = wr->next;
		write_done(wr, status);
	}
}

static void cork_link(conn *c);
static void sf_begin(conn *c);
static void conn_shutdown(conn *c);

static void on_write(uv_write_t *w, int status)
{
	conn *c = ((httpd__write *)w)->c;
	c->batches_inflight--;
	batch_done((httpd__write *)w, status);
	/* a file waits for every byte queued before it */
	if (c->state != HTTPD__CONN_CLOSING && c->batches_inflight == 0 && c->cork_head &&
	    c->cork_head->is_file)
		cork_link(c);
}

/* A batch the socket took whole: reported at the check phase. */
static void written_add(conn *c, httpd__write *first)
{
	if (c->written_tail)
		c->written_tail->next = first;
	else
		c->written_head = first;
	httpd__write *last = first;
	while (last->next)
		last = last->next;
	c->written_tail = last;
	c->written_batches++;
	if (!c->written_linked) {
		c->written_linked = true;
		c->written_next = c->lp->written;
		c->lp->written = c;
	}
	uv_idle_start(&c->lp->cork_idle, on_cork_idle);
}

/* Reports the batches of `c` written at once, as on_write does. */
static void written_done(conn *c)
{
	httpd__write *first = c->written_head;
	c->batches_inflight -= c->written_batches;
	c->written_head = c->written_tail = NULL;
	c->written_batches = 0;
	batch_done(first, 0);
	if (c->state != HTTPD__CONN_CLOSING && c->batches_inflight == 0 && c->cork_head &&
	    c->cork_head->is_file)
		cork_link(c);
}

/* Off the loop's lists: the one collecting and the one being reported. */
static void written_unlink(conn *c)
{
	if (!c->written_linked)
		return;
	conn **lists[] = { &c->lp->written, &c->lp->written_draining };
	for (size_t i = 0; i < 2; i++)
		for (conn **pp = lists[i]; *pp; pp = &(*pp)->written_next)
			if (*pp == c) {
				*pp = c->written_next;
				goto out;
			}
out:
	c->written_next = NULL;
	c->written_linked = false;
}

/* Writes corked per connection at most, and bytes, before a flush. */
#define CORK_MAX_WRITES 16
#define CORK_MAX_BYTES (64 * 1024)

void httpd__conn_flush(conn *c)
{
	if (c->cork_n == 0 || c->sf)
		return;  /* a file being sent: what follows it waits */
	if (c->sf_running) {
		/* from a done callback inside sf_run (a finish, say): it goes on
		 * from there, and what is queued goes at the check phase */
		cork_link(c);
		return;
	}
	if (c->cork_head->is_file) {
		if (c->batches_inflight == 0)
			sf_begin(c);
		return;  /* else on_write starts it once the batches before it are out */
	}
	/* the writes up to the first file, in one writev */
	httpd__write *first = c->cork_head, *last = first;
	unsigned int n = 1;
	size_t bytes = first->len;
	while (last->next && !last->next->is_file) {
		last = last->next;
		n++;
		bytes += last->len;
	}
	c->cork_head = last->next;
	if (!c->cork_head)
		c->cork_tail = NULL;
	last->next = NULL;
	c->cork_n -= n;
	c->cork_bytes -= bytes;
	/* TLS records and handshake messages may cork more than the bound
	 * between two flushes */
	uv_buf_t small[CORK_MAX_WRITES];
	uv_buf_t *bufs = n <= CORK_MAX_WRITES ? small : malloc(n * sizeof(*bufs));
	unsigned int i = 0;
	if (bufs)
		for (httpd__write *wr = first; wr; wr = wr->next)
			bufs[i++] = uv_buf_init(wr->data, (unsigned int)wr->len);
	/* What the socket takes now is written here, without a write request:
	 * libuv re-arms its epoll watcher after each completed uv_write (an
	 * epoll_ctl per write, per request on a keep-alive connection). The
	 * rest, or all of it on any error, goes through uv_write as before. */
	int rc = UV_ENOMEM;
	if (bufs) {
		/* not while libuv holds a batch: its completion comes at the next
		 * iteration, and this one's must not be reported before it */
		bool held = c->batches_inflight > c->written_batches;
		ssize_t w = bytes <= INT_MAX && !held ? uv_try_write((uv_stream_t *)&c->tcp, bufs, n) : 0;
		if (w == (ssize_t)bytes) {
			if (bufs != small)
				free(bufs);
			written_add(c, first);
			goto queued;
		}
		unsigned int k = 0;
		for (size_t left = w > 0 ? (size_t)w : 0; left;) {
			size_t take = left < bufs[k].len ? left : bufs[k].len;
			bufs[k].base += take;
			bufs[k].len -= (unsigned int)take;
			left -= take;
			if (!bufs[k].len)
				k++;
		}
		/* libuv copies the buffer array; the data stay with the requests */
		rc = uv_write(&first->req, (uv_stream_t *)&c->tcp, bufs + k, n - k, on_write);
	}
	if (bufs != small)
		free(bufs);
	if (rc < 0) {
		batch_done(first, rc);
		return;
	}
queued:
	c->batches_inflight++;
	if (c->shutdown_wanted && !c->cork_head && c->state == HTTPD__CONN_LINGER)
		conn_shutdown(c);  /* after the last writes, which libuv now holds */
}

/* Drops the corked writes of a connection that closes, and the file
 * being sent: cancelled. */
static void cork_cancel(conn *c)
{
	httpd__write *first = c->cork_head, *sf = c->sf;
	c->cork_head = c->cork_tail = NULL;
	c->cork_n = 0;
	c->cork_bytes = 0;
	c->sf = NULL;
	if (sf)
		write_done(sf, UV_ECANCELED);
	if (first)
		batch_done(first, UV_ECANCELED);
}

static void cork_unlink(conn *c)
{
	if (!c->cork_linked)
		return;
	for (conn **pp = &c->lp->corked; *pp; pp = &(*pp)->cork_next)
		if (*pp == c) {
			*pp = c->cork_next;
			break;
		}
	c->cork_next = NULL;
	c->cork_linked = false;
}

static void on_cork_check(uv_check_t *h)
{
	loop *lp = h->data;
	run_local(lp);  /* first: what they write goes out below */
	while (lp->corked) {
		conn *c = lp->corked;
		lp->corked = c->cork_next;
		c->cork_next = NULL;
		c->cork_linked = false;
		httpd__conn_flush(c);
	}
	/* then the completions of what went out whole (this iteration's
	 * flushes, and those made since the last check); what they write in
	 * turn goes out at the next check, as after a uv_write callback */
	lp->written_draining = lp->written;  /* reachable: a callback may close one of them */
	lp->written = NULL;
	while (lp->written_draining) {
		conn *c = lp->written_draining;
		lp->written_draining = c->written_next;
		c->written_next = NULL;
		c->written_linked = false;
		written_done(c);
	}
	if (!lp->local && !lp->corked && !lp->written) {
		uv_idle_stop(&lp->cork_idle);
		uv_unref((uv_handle_t *)&lp->cork_idle);
	}
}

static void on_cork_idle(uv_idle_t *h)
{
	(void)h;  /* only there so that the poll does not block */
}

/* Flushes the connection at this iteration's check phase. */
static void cork_link(conn *c)
{
	if (c->cork_linked)
		return;
	c->cork_linked = true;
	c->cork_next = c->lp->corked;
	c->lp->corked = c;
	uv_idle_start(&c->lp->cork_idle, on_cork_idle);
}

/* Appends a write to the cork, tied to the exchange being written for. */
static void cork_append(conn *c, httpd__write *wr)
{
	wr->c = c;
	if (c->cork_tail)
		c->cork_tail->next = wr;
	else
		c->cork_head = wr;
	c->cork_tail = wr;
	c->cork_n++;
	c->cork_bytes += wr->len;
	cork_link(c);
	c->pending_writes++;
	if (c->wctx) {
		/* part of an exchange's write: it learns when this one is out */
		wr->ex = c->wctx;
		httpd__exchange_ref(wr->ex);
		wr->ex->writes_inflight++;
		c->last_wr = wr;
	}
}

static int plain_write(conn *c, char *data, size_t len)
{
	httpd__write *wr = write_new(c->lp);
	if (!wr) {
		free(data);
		return -1;
	}
	wr->data = data;
	wr->len = len;
	cork_append(c, wr);
	return 0;
}

int httpd__conn_send(conn *c, httpd_exchange *ex, char *data, size_t len,
                        void (*done)(httpd_exchange *, void *), void *ud)
{
	if (c->state != HTTPD__CONN_OPEN) {
		free(data);
		return -1;
	}
	c->wctx = ex;
	c->last_wr = NULL;
	int rc = c->tp->write(c, data, len);
	httpd__write *last = c->last_wr;
	c->wctx = NULL;
	c->last_wr = NULL;
	if (rc < 0) {
		httpd__conn_close(c, ASB_ETRANSPORT);
		return -1;
	}
	if (ex && last) {
		/* the last request of this write settles it (writes complete in order) */
		ex->pending += len;
		last->plain_len = len;
		last->done = done;
		last->done_ud = ud;
	}
	/* past the cork's bounds: out now (after the bookkeeping above, which
	 * a failed flush's completions rely on) */
	if (c->cork_n >= CORK_MAX_WRITES - 2 || c->cork_bytes >= CORK_MAX_BYTES)
		httpd__conn_flush(c);
	return 0;
}

/* --- connections: files by sendfile(2) ---------------------------------------------- */

/* Bytes one connection sends from files per loop iteration before the
 * others get their turn. */
#define SF_BUDGET (4u << 20)
#define SF_COPY_BYTES (64 * 1024)

static void sf_run(conn *c);

static void on_sf_poll(uv_poll_t *h, int status, int events)
{
	(void)events;
	conn *c = h->data;
	uv_poll_stop(h);
	if (!c->sf || c->state == HTTPD__CONN_CLOSING)
		return;
	if (status < 0) {
		httpd__write *wr = c->sf;
		c->sf = NULL;
		write_done(wr, status);
		return;
	}
	sf_run(c);
}

/* Waits until the socket takes bytes again. 0, or a libuv error. */
static int sf_wait(conn *c)
{
	if (!c->sf_poll_init) {
		uv_os_fd_t sock;
		int rc = uv_fileno((uv_handle_t *)&c->tcp, &sock);
		if (rc < 0)
			return rc;
		/* libuv watches the socket's own descriptor (reads); epoll keys
		 * on the descriptor, so a duplicate can be watched for writes */
		int fd = fcntl(sock, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return uv_translate_sys_error(errno);
		if ((rc = uv_poll_init_socket(&c->lp->uv, &c->sf_poll, fd)) < 0) {
			close(fd);
			return rc;
		}
		c->sf_poll.data = c;
		c->sf_fd = fd;
		c->sf_poll_init = true;
		c->open_handles++;
	}
	return uv_poll_start(&c->sf_poll, UV_WRITABLE, on_sf_poll);
}

/* Copies up to `n` bytes of the file to the socket through user space:
 * for files sendfile(2) refuses. As sendfile: bytes sent, 0 at the end
 * of the file, -1 with errno. */
static ssize_t sf_copy(int sock, httpd__write *wr, size_t n)
{
	char buf[SF_COPY_BYTES];
	if (n > sizeof(buf))
		n = sizeof(buf);
	ssize_t r = pread(wr->file_fd, buf, n, (off_t)wr->file_off);
	if (r <= 0)
		return r;
	/* what the socket does not take now is read again next time */
	return send(sock, buf, (size_t)r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Makes the file range at the cork's head the one being sent. */
static void sf_take_head(conn *c)
{
	httpd__write *wr = c->cork_head;
	c->cork_head = wr->next;
	if (!c->cork_head)
		c->cork_tail = NULL;
	wr->next = NULL;
	c->cork_n--;
	c->sf = wr;
}

/* Starts sending the file at the cork's head: every write before it is out. */
static void sf_begin(conn *c)
{
	sf_take_head(c);
	sf_run(c);
}

/* Sends from the current file until the socket is full, the budget is
 * spent or the queued files end; then waits, or hands the writes queued
 * behind them to the next flush. */
static void sf_run(conn *c)
{
	uv_os_fd_t sock;
	int status = uv_fileno((uv_handle_t *)&c->tcp, &sock);
	size_t budget = SF_BUDGET;
	c->sf_running = true;
	while (status == 0) {
		httpd__write *wr = c->sf;
		while (wr->file_left > 0 && budget > 0) {
			size_t n = wr->file_left < budget ? (size_t)wr->file_left : budget;
			ssize_t r;
			if (!wr->file_copy) {
				off_t off = (off_t)wr->file_off;
				r = sendfile(sock, wr->file_fd, &off, n);
				if (r < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
					wr->file_copy = true;  /* not a file sendfile reads: copy it */
					continue;
				}
			} else {
				r = sf_copy(sock, wr, n);
			}
			if (r > 0) {
				wr->file_off += (uint64_t)r;
				wr->file_left -= (uint64_t)r;
				budget -= (size_t)r;
			} else if (r == 0) {
				status = UV_EIO;  /* the file ended before the bytes promised */
				break;
			} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
				break;
			} else if (errno != EINTR) {
				status = uv_translate_sys_error(errno);
				break;
			}
		}
		if (status < 0)
			break;
		if (wr->file_left > 0) {
			/* socket full, or others' turn (the socket is writable: next iteration) */
			status = sf_wait(c);
			break;
		}
		c->sf = NULL;
		write_done(wr, 0);  /* its done callback may queue more, or finish */
		if (c->state == HTTPD__CONN_CLOSING || !c->cork_head)
			break;
		if (!c->cork_head->is_file || c->batches_inflight > 0 || budget == 0) {
			/* writes first, or bytes still with libuv before the next range */
			cork_link(c);
			break;
		}
		sf_take_head(c);  /* the next range, at once */
	}
	c->sf_running = false;
	if (status < 0 && c->sf) {
		httpd__write *wr = c->sf;
		c->sf = NULL;
		write_done(wr, status);  /* closes the connection */
		return;
	}
	if (c->shutdown_wanted && !c->sf && !c->cork_head && c->state == HTTPD__CONN_LINGER)
		conn_shutdown(c);
}

int httpd__conn_send_file(conn *c, httpd_exchange *ex, int fd, uint64_t offset, size_t len,
                             void (*done)(httpd_exchange *, void *), void *ud)
{
	if (c->state != HTTPD__CONN_OPEN || c->tls)
		return -1;
	httpd__write *wr = write_new(c->lp);
	if (!wr) {
		httpd__conn_close(c, ASB_ETRANSPORT);
		return -1;
	}
	wr->is_file = true;
	wr->file_fd = fd;
	wr->file_off = offset;
	wr->file_left = len;
	c->wctx = ex;
	c->last_wr = NULL;
	cork_append(c, wr);
	c->wctx = NULL;
	c->last_wr = NULL;
	if (ex) {
		ex->pending += len;
		wr->plain_len = len;
		wr->done = done;
		wr->done_ud = ud;
	}
	return 0;
}

static const httpd__transport plain_transport = { conn_feed, plain_write };

/* TLS: ciphertext out through plain_write, plaintext in through conn_feed. */
static int tls_send_raw(void *owner, char *data, size_t len)
{
	return plain_write(owner, data, len);
}

static bool tls_deliver(void *owner, const char *data, size_t len)
{
	conn *c = owner;
	conn_feed(c, data, len);
	/* decrypting on is bounded by what was read; conn->in keeps the rest */
	return c->state == HTTPD__CONN_OPEN;
}

static void tls_on_read(conn *c, const char *data, size_t len)
{
	int rc = httpd__tls_conn_input(c->tls, data, len);
	if (rc < 0)
		httpd__conn_close(c, ASB_ETRANSPORT);
	else if (rc > 0 && c->state == HTTPD__CONN_OPEN)
		conn_on_eof(c);  /* close_notify from the client: as a TCP EOF */
}

static int tls_write(conn *c, char *data, size_t len)
{
	return httpd__tls_conn_write(c->tls, data, len);
}

static const httpd__transport tls_transport = { tls_on_read, tls_write };

/* --- connections: lifecycle ----------------------------------------------------------- */

static void conn_free(conn *c)
{
	loop *lp = c->lp;
	if (c->prev)
		c->prev->next = c->next;
	else
		lp->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	lp->nconns--;
	httpd__request_reset(&c->req);
	httpd__tls_conn_free(c->tls);
	asb_strbuf_free(&c->in);
	if (c->sf_fd >= 0)
		close(c->sf_fd);
	free(c);
	maybe_accept_or_finish(lp);
}

static void on_conn_handle_closed(uv_handle_t *h)
{
	conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	if (c->kick_posted) {
		c->free_pending = true;  /* the posted kick frees it */
		return;
	}
	conn_free(c);
}

/* Closes at once: no more reads or writes; pending writes are cancelled
 * (their exchanges end with `reason`), and so is the exchange in progress. */
void httpd__conn_close(conn *c, int reason)
{
	if (c->state == HTTPD__CONN_CLOSING)
		return;
	c->state = HTTPD__CONN_CLOSING;
	c->close_reason = reason ? reason : ASB_ETRANSPORT;
	written_unlink(c);
	cork_unlink(c);
	cork_cancel(c);
	if (c->ex)
		httpd__exchange_end(c->ex, c->close_reason);
	/* what the socket took is reported as written once the exchange has
	 * ended (as libuv reports a completed write at a handle's close), so
	 * no done callback runs inside the close */
	if (c->written_head)
		written_done(c);
	uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
	uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
	if (c->sf_poll_init)
		uv_close((uv_handle_t *)&c->sf_poll, on_conn_handle_closed);  /* sf_fd: conn_free */
}

/*
 * The connection's one deadline (read, idle, exchange, linger), armed
 * lazily: every request moves it two or three times, nearly always later,
 * and a libuv timer start is a heap removal and insertion. A later
 * deadline is only recorded (`due`); the timer, when it fires before it,
 * re-arms itself for what is left. A stop clears `due`, and a timer that
 * fires with none does nothing.
 */
static void on_timer(uv_timer_t *t);

static void conn_timer_start(conn *c, uint64_t ms)
{
	uint64_t due = uv_now(&c->lp->uv) + ms;
	c->due = due;
	if (!uv_is_active((uv_handle_t *)&c->timer) || c->armed_due > due) {
		uv_timer_start(&c->timer, on_timer, ms, 0);
		c->armed_due = due;
	}
}

static void conn_timer_stop(conn *c)
{
	c->due = 0;
}

static void on_timer(uv_timer_t *t)
{
	conn *c = t->data;
	if (!c->due)
		return;  /* stopped since it was armed */
	uint64_t now = uv_now(&c->lp->uv);
	if (now < c->due) {
		uv_timer_start(&c->timer, on_timer, c->due - now, 0);
		c->armed_due = c->due;
		return;
	}
	c->due = 0;
	int reason = ASB_ETIMEOUT;
	if (c->state == HTTPD__CONN_OPEN)
		asb_log(c->srv->log, ASB_LOG_DEBUG,
		        c->ex ? "http exchange timed out; closing"
		        : c->in_request ? "http request not received in time; closing"
		        : "http connection idle; closing",
		        "server", c->srv->name, NULL);
	else
		reason = ASB_ETRANSPORT;  /* the linger ended */
	httpd__conn_close(c, reason);
}

void httpd__conn_set_timer(conn *c, long ms)
{
	if (c->state != HTTPD__CONN_OPEN)
		return;
	if (ms > 0)
		conn_timer_start(c, (uint64_t)ms);
	else
		conn_timer_stop(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	conn *c = req->data;
	if (c->state != HTTPD__CONN_LINGER)
		return;
	if (status < 0) {
		httpd__conn_close(c, ASB_ETRANSPORT);
		return;
	}
	/* the answer is out: drop what the client still sends, briefly */
	conn_timer_start(c, (uint64_t)LINGER_MS);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

/* After the last queued answer: shut the write side down, then linger. */
void httpd__conn_finish(conn *c)
{
	if (c->state != HTTPD__CONN_OPEN)
		return;
	c->state = HTTPD__CONN_LINGER;
	conn_timer_stop(c);
	asb_strbuf_free(&c->in);
	c->in_off = 0;
	if (!c->reading && !c->peer_eof) {
		/* lingering reads and drops what the client still sends */
		if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
			c->reading = true;
	}
	if (c->tls)
		httpd__tls_conn_close_notify(c->tls);
	c->shutdown_req.data = c;
	httpd__conn_flush(c);  /* the shutdown follows every write */
	if (c->state != HTTPD__CONN_LINGER)
		return;  /* the flush failed and closed it */
	if (c->sf || c->cork_head) {
		c->shutdown_wanted = true;  /* after the file being sent and what follows it */
		return;
	}
	conn_shutdown(c);
}

/* Shuts the write side down once libuv wrote what it holds. */
static void conn_shutdown(conn *c)
{
	c->shutdown_wanted = false;
	if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0)
		httpd__conn_close(c, ASB_ETRANSPORT);
}

/* Serialises and queues a response. */
static void send_response(conn *c, httpd_response *res, bool head_only, bool keep_alive_10)
{
	asb_strbuf out = ASB_STRBUF_INIT;
	asb_strbuf_reserve(&out, res->headers.len + 200 + (head_only ? 0 : res->body.len));
	httpd__add_status_line(&out, res->status);
	asb_strbuf_add(&out, res->headers.data ? res->headers.data : "", res->headers.len);
	if (!res->has_content_type)
		asb_strbuf_adds(&out, "Content-Type: text/plain; charset=utf-8\r\n");
	bool no_body = res->status == 204 || res->status == 304 || res->status < 200;
	if (!no_body) {
		asb_strbuf_add(&out, "Content-Length: ", 16);
		asb_strbuf_add_int(&out, (long long)res->body.len);
		asb_strbuf_add(&out, "\r\n", 2);
	}
	httpd__add_date(&out);
	if (c->close_after)
		asb_strbuf_adds(&out, "Connection: close\r\n");
	else if (keep_alive_10)
		asb_strbuf_adds(&out, "Connection: keep-alive\r\n");
	asb_strbuf_add(&out, "\r\n", 2);
	if (!head_only && !no_body && res->body.len)
		asb_strbuf_add(&out, res->body.data, res->body.len);
	if (out.failed) {
		asb_strbuf_free(&out);
		httpd__conn_close(c, ASB_ENOMEM);
		return;
	}
	size_t len;
	char *data = asb_strbuf_detach(&out, &len);
	httpd__conn_send(c, NULL, data, len, NULL, NULL);
}

/* An error answer (400, 413, 431, ...) that closes the connection. */
void httpd__conn_send_error(conn *c, int status)
{
	if (c->state != HTTPD__CONN_OPEN)
		return;
	httpd_response res = { .status = status };
	char body[96];
	snprintf(body, sizeof(body), "%d %s\n", status, httpd__reason_phrase(status));
	asb_strbuf_adds(&res.body, body);
	c->close_after = true;
	send_response(c, &res, false, false);
	httpd__response_free(&res);
	c->in_request = false;
	httpd__conn_finish(c);
}

/* --- routing -------------------------------------------------------------------- */

/* Which routes match `path`: the exact ones, else those of the longest prefix. */
static size_t route_specificity(const route *r, const char *path)
{
	if (!r->prefix)
		return strcmp(r->path, path) == 0 ? (size_t)-1 : 0;
	return strncmp(r->path, path, r->path_len) == 0 ? r->path_len + 1 : 0;
}

/*
 * The route serving `req`, or NULL: then *found tells whether the path is
 * known (405: `allow`, when not NULL, receives the methods) or not (404).
 */
static const route *route_find(const httpd_server *s, const httpd_request *req,
                               bool *found, asb_strbuf *allow)
{
	size_t best = 0;
	for (size_t i = 0; i < s->nroutes; i++) {
		size_t sp = route_specificity(&s->routes[i], req->path);
		if (sp > best)
			best = sp;
	}
	*found = best != 0;
	if (best == 0)
		return NULL;
	bool head = strcmp(req->method, "HEAD") == 0;
	const route *match = NULL, *get = NULL;
	for (size_t i = 0; i < s->nroutes; i++) {
		const route *r = &s->routes[i];
		if (route_specificity(r, req->path) != best)
			continue;
		if (!r->method || strcmp(r->method, req->method) == 0) {
			match = r;
			break;
		}
		if (strcmp(r->method, "GET") == 0)
			get = r;
		if (!allow)
			continue;
		if (allow->len)
			asb_strbuf_add(allow, ", ", 2);
		asb_strbuf_adds(allow, r->method);
		if (strcmp(r->method, "GET") == 0)
			asb_strbuf_adds(allow, ", HEAD");
	}
	if (!match && head && get)
		match = get;
	return match;
}

static void dispatch(conn *c, const httpd_request *req, httpd_response *res, bool *head_only)
{
	asb_strbuf allow = ASB_STRBUF_INIT;
	bool found;
	const route *match = route_find(c->srv, req, &found, &allow);
	*head_only = strcmp(req->method, "HEAD") == 0;
	if (!found) {
		res->status = 404;
		asb_strbuf_adds(&res->body, "404 page not found\n");
	} else if (match && match->fn) {
		match->fn(req, res, match->userdata);
	} else if (match) {
		/* a stream route found here: its head could not be handed over */
		res->status = 500;
		asb_strbuf_adds(&res->body, "500 Internal Server Error\n");
	} else {
		res->status = 405;
		if (allow.data && !allow.failed)
			httpd_response_add_header(res, "Allow", allow.data);
		asb_strbuf_adds(&res->body, "Method Not Allowed\n");
	}
	asb_strbuf_free(&allow);
}

/* --- parser callbacks --------------------------------------------------------------- */

/* Whether the parser may take more input now. */
bool httpd__conn_can_parse(const conn *c)
{
	if (c->state != HTTPD__CONN_OPEN || c->parse_done)
		return false;
	if (!c->stream_req)
		return !c->ex;            /* the previous exchange must have finished */
	const httpd_exchange *ex = c->ex;
	if (!ex)
		return true;              /* dropping the body of a finished exchange */
	if (!ex->started)
		return false;
	if (!ex->has_body)
		return true;              /* on to message_complete */
	return ex->reading && !ex->paused;
}

static int count_header_bytes(conn *c, size_t n)
{
	c->header_bytes += n;
	if (c->header_bytes > c->srv->max_header_bytes) {
		c->reject_status = 431;
		return -1;
	}
	return 0;
}

static int on_message_begin(httpd_parser *p)
{
	conn *c = httpd_parser_data(p);
	httpd__request_reset(&c->req);
	c->in_request = true;
	c->header_bytes = 0;
	c->reject_status = 0;
	c->stream_req = false;
	c->upgrade_req = false;
	conn_timer_start(c, (uint64_t)c->srv->read_timeout_ms);
	return 0;
}

static int on_url(httpd_parser *p, const char *at, size_t len)
{
	conn *c = httpd_parser_data(p);
	if (count_header_bytes(c, len) < 0)
		return -1;
	return httpd__request_add_url(&c->req, at, len);
}

static int on_header_field(httpd_parser *p, const char *at, size_t len)
{
	conn *c = httpd_parser_data(p);
	/* 4 bytes of ": " and CRLF per field, as a server counting raw bytes would */
	if (count_header_bytes(c, len + (c->req.in_value || !c->req.in_field ? 4 : 0)) < 0)
		return -1;
	return httpd__request_add_field(&c->req, at, len);
}

static int on_header_value(httpd_parser *p, const char *at, size_t len)
{
	conn *c = httpd_parser_data(p);
	if (count_header_bytes(c, len) < 0)
		return -1;
	return httpd__request_add_value(&c->req, at, len);
}

/*
 * Request smuggling (RFC 9112 §6.3, §11.2): http-parser 2.9.4 refuses
 * Content-Length with Transfer-Encoding and a repeated Content-Length
 * itself (HPE_UNEXPECTED_CONTENT_LENGTH); this checks the parsed fields
 * again so that the guarantee does not rest on the parser's version.
 */
static bool framing_ambiguous(const httpd_request *r)
{
	int cl = 0, te = 0;
	for (size_t i = 0; i < r->nheaders; i++) {
		unsigned char c0 = (unsigned char)r->headers[i].name[0] | 0x20;
		if (c0 == 'c' && strcasecmp(r->headers[i].name, "Content-Length") == 0)
			cl++;
		else if (c0 == 't' && strcasecmp(r->headers[i].name, "Transfer-Encoding") == 0)
			te++;
	}
	return cl > 1 || (cl && te);
}

/* The head of a request on a stream route: an exchange takes over. */
static int start_exchange(conn *c, httpd_parser *p, const route *rt)
{
	httpd_exchange *ex = httpd__exchange_new(c, rt->stream_fn, rt->userdata);
	if (!ex)
		return -1;
	c->stream_req = true;
	bool upgrade = httpd_parser_upgrade(p);
	int http_minor = httpd_parser_http_minor(p);
	c->upgrade_req = upgrade;
	c->ex = ex;
	/* the head moves into the exchange; conn->req is free for the next one */
	ex->req = c->req;
	memset(&c->req, 0, sizeof(c->req));
	ex->http_minor = http_minor;
	ex->head_only = strcmp(ex->req.method, "HEAD") == 0;
	ex->wants_upgrade = upgrade;
	bool chunked = httpd_parser_chunked(p);
	uint64_t length = 0;
	bool has_length = httpd_parser_content_length(p, &length);
	ex->content_length = chunked ? -1 : has_length ? (int64_t)length : 0;
	ex->has_body = !upgrade && (chunked || ex->content_length > 0);
	const char *expect = httpd_request_header(&ex->req, "Expect");
	ex->expect_continue = expect && strcasecmp(expect, "100-continue") == 0 && http_minor >= 1 &&
	                      ex->has_body;
	bool keep_alive = httpd_parser_keep_alive(p) && !upgrade;
	c->close_after = c->close_after || !keep_alive || c->lp->draining;
	ex->keep_alive_10 = keep_alive && http_minor == 0;
	ex->max_body = c->srv->max_body_bytes;
	/* the handler is called outside the parser, once it has paused here */
	httpd_parser_pause(p);
	return 0;
}

static int on_headers_complete(httpd_parser *p)
{
	conn *c = httpd_parser_data(p);
	httpd_request *r = &c->req;
	r->method = httpd_parser_method(p);
	httpd_url u;
	if (httpd__request_end_header(r) < 0)
		return -1;
	if (httpd_parser_split_url(r->head.data ? r->head.data : "", r->url_len,
	                           strcmp(r->method, "CONNECT") == 0, &u) != 0) {
		c->reject_status = 400;
		return -1;
	}
	if (httpd__request_head_done(r, u.path.set ? (long)u.path.off : -1, u.path.len,
	                             u.query.set ? (long)u.query.off : -1, u.query.len) < 0)
		return -1;
	if (framing_ambiguous(r)) {
		c->reject_status = 400;
		return -1;
	}
	bool found;
	const route *rt = route_find(c->srv, r, &found, NULL);
	if (rt && rt->stream_fn)
		return start_exchange(c, p, rt);
	/* A declared body over the limit is refused before it is read. */
	uint64_t length = 0;
	bool has_length = httpd_parser_content_length(p, &length);
	if (has_length && length > c->srv->max_body_bytes) {
		c->reject_status = 413;
		return -1;
	}
	const char *expect = httpd_request_header(r, "Expect");
	if (expect && strcasecmp(expect, "100-continue") == 0 && httpd_parser_http_minor(p) >= 1 &&
	    (httpd_parser_chunked(p) || (has_length && length > 0))) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		char *data = malloc(sizeof(cont) - 1);
		if (!data)
			return -1;
		memcpy(data, cont, sizeof(cont) - 1);
		if (httpd__conn_send(c, NULL, data, sizeof(cont) - 1, NULL, NULL) < 0)
			return -1;
	}
	return 0;
}

static int on_body(httpd_parser *p, const char *at, size_t len)
{
	conn *c = httpd_parser_data(p);
	if (!c->stream_req) {
		if (c->req.body.len + len > c->srv->max_body_bytes) {
			c->reject_status = 413;
			return -1;
		}
		return asb_strbuf_add(&c->req.body, at, len);
	}
	httpd_exchange *ex = c->ex;
	if (!ex || !ex->reading) {
		/* the exchange finished without reading: drop, within bounds */
		if (len > c->discard_left)
			return -1;  /* cannot happen: the drop was sized at finish */
		c->discard_left -= len;
		return 0;
	}
	ex->body_received += len;
	if (ex->max_body && ex->body_received > ex->max_body) {
		c->reject_status = 413;
		return -1;
	}
	httpd__exchange_deliver(ex, at, len);
	if (!httpd__conn_can_parse(c))
		httpd_parser_pause(p);
	return 0;
}

static int on_message_complete(httpd_parser *p)
{
	conn *c = httpd_parser_data(p);
	httpd_server *s = c->srv;
	if (c->stream_req) {
		c->stream_req = false;
		c->in_request = false;
		httpd_exchange *ex = c->ex;
		if (httpd_parser_upgrade(p))
			c->parse_done = true;  /* what follows is another protocol */
		if (ex) {
			ex->body_done = true;
			if (!ex->tunnel)
				httpd__exchange_deliver_end(ex);
		} else if (c->state == HTTPD__CONN_OPEN && !c->close_after) {
			/* the dropped body is behind us: next request */
			conn_timer_start(c, (uint64_t)s->idle_timeout_ms);
		}
		if (!httpd__conn_can_parse(c) && !httpd_parser_upgrade(p))
			httpd_parser_pause(p);
		return 0;
	}
	if (asb_strbuf_add(&c->req.body, "", 0) < 0)
		return -1;
	bool keep_alive = httpd_parser_keep_alive(p) && !httpd_parser_upgrade(p);
	c->close_after = !keep_alive || c->lp->draining;

	httpd_response res = { .status = 200 };
	bool head_only = false;
	dispatch(c, &c->req, &res, &head_only);
	send_response(c, &res, head_only, keep_alive && httpd_parser_http_minor(p) == 0);
	httpd__response_free(&res);
	httpd__request_reset(&c->req);
	c->in_request = false;
	if (c->state != HTTPD__CONN_OPEN)
		return -1;  /* the answer could not be queued: stop parsing */
	if (c->close_after) {
		httpd__conn_finish(c);
		/* nothing pipelined after this one is served */
		httpd_parser_pause(p);
		return 0;
	}
	conn_timer_start(c, (uint64_t)s->idle_timeout_ms);
	return 0;
}

static const httpd_parser_callbacks parser_callbacks = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* --- input -------------------------------------------------------------------------- */

/* A malformed or refused request: an error answer when none has begun. */
static void conn_reject(conn *c)
{
	httpd_parser_error e = httpd_parser_get_error(&c->parser);
	int status = c->reject_status ? c->reject_status
	             : e == HTTPD_PARSER_EHEADER_OVERFLOW ? 431 : 400;
	asb_log(c->srv->log, ASB_LOG_DEBUG, "http request rejected", "server", c->srv->name,
	        "error", httpd_parser_error_name(&c->parser), NULL);
	httpd_exchange *ex = c->ex;
	if (c->stream_req && (!ex || ex->head_sent)) {
		/* an answer is (being) sent already: a second one would corrupt it */
		httpd__conn_close(c, status == 413 ? ASB_ETOOLARGE : ASB_EBADREQUEST);
		return;
	}
	if (ex) {
		c->ex = NULL;
		httpd__exchange_end(ex, status == 413 ? ASB_ETOOLARGE : ASB_EBADREQUEST);
	}
	httpd__conn_send_error(c, status);
}

/* Consumes what it may of `data`: parses, or hands bytes to a tunnel. */
static size_t conn_consume(conn *c, const char *data, size_t len)
{
	size_t off = 0;
	while (c->state == HTTPD__CONN_OPEN) {
		httpd_exchange *ex = c->ex;
		if (ex && !ex->started) {
			httpd__exchange_start(ex);
			continue;
		}
		if (ex && ex->body_done && ex->reading && !ex->paused && !ex->end_delivered && !ex->tunnel)
			httpd__exchange_deliver_end(ex);
		if (off == len)
			break;
		if (c->parse_done) {
			if (!ex)
				return len;  /* past an upgrade that was refused: nothing more is served */
			if (!ex->tunnel || !ex->reading || ex->paused)
				break;
			httpd__exchange_deliver(ex, data + off, len - off);
			off = len;
			continue;
		}
		if (!httpd__conn_can_parse(c))
			break;
		httpd_parser_resume(&c->parser);
		size_t n = 0;
		httpd_parser_error e = httpd_parser_execute(&c->parser, data + off, len - off, &n);
		off += n;
		if (e != HTTPD_PARSER_OK && e != HTTPD_PARSER_PAUSED) {
			conn_reject(c);
			return len;
		}
		if (httpd_parser_upgrade(&c->parser) && !c->stream_req) {
			c->parse_done = true;  /* upgrade asked of a buffered route: answered and closed */
			continue;
		}
		if (n == 0) {
			if (c->ex && !c->ex->started)
				continue;  /* paused on the head's last byte: start the handler */
			break;
		}
	}
	return off;
}

/* Feeds the bytes held in conn->in. */
static void conn_pump(conn *c)
{
	if (c->pumping)
		return;
	c->pumping = true;
	for (;;) {
		size_t avail = c->in.len - c->in_off;
		size_t n = conn_consume(c, avail ? c->in.data + c->in_off : "", avail);
		if (c->state != HTTPD__CONN_OPEN || n == 0)
			break;
		c->in_off += n;
	}
	if (c->in_off >= c->in.len) {
		asb_strbuf_free(&c->in);
		c->in_off = 0;
	}
	c->pumping = false;
	conn_after_input(c);
}

/* Plaintext arrived (the plain transport's on_read, TLS's deliver). */
static void conn_feed(conn *c, const char *data, size_t len)
{
	if (c->state != HTTPD__CONN_OPEN)
		return;
	if (c->pumping || c->in.len > c->in_off) {
		/* behind bytes already waiting */
		if (c->in_off > 0 && c->in_off == c->in.len) {
			c->in.len = 0;
			c->in_off = 0;
		}
		if (asb_strbuf_add(&c->in, data, len) < 0) {
			httpd__conn_close(c, ASB_ENOMEM);
			return;
		}
		conn_pump(c);
		return;
	}
	c->pumping = true;
	size_t n = conn_consume(c, data, len);
	c->pumping = false;
	if (n < len && c->state == HTTPD__CONN_OPEN) {
		asb_strbuf_free(&c->in);
		c->in_off = 0;
		if (asb_strbuf_add(&c->in, data + n, len - n) < 0) {
			httpd__conn_close(c, ASB_ENOMEM);
			return;
		}
	}
	conn_after_input(c);
}

/* After input was consumed: what the client's EOF means now, and whether to read on. */
static void conn_after_input(conn *c)
{
	if (c->state != HTTPD__CONN_OPEN)
		return;
	size_t held = c->in.len - c->in_off;
	httpd_exchange *ex = c->ex;
	if (c->peer_eof && held == 0) {
		if (ex && ex->tunnel) {
			if (ex->reading && !ex->paused && !ex->end_delivered)
				httpd__exchange_deliver_end(ex);  /* the client is done sending */
		} else if (c->stream_req && c->in_request) {
			/* the client left in the middle of a request it streams */
			httpd__conn_close(c, ASB_ETRANSPORT);
			return;
		} else if (ex && ex->end_on_client_eof && ex->body_done) {
			/* the client went away (or will read no more): stop now */
			httpd__conn_close(c, ASB_ETRANSPORT);
			return;
		} else if (ex) {
			c->close_after = true;  /* half-close: the answer still goes out */
		} else if (c->pending_writes > 0) {
			/* half-closed client still gets the answers queued for it */
			c->close_after = true;
			httpd__conn_finish(c);
			return;
		} else {
			httpd__conn_close(c, ASB_ETRANSPORT);
			return;
		}
	}
	if (c->state != HTTPD__CONN_OPEN)
		return;
	bool want = !c->peer_eof && held < INPUT_HELD_BYTES;
	if (want && !c->reading) {
		if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
			httpd__conn_close(c, ASB_ETRANSPORT);
			return;
		}
		c->reading = true;
	} else if (!want && c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = false;
	}
}

static void conn_on_eof(conn *c)
{
	c->peer_eof = true;
	if (c->reading) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = false;
	}
	conn_after_input(c);
}

static void on_kick(void *ud)
{
	conn *c = ud;
	c->kick_posted = false;
	if (c->free_pending) {
		conn_free(c);
		return;
	}
	if (c->state == HTTPD__CONN_OPEN)
		conn_pump(c);
}

void httpd__conn_kick(conn *c)
{
	if (c->kick_posted || c->state != HTTPD__CONN_OPEN)
		return;
	if (httpd__loop_defer(c->lp, on_kick, c) == 0)
		c->kick_posted = true;
	else
		httpd__conn_close(c, ASB_ENOMEM);
}

void httpd__conn_exchange_done(conn *c, httpd_exchange *ex)
{
	if (c->ex == ex)
		c->ex = NULL;
	if (c->state != HTTPD__CONN_OPEN)
		return;
	if (ex->tunnel || c->parse_done) {
		c->close_after = true;  /* a tunnel, or a refused upgrade: HTTP cannot go on */
		httpd__conn_finish(c);
		return;
	}
	if (c->stream_req && c->in_request) {
		/* the handler answered without reading the whole body */
		uint64_t left = ex->content_length >= 0 ? (uint64_t)ex->content_length - ex->body_received : 0;
		bool drain = ex->content_length >= 0 && left <= DISCARD_MAX_BYTES &&
		             !(ex->expect_continue && !ex->continue_sent) && !c->close_after;
		if (!drain) {
			c->close_after = true;
			httpd__conn_finish(c);
			return;
		}
		c->discard_left = left;
		conn_timer_start(c, (uint64_t)c->srv->read_timeout_ms);
	} else if (c->close_after) {
		httpd__conn_finish(c);
		return;
	} else {
		conn_timer_start(c, (uint64_t)c->srv->idle_timeout_ms);
	}
	httpd__conn_kick(c);
}

/* --- sockets ---------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	conn *c = h->data;
	/* reads are consumed (or copied into conn->in) before the next one */
	*buf = uv_buf_init(c->lp->read_buffer, READ_BUFFER_BYTES);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	conn *c = stream->data;
	if (nread < 0) {
		if (c->state == HTTPD__CONN_OPEN && nread == UV_EOF) {
			conn_on_eof(c);
			return;
		}
		httpd__conn_close(c, ASB_ETRANSPORT);
		return;
	}
	if (nread == 0 || c->state != HTTPD__CONN_OPEN)
		return;  /* lingering: drop */
	c->tp->on_read(c, buf->base, (size_t)nread);
}

static void accept_one(loop *lp)
{
	httpd_server *s = lp->srv;
	conn *c = calloc(1, sizeof(*c));
	if (!c) {
		asb_log(s->log, ASB_LOG_ERROR, "http: out of memory accepting a connection",
		        "server", s->name, NULL);
		lp->accept_pending = true;  /* retried when a connection closes */
		return;
	}
	c->srv = s;
	c->lp = lp;
	c->tp = &plain_transport;
	c->sf_fd = -1;
	uv_tcp_init(&lp->uv, &c->tcp);
	uv_timer_init(&lp->uv, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->open_handles = 2;
	c->next = lp->conns;
	if (lp->conns)
		lp->conns->prev = c;
	lp->conns = c;
	lp->nconns++;
	httpd_parser_init(&c->parser, HTTPD_PARSER_REQUEST, &parser_callbacks, c);
	if (uv_accept((uv_stream_t *)&lp->listener, (uv_stream_t *)&c->tcp) < 0) {
		httpd__conn_close(c, ASB_ETRANSPORT);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	struct sockaddr_storage peer;
	int plen = sizeof(peer);
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer, &plen) == 0) {
		if (peer.ss_family == AF_INET6) {
			struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&peer;
			uv_ip6_name(a6, c->peer_ip, sizeof(c->peer_ip));
			c->peer_port = ntohs(a6->sin6_port);
		} else {
			struct sockaddr_in *a4 = (struct sockaddr_in *)&peer;
			uv_ip4_name(a4, c->peer_ip, sizeof(c->peer_ip));
			c->peer_port = ntohs(a4->sin_port);
		}
	}
	if (s->tls) {
		c->tp = &tls_transport;
		if (httpd__tls_conn_new(&c->tls, s->tls, uv_now(&lp->uv), c, tls_send_raw, tls_deliver) < 0) {
			httpd__conn_close(c, ASB_ENOMEM);
			return;
		}
	}
	/* the handshake must also finish within the idle time */
	conn_timer_start(c, (uint64_t)s->idle_timeout_ms);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		httpd__conn_close(c, ASB_ETRANSPORT);
	else
		c->reading = true;
}

static void on_connection(uv_stream_t *listener, int status)
{
	loop *lp = listener->data;
	if (status < 0) {
		asb_log(lp->srv->log, ASB_LOG_WARN, "http accept failed", "server", lp->srv->name,
		        "error", uv_strerror(status), NULL);
		return;
	}
	if (lp->nconns >= lp->max_connections) {
		/* Not accepting leaves the connection with libuv, which stops
		 * watching the listener until we take it: the rest queue in the
		 * kernel's backlog. */
		lp->accept_pending = true;
		return;
	}
	accept_one(lp);
}

static void on_server_handle_closed(uv_handle_t *h)
{
	(void)h;
}

/* Called whenever a connection or an exchange goes away. */
static void maybe_accept_or_finish(loop *lp)
{
	if (lp->draining) {
		if (lp->nconns == 0 && lp->nexchanges == 0 && !lp->finished) {
			lp->finished = true;
			uv_close((uv_handle_t *)&lp->deadline, on_server_handle_closed);
			uv_close((uv_handle_t *)&lp->wake, on_server_handle_closed);
			uv_close((uv_handle_t *)&lp->cork_check, on_server_handle_closed);
			uv_close((uv_handle_t *)&lp->cork_idle, on_server_handle_closed);
		}
		return;
	}
	if (lp->accept_pending && lp->nconns < lp->max_connections) {
		lp->accept_pending = false;
		accept_one(lp);
	}
}

/* An exchange's on_close has run (exchange.c). */
void httpd__loop_exchange_gone(loop *lp)
{
	lp->nexchanges--;
	maybe_accept_or_finish(lp);
}

static void on_deadline(uv_timer_t *t)
{
	loop *lp = t->data;
	if (lp->nconns > 0) {
		atomic_store(&lp->srv->shutdown_rc, ASB_ETIMEOUT);
		asb_log(lp->srv->log, ASB_LOG_WARN, "http shutdown deadline passed; closing connections",
		        "server", lp->srv->name, NULL);
	}
	for (conn *c = lp->conns; c; c = c->next)
		httpd__conn_close(c, ASB_ESHUTDOWN);
}

static void begin_drain(loop *lp)
{
	lp->draining = true;
	uv_close((uv_handle_t *)&lp->listener, on_server_handle_closed);
	for (conn *c = lp->conns; c; c = c->next) {
		if (c->state != HTTPD__CONN_OPEN)
			continue;          /* already on its way out */
		if (!c->in_request && c->pending_writes == 0 && !c->ex)
			httpd__conn_close(c, ASB_ESHUTDOWN);  /* idle */
		else
			c->close_after = true;
	}
	/* answers already queued on a keep-alive connection: close after them */
	for (conn *c = lp->conns; c; c = c->next)
		if (c->state == HTTPD__CONN_OPEN && !c->in_request && !c->ex)
			httpd__conn_finish(c);
	long timeout = atomic_load(&lp->srv->shutdown_timeout_ms);
	uv_timer_start(&lp->deadline, on_deadline, (uint64_t)(timeout > 0 ? timeout : 0), 0);
	maybe_accept_or_finish(lp);
}

/* Posted calls, and the shutdown request, on the loop thread. */
static void on_wake(uv_async_t *a)
{
	loop *lp = a->data;
	run_calls(lp, false);
	if (atomic_load(&lp->shutdown_requested) && !lp->draining)
		begin_drain(lp);
}

/* Frees the records a loop kept for reuse (its thread is done with them). */
static void spares_free(loop *lp)
{
	while (lp->spare_calls) {
		httpd__call *next = lp->spare_calls->next;
		free(lp->spare_calls);
		lp->spare_calls = next;
	}
	while (lp->spare_writes) {
		httpd__write *next = lp->spare_writes->next;
		free(lp->spare_writes);
		lp->spare_writes = next;
	}
	lp->nspare_calls = lp->nspare_writes = 0;
}

static void *loop_thread(void *arg)
{
	loop *lp = arg;
	/* A client that hangs up while we write must cost an EPIPE, not the
	 * process: SIGPIPE from a write is sent to the writing thread, and
	 * blocking it here leaves the process's signal dispositions alone. */
	sigset_t pipe;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	uv_run(&lp->uv, UV_RUN_DEFAULT);
	/* Calls that came after the last wake-up still run, once; what their
	 * functions close on the loop finishes closing here. */
	for (;;) {
		pthread_mutex_lock(&lp->calls_lock);
		bool more = lp->calls != NULL;
		pthread_mutex_unlock(&lp->calls_lock);
		if (!more)
			break;
		run_calls(lp, false);
		uv_run(&lp->uv, UV_RUN_DEFAULT);
	}
	run_calls(lp, true);
	uv_run(&lp->uv, UV_RUN_DEFAULT);
	spares_free(lp);
	return NULL;
}

/* --- lifecycle ---------------------------------------------------------------------- */

int httpd_server_new(httpd_server **out, const httpd_server_options *o)
{
	if (!out || !o)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server: out and options are required");
	*out = NULL;
	if (o->version < 1 || o->version > HTTPD_SERVER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server: unknown options version %u", o->version);
	/* fields of later versions are absent from an older caller's struct */
	const char *cert = o->version >= 2 ? o->tls_cert_file : NULL;
	const char *key = o->version >= 2 ? o->tls_key_file : NULL;
	unsigned int loops = o->version >= 3 && o->loops > 1 ? o->loops : 1;
	const char *client_ca = o->version >= 3 && o->tls_client_ca_file && *o->tls_client_ca_file
		? o->tls_client_ca_file : NULL;
	const char *name = o->name ? o->name : "http";
	if ((cert && *cert) != (key && *key))
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server %s: TLS needs both a certificate and a key file",
		                     name);
	if (client_ca && !(cert && *cert))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http server %s: a client CA (mutual TLS) needs a TLS certificate and key", name);
	if (loops > MAX_LOOPS)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server %s: %u loops; at most %d", name, loops,
		                     MAX_LOOPS);
	if (!o->address || !*o->address)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server: an address is required (\"0\" disables)");
	httpd_server *s = calloc(1, sizeof(*s));
	if (!s)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http server: out of memory");
	s->name = strdup(name);
	if (!s->name) {
		free(s);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http server: out of memory");
	}
	s->nloops = loops;
	s->disabled = httpd_address_disabled(o->address);
	if (!s->disabled) {
		int rc = split_host_port(o->address, &s->host, &s->port);
		if (rc < 0) {
			httpd_server_free(s);
			return rc == -2 ? asb_error_set(ASB_ENOMEM, 0, NULL, "http server: out of memory")
				: asb_error_set(ASB_EINVAL, 0, NULL,
				                "http server %s: invalid address \"%s\": want host:port, :port or 0",
				                name, o->address);
		}
	}
	s->max_header_bytes = o->max_header_bytes ? o->max_header_bytes : 64 * 1024;
	s->max_body_bytes = o->max_body_bytes ? o->max_body_bytes : 1024 * 1024;
	s->max_connections = o->max_connections ? o->max_connections : 1024;
	s->idle_timeout_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms : 60000;
	s->read_timeout_ms = o->read_timeout_ms > 0 ? o->read_timeout_ms : 30000;
	s->log = o->logger;
	if (cert && *cert && !s->disabled) {
		int rc = httpd__tls_server_new(&s->tls, s->name, cert, key, client_ca, o->logger);
		if (rc < 0) {
			httpd_server_free(s);
			return rc;
		}
	}
	*out = s;
	return 0;
}

static int route_add(httpd_server *s, const char *method, const char *path,
                     httpd_handler_fn fn, httpd_stream_fn stream_fn, void *userdata,
                     void (*free_userdata)(void *))
{
	if (!s || !path || path[0] != '/' || (!fn && !stream_fn) || s->started) {
		if (free_userdata)
			free_userdata(userdata);
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "http route %s: needs a path starting with '/', a handler, and a server not started",
		                     path ? path : "(null)");
	}
	route *r = realloc(s->routes, (s->nroutes + 1) * sizeof(*r));
	if (!r) {
		if (free_userdata)
			free_userdata(userdata);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http route: out of memory");
	}
	s->routes = r;
	r = &s->routes[s->nroutes];
	memset(r, 0, sizeof(*r));
	size_t len = strlen(path);
	r->prefix = path[len - 1] == '*';
	r->path_len = r->prefix ? len - 1 : len;
	r->path = strndup(path, r->path_len);
	r->method = method ? strdup(method) : NULL;
	r->fn = fn;
	r->stream_fn = stream_fn;
	r->userdata = userdata;
	r->free_userdata = free_userdata;
	if (!r->path || (method && !r->method)) {
		free(r->path);
		free(r->method);
		if (free_userdata)
			free_userdata(userdata);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http route: out of memory");
	}
	s->nroutes++;
	return 0;
}

int httpd__server_route_owned(httpd_server *s, const char *method, const char *path,
                                 httpd_handler_fn fn, void *userdata,
                                 void (*free_userdata)(void *))
{
	if (!fn) {
		if (free_userdata)
			free_userdata(userdata);
		return asb_error_set(ASB_EINVAL, 0, NULL, "http route %s: a handler is required",
		                     path ? path : "(null)");
	}
	return route_add(s, method, path, fn, NULL, userdata, free_userdata);
}

int httpd_server_route(httpd_server *s, const char *method, const char *path,
                          httpd_handler_fn fn, void *userdata)
{
	return httpd__server_route_owned(s, method, path, fn, userdata, NULL);
}

int httpd_server_route_stream(httpd_server *s, const char *method, const char *path,
                                 httpd_stream_fn fn, void *userdata)
{
	if (!fn)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http stream route %s: a handler is required",
		                     path ? path : "(null)");
	return route_add(s, method, path, NULL, fn, userdata, NULL);
}

/* Resolves host into `ss`: "" is every interface (IPv6 any, dual-stack). */
static int resolve(const httpd_server *s, const char *host, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (!*host) {
		uv_ip6_addr("::", s->port, (struct sockaddr_in6 *)ss);
		return 0;
	}
	if (uv_ip4_addr(host, s->port, (struct sockaddr_in *)ss) == 0 ||
	    uv_ip6_addr(host, s->port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0)
		return asb_error_set(ASB_ETRANSPORT, 0, NULL, "http server %s: cannot resolve \"%s\": %s",
		                     s->name, host, gai_strerror(rc));
	const struct addrinfo *pick = res;
	for (const struct addrinfo *a = res; a; a = a->ai_next)
		if (a->ai_family == AF_INET) {
			pick = a;
			break;
		}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)s->port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)s->port);
	freeaddrinfo(res);
	return 0;
}

static void set_port(struct sockaddr_storage *ss, int port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

/* Creates the listener's socket (SO_REUSEPORT when loops share the port) and binds it. */
static int listener_bind(loop *lp, const struct sockaddr_storage *ss)
{
	int err = uv_tcp_init_ex(&lp->uv, &lp->listener, ss->ss_family);
	if (err < 0)
		return err;
	lp->listening = true;
	lp->listener.data = lp;
	if (lp->srv->nloops > 1) {
		uv_os_fd_t fd;
		int one = 1;
		if (uv_fileno((uv_handle_t *)&lp->listener, &fd) != 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
			return UV_EINVAL;
	}
	return uv_tcp_bind(&lp->listener, (const struct sockaddr *)ss, 0);
}

static int bind_and_listen(httpd_server *s)
{
	struct sockaddr_storage ss;
	int rc = resolve(s, s->host, &ss);
	if (rc < 0)
		return rc;
	int err = 0;
	for (unsigned int i = 0; i < s->nloops && err == 0; i++) {
		loop *lp = &s->loops[i];
		if (i > 0)
			set_port(&ss, s->bound_port);  /* port 0: the others join the first's */
		err = listener_bind(lp, &ss);
		if (err == UV_EAFNOSUPPORT && !*s->host && ss.ss_family == AF_INET6) {
			/* no IPv6 on this host: every IPv4 interface then */
			if (lp->listening) {
				uv_close((uv_handle_t *)&lp->listener, NULL);
				uv_run(&lp->uv, UV_RUN_NOWAIT);
				lp->listening = false;
			}
			uv_ip4_addr("0.0.0.0", i > 0 ? s->bound_port : s->port, (struct sockaddr_in *)&ss);
			err = listener_bind(lp, &ss);
		}
		if (err == 0)
			err = uv_listen((uv_stream_t *)&lp->listener, 511, on_connection);
		if (err == 0 && i == 0) {
			struct sockaddr_storage bound;
			int len = sizeof(bound);
			if (uv_tcp_getsockname(&lp->listener, (struct sockaddr *)&bound, &len) == 0)
				s->bound_port = ntohs(bound.ss_family == AF_INET
				                      ? ((struct sockaddr_in *)&bound)->sin_port
				                      : ((struct sockaddr_in6 *)&bound)->sin6_port);
		}
	}
	if (err < 0)
		return asb_error_set(ASB_ETRANSPORT, 0, NULL, "http server %s: cannot listen on %s:%d: %s",
		                     s->name, *s->host ? s->host : "*", s->port, uv_strerror(err));
	return 0;
}

/* Closes every handle of a loop that will not run (a failed start). */
static void close_all_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void loops_destroy(httpd_server *s)
{
	for (unsigned int i = 0; s->loops && i < s->nloops; i++) {
		loop *lp = &s->loops[i];
		if (!lp->initialized)
			continue;
		uv_walk(&lp->uv, close_all_walk, NULL);
		uv_run(&lp->uv, UV_RUN_DEFAULT);
		uv_loop_close(&lp->uv);
		for (httpd__call *call = lp->local, *next; call; call = next) {
			next = call->next;
			free(call);
		}
		lp->local = lp->local_tail = NULL;
		spares_free(lp);
		pthread_mutex_destroy(&lp->calls_lock);
		lp->initialized = false;
	}
	free(s->loops);
	s->loops = NULL;
}

int httpd_server_start(httpd_server *s)
{
	if (!s || s->started)
		return asb_error_set(ASB_EINVAL, 0, NULL, "http server: already started");
	if (s->disabled)
		return 0;
	s->loops = calloc(s->nloops, sizeof(*s->loops));
	if (!s->loops)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "http server %s: out of memory", s->name);
	unsigned int per_loop = (s->max_connections + s->nloops - 1) / s->nloops;
	/* Loops are set up here, on the caller's thread, before their threads
	 * exist: bind errors come back to the caller. */
	for (unsigned int i = 0; i < s->nloops; i++) {
		loop *lp = &s->loops[i];
		lp->srv = s;
		lp->index = i;
		lp->max_connections = per_loop;
		int err = uv_loop_init(&lp->uv);
		if (err < 0) {
			loops_destroy(s);
			return asb_error_set(ASB_ERROR, 0, NULL, "http server %s: %s", s->name, uv_strerror(err));
		}
		pthread_mutex_init(&lp->calls_lock, NULL);
		lp->initialized = true;
		uv_async_init(&lp->uv, &lp->wake, on_wake);
		lp->wake.data = lp;
		uv_timer_init(&lp->uv, &lp->deadline);
		lp->deadline.data = lp;
		uv_check_init(&lp->uv, &lp->cork_check);
		lp->cork_check.data = lp;
		uv_check_start(&lp->cork_check, on_cork_check);
		uv_unref((uv_handle_t *)&lp->cork_check);
		uv_idle_init(&lp->uv, &lp->cork_idle);
		lp->cork_idle.data = lp;
		uv_unref((uv_handle_t *)&lp->cork_idle);
	}
	int rc = bind_and_listen(s);
	for (unsigned int i = 0; rc == 0 && i < s->nloops; i++) {
		if (pthread_create(&s->loops[i].thread, NULL, loop_thread, &s->loops[i]) != 0)
			rc = asb_error_set(ASB_ERROR, 0, NULL, "http server %s: cannot start its thread", s->name);
		else
			s->loops[i].thread_started = true;
	}
	if (rc < 0) {
		/* threads already running end at once: drained with nothing to do */
		for (unsigned int i = 0; i < s->nloops; i++) {
			loop *lp = &s->loops[i];
			if (!lp->thread_started)
				continue;
			atomic_store(&lp->shutdown_requested, true);
			uv_async_send(&lp->wake);
			pthread_join(lp->thread, NULL);
		}
		loops_destroy(s);
		return rc;
	}
	s->started = true;
	asb_log_typed(s->log, ASB_LOG_INFO, s->tls ? "serving HTTPS" : "serving HTTP",
	              ASB_LOG_STR("server", s->name), ASB_LOG_STR("host", *s->host ? s->host : "*"),
	              ASB_LOG_INT("port", s->bound_port), ASB_LOG_INT("loops", s->nloops));
	return 0;
}

int httpd_server_port(const httpd_server *s)
{
	return s && s->started ? s->bound_port : 0;
}

int httpd_server_shutdown(httpd_server *s, long timeout_ms)
{
	if (!s || !s->started || s->joined)
		return 0;
	atomic_store(&s->shutdown_timeout_ms, timeout_ms > 0 ? timeout_ms : 0);
	for (unsigned int i = 0; i < s->nloops; i++) {
		atomic_store(&s->loops[i].shutdown_requested, true);
		uv_async_send(&s->loops[i].wake);
	}
	for (unsigned int i = 0; i < s->nloops; i++)
		pthread_join(s->loops[i].thread, NULL);
	s->joined = true;
	for (unsigned int i = 0; i < s->nloops; i++) {
		uv_loop_close(&s->loops[i].uv);
		/* the mutex stays: a late httpd_server_call() gets ASB_ESHUTDOWN */
	}
	int rc = atomic_load(&s->shutdown_rc);
	if (rc < 0)
		return asb_error_set(rc, 0, NULL, "http server %s: connections cut at the shutdown deadline",
		                     s->name);
	return 0;
}

void httpd_server_free(httpd_server *s)
{
	if (!s)
		return;
	httpd_server_shutdown(s, 0);
	for (unsigned int i = 0; s->loops && i < s->nloops; i++)
		if (s->loops[i].initialized)
			pthread_mutex_destroy(&s->loops[i].calls_lock);
	free(s->loops);
	for (size_t i = 0; i < s->nroutes; i++) {
		free(s->routes[i].method);
		free(s->routes[i].path);
		if (s->routes[i].free_userdata)
			s->routes[i].free_userdata(s->routes[i].userdata);
	}
	free(s->routes);
	httpd__tls_server_free(s->tls);
	free(s->host);
	free(s->name);
	free(s);
}
