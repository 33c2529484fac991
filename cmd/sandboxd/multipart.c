/*
 * multipart.c - streaming multipart/form-data (multipart.h). The input is
 * appended to a small window; the parser looks for the delimiter
 * "\r\n--boundary" there, hands every byte that can no longer be part of a
 * delimiter to the current part, and keeps the rest for the next feed.
 * The stream is seen as if it began with "\r\n", so a first boundary at
 * the very start is found like any other.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "asb/common.h"
#include "multipart.h"

enum { ST_PREAMBLE, ST_AFTER_BOUNDARY, ST_HEADERS, ST_BODY, ST_END, ST_ERROR };

struct sbxd_multipart {
	sbxd_multipart_callbacks cb;
	void *ud;
	char *delim;        /* "\r\n--" boundary */
	size_t dlen;
	char *win;          /* unconsumed input */
	size_t wlen, wcap;
	int state;
	int err;
};

static int fail(sbxd_multipart *m, const char *why)
{
	m->state = ST_ERROR;
	m->err = asb_error_set(ASB_EINVAL, 400, NULL, "invalid multipart body: %s", why);
	return m->err;
}

/* Skips blanks; returns the position after them. */
static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/*
 * Reads a token or quoted-string value at `*sp` into a malloc'd string.
 * Inside quotes only \\ and \" are escapes, as in python-multipart (Python's
 * email.utils.unquote) behind upstream's runtime: HTML forms and libcurl send
 * a filename's backslashes as they are, so "dir\x.txt" stays dir\x.txt.
 */
static char *param_value(const char **sp)
{
	const char *s = *sp;
	size_t n = strlen(s);
	char *v = malloc(n + 1);
	if (!v)
		return NULL;
	size_t w = 0;
	if (*s == '"') {
		s++;
		while (*s && *s != '"') {
			if (*s == '\\' && (s[1] == '\\' || s[1] == '"'))
				s++;
			v[w++] = *s++;
		}
		if (*s == '"')
			s++;
	} else {
		while (*s && *s != ';' && *s != ' ' && *s != '\t')
			v[w++] = *s++;
	}
	v[w] = '\0';
	*sp = s;
	return v;
}

/*
 * Walks "type/subtype; a=b; c="d"" calling `fn` for each parameter, after
 * checking the type with `want_type` (case-insensitive prefix match up to
 * ';' or blank). Returns false when the type does not match.
 */
static bool params(const char *value, const char *want_type,
                   void (*fn)(const char *name, size_t nlen, const char **vp, void *ud), void *ud)
{
	const char *s = skip_ws(value);
	size_t tl = strlen(want_type);
	if (strncasecmp(s, want_type, tl) != 0)
		return false;
	s += tl;
	if (*s && *s != ';' && *s != ' ' && *s != '\t')
		return false;
	while (*s) {
		s = skip_ws(s);
		if (*s != ';') {
			/* junk: skip to the next ';' */
			while (*s && *s != ';')
				s++;
			continue;
		}
		s = skip_ws(s + 1);
		const char *name = s;
		while (*s && *s != '=' && *s != ';' && *s != ' ' && *s != '\t')
			s++;
		size_t nlen = (size_t)(s - name);
		s = skip_ws(s);
		if (*s != '=')
			continue;
		s = skip_ws(s + 1);
		fn(name, nlen, &s, ud);
	}
	return true;
}

typedef struct {
	char *boundary;
	bool oom;
} boundary_ctx;

static void boundary_param(const char *name, size_t nlen, const char **vp, void *ud)
{
	boundary_ctx *c = ud;
	char *v = param_value(vp);
	if (!v) {
		c->oom = true;
		return;
	}
	if (nlen == 8 && strncasecmp(name, "boundary", 8) == 0 && !c->boundary)
		c->boundary = v;
	else
		free(v);
}

