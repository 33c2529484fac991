package sandbox

import (
	"context"
	"io"
)

// Key names a sandbox a Client tracks (upstream's).
type Key struct {
	Namespace string
	ClaimName string
}

// ExecutionResult is what a command left (upstream's). ExitCode is -1
// when the runtime reported none.
type ExecutionResult struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
}

// FileType is the type of a FileEntry.
type FileType string

const (
	FileTypeFile      FileType = "file"
	FileTypeDirectory FileType = "directory"
)

// FileEntry is one entry of List (upstream's). ModTime is POSIX seconds.
type FileEntry struct {
	Name    string   `json:"name"`
	Size    int64    `json:"size"`
	Type    FileType `json:"type"`
	ModTime float64  `json:"mod_time"`
}

// Handle is the interface of a sandbox (upstream's), for callers that
// want to substitute a fake in their tests.
type Handle interface {
	Open(ctx context.Context) error
	Close(ctx context.Context) error
	Disconnect(ctx context.Context) error
	IsReady() bool

	Run(ctx context.Context, command string, opts ...CallOption) (*ExecutionResult, error)
	Write(ctx context.Context, path string, content []byte, opts ...CallOption) error
	Read(ctx context.Context, path string, opts ...CallOption) ([]byte, error)
	List(ctx context.Context, path string, opts ...CallOption) ([]FileEntry, error)
	Exists(ctx context.Context, path string, opts ...CallOption) (bool, error)
}

// Streamer is the streaming half of a sandbox's files, beyond upstream's
// Handle: bodies move between the sandbox and an io.Reader / io.Writer
// in bounded memory.
type Streamer interface {
	WriteFrom(ctx context.Context, path string, r io.Reader, opts ...CallOption) (int64, error)
	ReadTo(ctx context.Context, path string, w io.Writer, opts ...CallOption) (int64, error)
}

// Info is a sandbox's identity (upstream's, less Annotations).
type Info interface {
	ClaimName() string
	SandboxName() string
	PodName() string
	PodIP() string
}

var (
	_ Handle   = (*Sandbox)(nil)
	_ Streamer = (*Sandbox)(nil)
	_ Info     = (*Sandbox)(nil)
)
