package sandbox

import (
	"context"
	"maps"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Client creates, finds and deletes sandboxes of one cluster and tracks
// the ones it handed out (upstream's). Safe for concurrent use.
type Client struct {
	opts Options
	cl   *cClient

	mu         sync.Mutex
	registry   map[Key]*Sandbox
	stopSignal context.CancelFunc
}

// NewClient reads the kubeconfig (Options.Kubeconfig, Context; else
// in-cluster, $KUBECONFIG, ~/.kube/config) and checks the options. No
// request is sent.
func NewClient(_ context.Context, opts Options) (*Client, error) {
	opts.setDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cl, err := cNewClient(opts.Kubeconfig, opts.Context, opts.APIRequestTimeout)
	if err != nil {
		return nil, err
	}
	return &Client{opts: opts, cl: cl, registry: make(map[Key]*Sandbox)}, nil
}

// CreateSandbox claims a sandbox from warm pool `warmPoolName` in
// `namespace` ("": "default"), waits until it is Ready and returns it
// open and tracked. On failure the claim is deleted. Ending the context
// ends the wait within a second (the error wraps the context's).
func (c *Client) CreateSandbox(ctx context.Context, warmPoolName, namespace string) (*Sandbox, error) {
	if namespace == "" {
		namespace = defaultNamespace
	}
	opts := c.opts
	opts.WarmPoolName = warmPoolName
	opts.Namespace = namespace
	sb := newSandbox(opts, c.cl)
	if err := sb.Open(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.registry[Key{Namespace: namespace, ClaimName: sb.ClaimName()}] = sb
	c.mu.Unlock()
	return sb, nil
}

// GetSandbox attaches to existing claim `claimName`: the tracked sandbox
// when it is open, else a new one once the claim is Ready. A claim that
// does not exist is ErrNotFound at once.
func (c *Client) GetSandbox(ctx context.Context, claimName, namespace string) (*Sandbox, error) {
	if namespace == "" {
		namespace = defaultNamespace
	}
	if claimName == "" {
		return nil, invalid("get", "a claim name is required")
	}
	if err := noNUL("get", claimName, namespace); err != nil {
		return nil, err
	}
	key := Key{Namespace: namespace, ClaimName: claimName}
	c.mu.Lock()
	if sb := c.registry[key]; sb != nil && sb.IsReady() {
		c.mu.Unlock()
		return sb, nil
	}
	delete(c.registry, key)
	c.mu.Unlock()
	opts := c.opts
	opts.Namespace = namespace
	sb := newSandbox(opts, c.cl)
	sb.claimName = claimName
	if err := sb.Open(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if other := c.registry[key]; other != nil && other.IsReady() {
		// attached concurrently: keep one, without deleting the claim
		_ = sb.Disconnect(ctx)
		return other, nil
	}
	c.registry[key] = sb
	return sb, nil
}

// ListActiveSandboxes is the tracked sandboxes that are open; the others
// are forgotten.
func (c *Client) ListActiveSandboxes() []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]Key, 0, len(c.registry))
	for k, sb := range c.registry {
		if !sb.IsReady() {
			delete(c.registry, k)
			continue
		}
		keys = append(keys, k)
	}
	return keys
}

// ListAllSandboxes lists the names of the SandboxClaims in `namespace`
// ("": "default"), tracked or not. One Kubernetes request: ending the
// context returns at once, the request finishing in the background.
func (c *Client) ListAllSandboxes(ctx context.Context, namespace string) ([]string, error) {
	if namespace == "" {
		namespace = defaultNamespace
	}
	if err := noNUL("list", namespace); err != nil {
		return nil, err
	}
	var names []string
	err := blocking(ctx, func() error {
		var lerr error
		names, lerr = c.cl.listClaims(namespace)
		return lerr
	})
	if err == ctx.Err() && err != nil {
		return nil, ctxError("list", err)
	}
	return names, err
}

// DeleteSandbox deletes claim `claimName` (closing the tracked sandbox if
// there is one); a claim already gone is not an error. One Kubernetes
// request: ending the context returns at once (the request, once sent,
// still deletes the claim).
func (c *Client) DeleteSandbox(ctx context.Context, claimName, namespace string) error {
	if namespace == "" {
		namespace = defaultNamespace
	}
	if claimName == "" {
		return invalid("delete", "a claim name is required")
	}
	if err := noNUL("delete", claimName, namespace); err != nil {
		return err
	}
	key := Key{Namespace: namespace, ClaimName: claimName}
	c.mu.Lock()
	sb := c.registry[key]
	delete(c.registry, key)
	c.mu.Unlock()
	if sb != nil {
		return sb.Close(ctx)
	}
	err := blocking(ctx, func() error { return c.cl.deleteClaim(namespace, claimName) })
	if err == ctx.Err() && err != nil {
		return ctxError("delete", err)
	}
	return err
}

// DeleteAll closes (deletes) every tracked sandbox; best effort.
func (c *Client) DeleteAll(ctx context.Context) {
	c.mu.Lock()
	all := maps.Clone(c.registry)
	c.registry = make(map[Key]*Sandbox)
	c.mu.Unlock()
	for _, sb := range all {
		_ = sb.Close(ctx)
	}
}

// EnableAutoCleanup runs DeleteAll on SIGINT or SIGTERM, then re-raises
// the signal. The returned function stops it.
func (c *Client) EnableAutoCleanup() (stop func()) {
	c.mu.Lock()
	if c.stopSignal != nil {
		c.mu.Unlock()
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopSignal = cancel
	c.mu.Unlock()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			c.DeleteAll(context.Background())
			signal.Stop(ch)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(sig)
			}
		case <-ctx.Done():
			signal.Stop(ch)
		}
	}()
	return func() {
		cancel()
		c.mu.Lock()
		c.stopSignal = nil
		c.mu.Unlock()
	}
}
