/*
 * headers.h - what the router changes in the heads it relays
 * (docs/upstream.md#request-rewriting; RFC 9110 §7.6.1 on hop-by-hop fields, RFC 9112
 * on framing):
 * - request: the target is kept byte for byte; Host becomes the sandbox's
 *   host:port; Authorization, Forwarded, X-Forwarded-* from the client,
 *   Expect and the hop-by-hop fields (Connection, Proxy-Connection,
 *   Keep-Alive, Proxy-Authenticate, Proxy-Authorization, TE, Trailer,
 *   Transfer-Encoding, Upgrade, and every field Connection names) are
 *   dropped; X-Forwarded-For (socket peer), X-Forwarded-Host (inbound
 *   Host) and X-Forwarded-Proto are set; an upgrade keeps "Connection:
 *   Upgrade" and its Upgrade value and loses Origin; the body is framed
 *   by Content-Length or chunked as it came;
 * - response: hop-by-hop fields (and those its Connection names) and the
 *   framing fields are dropped; the rest is relayed.
 * Every field written must be a token name and a value without CR, LF,
 * NUL or other control characters (header injection). Pure; thread-safe.
 */
#ifndef RT_HEADERS_H
#define RT_HEADERS_H

#include <stdbool.h>
#include <stdint.h>
#include "asb/strbuf.h"
#include "contract.h"

/** How a request body is framed. */
typedef struct {
	bool has_body;            /**< Content-Length > 0 or Transfer-Encoding */
	bool chunked;             /**< Transfer-Encoding: chunked */
	int64_t content_length;   /**< with !chunked; -1 when there is none */
} rt_framing;

/**
 * Reads the framing of `h` (after rt_contract_framing() accepted it).
 */
void rt_headers_framing(const rt_head *h, rt_framing *out);

/** Where the request goes and how its body travels. */
typedef struct {
	const char *host;         /**< IP literal (no brackets) or DNS name */
	int port;
	rt_framing framing;
	bool upgrade;             /**< relay Connection: Upgrade + Upgrade */
} rt_outbound;

/**
 * True when `h` asks for a protocol upgrade: a Connection field with the
 * token "upgrade" and a non-empty Upgrade field (docs/upstream.md#upgrades).
 */
bool rt_headers_wants_upgrade(const rt_head *h);

/** True for a field name that is hop-by-hop in every message. */
bool rt_headers_hop_by_hop(const char *name);

/**
 * True when `name` is listed in a Connection field of `hs` (n fields).
 */
bool rt_headers_connection_names(const rt_header *hs, size_t n, const char *name);

/** True for a header name made of RFC 9110 token characters (1+). */
bool rt_header_name_valid(const char *name);

/** True for a header value without CR, LF, NUL or other controls but HTAB. */
bool rt_header_value_valid(const char *value);

/**
 * Writes the request head for the sandbox into `out` (appended): request
 * line, Host, the relayed fields, X-Forwarded-*, framing, blank line.
 * @return 0; -1 with a 400 in `rej` (a field or target that must not be
 *         relayed), or a 500 when out of memory.
 */
/** Room a head buffer gets at its first use: with the NUL, one 256-byte
 *  block, where most heads fit (it doubles from there). */
#define RT_HEAD_ROOM 255

int rt_headers_request(const rt_head *h, const rt_outbound *o, asb_strbuf *out, rt_reject *rej);

/**
 * Calls `emit` for each response field of `hs` that is relayed to the
 * client, in order. With `upgrade` (a 101 being relayed) the Upgrade field
 * is relayed too. Fields that fail rt_header_*_valid() are skipped.
 */
void rt_headers_response(const rt_header *hs, size_t n, bool upgrade,
                         void (*emit)(const char *name, const char *value, void *ud), void *ud);

#endif
