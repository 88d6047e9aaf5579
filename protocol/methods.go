package protocol

// Version is the protocol version returned by session/initProtocolConnection.
const Version = "1"

// Methods a client calls (PROTOCOL.md section 3).
const (
	MethodInitProtocolConnection = "session/initProtocolConnection"

	MethodRuntimeStatus = "runtime/status"
	MethodRestartKernel = "runtime/restartKernel"

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

// NewParams returns a new, zero params value for a client method, ready for
// DecodeParams, and false for a method this protocol does not define (the
// server answers MethodNotFound).
func NewParams(method string) (Params, bool) {
	switch method {
	case MethodInitProtocolConnection:
		return new(InitProtocolConnectionParams), true
	case MethodRuntimeStatus:
		return new(RuntimeStatusParams), true
	case MethodRestartKernel:
		return new(RestartKernelParams), true
	case MethodFileRead:
		return new(FileReadParams), true
	case MethodFileWrite:
		return new(FileWriteParams), true
	case MethodFileList:
		return new(FileListParams), true
	case MethodFileDelete:
		return new(FileDeleteParams), true
	case MethodTextOpenFile:
		return new(OpenFileParams), true
	case MethodTextApplyEdit:
		return new(ApplyEditParams), true
	case MethodTextSave:
		return new(SaveParams), true
	case MethodTextCloseFile:
		return new(CloseFileParams), true
	case MethodCreateContext:
		return new(CreateContextParams), true
	case MethodDestroyContext:
		return new(DestroyContextParams), true
	case MethodPush:
		return new(PushParams), true
	case MethodPop:
		return new(PopParams), true
	case MethodRecompute:
		return new(RecomputeParams), true
	case MethodInterrupt:
		return new(InterruptParams), true
	case MethodAttachVisualization:
		return new(AttachVisualizationParams), true
	case MethodModifyVisualization:
		return new(ModifyVisualizationParams), true
	case MethodDetachVisualization:
		return new(DetachVisualizationParams), true
	case MethodExecuteExpression:
		return new(ExecuteExpressionParams), true
	}
	return nil, false
}
