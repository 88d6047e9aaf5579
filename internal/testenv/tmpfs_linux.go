package testenv

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs of size bytes on dir (which must exist) for the
// rest of t, so a test can fill a disk without filling the machine's. It
// needs root (CAP_SYS_ADMIN): without it, NeedOrSkip (CI runs as root).
func MountTmpfs(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		NeedOrSkip(t, "mount a tmpfs on %s: %v (needs root)", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the tmpfs on %s: %v", dir, err)
		}
	})
}

// RemountTmpfs remounts the tmpfs MountTmpfs put on dir read-only (ro
// true) or read-write again.
func RemountTmpfs(t testing.TB, dir string, ro bool) {
	t.Helper()
	flags := uintptr(unix.MS_REMOUNT)
	if ro {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, ""); err != nil {
		t.Fatalf("remount the tmpfs on %s (read-only %v): %v", dir, ro, err)
	}
}
