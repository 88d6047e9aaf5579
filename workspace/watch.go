package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions configure a Watcher. The zero value gives the defaults.
type WatchOptions struct {
	// Debounce is how long the tree must stay quiet before the changes so
	// far are delivered as one batch (default 50 ms).
	Debounce time.Duration
	// MaxDelay bounds how long a change waits when the tree never goes
	// quiet: a continuous stream of changes is still delivered at least this
	// often (default 1 s).
	MaxDelay time.Duration
	// PollInterval is how often the directories that could not get an
	// inotify watch (the OS limit was hit) are listed for changes (default
	// 1 s).
	PollInterval time.Duration
}

const (
	defaultDebounce     = 50 * time.Millisecond
	defaultMaxDelay     = time.Second
	defaultPollInterval = time.Second
)

// The fsnotify operations the watcher cares about, and the ones polling
// synthesises.
const (
	opCreate = fsnotify.Create
	opWrite  = fsnotify.Write
	opRemove = fsnotify.Remove
	opRename = fsnotify.Rename
	opChmod  = fsnotify.Chmod
)

// ErrWatcherStarted is returned by Start on a Watcher that was started
// before.
var ErrWatcherStarted = errors.New("watcher already started")

// Watcher watches a workspace's tree for changes made by others (editors,
// git, build tools) and delivers them in batches: one per burst of changes.
//
// It watches every directory of the tree with inotify (through fsnotify),
// skipping ignored folders (see IgnoredDir); directories created later are
// watched as they appear, removed ones are dropped. If the OS limit on
// watches is hit, it logs the fix once and polls the directories it could
// not watch.
//
// Goroutines and what they own:
//   - the drain goroutine only moves fsnotify events into the pending set
//     (under pendMu) and nudges the batch goroutine; it never blocks, so
//     the kernel's event queue cannot overflow behind a slow consumer;
//   - the batch goroutine owns the tree model, waits for the tree to be
//     quiet for Debounce (or for MaxDelay), evaluates the pending paths
//     against the disk and the tree under the workspace's diskMu (so the
//     workspace's own writes are whole and recorded), reloads or flags open
//     buffers, sends the Batch, and polls unwatched directories.
//
// Start starts both; Stop stops them and waits. Batches arrive on the
// channel returned by Batches, which the consumer must drain: while it does
// not, changes keep collecting and come in the next batch.
type Watcher struct {
	ws     *Workspace
	opts   WatchOptions
	logger *slog.Logger

	// addWatch adds an inotify watch on an absolute directory path. Tests
	// replace it (before Start) to simulate the OS watch limit.
	addWatch func(dir string) error

	fsw     *fsnotify.Watcher
	batches chan Batch
	wake    chan struct{} // capacity 1: "there are pending events"
	stop    chan struct{} // closed by Stop
	done    chan struct{} // closed when both goroutines have returned

	startOnce sync.Once
	stopOnce  sync.Once

	pendMu sync.Mutex
	// pending holds the paths touched since the last batch and the union of
	// their operations; rescan asks for a full comparison of the tree with
	// the disk (the kernel's event queue overflowed). firstAt and lastAt are
	// when the first and the latest of them arrived. Guarded by pendMu.
	pending         map[string]fsnotify.Op
	rescan          bool
	firstAt, lastAt time.Time

	// tree, polling, limitLogged and gitHeld are owned by Start, then by
	// the batch goroutine. polling is set once any directory is polled;
	// gitHeld while a batch is held back by git's index lock.
	tree        tree
	polling     bool
	limitLogged bool
	gitHeld     bool
}

// NewWatcher returns a watcher for ws. Start it to begin watching.
func NewWatcher(ws *Workspace, opts WatchOptions) *Watcher {
	if opts.Debounce <= 0 {
		opts.Debounce = defaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = max(defaultMaxDelay, opts.Debounce)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = defaultPollInterval
	}
	return &Watcher{
		ws:      ws,
		opts:    opts,
		logger:  ws.logger,
		batches: make(chan Batch),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		pending: make(map[string]fsnotify.Op),
		tree:    tree{dirs: make(map[string]*dirNode)},
	}
}

