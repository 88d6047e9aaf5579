package kernel

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	// ErrInterrupted: the caller's context ended while its request ran, the
	// kernel was interrupted (SIGINT) and answered with status int. The
	// kernel and its state survive. The error also wraps
	// context.Cause(ctx), so callers can tell why they were cancelled.
	// A request whose context ended before it was sent fails the same way.
	ErrInterrupted = errors.New("interrupted")

	// ErrKernelRestarted: the request's kernel was killed because an
	// interrupt did not end the request within the interrupt timeout
	// (code that ignores SIGINT or swallows KeyboardInterrupt). Everything
	// the kernel held is lost; a Pool replaces it and reports a restart
	// with StatePreserved false. Wraps context.Cause(ctx) as well.
	ErrKernelRestarted = errors.New("kernel restarted, state lost")

	// ErrKernelDied is matched by every *ExitError: the kernel process
	// ended while requests were possible.
	ErrKernelDied = errors.New("kernel died")

	// ErrStopped: the kernel was stopped on purpose (Stop, or a Pool
	// replacing it) while the request ran or before it was sent.
	ErrStopped = errors.New("kernel stopped")

	// ErrHandshake: the kernel process started but did not complete the
	// handshake (auth then ready) in time.
	ErrHandshake = errors.New("kernel handshake failed")

	// ErrNoPython: no usable Python interpreter was found (see FindPython).
	ErrNoPython = errors.New("no usable Python interpreter")
)

// AgentLostError ends a remote kernel (Attach) whose runtime agent was
// lost: its connection ended, its lease expired or its batch job ended.
// It is wrapped with ErrStopped; the engine tells such a loss from a
// restart someone asked for (the crash-loop rule counts it).
type AgentLostError struct {
	Host   string // the agent's host
	Reason string // why the connection ended
}

func (e *AgentLostError) Error() string {
	return fmt.Sprintf("agent %s lost (%s)", e.Host, e.Reason)
}

// ExitError reports a kernel process that ended unexpectedly. It matches
// ErrKernelDied with errors.Is.
type ExitError struct {
	KernelID string
	PID      int
	// Code is the exit status, or -1 when a signal ended the process.
	Code int
	// Signal is the signal that ended the process, or 0.
	Signal syscall.Signal
	// Killed says why ripple killed the process, when it did ("interrupt
	// timed out", a protocol error...); empty when it died by itself.
	Killed string
	// Stderr holds the last lines the process wrote to stderr: captured
	// output of its last requests, then its own stderr (boot errors,
	// Python's fatal error and faulthandler reports).
	Stderr string
	// LogPath is the startup log: everything the process wrote to its
	// own stderr before and beside output capture.
	LogPath string
}

// Status describes how the process ended: "exit status 3" or "signal SIGSEGV".
func (e *ExitError) Status() string {
	if e.Signal != 0 {
		return "signal " + signalName(e.Signal)
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *ExitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel %s (pid %d) died: %s", e.KernelID, e.PID, e.Status())
	if e.Killed != "" {
		fmt.Fprintf(&b, " (killed by ripple: %s)", e.Killed)
	}
	if e.Stderr != "" {
		fmt.Fprintf(&b, "; last stderr lines:\n%s", e.Stderr)
		if !strings.HasSuffix(e.Stderr, "\n") {
			b.WriteByte('\n')
		}
	}
	if e.LogPath != "" {
		if e.Stderr == "" {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "startup log: %s", e.LogPath)
	}
	return b.String()
}

// Is reports whether target is ErrKernelDied.
func (e *ExitError) Is(target error) bool { return target == ErrKernelDied }

func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("%d (%s)", int(sig), sig.String())
}

// RemoteError is an exception raised by the method a request ran (status
// err in kernel/PROTOCOL.md). The kernel survives it.
type RemoteError struct {
	Method string
	// Type is the exception's type: "ZeroDivisionError", "shop.cart.Error".
	Type    string `json:"type"`
	Message string `json:"message"`
	// Traceback is Python's formatted traceback, trimmed to user code.
	Traceback string `json:"traceback"`
}

func (e *RemoteError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Method, e.Type)
	}
	return fmt.Sprintf("%s: %s: %s", e.Method, e.Type, e.Message)
}
