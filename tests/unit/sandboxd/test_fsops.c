/*
 * test_fsops.c - unit tests of cmd/sandboxd/fsops.c: atomic writes (mode,
 * parents, no temporary left, links), listings (order, links followed only
 * inside), delete (docs/upstream.md#sandboxd-rest-api rules; a tree far deeper than
 * any path, on a small stack and few descriptors; a wide one), and
 * nothing outside the root ever touched.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asb/common.h"
#include "fsops.h"
#include "tmpdir.h"

static char base[256];
static sbxd_root *root;

static void link_at(const char *target, const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	ck_assert_int_eq(symlink(target, p), 0);
}

static void mkdir_at(const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void setup(void)
{
	tmpdir_make(base, sizeof(base));
	char p[512];
	snprintf(p, sizeof(p), "%s/root", base);
	ck_assert_int_eq(sbxd_root_open(&root, p, false), 0);
	tmpdir_write(base, "outside/secret", "secret");
	link_at("../outside", "root/out");
	link_at("../outside/secret", "root/out_file");
}

/* Loop tests run once per resolver (_i: sbxd_resolver); openat2 is
 * skipped where the kernel (or valgrind) lacks it. */
#define USE_RESOLVER(i) do { \
	if (sbxd_root_set_resolver(root, (sbxd_resolver)(i)) != 0) { \
		fprintf(stderr, "openat2 unavailable: resolver %d skipped\n", (int)(i)); \
		return; \
	} \
} while (0)

static void teardown(void)
{
	sbxd_root_free(root);
	tmpdir_remove(base);
}

static int put(const char *rel, const char *content, mode_t mode)
{
	sbxd_writer *w;
	int rc = sbxd_writer_begin(&w, root, rel, mode);
	if (rc)
		return rc;
	rc = sbxd_writer_write(w, content, strlen(content));
	if (!rc)
		rc = sbxd_writer_commit(w);
	sbxd_writer_free(w);
	return rc;
}

static int count_temps(const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	DIR *d = opendir(p);
	int n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += strncmp(de->d_name, ".sandboxd-tmp-", 14) == 0;
	if (d)
		closedir(d);
	return n;
}

START_TEST(write_is_atomic_with_mode_and_parents)
{
	USE_RESOLVER(_i);
	mode_t old = umask(077);
	ck_assert_int_eq(put("a/b/c.txt", "hello", 0644), 0);
	umask(old);
	char *s = tmpdir_read(base, "root/a/b/c.txt");
	ck_assert_str_eq(s, "hello");
	free(s);
	struct stat st;
	char p[512];
	snprintf(p, sizeof(p), "%s/root/a/b/c.txt", base);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0644);  /* umask does not apply */
	ck_assert_int_eq(count_temps("root/a/b"), 0);
	/* overwrite */
	ck_assert_int_eq(put("a/b/c.txt", "again", 0600), 0);
	s = tmpdir_read(base, "root/a/b/c.txt");
	ck_assert_str_eq(s, "again");
	free(s);
	/* an abandoned write leaves nothing and the old content stays */
	sbxd_writer *w;
	ck_assert_int_eq(sbxd_writer_begin(&w, root, "a/b/c.txt", 0644), 0);
	ck_assert_int_eq(sbxd_writer_write(w, "partial", 7), 0);
	ck_assert_int_eq(count_temps("root/a/b"), 1);
	sbxd_writer_free(w);
	ck_assert_int_eq(count_temps("root/a/b"), 0);
	s = tmpdir_read(base, "root/a/b/c.txt");
	ck_assert_str_eq(s, "again");
	free(s);
}
END_TEST

START_TEST(write_refuses_dirs_and_escapes)
{
	USE_RESOLVER(_i);
	mkdir_at("root/d");
	ck_assert_int_eq(put("d", "x", 0644), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_ISDIR);
	ck_assert_int_eq(put("out/secret", "pwned", 0644), ASB_EFORBIDDEN);
	ck_assert_int_eq(put("out/new", "pwned", 0644), ASB_EFORBIDDEN);
	ck_assert_int_eq(put("out_file", "pwned", 0644), ASB_EFORBIDDEN);
	char *s = tmpdir_read(base, "outside/secret");
	ck_assert_str_eq(s, "secret");
	free(s);
	ck_assert(!tmpdir_exists(base, "outside/new"));
	/* an inside link as the target: the link is replaced by the file */
	tmpdir_write(base, "root/target", "old");
	link_at("target", "root/lnk");
	ck_assert_int_eq(put("lnk", "new", 0644), 0);
	s = tmpdir_read(base, "root/target");
	ck_assert_str_eq(s, "old");
	free(s);
	s = tmpdir_read(base, "root/lnk");
	ck_assert_str_eq(s, "new");
	free(s);
}
END_TEST

