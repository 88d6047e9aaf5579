package tests

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// Fault isolation with the real binary: compiles that hang or kill their
// kernel cannot wedge the server, a slow call does not hold up the
// connection, and edits abort only the contexts they affect.

// restartLines counts the kernel restarts the server logged (at the
// default level, so an operator sees every restart).
func restartLines(p *serveProc) int {
	return strings.Count(p.stderr.String(), "kernel died and was restarted") +
		strings.Count(p.stderr.String(), "kernel restarted")
}

// waitEnd reads c's messages until a run of id ends; it returns the
// executionFailed result (nil on executionComplete) and the
// executionStatus diagnostics seen on the way.
func waitEnd(t *testing.T, c *client, id protocol.ContextID) (*protocol.ExecutionResult, []protocol.Diagnostic) {
	t.Helper()
	r := c.waitRun(id)
	return r.failed, r.status
}

// waitForFile is a statement body that blocks until a file exists.
func waitForFile(path string) string {
	return fmt.Sprintf("import os, time\n    while not os.path.exists(%q): time.sleep(0.02)\n", path)
}

// The hanging top level: helper.py, imported by context A's module, is
// saved with a top level that never returns while context B (another
// module, on the other kernel) runs. B finishes while A's compile hangs; A
// gets a compile-error diagnostic at helper.py within the compile timeout
// plus 2 s; a restartKernel sent meanwhile is answered, and a file/read
// sent after it is answered first; fixing helper.py recovers A.
func TestServeBinaryHangingTopLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	writeFile(t, dir, "a.py", "import helper\n\ndef main():\n    v = helper.V\n")
	writeFile(t, dir, "helper.py", "V = 1\n")
	writeFile(t, dir, "b.py", "def main():\n    "+waitForFile(release)+"    w = 2\n")
	p := startServe(t, nil, dir, "--kernels", "2")
	c, _ := connect(t, p.url, "ide")
	a, r := c.newContext("a:main")
	if r.failed != nil {
		t.Fatalf("a's first run: %+v", r.failed)
	}
	var created protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &created)
	b := created.ContextID
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: b, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "b", Name: "main"})}, nil)
	var st protocol.RuntimeStatusResult
	c.call(protocol.MethodRuntimeStatus, nil, &st)
	slotOf := map[protocol.ContextID]int{}
	for _, k := range st.Kernels {
		for _, id := range k.Contexts {
			slotOf[id] = k.ID
		}
	}
	if slotOf[a] == slotOf[b] {
		t.Fatalf("a and b share kernel %d; the test needs them apart (status %+v)", slotOf[a], st)
	}

	saved := time.Now()
	c.setText("helper.py", "import time\nwhile True:\n    time.sleep(0.05)\n")
	// B goes on running on its kernel while A's compile hangs: released
	// now, it completes before A's compile error comes.
	writeFile(t, filepath.Dir(release), "release", "")
	var (
		bDone, aFailed bool
		aResult        *protocol.ExecutionResult
		aDiag          []protocol.Diagnostic
	)
	for !bDone || !aFailed {
		m, err := c.c.Next(stepCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			ContextID   protocol.ContextID       `json:"contextId"`
			Result      protocol.ExecutionResult `json:"result"`
			Diagnostics []protocol.Diagnostic    `json:"diagnostics"`
		}
		_ = json.Unmarshal(m.Params, &head)
		switch {
		case m.Method == protocol.NotifyExecutionComplete && head.ContextID == b:
			if aFailed {
				t.Fatalf("b completed only after a's compile error: it waited for the hanging compile")
			}
			bDone = true
		case m.Method == protocol.NotifyExecutionStatus && head.ContextID == a:
			aDiag = append(aDiag, head.Diagnostics...)
		case m.Method == protocol.NotifyExecutionFailed && head.ContextID == a:
			aFailed, aResult = true, &head.Result
		case m.Method == protocol.NotifyExecutionComplete && head.ContextID == a:
			t.Fatalf("a completed with a hanging helper")
		}
	}
	took := time.Since(saved)
	t.Logf("compile error of the hanging helper after %v", took)
	if aResult.Kind != protocol.ResultCompileError || aResult.Diagnostic == nil || aResult.Diagnostic.Path != "helper.py" ||
		!strings.Contains(aResult.Diagnostic.Message, "compile timeout") {
		t.Fatalf("a's run: %+v, want a compileError at helper.py naming the compile timeout", aResult)
	}
	if len(aDiag) == 0 || aDiag[0].Path != "helper.py" {
		t.Fatalf("a's executionStatus diagnostics %+v, want one at helper.py", aDiag)
	}
	if limit := 10*time.Second + 2*time.Second; took > limit {
		t.Fatalf("the compile error came %v after the save, want within %v", took, limit)
	}

	// restartKernel while the module still hangs: the new kernel loads a
	// again (the hang is cut at the timeout once more), so the call is
	// slow; a file/read sent after it is answered first, and the restart
	// is answered within its bound.
	writeFile(t, dir, "note.txt", "fast")
	restart := `{"jsonrpc":"2.0","id":"restart","method":"runtime/restartKernel","params":{"contextId":"` + string(a) + `"}}`
	read := `{"jsonrpc":"2.0","id":"read","method":"file/read","params":{"path":"note.txt"}}`
	sent := time.Now()
	if err := c.c.WriteRaw([]byte(restart)); err != nil {
		t.Fatal(err)
	}
	if err := c.c.WriteRaw([]byte(read)); err != nil {
		t.Fatal(err)
	}
	var order []string
	for len(order) < 2 {
		m, err := c.c.Next(stepCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.IsNotification() {
			continue
		}
		order = append(order, strings.Trim(string(m.ID), `"`))
		if string(m.ID) == `"restart"` {
			t.Logf("restartKernel answered after %v: %s", time.Since(sent), trim(string(m.Raw)))
			if time.Since(sent) > 30*time.Second {
				t.Fatalf("restartKernel answered after %v, beyond its bound", time.Since(sent))
			}
		}
	}
	if order[0] != "read" {
		t.Fatalf("replies in order %v, want the file/read before the slow restartKernel", order)
	}

	// Fixed, a recovers.
	c.setText("helper.py", "V = 3\n")
	for {
		r := c.waitRun(a)
		if r.failed == nil {
			expect(t, "a's v after the fix", r.updates.Values()["a:main/v"], "3")
			break
		}
		if r.failed.Kind != protocol.ResultCompileError {
			t.Fatalf("a's run after the fix: %+v", r.failed)
		}
	}
}

