package watchview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ripple-run/ripple/protocol"
)

// Options configure a View.
type Options struct {
	// Out receives the view: tables, notes and the run's stdout, or the
	// JSON lines.
	Out io.Writer
	// Err receives the run's stderr in the text form (nil: Out). The JSON
	// form writes everything to Out.
	Err io.Writer
	// JSON selects the JSON lines form.
	JSON bool
	// Color turns on ANSI colours in the text form (set it only when Out
	// is a terminal).
	Color bool
	// Width is the terminal's width in columns (0: 100).
	Width int
	// Entry is the watched function ("main:main"), for the headers.
	Entry string
	// MaxQueuedOutput bounds the bytes of run output waiting to be written
	// (0: 8 MiB). Beyond it output is dropped and a
	// "[ripple: N bytes dropped]" marker written in its place, so a run
	// that prints faster than the terminal shows cannot grow the process
	// without bound.
	MaxQueuedOutput int
}

const defaultMaxQueuedOutput = 8 << 20

// WatchInfo describes what is being watched, for the first line.
type WatchInfo struct {
	Root          string
	Entry         string
	Python        string
	PythonVersion string
}

// The View's own events, queued like notifications.
const (
	methodWatching  = "watchview/watching"
	methodInterrupt = "watchview/interrupt"
	methodStopped   = "watchview/stopped"
)

// ErrStopped is returned by Start after Stop.
var ErrStopped = errors.New("watchview: view stopped")

// View shows one execution context's notifications on a terminal (or as
// JSON lines). It is an engine.Client: Notify queues the notification and
// returns at once; the render goroutine, started by Start, writes them in
// order. Stop writes what is queued and waits for the goroutine.
//
// Ownership: mu guards the queue and the lifecycle flags; the model and
// the printers belong to the render goroutine alone, so rendering (which
// may block on a slow terminal) never holds mu and never blocks Notify,
// which the engine calls with its own locks held.
type View struct {
	opts  Options
	model *Model       // render goroutine
	text  *textPrinter // render goroutine; nil in JSON form
	json  *jsonPrinter // render goroutine; nil in text form
	// files are the file/events not yet written (text form): consecutive
	// ones are written as one line. Render goroutine.
	files []protocol.FileEventParams

	mu       sync.Mutex
	queue    []item // guarded by mu
	queued   int    // guarded by mu: bytes of output text in queue
	dropped  int    // guarded by mu: bytes of output dropped and not yet marked
	started  bool   // guarded by mu
	stopping bool   // guarded by mu: no more items are accepted

	wake chan struct{} // capacity 1: "the queue is not empty"
	stop chan struct{} // closed by Stop
	done chan struct{} // closed when the render goroutine returns
	once sync.Once     // closes stop
}

type item struct {
	method string
	params any
}

