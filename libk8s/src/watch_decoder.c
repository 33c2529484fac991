/*
 * watch_decoder.c - newline-delimited WatchEvent framing (watch_decoder.h).
 *
 * Complete lines are parsed straight from the caller's chunk; only the
 * incomplete tail of a chunk is copied into `pending`, which therefore
 * never holds more than one partial line. A newline byte can not occur
 * inside a UTF-8 sequence or inside a JSON string (it would be escaped), so
 * cutting at '\n' is always a frame boundary.
 *
 * Error messages give the event's position in the stream but never quote
 * it: a watch on Secrets carries their data.
 */
#include <stdlib.h>
#include <string.h>
#include "status.h"
#include "watch_decoder.h"

struct k8s__watch_decoder {
	char *subject;
	size_t max_line;
	k8s__watch_event_fn fn;
	void *userdata;
	char *pending;      /* bytes of the current, incomplete line */
	size_t pending_len;
	size_t pending_cap;
	size_t lines;       /* lines seen, blank ones included (1-based in messages) */
	size_t events;      /* events delivered */
	int state;          /* 0, K8S__WATCH_STOPPED or an error code: sticky */
};

int k8s__watch_decoder_new(k8s__watch_decoder **out, size_t max_line,
                           const char *subject, k8s__watch_event_fn fn,
                           void *userdata)
{
	if (!out || !fn)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "watch decoder: out and fn are required");
	*out = NULL;
	k8s__watch_decoder *d = calloc(1, sizeof(*d));
	if (!d || !(d->subject = strdup(subject ? subject : "watch"))) {
		free(d);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "watch decoder: out of memory");
	}
	d->max_line = max_line ? max_line : K8S_WATCH_MAX_LINE_DEFAULT;
	d->fn = fn;
	d->userdata = userdata;
	*out = d;
	return 0;
}

void k8s__watch_decoder_free(k8s__watch_decoder *d)
{
	if (!d)
		return;
	free(d->pending);
	free(d->subject);
	free(d);
}

size_t k8s__watch_decoder_events(const k8s__watch_decoder *d)
{
	return d ? d->events : 0;
}

static int is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			return 0;
	return 1;
}

static int bad_event(k8s__watch_decoder *d, const char *what)
{
	return asb_error_set(ASB_EDECODE, 0, NULL, "%s: event line %zu %s",
	                     d->subject, d->lines, what);
}

static const struct {
	const char *name;
	k8s_watch_event_type type;
} event_types[] = {
	{ "ADDED", K8S_WATCH_ADDED },
	{ "MODIFIED", K8S_WATCH_MODIFIED },
	{ "DELETED", K8S_WATCH_DELETED },
	{ "BOOKMARK", K8S_WATCH_BOOKMARK },
};

/* Parses one complete line and delivers its event. Returns 0, STOPPED or an error. */
static int decode_line(k8s__watch_decoder *d, const char *line, size_t len)
{
	d->lines++;
	if (is_blank(line, len))
		return 0;

	const char *end = NULL;
	cJSON *ev = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (!ev)
		return bad_event(d, "is not valid JSON");
	if (!is_blank(end, len - (size_t)(end - line))) {
		cJSON_Delete(ev);
		return bad_event(d, "has data after the JSON object");
	}
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
	cJSON *obj = cJSON_GetObjectItemCaseSensitive(ev, "object");
	int rc;
	if (!cJSON_IsObject(ev)) {
		rc = bad_event(d, "is not a JSON object");
	} else if (!cJSON_IsString(type)) {
		rc = bad_event(d, "has no \"type\"");
	} else if (!cJSON_IsObject(obj)) {
		rc = asb_error_set(ASB_EDECODE, 0, NULL,
		                   "%s: event line %zu (%.20s) has no \"object\"",
		                   d->subject, d->lines, type->valuestring);
	} else if (strcmp(type->valuestring, "ERROR") == 0) {
		/* The server ends a watch it can not serve with a Status:
		 * 410 Expired when the resourceVersion is too old. */
		rc = k8s__status_record_json(obj, 0, d->subject);
	} else {
		size_t i = 0, n = sizeof(event_types) / sizeof(event_types[0]);
		while (i < n && strcmp(type->valuestring, event_types[i].name) != 0)
			i++;
		if (i == n) {
			rc = asb_error_set(ASB_EDECODE, 0, NULL,
			                   "%s: event line %zu has unknown type \"%.40s\"",
			                   d->subject, d->lines, type->valuestring);
		} else {
			cJSON_DetachItemViaPointer(ev, obj);
			d->events++;
			rc = d->fn(event_types[i].type, obj, d->userdata)
			     ? K8S__WATCH_STOPPED : 0;
		}
	}
	cJSON_Delete(ev);
	return rc;
}

