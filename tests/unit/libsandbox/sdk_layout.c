/*
 * sdk_layout.c - prints the layout of the C structs that the Python SDK
 * mirrors by hand in ctypes (sdk-python/agent_sandbox_c/_native.py), as
 * JSON: {"struct": {"size": N, "fields": {"field": [offset, size], ...}}}.
 * test_sdk_layout.py compares it with the ctypes classes, so a field added,
 * moved or retyped on one side only fails a unit test instead of
 * corrupting memory at run time.
 */
#include <stddef.h>
#include <stdio.h>

#include "asb/common.h"
#include "sandbox/client.h"
#include "sandbox/handle.h"

static int first_struct = 1, first_field;

static void struct_begin(const char *name, size_t size)
{
	printf("%s\n  \"%s\": {\"size\": %zu, \"fields\": {", first_struct ? "{" : ",", name, size);
	first_struct = 0;
	first_field = 1;
}

static void field(const char *name, size_t offset, size_t size)
{
	printf("%s\n    \"%s\": [%zu, %zu]", first_field ? "" : ",", name, offset, size);
	first_field = 0;
}

static void struct_end(void)
{
	printf("}}");
}

#define S(T) struct_begin(#T, sizeof(T))
#define F(T, f) field(#f, offsetof(T, f), sizeof(((T *)0)->f))

int main(void)
{
	S(asb_error);
	F(asb_error, code); F(asb_error, http_status); F(asb_error, reason);
	F(asb_error, message);
	struct_end();

	S(sbx_kv);
	F(sbx_kv, key); F(sbx_kv, value);
	struct_end();

	S(sbx_client_options);
	F(sbx_client_options, version); F(sbx_client_options, kubeconfig);
	F(sbx_client_options, context); F(sbx_client_options, in_cluster);
	F(sbx_client_options, request_timeout_ms); F(sbx_client_options, api_connections);
	F(sbx_client_options, qps); F(sbx_client_options, burst);
	F(sbx_client_options, logger); F(sbx_client_options, user_agent);
	F(sbx_client_options, api_max_retries);
	struct_end();

	S(sbx_claim_options);
	F(sbx_claim_options, version); F(sbx_claim_options, warm_pool);
	F(sbx_claim_options, ns); F(sbx_claim_options, name);
	F(sbx_claim_options, labels); F(sbx_claim_options, nlabels);
	F(sbx_claim_options, annotations); F(sbx_claim_options, nannotations);
	F(sbx_claim_options, shutdown_after_seconds); F(sbx_claim_options, shutdown_policy);
	F(sbx_claim_options, volume_claim_templates_json);
	F(sbx_claim_options, pod_labels); F(sbx_claim_options, npod_labels);
	F(sbx_claim_options, pod_annotations); F(sbx_claim_options, npod_annotations);
	F(sbx_claim_options, env); F(sbx_claim_options, nenv);
	F(sbx_claim_options, created_by); F(sbx_claim_options, ready_timeout_ms);
	F(sbx_claim_options, keep_on_failure); F(sbx_claim_options, cancel);
	struct_end();

	S(sbx_claim_info);
	F(sbx_claim_info, ns); F(sbx_claim_info, claim_name);
	F(sbx_claim_info, sandbox_name); F(sbx_claim_info, pod_ip);
	F(sbx_claim_info, resource_version); F(sbx_claim_info, created_at);
	struct_end();

	S(sbx_connection_options);
	F(sbx_connection_options, version); F(sbx_connection_options, mode);
	F(sbx_connection_options, api_url); F(sbx_connection_options, gateway_name);
	F(sbx_connection_options, gateway_namespace);
	F(sbx_connection_options, gateway_ready_timeout_ms);
	F(sbx_connection_options, router_namespace);
	F(sbx_connection_options, port_forward_ready_timeout_ms);
	F(sbx_connection_options, kubectl); F(sbx_connection_options, server_port);
	F(sbx_connection_options, max_retries); F(sbx_connection_options, retry_backoff_ms);
	F(sbx_connection_options, connect_timeout_ms);
	F(sbx_connection_options, in_cluster_address); F(sbx_connection_options, on_connect);
	F(sbx_connection_options, on_connect_userdata);
	struct_end();

	S(sbx_exec_result);
	F(sbx_exec_result, out); F(sbx_exec_result, out_len);
	F(sbx_exec_result, err); F(sbx_exec_result, err_len);
	F(sbx_exec_result, exit_code);
	struct_end();

	S(sbx_upload_source);
	F(sbx_upload_source, data); F(sbx_upload_source, fd);
	F(sbx_upload_source, read); F(sbx_upload_source, userdata);
	F(sbx_upload_source, size);
	struct_end();

	S(sbx_file_entry);
	F(sbx_file_entry, name); F(sbx_file_entry, size);
	F(sbx_file_entry, is_dir); F(sbx_file_entry, mod_time);
	struct_end();

	S(sbx_file_list);
	F(sbx_file_list, entries); F(sbx_file_list, count);
	struct_end();

	printf("\n}\n");
	return 0;
}
