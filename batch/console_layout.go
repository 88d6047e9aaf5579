package batch

// pytestLayout: the console of a pytest run laid out as pytest's terminal
// reporter (_pytest/terminal.py) lays out a serial session: the progress
// (a line per test file with a letter per report at default verbosity, a
// line per report with -v, letters alone with -q, the percentage at the
// right edge), then at the end ERRORS, FAILURES, the warnings summary,
// PASSES (-rP), --durations, the short test summary (-r) and the last
// line, each in pytest's words and, on a terminal, its colours. The
// kernels render what is specific to a report with pytest's own code
// (kernel/python/ripple_kernel/pytest_console.py): its letter and word,
// its section, its short-summary line; the layout, which needs the whole
// run, is here.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// pytestDigest is a test (or a collection report) as pytest's terminal
// reporter sees it: its file as the progress shows it, its -v location,
// its reports, the warnings recorded while it ran.
type pytestDigest struct {
	FSPath   string            `json:"fspath"`
	Loc      string            `json:"loc"`
	Reports  []pytestRepDigest `json:"reports"`
	Warnings []pytestWarning   `json:"warnings"`
}

// pytestRepDigest is one report (setup, call, teardown or collect).
type pytestRepDigest struct {
	When string `json:"when"`
	// Cat, Letter, Word and Markup: pytest_report_teststatus's answer
	// (the stats category, the progress letter, the -v word) and the
	// markup of letter and word (escape names in order).
	Cat      string   `json:"cat"`
	Letter   string   `json:"letter"`
	Word     string   `json:"word"`
	Markup   []string `json:"markup"`
	Duration *float64 `json:"duration"`
	// Reason: a skip's or xfail's reason (-v shows it).
	Reason string `json:"reason"`
	// Section: the report under ERRORS, FAILURES or PASSES, rendered.
	Section string `json:"section"`
	// Short: its line in the short test summary (a skip: the word the
	// folded line starts with); Skip: pytest's key for folding a skip
	// (path, line or null, reason).
	Short *string `json:"short"`
	Skip  []any   `json:"skip"`
}

// pytestWarning is a warning as the terminal reporter keeps it.
type pytestWarning struct {
	Message  string  `json:"message"`
	Location *string `json:"location"`
}

// pytestConsoleSettings are the terminal reporter's settings.
type pytestConsoleSettings struct {
	ReportChars  string  `json:"reportchars"`
	Durations    *int    `json:"durations"`
	DurationsMin float64 `json:"durationsMin"`
	Width        int     `json:"width"`
	Markup       bool    `json:"markup"`
	Progress     string  `json:"progress"` // "progress", "count" or "" (none)
	NoSummary    bool    `json:"noSummary"`
	TBStyle      string  `json:"tbstyle"`
}

// statRef is a report in the stats: its test's node id and the report.
type statRef struct {
	nodeid string
	rep    *pytestRepDigest
}

// pytestLayout is the console's state while it lays a pytest run out.
// Owned by the Console (one goroutine).
type pytestLayout struct {
	w         *strings.Builder // what is laid out, handed to the console's writer
	s         pytestConsoleSettings
	verbosity int
	collected int // the tests pytest collected and selected (testscollected)
	// cur is the terminal reporter's currentfspath: the file (or -v line
	// prefix) the current line belongs to; curSet: it is not None.
	cur    string
	curSet bool
	col    int // the width of the current line so far
	// reported: the tests whose progress was counted.
	reported map[string]bool
	// stats: per category (in order of first appearance: cats), the
	// reports, as TerminalReporter.stats.
	cats     []string
	stats    map[string][]statRef
	warnings []pytestWarning
	// lastItem: the last test was reported (pytest's _is_last_item).
	lastItem bool
}

func newPytestLayout(s pytestConsoleSettings, verbosity, deselected int, warnings []pytestWarning) *pytestLayout {
	if s.Width <= 0 {
		s.Width = quietWidth
	}
	l := &pytestLayout{w: &strings.Builder{}, s: s, verbosity: verbosity, reported: make(map[string]bool),
		stats: make(map[string][]statRef), warnings: warnings}
	for range deselected {
		l.add("deselected", statRef{})
	}
	// pytest's terminal reporter counts each warning ("18 warnings").
	for range warnings {
		l.add("warnings", statRef{})
	}
	return l
}

// take returns what was laid out since the last take.
func (l *pytestLayout) take() string {
	s := l.w.String()
	l.w.Reset()
	return s
}

func (l *pytestLayout) add(cat string, ref statRef) {
	if _, ok := l.stats[cat]; !ok {
		l.cats = append(l.cats, cat)
	}
	l.stats[cat] = append(l.stats[cat], ref)
}

