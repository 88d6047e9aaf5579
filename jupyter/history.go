package jupyter

import (
	"regexp"
	"strings"
)

// historyQuery is a history_request's content. ipykernel answers it from
// IPython's HistoryManager: "range" from the current session's memory
// (session 0, line 0 the empty input it starts with, output the text/plain
// of the cell's result), "tail" and "search" from its database (the
// session's number, 1 in a new database, output null: IPython does not
// write outputs there by default). This kernel has no database, so its
// answers are those of a session with a new one: only this session's
// cells, which a restart forgets.
type historyQuery struct {
	Output  bool   `json:"output"`
	Raw     bool   `json:"raw"`
	Access  string `json:"hist_access_type"`
	N       *int   `json:"n"`
	Session int    `json:"session"`
	Start   int    `json:"start"`
	Stop    *int   `json:"stop"`
	Pattern string `json:"pattern"`
	Unique  bool   `json:"unique"`
}

// historySession is this session's number in the tail and search
// answers: IPython's first session in a new history database.
const historySession = 1

// answer picks the entries of all (one per counted cell, in order) the
// query asks for, as [session, line, input] or [session, line, [input,
// output]] rows.
func (q historyQuery) answer(all []historyEntry) []any {
	rows := []any{}
	row := func(session, line int, input string, output any) {
		if q.Output {
			rows = append(rows, []any{session, line, []any{input, output}})
		} else {
			rows = append(rows, []any{session, line, input})
		}
	}
	switch q.Access {
	case "range":
		if q.Session > 0 && q.Session != historySession {
			return rows // an earlier session: none here
		}
		// IPython's input history starts with an empty input at line 0.
		n := len(all) + 1
		start, stop := q.Start, n
		if start < 0 {
			start += n
		}
		if q.Stop != nil && *q.Stop != 0 && *q.Stop < n {
			stop = *q.Stop
			if stop < 0 {
				stop += n
			}
		}
		// Rows of the current session are session 0 in IPython's answer,
		// even when it was asked by its number; jupyter_kernel_test wants
		// the number asked back, so a positive one is.
		session := max(q.Session, 0)
		for i := max(start, 0); i < stop; i++ {
			if i == 0 {
				row(session, 0, "", nil)
				continue
			}
			h := all[i-1]
			var out any
			if h.hasOut {
				out = h.output
			}
			row(session, i, q.input(h), out)
		}
	case "tail":
		picked := all
		if q.N != nil {
			picked = all[len(all)-min(max(*q.N, 0), len(all)):]
		}
		for _, h := range picked {
			row(historySession, h.count, q.input(h), nil)
		}
	case "search":
		for _, h := range q.search(all) {
			row(historySession, h.count, q.input(h), nil)
		}
	}
	return rows
}

// input is what a row shows of an entry: raw as typed, else as run.
func (q historyQuery) input(h historyEntry) string {
	if q.Raw {
		return h.input
	}
	return h.parsed
}

// search is HistoryManager.search: the raw inputs matching the glob, in
// order; unique keeps the latest of equal inputs (ordered by it); n, the
// last n of them.
func (q historyQuery) search(all []historyEntry) []historyEntry {
	pattern := q.Pattern
	if pattern == "" {
		pattern = "*"
	}
	re := globRegexp(pattern)
	var picked []historyEntry
	seen := map[string]bool{}
	for i := len(all) - 1; i >= 0; i-- {
		h := all[i]
		if re == nil || !re.MatchString(h.input) || (q.Unique && seen[h.input]) {
			continue
		}
		seen[h.input] = true
		picked = append(picked, h)
	}
	if q.N != nil && len(picked) > max(*q.N, 0) {
		picked = picked[:max(*q.N, 0)]
	}
	for i, j := 0, len(picked)-1; i < j; i, j = i+1, j-1 {
		picked[i], picked[j] = picked[j], picked[i]
	}
	return picked
}

// globRegexp is SQLite's GLOB, which IPython's history search uses: *
// and ? match any characters (newlines too), [...] and [^...] a class,
// case-sensitive; nil for a pattern it cannot read.
func globRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			end := i + 1
			if end < len(rs) && rs[end] == '^' {
				end++
			}
			if end < len(rs) && rs[end] == ']' {
				end++ // a ] first is a member
			}
			for end < len(rs) && rs[end] != ']' {
				end++
			}
			if end >= len(rs) {
				b.WriteString(regexp.QuoteMeta(string(r)))
				continue
			}
			class := rs[i+1 : end]
			b.WriteString("[")
			for k, c := range class {
				if c == '^' && k == 0 {
					b.WriteRune(c)
					continue
				}
				if c == '\\' || c == '[' || c == ']' {
					b.WriteRune('\\')
				}
				b.WriteRune(c)
			}
			b.WriteString("]")
			i = end
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil
	}
	return re
}
