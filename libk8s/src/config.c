/*
 * config.c - kubeconfig (clientcmd v1) and in-cluster configuration.
 *
 * A kubeconfig is parsed into a cJSON tree (yaml_json.c), one context is
 * resolved to its cluster and user, and every file it names is read now,
 * so that a k8s_config is a self-contained value: PEM data, token and
 * server URL in memory. The exception is the token file, which is also
 * remembered by path because projected tokens rotate (the client re-reads
 * it when it changes).
 *
 * Every failure is K8S_ECONFIG with a message naming the file, the entry
 * and the problem; it never quotes a credential.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <mbedtls/base64.h>
#include <cjson/cJSON.h>
#include "config_internal.h"
#include "yaml_json.h"

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

static void free_secret(char *s)
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
	free_secret(cfg->token);
	free(cfg->token_file);
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
	return k8s_error_set(K8S_ENOMEM, 0, NULL, "config: out of memory");
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
	    dup_str(&c->token_file, cfg->token_file)) {
		k8s_config_free(c);
		return K8S_ENOMEM;
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

/* What a load is working on, for messages and relative paths. */
typedef struct {
	const char *origin;   /* the kubeconfig's name in messages */
	char *dir;            /* directory relative paths start from, or NULL */
	k8s_config *cfg;
} loader;

/*
 * Reads the string `key` of a kubeconfig entry. Absent or null: *out NULL.
 * Any other non-string is an error (a YAML value such as `yes` or `0644`
 * that resolved to another type must be quoted).
 */
static int entry_str(const loader *l, const char *entry, const cJSON *obj,
                     const char *key, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	*out = NULL;
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: \"%s\" must be a string "
		                     "(quote it)", l->origin, entry, key);
	*out = v->valuestring;
	return 0;
}

/* `path` relative to the kubeconfig's directory; a new string. */
static char *resolve_path(const loader *l, const char *path)
{
	if (path[0] == '/' || !l->dir)
		return strdup(path);
	size_t n = strlen(l->dir) + strlen(path) + 2;
	char *full = malloc(n);
	if (full)
		snprintf(full, n, "%s/%s", l->dir, path);
	return full;
}

static int check_pem(const loader *l, const char *entry, const char *key,
                     const k8s__blob *b)
{
	if (b->data && !memmem(b->data, b->len, "-----BEGIN ", 11))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: %s does not hold PEM data",
		                     l->origin, entry, key);
	return 0;
}

/*
 * Loads one credential or CA from `KEY-data` (base64, preferred as in
 * kubectl) or `KEY` (a file path) of `obj` into `out`.
 */
static int load_pem(const loader *l, const char *entry, const cJSON *obj,
                    const char *key, k8s__blob *out)
{
	char data_key[64];
	const char *b64, *file;
	int rc;

	snprintf(data_key, sizeof(data_key), "%s-data", key);
	if ((rc = entry_str(l, entry, obj, data_key, &b64)) ||
	    (rc = entry_str(l, entry, obj, key, &file)))
		return rc;

	if (b64 && b64[0]) {
		size_t slen = strlen(b64), need = 0;
		int mrc = mbedtls_base64_decode(NULL, 0, &need,
		                                (const unsigned char *)b64, slen);
		if (mrc == MBEDTLS_ERR_BASE64_INVALID_CHARACTER)
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: %s is not valid base64",
			                     l->origin, entry, data_key);
		if (!(out->data = malloc(need + 1)))
			return oom();
		mrc = mbedtls_base64_decode((unsigned char *)out->data, need + 1,
		                            &out->len, (const unsigned char *)b64, slen);
		if (mrc != 0 || out->len == 0) {
			k8s__blob_free(out);
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: %s is not valid base64",
			                     l->origin, entry, data_key);
		}
		out->data[out->len] = '\0';
		return check_pem(l, entry, data_key, out);
	}
	if (file && file[0]) {
		char *path = resolve_path(l, file);
		if (!path)
			return oom();
		int err = k8s__read_file(path, out);
		if (err) {
			rc = k8s_error_set(K8S_ECONFIG, 0, NULL,
			                   "kubeconfig \"%s\": %s: cannot read %s \"%s\": %s",
			                   l->origin, entry, key, path, strerror(-err));
			free(path);
			return rc;
		}
		free(path);
		return check_pem(l, entry, key, out);
	}
	return 0;
}

