/*
 * metrics.c - Prometheus registry and text exposition (see metrics.h).
 *
 * Layout:
 * - the registry keeps its families in a list sorted by name, under one
 *   mutex that only registration and the start of a scrape take;
 * - a family keeps its series in a list plus a hash map from the encoded
 *   label values to the series, under a read-write lock (lookups read,
 *   the first use of a tuple writes). Series are never removed, so a
 *   pointer handed out stays valid as long as the registry;
 * - a series holds its value as the bits of a double in an atomic 64-bit
 *   word (compare-and-swap to add), and a histogram one atomic counter per
 *   bucket (not cumulative: a scrape adds them up, so `_count` always
 *   equals the +Inf bucket) plus an atomic sum;
 * - a scrape snapshots the family list, then per family the series
 *   pointers and the collectors' samples, sorts them by label values and
 *   writes them. Recording never waits for a scrape.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"
#include "asb/metrics.h"
#include "asb/map.h"
#include "asb/strbuf.h"

/* client_golang's prometheus.DefBuckets */
static const double default_buckets[] = {
	.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10,
};

typedef struct {
	asb_metric_collect_fn fn;
	void *userdata;
} collector;

struct asb_metric_series {
	asb_metric *family;
	char **values;                 /* nvar label values */
	_Atomic uint64_t bits;         /* counter/gauge value; histogram sum */
	_Atomic uint64_t *counts;      /* histogram: nbounds + 1 (last: +Inf) */
	asb_metric_series *next;
};

struct asb_metric {
	asb_metric_type type;
	char *name;
	char *help;
	size_t nvar;
	char **var_names;
	size_t nconst;
	char **const_names;
	char **const_values;
	/* all label positions sorted by name: i < nconst is const label i,
	 * else variable label i - nconst */
	size_t *order;
	double *bounds;
	size_t nbounds;

	size_t max_series;             /* 0: no bound */
	char **overflow;               /* nvar entries, NULL: keep; with max_series */

	pthread_rwlock_t lock;         /* guards by_key, head, tail, nseries */
	asb_map by_key;                /* encoded values -> series */
	asb_metric_series *head, *tail;
	size_t nseries;

	pthread_mutex_t collect_lock;  /* guards collectors; held while they run */
	collector *collectors;
	size_t ncollectors;

	asb_metric *next;              /* registry list, sorted by name */
};

struct asb_metrics_registry {
	pthread_mutex_t lock;          /* guards families */
	asb_metric *families;
	size_t nfamilies;
};

typedef struct {
	char **values;                 /* owned */
	double value;
} emitted;

struct asb_metrics_emitter {
	asb_metric *family;
	emitted *samples;
	size_t n, cap;
	int failed;                    /* first error code, or 0 */
};

/* --- doubles in atomic words ------------------------------------------------ */

static uint64_t dbits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static void atomic_add_double(_Atomic uint64_t *p, double v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(p, &old, dbits(bitsd(old) + v),
	                                              memory_order_relaxed,
	                                              memory_order_relaxed))
		;
}

/* --- validation ------------------------------------------------------------- */

