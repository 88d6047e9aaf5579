// Package leakcheck fails a test binary whose tests leave goroutines behind.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { leakcheck.Main(m) }
package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Main runs the package's tests and then fails the binary if any goroutine
// started by them is still running (after a grace period for goroutines that
// are on their way out).
func Main(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(m, opts...)
}
