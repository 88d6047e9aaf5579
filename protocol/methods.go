package protocol

import (
	"context"
	"fmt"
	"reflect"
	"slices"
)

// Version is the protocol version returned by session/initProtocolConnection.
const Version = "1"

// Methods a client calls (PROTOCOL.md section 3).
const (
	MethodInitProtocolConnection = "session/initProtocolConnection"

	MethodRuntimeStatus = "runtime/status"
	MethodRestartKernel = "runtime/restartKernel"
	MethodSetRunPolicy  = "runtime/setRunPolicy"

	MethodFileRead   = "file/read"
	MethodFileWrite  = "file/write"
	MethodFileList   = "file/list"
	MethodFileDelete = "file/delete"

	MethodTextOpenFile  = "text/openFile"
	MethodTextApplyEdit = "text/applyEdit"
	MethodTextSave      = "text/save"
	MethodTextCloseFile = "text/closeFile"

	MethodCreateContext       = "executionContext/create"
	MethodDestroyContext      = "executionContext/destroy"
	MethodPush                = "executionContext/push"
	MethodPop                 = "executionContext/pop"
	MethodRecompute           = "executionContext/recompute"
	MethodInterrupt           = "executionContext/interrupt"
	MethodAttachVisualization = "executionContext/attachVisualization"
	MethodModifyVisualization = "executionContext/modifyVisualization"
	MethodDetachVisualization = "executionContext/detachVisualization"
	MethodExecuteExpression   = "executionContext/executeExpression"
)

// Notifications the server sends (PROTOCOL.md section 4).
const (
	NotifyExpressionUpdates             = "executionContext/expressionUpdates"
	NotifyExecutionComplete             = "executionContext/executionComplete"
	NotifyExecutionFailed               = "executionContext/executionFailed"
	NotifyExecutionStatus               = "executionContext/executionStatus"
	NotifyOutput                        = "executionContext/output"
	NotifyDisplayData                   = "executionContext/displayData"
	NotifyVisualizationUpdate           = "executionContext/visualizationUpdate"
	NotifyVisualizationEvaluationFailed = "executionContext/visualizationEvaluationFailed"
	NotifyKernelRestarted               = "runtime/kernelRestarted"
	NotifyFileEvent                     = "file/event"
	NotifyTextDidChange                 = "text/didChange"
	NotifyFileModifiedOnDisk            = "text/fileModifiedOnDisk"
)

// Handling says who handles a client method and how its reply is ordered
// with the others of its connection.
type Handling uint8

const (
	// HandledBySession: session/initProtocolConnection, answered by the
	// server's session itself (it registers the client); the only method
	// a connection may call before it.
	HandledBySession Handling = iota + 1
	// HandledInOrder: the Handler method, one call at a time in the order
	// the client sent them (edits and their versions depend on it).
	HandledInOrder
	// HandledAsync: the Handler method, on a goroutine of its own, because
	// it may wait long (for a kernel); the calls behind it are not kept
	// waiting and its reply goes out when it is done, in any order.
	HandledAsync
)

// Method describes one client method: its name, the types of its params
// and result, and who handles it. Methods lists them all; it is the only
// list of client methods, and the decoder (NewParams) and a server's
// dispatch (Call) both read it.
type Method struct {
	Name     string
	Handling Handling
	// Params is the struct type the params decode into; NewParams returns
	// a pointer to a new one.
	Params reflect.Type
	// Result is the type of the result; nil when the result is null.
	Result reflect.Type

	newParams func() Params
	call      func(ctx context.Context, h Handler, clientID string, p Params) (any, error)
}

// NewParams returns a new, zero params value of the method, ready for
// DecodeParams.
func (m Method) NewParams() Params { return m.newParams() }

// Call calls the method's Handler method with p, params from m.NewParams
// that DecodeParams filled in. A null result is nil. A method
// HandledBySession has no Handler method: Call returns an internal error.
func (m Method) Call(ctx context.Context, h Handler, clientID string, p Params) (any, error) {
	if m.call == nil {
		return nil, InternalError(fmt.Errorf("method %q is handled by the session, not a Handler", m.Name))
	}
	return m.call(ctx, h, clientID, p)
}