static bool valid_metric_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		          c == ':' || (p != s && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

static bool valid_label_name(const char *s)
{
	if (!s || !*s || strncmp(s, "__", 2) == 0)
		return false;
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		          (p != s && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return true;
}

/* RFC 3629 UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned char c = *p;
		int n;
		uint32_t cp, min;
		if (c < 0x80) {
			p++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			n = 1, cp = c & 0x1F, min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, cp = c & 0x0F, min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			n = 3, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		p += n + 1;
	}
	return true;
}

static int check_values(const asb_metric *m, const char *const *values, size_t n)
{
	if (n != m->nvar)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "metric %s: %zu label values given, %zu labels registered",
		                     m->name, n, m->nvar);
	for (size_t i = 0; i < n; i++) {
		if (!values[i])
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "metric %s: label %s: NULL value", m->name,
			                     m->var_names[i]);
		if (!valid_utf8(values[i]))
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "metric %s: label %s: value is not valid UTF-8",
			                     m->name, m->var_names[i]);
	}
	return 0;
}

/* --- families ---------------------------------------------------------------- */

static void free_strv(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static char **dup_strv(const char *const *v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!(out[i] = strdup(v[i]))) {
			free_strv(out, i);
			return NULL;
		}
	}
	return out;
}

static void series_free(asb_metric_series *s, size_t nvar)
{
	free_strv(s->values, nvar);
	free(s->counts);
	free(s);
}

static void family_free(asb_metric *m)
{
	if (!m)
		return;
	for (asb_metric_series *s = m->head, *next; s; s = next) {
		next = s->next;
		series_free(s, m->nvar);
	}
	asb_map_clear(&m->by_key, NULL);
	pthread_rwlock_destroy(&m->lock);
	pthread_mutex_destroy(&m->collect_lock);
	free(m->collectors);
	free(m->name);
	free(m->help);
	free_strv(m->var_names, m->nvar);
	free_strv(m->const_names, m->nconst);
	free_strv(m->const_values, m->nconst);
	if (m->overflow)
		for (size_t i = 0; i < m->nvar; i++)
			free(m->overflow[i]);
	free(m->overflow);
	free(m->order);
	free(m->bounds);
	free(m);
}

static const char *label_name_at(const asb_metric *m, size_t pos)
{
	return pos < m->nconst ? m->const_names[pos] : m->var_names[pos - m->nconst];
}

/* Insertion sort of label positions by name: label lists are short. */
static void sort_order(asb_metric *m)
{
	size_t total = m->nconst + m->nvar;
	for (size_t i = 0; i < total; i++)
		m->order[i] = i;
	for (size_t i = 1; i < total; i++) {
		size_t v = m->order[i], j = i;
		while (j > 0 && strcmp(label_name_at(m, m->order[j - 1]), label_name_at(m, v)) > 0) {
			m->order[j] = m->order[j - 1];
			j--;
		}
		m->order[j] = v;
	}
}

static size_t count_strv(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Validates the options and builds an unregistered family. */
static int family_new(asb_metric **out, const asb_metric_options *o)
{
	const char *what = o->name ? o->name : "(null)";
	if (!valid_metric_name(o->name))
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric \"%s\": invalid metric name", what);
	if (o->type != ASB_METRIC_COUNTER && o->type != ASB_METRIC_GAUGE &&
	    o->type != ASB_METRIC_HISTOGRAM)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: unknown type %d", what, (int)o->type);
	size_t nvar = count_strv(o->label_names);
	size_t nconst2 = count_strv(o->const_labels);
	if (nconst2 % 2)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "metric %s: const labels must be name, value pairs", what);
	size_t nconst = nconst2 / 2;
	for (size_t i = 0; i < nvar + nconst; i++) {
		const char *ln = i < nvar ? o->label_names[i] : o->const_labels[2 * (i - nvar)];
		if (!valid_label_name(ln) || (o->type == ASB_METRIC_HISTOGRAM && strcmp(ln, "le") == 0))
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "metric %s: invalid label name \"%s\"", what, ln);
		for (size_t j = 0; j < i; j++) {
			const char *other = j < nvar ? o->label_names[j] : o->const_labels[2 * (j - nvar)];
			if (strcmp(ln, other) == 0)
				return asb_error_set(ASB_EINVAL, 0, NULL,
				                     "metric %s: duplicate label name \"%s\"", what, ln);
		}
		if (i >= nvar && !valid_utf8(o->const_labels[2 * (i - nvar) + 1]))
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "metric %s: const label %s: value is not valid UTF-8", what, ln);
	}
	const double *b = o->buckets;
	size_t nb = o->nbuckets;
	if (o->type == ASB_METRIC_HISTOGRAM) {
		if (!b && nb)
			return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: nbuckets without buckets", what);
		if (!b) {
			b = default_buckets;
			nb = sizeof(default_buckets) / sizeof(default_buckets[0]);
		}
		if (nb > 0 && isinf(b[nb - 1]) && b[nb - 1] > 0)
			nb--;
		for (size_t i = 0; i < nb; i++)
			if (!isfinite(b[i]) || (i > 0 && !(b[i] > b[i - 1])))
				return asb_error_set(ASB_EINVAL, 0, NULL,
				                     "metric %s: bucket bounds must be finite and strictly increasing", what);
	} else {
		nb = 0;
	}
	size_t max_series = o->version >= 2 ? o->max_series : 0;
	const char *const *ov = o->version >= 2 ? o->overflow_values : NULL;
	if (max_series) {
		size_t kept = 0;
		for (size_t i = 0; ov && i < nvar; i++)
			kept += ov[i] == NULL;
		if (!ov || !nvar || kept == nvar)
			return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: max_series needs overflow_values "
			                     "with a value for at least one label", what);
		for (size_t i = 0; i < nvar; i++)
			if (ov[i] && !valid_utf8(ov[i]))
				return asb_error_set(ASB_EINVAL, 0, NULL,
				                     "metric %s: overflow value of %s is not valid UTF-8", what,
				                     o->label_names[i]);
	}

	asb_metric *m = calloc(1, sizeof(*m));
	if (!m)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", what);
	pthread_rwlock_init(&m->lock, NULL);
	pthread_mutex_init(&m->collect_lock, NULL);
	asb_map_init(&m->by_key);
	m->type = o->type;
	m->nvar = nvar;
	m->nconst = nconst;
	m->nbounds = nb;
	m->name = strdup(o->name);
	m->help = strdup(o->help ? o->help : "");
	m->var_names = dup_strv(o->label_names, nvar);
	m->const_names = calloc(nconst ? nconst : 1, sizeof(char *));
	m->const_values = calloc(nconst ? nconst : 1, sizeof(char *));
	m->order = calloc(nvar + nconst ? nvar + nconst : 1, sizeof(size_t));
	m->bounds = calloc(nb ? nb : 1, sizeof(double));
	m->max_series = max_series;
	if (max_series && (m->overflow = calloc(nvar, sizeof(char *))))
		for (size_t i = 0; i < nvar; i++)
			if (ov[i] && !(m->overflow[i] = strdup(ov[i]))) {
				for (size_t j = 0; j < i; j++)
					free(m->overflow[j]);
				free(m->overflow);
				m->overflow = NULL;
				break;
			}
	bool ok = m->name && m->help && m->var_names && m->const_names &&
	          m->const_values && m->order && m->bounds && (!max_series || m->overflow);
	for (size_t i = 0; ok && i < nconst; i++) {
		m->const_names[i] = strdup(o->const_labels[2 * i]);
		m->const_values[i] = strdup(o->const_labels[2 * i + 1]);
		ok = m->const_names[i] && m->const_values[i];
	}
	if (!ok) {
		family_free(m);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", what);
	}
	if (nb)
		memcpy(m->bounds, b, nb * sizeof(double));
	sort_order(m);
	*out = m;
	return 0;
}

