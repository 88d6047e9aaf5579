package jupyter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// Backend is what runs the code: the ripple engine (Session), or a test's
// stand-in. Calls come one at a time from the shell loop, except
// Interrupt, which the control loop (or SIGINT) calls at any time.
type Backend interface {
	// Info is the kernel_info_reply's language_info and banner.
	Info() KernelInfo
	// Execute runs one cell, publishing what it shows through out.
	Execute(ctx context.Context, req ExecuteRequest, out Output) ExecuteResult
	// Complete and Inspect answer at a cursor in code points.
	Complete(ctx context.Context, code string, cursor int) (Completions, error)
	Inspect(ctx context.Context, code string, cursor, detail int) (Inspection, error)
	// IsComplete says whether code is ready to run: "complete",
	// "incomplete" (with the indent of the next line), "invalid" or
	// "unknown".
	IsComplete(ctx context.Context, code string) (status, indent string)
	// Interrupt stops the running cell, if any.
	Interrupt()
}

// KernelInfo is what kernel_info_reply says of the language.
type KernelInfo struct {
	LanguageInfo map[string]any
	Banner       string
	Version      string // ripple's version
}

// ExecuteRequest is an execute_request's content, with the cell id
// frontends put in its metadata.
type ExecuteRequest struct {
	Code         string `json:"code"`
	Silent       bool   `json:"silent"`
	StoreHistory bool   `json:"store_history"`
	AllowStdin   bool   `json:"allow_stdin"`
	StopOnError  bool   `json:"stop_on_error"`
	// UserExpressions are evaluated after the cell, when it succeeded,
	// as ipykernel does (name -> code).
	UserExpressions map[string]string `json:"user_expressions"`
	// Count is the execution count of this request (set by the server).
	Count int `json:"-"`
	// CellID is metadata.cellId (JupyterLab, nbclient), "" when absent.
	CellID string `json:"-"`
}

// ExecuteResult ends an execution: Status "ok", "error" or "aborted".
type ExecuteResult struct {
	Status    string
	EName     string
	EValue    string
	Traceback []string
	// Payload: "page" payloads (object?) for the reply.
	Payload []map[string]any
	// UserExpressions: name -> {status, data, metadata} or {status,
	// ename, evalue, traceback}, for the reply of an "ok" cell.
	UserExpressions map[string]any
	// Parsed is the cell as Python (IPython's transformed input: the
	// history's raw=false), "" when the cell did not get that far.
	Parsed string
}

// CommBackend is a Backend with a comm manager: the frontend's comm
// messages are routed to it, and comm_info_request answers its open
// comms. A Backend without it answers a comm_open as ipykernel does for
// an unknown target (comm_close) and reports no comms.
type CommBackend interface {
	// Comm handles a comm_open, comm_msg or comm_close; what the kernel
	// sent back and printed is published with the request as parent.
	Comm(ctx context.Context, msgType string, content json.RawMessage) (CommReply, error)
	// CommInfo is {comm_id: {"target_name": name}} of the open comms,
	// of target only when target is not "".
	CommInfo(ctx context.Context, target string) (map[string]any, error)
}

// CommReply is what handling a frontend's comm message gave.
type CommReply struct {
	Messages       []CommMessage
	Stdout, Stderr string
}

// CommMessage is a comm message the kernel sends (comm_open, comm_msg,
// comm_close) on iopub.
type CommMessage struct {
	MsgType  string          `json:"msg_type"`
	Content  json.RawMessage `json:"content"`
	Metadata json.RawMessage `json:"metadata"`
}

// Completions is a complete_reply's content.
type Completions struct {
	Matches     []string
	CursorStart int
	CursorEnd   int
	Types       []map[string]any // metadata _jupyter_types_experimental
}

// Inspection is an inspect_reply's content.
type Inspection struct {
	Found bool
	Text  string
}

// Output is how Execute shows things: each call publishes one iopub
// message with the request as parent. Input asks the frontend for a line
// on the stdin channel (input()); it fails when the request does not
// allow stdin or the frontend does not answer before ctx ends.
type Output interface {
	Stream(name, text string)
	Display(data json.RawMessage, metadata json.RawMessage, update bool, displayID string)
	Result(data json.RawMessage, metadata json.RawMessage)
	ClearOutput(wait bool)
	Input(ctx context.Context, prompt string, password bool) (string, error)
}

