// Package syncbuf is a bytes.Buffer that a writer goroutine and readers
// may use at once: the output of a child process that a test reads while
// the process runs (os/exec copies it on a goroutine of its own).
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes; its zero value is ready. mu guards buf.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