/* True when two families describe the same metric. */
static bool same_shape(const asb_metric *a, const asb_metric *b)
{
	if (a->type != b->type || strcmp(a->help, b->help) != 0 || a->nvar != b->nvar ||
	    a->nconst != b->nconst || a->nbounds != b->nbounds)
		return false;
	for (size_t i = 0; i < a->nvar; i++)
		if (strcmp(a->var_names[i], b->var_names[i]) != 0)
			return false;
	for (size_t i = 0; i < a->nconst; i++)
		if (strcmp(a->const_names[i], b->const_names[i]) != 0 ||
		    strcmp(a->const_values[i], b->const_values[i]) != 0)
			return false;
	for (size_t i = 0; i < a->nbounds; i++)
		if (a->bounds[i] != b->bounds[i])
			return false;
	if (a->max_series != b->max_series)
		return false;
	for (size_t i = 0; a->max_series && i < a->nvar; i++)
		if (!a->overflow[i] != !b->overflow[i] ||
		    (a->overflow[i] && strcmp(a->overflow[i], b->overflow[i]) != 0))
			return false;
	return true;
}

int asb_metric_options_init(asb_metric_options *opts, unsigned int version)
{
	asb_metric_options def = ASB_METRIC_OPTIONS_INIT;
	if (!opts || version < 1 || version > ASB_METRIC_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric options: unknown version %u", version);
	if (version == 1) {
		/* a version 1 struct ends before max_series */
		def.version = 1;
		memcpy(opts, &def, offsetof(asb_metric_options, max_series));
		return 0;
	}
	*opts = def;
	return 0;
}

int asb_metrics_registry_new(asb_metrics_registry **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metrics registry: out is required");
	asb_metrics_registry *r = calloc(1, sizeof(*r));
	if (!r)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metrics registry: out of memory");
	pthread_mutex_init(&r->lock, NULL);
	*out = r;
	return 0;
}

void asb_metrics_registry_free(asb_metrics_registry *r)
{
	if (!r)
		return;
	for (asb_metric *m = r->families, *next; m; m = next) {
		next = m->next;
		family_free(m);
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

int asb_metrics_register(asb_metric **out, asb_metrics_registry *r,
                         const asb_metric_options *o)
{
	if (!out || !r || !o)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metrics register: out, registry and options are required");
	*out = NULL;
	if (o->version < 1 || o->version > ASB_METRIC_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: unknown options version %u",
		                     o->name ? o->name : "(null)", o->version);
	asb_metric *m = NULL;
	int rc = family_new(&m, o);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&r->lock);
	asb_metric **link = &r->families;
	while (*link && strcmp((*link)->name, m->name) < 0)
		link = &(*link)->next;
	if (*link && strcmp((*link)->name, m->name) == 0) {
		asb_metric *existing = *link;
		pthread_mutex_unlock(&r->lock);
		bool same = same_shape(existing, m);
		family_free(m);
		if (!same)
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "metric %s: already registered with a different type, help, labels or buckets",
			                     existing->name);
		*out = existing;
		return 0;
	}
	m->next = *link;
	*link = m;
	r->nfamilies++;
	pthread_mutex_unlock(&r->lock);
	*out = m;
	return 0;
}

size_t asb_metric_label_count(const asb_metric *m)
{
	return m ? m->nvar : 0;
}

size_t asb_metric_size(asb_metric *m)
{
	if (!m)
		return 0;
	pthread_rwlock_rdlock(&m->lock);
	size_t n = m->nseries;
	pthread_rwlock_unlock(&m->lock);
	return n;
}

/* --- series ------------------------------------------------------------------ */

/* "<len>:<value>" per value: unambiguous whatever the values contain. */
/* A series' map key: each value as "<length>:<bytes>", so that no two
 * tuples share a key. Written into `stack` (`cap` bytes) when it fits,
 * else into a buffer allocated for it, which the caller frees (a result
 * other than `stack`); NULL when out of memory. No printf and no
 * allocation on the usual path: the router looks up series per request. */
#define KEY_STACK 256
static char *encode_key(char *stack, size_t cap, const char *const *values, size_t n)
{
	size_t need = 1;
	for (size_t i = 0; i < n; i++)
		need += strlen(values[i]) + 21;
	char *k = need <= cap ? stack : malloc(need);
	if (!k)
		return NULL;
	char *p = k;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(values[i]);
		p += asb_format_int(p, (long long)len);
		*p++ = ':';
		memcpy(p, values[i], len);
		p += len;
	}
	*p = '\0';
	return k;
}

