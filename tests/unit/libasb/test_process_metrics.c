/* Unit tests of libasb/src/process_metrics.c: the /proc parsers, the
 * process_* exposition from a fixture tree, and a reading of the real
 * /proc/self checked against what the process knows of itself. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "asb/metrics.h"
#include "process_metrics.h"

/* A stat line whose command name holds ") (" and spaces: fields are found
 * from the last ')'. utime 250, stime 50, starttime 12345, vsize
 * 123456789, rss 1000. */
static const char STAT_LINE[] =
	"4242 (we) (ird name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 "
	"7 0 12345 123456789 1000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

static const char LIMITS[] =
	"Limit                     Soft Limit           Hard Limit           Units     \n"
	"Max cpu time              unlimited            unlimited            seconds   \n"
	"Max open files            1024                 524288               files     \n"
	"Max address space         unlimited            unlimited            bytes     \n";

static const char NETSTAT[] =
	"TcpExt: SyncookiesSent SyncookiesRecv\n"
	"TcpExt: 0 0\n"
	"IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets InMcastOctets\n"
	"IpExt: 0 0 0 0 0 0 987654321 123456 0\n"
	"MPTcpExt: MPCapableSYNRX\n"
	"MPTcpExt: 0\n";

static const char SYS_STAT[] =
	"cpu  10 20 30 40 50 60 70 0 0 0\n"
	"intr 1 2 3\n"
	"btime 1700000000\n"
	"processes 42\n";

START_TEST(stat_fields_after_the_last_paren)
{
	asb__proc_stat st;
	ck_assert_int_eq(asb__proc_parse_stat(STAT_LINE, &st), 0);
	ck_assert_uint_eq(st.utime, 250);
	ck_assert_uint_eq(st.stime, 50);
	ck_assert_uint_eq(st.starttime, 12345);
	ck_assert_uint_eq(st.vsize, 123456789);
	ck_assert_int_eq(st.rss, 1000);
}
END_TEST

START_TEST(stat_refuses_what_it_cannot_read)
{
	asb__proc_stat st;
	ck_assert_int_eq(asb__proc_parse_stat("4242 no parenthesis S 1", &st), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "')'"));
	ck_assert_int_eq(asb__proc_parse_stat("4242 (short) S 1 2 3\n", &st), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "fewer than 24 fields"));
	ck_assert_int_eq(asb__proc_parse_stat(
		"1 (x) S 1 1 1 0 -1 0 0 0 0 0 2x5 50 0 0 20 0 1 0 1 1 1\n", &st), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "not a decimal number"));
	ck_assert_int_eq(asb__proc_parse_stat(NULL, &st), ASB_EDECODE);
}
END_TEST

START_TEST(btime_line_of_proc_stat)
{
	uint64_t b = 0;
	ck_assert_int_eq(asb__proc_parse_btime(SYS_STAT, &b), 0);
	ck_assert_uint_eq(b, 1700000000);
	ck_assert_int_eq(asb__proc_parse_btime("cpu 1 2\nprocesses 4\n", &b), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "no btime line"));
	ck_assert_int_eq(asb__proc_parse_btime("btime soon\n", &b), ASB_EDECODE);
}
END_TEST

START_TEST(limits_soft_value_and_unlimited)
{
	double v = 0;
	ck_assert_int_eq(asb__proc_parse_limit(LIMITS, "Max open files", &v), 0);
	ck_assert_double_eq(v, 1024);
	ck_assert_int_eq(asb__proc_parse_limit(LIMITS, "Max address space", &v), 0);
	ck_assert_double_eq(v, 18446744073709551615.0);
	ck_assert_int_eq(asb__proc_parse_limit(LIMITS, "Max locked memory", &v), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "no \"Max locked memory\" line"));
	ck_assert_int_eq(asb__proc_parse_limit("Max open files            many    many   files\n",
	                                       "Max open files", &v), ASB_EDECODE);
}
END_TEST

