// Package busyexec runs a command whose file may have just been written.
//
// A file just written can fail to execute with ETXTBSY for a moment: a
// process forked meanwhile by this one inherits the writer's descriptor
// and holds it until it execs (golang.org/issue/22315). That passes, so
// the command is started again a few times before the error counts.
package busyexec

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// attempts bounds the tries; they are 10, 20, 30 and 40 ms apart.
const attempts = 5

// Run runs the command that newCmd makes (a new *exec.Cmd each time, with
// its output buffers reset: an exec.Cmd runs once), again while it fails
// with ETXTBSY and ctx lasts. It returns the last run's error.
func Run(ctx context.Context, newCmd func() *exec.Cmd) error {
	for attempt := 1; ; attempt++ {
		err := newCmd().Run()
		if !errors.Is(err, syscall.ETXTBSY) || attempt == attempts || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}
