package batch

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Console prints a run for a person at a terminal or for a CI log. It is
// an Observer: one line per entry, in report order, as soon as the entries
// before it have ended ("[  3/12] FAIL  test_math.py:11  test_math:test_add_wrong
// (0.002s): AssertionError"); with ShowValues, each statement's value under
// its entry. On a terminal a progress bar (entries done / total, failing so
// far, elapsed) stays below the lines. Finish prints every failure with its
// location, traceback and captured output, then the summary.
//
// Its methods are called from one goroutine (Run's), so it has no lock.
//
// Its lines go through a buffer, written out after each line on a
// terminal and otherwise at most barRefresh apart while lines come, at
// each Progress tick (so a line waits at most progressInterval when
// nothing else happens) and at Finish and Flush: a CI log of thousands
// of tests costs a write per tenth of a second, not several per test.
type Console struct {
	w          *bufio.Writer
	errW       io.Writer // ConsoleOptions.Err
	lastFlush  time.Time
	bar        bool
	showValues bool
	color      bool

	total    int
	printed  int
	barShown bool
	lastBar  time.Time
	progress Progress

	// pytest: the run is pytest's (PytestStarted); quiet: its -q, the
	// tests shown as pytest -q does, quietLine the progress line so far.
	pytest, quiet bool
	quietLine     strings.Builder
	quietSkipped  int // collection reports, which -q's progress leaves out
	// layout: the run laid out as pytest's terminal reporter does (set by
	// PytestStarted when the kernel gave its settings); collectReports:
	// the collection reports among the entries (Started).
	layout         *pytestLayout
	collectReports int
}

// ConsoleOptions configure a Console.
type ConsoleOptions struct {
	// ProgressBar draws a progress bar below the lines (a terminal).
	ProgressBar bool
	// ShowValues prints each statement's value preview.
	ShowValues bool
	// Color paints the status words as pytest does (a terminal only).
	Color bool
	// Err receives what tests wrote to stderr past pytest's capture
	// (-s), as pytest's process writes it to its stderr; nil: dropped
	// from the console (the report keeps it).
	Err io.Writer
}

// NewConsole returns a Console writing to w.
func NewConsole(w io.Writer, opts ConsoleOptions) *Console {
	return &Console{w: bufio.NewWriterSize(w, 64<<10), bar: opts.ProgressBar, showValues: opts.ShowValues, color: opts.Color, errW: opts.Err}
}

// Flush writes out what the console holds. Finish does; whoever writes
// to the same destination in between, or ends without Finish, calls it
// first.
func (c *Console) Flush() {
	c.w.Flush()
	c.lastFlush = time.Now()
}

// Interactive reports whether a progress bar suits f: it is a terminal
// and the environment is not a CI system (CI set to anything but "" or
// "false") nor a dumb terminal.
func Interactive(f *os.File) bool {
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		return false
	}
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// barRefresh throttles redraws of the progress bar.
const barRefresh = 100 * time.Millisecond

// Started implements Observer.
func (c *Console) Started(entries []Entry, kernels int) {
	c.total = len(entries)
	for _, en := range entries {
		if en.NodeID != "" && en.Scope == "" {
			c.collectReports++
		}
	}
	what := plural(len(entries), "entry", "entries")
	if len(entries) > 0 && entries[len(entries)-1].NodeID != "" {
		what = plural(len(entries), "test", "tests")
	}
	fmt.Fprintf(c.w, "ripple run: %d %s on %d %s\n", len(entries), what, kernels, plural(kernels, "kernel", "kernels"))
	c.Flush()
}

// Result implements Observer.
func (c *Console) Result(r *Result) {
	c.clearBar()
	c.printed++
	if c.layout != nil {
		c.layoutResult(r)
		if time.Since(c.lastFlush) >= barRefresh {
			c.Flush()
		}
		return
	}
	if c.quiet {
		c.quietResult(r)
		c.drawBar()
		return
	}
	width := len(fmt.Sprint(c.total))
	word := fmt.Sprintf("%-8s", statusWord(r.Status))
	if c.color {
		word = paint(r.Status, word)
	}
	if r.Entry.NodeID != "" {
		// The node id says where the test is.
		fmt.Fprintf(c.w, "[%*d/%d] %s %s", width, c.printed, c.total, word, r.Entry.NodeID)
	} else {
		fmt.Fprintf(c.w, "[%*d/%d] %s %s  %s", width, c.printed, c.total, word, r.Entry.Location(), r.Entry.ID())
	}
	if r.Status != StatusSkipped && !(r.Entry.NodeID != "" && r.Entry.Scope == "") {
		fmt.Fprintf(c.w, " (%s)", seconds(r.Duration))
	}
	if r.Message != "" {
		fmt.Fprintf(c.w, ": %s", firstLine(r.Message))
	}
	fmt.Fprintln(c.w)
	if c.showValues {
		writeValues(c.w, "    ", r.Values)
	}
	c.drawBar()
	if c.bar || time.Since(c.lastFlush) >= barRefresh {
		c.Flush()
	}
}

