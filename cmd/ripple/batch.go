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

	"github.com/ripple-run/ripple/agent"
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
timed out), 2 usage error of ripple's flags, collection errors or
interrupted, 4 usage error pytest reports (an unknown option, a bad -k or -m
expression, a missing path), 5 no tests collected. Without --tests, Ctrl-C exits with 130.

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

// runCommand runs `ripple run`. The phases, in order: the command line;
// the run's options (the project directory, the test selection, the
// checks of the flags); the agents' coordinator (--agents-listen,
// --launcher); the shard and the report files; then the run, or the
// watch with --watch; and the exit status and the reports of what ran.
// A usage error of ripple's flags exits 2; one pytest reports, 4 (as
// pytest).
func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return exitWith("run", stderr, err)
	}
	opts, err := f.options(stderr)
	if err != nil {
		return exitWith("run", stderr, err)
	}
	coord, err := f.openAgents(&opts, stderr)
	if coord != nil {
		defer coord.Close()
	}
	if err != nil {
		return exitWith("run", stderr, err)
	}
	if err := f.checkOutputs(&opts); err != nil {
		return exitWith("run", stderr, err)
	}
	bar := false
	if fh, ok := stdout.(*os.File); ok {
		bar = batch.Interactive(fh)
		opts.Terminal, opts.Columns = batch.Terminal(fh)
	}
	console := batch.NewConsole(stdout, batch.ConsoleOptions{ProgressBar: bar, Color: bar, ShowValues: f.showValues, Err: stderr})
	if f.watch {
		return watchTests(ctx, opts, stdout, stderr, bar, f.showValues)
	}
	opts.Observer = console
	rep, err := batch.Run(ctx, opts)
	if code, ok := pytestUsage(err, console, stdout, stderr); ok {
		return code
	}
	return f.finish(rep, err, console, stderr)
}

// runFlags is ripple run's parsed command line.
type runFlags struct {
	entries         entryList
	timeout         timeoutFlag
	tests, watch    bool
	keyword         string // -k
	markExpr        string // -m
	kernels         int
	junit, jsonOut  string
	failFast        bool
	splitCollection bool
	dist            string
	showValues      bool
	shard           string
	python          string
	logLevel        string
	launcher        *launcherFlags
	localKernels    int
	positional      []string // the project directory and the test selection
	passThrough     []string // after "--": pytest's own arguments
}

