/*
 * test_config.c - kubeconfig and in-cluster loading (libk8s/src/config.c).
 *
 * The happy paths read data/kubeconfig/config, whose file references are
 * relative to it; the broken documents are inline. Every broken input must
 * give ASB_ECONFIG with a message that names the file and the problem.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "k8s/config.h"
#include "config_internal.h"
#include "exec_credential.h"

#define KC_DIR TEST_DATA_DIR "/kubeconfig"
#define KC_FILE KC_DIR "/config"

static char *slurp(const char *path)
{
	k8s__blob b;
	ck_assert_int_eq(k8s__read_file(path, &b), 0);
	return b.data;
}

static void assert_blob_is_file(const k8s__blob *b, const char *path)
{
	char *want = slurp(path);
	ck_assert_ptr_nonnull(b->data);
	ck_assert_uint_eq(b->len, strlen(want));
	ck_assert_int_eq(memcmp(b->data, want, b->len), 0);
	ck_assert_int_eq(b->data[b->len], '\0');
	free(want);
}

/* Asserts ASB_ECONFIG and that the message contains each needle. */
static void assert_config_error(int rc, const char *needle1, const char *needle2)
{
	const char *m = asb_error_last()->message;
	ck_assert_msg(rc == ASB_ECONFIG, "rc %d, message: %s", rc, m);
	ck_assert_int_eq(asb_error_last()->code, ASB_ECONFIG);
	ck_assert_msg(strstr(m, needle1), "\"%s\" not in: %s", needle1, m);
	if (needle2)
		ck_assert_msg(strstr(m, needle2), "\"%s\" not in: %s", needle2, m);
}

static int load_doc(k8s_config **cfg, const char *yaml, const char *context)
{
	return k8s_config_load_yaml(cfg, yaml, strlen(yaml), context,
	                            "/virtual/dir/kubeconfig.yaml");
}

/* --- happy paths -------------------------------------------------------- */

START_TEST(test_current_context_token)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, NULL), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "token-ctx");
	/* The trailing slash is dropped: paths are appended to it. */
	ck_assert_str_eq(k8s_config_server(cfg), "https://127.0.0.1:6443");
	ck_assert_str_eq(k8s_config_namespace(cfg), "team-a");
	ck_assert_str_eq(cfg->token, "inline-token-abc");
	ck_assert_ptr_null(cfg->token_file);
	ck_assert_ptr_null(cfg->cert.data);
	ck_assert_ptr_null(cfg->key.data);
	ck_assert_ptr_null(cfg->tls_server_name);
	ck_assert(!cfg->insecure);
	/* certificate-authority: ca.crt, relative to the kubeconfig. */
	assert_blob_is_file(&cfg->ca, KC_DIR "/ca.crt");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_explicit_context_cert_files)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, "files-ctx"), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "files-ctx");
	ck_assert_str_eq(k8s_config_namespace(cfg), "default");
	assert_blob_is_file(&cfg->cert, KC_DIR "/client.crt");
	assert_blob_is_file(&cfg->key, KC_DIR "/client.key");
	ck_assert_ptr_null(cfg->token);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_data_fields)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, "data-ctx"), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://[::1]:8443");
	ck_assert_str_eq(k8s_config_namespace(cfg), "team-b");
	ck_assert_str_eq(cfg->tls_server_name, "kubernetes.default.svc");
	assert_blob_is_file(&cfg->ca, KC_DIR "/ca.crt");
	assert_blob_is_file(&cfg->cert, KC_DIR "/client.crt");
	assert_blob_is_file(&cfg->key, KC_DIR "/client.key");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_token_file_and_insecure)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, "tokenfile-ctx"), 0);
	/* A bare host:port means https, as in client-go. */
	ck_assert_str_eq(k8s_config_server(cfg), "https://api.example.test:6443");
	ck_assert(cfg->insecure);
	/* The file wins over the inline token, trimmed of its newline. */
	ck_assert_str_eq(cfg->token, "file-token-123");
	ck_assert_str_eq(cfg->token_file, KC_DIR "/token");
	ck_assert_ptr_null(cfg->ca.data);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_anonymous_context)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, "anonymous-ctx"), 0);
	ck_assert_ptr_null(cfg->token);
	ck_assert_ptr_null(cfg->cert.data);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_dup)
{
	k8s_config *cfg = NULL, *copy = NULL;
	ck_assert_int_eq(k8s_config_load(&cfg, KC_FILE, "data-ctx"), 0);
	ck_assert_int_eq(k8s__config_dup(&copy, cfg), 0);
	k8s_config_free(cfg);
	ck_assert_str_eq(k8s_config_server(copy), "https://[::1]:8443");
	ck_assert_str_eq(copy->tls_server_name, "kubernetes.default.svc");
	assert_blob_is_file(&copy->key, KC_DIR "/client.key");
	k8s_config_free(copy);
}
END_TEST

