// Package servertest provides Engine, a small in-memory fake of ripple's
// engine for testing the WebSocket transport without kernels.
//
// It keeps just enough state to answer like the real engine at the
// transport's level (contexts and their stacks, visualizations, files in a
// map) and lets a test script it: Hook intercepts every call (to block,
// fail or panic), Client returns a connected client's notification sink, and
// Events reports connects and disconnects in order.
//
//	eng := servertest.New()
//	srv, _ := server.New(eng, server.Config{Token: "t"})
//	// ... connect, initialise as "c1", then:
//	eng.Client("c1").Notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: id})
package servertest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Engine is the fake. The zero value is not usable; call New.
type Engine struct {
	// Hook, when set before use, runs at the start of every call with the
	// method's protocol name (session/initProtocolConnection for Connect);
	// a non-nil error is returned instead of doing the call. It may block
	// on ctx.
	Hook func(ctx context.Context, method, clientID string) error

	mu       sync.Mutex
	clients  map[string]engine.Client                        // guarded by mu: connected clients
	contexts map[protocol.ContextID]*fakeContext             // guarded by mu
	visuals  map[protocol.VisualizationID]protocol.ContextID // guarded by mu
	files    map[string]string                               // guarded by mu: path -> contents
	calls    []Call                                          // guarded by mu
	events   chan Event
}

// Call is one recorded API call.
type Call struct {
	Method   string
	ClientID string
}

// Event is a connect or a disconnect.
type Event struct {
	Connected bool // false: Disconnect
	ClientID  string
}

type fakeContext struct {
	owner string
	stack []protocol.StackItem
}

// New returns an empty fake engine.
func New() *Engine {
	return &Engine{
		clients:  make(map[string]engine.Client),
		contexts: make(map[protocol.ContextID]*fakeContext),
		visuals:  make(map[protocol.VisualizationID]protocol.ContextID),
		files:    make(map[string]string),
		events:   make(chan Event, 1024),
	}
}

// Events delivers connects and disconnects in the order they happened
// (buffered; a test that does not read them loses none up to 1024).
func (e *Engine) Events() <-chan Event { return e.events }

// Client returns the notification sink of a connected client, nil if the
// client is not connected.
func (e *Engine) Client(id string) engine.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.clients[id]
}

// Calls returns the calls made so far, in order.
func (e *Engine) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// SetFile puts a file in the fake project.
func (e *Engine) SetFile(p, contents string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.files[p] = contents
}

// File returns a file of the fake project.
func (e *Engine) File(p string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.files[p]
	return s, ok
}

func (e *Engine) enter(ctx context.Context, method, clientID string) error {
	e.mu.Lock()
	e.calls = append(e.calls, Call{Method: method, ClientID: clientID})
	e.mu.Unlock()
	if e.Hook != nil {
		return e.Hook(ctx, method, clientID)
	}
	return nil
}

// Connect registers c as clientID.
func (e *Engine) Connect(ctx context.Context, clientID string, c engine.Client) (protocol.InitProtocolConnectionResult, error) {
	if err := e.enter(ctx, protocol.MethodInitProtocolConnection, clientID); err != nil {
		return protocol.InitProtocolConnectionResult{}, err
	}
	e.mu.Lock()
	e.clients[clientID] = c
	modules := []string{}
	for p := range e.files {
		if strings.HasSuffix(p, ".py") {
			modules = append(modules, strings.ReplaceAll(strings.TrimSuffix(p, ".py"), "/", "."))
		}
	}
	e.mu.Unlock()
	slices.Sort(modules)
	e.events <- Event{Connected: true, ClientID: clientID}
	return protocol.InitProtocolConnectionResult{Version: protocol.Version, ProjectRoot: "/fake", Modules: modules}, nil
}

// Disconnect forgets the client if c is its current connection (as the
// real engine does); a stale one is ignored.
func (e *Engine) Disconnect(clientID string, c engine.Client) {
	e.mu.Lock()
	if e.clients[clientID] != c {
		e.mu.Unlock()
		return
	}
	delete(e.clients, clientID)
	e.mu.Unlock()
	e.events <- Event{Connected: false, ClientID: clientID}
}

// Status reports one fake kernel.
func (e *Engine) Status(ctx context.Context) (protocol.RuntimeStatusResult, error) {
	if err := e.enter(ctx, protocol.MethodRuntimeStatus, ""); err != nil {
		return protocol.RuntimeStatusResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]protocol.ContextID, 0, len(e.contexts))
	for id := range e.contexts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return protocol.RuntimeStatusResult{
		Kernels: []protocol.KernelStatus{{ID: 0, PID: 0, State: "ready", Contexts: ids, Launcher: protocol.LauncherLocal}},
		Agents:  []protocol.AgentStatus{},
	}, nil
}

