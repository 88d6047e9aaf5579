package lsp

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	lsproto "go.lsp.dev/protocol"
)

// DefaultHintWait is how long an inlayHint request for a range a pending
// run will change waits for that run before it answers ⏳ for what the run
// has yet to compute (initializationOptions ripple.hintWaitMs changes it).
// Editors that never act on workspace/inlayHint/refresh (Eglot, Neovim
// 0.10) ask for hints once after an edit: the answer they get is what they
// show until the next keystroke, so it must be the run's, not the last
// one's. A second covers a typical edit's run after the run delay.
const DefaultHintWait = time.Second

// maxHintWait bounds ripple.hintWaitMs: an editor waits for the answer
// (some block their UI on it).
const maxHintWait = 30 * time.Second

// options are ripple's initializationOptions ({"ripple": {...}}).
type options struct {
	runDelay time.Duration
	hintWait time.Duration
	// output is the window/logMessage type of the program's output: Info
	// by default (every editor shows it; Neovim drops Log at its default
	// level), 0 when output is not sent as messages ("none").
	output lsproto.MessageType
}

// outputLevels are the values of ripple.output.
var outputLevels = map[string]lsproto.MessageType{
	"error": lsproto.MessageTypeError, "warning": lsproto.MessageTypeWarning,
	"info": lsproto.MessageTypeInfo, "log": lsproto.MessageTypeLog, "none": 0,
}

// parseOptions reads ripple's initializationOptions: runDelayMs (see
// DefaultRunDelay), hintWaitMs (DefaultHintWait) and output ("info",
// "log", "warning", "error" or "none": the logMessage type of the
// program's output). Absent keys take their defaults; other keys, ripple's
// or not, are left to whoever defines them.
func parseOptions(raw lsproto.LSPAny) (options, error) {
	o := options{runDelay: DefaultRunDelay, hintWait: DefaultHintWait, output: lsproto.MessageTypeInfo}
	var err error
	if o.runDelay, err = runDelayOption(raw); err != nil {
		return o, err
	}
	if len(raw) == 0 || string(raw) == "null" {
		return o, nil
	}
	var opts struct {
		Ripple *struct {
			HintWaitMs *json.RawMessage `json:"hintWaitMs"`
			Output     *json.RawMessage `json:"output"`
		} `json:"ripple"`
	}
	if err := json.Unmarshal(raw, &opts); err != nil || opts.Ripple == nil {
		return o, nil // runDelayOption has judged the shape
	}
	if w := opts.Ripple.HintWaitMs; w != nil && string(*w) != "null" {
		var ms int64
		if err := json.Unmarshal(*w, &ms); err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > maxHintWait {
			return o, fmt.Errorf("%w: initializationOptions.ripple.hintWaitMs: want a whole number of milliseconds from 0 to %d, got %s",
				ErrInitializationOptions, maxHintWait.Milliseconds(), *w)
		}
		o.hintWait = time.Duration(ms) * time.Millisecond
	}
	if v := opts.Ripple.Output; v != nil && string(*v) != "null" {
		var name string
		level, ok := lsproto.MessageType(0), false
		if json.Unmarshal(*v, &name) == nil {
			level, ok = outputLevels[strings.ToLower(name)]
		}
		if !ok {
			return o, fmt.Errorf("%w: initializationOptions.ripple.output: want \"info\", \"log\", \"warning\", \"error\" or \"none\", got %s",
				ErrInitializationOptions, *v)
		}
		o.output = level
	}
	return o, nil
}
