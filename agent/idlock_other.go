//go:build !unix

package agent

import "os"

// tryLockFile opens path; without flock, the lock is not taken.
func tryLockFile(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	return f, err == nil, err
}
