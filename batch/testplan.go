package batch

// testPlan: from the kernels' collections to what a test run reports. The
// phases of testPool.run between collect and drive: merge (the suite),
// plan (the entries) and startReport (the report, with the collection
// reports' results).

import (
	"fmt"
	"maps"
	"time"
)

// suite is a run's collection, merged: its items and its collection
// reports, each with the share and kernel index it came from, and each
// test module's project imports.
type suite struct {
	items, reports []sharedItem
	deps           map[string][]string
}

// merge is the suite: without split, the first kernel's collection, which
// the others' must equal (as pytest-xdist's workers' must); with it, the
// union of the shares (mergeSplit). It records the shares' collections in
// t, and every kernel's session as open.
func (t *testRun) merge(col *collection) (suite, error) {
	var s suite
	first := col.first()
	if t.split {
		s.deps = map[string][]string{}
		t.shareItems = make([][]testItem, t.shares)
		for i, w := range col.ws {
			t.shareItems[w.share] = col.answers[i].Items
			maps.Copy(s.deps, col.answers[i].Deps)
		}
		s.items, s.reports = mergeSplit(col.answers, col.shares(), t.shares)
		t.opts.Logger.Debug("split collection", "files", len(first.Files), "planned", first.Split.Planned, "items", len(s.items))
		t.files = first.Files
		t.indexOf = make([]map[string]int, t.shares)
		for sh, its := range t.shareItems {
			t.indexOf[sh] = make(map[string]int, len(its))
			for i, it := range its {
				t.indexOf[sh][it.NodeID] = i
			}
		}
	} else {
		for i, a := range col.answers[1:] {
			if d := differ(first.Items, a.Items); d != "" {
				return suite{}, fmt.Errorf("%w: kernels %s and %s collected different tests (%d and %d): %s", ErrProject, col.ws[0].name(), col.ws[i+1].name(), len(first.Items), len(a.Items), d)
			}
		}
		s.deps = first.Deps
		t.shareItems = [][]testItem{first.Items}
		for i, it := range first.Items {
			s.items = append(s.items, sharedItem{it, 0, i})
		}
		for i, r := range first.CollectReports {
			s.reports = append(s.reports, sharedItem{r, 0, i})
		}
	}
	// Every kernel collected: its session is open.
	t.open = len(col.ws)
	t.holders = make([]int, len(t.shareItems))
	for _, w := range col.ws {
		t.holders[w.share]++
	}
	return s, nil
}

// plan is what a run reports: its entries (t.entries) are the collection
// reports that did not pass, then the items, in pytest's order.
type plan struct {
	pre  []*Result    // the collection reports' results: entries[:len(pre)]
	keep []sharedItem // each item entry's item: entries[len(pre):]
	// collectErrors counts the collection errors; runItems: the items
	// run (no collection error, or --continue-on-collection-errors).
	collectErrors int
	runItems      bool
}

// plan sets the run's entries (t.entries, t.entryOf, t.results) from the
// suite: none of its items with collection errors (unless pytest was told
// to go on) or --collect-only, and of the others those of the shard and
// of the test files only (nil: all).
func (t *testRun) plan(s suite, first *collectAnswer, only map[string]bool) plan {
	var pl plan
	var entries []Entry
	for _, c := range s.reports {
		en := Entry{NodeID: c.NodeID, Path: c.Path, JUnitClass: c.JUnit[0], JUnitName: c.JUnit[1]}
		entries = append(entries, en)
		r := &Result{Entry: en, Status: Status(c.Status), Message: c.Message, Longrepr: c.Longrepr, pytest: c.Console}
		// As pytest's junitxml writes a collection report.
		if r.Status == StatusError {
			r.JUnit = [][]JUnitChild{{{Tag: "error", Message: "collection failure", Text: c.Longrepr}}}
		} else {
			r.JUnit = [][]JUnitChild{{{Tag: "skipped", Message: "collection skipped", Text: c.JUnitText}}}
		}
		pl.pre = append(pl.pre, r)
		if r.Status == StatusError {
			pl.collectErrors++
		}
	}
	pl.runItems = pl.collectErrors == 0 || first.Continue
	nItems := len(s.items)
	if first.CollectOnly || !pl.runItems {
		nItems = 0
	}
	// Sharding keeps whole items; the kernels' indices stay those of
	// their collection.
	offset := len(pl.pre)
	for _, it := range s.items[:nItems] {
		en := it.entry()
		if (t.opts.Shard.All() || t.opts.Shard.Has(en.ID())) && (only == nil || only[en.Path]) {
			entries = append(entries, en)
			pl.keep = append(pl.keep, it)
		}
	}
	t.entries = entries
	t.results = make(chan indexedResult, len(entries)+4*t.workers)
	// Per share, kernel index -> entry index.
	t.entryOf = make([]map[int]int, len(t.shareItems))
	for sh := range t.entryOf {
		t.entryOf[sh] = map[int]int{}
	}
	for j, it := range pl.keep {
		t.entryOf[it.share][it.index] = offset + j
	}
	return pl
}

// startReport is the run's report, with the results pre of its first
// entries (the collection reports), and the completer that fills in the
// rest; the observer is told the entries.
func (t *testRun) startReport(started time.Time, pre []*Result) *completer {
	report := &Report{Project: t.root, Python: t.python, Kernels: t.workers, Timeout: t.opts.Timeout, Shard: t.opts.Shard,
		Started: started, Results: make([]*Result, len(t.entries))}
	if t.opts.Observer != nil {
		t.opts.Observer.Started(t.entries, t.workers)
	}
	c := newCompleter(report, t.opts.Observer, started)
	for i, r := range pre {
		c.complete(i, r)
	}
	return c
}
