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
	var res struct {
		Functions map[string][]string `json:"functions"`
		Error     string              `json:"error"`
	}
	if err := runReader(ctx, py, "labels", map[string]string{"module": module, "source": source}, &res); err != nil {
		return nil, fmt.Errorf("statement ids of %s: %w", module, err)
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
	var res struct {
		Affected bool   `json:"affected"`
		Why      string `json:"why"`
	}
	in := map[string]any{"module": module, "old": oldSource, "new": newSource, "frames": frames}
	if err := runReader(ctx, py, "affected", in, &res); err != nil {
		return true, "", fmt.Errorf("statements affected by %s: %w", module, err)
	}
	return res.Affected, res.Why, nil
}

// runReader runs one of the kernel package's static readers (labels,
// affected, expression: python/ripple_kernel, through the kernel's
// bootstrap) in a short process of its own, isolated (-I): in is its JSON
// stdin, its JSON stdout decodes into out. Nothing of the user's code runs
// and no kernel is asked, so the answer never waits for a run.
func runReader(ctx context.Context, py Interpreter, method string, in, out any) error {
	dir, err := ScriptDir()
	if err != nil {
		return err
	}
	input, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py.Path, append([]string{"-I"}, bootstrapArgs(dir, method)...)...)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	output, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := json.Unmarshal(output, out); err != nil {
		return fmt.Errorf("bad answer: %w", err)
	}
	return nil
}
