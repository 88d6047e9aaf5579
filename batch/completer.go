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
	emitted int // results in report order so far: counted, and told to the observer
	ended   int // entries with a result
	failing int // results that fail the run
	// maxfail: pytest's -x/--maxfail (0: none), counted over the whole
	// run as one pytest session counts it: failures are the failed
	// reports of the results emitted so far; stopAt, once they reach
	// maxfail, is the entry that reached it (-1 before): pytest would run
	// and report nothing after it, so nothing after it is emitted.
	maxfail, failures int
	stopAt            int
}

// newCompleter is the completer of report, telling obs (nil: nobody).
func newCompleter(report *Report, obs Observer, started time.Time) *completer {
	return &completer{report: report, obs: obs, started: started, total: len(report.Results), stopAt: -1}
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
	c.emit()
	c.progress()
}

// emit counts and tells the observer the results that are next in
// report order, up to stopAt.
func (c *completer) emit() {
	for c.emitted < len(c.report.Results) && c.report.Results[c.emitted] != nil && c.stopAt < 0 {
		r := c.report.Results[c.emitted]
		c.failures += pytestFailures(r)
		// A collection error counts too, but as in pytest's session the
		// stop comes only after a test ran (pytest checks after each
		// test): with as many collection errors as --maxfail, the first
		// test runs.
		if c.maxfail > 0 && c.failures >= c.maxfail && r.Entry.Scope != "" {
			c.stopAt = c.emitted
		}
		if c.obs != nil {
			c.obs.Result(r)
		}
		c.emitted++
	}
}

// limit sets pytest's --maxfail for the run (see maxfail), before any
// test's result.
func (c *completer) limit(maxfail int) {
	c.maxfail = maxfail
}

// pytestFailures is how many failed reports pytest counts towards
// --maxfail for a result: a failed call, setup or teardown each (a test
// that fails and then errors in teardown is two); ripple's crashes and
// timeouts count as failures.
func pytestFailures(r *Result) int {
	n := 0
	if r.Status.Failing() {
		n++
	}
	if r.TeardownError != "" {
		n++
	}
	return n
}

func (c *completer) progress() {
	if c.obs != nil {
		c.obs.Progress(Progress{Done: c.ended, Total: c.total, Failing: c.failing, Elapsed: time.Since(c.started)})
	}
}
