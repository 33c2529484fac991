/*
 * webhook.c - the conversion webhook of agent-sandbox-controller
 * (webhook.h): flags, self-managed certificates (docs/upstream.md#webhook-certificates),
 * the CRD conversion patch, and POST /convert.
 *
 * Startup order, as upstream: certificates (read the Secret, or generate
 * and create it), files in --webhook-cert-dir, CRD patch, then the HTTPS
 * server. Everything fatal is reported to main(), which exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <mbedtls/base64.h>
#include "k8s/certs.h"
#include "k8s/common.h"
#include "httpd/server.h"
#include "k8s/object.h"
#include "k8s/resource.h"
#include "sandbox/conversion.h"
#include "webhook.h"

#define PROG "agent-sandbox-controller"
#define CA_COMMON_NAME "agent-sandbox-conversion-webhook-ca"

/* The four CRDs whose conversion config we own (docs/upstream.md#identifiers). */
static const char *const crd_names[] = {
	"sandboxes.agents.x-k8s.io",
	"sandboxclaims.extensions.agents.x-k8s.io",
	"sandboxtemplates.extensions.agents.x-k8s.io",
	"sandboxwarmpools.extensions.agents.x-k8s.io",
};

static const k8s_resource secrets = { "", "v1", "secrets", "Secret", true };

struct webhook {
	httpd_server *srv;
	asb_logger *log;
	/* controller-runtime's webhook server metrics, webhook="/convert";
	 * NULL without a registry */
	asb_metric *requests;            /* _requests_total{code,webhook} */
	asb_metric_series *in_flight;    /* _requests_in_flight{webhook} */
	asb_metric *latency;             /* _latency_seconds{webhook} */
};

/* --- files and base64 ------------------------------------------------------- */

static int mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	if (!p)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	for (char *s = p + 1; ; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST) {
				int e = errno;
				free(p);
				return asb_error_set(ASB_ERROR, 0, NULL, "cannot create directory %s: %s", dir, strerror(e));
			}
			if (!c)
				break;
			*s = c;
		}
	}
	free(p);
	return 0;
}

/* Writes `len` bytes to dir/name with mode 0600, through a renamed temporary file. */
static int write_secret_file(const char *dir, const char *name, const char *data, size_t len)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld", dir, name, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return asb_error_set(ASB_ERROR, 0, NULL, "cannot write %s: %s", tmp, strerror(errno));
	bool ok = fchmod(fd, 0600) == 0;  /* whatever the umask or an older file said */
	for (size_t off = 0; ok && off < len;) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		ok = n > 0;
		off += ok ? (size_t)n : 0;
	}
	int e = errno;
	if (close(fd) != 0 && ok) {
		ok = false;
		e = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		unlink(tmp);
		return asb_error_set(ASB_ERROR, 0, NULL, "cannot write %s: %s", path, strerror(e));
	}
	return 0;
}

static char *b64_encode(const char *data, size_t len)
{
	size_t need = 0;
	mbedtls_base64_encode(NULL, 0, &need, (const unsigned char *)data, len);
	unsigned char *out = malloc(need + 1);
	if (!out || mbedtls_base64_encode(out, need + 1, &need, (const unsigned char *)data, len) != 0) {
		free(out);
		return NULL;
	}
	out[need] = '\0';
	return (char *)out;
}

/* Secret data[key] decoded (malloc'd, NUL-terminated), or NULL with `why` set. */
static char *secret_value(const cJSON *secret, const char *key, size_t *len, const char **why)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(secret, "data");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, key);
	*why = "missing or empty";
	if (!cJSON_IsString(v) || !*v->valuestring)
		return NULL;
	size_t in = strlen(v->valuestring), need = 0;
	unsigned char *out = malloc(in + 1);
	if (!out)
		return NULL;
	if (mbedtls_base64_decode(out, in, &need, (const unsigned char *)v->valuestring, in) != 0 || need == 0) {
		*why = "not base64";
		free(out);
		return NULL;
	}
	out[need] = '\0';
	if (!k8s_pem_decodable((const char *)out, need)) {
		*why = "not PEM";
		free(out);
		return NULL;
	}
	*len = need;
	return (char *)out;
}

/* --- certificates (docs/upstream.md#webhook-certificates) ------------------------------------------------------ */

typedef struct {
	char *ca, *cert, *key;
	size_t ca_len, cert_len, key_len;
} pem_set;

static void pem_set_free(pem_set *p)
{
	free(p->ca);
	free(p->cert);
	if (p->key) {
		memset(p->key, 0, p->key_len);
		free(p->key);
	}
	memset(p, 0, sizeof(*p));
}

