package watchview

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/ripple-run/ripple/protocol"
)

// ANSI SGR sequences; written only when Options.Color is set.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
	sgrCyan   = "\x1b[36m"
)

// The marks of the table's first column.
const (
	markRecomputed = "*"
	markCached     = "="
	markPanic      = "!"
	markPending    = "-" // the run left it waiting (it did not end normally)
	markHeld       = "⏸" // its effect was held (PROTOCOL.md 8.2)
	markNotReached = "·" // the run ended before it, for a reason (8.1, 8.4)
)

const (
	defaultWidth  = 100
	maxLabelWidth = 24
	maxTypeWidth  = 20
	minPreview    = 12
	timeWidth     = 7 // "999.9ms", "cached"
)

// textPrinter writes the human form: tables at the end of runs, the run's
// output as it comes, one-line notes for the rest. It tracks whether the
// terminal is at the start of a line, so a table never starts after a
// partial line of output. Owned by the render goroutine.
type textPrinter struct {
	out, err io.Writer
	color    bool
	width    int
	// midLine is true when the last text written to out did not end with
	// a newline.
	midLine bool
	// root is the project directory (from WatchInfo): a "#k" row shows its
	// statement's first line, read from the file that ran.
	root string
	// panics are the diagnostics of statements that raised, by expression
	// id: a Panic row shows its traceback under it.
	panics map[protocol.ExpressionID]*protocol.Diagnostic
	// lineOf is the 1-based line of a statement of the frame (0 when
	// unknown): a not-reached row names the line of the statement that
	// ended the run. The view's Model.Line.
	lineOf func(protocol.ExpressionID) int
}

