package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These need no cluster: option checks, error shapes, and the calls
// refused before anything is sent. integration_test.go runs against the
// local stack.

func TestOptionsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{APIURL: "ftp://router"}, "APIURL must have http or https scheme"},
		{Options{APIURL: "http://"}, "must include a host"},
		{Options{GatewayScheme: "https"}, "GatewayScheme must be \"http\""},
		{Options{ServerPort: 70000}, "ServerPort must be between 1 and 65535"},
		{Options{RequestTimeout: -1}, "RequestTimeout must be positive"},
		{Options{MaxUploadSize: -5}, "MaxUploadSize must be positive"},
	} {
		_, err := NewClient(context.Background(), tc.opts)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want ErrInvalidArgument with %q", tc.opts, err, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.Namespace != "default" || o.ServerPort != 8888 || o.SandboxReadyTimeout.Seconds() != 180 ||
		o.RequestTimeout.Seconds() != 180 || o.PortForwardReadyTimeout.Seconds() != 30 ||
		o.MaxDownloadSize != 256<<20 || o.MaxRetries != 5 {
		t.Fatalf("defaults: %+v", o)
	}
}

// A kubeconfig that cannot be read is libsandbox's ASB_ECONFIG, message
// naming the file.
func TestBadKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	_, err := NewClient(context.Background(), Options{Kubeconfig: path})
	var se *Error
	if !errors.As(err, &se) || se.Code != codeConfig || !strings.Contains(se.Message, path) {
		t.Fatalf("got %#v", err)
	}
	if !strings.HasPrefix(err.Error(), "sandbox: new client: ") {
		t.Fatalf("message: %q", err.Error())
	}
}

func kubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	// a cluster nobody listens at: nothing here sends a request
	text := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:9\n" +
		"users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n" +
		"current-context: x\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRefusedBeforeSending(t *testing.T) {
	ctx := context.Background()
	sb, err := New(ctx, Options{Kubeconfig: kubeconfig(t), APIURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if sb.IsReady() {
		t.Fatal("ready before Open")
	}
	if _, err := sb.Run(ctx, "echo hi"); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Run before Open: %v", err)
	}
	if _, err := sb.Read(ctx, "f"); !errors.Is(err, ErrNotReady) {
		t.Fatalf("Read before Open: %v", err)
	}
	if err := sb.Open(ctx); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "WarmPoolName is required") {
		t.Fatalf("Open without a pool: %v", err)
	}
	if _, err := sb.Run(ctx, "echo a\x00b"); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "NUL") {
		t.Fatalf("NUL: %v", err)
	}
	c, err := NewClient(ctx, Options{Kubeconfig: kubeconfig(t)})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.CreateSandbox(cancelled, "pool", "ns"); !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateSandbox with a cancelled context: %v", err)
	}
	if _, err := c.ListAllSandboxes(cancelled, "ns"); !errors.Is(err, context.Canceled) {
		t.Fatalf("ListAllSandboxes with a cancelled context: %v", err)
	}
	if err := c.DeleteSandbox(ctx, "", "ns"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("DeleteSandbox without a name: %v", err)
	}
	if got := c.ListActiveSandboxes(); len(got) != 0 {
		t.Fatalf("active: %v", got)
	}
}

func TestErrorShapes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		code, status int
		msg          string
		is           []error
	}{
		{codeCanceled, 0, "cancelled", []error{context.Canceled}},
		{codeTimeout, 0, "Could not resolve", []error{ErrTimeout}},
		{codeWarmPoolNotFound, 0, "", []error{ErrWarmPoolNotFound}},
		{codeTemplateNotFound, 0, "", []error{ErrTemplateNotFound}},
		{codeClaimExpired, 0, "", []error{ErrClaimFailed}},
		{codeClaimDeleted, 0, "", []error{ErrSandboxDeleted}},
		{codeNotFound, 404, "Sandbox ns/s (claim c) no longer exists: it was deleted while this client was using it",
			[]error{ErrNotFound, ErrSandboxDeleted}},
		{codeRequest, 0, "Failed to communicate", []error{ErrRetriesExhausted}},
		{codeRequest, 503, "HTTP 503: busy", []error{ErrRetriesExhausted}},
		{codePortForward, 0, "", []error{ErrPortForwardDied}},
		{codeClosed, 0, "", []error{ErrNotReady}},
		{codeTooLarge, 0, "", []error{ErrResponseTooLarge}},
	} {
		err := newError("op", tc.code, tc.status, "", tc.msg, ctx)
		for _, want := range tc.is {
			if !errors.Is(err, want) {
				t.Errorf("code %d: %v is not %v", tc.code, err, want)
			}
		}
	}
	err := newError("read", codeRequest, 404, "",
		"Failed to communicate with the sandbox at http://r/download/x. HTTP 404: no such file", nil)
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || he.Body != "no such file" || he.Operation != "read" {
		t.Fatalf("HTTPError: %#v", he)
	}
	if errors.Is(err, ErrRetriesExhausted) {
		t.Fatal("a 404 is not retries exhausted")
	}
}
