package sandbox

// The C side: libsandbox's client API (sandbox/client.h, sandbox/handle.h),
// reached through small C functions below. They exist for two reasons:
//
//   - the library records the detail of a failure in thread-local storage
//     (asb_error_last()), and a goroutine may move to another OS thread
//     between two cgo calls, so each wrapper copies that detail into a
//     gosbx_err in the same C call that failed;
//   - the option structs hold `const atomic_int *` fields, which cgo does
//     not translate; the wrappers fill them in C, and Go passes the cancel
//     flag as a void pointer.
//
// Everything Kubernetes- or HTTP-shaped (the claim, the watch, the router
// headers, retries) happens in libsandbox; Go adds the Go shape.

/*
#cgo pkg-config: libsandbox
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include "sandbox/handle.h"

typedef struct {
	int code;
	int http_status;
	char *reason;    // malloc'd
	char *message;   // malloc'd
} gosbx_err;

// Copies the calling thread's last error into e when rc failed.
static int gosbx_take(int rc, gosbx_err *e)
{
	if (rc < 0) {
		const asb_error *a = asb_error_last();
		e->code = rc;
		e->http_status = a->http_status;
		e->reason = strdup(a->reason ? a->reason : "");
		e->message = strdup(a->message ? a->message : "");
	}
	return rc;
}

static void *gosbx_flag_new(void)
{
	atomic_int *f = malloc(sizeof(*f));
	if (f)
		atomic_init(f, 0);
	return f;
}
static void gosbx_flag_set(void *f) { atomic_store((atomic_int *)f, 1); }
static void gosbx_flag_free(void *f) { free(f); }

static int gosbx_init(gosbx_err *e)
{
	int rc = sbx_global_init();
	return gosbx_take(rc < 0 ? rc : 0, e);
}

static int gosbx_client_new(sbx_client **out, const char *kubeconfig, const char *context,
                            long request_timeout_ms, gosbx_err *e)
{
	sbx_client_options o = SBX_CLIENT_OPTIONS_INIT;
	o.kubeconfig = kubeconfig;
	o.context = context;
	if (request_timeout_ms > 0)
		o.request_timeout_ms = request_timeout_ms;
	o.user_agent = "agent-sandbox-go-client";
	return gosbx_take(sbx_client_new(out, &o), e);
}

static const char *gosbx_client_namespace(sbx_client *c) { return sbx_client_namespace(c); }

// How a handle reaches its sandbox (sbx_connection_options, version 1 fields).
typedef struct {
	int mode;
	const char *api_url;
	const char *gateway_name;
	const char *gateway_namespace;
	long gateway_ready_timeout_ms;
	const char *router_namespace;
	long port_forward_ready_timeout_ms;
	const char *kubectl;
	int server_port;
	int max_retries;
} gosbx_conn;

static void gosbx_conn_fill(sbx_connection_options *o, const gosbx_conn *g)
{
	sbx_connection_options d = SBX_CONNECTION_OPTIONS_INIT;
	*o = d;
	o->mode = (sbx_connect_mode)g->mode;
	o->api_url = g->api_url;
	o->gateway_name = g->gateway_name;
	o->gateway_namespace = g->gateway_namespace;
	o->gateway_ready_timeout_ms = g->gateway_ready_timeout_ms;
	o->router_namespace = g->router_namespace;
	o->port_forward_ready_timeout_ms = g->port_forward_ready_timeout_ms;
	o->kubectl = g->kubectl;
	o->server_port = g->server_port;
	o->max_retries = g->max_retries;
}

// What a resolved claim is: the strings are malloc'd.
typedef struct {
	char *claim;
	char *sandbox;
	char *pod_ip;
} gosbx_info;

static char *gosbx_dup(const char *s) { return s ? strdup(s) : NULL; }

// Creates a claim, waits for it (cancel: a gosbx_flag) and makes a handle
// on its sandbox; on a handle failure the claim is deleted.
static int gosbx_create(sbx_handle **out, gosbx_info *info, sbx_client *c, const char *pool,
                        const char *ns, long ready_timeout_ms, void *cancel,
                        const gosbx_conn *g, gosbx_err *e)
{
	sbx_claim_options co = SBX_CLAIM_OPTIONS_INIT;
	co.warm_pool = pool;
	co.ns = ns;
	co.created_by = "go-client";
	co.ready_timeout_ms = ready_timeout_ms;
	co.cancel = cancel;
	sbx_connection_options conn;
	gosbx_conn_fill(&conn, g);
	sbx_claim_info *ci = NULL;
	int rc = sbx_client_create(c, &co, &ci);
	if (rc)
		return gosbx_take(rc, e);
	rc = sbx_handle_new(out, c, ci->ns, ci->claim_name, ci->sandbox_name, ci->pod_ip, &conn);
	gosbx_take(rc, e);
	if (rc)
		sbx_client_delete_claim(c, ci->ns, ci->claim_name);
	info->claim = gosbx_dup(ci->claim_name);
	info->sandbox = gosbx_dup(ci->sandbox_name);
	info->pod_ip = gosbx_dup(ci->pod_ip);
	sbx_claim_info_free(ci);
	return rc;
}

// Waits until an existing claim is Ready and makes a handle on it.
static int gosbx_attach(sbx_handle **out, gosbx_info *info, sbx_client *c, const char *claim,
                        const char *ns, long ready_timeout_ms, void *cancel,
                        const gosbx_conn *g, gosbx_err *e)
{
	sbx_connection_options conn;
	gosbx_conn_fill(&conn, g);
	sbx_claim_info *ci = NULL;
	int rc = sbx_client_wait_claim(c, ns, claim, true, ready_timeout_ms, cancel, &ci);
	if (rc)
		return gosbx_take(rc, e);
	rc = sbx_handle_new(out, c, ci->ns, ci->claim_name, ci->sandbox_name, ci->pod_ip, &conn);
	info->claim = gosbx_dup(ci->claim_name);
	info->sandbox = gosbx_dup(ci->sandbox_name);
	info->pod_ip = gosbx_dup(ci->pod_ip);
	sbx_claim_info_free(ci);
	return gosbx_take(rc, e);
}

static int gosbx_delete_claim(sbx_client *c, const char *ns, const char *name, gosbx_err *e)
{
	return gosbx_take(sbx_client_delete_claim(c, ns, name), e);
}

static int gosbx_list_claims(sbx_client *c, const char *ns, char ***names, size_t *n,
                             gosbx_err *e)
{
	return gosbx_take(sbx_client_list_claims(c, ns, NULL, names, n), e);
}

static char *gosbx_strv_at(char **v, size_t i) { return v[i]; }

static int gosbx_terminate(sbx_handle *h, gosbx_err *e)
{
	return gosbx_take(sbx_handle_terminate(h), e);
}

static int gosbx_pod_name(sbx_handle *h, char **out, gosbx_err *e)
{
	return gosbx_take(sbx_handle_pod_name(h, out), e);
}

static int gosbx_is_active(sbx_handle *h) { return sbx_handle_is_active(h); }

static sbx_call_options gosbx_call(long timeout_ms, int max_retries, unsigned int flags,
                                   void *cancel)
{
	sbx_call_options o = SBX_CALL_OPTIONS_INIT;
	o.timeout_ms = timeout_ms;
	o.max_retries = max_retries;
	o.flags = flags;
	o.cancel = cancel;
	return o;
}

typedef struct {
	char *out;
	size_t out_len;
	char *err;
	size_t err_len;
	int exit_code;
} gosbx_exec;

static int gosbx_run(sbx_handle *h, const char *cmd, long timeout_ms, int max_retries,
                     void *cancel, gosbx_exec *res, gosbx_err *e)
{
	sbx_call_options o = gosbx_call(timeout_ms, max_retries, 0, cancel);
	sbx_exec_result *r = NULL;
	int rc = sbx_handle_run_opts(h, cmd, &o, &r);
	if (rc == 0) {
		// handed over: Go frees both with free()
		res->out = r->out;
		res->out_len = r->out_len;
		res->err = r->err;
		res->err_len = r->err_len;
		res->exit_code = r->exit_code;
		r->out = r->err = NULL;
	}
	sbx_exec_result_free(r);
	return gosbx_take(rc, e);
}

// The Go side of the streaming callbacks (callbacks.go); `ud` is a
// runtime/cgo.Handle.
extern ssize_t goSbxRead(uintptr_t ud, char *buf, size_t cap);
extern int goSbxWrite(uintptr_t ud, char *buf, size_t len);

static ssize_t gosbx_read_cb(void *ud, char *buf, size_t cap)
{
	return goSbxRead((uintptr_t)ud, buf, cap);
}

static int gosbx_write_cb(void *ud, const char *buf, size_t len)
{
	return goSbxWrite((uintptr_t)ud, (char *)buf, len);
}

static int gosbx_upload(sbx_handle *h, const char *path, uintptr_t source, int64_t size,
                        long timeout_ms, int max_retries, void *cancel, gosbx_err *e)
{
	sbx_call_options o = gosbx_call(timeout_ms, max_retries, 0, cancel);
	sbx_upload_source src = { .fd = -1, .read = gosbx_read_cb, .userdata = (void *)source,
	                          .size = size };
	return gosbx_take(sbx_handle_write_opts(h, path, &src, &o), e);
}

static int gosbx_download(sbx_handle *h, const char *path, uintptr_t sink, long timeout_ms,
                          int max_retries, void *cancel, int64_t *written, gosbx_err *e)
{
	sbx_call_options o = gosbx_call(timeout_ms, max_retries, 0, cancel);
	return gosbx_take(sbx_handle_read_cb_opts(h, path, gosbx_write_cb, (void *)sink, &o,
	                                          written), e);
}

static int gosbx_list(sbx_handle *h, const char *path, long timeout_ms, int max_retries,
                      void *cancel, sbx_file_list **out, gosbx_err *e)
{
	sbx_call_options o = gosbx_call(timeout_ms, max_retries, 0, cancel);
	return gosbx_take(sbx_handle_list_opts(h, path, &o, out), e);
}

static sbx_file_entry *gosbx_entry(sbx_file_list *l, size_t i) { return &l->entries[i]; }

static int gosbx_exists(sbx_handle *h, const char *path, long timeout_ms, int max_retries,
                        void *cancel, int *exists, gosbx_err *e)
{
	sbx_call_options o = gosbx_call(timeout_ms, max_retries, 0, cancel);
	bool b = false;
	int rc = sbx_handle_exists_opts(h, path, &o, &b);
	*exists = b;
	return gosbx_take(rc, e);
}
*/
import "C"

