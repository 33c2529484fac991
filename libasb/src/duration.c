/*
 * duration.c - Go's time.ParseDuration syntax (asb/duration.h), used by
 * every duration flag of the commands (controller, sandboxd) so that Helm
 * values written for the Go binaries carry over.
 */
#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "asb/duration.h"

int asb_duration_parse(const char *s, int64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "\xc2\xb5s", 1000 }, { "\xce\xbcs", 1000 },
		{ "ms", 1000000 }, { "s", 1000000000ULL }, { "m", 60000000000ULL },
		{ "h", 3600000000000ULL },
	};
	const uint64_t limit = (uint64_t)1 << 63;
	bool neg = false;
	uint64_t total = 0;

	if (!s || !*s)
		return -1;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (!*s)
		return -1;
	while (*s) {
		/* [0-9]*(\.[0-9]*)? with at least one digit, then a unit */
		uint64_t whole = 0, frac = 0;
		double scale = 1;
		bool digits = false, overflow_frac = false;
		for (; isdigit((unsigned char)*s); s++, digits = true) {
			if (whole > limit / 10)
				return -1;
			whole = whole * 10 + (uint64_t)(*s - '0');
			if (whole > limit)
				return -1;
		}
		if (*s == '.') {
			for (s++; isdigit((unsigned char)*s); s++, digits = true) {
				if (overflow_frac || frac > limit / 10) {
					overflow_frac = true;   /* Go drops such digits */
					continue;
				}
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
		}
		if (!digits)
			return -1;
		size_t best = 0;
		uint64_t mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].unit);
			if (n > best && strncmp(s, units[i].unit, n) == 0) {
				best = n;
				mult = units[i].ns;
			}
		}
		if (!best)
			return -1;
		s += best;
		if (whole > limit / mult)
			return -1;
		uint64_t v = whole * mult;
		if (frac)
			v += (uint64_t)((double)frac * ((double)mult / scale));
		if (v > limit || total > limit - v)
			return -1;
		total += v;
	}
	if (total > limit - (neg ? 0 : 1))
		return -1;
	*ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

int asb_duration_parse_ms(const char *s, long *ms)
{
	int64_t ns;
	if (asb_duration_parse(s, &ns) < 0)
		return -1;
	int64_t v = ns / 1000000 + (ns > 0 && ns % 1000000 ? 1 : 0);
	if (v > LONG_MAX || v < LONG_MIN)
		return -1;
	*ms = (long)v;
	return 0;
}

int k8s_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE", "False" };
	if (!s)
		return -1;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcmp(s, yes[i]) == 0)
			return *out = true, 0;
		if (strcmp(s, no[i]) == 0)
			return *out = false, 0;
	}
	return -1;
}
