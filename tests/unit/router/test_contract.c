/*
 * test_contract.c - unit tests of cmd/router/contract.c: the routing
 * headers of docs/upstream.md#router-request-contract (order, defaults, empty values, detail
 * texts), the pod-IP guards (loopback, link-local incl. the metadata
 * address, multicast, unspecified, IPv4-mapped) and the framing checks
 * against request smuggling.
 */
#include <arpa/inet.h>
#include <check.h>
#include <string.h>
#include "contract.h"

/* A head with the given "Name", "value" pairs (NULL-terminated). */
static rt_head head_of(rt_header *hs, size_t cap, const char *const *kv)
{
	size_t n = 0;
	for (; kv[2 * n] && n < cap; n++)
		hs[n] = (rt_header){ kv[2 * n], kv[2 * n + 1] };
	return (rt_head){ .method = "GET", .target = "/", .path = "/", .headers = hs,
	                  .nheaders = n, .peer_ip = "10.1.2.3" };
}

static int route(const char *const *kv, bool loopback, rt_route *r, rt_reject *rej)
{
	rt_header hs[16];
	rt_head h = head_of(hs, 16, kv);
	memset(rej, 0, sizeof(*rej));
	return rt_contract_route(&h, loopback, r, rej);
}

#define KV(...) ((const char *const[]){ __VA_ARGS__, NULL })

START_TEST(defaults)
{
	rt_route r;
	rt_reject rej;
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "sb-1"), false, &r, &rej), 0);
	ck_assert_str_eq(r.id, "sb-1");
	ck_assert_str_eq(r.ns, "default");
	ck_assert_int_eq(r.port, 8888);
	ck_assert(!r.has_pod_ip);
	/* header names are case-insensitive; empty values count as absent */
	ck_assert_int_eq(route(KV("x-sandbox-id", "a", "X-SANDBOX-NAMESPACE", "", "x-sandbox-port", ""),
	                       false, &r, &rej), 0);
	ck_assert_str_eq(r.ns, "default");
	ck_assert_int_eq(r.port, 8888);
	/* the first of repeated headers counts */
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "first", "X-Sandbox-ID", "Bad_Second"), false, &r,
	                       &rej), 0);
	ck_assert_str_eq(r.id, "first");
}
END_TEST

START_TEST(order_and_messages)
{
	const struct {
		const char *const *kv;
		const char *detail;
	} cases[] = {
		{ KV("X-Other", "x"), "X-Sandbox-ID header is required." },
		{ KV("X-Sandbox-ID", ""), "X-Sandbox-ID header is required." },
		{ KV("X-Sandbox-ID", "Upper"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "-lead"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "trail-"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "a.b"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "a/../b"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
		  "Invalid sandbox ID format." },  /* 64 */
		/* ID before namespace before port before pod IP */
		{ KV("X-Sandbox-ID", "BAD", "X-Sandbox-Namespace", "BAD"), "Invalid sandbox ID format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Namespace", "Bad", "X-Sandbox-Port", "x"),
		  "Invalid namespace format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "0"), "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "65536"), "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "-1"), "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "80x"), "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "99999999999999999999"), "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "x", "X-Sandbox-Pod-IP", "bad"),
		  "Invalid port format." },
		{ KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "not-an-ip"), "Invalid target IP address." },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rt_route r;
		rt_reject rej;
		ck_assert_msg(route(cases[i].kv, false, &r, &rej) == -1, "case %zu accepted", i);
		ck_assert_int_eq(rej.status, 400);
		ck_assert_str_eq(rej.detail, cases[i].detail);
	}
	rt_route r;
	rt_reject rej;
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "+80"), false, &r, &rej), 0);
	ck_assert_int_eq(r.port, 80);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Port", "065535"), false, &r, &rej), 0);
	ck_assert_int_eq(r.port, 65535);
}
END_TEST

