/*
 * config.c - kubeconfig (clientcmd v1) and in-cluster configuration.
 *
 * Each kubeconfig file is parsed into a cJSON tree (yaml_json.c); a
 * KUBECONFIG list is merged with clientcmd's rules; one context is
 * resolved to its cluster and user, and every file it names is read now,
 * so that a k8s_config is a self-contained value: PEM data, token and
 * server URL in memory. The exceptions are the token file, which is also
 * remembered by path because projected tokens rotate (the client re-reads
 * it when it changes), and a credential plugin, which is parsed here
 * (exec_credential.c) and run by the client when it needs credentials.
 *
 * Every failure is ASB_ECONFIG with a message naming the file, the entry
 * and the problem; it never quotes a credential.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <curl/curl.h>
#include <mbedtls/base64.h>
#include <cjson/cJSON.h>
#include "config_internal.h"
#include "exec_credential.h"
#include "k8s/yaml.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* --- small helpers ------------------------------------------------------ */

int k8s__read_file(const char *path, k8s__blob *out)
{
	out->data = NULL;
	out->len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = fstat(fd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
	if (err) {
		close(fd);
		return -err;
	}
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			close(fd);
			return -ENOMEM;
		}
		if (len + 1 == cap) {
			if (cap > K8S_CONFIG_FILE_MAX) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			char *grown = realloc(buf, cap * 2);
			if (!grown)
				free(buf);
			buf = grown;
			cap *= 2;
			continue;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			free(buf);
			close(fd);
			return -err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	out->data = buf;
	out->len = len;
	return 0;
}

void k8s__blob_free(k8s__blob *b)
{
	if (b->data) {
		explicit_bzero(b->data, b->len);
		free(b->data);
	}
	b->data = NULL;
	b->len = 0;
}

void k8s__free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void k8s_config_free(k8s_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->origin);
	free(cfg->context);
	free(cfg->server);
	free(cfg->namespace);
	free(cfg->tls_server_name);
	k8s__blob_free(&cfg->ca);
	k8s__blob_free(&cfg->cert);
	k8s__blob_free(&cfg->key);
	k8s__free_secret(cfg->token);
	free(cfg->token_file);
	k8s__free_secret(cfg->proxy_url);
	k8s__exec_config_free(cfg->exec);
	free(cfg);
}

const char *k8s_config_server(const k8s_config *cfg)
{
	return cfg ? cfg->server : NULL;
}

const char *k8s_config_namespace(const k8s_config *cfg)
{
	return cfg ? cfg->namespace : NULL;
}

const char *k8s_config_context(const k8s_config *cfg)
{
	return cfg ? cfg->context : NULL;
}

static int oom(void)
{
	return asb_error_set(ASB_ENOMEM, 0, NULL, "config: out of memory");
}

static int dup_str(char **dst, const char *src)
{
	*dst = NULL;
	if (src && !(*dst = strdup(src)))
		return oom();
	return 0;
}

static int dup_blob(k8s__blob *dst, const k8s__blob *src)
{
	dst->data = NULL;
	dst->len = 0;
	if (!src->data)
		return 0;
	if (!(dst->data = malloc(src->len + 1)))
		return oom();
	memcpy(dst->data, src->data, src->len + 1);
	dst->len = src->len;
	return 0;
}

int k8s__config_dup(k8s_config **out, const k8s_config *cfg)
{
	k8s_config *c = calloc(1, sizeof(*c));
	*out = NULL;
	if (!c)
		return oom();
	c->insecure = cfg->insecure;
	if (dup_str(&c->origin, cfg->origin) || dup_str(&c->context, cfg->context) ||
	    dup_str(&c->server, cfg->server) || dup_str(&c->namespace, cfg->namespace) ||
	    dup_str(&c->tls_server_name, cfg->tls_server_name) ||
	    dup_blob(&c->ca, &cfg->ca) || dup_blob(&c->cert, &cfg->cert) ||
	    dup_blob(&c->key, &cfg->key) || dup_str(&c->token, cfg->token) ||
	    dup_str(&c->token_file, cfg->token_file) ||
	    dup_str(&c->proxy_url, cfg->proxy_url) ||
	    k8s__exec_config_dup(&c->exec, cfg->exec)) {
		k8s_config_free(c);
		return ASB_ENOMEM;
	}
	*out = c;
	return 0;
}

