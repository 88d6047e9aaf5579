package batch

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// PytestObserver is an Observer that is also told, before Started, how
// pytest's session started (PytestStart).
type PytestObserver interface {
	PytestStarted(start PytestStart)
}

// PytestStart is what pytest's terminal reporter wrote in the first kernel
// up to the end of collection (its header and "collected N items / M
// deselected" line, as -q and -v shape them), pytest's verbosity (-v: 1,
// -q: -1) and what the console needs to lay the run out as pytest would.
type PytestStart struct {
	Header     string
	Verbosity  int
	Deselected int
	// settings: the terminal reporter's (nil: the kernel could not say);
	// warnings: those recorded while pytest configured and collected.
	settings *pytestConsoleSettings
	warnings []pytestWarning
}

// pytestStart is how the first kernel's session started.
func (a *collectAnswer) pytestStart() PytestStart {
	return PytestStart{Header: a.Header, Verbosity: a.Verbosity, Deselected: a.Deselected,
		settings: a.ConsoleSettings, warnings: a.Warnings}
}

// PytestStarted implements PytestObserver: the console prints pytest's
// header and from then on lays the run out as pytest's terminal reporter
// does (console_layout.go); without the reporter's settings, with -q
// (verbosity < 0) it shows the tests as pytest -q does, a character
// each, 80 columns to a line with the percentage done.
func (c *Console) PytestStarted(start PytestStart) {
	c.pytest = true
	c.quiet = start.Verbosity < 0
	if start.settings != nil {
		c.layout = newPytestLayout(*start.settings, start.Verbosity, start.Deselected, start.warnings)
		c.bar = false // pytest's progress is the progress
		io.WriteString(c.w, start.Header)
		return
	}
	if start.Header != "" {
		fmt.Fprint(c.w, start.Header)
		if !strings.HasSuffix(start.Header, "\n\n") && start.Verbosity >= 0 {
			fmt.Fprintln(c.w)
		}
	}
}

// layoutResult lays a result out as pytest's reporter would (a result
// ripple made, with no report of pytest's, as one of its own kind).
func (c *Console) layoutResult(r *Result) {
	collectReport := r.Entry.NodeID != "" && r.Entry.Scope == ""
	if c.layout.collected == 0 {
		c.layout.collected = c.total - c.collectReports
	}
	d := r.pytest
	if d == nil {
		switch {
		case r.Status == StatusInterrupted:
			// A KeyboardInterrupt (Ctrl-C, or the test's own) ended the
			// test without a report: pytest's reporter wrote its location
			// when it started, then nothing (the summary says where it
			// landed).
			c.layout.started(r.Entry.NodeID+" ", r.Entry.Path)
			io.WriteString(c.w, c.layout.take())
			return
		case r.Status == StatusSkipped && strings.HasPrefix(r.Message, notRunPrefix):
			return // a stop left it unrun: pytest never started it
		}
		d = rippleDigest(r, c.layout)
	}
	if r.passErr != "" && c.errW != nil {
		// On pytest's stderr as the test wrote it: what this console
		// holds for stdout goes first.
		io.WriteString(c.w, c.layout.take())
		c.Flush()
		io.WriteString(c.errW, r.passErr)
	}
	c.layout.result(r.Entry.NodeID, d, collectReport, r.passOut, r.passMarks)
	io.WriteString(c.w, c.layout.take())
}

// rippleDigest is a result without pytest's reports (a crash, a timeout,
// a test not run for a reason other than a stop) as the reporter would
// show one: a word of its own (CRASHED, TIMEOUT), listed in the short
// summary whatever -r says; a test not run is a skip.
func rippleDigest(r *Result, l *pytestLayout) *pytestDigest {
	loc := r.Entry.NodeID + " "
	d := &pytestDigest{FSPath: r.Entry.Path, Loc: loc}
	cat, letter, word, color := "crashed", "E", "CRASHED", "red"
	switch r.Status {
	case StatusTimeout:
		cat, word = "timed out", "TIMEOUT"
	case StatusSkipped:
		word := l.markup("SKIPPED", "yellow")
		d.Reports = []pytestRepDigest{{When: "setup", Cat: "skipped", Letter: "s", Word: "SKIPPED", Markup: []string{"yellow"},
			Reason: r.Message, Short: &word, Skip: []any{r.Entry.Path, nil, r.Message}}}
		return d
	}
	short := l.markup(word, color) + " " + r.Entry.NodeID
	if r.Message != "" {
		short += " - " + r.Message
	}
	var sec strings.Builder
	sec.WriteString(frame(word+" "+r.Entry.NodeID, '_') + "\n")
	if r.Message != "" {
		sec.WriteString(r.Message + "\n")
	}
	if r.Output != "" {
		sec.WriteString(strings.TrimSuffix(r.Output, "\n") + "\n")
	}
	d.Reports = []pytestRepDigest{{When: "call", Cat: cat, Letter: letter, Word: word, Markup: []string{color},
		Short: &short, Section: sec.String()}}
	return d
}

