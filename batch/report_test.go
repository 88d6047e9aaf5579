package batch_test

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// sampleReport is a report with one result of every status, over two
// modules, with output that XML cannot carry as it is.
func sampleReport() *batch.Report {
	entry := func(module, class, name string, line int) batch.Entry {
		return batch.Entry{Pointer: protocol.MethodPointer{Module: module, DefinedOnType: class, Name: name}, Path: module + ".py", Line: line}
	}
	diag := &protocol.Diagnostic{Kind: protocol.DiagnosticError, Message: "SyntaxError: invalid syntax", Path: "test_b.py",
		Location: &protocol.Range{Start: protocol.Position{Line: 2, Character: 4}}}
	return &batch.Report{
		Project: "/project", Python: kernel.Interpreter{Path: "/usr/bin/python3", Version: "3.11.2"}, Kernels: 2,
		Timeout: 30 * time.Second, Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond,
		Results: []*batch.Result{
			{Entry: entry("test_a", "", "test_pass", 3), Status: batch.StatusPassed, Duration: 2 * time.Millisecond,
				Stdout: "plain <&> \x1b[31mred\x00 text\n", Stderr: "warned\n"},
			{Entry: entry("test_a", "TestX", "test_fail", 10), Status: batch.StatusFailed, Duration: 3 * time.Millisecond,
				Message: "AssertionError: total is wrong", Failures: []batch.Failure{{ExpressionID: "test_a:TestX.test_fail/#1",
					Path: "test_a.py", Line: 12, Source: "assert total == 5", Message: "AssertionError: total is wrong",
					Traceback: []batch.Frame{{Function: "TestX.test_fail", Path: "test_a.py", Line: 12}}}},
				Values: []batch.Value{{ExpressionID: "test_a:TestX.test_fail/total", Line: 11, Source: "total = 4", Kind: protocol.PayloadValue, Type: "builtins.int", Text: "4"}}},
			{Entry: entry("test_a", "", "test_crash", 20), Status: batch.StatusCrashed, Kind: protocol.ResultKernelDied,
				Duration: time.Millisecond, Message: "the kernel died (signal SIGSEGV) while running this context"},
			{Entry: entry("test_a", "", "test_skip", 30), Status: batch.StatusSkipped, Message: "marked skip"},
			{Entry: entry("test_b", "", "main", 3),
				Status: batch.StatusError, Kind: protocol.ResultCompileError, Message: diag.Message, Diagnostic: diag},
			{Entry: entry("test_b", "", "test_slow", 8), Status: batch.StatusTimeout, Kind: protocol.ResultTimeout,
				Duration: 30 * time.Second, Message: "timed out after 30s"},
			{Entry: entry("test_b", "", "test_stopped", 12), Status: batch.StatusInterrupted, Message: "interrupted (Ctrl-C)"},
		},
	}
}

// xmlNode is any XML element, to check a JUnit file without the writer's
// own types.
type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xmlNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *xmlNode) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (n *xmlNode) children(name string) []*xmlNode {
	var out []*xmlNode
	for i := range n.Nodes {
		if n.Nodes[i].XMLName.Local == name {
			out = append(out, &n.Nodes[i])
		}
	}
	return out
}

// readJUnitFile parses a JUnit file and checks the attributes CI systems
// need on every element.
func readJUnitFile(t *testing.T, path string) *xmlNode {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Errorf("no XML declaration: %.60q", data)
	}
	var root xmlNode
	if err := xml.Unmarshal(data, &root); err != nil {
		t.Fatalf("JUnit file does not parse: %v\n%s", err, data)
	}
	if root.XMLName.Local != "testsuites" {
		t.Fatalf("root element %s", root.XMLName.Local)
	}
	need := func(n *xmlNode, names ...string) {
		for _, name := range names {
			v, ok := n.attr(name)
			if !ok {
				t.Errorf("<%s> has no %s attribute", n.XMLName.Local, name)
			}
			if name == "time" {
				if _, err := strconv.ParseFloat(v, 64); err != nil {
					t.Errorf("<%s time=%q>: not seconds", n.XMLName.Local, v)
				}
			}
		}
	}
	counts := []string{"tests", "failures", "errors", "skipped"}
	need(&root, append(counts, "name", "time")...)
	for _, s := range root.children("testsuite") {
		need(s, append(counts, "name", "time", "timestamp")...)
		cases := s.children("testcase")
		n := map[string]int{"tests": len(cases)}
		for _, c := range cases {
			need(c, "name", "classname", "time")
			if cl, _ := c.attr("classname"); cl != mustAttr(s, "name") {
				t.Errorf("testcase classname %q in suite %q", cl, mustAttr(s, "name"))
			}
			n["failures"] += len(c.children("failure"))
			n["errors"] += len(c.children("error"))
			n["skipped"] += len(c.children("skipped"))
			for _, p := range append(c.children("failure"), c.children("error")...) {
				need(p, "message", "type")
			}
		}
		for _, name := range counts {
			if got := mustAttr(s, name); got != strconv.Itoa(n[name]) {
				t.Errorf("suite %s: %s=%s, counted %d", mustAttr(s, "name"), name, got, n[name])
			}
		}
	}
	return &root
}

