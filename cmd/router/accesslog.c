/*
 * accesslog.c - JSON access log lines (accesslog.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cjson/cJSON.h>
#include "asb/json.h"
#include "accesslog.h"

bool rt_access_skip(const char *path)
{
	return !strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/metrics");
}

char *rt_access_line(const rt_access_entry *e, const char *ts)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "ts", ts);
	cJSON_AddStringToObject(o, "level", "info");
	cJSON_AddStringToObject(o, "logger", "sandbox-router.access");
	cJSON_AddStringToObject(o, "msg", "request");
	cJSON_AddStringToObject(o, "method", e->method ? e->method : "");
	cJSON_AddStringToObject(o, "path", e->path ? e->path : "");
	cJSON_AddNumberToObject(o, "status", e->status);
	cJSON_AddNumberToObject(o, "duration_ms", (double)(int64_t)(e->duration_ms * 1000) / 1000);
	cJSON_AddStringToObject(o, "client_ip", e->client_ip ? e->client_ip : "");
	cJSON_AddStringToObject(o, "sandbox_id", e->sandbox_id ? e->sandbox_id : "");
	cJSON_AddStringToObject(o, "sandbox_namespace", e->sandbox_namespace ? e->sandbox_namespace : "");
	cJSON_AddNumberToObject(o, "bytes_out", (double)e->bytes_out);
	cJSON_AddStringToObject(o, "user_agent", e->user_agent ? e->user_agent : "");
	return asb_json_print(o, true, NULL);
}

void rt_access_log(FILE *out, const rt_access_entry *e)
{
	struct timespec now;
	struct tm tm;
	char ts[40];
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ldZ", now.tv_nsec / 1000000);
	char *line = rt_access_line(e, ts);
	if (!line)
		return;
	/* one fwrite of the whole line: stdio locks the stream per call */
	fwrite(line, 1, strlen(line), out);
	fflush(out);
	free(line);
}
