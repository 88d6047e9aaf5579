package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// The commands (workspace/executeCommand) and the code lenses that offer
// them. Arguments are JSON strings:
//
//	ripple.run          ENTRY ("module:qualname"; module:__main__ runs a module as a script)
//	ripple.run          EXPRESSION [CONTEXT]  run that statement now, explicitly (its
//	                    effects allowed: the ▶ Run of a held statement), in CONTEXT or
//	                    in every context that shows its frame
//	ripple.enter        CONTEXT EXPRESSION   push a LocalCall into the call at EXPRESSION
//	ripple.back         CONTEXT              pop the top frame
//	ripple.interrupt    [CONTEXT]            interrupt the run (every context when absent)
//	ripple.recompute    [CONTEXT]            recompute everything (every context when absent)
//	ripple.restartKernel [CONTEXT]           restart the context's kernel (every context's)
//	ripple.stop         CONTEXT              close the entry: its context is destroyed, its hints go
const (
	cmdRun           = "ripple.run"
	cmdEnter         = "ripple.enter"
	cmdBack          = "ripple.back"
	cmdInterrupt     = "ripple.interrupt"
	cmdRecompute     = "ripple.recompute"
	cmdRestartKernel = "ripple.restartKernel"
	cmdStop          = "ripple.stop"
)

