package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// A real frontend: Debian's classic Notebook in Debian's chromium
// (tests/jupyter/notebook_ui.mjs says the steps). Screenshots go to
// tests/artifacts/jupyter-notebook-*.png.

// notebookCells are demo.ipynb's cells; the first appends to a log each
// time it runs.
func notebookCells(log string) []string {
	return []string{
		fmt.Sprintf("import time\nran = open(%q, 'a').write('ran\\n')\nvalues = [i * i for i in range(10)]\nprint('made', len(values), 'values')", log),
		"total = sum(values)\ntotal",
		"import matplotlib.pyplot as plt\nplt.plot(values)\nplt.show()",
		"for i in range(100000):\n    print('tick', i, flush=True)\n    time.sleep(0.2)",
	}
}

func writeNotebook(t *testing.T, path string, cells []string) {
	var cs []map[string]any
	for _, c := range cells {
		cs = append(cs, map[string]any{"cell_type": "code", "execution_count": nil, "metadata": map[string]any{},
			"outputs": []any{}, "source": c})
	}
	nb := map[string]any{"cells": cs, "nbformat": 4, "nbformat_minor": 5, "metadata": map[string]any{
		"kernelspec":    map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"},
		"language_info": map[string]any{"name": "python"}}}
	b, _ := json.MarshalIndent(nb, "", " ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestJupyterClassicNotebookInChromium(t *testing.T) {
	needJupyter(t)
	nbBin, err := exec.LookPath("jupyter-notebook")
	if err != nil {
		testenv.NeedOrSkip(t, "jupyter-notebook is not on PATH (apt install python3-notebook; .ci/run does)")
	}
	check := exec.Command(debianPython, "-c", "import ipykernel, matplotlib")
	if out, err := check.CombinedOutput(); err != nil {
		testenv.NeedOrSkip(t, "Debian's python3 lacks ipykernel or matplotlib (apt install python3-ipykernel python3-matplotlib): %v\n%s", err, out)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.NeedOrSkip(t, "node is not on PATH (apt install nodejs npm; .ci/run does)")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil && os.Getenv("RIPPLE_CHROMIUM") == "" {
		testenv.NeedOrSkip(t, "chromium is missing (apt install chromium; .ci/run does)")
	}
	if _, err := os.Stat(filepath.Join("web", "node_modules", "playwright-core", "package.json")); err != nil {
		testenv.NeedOrSkip(t, "playwright-core is missing (npm ci in tests/web; .ci/run does)")
	}
	bin := buildBinary(t)
	env, _ := jupyterEnv(t)
	env = append(env, "JUPYTER_RUNTIME_DIR="+t.TempDir(), "JUPYTER_CONFIG_DIR="+t.TempDir())
	installKernelspec(t, bin, env)
	dir := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "ran.log")
	writeNotebook(t, filepath.Join(dir, "demo.ipynb"), notebookCells(logFile))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	const nbToken = "ripple-notebook-test"
	cmd := exec.Command(nbBin, "--no-browser", "--allow-root", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", port),
		"--NotebookApp.token="+nbToken, "--NotebookApp.port_retries=0", "--notebook-dir="+dir)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var serverLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &serverLog, &serverLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		// SIGTERM: the Notebook shuts its kernels down, then exits.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("notebook server log:\n%s", serverLog.String())
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.Eventually(t, "the Notebook server to answer", func() bool {
		resp, err := http.Get(base + "/api?token=" + nbToken)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})

	artifacts, err := filepath.Abs("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	// The browser steps take longer than testenv's default minute: each
	// waits for its own condition (90 s at most), the whole for 5 minutes
	// or the test's deadline.
	deadline := time.Now().Add(5 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(deadline) {
		deadline = d.Add(-10 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ui := exec.CommandContext(ctx, node, "notebook_ui.mjs", base+"/notebooks/demo.ipynb?token="+nbToken, artifacts)
	ui.Dir = "jupyter"
	ui.Env = env
	ui.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ui.Cancel = func() error { return syscall.Kill(-ui.Process.Pid, syscall.SIGKILL) }
	ui.WaitDelay = 10 * time.Second
	out, err := ui.CombinedOutput()
	t.Logf("notebook_ui.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("notebook_ui.mjs failed: %v (see tests/artifacts/jupyter-notebook-failed.png)", err)
	}
	var after string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "AFTER-RESTART "); ok {
			_ = json.Unmarshal([]byte(rest), &after)
		}
	}
	if !strings.Contains(after, "after restart: 285 [0, 1, 4]") {
		t.Errorf("the new cell after the restart shows %q, want the values made before it", after)
	}
	restored := ""
	if _, rest, ok := strings.Cut(after, "restored from the value journal (not run again): "); ok {
		restored, _, _ = strings.Cut(rest, "\n")
	}
	for _, name := range []string{"values", "total", "ran"} {
		if !strings.Contains(", "+restored+",", ", "+name+",") {
			t.Errorf("%s is not among the restored statements %q", name, restored)
		}
	}
	log, err := os.ReadFile(logFile)
	if err != nil || string(log) != "ran\n" {
		t.Errorf("the first cell ran %q times' worth (%v); want once: the restart restored it", log, err)
	}
	for _, shot := range []string{"1-kernel-picked", "2-run-all", "3-interrupted", "4-restarted-values-back"} {
		if _, err := os.Stat(filepath.Join(artifacts, "jupyter-notebook-"+shot+".png")); err != nil {
			t.Errorf("screenshot %s: %v", shot, err)
		}
	}
}
