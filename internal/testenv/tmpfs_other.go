//go:build !linux

package testenv

import "testing"

// MountTmpfs needs Linux: elsewhere it is NeedOrSkip.
func MountTmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	NeedOrSkip(t, "mounting a tmpfs on %s needs Linux", dir)
}