/* Removes leading and trailing whitespace in place (tokens, namespace files). */
static void trim(k8s__blob *b)
{
	size_t start = 0;
	while (b->len > 0 && strchr(" \t\r\n", b->data[b->len - 1]))
		b->data[--b->len] = '\0';
	while (start < b->len && strchr(" \t\r\n", b->data[start]))
		start++;
	memmove(b->data, b->data + start, b->len - start + 1);
	b->len -= start;
}

/* --- kubeconfig loading ------------------------------------------------- */

/*
 * One kubeconfig document of a load. Several documents are merged with
 * clientcmd's rules (k8s.io/client-go/tools/clientcmd/loader.go): for every
 * named map (clusters, users, contexts) the first file that defines a name
 * wins, whole entry and all; `current-context` comes from the first file
 * that sets one. Paths inside an entry stay relative to the file the entry
 * came from, which is why each document keeps its own directory.
 */
typedef struct {
	const char *origin;   /* the document's name in messages */
	char *dir;            /* directory relative paths start from, or NULL */
	cJSON *root;          /* the parsed document; NULL when the file is empty */
} kdoc;

/* What a load is working on. */
typedef struct {
	kdoc *docs;
	size_t ndocs;
	const char *origin;   /* every file, for messages about no one entry */
	k8s_config *cfg;
} loader;

/*
 * Reads the string `key` of a kubeconfig entry. Absent or null: *out NULL.
 * Any other non-string is an error (a YAML value such as `yes` or `0644`
 * that resolved to another type must be quoted).
 */
static int entry_str(const kdoc *d, const char *entry, const cJSON *obj,
                     const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: \"%s\" must be a string "
		                     "(quote it)", d->origin, entry, key);
	*out = v->valuestring;
	return 0;
}

/* `path` relative to the kubeconfig's directory; a new string. */
static char *resolve_path(const kdoc *d, const char *path)
{
	if (path[0] == '/' || !d->dir)
		return strdup(path);
	size_t n = strlen(d->dir) + strlen(path) + 2;
	char *full = malloc(n);
	if (full)
		snprintf(full, n, "%s/%s", d->dir, path);
	return full;
}

static int check_pem(const kdoc *d, const char *entry, const char *key,
                     const k8s__blob *b)
{
	if (b->data && !memmem(b->data, b->len, "-----BEGIN ", 11))
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: %s does not hold PEM data",
		                     d->origin, entry, key);
	return 0;
}

/*
 * Loads one credential or CA from `KEY-data` (base64, preferred as in
 * kubectl) or `KEY` (a file path) of `obj` into `out`.
 */
static int load_pem(const kdoc *d, const char *entry, const cJSON *obj,
                    const char *key, k8s__blob *out)
{
	char data_key[64];
	const char *b64, *file;
	int rc;

	snprintf(data_key, sizeof(data_key), "%s-data", key);
	if ((rc = entry_str(d, entry, obj, data_key, &b64)) ||
	    (rc = entry_str(d, entry, obj, key, &file)))
		return rc;

	if (b64 && b64[0]) {
		size_t slen = strlen(b64), need = 0;
		int mrc = mbedtls_base64_decode(NULL, 0, &need,
		                                (const unsigned char *)b64, slen);
		if (mrc == MBEDTLS_ERR_BASE64_INVALID_CHARACTER)
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: %s is not valid base64",
			                     d->origin, entry, data_key);
		if (!(out->data = malloc(need + 1)))
			return oom();
		mrc = mbedtls_base64_decode((unsigned char *)out->data, need + 1,
		                            &out->len, (const unsigned char *)b64, slen);
		if (mrc != 0 || out->len == 0) {
			k8s__blob_free(out);
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: %s is not valid base64",
			                     d->origin, entry, data_key);
		}
		out->data[out->len] = '\0';
		return check_pem(d, entry, data_key, out);
	}
	if (file && file[0]) {
		char *path = resolve_path(d, file);
		if (!path)
			return oom();
		int err = k8s__read_file(path, out);
		if (err) {
			rc = asb_error_set(ASB_ECONFIG, 0, NULL,
			                   "kubeconfig \"%s\": %s: cannot read %s \"%s\": %s",
			                   d->origin, entry, key, path, strerror(-err));
			free(path);
			return rc;
		}
		free(path);
		return check_pem(d, entry, key, out);
	}
	return 0;
}