static int too_long(k8s__watch_decoder *d)
{
	return asb_error_set(ASB_EDECODE, 0, NULL,
	                     "%s: event line %zu is longer than %zu bytes",
	                     d->subject, d->lines + 1, d->max_line);
}

/* Appends to the partial line, growing geometrically. */
static int pending_add(k8s__watch_decoder *d, const char *data, size_t len)
{
	if (len > d->max_line - d->pending_len)
		return too_long(d);
	if (d->pending_len + len > d->pending_cap) {
		size_t cap = d->pending_cap ? d->pending_cap : 4096;
		while (cap < d->pending_len + len)
			cap *= 2;
		char *p = realloc(d->pending, cap);
		if (!p)
			return asb_error_set(ASB_ENOMEM, 0, NULL,
			                     "%s: out of memory", d->subject);
		d->pending = p;
		d->pending_cap = cap;
	}
	memcpy(d->pending + d->pending_len, data, len);
	d->pending_len += len;
	return 0;
}

int k8s__watch_decoder_feed(k8s__watch_decoder *d, const char *data, size_t len)
{
	if (!d)
		return asb_error_set(ASB_EINVAL, 0, NULL, "watch decoder is NULL");
	if (d->state)
		return d->state;

	while (len > 0 && d->state == 0) {
		const char *nl = memchr(data, '\n', len);
		if (!nl) {
			d->state = pending_add(d, data, len);
			break;
		}
		size_t n = (size_t)(nl - data);
		if (d->pending_len == 0) {
			/* The whole line is in this chunk: no copy. */
			d->state = n > d->max_line ? too_long(d) : decode_line(d, data, n);
		} else {
			d->state = pending_add(d, data, n);
			if (d->state == 0)
				d->state = decode_line(d, d->pending, d->pending_len);
			d->pending_len = 0;
		}
		data = nl + 1;
		len -= n + 1;
	}
	/* A stream's buffer may have grown to one huge event: do not keep
	 * that much memory for the rest of a long watch. */
	if (d->pending_len == 0 && d->pending_cap > (1u << 20)) {
		free(d->pending);
		d->pending = NULL;
		d->pending_cap = 0;
	}
	return d->state;
}

int k8s__watch_decoder_finish(k8s__watch_decoder *d)
{
	if (!d)
		return asb_error_set(ASB_EINVAL, 0, NULL, "watch decoder is NULL");
	if (d->state || d->pending_len == 0)
		return d->state;
	/* Only a well-formed final event counts; a cut-off one is reported as
	 * truncation rather than as bad JSON, which is what really happened. */
	const char *end = NULL;
	cJSON *probe = cJSON_ParseWithLengthOpts(d->pending, d->pending_len, &end, 0);
	int whole = probe && is_blank(end, d->pending_len - (size_t)(end - d->pending));
	cJSON_Delete(probe);
	if (whole || is_blank(d->pending, d->pending_len))
		d->state = decode_line(d, d->pending, d->pending_len);
	else
		d->state = asb_error_set(ASB_EDECODE, 0, NULL,
		                         "%s: stream ended inside event line %zu "
		                         "(%zu bytes without a newline)",
		                         d->subject, d->lines + 1, d->pending_len);
	d->pending_len = 0;
	return d->state;
}
