package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Every method and notification of PROTOCOL.md over the wire, against the
// real engine and the real project tree.

var projectFiles = map[string]string{
	"main.py":          "from helper import foo\nimport sys\n\n\ndef main():\n    x = 6\n    print('out', x)\n    print('err', x, file=sys.stderr)\n    y = foo(x, 5)\n    return y\n",
	"helper.py":        scenarioHelper,
	"pkg/__init__.py":  "",
	"pkg/util.py":      "def double(v):\n    return v * 2\n",
	"notes/readme.txt": "hello\n",
}

func TestWireSessionAndRuntime(t *testing.T) {
	t.Parallel()
	s := serveProject(t, projectFiles, engine.Config{})
	c, init := connect(t, s.url, "ide")
	root, _ := filepath.EvalSymlinks(s.dir)
	if init.Version != protocol.Version || (init.ProjectRoot != s.dir && init.ProjectRoot != root) {
		t.Errorf("init %+v, want version %s and root %s", init, protocol.Version, s.dir)
	}
	slices.Sort(init.Modules)
	expect(t, "modules", init.Modules, []string{"helper", "main", "pkg", "pkg.util"})

	id, r := c.newContext("main:main")
	if r.failed != nil {
		t.Fatalf("run failed: %+v", r.failed)
	}
	// executionContext/output, both streams.
	if !strings.Contains(r.output, "out 6") || !strings.Contains(r.output, "err 6") {
		t.Errorf("output %q, want both streams", r.output)
	}
	var streams []string
	for _, m := range r.messages {
		if m.Method == protocol.NotifyOutput {
			var p protocol.OutputParams
			mustDecode(t, m.Params, &p)
			streams = append(streams, string(p.Stream))
		}
	}
	if !slices.Contains(streams, "stdout") || !slices.Contains(streams, "stderr") {
		t.Errorf("output streams %v", streams)
	}

	var st protocol.RuntimeStatusResult
	c.call(protocol.MethodRuntimeStatus, nil, &st)
	if len(st.Kernels) != 1 || st.Kernels[0].PID <= 0 || !slices.Contains(st.Kernels[0].Contexts, id) {
		t.Fatalf("status %+v, want one kernel with a pid serving %s", st, id)
	}
	oldPID := st.Kernels[0].PID

	// runtime/restartKernel: runtime/kernelRestarted, then a fresh run.
	c.call(protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: id}, nil)
	m := c.waitFor(protocol.NotifyKernelRestarted, nil)
	var kr protocol.KernelRestartedParams
	mustDecode(t, m.Params, &kr)
	if kr.StatePreserved || !slices.Contains(kr.ContextIDs, id) || kr.Reason == "" {
		t.Errorf("kernelRestarted %+v", kr)
	}
	r = c.waitRun(id)
	if r.failed != nil || !slices.Contains(r.updates.Computed(), "main:main/y") {
		t.Errorf("run after restart: failed %+v, computed %v", r.failed, r.updates.Computed())
	}
	c.call(protocol.MethodRuntimeStatus, nil, &st)
	if len(st.Kernels) != 1 || st.Kernels[0].PID == oldPID {
		t.Errorf("status after restart %+v: the kernel pid did not change", st)
	}
}

