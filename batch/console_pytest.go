package batch

import (
	"fmt"
	"strings"
	"time"
)

// PytestObserver is an Observer that is also told, before Started, what
// pytest's terminal reporter wrote in the first kernel up to the end of
// collection (its header and "collected N items / M deselected" line, as
// -q and -v shape them) and pytest's verbosity (-v: 1, -q: -1).
type PytestObserver interface {
	PytestStarted(header string, verbosity int)
}

// PytestStarted implements PytestObserver: the console prints pytest's
// header, and with -q (verbosity < 0) shows the tests as pytest -q does,
// a character each, 80 columns to a line with the percentage done.
func (c *Console) PytestStarted(header string, verbosity int) {
	c.pytest = true
	c.quiet = verbosity < 0
	if header != "" {
		fmt.Fprint(c.w, header)
		if !strings.HasSuffix(header, "\n\n") && verbosity >= 0 {
			fmt.Fprintln(c.w)
		}
	}
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
