/*
 * exec_credential.c - client-go credential plugins: the kubeconfig `exec`
 * stanza, running the plugin, and its ExecCredential answer.
 *
 * The plugin is an ordinary program (aws eks get-token, gke-gcloud-auth-
 * plugin, kubelogin, a shell script). It is started with posix_spawn, never
 * through a shell, in its own process group so that a timeout can kill what
 * it started too; stdin is /dev/null because libk8s is never interactive.
 * Its stdout is the credential (bounded, never quoted in a message: it is a
 * secret); its stderr is what a person needs when it fails, so a bounded
 * prefix of it is quoted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "exec_credential.h"
#include "k8s/object.h"

extern char **environ;

/* Stderr kept from the plugin (more is read and dropped). */
#define STDERR_KEEP 4096
#define DEFAULT_TIMEOUT_MS 60000

static int oom(void)
{
	return asb_error_set(ASB_ENOMEM, 0, NULL, "exec plugin: out of memory");
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

void k8s__exec_config_free(k8s__exec_config *e)
{
	if (!e)
		return;
	free(e->label);
	free(e->api_version);
	free(e->command);
	free_strv(e->args, e->nargs);
	free_strv(e->env, e->nenv);
	free(e->install_hint);
	free(e->cluster_json);
	free(e);
}

static int dup_opt(char **dst, const char *src)
{
	*dst = NULL;
	return src && !(*dst = strdup(src)) ? -1 : 0;
}

static int dup_strv(char ***dst, char *const *src, size_t n)
{
	*dst = NULL;
	if (n == 0)
		return 0;
	if (!(*dst = calloc(n, sizeof(char *))))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((*dst)[i] = strdup(src[i])))
			return -1;
	return 0;
}

int k8s__exec_config_dup(k8s__exec_config **out, const k8s__exec_config *src)
{
	*out = NULL;
	if (!src)
		return 0;
	k8s__exec_config *e = calloc(1, sizeof(*e));
	if (!e)
		return oom();
	e->interactive = src->interactive;
	e->nargs = src->nargs;
	e->nenv = src->nenv;
	if (dup_opt(&e->label, src->label) || dup_opt(&e->api_version, src->api_version) ||
	    dup_opt(&e->command, src->command) ||
	    dup_strv(&e->args, src->args, src->nargs) ||
	    dup_strv(&e->env, src->env, src->nenv) ||
	    dup_opt(&e->install_hint, src->install_hint) ||
	    dup_opt(&e->cluster_json, src->cluster_json)) {
		if (!e->args)
			e->nargs = 0;
		if (!e->env)
			e->nenv = 0;
		k8s__exec_config_free(e);
		return oom();
	}
	*out = e;
	return 0;
}

/* --- the exec stanza -------------------------------------------------------- */

static int stanza_error(const char *label, const char *what)
{
	return asb_error_set(ASB_ECONFIG, 0, NULL, "%s: exec: %s", label, what);
}

static const char *opt_str(const cJSON *obj, const char *key, int *bad)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v))
		return NULL;
	if (!cJSON_IsString(v)) {
		*bad = 1;
		return NULL;
	}
	return v->valuestring;
}

/* The command as the plugin is started: a path with a '/' is relative to
 * the kubeconfig (clientcmd resolves it so); a bare name uses PATH. */
static char *resolve_command(const char *command, const char *dir)
{
	if (command[0] == '/' || !strchr(command, '/') || !dir)
		return strdup(command);
	size_t n = strlen(dir) + strlen(command) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", dir, command);
	return p;
}

static int parse_args(k8s__exec_config *e, const cJSON *exec, const char *label)
{
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(exec, "args"), *a;
	if (!args || cJSON_IsNull(args))
		return 0;
	if (!cJSON_IsArray(args))
		return stanza_error(label, "args must be a list of strings");
	size_t n = (size_t)cJSON_GetArraySize(args);
	if (n && !(e->args = calloc(n, sizeof(char *))))
		return oom();
	cJSON_ArrayForEach(a, args) {
		if (!cJSON_IsString(a))
			return stanza_error(label, "args must be a list of strings "
			                    "(quote numbers and booleans)");
		if (!(e->args[e->nargs] = strdup(a->valuestring)))
			return oom();
		e->nargs++;
	}
	return 0;
}