import (
	"context"
	"errors"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// The library's error codes the SDK tells apart (k8s/common.h ASB_E*,
// sandbox/client.h SBX_E*).
const (
	codeInvalid          = -3
	codeConfig           = -4
	codeTransport        = -5
	codeCanceled         = -8
	codeTimeout          = -9
	codeTooLarge         = -10
	codeNotFound         = -23
	codeTemplateNotFound = -100
	codeWarmPoolNotFound = -101
	codeInvalidMetadata  = -102
	codeEnvRejected      = -103
	codeVolumeTemplates  = -104
	codeClaimExpired     = -105
	codeSandboxExpired   = -106
	codeClaimDeleted     = -107
	codeRequest          = -110
	codePortForward      = -111
	codeClosed           = -112
	codeUnsupported      = -113
	codeResponse         = -114
)

var initOnce struct {
	sync.Once
	err error
}

// globalInit runs sbx_global_init() once per process (libcurl's global
// state); it is never undone, as the process may keep clients to its end.
func globalInit() error {
	initOnce.Do(func() {
		var e C.gosbx_err
		if C.gosbx_init(&e) < 0 {
			initOnce.err = takeErr("init", &e, nil)
		}
	})
	return initOnce.err
}

// takeErr turns a gosbx_err into an *Error and frees its strings.
func takeErr(op string, e *C.gosbx_err, ctx context.Context) error {
	err := newError(op, int(e.code), int(e.http_status), cstr(e.reason), cstr(e.message), ctx)
	C.free(unsafe.Pointer(e.reason))
	C.free(unsafe.Pointer(e.message))
	e.reason, e.message = nil, nil
	return err
}

func cstr(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// cstrings keeps the C copies of a call's strings until free.
type cstrings []unsafe.Pointer

func (s *cstrings) of(v string) *C.char {
	if v == "" {
		return nil
	}
	p := C.CString(v)
	*s = append(*s, unsafe.Pointer(p))
	return p
}

// must is `of` for strings the C side requires even when empty.
func (s *cstrings) must(v string) *C.char {
	p := C.CString(v)
	*s = append(*s, unsafe.Pointer(p))
	return p
}

func (s *cstrings) free() {
	for _, p := range *s {
		C.free(p)
	}
	*s = nil
}

// cancelFlag is the C flag a call reads (sbx_call_options.cancel,
// sbx_claim_options.cancel), set from another goroutine when the call's
// context ends.
type cancelFlag struct {
	p    unsafe.Pointer
	mu   sync.Mutex
	stop func() bool
}

func watchContext(ctx context.Context) (*cancelFlag, error) {
	p := C.gosbx_flag_new()
	if p == nil {
		return nil, &Error{Op: "cancel", Code: -2, Message: "out of memory"}
	}
	f := &cancelFlag{p: p}
	f.stop = context.AfterFunc(ctx, func() {
		f.mu.Lock()
		if f.p != nil {
			C.gosbx_flag_set(f.p)
		}
		f.mu.Unlock()
	})
	return f, nil
}

// done stops watching and frees the flag (after a running AfterFunc).
func (f *cancelFlag) done() {
	f.stop()
	f.mu.Lock()
	C.gosbx_flag_free(f.p)
	f.p = nil
	f.mu.Unlock()
}

// msUntil is `d`, or the time left before ctx's deadline when that is
// sooner (then byDeadline), in ms (at least 1).
func msUntil(ctx context.Context, d time.Duration) (ms C.long, byDeadline bool) {
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			d, byDeadline = left, true
		}
	}
	if d.Milliseconds() < 1 {
		return 1, byDeadline
	}
	return C.long(d.Milliseconds()), byDeadline
}