/*
 * Finds the entry called `name` in the list `section` ("clusters", ...) of
 * the first document that defines it, and returns its `field` object
 * ("cluster", ...) and that document, or records an error.
 */
static int find_named(const loader *l, const char *section, const char *field,
                      const char *what, const char *name, const char *referrer,
                      const cJSON **out, const kdoc **from)
{
	*out = NULL;
	*from = NULL;
	for (size_t i = 0; i < l->ndocs; i++) {
		const kdoc *d = &l->docs[i];
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(d->root, section);
		const cJSON *item;
		if (list && !cJSON_IsNull(list) && !cJSON_IsArray(list))
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": \"%s\" must be a list",
			                     d->origin, section);
		cJSON_ArrayForEach(item, list) {
			const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "name");
			if (!cJSON_IsString(n) || strcmp(n->valuestring, name) != 0)
				continue;
			const cJSON *body = cJSON_GetObjectItemCaseSensitive(item, field);
			if (body && !cJSON_IsNull(body) && !cJSON_IsObject(body))
				return asb_error_set(ASB_ECONFIG, 0, NULL,
				                     "kubeconfig \"%s\": %s \"%s\": \"%s\" must "
				                     "be a mapping", d->origin, what, name, field);
			/* An entry without a body has none of the fields looked up
			 * later, and neither does the entry itself besides "name". */
			*out = body && !cJSON_IsNull(body) ? body : item;
			*from = d;
			return 0;
		}
	}
	if (referrer)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s names %s \"%s\", which is "
		                     "not defined in \"%s\"", l->origin, referrer,
		                     what, name, section);
	return asb_error_set(ASB_ECONFIG, 0, NULL,
	                     "kubeconfig \"%s\": %s \"%s\" not found in \"%s\"",
	                     l->origin, what, name, section);
}

/*
 * Parses `url` with curl's URL API, as the client will when it connects
 * (`flags`: CURLU_DEFAULT_SCHEME or 0), into *u (to curl_url_cleanup(),
 * even on failure) and gives its scheme, lowercased, in *scheme (to
 * curl_free()). Returns CURLUE_OK or curl's reason.
 */
static CURLUcode parse_url(const char *url, unsigned flags, CURLU **u,
                           char **scheme)
{
	*scheme = NULL;
	if (!(*u = curl_url()))
		return CURLUE_OUT_OF_MEMORY;
	CURLUcode uc = curl_url_set(*u, CURLUPART_URL, url,
	                            flags | CURLU_NON_SUPPORT_SCHEME);
	if (uc == CURLUE_OK)
		uc = curl_url_get(*u, CURLUPART_SCHEME, scheme, 0);
	return uc;
}

static int set_server(const kdoc *d, k8s_config *cfg, const char *entry,
                      const char *server)
{
	if (!server || !server[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s has no server", d->origin,
		                     entry);
	/* Like client-go, a bare host:port means https (curl's default). */
	CURLU *u;
	char *scheme, *url = NULL;
	int rc = 0;
	CURLUcode uc = parse_url(server, CURLU_DEFAULT_SCHEME, &u, &scheme);
	if (uc == CURLUE_OUT_OF_MEMORY)
		rc = oom();
	else if (uc != CURLUE_OK ||
	         (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0))
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "kubeconfig \"%s\": %s: server \"%s\" is not an "
		                   "http(s) URL", d->origin, entry, server);
	else if (curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK ||
	         !(cfg->server = strdup(url)))
		rc = oom();
	else {
		/* Paths are appended to it: no trailing '/' (curl adds one). */
		size_t len = strlen(cfg->server);
		while (len > 0 && cfg->server[len - 1] == '/')
			cfg->server[--len] = '\0';
	}
	curl_free(url);
	curl_free(scheme);
	curl_url_cleanup(u);
	return rc;
}

