package agent

import (
	"fmt"

	"github.com/ripple-run/ripple/engine"
)

var _ engine.WaitReporting = (*slots)(nil)

// Waiting is visible (PROTOCOL.md 8.4, issue 26): a run that waits in
// Call for a slot's kernel says why, through the engine's ReportWaits
// callback, which tells the context's clients (Pending updates with
// reason waitingForKernel). The wait's detail changes as the slot does
// (a job's state or scheduler reason, an agent that comes back): it is
// reported at each change, by the waiting goroutine, with mu released.

// ReportWaits is engine.WaitReporting: report is called with a slot and
// why a run waits for its kernel, whenever that changes.
func (s *slots) ReportWaits(report func(slot int, detail string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitReport = report
}

// waitDetailLocked says why a run on st waits for a kernel ("" when it
// need not wait, or the wait is not worth saying: a kernel starting on a
// connected agent). s.mu is held.
func (s *slots) waitDetailLocked(st *agentSlot) string {
	rec := st.owner
	switch {
	case st.retired:
		return ""
	case rec == nil && s.startOpen:
		return fmt.Sprintf("no agent has connected since the coordinator started: waiting up to %v for one", s.c.cfg.StartGrace)
	case rec == nil:
		return "" // a job for it is about to be submitted (jobs.go)
	case rec.job != nil && !rec.job.connected:
		name := s.c.cfg.Jobs.Scheduler.Name()
		if rec.job.id == "" {
			return fmt.Sprintf("%s job %s is being submitted", name, rec.job.name)
		}
		return fmt.Sprintf("%s job %s %s%s, waiting for it to start (up to %v after its submission)",
			name, rec.job.id, rec.job.state, reasonText(rec.job.reason), s.c.cfg.Jobs.StartTimeout)
	case rec.conn == nil:
		return fmt.Sprintf("agent %s lost: waiting up to %v for it to come back", rec.host, s.c.cfg.Grace)
	}
	return ""
}

// reportWait tells the engine why slot waits, if that changed from *last.
// It is called with s.mu released.
func (s *slots) reportWait(slot int, detail string, last *string) {
	if detail == "" || detail == *last {
		return
	}
	*last = detail
	s.mu.Lock()
	report := s.waitReport
	s.mu.Unlock()
	if report != nil {
		report(slot, detail)
	}
}
