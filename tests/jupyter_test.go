package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// ripple as a Jupyter kernel, from the outside: the kernelspec that
// `ripple jupyter install` writes is found by `jupyter kernelspec list`,
// and Jupyter's own clients drive the kernel it starts
// (tests/jupyter/test_ripple_kernel.py: Debian's jupyter_kernel_test, the
// conformance suite, and jupyter_client as the frontend).

const debianPython = "/usr/bin/python3"

// needJupyter skips (fails under CI) without Debian's Jupyter packages.
func needJupyter(t *testing.T) {
	t.Helper()
	check := exec.Command(debianPython, "-c", "import jupyter_client, jupyter_kernel_test, IPython")
	if out, err := check.CombinedOutput(); err != nil {
		testenv.NeedOrSkip(t, "Debian's python3 lacks jupyter_client/jupyter_kernel_test/IPython (apt install python3-jupyter-kernel-test python3-jupyter-client python3-ipython; .ci/run does): %v\n%s", err, out)
	}
	if _, err := exec.LookPath("jupyter-kernelspec"); err != nil {
		testenv.NeedOrSkip(t, "jupyter-kernelspec is not on PATH (apt install jupyter-client; .ci/run does)")
	}
}

// jupyterEnv is the environment of a test's Jupyter: its own data
// directory (where the kernelspec goes) and cache directory (where the
// kernels' state directories go).
func jupyterEnv(t *testing.T) (env []string, dataDir string) {
	dataDir = t.TempDir()
	env = append(os.Environ(), "JUPYTER_DATA_DIR="+dataDir, "XDG_CACHE_HOME="+t.TempDir(),
		"RIPPLE_TEST_DIR="+t.TempDir(), "PYDEVD_DISABLE_FILE_VALIDATION=1", "JUPYTER_PLATFORM_DIRS=0")
	return env, dataDir
}

func installKernelspec(t *testing.T, bin string, env []string) {
	t.Helper()
	cmd := exec.Command(bin, "jupyter", "install", "--python", debianPython)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ripple jupyter install: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "installed kernelspec ripple (Python 3 (ripple)") {
		t.Fatalf("ripple jupyter install said:\n%s", out)
	}
}

func TestJupyterKernelspecIsFound(t *testing.T) {
	needJupyter(t)
	bin := buildBinary(t)
	env, dataDir := jupyterEnv(t)
	installKernelspec(t, bin, env)
	cmd := exec.Command("jupyter-kernelspec", "list", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jupyter kernelspec list: %v", err)
	}
	var list struct {
		Kernelspecs map[string]struct {
			ResourceDir string `json:"resource_dir"`
			Spec        struct {
				Argv          []string `json:"argv"`
				DisplayName   string   `json:"display_name"`
				Language      string   `json:"language"`
				InterruptMode string   `json:"interrupt_mode"`
			} `json:"spec"`
		} `json:"kernelspecs"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("kernelspec list: %v\n%s", err, out)
	}
	ks, ok := list.Kernelspecs["ripple"]
	if !ok {
		t.Fatalf("jupyter kernelspec list does not list ripple:\n%s", out)
	}
	if ks.ResourceDir != filepath.Join(dataDir, "kernels", "ripple") {
		t.Errorf("resource dir %s, want under %s", ks.ResourceDir, dataDir)
	}
	want := []string{bin, "jupyter", "kernel", "-f", "{connection_file}", "--python", debianPython, "--kernels", "1"}
	resolved, _ := filepath.EvalSymlinks(bin)
	want[0] = resolved
	if strings.Join(ks.Spec.Argv, " ") != strings.Join(want, " ") || ks.Spec.DisplayName != "Python 3 (ripple)" ||
		ks.Spec.Language != "python" || ks.Spec.InterruptMode != "signal" {
		t.Errorf("spec %+v, want argv %q", ks.Spec, want)
	}
}

// The conformance suite and the frontend tests, in one Python process.
func TestJupyterConformance(t *testing.T) {
	needJupyter(t)
	bin := buildBinary(t)
	env, _ := jupyterEnv(t)
	installKernelspec(t, bin, env)
	// ~50 tests with kernel starts and restarts: minutes on a loaded machine.
	ctx, cancel := context.WithDeadline(context.Background(), testenv.DeadlineIn(t, 5*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "-Xfrozen_modules=off", "-m", "unittest", "-v", "test_ripple_kernel")
	cmd.Dir = "jupyter"
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	text := out.String()
	if err != nil {
		t.Fatalf("the Jupyter tests failed: %v\n%s", err, text)
	}
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? `).FindStringSubmatch(text)
	if ran == nil || !regexp.MustCompile(`(?m)^OK$`).MatchString(text) {
		t.Fatalf("no OK from unittest:\n%s", text)
	}
	// Every test of jupyter_kernel_test ran (none skipped for lack of a
	// sample), and so did ours.
	for _, name := range []string{"test_execute_stdout", "test_execute_stderr", "test_execute_result", "test_display_data",
		"test_error", "test_completion", "test_inspect", "test_is_complete", "test_history", "test_pager",
		"test_clear_output", "test_kernel_info", "test_interrupt_by_signal", "test_interrupt_by_message",
		"test_input_request", "test_shutdown_request_ends_the_process", "test_restart_restores_values_from_the_journal",
		"test_displays_after_the_shell_is_made",
		"test_rerun_runs_only_changed_statements", "test_bad_signature_is_dropped"} {
		// unittest -v names each test as it starts; a kernel's log line
		// may come between the name and its "ok", and the OK above says
		// that none failed.
		if !regexp.MustCompile(`(?m)^` + name + ` \(`).MatchString(text) {
			t.Errorf("%s did not run:\n%s", name, text)
		}
	}
	if strings.Contains(text, "skipped") {
		t.Errorf("a test was skipped:\n%s", text)
	}
	t.Logf("%s tests of the Jupyter suite passed", ran[1])
}