// markDeadline: a call whose limit was the context's deadline and that
// timed out (libsandbox's own clock may run out a moment before the
// context's) failed by that deadline: the error is context.DeadlineExceeded too.
func markDeadline(err error, byDeadline bool) error {
	var se *Error
	if !byDeadline || !errors.As(err, &se) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if se.Code == codeTimeout ||
		(se.Code == codeRequest && se.HTTPStatus == 0 && strings.Contains(se.Message, "timed out")) {
		se.wrapped = append(se.wrapped, context.DeadlineExceeded)
	}
	return err
}

// cClient owns a C client. It is freed by the garbage collector once
// nothing refers to it: the Client, every Sandbox made from it and every
// call in flight (which ends with keepAlive) do. libsandbox counts its own
// references too, so a C handle outlives the client it came from.
type cClient struct{ p *C.sbx_client }

func newCClient(p *C.sbx_client) *cClient {
	c := &cClient{p: p}
	runtime.AddCleanup(c, func(p *C.sbx_client) { C.sbx_client_free(p) }, p)
	return c
}

// cHandle owns a C sandbox handle, freed as cClient is; Close and
// Disconnect close its connection (tunnel, pooled connections) at once.
type cHandle struct{ p *C.sbx_handle }

func newCHandle(p *C.sbx_handle) *cHandle {
	h := &cHandle{p: p}
	runtime.AddCleanup(h, func(p *C.sbx_handle) { C.sbx_handle_free(p) }, p)
	return h
}

