//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// closableStdin returns stdin as a reader whose Close ends a Read that is
// waiting: an editor's pipe or socket is switched to non-blocking mode so
// the Go poller serves it (a blocking read of os.Stdin would keep `ripple
// lsp` alive after exit until the editor closed the pipe, which editors
// do only once the server has exited). A terminal is left as it is: its
// file status is shared with the shell.
func closableStdin() io.ReadCloser {
	var st unix.Stat_t
	if err := unix.Fstat(unix.Stdin, &st); err != nil {
		return os.Stdin
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return os.Stdin
	}
	if err := unix.SetNonblock(unix.Stdin, true); err != nil {
		return os.Stdin
	}
	return os.NewFile(uintptr(unix.Stdin), "/dev/stdin")
}