// quietWidth: pytest's terminal width off a terminal; its progress lines
// stop one column short of it.
const quietWidth = 80

// quietResult adds a test to pytest -q's progress line: a character per
// report that pytest shows (a collection report is none; a teardown that
// failed after the call is one more, "E").
func (c *Console) quietResult(r *Result) {
	if r.Entry.NodeID != "" && r.Entry.Scope == "" {
		c.quietSkipped++ // a collection report: pytest lists it apart
		return
	}
	switch {
	case r.TeardownError != "":
		c.quietLine.WriteString(string(quietChar(r.Status)) + "E")
	case r.Status == StatusError && r.callPassed():
		c.quietLine.WriteString(".E")
	default:
		c.quietLine.WriteByte(quietChar(r.Status))
	}
	if c.quietLine.Len() >= quietWidth-len(" [100%]")-1 || c.printed == c.total {
		c.endQuietLine()
	}
}

func (c *Console) endQuietLine() {
	if c.quietLine.Len() == 0 {
		return
	}
	pct := 100
	if n := c.total - c.quietSkipped; n > 0 {
		pct = (c.printed - c.quietSkipped) * 100 / n
	}
	fmt.Fprintf(c.w, "%-*s [%3d%%]\n", quietWidth-len(" [100%]")-1, c.quietLine.String(), pct)
	c.quietLine.Reset()
}

// quietChar is pytest's progress character for a status.
func quietChar(s Status) byte {
	switch s {
	case StatusPassed:
		return '.'
	case StatusFailed:
		return 'F'
	case StatusError, StatusCrashed, StatusTimeout:
		return 'E'
	case StatusSkipped:
		return 's'
	case StatusXFailed:
		return 'x'
	case StatusXPassed:
		return 'X'
	}
	return '!'
}

// PytestSummaryLine is pytest's last line for the report: "2 failed, 5
// passed, 1 deselected, 1 error in 0.42s", its counts in pytest's order
// (failed, passed, skipped, deselected, xfailed, xpassed, errors), then
// what only ripple has (crashed, timed out, interrupted); framed with "="
// to 80 columns unless -q.
func PytestSummaryLine(rep *Report) string {
	s := rep.Summary()
	var parts []string
	for _, c := range []struct {
		n    int
		word string
	}{{s.Failed, "failed"}, {s.Passed, "passed"}, {s.Skipped, "skipped"}, {rep.Deselected, "deselected"},
		{s.XFailed, "xfailed"}, {s.XPassed, "xpassed"}, {s.Errors, plural(s.Errors, "error", "errors")},
		{s.Crashed, "crashed"}, {s.Timeouts, "timed out"}, {s.Interrupted, "interrupted"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	line := strings.Join(parts, ", ")
	if line == "" {
		line = "no tests ran"
	}
	line += " in " + pytestDuration(rep.Duration)
	if rep.Verbosity < 0 {
		return line
	}
	return frame(line, '=')
}

// pytestDuration is pytest's format_session_duration.
func pytestDuration(d time.Duration) string {
	secs := d.Seconds()
	if secs < 60 {
		return fmt.Sprintf("%.2fs", secs)
	}
	t := d.Round(time.Second)
	return fmt.Sprintf("%.2fs (%d:%02d:%02d)", secs, int(t.Hours()), int(t.Minutes())%60, int(t.Seconds())%60)
}

// frame centres " text " in a line of 80 fill characters, as pytest's
// TerminalWriter.sep does.
func frame(text string, fill byte) string {
	text = " " + text + " "
	n := (quietWidth - len(text)) / 2
	if n < 1 {
		return text
	}
	line := strings.Repeat(string(fill), n) + text + strings.Repeat(string(fill), n)
	if len(line) < quietWidth {
		line += string(fill)
	}
	return line
}

// pytestStopLine is pytest's words for why it stopped the session, from
// a test run's reason (ErrStopped): "" for any other.
func pytestStopLine(reason error) string {
	if !errors.Is(reason, ErrStopped) {
		return ""
	}
	msg := strings.TrimPrefix(reason.Error(), ErrStopped.Error()+": ")
	return strings.TrimPrefix(msg, ErrStoppedInterrupted.Error()+": ")
}

// pytestStop is the line pytest writes when it stopped the session
// (KeyboardInterrupt: Ctrl-C, or a test's own).
func pytestStop(rep *Report) string {
	if rep.Interrupted {
		return "KeyboardInterrupt"
	}
	return rep.pytestStopped
}