// ---- the terminal writer

var escapes = map[string]int{"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "purple": 35, "cyan": 36, "white": 37,
	"Black": 40, "Red": 41, "Green": 42, "Yellow": 43, "Blue": 44, "Purple": 45, "Cyan": 46, "White": 47,
	"bold": 1, "light": 2, "blink": 5, "invert": 7}

// markup is TerminalWriter.markup: text in the escapes of names, when
// the console has markup.
func (l *pytestLayout) markup(text string, names ...string) string {
	if !l.s.Markup || text == "" {
		return text
	}
	var b strings.Builder
	for _, n := range names {
		if code, ok := escapes[n]; ok {
			fmt.Fprintf(&b, "\x1b[%dm", code)
		}
	}
	if b.Len() == 0 {
		return text
	}
	return b.String() + text + "\x1b[0m"
}

// write writes text (marked up), keeping the current line's width.
func (l *pytestLayout) write(text string, names ...string) {
	if text == "" {
		return
	}
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		l.col = utf8.RuneCountInString(text[i+1:])
	} else {
		l.col += utf8.RuneCountInString(text)
	}
	l.w.WriteString(l.markup(text, names...))
}

// raw writes text a kernel rendered (with its markup already).
func (l *pytestLayout) raw(text string) {
	if text == "" {
		return
	}
	l.w.WriteString(text)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		l.col = utf8.RuneCountInString(stripEscapes(text[i+1:]))
	} else {
		l.col += utf8.RuneCountInString(stripEscapes(text))
	}
}

func stripEscapes(s string) string {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], 'm')
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+1:]
	}
}

func (l *pytestLayout) line(text string, names ...string) {
	l.write(text, names...)
	l.w.WriteByte('\n')
	l.col = 0
}

// sep is TerminalWriter.sep: title centred in a line of ch, fullwidth
// wide (0: the terminal's width).
func (l *pytestLayout) sep(ch byte, title string, fullwidth int, names ...string) {
	if fullwidth == 0 {
		fullwidth = l.s.Width
	}
	var line string
	if title != "" {
		n := max((fullwidth-len(title)-2)/2, 1)
		fill := strings.Repeat(string(ch), n)
		line = fill + " " + title + " " + fill
	} else {
		line = strings.Repeat(string(ch), fullwidth)
	}
	if len(line)+1 <= fullwidth {
		line += string(ch)
	}
	l.line(line, names...)
}

// ---- the terminal reporter

func (l *pytestLayout) ensureNewline() {
	if l.curSet && l.cur != "" {
		l.line("")
		l.curSet = false
	}
}

func (l *pytestLayout) writeLine(text string, names ...string) {
	l.ensureNewline()
	l.line(text, names...)
}

func (l *pytestLayout) writeSep(ch byte, title string, names ...string) {
	l.ensureNewline()
	l.sep(ch, title, 0, names...)
}

// started is what pytest's reporter writes when a test starts
// (pytest_runtest_logstart): its location under -v, else its file's
// progress line; for a test that ended with no report.
func (l *pytestLayout) started(loc, fspath string) {
	switch {
	case l.verbosity > 0:
		l.writeEnsurePrefix(loc, "")
	case l.verbosity == 0:
		l.writeFSPath(fspath)
	}
}

// writeFSPath starts fspath's progress line unless it is the current one.
func (l *pytestLayout) writeFSPath(fspath string) {
	if l.curSet && l.cur == fspath {
		return
	}
	if l.curSet && l.s.Progress != "" {
		l.progressFill()
	}
	l.cur, l.curSet = fspath, true
	l.line("")
	l.write(fspath + " ")
}

// verboseOther stands for currentfspath -2: a -v line that got its word.
const verboseOther = "\x00"

func (l *pytestLayout) writeEnsurePrefix(prefix, extra string, names ...string) {
	if !l.curSet || l.cur != prefix {
		l.line("")
		l.cur, l.curSet = prefix, true
		l.write(prefix)
	}
	if extra != "" {
		l.write(extra, names...)
		l.cur = verboseOther
	}
}

func (l *pytestLayout) progressMessage() string {
	n := len(l.reported)
	if l.s.Progress == "count" {
		if l.collected > 0 {
			w := len(fmt.Sprint(l.collected))
			return fmt.Sprintf(" [%*d/%d]", w, n, l.collected)
		}
		return fmt.Sprintf(" [ %d / %d ]", l.collected, l.collected)
	}
	if l.collected > 0 {
		return fmt.Sprintf(" [%3d%%]", n*100/l.collected)
	}
	return " [100%]"
}

