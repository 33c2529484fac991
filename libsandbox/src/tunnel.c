/*
 * tunnel.c - the local tunnel of upstream's default connection mode
 * (docs/upstream.md#connection-configs): `kubectl port-forward svc/sandbox-router-svc
 * <free local port>:8080 -n <router namespace>`, ready once the local
 * port accepts a connection (tried every 50 ms), stopped with SIGTERM and,
 * after 2 s, SIGKILL. kubectl's stderr goes to an anonymous memory file,
 * so a chatty kubectl never blocks on a full pipe and its last words are
 * there to quote when it dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "handle_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"

extern char **environ;

struct sbx_tunnel {
	pid_t pid;
	int port;
	int err_fd;        /* kubectl's stderr (memfd) */
	bool exited;
	int status;
};

/* A loopback port free right now (the kernel's pick). */
static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int port = -1;
	if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(s, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (s >= 0)
		close(s);
	return port;
}

static bool port_accepts(int port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (s >= 0)
		close(s);
	return ok;
}

/* The last bytes kubectl wrote to stderr, trimmed, into buf. */
static const char *stderr_tail(sbx_tunnel *t, char *buf, size_t cap)
{
	off_t end = lseek(t->err_fd, 0, SEEK_END);
	off_t from = end > (off_t)(cap - 1) ? end - (off_t)(cap - 1) : 0;
	ssize_t n = end > 0 ? pread(t->err_fd, buf, cap - 1, from) : 0;
	buf[n > 0 ? n : 0] = '\0';
	for (size_t l = strlen(buf); l > 0 && (buf[l - 1] == '\n' || buf[l - 1] == ' '); l--)
		buf[l - 1] = '\0';
	return buf;
}

bool sbx__tunnel_alive(sbx_tunnel *t)
{
	if (!t->exited && waitpid(t->pid, &t->status, WNOHANG) == t->pid)
		t->exited = true;
	if (!t->exited)
		return true;
	char tail[512];
	asb_error_set(SBX_EPORTFORWARD, 0, NULL, "kubectl port-forward exited (%s %d): %s",
	              WIFSIGNALED(t->status) ? "signal" : "status",
	              WIFSIGNALED(t->status) ? WTERMSIG(t->status) : WEXITSTATUS(t->status),
	              stderr_tail(t, tail, sizeof(tail)));
	return false;
}

int sbx__tunnel_port(const sbx_tunnel *t)
{
	return t->port;
}

void sbx__tunnel_stop(sbx_tunnel *t)
{
	if (!t)
		return;
	if (!t->exited) {
		kill(t->pid, SIGTERM);
		int64_t deadline = k8s_monotonic_ms() + 2000;
		while (waitpid(t->pid, &t->status, WNOHANG) != t->pid) {
			if (k8s_monotonic_ms() >= deadline) {
				kill(t->pid, SIGKILL);
				waitpid(t->pid, &t->status, 0);
				break;
			}
			sbx__sleep_ms(20);
		}
		t->exited = true;
	}
	close(t->err_fd);
	free(t);
}

int sbx__tunnel_start(sbx_tunnel **out, const char *kubectl, const char *kubeconfig,
                      const char *context, const char *ns, const char *target, int remote_port,
                      long ready_timeout_ms)
{
	*out = NULL;
	int port = free_port();
	if (port < 0)
		return asb_error_set(SBX_EPORTFORWARD, 0, NULL, "no free local port for the tunnel: %s",
		                     strerror(errno));
	char ports[32];
	snprintf(ports, sizeof(ports), "%d:%d", port, remote_port);
	const char *argv[16];
	int argc = 0;
	argv[argc++] = kubectl;
	argv[argc++] = "port-forward";
	argv[argc++] = target;
	argv[argc++] = ports;
	argv[argc++] = "-n";
	argv[argc++] = ns;
	argv[argc++] = "--address";
	argv[argc++] = "127.0.0.1";
	if (!ju_empty(kubeconfig)) {
		argv[argc++] = "--kubeconfig";
		argv[argc++] = kubeconfig;
	}
	if (!ju_empty(context)) {
		argv[argc++] = "--context";
		argv[argc++] = context;
	}
	argv[argc] = NULL;

	sbx_tunnel *t = calloc(1, sizeof(*t));
	if (!t)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	t->port = port;
	t->err_fd = memfd_create("kubectl-port-forward-stderr", MFD_CLOEXEC);
	if (t->err_fd < 0) {
		free(t);
		return asb_error_set(SBX_EPORTFORWARD, 0, NULL, "memfd_create: %s", strerror(errno));
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, t->err_fd, 2);
	/* nothing else of this process (API connections, other tunnels) */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	int e = posix_spawnp(&t->pid, kubectl, &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0) {
		close(t->err_fd);
		free(t);
		return asb_error_set(SBX_EPORTFORWARD, 0, NULL, "cannot run %s port-forward: %s",
		                     kubectl, strerror(e));
	}
	int64_t deadline = k8s_monotonic_ms() + ready_timeout_ms;
	for (;;) {
		if (port_accepts(port)) {
			*out = t;
			return 0;
		}
		if (!sbx__tunnel_alive(t)) {
			asb_error saved = *asb_error_last();
			char msg[1024];
			snprintf(msg, sizeof(msg), "%s", saved.message);
			sbx__tunnel_stop(t);
			return asb_error_set(SBX_EPORTFORWARD, 0, NULL, "%s", msg);
		}
		if (k8s_monotonic_ms() >= deadline) {
			sbx__tunnel_stop(t);
			return asb_error_set(ASB_ETIMEOUT, 0, NULL, "kubectl port-forward to %s/%s was not "
			                     "ready within %g seconds", ns, target,
			                     (double)ready_timeout_ms / 1000.0);
		}
		sbx__sleep_ms(50);
	}
}
