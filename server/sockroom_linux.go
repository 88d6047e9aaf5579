package server

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendQueue reports the bytes in a TCP connection's send queue (written,
// not yet acknowledged) and the payload the queue holds before a write
// blocks. ok is false when c is not a TCP connection or the kernel does
// not say.
//
// Linux's SO_SNDBUF is twice the payload it allows (the other half is
// bookkeeping), so the payload room is half of it.
func sendQueue(c net.Conn) (queued, room int, ok bool) {
	tc, isTCP := c.(*net.TCPConn)
	if !isTCP {
		return 0, 0, false
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return 0, 0, false
	}
	var qErr, bErr error
	var sndbuf int
	err = raw.Control(func(fd uintptr) {
		queued, qErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		sndbuf, bErr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	})
	if err != nil || qErr != nil || bErr != nil {
		return 0, 0, false
	}
	return queued, sndbuf / 2, true
}
