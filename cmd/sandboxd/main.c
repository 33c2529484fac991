/*
 * sandboxd - the runtime inside a sandbox pod: runs commands and serves the
 * files under its root directory over HTTP (docs/sandboxd.md).
 *
 * Thin by design: parse flags (flags.c), open the confined root
 * (confine.c), build two HTTP servers of libhttpd, one for sandboxd's REST
 * and process API (--rest-port) and one for the python-runtime API
 * (--runtime-port; the first also serves GET /metrics), wait for
 * SIGTERM/SIGINT, then shut down: /v1/health
 * turns 503, every running process gets SIGTERM and SIGKILL after the
 * grace period, the servers finish what is in flight within
 * --shutdown-timeout and cut the rest.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "asb/signals.h"

#include "asb/common.h"
#include "httpd/exchange.h"
#include "httpd/server.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "flags.h"
#include "http.h"

static int new_server(httpd_server **out, const sandboxd_flags *f, int port,
                      const char *name, asb_logger *log)
{
	char addr[300];
	if (strchr(f->listen_host, ':'))
		snprintf(addr, sizeof(addr), "[%s]:%d", f->listen_host, port);
	else
		snprintf(addr, sizeof(addr), "%s:%d", f->listen_host, port);
	httpd_server_options o = HTTPD_SERVER_OPTIONS_INIT;
	o.address = addr;
	o.name = name;
	o.logger = log;
	o.idle_timeout_ms = f->http_idle_timeout_ms;
	/* transfers, however slow, leave connections for health and the rest */
	o.max_connections = SBXD_MAX_TRANSFERS + SBXD_SPARE_CONNECTIONS;
	/* one loop: handlers, processes and the id table share its thread */
	o.loops = 1;
	int rc = httpd_server_new(out, &o);
	if (rc)
		fprintf(stderr, "sandboxd: %s listener %s: %s\n", name, addr, asb_error_last()->message);
	return rc;
}

