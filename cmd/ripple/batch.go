package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ripple-run/ripple/batch"
)

const runUsage = `usage: ripple run [PROJECT_DIR] [flags]
       ripple run [PROJECT_DIR] --tests [PATH[::NODE]...] [-k EXPR] [-m MARKEXPR] [flags] [-- PYTEST_ARGS...]

Runs the project's entries headless on a pool of kernels and reports for CI.
With --tests, pytest runs inside the kernels: its configuration, collection,
fixtures, marks and plugins, its node ids and outcomes; ripple hands the tests
out to the kernels by module (pytest-xdist's loadfile; see --dist). PATH[::NODE]
(relative to PROJECT_DIR), -k, -m and the PYTEST_ARGS after -- go to pytest.
Without pytest in the interpreter, unittest suites run through unittest's
loader. Without --tests: the --entry functions, or main:main.

With --agents-listen ADDR the entries or the tests run on the kernels of
runtime agents (ripple agent --coordinator ADDR): the run waits until
--kernels of them (default 1) are ready, then spreads the entries or the
tests over every agent kernel connected by then, and over --local-kernels
local ones (default 0). Tests keep the rules above across agents (a
module's tests on one kernel); the tests of an agent lost during the run
run again on other kernels. The agents stop when the run ends. With
--launcher slurm the run submits those agents as Slurm jobs
(--kernels-per-job kernels each, with --sbatch-arg ARGs) and cancels them
at its end.

Exit status (as pytest): 0 all passed, 1 a test failed (or errored, crashed,
timed out), 2 usage error, collection errors or interrupted, 5 no tests
collected. Without --tests, Ctrl-C exits with 130.

flags:
`

const reportUsage = `usage: ripple report merge OUT IN...

Merges the reports of the shards of a run (--shard K/N) into OUT: JUnit XML
when OUT ends in .xml, the JSON report when it ends in .json.
`

// batchCommand runs "ripple run" and "ripple report".
func batchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if args[0] == "report" {
		return reportCommand(args[1:], stdout, stderr)
	}
	return runCommand(ctx, args[1:], stdout, stderr)
}

// entryList collects repeated --entry flags.
type entryList []string