// Batches returns the channel batches are delivered on. It is closed when
// the watcher stops.
func (w *Watcher) Batches() <-chan Batch { return w.batches }

// Start watches the whole tree and starts the watcher's goroutines. ctx
// bounds only the start-up walk of the tree; the watcher then runs until
// Stop. A Watcher can be started once.
func (w *Watcher) Start(ctx context.Context) error {
	err := ErrWatcherStarted
	w.startOnce.Do(func() { err = w.start(ctx) })
	return err
}

func (w *Watcher) start(ctx context.Context) error {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("workspace: start watching %s: %w", w.ws.realRoot, err)
	}
	w.fsw = fsw
	if w.addWatch == nil {
		w.addWatch = fsw.Add
	}
	// The drain runs during the walk already, so events for directories
	// watched early are not held up in the kernel queue.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.drain()
	}()
	if err := w.syncDir(ctx, newChangeSet(), ".", syncMode{rewatch: true, deep: true}); err != nil {
		fsw.Close()
		wg.Wait()
		close(w.batches)
		close(w.done)
		return fmt.Errorf("workspace: start watching %s: %w", w.ws.realRoot, err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run()
	}()
	go func() {
		wg.Wait()
		close(w.done)
	}()
	return nil
}

// Stop stops watching and waits, within ctx, for the watcher's goroutines
// to return. Changes not yet delivered are dropped. Stop is idempotent and
// safe to call on a watcher that was never started.
func (w *Watcher) Stop(ctx context.Context) error {
	w.startOnce.Do(func() { // never started: nothing will run
		close(w.batches)
		close(w.done)
	})
	w.stopOnce.Do(func() {
		close(w.stop)
		if w.fsw != nil {
			// Closing fsnotify closes its channels, which ends the drain.
			w.fsw.Close()
		}
	})
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("workspace: stop watcher: %w", ctx.Err())
	}
}

func (w *Watcher) watch(dir string) error { return w.addWatch(dir) }

func (w *Watcher) unwatch(dir string) {
	// Errors only mean the watch is gone already (the directory was removed
	// and inotify dropped it); either way it is gone now.
	_ = w.fsw.Remove(dir)
}

// watchLimitHit logs, once per watcher, that the OS watch limit was hit and
// how to raise it.
func (w *Watcher) watchLimitHit(dir string) {
	if w.limitLogged {
		return
	}
	w.limitLogged = true
	w.logger.Warn("workspace: the inotify watch limit is reached; polling the directories that could not be watched instead, which notices changes later",
		"root", w.ws.realRoot, "first_unwatched", dir, "poll_interval", w.opts.PollInterval,
		"fix", "raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 (add fs.inotify.max_user_watches=524288 to /etc/sysctl.conf to keep it)")
}

// drain moves fsnotify's events and errors into the pending set until
// fsnotify is closed. It never blocks on anything but fsnotify's channels.
func (w *Watcher) drain() {
	for {
		select {
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			rel, ok := w.ws.relToRoot(ev.Name)
			if !ok {
				continue
			}
			w.note(rel, ev.Op)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.pendMu.Lock()
				w.rescan = true
				w.touchLocked(time.Now())
				w.pendMu.Unlock()
				w.nudge()
				continue
			}
			w.logger.Warn("workspace: file watching error", "root", w.ws.realRoot, "err", err)
		}
	}
}

// note adds one event on the resolved relative path p to the pending set.
func (w *Watcher) note(p string, op fsnotify.Op) {
	now := time.Now()
	w.pendMu.Lock()
	w.pending[p] |= op
	w.touchLocked(now)
	w.pendMu.Unlock()
	w.nudge()
}

