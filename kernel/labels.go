package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// ErrNoLabels: a module's statement ids cannot be read from its source
// (a syntax error); the caller decides without them.
var ErrNoLabels = errors.New("statement ids not known")

// labelsTimeout bounds one StatementIDs process: it parses, it runs no
// project code, so only a stuck machine reaches it.
const labelsTimeout = 30 * time.Second

// StatementIDs returns the expression ids (../shared/PROTOCOL.md 5.2) of
// the statements of every function of module as source defines it, by
// qualname ("f", "C.m", "__main__" for the top level run as a script),
// read statically by py with the kernel's own label rules
// (python/ripple_kernel/labels.py) in a short process of its own: nothing of the
// module runs, and no kernel is asked, so the answer does not wait for a
// run. A source that does not parse is ErrNoLabels.
func StatementIDs(ctx context.Context, py Interpreter, module, source string) (map[string][]string, error) {
	dir, err := ScriptDir()
	if err != nil {
		return nil, err
	}
	in, err := json.Marshal(map[string]string{"module": module, "source": source})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py.Path, append([]string{"-I"}, bootstrapArgs(dir, "labels")...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("statement ids of %s: %w: %s", module, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res struct {
		Functions map[string][]string `json:"functions"`
		Error     string              `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("statement ids of %s: bad answer: %w", module, err)
	}
	if res.Error != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrNoLabels, module, res.Error)
	}
	return res.Functions, nil
}

// FrameStatements are the statements of one frame that may be running:
// the function (qualname in its module) and their expression ids.
type FrameStatements struct {
	Qualname string   `json:"qualname"`
	IDs      []string `json:"ids"`
}

// StatementsAffected reports whether changing module from oldSource (the
// version the kernel runs) to newSource may invalidate one of the
// statements of frames, and why; read statically by py
// (python/ripple_kernel/affected.py) in a short process of its own. It is
// conservative: what it cannot tell is affected.
func StatementsAffected(ctx context.Context, py Interpreter, module, oldSource, newSource string, frames []FrameStatements) (bool, string, error) {
	dir, err := ScriptDir()
	if err != nil {
		return true, "", err
	}
	in, err := json.Marshal(map[string]any{"module": module, "old": oldSource, "new": newSource, "frames": frames})
	if err != nil {
		return true, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py.Path, append([]string{"-I"}, bootstrapArgs(dir, "affected")...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return true, "", fmt.Errorf("statements affected by %s: %w: %s", module, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res struct {
		Affected bool   `json:"affected"`
		Why      string `json:"why"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return true, "", fmt.Errorf("statements affected by %s: bad answer: %w", module, err)
	}
	return res.Affected, res.Why, nil
}