// New returns a view writing to opts.Out. Start it before connecting it to
// the engine.
func New(opts Options) *View {
	if opts.Err == nil {
		opts.Err = opts.Out
	}
	if opts.MaxQueuedOutput <= 0 {
		opts.MaxQueuedOutput = defaultMaxQueuedOutput
	}
	v := &View{
		opts:  opts,
		model: NewModel(),
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	if opts.JSON {
		v.json = newJSONPrinter(opts.Out)
	} else {
		v.text = &textPrinter{out: opts.Out, err: opts.Err, color: opts.Color, width: opts.Width, lineOf: v.model.Line}
	}
	return v
}

// Start starts the render goroutine. ctx is not used after Start returns;
// the goroutine runs until Stop.
func (v *View) Start(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopping {
		return ErrStopped
	}
	if v.started {
		return errors.New("watchview: view already started")
	}
	v.started = true
	go v.render()
	return nil
}

// Stop stops accepting notifications, writes every one already queued and
// waits for the render goroutine, within ctx. Idempotent.
func (v *View) Stop(ctx context.Context) error {
	v.mu.Lock()
	v.stopping = true
	started := v.started
	v.mu.Unlock()
	v.once.Do(func() { close(v.stop) })
	if !started {
		return nil
	}
	select {
	case <-v.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("watchview: stop: %w", ctx.Err())
	}
}

// Notify queues an engine notification (engine.Client). It never blocks.
func (v *View) Notify(method string, params any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopping {
		return
	}
	if p, ok := params.(protocol.OutputParams); ok {
		v.queueOutputLocked(p)
	} else {
		v.markDroppedLocked()
		v.queue = append(v.queue, item{method, params})
	}
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// queueOutputLocked queues output text, merged into the last queued item
// when that is output of the same stream, within the bound.
func (v *View) queueOutputLocked(p protocol.OutputParams) {
	if v.queued+len(p.Text) > v.opts.MaxQueuedOutput {
		v.dropped += len(p.Text)
		return
	}
	v.markDroppedLocked()
	v.queued += len(p.Text)
	if n := len(v.queue); n > 0 {
		if last, ok := v.queue[n-1].params.(protocol.OutputParams); ok && last.Stream == p.Stream && last.ContextID == p.ContextID {
			last.Text += p.Text
			v.queue[n-1].params = last
			return
		}
	}
	v.queue = append(v.queue, item{protocol.NotifyOutput, p})
}

// markDroppedLocked queues the marker of output dropped so far.
func (v *View) markDroppedLocked() {
	if v.dropped == 0 {
		return
	}
	marker := protocol.OutputParams{Stream: protocol.Stderr, Text: fmt.Sprintf("\n[ripple: %d bytes dropped]\n", v.dropped)}
	v.dropped = 0
	v.queue = append(v.queue, item{protocol.NotifyOutput, marker})
}

// Watching queues the first line: what is watched.
func (v *View) Watching(info WatchInfo) { v.Notify(methodWatching, info) }

// Interrupting queues the note that Ctrl-C interrupted the run.
func (v *View) Interrupting() { v.Notify(methodInterrupt, nil) }

// Stopped queues the last line. Call it before Stop.
func (v *View) Stopped() { v.Notify(methodStopped, nil) }

// take empties the queue.
func (v *View) take() []item {
	v.mu.Lock()
	defer v.mu.Unlock()
	items := v.queue
	v.queue = nil
	v.queued = 0
	return items
}

// render is the render goroutine.
func (v *View) render() {
	defer close(v.done)
	for {
		select {
		case <-v.wake:
			v.write(v.take())
		case <-v.stop:
			v.mu.Lock()
			v.markDroppedLocked()
			v.mu.Unlock()
			v.write(v.take())
			return
		}
	}
}

// write renders items in order.
func (v *View) write(items []item) {
	for _, it := range items {
		if v.json != nil {
			v.writeJSON(it)
		} else {
			v.writeText(it)
		}
	}
	v.flushFiles()
}

func (v *View) writeJSON(it item) {
	p := v.json
	switch x := it.params.(type) {
	case protocol.ExpressionUpdatesParams:
		rows := v.model.Apply(x.Updates)
		for i := range rows {
			p.update(v.model.Run(), &rows[i])
		}
	case protocol.ExecutionCompleteParams:
		p.end(v.model.EndRun(nil))
	case protocol.ExecutionFailedParams:
		res := x.Result
		p.end(v.model.EndRun(&res))
	case protocol.OutputParams:
		p.write(&Event{Event: EventOutput, Run: v.model.Run(), Stream: x.Stream, Text: x.Text})
	case protocol.ExecutionStatusParams:
		for i := range x.Diagnostics {
			p.write(&Event{Event: EventDiagnostic, Run: v.model.Run(), Diagnostic: &x.Diagnostics[i]})
		}
	case protocol.FileEventParams:
		p.write(&Event{Event: EventFile, Path: string(x.Path), Kind: string(x.Kind)})
	case protocol.KernelRestartedParams:
		p.write(&Event{Event: EventRestarted, Reason: x.Reason, Run: v.model.Run()})
	case WatchInfo:
		p.write(&Event{Event: EventWatching, Root: x.Root, Entry: x.Entry, Python: x.Python, PythonVersion: x.PythonVersion})
	default:
		switch it.method {
		case methodInterrupt:
			p.write(&Event{Event: EventInterrupt, Run: v.model.Run()})
		case methodStopped:
			p.write(&Event{Event: EventStopped})
		}
		// Buffer and visualization notifications do not concern a view
		// that opens no buffer and attaches no visualization.
	}
}

func (v *View) writeText(it item) {
	p := v.text
	if _, ok := it.params.(protocol.FileEventParams); !ok {
		v.flushFiles()
	}
	switch x := it.params.(type) {
	case protocol.ExpressionUpdatesParams:
		v.model.Apply(x.Updates)
	case protocol.ExecutionCompleteParams:
		p.table(v.opts.Entry, v.model.EndRun(nil))
	case protocol.ExecutionFailedParams:
		res := x.Result
		p.table(v.opts.Entry, v.model.EndRun(&res))
	case protocol.OutputParams:
		p.output(x.Stream, x.Text)
	case protocol.ExecutionStatusParams:
		for i := range x.Diagnostics {
			d := &x.Diagnostics[i]
			if d.ExpressionID != "" {
				// Its row shows it, with this traceback.
				if p.panics == nil {
					p.panics = make(map[protocol.ExpressionID]*protocol.Diagnostic)
				}
				p.panics[d.ExpressionID] = d
				continue
			}
			sgr, kind := sgrRed, "error"
			if d.Kind == protocol.DiagnosticWarning {
				sgr, kind = sgrYellow, "warning"
			}
			msg := kind + ": " + oneLine(d.Message)
			if where := diagnosticPlace(d); where != "" {
				msg = where + ": " + msg
			}
			p.note(sgr, "· "+msg)
		}
	case protocol.FileEventParams:
		v.files = append(v.files, x)
	case protocol.KernelRestartedParams:
		p.note(sgrYellow, "· kernel restarted, values are computed again: "+oneLine(x.Reason))
	case WatchInfo:
		p.root = x.Root
		p.note(sgrBold, fmt.Sprintf("ripple watch · %s · %s · python %s", x.Root, x.Entry, x.PythonVersion))
		p.note(sgrDim, "  * computed  = cached  ! error  · Ctrl-C interrupts, twice exits")
	default:
		switch it.method {
		case methodInterrupt:
			p.note(sgrYellow, "^C interrupting "+v.opts.Entry+" (Ctrl-C again to exit)")
		case methodStopped:
			p.note(sgrDim, "ripple watch: stopped")
		}
	}
}

// maxFilesListed is how many changed files one note names.
const maxFilesListed = 5

// flushFiles writes the pending file/events as one note (text form).
func (v *View) flushFiles() {
	if len(v.files) == 0 || v.text == nil {
		v.files = v.files[:0]
		return
	}
	parts := make([]string, 0, maxFilesListed+1)
	for i, f := range v.files {
		if i == maxFilesListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(v.files)-maxFilesListed))
			break
		}
		parts = append(parts, string(f.Path)+" "+strings.ToLower(string(f.Kind)))
	}
	v.text.note(sgrDim, "· "+strings.Join(parts, ", "))
	v.files = v.files[:0]
}
