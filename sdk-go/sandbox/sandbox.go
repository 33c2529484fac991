package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Sandbox is one sandbox: its claim, and the way to run commands and move
// files in it. Safe for concurrent use; calls run in parallel.
type Sandbox struct {
	opts Options
	cl   *cClient

	lifecycle sync.Mutex // serialises Open, Close and Disconnect

	mu          sync.Mutex
	h           *cHandle // nil unless open
	claimName   string
	sandboxName string
	podName     string
	podIP       string

	commands *Commands
	files    *Files
}

// New makes a Sandbox with its own connection to the cluster; Open claims
// it (from opts.WarmPoolName). Nothing is sent yet.
func New(_ context.Context, opts Options) (*Sandbox, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cl, err := cNewClient(opts.Kubeconfig, opts.Context, opts.APIRequestTimeout)
	if err != nil {
		return nil, err
	}
	return newSandbox(opts, cl), nil
}

func newSandbox(opts Options, cl *cClient) *Sandbox {
	s := &Sandbox{opts: opts, cl: cl}
	s.commands = &Commands{s: s}
	s.files = &Files{s: s}
	return s
}

func (s *Sandbox) conn() connSpec {
	c := connSpec{
		mode:              0,
		routerNamespace:   s.opts.RouterNamespace,
		portForwardTimout: s.opts.PortForwardReadyTimeout,
		gatewayTimeout:    s.opts.GatewayReadyTimeout,
		kubectl:           s.opts.Kubectl,
		serverPort:        s.opts.ServerPort,
		maxRetries:        s.opts.MaxRetries,
	}
	if c.routerNamespace == "" {
		c.routerNamespace = s.opts.Namespace
	}
	switch {
	case s.opts.APIURL != "":
		c.mode, c.apiURL = 2, s.opts.APIURL
	case s.opts.GatewayName != "":
		c.mode, c.gatewayName, c.gatewayNamespace = 1, s.opts.GatewayName, s.opts.GatewayNamespace
	}
	return c
}

// Open claims a sandbox from WarmPoolName and waits until it is Ready
// (SandboxReadyTimeout, or the context's deadline if sooner). On a
// sandbox that was disconnected, or found by GetSandbox, it waits for the
// existing claim instead. Ending the context ends the wait within a
// second; a claim this call created is then deleted.
func (s *Sandbox) Open(ctx context.Context) error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.mu.Lock()
	h, claim := s.h, s.claimName
	s.mu.Unlock()
	if h != nil && h.isActive() {
		return ErrAlreadyOpen
	}
	var (
		ci  claimInfo
		err error
	)
	if claim != "" {
		h, ci, err = s.cl.attach(ctx, claim, s.opts.Namespace, s.opts.SandboxReadyTimeout, s.conn())
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrSandboxDeleted) {
			s.mu.Lock()
			s.claimName, s.sandboxName, s.podName, s.podIP = "", "", "", ""
			s.mu.Unlock()
		}
	} else {
		if s.opts.WarmPoolName == "" {
			return invalid("create", "WarmPoolName is required")
		}
		if err := noNUL("create", s.opts.WarmPoolName, s.opts.Namespace); err != nil {
			return err
		}
		h, ci, err = s.cl.create(ctx, s.opts.WarmPoolName, s.opts.Namespace,
			s.opts.SandboxReadyTimeout, s.conn())
	}
	if err != nil {
		return err
	}
	// The pod's name (a warm pool's pod keeps its own): one read, which
	// the context can abandon; the name stays "" if it fails.
	var pod string
	_ = blocking(ctx, func() error {
		var perr error
		pod, perr = h.podName()
		return perr
	})
	s.mu.Lock()
	s.h = h
	s.claimName, s.sandboxName, s.podIP = ci.claim, ci.sandbox, ci.podIP
	s.podName = pod
	s.mu.Unlock()
	return nil
}

// Close deletes the claim (the controller then removes the Sandbox and its
// pod) and closes the connection. The deletion is not bound to ctx (a
// cancelled context still cleans up, as upstream); Close waits for it up
// to CleanupTimeout. When it fails, the claim name is kept and the error
// wraps ErrOrphanedClaim: call Close again.
func (s *Sandbox) Close(ctx context.Context) error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.mu.Lock()
	h, claim := s.h, s.claimName
	s.h = nil
	s.mu.Unlock()
	if h != nil {
		h.close()
	}
	if claim == "" {
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- s.cl.deleteClaim(s.opts.Namespace, claim) }()
	timer := time.NewTimer(s.opts.CleanupTimeout)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		err = fmt.Errorf("the deletion did not finish within %s", s.opts.CleanupTimeout)
	}
	if err != nil {
		return fmt.Errorf("sandbox[%s/%s]: close: %w: %w", s.opts.Namespace, claim,
			ErrOrphanedClaim, err)
	}
	s.mu.Lock()
	if s.claimName == claim {
		s.claimName, s.sandboxName, s.podName, s.podIP = "", "", "", ""
	}
	s.mu.Unlock()
	return nil
}