static void key_free(char *k, const char *stack)
{
	if (k != stack)
		free(k);
}

static asb_metric_series *series_new(asb_metric *m, const char *const *values)
{
	asb_metric_series *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->family = m;
	atomic_init(&s->bits, dbits(0.0));
	s->values = dup_strv(values, m->nvar);
	if (m->type == ASB_METRIC_HISTOGRAM) {
		s->counts = calloc(m->nbounds + 1, sizeof(*s->counts));
		if (s->counts)
			for (size_t i = 0; i <= m->nbounds; i++)
				atomic_init(&s->counts[i], 0);
	}
	if (!s->values || (m->type == ASB_METRIC_HISTOGRAM && !s->counts)) {
		series_free(s, s->values ? m->nvar : 0);
		return NULL;
	}
	return s;
}

/* Stores a new series under `key`; the write lock is held. NULL: no memory. */
static asb_metric_series *add_locked(asb_metric *m, const char *const *values, const char *key)
{
	asb_metric_series *s = series_new(m, values);
	if (!s)
		return NULL;
	if (asb_map_set(&m->by_key, key, s, NULL) < 0) {
		series_free(s, m->nvar);
		return NULL;
	}
	if (m->tail)
		m->tail->next = s;
	else
		m->head = s;
	m->tail = s;
	m->nseries++;
	return s;
}