/* proxy-url: the schemes client-go accepts (http, https, socks5). The URL
 * may carry proxy credentials, so messages never quote it. */
static int set_proxy(const kdoc *d, k8s_config *cfg, const char *entry,
                     const char *proxy)
{
	if (!proxy || !proxy[0])
		return 0;
	CURLU *u;
	char *scheme;
	CURLUcode uc = parse_url(proxy, 0, &u, &scheme);
	bool ok = uc == CURLUE_OK &&
	          (!strcmp(scheme, "http") || !strcmp(scheme, "https") ||
	           !strcmp(scheme, "socks5"));
	curl_free(scheme);
	curl_url_cleanup(u);
	if (uc == CURLUE_OUT_OF_MEMORY)
		return oom();
	if (!ok)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: proxy-url must be an http://, "
		                     "https:// or socks5:// URL", d->origin, entry);
	return dup_str(&cfg->proxy_url, proxy);
}

/*
 * The cluster as ExecCredential.spec.cluster describes it, for plugins that
 * ask for it with provideClusterInfo; a new JSON string, or NULL (ENOMEM).
 */
static char *cluster_info_json(const k8s_config *cfg, const cJSON *cluster)
{
	cJSON *o = cJSON_CreateObject();
	char *ca = NULL, *json = NULL;
	int ok = o && cJSON_AddStringToObject(o, "server", cfg->server);
	if (ok && cfg->tls_server_name)
		ok = cJSON_AddStringToObject(o, "tls-server-name", cfg->tls_server_name) != NULL;
	if (ok && cfg->insecure)
		ok = cJSON_AddTrueToObject(o, "insecure-skip-tls-verify") != NULL;
	if (ok && cfg->ca.data) {
		size_t need = 0;
		mbedtls_base64_encode(NULL, 0, &need, (const unsigned char *)cfg->ca.data,
		                      cfg->ca.len);
		ok = (ca = malloc(need)) &&
		     mbedtls_base64_encode((unsigned char *)ca, need, &need,
		                           (const unsigned char *)cfg->ca.data,
		                           cfg->ca.len) == 0 &&
		     cJSON_AddStringToObject(o, "certificate-authority-data", ca);
	}
	if (ok && cfg->proxy_url)
		ok = cJSON_AddStringToObject(o, "proxy-url", cfg->proxy_url) != NULL;
	/* The plugin's per-cluster settings live in the cluster's extension
	 * named client.authentication.k8s.io/exec. */
	const cJSON *exts = cJSON_GetObjectItemCaseSensitive(cluster, "extensions"), *x;
	if (!cJSON_IsArray(exts))
		exts = NULL;
	cJSON_ArrayForEach(x, exts) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(x, "name");
		const cJSON *ext = cJSON_GetObjectItemCaseSensitive(x, "extension");
		if (ok && ext && cJSON_IsString(n) &&
		    strcmp(n->valuestring, "client.authentication.k8s.io/exec") == 0) {
			cJSON *copy = cJSON_Duplicate(ext, 1);
			ok = copy && cJSON_AddItemToObject(o, "config", copy);
			break;
		}
	}
	if (ok)
		json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	free(ca);
	return json;
}

static int load_cluster(loader *l, const kdoc *d, const cJSON *cluster,
                        const char *name, char **cluster_json)
{
	char entry[300];
	const char *server, *sni, *proxy;
	int rc;

	snprintf(entry, sizeof(entry), "cluster \"%s\"", name);
	if ((rc = entry_str(d, entry, cluster, "server", &server)) ||
	    (rc = set_server(d, l->cfg, entry, server)) ||
	    (rc = entry_str(d, entry, cluster, "tls-server-name", &sni)) ||
	    (rc = dup_str(&l->cfg->tls_server_name, sni && sni[0] ? sni : NULL)) ||
	    (rc = entry_str(d, entry, cluster, "proxy-url", &proxy)) ||
	    (rc = set_proxy(d, l->cfg, entry, proxy)))
		return rc;

	const cJSON *insecure = cJSON_GetObjectItemCaseSensitive(cluster,
	                                                         "insecure-skip-tls-verify");
	if (insecure && !cJSON_IsBool(insecure) && !cJSON_IsNull(insecure))
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: insecure-skip-tls-verify "
		                     "must be true or false", d->origin, entry);
	l->cfg->insecure = cJSON_IsTrue(insecure);
	if ((rc = load_pem(d, entry, cluster, "certificate-authority", &l->cfg->ca)))
		return rc;
	if (!(*cluster_json = cluster_info_json(l->cfg, cluster)))
		return oom();
	return 0;
}