START_TEST(list_sorted_links_inside_only)
{
	USE_RESOLVER(_i);
	tmpdir_write(base, "root/b.txt", "bb");
	tmpdir_write(base, "root/a.txt", "a");
	mkdir_at("root/sub");
	link_at("a.txt", "root/c_link");
	link_at("nowhere", "root/dangling");
	sbxd_entry *e;
	size_t n;
	ck_assert_int_eq(sbxd_list(root, ".", SBXD_LIST_BY_NAME, &e, &n), 0);
	ck_assert_uint_eq(n, 4);  /* out, out_file, dangling omitted */
	ck_assert_str_eq(e[0].name, "a.txt");
	ck_assert_str_eq(e[1].name, "b.txt");
	ck_assert_int_eq(e[1].size, 2);
	ck_assert_str_eq(e[2].name, "c_link");
	ck_assert_int_eq(e[2].size, 1);
	ck_assert(!e[2].is_dir);
	ck_assert_str_eq(e[3].name, "sub");
	ck_assert(e[3].is_dir);
	sbxd_entries_free(e, n);
	ck_assert_int_eq(sbxd_list(root, "sub", SBXD_LIST_BY_NAME, &e, &n), 0);
	ck_assert_uint_eq(n, 0);
	sbxd_entries_free(e, n);
	ck_assert_int_eq(sbxd_list(root, "a.txt", SBXD_LIST_BY_NAME, &e, &n), ASB_EINVAL);
	ck_assert_int_eq(sbxd_list(root, "out", SBXD_LIST_BY_NAME, &e, &n), ASB_EFORBIDDEN);
	ck_assert_int_eq(sbxd_list(root, "nope", SBXD_LIST_BY_NAME, &e, &n), ASB_ENOTFOUND);
}
END_TEST

START_TEST(open_read_regular_files_only)
{
	USE_RESOLVER(_i);
	tmpdir_write(base, "root/f", "data");
	mkdir_at("root/d");
	int fd;
	struct stat st;
	ck_assert_int_eq(sbxd_open_read(root, "f", &fd, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	close(fd);
	ck_assert_int_eq(sbxd_open_read(root, "d", &fd, &st), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_ISDIR);
	char p[512];
	snprintf(p, sizeof(p), "%s/root/fifo", base);
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	ck_assert_int_eq(sbxd_open_read(root, "fifo", &fd, &st), ASB_EINVAL);
	ck_assert_int_eq(sbxd_open_read(root, "out_file", &fd, &st), ASB_EFORBIDDEN);
}
END_TEST

START_TEST(delete_rules)
{
	USE_RESOLVER(_i);
	tmpdir_write(base, "root/f", "x");
	mkdir_at("root/empty");
	mkdir_at("root/full");
	tmpdir_write(base, "root/full/x", "x");
	link_at("../../outside", "root/full/escape");  /* inside a tree to remove */
	link_at("nowhere", "root/dangling");
	ck_assert_int_eq(sbxd_delete(root, "missing", false), ASB_ENOTFOUND);
	ck_assert_int_eq(sbxd_delete(root, "f", false), 0);
	ck_assert(!tmpdir_exists(base, "root/f"));
	ck_assert_int_eq(sbxd_delete(root, "empty", false), 0);
	ck_assert_int_eq(sbxd_delete(root, "full", false), ASB_ECONFLICT);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_NOTEMPTY);
	ck_assert_int_eq(sbxd_delete(root, "full", true), 0);
	ck_assert(!tmpdir_exists(base, "root/full"));
	ck_assert(tmpdir_exists(base, "outside/secret"));
	ck_assert_int_eq(sbxd_exists_nofollow(root, "dangling"), 1);
	ck_assert_int_eq(sbxd_delete(root, "dangling", false), 0);
	ck_assert_int_eq(sbxd_exists_nofollow(root, "dangling"), 0);
	ck_assert_int_eq(sbxd_delete(root, "out", true), ASB_EFORBIDDEN);
	ck_assert_int_eq(sbxd_delete(root, "out/secret", false), ASB_EFORBIDDEN);
	ck_assert(tmpdir_exists(base, "outside/secret"));
	ck_assert_int_eq(sbxd_delete(root, ".", false), ASB_ECONFLICT);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_ROOT);
	tmpdir_write(base, "root/g", "x");
	ck_assert_int_eq(sbxd_delete(root, ".", true), 0);
	ck_assert(tmpdir_exists(base, "root"));
	ck_assert(!tmpdir_exists(base, "root/g"));
	ck_assert(!tmpdir_exists(base, "root/out"));  /* the link itself went */
	ck_assert(tmpdir_exists(base, "outside/secret"));
}
END_TEST

