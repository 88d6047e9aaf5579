package protocol

import (
	"context"
	"fmt"
)

// Completion and inspection from the running kernel (additive to
// PROTOCOL.md section 3; a server without them answers -32601).
//
//   - executionContext/complete {contextId?, code, cursor} ->
//     {matches: [{text, type, signature?}], cursorStart, cursorEnd}: what
//     may be typed at cursor in code, from the live namespace of the
//     context's top frame (its locals, then its module's globals), or with
//     no contextId a kernel's __main__. cursor, cursorStart and cursorEnd
//     are offsets in Unicode code points into code; a match replaces
//     code[cursorStart:cursorEnd]. DataFrame columns complete inside
//     df[" and dict keys inside d[".
//   - executionContext/inspect {contextId?, code, cursor, detailLevel?} ->
//     {found, name?, signature?, doc?, text}: what the name at cursor is
//     (text is what a hover shows, plain text; detailLevel 1 adds the
//     source).
//
// Neither waits behind a run: when the context's kernel is busy another
// kernel answers from its __main__ (the frame's names are then missing);
// when every kernel is busy the error is 5001 KernelUnavailable. Both are
// handled asynchronously (a slow answer does not hold the edits behind
// it).
const (
	MethodComplete = "executionContext/complete"
	MethodInspect  = "executionContext/inspect"
)

// Completer answers executionContext/complete and /inspect. It is apart
// from Handler so that a Handler without it (a fake, an older engine)
// still is one: the methods then answer MethodNotFound.
type Completer interface {
	CompleteAt(ctx context.Context, clientID string, p CompleteParams) (CompleteResult, error)
	InspectAt(ctx context.Context, clientID string, p InspectParams) (InspectResult, error)
}

// CompleteParams: executionContext/complete.
type CompleteParams struct {
	ContextID ContextID `json:"contextId,omitempty" decode:"optional"`
	Code      string    `json:"code"`
	Cursor    int       `json:"cursor"`
}

// UnmarshalJSON decodes strictly.
func (p *CompleteParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// CompletionItem is one match of a completion.
type CompletionItem struct {
	Text string `json:"text"`
	// Type: function, class, module, instance, keyword, statement, param,
	// path, property; "key" for a dict key or DataFrame column.
	Type      string `json:"type"`
	Signature string `json:"signature,omitempty"`
}

// CompleteResult answers executionContext/complete.
type CompleteResult struct {
	Matches     []CompletionItem `json:"matches"`
	CursorStart int              `json:"cursorStart"`
	CursorEnd   int              `json:"cursorEnd"`
}

// InspectParams: executionContext/inspect.
type InspectParams struct {
	ContextID   ContextID `json:"contextId,omitempty" decode:"optional"`
	Code        string    `json:"code"`
	Cursor      int       `json:"cursor"`
	DetailLevel int       `json:"detailLevel,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (p *InspectParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// InspectResult answers executionContext/inspect.
type InspectResult struct {
	Found     bool   `json:"found"`
	Name      string `json:"name,omitempty"`
	Signature string `json:"signature,omitempty"`
	Doc       string `json:"doc,omitempty"`
	Text      string `json:"text"`
}

// checkCursor refuses a cursor that is not a code point offset into code
// (an InvalidParams error naming it), before a kernel is asked.
func checkCursor(code string, cursor int) error {
	n := 0
	for range code {
		n++
	}
	if cursor < 0 || cursor > n {
		return InvalidParams("cursor", fmt.Sprintf("%d is not a code point offset into code (0 to %d)", cursor, n))
	}
	return nil
}

func completeMethod() Method {
	return withResult(MethodComplete, HandledAsync,
		func(ctx context.Context, h Handler, c string, p *CompleteParams) (CompleteResult, error) {
			cp, ok := h.(Completer)
			if !ok {
				return CompleteResult{}, MethodNotFound(MethodComplete)
			}
			if err := checkCursor(p.Code, p.Cursor); err != nil {
				return CompleteResult{}, err
			}
			return cp.CompleteAt(ctx, c, *p)
		})
}

func inspectMethod() Method {
	return withResult(MethodInspect, HandledAsync,
		func(ctx context.Context, h Handler, c string, p *InspectParams) (InspectResult, error) {
			cp, ok := h.(Completer)
			if !ok {
				return InspectResult{}, MethodNotFound(MethodInspect)
			}
			if p.DetailLevel != 0 && p.DetailLevel != 1 {
				return InspectResult{}, InvalidParams("detailLevel", fmt.Sprintf("%d is not 0 or 1", p.DetailLevel))
			}
			if err := checkCursor(p.Code, p.Cursor); err != nil {
				return InspectResult{}, err
			}
			return cp.InspectAt(ctx, c, *p)
		})
}
