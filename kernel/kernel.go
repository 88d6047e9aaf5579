package kernel

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ripple-run/ripple/internal/jsonstr"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config describes one kernel process.
type Config struct {
	// Python is the interpreter to run (see FindPython). Required.
	Python Interpreter
	// Root is the project root: the kernel's working directory and
	// sys.path[0]. Required.
	Root string
	// ID names the kernel in logs, errors and events; a random one is
	// made when empty.
	ID string
	// Env holds extra "KEY=value" entries added to the server's environment.
	Env []string
	// Preload names modules the kernel imports at start, before it is
	// ready: a warm kernel (an agent's kernels for a test run import
	// pytest before the run needs them). A module that fails to import is
	// logged in the kernel's start-up log and otherwise ignored: the code
	// that needs it gets the error when it imports it.
	Preload []string
	// HoldProgress lets the kernel hold progress frames for a moment
	// (heldprogress.go): only for a kernel whose owner reads what it held
	// when it dies (HeldProgress), so never an agent's, whose owner is
	// across the network.
	HoldProgress bool
	// LogDir receives the startup logs (the kernel's own stderr); default
	// <user cache dir>/ripple/logs. A log is removed when its kernel is
	// stopped on purpose and kept when it dies.
	LogDir string
	// Background receives output that belongs to no running request:
	// bytes written by background threads or child processes between
	// requests. Nil drops it.
	Background Sink
	// StartTimeout bounds process start to ready; default 30 s.
	StartTimeout time.Duration
	// HandshakeTimeout is how long one connection may take to present its
	// token before it is dropped; default 5 s.
	HandshakeTimeout time.Duration
	// InterruptTimeout is how long a request may run on after its context
	// ended and SIGINT was sent; past it the kernel is killed and the call
	// fails with ErrKernelRestarted. Default 2 s.
	InterruptTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// default 2 s.
	StopGrace time.Duration

	// Test hooks.
	scriptDir     string         // use these Python files instead of ScriptDir()
	onListen      func(port int) // called once the handshake port is open
	skipLossGrace bool           // never kill after a lost connection
	// beforeSend and afterSend are called by exchange on the caller's
	// goroutine just before and just after it writes a request's frame.
	beforeSend, afterSend func(id uint64)
}

const (
	defaultStartTimeout     = 30 * time.Second
	defaultHandshakeTimeout = 5 * time.Second
	defaultInterruptTimeout = 2 * time.Second
	defaultStopGrace        = 2 * time.Second
	// connLossGrace: a kernel whose connection broke exits by itself
	// within 1 s; past this grace the Go side kills it.
	connLossGrace = 3 * time.Second
	// stackDumpWait bounds the wait for a stack dump before a kill.
	stackDumpWait = 250 * time.Millisecond
	// stderrTailSize is how much captured stderr is kept for ExitError.
	stderrTailSize = 4 << 10
	// stderrTailLines is how many lines of each stderr source ExitError
	// shows: enough for a faulthandler crash report.
	stderrTailLines = 20
)

var errDiedDuringStart = errors.New("kernel process exited during start")

func (c *Config) withDefaults() Config {
	out := *c
	if out.StartTimeout <= 0 {
		out.StartTimeout = defaultStartTimeout
	}
	if out.HandshakeTimeout <= 0 {
		out.HandshakeTimeout = defaultHandshakeTimeout
	}
	if out.InterruptTimeout <= 0 {
		out.InterruptTimeout = defaultInterruptTimeout
	}
	if out.StopGrace <= 0 {
		out.StopGrace = defaultStopGrace
	}
	if out.LogDir == "" {
		out.LogDir = filepath.Join(cacheBase(), "ripple", "logs")
	}
	if out.ID == "" {
		out.ID = "k-" + randomHex(4)
	}
	return out
}

// ReadyInfo is what a kernel reported in its ready frame.
type ReadyInfo struct {
	PID        int    `json:"pid"`
	PGID       int    `json:"pgid"`
	Python     string `json:"python"`     // sys.version
	Executable string `json:"executable"` // sys.executable
	Protocol   int    `json:"protocol"`
}