START_TEST(test_kubeconfig_env)
{
	k8s_config *cfg = NULL;
	/* Empty entries and files that do not exist are skipped, as kubectl
	 * does; the files that exist are merged. */
	ck_assert_int_eq(setenv("KUBECONFIG", "::" KC_FILE ":/does/not/exist", 1), 0);
	ck_assert_int_eq(k8s_config_load(&cfg, NULL, NULL), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "token-ctx");
	ck_assert_str_eq(cfg->origin, KC_FILE);
	k8s_config_free(cfg);

	ck_assert_int_eq(setenv("KUBECONFIG", "/does/not/exist:" KC_FILE, 1), 0);
	ck_assert_int_eq(k8s_config_load(&cfg, NULL, "files-ctx"), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "files-ctx");
	k8s_config_free(cfg);

	/* Nothing to load at all is an error naming every file. */
	ck_assert_int_eq(setenv("KUBECONFIG", "/does/not/exist:/nor/this", 1), 0);
	cfg = (k8s_config *)1;
	assert_config_error(k8s_config_load(&cfg, NULL, NULL),
	                    "/does/not/exist:/nor/this", "none of these files exists");
	ck_assert_ptr_null(cfg);
	unsetenv("KUBECONFIG");
}
END_TEST

START_TEST(test_home_default)
{
	char dir[] = "/tmp/k8s-test-home-XXXXXX", path[256];
	k8s_config *cfg = NULL;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.kube", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.kube/config", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("clusters:\n- name: c\n  cluster: {server: 'http://localhost:8080'}\n"
	      "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", f);
	fclose(f);

	unsetenv("KUBECONFIG");
	ck_assert_int_eq(setenv("HOME", dir, 1), 0);
	ck_assert_int_eq(k8s_config_load(&cfg, NULL, NULL), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "http://localhost:8080");
	k8s_config_free(cfg);

	unlink(path);
	snprintf(path, sizeof(path), "%s/.kube", dir);
	rmdir(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_relative_paths)
{
	/* With an origin, paths are relative to its directory; absolute ones
	 * stay as they are. */
	const char *doc =
		"clusters:\n"
		"- name: c\n"
		"  cluster:\n"
		"    server: https://h:1\n"
		"    certificate-authority: " KC_DIR "/ca.crt\n"
		"users:\n"
		"- name: u\n"
		"  user:\n"
		"    client-certificate: client.crt\n"
		"    client-key: sub/../client.key\n"
		"contexts:\n"
		"- name: x\n"
		"  context: {cluster: c, user: u}\n";
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, doc, strlen(doc), "x",
	                                      KC_DIR "/virtual-name"), ASB_ECONFIG);
	/* sub/ does not exist, so sub/../ can not be resolved by the kernel. */
	assert_config_error(ASB_ECONFIG, KC_DIR "/sub/../client.key", "user \"u\"");

	const char *doc2 =
		"clusters: [{name: c, cluster: {server: 'https://h:1', "
		"certificate-authority: " KC_DIR "/ca.crt}}]\n"
		"users: [{name: u, user: {client-certificate: client.crt, "
		"client-key: ./client.key}}]\n"
		"contexts: [{name: x, context: {cluster: c, user: u}}]\n";
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, doc2, strlen(doc2), "x",
	                                      KC_DIR "/virtual-name"), 0);
	assert_blob_is_file(&cfg->ca, KC_DIR "/ca.crt");
	assert_blob_is_file(&cfg->cert, KC_DIR "/client.crt");
	assert_blob_is_file(&cfg->key, KC_DIR "/client.key");
	k8s_config_free(cfg);
}
END_TEST

/* --- broken kubeconfigs -------------------------------------------------- */

#define GOOD_CLUSTERS \
	"clusters:\n- name: c\n  cluster:\n    server: https://h:6443\n"
#define GOOD_USERS "users:\n- name: u\n  user:\n    token: t\n"

START_TEST(test_missing_context)
{
	k8s_config *cfg = (k8s_config *)1;
	const char *doc = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc, "nope"), "context \"nope\" not found",
	                    "/virtual/dir/kubeconfig.yaml");
	ck_assert_ptr_null(cfg);

	/* current-context naming a context that is not there. */
	const char *doc2 = GOOD_CLUSTERS GOOD_USERS "current-context: gone\n";
	assert_config_error(load_doc(&cfg, doc2, NULL), "context \"gone\" not found",
	                    NULL);
}
END_TEST

START_TEST(test_no_current_context)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
		"current-context: \"\"\n";
	assert_config_error(load_doc(&cfg, doc, NULL), "no current-context",
	                    "kubeconfig \"/virtual/dir/kubeconfig.yaml\"");
}
END_TEST

START_TEST(test_unknown_user)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {cluster: c, user: ghost}\n";
	assert_config_error(load_doc(&cfg, doc, "x"), "context \"x\"",
	                    "user \"ghost\", which is not defined");
}
END_TEST

START_TEST(test_unknown_cluster)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {cluster: elsewhere, user: u}\n";
	assert_config_error(load_doc(&cfg, doc, "x"), "context \"x\"",
	                    "cluster \"elsewhere\", which is not defined");

	const char *doc2 = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {user: u}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"), "context \"x\" names no cluster",
	                    NULL);
}
END_TEST

START_TEST(test_bad_base64)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS
		"users:\n- name: u\n  user:\n"
		"    client-certificate-data: LS0tLS1CRUdJTiBDRVJU\n"
		"    client-key-data: 'not*base64!'\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc, "x"),
	                    "user \"u\": client-key-data is not valid base64",
	                    "kubeconfig.yaml");

	const char *doc2 =
		"clusters:\n- name: c\n  cluster:\n    server: https://h:6443\n"
		"    certificate-authority-data: QUJD=RA==\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"),
	                    "cluster \"c\": certificate-authority-data is not valid "
	                    "base64", NULL);

	/* Valid base64 of something that is not PEM. */
	const char *doc3 =
		"clusters:\n- name: c\n  cluster:\n    server: https://h:6443\n"
		"    certificate-authority-data: aGVsbG8gd29ybGQ=\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc3, "x"), "does not hold PEM data",
	                    "certificate-authority-data");
}
END_TEST

START_TEST(test_not_yaml)
{
	k8s_config *cfg = NULL;
	const char *doc = "clusters:\n- name: c\n  cluster: [oops\ncontexts: {\n";
	assert_config_error(load_doc(&cfg, doc, NULL), "not valid YAML",
	                    "kubeconfig \"/virtual/dir/kubeconfig.yaml\": line ");
	const char *doc2 = "a: b\n c: d\n";
	assert_config_error(load_doc(&cfg, doc2, NULL), "line 2, column",
	                    "not valid YAML");
	/* YAML, but not a mapping. */
	assert_config_error(load_doc(&cfg, "- a\n- b\n", NULL), "not a mapping",
	                    NULL);
	assert_config_error(load_doc(&cfg, "just a string", NULL), "not a mapping",
	                    NULL);
}
END_TEST

START_TEST(test_empty_file)
{
	k8s_config *cfg = NULL;
	assert_config_error(load_doc(&cfg, "", NULL), "is empty",
	                    "/virtual/dir/kubeconfig.yaml");
	assert_config_error(load_doc(&cfg, "# nothing here\n\n", NULL), "is empty",
	                    NULL);

	char path[] = "/tmp/k8s-test-empty-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	assert_config_error(k8s_config_load(&cfg, path, NULL), "is empty", path);
	unlink(path);
}
END_TEST

START_TEST(test_missing_file)
{
	k8s_config *cfg = (k8s_config *)1;
	assert_config_error(k8s_config_load(&cfg, "/no/such/kubeconfig", NULL),
	                    "kubeconfig \"/no/such/kubeconfig\": cannot read",
	                    "No such file");
	ck_assert_ptr_null(cfg);
	/* A directory is not a kubeconfig either. */
	assert_config_error(k8s_config_load(&cfg, KC_DIR, NULL), "cannot read",
	                    "directory");
}
END_TEST

START_TEST(test_cluster_without_server)
{
	k8s_config *cfg = NULL;
	const char *doc =
		"clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: true\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc, "x"), "cluster \"c\" has no server",
	                    NULL);
	const char *doc2 = "clusters:\n- name: c\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"), "cluster \"c\" has no server",
	                    NULL);
	const char *doc3 = "clusters:\n- name: c\n  cluster: {server: 'ftp://h'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc3, "x"), "not an http(s) URL", NULL);
}
END_TEST

/* The server URL as curl reads it: a bare host:port means https, an IPv6
 * host stays bracketed, the path is kept without its trailing '/'. */