/*
 * Finds the entry called `name` in the list `section` ("clusters", ...)
 * and returns its `field` object ("cluster", ...), or records an error.
 */
static int find_named(const loader *l, const cJSON *root, const char *section,
                      const char *field, const char *what, const char *name,
                      const char *referrer, const cJSON **out)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, section);
	const cJSON *item;

	*out = NULL;
	if (list && !cJSON_IsNull(list) && !cJSON_IsArray(list))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": \"%s\" must be a list",
		                     l->origin, section);
	cJSON_ArrayForEach(item, list) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "name");
		if (!cJSON_IsString(n) || strcmp(n->valuestring, name) != 0)
			continue;
		const cJSON *body = cJSON_GetObjectItemCaseSensitive(item, field);
		if (body && !cJSON_IsNull(body) && !cJSON_IsObject(body))
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s \"%s\": \"%s\" must "
			                     "be a mapping", l->origin, what, name, field);
		/* An entry without a body has none of the fields looked up
		 * later, and neither does the entry itself besides "name". */
		*out = body && !cJSON_IsNull(body) ? body : item;
		return 0;
	}
	if (referrer)
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s names %s \"%s\", which is "
		                     "not defined in \"%s\"", l->origin, referrer,
		                     what, name, section);
	return k8s_error_set(K8S_ECONFIG, 0, NULL,
	                     "kubeconfig \"%s\": %s \"%s\" not found in \"%s\"",
	                     l->origin, what, name, section);
}

static int set_server(const loader *l, const char *entry, const char *server)
{
	if (!server || !server[0])
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s has no server", l->origin,
		                     entry);
	const char *scheme_end = strstr(server, "://");
	if (scheme_end && strncmp(server, "https://", 8) != 0 &&
	    strncmp(server, "http://", 7) != 0)
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: server \"%s\" is not an "
		                     "http(s) URL", l->origin, entry, server);
	/* Like client-go, a bare host:port means https. */
	size_t n = strlen(server) + sizeof("https://");
	char *url = malloc(n);
	if (!url)
		return oom();
	snprintf(url, n, "%s%s", scheme_end ? "" : "https://", server);
	size_t len = strlen(url);
	while (len > 0 && url[len - 1] == '/')
		url[--len] = '\0';
	l->cfg->server = url;
	return 0;
}

static int load_cluster(loader *l, const cJSON *cluster, const char *name)
{
	char entry[300];
	const char *server, *sni;
	int rc;

	snprintf(entry, sizeof(entry), "cluster \"%s\"", name);
	if ((rc = entry_str(l, entry, cluster, "server", &server)) ||
	    (rc = set_server(l, entry, server)) ||
	    (rc = entry_str(l, entry, cluster, "tls-server-name", &sni)) ||
	    (rc = dup_str(&l->cfg->tls_server_name, sni && sni[0] ? sni : NULL)))
		return rc;

	const cJSON *insecure = cJSON_GetObjectItemCaseSensitive(cluster,
	                                                         "insecure-skip-tls-verify");
	if (insecure && !cJSON_IsBool(insecure) && !cJSON_IsNull(insecure))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s: insecure-skip-tls-verify "
		                     "must be true or false", l->origin, entry);
	l->cfg->insecure = cJSON_IsTrue(insecure);
	return load_pem(l, entry, cluster, "certificate-authority", &l->cfg->ca);
}

