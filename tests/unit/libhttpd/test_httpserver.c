/*
 * Unit tests of libhttpd/src/server.c, message.c and
 * handlers.c: a real server on loopback, driven by libcurl and,
 * where a test needs bytes no well-behaved client sends, by raw sockets.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "httpd/server.h"
#include "asb/metrics.h"

#define WAIT_MS 10000  /* generous bound for things that must happen */

static httpd_server *srv;
static int port;

/* --- handlers ------------------------------------------------------------ */

static void hello(const httpd_request *req, httpd_response *res, void *ud)
{
	httpd_response_write(res, "hello", 5);
}

/* Echoes what the server parsed, one field per line. */
static void echo(const httpd_request *req, httpd_response *res, void *ud)
{
	size_t len;
	const char *body = httpd_request_body(req, &len);
	const char *x = httpd_request_header(req, "x-test");
	char head[512];
	snprintf(head, sizeof(head), "method=%s\npath=%s\nquery=%s\nx-test=%s\nheaders=%zu\nbody=",
	         httpd_request_method(req), httpd_request_path(req),
	         httpd_request_query(req), x ? x : "(none)",
	         httpd_request_header_count(req));
	httpd_response_set_status(res, 201);
	ck_assert_int_eq(httpd_response_add_header(res, "Content-Type", "text/x-echo"), 0);
	ck_assert_int_eq(httpd_response_add_header(res, "X-Echo", "yes"), 0);
	ck_assert_int_eq(httpd_response_add_header(res, "Content-Length", "1"), ASB_EINVAL);
	ck_assert_int_eq(httpd_response_add_header(res, "X-Bad", "a\r\nInjected: 1"), ASB_EINVAL);
	ck_assert_int_eq(httpd_response_add_header(res, "Bad Name", "v"), ASB_EINVAL);
	httpd_response_write(res, head, strlen(head));
	httpd_response_write(res, body, len);
}

static void exact_files(const httpd_request *req, httpd_response *res, void *ud)
{
	httpd_response_write(res, "exact", 5);
}

static void prefix_files(const httpd_request *req, httpd_response *res, void *ud)
{
	const char *p = httpd_request_path(req);
	httpd_response_write(res, p, strlen(p));
}

/* Every field as the server parsed it, "name=value" a line, then the path
 * and the query: the head's storage as handlers see it. */
static void fields(const httpd_request *req, httpd_response *res, void *ud)
{
	char line[600];
	for (size_t i = 0; i < httpd_request_header_count(req); i++) {
		const char *n, *v;
		ck_assert_int_eq(httpd_request_header_at(req, i, &n, &v), 0);
		snprintf(line, sizeof(line), "%s=%s\n", n, v);
		httpd_response_write(res, line, strlen(line));
	}
	snprintf(line, sizeof(line), "path=%s query=%s\n", httpd_request_path(req),
	         httpd_request_query(req));
	httpd_response_write(res, line, strlen(line));
}

static atomic_int slow_started;

static void slow(const httpd_request *req, httpd_response *res, void *ud)
{
	atomic_store(&slow_started, 1);
	usleep(300 * 1000);  /* the answer is still being produced when shutdown starts */
	httpd_response_write(res, "done", 4);
}

/* --- fixtures -------------------------------------------------------------- */

static httpd_server *start(const httpd_server_options *o)
{
	httpd_server *s = NULL;
	ck_assert_int_eq(httpd_server_new(&s, o), 0);
	ck_assert_int_eq(httpd_server_route(s, "GET", "/hello", hello, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, "POST", "/echo", echo, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, "PUT", "/echo", echo, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, NULL, "/files/*", prefix_files, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, "GET", "/files/exact", exact_files, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, "GET", "/slow", slow, NULL), 0);
	ck_assert_int_eq(httpd_server_route(s, NULL, "/fields", fields, NULL), 0);
	ck_assert_int_eq(httpd_server_start(s), 0);
	ck_assert_int_gt(httpd_server_port(s), 0);
	return s;
}

static httpd_server_options loopback_options(void)
{
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = "127.0.0.1:0";
	o.name = "test";
	return o;
}

static void setup_default(void)
{
	httpd_server_options o = loopback_options();
	o.max_header_bytes = 4096;
	o.max_body_bytes = 1024;
	srv = start(&o);
	port = httpd_server_port(srv);
}

