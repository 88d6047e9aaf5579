package tests

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
)

// What a Jupyter user meets, compared with ipykernel
// (tests/jupyter/test_ripple_fidelity.py: IPython's Out/In/_ variables,
// user_expressions, warnings, comms, history, and the execute_results
// `ripple run --notebooks` writes, each run on both kernels).
func TestJupyterFidelity(t *testing.T) {
	needJupyter(t)
	check := exec.Command(debianPython, "-c", "import ipykernel, nbclient, nbformat, pandas")
	if out, err := check.CombinedOutput(); err != nil {
		testenv.NeedOrSkip(t, "Debian's python3 lacks ipykernel/nbclient/nbformat/pandas (apt install python3-ipykernel python3-nbclient python3-nbformat python3-pandas; .ci/run does): %v\n%s", err, out)
	}
	bin := buildBinary(t)
	env, _ := jupyterEnv(t)
	installKernelspec(t, bin, env)
	ctx, cancel := context.WithDeadline(context.Background(), testenv.Deadline(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "-Xfrozen_modules=off", "-m", "unittest", "-v", "test_ripple_fidelity")
	cmd.Dir = "jupyter"
	cmd.Env = append(env, "RIPPLE_BIN="+bin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	if err != nil {
		t.Fatalf("the fidelity tests failed: %v\n%s", err, text)
	}
	if !regexp.MustCompile(`(?m)^OK$`).MatchString(text) || strings.Contains(text, "skipped") {
		t.Fatalf("no clean OK from unittest:\n%s", text)
	}
	for _, name := range []string{"test_out_in_and_the_execution_count", "test_evaluated_after_the_cell_errors_per_expression",
		"test_a_warning_in_the_last_expression_quotes_the_users_line", "test_comms_reach_a_target_user_code_registered",
		"test_tail_range_and_search_of_the_session", "test_run_notebooks_writes_every_mime_type"} {
		if !regexp.MustCompile(`(?m)^` + name + ` \(`).MatchString(text) {
			t.Errorf("%s did not run:\n%s", name, text)
		}
	}
}