// CodeLens answers textDocument/codeLens: ▶ Run on each top-level function
// without parameters, ▶ Run as script on the first line of a module, and
// for each frame shown in the document ‹ back (on an entered frame),
// ■ Interrupt (while it runs), enter › on each statement that calls a
// project function and ▶ Run on each held statement (PROTOCOL.md 8.2).
func (s *session) CodeLens(ctx context.Context, p *lsproto.CodeLensParams) ([]lsproto.CodeLens, error) {
	if err := s.checkInitialized(); err != nil {
		return nil, err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return []lsproto.CodeLens{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.textOf(rel)
	if !ok {
		return []lsproto.CodeLens{}, nil
	}
	module, isModule := workspace.ModuleName(rel)
	// A notebook is a module of the engine (its code cells as a script),
	// but an editor shows its JSON: values would land on the JSON's lines.
	// Notebooks are run from the page, ripple watch and ripple run.
	if strings.HasSuffix(rel, workspace.NotebookExt) {
		isModule = false
	}
	lenses := []lsproto.CodeLens{}
	lens := func(line int, title, command string, args ...string) {
		r := s.enc.toLSPRange(text, protocol.Range{Start: protocol.Position{Line: line}, End: protocol.Position{Line: line}})
		c := lsproto.Command{Title: title, Command: command}
		for _, a := range args {
			c.Arguments = append(c.Arguments, mustJSON(a))
		}
		lenses = append(lenses, lsproto.CodeLens{Range: r, Command: c})
	}
	if isModule {
		lens(0, "▶ Run as script", cmdRun, module+":__main__")
		for _, r := range runnables(text) {
			lens(r.line, "▶ Run", cmdRun, module+":"+r.name)
		}
	}
	for _, e := range s.entries {
		top := e.top()
		if s.modulePath(top.Module) != rel {
			continue
		}
		first := -1
		var calls, held []protocol.ExpressionUpdate
		for _, u := range e.updates {
			if u.Range == nil {
				continue
			}
			if first < 0 || u.Range.Start.Line < first {
				first = u.Range.Start.Line
			}
			if u.MethodCall != nil {
				calls = append(calls, u)
			}
			if isHeld(u) {
				held = append(held, u)
			}
		}
		if first < 0 {
			continue
		}
		head := defLine(text, top.Name, first)
		if head < 0 {
			head = first
		}
		if len(e.frames) > 1 {
			lens(head, "‹ back", cmdBack, string(e.id))
		}
		if e.parked {
			lens(head, "⚠ stopped: its run killed the kernel (▶ Run or an edit of "+rel+" runs it again)", cmdRun, e.pointer.String())
		}
		lens(head, "✕ Close", cmdStop, string(e.id))
		if e.running {
			lens(head, "■ Interrupt", cmdInterrupt, string(e.id))
		}
		byLine := func(a, b protocol.ExpressionUpdate) int { return a.Range.Start.Line - b.Range.Start.Line }
		slices.SortFunc(held, byLine)
		for _, u := range held {
			lens(u.Range.Start.Line, "▶ Run", cmdRun, string(u.ExpressionID), string(e.id))
		}
		slices.SortFunc(calls, byLine)
		for _, u := range calls {
			lens(u.Range.Start.Line, "enter › "+u.MethodCall.MethodPointer.Qualname(), cmdEnter, string(e.id), string(u.ExpressionID))
		}
	}
	return lenses, nil
}

// ExecuteCommand answers workspace/executeCommand.
func (s *session) ExecuteCommand(ctx context.Context, p *lsproto.ExecuteCommandParams) (lsproto.LSPAny, error) {
	if err := s.checkInitialized(); err != nil {
		return nil, err
	}
	args := make([]string, len(p.Arguments))
	for i, a := range p.Arguments {
		if err := json.Unmarshal(a, &args[i]); err != nil {
			return nil, rpcError(fmt.Errorf("%w: %s: argument %d is %s, want a string", ErrCommandArguments, p.Command, i+1, a))
		}
	}
	var err error
	switch p.Command {
	case cmdRun:
		switch {
		case len(args) == 0 || len(args) > 2:
			return nil, rpcError(fmt.Errorf("%w: %s wants module:function, or a statement's expression id and optionally a context id, got %d arguments", ErrCommandArguments, p.Command, len(args)))
		case strings.Contains(args[0], "/"): // module:qualname/label
			var id protocol.ContextID
			if len(args) == 2 {
				id = protocol.ContextID(args[1])
			}
			err = s.runStatement(ctx, protocol.ExpressionID(args[0]), id)
		case len(args) == 2:
			return nil, rpcError(fmt.Errorf("%w: %s %s: a function takes no context id (a statement's expression id does)", ErrCommandArguments, p.Command, args[0]))
		default:
			err = s.run(ctx, args[0])
		}
	case cmdStop:
		if len(args) != 1 {
			return nil, rpcError(fmt.Errorf("%w: %s wants one argument, a context id, got %d", ErrCommandArguments, p.Command, len(args)))
		}
		err = s.stop(ctx, protocol.ContextID(args[0]))
	case cmdEnter:
		if len(args) != 2 {
			return nil, rpcError(fmt.Errorf("%w: %s wants two arguments, a context id and an expression id, got %d", ErrCommandArguments, p.Command, len(args)))
		}
		err = s.enter(ctx, protocol.ContextID(args[0]), protocol.ExpressionID(args[1]))
	case cmdBack:
		if len(args) != 1 {
			return nil, rpcError(fmt.Errorf("%w: %s wants one argument, a context id, got %d", ErrCommandArguments, p.Command, len(args)))
		}
		err = s.back(ctx, protocol.ContextID(args[0]))
	case cmdInterrupt, cmdRecompute, cmdRestartKernel:
		if len(args) > 1 {
			return nil, rpcError(fmt.Errorf("%w: %s wants at most one argument, a context id, got %d", ErrCommandArguments, p.Command, len(args)))
		}
		var ids []protocol.ContextID
		if ids, err = s.contextsNamed(args); err == nil {
			for _, id := range ids {
				switch p.Command {
				case cmdInterrupt:
					err = s.eng.Interrupt(ctx, s.clientID, id)
				case cmdRecompute:
					err = s.eng.Recompute(ctx, s.clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()})
				case cmdRestartKernel:
					err = s.eng.RestartKernel(ctx, s.clientID, id)
				}
				if err != nil {
					break
				}
			}
		}
	default:
		return nil, rpcError(fmt.Errorf("%w: %q (ripple offers %s)", ErrUnknownCommand, p.Command, strings.Join(commands, ", ")))
	}
	if err != nil {
		return nil, rpcError(err)
	}
	s.wantRefresh(true)
	return nil, nil
}

// contextsNamed returns the context named by args (checked), or every
// context of the session when args is empty.
func (s *session) contextsNamed(args []string) ([]protocol.ContextID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(args) == 1 {
		if _, ok := s.byID[protocol.ContextID(args[0])]; !ok {
			return nil, fmt.Errorf("%w: %s", ErrUnknownContext, args[0])
		}
		return []protocol.ContextID{protocol.ContextID(args[0])}, nil
	}
	ids := make([]protocol.ContextID, 0, len(s.entries))
	for _, e := range s.entries {
		if !e.parked { // its context is gone (crash.go)
			ids = append(ids, e.id)
		}
	}
	return ids, nil
}

// run shows an entry: a new context running it, or, when one already
// shows it, that context back at its bottom frame and brought up to date.
func (s *session) run(ctx context.Context, text string) error {
	mp, err := protocol.ParseMethodPointer(text)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCommandArguments, text, err)
	}
	s.mu.Lock()
	var e *entry
	for _, x := range s.entries {
		if x.pointer.String() == mp.String() {
			e = x
		}
	}
	s.mu.Unlock()
	if e != nil && s.revive(ctx, e) {
		return nil
	}
	if e != nil {
		for {
			s.mu.Lock()
			depth := len(e.frames)
			if depth > 1 {
				e.setFrames(e.frames[:depth-1])
			}
			s.mu.Unlock()
			if depth <= 1 {
				break
			}
			if err := s.eng.Pop(ctx, s.clientID, e.id); err != nil {
				return err
			}
		}
		return s.eng.Recompute(ctx, s.clientID, protocol.RecomputeParams{ContextID: e.id})
	}
	res, err := s.eng.CreateContext(ctx, s.clientID, protocol.CreateContextParams{})
	if err != nil {
		return err
	}
	e = &entry{pointer: mp, id: res.ContextID}
	e.setFrames([]protocol.MethodPointer{mp})
	// Registered before the push, so the run's first updates find it.
	s.mu.Lock()
	s.entries = append(s.entries, e)
	s.byID[e.id] = e
	s.mu.Unlock()
	if err := s.eng.Push(ctx, s.clientID, protocol.PushParams{ContextID: e.id, StackItem: protocol.NewExplicitCall(mp)}); err != nil {
		s.mu.Lock()
		s.entries = slices.DeleteFunc(s.entries, func(x *entry) bool { return x == e })
		delete(s.byID, e.id)
		s.mu.Unlock()
		_ = s.eng.DestroyContext(ctx, s.clientID, e.id)
		return err
	}
	return nil
}