// blocking runs a C call that cannot be interrupted (one Kubernetes API
// request, bounded by Options.APIRequestTimeout per try) on a goroutine
// of its own, and returns when it does or when ctx ends, whichever is
// first. Abandoned, the call still runs to its end (its references keep
// what it uses alive); its result is dropped.
func blocking(ctx context.Context, call func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// keepAlive is runtime.KeepAlive, named for the C calls it guards.
func keepAlive(v any) { runtime.KeepAlive(v) }

// ---- calls (each copies its strings to C and frees them after) ----

// connSpec is how handles reach their sandbox (gosbx_conn).
type connSpec struct {
	mode              int // 0 tunnel, 1 gateway, 2 direct (sandbox/handle.h)
	apiURL            string
	gatewayName       string
	gatewayNamespace  string
	gatewayTimeout    time.Duration
	routerNamespace   string
	portForwardTimout time.Duration
	kubectl           string
	serverPort        int
	maxRetries        int
}

func (c connSpec) fill(cs *cstrings) C.gosbx_conn {
	return C.gosbx_conn{
		mode:                          C.int(c.mode),
		api_url:                       cs.of(c.apiURL),
		gateway_name:                  cs.of(c.gatewayName),
		gateway_namespace:             cs.of(c.gatewayNamespace),
		gateway_ready_timeout_ms:      C.long(c.gatewayTimeout.Milliseconds()),
		router_namespace:              cs.of(c.routerNamespace),
		port_forward_ready_timeout_ms: C.long(c.portForwardTimout.Milliseconds()),
		kubectl:                       cs.of(c.kubectl),
		server_port:                   C.int(c.serverPort),
		max_retries:                   C.int(c.maxRetries),
	}
}

// claimInfo is what a resolved claim is.
type claimInfo struct{ claim, sandbox, podIP string }

func takeInfo(i *C.gosbx_info) claimInfo {
	r := claimInfo{cstr(i.claim), cstr(i.sandbox), cstr(i.pod_ip)}
	C.free(unsafe.Pointer(i.claim))
	C.free(unsafe.Pointer(i.sandbox))
	C.free(unsafe.Pointer(i.pod_ip))
	return r
}

func cNewClient(kubeconfig, kubeContext string, apiTimeout time.Duration) (*cClient, error) {
	if err := globalInit(); err != nil {
		return nil, err
	}
	var cs cstrings
	defer cs.free()
	var p *C.sbx_client
	var e C.gosbx_err
	if C.gosbx_client_new(&p, cs.of(kubeconfig), cs.of(kubeContext),
		C.long(apiTimeout.Milliseconds()), &e) < 0 {
		return nil, takeErr("new client", &e, nil)
	}
	return newCClient(p), nil
}

// create claims a sandbox from `pool` and waits until it is Ready; the
// context's end stops the wait (and deletes the claim).
func (c *cClient) create(ctx context.Context, pool, ns string, ready time.Duration,
	conn connSpec) (*cHandle, claimInfo, error) {
	return c.resolve(ctx, "create", pool, ns, ready, conn, true)
}

// attach waits until existing claim `claim` is Ready and makes a handle.
func (c *cClient) attach(ctx context.Context, claim, ns string, ready time.Duration,
	conn connSpec) (*cHandle, claimInfo, error) {
	return c.resolve(ctx, "get", claim, ns, ready, conn, false)
}

func (c *cClient) resolve(ctx context.Context, op, name, ns string, ready time.Duration,
	conn connSpec, create bool) (*cHandle, claimInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, claimInfo{}, ctxError(op, err)
	}
	f, err := watchContext(ctx)
	if err != nil {
		return nil, claimInfo{}, err
	}
	defer f.done()
	var cs cstrings
	defer cs.free()
	cc := conn.fill(&cs)
	var p *C.sbx_handle
	var info C.gosbx_info
	var e C.gosbx_err
	var rc C.int
	ms, byDeadline := msUntil(ctx, ready)
	if create {
		rc = C.gosbx_create(&p, &info, c.p, cs.must(name), cs.must(ns), ms, f.p, &cc, &e)
	} else {
		rc = C.gosbx_attach(&p, &info, c.p, cs.must(name), cs.must(ns), ms, f.p, &cc, &e)
	}
	keepAlive(c)
	ci := takeInfo(&info)
	if rc < 0 {
		return nil, ci, markDeadline(takeErr(op, &e, ctx), byDeadline)
	}
	return newCHandle(p), ci, nil
}

