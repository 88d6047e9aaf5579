package engine

import (
	"context"
	"errors"

	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

var _ protocol.Completer = (*Engine)(nil)

// CompleteAt answers executionContext/complete (protocol.Completer) with
// Complete.
func (e *Engine) CompleteAt(ctx context.Context, clientID string, p protocol.CompleteParams) (protocol.CompleteResult, error) {
	res, err := e.Complete(ctx, p.ContextID, p.Code, p.Cursor)
	if err != nil {
		return protocol.CompleteResult{}, completionError(err)
	}
	out := protocol.CompleteResult{Matches: make([]protocol.CompletionItem, len(res.Matches)), CursorStart: res.CursorStart, CursorEnd: res.CursorEnd}
	for i, m := range res.Matches {
		out.Matches[i] = protocol.CompletionItem{Text: m.Text, Type: m.Type, Signature: m.Signature}
	}
	return out, nil
}

// InspectAt answers executionContext/inspect with Inspect.
func (e *Engine) InspectAt(ctx context.Context, clientID string, p protocol.InspectParams) (protocol.InspectResult, error) {
	res, err := e.Inspect(ctx, p.ContextID, p.Code, p.Cursor, p.DetailLevel)
	if err != nil {
		return protocol.InspectResult{}, completionError(err)
	}
	return protocol.InspectResult{Found: res.Found, Name: res.Name, Signature: res.Signature, Doc: res.Doc, Text: res.Text}, nil
}

// completionError maps what Complete and Inspect return to the client's
// error: every kernel busy is KernelUnavailable (5001) saying so; a
// kernel's refusal of the params is InvalidParams with its message; the
// rest as every engine error (ProtocolError).
func completionError(err error) error {
	if errors.Is(err, ErrBusy) {
		return protocol.KernelUnavailable("every kernel is running code; completion answers when one is free")
	}
	var re *kernel.RemoteError
	if errors.As(err, &re) && re.Type == "InvalidParams" {
		return protocol.InvalidParams("", re.Message)
	}
	return ProtocolError(err)
}