START_TEST(pod_ip_guards)
{
	static const char *const refused[] = {
		"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "169.254.169.254", "169.254.1.1",
		"fe80::1", "224.0.0.1", "239.1.2.3", "ff02::1", "ff0e::1", "::ffff:127.0.0.1",
		"::ffff:169.254.169.254", "010.1.2.3", "1.2.3", "fe80::1%eth0", "[::1]", "1.2.3.4 ",
		/* the metadata service by other names: AWS's IPv6 endpoint, Alibaba's,
		 * NAT64 (RFC 6052) and IPv4-compatible forms of refused IPv4
		 * addresses; the limited broadcast address */
		"fd00:ec2::254", "100.100.100.200", "64:ff9b::a9fe:a9fe", "64:ff9b::169.254.169.254",
		"64:ff9b::127.0.0.1", "::169.254.169.254", "::127.0.0.1", "::224.0.0.1",
		"255.255.255.255",
		/* more metadata endpoints: EKS Pod Identity and GCP over IPv6, Azure's
		 * WireServer, Oracle's legacy address */
		"fd00:ec2::23", "fd00:ec2:0:0:0:0:0:23", "fd20:ce::254", "FD20:CE::254",
		"fd00:ec2::253", "fd00:ec2::123", "0.0.0.1", "0.255.255.255", "64:ff9b:1::",
		"168.63.129.16", "192.0.0.192",
		/* IPv4 inside IPv6, every spelling judged as the IPv4 address: SIIT
		 * (RFC 6145), RFC 8215 local-use NAT64 at /96, /64, /56 and /48,
		 * 6to4, Teredo server and (inverted) client, ISATAP */
		"::ffff:0:169.254.169.254", "::ffff:0:a9fe:a9fe", "::ffff:0:127.0.0.1", "::ffff:0:0.0.0.0",
		"::ffff:0:224.0.0.1", "::ffff:0:100.100.100.200",
		"64:ff9b:1::169.254.169.254", "64:ff9b:1::a9fe:a9fe", "64:ff9b:1:0:a9:fea9:fe00:0",
		"64:ff9b:1:a9:fe:a9fe::", "64:ff9b:1:a9fe:a9:fe00::", "64:ff9b:1::127.0.0.1",
		"2002:a9fe:a9fe::", "2002:a9fe:a9fe::1", "2002:7f00:1::", "2002:6464:64c8:1::5",
		"2001:0:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:5601:5601", "2001::ffff:ffff",
		"2001:db8::5efe:169.254.169.254", "2001:db8::200:5efe:a9fe:a9fe", "fd00::5efe:127.0.0.1",
		"::ffff:0:168.63.129.16",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rt_route r;
		rt_reject rej;
		ck_assert_msg(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", refused[i]), false, &r,
		                    &rej) == -1, "%s accepted", refused[i]);
		ck_assert_str_eq(rej.detail, "Invalid target IP address.");
	}
	rt_route r;
	rt_reject rej;
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "10.0.0.7"), false, &r,
	                       &rej), 0);
	ck_assert(r.has_pod_ip);
	ck_assert_str_eq(r.pod_ip.text, "10.0.0.7");
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "2001:db8::7"), false, &r,
	                       &rej), 0);
	ck_assert_str_eq(r.pod_ip.text, "2001:db8::7");
	/* NAT64 of an ordinary address and the rest of 100.64/10 stay routable */
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "64:ff9b::a00:7"), false, &r,
	                       &rej), 0);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "100.100.100.201"), false,
	                       &r, &rej), 0);
	/* the same embeddings of ordinary addresses stay routable, and so do
	 * addresses beside the metadata endpoints */
	static const char *const allowed[] = {
		"::ffff:0:10.0.0.9", "64:ff9b:1::10.0.0.9", "64:ff9b:1:a00:0:900::", "2002:a00:9::1",
		"2001:0:a00:9::f5ff:fff6", "2001:db8::5efe:10.0.0.9", "fd00:ec2::252", "fd20:ce::253",
		"fd00::1", "2001:db8:5efe::1", "168.63.129.17", "192.0.0.193",
	};
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		ck_assert_msg(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", allowed[i]), false, &r,
		                    &rej) == 0, "%s refused", allowed[i]);
	/* loopback embedded in IPv6 follows --allow-loopback-pod-ip */
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "::ffff:0:127.0.0.1"), true,
	                       &r, &rej), 0);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "2002:a9fe:a9fe::"), true,
	                       &r, &rej), -1);
	/* IPv4-mapped IPv6 is dialled as IPv4 */
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "::ffff:10.0.0.8"), false,
	                       &r, &rej), 0);
	ck_assert_str_eq(r.pod_ip.text, "10.0.0.8");
	/* loopback only with --allow-loopback-pod-ip; the metadata address never */
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "127.0.1.5"), true, &r,
	                       &rej), 0);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "::1"), true, &r, &rej), 0);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "169.254.169.254"), true,
	                       &r, &rej), -1);
	ck_assert_int_eq(route(KV("X-Sandbox-ID", "ok", "X-Sandbox-Pod-IP", "0.0.0.0"), true, &r,
	                       &rej), -1);
}
END_TEST

START_TEST(ip_helpers)
{
	rt_ip a, b;
	ck_assert(rt_ip_parse("::ffff:1.2.3.4", &a));
	ck_assert(rt_ip_parse("1.2.3.4", &b));
	ck_assert(rt_ip_equal(&a, &b));
	ck_assert(rt_ip_parse("2001:db8:0::1", &a));
	ck_assert(rt_ip_parse("2001:db8::1", &b));
	ck_assert(rt_ip_equal(&a, &b));
	ck_assert_str_eq(a.text, "2001:db8::1");
	/* IPv4 text is formatted without inet_ntop: the same dotted decimal */
	static const char *const v4[] = { "0.0.0.0", "1.2.3.4", "10.0.0.1", "127.0.0.1",
	                                   "100.64.9.99", "255.255.255.255", NULL };
	for (int i = 0; v4[i]; i++) {
		ck_assert(rt_ip_parse(v4[i], &a));
		char want[INET6_ADDRSTRLEN];
		inet_ntop(AF_INET, a.addr, want, sizeof(want));
		ck_assert_str_eq(a.text, want);
		ck_assert_str_eq(a.text, v4[i]);
	}
	ck_assert(rt_ip_parse("::ffff:10.1.2.3", &a));
	ck_assert_str_eq(a.text, "10.1.2.3");
	ck_assert(!rt_ip_parse("", &a));
	ck_assert(!rt_ip_parse("1.2.3.256", &a));
	ck_assert_str_eq(rt_contract_metric_namespace("team-a"), "team-a");
	ck_assert_str_eq(rt_contract_metric_namespace("Team"), "-");
	ck_assert_str_eq(rt_contract_metric_namespace(NULL), "-");
}
END_TEST