// ErrStdinNotAllowed: input() in a request with allow_stdin false.
var ErrStdinNotAllowed = errors.New("stdin is not allowed by this frontend (allow_stdin: false)")

// Server serves one kernel's five channels over ZeroMQ in front of a
// Backend. Start binds the sockets and starts its goroutines (heartbeat,
// shell, control, stdin); Stop, or a shutdown_request, ends them.
//
// Invariants:
//   - Each socket is read by exactly one goroutine; shell and control
//     replies are sent by the goroutine that read the request; iopub
//     sends are serialised by iopubMu; stdin sends happen only from the
//     shell goroutine (inside Execute), replies come back on stdinReplies.
//   - The Backend is called from the shell goroutine only, except
//     Interrupt (control goroutine, SIGINT handler).
type Server struct {
	info    ConnectionInfo
	backend Backend
	log     *slog.Logger
	sign    *signer
	session string // this kernel's session id (headers of what it sends)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	shell, control, stdin, iopub, hb zmq4.Socket

	iopubMu sync.Mutex // guards iopub sends

	stdinReplies chan *Message // input_reply messages, read by Output.Input

	shutdownOnce sync.Once
	shutdown     chan bool // receives restart once a shutdown_request was answered

	// history is guarded by histMu (shell goroutine writes, control
	// goroutine may read kernel_info only, never history).
	histMu  sync.Mutex
	history []historyEntry
	count   int // execution count, shell goroutine only
	// abortBefore: execute_requests sent before it are aborted (the
	// last stop_on_error failure's reply time); shell goroutine only.
	abortBefore time.Time
}

type historyEntry struct {
	count  int
	input  string // as typed (raw)
	parsed string // as run (IPython's transformed input)
	output string
	hasOut bool // the cell showed an execute_result
}

// NewServer makes a server for the connection; nothing is bound yet.
func NewServer(info ConnectionInfo, backend Backend, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		info: info, backend: backend, log: log, sign: newSigner(info.Key), session: newID(),
		stdinReplies: make(chan *Message, 1), shutdown: make(chan bool, 1),
	}
}

// Start binds the five sockets and starts serving.
func (s *Server) Start(ctx context.Context) error {
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.shell = zmq4.NewRouter(s.ctx)
	s.control = zmq4.NewRouter(s.ctx)
	s.stdin = zmq4.NewRouter(s.ctx)
	s.iopub = zmq4.NewPub(s.ctx)
	s.hb = zmq4.NewRep(s.ctx)
	for _, b := range []struct {
		sock zmq4.Socket
		port int
		name string
	}{{s.shell, s.info.ShellPort, "shell"}, {s.control, s.info.ControlPort, "control"}, {s.stdin, s.info.StdinPort, "stdin"}, {s.iopub, s.info.IOPubPort, "iopub"}, {s.hb, s.info.HBPort, "hb"}} {
		if err := b.sock.Listen(s.info.endpoint(b.port)); err != nil {
			s.closeSockets()
			s.cancel()
			return fmt.Errorf("jupyter: bind %s on %s: %w", b.name, s.info.endpoint(b.port), err)
		}
	}
	s.wg.Add(4)
	go s.heartbeat()
	go s.serve(s.shell, "shell")
	go s.serve(s.control, "control")
	go s.readStdin()
	s.publish(nil, "status", map[string]string{"execution_state": "starting"})
	return nil
}

// Shutdown is sent restart once a shutdown_request has been answered: the
// process should Stop the server and its backend and exit.
func (s *Server) Shutdown() <-chan bool { return s.shutdown }

// Stop closes the sockets and waits for the server's goroutines.
func (s *Server) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.closeSockets()
	s.wg.Wait()
}

func (s *Server) closeSockets() {
	for _, sock := range []zmq4.Socket{s.shell, s.control, s.stdin, s.iopub, s.hb} {
		if sock != nil {
			_ = sock.Close()
		}
	}
}

func (s *Server) heartbeat() {
	defer s.wg.Done()
	for {
		msg, err := s.hb.Recv()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			continue
		}
		if err := s.hb.Send(msg); err != nil && s.ctx.Err() != nil {
			return
		}
	}
}