func (l *pytestLayout) progressFill() {
	msg := l.progressMessage()
	fill := l.s.Width - l.col - 1
	l.write(fmt.Sprintf("%*s", fill, msg), l.mainColor())
}

// knownTypes are pytest's stats categories in the order of its last line.
var knownTypes = []string{"failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "warnings", "error"}

// rippleFailures are the categories of results only ripple has that fail
// the run.
var rippleFailures = []string{"crashed", "timed out"}

func (l *pytestLayout) mainColor() string {
	unknown := false
	for _, c := range l.cats {
		if c != "" && !slices.Contains(knownTypes, c) && !slices.Contains(rippleFailures, c) {
			unknown = true
		}
	}
	has := func(c string) bool { return len(l.stats[c]) > 0 }
	switch {
	case has("failed") || has("error") || has("crashed") || has("timed out"):
		return "red"
	case has("warnings") || has("xpassed") || unknown:
		return "yellow"
	case has("passed") || !l.lastItem:
		return "green"
	}
	return "yellow"
}

// result lays out one test's reports as they reach pytest's reporter:
// logstart, a logreport per report, logfinish, then its warnings.
func (l *pytestLayout) result(nodeid string, d *pytestDigest, collectReport bool, passOut string, marks []passMark) {
	if collectReport {
		// Shown in the "collected" line of the header, and at the end.
		for i := range d.Reports {
			l.add(d.Reports[i].Cat, statRef{nodeid, &d.Reports[i]})
		}
		return
	}
	switch {
	case l.verbosity > 0:
		l.writeEnsurePrefix(d.Loc, "")
	case l.verbosity == 0:
		l.writeFSPath(d.FSPath)
	}
	// What the test wrote past pytest's capture (-s) reached pytest's
	// terminal while it ran: after its location, each part before the
	// letter of the report logged after it (marks), the rest after the
	// last. The terminal writer does not see it: its column stays.
	at := 0
	if len(marks) == 0 {
		at = len(passOut)
		l.w.WriteString(passOut)
	}
	for i := range d.Reports {
		if j := slices.IndexFunc(marks, func(m passMark) bool { return m.when == d.Reports[i].When }); j >= 0 && marks[j].at >= at {
			l.w.WriteString(passOut[at:marks[j].at])
			at = marks[j].at
		}
		l.report(nodeid, d, &d.Reports[i])
	}
	l.w.WriteString(passOut[at:])
	if l.verbosity <= 0 && l.s.Progress != "" {
		l.reported[nodeid] = true
		l.lastItem = len(l.reported) == l.collected
		width := len(" [100%]")
		if l.s.Progress == "count" {
			width = len(fmt.Sprintf(" [%d/%d]", l.collected, l.collected))
		}
		switch {
		case l.lastItem:
			l.progressFill()
		case l.col+width+1 >= l.s.Width:
			color := l.mainColor()
			l.write(l.progressMessage(), color)
			l.line("")
		}
	}
	l.warnings = append(l.warnings, d.Warnings...)
	for range d.Warnings {
		l.add("warnings", statRef{})
	}
}

func (l *pytestLayout) report(nodeid string, d *pytestDigest, rep *pytestRepDigest) {
	l.add(rep.Cat, statRef{nodeid, rep})
	if rep.Letter == "" && rep.Word == "" {
		return
	}
	if l.verbosity <= 0 {
		l.write(rep.Letter, rep.Markup...)
		return
	}
	l.reported[nodeid] = true
	l.lastItem = len(l.reported) == l.collected
	l.writeEnsurePrefix(d.Loc, rep.Word, rep.Markup...)
	if rep.Reason != "" {
		reason := " (" + rep.Reason + ")"
		if l.verbosity < 2 {
			reason = formatTrimmed(rep.Reason, l.s.Width-l.col-len(" [100%]")-1)
		}
		if reason != "" {
			l.write(reason)
		}
	}
	if l.s.Progress != "" {
		l.progressFill()
	}
}

// formatTrimmed is pytest's _format_trimmed(" ({})", msg, width): the
// first line of msg, cut with "..." to fit; "" when even that cannot.
func formatTrimmed(msg string, width int) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	const frame = 3 // " ()"
	if frame+3 > width {
		return ""
	}
	r := []rune(msg)
	if frame+len(r) > width {
		width -= 3
		r = r[:min(len(r), width)]
		for frame+len(r) > width {
			r = r[:len(r)-1]
		}
		return " (" + string(r) + "...)"
	}
	return " (" + msg + ")"
}
