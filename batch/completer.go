package batch

// completer: how a test run's results reach its report and its observer,
// in report order whatever order they end in.

import "time"

// completer records results and tells the observer each one that is next
// in report order. The pool's goroutine only (Run's or Watch's): the
// workers hand it results over testRun.results.
type completer struct {
	report  *Report
	obs     Observer
	started time.Time
	total   int
	emitted int // results told to the observer
	ended   int // entries with a result
	failing int // results that fail the run
}

// complete records entry i's result; a second result for it is dropped.
func (c *completer) complete(i int, r *Result) {
	if c.report.Results[i] != nil {
		return
	}
	c.report.Results[i] = r
	c.ended++
	if r.Status.Failing() {
		c.failing++
	}
	if c.obs != nil {
		for c.emitted < len(c.report.Results) && c.report.Results[c.emitted] != nil {
			c.obs.Result(c.report.Results[c.emitted])
			c.emitted++
		}
	}
	c.progress()
}

func (c *completer) progress() {
	if c.obs != nil {
		c.obs.Progress(Progress{Done: c.ended, Total: c.total, Failing: c.failing, Elapsed: time.Since(c.started)})
	}
}
