// Package workspace is the project tree as ripple sees it: text buffers and
// their versions, atomic writes, confinement of every path to the project
// root, the project's Python modules, and watching the tree for changes on
// disk. It is the only code in ripple that touches user files. It knows
// nothing of JSON-RPC: failures wrap the sentinel errors of errors.go, which
// the server maps to the client protocol's error codes.
//
// Start with Open, which takes the project root:
//
//	ws, err := workspace.Open(dir, workspace.Options{})
//	defer ws.Close()
//
// Paths are POSIX-style and relative to the root ("pkg/util.py"). Absolute
// paths, ".." escapes and symlinks leading outside the root are refused with
// ErrPathOutsideRoot. Results name files by their resolved path (symlinks
// inside the root expanded).
//
// Files: Read, Write, List and Delete. Every write of a user file is atomic
// (temp file in the same directory, fsync, rename, fsync of the directory),
// so a crash leaves the old or the new content, never a mix.
//
// Text buffers are shared by all clients: OpenBuffer, ApplyEdit (positions in
// code points, versions are SHA3-224 of the content, see Version), Save,
// CloseBuffer and CloseClient. An open buffer's content, unsaved edits
// included, is what Source returns for its module, and so what runs.
//
// Modules: Modules lists the project's modules, ModuleName and ModulePath map
// paths and dotted names, Source gives what the kernel compiles.
//
// Watching: NewWatcher, then Start; batches of changes made by others arrive
// on Batches, one per burst, with open buffers already reloaded or flagged.
// Stop ends it.
package workspace
