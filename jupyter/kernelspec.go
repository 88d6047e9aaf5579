package jupyter

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// KernelName is the kernelspec's name; DisplayName what frontends list.
const (
	KernelName  = "ripple"
	DisplayName = "Python 3 (ripple)"
)

// ErrKernelspec: the kernelspec cannot be written where asked.
var ErrKernelspec = errors.New("jupyter: cannot install the kernelspec")

// Kernelspec is kernel.json.
type Kernelspec struct {
	Argv          []string       `json:"argv"`
	DisplayName   string         `json:"display_name"`
	Language      string         `json:"language"`
	InterruptMode string         `json:"interrupt_mode"`
	Env           map[string]any `json:"env,omitempty"`
	Metadata      map[string]any `json:"metadata"`
}

// NewKernelspec is the spec that starts `RIPPLE jupyter kernel -f
// {connection_file}` with the interpreter and kernel count given. The
// interrupt mode is "signal": Jupyter sends SIGINT to the ripple process,
// which interrupts the running cell (interrupt_request on the control
// channel does the same).
func NewKernelspec(ripple, python string, kernels int) Kernelspec {
	argv := []string{ripple, "jupyter", "kernel", "-f", "{connection_file}"}
	if python != "" {
		argv = append(argv, "--python", python)
	}
	if kernels > 0 {
		argv = append(argv, "--kernels", strconv.Itoa(kernels))
	}
	return Kernelspec{Argv: argv, DisplayName: DisplayName, Language: "python", InterruptMode: "signal",
		Metadata: map[string]any{"debugger": false}}
}

// UserKernelsDir is Jupyter's per-user kernels directory
// ($JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter, else
// ~/.local/share/jupyter; jupyter_core's rule on Linux).
func UserKernelsDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return filepath.Join(d, "kernels"), nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "jupyter", "kernels"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKernelspec, err)
	}
	return filepath.Join(home, ".local", "share", "jupyter", "kernels"), nil
}

// PrefixKernelsDir is the kernels directory of an installation prefix
// (--sys-prefix, --prefix): PREFIX/share/jupyter/kernels.
func PrefixKernelsDir(prefix string) string {
	return filepath.Join(prefix, "share", "jupyter", "kernels")
}

// Install writes spec as kernelsDir/ripple/kernel.json and returns that
// directory.
func Install(kernelsDir string, spec Kernelspec) (string, error) {
	dir := filepath.Join(kernelsDir, KernelName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %w", ErrKernelspec, err)
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kernel.json")
	err = writeAtomic(path, append(b, '\n'))
	if err == nil {
		err = os.Chmod(path, 0o644)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrKernelspec, err)
	}
	return dir, nil
}