static int parse_env(k8s__exec_config *e, const cJSON *exec, const char *label)
{
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(exec, "env"), *v;
	if (!env || cJSON_IsNull(env))
		return 0;
	if (!cJSON_IsArray(env))
		return stanza_error(label, "env must be a list of {name, value}");
	size_t n = (size_t)cJSON_GetArraySize(env);
	if (n && !(e->env = calloc(n, sizeof(char *))))
		return oom();
	cJSON_ArrayForEach(v, env) {
		int bad = !cJSON_IsObject(v);
		const char *name = bad ? NULL : opt_str(v, "name", &bad);
		const char *value = bad ? NULL : opt_str(v, "value", &bad);
		if (bad)
			return stanza_error(label, "env entries must be {name: string, "
			                    "value: string}");
		if (!name || !name[0])
			return stanza_error(label, "env variable name must be specified");
		if (strchr(name, '='))
			return stanza_error(label, "env variable name must not contain '='");
		size_t len = strlen(name) + (value ? strlen(value) : 0) + 2;
		if (!(e->env[e->nenv] = malloc(len)))
			return oom();
		snprintf(e->env[e->nenv], len, "%s=%s", name, value ? value : "");
		e->nenv++;
	}
	return 0;
}

int k8s__exec_config_parse(k8s__exec_config **out, const cJSON *exec,
                           const char *label, const char *dir,
                           const char *cluster_json)
{
	int bad = 0, rc;
	*out = NULL;
	if (!cJSON_IsObject(exec))
		return stanza_error(label, "must be a mapping");

	const char *command = opt_str(exec, "command", &bad);
	const char *api = opt_str(exec, "apiVersion", &bad);
	const char *hint = opt_str(exec, "installHint", &bad);
	const char *mode = opt_str(exec, "interactiveMode", &bad);
	if (bad)
		return stanza_error(label, "command, apiVersion, installHint and "
		                    "interactiveMode must be strings");
	if (!command || !command[0])
		return stanza_error(label, "command must be specified to use the exec "
		                    "authentication plugin");
	if (!api || !api[0])
		return stanza_error(label, "apiVersion must be specified to use the exec "
		                    "authentication plugin");
	if (strcmp(api, K8S_EXEC_API_V1) != 0 && strcmp(api, K8S_EXEC_API_V1BETA1) != 0)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "%s: exec: apiVersion \"%s\" is not supported (use "
		                     "%s or %s)", label, api, K8S_EXEC_API_V1,
		                     K8S_EXEC_API_V1BETA1);
	const cJSON *pci = cJSON_GetObjectItemCaseSensitive(exec, "provideClusterInfo");
	if (pci && !cJSON_IsBool(pci) && !cJSON_IsNull(pci))
		return stanza_error(label, "provideClusterInfo must be true or false");

	k8s__exec_interactive interactive;
	if (!mode || !mode[0]) {
		/* v1 made the field required; v1beta1 defaults it. */
		if (strcmp(api, K8S_EXEC_API_V1) == 0)
			return stanza_error(label, "interactiveMode must be specified for "
			                    K8S_EXEC_API_V1 " (Never, IfAvailable or Always)");
		interactive = K8S__EXEC_IF_AVAILABLE;
	} else if (strcmp(mode, "Never") == 0) {
		interactive = K8S__EXEC_NEVER;
	} else if (strcmp(mode, "IfAvailable") == 0) {
		interactive = K8S__EXEC_IF_AVAILABLE;
	} else if (strcmp(mode, "Always") == 0) {
		interactive = K8S__EXEC_ALWAYS;
	} else {
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "%s: exec: interactiveMode \"%s\" is not one of "
		                     "Never, IfAvailable, Always", label, mode);
	}

	k8s__exec_config *e = calloc(1, sizeof(*e));
	if (!e)
		return oom();
	e->interactive = interactive;
	if (!(e->label = strdup(label)) || !(e->api_version = strdup(api)) ||
	    !(e->command = resolve_command(command, dir)) ||
	    (hint && hint[0] && !(e->install_hint = strdup(hint))) ||
	    (cJSON_IsTrue(pci) && cluster_json &&
	     !(e->cluster_json = strdup(cluster_json)))) {
		k8s__exec_config_free(e);
		return oom();
	}
	if ((rc = parse_args(e, exec, label)) || (rc = parse_env(e, exec, label))) {
		k8s__exec_config_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

char *k8s__exec_info_json(const k8s__exec_config *e)
{
	cJSON *info = cJSON_CreateObject(), *spec, *cluster = NULL;
	char *json = NULL;
	if (!info)
		return NULL;
	if (!cJSON_AddStringToObject(info, "kind", "ExecCredential") ||
	    !cJSON_AddStringToObject(info, "apiVersion", e->api_version) ||
	    !(spec = cJSON_AddObjectToObject(info, "spec")) ||
	    !cJSON_AddFalseToObject(spec, "interactive"))
		goto out;
	if (e->cluster_json) {
		if (!(cluster = cJSON_Parse(e->cluster_json)))
			goto out;
		cJSON_AddItemToObject(spec, "cluster", cluster);
	}
	json = cJSON_PrintUnformatted(info);
out:
	cJSON_Delete(info);
	return json;
}

/* --- the ExecCredential answer --------------------------------------------- */

void k8s__exec_credential_clear(k8s__exec_credential *c)
{
	if (c->token) {
		explicit_bzero(c->token, strlen(c->token));
		free(c->token);
	}
	k8s__blob_free(&c->cert);
	k8s__blob_free(&c->key);
	memset(c, 0, sizeof(*c));
}

static int decode_error(const char *label, const char *what)
{
	return asb_error_set(ASB_EDECODE, 0, NULL, "%s: exec plugin output: %s",
	                     label, what);
}

static int blob_from(k8s__blob *b, const char *s)
{
	b->len = strlen(s);
	if (!(b->data = malloc(b->len + 1)))
		return -1;
	memcpy(b->data, s, b->len + 1);
	return 0;
}

int k8s__exec_credential_parse(k8s__exec_credential *out, const char *json,
                               size_t len, const char *api_version,
                               const char *label)
{
	int bad = 0, rc = 0;
	memset(out, 0, sizeof(*out));
	cJSON *doc = json && len ? cJSON_ParseWithLength(json, len) : NULL;
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return decode_error(label, len ? "not a JSON object" : "empty");
	}
	const char *kind = opt_str(doc, "kind", &bad);
	const char *api = opt_str(doc, "apiVersion", &bad);
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(doc, "status");
	const char *token = NULL, *cert = NULL, *key = NULL, *exp = NULL;
	if (cJSON_IsObject(status)) {
		token = opt_str(status, "token", &bad);
		cert = opt_str(status, "clientCertificateData", &bad);
		key = opt_str(status, "clientKeyData", &bad);
		exp = opt_str(status, "expirationTimestamp", &bad);
	}
	if (bad) {
		rc = decode_error(label, "kind, apiVersion and the status fields must "
		                  "be strings");
	} else if (!kind || strcmp(kind, "ExecCredential") != 0) {
		rc = decode_error(label, "kind is not ExecCredential");
	} else if (!api || strcmp(api, api_version) != 0) {
		rc = asb_error_set(ASB_EDECODE, 0, NULL,
		                   "%s: exec plugin is configured to use API version "
		                   "%s, plugin returned version %s", label, api_version,
		                   api ? api : "(none)");
	} else if (!cJSON_IsObject(status)) {
		rc = decode_error(label, "no status field");
	} else if ((cert && cert[0]) != (key && key[0])) {
		rc = decode_error(label, "only one of clientCertificateData and "
		                  "clientKeyData was returned, not both");
	} else if (!(token && token[0]) && !(cert && cert[0])) {
		rc = decode_error(label, "neither a token nor a client certificate "
		                  "and key was returned");
	} else if (cert && cert[0] && (!strstr(cert, "-----BEGIN ") ||
	                               !strstr(key, "-----BEGIN "))) {
		rc = decode_error(label, "clientCertificateData and clientKeyData "
		                  "must be PEM");
	} else if (exp && exp[0] && k8s_time_parse(exp, &out->expiry_ms) != 0) {
		rc = decode_error(label, "expirationTimestamp is not an RFC 3339 time");
	} else if ((token && token[0] && !(out->token = strdup(token))) ||
	           (cert && cert[0] && (blob_from(&out->cert, cert) ||
	                                blob_from(&out->key, key)))) {
		rc = oom();
	}
	/* The tree holds the secret too: wipe its strings before freeing. */
	if (cJSON_IsObject(status)) {
		const cJSON *f;
		cJSON_ArrayForEach(f, status)
			if (cJSON_IsString(f))
				explicit_bzero(f->valuestring, strlen(f->valuestring));
	}
	cJSON_Delete(doc);
	if (rc)
		k8s__exec_credential_clear(out);
	return rc;
}