func mustAttr(n *xmlNode, name string) string {
	v, _ := n.attr(name)
	return v
}

// testcases lists "classname name outcome" in file order.
func testcases(root *xmlNode) []string {
	var out []string
	for _, s := range root.children("testsuite") {
		for _, c := range s.children("testcase") {
			outcome := "ok"
			for _, kind := range []string{"failure", "error", "skipped"} {
				if len(c.children(kind)) > 0 {
					outcome = kind
				}
			}
			out = append(out, mustAttr(c, "classname")+" "+mustAttr(c, "name")+" "+outcome)
		}
	}
	return out
}

func TestWriteJUnit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := batch.WriteJUnit(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	root := readJUnitFile(t, path)
	if got := strings.Join(testcases(root), "\n"); got != `test_a test_pass ok
test_a TestX.test_fail failure
test_a test_crash error
test_a test_skip skipped
test_b main error
test_b test_slow error
test_b test_stopped skipped` {
		t.Errorf("testcases:\n%s", got)
	}
	for name, want := range map[string]string{"tests": "7", "failures": "1", "errors": "3", "skipped": "2", "time": "1.500"} {
		if got := mustAttr(root, name); got != want {
			t.Errorf("testsuites %s=%s, want %s", name, got, want)
		}
	}
	a := root.children("testsuite")[0]
	cases := a.children("testcase")
	pass := cases[0]
	if mustAttr(pass, "time") != "0.002" || mustAttr(pass, "file") != "test_a.py" || mustAttr(pass, "line") != "3" {
		t.Errorf("passing testcase attributes %+v", pass.Attrs)
	}
	// Characters XML cannot hold are replaced, the rest escaped.
	if out := pass.children("system-out"); len(out) != 1 || !strings.Contains(out[0].Text, "plain <&> ") || !strings.Contains(out[0].Text, "red") {
		t.Errorf("system-out %+v", out)
	}
	if errOut := pass.children("system-err"); len(errOut) != 1 || errOut[0].Text != "warned\n" {
		t.Errorf("system-err %+v", errOut)
	}
	f := cases[1].children("failure")[0]
	if mustAttr(f, "type") != "AssertionError" || mustAttr(f, "message") != "AssertionError: total is wrong" ||
		!strings.Contains(f.Text, "test_a.py:12  assert total == 5") || !strings.Contains(f.Text, "test_a.py:12 in TestX.test_fail") ||
		!strings.Contains(f.Text, "total = 4") {
		t.Errorf("failure %+v: %s", f.Attrs, f.Text)
	}
	if e := cases[2].children("error")[0]; mustAttr(e, "type") != "crashed" || !strings.Contains(mustAttr(e, "message"), "SIGSEGV") {
		t.Errorf("crash error %+v", e.Attrs)
	}
	b := root.children("testsuite")[1].children("testcase")
	if e := b[0].children("error")[0]; mustAttr(e, "type") != "compileError" || !strings.Contains(e.Text, "at test_b.py:3:5") {
		t.Errorf("compile error %+v: %s", e.Attrs, e.Text)
	}
	if e := b[1].children("error")[0]; mustAttr(e, "type") != "timeout" {
		t.Errorf("timeout error %+v", e.Attrs)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "report.json")
	if err := batch.WriteJSON(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version     int              `json:"version"`
		Project     string           `json:"project"`
		Python      map[string]any   `json:"python"`
		Kernels     int              `json:"kernels"`
		Timeout     float64          `json:"timeout"`
		Shards      []string         `json:"shards"`
		StartedAt   string           `json:"startedAt"`
		Duration    float64          `json:"duration"`
		Interrupted *bool            `json:"interrupted"`
		Summary     map[string]int   `json:"summary"`
		Entries     []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 1 || doc.Project != "/project" || doc.Python["version"] != "3.11.2" || doc.Kernels != 2 || doc.Timeout != 30 ||
		doc.Shards == nil || len(doc.Shards) != 0 || doc.StartedAt != "2025-01-02T03:04:05Z" || doc.Duration != 1.5 || doc.Interrupted == nil {
		t.Errorf("header: %s", data[:min(len(data), 400)])
	}
	wantSummary := map[string]int{"total": 7, "passed": 1, "failed": 1, "errors": 1, "crashed": 1, "timeout": 1, "skipped": 1, "interrupted": 1}
	for k, v := range wantSummary {
		if doc.Summary[k] != v {
			t.Errorf("summary %s = %d, want %d", k, doc.Summary[k], v)
		}
	}
	if len(doc.Entries) != 7 {
		t.Fatalf("%d entries", len(doc.Entries))
	}
	fail := doc.Entries[1]
	for k, want := range map[string]any{"id": "test_a:TestX.test_fail", "module": "test_a", "class": "TestX", "function": "test_fail",
		"path": "test_a.py", "line": 10.0, "status": "failed", "duration": 0.003, "message": "AssertionError: total is wrong"} {
		if fail[k] != want {
			t.Errorf("entry %s = %v, want %v", k, fail[k], want)
		}
	}
	failures := fail["failures"].([]any)
	f := failures[0].(map[string]any)
	if f["expressionId"] != "test_a:TestX.test_fail/#1" || f["line"] != 12.0 || f["source"] != "assert total == 5" ||
		len(f["traceback"].([]any)) != 1 {
		t.Errorf("failure %v", f)
	}
	if v := fail["values"].([]any)[0].(map[string]any); v["kind"] != "Value" || v["text"] != "4" || v["type"] != "builtins.int" {
		t.Errorf("value %v", v)
	}
	if _, ok := doc.Entries[0]["values"]; ok {
		t.Error("values present on an entry without values")
	}
	if doc.Entries[0]["stdout"] != "plain <&> \x1b[31mred\x00 text\n" {
		t.Errorf("stdout %q", doc.Entries[0]["stdout"])
	}
	if doc.Entries[2]["kind"] != "kernelDied" || doc.Entries[4]["diagnostic"] == nil {
		t.Errorf("crash kind %v, compile diagnostic %v", doc.Entries[2]["kind"], doc.Entries[4]["diagnostic"])
	}
}

// Reports replace the file atomically: no temporary file is left, a
// failure leaves the old report.
func TestReportsAreWrittenAtomically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := batch.WriteJUnit(path, sampleReport()); err != nil {
		t.Fatal(err)
	}
	readJUnitFile(t, path)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the report", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("report mode %v", fi.Mode())
	}

	// A directory where the report should go: the write fails, the
	// directory is untouched.
	blocked := filepath.Join(dir, "blocked.json")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := batch.WriteJSON(blocked, sampleReport()); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), blocked) {
		t.Errorf("write over a directory: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("a failed write left files behind: %d entries", len(entries))
	}
	missing := filepath.Join(dir, "no", "such", "report.xml")
	if err := batch.WriteJUnit(missing, sampleReport()); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing directory: %v", err)
	}
}

func TestCheckReportPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, c := range []struct {
		path string
		ok   bool
		want string
	}{
		{filepath.Join(dir, "junit.xml"), true, ""},
		{file, true, ""},
		{dir, false, "is a directory"},
		{filepath.Join(dir, "missing", "junit.xml"), false, "missing"},
		{filepath.Join(file, "junit.xml"), false, "not a directory"},
	} {
		err := batch.CheckReportPath("--junit", c.path)
		if (err == nil) != c.ok || (err != nil && (!errors.Is(err, batch.ErrUsage) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--junit"))) {
			t.Errorf("CheckReportPath(%s) = %v", c.path, err)
		}
	}
}

// splitReport divides a report's results between two reports, as two
// shards would have them.
func splitReport(rep *batch.Report) (*batch.Report, *batch.Report) {
	a, b := *rep, *rep
	a.Results, b.Results = nil, nil
	a.Shard, b.Shard = batch.Shard{Index: 1, Total: 2}, batch.Shard{Index: 2, Total: 2}
	b.Started = rep.Started.Add(-time.Minute)
	b.Duration = 3 * time.Second
	for i, r := range rep.Results {
		if i%3 == 1 {
			b.Results = append(b.Results, r)
		} else {
			a.Results = append(a.Results, r)
		}
	}
	return &a, &b
}

