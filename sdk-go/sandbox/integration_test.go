package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Against the local stack (controller with --extensions, sandbox-router,
// sandboxd per pod), set up by tests/integration/test_sdk_go.py, which
// passes:
//
//	KUBECONFIG                     the cluster
//	AGENT_SANDBOX_GO_IT_ROUTER     the router's URL (Options.APIURL)
//	AGENT_SANDBOX_GO_IT_NAMESPACE  a namespace with warm pool "pool" (sandboxd)
//	                               and pool "stuck" (its pods never schedule)
//
// Without them these tests are skipped.

type stack struct {
	router, ns string
}

func itStack(t *testing.T) stack {
	s := stack{os.Getenv("AGENT_SANDBOX_GO_IT_ROUTER"), os.Getenv("AGENT_SANDBOX_GO_IT_NAMESPACE")}
	if s.router == "" || s.ns == "" || os.Getenv("KUBECONFIG") == "" {
		t.Skip("needs the local stack (tests/integration/test_sdk_go.py)")
	}
	return s
}

func itClient(t *testing.T, s stack, mod func(*Options)) *Client {
	o := Options{APIURL: s.router, SandboxReadyTimeout: 90 * time.Second, RequestTimeout: 60 * time.Second}
	if mod != nil {
		mod(&o)
	}
	c, err := NewClient(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteAll(context.Background()) })
	return c
}

func TestIntegrationLifecycle(t *testing.T) {
	s := itStack(t)
	ctx := context.Background()
	c := itClient(t, s, nil)
	sb, err := c.CreateSandbox(ctx, "pool", s.ns)
	if err != nil {
		t.Fatal(err)
	}
	claim := sb.ClaimName()
	if !strings.HasPrefix(claim, "sandbox-claim-") || sb.SandboxName() == "" || sb.PodName() == "" ||
		sb.PodIP() == "" || !sb.IsReady() {
		t.Fatalf("identity: claim %q sandbox %q pod %q ip %q ready %v", claim, sb.SandboxName(),
			sb.PodName(), sb.PodIP(), sb.IsReady())
	}
	if err := sb.Open(ctx); !errors.Is(err, ErrAlreadyOpen) {
		t.Fatalf("second Open: %v", err)
	}
	key := Key{Namespace: s.ns, ClaimName: claim}
	if got := c.ListActiveSandboxes(); !slices.Contains(got, key) {
		t.Fatalf("ListActiveSandboxes: %v", got)
	}
	all, err := c.ListAllSandboxes(ctx, s.ns)
	if err != nil || !slices.Contains(all, claim) {
		t.Fatalf("ListAllSandboxes: %v %v", all, err)
	}

	// a command, its output and exit code; a failing one is a result
	r, err := sb.Run(ctx, "echo 'Hello from SDK'")
	if err != nil || r.Stdout != "Hello from SDK\n" || r.Stderr != "" || r.ExitCode != 0 {
		t.Fatalf("run: %+v %v", r, err)
	}
	r, err = sb.Commands().Run(ctx, "ls /no/such/dir")
	if err != nil || r.ExitCode == 0 || r.Stderr == "" {
		t.Fatalf("failing run: %+v %v", r, err)
	}

	// files, upstream's calls
	if err := sb.Write(ctx, "test.txt", []byte("Hello, file!")); err != nil {
		t.Fatal(err)
	}
	if b, err := sb.Read(ctx, "test.txt"); err != nil || string(b) != "Hello, file!" {
		t.Fatalf("read: %q %v", b, err)
	}
	if err := sb.Files().Write(ctx, "dir/sub/x.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	entries, err := sb.List(ctx, ".")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]FileEntry{}
	for _, e := range entries {
		names[e.Name] = e
	}
	if e := names["test.txt"]; e.Type != FileTypeFile || e.Size != 12 || e.ModTime <= 0 {
		t.Fatalf("list: %+v", entries)
	}
	if names["dir"].Type != FileTypeDirectory {
		t.Fatalf("list: %+v", entries)
	}
	if ok, err := sb.Exists(ctx, "test.txt"); err != nil || !ok {
		t.Fatalf("exists: %v %v", ok, err)
	}
	if ok, err := sb.Exists(ctx, "missing.txt"); err != nil || ok {
		t.Fatalf("exists missing: %v %v", ok, err)
	}

	// GetSandbox: the tracked one; from another client, a new attachment
	if got, err := c.GetSandbox(ctx, claim, s.ns); err != nil || got != sb {
		t.Fatalf("GetSandbox tracked: %v %v", got, err)
	}
	c2 := itClient(t, s, nil)
	sb2, err := c2.GetSandbox(ctx, claim, s.ns)
	if err != nil || sb2.SandboxName() != sb.SandboxName() {
		t.Fatalf("GetSandbox: %v", err)
	}
	if b, err := sb2.Read(ctx, "dir/sub/x.txt"); err != nil || string(b) != "x" {
		t.Fatalf("read through the second client: %q %v", b, err)
	}
	// Disconnect keeps the claim; Open attaches again
	if err := sb2.Disconnect(ctx); err != nil || sb2.IsReady() {
		t.Fatalf("disconnect: %v", err)
	}
	if _, err := sb2.Run(ctx, "true"); !errors.Is(err, ErrNotReady) {
		t.Fatalf("run after disconnect: %v", err)
	}
	if err := sb2.Open(ctx); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if r, err := sb2.Run(ctx, "echo again"); err != nil || r.Stdout != "again\n" {
		t.Fatalf("run after reopen: %+v %v", r, err)
	}

	// delete
	if err := c.DeleteSandbox(ctx, claim, s.ns); err != nil {
		t.Fatal(err)
	}
	if sb.IsReady() || sb.ClaimName() != "" {
		t.Fatal("still open after DeleteSandbox")
	}
	if _, err := sb.Run(ctx, "true"); !errors.Is(err, ErrNotReady) {
		t.Fatalf("run after delete: %v", err)
	}
	all, err = c.ListAllSandboxes(ctx, s.ns)
	if err != nil || slices.Contains(all, claim) {
		t.Fatalf("still listed: %v %v", all, err)
	}
	if got := c.ListActiveSandboxes(); slices.Contains(got, key) {
		t.Fatalf("still active: %v", got)
	}
	if err := c.DeleteSandbox(ctx, claim, s.ns); err != nil {
		t.Fatalf("deleting a deleted claim: %v", err)
	}
}

// pattern is a reader of n deterministic bytes that only io.Reader can see
// (no Len: the upload is chunked); it also hashes what it gave.
type pattern struct {
	n, off int64
	h      hash.Hash
}

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n-p.off {
		b = b[:p.n-p.off]
	}
	for i := range b {
		x := p.off + int64(i)
		b[i] = byte(x*131 ^ x>>9)
	}
	p.h.Write(b)
	p.off += int64(len(b))
	return len(b), nil
}