/* True when `values` is an overflow tuple already. */
static bool is_overflow(const asb_metric *m, const char *const *values)
{
	for (size_t i = 0; i < m->nvar; i++)
		if (m->overflow[i] && strcmp(m->overflow[i], values[i]) != 0)
			return false;
	return true;
}

/* The overflow tuple's series of `values`, found or stored; the write lock
 * is held. NULL: no memory. */
static asb_metric_series *overflow_locked(asb_metric *m, const char *const *values)
{
	const char **ov = calloc(m->nvar, sizeof(*ov));
	if (!ov)
		return NULL;
	for (size_t i = 0; i < m->nvar; i++)
		ov[i] = m->overflow[i] ? m->overflow[i] : values[i];
	char stack[KEY_STACK];
	char *key = encode_key(stack, sizeof(stack), ov, m->nvar);
	asb_metric_series *s = NULL;
	if (key && !(s = asb_map_get(&m->by_key, key)))
		s = add_locked(m, ov, key);
	if (key)
		key_free(key, stack);
	free(ov);
	return s;
}

int asb_metric_series_get(asb_metric_series **out, asb_metric *m,
                          const char *const *values, size_t n)
{
	if (!out || !m)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric series: out and metric are required");
	*out = NULL;
	int rc = check_values(m, values, n);
	if (rc < 0)
		return rc;
	char stack[KEY_STACK];
	char *key = encode_key(stack, sizeof(stack), values, n);
	if (!key)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", m->name);
	pthread_rwlock_rdlock(&m->lock);
	asb_metric_series *s = asb_map_get(&m->by_key, key);
	pthread_rwlock_unlock(&m->lock);
	if (!s) {
		pthread_rwlock_wrlock(&m->lock);
		/* another thread may have created it between the two locks */
		if (!(s = asb_map_get(&m->by_key, key))) {
			if (m->max_series && m->nseries >= m->max_series && !is_overflow(m, values))
				s = overflow_locked(m, values);
			else
				s = add_locked(m, values, key);
		}
		pthread_rwlock_unlock(&m->lock);
	}
	key_free(key, stack);
	if (!s)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", m->name);
	*out = s;
	return 0;
}

int asb_metric_series_add(asb_metric_series *s, double v)
{
	if (!s || s->family->type == ASB_METRIC_HISTOGRAM ||
	    (s->family->type == ASB_METRIC_COUNTER && v < 0))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "metric %s: add needs a gauge, or a counter and a value >= 0",
		                     s ? s->family->name : "(null)");
	atomic_add_double(&s->bits, v);
	return 0;
}

int asb_metric_series_set(asb_metric_series *s, double v)
{
	if (!s || s->family->type != ASB_METRIC_GAUGE)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: set needs a gauge",
		                     s ? s->family->name : "(null)");
	atomic_store_explicit(&s->bits, dbits(v), memory_order_relaxed);
	return 0;
}

int asb_metric_series_observe(asb_metric_series *s, double v)
{
	if (!s || s->family->type != ASB_METRIC_HISTOGRAM)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metric %s: observe needs a histogram",
		                     s ? s->family->name : "(null)");
	const asb_metric *m = s->family;
	/* first bound >= v; NaN compares false everywhere and lands in +Inf */
	size_t lo = 0, hi = m->nbounds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	atomic_fetch_add_explicit(&s->counts[lo], 1, memory_order_relaxed);
	atomic_add_double(&s->bits, v);
	return 0;
}

double asb_metric_series_value(const asb_metric_series *s)
{
	return s ? bitsd(atomic_load_explicit(&((asb_metric_series *)s)->bits, memory_order_relaxed)) : 0.0;
}

uint64_t asb_metric_series_count(const asb_metric_series *s)
{
	if (!s || s->family->type != ASB_METRIC_HISTOGRAM)
		return 0;
	uint64_t n = 0;
	for (size_t i = 0; i <= s->family->nbounds; i++)
		n += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
	return n;
}

int asb_metric_add(asb_metric *m, const char *const *values, size_t n, double v)
{
	asb_metric_series *s;
	int rc = asb_metric_series_get(&s, m, values, n);
	return rc < 0 ? rc : asb_metric_series_add(s, v);
}

