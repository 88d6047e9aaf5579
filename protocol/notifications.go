package protocol

import (
	"encoding/json"
	"strconv"
)

// This file has the params of every server notification (PROTOCOL.md
// section 4), in the order of that section. Slices documented as arrays are
// written as [] when empty, never null.

// ExpressionUpdatesParams: executionContext/expressionUpdates. One
// notification names an expression at most once, in its latest state.
type ExpressionUpdatesParams struct {
	ContextID ContextID `json:"contextId"`
	// KernelID is the kernel that produced the updates (PROTOCOL.md 7.5):
	// the id runtime/status lists it under.
	KernelID int                `json:"kernelId"`
	Updates  []ExpressionUpdate `json:"updates"`
}

// MarshalJSON writes updates as [] rather than null when empty.
func (p ExpressionUpdatesParams) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 256*len(p.Updates)+64))
}

// appendJSON writes the notification by hand (see ExpressionUpdate).
// AppendNotification uses it directly, skipping encoding/json.
func (p ExpressionUpdatesParams) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"contextId":`...)
	dst = appendQuoted(dst, string(p.ContextID))
	dst = append(dst, `,"kernelId":`...)
	dst = strconv.AppendInt(dst, int64(p.KernelID), 10)
	dst = append(dst, `,"updates":[`...)
	for i := range p.Updates {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = p.Updates[i].appendJSON(dst); err != nil {
			return nil, err
		}
	}
	return append(dst, "]}"...), nil
}

// ExecutionCompleteParams: executionContext/executionComplete.
type ExecutionCompleteParams struct {
	ContextID ContextID `json:"contextId"`
	KernelID  int       `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
}

// ExecutionFailedParams: executionContext/executionFailed.
type ExecutionFailedParams struct {
	ContextID ContextID       `json:"contextId"`
	KernelID  int             `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
	Result    ExecutionResult `json:"result"`
}

// ExecutionStatusParams: executionContext/executionStatus.
type ExecutionStatusParams struct {
	ContextID   ContextID    `json:"contextId"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

type executionStatusJSON ExecutionStatusParams

// MarshalJSON writes diagnostics as [] rather than null when empty.
func (p ExecutionStatusParams) MarshalJSON() ([]byte, error) {
	if p.Diagnostics == nil {
		p.Diagnostics = []Diagnostic{}
	}
	return json.Marshal(executionStatusJSON(p))
}

// OutputStream is "stdout" or "stderr".
type OutputStream string

const (
	Stdout OutputStream = "stdout"
	Stderr OutputStream = "stderr"
)

// OutputParams: executionContext/output.
type OutputParams struct {
	ContextID ContextID    `json:"contextId"`
	KernelID  int          `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
	Stream    OutputStream `json:"stream"`
	Text      string       `json:"text"`
	// ExpressionID is the statement that was running when the text was
	// written (PROTOCOL.md 7.3); empty outside statements.
	ExpressionID ExpressionID `json:"expressionId,omitempty"`
	// Replayed: output a statement wrote when it computed its value, sent
	// again to a client that did not see it (PROTOCOL.md 8.3).
	Replayed bool `json:"replayed,omitempty"`
}

// DisplayDataParams: executionContext/displayData (PROTOCOL.md 7.2), sent
// when running code displays an object (IPython's display(),
// ripple.display(), plt.show() under ripple's matplotlib backend).
type DisplayDataParams struct {
	ContextID ContextID `json:"contextId"`
	KernelID  int       `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
	// ExpressionID is the statement that displayed it; empty outside
	// statements.
	ExpressionID ExpressionID `json:"expressionId,omitempty"`
	// Data is the mime bundle {"text/plain": ..., "image/png": base64, ...}.
	Data json.RawMessage `json:"data"`
	// Replayed: as OutputParams.Replayed.
	Replayed bool `json:"replayed,omitempty"`
}

// VisualizationContext names the visualization a visualizationUpdate is for.
type VisualizationContext struct {
	VisualizationID VisualizationID `json:"visualizationId"`
	ContextID       ContextID       `json:"contextId"`
	ExpressionID    ExpressionID    `json:"expressionId"`
}

// VisualizationUpdateParams: executionContext/visualizationUpdate. Data is
// the JSON value the visualization returned.
type VisualizationUpdateParams struct {
	VisualizationContext VisualizationContext `json:"visualizationContext"`
	KernelID             int                  `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
	Data                 json.RawMessage      `json:"data"`
}

type visualizationUpdateJSON VisualizationUpdateParams

// MarshalJSON writes data as null when it is empty.
func (p VisualizationUpdateParams) MarshalJSON() ([]byte, error) {
	if len(p.Data) == 0 {
		p.Data = json.RawMessage("null")
	}
	return json.Marshal(visualizationUpdateJSON(p))
}

// VisualizationEvaluationFailedParams:
// executionContext/visualizationEvaluationFailed.
type VisualizationEvaluationFailedParams struct {
	ContextID       ContextID       `json:"contextId"`
	KernelID        int             `json:"kernelId"` // the kernel that produced it (PROTOCOL.md 7.5)
	VisualizationID VisualizationID `json:"visualizationId"`
	ExpressionID    ExpressionID    `json:"expressionId"`
	Message         string          `json:"message"`
	Diagnostic      *Diagnostic     `json:"diagnostic,omitempty"`
}

// KernelRestartedParams: runtime/kernelRestarted. StatePreserved is false
// when the kernel's values were lost (they are recomputed).
type KernelRestartedParams struct {
	KernelID       int         `json:"kernelId"`
	ContextIDs     []ContextID `json:"contextIds"`
	StatePreserved bool        `json:"statePreserved"`
	Reason         string      `json:"reason"`
}

type kernelRestartedJSON KernelRestartedParams

// MarshalJSON writes contextIds as [] rather than null when empty.
func (p KernelRestartedParams) MarshalJSON() ([]byte, error) {
	if p.ContextIDs == nil {
		p.ContextIDs = []ContextID{}
	}
	return json.Marshal(kernelRestartedJSON(p))
}

// FileEventKind says what happened to a file on disk.
type FileEventKind string

const (
	FileAdded    FileEventKind = "Added"
	FileRemoved  FileEventKind = "Removed"
	FileModified FileEventKind = "Modified"
)

// FileEventParams: file/event.
type FileEventParams struct {
	Path Path          `json:"path"`
	Kind FileEventKind `json:"kind"`
}

// DidChangeParams: text/didChange, the edits another client applied.
type DidChangeParams struct {
	Edits []FileEdit `json:"edits"`
}

// FileModifiedOnDiskParams: text/fileModifiedOnDisk.
type FileModifiedOnDiskParams struct {
	Path Path `json:"path"`
}
