package batch

// The end of a pytest run's console (pytestLayout): what pytest's
// terminal reporter writes at the session's end, in its order
// (TerminalReporter.pytest_sessionfinish and pytest_terminal_summary).

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// finish lays out the session's end: the summary sections (unless
// --no-summary), pytest's stop line (stop: "stopping after 2 failures")
// and where, the line under it (pytest's: where a KeyboardInterrupt was
// raised), extra (ripple's own summary line), and the last line.
func (l *pytestLayout) finish(rep *Report, stop, where, extra string) {
	l.line("")
	if !l.s.NoSummary {
		l.sections("ERRORS", "error")
		l.sections("FAILURES", "failed", "crashed", "timed out")
		l.summaryWarnings()
		l.summaryPasses()
		if rep.PytestJUnitXML != nil {
			// pytest's junitxml plugin says where it wrote (its
			// pytest_terminal_summary, after the passes).
			l.writeSep('-', "generated xml file: "+rep.PytestJUnitXML.Path)
		}
		l.durations()
		l.shortSummary()
	}
	// Two lines: pytest's -x/--maxfail line over its Interrupted.
	for _, stop := range strings.Split(stop, "\n") {
		switch {
		case strings.HasPrefix(stop, "Interrupted: ") || stop == "KeyboardInterrupt":
			l.writeSep('!', stop) // as pytest reports its Interrupted
		case stop != "":
			l.writeSep('!', stop, "red")
		}
	}
	if where != "" {
		l.writeLine(where)
	}
	if extra != "" {
		l.writeLine(extra)
	}
	l.summaryStats(rep.Duration)
}

// sections is summary_errors and summary_failures: each report of cats
// with its rendered section (a result ripple made: its own).
func (l *pytestLayout) sections(title string, cats ...string) {
	var refs []statRef
	for _, c := range cats {
		refs = append(refs, l.stats[c]...)
	}
	if l.s.TBStyle == "no" || len(refs) == 0 {
		return
	}
	l.writeSep('=', title)
	for _, ref := range refs {
		l.raw(ref.rep.Section)
	}
}

func (l *pytestLayout) summaryWarnings() {
	if !strings.Contains(l.s.ReportChars, "w") || len(l.warnings) == 0 {
		return
	}
	type group struct {
		message   string
		locations []string
	}
	var groups []*group
	byMessage := map[string]*group{}
	for _, w := range l.warnings {
		g := byMessage[w.Message]
		if g == nil {
			g = &group{message: w.Message}
			byMessage[w.Message] = g
			groups = append(groups, g)
		}
		if w.Location != nil && *w.Location != "" {
			g.locations = append(g.locations, *w.Location)
		}
	}
	l.writeSep('=', "warnings summary", "yellow")
	for _, g := range groups {
		locations := strings.Join(g.locations, "\n")
		if len(g.locations) >= 10 {
			// Counted by file, as pytest's collapsed_location_report.
			var files []string
			count := map[string]int{}
			for _, loc := range g.locations {
				f, _, _ := strings.Cut(loc, "::")
				if count[f] == 0 {
					files = append(files, f)
				}
				count[f]++
			}
			var lines []string
			for _, f := range files {
				lines = append(lines, fmt.Sprintf("%s: %d warning%s", f, count[f], map[bool]string{true: "s"}[count[f] > 1]))
			}
			locations = strings.Join(lines, "\n")
		}
		message := strings.TrimRight(g.message, " \t\n\r\v\f")
		if locations != "" {
			l.line(locations)
			var ind []string
			for _, ln := range splitLines(g.message) {
				ind = append(ind, "  "+ln)
			}
			message = strings.TrimRight(strings.Join(ind, "\n"), " \t\n\r\v\f")
		}
		l.line(message)
		l.line("")
	}
	l.line("-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html")
}

// splitLines is Python's str.splitlines for \n and \r\n.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (l *pytestLayout) summaryPasses() {
	if l.s.TBStyle == "no" || !strings.Contains(l.s.ReportChars, "P") || len(l.stats["passed"]) == 0 {
		return
	}
	l.writeSep('=', "PASSES")
	for _, ref := range l.stats["passed"] {
		l.raw(ref.rep.Section)
	}
}

// durations is pytest's --durations (_pytest/runner.py).
func (l *pytestLayout) durations() {
	if l.s.Durations == nil {
		return
	}
	var list []statRef
	for _, c := range l.cats {
		for _, ref := range l.stats[c] {
			if ref.rep != nil && ref.rep.Duration != nil {
				list = append(list, ref)
			}
		}
	}
	if len(list) == 0 {
		return
	}
	slices.SortStableFunc(list, func(a, b statRef) int { return cmp.Compare(*b.rep.Duration, *a.rep.Duration) })
	if n := *l.s.Durations; n > 0 {
		l.writeSep('=', fmt.Sprintf("slowest %d durations", n))
		list = list[:min(n, len(list))]
	} else {
		l.writeSep('=', "slowest durations")
	}
	for i, ref := range list {
		if l.verbosity < 2 && *ref.rep.Duration < l.s.DurationsMin {
			l.writeLine("")
			l.writeLine(fmt.Sprintf("(%d durations < %gs hidden.  Use -vv to show these durations.)", len(list)-i, l.s.DurationsMin))
			break
		}
		l.writeLine(fmt.Sprintf("%.2fs %-8s %s", *ref.rep.Duration, ref.rep.When, ref.nodeid))
	}
}