// parseRunFlags parses ripple run's command line: flags before and after
// the positional arguments, and what follows "--" for pytest as it is.
func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	f := &runFlags{}
	fs.Var(&f.entries, "entry", "an entry to run, module:function or module:Class.method (repeatable)")
	fs.BoolVar(&f.tests, "tests", false, "run the project's tests with pytest in the kernels")
	fs.BoolVar(&f.watch, "watch", false, "with --tests: keep the kernels warm and, on each save, re-run the tests of the modules that import what changed")
	fs.StringVar(&f.keyword, "k", "", "with --tests: pytest's -k `EXPR` (select tests by name)")
	fs.StringVar(&f.markExpr, "m", "", "with --tests: pytest's -m `MARKEXPR` (select tests by mark)")
	fs.IntVar(&f.kernels, "kernels", 0, "number of kernels, entries running at once (default: the number of CPUs)")
	fs.Var(&f.timeout, "timeout", "time limit of each entry, e.g. 30s (default: none)")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to `FILE`")
	fs.StringVar(&f.jsonOut, "json", "", "write a JSON report to `FILE`")
	fs.BoolVar(&f.failFast, "fail-fast", false, "stop at the first failing entry")
	fs.BoolVar(&f.splitCollection, "split-collection", false, "with --tests and several kernels: each kernel imports only the test modules it runs (faster on heavy suites; a module's import side effects then reach only its kernel's tests)")
	fs.StringVar(&f.dist, "dist", batch.DistLoadFile, "with --tests and several kernels, how tests are grouped over the kernels (pytest-xdist's names): `loadfile` (a module's tests on one kernel, its fixtures set up once, as under pytest), loadscope (a class's tests on one kernel: a module's classes may run on different kernels, each setting up its module fixtures) or load (xdist's default: consecutive chunks of tests to whichever kernel is free, a module's tests on several kernels)")
	fs.BoolVar(&f.showValues, "show-values", false, "print every statement's value")
	fs.StringVar(&f.shard, "shard", "", "run shard `K/N` of the entries (CI matrix)")
	fs.StringVar(&f.python, "python", "", "Python interpreter (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log `level` on stderr: debug (the run's phases and timings), info, warn or error")
	f.launcher = addLauncherFlags(fs)
	fs.IntVar(&f.localKernels, "local-kernels", 0, "with --agents-listen or --launcher slurm: local kernels beside the agents' kernels")

	if i := slices.Index(args, "--"); i >= 0 {
		args, f.passThrough = args[:i], slices.Clone(args[i+1:])
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, errFlags
		}
		if fs.NArg() == 0 {
			return f, nil
		}
		f.positional = append(f.positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// options checks the flags against each other and the project directory,
// and returns the run's options without the agents, the shard and the
// observer.
func (f *runFlags) options(stderr io.Writer) (batch.Options, error) {
	dir, pytestArgs, err := f.selection()
	if err != nil {
		return batch.Options{}, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return batch.Options{}, usageError("project directory: %v", err)
	} else if !fi.IsDir() {
		return batch.Options{}, usageError("project directory %s: not a directory", dir)
	}
	opts := batch.Options{Root: dir, Python: f.python, Entries: f.entries, Tests: f.tests, Kernels: f.kernels,
		Timeout: f.timeout.d, FailFast: f.failFast, ShowValues: f.showValues, PytestArgs: pytestArgs,
		SplitCollection: f.splitCollection, Dist: f.dist}
	if f.kernels < 0 {
		return batch.Options{}, usageError("--kernels %d: want a positive number", f.kernels)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return batch.Options{}, usageError("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	return opts, nil
}

// selection returns the project directory and pytest's arguments. The
// first positional argument is the project directory when it is one;
// with --tests the others (and a first that is a file or a node id)
// select tests, as -k, -m and the arguments after "--" do.
func (f *runFlags) selection() (dir string, pytestArgs []string, err error) {
	dir, positional := ".", f.positional
	if len(positional) > 0 {
		if fi, err := os.Stat(positional[0]); !f.tests || (err == nil && fi.IsDir()) {
			dir, positional = positional[0], positional[1:]
		}
	}
	if !f.tests && len(positional) > 0 {
		return "", nil, usageError("want at most one project directory, got %q (test selection needs --tests)", append([]string{dir}, positional...))
	}
	if f.watch && !f.tests {
		return "", nil, usageError("--watch re-runs tests: it needs --tests")
	}
	if !f.tests && (f.keyword != "" || f.markExpr != "" || len(f.passThrough) > 0) {
		return "", nil, usageError("-k, -m and -- PYTEST_ARGS select tests: they need --tests")
	}
	pytestArgs = slices.Clone(positional)
	if f.keyword != "" {
		pytestArgs = append(pytestArgs, "-k", f.keyword)
	}
	if f.markExpr != "" {
		pytestArgs = append(pytestArgs, "-m", f.markExpr)
	}
	return dir, append(pytestArgs, f.passThrough...), nil
}

// openAgents opens the agents' coordinator the launcher flags name (nil
// for local kernels) and puts it in opts. With --agents-listen the
// entries run on agents' kernels, and --kernels is how many the run
// waits for (default 1). A coordinator it returns is the caller's to
// close, also with an error.
func (f *runFlags) openAgents(opts *batch.Options, stderr io.Writer) (*agent.Coordinator, error) {
	if f.localKernels < 0 {
		return nil, usageError("--local-kernels %d: want a positive number", f.localKernels)
	}
	// The jobs' agents of a test run (--launcher slurm) import pytest
	// when their kernels start, while the run waits for them.
	var preload []string
	if f.tests {
		preload = []string{"pytest"}
	}
	coord, msg := f.launcher.open(opts.Root, f.python, f.localKernels, true, max(f.kernels, 1), preload, opts.Logger)
	if msg != "" {
		return nil, usageError("%s", msg)
	}
	if coord == nil {
		if f.localKernels > 0 {
			return nil, usageError("--local-kernels counts local kernels beside the agents': it needs --agents-listen (without it, --kernels counts the kernels)")
		}
		return nil, nil
	}
	if f.watch {
		return coord, usageError("--watch over agents (--agents-listen) is not built; watch with local kernels")
	}
	opts.Agents, opts.LocalKernels = coord, f.localKernels
	printAgentsAddr(stderr, coord)
	return coord, nil
}

// checkOutputs parses --shard into opts and checks that the report files
// can be written before anything runs.
func (f *runFlags) checkOutputs(opts *batch.Options) error {
	if f.shard != "" {
		shard, err := batch.ParseShard(f.shard)
		if err != nil {
			return usageError("%v", err)
		}
		opts.Shard = shard
	}
	for _, p := range []struct{ flag, path string }{{"--junit", f.junit}, {"--json", f.jsonOut}} {
		if p.path != "" {
			if err := batch.CheckReportPath(p.flag, p.path); err != nil {
				return usageError("%v", err)
			}
		}
	}
	return nil
}

// exitPytestUsage is pytest's exit status for a usage error;
// exitPytestInternal for its internal error.
const (
	exitPytestUsage    = 4
	exitPytestInternal = 3
)

// pytestUsage reports a usage error pytest found in its arguments (an
// unknown option, a bad -k expression, a missing path) as pytest does:
// what its terminal reporter wrote on stdout, "ERROR: message" on
// stderr, exit status 4; and pytest's internal error: its terminal
// reporter's lines, exit status 3. ok is false for any other err.
func pytestUsage(err error, console *batch.Console, stdout, stderr io.Writer) (code int, ok bool) {
	var pu *batch.PytestUsageError
	var pi *batch.PytestInternalError
	if errors.As(err, &pi) {
		// pytest's internal error: its INTERNALERROR> lines went to stdout.
		if console != nil {
			console.Flush()
		}
		io.WriteString(stdout, pi.Console)
		return exitPytestInternal, true
	}
	if !errors.As(err, &pu) {
		return 0, false
	}
	if console != nil {
		console.Flush()
	}
	io.WriteString(stdout, pu.Console)
	msg := pu.Message
	if pu.Runner != "pytest" {
		msg = pu.Runner + ": " + msg
	}
	fmt.Fprintf(stderr, "ERROR: %s\n\n", msg)
	return exitPytestUsage, true
}

// finish shows the run's end on the console, writes the reports and
// returns the exit status (pytest's with --tests): 0 all passed, 1 a
// failure, 2 an error or (with --tests) an interrupt, 5 no tests, 130
// after Ctrl-C without --tests.
func (f *runFlags) finish(rep *batch.Report, err error, console *batch.Console, stderr io.Writer) int {
	interrupted := 130 // Ctrl-C; pytest's status for it with --tests
	if f.tests {
		interrupted = 2
	}
	if rep == nil {
		console.Flush()
		if errors.Is(err, batch.ErrInterrupted) {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			return interrupted
		}
		return exitWith("run", stderr, usageError("%v", err))
	}
	console.Finish(rep)
	code := 0
	switch {
	case errors.Is(err, batch.ErrInterrupted):
		code = interrupted
	case errors.Is(err, batch.ErrNoTests):
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		code = 5
	case errors.Is(err, batch.ErrStoppedInterrupted):
		code = 2 // pytest's status when --sw stops its session
	case errors.Is(err, batch.ErrStopped):
		code = 1
	case err != nil:
		fmt.Fprintf(stderr, "ripple run: %v\n", err)
		code = 2
	case rep.Summary().Failing() > 0:
		code = 1
	}
	if f.junit != "" {
		if err := batch.WriteJUnit(f.junit, rep); err != nil {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			code = max(code, 2)
		}
	}
	if f.jsonOut != "" {
		if err := batch.WriteJSON(f.jsonOut, rep); err != nil {
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
			console = batch.NewConsole(stdout, batch.ConsoleOptions{ProgressBar: bar, Color: bar, ShowValues: showValues, Err: stderr})
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
		if code, ok := pytestUsage(err, console, stdout, stderr); ok {
			return code
		}
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
