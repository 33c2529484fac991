package sandbox

import (
	"net/url"
	"time"
)

const (
	defaultNamespace               = "default"
	defaultServerPort              = 8888
	defaultSandboxReadyTimeout     = 180 * time.Second
	defaultGatewayReadyTimeout     = 180 * time.Second
	defaultPortForwardReadyTimeout = 30 * time.Second
	defaultCleanupTimeout          = 30 * time.Second
	defaultRequestTimeout          = 180 * time.Second
	defaultAPIRequestTimeout       = 30 * time.Second
	defaultMaxDownloadSize         = 256 << 20
	defaultMaxUploadSize           = 256 << 20
	defaultMaxRetries              = 5
)

// Options configures a Client (NewClient) or a Sandbox (New). The fields
// up to Quiet are upstream's Go client's, with its defaults; those after
// it are this SDK's. Zero values take the defaults.
//
// How requests reach a sandbox: APIURL set: to the router at that URL;
// else GatewayName set: to the Gateway's first address, port 80; else a
// local `kubectl port-forward` to svc/sandbox-router-svc port 8080 in
// RouterNamespace.
type Options struct {
	// WarmPoolName: the SandboxWarmPool New + Open claims from (CreateSandbox
	// takes it as an argument instead).
	WarmPoolName string
	// Namespace of the claims (default "default").
	Namespace string
	// GatewayName: reach the router through this Gateway
	// (gateway.networking.k8s.io/v1) in GatewayNamespace (default "default").
	GatewayName      string
	GatewayNamespace string
	// GatewayScheme: "http" (the only one offered; the default).
	GatewayScheme string
	// APIURL: the router's base URL, http or https. Takes precedence over
	// GatewayName.
	APIURL string
	// ServerPort: the runtime's port in the pod, sent as X-Sandbox-Port
	// (default 8888).
	ServerPort int
	// SandboxReadyTimeout: the wait for the claim to be Ready (default 180 s;
	// counted in whole seconds).
	SandboxReadyTimeout time.Duration
	// GatewayReadyTimeout: the wait for the Gateway's address (default 180 s).
	GatewayReadyTimeout time.Duration
	// PortForwardReadyTimeout: the wait for the tunnel's port (default 30 s).
	PortForwardReadyTimeout time.Duration
	// CleanupTimeout: how long Close waits for the claim's deletion
	// (default 30 s); the deletion itself goes on past it.
	CleanupTimeout time.Duration
	// RequestTimeout: one call to the sandbox (Run, Read, ...), retries
	// included, when the context's deadline is not sooner (default 180 s);
	// also sent as X-Sandbox-Timeout.
	RequestTimeout time.Duration
	// MaxDownloadSize: the largest file Read returns (default 256 MiB);
	// ReadTo has no limit.
	MaxDownloadSize int64
	// MaxUploadSize: the most bytes Write and WriteFrom send (default 256 MiB).
	MaxUploadSize int64
	// Quiet is accepted for upstream's sake; this SDK writes no logs.
	Quiet bool

	// Kubeconfig: the kubeconfig file; "": in-cluster config in a pod, else
	// $KUBECONFIG, else ~/.kube/config (as kubectl).
	Kubeconfig string
	// Context: the kubeconfig context ("": its current-context).
	Context string
	// RouterNamespace: where the tunnel finds sandbox-router-svc
	// ("": Namespace, as upstream's Go client).
	RouterNamespace string
	// Kubectl: the kubectl the tunnel runs ("": $AGENT_SANDBOX_KUBECTL,
	// else kubectl on PATH).
	Kubectl string
	// APIRequestTimeout: one Kubernetes API request, per try (default 30 s).
	APIRequestTimeout time.Duration
	// MaxRetries: tries after the first of a sandbox request (default 5;
	// negative: none); WithMaxAttempts overrides it per call.
	MaxRetries int
}

func (o *Options) setDefaults() {
	if o.Namespace == "" {
		o.Namespace = defaultNamespace
	}
	if o.GatewayNamespace == "" {
		o.GatewayNamespace = defaultNamespace
	}
	if o.GatewayScheme == "" {
		o.GatewayScheme = "http"
	}
	if o.ServerPort == 0 {
		o.ServerPort = defaultServerPort
	}
	if o.SandboxReadyTimeout == 0 {
		o.SandboxReadyTimeout = defaultSandboxReadyTimeout
	}
	if o.GatewayReadyTimeout == 0 {
		o.GatewayReadyTimeout = defaultGatewayReadyTimeout
	}
	if o.PortForwardReadyTimeout == 0 {
		o.PortForwardReadyTimeout = defaultPortForwardReadyTimeout
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = defaultCleanupTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = defaultRequestTimeout
	}
	if o.APIRequestTimeout == 0 {
		o.APIRequestTimeout = defaultAPIRequestTimeout
	}
	if o.MaxDownloadSize == 0 {
		o.MaxDownloadSize = defaultMaxDownloadSize
	}
	if o.MaxUploadSize == 0 {
		o.MaxUploadSize = defaultMaxUploadSize
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = defaultMaxRetries
	} else if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
}

// validate checks what libsandbox would only see after a claim was made
// (names and the rest are checked there, or by the API server).
func (o *Options) validate() error {
	const op = "options"
	if o.APIURL != "" {
		u, err := url.Parse(o.APIURL)
		if err != nil {
			return invalid(op, "APIURL %q is not a valid URL: %v", o.APIURL, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return invalid(op, "APIURL must have http or https scheme, got %q", o.APIURL)
		}
		if u.Host == "" {
			return invalid(op, "APIURL %q must include a host", o.APIURL)
		}
	}
	if o.GatewayScheme != "http" {
		return invalid(op, "GatewayScheme must be \"http\" (a Gateway is reached on port 80), got %q",
			o.GatewayScheme)
	}
	if o.ServerPort <= 0 || o.ServerPort > 65535 {
		return invalid(op, "ServerPort must be between 1 and 65535, got %d", o.ServerPort)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"SandboxReadyTimeout", o.SandboxReadyTimeout},
		{"GatewayReadyTimeout", o.GatewayReadyTimeout},
		{"PortForwardReadyTimeout", o.PortForwardReadyTimeout},
		{"CleanupTimeout", o.CleanupTimeout},
		{"RequestTimeout", o.RequestTimeout},
		{"APIRequestTimeout", o.APIRequestTimeout},
	} {
		if d.v <= 0 {
			return invalid(op, "%s must be positive, got %s", d.name, d.v)
		}
	}
	if o.MaxDownloadSize <= 0 {
		return invalid(op, "MaxDownloadSize must be positive, got %d", o.MaxDownloadSize)
	}
	if o.MaxUploadSize <= 0 {
		return invalid(op, "MaxUploadSize must be positive, got %d", o.MaxUploadSize)
	}
	return nil
}

// CallOption configures one call (upstream's).
type CallOption func(*callOptions)

type callOptions struct {
	timeout     time.Duration
	maxAttempts int // 0: the default
}

// WithTimeout bounds one call (and sets its X-Sandbox-Timeout), in place
// of RequestTimeout.
func WithTimeout(d time.Duration) CallOption {
	return func(o *callOptions) { o.timeout = d }
}

// WithMaxAttempts sets the tries of one call (n <= 0: the default,
// 1 + MaxRetries). A Run or Write that reached the sandbox is never sent
// again, whatever n says: only a connection that could not be made is
// retried for them.
func WithMaxAttempts(n int) CallOption {
	return func(o *callOptions) {
		if n > 0 {
			o.maxAttempts = n
		}
	}
}