static int load_user(loader *l, const kdoc *d, const cJSON *user,
                     const char *name, const char *cluster_json)
{
	char entry[300];
	const char *token, *token_file;
	int rc;

	snprintf(entry, sizeof(entry), "user \"%s\"", name);
	if ((rc = load_pem(d, entry, user, "client-certificate", &l->cfg->cert)) ||
	    (rc = load_pem(d, entry, user, "client-key", &l->cfg->key)) ||
	    (rc = entry_str(d, entry, user, "token", &token)) ||
	    (rc = entry_str(d, entry, user, "tokenFile", &token_file)))
		return rc;
	if (!l->cfg->cert.data != !l->cfg->key.data)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s has a client %s but no "
		                     "client %s", d->origin, entry,
		                     l->cfg->cert.data ? "certificate" : "key",
		                     l->cfg->cert.data ? "key" : "certificate");

	if (token_file && token_file[0]) {
		/* As in client-go, the file wins over an inline token: it is
		 * the one kept fresh. */
		k8s__blob b;
		if (!(l->cfg->token_file = resolve_path(d, token_file)))
			return oom();
		int err = k8s__read_file(l->cfg->token_file, &b);
		if (err)
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: cannot read tokenFile "
			                     "\"%s\": %s", d->origin, entry,
			                     l->cfg->token_file, strerror(-err));
		trim(&b);
		l->cfg->token = b.data;
		if (b.len == 0)
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: tokenFile \"%s\" is "
			                     "empty", d->origin, entry, l->cfg->token_file);
	} else if (token && token[0]) {
		if ((rc = dup_str(&l->cfg->token, token)))
			return rc;
	}

	const cJSON *exec = cJSON_GetObjectItemCaseSensitive(user, "exec");
	if (exec && !cJSON_IsNull(exec)) {
		/* Validated even when static credentials make it unused, as
		 * clientcmd does: a broken stanza is a broken kubeconfig. */
		char label[600];
		snprintf(label, sizeof(label), "kubeconfig \"%s\": %s", d->origin, entry);
		if ((rc = k8s__exec_config_parse(&l->cfg->exec, exec, label, d->dir,
		                                 cluster_json)))
			return rc;
	}

	/* Auth providers and basic auth are not run by libk8s: say so rather
	 * than let the server answer 401 to an anonymous request. */
	if (!l->cfg->token && !l->cfg->cert.data && !l->cfg->exec) {
		const char *plugin =
			cJSON_GetObjectItemCaseSensitive(user, "auth-provider") ? "auth-provider"
			: cJSON_GetObjectItemCaseSensitive(user, "username") ? "username/password"
			: NULL;
		if (plugin)
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s authenticates with %s, "
			                     "which libk8s does not support (use a token, "
			                     "a client certificate or an exec plugin)",
			                     d->origin, entry, plugin);
	}
	return 0;
}

/* The first non-empty current-context of the documents, or NULL. */
static int current_context(const loader *l, const char **out)
{
	*out = NULL;
	for (size_t i = 0; i < l->ndocs && !*out; i++) {
		const char *v;
		int rc = entry_str(&l->docs[i], "top level", l->docs[i].root,
		                   "current-context", &v);
		if (rc)
			return rc;
		if (v && v[0])
			*out = v;
	}
	return 0;
}

