/*
 * Unit tests of libhttpd/src/tls.c: an HTTPS server on loopback
 * with a certificate from k8s_cert_bundle_generate(), driven by libcurl
 * (verifying against the CA) and by raw sockets sending what a TLS client
 * never would.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "k8s/certs.h"
#include "httpd/server.h"
#include "k8s/object.h"

static char dir[] = "/tmp/k8s-tls-test-XXXXXX";
static char cert_path[128], key_path[128];
static k8s_cert_bundle bundle;
static httpd_server *srv;
static int port;

static void hello(const httpd_request *req, httpd_response *res, void *ud)
{
	httpd_response_write(res, "hello", 5);
}

static void echo(const httpd_request *req, httpd_response *res, void *ud)
{
	size_t len;
	const char *body = httpd_request_body(req, &len);
	httpd_response_write(res, body, len);
}

static void write_file(const char *path, const char *text)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(rename(tmp, path), 0);  /* atomic, as a cert manager does */
}

static void new_bundle(k8s_cert_bundle *b)
{
	static const char *const dns[] = { "localhost", NULL };
	static const char *const ips[] = { "127.0.0.1", NULL };
	k8s_cert_options o = K8S_CERT_OPTIONS_INIT;
	o.ca_common_name = "test-ca";
	o.common_name = "localhost";
	o.dns_names = dns;
	o.ip_addresses = ips;
	o.not_before_ms = k8s_now_ms() - 3600000;
	o.not_after_ms = k8s_now_ms() + 86400000;
	ck_assert_int_eq(k8s_cert_bundle_generate(b, &o), 0);
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
	snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
	new_bundle(&bundle);
	write_file(cert_path, bundle.cert);
	write_file(key_path, bundle.key);
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = "127.0.0.1:0";
	o.name = "webhook";
	o.tls_cert_file = cert_path;
	o.tls_key_file = key_path;
	ck_assert_int_eq(httpd_server_new(&srv, &o), 0);
	ck_assert_int_eq(httpd_server_route(srv, "GET", "/hello", hello, NULL), 0);
	ck_assert_int_eq(httpd_server_route(srv, "POST", "/echo", echo, NULL), 0);
	ck_assert_int_eq(httpd_server_start(srv), 0);
	port = httpd_server_port(srv);
}

static void teardown(void)
{
	httpd_server_free(srv);
	srv = NULL;
	unlink(cert_path);
	unlink(key_path);
	rmdir(dir);
	strcpy(dir, "/tmp/k8s-tls-test-XXXXXX");
	k8s_cert_bundle_dispose(&bundle);
}

/* --- libcurl client ---------------------------------------------------------- */

#include "curlreply.h"

/* GET or POST `path` over HTTPS trusting `ca_pem` (NULL: the system store). */
static CURLcode request(CURL *h, const char *ca_pem, const char *path, const char *post,
                        long *status, reply *out)
{
	char url[128];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", port, path);
	memset(out, 0, sizeof(*out));
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	if (ca_pem) {
		struct curl_blob blob = { (void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY };
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (post)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
	CURLcode rc = curl_easy_perform(h);
	*status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	return rc;
}

static void assert_serves(const char *ca_pem)
{
	CURL *h = curl_easy_init();
	long status;
	reply out;
	CURLcode rc = request(h, ca_pem, "/hello", NULL, &status, &out);
	ck_assert_msg(rc == CURLE_OK, "curl: %s", curl_easy_strerror(rc));
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(out.body, "hello");
	curl_easy_cleanup(h);
}

START_TEST(https_verified_against_the_ca)
{
	CURL *h = curl_easy_init();
	long status;
	reply out;
	ck_assert_int_eq(request(h, bundle.ca_cert, "/hello", NULL, &status, &out), CURLE_OK);
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(out.body, "hello");
	/* a second request on the same (kept-alive) TLS connection, with a body */
	ck_assert_int_eq(request(h, bundle.ca_cert, "/echo", "{\"a\":1}", &status, &out), CURLE_OK);
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(out.body, "{\"a\":1}");
	long conns = -1;
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &conns);
	ck_assert_int_eq(conns, 0);  /* reused */
	char *ver = NULL;
	curl_easy_cleanup(h);
	(void)ver;
}
END_TEST

START_TEST(untrusted_client_refused_server_goes_on)
{
	CURL *h = curl_easy_init();
	long status;
	reply out;
	/* another CA: the client refuses our certificate */
	k8s_cert_bundle other;
	new_bundle(&other);
	ck_assert_int_eq(request(h, other.ca_cert, "/hello", NULL, &status, &out), CURLE_PEER_FAILED_VERIFICATION);
	k8s_cert_bundle_dispose(&other);
	curl_easy_cleanup(h);
	/* plain HTTP to the HTTPS port gets no HTTP answer */
	h = curl_easy_init();
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hello", port);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	ck_assert_int_ne(curl_easy_perform(h), CURLE_OK);
	curl_easy_cleanup(h);
	assert_serves(bundle.ca_cert);
}
END_TEST

static int connect_raw(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Waits for the server to close `fd` (EOF or reset); true when it did. */
static bool closed_by_server(int fd)
{
	char buf[4096];
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 10000) <= 0)
			return false;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			return true;
	}
}

