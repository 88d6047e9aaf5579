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

// ErrExpressionSyntax: a visualization expression does not compile as a
// Python expression.
var ErrExpressionSyntax = errors.New("not a Python expression")

// CheckExpression reports whether expr compiles as a Python expression
// (python/ripple_kernel/exprcheck.py), read by py in a short process of
// its own like StatementIDs: nothing runs and no kernel is asked. A
// syntax error is ErrExpressionSyntax with Python's message.
func CheckExpression(ctx context.Context, py Interpreter, expr string) error {
	dir, err := ScriptDir()
	if err != nil {
		return err
	}
	in, err := json.Marshal(map[string]string{"expression": expr})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, labelsTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py.Path, append([]string{"-I"}, bootstrapArgs(dir, "expression")...)...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("checking expression %q: %w: %s", expr, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var res struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fmt.Errorf("checking expression %q: bad answer: %w", expr, err)
	}
	if res.Error != "" {
		return fmt.Errorf("%w: %s", ErrExpressionSyntax, res.Error)
	}
	return nil
}
