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
	"strconv"
	"strings"
	"time"

	"github.com/ripple-run/ripple/batch"
)

const runUsage = `usage: ripple run [PROJECT_DIR] [flags]

Runs the project's entries headless on a pool of kernels and reports for CI.
Entries: the --entry list; with --tests, the tests pytest would find
(test_*.py / *_test.py: test* functions, Test* classes' test* methods);
with neither, main:main.

Exit status: 0 all passed, 1 an entry failed, crashed or timed out,
2 usage or project error, 130 interrupted (Ctrl-C).

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
	tests := fs.Bool("tests", false, "run the tests pytest would find")
	kernels := fs.Int("kernels", 0, "number of kernels, entries running at once (default: the number of CPUs)")
	fs.Var(&timeout, "timeout", "time limit of each entry, e.g. 30s (default: none)")
	junit := fs.String("junit", "", "write a JUnit XML report to `FILE`")
	jsonOut := fs.String("json", "", "write a JSON report to `FILE`")
	failFast := fs.Bool("fail-fast", false, "stop at the first failing entry")
	showValues := fs.Bool("show-values", false, "print every statement's value")
	shardFlag := fs.String("shard", "", "run shard `K/N` of the entries (CI matrix)")
	python := fs.String("python", "", "Python interpreter (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	logLevel := fs.String("log-level", "warn", "log `level` on stderr: debug (the run's phases and timings), info, warn or error")

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
	if len(positional) > 1 {
		return fail(fmt.Errorf("want at most one project directory, got %q", positional))
	}
	dir := "."
	if len(positional) == 1 {
		dir = positional[0]
	}
	if fi, err := os.Stat(dir); err != nil {
		return fail(fmt.Errorf("project directory: %w", err))
	} else if !fi.IsDir() {
		return fail(fmt.Errorf("project directory %s: not a directory", dir))
	}
	opts := batch.Options{Root: dir, Python: *python, Entries: entries, Tests: *tests, Kernels: *kernels,
		Timeout: timeout.d, FailFast: *failFast, ShowValues: *showValues}
	if *kernels < 0 {
		return fail(fmt.Errorf("--kernels %d: want a positive number", *kernels))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fail(fmt.Errorf("--log-level %q: want debug, info, warn or error", *logLevel))
	}
	opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
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
	console := batch.NewConsole(stdout, batch.ConsoleOptions{ProgressBar: bar, ShowValues: *showValues})
	opts.Observer = console
	rep, err := batch.Run(ctx, opts)
	if rep == nil {
		if errors.Is(err, batch.ErrInterrupted) {
			fmt.Fprintf(stderr, "ripple run: %v\n", err)
			return 130
		}
		return fail(err)
	}
	console.Finish(rep)
	code := 0
	switch {
	case errors.Is(err, batch.ErrInterrupted):
		code = 130
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
