package jupyter

import (
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"go.uber.org/goleak"
)

// go-zeromq/zmq4 v0.17.0's PUB socket never stops the goroutine that
// writes its queue: Close does not close the writer (pub.go: socket.Close
// leaves pubMWriter.run waiting on its condition). One per Server, for
// the life of the `ripple jupyter kernel` process; everything else of
// the server and the session must be gone after Stop.
func TestMain(m *testing.M) {
	leakcheck.Main(m, goleak.IgnoreAnyFunction("github.com/go-zeromq/zmq4.(*pubMWriter).run"))
}