// Bad command lines name what is wrong.
func TestJupyterBadInput(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "conn.json")
	if err := os.WriteFile(bad, []byte(`{"transport": "ipc", "ip": "127.0.0.1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"jupyter", "kernel"}, "-f CONNECTION_FILE is required"},
		{[]string{"jupyter", "kernel", "-f", filepath.Join(dir, "missing.json")}, "missing.json: no such file"},
		{[]string{"jupyter", "kernel", "-f", bad}, `transport "ipc": only tcp is supported`},
		{[]string{"jupyter", "install", "--user", "--prefix", dir}, "--user, --sys-prefix and --prefix exclude each other"},
		{[]string{"jupyter", "install", "--kernels", "0"}, "--kernels must be at least 1, got 0"},
		{[]string{"jupyter", "frobnicate"}, `unknown subcommand "frobnicate"`},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("ripple %s: %v\n%s\nwant exit 2 and %q", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}

// A kernel whose frontend died without a shutdown_request exits (and its
// Python kernels with it), as ipykernel's parent poller makes it.
func TestJupyterKernelExitsWithItsParent(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	var ports []int
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
	conn := filepath.Join(dir, "kernel-orphan.json")
	b, _ := json.Marshal(map[string]any{"transport": "tcp", "ip": "127.0.0.1", "shell_port": ports[0], "iopub_port": ports[1],
		"stdin_port": ports[2], "control_port": ports[3], "hb_port": ports[4], "key": "k", "signature_scheme": "hmac-sha256"})
	if err := os.WriteFile(conn, b, 0o600); err != nil {
		t.Fatal(err)
	}
	parent := exec.Command("/bin/sh", "-c", `"$0" jupyter kernel -f "$1" & echo $!; wait`, bin, conn)
	parent.Env = append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir())
	parent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// The channels are bound once the engine and its kernel are up.
	testenv.Eventually(t, "the kernel to listen on its heartbeat port", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[4]))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	syscall.Kill(parent.Process.Pid, syscall.SIGKILL)
	parent.Wait()
	testenv.Eventually(t, "the orphaned kernel to exit", func() bool {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(stat, ')')
		return err != nil || (i > 0 && i+2 < len(stat) && stat[i+2] == 'Z') // exited, not reaped yet
	})
}