START_TEST(hostile_bytes_do_not_crash)
{
	/* garbage instead of a ClientHello */
	int fd = connect_raw();
	unsigned char junk[512];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37 + 11);
	ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	ck_assert(closed_by_server(fd));
	close(fd);
	/* a TLS record header announcing a huge handshake, then nothing more */
	fd = connect_raw();
	static const unsigned char hdr[] = { 0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0x00, 0xff, 0xfb, 0x03, 0x03 };
	ck_assert_int_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	/* half a handshake, then gone */
	int fd2 = connect_raw();
	ck_assert_int_eq(write(fd2, hdr, 5), 5);
	close(fd2);
	/* connect and leave at once */
	close(connect_raw());
	/* an SSLv2-style hello (no longer supported) */
	int fd3 = connect_raw();
	static const unsigned char v2[] = { 0x80, 0x2e, 0x01, 0x00, 0x02, 0x00, 0x15, 0x00, 0x00, 0x00, 0x10 };
	ck_assert_int_eq(write(fd3, v2, sizeof(v2)), (ssize_t)sizeof(v2));
	ck_assert(closed_by_server(fd3));
	close(fd3);
	assert_serves(bundle.ca_cert);
	close(fd);
	assert_serves(bundle.ca_cert);
}
END_TEST

START_TEST(reloads_changed_files)
{
	assert_serves(bundle.ca_cert);
	k8s_cert_bundle next;
	new_bundle(&next);
	write_file(key_path, next.key);   /* a key without its certificate yet: ignored */
	write_file(cert_path, next.cert);
	/* checked at most once a second, on a new connection */
	bool reloaded = false;
	for (int i = 0; i < 100 && !reloaded; i++) {
		CURL *h = curl_easy_init();
		long status;
		reply out;
		reloaded = request(h, next.ca_cert, "/hello", NULL, &status, &out) == CURLE_OK && status == 200;
		curl_easy_cleanup(h);
		if (!reloaded)
			usleep(100 * 1000);
	}
	ck_assert_msg(reloaded, "the new certificate was not picked up");
	CURL *h = curl_easy_init();
	long status;
	reply out;
	ck_assert_int_eq(request(h, bundle.ca_cert, "/hello", NULL, &status, &out), CURLE_PEER_FAILED_VERIFICATION);
	curl_easy_cleanup(h);
	k8s_cert_bundle_dispose(&next);
}
END_TEST

START_TEST(bad_files_refused_at_new)
{
	httpd_server *s = NULL;
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = "127.0.0.1:0";
	o.tls_cert_file = cert_path;
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_EINVAL);  /* no key */
	o.tls_key_file = "/nonexistent/tls.key";
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_ECONFIG);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "/nonexistent/tls.key"));
	/* a key of another certificate */
	k8s_cert_bundle other;
	new_bundle(&other);
	char other_key[160];
	snprintf(other_key, sizeof(other_key), "%s/other.key", dir);
	write_file(other_key, other.key);
	o.tls_key_file = other_key;
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_ECONFIG);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "does not match"));
	/* a certificate file that is not PEM */
	o.tls_cert_file = other_key;
	ck_assert_int_eq(httpd_server_new(&s, &o), ASB_ECONFIG);
	ck_assert_ptr_null(s);
	unlink(other_key);
	k8s_cert_bundle_dispose(&other);
	/* version 1 options (no TLS fields) still work: plain HTTP */
	httpd_server_options v1;
	ck_assert_int_eq(httpd_server_options_init(&v1, 1), 0);
	v1.address = "127.0.0.1:0";
	ck_assert_int_eq(httpd_server_new(&s, &v1), 0);
	httpd_server_free(s);
}
END_TEST

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	Suite *s = suite_create("httpserver_tls");
	TCase *tc = tcase_create("tls");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, https_verified_against_the_ca);
	tcase_add_test(tc, untrusted_client_refused_server_goes_on);
	tcase_add_test(tc, hostile_bytes_do_not_crash);
	tcase_add_test(tc, reloads_changed_files);
	tcase_add_test(tc, bad_files_refused_at_new);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
