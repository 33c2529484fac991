/*
 * parser.c - httpd/parser.h on the packaged http-parser (2.9): the only
 * file that includes <http_parser.h>, so that moving to llhttp touches
 * this file alone. The library's settings are one static table of
 * trampolines that call the owner's httpd_parser_callbacks.
 */
#include <stddef.h>
#include <http_parser.h>
#include "httpd/parser.h"

_Static_assert(sizeof(http_parser) <= sizeof(((httpd_parser *)0)->impl),
               "httpd_parser.impl too small for http_parser");
_Static_assert(_Alignof(http_parser) <= _Alignof(httpd_parser),
               "httpd_parser.impl under-aligned for http_parser");
_Static_assert(offsetof(httpd_parser, impl) == 0, "impl first: trampolines cast back");

static http_parser *lib(httpd_parser *p) { return (http_parser *)(void *)p->impl.bytes; }
static const http_parser *clib(const httpd_parser *p)
{
	return (const http_parser *)(const void *)p->impl.bytes;
}
/* impl is the first member: the library's parser is where ours begins */
static httpd_parser *ours(http_parser *hp) { return (httpd_parser *)(void *)hp; }

#define TRAMPOLINE(name)                                                        \
	static int t_##name(http_parser *hp)                                        \
	{                                                                           \
		httpd_parser *p = ours(hp);                                             \
		return p->cb->name ? p->cb->name(p) : 0;                                \
	}
#define TRAMPOLINE_DATA(name)                                                   \
	static int t_##name(http_parser *hp, const char *at, size_t len)            \
	{                                                                           \
		httpd_parser *p = ours(hp);                                             \
		return p->cb->name ? p->cb->name(p, at, len) : 0;                       \
	}

TRAMPOLINE(on_message_begin)
TRAMPOLINE_DATA(on_url)
TRAMPOLINE_DATA(on_status)
TRAMPOLINE_DATA(on_header_field)
TRAMPOLINE_DATA(on_header_value)
TRAMPOLINE(on_headers_complete)
TRAMPOLINE_DATA(on_body)
TRAMPOLINE(on_message_complete)

static const http_parser_settings settings = {
	.on_message_begin = t_on_message_begin,
	.on_url = t_on_url,
	.on_status = t_on_status,
	.on_header_field = t_on_header_field,
	.on_header_value = t_on_header_value,
	.on_headers_complete = t_on_headers_complete,
	.on_body = t_on_body,
	.on_message_complete = t_on_message_complete,
};

void httpd_parser_init(httpd_parser *p, httpd_parser_type type,
                       const httpd_parser_callbacks *cb, void *data)
{
	http_parser_init(lib(p), type == HTTPD_PARSER_RESPONSE ? HTTP_RESPONSE : HTTP_REQUEST);
	lib(p)->data = p;
	p->cb = cb;
	p->data = data;
}

void *httpd_parser_data(const httpd_parser *p)
{
	return p->data;
}

httpd_parser_error httpd_parser_get_error(const httpd_parser *p)
{
	enum http_errno e = HTTP_PARSER_ERRNO(clib(p));
	switch (e) {
	case HPE_OK: return HTTPD_PARSER_OK;
	case HPE_PAUSED: return HTTPD_PARSER_PAUSED;
	case HPE_HEADER_OVERFLOW: return HTTPD_PARSER_EHEADER_OVERFLOW;
	case HPE_CB_message_begin: case HPE_CB_url: case HPE_CB_status:
	case HPE_CB_header_field: case HPE_CB_header_value: case HPE_CB_headers_complete:
	case HPE_CB_body: case HPE_CB_message_complete: case HPE_CB_chunk_header:
	case HPE_CB_chunk_complete:
		return HTTPD_PARSER_ECALLBACK;
	default: return HTTPD_PARSER_EINVALID;
	}
}

httpd_parser_error httpd_parser_execute(httpd_parser *p, const char *data, size_t len,
                                        size_t *consumed)
{
	size_t n = http_parser_execute(lib(p), &settings, data, len);
	if (consumed)
		*consumed = n;
	return httpd_parser_get_error(p);
}

const char *httpd_parser_error_name(const httpd_parser *p)
{
	return http_errno_name(HTTP_PARSER_ERRNO(clib(p)));
}

const char *httpd_parser_error_description(const httpd_parser *p)
{
	return http_errno_description(HTTP_PARSER_ERRNO(clib(p)));
}

/* http_parser_pause() asserts in an error state; ours leaves it alone */
void httpd_parser_pause(httpd_parser *p)
{
	if (HTTP_PARSER_ERRNO(lib(p)) == HPE_OK)
		http_parser_pause(lib(p), 1);
}

void httpd_parser_resume(httpd_parser *p)
{
	if (HTTP_PARSER_ERRNO(lib(p)) == HPE_PAUSED)
		http_parser_pause(lib(p), 0);
}

const char *httpd_parser_method(const httpd_parser *p)
{
	return http_method_str((enum http_method)clib(p)->method);
}

int httpd_parser_status_code(const httpd_parser *p)
{
	return (int)clib(p)->status_code;
}

int httpd_parser_http_major(const httpd_parser *p)
{
	return clib(p)->http_major;
}

int httpd_parser_http_minor(const httpd_parser *p)
{
	return clib(p)->http_minor;
}

bool httpd_parser_keep_alive(const httpd_parser *p)
{
	return http_should_keep_alive(clib(p)) != 0;
}

bool httpd_parser_chunked(const httpd_parser *p)
{
	return (clib(p)->flags & F_CHUNKED) != 0;
}

bool httpd_parser_upgrade(const httpd_parser *p)
{
	return clib(p)->upgrade != 0;
}

bool httpd_parser_content_length(const httpd_parser *p, uint64_t *len)
{
	if (!(clib(p)->flags & F_CONTENTLENGTH))
		return false;
	if (len)
		*len = clib(p)->content_length;
	return true;
}

int httpd_parser_split_url(const char *url, size_t len, bool is_connect, httpd_url *out)
{
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, len, is_connect, &u) != 0)
		return ASB_EINVAL;
	httpd_url_field *f[UF_MAX] = {
		[UF_SCHEMA] = &out->schema, [UF_HOST] = &out->host, [UF_PORT] = &out->port,
		[UF_PATH] = &out->path, [UF_QUERY] = &out->query, [UF_FRAGMENT] = &out->fragment,
		[UF_USERINFO] = &out->userinfo,
	};
	for (int i = 0; i < UF_MAX; i++) {
		f[i]->set = (u.field_set & (1 << i)) != 0;
		f[i]->off = f[i]->set ? u.field_data[i].off : 0;
		f[i]->len = f[i]->set ? u.field_data[i].len : 0;
	}
	out->port_number = out->port.set ? u.port : 0;
	return 0;
}
