package protocol

import (
	"encoding/json"
	"slices"
)

// This file has the params and result of every client method (PROTOCOL.md
// section 3), in the order of that section. Each params type decodes
// strictly, as its json and decode tags say (see strictplan.go); results
// are plain JSON.

// --- session and runtime

// InitProtocolConnectionParams: session/initProtocolConnection.
type InitProtocolConnectionParams struct {
	ClientID string `json:"clientId" decode:"nonempty"`
}

// UnmarshalJSON decodes strictly.
func (p *InitProtocolConnectionParams) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, p)
}

// InitProtocolConnectionResult is the reply to session/initProtocolConnection.
type InitProtocolConnectionResult struct {
	Version     string   `json:"version"`
	ProjectRoot string   `json:"projectRoot"`
	Modules     []string `json:"modules"`
	// Python is the interpreter the kernels run (ripple's addition, so a
	// client can say which Python runs the project).
	Python *PythonInfo `json:"python,omitempty"`
}

// PythonInfo names an interpreter: its version ("3.11.2") and path.
type PythonInfo struct {
	Version string `json:"version"`
	Path    string `json:"path"`
}

// RuntimeStatusParams: runtime/status (no fields).
type RuntimeStatusParams struct{}

// UnmarshalJSON accepts any object.
func (p *RuntimeStatusParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// RuntimeStatusResult is the reply to runtime/status.
type RuntimeStatusResult struct {
	Kernels []KernelStatus `json:"kernels"`
	Queue   QueueStatus    `json:"queue"`
	// Agents are the runtime agents connected to the coordinator
	// (PROTOCOL.md 7.5); [] while every kernel is local.
	Agents []AgentStatus `json:"agents"`
	// State is ripple serve's durable state in .ripple/ (nil without it,
	// as for ripple run): whether changes are recorded (PROTOCOL.md 8.5)
	// and every damaged file found at start.
	State *StateStatus `json:"state,omitempty"`
}

// StateStatus is runtime/status's state. Recording false with a Problem
// means .ripple/ cannot be written now: changes are refused with 7001
// StateNotRecorded while the state log exists, and not kept at all when
// there is none (Problem says which).
type StateStatus struct {
	Dir       string        `json:"dir"`
	Recording bool          `json:"recording"`
	Problem   string        `json:"problem,omitempty"`
	Damage    []StateDamage `json:"damage"`
}

// StateDamage is one damaged file of .ripple/ (or of the project) found at
// start: what was wrong, and where it was moved aside ("" when it was
// reset or only reported).
type StateDamage struct {
	File    string `json:"file"`
	MovedTo string `json:"movedTo,omitempty"`
	Detail  string `json:"detail"`
}

// Launchers: what started a kernel (docs/scale-out.md).
const (
	LauncherLocal  = "local"  // a child of this server process
	LauncherAgents = "agents" // a kernel of a runtime agent that connected (ripple agent)
	LauncherSlurm  = "slurm"  // a kernel of a runtime agent the coordinator submitted as a Slurm job
)

// KernelStatus describes one kernel of the pool. ID is the kernelId that
// notifications carry (PROTOCOL.md 7.5).
type KernelStatus struct {
	ID       int         `json:"id"`
	PID      int         `json:"pid"`
	State    string      `json:"state"`
	Contexts []ContextID `json:"contexts"`
	// Launcher started the kernel: LauncherLocal, LauncherAgents or
	// LauncherSlurm.
	Launcher string `json:"launcher"`
	// Agent is the runtime agent that owns the kernel; nil for a local one.
	Agent *AgentRef `json:"agent,omitempty"`
}

// AgentRef names the agent of a kernel (PROTOCOL.md 7.5).
type AgentRef struct {
	ID       string `json:"id"`
	Host     string `json:"host"`
	Launcher string `json:"launcher"`
	JobID    string `json:"jobId,omitempty"`
}

// AgentStatus is one agent of runtime/status: its kernels are the ids of
// KernelStatus, LeaseAgeMs the time since its lease was last renewed.
// An agent the coordinator submitted as a batch job (the slurm launcher)
// is listed from its submission on, with its job's name, state (Slurm's:
// PENDING, RUNNING, CANCELLED...) and the scheduler's reason; until its
// agent connects its host is empty and its lease age 0.
type AgentStatus struct {
	AgentRef
	Kernels    []int  `json:"kernels"`
	LeaseAgeMs int64  `json:"leaseAgeMs"`
	JobName    string `json:"jobName,omitempty"`
	JobState   string `json:"jobState,omitempty"`
	JobReason  string `json:"jobReason,omitempty"`
}

// QueueStatus counts the scheduler's jobs.
type QueueStatus struct {
	Pending int `json:"pending"`
	Running int `json:"running"`
}

// RunEffects is what an automatic run does with external effects
// (PROTOCOL.md 8.2): EffectsHold or EffectsAllow.
type RunEffects string

const (
	// EffectsHold: an automatic run (typing) holds external effects; the
	// default.
	EffectsHold RunEffects = "hold"
	// EffectsAllow: automatic runs make their effects too (fully live).
	EffectsAllow RunEffects = "allow"
)

// SetRunPolicyParams: runtime/setRunPolicy (result null). ContextID ""
// sets the session's default: the client's contexts without a policy of
// their own, and those it creates later.
type SetRunPolicyParams struct {
	ContextID ContextID  `json:"contextId,omitempty" decode:"optional"`
	Effects   RunEffects `json:"effects"`
}

// UnmarshalJSON decodes strictly.
func (p *SetRunPolicyParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// --- params shared by several methods

// ContextParams are the params of the methods that only name a context.
type ContextParams struct {
	ContextID ContextID `json:"contextId"`
}

// The methods whose params are ContextParams.
type (
	RestartKernelParams  = ContextParams // runtime/restartKernel (result null)
	DestroyContextParams = ContextParams // executionContext/destroy (result null)
	PopParams            = ContextParams // executionContext/pop (result null)
	InterruptParams      = ContextParams // executionContext/interrupt (result null)
)

// UnmarshalJSON decodes strictly.
func (p *ContextParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// PathParams are the params of the methods that only name a file.
type PathParams struct {
	Path Path `json:"path"`
}

// The methods whose params are PathParams.
type (
	FileReadParams   = PathParams // file/read
	FileListParams   = PathParams // file/list
	FileDeleteParams = PathParams // file/delete (result null)
	OpenFileParams   = PathParams // text/openFile
	CloseFileParams  = PathParams // text/closeFile (result null)
)

// UnmarshalJSON decodes strictly.
func (p *PathParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// --- files

// FileReadResult is the reply to file/read.
type FileReadResult struct {
	Contents string `json:"contents"`
}

// FileWriteParams: file/write (result null).
type FileWriteParams struct {
	Path     Path   `json:"path"`
	Contents string `json:"contents"`
}

// UnmarshalJSON decodes strictly.
func (p *FileWriteParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// FileKind is "file" or "directory".
type FileKind string

const (
	KindFile      FileKind = "file"
	KindDirectory FileKind = "directory"
)

// FileEntry is one entry of a file/list reply.
type FileEntry struct {
	Path Path     `json:"path"`
	Kind FileKind `json:"kind"`
}

// FileListResult is the reply to file/list.
type FileListResult struct {
	Entries []FileEntry `json:"entries"`
}

// --- text buffers

// OpenFileResult is the reply to text/openFile. CurrentVersion is the
// lowercase hex SHA3-224 of the UTF-8 content.
type OpenFileResult struct {
	Content        string `json:"content"`
	CurrentVersion string `json:"currentVersion"`
	// Recovered is unsaved content of the file a server kept when it last
	// stopped (PROTOCOL.md 7.4), when it differs from the disk's; the
	// buffer itself opens with the disk's content.
	Recovered *RecoveredBuffer `json:"recovered,omitempty"`
}

// RecoveredBuffer is OpenFileResult.Recovered.
type RecoveredBuffer struct {
	Content string `json:"content"`
	Version string `json:"version"`
	// SavedAt is when the server kept it (RFC 3339).
	SavedAt string `json:"savedAt"`
	// Path is the recovery file (under .ripple/recovery); file/delete of
	// it discards the recovered content.
	Path string `json:"path"`
}

// TextEdit replaces Range with Text.
type TextEdit struct {
	Range Range  `json:"range"`
	Text  string `json:"text"`
}

// UnmarshalJSON decodes strictly.
func (e *TextEdit) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, e) }

// FileEdit is a sequence of edits of one file, each applied to the result of
// the previous, taking the buffer from OldVersion to NewVersion.
type FileEdit struct {
	Path       Path       `json:"path"`
	Edits      []TextEdit `json:"edits"`
	OldVersion string     `json:"oldVersion"`
	NewVersion string     `json:"newVersion"`
}

// UnmarshalJSON decodes strictly.
func (e *FileEdit) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, e) }

// Clone returns a deep copy.
func (e FileEdit) Clone() FileEdit {
	e.Edits = slices.Clone(e.Edits)
	return e
}

// ApplyEditParams: text/applyEdit (result null). Execute defaults to true
// when absent.
type ApplyEditParams struct {
	Edit    FileEdit `json:"edit"`
	Execute bool     `json:"execute" decode:"optional,default=true"`
}

// UnmarshalJSON decodes strictly.
func (p *ApplyEditParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// SaveParams: text/save (result null).
type SaveParams struct {
	Path           Path   `json:"path"`
	CurrentVersion string `json:"currentVersion"`
}

// UnmarshalJSON decodes strictly.
func (p *SaveParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// --- execution contexts

// CreateContextParams: executionContext/create. ContextID is "" when the
// client leaves the choice to the server.
type CreateContextParams struct {
	ContextID ContextID `json:"contextId,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (p *CreateContextParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// CreateContextResult is the reply to executionContext/create.
type CreateContextResult struct {
	ContextID ContextID `json:"contextId"`
}

// PushParams: executionContext/push (result null).
type PushParams struct {
	ContextID ContextID `json:"contextId"`
	StackItem StackItem `json:"stackItem"`
}

// UnmarshalJSON decodes strictly.
func (p *PushParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// InvalidatedExpressions is what a recompute invalidates: All, or the
// expressions IDs (and, when run, their dependents). Its JSON form is
// "all" or an array of expression ids.
type InvalidatedExpressions struct {
	All bool
	IDs []ExpressionID
}

// InvalidateAll returns the "all" invalidation.
func InvalidateAll() *InvalidatedExpressions { return &InvalidatedExpressions{All: true} }

// Empty reports whether nothing is invalidated.
func (inv InvalidatedExpressions) Empty() bool { return !inv.All && len(inv.IDs) == 0 }

// Merge returns the union of inv and other: all wins, ids are kept in
// first-seen order without duplicates.
func (inv InvalidatedExpressions) Merge(other InvalidatedExpressions) InvalidatedExpressions {
	if inv.All || other.All {
		return InvalidatedExpressions{All: true}
	}
	out := InvalidatedExpressions{IDs: slices.Clone(inv.IDs)}
	for _, id := range other.IDs {
		if !slices.Contains(out.IDs, id) {
			out.IDs = append(out.IDs, id)
		}
	}
	return out
}

// Clone returns a deep copy.
func (inv InvalidatedExpressions) Clone() InvalidatedExpressions {
	inv.IDs = slices.Clone(inv.IDs)
	return inv
}

// MarshalJSON writes "all" or the array of ids.
func (inv InvalidatedExpressions) MarshalJSON() ([]byte, error) {
	if inv.All {
		return []byte(`"all"`), nil
	}
	ids := inv.IDs
	if ids == nil {
		ids = []ExpressionID{}
	}
	return json.Marshal(ids)
}

// decodeStrict decodes "all" or an array of expression ids (strictplan.go).
func (inv *InvalidatedExpressions) decodeStrict(raw json.RawMessage) *FieldError {
	*inv = InvalidatedExpressions{}
	const want = `"all" or an array of expression ids`
	switch jsonKind(raw) {
	case "string":
		if s, _ := stringValue(raw); s != "all" {
			return &FieldError{Problem: badValueProblem(want, s)}
		}
		inv.All = true
		return nil
	case "array":
		return decodeStrict(raw, &inv.IDs)
	}
	return &FieldError{Problem: "expected " + want + ", got " + jsonKind(raw)}
}

// UnmarshalJSON decodes "all" or an array of expression ids.
func (inv *InvalidatedExpressions) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, inv)
}

// RecomputeParams: executionContext/recompute (result null).
// InvalidatedExpressions is nil when absent: recompute only what is invalid.
type RecomputeParams struct {
	ContextID              ContextID               `json:"contextId"`
	InvalidatedExpressions *InvalidatedExpressions `json:"invalidatedExpressions,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (p *RecomputeParams) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }

// VisualizationConfiguration says which context a visualization belongs to
// and what it applies: Expression is Python source evaluating to a callable
// ("lambda v: v[:10]") or a module:qualname pointer to a project function;
// PositionalArgumentsExpressions are extra arguments after the value.
type VisualizationConfiguration struct {
	ExecutionContextID             ContextID `json:"executionContextId"`
	Expression                     string    `json:"expression" decode:"nonempty"`
	PositionalArgumentsExpressions []string  `json:"positionalArgumentsExpressions,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (c *VisualizationConfiguration) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, c)
}

// Clone returns a deep copy.
func (c VisualizationConfiguration) Clone() VisualizationConfiguration {
	c.PositionalArgumentsExpressions = slices.Clone(c.PositionalArgumentsExpressions)
	return c
}

// AttachVisualizationParams: executionContext/attachVisualization (result null).
type AttachVisualizationParams struct {
	VisualizationID     VisualizationID            `json:"visualizationId"`
	ExpressionID        ExpressionID               `json:"expressionId"`
	VisualizationConfig VisualizationConfiguration `json:"visualizationConfig"`
}

// UnmarshalJSON decodes strictly.
func (p *AttachVisualizationParams) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, p)
}

// ModifyVisualizationParams: executionContext/modifyVisualization (result null).
type ModifyVisualizationParams struct {
	VisualizationID     VisualizationID            `json:"visualizationId"`
	VisualizationConfig VisualizationConfiguration `json:"visualizationConfig"`
}

// UnmarshalJSON decodes strictly.
func (p *ModifyVisualizationParams) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, p)
}

// DetachVisualizationParams: executionContext/detachVisualization (result null).
type DetachVisualizationParams struct {
	ExecutionContextID ContextID       `json:"executionContextId"`
	VisualizationID    VisualizationID `json:"visualizationId"`
	ExpressionID       ExpressionID    `json:"expressionId"`
}

// UnmarshalJSON decodes strictly.
func (p *DetachVisualizationParams) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, p)
}

// ExecuteExpressionParams: executionContext/executeExpression (result null).
type ExecuteExpressionParams struct {
	ExecutionContextID ContextID       `json:"executionContextId"`
	VisualizationID    VisualizationID `json:"visualizationId"`
	ExpressionID       ExpressionID    `json:"expressionId"`
	Expression         string          `json:"expression" decode:"nonempty"`
}

// UnmarshalJSON decodes strictly.
func (p *ExecuteExpressionParams) UnmarshalJSON(b []byte) error {
	return unmarshalStrict(b, p)
}