START_TEST(test_server_url_forms)
{
	static const struct { const char *server, *want; } cases[] = {
		{ "h.example:6443", "https://h.example:6443" },
		{ "[fd00::1]:6443", "https://[fd00::1]:6443" },
		{ "https://[fd00::1]:6443/", "https://[fd00::1]:6443" },
		{ "https://[::1]", "https://[::1]" },
		{ "http://h:8080/prefix//", "http://h:8080/prefix" },
		{ "https://h/a/b", "https://h/a/b" },
		{ "h", "https://h" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char doc[512];
		snprintf(doc, sizeof(doc),
		         "clusters:\n- name: c\n  cluster: {server: '%s'}\n"
		         "contexts:\n- name: x\n  context: {cluster: c}\n", cases[i].server);
		k8s_config *cfg = NULL;
		ck_assert_msg(load_doc(&cfg, doc, "x") == 0, "case %zu: %s", i,
		              asb_error_last()->message);
		ck_assert_str_eq(k8s_config_server(cfg), cases[i].want);
		k8s_config_free(cfg);
	}
	static const char *const bad[] = { "ftp://h", "socks5://h:1", "https://[fd00::1", "https://h:99999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char doc[512];
		snprintf(doc, sizeof(doc),
		         "clusters:\n- name: c\n  cluster: {server: '%s'}\n"
		         "contexts:\n- name: x\n  context: {cluster: c}\n", bad[i]);
		k8s_config *cfg = NULL;
		assert_config_error(load_doc(&cfg, doc, "x"), "not an http(s) URL", bad[i]);
	}
	/* a proxy needs its scheme; any of client-go's, in any case */
	k8s_config *cfg = NULL;
	const char *noscheme =
		"clusters:\n- name: c\n  cluster: {server: 'https://h:1', proxy-url: 'proxy.test:3128'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, noscheme, "x"), "proxy-url must be an http://", NULL);
	const char *v6 =
		"clusters:\n- name: c\n  cluster: {server: 'https://h:1', proxy-url: 'https://[::1]:3128'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	ck_assert_int_eq(load_doc(&cfg, v6, "x"), 0);
	ck_assert_str_eq(cfg->proxy_url, "https://[::1]:3128");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_missing_referenced_file)
{
	k8s_config *cfg = NULL;
	const char *doc =
		"clusters:\n- name: c\n  cluster:\n    server: https://h\n"
		"    certificate-authority: missing-ca.crt\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc, "x"),
	                    "cannot read certificate-authority "
	                    "\"/virtual/dir/missing-ca.crt\"", "cluster \"c\"");
	const char *doc2 = GOOD_CLUSTERS
		"users:\n- name: u\n  user: {tokenFile: /no/token}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"), "cannot read tokenFile",
	                    "/no/token");
}
END_TEST

START_TEST(test_half_a_client_cert)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS
		"users:\n- name: u\n  user:\n    client-certificate: " KC_DIR "/client.crt\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc, "x"),
	                    "user \"u\" has a client certificate but no client key",
	                    NULL);
}
END_TEST

START_TEST(test_unsupported_auth)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS
		"users:\n- name: u\n  user:\n    auth-provider: {name: gcp}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc, "x"),
	                    "user \"u\" authenticates with auth-provider", "not support");
	const char *doc2 = GOOD_CLUSTERS
		"users:\n- name: u\n  user: {username: admin, password: secret}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"), "username/password", NULL);
	ck_assert_ptr_null(strstr(asb_error_last()->message, "secret"));
}
END_TEST

START_TEST(test_wrong_types)
{
	k8s_config *cfg = NULL;
	const char *doc = GOOD_CLUSTERS GOOD_USERS
		"contexts:\n- name: x\n  context: {cluster: c, user: u, namespace: 0644}\n";
	assert_config_error(load_doc(&cfg, doc, "x"), "\"namespace\" must be a string",
	                    "context \"x\"");
	const char *doc2 = "clusters: {c: {server: x}}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc2, "x"), "\"clusters\" must be a list",
	                    NULL);
	const char *doc3 =
		"clusters:\n- name: c\n  cluster: {server: 'https://h', "
		"insecure-skip-tls-verify: maybe}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc3, "x"), "insecure-skip-tls-verify", NULL);
	/* Anchors and aliases are refused with their position. */
	const char *doc4 = "clusters:\n- &a {name: c, cluster: {server: 'https://h'}}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, doc4, "x"), "anchors are not supported",
	                    "line 2, column 3");
}
END_TEST

START_TEST(test_null_arguments)
{
	ck_assert_int_eq(k8s_config_load(NULL, KC_FILE, NULL), ASB_EINVAL);
	ck_assert_ptr_null(k8s_config_server(NULL));
	ck_assert_ptr_null(k8s_config_namespace(NULL));
	ck_assert_ptr_null(k8s_config_context(NULL));
	k8s_config_free(NULL);
}
END_TEST

/* --- merging several kubeconfig files (clientcmd rules) ------------------ */

static char merge_root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", merge_root, rel);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

#define PEM(x) "-----BEGIN CERTIFICATE-----\n" x "\n-----END CERTIFICATE-----\n"

static void merge_setup(void)
{
	char path[256];
	snprintf(merge_root, sizeof(merge_root), "/tmp/k8s-test-merge-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(merge_root));
	snprintf(path, sizeof(path), "%s/one", merge_root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/two", merge_root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	put("one/ca.pem", PEM("ONE"));
	put("two/ca.pem", PEM("TWO"));
	put("two/tok", "token-from-two-file\n");
	/* No current-context here. */
	put("one/config",
	    "clusters:\n"
	    "- {name: shared, cluster: {server: 'https://first:1', certificate-authority: ca.pem}}\n"
	    "users:\n- {name: u1, user: {token: first-token}}\n"
	    "contexts:\n- {name: ctx-a, context: {cluster: shared, user: u1, namespace: from-one}}\n");
	put("two/config",
	    "current-context: ctx-b\n"
	    "clusters:\n"
	    "- {name: shared, cluster: {server: 'https://second:2'}}\n"
	    "- {name: only-two, cluster: {server: 'https://second-only:3', certificate-authority: ca.pem}}\n"
	    "users:\n- {name: u1, user: {token: second-token}}\n- {name: u2, user: {tokenFile: tok}}\n"
	    "contexts:\n"
	    "- {name: ctx-a, context: {cluster: only-two, user: u2}}\n"
	    "- {name: ctx-b, context: {cluster: shared, user: u2, namespace: from-two}}\n");
	put("current", "current-context: ctx-a\n");
	put("empty", "");
	put("broken", "clusters: [unclosed\n");
}

static void merge_teardown(void)
{
	const char *files[] = { "one/ca.pem", "two/ca.pem", "two/tok", "one/config",
	                        "two/config", "current", "empty", "broken" };
	char path[256];
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", merge_root, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/one", merge_root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/two", merge_root);
	rmdir(path);
	rmdir(merge_root);
}

static const char *mpath(const char *rel)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ % 4];
	snprintf(b, 256, "%s/%s", merge_root, rel);
	return b;
}

