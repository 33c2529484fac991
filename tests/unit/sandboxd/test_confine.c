/*
 * test_confine.c - unit tests of cmd/sandboxd/confine.c: the lexical clean
 * of docs/upstream.md#path-confinement and openat2 beneath the root with symbolic links
 * inside, escaping, absolute, and a directory created through a link.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "asb/common.h"
#include "confine.h"
#include "tmpdir.h"

static char *clean_ok(const char *root, sbxd_clean_mode m, const char *in)
{
	char *out = NULL;
	int rc = sbxd_path_clean(root, m, in, strlen(in), &out);
	ck_assert_msg(rc == 0, "clean(%s): %d %s", in, rc, asb_error_last()->message);
	return out;
}

static int clean_err(const char *root, const char *in, size_t len)
{
	char *out = NULL;
	int rc = sbxd_path_clean(root, SBXD_CLEAN_STRIP_ROOT, in, len, &out);
	ck_assert_ptr_null(out);
	return rc;
}

#define CLEAN_EQ(root, mode, in, want) do { \
	char *o_ = clean_ok(root, mode, in); \
	ck_assert_str_eq(o_, want); \
	free(o_); \
} while (0)

START_TEST(clean_matches_upstream_rules)
{
	const char *r = "/workspace";
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "", ".");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/", ".");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, ".", ".");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "a//b/./c/", "a/b/c");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "a/../b", "b");
	/* absolute paths are re-rooted; the root's own prefix is stripped */
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/etc/passwd", "etc/passwd");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/workspace/x/y", "x/y");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/workspace", ".");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/workspace-evil/f", "workspace-evil/f");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/../x", "x");
	CLEAN_EQ(r, SBXD_CLEAN_STRIP_ROOT, "/a/../../../etc", "etc");
	/* python-runtime: leading slashes only */
	CLEAN_EQ(r, SBXD_CLEAN_LSTRIP, "/workspace/x", "workspace/x");
	CLEAN_EQ(NULL, SBXD_CLEAN_LSTRIP, "//a/b", "a/b");
}
END_TEST

START_TEST(clean_refuses_climbing_nul_and_long)
{
	const char *r = "/workspace";
	ck_assert_int_eq(clean_err(r, "..", 2), ASB_EFORBIDDEN);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_ESCAPE);
	ck_assert_int_eq(clean_err(r, "../etc/passwd", 13), ASB_EFORBIDDEN);
	ck_assert_int_eq(clean_err(r, "a/../../etc/passwd", 18), ASB_EFORBIDDEN);
	ck_assert_int_eq(clean_err(r, "a/b/../../..", 12), ASB_EFORBIDDEN);
	ck_assert_int_eq(clean_err(r, "a\0b", 3), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_INVALID);
	char *longp = malloc(20000);
	memset(longp, 'a', 19999);
	longp[19999] = '\0';
	for (int i = 100; i < 19999; i += 100)
		longp[i] = '/';
	ck_assert_int_eq(clean_err(r, longp, strlen(longp)), ASB_EINVAL);
	memset(longp, 'b', 300);
	longp[300] = '\0';
	ck_assert_int_eq(clean_err(r, longp, 300), ASB_EINVAL);  /* a 300-byte component */
	free(longp);
	/* the messages name no host path */
	ck_assert_ptr_null(strstr(asb_error_last()->message, "/workspace"));
}
END_TEST

static char base[256];
static sbxd_root *root;

