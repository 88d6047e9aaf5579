// Package tests holds ripple's end-to-end tests: a real server (in process,
// or the real `ripple serve` binary), the real engine, real python3 kernels
// and a real gorilla/websocket client, on projects in t.TempDir().
package tests

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"crypto/sha3"

	"go.uber.org/goleak"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/protocol/protocoltest"
	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/server/servertest"
)

func TestMain(m *testing.M) {
	// The ripple binary some tests build is removed when they are done.
	leakcheck.Main(m, goleak.Cleanup(func(int) { removeBinary() }))
}

const token = "e2e-token"

// stack is a running server on a project: the real engine behind it.
type stack struct {
	dir string
	eng *engine.Engine
	srv *server.Server
	url string
}

// serveProject writes files into a temp project and serves it in process
// until the test ends.
func serveProject(t *testing.T, files map[string]string, cfg engine.Config) *stack {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		writeFile(t, dir, name, text)
	}
	return serveDir(t, dir, cfg)
}

func serveDir(t *testing.T, dir string, cfg engine.Config) *stack {
	t.Helper()
	cfg.Watch = true // as ripple serve does
	eng := enginetest.Start(t, dir, cfg)
	ctx := context.Background()
	srv, err := server.New(eng, server.Config{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil { // the engine stops after it (enginetest.Start)
			t.Errorf("server stop: %v", err)
		}
	})
	return &stack{dir: dir, eng: eng, srv: srv, url: srv.URL()}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	enginetest.WriteFiles(t, dir, map[string]string{name: text})
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stepCtx bounds one step of a test: generous, a hang becomes a failure.
func stepCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// stepDeadline is the end of a step (stepCtx's bound), for testenv.Poll.
func stepDeadline(t *testing.T) time.Time {
	d, _ := stepCtx(t).Deadline()
	return d
}

// client is a connected, initialised protocol client.
type client struct {
	t  *testing.T
	c  *servertest.Client
	id string
}

// connect dials url and initialises as clientID; the connection is closed
// when the test ends.
func connect(t *testing.T, url, clientID string) (*client, protocol.InitProtocolConnectionResult) {
	t.Helper()
	c, _, err := servertest.Dial(stepCtx(t), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var res protocol.InitProtocolConnectionResult
	if err := c.Call(stepCtx(t), protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: clientID}, &res); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, c: c, id: clientID}, res
}

// call makes a call that must succeed.
func (c *client) call(method string, params, result any) {
	c.t.Helper()
	if err := c.c.Call(stepCtx(c.t), method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// callErr makes a call that must fail with code; the message must mention
// each of mentions.
func (c *client) callErr(code protocol.Code, method string, params any, mentions ...string) {
	c.t.Helper()
	err := c.c.Call(stepCtx(c.t), method, params, nil)
	pe, ok := err.(*protocol.Error)
	if !ok || pe.Code != code {
		c.t.Fatalf("%s: got %v, want error %d (%s)", method, err, code, code)
	}
	for _, m := range mentions {
		if !strings.Contains(pe.Message, m) {
			c.t.Fatalf("%s: message %q does not mention %q", method, pe.Message, m)
		}
	}
}

// newContext creates a context and pushes an ExplicitCall of pointer
// (module:qualname) with args; it returns the id and the first run.
func (c *client) newContext(pointer string, args ...string) (protocol.ContextID, *run) {
	c.t.Helper()
	var res protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	mp, err := protocol.ParseMethodPointer(pointer)
	if err != nil {
		c.t.Fatal(err)
	}
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: res.ContextID, StackItem: protocol.NewExplicitCall(mp, args...)}, nil)
	return res.ContextID, c.waitRun(res.ContextID)
}

// run is what the client received for one run of a context, from where
// the previous wait stopped up to the run's executionComplete or
// executionFailed.
type run struct {
	messages []servertest.Message // everything received, all contexts
	updates  protocoltest.Updates
	failed   *protocol.ExecutionResult
	output   string
	visData  []string
	visFail  []string
	status   []protocol.Diagnostic
}