int sbxd_multipart_boundary(const char *content_type, char **boundary)
{
	*boundary = NULL;
	if (!content_type)
		return ASB_ENOTFOUND;
	boundary_ctx c = { NULL, false };
	if (!params(content_type, "multipart/form-data", boundary_param, &c))
		return ASB_ENOTFOUND;
	if (c.oom) {
		free(c.boundary);
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	if (!c.boundary || !*c.boundary || strlen(c.boundary) > 70) {
		free(c.boundary);
		return asb_error_set(ASB_EINVAL, 400, NULL,
		                     "invalid multipart body: no usable boundary parameter");
	}
	*boundary = c.boundary;
	return 0;
}

int sbxd_multipart_new(sbxd_multipart **out, const char *boundary,
                       const sbxd_multipart_callbacks *cb, void *ud)
{
	*out = NULL;
	if (!boundary || !*boundary || strlen(boundary) > 70)
		return asb_error_set(ASB_EINVAL, 400, NULL, "invalid multipart boundary");
	sbxd_multipart *m = calloc(1, sizeof(*m));
	if (!m)
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	m->dlen = strlen(boundary) + 4;
	m->delim = malloc(m->dlen + 1);
	m->wcap = 4096;
	m->win = malloc(m->wcap);
	if (!m->delim || !m->win) {
		sbxd_multipart_free(m);
		return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	}
	memcpy(m->delim, "\r\n--", 4);
	memcpy(m->delim + 4, boundary, m->dlen - 4 + 1);
	memcpy(m->win, "\r\n", 2);
	m->wlen = 2;
	if (cb)
		m->cb = *cb;
	m->ud = ud;
	m->state = ST_PREAMBLE;
	*out = m;
	return 0;
}

void sbxd_multipart_free(sbxd_multipart *m)
{
	if (!m)
		return;
	free(m->delim);
	free(m->win);
	free(m);
}

typedef struct {
	char *name, *filename;
	bool oom;
} disp_ctx;

static void disp_param(const char *name, size_t nlen, const char **vp, void *ud)
{
	disp_ctx *c = ud;
	char *v = param_value(vp);
	if (!v) {
		c->oom = true;
		return;
	}
	char **slot = NULL;
	if (nlen == 4 && strncasecmp(name, "name", 4) == 0)
		slot = &c->name;
	else if (nlen == 8 && strncasecmp(name, "filename", 8) == 0)
		slot = &c->filename;
	if (slot && !*slot)
		*slot = v;
	else
		free(v);
}

/* Parses the header block `h` (NUL-terminated, CRLF-separated lines) and
 * starts the part. */
static int begin_part(sbxd_multipart *m, char *h)
{
	disp_ctx c = { NULL, NULL, false };
	for (char *line = h; line && *line;) {
		char *eol = strstr(line, "\r\n");
		if (eol)
			*eol = '\0';
		char *colon = strchr(line, ':');
		if (!colon || colon == line) {
			free(c.name);
			free(c.filename);
			return fail(m, "malformed part header");
		}
		*colon = '\0';
		if (strcasecmp(line, "content-disposition") == 0 && !c.name)
			params(colon + 1, "form-data", disp_param, &c);
		line = eol ? eol + 2 : NULL;
	}
	int rc = 0;
	if (c.oom)
		rc = asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
	else if (m->cb.on_part_begin)
		rc = m->cb.on_part_begin(c.name, c.filename, m->ud);
	free(c.name);
	free(c.filename);
	return rc;
}

/* What follows a delimiter candidate (`n` bytes at `s`): 1 a boundary
 * ("--", or blanks then CRLF), -1 not one, 0 not known yet. */
static int after_delimiter(const char *s, size_t n)
{
	if (n >= 1 && s[0] == '-')
		return n < 2 ? 0 : s[1] == '-' ? 1 : -1;
	size_t i = 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i == n)
		return i > 256 ? -1 : 0;
	if (s[i] != '\r')
		return -1;
	if (i + 1 == n)
		return 0;
	return s[i + 1] == '\n' ? 1 : -1;
}

