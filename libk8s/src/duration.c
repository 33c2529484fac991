/*
 * duration.c - Go's time.ParseDuration (duration.h), shared by every
 * command's duration flags.
 */
#include <ctype.h>
#include <string.h>
#include "k8s/duration.h"

static int invalid(const char *s)
{
	return k8s_error_set(K8S_EINVAL, 0, NULL, "invalid duration \"%s\": want a Go duration such as 250ms, 30s or 1m30s",
	                     s ? s : "");
}

int k8s_duration_parse(const char *s, int64_t *ns)
{
	const char *orig = s;
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
		return invalid(orig);
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (!*s)
		return invalid(orig);
	while (*s) {
		/* [0-9]*(\.[0-9]*)? with at least one digit, then a unit */
		uint64_t whole = 0, frac = 0;
		double scale = 1;
		bool digits = false, overflow_frac = false;
		for (; isdigit((unsigned char)*s); s++, digits = true) {
			if (whole > limit / 10)
				return invalid(orig);
			whole = whole * 10 + (uint64_t)(*s - '0');
			if (whole > limit)
				return invalid(orig);
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
			return invalid(orig);
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
			return invalid(orig);
		s += best;
		if (whole > limit / mult)
			return invalid(orig);
		uint64_t v = whole * mult;
		if (frac)
			v += (uint64_t)((double)frac * ((double)mult / scale));
		if (v > limit || total > limit - v)
			return invalid(orig);
		total += v;
	}
	if (total > limit - (neg ? 0 : 1))
		return invalid(orig);
	*ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}