// methods are the client methods in the order of PROTOCOL.md section 3
// (runtime/setRunPolicy, of 8.2, with the runtime methods).
// Each entry ties the method's name to its params type, its result type
// and its Handler method; the generic constructors below make a mismatch
// between them a compile error.
var methods = []Method{
	bySession[InitProtocolConnectionParams, InitProtocolConnectionResult](MethodInitProtocolConnection),
	withResult(MethodRuntimeStatus, HandledInOrder,
		func(ctx context.Context, h Handler, _ string, _ *RuntimeStatusParams) (RuntimeStatusResult, error) {
			return h.Status(ctx)
		}),
	nullResult(MethodRestartKernel, HandledAsync,
		func(ctx context.Context, h Handler, c string, p *RestartKernelParams) error {
			return h.RestartKernel(ctx, c, p.ContextID)
		}),
	nullResult(MethodSetRunPolicy, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *SetRunPolicyParams) error {
			return h.SetRunPolicy(ctx, c, *p)
		}),

	withResult(MethodFileRead, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *FileReadParams) (FileReadResult, error) {
			return h.ReadFile(ctx, c, p.Path)
		}),
	nullResult(MethodFileWrite, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *FileWriteParams) error {
			return h.WriteFile(ctx, c, *p)
		}),
	withResult(MethodFileList, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *FileListParams) (FileListResult, error) {
			return h.ListFiles(ctx, c, p.Path)
		}),
	nullResult(MethodFileDelete, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *FileDeleteParams) error {
			return h.DeleteFile(ctx, c, p.Path)
		}),

	withResult(MethodTextOpenFile, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *OpenFileParams) (OpenFileResult, error) {
			return h.OpenFile(ctx, c, p.Path)
		}),
	nullResult(MethodTextApplyEdit, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *ApplyEditParams) error {
			return h.ApplyEdit(ctx, c, *p)
		}),
	nullResult(MethodTextSave, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *SaveParams) error { return h.SaveFile(ctx, c, *p) }),
	nullResult(MethodTextCloseFile, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *CloseFileParams) error {
			return h.CloseFile(ctx, c, p.Path)
		}),

	withResult(MethodCreateContext, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *CreateContextParams) (CreateContextResult, error) {
			return h.CreateContext(ctx, c, *p)
		}),
	nullResult(MethodDestroyContext, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *DestroyContextParams) error {
			return h.DestroyContext(ctx, c, p.ContextID)
		}),
	nullResult(MethodPush, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *PushParams) error { return h.Push(ctx, c, *p) }),
	nullResult(MethodPop, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *PopParams) error { return h.Pop(ctx, c, p.ContextID) }),
	nullResult(MethodRecompute, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *RecomputeParams) error {
			return h.Recompute(ctx, c, *p)
		}),
	nullResult(MethodInterrupt, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *InterruptParams) error {
			return h.Interrupt(ctx, c, p.ContextID)
		}),
	nullResult(MethodAttachVisualization, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *AttachVisualizationParams) error {
			return h.AttachVisualization(ctx, c, *p)
		}),
	nullResult(MethodModifyVisualization, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *ModifyVisualizationParams) error {
			return h.ModifyVisualization(ctx, c, *p)
		}),
	nullResult(MethodDetachVisualization, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *DetachVisualizationParams) error {
			return h.DetachVisualization(ctx, c, *p)
		}),
	nullResult(MethodExecuteExpression, HandledInOrder,
		func(ctx context.Context, h Handler, c string, p *ExecuteExpressionParams) error {
			return h.ExecuteExpression(ctx, c, *p)
		}),
	// Completion and inspection (complete.go), for a Handler that is a
	// Completer.
	completeMethod(),
	inspectMethod(),
}

// paramsPointer is *P, a params type.
type paramsPointer[P any] interface {
	*P
	Params
}

// bySession describes a method HandledBySession.
func bySession[P, R any, PP paramsPointer[P]](name string) Method {
	return Method{
		Name: name, Handling: HandledBySession,
		Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R](),
		newParams: func() Params { return PP(new(P)) },
	}
}

// withResult describes a method whose Handler method returns a result.
func withResult[P, R any, PP paramsPointer[P]](name string, handling Handling,
	call func(ctx context.Context, h Handler, clientID string, p *P) (R, error)) Method {
	return Method{
		Name: name, Handling: handling,
		Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R](),
		newParams: func() Params { return PP(new(P)) },
		call: func(ctx context.Context, h Handler, clientID string, p Params) (any, error) {
			pp, ok := p.(PP)
			if !ok {
				return nil, wrongParams(name, p)
			}
			return call(ctx, h, clientID, pp)
		},
	}
}

// nullResult describes a method whose result is null.
func nullResult[P any, PP paramsPointer[P]](name string, handling Handling,
	call func(ctx context.Context, h Handler, clientID string, p *P) error) Method {
	return Method{
		Name: name, Handling: handling,
		Params:    reflect.TypeFor[P](),
		newParams: func() Params { return PP(new(P)) },
		call: func(ctx context.Context, h Handler, clientID string, p Params) (any, error) {
			pp, ok := p.(PP)
			if !ok {
				return nil, wrongParams(name, p)
			}
			return nil, call(ctx, h, clientID, pp)
		},
	}
}

func wrongParams(method string, p Params) error {
	return InternalError(fmt.Errorf("method %q called with params %T", method, p))
}

// methodIndex finds a Method by name.
var methodIndex = indexMethods(methods)

func indexMethods(ms []Method) map[string]*Method {
	index := make(map[string]*Method, len(ms))
	for i := range ms {
		m := &ms[i]
		if index[m.Name] != nil {
			panic("protocol: method " + m.Name + " listed twice")
		}
		index[m.Name] = m
		// Build the decoding plan now: a mistake in a params type's tags
		// fails the program's start, not its first call.
		planFor(m.Params)
	}
	return index
}

// Methods returns every client method, in the order of PROTOCOL.md
// section 3.
func Methods() []Method { return slices.Clone(methods) }

// LookupMethod returns the client method named name; false for a method
// this protocol does not define (a server answers MethodNotFound).
func LookupMethod(name string) (Method, bool) {
	m := methodIndex[name]
	if m == nil {
		return Method{}, false
	}
	return *m, true
}

// NewParams returns a new, zero params value for a client method, ready for
// DecodeParams, and false for a method this protocol does not define (the
// server answers MethodNotFound).
func NewParams(method string) (Params, bool) {
	m := methodIndex[method]
	if m == nil {
		return nil, false
	}
	return m.newParams(), true
}