// shortSummary is short_test_summary: per -r character, the lines of its
// category (skips folded by place and reason); then the lines of what
// only ripple reports (crashed, timed out, stopped), whatever -r says.
func (l *pytestLayout) shortSummary() {
	var lines []string
	simple := func(cat string) {
		for _, ref := range l.stats[cat] {
			if ref.rep.Short != nil {
				lines = append(lines, *ref.rep.Short)
			}
		}
	}
	for _, ch := range l.s.ReportChars {
		switch ch {
		case 'x':
			simple("xfailed")
		case 'X':
			simple("xpassed")
		case 'f':
			simple("failed")
		case 'E':
			simple("error")
		case 'p':
			simple("passed")
		case 's':
			lines = append(lines, l.foldedSkips()...)
		}
	}
	for _, cat := range []string{"crashed", "timed out", "interrupted"} {
		simple(cat)
	}
	if len(lines) == 0 {
		return
	}
	l.writeSep('=', "short test summary info", "cyan", "bold")
	for _, ln := range lines {
		l.writeLine(ln)
	}
}

// foldedSkips is pytest's _folded_skips and its lines: "SKIPPED [2]
// test_a.py:12: reason".
func (l *pytestLayout) foldedSkips() []string {
	type fold struct {
		word, path, reason string
		line               any
		n                  int
	}
	var folds []*fold
	byKey := map[string]*fold{}
	for _, ref := range l.stats["skipped"] {
		r := ref.rep
		if len(r.Skip) != 3 || r.Short == nil {
			continue
		}
		key := fmt.Sprintf("%v\x00%v\x00%v", r.Skip[0], r.Skip[1], r.Skip[2])
		f := byKey[key]
		if f == nil {
			f = &fold{word: *r.Short, path: fmt.Sprint(r.Skip[0]), line: r.Skip[1], reason: fmt.Sprint(r.Skip[2])}
			byKey[key] = f
			folds = append(folds, f)
		}
		f.n++
	}
	var lines []string
	for _, f := range folds {
		// pytest's line uses the first skip's word for every fold.
		word := folds[0].word
		reason := strings.TrimPrefix(f.reason, "Skipped: ")
		if n, ok := f.line.(float64); ok {
			lines = append(lines, fmt.Sprintf("%s [%d] %s:%d: %s", word, f.n, f.path, int(n), reason))
		} else {
			lines = append(lines, fmt.Sprintf("%s [%d] %s: %s", word, f.n, f.path, reason))
		}
	}
	return lines
}

var colorForType = map[string]string{"failed": "red", "error": "red", "warnings": "yellow", "passed": "green",
	"crashed": "red", "timed out": "red"}

// summaryStats is pytest's last line: the count of each category (known
// types first, in pytest's order, then the others as they came) and the
// session's duration, framed with "=" unless -q, in the main colour.
func (l *pytestLayout) summaryStats(d time.Duration) {
	if l.verbosity < -1 {
		return
	}
	l.lastItem = true
	main := l.mainColor()
	order := slices.Clone(knownTypes)
	for _, c := range l.cats {
		if c != "" && !slices.Contains(order, c) {
			order = append(order, c)
		}
	}
	var parts []string
	fullwidth := l.s.Width
	for _, c := range order {
		n := len(l.stats[c])
		if n == 0 {
			continue
		}
		color := cmp.Or(colorForType[c], "yellow")
		names := []string{color}
		if color == main {
			names = append(names, "bold")
		}
		text := fmt.Sprintf("%d %s", n, pluralizeStat(n, c))
		marked := l.markup(text, names...)
		fullwidth += len(marked) - len(text)
		parts = append(parts, marked)
	}
	if len(parts) == 0 {
		text := "no tests ran"
		marked := l.markup(text, "yellow")
		fullwidth += len(marked) - len(text)
		parts = append(parts, marked)
	}
	msg := strings.Join(parts, ", ")
	duration := " in " + pytestDuration(d)
	marked := l.markup(duration, main)
	fullwidth += len(marked) - len(duration)
	msg += marked
	if l.verbosity < 0 {
		l.ensureNewline()
		l.w.WriteString(l.markup(msg, main) + "\n")
		l.col = 0
		return
	}
	if l.s.Markup {
		end := strings.TrimSuffix(l.markup(" ", main), " \x1b[0m")
		fullwidth += len(end)
		msg += end
	}
	l.ensureNewline()
	// The frame is counted on the plain text's width, as pytest's sep
	// counts fullwidth grown by the escapes' length.
	n := max((fullwidth-len(msg)-2)/2, 1)
	fill := strings.Repeat("=", n)
	line := fill + " " + msg + " " + fill
	if len(line)+1 <= fullwidth {
		line += "="
	}
	l.w.WriteString(l.markup(line, main) + "\n")
	l.col = 0
}

// pluralizeStat is pytest's pluralize for a stats category.
func pluralizeStat(n int, cat string) string {
	switch cat {
	case "error":
		return plural(n, "error", "errors")
	case "warnings":
		return plural(n, "warning", "warnings")
	}
	return cat
}