static int from_secret(const cJSON *secret, const char *ns, pem_set *out)
{
	const char *why = NULL;
	static const char *const keys[] = { "ca.crt", "tls.crt", "tls.key" };
	char **dst[] = { &out->ca, &out->cert, &out->key };
	size_t *lens[] = { &out->ca_len, &out->cert_len, &out->key_len };
	for (int i = 0; i < 3; i++) {
		*dst[i] = secret_value(secret, keys[i], lens[i], &why);
		if (!*dst[i]) {
			pem_set_free(out);
			return asb_error_set(ASB_EDECODE, 0, NULL, "Secret %s/%s: %s is %s", ns, WEBHOOK_SECRET_NAME,
			                     keys[i], why);
		}
	}
	return 0;
}

/* now - 1 h .. now + 1 calendar year (Go's AddDate(1, 0, 0)). */
static void validity(int64_t *nb, int64_t *na)
{
	int64_t now = k8s_now_ms();
	time_t t = (time_t)(now / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	tm.tm_year += 1;
	*nb = now - 3600 * 1000LL;
	*na = (int64_t)timegm(&tm) * 1000;
}

static int generate(const webhook_flags *f, const char *cluster_domain, pem_set *out)
{
	const char *svc = f->service_name, *ns = f->namespace_;
	char n1[512], n2[512], n3[512];
	snprintf(n1, sizeof(n1), "%s.%s", svc, ns);
	snprintf(n2, sizeof(n2), "%s.%s.svc", svc, ns);
	snprintf(n3, sizeof(n3), "%s.%s.svc.%s", svc, ns, cluster_domain);
	const char *dns[6] = { svc, n1, n2, n3, NULL, NULL };
	const char *ips[2] = { NULL, NULL };
	const char *why;
	char *host = f->url ? webhook_url_host(f->url, &why) : NULL;
	unsigned char raw[16];
	if (host && (inet_pton(AF_INET, host, raw) == 1 || inet_pton(AF_INET6, host, raw) == 1))
		ips[0] = host;
	else if (host)
		dns[4] = host;
	k8s_cert_options o = K8S_CERT_OPTIONS_INIT;
	o.ca_common_name = CA_COMMON_NAME;
	o.common_name = n2;
	o.dns_names = dns;
	o.ip_addresses = ips;
	o.ca_serial = 1;
	o.serial = 2;
	validity(&o.not_before_ms, &o.not_after_ms);
	k8s_cert_bundle b;
	int rc = k8s_cert_bundle_generate(&b, &o);
	free(host);
	if (rc < 0)
		return rc;
	/* the CA key is not kept: a new certificate means a new CA (as upstream) */
	out->ca = strdup(b.ca_cert);
	out->cert = strdup(b.cert);
	out->key = strdup(b.key);
	k8s_cert_bundle_dispose(&b);
	if (!out->ca || !out->cert || !out->key) {
		pem_set_free(out);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	out->ca_len = strlen(out->ca);
	out->cert_len = strlen(out->cert);
	out->key_len = strlen(out->key);
	return 0;
}

static cJSON *secret_object(const char *ns, const pem_set *p)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(s, "metadata");
	cJSON *data = cJSON_AddObjectToObject(s, "data");
	char *v[3] = { b64_encode(p->ca, p->ca_len), b64_encode(p->cert, p->cert_len),
	               b64_encode(p->key, p->key_len) };
	bool ok = md && data && v[0] && v[1] && v[2] &&
		cJSON_AddStringToObject(s, "apiVersion", "v1") && cJSON_AddStringToObject(s, "kind", "Secret") &&
		cJSON_AddStringToObject(s, "type", "Opaque") &&
		cJSON_AddStringToObject(md, "name", WEBHOOK_SECRET_NAME) &&
		cJSON_AddStringToObject(md, "namespace", ns) &&
		cJSON_AddStringToObject(data, "ca.crt", v[0]) && cJSON_AddStringToObject(data, "tls.crt", v[1]) &&
		cJSON_AddStringToObject(data, "tls.key", v[2]);
	for (int i = 0; i < 3; i++)
		free(v[i]);
	if (!ok) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/* Reads or creates the Secret and writes tls.crt/tls.key; `ca` receives the CA PEM. */
static int ensure_certs(const webhook_flags *f, const char *cluster_domain, k8s_client *c,
                        asb_logger *log, pem_set *out)
{
	const char *ns = f->namespace_;
	cJSON *secret = NULL;
	int rc = k8s_client_get(c, &secrets, ns, WEBHOOK_SECRET_NAME, &secret);
	if (rc == 0) {
		rc = from_secret(secret, ns, out);
		cJSON_Delete(secret);
		if (rc < 0)
			return rc;
		asb_log(log, ASB_LOG_INFO, "webhook certificate read from Secret", "namespace", ns,
		        "name", WEBHOOK_SECRET_NAME, NULL);
	} else if (rc == ASB_ENOTFOUND) {
		if ((rc = generate(f, cluster_domain, out)) < 0)
			return rc;
		cJSON *obj = secret_object(ns, out);
		if (!obj)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		rc = k8s_client_create(c, &secrets, ns, obj, NULL, NULL);
		cJSON_Delete(obj);
		if (rc == ASB_EALREADYEXISTS) {
			/* another replica won the race: use its certificate */
			pem_set_free(out);
			if ((rc = k8s_client_get(c, &secrets, ns, WEBHOOK_SECRET_NAME, &secret)) < 0)
				return rc;
			rc = from_secret(secret, ns, out);
			cJSON_Delete(secret);
			if (rc < 0)
				return rc;
			asb_log(log, ASB_LOG_INFO, "webhook Secret created by another replica; using it",
			        "namespace", ns, "name", WEBHOOK_SECRET_NAME, NULL);
		} else if (rc < 0) {
			pem_set_free(out);
			return rc;
		} else {
			asb_log(log, ASB_LOG_INFO, "webhook certificate generated; Secret created", "namespace", ns,
			        "name", WEBHOOK_SECRET_NAME, NULL);
		}
	} else {
		return rc;
	}
	if ((rc = mkdir_p(f->cert_dir)) < 0 ||
	    (rc = write_secret_file(f->cert_dir, "tls.crt", out->cert, out->cert_len)) < 0 ||
	    (rc = write_secret_file(f->cert_dir, "tls.key", out->key, out->key_len)) < 0) {
		pem_set_free(out);
		return rc;
	}
	return 0;
}

/* Points each CRD that uses Webhook conversion at us, trusting `ca`. */
static int patch_crds(const webhook_flags *f, const pem_set *ca, k8s_client *c, asb_logger *log)
{
	char *bundle = b64_encode(ca->ca, ca->ca_len);
	if (!bundle)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	int rc = 0;
	for (size_t i = 0; i < sizeof(crd_names) / sizeof(crd_names[0]) && rc == 0; i++) {
		cJSON *crd = NULL;
		rc = k8s_client_get(c, &k8s_resource_crds, NULL, crd_names[i], &crd);
		if (rc == ASB_ENOTFOUND) {
			asb_log(log, ASB_LOG_DEBUG, "CRD not installed; not patched", "crd", crd_names[i], NULL);
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		const char *strategy = k8s_obj_str(crd, "spec.conversion.strategy");
		if (!strategy || strcmp(strategy, "Webhook") != 0) {
			asb_log(log, ASB_LOG_INFO, "CRD does not use Webhook conversion; not patched",
			        "crd", crd_names[i], NULL);
			cJSON_Delete(crd);
			continue;
		}
		const cJSON *versions = k8s_obj_at(crd, "spec.conversion.webhook.conversionReviewVersions");
		bool default_versions = !cJSON_IsArray(versions) || cJSON_GetArraySize(versions) == 0;
		cJSON_Delete(crd);

		/* JSON merge patch (RFC 7386): null removes the other clientConfig form */
		cJSON *patch = cJSON_CreateObject();
		cJSON *wh = cJSON_AddObjectToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"),
		                                                            "conversion"), "webhook");
		cJSON *cc = cJSON_AddObjectToObject(wh, "clientConfig");
		cJSON_AddStringToObject(cc, "caBundle", bundle);
		if (f->url) {
			cJSON_AddStringToObject(cc, "url", f->url);
			cJSON_AddNullToObject(cc, "service");
		} else {
			cJSON *svc = cJSON_AddObjectToObject(cc, "service");
			cJSON_AddStringToObject(svc, "name", f->service_name);
			cJSON_AddStringToObject(svc, "namespace", f->namespace_);
			cJSON_AddStringToObject(svc, "path", WEBHOOK_PATH);
			cJSON_AddNullToObject(cc, "url");
		}
		if (default_versions) {
			const char *v[] = { "v1", "v1beta1" };
			cJSON_AddItemToObject(wh, "conversionReviewVersions", cJSON_CreateStringArray(v, 2));
		}
		rc = k8s_client_patch(c, &k8s_resource_crds, NULL, crd_names[i], NULL, K8S_PATCH_MERGE, patch,
		                      NULL, NULL);
		cJSON_Delete(patch);
		if (rc == 0)
			asb_log(log, ASB_LOG_INFO, "CRD conversion webhook configured", "crd", crd_names[i],
			        "target", f->url ? f->url : f->service_name, NULL);
	}
	free(bundle);
	return rc;
}

/* --- metrics ---------------------------------------------------------------- */

/*
 * The families controller-runtime's webhook server registers (its
 * webhook/internal/metrics, and the admission and conversion panic
 * counters), with their names, help texts, labels and buckets. As there,
 * the code="200" and code="500" series and the in-flight gauge exist from
 * the start; the latency series from the first request.
 */
static int register_metrics(webhook *w, asb_metrics_registry *reg, bool serving)
{
	static const char *const panic_names[] = {
		"controller_runtime_webhook_panics_total", "Total number of webhook panics",
		"controller_runtime_conversion_webhook_panics_total",
		"Total number of conversion webhook panics",
	};
	int rc = 0;
	/* a C handler cannot panic and be recovered: 0, for queries written
	 * against upstream */
	for (int i = 0; rc == 0 && i < 4; i += 2) {
		asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
		o.name = panic_names[i];
		o.help = panic_names[i + 1];
		asb_metric *m;
		asb_metric_series *s;
		if ((rc = asb_metrics_register(&m, reg, &o)) == 0)
			rc = asb_metric_series_get(&s, m, NULL, 0);
	}
	if (rc < 0 || !serving)
		return rc;
	static const char *const by_code[] = { "webhook", "code", NULL };
	static const char *const by_hook[] = { "webhook", NULL };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.name = "controller_runtime_webhook_requests_total";
	o.help = "Total number of admission requests by HTTP status code.";
	o.label_names = by_code;
	if ((rc = asb_metrics_register(&w->requests, reg, &o)) < 0)
		return rc;
	const char *ok[] = { WEBHOOK_PATH, "200" }, *failed[] = { WEBHOOK_PATH, "500" };
	asb_metric_series *s;
	if ((rc = asb_metric_series_get(&s, w->requests, ok, 2)) < 0 ||
	    (rc = asb_metric_series_get(&s, w->requests, failed, 2)) < 0)
		return rc;
	asb_metric_options g = ASB_METRIC_OPTIONS_INIT;
	g.type = ASB_METRIC_GAUGE;
	g.name = "controller_runtime_webhook_requests_in_flight";
	g.help = "Current number of admission requests being served.";
	g.label_names = by_hook;
	asb_metric *gauge;
	const char *hook[] = { WEBHOOK_PATH };
	if ((rc = asb_metrics_register(&gauge, reg, &g)) < 0 ||
	    (rc = asb_metric_series_get(&w->in_flight, gauge, hook, 1)) < 0)
		return rc;
	/* client_golang's ExponentialBuckets(10e-9, 10, 12): 10 ns to 1000 s */
	double buckets[12];
	asb_metrics_exponential_buckets(10e-9, 10, 12, buckets);
	asb_metric_options h = ASB_METRIC_OPTIONS_INIT;
	h.type = ASB_METRIC_HISTOGRAM;
	h.name = "controller_runtime_webhook_latency_seconds";
	h.help = "Histogram of the latency of processing admission requests";
	h.label_names = by_hook;
	h.buckets = buckets;
	h.nbuckets = 12;
	return asb_metrics_register(&w->latency, reg, &h);
}

static double monotonic_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- serving ---------------------------------------------------------------- */

/* Converts one ConversionReview; returns the HTTP status it answered. */
static int convert(webhook *w, const httpd_request *req, httpd_response *res)
{
	size_t len;
	const char *body = httpd_request_body(req, &len);
	char *out = NULL, *failure = NULL;
	int rc = sbx_conversion_review(body, len, &out, &failure);
	if (rc < 0) {
		const char *msg = asb_error_last()->message;
		asb_log(w->log, ASB_LOG_ERROR, "conversion request rejected", "error", msg, NULL);
		int status = rc == ASB_ENOMEM ? 500 : 400;
		httpd_response_set_status(res, status);
		httpd_response_write(res, msg, strlen(msg));
		httpd_response_write(res, "\n", 1);
		return status;
	}
	if (failure) {
		asb_log(w->log, ASB_LOG_ERROR, "conversion failed", "error", failure, NULL);
		free(failure);
	}
	httpd_response_add_header(res, "Content-Type", "application/json");
	httpd_response_write(res, out, strlen(out));
	free(out);
	return 200;
}

static void handle_convert(const httpd_request *req, httpd_response *res, void *ud)
{
	webhook *w = ud;
	if (!w->requests) {
		convert(w, req, res);
		return;
	}
	asb_metric_series_add(w->in_flight, 1);
	double start = monotonic_seconds();
	int status = convert(w, req, res);
	double seconds = monotonic_seconds() - start;
	asb_metric_series_add(w->in_flight, -1);
	char code[8];
	snprintf(code, sizeof(code), "%d", status);
	const char *by_code[] = { WEBHOOK_PATH, code }, *hook[] = { WEBHOOK_PATH };
	asb_metric_add(w->requests, by_code, 2, 1);
	asb_metric_observe(w->latency, hook, 1, seconds);
}

/* With --manage-webhook-certs=false: the files the operator provides (docs/upstream.md#webhook-certificates). */
static int provided_files(const webhook_flags *f, char *cert, char *key, size_t cap)
{
	snprintf(cert, cap, "%s/%s", f->cert_dir, f->cert_name);
	snprintf(key, cap, "%s/%s", f->cert_dir, f->key_name);
	struct stat sc, sk;
	bool has_c = stat(cert, &sc) == 0, has_k = stat(key, &sk) == 0;
	if (!has_c && !has_k && strcmp(f->cert_name, "tls.crt") == 0 && strcmp(f->key_name, "tls.key") == 0) {
		/* one combined PEM holding both, as some cert tools write */
		char combined[4096];
		struct stat st;
		snprintf(combined, sizeof(combined), "%s/cert.pem", f->cert_dir);
		if (stat(combined, &st) == 0 && S_ISREG(st.st_mode)) {
			snprintf(cert, cap, "%s", combined);
			snprintf(key, cap, "%s", combined);
			return 0;
		}
	}
	if (!has_c || !S_ISREG(sc.st_mode))
		return asb_error_set(ASB_ECONFIG, 0, NULL, "webhook certificate %s: %s", cert,
		                     has_c ? "not a regular file" : "missing");
	if (!has_k || !S_ISREG(sk.st_mode))
		return asb_error_set(ASB_ECONFIG, 0, NULL, "webhook key %s: %s", key,
		                     has_k ? "not a regular file" : "missing");
	return 0;
}

int webhook_start(webhook **out, const webhook_flags *f, const char *cluster_domain,
                  k8s_client *client, asb_logger *log, asb_metrics_registry *metrics)
{
	*out = NULL;
	webhook *w = calloc(1, sizeof(*w));
	if (!w)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	w->log = log;
	int rc;
	if (metrics && (rc = register_metrics(w, metrics, f->enable)) < 0) {
		free(w);
		return rc;
	}
	if (!f->enable) {
		asb_log(log, ASB_LOG_INFO, "conversion webhook disabled (--enable-webhook=false): installed CRDs "
		        "must use conversion.strategy: None, or v1alpha1 requests will fail; "
		        "--manage-webhook-certs is ignored", NULL);
		*out = w;
		return 0;
	}
	char cert[4200], key[4200];
	if (f->manage_certs) {
		if (f->cert_name_set || f->key_name_set)
			asb_log(log, ASB_LOG_WARN, "--webhook-cert-name and --webhook-key-name are ignored with "
			        "--manage-webhook-certs; using tls.crt and tls.key", NULL);
		pem_set p = { 0 };
		if ((rc = ensure_certs(f, cluster_domain, client, log, &p)) < 0 ||
		    (rc = patch_crds(f, &p, client, log)) < 0) {
			pem_set_free(&p);
			free(w);
			return rc;
		}
		pem_set_free(&p);
		snprintf(cert, sizeof(cert), "%s/tls.crt", f->cert_dir);
		snprintf(key, sizeof(key), "%s/tls.key", f->cert_dir);
	} else if ((rc = provided_files(f, cert, key, sizeof(cert))) < 0) {
		free(w);
		return rc;
	}
	char addr[512];
	snprintf(addr, sizeof(addr), "%s:%d", f->bind_address ? f->bind_address : "", f->port);
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = addr;
	o.name = "webhook";
	o.logger = log;
	o.tls_cert_file = cert;
	o.tls_key_file = key;
	/* a ConversionReview carries whole objects: allow the API server's 3 MiB request limit */
	o.max_body_bytes = 8 * 1024 * 1024;
	if ((rc = httpd_server_new(&w->srv, &o)) < 0 ||
	    (rc = httpd_server_route(w->srv, "POST", WEBHOOK_PATH, handle_convert, w)) < 0 ||
	    (rc = httpd_server_start(w->srv)) < 0) {
		webhook_free(w, 0);
		return rc;
	}
	*out = w;
	return 0;
}

void webhook_free(webhook *w, long timeout_ms)
{
	if (!w)
		return;
	httpd_server_shutdown(w->srv, timeout_ms);
	httpd_server_free(w->srv);
	free(w);
}
