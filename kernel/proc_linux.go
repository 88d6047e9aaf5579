package kernel

import (
	"bytes"
	"os"
	"strconv"
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
// ripple_kernel/group.py), which that clean-up kills last, does.
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

// killTagged SIGKILLs every process but this one whose environment holds
// tagEnv=tag: the processes of one kernel's tree (kernelTag), wherever they
// are now. A child that called setsid() has left the kernel's process
// group, and one whose parent exited has been adopted by init, so neither
// the group nor the parent chain finds them; the environment they
// inherited does. Passes repeat while they find any (one may have forked
// meanwhile), at most maxTagPasses. Returns how many signals were sent.
//
// Reading another process's environment needs the same user, which every
// process of a kernel's tree has unless it changed user; a process that
// replaced its environment (execve with a fresh one) is not found: the
// kernel's process group and its own clean-up remain the lines for those.
func killTagged(tag string) int {
	if tag == "" {
		return 0
	}
	needle := []byte(kernelTagEnv + "=" + tag)
	self := os.Getpid()
	sent := 0
	for pass := 0; pass < maxTagPasses; pass++ {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return sent
		}
		found := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || !hasEnvEntry(env, needle) {
				continue
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				found++
			}
		}
		sent += found
		if found == 0 {
			break
		}
	}
	return sent
}

// hasEnvEntry reports whether the NUL-separated environment block env has
// the entry needle exactly.
func hasEnvEntry(env, needle []byte) bool {
	for len(env) > 0 {
		i := bytes.IndexByte(env, 0)
		var entry []byte
		if i < 0 {
			entry, env = env, nil
		} else {
			entry, env = env[:i], env[i+1:]
		}
		if bytes.Equal(entry, needle) {
			return true
		}
	}
	return false
}