// deleteClaim deletes claim ns/name; a claim already gone is not an error.
// One Kubernetes request: not interruptible.
func (c *cClient) deleteClaim(ns, name string) error {
	var cs cstrings
	defer cs.free()
	var e C.gosbx_err
	rc := C.gosbx_delete_claim(c.p, cs.must(ns), cs.must(name), &e)
	keepAlive(c)
	if rc == codeNotFound {
		takeErr("delete", &e, nil)
		return nil
	}
	if rc < 0 {
		return takeErr("delete", &e, nil)
	}
	return nil
}

// listClaims lists the claim names of `ns` (one request: not interruptible).
func (c *cClient) listClaims(ns string) ([]string, error) {
	var cs cstrings
	defer cs.free()
	var v **C.char
	var n C.size_t
	var e C.gosbx_err
	rc := C.gosbx_list_claims(c.p, cs.must(ns), &v, &n, &e)
	keepAlive(c)
	if rc < 0 {
		return nil, takeErr("list", &e, nil)
	}
	defer C.sbx_strv_free(v)
	names := make([]string, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		names = append(names, C.GoString(C.gosbx_strv_at(v, i)))
	}
	return names, nil
}

func (h *cHandle) close() {
	C.sbx_handle_close(h.p)
	keepAlive(h)
}

func (h *cHandle) isActive() bool {
	r := C.gosbx_is_active(h.p) != 0
	keepAlive(h)
	return r
}