/* --- running the plugin ------------------------------------------------------ */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* environ, minus the names `e` sets, plus e->env and KUBERNETES_EXEC_INFO. */
static char **build_env(const k8s__exec_config *e, const char *info_var)
{
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **envp = calloc(n + e->nenv + 2, sizeof(char *));
	if (!envp)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nl = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int overridden = nl == strlen("KUBERNETES_EXEC_INFO") &&
		                 strncmp(environ[i], "KUBERNETES_EXEC_INFO", nl) == 0;
		for (size_t j = 0; j < e->nenv && !overridden; j++)
			overridden = strncmp(e->env[j], environ[i], nl) == 0 &&
			             e->env[j][nl] == '=';
		if (!overridden)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < e->nenv; j++)
		envp[k++] = e->env[j];
	envp[k++] = (char *)info_var;
	envp[k] = NULL;
	return envp;
}

/* Appends what fits of `data` to (buf, len, cap); returns 0 when it all fit. */
static int keep(char *buf, size_t *len, size_t cap, const char *data, size_t n)
{
	size_t room = cap - *len;
	size_t take = n < room ? n : room;
	memcpy(buf + *len, data, take);
	*len += take;
	return take == n ? 0 : -1;
}

/* stderr made printable for a one-line message: control characters become
 * spaces, trailing space goes, and the quote stops at K8S_EXEC_STDERR_QUOTE. */
