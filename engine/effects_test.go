package engine_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// Automatic runs hold external effects (PROTOCOL.md 8.2), end to end with
// real kernels: each held event of 8.2, held in a run that typing caused
// (the file system unchanged, the statement held with its event and
// arguments, the statements after it not reached), run by a recompute of
// it, and run at once by a batch run (ripple run); writes to the temp and
// cache dirs pass; matplotlib's savefig; setRunPolicy allow.

// effectsEnv is a project whose kernels have a temp dir and a home of
// their own: a project under the system temp dir, as every t.TempDir()
// is, would be all temp, where writes are allowed.
type effectsEnv struct {
	project, tmp, home string
	python             string // a wrapper that sets TMPDIR and HOME, then runs the interpreter
}

// newEffectsEnv writes files into a new project; python is the
// interpreter ("": the one a bare project gets). extraEnv are more
// exports for the kernels ("XDG_CACHE_HOME=/x").
func newEffectsEnv(t *testing.T, python string, files map[string]string, extraEnv ...string) effectsEnv {
	t.Helper()
	base := t.TempDir()
	env := effectsEnv{project: filepath.Join(base, "project"), tmp: filepath.Join(base, "tmp"), home: filepath.Join(base, "home")}
	for _, d := range []string{env.project, env.tmp, env.home} {
		must(t, os.MkdirAll(d, 0o755))
	}
	enginetest.WriteFiles(t, env.project, files)
	if python == "" {
		py, err := kernel.FindPython(context.Background(), "", env.project)
		if err != nil {
			t.Fatal(err)
		}
		python = py.Path
	}
	exports := append([]string{"TMPDIR=" + env.tmp, "HOME=" + env.home}, extraEnv...)
	// The cache dir is ~/.cache unless extraEnv sets XDG_CACHE_HOME.
	script := "#!/bin/bash\nunset XDG_CACHE_HOME\n"
	for _, e := range exports {
		name, value, _ := strings.Cut(e, "=")
		script += "export " + name + "='" + value + "'\n"
	}
	script += "exec -a \"$0\" " + python + " \"$@\"\n"
	env.python = filepath.Join(base, "bin", "python3")
	must(t, os.MkdirAll(filepath.Dir(env.python), 0o755))
	must(t, os.WriteFile(env.python, []byte(script), 0o755))
	return env
}

// start starts an engine on the project and connects a recorder.
func (env effectsEnv) start(t *testing.T, cfg engine.Config) *harness {
	t.Helper()
	cfg.Python = env.python
	e := enginetest.Start(t, env.project, cfg)
	h := &harness{t: t, e: e, dir: env.project, client: newRecorder(), ctx: context.Background()}
	if _, err := e.Connect(h.ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}
	return h
}

// snapshot describes every file and directory of the project (mode, and
// a hash of a file's content), the engine's own .ripple and bytecode
// caches left out.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && (d.Name() == ".ripple" || d.Name() == "__pycache__") {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[rel] = desc
		return nil
	})
	must(t, err)
	return out
}

