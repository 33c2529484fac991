/*
 * live.h - what the libk8s integration programs share: connect to the
 * cluster named by $KUBECONFIG, make throw-away namespaces, run a Check
 * suite in-process and clean up.
 */
#ifndef LIVE_H
#define LIVE_H

#include <check.h>
#include "k8s/client.h"

/**
 * Initialises libk8s and returns an admin client from $KUBECONFIG; exits
 * the program with a message naming `prog` when it is unset or unusable.
 */
k8s_client *live_connect(const char *prog);

/**
 * Creates namespace "<prefix>-<pid>" and writes its name into `ns` (`cap`
 * bytes); exits the program with a message when that fails.
 */
void live_namespace(k8s_client *c, const char *prog, const char *prefix,
                    char *ns, size_t cap);

/** Runs `s` without forking (the tests share the client) and returns the failure count. */
int live_run(Suite *s);

/** Deletes namespace `ns` (errors ignored: the cluster is thrown away anyway). */
void live_delete_namespace(k8s_client *c, const char *ns);

#endif