static void setup(void)
{
	tmpdir_make(base, sizeof(base));
	char p[512], q[512];
	snprintf(p, sizeof(p), "%s/root", base);
	ck_assert_int_eq(sbxd_root_open(&root, p, false), 0);
	snprintf(p, sizeof(p), "%s/root/dir", base);
	mkdir(p, 0755);
	tmpdir_write(base, "root/dir/file", "inside");
	tmpdir_write(base, "outside/secret", "secret");
	snprintf(p, sizeof(p), "%s/root/in", base);
	ck_assert_int_eq(symlink("dir/file", p), 0);
	snprintf(p, sizeof(p), "%s/root/dir/up", base);
	ck_assert_int_eq(symlink("../dir", p), 0);   /* relative, stays inside */
	snprintf(p, sizeof(p), "%s/root/out_rel", base);
	ck_assert_int_eq(symlink("../outside", p), 0);
	snprintf(p, sizeof(p), "%s/root/out_abs", base);
	snprintf(q, sizeof(q), "%s/outside/secret", base);
	ck_assert_int_eq(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/root/abs_in", base);
	snprintf(q, sizeof(q), "%s/root/dir/file", base);
	ck_assert_int_eq(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/root/magic", base);
	ck_assert_int_eq(symlink("/proc/self/root", p), 0);
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
	root = NULL;
	tmpdir_remove(base);
}

static int open_rel(const char *rel, int flags)
{
	int fd = -1;
	int rc = sbxd_root_openat(root, rel, flags, 0644, &fd);
	if (rc == 0)
		close(fd);
	return rc;
}

START_TEST(root_open_creates_and_resolves)
{
	USE_RESOLVER(_i);
	char p[512];
	sbxd_root *r;
	snprintf(p, sizeof(p), "%s/new/a/b", base);
	ck_assert_int_eq(sbxd_root_open(&r, p, false), ASB_ECONFIG);
	ck_assert_int_eq(sbxd_root_open(&r, p, true), 0);
	ck_assert_str_eq(sbxd_root_path(r), p);
	sbxd_root_free(r);
	ck_assert_int_eq(sbxd_root_open(&r, "", true), ASB_EINVAL);
	/* the root's own symbolic links are resolved once */
	char l[512];
	snprintf(l, sizeof(l), "%s/rootlink", base);
	snprintf(p, sizeof(p), "%s/root", base);
	ck_assert_int_eq(symlink(p, l), 0);
	ck_assert_int_eq(sbxd_root_open(&r, l, false), 0);
	ck_assert_str_eq(sbxd_root_path(r), p);
	sbxd_root_free(r);
}
END_TEST

START_TEST(openat_follows_inside_links_only)
{
	USE_RESOLVER(_i);
	ck_assert_int_eq(open_rel("dir/file", O_RDONLY), 0);
	ck_assert_int_eq(open_rel("in", O_RDONLY), 0);
	ck_assert_int_eq(open_rel("dir/up/up/file", O_RDONLY), 0);
	ck_assert_int_eq(open_rel("out_rel/secret", O_RDONLY), ASB_EFORBIDDEN);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_ESCAPE);
	ck_assert_int_eq(open_rel("out_abs", O_RDONLY), ASB_EFORBIDDEN);
	/* stricter than upstream: absolute links are refused even inside */
	ck_assert_int_eq(open_rel("abs_in", O_RDONLY), ASB_EFORBIDDEN);
	ck_assert_int_eq(open_rel("magic/etc/passwd", O_RDONLY), ASB_EFORBIDDEN);
	ck_assert_int_eq(open_rel("missing", O_RDONLY), ASB_ENOTFOUND);
	ck_assert_str_eq(asb_error_last()->reason, SBXD_REASON_MISSING);
	ck_assert_int_eq(open_rel("dir/file/x", O_RDONLY), ASB_ERROR);  /* ENOTDIR: 500 */
	/* creating through an escaping link creates nothing outside */
	ck_assert_int_eq(open_rel("out_rel/new", O_WRONLY | O_CREAT), ASB_EFORBIDDEN);
	ck_assert(!tmpdir_exists(base, "outside/new"));
	/* a message never names the host path */
	ck_assert_ptr_null(strstr(asb_error_last()->message, base));
}
END_TEST

START_TEST(open_parent_mkdirs_beneath)
{
	USE_RESOLVER(_i);
	int fd;
	const char *name;
	ck_assert_int_eq(sbxd_root_open_parent(root, "x/y/z/f", false, &fd, &name), ASB_ENOTFOUND);
	ck_assert_int_eq(sbxd_root_open_parent(root, "x/y/z/f", true, &fd, &name), 0);
	ck_assert_str_eq(name, "f");
	close(fd);
	ck_assert(tmpdir_exists(base, "root/x/y/z"));
	ck_assert_int_eq(sbxd_root_open_parent(root, "top", false, &fd, &name), 0);
	ck_assert_str_eq(name, "top");
	close(fd);
	ck_assert_int_eq(sbxd_root_open_parent(root, "out_rel/a/b", true, &fd, &name),
	                 ASB_EFORBIDDEN);
	ck_assert(!tmpdir_exists(base, "outside/a"));
	ck_assert_int_eq(sbxd_root_open_parent(root, ".", true, &fd, &name), ASB_EINVAL);
	ck_assert_int_eq(sbxd_root_open_parent(root, "dir/file/sub/f", true, &fd, &name), ASB_ERROR);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sandboxd_confine");
	TCase *tc = tcase_create("clean");
	tcase_add_test(tc, clean_matches_upstream_rules);
	tcase_add_test(tc, clean_refuses_climbing_nul_and_long);
	suite_add_tcase(s, tc);
	TCase *fs = tcase_create("openat");
	tcase_add_checked_fixture(fs, setup, teardown);
	tcase_add_loop_test(fs, root_open_creates_and_resolves, 0, 2);
	tcase_add_loop_test(fs, openat_follows_inside_links_only, 0, 2);
	tcase_add_loop_test(fs, open_parent_mkdirs_beneath, 0, 2);
	suite_add_tcase(s, fs);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
