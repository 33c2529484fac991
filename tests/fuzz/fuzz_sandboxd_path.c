/*
 * libFuzzer target: sandboxd's path resolver (cmd/sandboxd/confine.c).
 * The first byte picks the clean mode and how many times the rest is
 * percent-decoded; the rest is a client path. Checked on every input:
 * - the cleaned path is relative, with no empty, "." or ".." component
 *   (the root alone is ".");
 * - opened beneath a fixed tree (links inside, escaping relative and
 *   absolute links, a loop), whatever opens lies inside the root, by the
 *   kernel's own account (/proc/self/fd);
 * - both resolvers (openat2, and the userspace walk) agree on whether it
 *   opens and on what (differential).
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"
#include "confine.h"
#include "asb/common.h"

static sbxd_root *root;
static char root_path[PATH_MAX];
static char base_dir[64];
static bool have_openat2;

static void mk(const char *base, const char *rel, bool dir)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (dir) {
		mkdir(p, 0755);
	} else {
		FILE *f = fopen(p, "w");
		if (f)
			fclose(f);
	}
}

static void ln(const char *base, const char *target, const char *rel)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (symlink(target, p) != 0)
		abort();
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The scratch tree goes when the fuzzer exits. */
static void cleanup(void)
{
	sbxd_root_free(root);
	nftw(base_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char *base = base_dir;
	snprintf(base_dir, sizeof(base_dir), "/tmp/fuzz-sandboxd-XXXXXX");
	if (!mkdtemp(base))
		abort();
	atexit(cleanup);
	mk(base, "root", true);
	mk(base, "outside", true);
	mk(base, "outside/secret", false);
	mk(base, "root/a", true);
	mk(base, "root/a/b", true);
	mk(base, "root/a/f", false);
	ln(base, "a/b", "root/in");
	ln(base, "../..", "root/a/b/up2");      /* back to the root: inside */
	ln(base, "../../..", "root/a/b/up3");   /* above it */
	ln(base, "../outside", "root/out");
	ln(base, "/etc", "root/abs");
	ln(base, "loop2", "root/loop1");
	ln(base, "loop1", "root/loop2");
	ln(base, "missing", "root/dangling");
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/root", base);
	if (sbxd_root_open(&root, p, false) != 0)
		abort();
	snprintf(root_path, sizeof(root_path), "%s", sbxd_root_path(root));
	have_openat2 = sbxd_root_resolver(root) == SBXD_RESOLVE_OPENAT2;
	return 0;
}

/* Opens `rel` with the resolver; writes where it landed into `where`. */
static bool resolve(sbxd_resolver res, const char *rel, int flags, char *where, size_t cap)
{
	if (sbxd_root_set_resolver(root, res) != 0)
		return false;
	int fd;
	if (sbxd_root_openat(root, rel, flags, 0, &fd) != 0)
		return false;
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, where, cap - 1);
	close(fd);
	if (n < 0)
		abort();
	where[n] = '\0';
	size_t rl = strlen(root_path);
	if (strncmp(where, root_path, rl) != 0 || (where[rl] != '\0' && where[rl] != '/')) {
		fprintf(stderr, "escaped: %s -> %s\n", rel, where);
		abort();
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	sbxd_clean_mode mode = data[0] & 1 ? SBXD_CLEAN_LSTRIP : SBXD_CLEAN_STRIP_ROOT;
	int decodes = (data[0] >> 1) % 3;
	int flags = data[0] & 0x40 ? O_PATH | O_NOFOLLOW : O_PATH;
	char *cur = malloc(size);
	if (!cur)
		return 0;
	memcpy(cur, data + 1, size - 1);
	size_t len = size - 1;
	for (int i = 0; i < decodes; i++) {
		char *next;
		if (sbxd_percent_decode(cur, len, &next, &len) != 0) {
			free(cur);
			asb_error_clear();
			return 0;
		}
		free(cur);
		cur = next;
	}
	char *rel = NULL;
	int rc = sbxd_path_clean(root_path, mode, cur, len, &rel);
	free(cur);
	if (rc == 0) {
		if (rel[0] == '/')
			abort();
		if (strcmp(rel, ".") != 0) {
			for (char *c = rel; c;) {
				char *e = strchr(c, '/');
				size_t cl = e ? (size_t)(e - c) : strlen(c);
				if (cl == 0 || (cl == 1 && c[0] == '.') ||
				    (cl == 2 && c[0] == '.' && c[1] == '.'))
					abort();
				c = e ? e + 1 : NULL;
			}
		}
		char w1[PATH_MAX], w2[PATH_MAX];
		bool ok2 = resolve(SBXD_RESOLVE_WALK, rel, flags, w2, sizeof(w2));
		if (have_openat2) {
			bool ok1 = resolve(SBXD_RESOLVE_OPENAT2, rel, flags, w1, sizeof(w1));
			if (ok1 != ok2 || (ok1 && strcmp(w1, w2) != 0)) {
				fprintf(stderr, "resolvers disagree on %s: %d %s / %d %s\n", rel, ok1,
				        ok1 ? w1 : "", ok2, ok2 ? w2 : "");
				abort();
			}
		}
	}
	free(rel);
	asb_error_clear();
	return 0;
}
