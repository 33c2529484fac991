/*
 * libFuzzer target: what sandboxd parses from a request besides HTTP
 * itself (which is http-parser's): the streaming multipart reader fed in
 * two pieces cut anywhere, the process request JSON, the stdin, signal
 * and resize requests, Python's shlex split, Content-Type boundaries,
 * query parameters, percent-decoding and the UTF-8 clean-up, and the big
 * answers' pieces, which must join into the answer built whole. The first
 * byte picks the parser (and the cut); nothing may crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "asb/common.h"
#include "multipart.h"
#include "shlex.h"

static int on_data(const char *d, size_t n, void *ud)
{
	*(size_t *)ud += n;
	return 0;
}

static void fuzz_multipart(const char *s, size_t n, size_t cut)
{
	const char *nl = memchr(s, '\n', n);
	if (!nl)
		return;
	char boundary[80];
	size_t bl = (size_t)(nl - s);
	if (bl == 0 || bl >= sizeof(boundary))
		return;
	memcpy(boundary, s, bl);
	boundary[bl] = '\0';
	const char *body = nl + 1;
	size_t len = n - bl - 1;
	size_t got = 0;
	sbxd_multipart_callbacks cb = { NULL, on_data, NULL };
	sbxd_multipart *m;
	if (memchr(boundary, '\0', bl) || sbxd_multipart_new(&m, boundary, &cb, &got) != 0)
		return;
	cut = len ? cut % (len + 1) : 0;
	if (sbxd_multipart_feed(m, body, cut) == 0 && sbxd_multipart_feed(m, body + cut, len - cut) == 0)
		sbxd_multipart_finish(m);
	if (got > len)
		abort();  /* a part never holds more than the body */
	sbxd_multipart_free(m);
}

/* The output split in two at `cut`: stdout and stderr, encoded in pieces
 * of 4..67 bytes of output, joined, against the answers built whole. */
static void join(sbxd_bytes *b, const char *s, size_t n, bool text, size_t in_max)
{
	sbxd_out_cursor c = { s, n, 0 };
	while (c.off < c.n) {
		size_t len, before = c.off;
		char *p = text ? sbxd_text_cursor_next(&c, in_max, &len)
		               : sbxd_b64_cursor_next(&c, in_max, &len);
		if (!p)
			return;
		if (c.off <= before)
			abort();  /* no progress */
		sbxd_bytes_add(b, p, len);
		free(p);
	}
}

static void fuzz_pieces(const char *s, size_t n, size_t cut)
{
	size_t on = n ? cut % (n + 1) : 0;
	size_t in_max = 4 + cut % 64;
	size_t wl;
	char *whole = sbxd_runtime_execute_response(s, on, s + on, n - on, (int)cut - 128, &wl);
	sbxd_bytes b = { 0 };
	sbxd_bytes_add(&b, SBXD_RUNTIME_ANSWER_HEAD, strlen(SBXD_RUNTIME_ANSWER_HEAD));
	join(&b, s, on, true, in_max);
	sbxd_bytes_add(&b, SBXD_RUNTIME_ANSWER_MID, strlen(SBXD_RUNTIME_ANSWER_MID));
	join(&b, s + on, n - on, true, in_max);
	char tail[32];
	sbxd_bytes_add(&b, tail, sbxd_runtime_answer_tail((int)cut - 128, tail, sizeof(tail)));
	if (whole && (b.len != wl || memcmp(b.data, whole, wl) != 0))
		abort();
	free(whole);
	sbxd_bytes_free(&b);
	sbxd_exit ex = { .exit_code = (int)cut, .signal = (int)(cut & 3) };
	whole = sbxd_execute_response(&ex, s, on, s + on, n - on, &wl);
	size_t hl;
	char *head = sbxd_execute_answer_head(&ex, &hl);
	if (head)
		sbxd_bytes_add(&b, head, hl);
	free(head);
	join(&b, s, on, false, in_max);
	sbxd_bytes_add(&b, SBXD_EXECUTE_ANSWER_MID, strlen(SBXD_EXECUTE_ANSWER_MID));
	join(&b, s + on, n - on, false, in_max);
	sbxd_bytes_add(&b, SBXD_EXECUTE_ANSWER_TAIL, strlen(SBXD_EXECUTE_ANSWER_TAIL));
	if (whole && head && (b.len != wl || memcmp(b.data, whole, wl) != 0))
		abort();
	free(whole);
	sbxd_bytes_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t which = data[0] % 9;
	size_t cut = data[1];
	const char *s = (const char *)data + 2;
	size_t n = size - 2;
	char *z = malloc(n + 1);  /* a NUL-terminated copy for string APIs */
	if (!z)
		return 0;
	memcpy(z, s, n);
	z[n] = '\0';
	switch (which) {
	case 0:
		fuzz_multipart(s, n, cut * 257);
		break;
	case 1: {
		sbxd_proc_request r;
		if (sbxd_proc_request_parse(s, n, cut & 1, &r) == 0) {
			if (!r.argv || !r.argv[0] || !r.argv[0][0])
				abort();
			sbxd_proc_request_clear(&r);
		}
		break;
	}
	case 2: {
		char **argv;
		size_t argc;
		if (sbxd_shlex_split(s, n, &argv, &argc) == 0) {
			if (argv[argc] != NULL)
				abort();
			sbxd_shlex_free(argv);
		}
		break;
	}
	case 3: {
		unsigned char *d;
		size_t dn;
		bool eof;
		if (sbxd_stdin_request_parse(s, n, &d, &dn, &eof) == 0)
			free(d);
		int sig;
		sbxd_signal_request_parse(s, n, &sig);
		unsigned short c, r;
		sbxd_resize_request_parse(s, n, &c, &r);
		break;
	}
	case 4: {
		char *b;
		if (sbxd_multipart_boundary(z, &b) == 0)
			free(b);
		break;
	}
	case 5: {
		char *v = sbxd_query_param(z, cut & 1 ? "mode" : "recursive");
		free(v);
		break;
	}
	case 6: {
		char *d;
		size_t dl;
		if (sbxd_percent_decode(s, n, &d, &dl) == 0) {
			if (dl > n)
				abort();
			free(d);
		}
		char *u = sbxd_utf8_clean(s, n);
		free(u);
		break;
	}
	case 8:
		fuzz_pieces(s, n, cut);
		break;
	default: {
		size_t len;
		char *e = sbxd_error_body(z, z, &len);
		free(e);
		break;
	}
	}
	free(z);
	asb_error_clear();
	return 0;
}