static void teardown(void)
{
	httpd_server_free(srv);
	srv = NULL;
}

/* --- a libcurl client ---------------------------------------------------------- */

#include "curlreply.h"

static void perform(CURL *h, const char *method, const char *path, const char *body,
                    long body_len, struct curl_slist *headers, reply *r)
{
	char url[256];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	memset(r, 0, sizeof(*r));
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		if (body) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, body_len);
		}
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, strcmp(method, "GET") ? method : NULL);
	}
	r->rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
}

static reply *request(const char *method, const char *path, const char *body, long body_len,
                      struct curl_slist *headers)
{
	static reply r;
	CURL *h = curl_easy_init();
	ck_assert_ptr_nonnull(h);
	perform(h, method, path, body, body_len, headers, &r);
	curl_easy_cleanup(h);
	ck_assert_msg(r.rc == CURLE_OK, "curl: %s", curl_easy_strerror(r.rc));
	return &r;
}

/* --- raw sockets ------------------------------------------------------------- */

static int connect_raw(int p)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, s, len, MSG_NOSIGNAL);
		ck_assert_int_gt(n, 0);
		s += n;
		len -= (size_t)n;
	}
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* Waits up to `ms` for readable data; true when readable (or EOF). */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

/*
 * Reads one response (headers and a Content-Length body) into buf.
 * Returns its length, or the bytes read before EOF/timeout.
 */
static size_t read_response(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		buf[len] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			size_t want = (size_t)(end + 4 - buf) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
			if (len >= want)
				return want;
		}
		if (len + 1 >= cap || !readable(fd, WAIT_MS))
			return len;
		ssize_t n = recv(fd, buf + len, 1, 0);  /* byte by byte: never read past one answer */
		if (n <= 0)
			return len;
		len += (size_t)n;
	}
}

