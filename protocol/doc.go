// Package protocol defines ripple's client protocol (../shared/PROTOCOL.md):
// the JSON-RPC 2.0 envelope, method and notification names, the params and
// results of every method, and the error codes. It does no I/O.
package protocol