int asb_metric_set(asb_metric *m, const char *const *values, size_t n, double v)
{
	asb_metric_series *s;
	int rc = asb_metric_series_get(&s, m, values, n);
	return rc < 0 ? rc : asb_metric_series_set(s, v);
}

int asb_metric_observe(asb_metric *m, const char *const *values, size_t n, double v)
{
	asb_metric_series *s;
	int rc = asb_metric_series_get(&s, m, values, n);
	return rc < 0 ? rc : asb_metric_series_observe(s, v);
}

/* --- collectors -------------------------------------------------------------- */

int asb_metric_add_collector(asb_metric *m, asb_metric_collect_fn fn, void *userdata)
{
	if (!m || !fn || m->type == ASB_METRIC_HISTOGRAM)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "metric %s: collectors need a counter or gauge and a function",
		                     m ? m->name : "(null)");
	pthread_mutex_lock(&m->collect_lock);
	collector *c = realloc(m->collectors, (m->ncollectors + 1) * sizeof(*c));
	if (!c) {
		pthread_mutex_unlock(&m->collect_lock);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", m->name);
	}
	c[m->ncollectors].fn = fn;
	c[m->ncollectors].userdata = userdata;
	m->collectors = c;
	m->ncollectors++;
	pthread_mutex_unlock(&m->collect_lock);
	return 0;
}

void asb_metric_remove_collector(asb_metric *m, asb_metric_collect_fn fn, void *userdata)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->collect_lock);
	for (size_t i = 0; i < m->ncollectors; i++) {
		if (m->collectors[i].fn == fn && m->collectors[i].userdata == userdata) {
			memmove(&m->collectors[i], &m->collectors[i + 1],
			        (m->ncollectors - i - 1) * sizeof(*m->collectors));
			m->ncollectors--;
			break;
		}
	}
	pthread_mutex_unlock(&m->collect_lock);
}

int asb_metrics_emit(asb_metrics_emitter *e, const char *const *values, size_t n,
                     double value)
{
	if (!e)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metrics emit: emitter is required");
	int rc = check_values(e->family, values, n);
	if (rc < 0)
		return rc;
	if (ASB_ARRAY_GROW(e->samples, e->cap, e->n + 1, 16))
		goto nomem;
	char **copy = dup_strv(values, n);
	if (!copy)
		goto nomem;
	e->samples[e->n].values = copy;
	e->samples[e->n].value = value;
	e->n++;
	return 0;
nomem:
	if (!e->failed)
		e->failed = ASB_ENOMEM;
	return asb_error_set(ASB_ENOMEM, 0, NULL, "metric %s: out of memory", e->family->name);
}

/* --- exposition -------------------------------------------------------------- */

char *asb_metrics_format_float(double v, char *buf, size_t cap)
{
	if (!buf || cap == 0)
		return buf;
	if (isnan(v)) {
		snprintf(buf, cap, "NaN");
		return buf;
	}
	if (isinf(v)) {
		snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
		return buf;
	}
	if (v == 0) {  /* also -0, as client_golang writes it */
		snprintf(buf, cap, "0");
		return buf;
	}
	/* Shortest precision whose correctly rounded digits read back exactly. */
	char tmp[48];
	for (int p = 1; p <= 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* tmp is [-]d[<radix>ddd]e<sign>dd; the radix character depends on the
	 * locale, so collect the digits and the exponent by hand. */
	char digits[24];
	size_t nd = 0;
	const char *p = tmp;
	bool neg = *p == '-';
	if (neg)
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < sizeof(digits) - 1)
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	int exp = *p == 'e' ? atoi(p + 1) : 0;

	char local[64];
	size_t len = 0;
	if (neg)
		local[len++] = '-';
	if (exp < -4 || exp >= 6) {
		local[len++] = digits[0];
		if (nd > 1) {
			local[len++] = '.';
			memcpy(local + len, digits + 1, nd - 1);
			len += nd - 1;
		}
		len += (size_t)snprintf(local + len, sizeof(local) - len, "e%c%02d",
		                        exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else if (exp >= 0) {
		for (int i = 0; i <= exp; i++)  /* at most 6 digits before the point */
			local[len++] = (size_t)i < nd ? digits[i] : '0';
		if (nd > (size_t)exp + 1) {
			local[len++] = '.';
			memcpy(local + len, digits + exp + 1, nd - (size_t)exp - 1);
			len += nd - (size_t)exp - 1;
		}
	} else {
		local[len++] = '0';
		local[len++] = '.';
		for (int i = 0; i < -exp - 1; i++)  /* at most 3 zeros */
			local[len++] = '0';
		memcpy(local + len, digits, nd);
		len += nd;
	}
	local[len] = '\0';
	snprintf(buf, cap, "%s", local);
	return buf;
}

static void put_float(asb_strbuf *b, double v)
{
	char num[40];
	asb_strbuf_adds(b, asb_metrics_format_float(v, num, sizeof(num)));
}

/* HELP text: backslash and newline escaped. */
static void put_help(asb_strbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			asb_strbuf_add(b, "\\\\", 2);
		else if (*s == '\n')
			asb_strbuf_add(b, "\\n", 2);
		else
			asb_strbuf_addc(b, *s);
	}
}

/* Label values: backslash, double quote and newline escaped. */
static void put_label_value(asb_strbuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			asb_strbuf_add(b, "\\\\", 2);
		else if (*s == '"')
			asb_strbuf_add(b, "\\\"", 2);
		else if (*s == '\n')
			asb_strbuf_add(b, "\\n", 2);
		else
			asb_strbuf_addc(b, *s);
	}
}

