/*
 * json.c - one compact JSON line (json.h).
 */
#include <stdlib.h>
#include <string.h>
#include "asb/json.h"

char *asb_json_print(cJSON *j, bool newline, size_t *len)
{
	if (!j)
		return NULL;
	char *s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (!s)
		return NULL;
	size_t n = strlen(s);
	if (newline) {
		char *t = realloc(s, n + 2);
		if (!t) {
			free(s);
			return NULL;
		}
		s = t;
		s[n++] = '\n';
		s[n] = '\0';
	}
	if (len)
		*len = n;
	return s;
}