func TestWireFiles(t *testing.T) {
	t.Parallel()
	s := serveProject(t, projectFiles, engine.Config{})
	writeFile(t, s.dir, "latin1.txt", "caf\xe9\n")
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "secret\n")
	if err := os.Symlink(outside, filepath.Join(s.dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(s.dir, "secret-link.txt")); err != nil {
		t.Fatal(err)
	}
	c, _ := connect(t, s.url, "ide")

	c.call(protocol.MethodFileWrite, protocol.FileWriteParams{Path: "a/b/new.txt", Contents: "fresh ✓\n"}, nil)
	if got := readFile(t, s.dir, "a/b/new.txt"); got != "fresh ✓\n" {
		t.Fatalf("on disk: %q", got)
	}
	var read protocol.FileReadResult
	c.call(protocol.MethodFileRead, protocol.FileReadParams{Path: "a/b/new.txt"}, &read)
	expect(t, "read", read.Contents, "fresh ✓\n")
	var list protocol.FileListResult
	c.call(protocol.MethodFileList, protocol.FileListParams{Path: "pkg"}, &list)
	var names []string
	for _, e := range list.Entries {
		names = append(names, e.Path+":"+string(e.Kind))
	}
	slices.Sort(names)
	expect(t, "list pkg", names, []string{"pkg/__init__.py:file", "pkg/util.py:file"})
	c.call(protocol.MethodFileList, protocol.FileListParams{Path: "a"}, &list)
	if len(list.Entries) != 1 || list.Entries[0].Kind != protocol.KindDirectory {
		t.Errorf("list a: %+v", list.Entries)
	}
	c.call(protocol.MethodFileDelete, protocol.FileDeleteParams{Path: "a/b/new.txt"}, nil)
	if _, err := os.Stat(filepath.Join(s.dir, "a/b/new.txt")); !os.IsNotExist(err) {
		t.Fatalf("file/delete left the file: %v", err)
	}

	c.callErr(protocol.CodeFileNotFound, protocol.MethodFileRead, protocol.FileReadParams{Path: "a/b/new.txt"}, "a/b/new.txt")
	c.callErr(protocol.CodeFileNotFound, protocol.MethodFileDelete, protocol.FileDeleteParams{Path: "nope.py"}, "nope.py")
	c.callErr(protocol.CodeNotFile, protocol.MethodFileRead, protocol.FileReadParams{Path: "pkg"}, "pkg")
	c.callErr(protocol.CodeNotDirectory, protocol.MethodFileList, protocol.FileListParams{Path: "main.py"}, "main.py")
	c.callErr(protocol.CodeCannotDecode, protocol.MethodFileRead, protocol.FileReadParams{Path: "latin1.txt"}, "latin1.txt")
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "pkg/../../x", "out/secret.txt", "secret-link.txt"} {
		c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileRead, protocol.FileReadParams{Path: p}, p)
		c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileWrite, protocol.FileWriteParams{Path: p, Contents: "pwned"}, p)
		c.callErr(protocol.CodePathOutsideRoot, protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: p}, p)
	}
	c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileDelete, protocol.FileDeleteParams{Path: "out/secret.txt"})
	// A symlink leading outside is refused too, not deleted: a delete
	// of the link would be a write outside the root.
	c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileDelete, protocol.FileDeleteParams{Path: "secret-link.txt"}, "secret-link.txt")
	if _, err := os.Lstat(filepath.Join(s.dir, "secret-link.txt")); err != nil {
		t.Fatalf("the refused delete removed the link: %v", err)
	}
	// Names no file system takes: specific errors naming the fault, not -32603.
	long := strings.Repeat("n", 300) + ".py"
	for _, bad := range []struct{ path, says string }{{long, "303 bytes long"}, {"a\x00b.py", "NUL byte"}} {
		c.callErr(protocol.CodeInvalidParams, protocol.MethodFileRead, protocol.FileReadParams{Path: bad.path}, bad.says)
		c.callErr(protocol.CodeInvalidParams, protocol.MethodFileWrite, protocol.FileWriteParams{Path: bad.path, Contents: "x"}, bad.says)
		c.callErr(protocol.CodeInvalidParams, protocol.MethodFileDelete, protocol.FileDeleteParams{Path: bad.path}, bad.says)
		c.callErr(protocol.CodeInvalidParams, protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: bad.path}, bad.says)
	}
	c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileList, protocol.FileListParams{Path: "out"})
	if got := readFile(t, outside, "secret.txt"); got != "secret\n" {
		t.Fatalf("the file outside the root changed: %q", got)
	}

	// file/write is refused while the file has unsaved edits in a buffer.
	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "notes/readme.txt"}, &open)
	c.call(protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: false, Edit: protocol.FileEdit{
		Path: "notes/readme.txt", Edits: []protocol.TextEdit{{Text: "> "}},
		OldVersion: open.CurrentVersion, NewVersion: version("> hello\n")}}, nil)
	c.callErr(protocol.CodeWriteDenied, protocol.MethodFileWrite, protocol.FileWriteParams{Path: "notes/readme.txt", Contents: "clobber"}, "notes/readme.txt")
	if got := readFile(t, s.dir, "notes/readme.txt"); got != "hello\n" {
		t.Fatalf("refused write changed the file: %q", got)
	}
}