static int load_tree(loader *l, const char *context)
{
	const cJSON *ctx, *cluster, *user;
	const kdoc *ctx_doc, *cluster_doc, *user_doc;
	const char *cluster_name, *user_name, *ns;
	char entry[300];
	char *cluster_json = NULL;
	size_t present = 0;
	int rc;

	for (size_t i = 0; i < l->ndocs; i++) {
		const cJSON *root = l->docs[i].root;
		if (!root || cJSON_IsNull(root))
			continue;
		if (!cJSON_IsObject(root))
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\" is not a kubeconfig (the "
			                     "document is not a mapping)", l->docs[i].origin);
		present++;
	}
	if (present == 0)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\" is empty", l->origin);
	if (!context || !context[0]) {
		if ((rc = current_context(l, &context)))
			return rc;
		if (!context || !context[0])
			return asb_error_set(ASB_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": no current-context is set "
			                     "and no context was given", l->origin);
	}
	if ((rc = dup_str(&l->cfg->context, context)) ||
	    (rc = find_named(l, "contexts", "context", "context", context, NULL,
	                     &ctx, &ctx_doc)))
		return rc;

	snprintf(entry, sizeof(entry), "context \"%s\"", context);
	if ((rc = entry_str(ctx_doc, entry, ctx, "cluster", &cluster_name)) ||
	    (rc = entry_str(ctx_doc, entry, ctx, "user", &user_name)) ||
	    (rc = entry_str(ctx_doc, entry, ctx, "namespace", &ns)))
		return rc;
	if (!cluster_name || !cluster_name[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s names no cluster",
		                     ctx_doc->origin, entry);
	if ((rc = dup_str(&l->cfg->namespace, ns && ns[0] ? ns : "default")) ||
	    (rc = find_named(l, "clusters", "cluster", "cluster", cluster_name,
	                     entry, &cluster, &cluster_doc)) ||
	    (rc = load_cluster(l, cluster_doc, cluster, cluster_name, &cluster_json)))
		goto out;
	/* A context without a user is legal: anonymous access. */
	if (user_name && user_name[0]) {
		if ((rc = find_named(l, "users", "user", "user", user_name, entry,
		                     &user, &user_doc)) ||
		    (rc = load_user(l, user_doc, user, user_name, cluster_json)))
			goto out;
	}
out:
	free(cluster_json);
	return rc;
}

/* Parses one document into `d`; `origin` must outlive the load. */
static int parse_doc(kdoc *d, const char *yaml, size_t len, const char *origin,
                     int origin_is_path)
{
	char label[512];
	int rc;

	memset(d, 0, sizeof(*d));
	d->origin = origin;
	snprintf(label, sizeof(label), "kubeconfig \"%s\"", origin);
	rc = k8s_yaml_to_json(&d->root, yaml, len, label, 0);
	if (rc == ASB_EDECODE)
		return asb_error_set(ASB_ECONFIG, 0, NULL, "%s",
		                     asb_error_last()->message);
	if (rc)
		return rc;
	if (origin_is_path) {
		const char *slash = strrchr(origin, '/');
		if (slash && !(d->dir = strndup(origin, slash == origin ? 1
		                                : (size_t)(slash - origin))))
			return oom();
	}
	return 0;
}

/* Resolves `context` over the parsed documents into *out. */
static int load_docs(k8s_config **out, kdoc *docs, size_t ndocs,
                     const char *origin, const char *context)
{
	loader l = { .docs = docs, .ndocs = ndocs, .origin = origin };
	int rc;

	if (!(l.cfg = calloc(1, sizeof(*l.cfg))))
		return oom();
	if ((rc = dup_str(&l.cfg->origin, origin)) == 0)
		rc = load_tree(&l, context);
	if (rc) {
		k8s_config_free(l.cfg);
		return rc;
	}
	*out = l.cfg;
	return 0;
}

static void free_docs(kdoc *docs, size_t n)
{
	for (size_t i = 0; docs && i < n; i++) {
		cJSON_Delete(docs[i].root);
		free(docs[i].dir);
	}
	free(docs);
}

int k8s_config_load_yaml(k8s_config **out, const char *yaml, size_t len,
                         const char *context, const char *origin)
{
	kdoc d;
	int rc;

	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!yaml && len)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: NULL document");
	rc = parse_doc(&d, yaml, len, origin ? origin : "<memory>", origin != NULL);
	if (rc == 0)
		rc = load_docs(out, &d, 1, d.origin, context);
	cJSON_Delete(d.root);
	free(d.dir);
	return rc;
}

