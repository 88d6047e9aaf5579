package lsp

import (
	"fmt"
	"slices"
	"strings"

	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/protocol"
)

// diagnosticsLocked builds textDocument/publishDiagnostics for every file
// that has diagnostics now or had some at the last publish (those get an
// empty list: cleared). The caller holds mu.
//
// A context's diagnostics are its last finished run's plus what the
// running one has found (entry.stale, entry.fresh). Each becomes one LSP
// diagnostic at its own range, or at its statement's when it names one; a
// traceback's frames in project files become relatedInformation, so the
// editor links to each line of the project's own code the error went
// through.
func (s *session) diagnosticsLocked() []lsproto.PublishDiagnosticsParams {
	byPath := make(map[string][]lsproto.Diagnostic)
	seen := make(map[string]bool) // one diagnostic per place and message across contexts
	for _, e := range s.entries {
		for _, d := range slices.Concat(e.stale, e.fresh) {
			path, r, ok := s.placeOf(e, d)
			if !ok {
				continue
			}
			key := fmt.Sprintf("%s|%v|%s", path, r, d.Message)
			if seen[key] {
				continue
			}
			seen[key] = true
			byPath[path] = append(byPath[path], s.toLSPDiagnostic(path, r, d))
		}
	}
	var out []lsproto.PublishDiagnosticsParams
	paths := make([]string, 0, len(byPath)+len(s.published))
	for p := range byPath {
		paths = append(paths, p)
	}
	for p := range s.published {
		if _, ok := byPath[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		ds := byPath[p]
		if ds == nil {
			ds = []lsproto.Diagnostic{}
			delete(s.published, p)
		} else {
			s.published[p] = true
		}
		out = append(out, lsproto.PublishDiagnosticsParams{URI: s.fileURI(p), Diagnostics: ds})
	}
	return out
}

// placeOf returns the file and range (code points) a diagnostic belongs
// to: its own, else its statement's.
func (s *session) placeOf(e *entry, d protocol.Diagnostic) (string, protocol.Range, bool) {
	path := d.Path
	var r *protocol.Range = d.Location
	if d.ExpressionID != "" {
		if u, ok := e.updates[d.ExpressionID]; ok && u.Range != nil && (r == nil || path == "") {
			r = u.Range
		}
		if path == "" {
			if fn, _, err := d.ExpressionID.Split(); err == nil {
				path = s.modulePath(fn.Module)
			}
		}
	}
	if path == "" || r == nil {
		return "", protocol.Range{}, false
	}
	rel, ok := s.projectPath(path)
	if !ok {
		return "", protocol.Range{}, false
	}
	return rel, *r, true
}

// projectPath turns a diagnostic's path (relative to the root, or absolute
// inside it) into a path relative to the root; false for files outside.
func (s *session) projectPath(p string) (string, bool) {
	if strings.HasPrefix(p, "/") {
		rel, err := s.relPath(uri.File(p))
		return rel, err == nil
	}
	if strings.HasPrefix(p, "../") || p == ".." {
		return "", false
	}
	return p, true
}

// toLSPDiagnostic converts one diagnostic in file path. The caller holds mu.
func (s *session) toLSPDiagnostic(path string, r protocol.Range, d protocol.Diagnostic) lsproto.Diagnostic {
	text, _ := s.textOf(path)
	sev := lsproto.DiagnosticSeverityError
	if d.Kind == protocol.DiagnosticWarning {
		sev = lsproto.DiagnosticSeverityWarning
	}
	out := lsproto.Diagnostic{
		Range:    s.enc.toLSPRange(text, r),
		Severity: sev,
		Source:   lsproto.NewOptional("ripple"),
		Message:  lsproto.String(d.Message),
	}
	for _, f := range d.Stack {
		if f.Path == "" || f.Location == nil {
			continue
		}
		rel, ok := s.projectPath(f.Path)
		if !ok {
			continue
		}
		ftext, ok := s.textOf(rel)
		if !ok {
			continue
		}
		out.RelatedInformation = append(out.RelatedInformation, lsproto.DiagnosticRelatedInformation{
			Location: lsproto.Location{URI: s.fileURI(rel), Range: s.enc.toLSPRange(ftext, *f.Location)},
			Message:  "in " + f.FunctionName,
		})
	}
	return out
}
