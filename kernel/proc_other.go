//go:build !linux

package kernel

import (
	"errors"
	"os"
	"syscall"
)

// procAttr puts the kernel in its own process group. Outside Linux there
// is no parent-death signal: the kernel's own exit on EOF is the only line.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited is not available outside Linux: the caller reaps directly and
// skips killing the rest of the process group after the kernel's death.
func waitExited(pid int) error { return errors.ErrUnsupported }

// sharedMemoryFile returns a file whose pages are shared by whoever maps
// it: an unlinked temporary file.
func sharedMemoryFile(name string) (*os.File, error) { return unlinkedTempFile(name) }

// killTagged is not available outside Linux (no /proc to read
// environments from): the kernel's process group is the only line there.
func killTagged(tag string) int { return 0 }
