package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBusy: a request that must not wait (CompleteRequest.NoWait) found
// the kernel running another one.
var ErrBusy = errors.New("kernel busy")

// CompleteRequest asks for completions at a cursor (kernel method
// complete, python/ripple_kernel/complete.py).
type CompleteRequest struct {
	Code string `json:"code"`
	// Cursor is an offset in Unicode code points into Code.
	Cursor int `json:"cursor"`
	// ContextID names the context whose top frame's namespace completes
	// (its locals, then its module's globals); empty: the kernel's
	// __main__, where a Jupyter notebook's cells run.
	ContextID string `json:"contextId,omitempty"`
	// NoWait: fail with ErrBusy instead of waiting when the kernel is
	// running a request (a completion is worth nothing after the run).
	NoWait bool `json:"-"`
}

// Completion is one match: Text replaces Code[CursorStart:CursorEnd].
type Completion struct {
	Text string `json:"text"`
	// Type is jedi's kind: function, class, module, instance, keyword,
	// statement, param, path, property; "key" for a dict key or column.
	Type      string `json:"type"`
	Signature string `json:"signature,omitempty"`
}

// Completions answers a CompleteRequest; offsets in code points.
type Completions struct {
	Matches     []Completion `json:"matches"`
	CursorStart int          `json:"cursorStart"`
	CursorEnd   int          `json:"cursorEnd"`
}

// InspectRequest asks what the name at a cursor is (kernel method
// inspect): what a hover or Jupyter's inspect (shift-tab) shows.
type InspectRequest struct {
	Code   string `json:"code"`
	Cursor int    `json:"cursor"`
	// DetailLevel 0: signature, value and docstring; 1: the source too.
	DetailLevel int    `json:"detailLevel"`
	ContextID   string `json:"contextId,omitempty"`
	NoWait      bool   `json:"-"`
}

// Inspection answers an InspectRequest. Text is plain text, empty when
// nothing was found.
type Inspection struct {
	Found     bool   `json:"found"`
	Name      string `json:"name,omitempty"`
	Signature string `json:"signature,omitempty"`
	Doc       string `json:"doc,omitempty"`
	Text      string `json:"text"`
}

// Complete asks the kernel for completions. Errors as for Call; with
// req.NoWait, ErrBusy when another request holds the kernel. Bad
// params (a cursor past the code, an unknown context) are a
// *RemoteError of type InvalidParams naming the field.
func (k *Kernel) Complete(ctx context.Context, req CompleteRequest) (Completions, error) {
	var out Completions
	err := k.quickCall(ctx, "complete", req, req.NoWait, &out)
	if out.Matches == nil {
		out.Matches = []Completion{}
	}
	return out, err
}

// Inspect asks the kernel what the name at the cursor is; errors as for
// Complete.
func (k *Kernel) Inspect(ctx context.Context, req InspectRequest) (Inspection, error) {
	var out Inspection
	err := k.quickCall(ctx, "inspect", req, req.NoWait, &out)
	return out, err
}

// quickCall is Call decoding into out, optionally without waiting for
// the kernel's turn.
func (k *Kernel) quickCall(ctx context.Context, method string, params any, noWait bool, out any) error {
	if noWait {
		if !k.tryAcquire() {
			return fmt.Errorf("kernel %s: %s: %w", k.id, method, ErrBusy)
		}
		select {
		case <-k.done:
			k.release()
			return notSent{k.err}
		default:
		}
	} else if err := k.acquire(ctx, method); err != nil {
		return err
	}
	defer k.release()
	raw, err := k.callHeld(ctx, method, params, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("kernel %s: %s: %w: value %s", k.id, method, ErrProtocol, raw)
	}
	return nil
}
