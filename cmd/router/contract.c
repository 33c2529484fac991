/*
 * contract.c - request contract of the router (contract.h): routing
 * headers, IP guards and body framing. Detail texts are the Go router's.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "asb/strbuf.h"
#include "contract.h"

int rt_reject_set(rt_reject *rej, int status, const char *fmt, ...)
{
	va_list ap;
	rej->status = status;
	va_start(ap, fmt);
	vsnprintf(rej->detail, sizeof(rej->detail), fmt, ap);
	va_end(ap);
	return -1;
}

const char *rt_head_get(const rt_head *h, const char *name)
{
	/* first letters compared (ASCII case folded) before strcasecmp: this
	 * runs a dozen times a request, over every field */
	unsigned char c = (unsigned char)name[0] | 0x20;
	for (size_t i = 0; i < h->nheaders; i++)
		if (((unsigned char)h->headers[i].name[0] | 0x20) == c &&
		    strcasecmp(h->headers[i].name, name) == 0)
			return h->headers[i].value;
	return NULL;
}

/* An absent or empty header reads as NULL (Go: Header.Get == ""). */
static const char *get_nonempty(const rt_head *h, const char *name)
{
	const char *v = rt_head_get(h, name);
	return v && *v ? v : NULL;
}

bool rt_dns_label(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

const char *rt_contract_metric_namespace(const char *ns)
{
	return ns && rt_dns_label(ns) ? ns : "-";
}

bool rt_ip_parse(const char *s, rt_ip *out)
{
	memset(out, 0, sizeof(*out));
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, out->addr) != 1)
			return false;
		static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(out->addr, mapped, 12) == 0) {
			memmove(out->addr, out->addr + 12, 4);
			memset(out->addr + 4, 0, 12);
			out->family = AF_INET;
		} else {
			out->family = AF_INET6;
		}
	} else {
		/* glibc's inet_pton refuses leading zeros and short forms, as Go does */
		if (inet_pton(AF_INET, s, out->addr) != 1)
			return false;
		out->family = AF_INET;
	}
	if (out->family == AF_INET) {
		/* dotted decimal as inet_ntop writes it, without its sprintf */
		char *t = out->text;
		for (int i = 0; i < 4; i++) {
			if (i)
				*t++ = '.';
			t += asb_format_int(t, out->addr[i]);
		}
		*t = '\0';
	} else {
		inet_ntop(out->family, out->addr, out->text, sizeof(out->text));
	}
	return true;
}