START_TEST(test_merge_first_file_wins)
{
	const char *paths[] = { mpath("one/config"), "/does/not/exist", mpath("two/config") };
	k8s_config *cfg = NULL;

	/* current-context from the only file that sets it (the second). */
	ck_assert_int_eq(k8s_config_load_files(&cfg, paths, 3, NULL), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "ctx-b");
	ck_assert_str_eq(k8s_config_namespace(cfg), "from-two");
	/* Cluster "shared" is defined in both: the first file's entry wins,
	 * whole (its CA, relative to the first file's directory). */
	ck_assert_str_eq(k8s_config_server(cfg), "https://first:1");
	ck_assert_str_eq(cfg->ca.data, PEM("ONE"));
	/* User u2 exists in the second file only; its tokenFile is relative
	 * to that file's directory. */
	ck_assert_str_eq(cfg->token, "token-from-two-file");
	ck_assert_str_eq(cfg->token_file, mpath("two/tok"));
	/* The origin names the files that were read, not the missing one. */
	char want[600];
	snprintf(want, sizeof(want), "%s:%s", paths[0], paths[2]);
	ck_assert_str_eq(cfg->origin, want);
	k8s_config_free(cfg);

	/* Context ctx-a is in both: the first file's. */
	ck_assert_int_eq(k8s_config_load_files(&cfg, paths, 3, "ctx-a"), 0);
	ck_assert_str_eq(k8s_config_namespace(cfg), "from-one");
	ck_assert_str_eq(cfg->token, "first-token");
	ck_assert_str_eq(k8s_config_server(cfg), "https://first:1");
	k8s_config_free(cfg);

	/* The other order: the second file's entries win now. */
	const char *rev[] = { mpath("two/config"), mpath("one/config") };
	ck_assert_int_eq(k8s_config_load_files(&cfg, rev, 2, "ctx-a"), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://second-only:3");
	ck_assert_str_eq(cfg->ca.data, PEM("TWO"));
	ck_assert_str_eq(cfg->token, "token-from-two-file");
	ck_assert_str_eq(k8s_config_namespace(cfg), "default");
	k8s_config_free(cfg);
	ck_assert_int_eq(k8s_config_load_files(&cfg, rev, 2, "ctx-b"), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://second:2");
	ck_assert_ptr_null(cfg->ca.data);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_merge_current_context)
{
	/* A file that only sets current-context, first in the list, wins over
	 * the second file's current-context; an empty file adds nothing. */
	const char *paths[] = { mpath("empty"), mpath("current"), mpath("two/config"),
	                        mpath("one/config") };
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load_files(&cfg, paths, 4, NULL), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "ctx-a");
	ck_assert_str_eq(k8s_config_server(cfg), "https://second-only:3");
	k8s_config_free(cfg);

	/* The explicit context (kubectl --context) beats every current-context. */
	ck_assert_int_eq(k8s_config_load_files(&cfg, paths, 4, "ctx-b"), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "ctx-b");
	k8s_config_free(cfg);

	/* Through $KUBECONFIG, the same list. */
	char env[1200];
	snprintf(env, sizeof(env), "%s:%s::%s:%s", paths[0], paths[1], paths[2], paths[3]);
	ck_assert_int_eq(setenv("KUBECONFIG", env, 1), 0);
	ck_assert_int_eq(k8s_config_load(&cfg, NULL, NULL), 0);
	ck_assert_str_eq(k8s_config_context(cfg), "ctx-a");
	ck_assert_str_eq(k8s_config_server(cfg), "https://second-only:3");
	k8s_config_free(cfg);
	/* An explicit path means that file alone, as kubectl --kubeconfig. */
	ck_assert_int_eq(k8s_config_load(&cfg, paths[3], "ctx-a"), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://first:1");
	k8s_config_free(cfg);
	unsetenv("KUBECONFIG");
}
END_TEST

START_TEST(test_merge_errors)
{
	k8s_config *cfg = (k8s_config *)1;
	/* A file that exists but is broken is an error, even with good ones. */
	const char *paths[] = { mpath("one/config"), mpath("broken") };
	assert_config_error(k8s_config_load_files(&cfg, paths, 2, NULL), mpath("broken"),
	                    NULL);
	ck_assert_ptr_null(cfg);
	/* No current-context anywhere: names all the files read. */
	const char *one[] = { mpath("one/config"), mpath("empty") };
	assert_config_error(k8s_config_load_files(&cfg, one, 2, NULL),
	                    "no current-context", mpath("empty"));
	/* Only empty files. */
	const char *empty[] = { mpath("empty") };
	assert_config_error(k8s_config_load_files(&cfg, empty, 1, NULL), "is empty", NULL);
	/* A current-context that no file defines; the message names the files. */
	const char *two[] = { mpath("current"), mpath("empty") };
	assert_config_error(k8s_config_load_files(&cfg, two, 2, NULL),
	                    "context \"ctx-a\" not found", mpath("current"));
	ck_assert_int_eq(k8s_config_load_files(&cfg, NULL, 0, NULL), ASB_EINVAL);
	const char *blank[] = { "" };
	ck_assert_int_eq(k8s_config_load_files(&cfg, blank, 1, NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_config_load_files(NULL, paths, 1, NULL), ASB_EINVAL);
}
END_TEST

/* --- proxy-url ------------------------------------------------------------ */

START_TEST(test_proxy_url)
{
	k8s_config *cfg = NULL, *copy = NULL;
	const char *doc =
		"clusters:\n- name: c\n  cluster: {server: 'https://h:1', "
		"proxy-url: 'http://user:pw@proxy.test:3128'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	ck_assert_int_eq(load_doc(&cfg, doc, "x"), 0);
	ck_assert_str_eq(cfg->proxy_url, "http://user:pw@proxy.test:3128");
	ck_assert_int_eq(k8s__config_dup(&copy, cfg), 0);
	ck_assert_str_eq(copy->proxy_url, cfg->proxy_url);
	k8s_config_free(copy);
	k8s_config_free(cfg);

	const char *socks =
		"clusters:\n- name: c\n  cluster: {server: 'https://h:1', "
		"proxy-url: 'socks5://127.0.0.1:1080'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	ck_assert_int_eq(load_doc(&cfg, socks, "x"), 0);
	ck_assert_str_eq(cfg->proxy_url, "socks5://127.0.0.1:1080");
	k8s_config_free(cfg);

	/* An unsupported scheme; the URL (and its password) is not quoted. */
	const char *bad =
		"clusters:\n- name: c\n  cluster: {server: 'https://h:1', "
		"proxy-url: 'ftp://user:hunter2@proxy.test'}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\n";
	assert_config_error(load_doc(&cfg, bad, "x"), "proxy-url must be an http://",
	                    "cluster \"c\"");
	ck_assert_ptr_null(strstr(asb_error_last()->message, "hunter2"));
}
END_TEST

/* --- exec credential plugins ---------------------------------------------- */

#define EXEC_DOC(user) GOOD_CLUSTERS "users:\n- name: u\n  user:\n" user \
	"contexts:\n- name: x\n  context: {cluster: c, user: u}\n"

START_TEST(test_exec_stanza)
{
	k8s_config *cfg = NULL, *copy = NULL;
	const char *doc = EXEC_DOC(
		"    exec:\n"
		"      apiVersion: client.authentication.k8s.io/v1\n"
		"      command: ./bin/get-token\n"
		"      args: [--cluster, prod, '--verbose']\n"
		"      env:\n      - {name: REGION, value: eu-west-1}\n"
		"      - {name: EMPTY}\n"
		"      interactiveMode: Never\n"
		"      installHint: 'install get-token from example.test'\n");
	ck_assert_int_eq(load_doc(&cfg, doc, "x"), 0);
	/* No static credentials: the plugin is what authenticates. */
	ck_assert_ptr_null(cfg->token);
	ck_assert_ptr_nonnull(cfg->exec);
	const k8s__exec_config *e = cfg->exec;
	ck_assert_str_eq(e->api_version, "client.authentication.k8s.io/v1");
	/* A command with a '/' is relative to the kubeconfig's directory. */
	ck_assert_str_eq(e->command, "/virtual/dir/./bin/get-token");
	ck_assert_uint_eq(e->nargs, 3);
	ck_assert_str_eq(e->args[0], "--cluster");
	ck_assert_str_eq(e->args[2], "--verbose");
	ck_assert_uint_eq(e->nenv, 2);
	ck_assert_str_eq(e->env[0], "REGION=eu-west-1");
	ck_assert_str_eq(e->env[1], "EMPTY=");
	ck_assert_int_eq(e->interactive, K8S__EXEC_NEVER);
	ck_assert_str_eq(e->install_hint, "install get-token from example.test");
	ck_assert_ptr_null(e->cluster_json);  /* provideClusterInfo not set */
	ck_assert_ptr_nonnull(strstr(e->label, "user \"u\""));
	ck_assert_int_eq(k8s__config_dup(&copy, cfg), 0);
	k8s_config_free(cfg);
	ck_assert_str_eq(copy->exec->env[0], "REGION=eu-west-1");
	ck_assert_str_eq(copy->exec->args[1], "prod");
	k8s_config_free(copy);

	/* v1beta1 defaults interactiveMode; a bare name is looked up on PATH. */
	const char *beta = EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws,"
		" provideClusterInfo: true}\n");
	ck_assert_int_eq(load_doc(&cfg, beta, "x"), 0);
	ck_assert_str_eq(cfg->exec->command, "aws");
	ck_assert_int_eq(cfg->exec->interactive, K8S__EXEC_IF_AVAILABLE);
	ck_assert_uint_eq(cfg->exec->nargs, 0);
	/* provideClusterInfo: the cluster travels in KUBERNETES_EXEC_INFO. */
	char *info = k8s__exec_info_json(cfg->exec);
	ck_assert_ptr_nonnull(info);
	cJSON *j = cJSON_Parse(info);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "apiVersion")->valuestring,
	                 "client.authentication.k8s.io/v1beta1");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "kind")->valuestring, "ExecCredential");
	cJSON *spec = cJSON_GetObjectItem(j, "spec");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(spec, "interactive")));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "cluster"),
	                                     "server")->valuestring, "https://h:6443");
	cJSON_Delete(j);
	free(info);
	k8s_config_free(cfg);

	/* Static credentials win over the plugin, which is still validated. */
	const char *both = EXEC_DOC(
		"    token: static\n"
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}\n");
	ck_assert_int_eq(load_doc(&cfg, both, "x"), 0);
	ck_assert_str_eq(cfg->token, "static");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_exec_stanza_cluster_extension)
{
	k8s_config *cfg = NULL;
	const char *doc =
		"clusters:\n- name: c\n  cluster:\n    server: https://h:6443\n"
		"    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n"
		"    extensions:\n    - name: client.authentication.k8s.io/exec\n"
		"      extension: {audience: prod}\n"
		"users:\n- name: u\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1,"
		" command: p, interactiveMode: IfAvailable, provideClusterInfo: true}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	ck_assert_int_eq(load_doc(&cfg, doc, "x"), 0);
	cJSON *cl = cJSON_Parse(cfg->exec->cluster_json);
	ck_assert_ptr_nonnull(cl);
	ck_assert_str_eq(cJSON_GetObjectItem(cl, "certificate-authority-data")->valuestring,
	                 "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cl, "config"),
	                                     "audience")->valuestring, "prod");
	cJSON_Delete(cl);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_exec_stanza_broken)
{
	k8s_config *cfg = NULL;
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}\n"),
		"x"), "command must be specified", "user \"u\"");
	assert_config_error(load_doc(&cfg, EXEC_DOC("    exec: {command: aws}\n"), "x"),
	                    "apiVersion must be specified", "user \"u\"");
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: aws}\n"),
		"x"), "apiVersion \"client.authentication.k8s.io/v1alpha1\" is not supported",
		NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: v1, command: aws}\n"), "x"), "is not supported", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}\n"),
		"x"), "interactiveMode must be specified", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1, command: aws,"
		" interactiveMode: Sometimes}\n"), "x"), "\"Sometimes\" is not one of", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws,"
		" env: [{value: x}]}\n"), "x"), "env variable name must be specified", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws,"
		" args: --flag}\n"), "x"), "args must be a list", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws,"
		" args: [1]}\n"), "x"), "args must be a list of strings", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: [aws]}\n"),
		"x"), "must be strings", NULL);
	assert_config_error(load_doc(&cfg, EXEC_DOC("    exec: aws\n"), "x"),
	                    "exec: must be a mapping", NULL);
	/* A broken stanza is an error even when a token would be used. */
	assert_config_error(load_doc(&cfg, EXEC_DOC(
		"    token: t\n    exec: {command: aws}\n"), "x"),
		"apiVersion must be specified", NULL);
	ck_assert_ptr_null(cfg);
}
END_TEST