func exists(dir, name string) bool {
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

// effectMain is main.py whose main runs x = 1, the statements, done = True.
func effectMain(imports string, stmts ...string) string {
	body := "def main():\n    x = 1\n"
	for _, s := range stmts {
		body += "    " + s + "\n"
	}
	return imports + "\n\n" + body + "    done = True\n"
}

const effectImports = "import os\nimport shutil\nimport socket\nimport subprocess"

// effectCase is one held event of 8.2.
type effectCase struct {
	name  string
	files map[string]string // the project's files besides main.py
	stmt  string            // the statement, main:main/#1
	event string            // the audit event held
	arg   string            // in one of its arguments
	// happened reports whether the effect was made; nil when it cannot
	// be seen (a connection to an unroutable address).
	happened func(dir string) bool
	// raises: the statement, run, raises (the connection times out).
	raises bool
}

// (The append closes its file with a with: a file object that is not
// closed is flushed when released, which a kernel's caches may delay.)
var effectCases = []effectCase{
	{name: "write", stmt: `open("out.txt", "w").write("x")`, event: "open", arg: "out.txt",
		happened: func(d string) bool { return exists(d, "out.txt") }},
	{name: "append", files: map[string]string{"log.txt": "a"}, stmt: `with open("log.txt", "a") as f: f.write("b")`, event: "open", arg: "log.txt",
		happened: func(d string) bool { b, _ := os.ReadFile(filepath.Join(d, "log.txt")); return string(b) == "ab" }},
	{name: "create", stmt: `open("new.txt", "x").close()`, event: "open", arg: "new.txt",
		happened: func(d string) bool { return exists(d, "new.txt") }},
	{name: "remove", files: map[string]string{"victim.txt": "v"}, stmt: `os.remove("victim.txt")`, event: "os.remove", arg: "victim.txt",
		happened: func(d string) bool { return !exists(d, "victim.txt") }},
	{name: "rename", files: map[string]string{"victim.txt": "v"}, stmt: `os.rename("victim.txt", "renamed.txt")`, event: "os.rename", arg: "victim.txt",
		happened: func(d string) bool { return exists(d, "renamed.txt") }},
	{name: "rmtree", files: map[string]string{"out/keep.txt": "k", "out/sub/more.txt": "m"}, stmt: `shutil.rmtree("out")`, event: "shutil.rmtree", arg: "out",
		happened: func(d string) bool { return !exists(d, "out") }},
	{name: "mkdir", stmt: `os.mkdir("made")`, event: "os.mkdir", arg: "made",
		happened: func(d string) bool { return exists(d, "made") }},
	{name: "chmod", files: map[string]string{"victim.txt": "v"}, stmt: `os.chmod("victim.txt", 0o600)`, event: "os.chmod", arg: "victim.txt",
		happened: func(d string) bool {
			info, err := os.Stat(filepath.Join(d, "victim.txt"))
			return err == nil && info.Mode().Perm() == 0o600
		}},
	{name: "subprocess", stmt: `subprocess.run(["touch", "touched"], check=True)`, event: "subprocess.Popen", arg: "touch",
		happened: func(d string) bool { return exists(d, "touched") }},
	{name: "os.system", stmt: `os.system("touch touched")`, event: "os.system", arg: "touch",
		happened: func(d string) bool { return exists(d, "touched") }},
	// 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers, nothing leaves
	// for a real host.
	{name: "connect", stmt: `socket.create_connection(("192.0.2.1", 9), timeout=0.2)`, event: "socket.connect", arg: "192.0.2.1",
		raises: true},
}

// TestEffectsHeldByTyping: for each held event, typing the statement
// holds it (nothing changes on disk, the statement says what it tried,
// the statements after it are not reached), a recompute of it runs it,
// and a batch run runs it at once.
func TestEffectsHeldByTyping(t *testing.T) {
	t.Parallel()
	for _, c := range effectCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"main.py": effectMain(effectImports)}
			for name, text := range c.files {
				files[name] = text
			}
			env := newEffectsEnv(t, "", files)
			h := env.start(t, engine.Config{})
			id, first := h.newContext("main:main")
			if first.failed != nil {
				t.Fatalf("first run: %s", resultString(first.failed))
			}
			before := snapshot(t, env.project)

			m := h.client.mark()
			h.setText("main.py", effectMain(effectImports, c.stmt))
			run := h.client.waitRun(t, m, id)
			if run.failed != nil {
				t.Fatalf("typed run: %s", resultString(run.failed))
			}
			checkHeld(t, run, c.event, c.arg)
			if after := snapshot(t, env.project); !equalSnapshots(before, after) {
				t.Errorf("the held run changed the project:\nbefore %v\nafter  %v", before, after)
			}

			// A recompute of the held statement is the user's command.
			m = h.client.mark()
			must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
				InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/#1"}}}))
			checkRan(t, "recompute", h.client.waitRun(t, m, id), c, env.project)

			// ripple run's engine runs it at once.
			benv := newEffectsEnv(t, "", files)
			enginetest.WriteFiles(t, benv.project, map[string]string{"main.py": effectMain(effectImports, c.stmt)})
			b := benv.start(t, engine.Config{Batch: true})
			must(t, b.e.Compile(b.ctx, []string{"main"}))
			_, batch := b.newContext("main:main")
			checkRan(t, "batch", batch, c, benv.project)
		})
	}
}

