package kernel

import "encoding/json"

// Stream names the file descriptor an output chunk was written to.
type Stream uint8

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return "stream?"
}

// Sink receives what a request produces while it runs, in the order the
// kernel sent it. Its methods are called on the kernel's reader goroutine,
// one at a time, and all of them before the request's Call returns. They
// must not call back into the same kernel and should return quickly: a
// blocked sink holds up that kernel's output (which is back-pressure, not
// loss). The slices passed in are reused after the method returns: copy
// what you keep.
type Sink interface {
	// Output receives bytes the request wrote to fd 1 or 2, including
	// output of C code and child processes. Chunks are split arbitrarily
	// (a line or a UTF-8 sequence may span two calls).
	Output(stream Stream, data []byte)
	// Progress receives one structured event (a `prog` frame) of the
	// execution engine, as JSON.
	Progress(event json.RawMessage)
}

// LateSink is a Sink that also takes output written after its request
// ended by a thread that request started (a Python thread whose text
// the kernel sends as its starting request's output, kernel/PROTOCOL.md
// "Output of background threads"). Without it such output goes to
// Config.Background. Called on the reader goroutine, like Output.
type LateSink interface {
	Sink
	LateOutput(stream Stream, data []byte)
}

// lateSinks remembers the LateSinks of the last requests (a bounded
// ring), for the output their threads write after they ended.
type lateSinks struct {
	ids   [32]uint64
	sinks [32]LateSink
	next  int
}

func (l *lateSinks) add(id uint64, s LateSink) {
	l.ids[l.next], l.sinks[l.next] = id, s
	l.next = (l.next + 1) % len(l.ids)
}

func (l *lateSinks) find(id uint64) LateSink {
	for i, x := range l.ids {
		if x == id && id != 0 {
			return l.sinks[i]
		}
	}
	return nil
}

// SinkFuncs adapts two functions to a Sink; a nil function drops its events.
type SinkFuncs struct {
	OutputFunc   func(stream Stream, data []byte)
	ProgressFunc func(event json.RawMessage)
}

func (s SinkFuncs) Output(stream Stream, data []byte) {
	if s.OutputFunc != nil {
		s.OutputFunc(stream, data)
	}
}

func (s SinkFuncs) Progress(event json.RawMessage) {
	if s.ProgressFunc != nil {
		s.ProgressFunc(event)
	}
}
