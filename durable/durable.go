package durable

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the log's file inside the state directory (.ripple).
const FileName = "state.db"

// format marks a bbolt file as ripple's log; a file without it is foreign.
const format = "ripple-durable-1"

var (
	bucketMeta     = []byte("meta")
	bucketEvents   = []byte("events")
	bucketData     = []byte("data")
	bucketSnapshot = []byte("snapshot")
	keyFormat      = []byte("format")
)

var (
	// ErrLocked means another process has the log open.
	ErrLocked = errors.New("the state log is in use by another process")
	// ErrClosed means the Log was closed.
	ErrClosed = errors.New("the state log is closed")
	// errDamaged marks a file Open moves aside.
	errDamaged = errors.New("damaged state log")
)

// Event sets (Kind, Key) to Data; empty (or nil) Data deletes the entry.
type Event struct {
	Kind string
	Key  string
	Data []byte
}

// Options configures Open.
type Options struct {
	// Logger gets the one warning line about a file moved aside.
	Logger *slog.Logger
	// CompactEvery folds the events into the snapshot once more than this
	// many have accumulated (default 200: a keystroke's event holds the
	// whole buffer, and 200 of a 1,000-line module are 6 MB to read at
	// start; see BenchmarkLogSize100kEdits).
	CompactEvery int
	// LockTimeout bounds the wait for another process's lock (default 1s).
	LockTimeout time.Duration
	// OnDamage, if set, is called for a file Open moves aside, with what
	// was wrong (ripple serve lists it in runtime/status).
	OnDamage func(file, movedTo, detail string)
}

// Log is an open event log. See the package doc for its invariants.
type Log struct {
	db    *bolt.DB
	path  string
	every int

	mu         sync.Mutex
	pending    []*request // guarded by mu
	committing bool       // guarded by mu: a leader is committing
	closed     bool       // guarded by mu
	tail       int        // guarded by mu (written by the leader): events since the last compaction
	// readOnly, set once by Open, is why the file was opened read-only (a
	// read-only file system or file): every write fails with it.
	readOnly error
	// failing is the error of the last commit or Probe, nil once one
	// succeeds (guarded by mu): a log whose disk is full, read-only or
	// failing refuses changes until a write works again (PROTOCOL.md 8.5).
	failing error
}

type request struct {
	ev   Event
	err  error
	done chan struct{}
}

// Open opens (or creates) the log in dir, creating dir. A damaged or
// foreign file is moved aside with one warning and a fresh log started; see
// the package doc. MovedAside says where it went ("" if nothing was moved).
func Open(dir string, opt Options) (l *Log, movedAside string, err error) {
	if opt.CompactEvery <= 0 {
		opt.CompactEvery = 200
	}
	if opt.LockTimeout <= 0 {
		opt.LockTimeout = time.Second
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", fmt.Errorf("state directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, FileName)
	if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		// bbolt would make a new log of it, silently: but a log is never
		// empty once created (bbolt writes its first pages before Open
		// returns), so what it held is gone, and that is said.
		aside, merr := MoveAside(dir, "empty")
		if merr != nil {
			return nil, "", fmt.Errorf("state log %s is empty (0 bytes); moving it aside: %w", p, merr)
		}
		opt.Logger.Warn("state log was empty (0 bytes): the unsaved buffers and contexts it held are lost; moved aside, starting fresh", "file", p, "movedTo", aside)
		if opt.OnDamage != nil {
			opt.OnDamage(p, aside, "empty (0 bytes): the unsaved buffers and contexts it held are lost")
		}
		l, err = open(p, opt)
		return l, aside, err
	}
	_, serr := os.Lstat(p)
	l, err = open(p, opt)
	if errors.Is(err, syscall.ENOSPC) && errors.Is(serr, os.ErrNotExist) {
		removeEmpty(p)
	}
	if err == nil || !errors.Is(err, errDamaged) {
		return l, "", err
	}
	aside, merr := MoveAside(dir, "corrupt")
	if merr != nil {
		return nil, "", fmt.Errorf("%w; moving it aside: %v", err, merr)
	}
	opt.Logger.Warn("state log unusable, moved aside; starting fresh", "file", p, "movedTo", aside, "err", err)
	if opt.OnDamage != nil {
		opt.OnDamage(p, aside, err.Error()+": the unsaved buffers and contexts it held are not restored")
	}
	l, err = open(p, opt)
	return l, aside, err
}

// removeEmpty removes p if it is an empty file: a new log that a full disk
// kept from being written is left empty by bbolt, and the next Open would
// move it aside as a lost log. Only after ENOSPC: another server starting
// at the same moment cannot have written its log either.
func removeEmpty(p string) {
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		os.Remove(p)
	}
}

// MoveAside renames dir's log to state.db.<why>-<UTC time> and returns the
// new path ("" if there was no log). ripple serve --fresh uses it: the old
// log is kept, never deleted.
func MoveAside(dir, why string) (string, error) {
	p := filepath.Join(dir, FileName)
	if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	to := p + "." + why + "-" + stamp
	if err := os.Rename(p, to); err != nil {
		return "", err
	}
	return to, nil
}

