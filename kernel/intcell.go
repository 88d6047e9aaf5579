package kernel

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// interruptCellSize is the size of the interrupt cell: two native-endian
// unsigned 64-bit request ids, the request the next SIGINT is for and the
// request asked to stop at its next statement boundary.
const interruptCellSize = 16

// interruptCell is memory shared with one kernel process that names the
// request an interrupt is for (kernel/PROTOCOL.md, "Interrupts"). The Go
// side stores the request id in it before each SIGINT; the kernel's SIGINT
// handler reads it. Being written before the signal is sent, it is there
// when the handler runs, whenever the handler runs: a SIGINT that lands
// before the kernel has read the request's frame is still attributed to
// that request, and one that lands after the request ended is attributed
// to the request it was meant for, not to the next one.
//
// Ownership: the Kernel writes the cell only under Kernel.mu while the
// process has not exited, and unmaps it under Kernel.mu once it has.
type interruptCell struct {
	mem []byte // the shared mapping; nil once unmapped
}

// newInterruptCell creates the cell's memory and maps it. The returned
// file is what the kernel process maps (it gets it as an inherited fd);
// the caller closes it once the process has started.
func newInterruptCell() (*interruptCell, *os.File, error) {
	f, err := sharedMemoryFile("ripple-interrupt")
	if err != nil {
		return nil, nil, fmt.Errorf("interrupt cell: %w", err)
	}
	if err := f.Truncate(interruptCellSize); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("interrupt cell: %w", err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, interruptCellSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("interrupt cell: mmap: %w", err)
	}
	return &interruptCell{mem: mem}, f, nil
}

// announce stores id as the request the next SIGINT is for. The store is
// atomic (a mapping is page-aligned) and sequentially consistent, so it is
// visible to the kernel before the kill system call that follows it.
func (c *interruptCell) announce(id uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&c.mem[0])), id)
}

// stopAt names id as the request that should stop at its next statement
// boundary (kernel/PROTOCOL.md, "Stops at a statement boundary"); no
// signal follows, the kernel looks at the cell between statements.
func (c *interruptCell) stopAt(id uint64) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&c.mem[8])), id)
}

// unlinkedTempFile creates a temporary file and removes its name, so it
// lives only as long as it is open or mapped. Go opens it close-on-exec.
func unlinkedTempFile(name string) (*os.File, error) {
	f, err := os.CreateTemp("", name+"-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	return f, nil
}

// close unmaps the cell. Idempotent.
func (c *interruptCell) close() {
	if c.mem != nil {
		syscall.Munmap(c.mem)
		c.mem = nil
	}
}