// Kernel is one running Python kernel process and its connection.
//
// Goroutines: a Kernel owns two, both ended by the process's exit:
//   - the supervisor (supervise) waits for the process to exit, kills what
//     is left of its process group, reaps it, closes the connection, waits
//     for the reader, records why it ended and closes done;
//   - the reader (readLoop) decodes frames and hands them to the sink of
//     the request in flight.
//
// Requests: at most one is in flight (kernel/PROTOCOL.md, "Ordering").
// The turn channel serialises callers; the turn holder owns nextID, wbuf
// and pbuf, and, after the reader signals resCh, resBuf.
type Kernel struct {
	cfg     Config
	id      string
	cmd     *exec.Cmd
	pid     int // also the process group id (Setpgid)
	logPath string
	tag     string // kernelTagEnv's value in its tree's environments (proctree.go)
	info    ReadyInfo

	death *os.File // write end of the death pipe; closed by the supervisor after reaping

	cell *interruptCell // guarded by mu: says which request a SIGINT is for; unmapped once the process exited

	conn net.Conn // set once before the reader starts; written only by the turn holder
	fr   *frameReader

	turn   chan struct{} // capacity 1: full while a caller holds the kernel
	nextID uint64        // turn holder
	wbuf   []byte        // turn holder: encoded request frame
	pbuf   []byte        // turn holder: request payload

	resCh  chan struct{} // capacity 1: the reader put the in-flight request's result in resBuf
	resBuf []byte        // reader until it signals resCh, then the turn holder

	mu         sync.Mutex
	curID      uint64      // guarded by mu: id of the request in flight, 0 if none
	curSink    Sink        // guarded by mu: its sink
	late       lateSinks   // guarded by mu: LateSinks of recent requests
	exited     bool        // guarded by mu: the process exited; never signal it again
	stopping   bool        // guarded by mu: Stop was called
	killReason string      // guarded by mu: why ripple killed the process, if it did
	lossTimer  *time.Timer // guarded by mu: kills a kernel that outlives its connection

	readers sync.WaitGroup // the reader goroutine, once started
	tail    tailBuffer     // reader: last captured stderr bytes; read after readers.Wait

	done chan struct{} // closed by the supervisor when the kernel is gone
	err  error         // written before done is closed: why the kernel ended

	// remote is set for a kernel on another host (Attach, remote.go): then
	// there is no process, connection or interrupt cell here, cmd and
	// conn are nil, and what needs the host goes through remote.ctl.
	remote *remote
}

// bootstrap starts the Python side from the install directory (argv[1])
// as `python -c bootstrap DIR COMMAND ARGS...`: it runs the text of
// ripple_kernel/loader.py, whose finder serves the ripple_kernel package
// from DIR with a code cache of its own (Python never caches what it
// compiles for a script, and ripple cannot rely on its bytecode cache:
// see loader.py), and calls ripple_kernel.main.main(COMMAND ARGS...).
// COMMAND is "kernel PORT" for a kernel (Start), "labels" or "affected"
// for the static readers of labels.go.
//
// For a kernel, sys.path[0] (the working directory, the project root, for
// -c) becomes DIR before anything is imported, as for a script in DIR: a
// project's own json.py must not shadow the kernel's imports; main then
// makes it the project root. Under -I (labels.go) sys.path has no such
// entry and is left alone. The bootstrap leaves no name of its own in
// __main__ but sys, and main replaces __main__ with the user's.
const bootstrap = `import sys
if sys.argv[2:3] == ["kernel"]:
    sys.path[0] = sys.argv[1]
_p = sys.argv[1] + "/ripple_kernel/loader.py"
_n = {"__name__": "ripple_kernel_bootstrap", "__file__": _p}
with open(_p, "rb") as _f:
    exec(compile(_f.read(), _p, "exec", dont_inherit=True), _n)
_n["install"](sys.argv[1])
del _p, _n, _f
sys.exit(__import__("ripple_kernel.main", fromlist=["main"]).main(sys.argv[2:]))
`

// bootstrapArgs is the command line that runs bootstrap from dir.
func bootstrapArgs(dir string, args ...string) []string {
	return append([]string{"-c", bootstrap, dir}, args...)
}

