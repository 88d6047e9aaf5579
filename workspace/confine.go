package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxSymlinks bounds symlink expansion in one path, as the kernel does
// (MAXSYMLINKS is 40 on Linux), so a link loop is an error, not a hang.
const maxSymlinks = 40

// resolve confines a client path to the project root and returns the
// equivalent path relative to the real root with every symlink expanded
// ("." for the root itself).
//
// Confinement rules: the path must be relative and POSIX-style; ".." may not
// climb above the root; every symlink met on the way, at any level and
// including the final component, must lead to a place inside the root. Once a
// component does not exist, nothing below it can be a symlink, so a path to a
// file that does not exist yet is judged by its existing parent chain; a
// dangling final symlink is judged by its target text, so writing through it
// can never create a file outside the root.
//
// The result names the real file, so writes replace a symlink's target, not
// the link. Operations then go through an os.Root, which refuses escapes
// itself: if a symlink is swapped in between this check and the operation,
// the operation fails instead of leaving the root.
func (ws *Workspace) resolve(p string) (string, error) {
	if err := checkPathText(p); err != nil {
		return "", err
	}
	if path.IsAbs(p) {
		return "", newError(ErrPathOutsideRoot, p, "absolute paths are not allowed; use a path relative to the project root")
	}
	clean := path.Clean(p) // "." for "" and for the root
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", newError(ErrPathOutsideRoot, p, `".." leads above the project root`)
	}

	var resolved []string // components below the real root, symlink-free
	todo := splitPath(clean)
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(resolved) == 0 {
				return "", newError(ErrPathOutsideRoot, p, "a symlink leads above the project root")
			}
			resolved = resolved[:len(resolved)-1]
			continue
		}
		resolved = append(resolved, c)
		fi, err := os.Lstat(filepath.Join(ws.realRoot, filepath.Join(resolved...)))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			// Missing, not a directory, or a plain entry: nothing to expand.
			// The operation itself reports missing parents.
			continue
		}
		links++
		if links > maxSymlinks {
			return "", newError(ErrFileNotFound, p, "too many levels of symbolic links")
		}
		target, err := os.Readlink(filepath.Join(ws.realRoot, filepath.Join(resolved...)))
		if err != nil {
			return "", fsError(p, err)
		}
		resolved = resolved[:len(resolved)-1]
		if filepath.IsAbs(target) {
			rel, ok := ws.relToRoot(filepath.Clean(target))
			if !ok {
				return "", newError(ErrPathOutsideRoot, p, fmt.Sprintf("symlink %s points to %s", strings.Join(append(resolved, c), "/"), target))
			}
			resolved = resolved[:0]
			target = rel
		}
		todo = append(splitPath(filepath.ToSlash(target)), todo...)
		if escapes(resolved, todo) {
			return "", newError(ErrPathOutsideRoot, p, fmt.Sprintf("symlink %s points to %s", strings.Join(append(resolved, c), "/"), target))
		}
	}
	if len(resolved) == 0 {
		return ".", nil
	}
	return strings.Join(resolved, "/"), nil
}

// escapes reports whether applying the components todo to the directory
// resolved climbs above the root by ".." alone. Symlinks met later are
// checked when they are reached; this check only gives the precise message
// naming the link that escaped.
func escapes(resolved, todo []string) bool {
	depth := len(resolved)
	for _, c := range todo {
		switch c {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// relToRoot returns abs relative to the project root ("." for the root) if
// abs is the root or below it, under either the real root or the root as
// given to Open (which may itself go through a symlink).
func (ws *Workspace) relToRoot(abs string) (string, bool) {
	for _, r := range [...]string{ws.realRoot, ws.absRoot} {
		if abs == r {
			return ".", true
		}
		if strings.HasPrefix(abs, r+string(filepath.Separator)) {
			return filepath.ToSlash(abs[len(r)+1:]), true
		}
	}
	return "", false
}

func splitPath(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// resolveParent is resolve for operations on a directory entry itself
// (Delete): the parent chain is resolved and confined, the final component is
// kept as it is, so a symlink names the link, not its target.
func (ws *Workspace) resolveParent(p string) (string, error) {
	if err := checkPathText(p); err != nil {
		return "", err
	}
	clean := path.Clean(p)
	if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return ws.resolve(p)
	}
	parent, err := ws.resolve(path.Dir(clean))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Path = p
		}
		return "", err
	}
	return path.Join(parent, path.Base(clean)), nil
}
