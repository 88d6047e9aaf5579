// Package jobs defines ripple's job kinds (EnsureCompiled, Execute) and the
// translation of API calls into aborts and jobs (../shared/DESIGN.md, "Jobs
// and scheduling").
package jobs