/* --- in-cluster ---------------------------------------------------------- */

static char sa_dir[64];

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void remove_file(const char *dir, const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void sa_setup(void)
{
	strcpy(sa_dir, "/tmp/k8s-test-sa-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(sa_dir));
	write_file(sa_dir, "token", "sa-token-xyz\n");
	write_file(sa_dir, "ca.crt", "-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n");
	write_file(sa_dir, "namespace", "sandboxes");
}

static void sa_teardown(void)
{
	remove_file(sa_dir, "token");
	remove_file(sa_dir, "ca.crt");
	remove_file(sa_dir, "namespace");
	rmdir(sa_dir);
}

START_TEST(test_incluster_ok)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_incluster_from(&cfg, "10.96.0.1", "443", sa_dir), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://10.96.0.1:443");
	ck_assert_str_eq(k8s_config_namespace(cfg), "sandboxes");
	ck_assert_str_eq(k8s_config_context(cfg), "");
	ck_assert_str_eq(cfg->token, "sa-token-xyz");
	ck_assert_ptr_nonnull(strstr(cfg->token_file, "/token"));
	ck_assert_ptr_nonnull(strstr(cfg->ca.data, "BEGIN CERTIFICATE"));
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_incluster_ipv6)
{
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_incluster_from(&cfg, "fd00::1", "6443", sa_dir), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://[fd00::1]:6443");
	k8s_config_free(cfg);
	ck_assert_int_eq(k8s_config_incluster_from(&cfg, "[fd00::2]", "6443", sa_dir), 0);
	ck_assert_str_eq(k8s_config_server(cfg), "https://[fd00::2]:6443");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_incluster_no_namespace_file)
{
	k8s_config *cfg = NULL;
	remove_file(sa_dir, "namespace");
	ck_assert_int_eq(k8s_config_incluster_from(&cfg, "h", "1", sa_dir), 0);
	ck_assert_str_eq(k8s_config_namespace(cfg), "default");
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_incluster_missing_files)
{
	k8s_config *cfg = NULL;
	remove_file(sa_dir, "ca.crt");
	assert_config_error(k8s_config_incluster_from(&cfg, "h", "1", sa_dir),
	                    "ca.crt", "cannot read");
	remove_file(sa_dir, "token");
	assert_config_error(k8s_config_incluster_from(&cfg, "h", "1", sa_dir),
	                    "/token", "cannot read");
	write_file(sa_dir, "token", " \n");
	write_file(sa_dir, "ca.crt", "-----BEGIN CERTIFICATE-----\n");
	assert_config_error(k8s_config_incluster_from(&cfg, "h", "1", sa_dir),
	                    "is empty", NULL);
	assert_config_error(k8s_config_incluster_from(&cfg, NULL, "1", sa_dir),
	                    "host", NULL);
	assert_config_error(k8s_config_incluster_from(&cfg, "h", "", sa_dir),
	                    "port", NULL);
}
END_TEST

START_TEST(test_incluster_env)
{
	k8s_config *cfg = (k8s_config *)1;
	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_config_error(k8s_config_incluster(&cfg), "KUBERNETES_SERVICE_HOST",
	                    "not running in a pod");
	ck_assert_ptr_null(cfg);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	unsetenv("KUBERNETES_SERVICE_PORT");
	assert_config_error(k8s_config_incluster(&cfg), "KUBERNETES_SERVICE_PORT", NULL);
	unsetenv("KUBERNETES_SERVICE_HOST");
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("kubeconfig");
	tcase_add_test(tc, test_current_context_token);
	tcase_add_test(tc, test_explicit_context_cert_files);
	tcase_add_test(tc, test_data_fields);
	tcase_add_test(tc, test_token_file_and_insecure);
	tcase_add_test(tc, test_anonymous_context);
	tcase_add_test(tc, test_dup);
	tcase_add_test(tc, test_kubeconfig_env);
	tcase_add_test(tc, test_home_default);
	tcase_add_test(tc, test_relative_paths);
	suite_add_tcase(s, tc);

	tc = tcase_create("broken");
	tcase_add_test(tc, test_missing_context);
	tcase_add_test(tc, test_no_current_context);
	tcase_add_test(tc, test_unknown_user);
	tcase_add_test(tc, test_unknown_cluster);
	tcase_add_test(tc, test_bad_base64);
	tcase_add_test(tc, test_not_yaml);
	tcase_add_test(tc, test_empty_file);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_cluster_without_server);
	tcase_add_test(tc, test_server_url_forms);
	tcase_add_test(tc, test_missing_referenced_file);
	tcase_add_test(tc, test_half_a_client_cert);
	tcase_add_test(tc, test_unsupported_auth);
	tcase_add_test(tc, test_wrong_types);
	tcase_add_test(tc, test_null_arguments);
	suite_add_tcase(s, tc);

	tc = tcase_create("merge");
	tcase_add_checked_fixture(tc, merge_setup, merge_teardown);
	tcase_add_test(tc, test_merge_first_file_wins);
	tcase_add_test(tc, test_merge_current_context);
	tcase_add_test(tc, test_merge_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("auth");
	tcase_add_test(tc, test_proxy_url);
	tcase_add_test(tc, test_exec_stanza);
	tcase_add_test(tc, test_exec_stanza_cluster_extension);
	tcase_add_test(tc, test_exec_stanza_broken);
	suite_add_tcase(s, tc);

	tc = tcase_create("incluster");
	tcase_add_checked_fixture(tc, sa_setup, sa_teardown);
	tcase_add_test(tc, test_incluster_ok);
	tcase_add_test(tc, test_incluster_ipv6);
	tcase_add_test(tc, test_incluster_no_namespace_file);
	tcase_add_test(tc, test_incluster_missing_files);
	tcase_add_test(tc, test_incluster_env);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