/* Consumes as much of the window as the current state allows. */
static int step(sbxd_multipart *m, bool *progress)
{
	*progress = false;
	char *w = m->win;
	size_t n = m->wlen;
	size_t used = 0;
	int rc = 0;
	switch (m->state) {
	case ST_PREAMBLE:
	case ST_BODY: {
		/* A delimiter counts only when "--" or blanks + CRLF follow it
		 * (RFC 2046 section 5.1.1); otherwise it is content, as Go's reader
		 * has it. */
		size_t from = 0, data;
		bool found = false;
		for (;;) {
			char *hit = memmem(w + from, n - from, m->delim, m->dlen);
			if (!hit) {
				data = n >= m->dlen ? n - m->dlen + 1 : 0;
				if (data < from)
					data = from;
				break;
			}
			int k = after_delimiter(hit + m->dlen, n - (size_t)(hit - w) - m->dlen);
			data = (size_t)(hit - w);
			if (k > 0)
				found = true;
			if (k >= 0)
				break;
			from = data + 1;
		}
		if (m->state == ST_BODY && data && m->cb.on_part_data)
			rc = m->cb.on_part_data(w, data, m->ud);
		used = data;
		if (!rc && found) {
			used += m->dlen;
			if (m->state == ST_BODY && m->cb.on_part_end)
				rc = m->cb.on_part_end(m->ud);
			m->state = ST_AFTER_BOUNDARY;
		}
		break;
	}
	case ST_AFTER_BOUNDARY: {
		if (n >= 2 && w[0] == '-' && w[1] == '-') {
			m->state = ST_END;
			used = n;
			break;
		}
		size_t i = 0;
		while (i < n && (w[i] == ' ' || w[i] == '\t'))
			i++;
		if (i == n) {
			if (n > 256)
				return fail(m, "malformed boundary line");
			break;
		}
		if (w[i] != '\r')
			return fail(m, "malformed boundary line");
		if (i + 1 == n)
			break;
		if (w[i + 1] != '\n')
			return fail(m, "malformed boundary line");
		used = i + 2;
		m->state = ST_HEADERS;
		break;
	}
	case ST_HEADERS: {
		if (n >= 2 && w[0] == '\r' && w[1] == '\n') {
			char empty[1] = "";
			rc = begin_part(m, empty);
			used = 2;
			m->state = ST_BODY;
			/* the part body begins right after the blank line, and the
			 * delimiter includes its leading CRLF: step back */
			break;
		}
		char *end = memmem(w, n, "\r\n\r\n", 4);
		if (!end) {
			if (n > SBXD_MULTIPART_MAX_HEADERS)
				return fail(m, "part headers too large");
			break;
		}
		size_t hl = (size_t)(end - w);
		if (hl > SBXD_MULTIPART_MAX_HEADERS)
			return fail(m, "part headers too large");
		if (memchr(w, '\0', hl))
			return fail(m, "NUL byte in part headers");
		char *h = malloc(hl + 1);
		if (!h)
			return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
		memcpy(h, w, hl);
		h[hl] = '\0';
		rc = begin_part(m, h);
		free(h);
		used = hl + 4;
		m->state = ST_BODY;
		break;
	}
	case ST_END:
		used = n;  /* epilogue */
		break;
	default:
		return m->err;
	}
	if (rc) {
		if (m->state != ST_ERROR) {
			m->state = ST_ERROR;
			m->err = rc;
		}
		return rc;
	}
	if (used) {
		memmove(w, w + used, n - used);
		m->wlen = n - used;
		*progress = true;
	}
	return 0;
}

int sbxd_multipart_feed(sbxd_multipart *m, const char *data, size_t len)
{
	if (m->state == ST_ERROR)
		return m->err;
	while (len > 0) {
		/* take at most 64 KiB at a time so the window stays small */
		size_t take = len < 65536 ? len : 65536;
		if (m->wlen + take > m->wcap) {
			size_t ncap = m->wlen + take + 1024;
			char *nw = realloc(m->win, ncap);
			if (!nw)
				return asb_error_set(ASB_ENOMEM, 500, NULL, "out of memory");
			m->win = nw;
			m->wcap = ncap;
		}
		memcpy(m->win + m->wlen, data, take);
		m->wlen += take;
		data += take;
		len -= take;
		bool progress = true;
		while (progress && m->wlen > 0) {
			int rc = step(m, &progress);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int sbxd_multipart_finish(sbxd_multipart *m)
{
	if (m->state == ST_ERROR)
		return m->err;
	if (m->state != ST_END)
		return fail(m, "unexpected end of body");
	return 0;
}