static void quote_stderr(char *dst, size_t cap, const char *src, size_t len)
{
	size_t n = len < K8S_EXEC_STDERR_QUOTE ? len : K8S_EXEC_STDERR_QUOTE;
	if (n > cap - 4)
		n = cap - 4;
	while (n > 0 && n < len && ((unsigned char)src[n] & 0xC0) == 0x80)
		n--;  /* do not cut a UTF-8 character */
	size_t q = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];
		dst[q++] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	while (q > 0 && dst[q - 1] == ' ')
		q--;
	if (n < len && q > 0)
		dst[q++] = '.', dst[q++] = '.', dst[q++] = '.';
	dst[q] = '\0';
}

typedef struct {
	pid_t pid;
	int out_fd, err_fd;
	char *out;          /* stdout, K8S_EXEC_OUTPUT_MAX at most */
	size_t out_len;
	int out_too_big;
	char err[STDERR_KEEP];
	size_t err_len;
	int status;         /* from waitpid, valid when `exited` */
	int exited;
	int timed_out;
} child;

static int not_found(const k8s__exec_config *e)
{
	return asb_error_set(ASB_ECONFIG, 0, NULL,
	                     "%s: exec plugin: executable \"%s\" not found%s%s",
	                     e->label, e->command, e->install_hint ? ". " : "",
	                     e->install_hint ? e->install_hint : "");
}

static int is_executable(const char *path, int *err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		*err = errno;
		return 0;
	}
	if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) {
		*err = EACCES;
		return 0;
	}
	return 1;
}

/*
 * Finds the program to start, as exec.LookPath does for client-go: a
 * command with a '/' is used as it is, a bare name is searched on the PATH
 * the plugin will get. Done here rather than left to posix_spawnp because
 * "not found" must be told apart from a plugin that exits 127, and not
 * every posix_spawn reports a failed exec as an error.
 */