func TestMergeJUnit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := sampleReport()
	a, b := splitReport(full)
	paths := []string{filepath.Join(dir, "a.xml"), filepath.Join(dir, "b.xml"), filepath.Join(dir, "full.xml")}
	for i, rep := range []*batch.Report{a, b, full} {
		if err := batch.WriteJUnit(paths[i], rep); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "merged.xml")
	if err := batch.MergeJUnit(out, paths[:2]); err != nil {
		t.Fatal(err)
	}
	merged := readJUnitFile(t, out)
	if got, want := strings.Join(testcases(merged), "\n"), strings.Join(testcases(readJUnitFile(t, paths[2])), "\n"); got != want {
		t.Errorf("merged testcases:\n%s\nunsharded:\n%s", got, want)
	}
	if mustAttr(merged, "tests") != "7" || mustAttr(merged, "time") != "3.000" {
		t.Errorf("merged totals %+v", merged.Attrs)
	}
	if ts := mustAttr(merged.children("testsuite")[0], "timestamp"); ts != "2025-01-02T03:03:05Z" {
		t.Errorf("merged timestamp %s, want the earliest", ts)
	}

	if err := batch.MergeJUnit(out, []string{paths[0], paths[2]}); !errors.Is(err, batch.ErrReport) ||
		!strings.Contains(err.Error(), "test_a test_pass") || !strings.Contains(err.Error(), paths[2]) {
		t.Errorf("merge with a duplicate: %v", err)
	}
	bad := filepath.Join(dir, "bad.xml")
	os.WriteFile(bad, []byte("<testsuites>\n<testsuite name='x'>\n</testsuites>"), 0o644)
	if err := batch.MergeJUnit(out, []string{paths[0], bad}); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), bad) {
		t.Errorf("merge with invalid XML: %v", err)
	}
	if err := batch.MergeJUnit(out, []string{filepath.Join(dir, "missing.xml")}); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), "missing.xml") {
		t.Errorf("merge of a missing file: %v", err)
	}
	// The failed merges left the good merged report in place.
	readJUnitFile(t, out)

	// A single <testsuite> document (another tool's) merges too.
	single := filepath.Join(dir, "single.xml")
	os.WriteFile(single, []byte(`<testsuite name="other" tests="1" failures="0" errors="0" skipped="0" time="0.5">
<testcase name="t" classname="other" time="0.5"/></testsuite>`), 0o644)
	if err := batch.MergeJUnit(out, []string{paths[0], single}); err != nil {
		t.Fatal(err)
	}
	if n := mustAttr(readJUnitFile(t, out), "tests"); n != "6" {
		t.Errorf("merged with a single suite: tests=%s", n)
	}
}

func TestMergeJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := sampleReport()
	a, b := splitReport(full)
	pa, pb, pfull := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "full.json")
	for p, rep := range map[string]*batch.Report{pa: a, pb: b, pfull: full} {
		if err := batch.WriteJSON(p, rep); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "merged.json")
	if err := batch.MergeJSON(out, []string{pb, pa}); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		Shards    []string         `json:"shards"`
		StartedAt string           `json:"startedAt"`
		Duration  float64          `json:"duration"`
		Summary   map[string]int   `json:"summary"`
		Entries   []map[string]any `json:"entries"`
	}
	read := func(p string) doc {
		var d doc
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	merged, unsharded := read(out), read(pfull)
	if strings.Join(merged.Shards, ",") != "1/2,2/2" || merged.StartedAt != "2025-01-02T03:03:05Z" || merged.Duration != 3 {
		t.Errorf("merged header: shards %v started %s duration %v", merged.Shards, merged.StartedAt, merged.Duration)
	}
	if len(merged.Entries) != len(unsharded.Entries) {
		t.Fatalf("merged %d entries, want %d", len(merged.Entries), len(unsharded.Entries))
	}
	for i := range merged.Entries {
		if merged.Entries[i]["id"] != unsharded.Entries[i]["id"] || merged.Entries[i]["status"] != unsharded.Entries[i]["status"] {
			t.Errorf("entry %d: %v %v, want %v %v", i, merged.Entries[i]["id"], merged.Entries[i]["status"], unsharded.Entries[i]["id"], unsharded.Entries[i]["status"])
		}
	}
	for k, v := range unsharded.Summary {
		if merged.Summary[k] != v {
			t.Errorf("merged summary %s = %d, want %d", k, merged.Summary[k], v)
		}
	}

	if err := batch.MergeJSON(out, []string{pa, pfull}); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), "test_a:test_pass") {
		t.Errorf("merge with a duplicate: %v", err)
	}
	other := filepath.Join(dir, "v2.json")
	os.WriteFile(other, []byte(`{"version": 2, "entries": []}`), 0o644)
	if err := batch.MergeJSON(out, []string{pa, other}); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("merge with another version: %v", err)
	}
	junk := filepath.Join(dir, "junk.json")
	os.WriteFile(junk, []byte("<xml/>"), 0o644)
	if err := batch.MergeJSON(out, []string{junk}); !errors.Is(err, batch.ErrReport) || !strings.Contains(err.Error(), junk) {
		t.Errorf("merge of a non-JSON file: %v", err)
	}
	if err := batch.MergeJSON(out, nil); !errors.Is(err, batch.ErrUsage) {
		t.Errorf("merge of nothing: %v", err)
	}
}