bool rt_ip_equal(const rt_ip *a, const rt_ip *b)
{
	return a->family == b->family &&
	       memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

/* Addresses of cloud metadata and platform services outside link-local
 * (which is refused whole). No pod has them. */
static const unsigned char meta_v4[][4] = {
	{ 100, 100, 100, 200 },   /* Alibaba Cloud metadata */
	{ 168, 63, 129, 16 },     /* Azure WireServer */
	{ 192, 0, 0, 192 },       /* Oracle Cloud legacy metadata */
};
static const unsigned char meta_v6[][16] = {
	{ 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 },  /* fd00:ec2::254, AWS IMDS */
	{ 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x23 },     /* fd00:ec2::23, EKS Pod Identity */
	{ 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x53 },  /* fd00:ec2::253, AWS DNS */
	{ 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x23 },  /* fd00:ec2::123, AWS time */
	{ 0xfd, 0x20, 0, 0xce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 },  /* fd20:ce::254, GCP metadata */
};

static bool v4_allowed(const unsigned char *a, bool allow_loopback)
{
	if (a[0] == 0)
		return false;                       /* 0.0.0.0/8, "this network" (RFC 1122) */
	if (a[0] == 127)
		return allow_loopback;              /* 127.0.0.0/8 */
	if (a[0] == 169 && a[1] == 254)
		return false;                       /* link-local, metadata */
	if ((a[0] & 0xf0) == 224)
		return false;                       /* multicast incl. 224.0.0.0/24 */
	if (a[0] == 255 && a[1] == 255 && a[2] == 255 && a[3] == 255)
		return false;                       /* limited broadcast */
	for (size_t i = 0; i < sizeof(meta_v4) / sizeof(meta_v4[0]); i++)
		if (memcmp(a, meta_v4[i], 4) == 0)
			return false;
	return true;
}

static bool has_prefix(const unsigned char *a, const unsigned char *p, size_t n)
{
	return memcmp(a, p, n) == 0;
}

/* The IPv4 addresses an IPv6 address carries inside it, wherever a
 * translator, tunnel or relay could turn it into that IPv4 destination:
 * SIIT ::ffff:0:a.b.c.d (RFC 6145), NAT64 64:ff9b::/96 (RFC 6052) and the
 * local-use 64:ff9b:1::/48 (RFC 8215) at every RFC 6052 position a /48,
 * /56, /64 or /96 prefix puts it, 6to4 2002:V4::/16 (RFC 3056), Teredo's
 * server and obfuscated client (RFC 4380) and ISATAP's interface ID
 * (RFC 5214). Writes up to 4 of them to `out`; returns how many. */
static int embedded_v4(const unsigned char *a, unsigned char out[4][4])
{
	static const unsigned char siit[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 0x01 };
	static const unsigned char sixtofour[2] = { 0x20, 0x02 };
	static const unsigned char teredo[4] = { 0x20, 0x01, 0, 0 };
	int n = 0;
	if (has_prefix(a, siit, 12) || has_prefix(a, nat64, 12)) {
		memcpy(out[n++], a + 12, 4);
	} else if (has_prefix(a, nat64_local, 6)) {
		/* the translator's prefix length is the operator's choice: read
		 * every position (RFC 6052 §2.2: bits 64-71, byte 8, are skipped);
		 * a reading in 0.0.0.0/8 is the zero padding of another position */
		const unsigned char at[4][4] = {
			{ a[6], a[7], a[9], a[10] },     /* /48 */
			{ a[7], a[9], a[10], a[11] },    /* /56 */
			{ a[9], a[10], a[11], a[12] },   /* /64 */
			{ a[12], a[13], a[14], a[15] },  /* /96 */
		};
		for (int i = 0; i < 4; i++)
			if (at[i][0])
				memcpy(out[n++], at[i], 4);
		if (!n)
			memset(out[n++], 0, 4);    /* the bare prefix: 0.0.0.0 */
	} else if (has_prefix(a, sixtofour, 2)) {
		memcpy(out[n++], a + 2, 4);
	} else if (has_prefix(a, teredo, 4)) {
		memcpy(out[n++], a + 4, 4);    /* the server */
		for (int i = 0; i < 4; i++)
			out[n][i] = (unsigned char)~a[12 + i];  /* the client, inverted */
		n++;
	}
	/* ISATAP, under any prefix: interface ID 0000:5efe or 0200:5efe */
	if (n < 4 && (a[8] & ~0x02) == 0 && a[9] == 0 && a[10] == 0x5e && a[11] == 0xfe)
		memcpy(out[n++], a + 12, 4);
	return n;
}

bool rt_ip_allowed(const rt_ip *ip, bool allow_loopback)
{
	const unsigned char *a = ip->addr;
	if (ip->family == AF_INET)
		return v4_allowed(a, allow_loopback);
	static const unsigned char zero[16] = { 0 };
	static const unsigned char one[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	if (memcmp(a, zero, 16) == 0)
		return false;                           /* :: */
	if (memcmp(a, one, 16) == 0)
		return allow_loopback;                  /* ::1 */
	if (memcmp(a, zero, 12) == 0)
		return false;                           /* ::a.b.c.d, deprecated (RFC 4291 2.5.5.1) */
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
		return false;                           /* fe80::/10 */
	if (a[0] == 0xff)
		return false;                           /* ff00::/8 multicast */
	for (size_t i = 0; i < sizeof(meta_v6) / sizeof(meta_v6[0]); i++)
		if (memcmp(a, meta_v6[i], 16) == 0)
			return false;
	unsigned char v4[4][4];
	int n = embedded_v4(a, v4);
	for (int i = 0; i < n; i++)
		if (!v4_allowed(v4[i], allow_loopback))
			return false;
	return true;
}

/* Port as Go's strconv.Atoi reads it: optional sign, decimal digits. */
static int parse_port(const char *s)
{
	const char *p = s;
	bool neg = false;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (!*p)
		return -1;
	long v = 0;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v < 100000)
			v = v * 10 + (*p - '0');
	}
	if (neg || v < 1 || v > 65535)
		return -1;
	return (int)v;
}