static int find_executable(const k8s__exec_config *e, char **out)
{
	int err = ENOENT;
	*out = NULL;
	if (strchr(e->command, '/')) {
		if (!is_executable(e->command, &err))
			return err == ENOENT || err == ENOTDIR ? not_found(e)
				: asb_error_set(ASB_ECONFIG, 0, NULL,
				                "%s: exec plugin: cannot run \"%s\": %s",
				                e->label, e->command, strerror(err));
		return (*out = strdup(e->command)) ? 0 : oom();
	}
	const char *path = getenv("PATH");
	for (size_t i = 0; i < e->nenv; i++)
		if (strncmp(e->env[i], "PATH=", 5) == 0)
			path = e->env[i] + 5;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		size_t n = strcspn(p, ":");
		/* An empty PATH entry means the current directory. */
		size_t len = (n ? n : 1) + strlen(e->command) + 2;
		char *cand = malloc(len);
		if (!cand)
			return oom();
		snprintf(cand, len, "%.*s/%s", n ? (int)n : 1, n ? p : ".", e->command);
		int cerr;
		if (is_executable(cand, &cerr)) {
			*out = cand;
			return 0;
		}
		free(cand);
		p += n;
		if (!*p)
			break;
	}
	return not_found(e);
}

static int spawn(const k8s__exec_config *e, child *ch)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int rc = 0, err;

	char *info = k8s__exec_info_json(e);
	size_t ilen = info ? strlen(info) + sizeof("KUBERNETES_EXEC_INFO=") : 0;
	char *info_var = info ? malloc(ilen) : NULL;
	if (!info_var) {
		free(info);
		return oom();
	}
	snprintf(info_var, ilen, "KUBERNETES_EXEC_INFO=%s", info);
	free(info);
	char *program = NULL;
	if ((rc = find_executable(e, &program))) {
		explicit_bzero(info_var, strlen(info_var));
		free(info_var);
		return rc;
	}
	char **argv = calloc(e->nargs + 2, sizeof(char *));
	char **envp = build_env(e, info_var);
	if (!argv || !envp) {
		rc = oom();
		goto out_mem;
	}
	argv[0] = e->command;
	for (size_t i = 0; i < e->nargs; i++)
		argv[i + 1] = e->args[i];

	/* Close-on-exec, so that a plugin spawned by another thread at the
	 * same time does not inherit (and hold open) these pipes. */
	if (pipe2(outp, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0) {
		rc = asb_error_set(ASB_ERROR, 0, NULL, "%s: exec plugin: pipe: %s",
		                   e->label, strerror(errno));
		goto out_pipes;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	/* The application's own descriptors are none of the plugin's business. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	posix_spawnattr_init(&attr);
	/* Own process group (a timeout kills its children too), no blocked
	 * signals inherited from the calling thread, SIGPIPE as default. */
	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	                                POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &dfl);

	err = posix_spawn(&ch->pid, program, &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (err) {
		if (err == ENOENT)
			rc = not_found(e);
		else
			rc = asb_error_set(ASB_ECONFIG, 0, NULL,
			                   "%s: exec plugin: cannot run \"%s\": %s",
			                   e->label, e->command, strerror(err));
		goto out_pipes;
	}
	ch->out_fd = outp[0];
	ch->err_fd = errp[0];
	outp[0] = errp[0] = -1;
out_pipes:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
out_mem:
	free(program);
	free(argv);
	free(envp);
	explicit_bzero(info_var, strlen(info_var));
	free(info_var);
	return rc;
}

/* Reads both pipes until EOF or the deadline. */
static void drain(child *ch, int64_t deadline)
{
	char buf[8192];
	while (ch->out_fd >= 0 || ch->err_fd >= 0) {
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			ch->timed_out = 1;
			return;
		}
		struct pollfd p[2] = { { ch->out_fd, POLLIN, 0 }, { ch->err_fd, POLLIN, 0 } };
		int n = poll(p, 2, left > 1000 ? 1000 : (int)left);
		if (n < 0 && errno != EINTR)
			return;
		for (int i = 0; n > 0 && i < 2; i++) {
			int *fd = i == 0 ? &ch->out_fd : &ch->err_fd;
			if (*fd < 0 || !p[i].revents)
				continue;
			ssize_t r = read(*fd, buf, sizeof(buf));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (i == 1) {
				keep(ch->err, &ch->err_len, sizeof(ch->err), buf, (size_t)r);
			} else if (!ch->out_too_big &&
			           keep(ch->out, &ch->out_len, K8S_EXEC_OUTPUT_MAX,
			                buf, (size_t)r) != 0) {
				ch->out_too_big = 1;  /* keep reading: never block the child */
			}
		}
	}
}

