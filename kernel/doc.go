// Package kernel runs persistent Python kernel processes and talks to them
// over the wire protocol of kernel/PROTOCOL.md.
package kernel