int rt_contract_route(const rt_head *h, bool allow_loopback, rt_route *out, rt_reject *rej)
{
	memset(out, 0, sizeof(*out));
	const char *id = get_nonempty(h, "X-Sandbox-ID");
	if (!id)
		return rt_reject_set(rej, 400, "X-Sandbox-ID header is required.");
	if (!rt_dns_label(id))
		return rt_reject_set(rej, 400, "Invalid sandbox ID format.");
	const char *ns = get_nonempty(h, "X-Sandbox-Namespace");
	if (!ns)
		ns = "default";
	else if (!rt_dns_label(ns))
		return rt_reject_set(rej, 400, "Invalid namespace format.");
	const char *port = get_nonempty(h, "X-Sandbox-Port");
	out->port = port ? parse_port(port) : 8888;
	if (out->port < 0)
		return rt_reject_set(rej, 400, "Invalid port format.");
	const char *ip = get_nonempty(h, "X-Sandbox-Pod-IP");
	if (ip) {
		if (!rt_ip_parse(ip, &out->pod_ip) || !rt_ip_allowed(&out->pod_ip, allow_loopback))
			return rt_reject_set(rej, 400, "Invalid target IP address.");
		out->has_pod_ip = true;
	}
	out->has_uid = get_nonempty(h, "X-Sandbox-UID") != NULL;
	memcpy(out->id, id, strlen(id) + 1);
	memcpy(out->ns, ns, strlen(ns) + 1);
	return 0;
}

/* True when the last comma-separated token of `v` is "chunked" and it is
 * the only coding (other codings would reach the sandbox undone). */
static bool chunked_only(const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n == 7 && strncasecmp(v, "chunked", 7) == 0;
}

int rt_contract_framing(const rt_head *h, rt_reject *rej)
{
	int ncl = 0, nte = 0;
	const char *te = NULL;
	for (size_t i = 0; i < h->nheaders; i++) {
		const rt_header *f = &h->headers[i];
		if (strcasecmp(f->name, "Content-Length") == 0) {
			if (++ncl > 1)
				return rt_reject_set(rej, 400, "Duplicate Content-Length header.");
			const char *p = f->value;
			if (!*p)
				return rt_reject_set(rej, 400, "Invalid Content-Length header.");
			for (; *p; p++)
				if (*p < '0' || *p > '9')
					return rt_reject_set(rej, 400, "Invalid Content-Length header.");
		} else if (strcasecmp(f->name, "Transfer-Encoding") == 0) {
			nte++;
			te = f->value;
		}
	}
	if (nte && ncl)
		return rt_reject_set(rej, 400, "Both Content-Length and Transfer-Encoding are set.");
	if (nte > 1 || (te && !chunked_only(te)))
		return rt_reject_set(rej, 501, "Unsupported Transfer-Encoding: only chunked is accepted.");
	return 0;
}

int rt_contract_target(const rt_head *h, rt_reject *rej)
{
	/* a CONNECT target has no path: the server shows it as "/" */
	if (strcmp(h->method, "CONNECT") == 0 || h->path[0] != '/')
		return rt_reject_set(rej, 400, "Invalid request target.");
	return 0;
}

/* Counts the Via elements of `v` whose received-by is ours: elements are
 * comma-separated "protocol received-by [comment]". */
static int our_hops(const char *v)
{
	int n = 0;
	const size_t plen = strlen(RT_VIA_PSEUDONYM);
	while (*v) {
		const char *end = strchr(v, ',');
		size_t len = end ? (size_t)(end - v) : strlen(v);
		/* the second word of the element */
		size_t i = 0;
		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		while (i < len && v[i] != ' ' && v[i] != '\t')
			i++;
		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (len - i >= plen && strncasecmp(v + i, RT_VIA_PSEUDONYM, plen) == 0 &&
		    (len - i == plen || v[i + plen] == ' ' || v[i + plen] == '\t'))
			n++;
		v += len;
		if (*v == ',')
			v++;
	}
	return n;
}

int rt_contract_loop(const rt_head *h, rt_reject *rej)
{
	int hops = 0;
	for (size_t i = 0; i < h->nheaders; i++)
		if (strcasecmp(h->headers[i].name, "Via") == 0)
			hops += our_hops(h->headers[i].value);
	if (hops >= RT_MAX_ROUTER_HOPS)
		return rt_reject_set(rej, 508, "Loop detected.");
	return 0;
}