/* True when the peer closes the connection within WAIT_MS (EOF or reset). */
static bool closed_by_peer(int fd)
{
	char c;
	if (!readable(fd, WAIT_MS))
		return false;
	ssize_t n = recv(fd, &c, 1, 0);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* --- tests ---------------------------------------------------------------------- */

START_TEST(routes_get_method_path_query_headers_and_body)
{
	struct curl_slist *hd = curl_slist_append(NULL, "X-Test:   spaced value  ");
	reply *r = request("POST", "/echo?a=1&b=%20", "payload", 7, hd);
	curl_slist_free_all(hd);
	ck_assert_int_eq(r->status, 201);
	ck_assert_str_eq(r->body, "method=POST\npath=/echo\nquery=a=1&b=%20\nx-test=spaced value\n"
	                          "headers=5\nbody=payload");
	ck_assert_ptr_nonnull(strstr(r->headers, "Content-Type: text/x-echo\r\n"));
	ck_assert_ptr_nonnull(strstr(r->headers, "X-Echo: yes\r\n"));
	ck_assert_ptr_nonnull(strstr(r->headers, "Content-Length: "));
	ck_assert_ptr_nonnull(strstr(r->headers, "Date: "));
	ck_assert_ptr_null(strstr(r->headers, "Injected"));

	r = request("GET", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "hello");
	ck_assert_ptr_nonnull(strstr(r->headers, "Content-Type: text/plain; charset=utf-8\r\n"));
}
END_TEST

START_TEST(prefix_and_exact_routes)
{
	reply *r = request("GET", "/files/a/b.txt", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "/files/a/b.txt");
	r = request("DELETE", "/files/x", NULL, 0, NULL);  /* NULL method: any */
	ck_assert_int_eq(r->status, 200);
	r = request("GET", "/files/exact", NULL, 0, NULL);
	ck_assert_str_eq(r->body, "exact");
}
END_TEST

START_TEST(keep_alive_reuses_the_connection)
{
	CURL *h = curl_easy_init();
	reply r;
	long connects = -1, port1 = 0, port2 = 0;
	perform(h, "GET", "/hello", NULL, 0, NULL, &r);
	ck_assert_int_eq(r.rc, CURLE_OK);
	ck_assert_ptr_null(strstr(r.headers, "Connection: close"));
	curl_easy_getinfo(h, CURLINFO_LOCAL_PORT, &port1);
	perform(h, "POST", "/echo", "x", 1, NULL, &r);
	ck_assert_int_eq(r.rc, CURLE_OK);
	ck_assert_int_eq(r.status, 201);
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
	curl_easy_getinfo(h, CURLINFO_LOCAL_PORT, &port2);
	ck_assert_int_eq(connects, 0);  /* no new connection for the second request */
	ck_assert_int_eq(port1, port2);
	curl_easy_cleanup(h);
}
END_TEST

START_TEST(pipelined_requests_are_answered_in_order)
{
	int fd = connect_raw(port);
	send_str(fd, "GET /files/one HTTP/1.1\r\nHost: x\r\n\r\n"
	             "GET /files/two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	             "GET /files/three HTTP/1.1\r\nHost: x\r\n\r\n");
	char buf[4096];
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n/files/one"));
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n/files/two"));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	/* nothing after "Connection: close" is served */
	ck_assert(closed_by_peer(fd));
	close(fd);
}
END_TEST

/* The head is stored in one growing buffer: fields arriving in pieces,
 * more fields and bytes than its first size, empty values, trailing blanks
 * and a chunked body's trailers (not fields of the request) all read back
 * as sent. */
START_TEST(head_fields_survive_pieces_growth_and_trailers)
{
	char req[3072], want[3072];
	size_t n = (size_t)snprintf(req, sizeof(req), "POST /fields?q=1%%202 HTTP/1.1\r\nHost: x\r\n"
	                            "X-Empty:\r\nX-Blank:  \t\r\nX-Trail: v \t \r\n");
	size_t w = (size_t)snprintf(want, sizeof(want), "Host=x\nX-Empty=\nX-Blank=\nX-Trail=v\n");
	for (int i = 0; i < 40; i++) {  /* past 16 fields and past 1 KiB of head */
		n += (size_t)snprintf(req + n, sizeof(req) - n, "X-Field-%02d: value-%02d-%s\r\n", i, i,
		                      "abcdefghijklmnopqrstuvwxyz");
		w += (size_t)snprintf(want + w, sizeof(want) - w, "X-Field-%02d=value-%02d-%s\n", i, i,
		                      "abcdefghijklmnopqrstuvwxyz");
	}
	n += (size_t)snprintf(req + n, sizeof(req) - n, "Transfer-Encoding: chunked\r\n\r\n"
	                      "3\r\nabc\r\n0\r\nX-Trailer: late\r\n\r\n");
	w += (size_t)snprintf(want + w, sizeof(want) - w,
	                      "Transfer-Encoding=chunked\npath=/fields query=q=1%%202\n");
	int fd = connect_raw(port);
	/* in pieces of 7 bytes, each its own segment, so fields straddle reads */
	for (size_t off = 0; off < n; off += 7) {
		send_all(fd, req + off, n - off < 7 ? n - off : 7);
		usleep(200);
	}
	char buf[8192];
	size_t got = read_response(fd, buf, sizeof(buf));
	ck_assert_uint_gt(got, 0);
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	char *body = strstr(buf, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	ck_assert_str_eq(body + 4, want);
	/* the next request on the connection starts from an empty head */
	send_str(fd, "GET /fields HTTP/1.1\r\nHost: y\r\n\r\n");
	read_response(fd, buf, sizeof(buf));
	body = strstr(buf, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	ck_assert_str_eq(body + 4, "Host=y\npath=/fields query=\n");
	close(fd);
}
END_TEST

/* A hostile head of many tiny fields ("a:" with no value; 5 bytes each as
 * the limit counts them): 700, under the 4 KiB limit, are all kept (the
 * field list and the head buffer grow past their first sizes); 1,100 get
 * 431, and the server serves the next connection. */
START_TEST(a_flood_of_tiny_fields_is_bounded)
{
	static char req[16384];
	size_t n = (size_t)snprintf(req, sizeof(req), "GET /fields HTTP/1.1\r\n");
	for (int i = 0; i < 700; i++)
		n += (size_t)snprintf(req + n, sizeof(req) - n, "a:\r\n");
	n += (size_t)snprintf(req + n, sizeof(req) - n, "\r\n");
	int fd = connect_raw(port);
	send_all(fd, req, n);
	static char buf[16384];
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	char *body = strstr(buf, "\r\n\r\n");
	ck_assert_ptr_nonnull(body);
	size_t lines = 0;
	for (char *p = body + 4; (p = strstr(p, "a=\n")); p += 3)
		lines++;
	ck_assert_uint_eq(lines, 700);
	close(fd);

	n = (size_t)snprintf(req, sizeof(req), "GET /fields HTTP/1.1\r\n");
	for (int i = 0; i < 1100; i++)
		n += (size_t)snprintf(req + n, sizeof(req) - n, "a:\r\n");
	n += (size_t)snprintf(req + n, sizeof(req) - n, "\r\n");
	fd = connect_raw(port);
	send_all(fd, req, n);
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 431 "));
	close(fd);

	reply *r = request("GET", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
}
END_TEST

START_TEST(http10_closes_unless_keep_alive_asked)
{
	char buf[4096];
	int fd = connect_raw(port);
	send_str(fd, "GET /hello HTTP/1.0\r\n\r\n");
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nhello"));
	ck_assert(closed_by_peer(fd));
	close(fd);

	fd = connect_raw(port);
	send_str(fd, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: keep-alive\r\n"));
	send_str(fd, "GET /files/again HTTP/1.0\r\n\r\n");
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n/files/again"));
	close(fd);
}
END_TEST

START_TEST(unknown_path_404_and_wrong_method_405)
{
	reply *r = request("GET", "/nope", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 404);
	ck_assert_str_eq(r->body, "404 page not found\n");
	r = request("DELETE", "/echo", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 405);
	ck_assert_ptr_nonnull(strstr(r->headers, "Allow: POST, PUT\r\n"));
	r = request("POST", "/hello", "", 0, NULL);
	ck_assert_int_eq(r->status, 405);
	ck_assert_ptr_nonnull(strstr(r->headers, "Allow: GET, HEAD\r\n"));
	/* HEAD is served by the GET route, without a body */
	r = request("HEAD", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_uint_eq(r->len, 0);
	ck_assert_ptr_nonnull(strstr(r->headers, "Content-Length: 5\r\n"));
	/* the server still answers after errors */
	r = request("GET", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
}
END_TEST

START_TEST(oversized_headers_get_431)
{
	static char big[8192];
	memset(big, 'a', sizeof(big) - 1);
	memcpy(big, "X-Big: ", 7);
	struct curl_slist *hd = curl_slist_append(NULL, big);
	reply *r = request("GET", "/hello", NULL, 0, hd);
	curl_slist_free_all(hd);
	ck_assert_int_eq(r->status, 431);
	ck_assert_ptr_nonnull(strstr(r->headers, "Connection: close\r\n"));

	/* a long request line counts too */
	int fd = connect_raw(port);
	send_str(fd, "GET /hello?");
	send_all(fd, big + 8, 5000);
	send_str(fd, " HTTP/1.1\r\n\r\n");
	char buf[4096];
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
	close(fd);

	r = request("GET", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
}
END_TEST

START_TEST(oversized_body_gets_413)
{
	static char body[4096];
	memset(body, 'b', sizeof(body));
	reply *r = request("POST", "/echo", body, sizeof(body), NULL);
	ck_assert_int_eq(r->status, 413);
	/* exactly at the limit is fine */
	r = request("POST", "/echo", body, 1024, NULL);
	ck_assert_int_eq(r->status, 201);

	/* a chunked body is cut when it passes the limit */
	int fd = connect_raw(port);
	send_str(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (int i = 0; i < 3; i++) {
		send_str(fd, "200\r\n");  /* 512 bytes per chunk */
		send_all(fd, body, 512);
		send_str(fd, "\r\n");
	}
	char buf[4096];
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 413 "));
	ck_assert(closed_by_peer(fd));
	close(fd);

	/* a chunked body under the limit arrives de-chunked */
	fd = connect_raw(port);
	send_str(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	             "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
	read_response(fd, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "body=abcde"));
	close(fd);
}
END_TEST

START_TEST(malformed_request_gets_400_and_server_keeps_serving)
{
	const char *bad[] = {
		"GARBAGE\r\n\r\n",
		"GET /hello HTTP/9.9x\r\n\r\n",
		"GET /hello HTTP/1.1\r\nBad Header\r\n\r\n",
		"POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = connect_raw(port);
		send_str(fd, bad[i]);
		char buf[4096];
		read_response(fd, buf, sizeof(buf));
		ck_assert_msg(strncmp(buf, "HTTP/1.1 400 Bad Request\r\n", 26) == 0,
		              "request %zu answered: %.40s", i, buf);
		ck_assert(closed_by_peer(fd));
		close(fd);
	}
	reply *r = request("GET", "/hello", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
}
END_TEST

enum { MANY = 200 };

START_TEST(many_concurrent_connections)
{
	static int fds[MANY];
	for (int i = 0; i < MANY; i++) {
		fds[i] = connect_raw(port);
		ck_assert_int_ge(fds[i], 0);
	}
	/* every connection is open before any request is sent */
	for (int i = 0; i < MANY; i++) {
		char req[128];
		snprintf(req, sizeof(req), "GET /files/%d HTTP/1.1\r\nHost: x\r\n\r\n", i);
		send_str(fds[i], req);
	}
	for (int i = 0; i < MANY; i++) {
		char buf[1024], want[64];
		read_response(fds[i], buf, sizeof(buf));
		snprintf(want, sizeof(want), "\r\n\r\n/files/%d", i);
		ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200 OK\r\n"));
		ck_assert_msg(strstr(buf, want) != NULL, "connection %d got %s", i, buf);
	}
	for (int i = 0; i < MANY; i++)
		close(fds[i]);
}
END_TEST

START_TEST(connections_over_the_limit_wait_their_turn)
{
	httpd_server_options o = loopback_options();
	o.max_connections = 1;
	httpd_server *s = start(&o);
	int p = httpd_server_port(s);
	int a = connect_raw(p);
	char buf[1024];
	send_str(a, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(a, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "hello"));
	/* a holds the only slot: b's request is not served while a is open */
	int b = connect_raw(p);
	ck_assert_int_ge(b, 0);
	send_str(b, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert(!readable(b, 300));
	close(a);
	read_response(b, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 200 OK\r\n"));
	close(b);
	httpd_server_free(s);
}
END_TEST

START_TEST(idle_connections_are_closed)
{
	httpd_server_options o = loopback_options();
	o.idle_timeout_ms = 100;
	o.read_timeout_ms = 100;
	httpd_server *s = start(&o);
	int fd = connect_raw(httpd_server_port(s));
	ck_assert(closed_by_peer(fd));  /* never sent anything */
	close(fd);
	fd = connect_raw(httpd_server_port(s));
	send_str(fd, "GET /hello HTTP/1.1\r\n");  /* never finishes its request */
	ck_assert(closed_by_peer(fd));
	close(fd);
	httpd_server_free(s);
}
END_TEST

typedef struct {
	int port;
	reply r;
} slow_client;

static void *slow_request(void *arg)
{
	slow_client *sc = arg;
	CURL *h = curl_easy_init();
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/slow", sc->port);
	memset(&sc->r, 0, sizeof(sc->r));
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sc->r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &sc->r);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)WAIT_MS);
	sc->r.rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &sc->r.status);
	curl_easy_cleanup(h);
	return NULL;
}

typedef struct {
	httpd_server *s;
	int rc;
} shutdown_call;

static void *shutdown_thread(void *arg)
{
	shutdown_call *sc = arg;
	sc->rc = httpd_server_shutdown(sc->s, WAIT_MS);
	return NULL;
}

START_TEST(graceful_shutdown_finishes_in_flight_and_closes_idle)
{
	char buf[2048];
	/* an idle keep-alive connection */
	int idle = connect_raw(port);
	send_str(idle, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	read_response(idle, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "hello"));
	/* a request half received: headers in, body not yet sent */
	int partial = connect_raw(port);
	send_str(partial, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
	                  "Expect: 100-continue\r\n\r\n");
	read_response(partial, buf, sizeof(buf));
	ck_assert_str_eq(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	/* a request whose handler is running */
	atomic_store(&slow_started, 0);
	slow_client sc = { .port = port };
	pthread_t t, st;
	ck_assert_int_eq(pthread_create(&t, NULL, slow_request, &sc), 0);
	for (int i = 0; i < WAIT_MS && !atomic_load(&slow_started); i++)
		usleep(1000);
	ck_assert(atomic_load(&slow_started));

	shutdown_call call = { srv, 1 };
	ck_assert_int_eq(pthread_create(&st, NULL, shutdown_thread, &call), 0);
	/* the idle connection closing shows the shutdown has begun ... */
	ck_assert(closed_by_peer(idle));
	close(idle);
	/* ... and the half-received request still completes, told to close */
	send_str(partial, "world");
	read_response(partial, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 201 Created\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Connection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "body=world"));
	ck_assert(closed_by_peer(partial));
	close(partial);

	pthread_join(st, NULL);
	ck_assert_int_eq(call.rc, 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(sc.r.rc, CURLE_OK);
	ck_assert_int_eq(sc.r.status, 200);
	ck_assert_str_eq(sc.r.body, "done");
	/* no longer accepting */
	ck_assert_int_eq(connect_raw(port), -1);
	/* a second shutdown is a no-op */
	ck_assert_int_eq(httpd_server_shutdown(srv, 0), 0);
}
END_TEST

START_TEST(shutdown_deadline_cuts_unfinished_requests)
{
	int fd = connect_raw(port);
	/* headers complete, body announced but never sent; the interim answer
	 * proves the server is inside this request */
	send_str(fd, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n"
	             "Expect: 100-continue\r\n\r\n");
	char buf[256];
	read_response(fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	ck_assert_int_eq(httpd_server_shutdown(srv, 100), ASB_ETIMEOUT);
	ck_assert(closed_by_peer(fd));
	close(fd);
}
END_TEST

START_TEST(addresses_in_go_form)
{
	ck_assert(httpd_address_disabled("0"));
	ck_assert(!httpd_address_disabled(":0"));
	ck_assert(!httpd_address_disabled(NULL));

	httpd_server_options o = loopback_options();
	httpd_server *s = NULL;
	const char *bad[] = { "", "8080", "1.2.3.4:99999", "::1:80", "host:http", "[::1:80", "h:-1", ":" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.address = bad[i];
		ck_assert_msg(httpd_server_new(&s, &o) == ASB_EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_ptr_null(s);
	}
	o.address = NULL;
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_EINVAL);

	/* "0": created, start does nothing */
	o.address = "0";
	ck_assert_int_eq(httpd_server_new(&s, &o), 0);
	ck_assert_int_eq(httpd_server_route(s, "GET", "/hello", hello, NULL), 0);
	ck_assert_int_eq(httpd_server_start(s), 0);
	ck_assert_int_eq(httpd_server_port(s), 0);
	ck_assert_int_eq(httpd_server_shutdown(s, 0), 0);
	httpd_server_free(s);

	/* ":port": every interface, reachable on loopback */
	o.address = ":0";
	s = start(&o);
	int fd = connect_raw(httpd_server_port(s));
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* the port in use: the error comes back from start() */
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", httpd_server_port(s));
	o.address = addr;
	httpd_server *clash = NULL;
	ck_assert_int_eq(httpd_server_new(&clash, &o), 0);
	ck_assert_int_eq(httpd_server_start(clash), ASB_ETRANSPORT);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "cannot listen"));
	httpd_server_free(clash);
	httpd_server_free(s);

	o.address = "localhost:0";
	s = start(&o);
	ck_assert_int_ge((fd = connect_raw(httpd_server_port(s))), 0);
	close(fd);
	/* routes are fixed once started */
	ck_assert_int_eq(httpd_server_route(s, "GET", "/late", hello, NULL), ASB_EINVAL);
	httpd_server_free(s);

	o.address = "[::1]:0";
	ck_assert_int_eq(httpd_server_new(&s, &o), 0);
	int rc = httpd_server_start(s);  /* ETRANSPORT where IPv6 is off */
	ck_assert(rc == 0 || rc == ASB_ETRANSPORT);
	httpd_server_free(s);
}
END_TEST

START_TEST(metrics_endpoint_serves_the_registry)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	asb_metric_options mo = ASB_METRIC_OPTIONS_INIT;
	mo.name = "things_total";
	mo.help = "Things.";
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &mo), 0);
	ck_assert_int_eq(asb_metric_add(m, NULL, 0, 3), 0);

	httpd_server_options o = loopback_options();
	httpd_server *s = NULL;
	ck_assert_int_eq(httpd_server_new(&s, &o), 0);
	ck_assert_int_eq(httpd_server_handle_metrics(s, "/metrics", reg), 0);
	ck_assert_int_eq(httpd_server_start(s), 0);
	port = httpd_server_port(s);
	reply *r = request("GET", "/metrics", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "# HELP things_total Things.\n# TYPE things_total counter\nthings_total 3\n");
	ck_assert_ptr_nonnull(strstr(r->headers, "Content-Type: " ASB_METRICS_CONTENT_TYPE "\r\n"));
	httpd_server_free(s);
	asb_metrics_registry_free(reg);
}
END_TEST

static int always_ok(void *ud)
{
	return 0;
}

static int flag_check(void *ud)
{
	return atomic_load((atomic_int *)ud) ? 0 : 1;
}

START_TEST(health_endpoints_report_failing_checks)
{
	static atomic_int synced;
	atomic_store(&synced, 0);
	httpd_health_checks *live, *ready;
	ck_assert_int_eq(httpd_health_checks_new(&live), 0);
	ck_assert_int_eq(httpd_health_checks_new(&ready), 0);
	ck_assert_int_eq(httpd_health_checks_add(ready, "ping", always_ok, NULL), 0);
	ck_assert_int_eq(httpd_health_checks_add(ready, "informers-synced", flag_check, &synced), 0);
	ck_assert_int_eq(httpd_health_checks_add(ready, "ping", always_ok, NULL), ASB_EINVAL);
	ck_assert_int_eq(httpd_health_checks_add(ready, "", always_ok, NULL), ASB_EINVAL);

	httpd_server_options o = loopback_options();
	httpd_server *s = NULL;
	ck_assert_int_eq(httpd_server_new(&s, &o), 0);
	ck_assert_int_eq(httpd_server_handle_health(s, "/healthz", live), 0);
	ck_assert_int_eq(httpd_server_handle_health(s, "/readyz", ready), 0);
	ck_assert_int_eq(httpd_server_start(s), 0);
	port = httpd_server_port(s);

	reply *r = request("GET", "/healthz", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "ok");
	r = request("GET", "/readyz", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 503);
	ck_assert_str_eq(r->body, "[+]ping ok\n[-]informers-synced failed\nreadyz check failed\n");
	atomic_store(&synced, 1);
	r = request("GET", "/readyz", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "ok");
	r = request("GET", "/readyz?verbose", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "[+]ping ok\n[+]informers-synced ok\nreadyz check passed\n");

	/* one check alone, as controller-runtime serves /readyz/<check> */
	r = request("GET", "/readyz/informers-synced", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_str_eq(r->body, "ok");
	r = request("GET", "/readyz/nope", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 404);
	r = request("GET", "/readyz/", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 404);

	char *report = NULL;
	atomic_store(&synced, 0);
	r = request("GET", "/readyz/informers-synced", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 503);
	ck_assert_str_eq(r->body, "internal server error: informers-synced check failed\n");
	r = request("GET", "/readyz/ping", NULL, 0, NULL);
	ck_assert_int_eq(r->status, 200);
	ck_assert_int_eq(httpd_health_checks_run(ready, &report), 1);
	ck_assert_str_eq(report, "[+]ping ok\n[-]informers-synced failed\n");
	free(report);
	httpd_server_free(s);
	httpd_health_checks_free(live);
	httpd_health_checks_free(ready);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("httpserver");
	TCase *tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup_default, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, routes_get_method_path_query_headers_and_body);
	tcase_add_test(tc, prefix_and_exact_routes);
	tcase_add_test(tc, keep_alive_reuses_the_connection);
	tcase_add_test(tc, pipelined_requests_are_answered_in_order);
	tcase_add_test(tc, head_fields_survive_pieces_growth_and_trailers);
	tcase_add_test(tc, a_flood_of_tiny_fields_is_bounded);
	tcase_add_test(tc, http10_closes_unless_keep_alive_asked);
	tcase_add_test(tc, unknown_path_404_and_wrong_method_405);
	tcase_add_test(tc, oversized_headers_get_431);
	tcase_add_test(tc, oversized_body_gets_413);
	tcase_add_test(tc, malformed_request_gets_400_and_server_keeps_serving);
	tcase_add_test(tc, many_concurrent_connections);
	tcase_add_test(tc, connections_over_the_limit_wait_their_turn);
	tcase_add_test(tc, idle_connections_are_closed);
	tcase_add_test(tc, graceful_shutdown_finishes_in_flight_and_closes_idle);
	tcase_add_test(tc, shutdown_deadline_cuts_unfinished_requests);
	tcase_add_test(tc, addresses_in_go_form);
	tcase_add_test(tc, metrics_endpoint_serves_the_registry);
	tcase_add_test(tc, health_endpoints_report_failing_checks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