/* name[suffix]{labels[,le="..."]} */
static void put_sample_head(asb_strbuf *b, const asb_metric *m, const char *suffix,
                            char *const *values, const char *le)
{
	asb_strbuf_adds(b, m->name);
	asb_strbuf_adds(b, suffix);
	size_t total = m->nconst + m->nvar;
	if (total == 0 && !le)
		return;
	asb_strbuf_addc(b, '{');
	for (size_t i = 0; i < total; i++) {
		size_t pos = m->order[i];
		if (i)
			asb_strbuf_addc(b, ',');
		asb_strbuf_adds(b, label_name_at(m, pos));
		asb_strbuf_add(b, "=\"", 2);
		put_label_value(b, pos < m->nconst ? m->const_values[pos] : values[pos - m->nconst]);
		asb_strbuf_addc(b, '"');
	}
	if (le) {
		if (total)
			asb_strbuf_addc(b, ',');
		asb_strbuf_add(b, "le=\"", 4);
		asb_strbuf_adds(b, le);
		asb_strbuf_addc(b, '"');
	}
	asb_strbuf_addc(b, '}');
}

typedef struct {
	char *const *values;
	const asb_metric_series *series;  /* NULL for an emitted sample */
	double value;                     /* emitted samples */
} entry;

/* client_golang orders series by their label values, taken in label-name order. */
static int entry_cmp(const void *a, const void *b, void *ctx)
{
	const asb_metric *m = ctx;
	const entry *x = a, *y = b;
	for (size_t i = 0; i < m->nconst + m->nvar; i++) {
		size_t pos = m->order[i];
		if (pos < m->nconst)
			continue;
		int c = strcmp(x->values[pos - m->nconst], y->values[pos - m->nconst]);
		if (c)
			return c;
	}
	return 0;
}

static void put_histogram(asb_strbuf *b, const asb_metric *m, const entry *e)
{
	const asb_metric_series *s = e->series;
	uint64_t cum = 0;
	char le[40];
	for (size_t i = 0; i <= m->nbounds; i++) {
		cum += atomic_load_explicit(&s->counts[i], memory_order_relaxed);
		if (i < m->nbounds)
			asb_metrics_format_float(m->bounds[i], le, sizeof(le));
		else
			snprintf(le, sizeof(le), "+Inf");
		put_sample_head(b, m, "_bucket", e->values, le);
		asb_strbuf_addf(b, " %llu\n", (unsigned long long)cum);
	}
	put_sample_head(b, m, "_sum", e->values, NULL);
	asb_strbuf_addc(b, ' ');
	put_float(b, asb_metric_series_value(s));
	asb_strbuf_addc(b, '\n');
	put_sample_head(b, m, "_count", e->values, NULL);
	asb_strbuf_addf(b, " %llu\n", (unsigned long long)cum);
}