// The killing top level: helper.py's import kills its kernel. A gets a
// compile error naming the kill, the module stays out of service (a
// recompute does not import it again: one restart, no loop), a
// restartKernel is answered, and fixing it recovers.
func TestServeBinaryKillingTopLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.py", "import helper\n\ndef main():\n    v = helper.V\n")
	writeFile(t, dir, "helper.py", "V = 1\n")
	p := startServe(t, nil, dir, "--kernels", "1")
	c, _ := connect(t, p.url, "ide")
	a, r := c.newContext("a:main")
	if r.failed != nil {
		t.Fatalf("a's first run: %+v", r.failed)
	}
	before := restartLines(p)
	c.setText("helper.py", "import os\nos._exit(7)\n")
	for {
		res, _ := waitEnd(t, c, a)
		if res != nil && res.Kind == protocol.ResultCompileError {
			if res.Diagnostic == nil || res.Diagnostic.Path != "helper.py" || !strings.Contains(res.Diagnostic.Message, "killed the kernel") {
				t.Fatalf("compile error %+v, want one at helper.py naming the kill", res.Diagnostic)
			}
			break
		}
		if res == nil {
			t.Fatalf("a completed with a killing helper")
		}
	}
	for range 3 {
		c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: a}, nil)
		res, _ := waitEnd(t, c, a)
		if res == nil || res.Kind != protocol.ResultCompileError {
			t.Fatalf("recompute with the module out of service: %+v", res)
		}
	}
	if err := c.c.Call(stepCtx(t), protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: a}, nil); err != nil {
		t.Fatalf("restartKernel: %v", err)
	}
	c.setText("helper.py", "V = 4\n")
	for {
		r := c.waitRun(a)
		if r.failed == nil {
			expect(t, "a's v after the fix", r.updates.Values()["a:main/v"], "4")
			break
		}
	}
	// The kill's restart and the one asked for; no loop.
	if n := restartLines(p) - before; n != 2 {
		t.Fatalf("%d kernel restarts logged, want 2 (the kill, the restartKernel); stderr:\n%s", n, p.stderr.String())
	}
}