type failAfter struct{ n int }

var errSource = errors.New("the source broke")

func (f *failAfter) Read(b []byte) (int, error) {
	if f.n <= 0 {
		return 0, errSource
	}
	k := min(len(b), f.n)
	f.n -= k
	return k, nil
}

type brokenWriter struct{}

var errSink = errors.New("the sink broke")

func (brokenWriter) Write([]byte) (int, error) { return 0, errSink }

func TestIntegrationStreaming(t *testing.T) {
	s := itStack(t)
	ctx := context.Background()
	c := itClient(t, s, func(o *Options) { o.MaxDownloadSize = 1 << 20 })
	sb, err := c.CreateSandbox(ctx, "pool", s.ns)
	if err != nil {
		t.Fatal(err)
	}
	// 24 MiB each way: far more than one buffer (128 KiB), chunked up,
	// hashed on the way down; the download allocates no buffer of its size
	const size = 24 << 20
	src := &pattern{n: size, h: sha256.New()}
	n, err := sb.WriteFrom(ctx, "big.bin", src)
	if err != nil || n != size {
		t.Fatalf("WriteFrom: %d %v", n, err)
	}
	down := sha256.New()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err = sb.ReadTo(ctx, "big.bin", down)
	runtime.ReadMemStats(&after)
	if err != nil || n != size {
		t.Fatalf("ReadTo: %d %v", n, err)
	}
	if !bytes.Equal(src.h.Sum(nil), down.Sum(nil)) {
		t.Fatal("the file came back different")
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > size/8 {
		t.Fatalf("ReadTo of %d bytes allocated %d bytes in Go", size, grew)
	}
	// known length (bytes.Reader), read back whole
	blob := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 000 bytes
	if err := sb.Write(ctx, "blob.bin", blob); err != nil {
		t.Fatal(err)
	}
	if b, err := sb.Read(ctx, "blob.bin"); err != nil || !bytes.Equal(b, blob) {
		t.Fatalf("Read: %d bytes, %v", len(b), err)
	}
	// over MaxDownloadSize (1 MiB here): Read refuses, ReadTo has no limit
	if _, err := sb.Read(ctx, "big.bin"); !errors.Is(err, ErrResponseTooLarge) {
		t.Fatalf("Read over the limit: %v", err)
	}
	// a reader's and a writer's errors end the transfer and are wrapped
	if _, err := sb.WriteFrom(ctx, "broken.bin", &failAfter{n: 300 << 10}); !errors.Is(err, errSource) {
		t.Fatalf("WriteFrom a failing reader: %v", err)
	}
	if _, err := sb.ReadTo(ctx, "big.bin", brokenWriter{}); !errors.Is(err, errSink) {
		t.Fatalf("ReadTo a failing writer: %v", err)
	}
	// the stream still works after both
	if b, err := sb.Read(ctx, "blob.bin"); err != nil || len(b) != len(blob) {
		t.Fatalf("Read after failures: %d %v", len(b), err)
	}
}

func TestIntegrationCancellation(t *testing.T) {
	s := itStack(t)
	ctx := context.Background()
	c := itClient(t, s, nil)
	sb, err := c.CreateSandbox(ctx, "pool", s.ns)
	if err != nil {
		t.Fatal(err)
	}
	// a command of 60 s, the request's timeout 60 s: only the context can
	// end it before
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = sb.Run(cctx, "sleep 60")
	var se *Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &se) || se.Code != codeCanceled {
		t.Fatalf("cancelled run: %v", err)
	}
	// a deadline: the error is the context's
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = sb.Run(dctx, "sleep 60")
	dcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run past its deadline: %v", err)
	}
	// a download the reader side stops by its context
	if err := sb.Write(ctx, "f.bin", bytes.Repeat([]byte("z"), 4<<20)); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithCancel(ctx)
	w := &cancelAfterFirst{cancel: rcancel}
	if _, err := sb.ReadTo(rctx, "f.bin", w); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled download: %v", err)
	}
	// the handle is fine afterwards
	if r, err := sb.Run(ctx, "echo ok"); err != nil || r.Stdout != "ok\n" {
		t.Fatalf("run after cancellations: %+v %v", r, err)
	}

	// the claim wait: pool "stuck" never becomes Ready; the cancelled
	// create deletes its claim
	before, err := c.ListAllSandboxes(ctx, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, wcancel)
	if _, err := c.CreateSandbox(wctx, "stuck", s.ns); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled create: %v", err)
	}
	after, err := c.ListAllSandboxes(ctx, s.ns)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("a cancelled create left a claim: before %v after %v", before, after)
	}
	// with a deadline instead
	tctx, tcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = c.CreateSandbox(tctx, "stuck", s.ns)
	tcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("create past its deadline: %v", err)
	}
}

