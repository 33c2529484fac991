/*
 * libFuzzer target: watch stream framing. The first byte chooses a chunk
 * size, the rest is fed in chunks of that size (so events are cut at every
 * kind of position), then the stream is finished.
 */
#include <stdint.h>
#include <stdlib.h>
#include "watch_decoder.h"

static int on_event(k8s_watch_event_type type, cJSON *object, void *ud)
{
	(void)type;
	(*(size_t *)ud)++;
	cJSON_Delete(object);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t chunk = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	size_t events = 0;
	k8s__watch_decoder *d = NULL;
	if (k8s__watch_decoder_new(&d, 1 << 20, "fuzz", on_event, &events) < 0)
		return 0;
	int rc = 0;
	for (size_t off = 0; off < size && rc == 0; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		rc = k8s__watch_decoder_feed(d, (const char *)data + off, n);
	}
	if (rc == 0)
		k8s__watch_decoder_finish(d);
	k8s__watch_decoder_free(d);
	asb_error_clear();
	return 0;
}
