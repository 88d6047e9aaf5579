package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/protocol"
)

// stateReport is what ripple serve says about .ripple/: on stderr at
// start, and in runtime/status's state for as long as it runs. It says
// whether changes are recorded (a full disk refuses them with 7001,
// PROTOCOL.md 8.5), and every file moved aside or reset: by the state log
// at start, by the checks of the value journal at start, and later by a
// kernel that finds the journal damaged inside (it moves the file aside
// as values.db.corrupt-TIME; the watcher sees the new name).
type stateReport struct {
	dir string
	log *slog.Logger

	mu     sync.Mutex
	damage []protocol.StateDamage // guarded by mu
	dlog   probedLog              // guarded by mu: the state log (*durable.Log or *durable.Late)

	// watcher and done belong to watch and close (serve's goroutine); the
	// goroutine watch starts owns the watcher's channels until done.
	watcher *fsnotify.Watcher
	done    chan struct{}
}

func newStateReport(dir string, log *slog.Logger) *stateReport {
	return &stateReport{dir: dir, log: log}
}

// addDamage records a damaged file (durable.Options.OnDamage's signature).
func (r *stateReport) addDamage(file, movedTo, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.damage = append(r.damage, protocol.StateDamage{File: file, MovedTo: movedTo, Detail: detail})
}

// probedLog is what the report asks of the state log.
type probedLog interface {
	Probe() error
	Failing() error
}

// openedLog probes the state log once, so a full or read-only disk is said
// before the first edit rather than at it.
func (r *stateReport) openedLog(stderr io.Writer, l probedLog) {
	r.mu.Lock()
	r.dlog = l
	r.mu.Unlock()
	if err := l.Probe(); err != nil {
		fmt.Fprintf(stderr, "ripple: %s\n", notWritable(r.dir, err))
	}
}

// notWritable is what is said while the state log cannot be written.
func notWritable(dir string, err error) string {
	return fmt.Sprintf("%s cannot be written (%v): edits, contexts and visualizations are refused with error 7001 StateNotRecorded until it can (what was acknowledged before is kept)", dir, err)
}

// status is engine.Config.StateStatus.
func (r *stateReport) status() *protocol.StateStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &protocol.StateStatus{Dir: r.dir, Recording: r.dlog != nil,
		Damage: append([]protocol.StateDamage{}, r.damage...)}
	if r.dlog != nil {
		if err := r.dlog.Failing(); err != nil {
			st.Recording, st.Problem = false, notWritable(r.dir, err)
		}
	}
	return st
}

// watch starts reporting the value journal files a kernel moves aside.
func (r *stateReport) watch() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(r.dir); err != nil {
		w.Close()
		return err
	}
	r.watcher, r.done = w, make(chan struct{})
	go func() {
		defer close(r.done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				r.seen(ev)
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return nil
}

// seen reports a values.db.corrupt-TIME that appeared (a kernel's; the
// server's own moves at start happen before the watch).
func (r *stateReport) seen(ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	prefix := durable.ValuesFileName + ".corrupt-"
	if !ev.Has(fsnotify.Create) || !strings.HasPrefix(name, prefix) ||
		strings.HasSuffix(name, "-wal") || strings.HasSuffix(name, "-shm") {
		return
	}
	file := filepath.Join(r.dir, durable.ValuesFileName)
	r.log.Warn("value journal damaged inside (a kernel found it): moved aside; its values are computed again", "file", file, "movedTo", ev.Name)
	r.addDamage(file, ev.Name, "damaged inside (a kernel found it): its values are computed again")
}

// close stops the watch.
func (r *stateReport) close() {
	if r.watcher != nil {
		r.watcher.Close()
		<-r.done
		r.watcher = nil
	}
}