func open(p string, opt Options) (*Log, error) {
	db, err := bolt.Open(p, 0o644, &bolt.Options{Timeout: opt.LockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", p, ErrLocked)
	}
	var readOnly error
	if err != nil && cannotWrite(err) {
		// A read-only file system or file: the log that is there is read
		// (its state restored) and every change refused (see Failing).
		if ro, rerr := bolt.Open(p, 0o444, &bolt.Options{Timeout: opt.LockTimeout, ReadOnly: true}); rerr == nil {
			db, err, readOnly = ro, nil, fmt.Errorf("state log %s is read-only: %w", p, err)
		}
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s: %w", p, ErrLocked)
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && !errors.Is(err, bolterrors.ErrInvalid) {
			// A permission problem or the like: not the file's content.
			return nil, fmt.Errorf("state log %s: %w", p, err)
		}
		return nil, fmt.Errorf("%w %s: %v", errDamaged, p, err)
	}
	l := &Log{db: db, path: p, every: opt.CompactEvery, readOnly: readOnly, failing: readOnly}
	if err := l.init(); err != nil {
		db.Close()
		return nil, err
	}
	return l, nil
}

// init checks the format marker (creating it in a new file) and reads the
// whole state once, so damaged pages show now, not at the first Append.
func (l *Log) init() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w %s: %v", errDamaged, l.path, r)
		}
	}()
	// A View first: a file that is moved aside is kept exactly as found.
	fresh := false
	err = l.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			var foreign []byte
			_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				foreign = name
				return errStop
			})
			if foreign != nil {
				return fmt.Errorf("%w %s: a bbolt file that is not ripple's (bucket %q, no format marker)", errDamaged, l.path, foreign)
			}
			fresh = true
			return nil
		}
		if f := meta.Get(keyFormat); string(f) != format {
			return fmt.Errorf("%w %s: format %q, want %q", errDamaged, l.path, f, format)
		}
		if tx.Bucket(bucketEvents) == nil || tx.Bucket(bucketData) == nil || tx.Bucket(bucketSnapshot) == nil {
			return fmt.Errorf("%w %s: buckets missing", errDamaged, l.path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if fresh && l.readOnly != nil {
		return nil // nothing to read, nothing can be written
	}
	if fresh {
		err = l.db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketEvents, bucketData, bucketSnapshot} {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			return tx.Bucket(bucketMeta).Put(keyFormat, []byte(format))
		})
		if err != nil {
			return err
		}
	}
	st, err := l.load()
	if err != nil {
		return err
	}
	l.tail = st.tail
	return nil
}

var errStop = errors.New("stop")

// cannotWrite reports whether err says the file cannot be opened for
// writing (as opposed to not being there or being damaged).
func cannotWrite(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
}

// State is the fold of the log: Kind -> Key -> Data.
type State map[string]map[string][]byte

// Get returns the entry (Kind, Key) and whether it is set.
func (s State) Get(kind, key string) ([]byte, bool) {
	d, ok := s[kind][key]
	return d, ok
}

func (s State) apply(ev Event) {
	if len(ev.Data) == 0 {
		delete(s[ev.Kind], ev.Key)
		return
	}
	m := s[ev.Kind]
	if m == nil {
		m = map[string][]byte{}
		s[ev.Kind] = m
	}
	m[ev.Key] = ev.Data
}

type loaded struct {
	state State
	tail  int
}

// Load returns the current state: the snapshot with the events after it
// applied in order.
func (l *Log) Load() (State, error) {
	st, err := l.load()
	return st.state, err
}

