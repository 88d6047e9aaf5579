package kernel

import (
	"context"
	"errors"
	"fmt"
)

// ErrExpressionSyntax: a visualization expression does not compile as a
// Python expression.
var ErrExpressionSyntax = errors.New("not a Python expression")

// CheckExpression reports whether expr compiles as a Python expression
// (python/ripple_kernel/exprcheck.py), read by py in a short process of
// its own like StatementIDs: nothing runs and no kernel is asked. A
// syntax error is ErrExpressionSyntax with Python's message.
func CheckExpression(ctx context.Context, py Interpreter, expr string) error {
	var res struct {
		Error string `json:"error"`
	}
	if err := runReader(ctx, py, "expression", map[string]string{"expression": expr}, &res); err != nil {
		return fmt.Errorf("checking expression %q: %w", expr, err)
	}
	if res.Error != "" {
		return fmt.Errorf("%w: %s", ErrExpressionSyntax, res.Error)
	}
	return nil
}