int main(int argc, char **argv)
{
	sandboxd_flags f;
	sandboxd_flags_defaults(&f);
	int pr = sandboxd_flags_parse(argc, argv, &f);
	if (pr != 0)
		return pr > 0 ? 0 : 2;

	/* one logger, named as upstream's sandboxd names its own */
	asb_logger *root = NULL, *log = NULL;
	if (asb_log_flags_logger(&root, &f.log, stderr) != 0)
		return 1;
	int named = asb_logger_named(&log, root, "sandboxd");
	asb_logger_free(root);  /* `log` keeps the stream */
	if (named != 0)
		return 1;
	if (f.grpc_port_set)
		asb_log(log, ASB_LOG_WARN, "--grpc-port has no effect: processes are served over "
		        "HTTP on --rest-port (docs/sandboxd.md)", NULL);

	/* SIGTERM and SIGINT are taken by sigwait below; every thread started
	 * from here on inherits the mask. SIGPIPE: a client gone mid-write is
	 * an error code, not a death. */
	sigset_t stop;
	asb_signals_block_stop(&stop, 0);
	signal(SIGPIPE, SIG_IGN);

	/* Descriptors: the soft limit up to the hard one, as Go's runtime does
	 * for upstream's sandboxd. Container runtimes may leave the soft limit
	 * at 1024, below what 1024 connections and the processes' pipes
	 * need. */
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &nofile) != 0)
			asb_log(log, ASB_LOG_WARN, "cannot raise the descriptor limit", NULL);
	}

	sbxd_daemon d;
	memset(&d, 0, sizeof(d));
	d.flags = &f;
	d.log = log;
	d.started = time(NULL);
	d.rest.d = d.runtime.d = &d;
	pthread_mutex_init(&d.cap_lock, NULL);
	int rc = sbxd_root_open(&d.root, f.root_dir, true);
	if (rc) {
		asb_log(log, ASB_LOG_ERROR, "cannot open the root directory", "error",
		        asb_error_last()->message, NULL);
		asb_logger_free(log);
		return 1;
	}
	if (sbxd_proctable_new(&d.cap, (unsigned)f.max_processes) != 0 ||
	    sbxd_metadata_build(&d) != 0) {
		asb_log(log, ASB_LOG_ERROR, "out of memory", NULL);
		return 1;
	}
	/* after the signal mask: its thread must not take SIGTERM */
	if (sbxd_reaper_new(&d.reaper, true) != 0) {
		asb_log(log, ASB_LOG_ERROR, "cannot start", "error", asb_error_last()->message, NULL);
		return 1;
	}
	if (f.max_tasks > 0 && geteuid() == 0)
		asb_log(log, ASB_LOG_WARN, "--max-tasks has no effect on commands run as root "
		        "(RLIMIT_NPROC is not enforced for root)", NULL);

	/* GET /metrics on the REST port: the process_* families
	 * (docs/sandboxd.md#metrics); commands' processes are not counted */
	asb_metrics_registry *metrics = NULL;
	if (asb_metrics_registry_new(&metrics) != 0 || asb_metrics_register_process(metrics) != 0) {
		asb_log(log, ASB_LOG_ERROR, "out of memory", NULL);
		return 1;
	}
	rc = new_server(&d.rest.srv, &f, f.rest_port, "rest", log);
	if (!rc)
		rc = httpd_server_handle_metrics(d.rest.srv, "/metrics", metrics);
	if (!rc && f.runtime_port)
		rc = new_server(&d.runtime.srv, &f, f.runtime_port, "runtime", log);
	if (!rc)
		rc = sbxd_http_files_routes(&d, d.rest.srv);
	if (!rc)
		rc = sbxd_http_process_routes(&d, d.rest.srv);
	if (!rc && d.runtime.srv)
		rc = sbxd_http_runtime_routes(&d, d.runtime.srv);
	if (!rc && (rc = httpd_server_start(d.rest.srv)) != 0)
		asb_log(log, ASB_LOG_ERROR, "cannot listen", "error", asb_error_last()->message, NULL);
	if (!rc && d.runtime.srv && (rc = httpd_server_start(d.runtime.srv)) != 0)
		asb_log(log, ASB_LOG_ERROR, "cannot listen", "error", asb_error_last()->message, NULL);
	if (rc) {
		httpd_server_free(d.rest.srv);
		httpd_server_free(d.runtime.srv);
		sbxd_root_free(d.root);
		sbxd_proctable_free(d.cap);
		sbxd_reaper_free(d.reaper);
		free(d.metadata);
		asb_metrics_registry_free(metrics);
		asb_logger_free(log);
		return 1;
	}
	asb_log_typed(log, ASB_LOG_INFO, "sandboxd started", ASB_LOG_STR("version", SANDBOXD_VERSION),
	              ASB_LOG_STR("root", sbxd_root_path(d.root)),
	              ASB_LOG_STR("resolver", sbxd_root_resolver(d.root) == SBXD_RESOLVE_OPENAT2
	                                      ? "openat2" : "walk"),
	              ASB_LOG_INT("rest_port", httpd_server_port(d.rest.srv)),
	              ASB_LOG_INT("runtime_port",
	                          d.runtime.srv ? httpd_server_port(d.runtime.srv) : 0));

	int sig = 0;
	sigwait(&stop, &sig);
	asb_log(log, ASB_LOG_INFO, "shutting down", "signal", sig == SIGINT ? "SIGINT" : "SIGTERM",
	        NULL);
	atomic_store(&d.shutting_down, true);
	httpd_server_call(d.rest.srv, 0, sbxd_http_begin_shutdown, &d.rest);
	if (d.runtime.srv)
		httpd_server_call(d.runtime.srv, 0, sbxd_http_begin_shutdown, &d.runtime);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int cut = httpd_server_shutdown(d.rest.srv, f.shutdown_timeout_ms);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	long left = f.shutdown_timeout_ms > spent ? f.shutdown_timeout_ms - spent : 0;
	if (d.runtime.srv && httpd_server_shutdown(d.runtime.srv, left) != 0)
		cut = ASB_ETIMEOUT;
	if (cut)
		asb_log(log, ASB_LOG_WARN, "shutdown deadline passed: connections cut", NULL);
	httpd_server_free(d.rest.srv);
	httpd_server_free(d.runtime.srv);
	sbxd_root_free(d.root);
	sbxd_proctable_free(d.cap);
	sbxd_reaper_free(d.reaper);
	pthread_mutex_destroy(&d.cap_lock);
	free(d.metadata);
	asb_metrics_registry_free(metrics);
	asb_log(log, ASB_LOG_INFO, "stopped", NULL);
	asb_logger_free(log);
	return 0;
}
