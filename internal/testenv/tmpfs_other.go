//go:build !linux

package testenv

import "testing"

// MountTmpfs needs Linux: elsewhere it is NeedOrSkip.
func MountTmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	NeedOrSkip(t, "mounting a tmpfs on %s needs Linux", dir)
}

// RemountTmpfs needs Linux.
func RemountTmpfs(t testing.TB, dir string, ro bool) {
	t.Helper()
	t.Fatalf("remounting %s needs Linux", dir)
}