// kernelCommand is the kernel process of cfg (cfg.Root already absolute):
// bootstrap from the install directory dir, in a process group of its
// own, with the environment of kernel/PROTOCOL.md ("Process and
// connection"). The caller sets its output and extra files.
func kernelCommand(cfg Config, dir string, port int, token, tag string) *exec.Cmd {
	cmd := exec.Command(cfg.Python.Path, append([]string{"-u"}, bootstrapArgs(dir, "kernel", strconv.Itoa(port))...)...)
	cmd.Dir = cfg.Root
	cmd.Env = append(append(os.Environ(), cfg.Env...),
		"RIPPLE_TOKEN="+token, "RIPPLE_ROOT="+cfg.Root, "RIPPLE_KERNEL_ID="+cfg.ID,
		"RIPPLE_DEATH_FD=3", "RIPPLE_INTERRUPT_FD=4", kernelTagEnv+"="+tag)
	if len(cfg.Preload) > 0 {
		cmd.Env = append(cmd.Env, "RIPPLE_PRELOAD="+strings.Join(cfg.Preload, ","))
	}
	cmd.SysProcAttr = procAttr()
	return cmd
}

// Start launches a kernel process and returns once it is ready to serve
// requests (the handshake of kernel/PROTOCOL.md is done). If the process
// dies during start, the error is an *ExitError whose Stderr holds its boot
// errors; if ctx ends first, the process is killed and ctx's cause returned.
func Start(ctx context.Context, cfg Config) (*Kernel, error) {
	cfg = cfg.withDefaults()
	if cfg.Python.Path == "" {
		return nil, fmt.Errorf("kernel %s: %w: Config.Python is empty (use FindPython)", cfg.ID, ErrNoPython)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: project root %q: %w", cfg.ID, cfg.Root, err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("kernel %s: project root %q is not a directory", cfg.ID, cfg.Root)
	}
	cfg.Root = root
	dir := cfg.scriptDir
	if dir == "" {
		if dir, err = ScriptDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(cfg.LogDir, 0o700); err != nil {
		return nil, fmt.Errorf("kernel %s: startup log directory: %w", cfg.ID, err)
	}
	log, err := os.CreateTemp(cfg.LogDir, cfg.ID+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("kernel %s: startup log: %w", cfg.ID, err)
	}
	defer log.Close() // the child has its own copy

	token := randomHex(32)
	acc, err := listen([]byte(token), cfg.HandshakeTimeout)
	if err != nil {
		os.Remove(log.Name())
		return nil, err
	}
	defer acc.close()
	if cfg.onListen != nil {
		cfg.onListen(acc.port())
	}

	// The death pipe: the kernel's sentinel waits for EOF on the read end,
	// which comes when this process (the only holder of the write end)
	// is gone. The write end is close-on-exec: no other child gets it.
	deathR, deathW, err := os.Pipe()
	if err != nil {
		os.Remove(log.Name())
		return nil, fmt.Errorf("kernel %s: death pipe: %w", cfg.ID, err)
	}
	defer deathR.Close()
	cell, cellFile, err := newInterruptCell()
	if err != nil {
		deathW.Close()
		os.Remove(log.Name())
		return nil, fmt.Errorf("kernel %s: %w", cfg.ID, err)
	}
	defer cellFile.Close() // the child has its own copy; the mapping stays

	tag := newKernelTag()
	cmd := kernelCommand(cfg, dir, acc.port(), token, tag)
	if cfg.HoldProgress {
		cmd.Env = append(cmd.Env, "RIPPLE_HELD_JOURNAL="+log.Name()+heldJournalSuffix)
	}
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.ExtraFiles = []*os.File{deathR, cellFile} // fd 3, fd 4
	if err := cmd.Start(); err != nil {
		deathW.Close()
		cell.close()
		os.Remove(log.Name())
		return nil, fmt.Errorf("kernel %s: start %s: %w", cfg.ID, cfg.Python.Path, err)
	}
	k := &Kernel{
		cfg:     cfg,
		id:      cfg.ID,
		cmd:     cmd,
		pid:     cmd.Process.Pid,
		logPath: log.Name(),
		tag:     tag,
		death:   deathW,
		cell:    cell,
		turn:    make(chan struct{}, 1),
		resCh:   make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	go k.supervise()

	if err := k.handshake(ctx, acc); err != nil {
		k.kill("start failed: " + err.Error())
		<-k.done
		var exit *ExitError
		if errors.As(k.err, &exit) && exit.Killed == "" {
			return nil, fmt.Errorf("kernel %s: start: %w", k.id, k.err) // it died on its own: its stderr says why
		}
		return nil, fmt.Errorf("kernel %s: start: %w (startup log: %s)", k.id, err, k.logPath)
	}
	return k, nil
}

func (k *Kernel) handshake(ctx context.Context, acc *acceptor) error {
	ctx, cancel := context.WithTimeoutCause(ctx, k.cfg.StartTimeout,
		fmt.Errorf("%w: no ready frame within %v", ErrHandshake, k.cfg.StartTimeout))
	defer cancel()
	c, err := acc.wait(ctx, k.done)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { c.conn.SetReadDeadline(time.Now()) })
	f, err := c.fr.next()
	if !stop() {
		err = context.Cause(ctx)
	}
	if err == nil && f.kind != kindReady {
		err = fmt.Errorf("%w: first frame after auth is %s, want ready", ErrProtocol, f.kind)
	}
	if err == nil {
		if jerr := json.Unmarshal(f.payload, &k.info); jerr != nil {
			err = fmt.Errorf("%w: ready frame: %v", ErrProtocol, jerr)
		} else if k.info.Protocol != 1 {
			err = fmt.Errorf("%w: kernel speaks protocol %d, want 1", ErrProtocol, k.info.Protocol)
		}
	}
	if err != nil {
		c.conn.Close()
		return err
	}
	c.conn.SetReadDeadline(time.Time{})
	k.mu.Lock()
	if k.exited {
		k.mu.Unlock()
		c.conn.Close()
		return errDiedDuringStart
	}
	k.conn, k.fr = c.conn, c.fr
	k.readers.Add(1)
	k.mu.Unlock()
	go k.readLoop()
	return nil
}

// ID returns the kernel's id (Config.ID or a generated one).
func (k *Kernel) ID() string { return k.id }

// PID returns the kernel's process id, which is also its process group id.
func (k *Kernel) PID() int { return k.pid }

// Info returns what the kernel reported when it became ready.
func (k *Kernel) Info() ReadyInfo { return k.info }

// LogPath returns the kernel's startup log.
func (k *Kernel) LogPath() string { return k.logPath }

// Done is closed when the kernel process is gone and every goroutine of
// the Kernel has ended.
func (k *Kernel) Done() <-chan struct{} { return k.done }

// Err returns why the kernel ended: an *ExitError, or an error wrapping
// ErrStopped after Stop. Nil while the kernel runs.
func (k *Kernel) Err() error {
	select {
	case <-k.done:
		return k.err
	default:
		return nil
	}
}

// Busy reports whether a request is in flight or queued on the kernel.
func (k *Kernel) Busy() bool { return len(k.turn) > 0 }

// Call runs method with params (encoded as JSON; a json.RawMessage is
// sent as is, nil as {}) and returns the method's JSON value. Output and
// progress of the request go to sink (nil drops them) while it runs.
// Calls on one kernel run one at a time, in no guaranteed order.
//
// When ctx ends while the request runs, the kernel is interrupted: Call
// returns an error wrapping ErrInterrupted and context.Cause(ctx) when the
// kernel answers the interrupt, or ErrKernelRestarted after killing a
// kernel that did not stop within Config.InterruptTimeout. A request that
// completed before the interrupt took effect returns its result as usual.
// Other errors: *RemoteError (the method raised), *ExitError (the kernel
// died; also returned to every caller waiting for a turn), ErrStopped.
func (k *Kernel) Call(ctx context.Context, method string, params any, sink Sink) (json.RawMessage, error) {
	if err := k.acquire(ctx, method); err != nil {
		return nil, err
	}
	defer k.release()
	return k.callHeld(ctx, method, params, sink)
}

// callHeld is Call for a caller that holds the turn.
func (k *Kernel) callHeld(ctx context.Context, method string, params any, sink Sink) (json.RawMessage, error) {
	p, err := appendCallPayload(k.pbuf[:0], method, params)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %s: encode params: %w", k.id, method, err)
	}
	k.pbuf = p
	if err := k.exchange(ctx, method, sink); err != nil {
		return nil, err
	}
	if bytes.Equal(k.resBuf, okEmptyResult) {
		return json.RawMessage("{}"), nil
	}
	return k.decodeResult(ctx, method)
}