func (l *Log) load() (st loaded, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w %s: %v", errDamaged, l.path, r)
		}
	}()
	st.state = State{}
	err = l.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketSnapshot) == nil {
			return nil // a new file opened read-only: empty
		}
		err := tx.Bucket(bucketSnapshot).ForEachBucket(func(kind []byte) error {
			m := map[string][]byte{}
			st.state[string(kind)] = m
			return tx.Bucket(bucketSnapshot).Bucket(kind).ForEach(func(k, v []byte) error {
				m[string(k)] = bytes.Clone(v)
				return nil
			})
		})
		if err != nil {
			return err
		}
		data := tx.Bucket(bucketData)
		return tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			ev, err := decodeEvent(l.path, k, v, data)
			if err != nil {
				return err
			}
			st.state.apply(ev)
			st.tail++
			return nil
		})
	})
	return st, err
}

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Append commits ev, sharing the fsync with concurrent Appends (group
// commit), and returns once it is durable. An error means it may or may not
// be in the log. ctx bounds only the wait for another caller's commit.
func (l *Log) Append(ctx context.Context, ev Event) error {
	if l.readOnly != nil {
		return l.readOnly
	}
	r := &request{ev: ev, done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.pending = append(l.pending, r)
	if l.committing {
		l.mu.Unlock()
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.committing = true
	for len(l.pending) > 0 {
		batch := l.pending
		l.pending = nil
		compact := l.tail+len(batch) > l.every
		l.mu.Unlock()
		err := l.commit(batch, compact)
		for _, b := range batch {
			b.err = err
			close(b.done)
		}
		l.mu.Lock()
		l.failing = err
		switch {
		case err != nil:
		case compact:
			l.tail = 0
		default:
			l.tail += len(batch)
		}
	}
	l.committing = false
	l.mu.Unlock()
	return r.err
}

// commit writes batch in one transaction (one fsync); with compact, it also
// folds every event into the snapshot and deletes the events.
func (l *Log) commit(batch []*request, compact bool) error {
	return l.db.Update(func(tx *bolt.Tx) error {
		events, data := tx.Bucket(bucketEvents), tx.Bucket(bucketData)
		for _, b := range batch {
			seq, err := events.NextSequence()
			if err != nil {
				return err
			}
			h, err := json.Marshal(header{Kind: b.ev.Kind, Key: b.ev.Key, Delete: len(b.ev.Data) == 0})
			if err != nil {
				return err
			}
			var k [8]byte
			binary.BigEndian.PutUint64(k[:], seq)
			if err := events.Put(k[:], h); err != nil {
				return err
			}
			if len(b.ev.Data) > 0 {
				if err := data.Put(k[:], b.ev.Data); err != nil {
					return err
				}
			}
		}
		if compact {
			return l.compact(tx)
		}
		return nil
	})
}

// compact folds the events into the snapshot and deletes them: newest
// first, so each (Kind, Key) is written once, with its last value.
func (l *Log) compact(tx *bolt.Tx) error {
	events, data, snap := tx.Bucket(bucketEvents), tx.Bucket(bucketData), tx.Bucket(bucketSnapshot)
	type entry struct{ kind, key string }
	seen := map[entry]bool{}
	var keys [][]byte
	c := events.Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		keys = append(keys, bytes.Clone(k))
		var h header
		if err := json.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("event %x: %w", k, err)
		}
		e := entry{h.Kind, h.Key}
		if seen[e] {
			continue
		}
		seen[e] = true
		ev := Event{Kind: h.Kind, Key: h.Key}
		if !h.Delete {
			if ev.Data = data.Get(k); ev.Data == nil {
				return fmt.Errorf("event %x: its data is missing", k)
			}
		}
		if err := applyTo(snap, ev); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if err := events.Delete(k); err != nil {
			return err
		}
		if err := data.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// header is an event as stored in the events bucket; its Data is in the
// data bucket under the same sequence key (raw bytes, no encoding).
type header struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Delete bool   `json:"delete,omitempty"`
}

func decodeEvent(path string, k, v []byte, data *bolt.Bucket) (Event, error) {
	var h header
	if err := json.Unmarshal(v, &h); err != nil {
		return Event{}, fmt.Errorf("%w %s: event %x: %v", errDamaged, path, k, err)
	}
	ev := Event{Kind: h.Kind, Key: h.Key}
	if !h.Delete {
		d := data.Get(k)
		if d == nil {
			return Event{}, fmt.Errorf("%w %s: event %x: its data is missing", errDamaged, path, k)
		}
		ev.Data = bytes.Clone(d)
	}
	return ev, nil
}

func applyTo(snap *bolt.Bucket, ev Event) error {
	if len(ev.Data) == 0 {
		if b := snap.Bucket([]byte(ev.Kind)); b != nil {
			return b.Delete([]byte(ev.Key))
		}
		return nil
	}
	b, err := snap.CreateBucketIfNotExists([]byte(ev.Kind))
	if err != nil {
		return err
	}
	return b.Put([]byte(ev.Key), ev.Data)
}

// keyProbe is the meta entry Probe writes: the time of the last probe.
var keyProbe = []byte("probe")

// Probe commits a small write (the meta bucket's probe time) and reports
// whether the log can be written now: nil, or the write's error (a full
// disk: ENOSPC, a read-only file system: EROFS, EIO). ripple serve probes
// once at start, so a full disk is said before the first edit; the engine
// probes before a change while Failing, so writing again is noticed.
func (l *Log) Probe() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.Unlock()
	if l.readOnly != nil {
		return l.readOnly // opened read-only: a restart opens it for writing again
	}
	var stamp [8]byte
	binary.BigEndian.PutUint64(stamp[:], uint64(time.Now().UnixNano()))
	err := l.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyProbe, stamp[:]) })
	l.mu.Lock()
	l.failing = err
	l.mu.Unlock()
	return err
}

// Failing returns the error of the last commit or Probe; nil if it
// succeeded (or none was made).
func (l *Log) Failing() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failing
}

// Stats reports the log's size: events since the last compaction and the
// file's size in bytes.
func (l *Log) Stats() (tail int, fileBytes int64) {
	l.mu.Lock()
	tail = l.tail
	l.mu.Unlock()
	_ = l.db.View(func(tx *bolt.Tx) error {
		fileBytes = tx.Size()
		return nil
	})
	return tail, fileBytes
}

// Close waits for no commit to be in progress and closes the file; later
// Appends get ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.db.Close() // bbolt's Close waits for open transactions
}