func TestWireTextBuffers(t *testing.T) {
	t.Parallel()
	s := serveProject(t, projectFiles, engine.Config{})
	writeFile(t, s.dir, "digits.txt", "123456789")
	writeFile(t, s.dir, "wide.txt", "a😀é = 1\n")
	a, _ := connect(t, s.url, "alice")
	b, _ := connect(t, s.url, "bob")

	var open protocol.OpenFileResult
	a.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "digits.txt"}, &open)
	expect(t, "version of 123456789", open.CurrentVersion, "5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522")

	// Positions count code points: replace "é" (character 2, after an
	// emoji that is 2 UTF-16 units and 4 bytes).
	a.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "wide.txt"}, &open)
	b.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "wide.txt"}, nil)
	edit := protocol.FileEdit{Path: "wide.txt",
		Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Character: 2}, End: protocol.Position{Character: 3}}, Text: "e"}},
		OldVersion: open.CurrentVersion, NewVersion: version("a😀e = 1\n")}
	a.call(protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: edit, Execute: false}, nil)
	// The other client with the file open is told.
	m := b.waitFor(protocol.NotifyTextDidChange, nil)
	var dc protocol.DidChangeParams
	mustDecode(t, m.Params, &dc)
	if len(dc.Edits) != 1 || dc.Edits[0].NewVersion != edit.NewVersion || dc.Edits[0].Edits[0].Text != "e" {
		t.Errorf("didChange %+v", dc)
	}

	// A stale oldVersion and a wrong newVersion: 3003, buffer unchanged.
	stale := edit
	stale.Edits = []protocol.TextEdit{{Text: "#"}}
	stale.NewVersion = version("#a😀e = 1\n")
	b.callErr(protocol.CodeInvalidVersion, protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: stale}, "wide.txt")
	wrong := stale
	wrong.OldVersion = edit.NewVersion
	wrong.NewVersion = version("something else")
	b.callErr(protocol.CodeInvalidVersion, protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: wrong}, "wide.txt")
	b.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "wide.txt"}, &open)
	expect(t, "buffer after refused edits", open.Content, "a😀e = 1\n")
	expect(t, "version", open.CurrentVersion, edit.NewVersion)
	// An edit out of range: 3002.
	bad := protocol.FileEdit{Path: "wide.txt", OldVersion: open.CurrentVersion, NewVersion: "x",
		Edits: []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Line: 9}, End: protocol.Position{Line: 9}}, Text: "x"}}}
	b.callErr(protocol.CodeTextEditValidation, protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: bad}, "wide.txt")

	// text/save writes the buffer to disk.
	if got := readFile(t, s.dir, "wide.txt"); got != "a😀é = 1\n" {
		t.Fatalf("the disk changed before save: %q", got)
	}
	a.call(protocol.MethodTextSave, protocol.SaveParams{Path: "wide.txt", CurrentVersion: edit.NewVersion}, nil)
	expect(t, "disk after save", readFile(t, s.dir, "wide.txt"), "a😀e = 1\n")
	a.callErr(protocol.CodeInvalidVersion, protocol.MethodTextSave, protocol.SaveParams{Path: "wide.txt", CurrentVersion: "0000"})

	// Unsaved buffer contents are what runs.
	id, r := a.newContext("main:main")
	expect(t, "y", r.updates.Values()["main:main/y"], "30")
	a.setText("helper.py", "def foo(a, b):\n    c = a * b * 10\n    return c\n")
	r = a.waitRun(id)
	expect(t, "y from the unsaved buffer", r.updates.Values()["main:main/y"], "300")
	expect(t, "helper.py on disk", readFile(t, s.dir, "helper.py"), scenarioHelper)

	// Changed on disk under unsaved edits: the buffer is kept, its clients
	// are told.
	writeFile(t, s.dir, "helper.py", "def foo(a, b):\n    return 0\n")
	a.waitFor(protocol.NotifyFileModifiedOnDisk, func(raw json.RawMessage) bool {
		var p protocol.FileModifiedOnDiskParams
		_ = json.Unmarshal(raw, &p)
		return p.Path == "helper.py"
	})
	a.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &open)
	if !strings.Contains(open.Content, "* 10") {
		t.Errorf("the unsaved buffer was replaced: %q", open.Content)
	}
	// A new file on disk: file/event.
	writeFile(t, s.dir, "added.py", "z = 1\n")
	b.waitFor(protocol.NotifyFileEvent, func(raw json.RawMessage) bool {
		var p protocol.FileEventParams
		_ = json.Unmarshal(raw, &p)
		return p.Path == "added.py" && p.Kind == protocol.FileAdded
	})

	a.call(protocol.MethodTextCloseFile, protocol.CloseFileParams{Path: "wide.txt"}, nil)
	a.callErr(protocol.CodeFileNotOpened, protocol.MethodTextSave, protocol.SaveParams{Path: "wide.txt", CurrentVersion: edit.NewVersion}, "wide.txt")
}