// serve reads one ROUTER socket (shell or control) and handles each
// request in turn.
func (s *Server) serve(sock zmq4.Socket, channel string) {
	defer s.wg.Done()
	for {
		raw, err := sock.Recv()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Debug("jupyter: recv", "channel", channel, "err", err)
			continue
		}
		m, err := s.sign.decode(raw.Frames)
		if err != nil {
			s.log.Warn("jupyter: dropped a message", "channel", channel, "err", err)
			continue
		}
		s.handle(sock, channel, m)
	}
}

func (s *Server) readStdin() {
	defer s.wg.Done()
	for {
		raw, err := s.stdin.Recv()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			continue
		}
		m, err := s.sign.decode(raw.Frames)
		if err != nil || m.Header.MsgType != "input_reply" {
			continue
		}
		select {
		case s.stdinReplies <- m:
		default: // nobody waits: a late reply
		}
	}
}

// send sends a message on a ROUTER or PUB socket.
func (s *Server) send(sock zmq4.Socket, identities [][]byte, msgType string, parent *Message, metadata, content any) {
	var ph json.RawMessage
	if parent != nil {
		b, _ := json.Marshal(parent.Header)
		ph = b
	}
	frames, err := s.sign.encode(identities, newHeader(msgType, s.session), ph, metadata, content)
	if err != nil {
		s.log.Error("jupyter: encode", "type", msgType, "err", err)
		return
	}
	if err := sock.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil && s.ctx.Err() == nil {
		s.log.Warn("jupyter: send", "type", msgType, "err", err)
	}
}

// publish sends an iopub message; its topic is the message type, as
// ipykernel's are prefixed ("kernel.<id>.<type>" there; any topic works,
// frontends subscribe to everything).
func (s *Server) publish(parent *Message, msgType string, content any) {
	s.publishMeta(parent, msgType, nil, content)
}

// publishMeta is publish with the message's metadata.
func (s *Server) publishMeta(parent *Message, msgType string, metadata, content any) {
	s.iopubMu.Lock()
	defer s.iopubMu.Unlock()
	s.send(s.iopub, [][]byte{[]byte("kernel." + msgType)}, msgType, parent, metadata, content)
}

func (s *Server) status(parent *Message, state string) {
	s.publish(parent, "status", map[string]string{"execution_state": state})
}

// handle answers one shell or control request between busy and idle.
func (s *Server) handle(sock zmq4.Socket, channel string, m *Message) {
	s.status(m, "busy")
	defer s.status(m, "idle")
	reply := func(content any) {
		s.send(sock, m.Identities, strings.TrimSuffix(m.Header.MsgType, "_request")+"_reply", m, nil, content)
	}
	switch m.Header.MsgType {
	case "kernel_info_request":
		reply(s.kernelInfo())
	case "execute_request":
		s.execute(sock, m)
	case "complete_request":
		reply(s.complete(m))
	case "inspect_request":
		reply(s.inspect(m))
	case "is_complete_request":
		reply(s.isComplete(m))
	case "history_request":
		reply(s.historyReply(m))
	case "comm_info_request":
		reply(s.commInfo(m))
	case "comm_open", "comm_msg", "comm_close":
		s.comm(m)
	case "interrupt_request":
		s.backend.Interrupt()
		reply(map[string]any{"status": "ok"})
	case "shutdown_request":
		var c struct {
			Restart bool `json:"restart"`
		}
		_ = json.Unmarshal(m.Content, &c)
		reply(map[string]any{"status": "ok", "restart": c.Restart})
		s.publish(m, "shutdown_reply", map[string]any{"status": "ok", "restart": c.Restart})
		s.shutdownOnce.Do(func() { s.shutdown <- c.Restart })
	default:
		s.log.Info("jupyter: unknown request", "channel", channel, "type", m.Header.MsgType)
	}
}

func (s *Server) kernelInfo() map[string]any {
	info := s.backend.Info()
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       ProtocolVersion,
		"implementation":         "ripple",
		"implementation_version": info.Version,
		"language_info":          info.LanguageInfo,
		"banner":                 info.Banner,
		"debugger":               false,
		"help_links": []map[string]string{
			{"text": "ripple and Jupyter", "url": "https://github.com/ripple-run/ripple/blob/main/docs/jupyter.md"},
		},
	}
}
