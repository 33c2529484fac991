/*
 * validation.c - Kubernetes qualified names, label values and DNS-1123
 * names, with apimachinery's messages (see validation.h). The texts are
 * reproduced byte for byte because the controllers put them in claim
 * conditions that upstream tools and users match on.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "k8s/validation.h"

#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG "must consist of alphanumeric characters, '-', '_' or '.', " \
	"and must start and end with an alphanumeric character"
#define QNAME_REGEX_ERR QNAME_MSG " (e.g. 'MyName',  or 'my.name',  or '123-abc', " \
	"regex used for validation is '" QNAME_FMT "')"
#define DNS1123_SUBDOMAIN_ERR "a lowercase RFC 1123 subdomain must consist of lower case " \
	"alphanumeric characters, '-' or '.', and must start and end with an alphanumeric " \
	"character (e.g. 'example.com', regex used for validation is " \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define LABEL_VALUE_ERR "a valid label must be an empty string or consist of alphanumeric " \
	"characters, '-', '_' or '.', and must start and end with an alphanumeric character " \
	"(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(" QNAME_FMT ")?')"

/* Messages joined by "; " into a caller buffer (cut, never overrun). */
typedef struct {
	char *buf;
	size_t cap, len;
	int n;
} msgs;

static void msgs_add(msgs *m, const char *text)
{
	if (m->buf && m->cap > m->len) {
		int w = snprintf(m->buf + m->len, m->cap - m->len, "%s%s", m->n ? "; " : "", text);
		if (w > 0)
			m->len += (size_t)w < m->cap - m->len ? (size_t)w : m->cap - m->len - 1;
	}
	m->n++;
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] over s[0..n). */
static bool qname_match(const char *s, size_t n)
{
	if (n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n), length not checked. */
static bool dns_label_match(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool dns_subdomain_match(const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!dns_label_match(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

int k8s_validate_qualified_name(const char *value, char *msg, size_t cap)
{
	msgs m = { msg, cap, 0, 0 };
	const char *s = value ? value : "";
	const char *slash = strchr(s, '/');
	const char *name = s;
	if (slash && strchr(slash + 1, '/')) {
		msgs_add(&m, "a qualified name " QNAME_REGEX_ERR
		         " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
		return ASB_EINVAL;
	}
	if (slash) {
		size_t plen = (size_t)(slash - s);
		name = slash + 1;
		if (plen == 0) {
			msgs_add(&m, "prefix part must be non-empty");
		} else {
			if (plen > 253)
				msgs_add(&m, "prefix part must be no more than 253 characters");
			if (!dns_subdomain_match(s, plen))
				msgs_add(&m, "prefix part " DNS1123_SUBDOMAIN_ERR);
		}
	}
	size_t nlen = strlen(name);
	if (nlen == 0)
		msgs_add(&m, "name part must be non-empty");
	else if (nlen > 63)
		msgs_add(&m, "name part must be no more than 63 characters");
	if (!qname_match(name, nlen))
		msgs_add(&m, "name part " QNAME_REGEX_ERR);
	return m.n ? ASB_EINVAL : 0;
}

int k8s_validate_label_value(const char *value, char *msg, size_t cap)
{
	msgs m = { msg, cap, 0, 0 };
	const char *s = value ? value : "";
	size_t n = strlen(s);
	if (n > 63)
		msgs_add(&m, "must be no more than 63 characters");
	if (n > 0 && !qname_match(s, n))
		msgs_add(&m, LABEL_VALUE_ERR);
	return m.n ? ASB_EINVAL : 0;
}

bool k8s_is_dns1123_label(const char *s)
{
	return s && strlen(s) <= 63 && dns_label_match(s, strlen(s));
}

bool k8s_is_dns1123_subdomain(const char *s)
{
	return s && *s && strlen(s) <= 253 && dns_subdomain_match(s, strlen(s));
}
