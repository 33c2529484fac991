/*
 * pause: the process of a pod's sandbox container, what the kubelet runs (as
 * containerd's sandbox_image, registry.k8s.io/pause) to hold the pod's network,
 * IPC and, with shareProcessNamespace, PID namespaces while the pod's own
 * containers come and go.
 *
 * tools/images builds it (gcc -static -Os) into an image from scratch, because
 * this machine cannot pull the upstream one. It behaves as upstream's
 * build/pause/linux/pause.c does:
 *   - SIGINT and SIGTERM end it with status 0 (the runtime stops the sandbox);
 *   - as PID 1 of a shared PID namespace it adopts orphans, so SIGCHLD reaps
 *     every child that has exited;
 *   - every other signal is blocked, and it sleeps until one of those comes;
 *   - `pause -v` prints its version.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAUSE_VERSION "3.10"

static void on_stop(int sig)
{
    (void)sig;
    _exit(0);
}

static void on_child(int sig)
{
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        printf("pause.c %s (agent-sandbox tools/localcluster/pause.c)\n", PAUSE_VERSION);
        return 0;
    }
    if (getpid() != 1)
        fprintf(stderr, "Warning: pause should be the first process\n");

    /* Block everything first, so that nothing arrives before the handlers. */
    sigset_t all, wait_for;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigfillset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
        perror("pause: sigaction");
        return 1;
    }
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    if (sigaction(SIGCHLD, &sa, NULL) < 0) {
        perror("pause: sigaction");
        return 1;
    }

    /* Sleep with only SIGINT, SIGTERM and SIGCHLD deliverable. */
    sigfillset(&wait_for);
    sigdelset(&wait_for, SIGINT);
    sigdelset(&wait_for, SIGTERM);
    sigdelset(&wait_for, SIGCHLD);
    for (;;)
        sigsuspend(&wait_for);
}