/* A chain of `levels` directories "d" under root/<top>, with a file in
 * every tenth one, built from held descriptors (no path is that long). */
static void make_deep(const char *top, int levels)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/root/%s", base, top);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < levels; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		if (i % 10 == 0)
			close(openat(fd, "f", O_WRONLY | O_CREAT, 0644));
		int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(sub, 0);
		close(fd);
		fd = sub;
	}
	close(fd);
}

typedef struct {
	const char *rel;
	int rc;
	char msg[256];   /* the thread's last error */
} delete_job;

static void *delete_thread(void *arg)
{
	delete_job *j = arg;
	j->rc = sbxd_delete(root, j->rel, true);
	snprintf(j->msg, sizeof(j->msg), "%s", asb_error_last()->message);
	return NULL;
}

/* sbxd_delete(rel, recursive) on a thread with a 128 KiB stack (the
 * walk must not grow with the depth) and 64 descriptors at most. */
static int delete_small(const char *rel)
{
	struct rlimit old, low;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 128 * 1024);
	delete_job j = { rel, 1, "" };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, &a, delete_thread, &j), 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&a);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	ck_assert_msg(j.rc == 0, "delete %s: %s", rel, j.msg);
	return j.rc;
}

START_TEST(delete_deep_tree)
{
	USE_RESOLVER(_i);
	make_deep("deep", 1000);
	ck_assert_int_eq(delete_small("deep"), 0);
	ck_assert(!tmpdir_exists(base, "root/deep"));
	/* the root's own contents, the same way */
	make_deep("again", 100);
	tmpdir_write(base, "root/top-file", "x");
	ck_assert_int_eq(delete_small("."), 0);
	ck_assert(tmpdir_exists(base, "root"));
	ck_assert(!tmpdir_exists(base, "root/again"));
	ck_assert(!tmpdir_exists(base, "root/top-file"));
	ck_assert(tmpdir_exists(base, "outside/secret"));
}
END_TEST

START_TEST(delete_wide_tree)
{
	USE_RESOLVER(_i);
	mkdir_at("root/wide");
	char rel[64];
	for (int i = 0; i < 200; i++) {
		snprintf(rel, sizeof(rel), "root/wide/%d", i);
		mkdir_at(rel);
		if (i % 3 == 0) {
			snprintf(rel, sizeof(rel), "root/wide/%d/sub", i);
			mkdir_at(rel);
		}
		snprintf(rel, sizeof(rel), "root/wide/f%d", i);
		tmpdir_write(base, rel, "x");
	}
	link_at("../../outside", "root/wide/escape");
	ck_assert_int_eq(delete_small("wide"), 0);
	ck_assert(!tmpdir_exists(base, "root/wide"));
	ck_assert(tmpdir_exists(base, "outside/secret"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_fsops");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, write_is_atomic_with_mode_and_parents, 0, 2);
	tcase_add_loop_test(tc, write_refuses_dirs_and_escapes, 0, 2);
	tcase_add_loop_test(tc, list_sorted_links_inside_only, 0, 2);
	tcase_add_loop_test(tc, open_read_regular_files_only, 0, 2);
	tcase_add_loop_test(tc, delete_rules, 0, 2);
	tcase_add_loop_test(tc, delete_deep_tree, 1, 2);  /* the walk resolver: valgrind lacks openat2 */
	tcase_add_loop_test(tc, delete_wide_tree, 1, 2);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