// checkHeld checks a run that held main:main/#1's effect.
func checkHeld(t *testing.T, run *runResult, event, arg string) {
	t.Helper()
	held := run.updates.Latest("main:main/#1")
	if held == nil || !held.Payload.IsHeld() {
		t.Fatalf("main:main/#1 is %+v, want held", held)
	}
	r := held.Payload.Reason
	if r.Event != event || !slices.ContainsFunc(r.Args, func(a string) bool { return strings.Contains(a, arg) }) {
		t.Errorf("held %s%v, want event %s with an argument naming %q", r.Event, r.Args, event, arg)
	}
	if !strings.HasPrefix(held.Payload.Message, protocol.MessageHeldPrefix) || !strings.Contains(held.Payload.Message, arg) {
		t.Errorf("held message %q, want \"held: ...\" naming %q", held.Payload.Message, arg)
	}
	done := run.updates.Latest("main:main/done")
	if done == nil || !done.Payload.IsNotReached() || done.Payload.Reason == nil ||
		done.Payload.Reason.Kind != protocol.ReasonHeld || done.Payload.Reason.ExpressionID != "main:main/#1" {
		t.Errorf("done is %+v, want not reached, held at main:main/#1", done)
	}
}

// checkRan checks a run that made c's effect (explicit).
func checkRan(t *testing.T, what string, run *runResult, c effectCase, dir string) {
	t.Helper()
	if run.failed != nil {
		t.Fatalf("%s: %s", what, resultString(run.failed))
	}
	stmt := run.updates.Latest("main:main/#1")
	switch {
	case stmt == nil:
		t.Fatalf("%s: no update of main:main/#1", what)
	case c.raises && stmt.Payload.Type != protocol.PayloadPanic:
		t.Errorf("%s: main:main/#1 is %+v, want the connection's error", what, stmt.Payload)
	case !c.raises && stmt.Payload.Type != protocol.PayloadValue:
		t.Errorf("%s: main:main/#1 is %+v, want a value", what, stmt.Payload)
	}
	if c.happened != nil && !c.happened(dir) {
		t.Errorf("%s: the effect of %s did not happen", what, c.stmt)
	}
	if !c.raises {
		expect(t, what+": done", run.updates.Values()["main:main/done"], "True")
	}
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Writes under the kernel's temp dir and the user's cache dir (~/.cache,
// or $XDG_CACHE_HOME) are not held: caches keep working while typing.
func TestTempAndCacheWritesPass(t *testing.T) {
	t.Parallel()
	imports := "import os\nimport tempfile"
	stmts := []string{
		`open(os.path.join(tempfile.gettempdir(), "t.txt"), "w").write("t")`,
		`os.makedirs(os.path.expanduser("~/.cache/ripple-test"), exist_ok=True)`,
		`open(os.path.expanduser("~/.cache/ripple-test/c.txt"), "w").write("c")`,
	}
	env := newEffectsEnv(t, "", map[string]string{"main.py": effectMain(imports)})
	h := env.start(t, engine.Config{})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", effectMain(imports, stmts...))
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("typed run: %s", resultString(run.failed))
	}
	for _, x := range []string{"#1", "#2", "#3", "done"} {
		if u := run.updates.Latest("main:main/" + x); u == nil || u.Payload.Type != protocol.PayloadValue {
			t.Errorf("%s: %+v, want a value (not held)", x, u)
		}
	}
	if !exists(env.tmp, "t.txt") || !exists(env.home, ".cache/ripple-test/c.txt") {
		t.Errorf("the temp and cache files were not written")
	}

	// $XDG_CACHE_HOME is the user's cache dir when set.
	xdg := filepath.Join(t.TempDir(), "xdg-cache")
	must(t, os.MkdirAll(xdg, 0o755))
	xenv := newEffectsEnv(t, "", map[string]string{"main.py": effectMain("import os")}, "XDG_CACHE_HOME="+xdg)
	x := xenv.start(t, engine.Config{})
	xid, _ := x.newContext("main:main")
	m = x.client.mark()
	x.setText("main.py", effectMain("import os", `open(os.path.join(os.environ["XDG_CACHE_HOME"], "x.txt"), "w").write("x")`))
	xrun := x.client.waitRun(t, m, xid)
	if u := xrun.updates.Latest("main:main/#1"); u == nil || u.Payload.Type != protocol.PayloadValue || !exists(xdg, "x.txt") {
		t.Errorf("write under $XDG_CACHE_HOME: %+v, want a value and the file", u)
	}
}

// matplotlib's savefig (Debian's python3): to the project, held while
// typing; to the temp dir, written.
func TestSavefigHeldInProjectNotInTemp(t *testing.T) {
	t.Parallel()
	py := debianPython(t, "matplotlib")
	imports := "import os\nimport tempfile\nimport matplotlib.pyplot as plt"
	env := newEffectsEnv(t, py, map[string]string{"main.py": effectMain(imports)})
	h := env.start(t, engine.Config{})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", effectMain(imports,
		`fig = plt.figure()`,
		`fig.savefig(os.path.join(tempfile.gettempdir(), "plot.png"))`,
		`fig.savefig("plot.png")`))
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("typed run: %s", resultString(run.failed))
	}
	if u := run.updates.Latest("main:main/#1"); u == nil || u.Payload.Type != protocol.PayloadValue || !exists(env.tmp, "plot.png") {
		t.Errorf("savefig to the temp dir: %+v, want a value and the file", u)
	}
	held := run.updates.Latest("main:main/#2")
	if held == nil || !held.Payload.IsHeld() || exists(env.project, "plot.png") {
		t.Errorf("savefig to the project: %+v, want held and no file", held)
	}
}