/* Waits for the child until the deadline; kills its group past it. */
static void reap(child *ch, int64_t deadline)
{
	for (;;) {
		pid_t r = waitpid(ch->pid, &ch->status, ch->timed_out ? 0 : WNOHANG);
		if (r == ch->pid) {
			ch->exited = 1;
			return;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return;  /* ECHILD: SIGCHLD ignored by the application */
		if (mono_ms() >= deadline) {
			ch->timed_out = 1;
			killpg(ch->pid, SIGKILL);
			kill(ch->pid, SIGKILL);
			continue;  /* now wait without WNOHANG */
		}
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

int k8s__exec_run(const k8s__exec_config *e, long timeout_ms,
                  k8s__exec_credential *out)
{
	child ch = { .pid = -1, .out_fd = -1, .err_fd = -1 };
	char quoted[K8S_EXEC_STDERR_QUOTE + 8];
	int rc;

	memset(out, 0, sizeof(*out));
	if (e->interactive == K8S__EXEC_ALWAYS)
		return asb_error_set(ASB_ECONFIG, 0, NULL,
		                     "%s: exec plugin \"%s\" needs interactiveMode Always, "
		                     "but libk8s has no terminal to offer", e->label,
		                     e->command);
	if (timeout_ms <= 0)
		timeout_ms = DEFAULT_TIMEOUT_MS;
	if (!(ch.out = malloc(K8S_EXEC_OUTPUT_MAX)))
		return oom();
	if ((rc = spawn(e, &ch))) {
		free(ch.out);
		return rc;
	}
	int64_t deadline = mono_ms() + timeout_ms;
	drain(&ch, deadline);
	if (ch.timed_out) {
		killpg(ch.pid, SIGKILL);
		kill(ch.pid, SIGKILL);
	}
	reap(&ch, deadline);
	if (ch.out_fd >= 0)
		close(ch.out_fd);
	if (ch.err_fd >= 0)
		close(ch.err_fd);
	quote_stderr(quoted, sizeof(quoted), ch.err, ch.err_len);

	if (ch.timed_out)
		rc = asb_error_set(ASB_ETIMEOUT, 0, NULL,
		                   "%s: exec plugin \"%s\" did not finish within %ld ms "
		                   "(killed)%s%s", e->label, e->command, timeout_ms,
		                   quoted[0] ? "; stderr: " : "", quoted);
	else if (ch.exited && WIFSIGNALED(ch.status))
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "%s: exec plugin \"%s\" was killed by signal %d%s%s",
		                   e->label, e->command, WTERMSIG(ch.status),
		                   quoted[0] ? "; stderr: " : "", quoted);
	else if (ch.exited && WEXITSTATUS(ch.status) != 0)
		rc = asb_error_set(ASB_ECONFIG, 0, NULL,
		                   "%s: exec plugin \"%s\" exited with status %d%s%s",
		                   e->label, e->command, WEXITSTATUS(ch.status),
		                   quoted[0] ? "; stderr: " : "", quoted);
	else if (ch.out_too_big)
		rc = asb_error_set(ASB_EDECODE, 0, NULL,
		                   "%s: exec plugin \"%s\" printed more than %zu bytes",
		                   e->label, e->command, (size_t)K8S_EXEC_OUTPUT_MAX);
	else
		rc = k8s__exec_credential_parse(out, ch.out, ch.out_len, e->api_version,
		                                e->label);
	explicit_bzero(ch.out, ch.out_len);
	free(ch.out);
	return rc;
}
