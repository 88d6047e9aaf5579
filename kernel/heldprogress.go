package kernel

// Held progress: a kernel may hold progress frames for a moment before it
// sends them (kernel/python/ripple_kernel/capture.py, Output.hold_locked:
// a test run's "test ended, next began" pairs, sent in one write every
// ~50 ms instead of one write and one wake-up here per test). While held,
// the kernel keeps a copy in its held journal, a file beside its startup
// log named to it in RIPPLE_HELD_JOURNAL, and forgets it (truncates the
// file) once sent. So when a kernel dies or is killed with frames unsent,
// HeldProgress gives them back: the caller (batch's test worker) learns
// which test ended and which one was running. Only a kernel started with
// Config.HoldProgress holds (batch's local kernels); an agent's does not,
// as its journal would be on the agent's host.

import (
	"bytes"
	"encoding/json"
	"os"
)

// heldJournalSuffix names the held journal after the startup log.
const heldJournalSuffix = ".held"

// HeldProgress is the payloads of the progress frames the kernel held and
// had not sent, in order: read once its process is gone (or while it is
// stopped in a request), they are what its call's progress lacks. nil
// when it held none, for a remote kernel, and when the journal cannot be
// read (a frame cut short ends the list: the kernel died writing it).
func (k *Kernel) HeldProgress() []json.RawMessage {
	if k.remote != nil {
		return nil
	}
	data, err := os.ReadFile(k.logPath + heldJournalSuffix)
	if err != nil || len(data) == 0 {
		return nil
	}
	fr := newFrameReader(bytes.NewReader(data))
	var out []json.RawMessage
	for {
		f, err := fr.next()
		if err != nil {
			return out // io.EOF, or a frame cut short
		}
		if f.kind == kindProg {
			out = append(out, json.RawMessage(bytes.Clone(f.payload)))
		}
	}
}