// Progress implements Observer.
func (c *Console) Progress(p Progress) {
	c.progress = p
	if c.bar && time.Since(c.lastBar) >= barRefresh {
		c.clearBar()
		c.drawBar()
	}
	c.Flush()
}

func (c *Console) drawBar() {
	if !c.bar {
		return
	}
	p := c.progress
	const cells = 30
	filled := 0
	if p.Total > 0 {
		filled = cells * p.Done / p.Total
	}
	fmt.Fprintf(c.w, "[%s%s] %d/%d", strings.Repeat("#", filled), strings.Repeat(".", cells-filled), p.Done, p.Total)
	if p.Failing > 0 {
		fmt.Fprintf(c.w, "  %d failing", p.Failing)
	}
	fmt.Fprintf(c.w, "  %s", p.Elapsed.Round(100*time.Millisecond))
	c.barShown = true
	c.lastBar = time.Now()
}

// clearBar erases the bar so a line can be printed in its place.
func (c *Console) clearBar() {
	if c.barShown {
		io.WriteString(c.w, "\r\x1b[K")
		c.barShown = false
	}
}

// Finish prints the failures and the summary of a finished run.
func (c *Console) Finish(rep *Report) {
	if rep.PytestConsole != "" {
		c.clearBar()
		io.WriteString(c.w, rep.PytestConsole)
		c.Flush()
		return
	}
	c.clearBar()
	if c.layout != nil {
		c.layout.finish(rep, pytestStop(rep), cmp.Or(strings.TrimSuffix(rep.interruptText, "\n"), rep.interruptedBy), SummaryLine(rep))
		io.WriteString(c.w, c.layout.take())
		c.Flush()
		return
	}
	c.endQuietLine()
	first := true
	for _, r := range rep.Results {
		if !r.Status.Failing() {
			continue
		}
		if first {
			fmt.Fprintln(c.w, "\nfailures:")
			first = false
		}
		if r.Entry.NodeID != "" {
			// pytest's own report of it: traceback, assertion message
			// with its values, captured output.
			fmt.Fprintf(c.w, "\n___ %s %s ___\n", statusWord(r.Status), r.Entry.NodeID)
			writeDetails(c.w, "", r, c.showValues)
			continue
		}
		fmt.Fprintf(c.w, "\n--- %s %s (%s)\n", statusWord(r.Status), r.Entry.ID(), r.Entry.Location())
		writeDetails(c.w, "    ", r, c.showValues)
	}
	fmt.Fprintln(c.w)
	fmt.Fprintln(c.w, SummaryLine(rep))
	if c.pytest {
		fmt.Fprintln(c.w, PytestSummaryLine(rep)) // the last line, in pytest's words
	}
	c.Flush()
}

