package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// A context that ran one script (stream:__main__, a statement printing
// megabytes) and then another (main:__main__) gets the value of an edit of
// the second without the first's top level running again. The kernel's
// first compile after the switch (of the push, or in bench/web of the first
// keystroke's edit) used to import stream as a module, since it had left the
// set of scripts while still in service: its whole top level ran inside the
// compile, output discarded, and the run and value waited behind it (after
// a 6 s stream in bench/web, the first keystroke took 6 s).
func TestEditAfterScriptSwitchDoesNotRerunTheOldScript(t *testing.T) {
	marks := filepath.Join(t.TempDir(), "stream-runs")
	// 2 MB in about a second, paced as bench/web's stream.py paces its 6 MB.
	stream := fmt.Sprintf("import time\nwith open(%q, 'a') as f:\n    f.write('ran\\n')\nrest = 'y' * 90\n"+
		"for k in range(100):\n    print(''.join('%%08d %%s\\n' %% (k * 200 + n, rest) for n in range(200)), end='')\n    time.sleep(0.01)\n"+
		"streamed = 20000\n", marks)
	st := serveProject(t, map[string]string{"stream.py": stream, "main.py": "base = 1000\nvalue = base + 0\n"}, engine.Config{})
	c, _ := connect(t, st.url, "page")

	id, r := c.newContext("stream:__main__")
	if r.failed != nil || r.updates.Values()["stream:__main__/streamed"] != "20000" {
		t.Fatalf("stream run: failed %v, values %v", r.failed, r.updates.Values())
	}
	if len(r.output) < 1<<20 {
		t.Fatalf("stream run printed %d bytes, want over 1 MiB", len(r.output))
	}
	start := time.Now() // logged, not asserted: a figure for the notes
	c.call(protocol.MethodPop, protocol.PopParams{ContextID: id}, nil)
	mp, err := protocol.ParseMethodPointer("main:__main__")
	if err != nil {
		t.Fatal(err)
	}
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(mp)}, nil)
	if got := c.runUntil(id, has("main:__main__/value")); got["main:__main__/value"] != "1000" {
		t.Fatalf("main run: values %v", got)
	}

	c.setText("main.py", "base = 1000\nvalue = base + 7\n")
	var output strings.Builder
	for {
		r := c.waitRun(id)
		output.WriteString(r.output)
		if r.failed != nil {
			t.Fatalf("the edit's run failed: %+v", r.failed)
		}
		if r.updates.Values()["main:__main__/value"] == "1007" {
			break
		}
	}
	t.Logf("from the switch to main through the edit's value, after a %d-byte stream: %v", len(r.output), time.Since(start))
	b, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "ran\n"); n != 1 {
		t.Errorf("stream.py's top level ran %d times, want once (a compile of main.py imported it again before the value of its edit)", n)
	}
	if output.Len() != 0 {
		t.Errorf("the edit's runs printed %d bytes (%q...), want none", output.Len(), trim(output.String()))
	}
}
