/*
 * httpserver_internal.h - what the built-in handlers need from the server
 * beyond the public API: a route whose userdata the server owns.
 */
#ifndef K8S_HTTPSERVER_INTERNAL_H
#define K8S_HTTPSERVER_INTERNAL_H

#include "k8s/httpserver.h"

/**
 * As k8s_http_server_route(), and the server calls `free_userdata` on
 * `userdata` when it is freed (also when this call fails).
 */
int k8s__http_server_route_owned(k8s_http_server *s, const char *method,
                                 const char *path, k8s_http_handler_fn fn,
                                 void *userdata, void (*free_userdata)(void *));

#endif