/*
 * Reads and parses the files; with `skip_missing` (a KUBECONFIG list) a
 * file that does not exist is left out, as kubectl does. `*joined`
 * receives the names of the files read, colon-separated.
 */
static int read_docs(const char *const *paths, size_t n, int skip_missing,
                     kdoc **docs_out, size_t *ndocs, char **joined)
{
	kdoc *docs = calloc(n ? n : 1, sizeof(*docs));
	size_t nd = 0, jlen = 1;
	int rc = 0;

	*docs_out = NULL;
	*ndocs = 0;
	*joined = NULL;
	if (!docs)
		return oom();
	for (size_t i = 0; i < n; i++)
		jlen += strlen(paths[i]) + 1;
	if (!(*joined = calloc(1, jlen))) {
		free(docs);
		return oom();
	}
	for (size_t i = 0; i < n && !rc; i++) {
		k8s__blob file;
		int err = k8s__read_file(paths[i], &file);
		if (err == -ENOENT && skip_missing)
			continue;
		if (err) {
			rc = asb_error_set(err == -ENOMEM ? ASB_ENOMEM : ASB_ECONFIG, 0, NULL,
			                   "kubeconfig \"%s\": cannot read: %s", paths[i],
			                   strerror(-err));
			break;
		}
		rc = parse_doc(&docs[nd], file.data, file.len, paths[i], 1);
		nd++;  /* parse_doc leaves a document safe to free either way */
		k8s__blob_free(&file);
		if (**joined)
			strcat(*joined, ":");
		strcat(*joined, paths[i]);
	}
	if (rc == 0 && nd == 0) {
		/* Every file is missing: name them all. */
		for (size_t i = 0; i < n; i++) {
			if (i)
				strcat(*joined, ":");
			strcat(*joined, paths[i]);
		}
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "kubeconfig \"%s\": %s", *joined,
		                   n == 1 ? "cannot read: No such file or directory"
		                          : "none of these files exists");
	}
	if (rc) {
		free_docs(docs, nd);
		free(*joined);
		*joined = NULL;
		return rc;
	}
	*docs_out = docs;
	*ndocs = nd;
	return 0;
}

static int load_paths(k8s_config **out, const char *const *paths, size_t n,
                      int skip_missing, const char *context)
{
	kdoc *docs;
	size_t nd;
	char *joined;
	int rc = read_docs(paths, n, skip_missing, &docs, &nd, &joined);
	if (rc)
		return rc;
	rc = load_docs(out, docs, nd, joined, context);
	free_docs(docs, nd);
	free(joined);
	return rc;
}

int k8s_config_load_files(k8s_config **out, const char *const *paths,
                          size_t npaths, const char *context)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!paths || npaths == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: no kubeconfig paths");
	for (size_t i = 0; i < npaths; i++)
		if (!paths[i] || !paths[i][0])
			return asb_error_set(ASB_EINVAL, 0, NULL,
			                     "config: kubeconfig path %zu is empty", i);
	return load_paths(out, paths, npaths, 1, context);
}

/* Splits $KUBECONFIG on ':' (empty entries dropped) into a new vector. */
static int split_env(const char *env, char ***paths, size_t *n)
{
	size_t cap = 1;
	for (const char *p = env; *p; p++)
		cap += *p == ':';
	*n = 0;
	if (!(*paths = calloc(cap, sizeof(char *))))
		return oom();
	for (const char *p = env; *p;) {
		size_t len = strcspn(p, ":");
		if (len && !((*paths)[(*n)++] = strndup(p, len)))
			return oom();
		p += len;
		if (*p == ':')
			p++;
	}
	return 0;
}