static const char *type_name(asb_metric_type t)
{
	switch (t) {
	case ASB_METRIC_COUNTER: return "counter";
	case ASB_METRIC_GAUGE: return "gauge";
	default: return "histogram";
	}
}

/* Writes one family; returns 0 or ASB_ENOMEM. */
static int expose_family(asb_strbuf *b, asb_metric *m)
{
	asb_metrics_emitter em = { .family = m };
	entry *entries = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	pthread_rwlock_rdlock(&m->lock);
	for (const asb_metric_series *s = m->head; s; s = s->next) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			entry *e = realloc(entries, cap * sizeof(*e));
			if (!e) {
				rc = ASB_ENOMEM;
				break;
			}
			entries = e;
		}
		entries[n++] = (entry){ s->values, s, 0 };
	}
	pthread_rwlock_unlock(&m->lock);

	pthread_mutex_lock(&m->collect_lock);
	for (size_t i = 0; rc == 0 && i < m->ncollectors; i++)
		m->collectors[i].fn(&em, m->collectors[i].userdata);
	pthread_mutex_unlock(&m->collect_lock);
	if (em.failed)
		rc = em.failed;
	if (rc == 0 && em.n) {
		entry *e = realloc(entries, (n + em.n) * sizeof(*e));
		if (!e) {
			rc = ASB_ENOMEM;
		} else {
			entries = e;
			for (size_t i = 0; i < em.n; i++)
				entries[n++] = (entry){ em.samples[i].values, NULL, em.samples[i].value };
		}
	}

	if (rc == 0 && n) {
		qsort_r(entries, n, sizeof(*entries), entry_cmp, m);
		asb_strbuf_add(b, "# HELP ", 7);
		asb_strbuf_adds(b, m->name);
		asb_strbuf_addc(b, ' ');
		put_help(b, m->help);
		asb_strbuf_add(b, "\n# TYPE ", 8);
		asb_strbuf_adds(b, m->name);
		asb_strbuf_addc(b, ' ');
		asb_strbuf_adds(b, type_name(m->type));
		asb_strbuf_addc(b, '\n');
		for (size_t i = 0; i < n; i++) {
			if (m->type == ASB_METRIC_HISTOGRAM) {
				put_histogram(b, m, &entries[i]);
				continue;
			}
			put_sample_head(b, m, "", entries[i].values, NULL);
			asb_strbuf_addc(b, ' ');
			put_float(b, entries[i].series ? asb_metric_series_value(entries[i].series)
			                               : entries[i].value);
			asb_strbuf_addc(b, '\n');
		}
	}
	for (size_t i = 0; i < em.n; i++)
		free_strv(em.samples[i].values, m->nvar);
	free(em.samples);
	free(entries);
	return rc;
}

int asb_metrics_registry_expose(asb_metrics_registry *r, char **out, size_t *len)
{
	if (!r || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "metrics expose: registry and out are required");
	*out = NULL;
	if (len)
		*len = 0;
	/* Families are never removed before the registry is freed: a snapshot
	 * of the pointers lets registration go on while we write. */
	pthread_mutex_lock(&r->lock);
	size_t nf = r->nfamilies;
	asb_metric **fams = calloc(nf ? nf : 1, sizeof(*fams));
	if (fams) {
		size_t i = 0;
		for (asb_metric *m = r->families; m; m = m->next)
			fams[i++] = m;
	}
	pthread_mutex_unlock(&r->lock);
	if (!fams)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metrics expose: out of memory");

	asb_strbuf b = ASB_STRBUF_INIT;
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < nf; i++)
		rc = expose_family(&b, fams[i]);
	free(fams);
	asb_strbuf_add(&b, "", 0);  /* an empty registry still yields "" */
	if (rc < 0 || b.failed) {
		asb_strbuf_free(&b);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "metrics expose: out of memory");
	}
	*out = asb_strbuf_detach(&b, len);
	return 0;
}

int asb_metrics_exponential_buckets(double start, double factor, size_t count, double *out)
{
	if (!out || !(start > 0) || !(factor > 1) || count == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "exponential buckets: need start > 0, factor > 1, count > 0");
	for (size_t i = 0; i < count; i++) {
		out[i] = start;
		start *= factor;
	}
	return 0;
}