func (p *textPrinter) paint(sgr, s string) string {
	if !p.color || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// line writes one line of the view's own on out, after ending a partial
// line of output.
func (p *textPrinter) line(s string) {
	if p.midLine {
		io.WriteString(p.out, "\n")
		p.midLine = false
	}
	io.WriteString(p.out, s+"\n")
}

// output writes text a run printed: stdout to out, stderr to err (the same
// terminal, usually).
func (p *textPrinter) output(stream protocol.OutputStream, text string) {
	if text == "" {
		return
	}
	if stream == protocol.Stderr {
		io.WriteString(p.err, text)
		return
	}
	io.WriteString(p.out, text)
	p.midLine = !strings.HasSuffix(text, "\n")
}

// note writes one line of the view's own, cut to the terminal's width
// (failure messages, which matter whole, are written by table instead).
func (p *textPrinter) note(sgr, s string) {
	if p.width > 0 {
		s = cut(s, p.width)
	}
	p.line(p.paint(sgr, s))
}

// table writes the end of a run: a header with the counts, then one row per
// changed expression.
func (p *textPrinter) table(entry string, s RunSummary) {
	var head strings.Builder
	fmt.Fprintf(&head, "── %s · run %d", entry, s.Run)
	switch {
	case s.Failed == nil:
		fmt.Fprintf(&head, " · %d recomputed", s.Recomputed)
		if s.Cached > 0 {
			fmt.Fprintf(&head, ", %d cached", s.Cached)
		}
		if s.Held > 0 {
			fmt.Fprintf(&head, ", %d held", s.Held)
		}
		if s.Recomputed > 0 {
			fmt.Fprintf(&head, " · %s", formatDuration(s.NanoTime))
		}
	case s.Failed.Kind == protocol.ResultInterrupted:
		head.WriteString(" · interrupted")
	default:
		fmt.Fprintf(&head, " · failed (%s)", s.Failed.Kind)
	}
	head.WriteString(" ──")
	p.line(p.paint(sgrBold+sgrCyan, head.String()))
	p.rows(s.Changed)
	if s.Failed != nil {
		sgr := sgrRed
		if s.Failed.Kind == protocol.ResultInterrupted {
			sgr = sgrYellow
		}
		p.line(p.paint(sgr, "  "+oneLine(s.Failed.Message)))
		if d := s.Failed.Diagnostic; d != nil {
			if where := diagnosticPlace(d); where != "" && !strings.Contains(s.Failed.Message, d.Message) {
				p.line(p.paint(sgr, "  "+where+": "+oneLine(d.Message)))
			} else if where != "" {
				p.line(p.paint(sgr, "  at "+where))
			}
		}
	}
}

// rows writes table rows, columns sized to the rows and the width.
func (p *textPrinter) rows(rows []Row) {
	if len(rows) == 0 {
		return
	}
	lw, tw := 0, 0
	for i := range rows {
		label := rows[i].Label
		if src := p.source(&rows[i]); src != "" {
			label += " " + src
		}
		lw = max(lw, min(maxLabelWidth, utf8.RuneCountInString(label)))
		tw = max(tw, min(maxTypeWidth, utf8.RuneCountInString(shortType(rows[i].Type))))
	}
	width := p.width
	if width <= 0 {
		width = defaultWidth
	}
	for i := range rows {
		r := &rows[i]
		label := pad(cut(r.Label, lw), lw)
		if src := p.source(r); src != "" {
			// A "#k" row says which statement it is.
			label = pad(cut(r.Label+" "+src, lw), lw)
		}
		switch {
		case r.Payload.Type == protocol.PayloadPanic || r.Payload.Type == protocol.PayloadDataflowError:
			msg := r.Payload.Message
			if msg == "" {
				msg = string(r.Payload.Type)
			}
			where := ""
			if line := r.Line(); line > 0 {
				where = fmt.Sprintf("  line %d", line)
			}
			if len(r.Payload.Trace) > 0 && r.Payload.Trace[0] != r.ID {
				_, from, _ := r.Payload.Trace[0].Split()
				where += " (from " + from + ")"
			}
			room := max(minPreview, width-4-lw-utf8.RuneCountInString(where))
			p.line(p.paint(sgrRed, "  "+markPanic+" "+label+"  "+cut(oneLine(msg), room)+where))
			if d := p.panics[r.ID]; d != nil && (len(r.Payload.Trace) == 0 || r.Payload.Trace[0] == r.ID) {
				p.traceback(d, lw, width)
			}
		case r.Held():
			where := ""
			if line := r.Line(); line > 0 {
				where = fmt.Sprintf("  line %d", line)
			}
			room := max(minPreview, width-4-lw-utf8.RuneCountInString(where))
			p.line(p.paint(sgrYellow, "  "+markHeld+" "+label+"  "+cut(oneLine(r.Payload.Message), room)+where))
		case r.Payload.IsNotReached():
			p.line(p.paint(sgrDim, "  "+markNotReached+" "+label+"  "+p.notReached(r)))
		case r.NotReached():
			what := r.Payload.Message
			if what == "" || r.Payload.IsRunning() {
				what = "not computed"
			}
			p.line(p.paint(sgrDim, "  "+markPending+" "+label+"  "+what))
		default:
			mark, when := p.paint(sgrGreen, markRecomputed), formatDuration(r.NanoTime)
			if r.FromCache {
				mark, when = p.paint(sgrDim, markCached), "cached"
			}
			when = padLeft(when, timeWidth)
			typ := pad(cut(shortType(r.Type), tw), tw)
			room := max(minPreview, width-4-lw-2-tw-2-2-timeWidth)
			preview := pad(cut(oneLine(r.Payload.Preview), room), room)
			p.line("  " + mark + " " + label + "  " + p.paint(sgrDim, typ) + "  " + preview + "  " + p.paint(sgrDim, when))
		}
	}
}

// notReached says why the run ended before a statement: "not reached:
// exception in y (line 5)", "not reached: held at #2 (line 7)",
// "not reached: interrupted", "not reached: the kernel died", or "not
// reached" after a return.
func (p *textPrinter) notReached(r *Row) string {
	reason := r.Payload.Reason
	if reason == nil {
		return protocol.MessageNotReached
	}
	origin := ""
	if reason.ExpressionID != "" {
		_, label, _ := reason.ExpressionID.Split()
		origin = " " + label
		if p.lineOf != nil {
			if line := p.lineOf(reason.ExpressionID); line > 0 {
				origin += fmt.Sprintf(" (line %d)", line)
			}
		}
	}
	switch reason.Kind {
	case protocol.ReasonException:
		return "not reached: exception in" + origin
	case protocol.ReasonHeld:
		return "not reached: held at" + origin
	case protocol.ReasonKernelDied:
		return "not reached: the kernel died"
	}
	return "not reached: " + reason.Kind + origin
}

// traceback writes a Panic's stack under its row, innermost call last,
// as Python prints it.
func (p *textPrinter) traceback(d *protocol.Diagnostic, lw, width int) {
	indent := strings.Repeat(" ", 4+lw+2)
	for _, f := range d.Stack {
		where := f.Path
		if f.Location != nil {
			where = fmt.Sprintf("%s:%d", f.Path, f.Location.Start.Line+1)
		}
		if f.FunctionName != "" {
			where += " in " + f.FunctionName
		}
		p.line(p.paint(sgrRed, indent+cut(where, max(minPreview, width-len(indent)))))
	}
}

// source is the first line of a "#k" row's statement, read from its file
// under the root ("" for other rows, or when the file cannot be read).
func (p *textPrinter) source(r *Row) string {
	if p.root == "" || !strings.HasPrefix(r.Label, "#") || !r.HasStart {
		return ""
	}
	module, _, ok := strings.Cut(string(r.ID), ":")
	if !ok {
		return ""
	}
	base := filepath.Join(p.root, filepath.FromSlash(strings.ReplaceAll(module, ".", "/")))
	text, err := os.ReadFile(base + ".py")
	if err != nil {
		if text, err = os.ReadFile(filepath.Join(base, "__init__.py")); err != nil {
			return ""
		}
	}
	lines := strings.Split(string(text), "\n")
	if r.Start.Line >= len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[r.Start.Line])
}

// diagnosticPlace is "path:line" of a diagnostic, or "".
func diagnosticPlace(d *protocol.Diagnostic) string {
	switch {
	case d.Path != "" && d.Location != nil:
		return fmt.Sprintf("%s:%d", d.Path, d.Location.Start.Line+1)
	case d.Path != "":
		return d.Path
	}
	return ""
}

// shortType is the last part of a qualified type name: "int" for
// "builtins.int", "DataFrame" for "pandas.core.frame.DataFrame".
func shortType(t string) string {
	if i := strings.LastIndexByte(t, '.'); i >= 0 {
		return t[i+1:]
	}
	return t
}

// oneLine folds a multi-line text (a DataFrame's repr) onto one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\t", " ")
	return strings.ReplaceAll(s, "\n", " ↵ ")
}

// cut shortens s to at most n runes, marking the cut with an ellipsis.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

// pad right-pads s with spaces to n runes.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// padLeft left-pads s with spaces to n runes.
func padLeft(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return strings.Repeat(" ", n-k) + s
	}
	return s
}

// formatDuration writes a statement time compactly: 850ns, 12µs, 3.4ms,
// 2.15s.
func formatDuration(ns int64) string {
	switch {
	case ns < 1_000:
		return fmt.Sprintf("%dns", ns)
	case ns < 1_000_000:
		return fmt.Sprintf("%dµs", ns/1_000)
	case ns < 1_000_000_000:
		return fmt.Sprintf("%.1fms", float64(ns)/1e6)
	}
	return fmt.Sprintf("%.2fs", float64(ns)/1e9)
}