// The counter scenario: another client's edits of a module the running
// context does not import never restart its statement, so its print runs
// once.
func TestServeBinaryUnrelatedEditsDoNotRepeatAStatement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	release := filepath.Join(t.TempDir(), "release")
	writeFile(t, dir, "main.py", "import os, time\n\ndef work():\n    print('COUNT', 0, flush=True)\n"+
		"    while not os.path.exists("+fmt.Sprintf("%q", release)+"):\n        time.sleep(0.02)\n    return 1\n\ndef main():\n    x = work()\n")
	writeFile(t, dir, "other.py", "Y = 0\n")
	p := startServe(t, nil, dir, "--kernels", "1")
	c, _ := connect(t, p.url, "ide")
	editor, _ := connect(t, p.url, "editor")
	var created protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &created)
	id := created.ContextID
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil)
	c.waitFor(protocol.NotifyOutput, func(raw json.RawMessage) bool { return strings.Contains(string(raw), "COUNT") })
	for i := range 10 {
		editor.setText("other.py", fmt.Sprintf("Y = %d\n", i+1))
	}
	writeFile(t, filepath.Dir(release), "release", "")
	r := c.waitRun(id)
	if r.failed != nil {
		t.Fatalf("run: %+v", r.failed)
	}
	expect(t, "x", r.updates.Values()["main:main/x"], "1")
	if strings.Contains(r.output, "COUNT") {
		t.Fatalf("the statement printed again after the unrelated edits: %q", r.output)
	}
}

// The starvation scenario: four contexts whose run takes 0.3 s all finish
// while three other clients edit every 100 ms, modules those contexts do
// not import, and modules they do import (the runs then stop at statement
// boundaries and go on, DESIGN.md "Edit a file").
func TestServeBinaryContextsFinishUnderAStreamOfEdits(t *testing.T) {
	t.Parallel()
	t.Run("unrelated", func(t *testing.T) {
		t.Parallel()
		contextsFinishUnderEdits(t, "")
	})
	t.Run("imported", func(t *testing.T) {
		t.Parallel()
		contextsFinishUnderEdits(t, "import scratch0, scratch1, scratch2\n")
	})
}

func contextsFinishUnderEdits(t *testing.T, imports string) {
	dir := t.TempDir()
	for i := range 4 {
		// sleep, not time.sleep: a call on a module object counts as a
		// possible mutation of the module, which chains the three
		// statements (kernel/python/ripple_kernel/mutation.py) so that a run stopped
		// after one of them would run them all again.
		writeFile(t, dir, fmt.Sprintf("job%d.py", i), "from time import sleep\n"+imports+"\ndef main():\n"+
			"    a = sleep(0.1)\n    b = sleep(0.1)\n    c = sleep(0.1)\n    done = "+fmt.Sprint(i)+"\n")
	}
	for i := range 3 {
		writeFile(t, dir, fmt.Sprintf("scratch%d.py", i), "S = 0\n")
	}
	p := startServe(t, nil, dir, "--kernels", "2")
	c, _ := connect(t, p.url, "ide")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 3 {
		editor, _ := connect(t, p.url, fmt.Sprintf("editor%d", i))
		path := fmt.Sprintf("scratch%d.py", i)
		var open protocol.OpenFileResult
		editor.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: path}, &open)
		wg.Add(1)
		go func() {
			defer wg.Done()
			text, current := open.Content, open.CurrentVersion
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				next := fmt.Sprintf("S = %d\n", n)
				err := editor.c.Call(stepCtx(t), protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
					Path: path, Edits: []protocol.TextEdit{{Range: protocol.Range{End: endOf(text)}, Text: next}},
					OldVersion: current, NewVersion: version(next)}}, nil)
				if err != nil {
					t.Errorf("edit %s: %v", path, err)
					return
				}
				text, current = next, version(next)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	ids := map[protocol.ContextID]bool{}
	for i := range 4 {
		var created protocol.CreateContextResult
		c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &created)
		c.call(protocol.MethodPush, protocol.PushParams{ContextID: created.ContextID, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: fmt.Sprintf("job%d", i), Name: "main"})}, nil)
		ids[created.ContextID] = true
	}
	for len(ids) > 0 {
		m, err := c.c.WaitFor(stepCtx(t), func(m servertest.Message) bool {
			return m.IsNotification() && (m.Method == protocol.NotifyExecutionComplete || m.Method == protocol.NotifyExecutionFailed)
		})
		if err != nil {
			t.Fatalf("%d of 4 contexts did not finish under the edits: %v", len(ids), err)
		}
		var head struct {
			ContextID protocol.ContextID `json:"contextId"`
		}
		mustDecode(t, m.Params, &head)
		if m.Method == protocol.NotifyExecutionFailed {
			t.Fatalf("a context failed: %s", trim(string(m.Raw)))
		}
		delete(ids, head.ContextID)
	}
}
