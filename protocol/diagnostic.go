package protocol

import "encoding/json"

// DiagnosticKind is "Error" or "Warning".
type DiagnosticKind string

const (
	DiagnosticError   DiagnosticKind = "Error"
	DiagnosticWarning DiagnosticKind = "Warning"
)

// Diagnostic is a compile error, a load-time exception or a statement's
// exception, with where it happened.
type Diagnostic struct {
	Kind         DiagnosticKind `json:"kind"`
	Message      string         `json:"message"`
	Path         string         `json:"path,omitempty"`
	Location     *Range         `json:"location,omitempty"`
	ExpressionID ExpressionID   `json:"expressionId,omitempty"`
	// Stack is the traceback, outermost call first; [] (never null) when
	// there is none.
	Stack []StackTraceElement `json:"stack"`
}

// StackTraceElement is one frame of a Diagnostic's traceback.
type StackTraceElement struct {
	FunctionName string `json:"functionName"`
	Path         string `json:"path,omitempty"`
	Location     *Range `json:"location,omitempty"`
}

type diagnosticJSON Diagnostic

// MarshalJSON writes stack as [] rather than null when empty.
func (d Diagnostic) MarshalJSON() ([]byte, error) {
	if d.Stack == nil {
		d.Stack = []StackTraceElement{}
	}
	return json.Marshal(diagnosticJSON(d))
}

// ResultKind says how a run ended without completing.
type ResultKind string

const (
	ResultInterrupted  ResultKind = "interrupted"
	ResultFailure      ResultKind = "failure"
	ResultKernelDied   ResultKind = "kernelDied"
	ResultTimeout      ResultKind = "timeout"
	ResultCompileError ResultKind = "compileError"
)

// ExecutionResult is the outcome of a failed run (executionFailed).
type ExecutionResult struct {
	Kind       ResultKind  `json:"kind"`
	Message    string      `json:"message"`
	Diagnostic *Diagnostic `json:"diagnostic,omitempty"`
}

// Clone returns a deep copy of r (nil for nil).
func (r *ExecutionResult) Clone() *ExecutionResult {
	if r == nil {
		return nil
	}
	c := *r
	if r.Diagnostic != nil {
		d := r.Diagnostic.Clone()
		c.Diagnostic = &d
	}
	return &c
}

// Clone returns a deep copy of d.
func (d Diagnostic) Clone() Diagnostic {
	if d.Location != nil {
		l := *d.Location
		d.Location = &l
	}
	if d.Stack != nil {
		stack := make([]StackTraceElement, len(d.Stack))
		for i, e := range d.Stack {
			if e.Location != nil {
				l := *e.Location
				e.Location = &l
			}
			stack[i] = e
		}
		d.Stack = stack
	}
	return d
}
