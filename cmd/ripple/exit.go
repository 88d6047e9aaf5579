package main

import (
	"errors"
	"fmt"
	"io"
)

// exitError is a command's failure as the user sees it: the message
// printed after "ripple CMD: " on stderr and the exit status. The phases
// of a command return one, and the command prints it once (exitWith).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageError is a failure the user must fix before anything runs (a bad
// flag, a project directory that does not exist): exit status exitUsage.
func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// runError is a failure while working (a state log another server holds,
// an engine that cannot start): exit status 1.
func runError(format string, args ...any) error {
	return &exitError{code: 1, msg: fmt.Sprintf(format, args...)}
}

// errFlags is a usage error the flag package has already printed (with
// the command's usage): nothing more is said, the exit status is
// exitUsage.
var errFlags = &exitError{code: exitUsage}

// errHelp is -h: the flag package has printed the usage; exit status 0.
var errHelp = &exitError{code: 0}

// exitWith prints err as "ripple CMD: MESSAGE" (unless the flag package
// printed it: errFlags) and returns its exit status: an exitError's own,
// 1 for any other error.
func exitWith(cmd string, stderr io.Writer, err error) int {
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: 1, msg: err.Error()}
	}
	if ee.msg != "" {
		fmt.Fprintf(stderr, "ripple %s: %s\n", cmd, ee.msg)
	}
	return ee.code
}