type cancelAfterFirst struct {
	cancel context.CancelFunc
	n      int
}

func (w *cancelAfterFirst) Write(b []byte) (int, error) {
	w.n += len(b)
	w.cancel()
	return len(b), nil
}

func TestIntegrationErrorShapes(t *testing.T) {
	s := itStack(t)
	ctx := context.Background()
	c := itClient(t, s, nil)
	_, err := c.CreateSandbox(ctx, "no-such-pool", s.ns)
	var se *Error
	if !errors.Is(err, ErrWarmPoolNotFound) || !errors.As(err, &se) || se.Reason != "WarmPoolNotFound" {
		t.Fatalf("missing pool: %#v", err)
	}
	if _, err := c.GetSandbox(ctx, "sandbox-claim-nothere", s.ns); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing claim: %v", err)
	}
	if err := c.DeleteSandbox(ctx, "sandbox-claim-nothere", s.ns); err != nil {
		t.Fatalf("deleting a missing claim: %v", err)
	}
	sb, err := c.CreateSandbox(ctx, "pool", s.ns)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sb.Read(ctx, "missing.txt")
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || he.Operation != "read" {
		t.Fatalf("missing file: %#v", err)
	}
	if errors.Is(err, ErrRetriesExhausted) || errors.Is(err, ErrSandboxDeleted) {
		t.Fatalf("missing file: %v", err)
	}
	if err := sb.Write(ctx, "../escape.txt", []byte("x")); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "escapes the sandbox root") {
		t.Fatalf("escaping path: %v", err)
	}
	small := itClient(t, s, func(o *Options) { o.MaxUploadSize = 10 })
	sb2, err := small.GetSandbox(ctx, sb.ClaimName(), s.ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb2.Write(ctx, "big.txt", make([]byte, 11)); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "exceeds MaxUploadSize") {
		t.Fatalf("over MaxUploadSize: %v", err)
	}
	// the sandbox deleted under the handle: the error says so
	if err := c.DeleteSandbox(ctx, sb.ClaimName(), s.ns); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err = sb2.Run(ctx, "true", WithMaxAttempts(1))
		if errors.Is(err, ErrSandboxDeleted) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the garbage collector removes the Sandbox
	}
	if !errors.Is(err, ErrSandboxDeleted) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted under the handle: %v", err)
	}
}
