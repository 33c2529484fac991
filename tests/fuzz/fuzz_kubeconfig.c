/*
 * libFuzzer target: the kubeconfig loader (libyaml -> cJSON -> config),
 * the parser a user's hand-edited file reaches first. Any input must give
 * either a config or a ASB_ECONFIG error, never a crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include "k8s/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	k8s_config *cfg = NULL;
	/* relative file references resolve under a directory that does not exist */
	if (k8s_config_load_yaml(&cfg, (const char *)data, size, NULL,
	                         "/nonexistent-fuzz-dir/kubeconfig") == 0)
		k8s_config_free(cfg);
	asb_error_clear();
	return 0;
}