// SummaryLine is the one-line outcome of a run: "ripple run: 12 entries
// in 4.5s on 2 kernels: 5 passed, 4 failed, 1 crashed, 2 skipped".
func SummaryLine(rep *Report) string {
	s := rep.Summary()
	parts := []string{}
	for _, c := range []struct {
		n    int
		word string
	}{{s.Passed, "passed"}, {s.Failed, "failed"}, {s.Errors, plural(s.Errors, "error", "errors")}, {s.Crashed, "crashed"},
		{s.Timeouts, "timed out"}, {s.Skipped, "skipped"}, {s.Interrupted, "interrupted"},
		{s.XFailed, "xfailed"}, {s.XPassed, "xpassed"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing ran")
	}
	what := plural(s.Total, "entry", "entries")
	if n := len(rep.Results); n > 0 && rep.Results[n-1].Entry.NodeID != "" {
		what = plural(s.Total, "test", "tests")
	}
	line := fmt.Sprintf("ripple run: %d %s in %s on %d %s", s.Total, what,
		rep.Duration.Round(10*time.Millisecond), rep.Kernels, plural(rep.Kernels, "kernel", "kernels"))
	if !rep.Shard.All() {
		line += " (shard " + rep.Shard.String() + ")"
	}
	line += ": " + strings.Join(parts, ", ")
	switch {
	case rep.Interrupted:
		line += " (interrupted)"
	case rep.pytestStopped != "":
		line += " (pytest: " + strings.ReplaceAll(rep.pytestStopped, "\n", "; ") + ")"
	case rep.StoppedEarly:
		line += " (stopped at the first failure: --fail-fast)"
	}
	return line
}

// writeDetails writes why a result did not pass: each raising statement
// with its source, message and traceback, the diagnostic of a run that
// failed as a whole, the values (with values) and the captured output.
// Every line starts with indent. JUnit failure texts use it too.
func writeDetails(w io.Writer, indent string, r *Result, values bool) {
	for _, f := range r.Failures {
		fmt.Fprintf(w, "%s%s:%d  %s  (%s)\n", indent, f.Path, f.Line, firstLine(f.Source), f.ExpressionID)
		writeIndented(w, indent, f.Message)
		if len(f.Traceback) > 0 {
			fmt.Fprintf(w, "%straceback (most recent call last):\n", indent)
			for _, fr := range f.Traceback {
				fmt.Fprintf(w, "%s  %s in %s\n", indent, frameLocation(fr), fr.Function)
			}
		}
	}
	if r.Longrepr != "" {
		writeIndented(w, indent, r.Longrepr)
	} else if len(r.Failures) == 0 && r.Message != "" {
		writeIndented(w, indent, r.Message)
	}
	if d := r.Diagnostic; d != nil {
		if d.Path != "" && d.Location != nil {
			fmt.Fprintf(w, "%sat %s:%d:%d: %s\n", indent, d.Path, d.Location.Start.Line+1, d.Location.Start.Character+1, firstLine(d.Message))
		}
		for _, el := range d.Stack {
			fmt.Fprintf(w, "%s  %s in %s\n", indent, frameLocation(Frame{Path: el.Path, Line: line(el.Location)}), el.FunctionName)
		}
	}
	if values && len(r.Values) > 0 {
		fmt.Fprintf(w, "%svalues:\n", indent)
		writeValues(w, indent+"  ", r.Values)
	}
	if r.Output != "" {
		fmt.Fprintf(w, "%soutput:\n", indent)
		for _, l := range strings.Split(strings.TrimSuffix(r.Output, "\n"), "\n") {
			fmt.Fprintf(w, "%s| %s\n", indent, l)
		}
	}
}

// writeValues writes one line per statement: its line, source and value
// ("=>"), exception ("!!") or state ("..").
func writeValues(w io.Writer, indent string, vs []Value) {
	for _, v := range vs {
		mark := "=>"
		switch v.Kind {
		case "Panic":
			mark = "!!"
		case "Pending":
			mark = ".."
		}
		src := firstLine(v.Source)
		if src == "" {
			src = string(v.ExpressionID)
		}
		fmt.Fprintf(w, "%s%4d  %-40s %s %s\n", indent, v.Line, cut(src, 40), mark, firstLine(v.Text))
	}
}

func writeIndented(w io.Writer, indent, text string) {
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

func frameLocation(f Frame) string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Path, f.Line)
	}
	return f.Path
}

func statusWord(s Status) string {
	switch s {
	case StatusPassed:
		return "PASSED"
	case StatusFailed:
		return "FAILED"
	case StatusError:
		return "ERROR"
	case StatusCrashed:
		return "CRASHED"
	case StatusTimeout:
		return "TIMEOUT"
	case StatusSkipped:
		return "SKIPPED"
	case StatusInterrupted:
		return "STOPPED"
	case StatusXFailed:
		return "XFAIL"
	case StatusXPassed:
		return "XPASS"
	}
	return strings.ToUpper(string(s))
}

// paint colours a status word as pytest's terminal does: green passed,
// red failures, yellow skips and expected failures.
func paint(s Status, word string) string {
	code := "33" // yellow
	switch {
	case s == StatusPassed:
		code = "32"
	case s.Failing():
		code = "31"
	}
	return "\x1b[" + code + "m" + word + "\x1b[0m"
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// cut shortens s to n code points, marking the cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Terminal reports whether f is a terminal and, if so, its width as
// pytest takes it (shutil.get_terminal_size: COLUMNS first; below 40
// columns, 80).
func Terminal(f *os.File) (tty bool, columns int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return false, 0
	}
	columns = int(ws.Col)
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		columns = n
	}
	if columns < 40 {
		columns = 80
	}
	return true, columns
}