/* A contract check over a head of the header fields `kv`. */
static int check(int (*fn)(const rt_head *, rt_reject *), const char *const *kv, rt_reject *rej)
{
	rt_header hs[16];
	rt_head h = head_of(hs, 16, kv);
	memset(rej, 0, sizeof(*rej));
	return fn(&h, rej);
}

static int framing(const char *const *kv, rt_reject *rej)
{
	return check(rt_contract_framing, kv, rej);
}

START_TEST(smuggling)
{
	rt_reject rej;
	ck_assert_int_eq(framing(KV("Content-Length", "5"), &rej), 0);
	ck_assert_int_eq(framing(KV("Transfer-Encoding", "chunked"), &rej), 0);
	ck_assert_int_eq(framing(KV("Transfer-Encoding", " Chunked "), &rej), 0);
	ck_assert_int_eq(framing(KV("Host", "x"), &rej), 0);
	ck_assert_int_eq(framing(KV("Content-Length", "5", "Transfer-Encoding", "chunked"), &rej), -1);
	ck_assert_int_eq(rej.status, 400);
	ck_assert_int_eq(framing(KV("Content-Length", "5", "Content-Length", "5"), &rej), -1);
	ck_assert_int_eq(rej.status, 400);
	ck_assert_int_eq(framing(KV("Content-Length", "5", "Content-Length", "6"), &rej), -1);
	ck_assert_int_eq(framing(KV("Content-Length", "-5"), &rej), -1);
	ck_assert_int_eq(framing(KV("Content-Length", "5, 5"), &rej), -1);
	ck_assert_int_eq(framing(KV("Content-Length", ""), &rej), -1);
	ck_assert_int_eq(framing(KV("Transfer-Encoding", "gzip, chunked"), &rej), -1);
	ck_assert_int_eq(rej.status, 501);
	ck_assert_int_eq(framing(KV("Transfer-Encoding", "chunked, identity"), &rej), -1);
	ck_assert_int_eq(framing(KV("Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"),
	                         &rej), -1);
}
END_TEST

/* Only origin-form reaches a sandbox: CONNECT (authority-form) used to be
 * forwarded as "CONNECT / HTTP/1.1", and "*" got the server's plain 404. */
static int target(const char *method, const char *t, rt_reject *rej)
{
	rt_head h = { .method = method, .target = t, .path = t };
	memset(rej, 0, sizeof(*rej));
	return rt_contract_target(&h, rej);
}

START_TEST(request_target)
{
	rt_reject rej;
	ck_assert_int_eq(target("GET", "/a?b", &rej), 0);
	ck_assert_int_eq(target("OPTIONS", "/", &rej), 0);
	ck_assert_int_eq(target("CONNECT", "/", &rej), -1);
	ck_assert_int_eq(rej.status, 400);
	ck_assert_str_eq(rej.detail, "Invalid request target.");
	ck_assert_int_eq(target("OPTIONS", "*", &rej), -1);
	ck_assert_int_eq(rej.status, 400);
	ck_assert_int_eq(target("GET", "*", &rej), -1);
	ck_assert_int_eq(target("GET", "", &rej), -1);
}
END_TEST

static int loop(const char *const *kv, rt_reject *rej)
{
	return check(rt_contract_loop, kv, rej);
}

/* X-Sandbox-Pod-IP naming a router itself sent one request round it ~10,000
 * times; the Via entries each hop adds stop it at the third router. */
START_TEST(router_loops)
{
	rt_reject rej;
	ck_assert_int_eq(loop(KV("X-Sandbox-ID", "a"), &rej), 0);
	ck_assert_int_eq(loop(KV("Via", "1.1 sandbox-router"), &rej), 0);
	ck_assert_int_eq(loop(KV("Via", "1.1 proxy, 1.0 gw (nginx)"), &rej), 0);
	ck_assert_int_eq(loop(KV("Via", "1.1 sandbox-router-x, 1.1 x sandbox-router"), &rej), 0);
	ck_assert_int_eq(loop(KV("Via", "1.1 sandbox-router, 1.1 Sandbox-Router (c)"), &rej), -1);
	ck_assert_int_eq(rej.status, 508);
	ck_assert_str_eq(rej.detail, "Loop detected.");
	ck_assert_int_eq(loop(KV("Via", "1.1 sandbox-router", "via", "HTTP/1.1 sandbox-router"), &rej), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("contract");
	TCase *tc = tcase_create("contract");
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, order_and_messages);
	tcase_add_test(tc, pod_ip_guards);
	tcase_add_test(tc, ip_helpers);
	tcase_add_test(tc, smuggling);
	tcase_add_test(tc, request_target);
	tcase_add_test(tc, router_loops);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