START_TEST(netstat_ipext_octets)
{
	double in = -1, out = -1;
	ck_assert_int_eq(asb__proc_parse_netstat(NETSTAT, &in, &out), 0);
	ck_assert_double_eq(in, 987654321);
	ck_assert_double_eq(out, 123456);
	/* no IpExt section: 0, as procfs's nil fields read */
	ck_assert_int_eq(asb__proc_parse_netstat("TcpExt: A\nTcpExt: 1\n", &in, &out), 0);
	ck_assert_double_eq(in, 0);
	ck_assert_double_eq(out, 0);
	ck_assert_int_eq(asb__proc_parse_netstat("IpExt: InOctets OutOctets\n", &in, &out), ASB_EDECODE);
	ck_assert_int_eq(asb__proc_parse_netstat("IpExt: InOctets OutOctets\nIpExt: 5 x\n", &in, &out),
	                 ASB_EDECODE);
}
END_TEST

/* --- a fixture tree in the shape of /proc ------------------------------------ */

static char root[256];

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_tree(bool with_netstat)
{
	snprintf(root, sizeof(root), "/tmp/asb-proc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	char path[512];
	snprintf(path, sizeof(path), "%s/self", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/self/fd", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/self/net", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	put("stat", SYS_STAT);
	put("self/stat", STAT_LINE);
	put("self/limits", LIMITS);
	if (with_netstat)
		put("self/net/netstat", NETSTAT);
	put("self/fd/0", "");
	put("self/fd/1", "");
	put("self/fd/2", "");
}

static void remove_tree(void)
{
	const char *files[] = { "stat", "self/stat", "self/limits", "self/net/netstat",
	                        "self/fd/0", "self/fd/1", "self/fd/2", "self/fd", "self/net",
	                        "self", "" };
	char path[512];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		remove(path);
	}
}

static char *expose(asb_metrics_registry *r)
{
	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(r, &text, NULL), 0);
	return text;
}

START_TEST(fixture_tree_exposes_client_golang_families)
{
	make_tree(true);
	asb_metrics_registry *r;
	ck_assert_int_eq(asb_metrics_registry_new(&r), 0);
	ck_assert_int_eq(asb__metrics_register_process_at(r, root), 0);
	/* a second registration changes nothing (no duplicate samples) */
	ck_assert_int_eq(asb__metrics_register_process_at(r, root), 0);
	char *text = expose(r);
	long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	char cpu[40], rss[40], start[40], expected[4096];
	asb_metrics_format_float(300.0 / (double)hz, cpu, sizeof(cpu));
	asb_metrics_format_float(1000.0 * (double)page, rss, sizeof(rss));
	asb_metrics_format_float(1700000000.0 + 12345.0 / (double)hz, start, sizeof(start));
	snprintf(expected, sizeof(expected),
		"# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total %s\n"
		"# HELP process_max_fds Maximum number of open file descriptors.\n"
		"# TYPE process_max_fds gauge\n"
		"process_max_fds 1024\n"
		"# HELP process_network_receive_bytes_total Number of bytes received by the process over the network.\n"
		"# TYPE process_network_receive_bytes_total counter\n"
		"process_network_receive_bytes_total 9.87654321e+08\n"
		"# HELP process_network_transmit_bytes_total Number of bytes sent by the process over the network.\n"
		"# TYPE process_network_transmit_bytes_total counter\n"
		"process_network_transmit_bytes_total 123456\n"
		"# HELP process_open_fds Number of open file descriptors.\n"
		"# TYPE process_open_fds gauge\n"
		"process_open_fds 3\n"
		"# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		"# TYPE process_resident_memory_bytes gauge\n"
		"process_resident_memory_bytes %s\n"
		"# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		"# TYPE process_start_time_seconds gauge\n"
		"process_start_time_seconds %s\n"
		"# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
		"# TYPE process_virtual_memory_bytes gauge\n"
		"process_virtual_memory_bytes 1.23456789e+08\n"
		"# HELP process_virtual_memory_max_bytes Maximum amount of virtual memory available in bytes.\n"
		"# TYPE process_virtual_memory_max_bytes gauge\n"
		"process_virtual_memory_max_bytes 1.8446744073709552e+19\n",
		cpu, rss, start);
	ck_assert_str_eq(text, expected);
	free(text);
	asb_metrics_registry_free(r);
	remove_tree();
}
END_TEST

