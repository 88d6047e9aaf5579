//lint:file-ignore SA1019 rootUri and rootPath are read only when workspaceFolders is absent (older clients send them alone)

package lsp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// The editor's root wins: the project is the workspace folder (or rootUri)
// the editor sends at initialize, not the server's working directory, so
// `cd parent && nvim proj/main.py` with a root_dir of proj runs proj.
// ripple serves one project per server: with several workspace folders,
// the first. A file outside the project gets a window/showMessage saying
// why it has no values, once per file.

// ErrNoProject: initialize named no project and the server has no
// fallback, or the project's engine did not start.
var ErrNoProject = errors.New("no project")

// editorFolders returns the editor's workspace folders as absolute paths:
// workspaceFolders, else rootUri, else rootPath. Non-file URIs are left
// out.
func editorFolders(p *lsproto.InitializeParams) []string {
	var out []string
	if fs, ok := p.WorkspaceFolders.Get(); ok {
		for _, f := range fs {
			if f.URI.IsFile() {
				out = append(out, filepath.Clean(f.URI.FsPath()))
			}
		}
	}
	return append(out, legacyRoot(p, len(out) == 0)...)
}

// legacyRoot returns rootUri, else rootPath, when want: deprecated in
// LSP 3.17 but what older clients (Neovim 0.7, Eglot before workspace
// folders) send alone.
func legacyRoot(p *lsproto.InitializeParams, want bool) []string {
	if !want {
		return nil
	}
	if u := p.RootURI; u != nil && u.IsFile() {
		return []string{filepath.Clean(u.FsPath())}
	}
	if rp, ok := p.RootPath.Get(); ok && rp != "" {
		return []string{filepath.Clean(rp)}
	}
	return nil
}

// openProject settles the project at initialize: with an Opener, the
// editor's first folder (else the fallback root) is opened; with an engine
// given (Serve), its root stays and the editor is told when its folder is
// another.
func (s *session) openProject(ctx context.Context, p *lsproto.InitializeParams) error {
	folders := editorFolders(p)
	s.folders = folders
	if s.open == nil {
		if len(folders) > 0 && !slices.Contains(folders, s.root) {
			s.enqueueMessage(lsproto.MessageTypeWarning, fmt.Sprintf(
				"ripple: serving %s, which is not the editor's workspace folder %s: files outside %s have no values", s.root, folders[0], s.root))
		}
		return nil
	}
	root := s.root
	if len(folders) > 0 {
		root = folders[0]
	}
	if root == "" {
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, fmt.Sprintf("%v: initialize sent no workspaceFolders, rootUri or rootPath", ErrNoProject))
	}
	eng, stop, err := s.open(ctx, root)
	if err != nil {
		return jsonrpc2.NewError(jsonrpc2.InternalError, fmt.Sprintf("%v: project %s: %v", ErrNoProject, root, err))
	}
	s.mu.Lock()
	s.eng, s.root, s.stopEngine = eng, eng.Root(), stop
	s.mu.Unlock()
	s.log.Info("project", "root", s.root, "folders", folders)
	return nil
}

// tellOutside tells the editor, once per file, why a document it opened
// has no values.
func (s *session) tellOutside(u uri.URI) {
	s.mu.Lock()
	told := s.toldOutside[string(u)]
	s.toldOutside[string(u)] = true
	s.mu.Unlock()
	if told {
		return
	}
	name := string(u)
	if u.IsFile() {
		name = u.FsPath()
	}
	why := fmt.Sprintf("it is outside the project %s", s.root)
	for _, f := range s.folders {
		if f != s.root && u.IsFile() && (name == f || strings.HasPrefix(name, f+string(filepath.Separator))) {
			why = fmt.Sprintf("it is in the workspace folder %s, and ripple serves one project per server, %s (the first folder): start another ripple lsp for %s", f, s.root, f)
		}
	}
	if !u.IsFile() {
		why = "it is not a file"
	}
	s.enqueueMessage(lsproto.MessageTypeInfo, fmt.Sprintf("ripple: %s has no values: %s", name, why))
}
