/*
 * Unit tests of the pure parts behind sandbox/handle.h: upstream's upload
 * path guard (docs/upstream.md#commands-and-files, every case its tests pin) in
 * runtime.c, the Gateway address rule (docs/upstream.md#connection-configs) in connect.c, and option
 * checks of sbx_handle_new() that need no cluster.
 */
#include <string.h>
#include <stdlib.h>
#include "fixture.h"
#include "sandbox/handle.h"

static void assert_guard(const char *in, const char *want)
{
	char *out = NULL;
	ck_assert_msg(sbx_path_guard(in, &out) == 0, "%s refused: %s", in, asb_error_last()->message);
	ck_assert_str_eq(out, want);
	sbx_free(out);
}

static void assert_refused(const char *in, const char *msg)
{
	char *out = (char *)1;
	ck_assert_int_eq(sbx_path_guard(in, &out), ASB_EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_str_eq(asb_error_last()->message, msg);
}

START_TEST(path_guard_normalises)
{
	assert_guard("test.txt", "test.txt");
	assert_guard("/etc/passwd", "etc/passwd");
	assert_guard("dir//f", "dir/f");
	assert_guard("a/../b", "b");
	assert_guard("./a/./b/", "a/b");
	assert_guard("  spaced.txt  ", "spaced.txt");
	assert_guard("//a", "a");
	assert_guard("/../x", "x");
	assert_guard("a/b/../../c", "c");
	assert_guard("caf\xc3\xa9.txt", "caf\xc3\xa9.txt");
}
END_TEST

START_TEST(path_guard_refuses)
{
	assert_refused("../x", "Upload path '../x' escapes the sandbox root.");
	assert_refused("dir/../../x", "Upload path 'dir/../../x' escapes the sandbox root.");
	assert_refused("..", "Upload path '..' escapes the sandbox root.");
	assert_refused("", "Upload path cannot be empty.");
	assert_refused("   ", "Upload path cannot be empty.");
	assert_refused(NULL, "Upload path cannot be empty.");
	assert_refused("/", "Upload path '/' does not name a file.");
	assert_refused(".", "Upload path '.' does not name a file.");
	assert_refused("a/..", "Upload path 'a/..' does not name a file.");
	assert_refused("a\nb", "Upload path contains ASCII control characters: 'a\\nb'");
	assert_refused("a\x01", "Upload path contains ASCII control characters: 'a\\x01'");
	assert_refused("it's\x7f", "Upload path contains ASCII control characters: \"it's\\x7f\"");
	assert_refused("\t x", "Upload path contains ASCII control characters: '\\t x'");
}
END_TEST

START_TEST(gateway_addresses)
{
	ck_assert(sbx_gateway_address_valid("10.0.0.1"));
	ck_assert(sbx_gateway_address_valid("fd00::1"));
	ck_assert(sbx_gateway_address_valid("gw.example.com"));
	ck_assert(sbx_gateway_address_valid("a-b.c1"));
	ck_assert(sbx_gateway_address_valid("Example.COM"));
	ck_assert(!sbx_gateway_address_valid(""));
	ck_assert(!sbx_gateway_address_valid(NULL));
	ck_assert(!sbx_gateway_address_valid("2130706433"));
	ck_assert(!sbx_gateway_address_valid("0x7f000001"));
	ck_assert(!sbx_gateway_address_valid("0x7f.1"));
	ck_assert(!sbx_gateway_address_valid("example.com."));
	ck_assert(!sbx_gateway_address_valid("-a.com"));
	ck_assert(!sbx_gateway_address_valid("a-.com"));
	ck_assert(!sbx_gateway_address_valid("a..com"));
	ck_assert(!sbx_gateway_address_valid("a_b.com"));
	ck_assert(!sbx_gateway_address_valid("http://x"));
	char lbl[80];
	memset(lbl, 'a', 64);
	lbl[64] = '\0';
	ck_assert(!sbx_gateway_address_valid(lbl));
	lbl[63] = '\0';
	ck_assert(sbx_gateway_address_valid(lbl));
	char name[300];
	memset(name, 'a', 254);
	name[254] = '\0';
	for (int i = 50; i < 254; i += 51)
		name[i] = '.';
	ck_assert(!sbx_gateway_address_valid(name));
	name[253] = '\0';
	ck_assert(sbx_gateway_address_valid(name));
}
END_TEST

START_TEST(connection_options_are_checked)
{
	/* sbx_handle_new refuses bad options before touching the client, so a
	 * NULL-free dummy is never needed: a bad mode fails on the client test
	 * first; check the option defaults instead. */
	sbx_connection_options o;
	ck_assert_int_eq(sbx_connection_options_init(&o, SBX_CONNECTION_OPTIONS_VERSION), 0);
	ck_assert_int_eq(o.mode, SBX_CONNECT_LOCAL_TUNNEL);
	ck_assert_int_eq(o.server_port, 8888);
	ck_assert_int_eq(o.max_retries, 5);
	ck_assert_int_eq(o.retry_backoff_ms, 500);
	ck_assert_int_eq(o.gateway_ready_timeout_ms, 180000);
	ck_assert_int_eq(o.port_forward_ready_timeout_ms, 30000);
	ck_assert_int_eq(sbx_connection_options_init(&o, 99), ASB_EINVAL);
	sbx_claim_options c;
	ck_assert_int_eq(sbx_claim_options_init(&c, SBX_CLAIM_OPTIONS_VERSION), 0);
	ck_assert_int_eq(c.ready_timeout_ms, 180000);
	ck_assert(!c.keep_on_failure);
	sbx_client_options co;
	ck_assert_int_eq(sbx_client_options_init(&co, SBX_CLIENT_OPTIONS_VERSION), 0);
	ck_assert_int_eq(co.request_timeout_ms, 30000);
}
END_TEST

START_TEST(connection_options_version_1_is_filled_as_far_as_it_goes)
{
	/* a version 1 caller's struct ends before in_cluster_address: init must
	 * not write past it (the canary stands where version 2 fields are) */
	sbx_connection_options o;
	memset(&o, 0x5a, sizeof(o));
	ck_assert_int_eq(sbx_connection_options_init(&o, 1), 0);
	ck_assert_uint_eq(o.version, 1);
	ck_assert_int_eq(o.server_port, 8888);
	ck_assert_int_eq(o.connect_timeout_ms, 10000);
	const unsigned char *tail = (const unsigned char *)&o.in_cluster_address;
	ck_assert_uint_eq(tail[0], 0x5a);
	ck_assert_int_eq(sbx_connection_options_init(&o, 2), 0);
	ck_assert_int_eq(o.in_cluster_address, SBX_IN_CLUSTER_ANY);
	ck_assert_ptr_null(o.on_connect);
	ck_assert_int_eq(sbx_connection_options_init(&o, 0), ASB_EINVAL);
	ck_assert_int_eq(sbx_connection_options_init(&o, 3), ASB_EINVAL);
	ck_assert_str_eq(sbx_strerror(SBX_ENOSERVICE), "sandbox has no service");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handle_pure");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, path_guard_normalises);
	tcase_add_test(tc, path_guard_refuses);
	tcase_add_test(tc, gateway_addresses);
	tcase_add_test(tc, connection_options_are_checked);
	tcase_add_test(tc, connection_options_version_1_is_filled_as_far_as_it_goes);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
