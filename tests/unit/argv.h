/*
 * argv.h - for the flag tests of the commands: builds a command line from
 * a NULL-terminated list of arguments, and captures what a parse prints on
 * stderr. Header-only, test code.
 */
#ifndef TESTS_UNIT_ARGV_H
#define TESTS_UNIT_ARGV_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fills a static argv: `prog`, then `args` up to NULL (at most 62, each
 * cut at 511 bytes), NULL-terminated; returns argc. The array is reused by
 * the next call (getopt may permute it, so it is a copy). */
static inline int test_argv_of(char ***out, const char *prog, const char *const *args)
{
	static char *argv[64];
	static char buf[64][512];
	int argc = 0;
	argv[argc++] = strncpy(buf[0], prog, sizeof(buf[0]) - 1);
	for (; argc < 63 && args[argc - 1]; argc++)
		argv[argc] = strncpy(buf[argc], args[argc - 1], sizeof(buf[argc]) - 1);
	argv[argc] = NULL;
	*out = argv;
	return argc;
}

/* test_argv_of() of the arguments of `ap`, up to NULL. */
static inline int test_argv(char ***out, const char *prog, va_list ap)
{
	const char *args[63];
	int n = 0;
	while (n < 62 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	args[n] = NULL;
	return test_argv_of(out, prog, args);
}

/* A NULL-terminated argument list in place: TEST_ARGS("-a", "b"). */
#define TEST_ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* stderr sent to a temporary file between test_stderr_begin() and
 * test_stderr_end(). */
typedef struct {
	FILE *tmp;
	int saved;
} test_stderr;

static inline void test_stderr_begin(test_stderr *c)
{
	fflush(stderr);
	c->tmp = tmpfile();
	c->saved = dup(2);
	if (c->tmp)
		dup2(fileno(c->tmp), 2);
}

/* Restores stderr; returns what was written meanwhile (malloc'd, never
 * NULL unless out of memory). */
static inline char *test_stderr_end(test_stderr *c)
{
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	if (!c->tmp)
		return strdup("");
	long n = ftell(c->tmp);
	char *out = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	rewind(c->tmp);
	if (out && n > 0 && fread(out, 1, (size_t)n, c->tmp) != (size_t)n)
		out[0] = '\0';
	fclose(c->tmp);
	return out;
}

/* Runs `parse` on `prog` and `args` with stderr captured: its result in
 * `*rc`, what it printed returned (malloc'd). */
static inline char *test_stderr_of(int (*parse)(int argc, char **argv), int *rc, const char *prog,
                                   const char *const *args)
{
	char **argv;
	int argc = test_argv_of(&argv, prog, args);
	test_stderr c;
	test_stderr_begin(&c);
	*rc = parse(argc, argv);
	return test_stderr_end(&c);
}

#endif
