/*
 * shlex.c - Python's shlex.split() in POSIX mode (shlex.h), as a small
 * state machine over the bytes.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "asb/common.h"
#include "shlex.h"

void sbxd_shlex_free(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int sbxd_shlex_split(const char *s, size_t len, char ***out, size_t *argc)
{
	*out = NULL;
	if (argc)
		*argc = 0;
	if (memchr(s, '\0', len))
		return asb_error_set(ASB_EINVAL, 0, NULL, "command contains a NUL byte");
	/* words never outnumber len/2+1, and their bytes never exceed len */
	size_t maxw = len / 2 + 2;
	char **argv = calloc(maxw, sizeof(*argv));
	char *word = malloc(len + 1);
	if (!argv || !word) {
		free(argv);
		free(word);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	size_t n = 0, w = 0, i = 0;
	bool in_word = false;
	const char *err = NULL;
	while (i < len && !err) {
		char c = s[i++];
		if (blank(c)) {
			if (in_word) {
				word[w] = '\0';
				if (!(argv[n++] = strdup(word)))
					goto oom;
				w = 0;
				in_word = false;
			}
		} else if (c == '\\') {
			if (i == len)
				err = "No escaped character";
			else
				word[w++] = s[i++];
			in_word = true;
		} else if (c == '\'') {
			in_word = true;
			while (i < len && s[i] != '\'')
				word[w++] = s[i++];
			if (i == len)
				err = "No closing quotation";
			i++;
		} else if (c == '"') {
			in_word = true;
			while (i < len && s[i] != '"') {
				if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '"' || s[i + 1] == '\\'))
					i++;
				word[w++] = s[i++];
			}
			if (i == len)
				err = "No closing quotation";
			i++;
		} else {
			word[w++] = c;
			in_word = true;
		}
	}
	if (!err && in_word) {
		word[w] = '\0';
		if (!(argv[n++] = strdup(word)))
			goto oom;
	}
	free(word);
	if (err) {
		sbxd_shlex_free(argv);
		return asb_error_set(ASB_EINVAL, 0, NULL, "%s", err);
	}
	*out = argv;
	if (argc)
		*argc = n;
	return 0;
oom:
	free(word);
	sbxd_shlex_free(argv);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
}
