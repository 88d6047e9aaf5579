package testenv

import (
	"errors"
	"strconv"
	"testing"
	"time"

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
	// EBUSY: a file on the tmpfs is still open for writing. After a test
	// kills a server, its kernels hold values.db open until they see their
	// parent gone (a moment, longer on a loaded machine), so a read-only
	// remount is tried again for a while instead of failing at once.
	var err error
	remounted := Poll(time.Now().Add(remountWait), func() bool {
		err = unix.Mount("tmpfs", dir, "tmpfs", flags, "")
		return !errors.Is(err, unix.EBUSY)
	})
	if !remounted || err != nil {
		t.Fatalf("remount the tmpfs on %s (read-only %v): %v", dir, ro, err)
	}
}

// remountWait bounds how long RemountTmpfs waits for the files open for
// writing on a tmpfs to be closed.
const remountWait = 30 * time.Second