// RestartKernel checks the context exists.
func (e *Engine) RestartKernel(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.enter(ctx, protocol.MethodRestartKernel, clientID); err != nil {
		return err
	}
	_, err := e.context(id)
	return err
}

// SetRunPolicy answers runtime/setRunPolicy: the context must exist (the
// fake keeps no policy).
func (e *Engine) SetRunPolicy(ctx context.Context, clientID string, p protocol.SetRunPolicyParams) error {
	if err := e.enter(ctx, protocol.MethodSetRunPolicy, clientID); err != nil {
		return err
	}
	if p.ContextID == "" {
		return nil
	}
	_, err := e.context(p.ContextID)
	return err
}

// checkPath refuses absolute paths and ".." escapes (the fake has no
// symlinks).
func checkPath(p string) error {
	if path.IsAbs(p) || path.Clean(p) == ".." || strings.HasPrefix(path.Clean(p), "../") {
		return protocol.PathOutsideRoot(p)
	}
	return nil
}

// ReadFile returns a file of the map.
func (e *Engine) ReadFile(ctx context.Context, clientID, p string) (protocol.FileReadResult, error) {
	if err := e.enter(ctx, protocol.MethodFileRead, clientID); err != nil {
		return protocol.FileReadResult{}, err
	}
	if err := checkPath(p); err != nil {
		return protocol.FileReadResult{}, err
	}
	s, ok := e.File(p)
	if !ok {
		return protocol.FileReadResult{}, protocol.FileNotFound(p)
	}
	return protocol.FileReadResult{Contents: s}, nil
}

// WriteFile stores a file in the map.
func (e *Engine) WriteFile(ctx context.Context, clientID string, p protocol.FileWriteParams) error {
	if err := e.enter(ctx, protocol.MethodFileWrite, clientID); err != nil {
		return err
	}
	if err := checkPath(p.Path); err != nil {
		return err
	}
	e.SetFile(p.Path, p.Contents)
	return nil
}