// Disconnect closes the connection and keeps the claim: the sandbox lives
// on, and Open attaches to it again.
func (s *Sandbox) Disconnect(_ context.Context) error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.mu.Lock()
	h := s.h
	s.h = nil
	s.mu.Unlock()
	if h != nil {
		h.close()
	}
	return nil
}

// IsReady is true while the sandbox is open.
func (s *Sandbox) IsReady() bool {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	return h != nil && h.isActive()
}

// ClaimName is the SandboxClaim's name ("" before Open and after Close).
func (s *Sandbox) ClaimName() string { s.mu.Lock(); defer s.mu.Unlock(); return s.claimName }

// SandboxName is the Sandbox's name (the router's X-Sandbox-ID).
func (s *Sandbox) SandboxName() string { s.mu.Lock(); defer s.mu.Unlock(); return s.sandboxName }

// PodName is the pod's name, read at Open ("" if that read failed).
func (s *Sandbox) PodName() string { s.mu.Lock(); defer s.mu.Unlock(); return s.podName }

// PodIP is the pod's IP as the claim reported it when Ready, or "".
func (s *Sandbox) PodIP() string { s.mu.Lock(); defer s.mu.Unlock(); return s.podIP }

// Namespace is the claim's namespace.
func (s *Sandbox) Namespace() string { return s.opts.Namespace }

// Commands is the sandbox's command half (upstream's).
func (s *Sandbox) Commands() *Commands { return s.commands }

// Files is the sandbox's file half (upstream's).
func (s *Sandbox) Files() *Files { return s.files }

func (s *Sandbox) Run(ctx context.Context, command string, opts ...CallOption) (*ExecutionResult, error) {
	return s.commands.Run(ctx, command, opts...)
}
func (s *Sandbox) Write(ctx context.Context, path string, content []byte, opts ...CallOption) error {
	return s.files.Write(ctx, path, content, opts...)
}
func (s *Sandbox) WriteFrom(ctx context.Context, path string, r io.Reader, opts ...CallOption) (int64, error) {
	return s.files.WriteFrom(ctx, path, r, opts...)
}
func (s *Sandbox) Read(ctx context.Context, path string, opts ...CallOption) ([]byte, error) {
	return s.files.Read(ctx, path, opts...)
}
func (s *Sandbox) ReadTo(ctx context.Context, path string, w io.Writer, opts ...CallOption) (int64, error) {
	return s.files.ReadTo(ctx, path, w, opts...)
}
func (s *Sandbox) List(ctx context.Context, path string, opts ...CallOption) ([]FileEntry, error) {
	return s.files.List(ctx, path, opts...)
}
func (s *Sandbox) Exists(ctx context.Context, path string, opts ...CallOption) (bool, error) {
	return s.files.Exists(ctx, path, opts...)
}

// begin is the start of every sandbox request: the open handle, and the
// call's timeout, retries and cancel flag.
func (s *Sandbox) begin(ctx context.Context, op string, args []string, opts []CallOption) (*cHandle, *call, error) {
	if err := noNUL(op, args...); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h == nil {
		return nil, nil, &Error{Op: op, Code: codeClosed, Message: "the sandbox is not open",
			wrapped: []error{ErrNotReady}}
	}
	var co callOptions
	for _, o := range opts {
		o(&co)
	}
	timeout := s.opts.RequestTimeout
	if co.timeout > 0 {
		timeout = co.timeout
	}
	retries := -1 // the handle's: MaxRetries
	if co.maxAttempts > 0 {
		retries = co.maxAttempts - 1
	}
	c, err := startCall(ctx, op, timeout, retries)
	if err != nil {
		return nil, nil, err
	}
	return h, c, nil
}

// noNUL refuses strings C would cut short.
func noNUL(op string, args ...string) error {
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid(op, "%q holds a NUL character", a)
		}
	}
	return nil
}

// Commands runs commands in a sandbox.
type Commands struct{ s *Sandbox }

// Run runs `command` in the sandbox (split shell-style by the runtime, no
// shell) and returns its output and exit code; a command that fails is a
// result, not an error. Ending the context abandons the request within
// about a second (the command may still run to its end in the sandbox).
func (c *Commands) Run(ctx context.Context, command string, opts ...CallOption) (*ExecutionResult, error) {
	if command == "" {
		return nil, invalid("run", "a command is required")
	}
	h, cl, err := c.s.begin(ctx, "run", []string{command}, opts)
	if err != nil {
		return nil, err
	}
	defer cl.end()
	return h.run(cl, command)
}

// Files moves files in and out of a sandbox. Paths are relative to the
// sandbox's root (a leading "/" is dropped, "a/../b" is "b", a path
// leaving the root is refused: ErrInvalidArgument); missing directories
// are created on write.
type Files struct{ s *Sandbox }