func (l *entryList) String() string { return strings.Join(*l, ",") }
func (l *entryList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// timeoutFlag takes a Go duration ("90s", "2m") or a number of seconds.
type timeoutFlag struct{ d time.Duration }

func (t *timeoutFlag) String() string { return t.d.String() }
func (t *timeoutFlag) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		t.d = time.Duration(secs * float64(time.Second))
	} else if t.d, err = time.ParseDuration(s); err != nil {
		return fmt.Errorf("want a duration such as 30s or 2m, or seconds")
	}
	if t.d < 0 {
		return fmt.Errorf("want a positive duration")
	}
	return nil
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	var (
		entries entryList
		timeout timeoutFlag
	)
	fs.Var(&entries, "entry", "an entry to run, module:function or module:Class.method (repeatable)")
	tests := fs.Bool("tests", false, "run the project's tests with pytest in the kernels")
	watch := fs.Bool("watch", false, "with --tests: keep the kernels warm and, on each save, re-run the tests of the modules that import what changed")
	keyword := fs.String("k", "", "with --tests: pytest's -k `EXPR` (select tests by name)")
	markExpr := fs.String("m", "", "with --tests: pytest's -m `MARKEXPR` (select tests by mark)")
	kernels := fs.Int("kernels", 0, "number of kernels, entries running at once (default: the number of CPUs)")
	fs.Var(&timeout, "timeout", "time limit of each entry, e.g. 30s (default: none)")
	junit := fs.String("junit", "", "write a JUnit XML report to `FILE`")
	jsonOut := fs.String("json", "", "write a JSON report to `FILE`")
	failFast := fs.Bool("fail-fast", false, "stop at the first failing entry")
	splitCollection := fs.Bool("split-collection", false, "with --tests and several kernels: each kernel imports only the test modules it runs (faster on heavy suites; a module's import side effects then reach only its kernel's tests)")
	dist := fs.String("dist", batch.DistLoadFile, "with --tests and several kernels, how tests are grouped over the kernels (pytest-xdist's names): `loadfile` (a module's tests on one kernel, its fixtures set up once, as under pytest), loadscope (a class's tests on one kernel: a module's classes may run on different kernels, each setting up its module fixtures) or load (xdist's default: consecutive chunks of tests to whichever kernel is free, a module's tests on several kernels)")
	showValues := fs.Bool("show-values", false, "print every statement's value")
	shardFlag := fs.String("shard", "", "run shard `K/N` of the entries (CI matrix)")
	python := fs.String("python", "", "Python interpreter (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	logLevel := fs.String("log-level", "warn", "log `level` on stderr: debug (the run's phases and timings), info, warn or error")
	lf := addLauncherFlags(fs)
	localKernels := fs.Int("local-kernels", 0, "with --agents-listen or --launcher slurm: local kernels beside the agents' kernels")

	// What follows "--" goes to pytest as it is.
	var passThrough []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, passThrough = args[:i], slices.Clone(args[i+1:])
	}
	// Flags may come before and after the project directory.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		return 2
	}
	// The first positional argument is the project directory when it is
	// one; with --tests the others (and a first that is a file or a node
	// id) select tests.
	dir := "."
	if len(positional) > 0 {
		if fi, err := os.Stat(positional[0]); !*tests || (err == nil && fi.IsDir()) {
			dir, positional = positional[0], positional[1:]
		}
	}
	if !*tests && len(positional) > 0 {
		return fail(fmt.Errorf("want at most one project directory, got %q (test selection needs --tests)", append([]string{dir}, positional...)))
	}
	if *watch && !*tests {
		return fail(fmt.Errorf("--watch re-runs tests: it needs --tests"))
	}
	if !*tests && (*keyword != "" || *markExpr != "" || len(passThrough) > 0) {
		return fail(fmt.Errorf("-k, -m and -- PYTEST_ARGS select tests: they need --tests"))
	}
	pytestArgs := slices.Clone(positional)
	if *keyword != "" {
		pytestArgs = append(pytestArgs, "-k", *keyword)
	}
	if *markExpr != "" {
		pytestArgs = append(pytestArgs, "-m", *markExpr)
	}
	pytestArgs = append(pytestArgs, passThrough...)
	if fi, err := os.Stat(dir); err != nil {
		return fail(fmt.Errorf("project directory: %w", err))
	} else if !fi.IsDir() {
		return fail(fmt.Errorf("project directory %s: not a directory", dir))
	}
	opts := batch.Options{Root: dir, Python: *python, Entries: entries, Tests: *tests, Kernels: *kernels,
		Timeout: timeout.d, FailFast: *failFast, ShowValues: *showValues, PytestArgs: pytestArgs,
		SplitCollection: *splitCollection, Dist: *dist}
	if *kernels < 0 {
		return fail(fmt.Errorf("--kernels %d: want a positive number", *kernels))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(fmt.Errorf("--log-level %q: want debug, info, warn or error", *logLevel))
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// With --agents-listen the entries run on agents' kernels only, and
	// --kernels is how many the run waits for (default 1).
	if *localKernels < 0 {
		return fail(fmt.Errorf("--local-kernels %d: want a positive number", *localKernels))
	}
	// The jobs' agents of a test run (--launcher slurm) import pytest
	// when their kernels start, while the run waits for them.
	var preload []string
	if *tests {
		preload = []string{"pytest"}
	}
	coord, msg := lf.open(dir, *python, *localKernels, true, max(*kernels, 1), preload, opts.Logger)
	if msg != "" {
		return fail(errors.New(msg))
	}
	if coord == nil && *localKernels > 0 {
		return fail(errors.New("--local-kernels counts local kernels beside the agents': it needs --agents-listen (without it, --kernels counts the kernels)"))
	}
	if coord != nil {
		defer coord.Close()
		if *watch {
			return fail(errors.New("--watch over agents (--agents-listen) is not built; watch with local kernels"))
		}
		opts.Agents, opts.LocalKernels = coord, *localKernels
		printAgentsAddr(stderr, coord)
	}
	if *shardFlag != "" {
		shard, err := batch.ParseShard(*shardFlag)
		if err != nil {
			return fail(err)
		}
		opts.Shard = shard
	}
	for _, p := range []struct{ flag, path string }{{"--junit", *junit}, {"--json", *jsonOut}} {
		if p.path != "" {
			if err := batch.CheckReportPath(p.flag, p.path); err != nil {
				return fail(err)
			}
		}
	}

	bar := false
	if f, ok := stdout.(*os.File); ok {
		bar = batch.Interactive(f)
	}
	console := batch.NewConsole(stdout, batch.ConsoleOptions{ProgressBar: bar, Color: bar, ShowValues: *showValues})
	if *watch {
		return watchTests(ctx, opts, stdout, stderr, bar, *showValues)
	}
	opts.Observer = console
	rep, err := batch.Run(ctx, opts)
	interrupted := 130 // Ctrl-C; pytest's status for it with --tests
	if *tests {
		interrupted = 2
	}
	if rep == nil {
		console.Flush()
		if errors.Is(err, batch.ErrInterrupted) {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			return interrupted
		}
		return fail(err)
	}
	console.Finish(rep)
	code := 0
	switch {
	case errors.Is(err, batch.ErrInterrupted):
		code = interrupted
	case errors.Is(err, batch.ErrNoTests):
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		code = 5
	case errors.Is(err, batch.ErrStopped):
		code = 1
	case err != nil:
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		code = 2
	case rep.Summary().Failing() > 0:
		code = 1
	}
	if *junit != "" {
		if err := batch.WriteJUnit(*junit, rep); err != nil {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			code = max(code, 2)
		}
	}
	if *jsonOut != "" {
		if err := batch.WriteJSON(*jsonOut, rep); err != nil {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			code = max(code, 2)
		}
	}
	return code
}

