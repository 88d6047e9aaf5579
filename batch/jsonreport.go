package batch

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// JSONVersion is the version of the JSON report's schema (see the package
// documentation); it changes when a field changes meaning or goes away.
const JSONVersion = 1

// The JSON report, as written by WriteJSON and read by MergeJSON. The
// package documentation describes every field.
type jsonReport struct {
	Version      int          `json:"version"`
	Project      string       `json:"project"`
	Python       jsonPython   `json:"python"`
	Kernels      int          `json:"kernels"`
	Timeout      float64      `json:"timeout"`
	Shards       []string     `json:"shards"`
	StartedAt    time.Time    `json:"startedAt"`
	Duration     float64      `json:"duration"`
	Interrupted  bool         `json:"interrupted"`
	StoppedEarly bool         `json:"stoppedEarly"`
	Summary      Summary      `json:"summary"`
	Entries      []*jsonEntry `json:"entries"`
}

type jsonPython struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

type jsonEntry struct {
	ID       string  `json:"id"`
	Module   string  `json:"module"`
	Class    string  `json:"class"`
	Function string  `json:"function"`
	Path     string  `json:"path"`
	Line     int     `json:"line"`
	Status   Status  `json:"status"`
	Duration float64 `json:"duration"`
	Message  string  `json:"message"`
	Longrepr string  `json:"longrepr,omitempty"`
	// TeardownError: a teardown failed after the test failed (pytest
	// counts 1 failed and 1 error).
	TeardownError string               `json:"teardownError,omitempty"`
	Kind          protocol.ResultKind  `json:"kind,omitempty"`
	Failures      []jsonFailure        `json:"failures"`
	Diagnostic    *protocol.Diagnostic `json:"diagnostic,omitempty"`
	Stdout        string               `json:"stdout"`
	Stderr        string               `json:"stderr"`
	Values        []jsonValue          `json:"values,omitempty"`
}

type jsonFailure struct {
	ExpressionID string      `json:"expressionId"`
	Path         string      `json:"path"`
	Line         int         `json:"line"`
	Source       string      `json:"source"`
	Message      string      `json:"message"`
	Traceback    []jsonFrame `json:"traceback"`
}

type jsonFrame struct {
	Function string `json:"function"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
}

type jsonValue struct {
	ExpressionID string `json:"expressionId"`
	Line         int    `json:"line"`
	Source       string `json:"source"`
	Kind         string `json:"kind"`
	Type         string `json:"type,omitempty"`
	Text         string `json:"text"`
}

// toJSON converts a report to its JSON document.
func toJSON(rep *Report) *jsonReport {
	doc := &jsonReport{
		Version: JSONVersion, Project: rep.Project, Python: jsonPython{Path: rep.Python.Path, Version: rep.Python.Version},
		Kernels: rep.Kernels, Timeout: rep.Timeout.Seconds(), Shards: []string{}, StartedAt: rep.Started.UTC(),
		Duration: rep.Duration.Seconds(), Interrupted: rep.Interrupted, StoppedEarly: rep.StoppedEarly,
		Summary: rep.Summary(), Entries: make([]*jsonEntry, 0, len(rep.Results)),
	}
	if !rep.Shard.All() {
		doc.Shards = append(doc.Shards, rep.Shard.String())
	}
	for _, r := range rep.Results {
		e := &jsonEntry{ID: r.Entry.ID(), Module: r.Entry.Pointer.Module, Class: r.Entry.Pointer.DefinedOnType,
			Function: r.Entry.Pointer.Name, Path: r.Entry.Path, Line: r.Entry.Line, Status: r.Status,
			Duration: r.Duration.Seconds(), Message: r.Message, Kind: r.Kind, Failures: []jsonFailure{}, Diagnostic: r.Diagnostic,
			Stdout: r.Stdout, Stderr: r.Stderr, Longrepr: r.Longrepr, TeardownError: r.TeardownError}
		for _, f := range r.Failures {
			jf := jsonFailure{ExpressionID: string(f.ExpressionID), Path: f.Path, Line: f.Line, Source: f.Source,
				Message: f.Message, Traceback: []jsonFrame{}}
			for _, fr := range f.Traceback {
				jf.Traceback = append(jf.Traceback, jsonFrame(fr))
			}
			e.Failures = append(e.Failures, jf)
		}
		for _, v := range r.Values {
			e.Values = append(e.Values, jsonValue{ExpressionID: string(v.ExpressionID), Line: v.Line, Source: v.Source,
				Kind: string(v.Kind), Type: v.Type, Text: v.Text})
		}
		doc.Entries = append(doc.Entries, e)
	}
	return doc
}

// WriteJSON writes the report as JSON to path, atomically.
func WriteJSON(path string, rep *Report) error {
	return writeJSONDoc(path, toJSON(rep))
}

func writeJSONDoc(path string, doc *jsonReport) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("%w: encode %s: %w", ErrReport, path, err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

// readJSONDoc reads a JSON report, refusing other documents and versions.
func readJSONDoc(path string) (*jsonReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReport, err)
	}
	var doc jsonReport
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s is not a ripple JSON report: %w", ErrReport, path, err)
	}
	if doc.Version != JSONVersion {
		return nil, fmt.Errorf("%w: %s: report version %d, want %d", ErrReport, path, doc.Version, JSONVersion)
	}
	return &doc, nil
}

// MergeJSON merges the JSON reports of shards into one, written atomically
// to out: every entry once, in report order (path, line, id), the summary
// recounted, shards listed, startedAt the earliest, duration the longest
// (the shards ran side by side). An entry that appears in two inputs is
// an error naming it and both files.
func MergeJSON(out string, ins []string) error {
	if len(ins) == 0 {
		return fmt.Errorf("%w: nothing to merge", ErrUsage)
	}
	var merged *jsonReport
	origin := make(map[string]int)
	for i, in := range ins {
		doc, err := readJSONDoc(in)
		if err != nil {
			return err
		}
		for _, e := range doc.Entries {
			if j, dup := origin[e.ID]; dup {
				return fmt.Errorf("%w: entry %s is in both %s and %s", ErrReport, e.ID, ins[j], in)
			}
			origin[e.ID] = i
		}
		if merged == nil {
			merged = doc
			continue
		}
		merged.Entries = append(merged.Entries, doc.Entries...)
		merged.Shards = append(merged.Shards, doc.Shards...)
		if doc.StartedAt.Before(merged.StartedAt) {
			merged.StartedAt = doc.StartedAt
		}
		merged.Duration = max(merged.Duration, doc.Duration)
		merged.Kernels = max(merged.Kernels, doc.Kernels)
		merged.Interrupted = merged.Interrupted || doc.Interrupted
		merged.StoppedEarly = merged.StoppedEarly || doc.StoppedEarly
	}
	slices.SortFunc(merged.Entries, func(a, b *jsonEntry) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.ID, b.ID))
	})
	slices.Sort(merged.Shards)
	merged.Shards = slices.Compact(merged.Shards)
	merged.Summary = Summary{}
	for _, e := range merged.Entries {
		merged.Summary.add(e.Status)
		if e.TeardownError != "" {
			merged.Summary.Errors++
		}
	}
	return writeJSONDoc(out, merged)
}