// waitRun reads messages until a run of id ends.
func (c *client) waitRun(id protocol.ContextID) *run {
	c.t.Helper()
	r := &run{}
	ctx := stepCtx(c.t)
	for {
		m, err := c.c.Next(ctx)
		if err != nil {
			var seen []string
			for _, m := range r.messages {
				seen = append(seen, trim(string(m.Raw)))
			}
			c.t.Fatalf("waiting for the end of a run of %s: %v; received:\n%s", id, err, strings.Join(seen, "\n"))
		}
		r.messages = append(r.messages, m)
		if !m.IsNotification() {
			continue
		}
		var head struct {
			ContextID            protocol.ContextID `json:"contextId"`
			VisualizationContext struct {
				ContextID protocol.ContextID `json:"contextId"`
			} `json:"visualizationContext"`
		}
		_ = json.Unmarshal(m.Params, &head)
		if head.ContextID != id && head.VisualizationContext.ContextID != id {
			continue
		}
		switch m.Method {
		case protocol.NotifyExpressionUpdates:
			var p protocol.ExpressionUpdatesParams
			mustDecode(c.t, m.Params, &p)
			r.updates = append(r.updates, p.Updates...)
		case protocol.NotifyOutput:
			var p protocol.OutputParams
			mustDecode(c.t, m.Params, &p)
			r.output += p.Text
		case protocol.NotifyVisualizationUpdate:
			var p protocol.VisualizationUpdateParams
			mustDecode(c.t, m.Params, &p)
			r.visData = append(r.visData, string(p.Data))
		case protocol.NotifyVisualizationEvaluationFailed:
			var p protocol.VisualizationEvaluationFailedParams
			mustDecode(c.t, m.Params, &p)
			r.visFail = append(r.visFail, p.Message)
		case protocol.NotifyExecutionStatus:
			var p protocol.ExecutionStatusParams
			mustDecode(c.t, m.Params, &p)
			r.status = append(r.status, p.Diagnostics...)
		case protocol.NotifyExecutionFailed:
			var p protocol.ExecutionFailedParams
			mustDecode(c.t, m.Params, &p)
			r.failed = &p.Result
			return r
		case protocol.NotifyExecutionComplete:
			return r
		}
	}
}

// waitFor reads messages until a notification of method satisfies match.
func (c *client) waitFor(method string, match func(json.RawMessage) bool) servertest.Message {
	c.t.Helper()
	m, err := c.c.WaitFor(stepCtx(c.t), func(m servertest.Message) bool {
		return m.IsNotification() && m.Method == method && (match == nil || match(m.Params))
	})
	if err != nil {
		c.t.Fatalf("waiting for %s: %v", method, err)
	}
	return m
}

func mustDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", trim(string(raw)), err)
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func expect(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// version is a buffer version: lowercase hex SHA3-224 of the content.
func version(text string) string {
	sum := sha3.Sum224([]byte(text))
	return hex.EncodeToString(sum[:])
}

// endOf is the position just past the last character of text.
func endOf(text string) protocol.Position {
	lines := strings.Split(text, "\n")
	return protocol.Position{Line: len(lines) - 1, Character: len([]rune(lines[len(lines)-1]))}
}

// setText replaces a file's whole buffer through text/applyEdit (opening
// it first).
func (c *client) setText(path, text string) {
	c.t.Helper()
	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: path}, &open)
	c.call(protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path:       path,
		Edits:      []protocol.TextEdit{{Range: protocol.Range{End: endOf(open.Content)}, Text: text}},
		OldVersion: open.CurrentVersion,
		NewVersion: version(text),
	}}, nil)
}

// The scenario project (enginetest.Scenarios): main.py's main runs
// x = 6; y = foo(x, 5); z = y + 5, helper.py has foo.
const scenarioHelper = enginetest.ScenarioHelper

func mainWith(body ...string) string { return enginetest.MainWith(body...) }

var baseBody = enginetest.ScenarioBody
