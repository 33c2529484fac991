/* Unit tests of libasb/src/log.c: logfmt quoting, JSON lines in zap's
 * shape (key order, RFC 3339 ts, typed values), named loggers, levels. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/log.h"

static char *capture(asb_log_format fmt, asb_log_level min, asb_log_level lvl,
                     const char *msg, const char *k, const char *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	asb_logger *l;
	ck_assert_int_eq(asb_logger_new(&l, f, fmt, min), 0);
	asb_log(l, lvl, msg, k, v, NULL);
	asb_logger_free(l);
	fclose(f);
	return buf;
}

START_TEST(text_format_quotes_when_needed)
{
	char *s = capture(ASB_LOG_TEXT, ASB_LOG_INFO, ASB_LOG_INFO, "pod created", "key", "ns/a b");
	ck_assert_ptr_nonnull(strstr(s, " level=info msg=\"pod created\" key=\"ns/a b\"\n"));
	ck_assert_int_eq(strncmp(s, "ts=", 3), 0);
	free(s);
	s = capture(ASB_LOG_TEXT, ASB_LOG_INFO, ASB_LOG_WARN, "x", "err", "line1\nline2 \"q\"");
	ck_assert_ptr_nonnull(strstr(s, "err=\"line1\\nline2 \\\"q\\\"\"\n"));
	ck_assert_ptr_null(strchr(s, '\n') == s + strlen(s) - 1 ? NULL : "two lines");
	free(s);
}
END_TEST

START_TEST(json_format_is_one_object_per_line)
{
	char *s = capture(ASB_LOG_JSON, ASB_LOG_DEBUG, ASB_LOG_ERROR, "boom", "key", "v\"1");
	ck_assert_int_eq(strncmp(s, "{\"level\":\"error\",\"ts\":\"", 23), 0);
	ck_assert_ptr_nonnull(strstr(s, "\",\"msg\":\"boom\",\"key\":\"v\\\"1\"}\n"));
	free(s);
}
END_TEST

/* A logger on a memory stream; `out`/`len` hold what it wrote once closed. */
typedef struct {
	char *buf;
	size_t len;
	FILE *f;
	asb_logger *log;
} mem_log;

static void mem_open(mem_log *m, asb_log_format fmt, asb_log_level min)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	ck_assert_ptr_nonnull(m->f);
	ck_assert_int_eq(asb_logger_new(&m->log, m->f, fmt, min), 0);
}

/* Frees the logger, closes the stream; the caller frees m->buf. */
static void mem_close(mem_log *m)
{
	asb_logger_free(m->log);
	fclose(m->f);
}

/* The keys of `o`, comma-separated, in order. */
static void keys_of(const cJSON *o, char *out, size_t cap)
{
	out[0] = '\0';
	const cJSON *c;
	cJSON_ArrayForEach(c, o) {
		if (out[0])
			strncat(out, ",", cap - strlen(out) - 1);
		strncat(out, c->string, cap - strlen(out) - 1);
	}
}

static bool matches(const char *re, const char *s)
{
	regex_t r;
	ck_assert_int_eq(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	bool ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

/* RFC 3339, UTC, milliseconds: 2026-01-02T03:04:05.678Z */
#define TS_RE "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"

START_TEST(json_line_has_zaps_keys_in_order_and_typed_values)
{
	mem_log m;
	mem_open(&m, ASB_LOG_JSON, ASB_LOG_INFO);
	asb_logger *setup;
	ck_assert_int_eq(asb_logger_named(&setup, m.log, "setup"), 0);
	asb_log_typed(setup, ASB_LOG_INFO, "Concurrency settings", ASB_LOG_INT("sandbox", 100),
	              ASB_LOG_STR("name", "a b"), ASB_LOG_BOOL("secure", false),
	              ASB_LOG_FLOAT("qps", 2.5), ASB_LOG_INT("big", INT64_MIN),
	              ASB_LOG_STR("none", NULL), ASB_LOG_STR(NULL, "skipped"),
	              ASB_LOG_BOOL("leader", true), ASB_LOG_INT("worker count", -3));
	asb_logger_free(setup);
	mem_close(&m);

	ck_assert_int_eq(m.buf[m.len - 1], '\n');
	ck_assert_ptr_eq(strchr(m.buf, '\n'), m.buf + m.len - 1);  /* one line */
	cJSON *o = cJSON_Parse(m.buf);
	ck_assert_ptr_nonnull(o);
	char keys[256];
	keys_of(o, keys, sizeof(keys));
	ck_assert_str_eq(keys, "level,ts,logger,msg,sandbox,name,secure,qps,big,none,leader,worker count");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "level")->valuestring, "info");
	ck_assert(matches(TS_RE, cJSON_GetObjectItem(o, "ts")->valuestring));
	ck_assert_str_eq(cJSON_GetObjectItem(o, "logger")->valuestring, "setup");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "msg")->valuestring, "Concurrency settings");
	cJSON *v = cJSON_GetObjectItem(o, "sandbox");
	ck_assert(cJSON_IsNumber(v) && v->valuedouble == 100);
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "name")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "secure")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "leader")));
	v = cJSON_GetObjectItem(o, "qps");
	ck_assert(cJSON_IsNumber(v) && v->valuedouble == 2.5);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "none")->valuestring, "");
	v = cJSON_GetObjectItem(o, "worker count");
	ck_assert(cJSON_IsNumber(v) && v->valuedouble == -3);
	cJSON_Delete(o);
	/* 64-bit integers are written exactly, not through a double */
	ck_assert_ptr_nonnull(strstr(m.buf, "\"big\":-9223372036854775808,"));
	ck_assert_ptr_nonnull(strstr(m.buf, "\"qps\":2.5,"));
	free(m.buf);
}
END_TEST

