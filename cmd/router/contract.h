/*
 * contract.h - the router's request contract (docs/upstream.md#router-request-contract): from
 * the head of a client request to the sandbox it addresses, or to the
 * error the client gets ({"detail": ...} with its status).
 *
 * The checks, in the Go router's order: X-Sandbox-ID present, then a
 * DNS-1123 label; X-Sandbox-Namespace (default "default") a label;
 * X-Sandbox-Port (default 8888) in 1..65535; X-Sandbox-Pod-IP an IPv4 or
 * IPv6 literal that is not unspecified, link-local (unicast or multicast),
 * multicast or loopback (loopback allowed with --allow-loopback-pod-ip).
 * An empty header counts as absent; a repeated one is read at its first
 * value. Before them, rt_contract_framing() refuses the framings that let
 * a request be read two ways (RFC 9112 §6.1, §6.3: request smuggling).
 *
 * Pure functions over an rt_head; thread-safe.
 */
#ifndef RT_CONTRACT_H
#define RT_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One header field of a request or response (borrowed strings). */
typedef struct {
	const char *name;
	const char *value;
} rt_header;

/** The head of a client request as the pure code sees it (all borrowed). */
typedef struct {
	const char *method;        /**< "GET", ... */
	const char *target;        /**< request target as received: path?query */
	const char *path;          /**< raw path (no query) */
	const rt_header *headers;  /**< in the order received */
	size_t nheaders;
	const char *peer_ip;       /**< socket peer of the client connection */
	bool tls;                  /**< came over the HTTPS listener */
} rt_head;

/**
 * The value of the first header `name` (ASCII case-insensitive), or NULL.
 */
const char *rt_head_get(const rt_head *h, const char *name);

/** An IP address in binary form, IPv4-mapped IPv6 reduced to IPv4. */
typedef struct {
	int family;                /**< AF_INET or AF_INET6 */
	unsigned char addr[16];    /**< 4 or 16 bytes used */
	char text[46];             /**< canonical text form (inet_ntop) */
} rt_ip;

/**
 * Parses an IPv4 dotted quad (no leading zeros) or an IPv6 literal (no
 * zone, no brackets) as Go's net.ParseIP does. Returns true on success.
 */
bool rt_ip_parse(const char *s, rt_ip *out);

/** True when `a` and `b` are the same address. */
bool rt_ip_equal(const rt_ip *a, const rt_ip *b);

/**
 * True when `ip` may be dialled as a sandbox: not unspecified, link-local
 * unicast or multicast, multicast, nor loopback unless `allow_loopback`.
 * 169.254.169.254 (the cloud metadata address) is link-local. Stricter
 * than Go's checks: 255.255.255.255; the metadata and platform addresses
 * outside link-local (fd00:ec2::254 and fd00:ec2::23 of AWS and EKS,
 * fd20:ce::254 of GCP, 100.100.100.200 of Alibaba Cloud, 168.63.129.16 of
 * Azure, 192.0.0.192 of Oracle Cloud); IPv4-compatible ::a.b.c.d; and
 * every IPv6 form that carries an IPv4 address a translator or tunnel
 * could deliver to (SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96 and
 * 64:ff9b:1::/48 at each RFC 6052 position, 6to4 2002::/16, Teredo
 * 2001::/32 server and client, ISATAP interface IDs) is judged by that
 * IPv4 address too (::ffff:a.b.c.d is parsed as IPv4 already).
 */
bool rt_ip_allowed(const rt_ip *ip, bool allow_loopback);

/** What a valid request addresses. */
typedef struct {
	char id[64];               /**< X-Sandbox-ID, a DNS-1123 label */
	char ns[64];               /**< X-Sandbox-Namespace or "default" */
	int port;                  /**< X-Sandbox-Port or 8888 */
	bool has_pod_ip;           /**< X-Sandbox-Pod-IP given (non-empty) */
	rt_ip pod_ip;
	bool has_uid;              /**< X-Sandbox-UID given (non-empty) */
} rt_route;

/** A refusal: HTTP status and the "detail" text. */
typedef struct {
	int status;
	char detail[256];
} rt_reject;

/** The label namespace metrics use: `ns` when it is a valid label, else "-". */
const char *rt_contract_metric_namespace(const char *ns);

/** True when `s` is a DNS-1123 label: 1-63 of [a-z0-9-], no '-' at either end. */
bool rt_dns_label(const char *s);

/**
 * Checks how the body of request `h` is framed: at most one
 * Content-Length (a decimal number), Transfer-Encoding only without
 * Content-Length and only with "chunked" last. Returns 0, or -1 with a
 * 400 in `rej`.
 */
int rt_contract_framing(const rt_head *h, rt_reject *rej);

/**
 * Checks the request target of `h` (RFC 9112 §3.2): only origin-form
 * ("/path?query") reaches a sandbox; an absolute-form target arrives here
 * as its path already (its scheme and host are ignored, as Go's server
 * does). CONNECT (authority-form) and asterisk-form ("*") are refused.
 * Returns 0, or -1 with 400 "Invalid request target." in `rej`.
 */
int rt_contract_target(const rt_head *h, rt_reject *rej);

/**
 * Applies the routing-header checks above to `h`. Returns 0 with `out`
 * filled, or -1 with the 400 of the first failing check in `rej` (the Go
 * router's detail texts, e.g. "Invalid sandbox ID format.").
 */
int rt_contract_route(const rt_head *h, bool allow_loopback, rt_route *out, rt_reject *rej);

/** The router's received-by pseudonym in the Via field it adds. */
#define RT_VIA_PSEUDONYM "sandbox-router"

/** Router hops a request may already have passed (Via entries of ours). */
#define RT_MAX_ROUTER_HOPS 2

/**
 * Refuses a request that already passed RT_MAX_ROUTER_HOPS routers, as its
 * Via fields say (RFC 9110 §7.6.3): X-Sandbox-Pod-IP naming a router
 * itself would otherwise send one request round the router thousands of
 * times. Returns 0, or -1 with 508 "Loop detected." in `rej`.
 */
int rt_contract_loop(const rt_head *h, rt_reject *rej);

/** Fills `rej` (status and printf-style detail); returns -1. */
int rt_reject_set(rt_reject *rej, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
