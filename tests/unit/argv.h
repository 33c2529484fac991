/*
 * argv.h - for the flag tests of the commands: builds a command line from
 * a NULL-terminated list of arguments. Header-only, test code.
 */
#ifndef TESTS_UNIT_ARGV_H
#define TESTS_UNIT_ARGV_H

#include <stdarg.h>
#include <string.h>

/* Fills a static argv: `prog`, then the arguments of `ap` up to NULL (at
 * most 62, each cut at 511 bytes), NULL-terminated; returns argc. The array
 * is reused by the next call (getopt may permute it, so it is a copy). */
static inline int test_argv(char ***out, const char *prog, va_list ap)
{
	static char *argv[64];
	static char buf[64][512];
	int argc = 0;
	argv[argc++] = strncpy(buf[0], prog, sizeof(buf[0]) - 1);
	for (const char *a; argc < 63 && (a = va_arg(ap, const char *)); argc++)
		argv[argc] = strncpy(buf[argc], a, sizeof(buf[argc]) - 1);
	argv[argc] = NULL;
	*out = argv;
	return argc;
}

#endif