START_TEST(json_line_without_name_has_no_logger_key)
{
	mem_log m;
	mem_open(&m, ASB_LOG_JSON, ASB_LOG_DEBUG);
	asb_log(m.log, ASB_LOG_DEBUG, "Starting workers", "controller", "sandbox", NULL);
	asb_log(m.log, ASB_LOG_WARN, "no fields", NULL);
	mem_close(&m);
	char *nl = strchr(m.buf, '\n');
	ck_assert_ptr_nonnull(nl);
	*nl = '\0';
	cJSON *a = cJSON_Parse(m.buf), *b = cJSON_Parse(nl + 1);
	ck_assert(a && b);
	char keys[128];
	keys_of(a, keys, sizeof(keys));
	ck_assert_str_eq(keys, "level,ts,msg,controller");
	ck_assert_str_eq(cJSON_GetObjectItem(a, "level")->valuestring, "debug");
	keys_of(b, keys, sizeof(keys));
	ck_assert_str_eq(keys, "level,ts,msg");
	ck_assert_str_eq(cJSON_GetObjectItem(b, "level")->valuestring, "warn");
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(m.buf);
}
END_TEST

/* NaN and the infinities are not JSON numbers: zap writes them as strings. */
START_TEST(json_non_finite_floats_are_strings)
{
	mem_log m;
	mem_open(&m, ASB_LOG_JSON, ASB_LOG_INFO);
	asb_log_typed(m.log, ASB_LOG_INFO, "x", ASB_LOG_FLOAT("nan", NAN),
	              ASB_LOG_FLOAT("inf", INFINITY), ASB_LOG_FLOAT("ninf", -INFINITY),
	              ASB_LOG_FLOAT("third", 1.0 / 3));
	mem_close(&m);
	cJSON *o = cJSON_Parse(m.buf);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "nan")->valuestring, "NaN");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "inf")->valuestring, "+Inf");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "ninf")->valuestring, "-Inf");
	ck_assert(cJSON_GetObjectItem(o, "third")->valuedouble == 1.0 / 3);  /* round-trips */
	cJSON_Delete(o);
	free(m.buf);
}
END_TEST

/* True when s is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates,
 * nothing above U+10FFFF), as RFC 8259 requires of JSON text. */
static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		int n = c < 0x80 ? 0 : c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
		      : c >= 0xf0 && c <= 0xf4 ? 3 : -1;
		if (n < 0)
			return false;
		unsigned cp = n == 0 ? c : c & (0x3f >> n);
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		p += n + 1;
	}
	return true;
}

/* Text from outside (a request path, a flag's value) may hold any bytes:
 * the line stays UTF-8, each byte that starts no valid sequence becoming
 * U+FFFD as zap writes it; control characters are escaped. */