int k8s_config_load(k8s_config **out, const char *path, const char *context)
{
	int rc;

	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (path && path[0])  /* like kubectl --kubeconfig: that file only */
		return load_paths(out, &path, 1, 0, context);

	const char *env = getenv("KUBECONFIG");
	if (env && env[strspn(env, ":")]) {
		char **paths = NULL;
		size_t n = 0;
		if ((rc = split_env(env, &paths, &n)) == 0)
			rc = load_paths(out, (const char *const *)paths, n, 1, context);
		for (size_t i = 0; i < n; i++)
			free(paths[i]);
		free(paths);
		return rc;
	}
	const char *home = getenv("HOME");
	if (!home || !home[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "kubeconfig: neither KUBECONFIG nor HOME is set");
	size_t n = strlen(home) + sizeof("/.kube/config");
	char *def = malloc(n);
	if (!def)
		return oom();
	snprintf(def, n, "%s/.kube/config", home);
	const char *p = def;
	rc = load_paths(out, &p, 1, 0, context);
	free(def);
	return rc;
}

/* --- in-cluster ---------------------------------------------------------- */

static int read_sa_file(const char *dir, const char *name, k8s__blob *out,
                        char **path_out)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *path = malloc(n);
	if (!path)
		return oom();
	snprintf(path, n, "%s/%s", dir, name);
	int err = k8s__read_file(path, out);
	if (err) {
		int rc = asb_error_set(err == -ENOMEM ? ASB_ENOMEM : ASB_ECONFIG, 0, NULL,
		                       "in-cluster config: cannot read \"%s\": %s",
		                       path, strerror(-err));
		free(path);
		return rc;
	}
	if (path_out)
		*path_out = path;
	else
		free(path);
	return 0;
}

int k8s_config_incluster_from(k8s_config **out, const char *host,
                              const char *port, const char *sa_dir)
{
	k8s__blob ns, token;
	int rc;

	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!host || !host[0] || !port || !port[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "in-cluster config: no API server %s (not running "
		                     "in a pod?)", !host || !host[0] ? "host" : "port");
	if (!sa_dir || !sa_dir[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "in-cluster config: no service-account directory");

	k8s_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return oom();
	/* An IPv6 literal must be bracketed in a URL. */
	int v6 = strchr(host, ':') && host[0] != '[';
	size_t n = strlen(host) + strlen(port) + sizeof("https://[]:");
	if (!(cfg->server = malloc(n))) {
		rc = oom();
		goto fail;
	}
	snprintf(cfg->server, n, "https://%s%s%s:%s", v6 ? "[" : "", host,
	         v6 ? "]" : "", port);

	if ((rc = dup_str(&cfg->origin, "in-cluster")) ||
	    (rc = dup_str(&cfg->context, "")) ||
	    (rc = read_sa_file(sa_dir, "token", &token, &cfg->token_file)))
		goto fail;
	trim(&token);
	cfg->token = token.data;
	if ((rc = read_sa_file(sa_dir, "ca.crt", &cfg->ca, NULL)))
		goto fail;
	if (token.len == 0) {
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "in-cluster config: token file \"%s\" is empty",
		                   cfg->token_file);
		goto fail;
	}
	if (!memmem(cfg->ca.data, cfg->ca.len, "-----BEGIN ", 11)) {
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "in-cluster config: \"%s/ca.crt\" does not hold PEM "
		                   "data", sa_dir);
		goto fail;
	}
	/* The namespace file is optional (older clusters, custom mounts). */
	size_t plen = strlen(sa_dir) + sizeof("/namespace");
	char *ns_path = malloc(plen);
	if (!ns_path) {
		rc = oom();
		goto fail;
	}
	snprintf(ns_path, plen, "%s/namespace", sa_dir);
	if (k8s__read_file(ns_path, &ns) == 0) {
		trim(&ns);
		if (ns.len > 0) {
			cfg->namespace = ns.data;
			ns.data = NULL;
		}
		k8s__blob_free(&ns);
	}
	free(ns_path);
	if (!cfg->namespace && (rc = dup_str(&cfg->namespace, "default")))
		goto fail;
	*out = cfg;
	return 0;
fail:
	k8s_config_free(cfg);
	return rc;
}

int k8s_config_incluster(k8s_config **out)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");

	if (out)
		*out = NULL;
	if (!host || !host[0] || !port || !port[0])
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "in-cluster config: %s is not set (not running in "
		                     "a pod?)", !host || !host[0]
		                     ? "KUBERNETES_SERVICE_HOST" : "KUBERNETES_SERVICE_PORT");
	return k8s_config_incluster_from(out, host, port, SA_DIR);
}
