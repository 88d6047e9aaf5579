package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// Sentinel errors. Every error returned by this package wraps exactly one of
// them (test with errors.Is) together with the detail a user needs: the path,
// the versions or the range at fault. The server maps each one to the
// client-protocol error code named in its comment (PROTOCOL.md section 6).
var (
	// ErrFileNotFound: the path does not exist (1003).
	ErrFileNotFound = errors.New("file not found")
	// ErrFileExists: the path exists and must not (1004).
	ErrFileExists = errors.New("file exists")
	// ErrNotDirectory: a directory was expected, or a parent of the path is a
	// file (1006).
	ErrNotDirectory = errors.New("not a directory")
	// ErrNotFile: a file was expected and the path is a directory (1007).
	ErrNotFile = errors.New("not a file")
	// ErrCannotDecode: the file's content is not valid UTF-8 (1010).
	ErrCannotDecode = errors.New("cannot decode file as UTF-8")
	// ErrPathOutsideRoot: the path is absolute, escapes with "..", or goes
	// through a symlink that leads outside the project root (1011).
	ErrPathOutsideRoot = errors.New("path outside the project root")
	// ErrModuleNotFound: no project module has that dotted name (2005).
	ErrModuleNotFound = errors.New("module not found")
	// ErrFileNotOpened: the client has not opened the file as a text buffer
	// (3001).
	ErrFileNotOpened = errors.New("file not opened")
	// ErrTextEditValidation: an edit's range is malformed or out of the
	// buffer's bounds (3002).
	ErrTextEditValidation = errors.New("invalid text edit")
	// ErrInvalidVersion: a version does not match the buffer's current
	// version or the version of an edit's result (3003).
	ErrInvalidVersion = errors.New("invalid version")
	// ErrWriteDenied: the write would clobber unsaved edits in an open text
	// buffer, or targets something that must not be written (3004).
	ErrWriteDenied = errors.New("write denied")
	// ErrInvalidPath: the path is not one a file system can take: it holds
	// a NUL byte, or a component longer than maxNameBytes (-32602
	// InvalidParams: no file can have that name).
	ErrInvalidPath = errors.New("invalid path")
)

// maxNameBytes is the longest file name Linux file systems take
// (NAME_MAX).
const maxNameBytes = 255

// checkPathText refuses what no file system takes, before any file
// operation (which would fail with EINVAL or ENAMETOOLONG).
func checkPathText(p string) error {
	if strings.IndexByte(p, 0) >= 0 {
		return newError(ErrInvalidPath, strings.ReplaceAll(p, "\x00", `\x00`), "the path contains a NUL byte")
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > maxNameBytes {
			return newError(ErrInvalidPath, p, fmt.Sprintf("file name %.20q... is %d bytes long; file systems take at most %d", c, len(c), maxNameBytes))
		}
	}
	return nil
}

// Error is the error type of this package: the sentinel, the project-relative
// path at fault and a human-readable detail. Its message reads
// "pkg/a.py: file not found" or "pkg/a.py: invalid version: ...".
type Error struct {
	Kind   error  // one of the sentinels above
	Path   string // project-relative path at fault, "" if none
	Detail string // what exactly is wrong, "" if the sentinel says it all
	Err    error  // underlying cause, if any (an *fs.PathError, ...)
}

func (e *Error) Error() string {
	msg := e.Kind.Error()
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}
	return msg
}

// Is reports whether target is the error's sentinel, so errors.Is works for
// both the sentinel and the underlying cause (via Unwrap).
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

func newError(kind error, path, detail string) *Error {
	return &Error{Kind: kind, Path: path, Detail: detail}
}

// errPathEscapes is the message os.Root gives when a path leaves the root.
// It is unexported in package os; we only see it if the tree changed between
// our own confinement check and the operation (a symlink swapped in).
const errPathEscapes = "path escapes from parent"

// fsError translates an error from a file-system operation on path into one
// of the sentinels, keeping the cause. Errors it does not recognise are
// returned wrapped with the path only.
func fsError(path string, err error) error {
	var kind error
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		kind = ErrFileNotFound
	case errors.Is(err, fs.ErrExist):
		kind = ErrFileExists
	case errors.As(err, &errno) && errno == syscall.ENOTDIR:
		kind = ErrNotDirectory
	case errors.As(err, &errno) && errno == syscall.EISDIR:
		kind = ErrNotFile
	case isEscape(err):
		kind = ErrPathOutsideRoot
	case errors.As(err, &errno) && errno == syscall.ENAMETOOLONG:
		kind = ErrInvalidPath
	default:
		return &wrapped{path: path, err: err}
	}
	return &Error{Kind: kind, Path: path, Err: err}
}

func isEscape(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == errPathEscapes {
			return true
		}
	}
	return false
}

// wrapped is an I/O failure that is none of the sentinels (disk full,
// permission denied): the path and the cause.
type wrapped struct {
	path string
	err  error
}

func (w *wrapped) Error() string { return w.path + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }
