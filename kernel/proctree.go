package kernel

import (
	"crypto/rand"
	"encoding/hex"
)

// Process containment: a kernel's whole process tree ends with
// it, children that called setsid() or were orphaned included.
//
// Every kernel gets a random tag in its environment (kernelTagEnv), which
// every process it starts inherits. When the kernel ends (killed by a
// restart or a stop, or dead by itself: os._exit, a crash) the supervisor
// kills its process group as before and then every process carrying the
// tag (killTagged). When the server itself is killed with SIGKILL, the
// kernel's sentinel (ripple_kernel/group.py), which waits on the death pipe, does the
// same sweep before killing the group; the kernel's own exit paths sweep
// too. cgroups would be the stronger fence, but a per-kernel cgroup needs
// a delegated, writable cgroup v2 hierarchy, which the machines ripple
// runs on (containers, CI) do not generally give; the tag needs nothing.

// kernelTagEnv is the environment variable holding a kernel's tag; the
// Python side (ripple_kernel/group.py) reads the same name.
const kernelTagEnv = "RIPPLE_KERNEL_TAG"

// maxTagPasses bounds killTagged's passes (a process forking as fast as
// it is killed cannot hold the supervisor forever).
const maxTagPasses = 8

// newKernelTag returns a fresh random tag: two servers' kernels, or two
// kernels of one server, never share one.
func newKernelTag() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("kernel: no randomness for a kernel tag: " + err.Error()) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b[:])
}
