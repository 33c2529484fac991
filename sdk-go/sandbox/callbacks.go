package sandbox

// The streaming callbacks libsandbox calls during an upload (sbx_read_fn)
// and a download (sbx_write_fn), on the thread of the C call, with the
// libcurl buffer (up to 128 KiB) as a Go slice over C memory: bytes move
// between the io.Reader / io.Writer and the connection one buffer at a
// time, never all at once. (This file holds only //export functions: cgo
// allows no C definitions beside them.)

/*
#include <stdint.h>
#include <sys/types.h>
*/
import "C"

import (
	"context"
	"errors"
	"io"
	"runtime/cgo"
	"unsafe"
)

// upload is the state of one streamed write.
type upload struct {
	ctx   context.Context
	r     io.Reader
	limit int64 // most bytes taken from r (MaxUploadSize)
	sent  int64
	eof   bool
	err   error // r's error, or the limit's
}

// download is the state of one streamed read.
type download struct {
	ctx context.Context
	w   io.Writer
	n   int64
	err error // w's error
}

var errUploadTooLarge = errors.New("content exceeds MaxUploadSize")

//export goSbxRead
func goSbxRead(ud C.uintptr_t, buf *C.char, capacity C.size_t) C.ssize_t {
	u := cgo.Handle(ud).Value().(*upload)
	if u.eof || capacity == 0 {
		return 0
	}
	if u.ctx.Err() != nil {
		return -1 // the call ends with the context's error (the C flag is set too)
	}
	p := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(capacity))
	for {
		n, err := u.r.Read(p)
		u.sent += int64(n)
		if u.sent > u.limit {
			u.err = errUploadTooLarge
			return -1
		}
		if err == io.EOF {
			u.eof = true
			return C.ssize_t(n)
		}
		if err != nil {
			u.err = err
			return -1
		}
		if n > 0 {
			return C.ssize_t(n)
		}
		// (0, nil) is allowed by io.Reader and means nothing yet: read again
	}
}

//export goSbxWrite
func goSbxWrite(ud C.uintptr_t, buf *C.char, length C.size_t) C.int {
	d := cgo.Handle(ud).Value().(*download)
	p := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(length))
	n, err := d.w.Write(p)
	d.n += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		d.err = err
		return 1
	}
	return 0
}