static int load_user(loader *l, const cJSON *user, const char *name)
{
	char entry[300];
	const char *token, *token_file;
	int rc;

	snprintf(entry, sizeof(entry), "user \"%s\"", name);
	if ((rc = load_pem(l, entry, user, "client-certificate", &l->cfg->cert)) ||
	    (rc = load_pem(l, entry, user, "client-key", &l->cfg->key)) ||
	    (rc = entry_str(l, entry, user, "token", &token)) ||
	    (rc = entry_str(l, entry, user, "tokenFile", &token_file)))
		return rc;
	if (!l->cfg->cert.data != !l->cfg->key.data)
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s has a client %s but no "
		                     "client %s", l->origin, entry,
		                     l->cfg->cert.data ? "certificate" : "key",
		                     l->cfg->cert.data ? "key" : "certificate");

	if (token_file && token_file[0]) {
		/* As in client-go, the file wins over an inline token: it is
		 * the one kept fresh. */
		k8s__blob b;
		if (!(l->cfg->token_file = resolve_path(l, token_file)))
			return oom();
		int err = k8s__read_file(l->cfg->token_file, &b);
		if (err)
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: cannot read tokenFile "
			                     "\"%s\": %s", l->origin, entry,
			                     l->cfg->token_file, strerror(-err));
		trim(&b);
		l->cfg->token = b.data;
		if (b.len == 0)
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s: tokenFile \"%s\" is "
			                     "empty", l->origin, entry, l->cfg->token_file);
	} else if (token && token[0]) {
		if ((rc = dup_str(&l->cfg->token, token)))
			return rc;
	}

	/* Credential plugins are not run by libk8s: say so rather than let
	 * the server answer 401 to an anonymous request. */
	if (!l->cfg->token && !l->cfg->cert.data) {
		const char *plugin = cJSON_GetObjectItemCaseSensitive(user, "exec") ? "exec"
			: cJSON_GetObjectItemCaseSensitive(user, "auth-provider") ? "auth-provider"
			: cJSON_GetObjectItemCaseSensitive(user, "username") ? "username/password"
			: NULL;
		if (plugin)
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": %s authenticates with %s, "
			                     "which libk8s does not support (use a token or "
			                     "a client certificate)", l->origin, entry, plugin);
	}
	return 0;
}

static int load_tree(loader *l, const cJSON *root, const char *context)
{
	const cJSON *ctx, *cluster, *user;
	const char *cluster_name, *user_name, *ns;
	char entry[300];
	int rc;

	if (cJSON_IsNull(root))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\" is empty", l->origin);
	if (!cJSON_IsObject(root))
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\" is not a kubeconfig (the "
		                     "document is not a mapping)", l->origin);
	if (!context || !context[0]) {
		if ((rc = entry_str(l, "top level", root, "current-context", &context)))
			return rc;
		if (!context || !context[0])
			return k8s_error_set(K8S_ECONFIG, 0, NULL,
			                     "kubeconfig \"%s\": no current-context is set "
			                     "and no context was given", l->origin);
	}
	if ((rc = dup_str(&l->cfg->context, context)) ||
	    (rc = find_named(l, root, "contexts", "context", "context", context,
	                     NULL, &ctx)))
		return rc;

	snprintf(entry, sizeof(entry), "context \"%s\"", context);
	if ((rc = entry_str(l, entry, ctx, "cluster", &cluster_name)) ||
	    (rc = entry_str(l, entry, ctx, "user", &user_name)) ||
	    (rc = entry_str(l, entry, ctx, "namespace", &ns)))
		return rc;
	if (!cluster_name || !cluster_name[0])
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig \"%s\": %s names no cluster",
		                     l->origin, entry);
	if ((rc = dup_str(&l->cfg->namespace, ns && ns[0] ? ns : "default")) ||
	    (rc = find_named(l, root, "clusters", "cluster", "cluster",
	                     cluster_name, entry, &cluster)) ||
	    (rc = load_cluster(l, cluster, cluster_name)))
		return rc;
	/* A context without a user is legal: anonymous access. */
	if (user_name && user_name[0]) {
		if ((rc = find_named(l, root, "users", "user", "user", user_name,
		                     entry, &user)) ||
		    (rc = load_user(l, user, user_name)))
			return rc;
	}
	return 0;
}

