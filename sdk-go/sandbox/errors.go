package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors, for errors.Is. The first ten carry upstream's Go
// client's names and meanings; the others are this SDK's.
var (
	// ErrNotReady: the sandbox is not open (never opened, closed, or
	// disconnected). Call Open.
	ErrNotReady = errors.New("sandbox is not ready")
	// ErrTimeout: the sandbox (or the Gateway's address) was not ready
	// within SandboxReadyTimeout (GatewayReadyTimeout).
	ErrTimeout = errors.New("operation timed out")
	// ErrClaimFailed: the controller failed the claim for good
	// (InvalidMetadata, EnvVarsInjectionRejected, VolumeClaimTemplatesError,
	// ClaimExpired, SandboxExpired; Error.Reason says which).
	ErrClaimFailed = errors.New("claim creation failed")
	// ErrPortForwardDied: the local kubectl port-forward could not start
	// or died; the next call starts a new one.
	ErrPortForwardDied = errors.New("port-forward connection lost")
	// ErrAlreadyOpen: Open on a sandbox that is open.
	ErrAlreadyOpen = errors.New("sandbox is already open; call Close first")
	// ErrOrphanedClaim: Close could not delete the claim; call Close again.
	ErrOrphanedClaim = errors.New("orphaned claim; call Close() to retry deletion")
	// ErrRetriesExhausted: no answer, or 500/502/503/504, after the retries.
	ErrRetriesExhausted = errors.New("retries exhausted")
	// ErrSandboxDeleted: the claim or its Sandbox was deleted while the
	// client waited for it or used it.
	ErrSandboxDeleted = errors.New("sandbox was deleted before becoming ready")
	// ErrGatewayDeleted is never returned here: a Gateway without an
	// address is waited for until GatewayReadyTimeout (ErrTimeout).
	ErrGatewayDeleted = errors.New("gateway was deleted during address discovery")
	// ErrResponseTooLarge: an answer over the limit (Read: MaxDownloadSize;
	// Run, List, Exists: 64 MiB).
	ErrResponseTooLarge = errors.New("response exceeded the size limit")

	// ErrNotFound: the claim (GetSandbox, DeleteSandbox) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTemplateNotFound: the warm pool's SandboxTemplate does not exist
	// (the claim's Ready condition says TemplateNotFound).
	ErrTemplateNotFound = errors.New("sandbox template not found")
	// ErrWarmPoolNotFound: the SandboxWarmPool does not exist.
	ErrWarmPoolNotFound = errors.New("sandbox warm pool not found")
	// ErrInvalidArgument: an argument or option was refused before
	// anything was sent (the message names it).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrBadResponse: the sandbox answered something the runtime API does
	// not define.
	ErrBadResponse = errors.New("invalid response from the sandbox")
	// ErrUnsupported: the sandbox's runtime does not offer the call.
	ErrUnsupported = errors.New("not supported by the sandbox runtime")
)

// HTTPError is an error status the router or the sandbox answered
// (upstream's type). Body is the head of the answer's body as
// libsandbox quotes it (at most 300 bytes).
type HTTPError struct {
	StatusCode int
	Body       string
	Operation  string
}

func (e *HTTPError) Error() string {
	body := e.Body
	if len(body) > 256 {
		body = body[:256] + "... [truncated]"
	}
	return fmt.Sprintf("%s returned status %d: %s", e.Operation, e.StatusCode, body)
}

// Error is what every call that reached libsandbox returns on failure:
// the library's code and message, with the sentinels above, an
// *HTTPError and, for a call its context ended, context.Canceled or
// context.DeadlineExceeded reachable through errors.Is / errors.As.
type Error struct {
	Op         string // the call: "create", "run", "write", "read", ...
	Code       int    // libsandbox's code (ASB_E*, SBX_E*; negative)
	Reason     string // the Kubernetes Status reason or the claim condition's reason, or ""
	HTTPStatus int    // the HTTP status of the failed answer, or 0
	Message    string // libsandbox's message (names the object and the cause)
	wrapped    []error
}

func (e *Error) Error() string { return "sandbox: " + e.Op + ": " + e.Message }

// Unwrap gives errors.Is and errors.As the sentinels, *HTTPError and
// context errors this error stands for.
func (e *Error) Unwrap() []error { return e.wrapped }

// newError classifies a failure of libsandbox (ctx: the call's context,
// nil when it had none).
func newError(op string, code, status int, reason, msg string, ctx context.Context) *Error {
	e := &Error{Op: op, Code: code, Reason: reason, HTTPStatus: status, Message: msg}
	add := func(err error) { e.wrapped = append(e.wrapped, err) }
	switch code {
	case codeCanceled:
		if ctx != nil && ctx.Err() != nil {
			add(ctx.Err())
		} else {
			add(context.Canceled)
		}
	case codeTimeout:
		add(ErrTimeout)
	case codeInvalid:
		add(ErrInvalidArgument)
	case codeNotFound:
		add(ErrNotFound)
		if strings.Contains(msg, "deleted while this client was using it") {
			add(ErrSandboxDeleted)
		}
	case codeTemplateNotFound:
		add(ErrTemplateNotFound)
	case codeWarmPoolNotFound:
		add(ErrWarmPoolNotFound)
	case codeInvalidMetadata, codeEnvRejected, codeVolumeTemplates, codeClaimExpired,
		codeSandboxExpired:
		add(ErrClaimFailed)
	case codeClaimDeleted:
		add(ErrSandboxDeleted)
	case codePortForward:
		add(ErrPortForwardDied)
	case codeClosed:
		add(ErrNotReady)
	case codeTooLarge:
		add(ErrResponseTooLarge)
	case codeResponse:
		add(ErrBadResponse)
	case codeUnsupported:
		add(ErrUnsupported)
	case codeRequest:
		if status == 0 || status == 500 || status == 502 || status == 503 || status == 504 {
			add(ErrRetriesExhausted)
		}
		if status > 0 {
			add(&HTTPError{StatusCode: status, Body: httpBody(msg, status), Operation: op})
		}
	}
	// A request that failed as its deadline passed (libcurl's own timeout,
	// set from the deadline, may fire before the cancel flag is read) is
	// the context's error too.
	if code != codeCanceled && ctx != nil && ctx.Err() != nil {
		add(ctx.Err())
	}
	return e
}

// httpBody is the body libsandbox quotes after "HTTP <status>: ".
func httpBody(msg string, status int) string {
	mark := "HTTP " + strconv.Itoa(status) + ": "
	if i := strings.Index(msg, mark); i >= 0 {
		return msg[i+len(mark):]
	}
	return msg
}

// invalid is an ErrInvalidArgument raised in Go, before any C call.
func invalid(op, format string, args ...any) error {
	return &Error{Op: op, Code: codeInvalid, Message: fmt.Sprintf(format, args...),
		wrapped: []error{ErrInvalidArgument}}
}

// ctxError wraps the error of a context that ended before or during a call
// that the C side could not see end (blocking()).
func ctxError(op string, err error) error {
	return &Error{Op: op, Code: codeCanceled, Message: err.Error(), wrapped: []error{err}}
}
