/*
 * tmpdir.c - scratch directories for the sandboxd unit tests (tmpdir.h).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"

void tmpdir_make(char *base, size_t cap)
{
	const char *t = getenv("TMPDIR");
	snprintf(base, cap, "%s/sbxd-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(base))
		abort();
	char p[4096];
	snprintf(p, sizeof(p), "%s/root", base);
	if (mkdir(p, 0755) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/outside", base);
	if (mkdir(p, 0755) < 0)
		abort();
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void tmpdir_remove(const char *base)
{
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tmpdir_write(const char *base, const char *rel, const char *content)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	FILE *f = fopen(p, "w");
	if (!f)
		abort();
	fputs(content, f);
	fclose(f);
}

char *tmpdir_read(const char *base, const char *rel)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	FILE *f = fopen(p, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

int tmpdir_exists(const char *base, const char *rel)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", base, rel);
	return lstat(p, &st) == 0;
}