// Eval runs Python statements in the kernel's persistent __main__
// namespace (method eval, mode exec). Errors as for Call; a Python
// exception is a *RemoteError.
func (k *Kernel) Eval(ctx context.Context, code string, sink Sink) error {
	if err := k.acquire(ctx, "eval"); err != nil {
		return err
	}
	defer k.release()
	p := append(k.pbuf[:0], `{"method":"eval","params":{"code":`...)
	p = appendJSONString(p, code)
	k.pbuf = append(p, "}}"...)
	if err := k.exchange(ctx, "eval", sink); err != nil {
		return err
	}
	if bytes.Equal(k.resBuf, okEmptyResult) {
		return nil // the common case, decoded without allocating
	}
	_, err := k.decodeResult(ctx, "eval")
	return err
}

// Repr evaluates a Python expression in __main__ and returns its repr,
// cut to a few hundred characters (method eval, mode eval).
func (k *Kernel) Repr(ctx context.Context, expr string, sink Sink) (string, error) {
	raw, err := k.Call(ctx, "eval", evalParams{Code: expr, Mode: "eval"}, sink)
	if err != nil {
		return "", err
	}
	var v struct {
		Repr string `json:"repr"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("kernel %s: eval: %w: value %s", k.id, ErrProtocol, raw)
	}
	return v.Repr, nil
}

type evalParams struct {
	Code string `json:"code"`
	Mode string `json:"mode"`
}

var okEmptyResult = []byte(`{"status":"ok","value":{}}`)

// acquire takes the kernel's turn. It fails when ctx ends first (as an
// interrupt that came before the request was sent) or the kernel is gone.
func (k *Kernel) acquire(ctx context.Context, method string) error {
	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		return k.interruptedError(ctx, method)
	case <-k.done:
		return notSent{k.err}
	}
	if ctx.Err() != nil {
		k.release()
		return k.interruptedError(ctx, method)
	}
	select {
	case <-k.done:
		k.release()
		return notSent{k.err}
	default:
	}
	return nil
}

// notSent marks the error of a request that never reached the kernel
// because the kernel was already gone: the request did not run, so it did
// not kill anything (a Pool sends it to the replacement instead).
type notSent struct{ err error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// WasNotSent reports whether a call failed before its request reached the
// kernel because the kernel was already gone: nothing ran, and the call
// may be made again on the slot's next kernel (as Pool.Call does).
func WasNotSent(err error) bool {
	var ns notSent
	return errors.As(err, &ns)
}

// tryAcquire takes the turn only if nobody holds it.
func (k *Kernel) tryAcquire() bool {
	select {
	case k.turn <- struct{}{}:
		return true
	default:
		return false
	}
}

func (k *Kernel) release() { <-k.turn }

var errHealthTimeout = errors.New("health check: no answer to ping")

// pingIfIdle pings the kernel unless a request holds it, and reports
// whether it pinged. A kernel that does not answer within timeout is
// interrupted and, past the interrupt timeout, killed (see exchange).
func (k *Kernel) pingIfIdle(timeout time.Duration) (bool, error) {
	if !k.tryAcquire() {
		return false, nil
	}
	defer k.release()
	ctx, cancel := context.WithTimeoutCause(context.Background(), timeout, errHealthTimeout)
	defer cancel()
	_, err := k.callHeld(ctx, "ping", nil, nil)
	return true, err
}

func (k *Kernel) interruptedError(ctx context.Context, method string) error {
	return fmt.Errorf("kernel %s: %s: %w: %w", k.id, method, ErrInterrupted, context.Cause(ctx))
}

// exchange sends the request in pbuf and waits for its result, which it
// leaves in resBuf. Returns nil once resBuf holds the result. The caller
// holds the turn.
//
// Invariant: exchange returns only when the reader no longer uses sink:
// after the result (the reader's last act for the request), or after done
// (the reader has exited).
func (k *Kernel) exchange(ctx context.Context, method string, sink Sink) error {
	k.nextID++
	id := k.nextID
	k.wbuf = appendFrame(k.wbuf[:0], kindReq, id, k.pbuf)
	select {
	case <-k.resCh: // a result left over from an abandoned request
	default:
	}
	k.mu.Lock()
	if k.exited {
		k.mu.Unlock()
		<-k.done
		return notSent{k.err}
	}
	k.curID, k.curSink = id, sink
	if ls, ok := sink.(LateSink); ok {
		k.late.add(id, ls)
	}
	k.mu.Unlock()

	if k.cfg.beforeSend != nil {
		k.cfg.beforeSend(id)
	}
	var werr error
	if k.remote != nil {
		werr = k.remote.ctl.Send(id, k.pbuf)
	} else {
		_, werr = k.conn.Write(k.wbuf)
	}
	if err := werr; err != nil {
		// The connection only breaks when the kernel is going away; the
		// kernel never read a whole request.
		k.clearCurrent(id)
		k.kill("request write failed: " + err.Error())
		<-k.done
		return notSent{k.err}
	}
	if k.cfg.afterSend != nil {
		k.cfg.afterSend(id)
	}

	ctxDone := ctx.Done()
	var timer *time.Timer
	var timeout <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-k.resCh:
			return nil
		case <-ctxDone:
			select {
			case <-k.resCh: // finished already: no interrupt needed
				return nil
			default:
			}
			// Interrupt once; the request now has InterruptTimeout to end.
			ctxDone = nil
			k.interrupt(id)
			timer = time.NewTimer(k.cfg.InterruptTimeout)
			timeout = timer.C
		case <-timeout:
			k.dumpStacks()
			k.kill(fmt.Sprintf("request %s did not stop within %v of the interrupt", method, k.cfg.InterruptTimeout))
			<-k.done
			select {
			case <-k.resCh: // it finished just before the kill after all
				return nil
			default:
			}
			return fmt.Errorf("kernel %s: %s: %w: %w", k.id, method, ErrKernelRestarted, context.Cause(ctx))
		case <-k.done:
			select {
			case <-k.resCh: // the result arrived before the death
				return nil
			default:
			}
			return k.err
		}
	}
}

func (k *Kernel) clearCurrent(id uint64) {
	k.mu.Lock()
	if k.curID == id {
		k.curID, k.curSink = 0, nil
	}
	k.mu.Unlock()
}

type resultJSON struct {
	Status string          `json:"status"`
	Value  json.RawMessage `json:"value"`
	Error  *RemoteError    `json:"error"`
}

// decodeResult turns the result in resBuf into Call's return values.
func (k *Kernel) decodeResult(ctx context.Context, method string) (json.RawMessage, error) {
	var r resultJSON
	if err := json.Unmarshal(k.resBuf, &r); err != nil {
		return nil, fmt.Errorf("kernel %s: %s: %w: result is not JSON: %v", k.id, method, ErrProtocol, err)
	}
	switch r.Status {
	case "ok":
		if r.Value == nil {
			r.Value = json.RawMessage("null")
		}
		return r.Value, nil
	case "err":
		if r.Error == nil {
			r.Error = &RemoteError{Type: "UnknownError"}
		}
		r.Error.Method = method
		return nil, r.Error
	case "int":
		if ctx.Err() != nil {
			return nil, k.interruptedError(ctx, method)
		}
		return nil, fmt.Errorf("kernel %s: %s: %w by a signal ripple did not send", k.id, method, ErrInterrupted)
	}
	return nil, fmt.Errorf("kernel %s: %s: %w: result status %q", k.id, method, ErrProtocol, r.Status)
}

// readLoop is the reader goroutine: it owns fr and dispatches frames.
func (k *Kernel) readLoop() {
	defer k.readers.Done()
	for {
		f, err := k.fr.next()
		if err != nil {
			k.connLost(err)
			return
		}
		if err := k.dispatch(f); err != nil {
			k.connLost(err)
			return
		}
	}
}

// dispatch hands one frame from the kernel to its request's sink (the
// reader goroutine, local or remote). An error is a protocol error that
// ends the kernel.
func (k *Kernel) dispatch(f frame) error {
	switch f.kind {
	case kindOut, kindErr:
		stream := Stdout
		if f.kind == kindErr {
			stream = Stderr
			k.tail.write(f.payload)
		}
		s, current := k.sinkFor(f.id)
		if !current {
			// Text a thread of an earlier request wrote (kernel/PROTOCOL.md).
			if ls := k.lateSink(f.id); ls != nil {
				ls.LateOutput(stream, f.payload)
				return nil
			}
		}
		if s != nil {
			s.Output(stream, f.payload)
		}
	case kindProg:
		// Progress of a request that is not in flight has no reader.
		if s, current := k.sinkFor(f.id); s != nil && current {
			s.Progress(f.payload)
		}
	case kindRes:
		k.mu.Lock()
		ok := f.id != 0 && f.id == k.curID
		if ok {
			k.curID, k.curSink = 0, nil
		}
		k.mu.Unlock()
		if !ok {
			if k.remote != nil {
				return nil // the answer to a request abandoned on this side
			}
			return fmt.Errorf("%w: result for request %d, which is not in flight", ErrProtocol, f.id)
		}
		k.resBuf = append(k.resBuf[:0], f.payload...)
		k.resCh <- struct{}{}
	default:
		return fmt.Errorf("%w: unexpected %s frame from the kernel", ErrProtocol, f.kind)
	}
	return nil
}

// sinkFor returns the sink of request id and true, or the background sink
// and false when id is not the request in flight.
func (k *Kernel) sinkFor(id uint64) (Sink, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if id != 0 && id == k.curID {
		return k.curSink, true
	}
	return k.cfg.Background, false
}

// lateSink returns the LateSink of an earlier request id, or nil.
func (k *Kernel) lateSink(id uint64) LateSink {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.late.find(id)
}

// connLost handles the end of the reader: a protocol error kills the
// kernel at once; a closed connection means the kernel is exiting (it does
// so within 1 s), and it is killed only if it has not after connLossGrace.
func (k *Kernel) connLost(err error) {
	k.mu.Lock()
	if !k.exited && !errors.Is(err, ErrProtocol) && !k.cfg.skipLossGrace {
		k.lossTimer = time.AfterFunc(connLossGrace, func() {
			k.kill("its connection closed and it did not exit")
		})
	}
	k.mu.Unlock()
	if errors.Is(err, ErrProtocol) {
		k.kill(err.Error())
	}
}

// interrupt interrupts request id, which is in flight: it names id in the
// interrupt cell, then sends SIGINT to the kernel's process group, so the
// kernel attributes the signal to id whenever its handler runs
// (kernel/PROTOCOL.md, "Interrupts"). Nothing is sent once the process
// has exited: its group id could belong to someone else by then.
func (k *Kernel) interrupt(id uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.exited && k.remote != nil {
		k.remote.ctl.Interrupt(id)
		return
	}
	if !k.exited {
		k.cell.announce(id)
		syscall.Kill(-k.pid, syscall.SIGINT)
	}
}

// StopAtBoundary asks the request in flight, if any, to end at its next
// statement boundary: an engine execute then returns its "stopped" result
// once the statement running now has finished and been cached
// (kernel/PROTOCOL.md, "Stops at a statement boundary"). Other requests
// ignore it. A request that has already ended is not affected (ids only
// grow); one that started since is, so a caller must accept a "stopped"
// result it did not ask for.
func (k *Kernel) StopAtBoundary() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.exited && k.curID != 0 && k.remote != nil {
		k.remote.ctl.StopAtBoundary(k.curID)
		return
	}
	if !k.exited && k.curID != 0 {
		k.cell.stopAt(k.curID)
	}
}

// dumpStacks asks the kernel (not its group) to write the stacks of its
// threads to the startup log (faulthandler on SIGUSR1), so that the error
// of a kernel about to be killed shows where it was stuck. It waits for
// the log to grow, briefly: a wedged kernel may not answer.
func (k *Kernel) dumpStacks() {
	if k.remote != nil {
		return // the host dumps its own kernel's stacks before it kills it
	}
	size := func() int64 {
		st, err := os.Stat(k.logPath)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	before := size()
	k.signalPID(syscall.SIGUSR1)
	for deadline := time.Now().Add(stackDumpWait); time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		if size() > before {
			time.Sleep(20 * time.Millisecond) // let the dump finish
			return
		}
	}
}

// signalPID sends sig to the kernel process only.
func (k *Kernel) signalPID(sig syscall.Signal) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.exited {
		syscall.Kill(k.pid, sig)
	}
}

// kill SIGKILLs the kernel's process group, recording why.
func (k *Kernel) kill(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.exited {
		return
	}
	if k.killReason == "" {
		k.killReason = reason
	}
	if k.remote != nil {
		k.killRemote(reason)
		return
	}
	syscall.Kill(-k.pid, syscall.SIGKILL)
}

// supervise is the supervisor goroutine; see Kernel.
func (k *Kernel) supervise() {
	if waitExited(k.pid) == nil {
		k.mu.Lock()
		k.exited = true
		k.mu.Unlock()
		// The kernel is a zombie until reaped below, so its process group
		// id is still reserved: kill what user code left in the group.
		syscall.Kill(-k.pid, syscall.SIGKILL)
	}
	k.cmd.Wait()
	// Then what left the group (setsid) or was orphaned: see proctree.go.
	killTagged(k.tag)
	k.mu.Lock()
	k.exited = true
	k.cell.close() // nobody announces to a process that exited
	conn := k.conn
	if k.lossTimer != nil {
		k.lossTimer.Stop()
	}
	k.mu.Unlock()
	if conn != nil {
		// A forked child of user code may hold the socket open: closing our
		// end is what ends the reader.
		conn.Close()
	}
	k.death.Close() // the sentinel, if it still lives, kills what is left and exits
	k.readers.Wait()
	k.err = k.endError()
	close(k.done)
}

func (k *Kernel) endError() error {
	k.mu.Lock()
	stopping, killed := k.stopping, k.killReason
	k.mu.Unlock()
	if stopping {
		return fmt.Errorf("kernel %s: %w", k.id, ErrStopped)
	}
	e := &ExitError{KernelID: k.id, PID: k.pid, Code: -1, Killed: killed, LogPath: k.logPath}
	if st, ok := k.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		e.Signal = st.Signal()
	} else {
		e.Code = k.cmd.ProcessState.ExitCode()
	}
	captured := lastLines(string(k.tail.bytes()), stderrTailLines)
	logged := lastLines(string(readTail(k.logPath, stderrTailSize)), stderrTailLines)
	switch {
	case captured != "" && logged != "":
		e.Stderr = captured + "\n" + logged
	default:
		e.Stderr = captured + logged
	}
	return e
}

// Stop ends the kernel: SIGTERM to its process group (the kernel exits
// cleanly, running atexit handlers, and kills its children), then SIGKILL
// after Config.StopGrace or when ctx ends. A request in flight fails with
// ErrStopped. Stop waits until the process is gone; it is idempotent and
// safe to call concurrently. A kernel that already died stays reported by
// Err as the *ExitError it was.
func (k *Kernel) Stop(ctx context.Context) error {
	if k.remote != nil {
		return k.stopRemote(ctx)
	}
	k.mu.Lock()
	first := !k.stopping
	k.stopping = true
	if first && !k.exited {
		syscall.Kill(-k.pid, syscall.SIGTERM)
	}
	k.mu.Unlock()
	grace := time.NewTimer(k.cfg.StopGrace)
	defer grace.Stop()
	select {
	case <-k.done:
	case <-grace.C:
		k.kill(fmt.Sprintf("did not stop within %v of SIGTERM", k.cfg.StopGrace))
		<-k.done
	case <-ctx.Done():
		k.kill("stop cancelled: " + context.Cause(ctx).Error())
		<-k.done
	}
	if errors.Is(k.err, ErrStopped) {
		os.Remove(k.logPath)
	}
	os.Remove(k.logPath + heldJournalSuffix) // read by now (HeldProgress), if ever
	return nil
}

// killedByRipple reports whether the Go side killed the process (tests use
// it to tell a kernel that exited by itself from one that was killed).
func (k *Kernel) killedByRipple() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killReason != ""
}

// closeConn closes the Go end of the connection, as a dying server would.
func (k *Kernel) closeConn() {
	k.mu.Lock()
	c := k.conn
	k.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// appendCallPayload appends {"method": method, "params": params}.
func appendCallPayload(dst []byte, method string, params any) ([]byte, error) {
	dst = append(dst, `{"method":`...)
	dst = appendJSONString(dst, method)
	dst = append(dst, `,"params":`...)
	switch p := params.(type) {
	case nil:
		dst = append(dst, "{}"...)
	case json.RawMessage:
		if len(p) == 0 {
			dst = append(dst, "{}"...)
		} else {
			dst = append(dst, p...)
		}
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// appendJSONString appends s as a JSON string (see jsonstr.Append).
func appendJSONString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

// tailBuffer keeps the last stderrTailSize bytes written to it.
type tailBuffer struct {
	buf []byte
}

func (t *tailBuffer) write(p []byte) {
	if len(p) >= stderrTailSize {
		t.buf = append(t.buf[:0], p[len(p)-stderrTailSize:]...)
		return
	}
	if over := len(t.buf) + len(p) - stderrTailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
}

func (t *tailBuffer) bytes() []byte { return t.buf }

// readTail returns the last n bytes of a file (nil if it cannot be read).
func readTail(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, n))
	return b
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("kernel: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}
