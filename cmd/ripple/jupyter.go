package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/ripple-run/ripple/jupyter"
	"github.com/ripple-run/ripple/kernel"
)

const jupyterUsage = `usage:
  ripple jupyter install [--user | --sys-prefix | --prefix P] [--python P] [--kernels N]
      write the kernelspec "ripple" ("Python 3 (ripple)"), found by
      jupyter kernelspec list; default --user (~/.local/share/jupyter/kernels)
  ripple jupyter kernel -f CONNECTION_FILE [--python P] [--kernels N]
      serve one Jupyter kernel (what the kernelspec starts; docs/jupyter.md)
`

// jupyterCmd is `ripple jupyter install|kernel`.
func jupyterCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, jupyterUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	switch args[0] {
	case "install":
		return jupyterInstall(ctx, args[1:], stdout, stderr)
	case "kernel":
		return jupyterKernel(ctx, args[1:], stderr)
	}
	fmt.Fprintf(stderr, "ripple jupyter: unknown subcommand %q\n%s", args[0], jupyterUsage)
	return exitUsage
}

func jupyterInstall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("jupyter install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.Bool("user", false, "install for this user (the default)")
	sysPrefix := fs.Bool("sys-prefix", false, "install into the Python's sys.prefix (a virtualenv's Jupyter finds it)")
	prefix := fs.String("prefix", "", "install into `PREFIX`/share/jupyter/kernels")
	pythonFlag := fs.String("python", "", "Python interpreter of the kernels (default: $RIPPLE_PYTHON, ./.venv/bin/python, python3 on PATH)")
	kernels := fs.Int("kernels", 1, "kernel processes behind the notebook (completion answers from a free one while a cell runs)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	chosen := 0
	for _, b := range []bool{*user, *sysPrefix, *prefix != ""} {
		if b {
			chosen++
		}
	}
	if chosen > 1 {
		fmt.Fprintln(stderr, "ripple jupyter install: --user, --sys-prefix and --prefix exclude each other")
		return exitUsage
	}
	if *kernels < 1 {
		fmt.Fprintf(stderr, "ripple jupyter install: --kernels must be at least 1, got %d\n", *kernels)
		return exitUsage
	}
	cwd, _ := os.Getwd()
	py, err := kernel.FindPython(ctx, *pythonFlag, cwd)
	if err != nil {
		fmt.Fprintln(stderr, "ripple jupyter install:", err)
		return 1
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ripple jupyter install: where is ripple:", err)
		return 1
	}
	var dir string
	switch {
	case *prefix != "":
		dir = jupyter.PrefixKernelsDir(*prefix)
	case *sysPrefix:
		out, err := exec.CommandContext(ctx, py.Path, "-c", "import sys; print(sys.prefix)").Output()
		if err != nil {
			fmt.Fprintf(stderr, "ripple jupyter install: sys.prefix of %s: %v\n", py.Path, err)
			return 1
		}
		dir = jupyter.PrefixKernelsDir(strings.TrimSpace(string(out)))
	default:
		if dir, err = jupyter.UserKernelsDir(); err != nil {
			fmt.Fprintln(stderr, "ripple jupyter install:", err)
			return 1
		}
	}
	where, err := jupyter.Install(dir, jupyter.NewKernelspec(self, py.Path, *kernels))
	if err != nil {
		fmt.Fprintln(stderr, "ripple jupyter install:", err)
		return 1
	}
	fmt.Fprintf(stdout, "ripple: installed kernelspec %s (%s, Python %s) in %s\n", jupyter.KernelName, jupyter.DisplayName, py.Version, where)
	return 0
}

// jupyterKernel serves one kernel until a shutdown_request, SIGTERM or
// SIGHUP; SIGINT interrupts the running cell (interrupt_mode signal).
func jupyterKernel(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("jupyter kernel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	connFile := fs.String("f", "", "the connection `file` Jupyter wrote")
	pythonFlag := fs.String("python", "", "Python interpreter of the kernels")
	kernels := fs.Int("kernels", 1, "kernel processes")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *connFile == "" {
		fmt.Fprintln(stderr, "ripple jupyter kernel: -f CONNECTION_FILE is required")
		return exitUsage
	}
	info, err := jupyter.ReadConnectionFile(*connFile)
	if err != nil {
		fmt.Fprintln(stderr, "ripple jupyter kernel:", err)
		return exitUsage
	}
	stateDir, err := jupyter.StateDirFor(*connFile)
	if err != nil {
		fmt.Fprintln(stderr, "ripple jupyter kernel:", err)
		return 1
	}
	// The frontend's process (a Notebook server, VS Code) started us: if
	// it dies without a shutdown_request, so do we, as ipykernel does
	// (its parent poller), keeping the state for a restart. Watched from
	// the start: a parent may die while the engine starts.
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go watchParent(ctx, orphaned)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	sess := jupyter.NewSession(jupyter.SessionConfig{StateDir: stateDir, Python: *pythonFlag, Kernels: *kernels, Version: version, Logger: log})
	if err := sess.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "ripple jupyter kernel:", err)
		return 1
	}
	srv := jupyter.NewServer(info, sess, log)
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintln(stderr, "ripple jupyter kernel:", err)
		stopSession(sess)
		return 1
	}
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	restart := true
	for done := false; !done; {
		select {
		case <-interrupts:
			sess.Interrupt()
		case restart = <-srv.Shutdown():
			done = true
		case <-ctx.Done():
			done = true
		}
	}
	srv.Stop()
	stopSession(sess)
	if !restart {
		// The kernel is gone for good: nothing will restore its values.
		if err := os.RemoveAll(stateDir); err != nil && !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stderr, "ripple jupyter kernel:", err)
		}
	}
	return 0
}

// watchParent calls orphaned when this process's parent changes (it
// died: the process was reparented), checking every second until ctx ends.
func watchParent(ctx context.Context, orphaned context.CancelFunc) {
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != parent {
				orphaned()
				return
			}
		}
	}
}

func stopSession(s *jupyter.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.Stop(ctx)
}