// touchLocked updates the arrival times; the caller holds pendMu.
func (w *Watcher) touchLocked(now time.Time) {
	if w.firstAt.IsZero() {
		w.firstAt = now
	}
	w.lastAt = now
}

func (w *Watcher) nudge() {
	select {
	case w.wake <- struct{}{}:
	default: // already nudged
	}
}

// due reports whether the pending changes should be delivered now: the tree
// has been quiet for Debounce, or the oldest change has waited MaxDelay,
// and git is not in the middle of changing the tree. If not, wait is how
// long until it might be.
func (w *Watcher) due(now time.Time) (due bool, wait time.Duration) {
	w.pendMu.Lock()
	if len(w.pending) == 0 && !w.rescan {
		w.pendMu.Unlock()
		return false, 0
	}
	quiet, age := now.Sub(w.lastAt), now.Sub(w.firstAt)
	w.pendMu.Unlock()
	if quiet < w.opts.Debounce && age < w.opts.MaxDelay {
		return false, min(w.opts.Debounce-quiet, w.opts.MaxDelay-age)
	}
	if age < gitLockMaxDelay && w.gitBusy() {
		w.gitHeld = true
		return false, w.opts.Debounce
	}
	if w.gitHeld {
		// git has just released its lock: the events of its last writes may
		// still be on their way from inotify, so the release counts as one
		// more change and the batch waits for another quiet period.
		w.gitHeld = false
		w.pendMu.Lock()
		w.touchLocked(now)
		w.pendMu.Unlock()
		return false, w.opts.Debounce
	}
	return true, 0
}

// gitLockMaxDelay bounds how long a batch waits for git's index lock to go
// away (a crashed git can leave a stale lock behind).
const gitLockMaxDelay = 5 * time.Second

// gitBusy reports whether git holds the index lock of a repository at the
// project root. git takes it before a checkout, merge, reset or stash
// touches the working tree and releases it after the last file is written,
// so waiting for it turns one git command into one batch, even when git
// pauses for longer than the debounce (a loaded machine, a large checkout).
func (w *Watcher) gitBusy() bool {
	_, err := os.Lstat(filepath.Join(w.ws.realRoot, ".git", "index.lock"))
	return err == nil
}

// takePending empties the pending set and returns what it held.
func (w *Watcher) takePending() (map[string]fsnotify.Op, bool) {
	w.pendMu.Lock()
	defer w.pendMu.Unlock()
	pending, rescan := w.pending, w.rescan
	w.pending, w.rescan = make(map[string]fsnotify.Op), false
	w.firstAt, w.lastAt = time.Time{}, time.Time{}
	return pending, rescan
}

// run is the batch goroutine.
func (w *Watcher) run() {
	defer close(w.batches)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	armed := false
	poll := time.NewTicker(w.opts.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
			if !armed {
				timer.Reset(w.opts.Debounce)
				armed = true
			}
		case <-poll.C:
			if !w.polling {
				continue
			}
			for p, node := range w.tree.dirs {
				if node.polled {
					w.pollDir(p, node)
				}
			}
		case <-timer.C:
			armed = false
			due, wait := w.due(time.Now())
			if !due {
				if wait > 0 {
					timer.Reset(wait)
					armed = true
				}
				continue
			}
			pending, rescan := w.takePending()
			batch := w.evaluate(pending, rescan)
			if batch.empty() {
				continue
			}
			select {
			case w.batches <- batch:
			case <-w.stop:
				return
			}
		}
	}
}

// WatchedDirs returns the directories watched with inotify, sorted; for
// diagnostics and tests. Directories being polled are not listed.
func (w *Watcher) WatchedDirs() []string {
	var watched []string
	if w.fsw == nil {
		return nil
	}
	for _, p := range w.fsw.WatchList() {
		if rel, ok := w.ws.relToRoot(p); ok {
			watched = append(watched, rel)
		}
	}
	slices.Sort(watched)
	return watched
}
