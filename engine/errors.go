package engine

import (
	"errors"
	"slices"
	"strings"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// codes maps the sentinel errors of the engine and the packages under it to
// client protocol codes (PROTOCOL.md 6). The first match wins.
var codes = []struct {
	err  error
	code protocol.Code
}{
	{workspace.ErrFileNotFound, protocol.CodeFileNotFound},
	{workspace.ErrFileExists, protocol.CodeFileExists},
	{workspace.ErrNotDirectory, protocol.CodeNotDirectory},
	{workspace.ErrNotFile, protocol.CodeNotFile},
	{workspace.ErrCannotDecode, protocol.CodeCannotDecode},
	{workspace.ErrPathOutsideRoot, protocol.CodePathOutsideRoot},
	{workspace.ErrModuleNotFound, protocol.CodeModuleNotFound},
	{workspace.ErrFileNotOpened, protocol.CodeFileNotOpened},
	{workspace.ErrTextEditValidation, protocol.CodeTextEditValidation},
	{workspace.ErrInvalidVersion, protocol.CodeInvalidVersion},
	{workspace.ErrWriteDenied, protocol.CodeWriteDenied},
	{workspace.ErrInvalidPath, protocol.CodeInvalidParams},
	{ErrModuleNotFound, protocol.CodeModuleNotFound},
	{ErrInvalidStackItem, protocol.CodeInvalidStackItem},
	{ErrExpressionNotFound, protocol.CodeExpressionNotFound},
	{ErrVisualizationExpression, protocol.CodeVisualizationExpressionError},
	{ErrKernelUnavailable, protocol.CodeKernelUnavailable},
	{ErrStateNotRecorded, protocol.CodeStateNotRecorded},
	{ErrNotStarted, protocol.CodeKernelUnavailable},
	{jobs.ErrUnknownContext, protocol.CodeContextNotFound},
	{jobs.ErrShutdown, protocol.CodeKernelUnavailable},
}

// ProtocolError maps an error returned by the engine to the client
// protocol's error: the code of its sentinel and a message naming the thing
// at fault. Errors it does not know become -32603 internal errors.
func ProtocolError(err error) *protocol.Error {
	if err == nil {
		return nil
	}
	// protocol.AsError would turn every other error into an internal
	// error; only an *protocol.Error passes through as it is.
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return protocol.Errorf(c.code, "%w", err)
		}
	}
	return contexts.ProtocolError(err)
}

func clientIDs(ids []workspace.ClientID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func toWorkspaceRange(r protocol.Range) workspace.Range {
	return workspace.Range{
		Start: workspace.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   workspace.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

func fromWorkspaceRange(r workspace.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

// sortBySource orders updates by their position in the source (those
// without a range last, by id), the order a client expects on a resend.
func sortBySource(us []protocol.ExpressionUpdate) {
	slices.SortStableFunc(us, func(a, b protocol.ExpressionUpdate) int {
		switch {
		case a.Range != nil && b.Range != nil:
			if d := a.Range.Start.Line - b.Range.Start.Line; d != 0 {
				return d
			}
			return a.Range.Start.Character - b.Range.Start.Character
		case a.Range != nil:
			return -1
		case b.Range != nil:
			return 1
		}
		return strings.Compare(string(a.ExpressionID), string(b.ExpressionID))
	})
}

// isDottedName reports whether s looks like a dotted Python module name
// (so that "lambda v: v" is not taken for a module:qualname pointer).
func isDottedName(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, r := range part {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}
