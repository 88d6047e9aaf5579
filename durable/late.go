package durable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// errUnseeded is Late's error between the open that worked and Seed.
var errUnseeded = errors.New("the state log was opened for writing and waits for the server's state")

// Late is the state log of a server that found .ripple/ unwritable at
// start: a read-only file system or file (the log as found is read
// read-only, its state restored), or a state directory that cannot be
// created at all (a read-only project). Every change is refused while so
// (PROTOCOL.md 8.5). Probe, which the engine calls before a change while
// Failing, tries to open the log for writing: no timer polls the disk, a
// client's change attempt is what tries again, and a cheap access(2)
// check comes first, so a refused change costs a few syscalls. Once the
// open works, the log holds nothing the server did since start: Unseeded
// says so until Seed writes the server's whole state as the log's first
// state (replacing what the file held), and only then are appends taken.
type Late struct {
	dir string
	opt Options
	// try lets one open attempt run at a time; a change that finds one
	// running is refused with the last error instead of queueing.
	try sync.Mutex

	mu sync.Mutex
	// ro is the log as found at start, opened read-only, nil if none
	// (guarded by mu); closed before the open for writing, whose lock it
	// would block.
	ro *Log
	// log is the log opened for writing, nil until an open works (guarded
	// by mu); appended to only once seeded.
	log    *Log
	seeded bool  // guarded by mu
	cause  error // guarded by mu: why it cannot be written while log is nil
	closed bool  // guarded by mu
}

// NewLate returns the Late log of dir, which cannot be written because of
// cause; ro is the log found there, opened read-only, or nil. It takes
// ro over (Close closes it).
func NewLate(dir string, opt Options, ro *Log, cause error) *Late {
	return &Late{dir: dir, opt: opt, ro: ro, cause: cause}
}

// ReadOnly is why the log was opened read-only (a read-only file system
// or file), nil if it was opened for writing.
func (l *Log) ReadOnly() error { return l.readOnly }

// Append appends to the log once it is open for writing and seeded; until
// then it returns why it cannot be written.
func (l *Late) Append(ctx context.Context, ev Event) error {
	l.mu.Lock()
	w, seeded, cause, closed := l.log, l.seeded, l.cause, l.closed
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case w == nil:
		return cause
	case !seeded:
		return errUnseeded
	}
	return w.Append(ctx, ev)
}

// Failing is why the log cannot be written now, nil once it can.
func (l *Late) Failing() error {
	l.mu.Lock()
	w, seeded, cause := l.log, l.seeded, l.cause
	l.mu.Unlock()
	switch {
	case w == nil:
		return cause
	case !seeded:
		return errUnseeded
	}
	return w.Failing()
}

// Probe tries to open the log for writing if it is not yet: nil means it
// is open, and the caller must Seed it before changes are recorded (see
// Unseeded). Once open, it probes the log itself (Log.Probe).
func (l *Late) Probe() error {
	l.mu.Lock()
	w, seeded, cause, closed := l.log, l.seeded, l.cause, l.closed
	l.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case w != nil && seeded:
		return w.Probe()
	case w != nil:
		return nil
	}
	if !l.try.TryLock() {
		return cause // another change is trying right now
	}
	defer l.try.Unlock()
	err := l.reopen()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.cause = err
	}
	return err
}

// reopen opens the log for writing, if the state directory and its file
// can be written now. The caller holds try.
func (l *Late) reopen() error {
	if err := writable(l.dir); err != nil {
		return err
	}
	l.mu.Lock()
	ro := l.ro
	l.ro = nil
	l.mu.Unlock()
	if ro != nil {
		// The read-only open holds a shared lock that the open for
		// writing would wait on.
		ro.Close()
	}
	w, _, err := Open(l.dir, l.opt)
	if err != nil {
		return err
	}
	if ro := w.ReadOnly(); ro != nil {
		w.Close()
		return ro
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		w.Close()
		return ErrClosed
	}
	l.log = w
	return nil
}

// writable checks with access(2) that dir (or, while it does not exist,
// its parent) and its log file, if there is one, can be written.
func writable(dir string) error {
	check := dir
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		check = filepath.Dir(dir)
	}
	if err := unix.Access(check, unix.W_OK); err != nil {
		return fmt.Errorf("state directory %s cannot be written: %w", check, err)
	}
	p := filepath.Join(dir, FileName)
	if err := unix.Access(p, unix.W_OK); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("state log %s cannot be written: %w", p, err)
	}
	return nil
}

// Unseeded reports whether the log was opened for writing and waits for
// Seed.
func (l *Late) Unseeded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log != nil && !l.seeded
}

// Seed makes evs, the server's whole state, the log's state (whatever
// the file held is replaced, in one commit) and takes appends from then
// on.
func (l *Late) Seed(evs []Event) error {
	l.mu.Lock()
	w := l.log
	l.mu.Unlock()
	if w == nil {
		return errors.New("the state log is not open for writing")
	}
	if err := w.Reset(evs); err != nil {
		return err
	}
	l.mu.Lock()
	l.seeded = true
	l.mu.Unlock()
	return nil
}

// Path is the log's file.
func (l *Late) Path() string { return filepath.Join(l.dir, FileName) }

// Close closes what is open; later Appends get ErrClosed.
func (l *Late) Close() error {
	l.try.Lock() // no open attempt in progress
	defer l.try.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	var errs []error
	if l.ro != nil {
		errs = append(errs, l.ro.Close())
	}
	if l.log != nil {
		errs = append(errs, l.log.Close())
	}
	return errors.Join(errs...)
}

// Reset replaces the log's whole state with evs in one commit: the events
// and the snapshot are deleted, and evs written as the new snapshot.
func (l *Log) Reset(evs []Event) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.Unlock()
	if l.readOnly != nil {
		return l.readOnly
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketEvents, bucketData, bucketSnapshot} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		snap := tx.Bucket(bucketSnapshot)
		for _, ev := range evs {
			if err := applyTo(snap, ev); err != nil {
				return err
			}
		}
		return nil
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failing = err
	if err == nil {
		l.tail = 0
	}
	return err
}
