//go:build unix

package agent

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tryLockFile opens (creating) path and takes an exclusive flock on it
// without waiting: ok false when another process holds it.
func tryLockFile(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}