func TestWireContexts(t *testing.T) {
	t.Parallel()
	s := serveProject(t, projectFiles, engine.Config{})
	c, _ := connect(t, s.url, "ide")
	id := protocol.NewContextID()
	var res protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: id}, &res)
	expect(t, "created", res.ContextID, id)
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: id}, &res)
	expect(t, "idempotent", res.ContextID, id)
	unknown := protocol.NewContextID()
	main := protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})

	c.callErr(protocol.CodeEmptyStack, protocol.MethodPop, protocol.PopParams{ContextID: id}, string(id))
	c.callErr(protocol.CodeInvalidStackItem, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")})
	c.callErr(protocol.CodeContextNotFound, protocol.MethodPush, protocol.PushParams{ContextID: unknown, StackItem: main}, string(unknown))
	c.callErr(protocol.CodeModuleNotFound, protocol.MethodPush, protocol.PushParams{ContextID: id,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "nosuch", Name: "main"})}, "nosuch")
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: main}, nil)
	if r := c.waitRun(id); r.failed != nil {
		t.Fatalf("run failed %+v", r.failed)
	}
	c.callErr(protocol.CodeInvalidStackItem, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: main})
	// A LocalCall into a statement that is not a call of a project function.
	c.callErr(protocol.CodeInvalidStackItem, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/x")}, "main:main/x")
	// Wrong stack item kinds on the wire never reach the engine.
	err := c.c.Call(stepCtx(t), protocol.MethodPush, map[string]any{"contextId": id, "stackItem": map[string]any{"type": "LocalCall", "methodPointer": map[string]string{"module": "main", "name": "main"}}}, nil)
	if pe, ok := err.(*protocol.Error); !ok || pe.Code != protocol.CodeInvalidParams {
		t.Errorf("a LocalCall with a method pointer: %v, want -32602", err)
	}

	vis := protocol.NewVisualizationID()
	cfg := protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}
	c.callErr(protocol.CodeContextNotFound, protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vis, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: unknown, Expression: "str"}})
	c.callErr(protocol.CodeVisualizationNotFound, protocol.MethodModifyVisualization, protocol.ModifyVisualizationParams{VisualizationID: vis, VisualizationConfig: cfg}, string(vis))
	c.callErr(protocol.CodeVisualizationNotFound, protocol.MethodDetachVisualization, protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: vis, ExpressionID: "main:main/x"})
	// An expression of a function that is not the top frame's.
	c.callErr(protocol.CodeExpressionNotFound, protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vis, ExpressionID: "helper:foo/c", VisualizationConfig: cfg}, "helper:foo/c")
	c.callErr(protocol.CodeExpressionNotFound, protocol.MethodExecuteExpression, protocol.ExecuteExpressionParams{ExecutionContextID: id, VisualizationID: vis, ExpressionID: "helper:foo/c", Expression: "c"}, "helper:foo/c")
	// A pointer to a project function as the visualization.
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vis, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "pkg.util:double"}}, nil)
	r := c.waitRun(id)
	expect(t, "visualization through a pointer", r.visData, []string{"12"})
	// modify: the new expression applies at once.
	c.call(protocol.MethodModifyVisualization, protocol.ModifyVisualizationParams{VisualizationID: vis,
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: [v, v]"}}, nil)
	r = c.waitRun(id)
	expect(t, "modified visualization", r.visData, []string{"[6,6]"})

	c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: id}, nil)
	c.call(protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: id}, nil)
	c.callErr(protocol.CodeContextNotFound, protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id})
	c.callErr(protocol.CodeContextNotFound, protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: id})
	c.callErr(protocol.CodeContextNotFound, protocol.MethodInterrupt, protocol.InterruptParams{ContextID: id})
}

// Notifications of a context go to the clients that use it, not others.
func TestWireNotificationsFollowContexts(t *testing.T) {
	t.Parallel()
	s := serveProject(t, projectFiles, engine.Config{Kernels: 2})
	a, _ := connect(t, s.url, "alice")
	b, _ := connect(t, s.url, "bob")
	idA, _ := a.newContext("main:main")
	idB, _ := b.newContext("helper:foo", "2", "3")
	// An edit re-runs both; each client sees only its own context.
	a.setText("helper.py", "def foo(a, b):\n    c = a + b\n    return c\n")
	ra := a.waitRun(idA)
	rb := b.waitRun(idB)
	expect(t, "alice y", ra.updates.Values()["main:main/y"], "11")
	expect(t, "bob return", rb.updates.Values()["helper:foo/return"], "5")
	for _, pair := range []struct {
		r     *run
		other protocol.ContextID
	}{{ra, idB}, {rb, idA}} {
		for _, m := range pair.r.messages {
			if strings.Contains(string(m.Raw), string(pair.other)) {
				t.Errorf("a client got a notification of another client's context: %s", trim(string(m.Raw)))
			}
		}
	}
	// bob joins alice's context (create is idempotent and adds an owner):
	// he gets its notifications too.
	b.call(protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: idA}, nil)
	a.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: idA, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	a.waitRun(idA)
	b.waitRun(idA)
}