// ListFiles lists the files below a directory of the map.
func (e *Engine) ListFiles(ctx context.Context, clientID, p string) (protocol.FileListResult, error) {
	if err := e.enter(ctx, protocol.MethodFileList, clientID); err != nil {
		return protocol.FileListResult{}, err
	}
	if err := checkPath(p); err != nil {
		return protocol.FileListResult{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	entries := []protocol.FileEntry{}
	for f := range e.files {
		if p == "" || p == "." || strings.HasPrefix(f, p+"/") {
			entries = append(entries, protocol.FileEntry{Path: f, Kind: protocol.KindFile})
		}
	}
	slices.SortFunc(entries, func(a, b protocol.FileEntry) int { return strings.Compare(a.Path, b.Path) })
	return protocol.FileListResult{Entries: entries}, nil
}

// DeleteFile removes a file of the map.
func (e *Engine) DeleteFile(ctx context.Context, clientID, p string) error {
	if err := e.enter(ctx, protocol.MethodFileDelete, clientID); err != nil {
		return err
	}
	if err := checkPath(p); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.files[p]; !ok {
		return protocol.FileNotFound(p)
	}
	delete(e.files, p)
	return nil
}

// OpenFile returns a file's contents (the version is not computed).
func (e *Engine) OpenFile(ctx context.Context, clientID, p string) (protocol.OpenFileResult, error) {
	if err := e.enter(ctx, protocol.MethodTextOpenFile, clientID); err != nil {
		return protocol.OpenFileResult{}, err
	}
	if err := checkPath(p); err != nil {
		return protocol.OpenFileResult{}, err
	}
	s, ok := e.File(p)
	if !ok {
		return protocol.OpenFileResult{}, protocol.FileNotFound(p)
	}
	return protocol.OpenFileResult{Content: s}, nil
}

// ApplyEdit tells every other connected client (no buffer state is kept).
func (e *Engine) ApplyEdit(ctx context.Context, clientID string, p protocol.ApplyEditParams) error {
	if err := e.enter(ctx, protocol.MethodTextApplyEdit, clientID); err != nil {
		return err
	}
	e.mu.Lock()
	var others []engine.Client
	for id, c := range e.clients {
		if id != clientID {
			others = append(others, c)
		}
	}
	e.mu.Unlock()
	for _, c := range others {
		c.Notify(protocol.NotifyTextDidChange, protocol.DidChangeParams{Edits: []protocol.FileEdit{p.Edit.Clone()}})
	}
	return nil
}

// SaveFile checks the file exists.
func (e *Engine) SaveFile(ctx context.Context, clientID string, p protocol.SaveParams) error {
	if err := e.enter(ctx, protocol.MethodTextSave, clientID); err != nil {
		return err
	}
	if _, ok := e.File(p.Path); !ok {
		return protocol.FileNotOpened(p.Path)
	}
	return nil
}

// CloseFile checks the file exists.
func (e *Engine) CloseFile(ctx context.Context, clientID, p string) error {
	if err := e.enter(ctx, protocol.MethodTextCloseFile, clientID); err != nil {
		return err
	}
	if _, ok := e.File(p); !ok {
		return protocol.FileNotOpened(p)
	}
	return nil
}

func (e *Engine) context(id protocol.ContextID) (*fakeContext, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.contexts[id]
	if !ok {
		return nil, protocol.ContextNotFound(id)
	}
	return c, nil
}

// CreateContext creates a context (idempotent).
func (e *Engine) CreateContext(ctx context.Context, clientID string, p protocol.CreateContextParams) (protocol.CreateContextResult, error) {
	if err := e.enter(ctx, protocol.MethodCreateContext, clientID); err != nil {
		return protocol.CreateContextResult{}, err
	}
	id := p.ContextID
	if id == "" {
		id = protocol.NewContextID()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.contexts[id]; !ok {
		e.contexts[id] = &fakeContext{owner: clientID}
	}
	return protocol.CreateContextResult{ContextID: id}, nil
}

// DestroyContext removes a context.
func (e *Engine) DestroyContext(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.enter(ctx, protocol.MethodDestroyContext, clientID); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.contexts[id]; !ok {
		return protocol.ContextNotFound(id)
	}
	delete(e.contexts, id)
	return nil
}

// Push applies the stack rules of PROTOCOL.md 3.
func (e *Engine) Push(ctx context.Context, clientID string, p protocol.PushParams) error {
	if err := e.enter(ctx, protocol.MethodPush, clientID); err != nil {
		return err
	}
	c, err := e.context(p.ContextID)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case p.StackItem.Type == protocol.ExplicitCall && len(c.stack) > 0:
		return protocol.InvalidStackItem(p.ContextID, "an ExplicitCall is only valid on an empty stack")
	case p.StackItem.Type == protocol.LocalCall && len(c.stack) == 0:
		return protocol.InvalidStackItem(p.ContextID, "a LocalCall needs a non-empty stack")
	}
	c.stack = append(c.stack, p.StackItem.Clone())
	return nil
}

// Pop removes the top frame.
func (e *Engine) Pop(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.enter(ctx, protocol.MethodPop, clientID); err != nil {
		return err
	}
	c, err := e.context(id)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(c.stack) == 0 {
		return protocol.EmptyStack(id)
	}
	c.stack = c.stack[:len(c.stack)-1]
	return nil
}

// Recompute checks the context exists.
func (e *Engine) Recompute(ctx context.Context, clientID string, p protocol.RecomputeParams) error {
	if err := e.enter(ctx, protocol.MethodRecompute, clientID); err != nil {
		return err
	}
	_, err := e.context(p.ContextID)
	return err
}

// Interrupt checks the context exists.
func (e *Engine) Interrupt(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.enter(ctx, protocol.MethodInterrupt, clientID); err != nil {
		return err
	}
	_, err := e.context(id)
	return err
}

// AttachVisualization records a visualization of an existing context.
func (e *Engine) AttachVisualization(ctx context.Context, clientID string, p protocol.AttachVisualizationParams) error {
	if err := e.enter(ctx, protocol.MethodAttachVisualization, clientID); err != nil {
		return err
	}
	if _, err := e.context(p.VisualizationConfig.ExecutionContextID); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.visuals[p.VisualizationID] = p.VisualizationConfig.ExecutionContextID
	return nil
}

// ModifyVisualization checks the visualization exists.
func (e *Engine) ModifyVisualization(ctx context.Context, clientID string, p protocol.ModifyVisualizationParams) error {
	if err := e.enter(ctx, protocol.MethodModifyVisualization, clientID); err != nil {
		return err
	}
	return e.visualization(p.VisualizationID)
}

// DetachVisualization forgets a visualization.
func (e *Engine) DetachVisualization(ctx context.Context, clientID string, p protocol.DetachVisualizationParams) error {
	if err := e.enter(ctx, protocol.MethodDetachVisualization, clientID); err != nil {
		return err
	}
	if err := e.visualization(p.VisualizationID); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.visuals, p.VisualizationID)
	return nil
}

func (e *Engine) visualization(id protocol.VisualizationID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.visuals[id]; !ok {
		return protocol.VisualizationNotFound(id)
	}
	return nil
}

// ExecuteExpression checks the context exists.
func (e *Engine) ExecuteExpression(ctx context.Context, clientID string, p protocol.ExecuteExpressionParams) error {
	if err := e.enter(ctx, protocol.MethodExecuteExpression, clientID); err != nil {
		return err
	}
	_, err := e.context(p.ExecutionContextID)
	return err
}

// String describes the fake's state (for test failures).
func (e *Engine) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("servertest.Engine{%d clients, %d contexts, %d files}", len(e.clients), len(e.contexts), len(e.files))
}