// watchTests is ripple run --tests --watch: a console per run, until
// Ctrl-C.
func watchTests(ctx context.Context, opts batch.Options, stdout, stderr io.Writer, bar, showValues bool) int {
	var console *batch.Console
	var started time.Time
	hooks := batch.WatchHooks{
		Observer: func() batch.Observer {
			console = batch.NewConsole(stdout, batch.ConsoleOptions{ProgressBar: bar, Color: bar, ShowValues: showValues})
			started = time.Now()
			return console
		},
		Ran: func(rep *batch.Report, err error, changed []string) {
			if console != nil {
				console.Flush() // its lines before what is written here
			}
			if len(changed) > 0 && rep != nil {
				fmt.Fprintf(stdout, "ripple run: %s changed: re-ran in %s\n", strings.Join(changed, ", "), time.Since(started).Round(time.Millisecond))
			}
			if rep != nil {
				console.Finish(rep)
			}
			if err != nil {
				fmt.Fprintf(stderr, "ripple run: %v\n", err)
			}
			fmt.Fprintln(stdout, "ripple run: watching for changes (Ctrl-C to stop)")
		},
		Skipped: func(changed []string) {
			fmt.Fprintf(stdout, "ripple run: %s changed: no test depends on it\n", strings.Join(changed, ", "))
		},
		Fallback: func(changed []string, why string) {
			fmt.Fprintf(stdout, "ripple run: %s changed: re-running the test modules that import it (%s)\n", strings.Join(changed, ", "), why)
		},
	}
	if err := batch.Watch(ctx, opts, hooks); err != nil {
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		return 2
	}
	return 0
}

func reportCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "merge" {
		fmt.Fprint(stderr, reportUsage)
		return 2
	}
	if len(args) < 3 {
		fmt.Fprintf(stderr, "ripple report merge: want OUT and at least one IN\n%s", reportUsage)
		return 2
	}
	out, ins := args[1], args[2:]
	var err error
	switch strings.ToLower(filepath.Ext(out)) {
	case ".xml":
		err = batch.MergeJUnit(out, ins)
	case ".json":
		err = batch.MergeJSON(out, ins)
	default:
		fmt.Fprintf(stderr, "ripple report merge: %s: want a .xml (JUnit) or .json output file\n", out)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple report merge: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "ripple report merge: wrote %s from %d reports\n", out, len(ins))
	return 0
}