// podName reads the pod's name (one Kubernetes request: not interruptible).
func (h *cHandle) podName() (string, error) {
	var out *C.char
	var e C.gosbx_err
	rc := C.gosbx_pod_name(h.p, &out, &e)
	keepAlive(h)
	if rc < 0 {
		return "", takeErr("pod name", &e, nil)
	}
	defer C.sbx_free(unsafe.Pointer(out))
	return C.GoString(out), nil
}

// call is what every sandbox request shares: the cancel flag watching the
// context and the time the request may take.
type call struct {
	ctx        context.Context
	flag       *cancelFlag
	timeout    C.long
	byDeadline bool
	retries    C.int
}

// fail is the error of a failed request.
func (c *call) fail(op string, e *C.gosbx_err) error {
	return markDeadline(takeErr(op, e, c.ctx), c.byDeadline)
}

func startCall(ctx context.Context, op string, timeout time.Duration, retries int) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, ctxError(op, err)
	}
	f, err := watchContext(ctx)
	if err != nil {
		return nil, err
	}
	ms, byDeadline := msUntil(ctx, timeout)
	return &call{ctx: ctx, flag: f, timeout: ms, byDeadline: byDeadline, retries: C.int(retries)}, nil
}

func (h *cHandle) run(c *call, command string) (*ExecutionResult, error) {
	var cs cstrings
	defer cs.free()
	var res C.gosbx_exec
	var e C.gosbx_err
	rc := C.gosbx_run(h.p, cs.must(command), c.timeout, c.retries, c.flag.p, &res, &e)
	keepAlive(h)
	if rc < 0 {
		return nil, c.fail("run", &e)
	}
	r := &ExecutionResult{
		Stdout:   C.GoStringN(res.out, C.int(res.out_len)),
		Stderr:   C.GoStringN(res.err, C.int(res.err_len)),
		ExitCode: int(res.exit_code),
	}
	C.free(unsafe.Pointer(res.out))
	C.free(unsafe.Pointer(res.err))
	return r, nil
}

func (h *cHandle) upload(c *call, path string, u *upload, size int64) error {
	var cs cstrings
	defer cs.free()
	ud := cgo.NewHandle(u)
	defer ud.Delete()
	var e C.gosbx_err
	rc := C.gosbx_upload(h.p, cs.must(path), C.uintptr_t(ud), C.int64_t(size), c.timeout,
		c.retries, c.flag.p, &e)
	keepAlive(h)
	if rc < 0 {
		return c.fail("write", &e)
	}
	return nil
}

func (h *cHandle) download(c *call, path string, d *download) error {
	var cs cstrings
	defer cs.free()
	ud := cgo.NewHandle(d)
	defer ud.Delete()
	var written C.int64_t
	var e C.gosbx_err
	rc := C.gosbx_download(h.p, cs.must(path), C.uintptr_t(ud), c.timeout, c.retries, c.flag.p,
		&written, &e)
	keepAlive(h)
	if rc < 0 {
		return c.fail("read", &e)
	}
	return nil
}

func (h *cHandle) list(c *call, path string) ([]FileEntry, error) {
	var cs cstrings
	defer cs.free()
	var l *C.sbx_file_list
	var e C.gosbx_err
	rc := C.gosbx_list(h.p, cs.must(path), c.timeout, c.retries, c.flag.p, &l, &e)
	keepAlive(h)
	if rc < 0 {
		return nil, c.fail("list", &e)
	}
	defer C.sbx_file_list_free(l)
	out := make([]FileEntry, 0, int(l.count))
	for i := C.size_t(0); i < l.count; i++ {
		en := C.gosbx_entry(l, i)
		t := FileTypeFile
		if en.is_dir {
			t = FileTypeDirectory
		}
		out = append(out, FileEntry{Name: C.GoString(en.name), Size: int64(en.size), Type: t,
			ModTime: float64(en.mod_time)})
	}
	return out, nil
}

func (h *cHandle) exists(c *call, path string) (bool, error) {
	var cs cstrings
	defer cs.free()
	var ex C.int
	var e C.gosbx_err
	rc := C.gosbx_exists(h.p, cs.must(path), c.timeout, c.retries, c.flag.p, &ex, &e)
	keepAlive(h)
	if rc < 0 {
		return false, c.fail("exists", &e)
	}
	return ex != 0, nil
}

func (c *call) end() { c.flag.done() }