int k8s_config_load_yaml(k8s_config **out, const char *yaml, size_t len,
                         const char *context, const char *origin)
{
	loader l = { .origin = origin ? origin : "<memory>" };
	char label[512];
	cJSON *root = NULL;
	int rc;

	if (!out)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!yaml && len)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "config: NULL document");

	snprintf(label, sizeof(label), "kubeconfig \"%s\"", l.origin);
	rc = k8s__yaml_to_json(&root, yaml, len, label);
	if (rc == K8S_EDECODE)
		return k8s_error_set(K8S_ECONFIG, 0, NULL, "%s",
		                     k8s_error_last()->message);
	if (rc)
		return rc;

	if (origin) {
		const char *slash = strrchr(origin, '/');
		if (slash && !(l.dir = strndup(origin, slash == origin ? 1 : (size_t)(slash - origin)))) {
			cJSON_Delete(root);
			return oom();
		}
	}
	l.cfg = calloc(1, sizeof(*l.cfg));
	if (!l.cfg)
		rc = oom();
	else if ((rc = dup_str(&l.cfg->origin, l.origin)) == 0)
		rc = load_tree(&l, root, context);
	cJSON_Delete(root);
	free(l.dir);
	if (rc) {
		k8s_config_free(l.cfg);
		return rc;
	}
	*out = l.cfg;
	return 0;
}

/* KUBECONFIG's first non-empty entry, else $HOME/.kube/config; a new string. */
static int default_path(char **out)
{
	const char *env = getenv("KUBECONFIG");
	*out = NULL;
	if (env) {
		/* Merging several files is not supported yet: the first wins. */
		while (*env == ':')
			env++;
		if (*env) {
			size_t n = strcspn(env, ":");
			if (!(*out = strndup(env, n)))
				return oom();
			return 0;
		}
	}
	const char *home = getenv("HOME");
	if (!home || !home[0])
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "kubeconfig: neither KUBECONFIG nor HOME is set");
	size_t n = strlen(home) + sizeof("/.kube/config");
	if (!(*out = malloc(n)))
		return oom();
	snprintf(*out, n, "%s/.kube/config", home);
	return 0;
}

int k8s_config_load(k8s_config **out, const char *path, const char *context)
{
	char *chosen = NULL;
	k8s__blob file;
	int rc;

	if (!out)
		return k8s_error_set(K8S_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!path || !path[0]) {
		if ((rc = default_path(&chosen)))
			return rc;
		path = chosen;
	}
	int err = k8s__read_file(path, &file);
	if (err) {
		rc = k8s_error_set(K8S_ECONFIG, 0, NULL,
		                   "kubeconfig \"%s\": cannot read: %s", path,
		                   strerror(-err));
		free(chosen);
		return rc;
	}
	rc = k8s_config_load_yaml(out, file.data, file.len, context, path);
	k8s__blob_free(&file);
	free(chosen);
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
		int rc = k8s_error_set(err == -ENOMEM ? K8S_ENOMEM : K8S_ECONFIG, 0, NULL,
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
		return k8s_error_set(K8S_EINVAL, 0, NULL, "config: out is NULL");
	*out = NULL;
	if (!host || !host[0] || !port || !port[0])
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "in-cluster config: no API server %s (not running "
		                     "in a pod?)", !host || !host[0] ? "host" : "port");
	if (!sa_dir || !sa_dir[0])
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
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
		rc = k8s_error_set(K8S_ECONFIG, 0, NULL,
		                   "in-cluster config: token file \"%s\" is empty",
		                   cfg->token_file);
		goto fail;
	}
	if (!memmem(cfg->ca.data, cfg->ca.len, "-----BEGIN ", 11)) {
		rc = k8s_error_set(K8S_ECONFIG, 0, NULL,
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
		return k8s_error_set(K8S_ECONFIG, 0, NULL,
		                     "in-cluster config: %s is not set (not running in "
		                     "a pod?)", !host || !host[0]
		                     ? "KUBERNETES_SERVICE_HOST" : "KUBERNETES_SERVICE_PORT");
	return k8s_config_incluster_from(out, host, port, SA_DIR);
}