// Write writes `content` to `path`. It is WriteFrom over a bytes.Reader:
// streamed from the slice, never copied.
func (f *Files) Write(ctx context.Context, path string, content []byte, opts ...CallOption) error {
	_, err := f.WriteFrom(ctx, path, bytes.NewReader(content), opts...)
	return err
}

// WriteFrom writes what `r` gives until io.EOF to `path`, streaming it
// through one buffer of libcurl's (128 KiB): memory stays flat whatever
// the size. The length is sent when known (r has Len() int, like
// bytes.Reader, or is a regular *os.File), else the body is chunked. More
// than MaxUploadSize bytes is refused (before sending when the length is
// known). A reader error ends the upload and is wrapped in the result.
// Returns the bytes taken from r. A try whose connection could not be made
// is sent again only while nothing was read from r; past that a failure
// ends the call (r is not rewound).
func (f *Files) WriteFrom(ctx context.Context, path string, r io.Reader, opts ...CallOption) (int64, error) {
	if r == nil {
		return 0, invalid("write", "a reader is required")
	}
	size := int64(-1)
	switch v := r.(type) {
	case interface{ Len() int }:
		size = int64(v.Len())
	case *os.File:
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			if at, err := v.Seek(0, io.SeekCurrent); err == nil && at <= st.Size() {
				size = st.Size() - at
			}
		}
	}
	if size > f.s.opts.MaxUploadSize {
		return 0, invalid("write", "write(%q): content size %d exceeds MaxUploadSize %d", path,
			size, f.s.opts.MaxUploadSize)
	}
	h, cl, err := f.s.begin(ctx, "write", []string{path}, opts)
	if err != nil {
		return 0, err
	}
	defer cl.end()
	u := &upload{ctx: ctx, r: r, limit: f.s.opts.MaxUploadSize}
	err = h.upload(cl, path, u, size)
	if u.err != nil {
		if errors.Is(u.err, errUploadTooLarge) {
			return u.sent, invalid("write", "write(%q): content exceeds MaxUploadSize %d", path,
				f.s.opts.MaxUploadSize)
		}
		return u.sent, &Error{Op: "write", Code: codeTransport,
			Message: fmt.Sprintf("write(%q): reading the content: %v", path, u.err),
			wrapped: []error{u.err}}
	}
	return u.sent, err
}

// ReadTo streams the file at `path` into `w` as it arrives, one buffer at
// a time; there is no size limit. A writer error ends the download and is
// wrapped in the result. Returns the bytes given to w. A try that failed
// before any byte reached w is retried; once bytes went out, a failure is
// final.
func (f *Files) ReadTo(ctx context.Context, path string, w io.Writer, opts ...CallOption) (int64, error) {
	if w == nil {
		return 0, invalid("read", "a writer is required")
	}
	h, cl, err := f.s.begin(ctx, "read", []string{path}, opts)
	if err != nil {
		return 0, err
	}
	defer cl.end()
	d := &download{ctx: ctx, w: w}
	err = h.download(cl, path, d)
	if d.err != nil {
		if errors.Is(d.err, errDownloadTooLarge) {
			return d.n, &Error{Op: "read", Code: codeTooLarge,
				Message: fmt.Sprintf("read(%q): file size exceeds limit of %d bytes", path,
					f.s.opts.MaxDownloadSize),
				wrapped: []error{ErrResponseTooLarge}}
		}
		return d.n, &Error{Op: "read", Code: codeTransport,
			Message: fmt.Sprintf("read(%q): writing the content: %v", path, d.err),
			wrapped: []error{d.err}}
	}
	return d.n, err
}

var errDownloadTooLarge = errors.New("file exceeds MaxDownloadSize")

// capped is a bytes.Buffer that refuses to grow past max.
type capped struct {
	bytes.Buffer
	max int64
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(c.Len())+int64(len(p)) > c.max {
		return 0, errDownloadTooLarge
	}
	return c.Buffer.Write(p)
}

// Read returns the file at `path`, at most MaxDownloadSize bytes
// (ErrResponseTooLarge beyond).
func (f *Files) Read(ctx context.Context, path string, opts ...CallOption) ([]byte, error) {
	b := &capped{max: f.s.opts.MaxDownloadSize}
	if _, err := f.ReadTo(ctx, path, b, opts...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// List lists the directory at `path` (sent as given, no path guard).
func (f *Files) List(ctx context.Context, path string, opts ...CallOption) ([]FileEntry, error) {
	if path == "" {
		return nil, invalid("list", "path must not be empty")
	}
	h, cl, err := f.s.begin(ctx, "list", []string{path}, opts)
	if err != nil {
		return nil, err
	}
	defer cl.end()
	return h.list(cl, path)
}

// Exists tells whether `path` exists in the sandbox.
func (f *Files) Exists(ctx context.Context, path string, opts ...CallOption) (bool, error) {
	if path == "" {
		return false, invalid("exists", "path must not be empty")
	}
	h, cl, err := f.s.begin(ctx, "exists", []string{path}, opts)
	if err != nil {
		return false, err
	}
	defer cl.end()
	return h.exists(cl, path)
}
