package kernel

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// procAttr puts the kernel in its own process group (interrupts and kills
// address the group, so they reach child processes of user code too) and
// asks Linux to SIGKILL it when its parent dies: a second line behind the
// kernel's own exit on EOF, for when the kernel cannot run Python code.
//
// Caveat: Linux sends the death signal when the OS thread that forked the
// child exits, not the process. Go threads normally live as long as the
// process, but a thread is ended when a goroutine locked to it
// (runtime.LockOSThread) exits without unlocking; a kernel started from such
// a goroutine would be killed then. Nothing in ripple starts kernels from
// locked goroutines. A second race is handled on the Python side: when
// the death signal kills the kernel midway through its own clean-up, Linux
// does not kill the children of user code; the kernel's sentinel (see
// server.py), which that clean-up kills last, does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until process pid has exited without reaping it, so
// that its pid, and with it its process group id, stays reserved (a
// zombie) until the caller reaps it with Wait. Returns an error when it
// cannot tell (the caller then just reaps).
func waitExited(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// sharedMemoryFile returns an anonymous memory file (memfd), close-on-exec
// in this process: a child gets it only through ExtraFiles. Where memfd is
// unavailable (old kernels, seccomp), an unlinked temporary file serves.
func sharedMemoryFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return unlinkedTempFile(name)
	}
	return os.NewFile(uintptr(fd), name), nil
}
