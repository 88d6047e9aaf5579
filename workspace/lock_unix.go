//go:build unix

package workspace

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f for as long as it is
// open (released by the kernel when the process dies), best effort.
func lockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// tryLock reports whether an exclusive lock on f could be taken now, that
// is whether no other open file description holds one.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