// runtime/setRunPolicy allow: typing runs the effect live.
func TestSetRunPolicyAllowRunsLive(t *testing.T) {
	t.Parallel()
	env := newEffectsEnv(t, "", map[string]string{"main.py": effectMain(effectImports)})
	h := env.start(t, engine.Config{})
	id, _ := h.newContext("main:main")
	must(t, h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{ContextID: id, Effects: protocol.EffectsAllow}))
	m := h.client.mark()
	h.setText("main.py", effectMain(effectImports, `open("out.txt", "w").write("x")`))
	run := h.client.waitRun(t, m, id)
	if u := run.updates.Latest("main:main/#1"); u == nil || u.Payload.Type != protocol.PayloadValue || !exists(env.project, "out.txt") {
		t.Errorf("typing under allow: %+v, want a value and out.txt", u)
	}
	if u := run.updates.Latest("main:main/#1"); u != nil && !slices.ContainsFunc(u.Payload.Effects, func(e string) bool { return strings.Contains(e, "out.txt") }) {
		t.Errorf("effects of the write %v, want one naming out.txt", u.Payload.Effects)
	}
}

// The fields of 8.2 and 8.4 reach clients: a statement that starts
// running is marked with its start time, and a value carries the effects
// its run made.
func TestRunningAndEffectsReachClients(t *testing.T) {
	t.Parallel()
	env := newEffectsEnv(t, "", map[string]string{"main.py": effectMain("import os\nimport time",
		`open("out.txt", "w").write("x")`, `while not os.path.exists("go"): time.sleep(0.01)`)})
	h := env.start(t, engine.Config{})
	start := time.Now().Add(-time.Second)
	id, m := h.startContext("main:main")
	var running protocol.ExpressionUpdate
	h.client.waitFrom(t, m, "the wait marked running", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		if !ok || p.ContextID != id {
			return false
		}
		for _, u := range p.Updates {
			if u.ExpressionID == "main:main/#2" && u.Payload.IsRunning() {
				running = u
				return true
			}
		}
		return false
	})
	at, err := time.Parse(time.RFC3339Nano, running.Payload.StartedAt)
	if err != nil || at.Before(start) || at.After(time.Now()) || !strings.HasSuffix(running.Payload.StartedAt, "Z") {
		t.Errorf("startedAt %q (%v), want an RFC 3339 UTC time of this run", running.Payload.StartedAt, err)
	}
	write(t, env.project, "go", "")
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("run: %s", resultString(run.failed))
	}
	w := run.updates.Latest("main:main/#1")
	if w == nil || !slices.ContainsFunc(w.Payload.Effects, func(e string) bool { return strings.Contains(e, "out.txt") }) {
		t.Errorf("the write's value %+v, want effects naming out.txt", w)
	}
}