// enter pushes a LocalCall into the call at expression id.
func (s *session) enter(ctx context.Context, id protocol.ContextID, expr protocol.ExpressionID) error {
	s.mu.Lock()
	e := s.byID[id]
	var old []protocol.MethodPointer
	var callee protocol.MethodPointer
	err := error(nil)
	switch {
	case e == nil:
		err = fmt.Errorf("%w: %s", ErrUnknownContext, id)
	default:
		u, ok := e.updates[expr]
		if !ok || u.MethodCall == nil {
			err = fmt.Errorf("%w: %s is not a call of a project function in the top frame of context %s", ErrCommandArguments, expr, id)
			break
		}
		callee = u.MethodCall.MethodPointer
		old = e.frames
		// The new frame first: the engine's updates for it may arrive
		// before Push returns.
		e.setFrames(append(slices.Clone(old), callee))
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.eng.Push(ctx, s.clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall(expr)}); err != nil {
		s.mu.Lock()
		e.setFrames(old)
		s.mu.Unlock()
		_ = s.eng.Recompute(ctx, s.clientID, protocol.RecomputeParams{ContextID: id}) // resend the caller's values
		return err
	}
	return nil
}

// back pops the top frame.
func (s *session) back(ctx context.Context, id protocol.ContextID) error {
	s.mu.Lock()
	e := s.byID[id]
	var old []protocol.MethodPointer
	err := error(nil)
	switch {
	case e == nil:
		err = fmt.Errorf("%w: %s", ErrUnknownContext, id)
	case len(e.frames) < 2:
		err = fmt.Errorf("%w: context %s is at its entry %s: nothing to go back from", ErrCommandArguments, id, e.pointer)
	default:
		old = e.frames
		// The caller frame first: Pop resends its values before it returns.
		e.setFrames(slices.Clone(old[:len(old)-1]))
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.eng.Pop(ctx, s.clientID, id); err != nil {
		s.mu.Lock()
		e.setFrames(old)
		s.mu.Unlock()
		return err
	}
	return nil
}
