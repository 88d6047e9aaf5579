package kernel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ripple-run/ripple/internal/busyexec"
)

// Interpreter is a Python interpreter kernels run on.
type Interpreter struct {
	// Path is the interpreter's real executable (its sys.executable), so
	// that launchers such as pyenv shims are resolved once, not per kernel.
	Path string
	// Version is sys.version_info as "3.11.7".
	Version string
}

// MinPython is the oldest Python version kernels support.
const MinPython = "3.9"

// probeTimeout bounds one interpreter probe (a cold pyenv shim is slow).
const probeTimeout = 30 * time.Second

const probeScript = "import sys; v = sys.version_info; print(sys.executable); print('%d.%d.%d' % (v[0], v[1], v[2]))"

// FindPython chooses the interpreter for a project, in this order:
//  1. flag (the --python option), if not empty;
//  2. the RIPPLE_PYTHON environment variable, if set;
//  3. projectRoot/.venv/bin/python, else projectRoot/venv/bin/python, if
//     it exists (the two names `python -m venv` is usually given);
//  4. python3 on PATH.
//
// The first candidate that is given or exists is the choice: if it does
// not run or is older than MinPython, FindPython fails (wrapping
// ErrNoPython) rather than silently falling back to another Python. The
// candidate is run once, from projectRoot, to read its real executable and
// version.
func FindPython(ctx context.Context, flag, projectRoot string) (Interpreter, error) {
	path, origin, err := candidatePython(flag, projectRoot)
	if err != nil {
		return Interpreter{}, err
	}
	return confirmPython(ctx, path, origin, projectRoot)
}

// FindPythonQuick is FindPython for a start that should not wait on a
// launcher. A pyenv shim answers 100-300 ms later than the interpreter it
// runs, and its answer depends on the directory and the environment, so
// FindPython asks it every time. When the candidate is a launcher whose
// answer for this project and environment was remembered (by an earlier
// FindPython or confirm), FindPythonQuick returns that answer at once and a
// non-nil confirm, which asks the launcher again: the caller starts
// kernels on the remembered interpreter, calls confirm meanwhile, and
// restarts them on confirm's answer in the rare case it differs (the user
// switched pyenv's version since). Otherwise it is FindPython and
// confirm is nil.
func FindPythonQuick(ctx context.Context, flag, projectRoot string) (interp Interpreter, confirm func(context.Context) (Interpreter, error), err error) {
	path, origin, err := candidatePython(flag, projectRoot)
	if err != nil {
		return Interpreter{}, nil, err
	}
	if interp, ok := probeCache.lookupLauncher(path, projectRoot); ok {
		return interp, func(ctx context.Context) (Interpreter, error) {
			return confirmPython(ctx, path, origin, projectRoot)
		}, nil
	}
	interp, err = confirmPython(ctx, path, origin, projectRoot)
	return interp, nil, err
}

// confirmPython probes the candidate path unless it is a real interpreter
// whose probe is remembered, and remembers what it found.
func confirmPython(ctx context.Context, path, origin, projectRoot string) (Interpreter, error) {
	if interp, ok := probeCache.lookup(path); ok {
		return interp, nil
	}
	interp, err := probePython(ctx, path, projectRoot)
	if err != nil {
		return Interpreter{}, fmt.Errorf("%w: %s: %w", ErrNoPython, origin, err)
	}
	probeCache.remember(path, projectRoot, interp)
	return interp, nil
}

// candidatePython is FindPython's choice of a path to run, before it runs
// it; origin says where the choice came from, for errors.
func candidatePython(flag, projectRoot string) (path, origin string, err error) {
	switch {
	case flag != "":
		path, origin = flag, "--python "+flag
	case os.Getenv("RIPPLE_PYTHON") != "":
		path = os.Getenv("RIPPLE_PYTHON")
		origin = "RIPPLE_PYTHON=" + path
	default:
		venv := filepath.Join(projectRoot, ".venv", "bin", "python")
		found := ""
		for _, dir := range []string{".venv", "venv"} {
			p := filepath.Join(projectRoot, dir, "bin", "python")
			if _, err := os.Stat(p); err == nil {
				found = p
				break
			}
		}
		if found != "" {
			path, origin = found, "the project's virtual environment "+found
			break
		}
		found, err := exec.LookPath("python3")
		if err != nil {
			return "", "", fmt.Errorf("%w: no python3 on PATH and no %s; install Python >= %s or choose one with --python or RIPPLE_PYTHON",
				ErrNoPython, venv, MinPython)
		}
		path, origin = found, "python3 on PATH ("+found+")"
	}
	return path, origin, nil
}

func probePython(ctx context.Context, path, dir string) (Interpreter, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	// -S: the executable and the version do not depend on site, whose
	// .pth files cost a pyenv Python ~40 ms (certifi) of a probe that
	// competes with the kernels' start for the CPU.
	var stdout, stderr bytes.Buffer
	err := busyexec.Run(ctx, func() *exec.Cmd {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.CommandContext(ctx, path, "-S", "-c", probeScript)
		cmd.Dir = dir
		cmd.Stdout = &stdout
		cmd.Stderr = &stderr
		return cmd
	})
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			return Interpreter{}, fmt.Errorf("did not answer within %v", probeTimeout)
		}
		var execErr *exec.Error
		if errors.As(err, &execErr) {
			return Interpreter{}, execErr.Err
		}
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			return Interpreter{}, pathErr.Err // "no such file or directory"
		}
		if msg != "" {
			return Interpreter{}, fmt.Errorf("%v: %s", err, lastLines(msg, 3))
		}
		return Interpreter{}, err
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		return Interpreter{}, fmt.Errorf("does not look like Python: it printed %q", stdout.String())
	}
	exe, version := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	if !versionAtLeast(version, MinPython) {
		return Interpreter{}, fmt.Errorf("is Python %s; ripple needs Python >= %s", version, MinPython)
	}
	if exe == "" {
		exe = path // embedded interpreters may not know their executable
	}
	return Interpreter{Path: exe, Version: version}, nil
}

// versionAtLeast compares dotted numeric versions ("3.10.1" >= "3.9").
func versionAtLeast(version, min string) bool {
	v, m := strings.Split(version, "."), strings.Split(min, ".")
	for i := range m {
		if i >= len(v) {
			return false
		}
		a, errA := strconv.Atoi(v[i])
		b, errB := strconv.Atoi(m[i])
		if errA != nil || errB != nil {
			return false
		}
		if a != b {
			return a > b
		}
	}
	return true
}

// lastLines returns at most the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			n--
			if n == 0 {
				return s[i+1:]
			}
		}
	}
	return s
}