START_TEST(json_line_stays_utf8_and_escaped_whatever_the_bytes)
{
	mem_log m;
	mem_open(&m, ASB_LOG_JSON, ASB_LOG_INFO);
	asb_logger *named;
	ck_assert_int_eq(asb_logger_named(&named, m.log, "n\xff"), 0);
	asb_log_typed(named, ASB_LOG_INFO, "m\xc3", ASB_LOG_STR("path", "a\xff\xfe" "b\xc3"),
	              ASB_LOG_STR("overlong", "\xc0\xaf"), ASB_LOG_STR("surrogate", "\xed\xa0\x80"),
	              ASB_LOG_STR("big", "\xf4\x90\x80\x80"), ASB_LOG_STR("ok", "\xc3\xa9\xe2\x82\xac"),
	              ASB_LOG_STR("ctl", "\x01\x1b[31m\t\x7f"), ASB_LOG_STR("k\xfe", "v"));
	asb_logger_free(named);
	mem_close(&m);
	ck_assert(utf8_ok(m.buf));
	ck_assert_ptr_eq(strchr(m.buf, '\n'), m.buf + m.len - 1);
	for (const char *p = m.buf; *p != '\n'; p++)
		ck_assert_uint_ge((unsigned char)*p, 0x20);
	cJSON *o = cJSON_Parse(m.buf);
	ck_assert_ptr_nonnull(o);
#define FFFD "\xef\xbf\xbd"
	ck_assert_str_eq(cJSON_GetObjectItem(o, "logger")->valuestring, "n" FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "msg")->valuestring, "m" FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "path")->valuestring, "a" FFFD FFFD "b" FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "overlong")->valuestring, FFFD FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "surrogate")->valuestring, FFFD FFFD FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "big")->valuestring, FFFD FFFD FFFD FFFD);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "ok")->valuestring, "\xc3\xa9\xe2\x82\xac");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "ctl")->valuestring, "\x01\x1b[31m\t\x7f");
	ck_assert_str_eq(cJSON_GetObjectItem(o, "k" FFFD)->valuestring, "v");
#undef FFFD
	cJSON_Delete(o);
	free(m.buf);
}
END_TEST

START_TEST(text_line_has_logger_and_bare_typed_values)
{
	mem_log m;
	mem_open(&m, ASB_LOG_TEXT, ASB_LOG_INFO);
	asb_logger *a, *ab;
	ck_assert_int_eq(asb_logger_named(&a, m.log, "sandbox-router"), 0);
	ck_assert_int_eq(asb_logger_named(&ab, a, "access"), 0);
	ck_assert_str_eq(asb_logger_name(ab), "sandbox-router.access");
	ck_assert_str_eq(asb_logger_name(m.log), "");
	asb_logger_free(a);  /* the child outlives its parent */
	asb_log_typed(ab, ASB_LOG_INFO, "request", ASB_LOG_INT("status", 200),
	              ASB_LOG_FLOAT("duration_ms", 1.5), ASB_LOG_BOOL("tls", true),
	              ASB_LOG_STR("path", "/a b"));
	asb_logger_free(ab);
	mem_close(&m);
	ck_assert(matches("^ts=[0-9T:.-]+Z level=info logger=sandbox-router.access msg=request "
	                  "status=200 duration_ms=1.5 tls=true path=\"/a b\"\n$", m.buf));
	free(m.buf);
}
END_TEST

/* Each of zap's time encodings (--zap-time-encoding): its shape and JSON type. */
START_TEST(time_encodings)
{
	static const struct {
		asb_log_time time;
		const char *re;   /* of the string, or of the number's text */
		bool number;
	} cases[] = {
		{ ASB_LOG_TIME_RFC3339_MS, TS_RE, false },
		{ ASB_LOG_TIME_ISO8601, TS_RE, false },
		{ ASB_LOG_TIME_RFC3339, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$", false },
		{ ASB_LOG_TIME_RFC3339NANO,
		  "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,8}[1-9])?Z$", false },
		{ ASB_LOG_TIME_EPOCH, "^1[0-9]{9}(\\.[0-9]{0,8}[1-9])?$", true },
		{ ASB_LOG_TIME_MILLIS, "^1[0-9]{12}(\\.[0-9]{0,5}[1-9])?$", true },
		{ ASB_LOG_TIME_NANOS, "^1[0-9]{18}$", true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int fmt = ASB_LOG_TEXT; fmt <= ASB_LOG_JSON; fmt++) {
			mem_log m;
			mem_open(&m, (asb_log_format)fmt, ASB_LOG_INFO);
			asb_logger *named;
			ck_assert_int_eq(asb_logger_named(&named, m.log, "n"), 0);
			asb_logger_set_time(named, cases[i].time);  /* the shared stream's setting */
			asb_log(m.log, ASB_LOG_INFO, "x", NULL);
			asb_logger_free(named);
			mem_close(&m);
			char ts[64];
			if (fmt == ASB_LOG_TEXT) {
				ck_assert_int_eq(sscanf(m.buf, "ts=%63s ", ts), 1);
			} else {
				cJSON *o = cJSON_Parse(m.buf);
				ck_assert_ptr_nonnull(o);
				cJSON *t = cJSON_GetObjectItem(o, "ts");
				ck_assert_msg(cases[i].number ? cJSON_IsNumber(t) : cJSON_IsString(t),
				              "case %zu: %s", i, m.buf);
				/* the number's text as written, for its digits */
				const char *p = strstr(m.buf, "\"ts\":") + 5;
				size_t n = strcspn(p, ",");
				snprintf(ts, sizeof(ts), "%.*s", (int)n, p);
				if (!cases[i].number) {  /* strip the quotes */
					memmove(ts, ts + 1, strlen(ts));
					ts[strlen(ts) - 1] = '\0';
				}
				cJSON_Delete(o);
			}
			ck_assert_msg(matches(cases[i].re, ts), "case %zu: %s", i, ts);
			free(m.buf);
		}
	}
}
END_TEST

START_TEST(named_logger_of_null_is_silent)
{
	asb_logger *l = (asb_logger *)1;
	ck_assert_int_eq(asb_logger_named(&l, NULL, "x"), 0);
	ck_assert_ptr_null(l);
	asb_log_typed(l, ASB_LOG_ERROR, "dropped", ASB_LOG_INT("n", 1));
	ck_assert_str_eq(asb_logger_name(NULL), "");
}
END_TEST

/* Lines of a logger and of its named children, written from several
 * threads at once, stay whole. */
typedef struct {
	asb_logger *log;
	int id;
} writer_arg;

static void *writer(void *p)
{
	writer_arg *w = p;
	for (int i = 0; i < 200; i++)
		asb_log_typed(w->log, ASB_LOG_INFO, "tick", ASB_LOG_INT("thread", w->id),
		              ASB_LOG_INT("i", i), ASB_LOG_STR("pad", "................................"));
	return NULL;
}

START_TEST(threads_never_interleave_lines)
{
	mem_log m;
	mem_open(&m, ASB_LOG_JSON, ASB_LOG_INFO);
	pthread_t t[4];
	writer_arg w[4];
	for (int i = 0; i < 4; i++) {
		w[i].id = i;
		if (i % 2)
			ck_assert_int_eq(asb_logger_named(&w[i].log, m.log, "child"), 0);
		else
			w[i].log = m.log;
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		if (i % 2)
			asb_logger_free(w[i].log);
	}
	mem_close(&m);
	int lines = 0;
	for (char *line = strtok(m.buf, "\n"); line; line = strtok(NULL, "\n"), lines++) {
		cJSON *o = cJSON_Parse(line);
		ck_assert_msg(o != NULL, "not one JSON object: %s", line);
		cJSON_Delete(o);
	}
	ck_assert_int_eq(lines, 800);
	free(m.buf);
}
END_TEST

START_TEST(levels_filter)
{
	char *s = capture(ASB_LOG_TEXT, ASB_LOG_WARN, ASB_LOG_INFO, "hidden", "k", "v");
	ck_assert(s == NULL || s[0] == '\0');
	free(s);
	ck_assert_int_eq(asb_log_level_parse("debug"), ASB_LOG_DEBUG);
	ck_assert_int_eq(asb_log_level_parse("warning"), ASB_LOG_WARN);
	ck_assert_int_eq(asb_log_level_parse("loud"), -1);
	ck_assert(!asb_log_enabled(NULL, ASB_LOG_ERROR));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, text_format_quotes_when_needed);
	tcase_add_test(tc, json_format_is_one_object_per_line);
	tcase_add_test(tc, levels_filter);
	tcase_add_test(tc, json_line_has_zaps_keys_in_order_and_typed_values);
	tcase_add_test(tc, json_line_without_name_has_no_logger_key);
	tcase_add_test(tc, json_non_finite_floats_are_strings);
	tcase_add_test(tc, json_line_stays_utf8_and_escaped_whatever_the_bytes);
	tcase_add_test(tc, text_line_has_logger_and_bare_typed_values);
	tcase_add_test(tc, named_logger_of_null_is_silent);
	tcase_add_test(tc, time_encodings);
	tcase_add_test(tc, threads_never_interleave_lines);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