START_TEST(unreadable_parts_are_left_out)
{
	make_tree(false);
	put("self/limits", "Limit   Soft Limit   Hard Limit   Units\n");
	asb_metrics_registry *r;
	ck_assert_int_eq(asb_metrics_registry_new(&r), 0);
	ck_assert_int_eq(asb__metrics_register_process_at(r, root), 0);
	char *text = expose(r);
	/* no netstat file, limits without the lines: those families are absent */
	ck_assert_ptr_null(strstr(text, "process_network_receive_bytes_total "));
	ck_assert_ptr_null(strstr(text, "process_max_fds "));
	ck_assert_ptr_null(strstr(text, "process_virtual_memory_max_bytes "));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_open_fds 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_virtual_memory_bytes 1.23456789e+08\n"));
	free(text);
	asb_metrics_registry_free(r);
	remove_tree();
}
END_TEST

/* The value of the sample line `name value` in `text`. */
static double sample(const char *text, const char *name)
{
	char key[128];
	snprintf(key, sizeof(key), "\n%s ", name);
	const char *p = strstr(text, key);
	ck_assert_msg(p != NULL, "no sample %s in:\n%s", name, text);
	return strtod(p + strlen(key), NULL);
}

START_TEST(real_proc_self_agrees_with_the_process)
{
	time_t before = time(NULL);
	asb_metrics_registry *r;
	ck_assert_int_eq(asb_metrics_registry_new(&r), 0);
	ck_assert_int_eq(asb_metrics_register_process(r), 0);
	/* a known number of extra descriptors shows in process_open_fds */
	char *a = expose(r);
	int fds[5];
	for (int i = 0; i < 5; i++)
		ck_assert_int_ge(fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
	char *b = expose(r);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	ck_assert_double_eq(sample(b, "process_open_fds"), sample(a, "process_open_fds") + 5);
	struct rlimit nofile;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
	/* the kernel's soft limit; under valgrind getrlimit() says a little
	 * less (it keeps a few descriptors for itself) */
	double max_fds = sample(a, "process_max_fds");
	if (nofile.rlim_cur == RLIM_INFINITY)
		ck_assert_double_eq(max_fds, 18446744073709551615.0);
	else
		ck_assert_msg(max_fds >= (double)nofile.rlim_cur && max_fds < (double)nofile.rlim_cur + 64,
		              "process_max_fds %g, soft RLIMIT_NOFILE %llu", max_fds,
		              (unsigned long long)nofile.rlim_cur);
	/* started before this test, and not before the machine booted */
	double start = sample(a, "process_start_time_seconds");
	ck_assert_double_le(start, (double)before + 1);
	struct timespec up;
	clock_gettime(CLOCK_BOOTTIME, &up);
	ck_assert_double_ge(start, (double)before - (double)up.tv_sec - 2);
	ck_assert_double_gt(sample(a, "process_resident_memory_bytes"), 0);
	ck_assert_double_ge(sample(a, "process_virtual_memory_bytes"),
	                    sample(a, "process_resident_memory_bytes"));
	ck_assert_double_ge(sample(a, "process_cpu_seconds_total"), 0);
	free(a);
	free(b);
	asb_metrics_registry_free(r);
}
END_TEST

START_TEST(register_refuses_null_and_a_clashing_family)
{
	ck_assert_int_eq(asb_metrics_register_process(NULL), ASB_EINVAL);
	asb_metrics_registry *r;
	ck_assert_int_eq(asb_metrics_registry_new(&r), 0);
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "process_cpu_seconds_total";
	o.help = "Not the process collector's.";
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, r, &o), 0);
	ck_assert_int_eq(asb_metrics_register_process(r), ASB_EINVAL);
	asb_metrics_registry_free(r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("process_metrics");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, stat_fields_after_the_last_paren);
	tcase_add_test(tc, stat_refuses_what_it_cannot_read);
	tcase_add_test(tc, btime_line_of_proc_stat);
	tcase_add_test(tc, limits_soft_value_and_unlimited);
	tcase_add_test(tc, netstat_ipext_octets);
	tcase_add_test(tc, fixture_tree_exposes_client_golang_families);
	tcase_add_test(tc, unreadable_parts_are_left_out);
	tcase_add_test(tc, real_proc_self_agrees_with_the_process);
	tcase_add_test(tc, register_refuses_null_and_a_clashing_family);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
