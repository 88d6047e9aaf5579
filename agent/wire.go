package agent

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrProtocol marks a frame that breaks agent/PROTOCOL.md: the connection
// that sent it is closed (and only that one).
var ErrProtocol = errors.New("agent protocol error")

// ErrRefused is the coordinator's refusal of an agent's hello (a wrong
// token, no free kernel slot): the agent does not retry.
var ErrRefused = errors.New("refused by the coordinator")

// ErrFenced is a frame refused because its connection's lease expired.
var ErrFenced = errors.New("agent fenced: its lease expired")

// ProtocolVersion is the agent protocol's version, sent in hello.
const ProtocolVersion = 1

// kind is a frame's type (PROTOCOL.md, "Frames").
type kind uint8

const (
	kindInvalid   kind = iota
	kindHello          // a -> c: JSON hello, first frame
	kindWelcome        // c -> a: JSON welcome
	kindRefused        // c -> a: JSON {error}; the connection closes
	kindHeartbeat      // a -> c: JSON {kernels}
	kindAck            // c -> a: heartbeat acknowledged (lease renewed)
	kindKernelUp       // a -> c: JSON kernelInfo: a kernel (re)started
	kindReq            // c -> a: request payload for kernel/boot, id
	kindOut            // a -> c: kernel stdout bytes of request id
	kindErr            // a -> c: kernel stderr bytes
	kindProg           // a -> c: progress event JSON
	kindRes            // a -> c: result payload JSON
	kindFail           // a -> c: JSON failure: the request id did not get a result
	kindInterrupt      // c -> a: interrupt request id
	kindStopAt         // c -> a: stop request id at its next statement boundary
	kindRestart        // c -> a: JSON {reason}: restart kernel
	kindShutdown       // c -> a: stop the kernels and exit
	kindFencedMsg      // c -> a: JSON {error}: the frame's epoch is fenced
	kindError          // c -> a: JSON {error}: a frame was refused (unknown kernel)
	kindMax
)

var kindNames = [...]string{"invalid", "hello", "welcome", "refused", "heartbeat", "ack", "kernelUp",
	"req", "out", "err", "prog", "res", "fail", "interrupt", "stopAtBoundary", "restart", "shutdown", "fenced", "error"}

func (k kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// headerSize: size u32 (bytes after it), kind u8, kernel u16, boot u32,
// epoch u32, id u64; big-endian.
const headerSize = 4 + 1 + 2 + 4 + 4 + 8

// maxPayload bounds one frame's payload (a kernel frame's bound, 64 MiB).
const maxPayload = 64 << 20

// frame is one agent protocol frame.
type frame struct {
	kind    kind
	kernel  uint16 // kernel index on the agent
	boot    uint32 // which start of that kernel (kernelUp's boot)
	epoch   uint32 // the connection's epoch (welcome)
	id      uint64 // request id, the coordinator's
	payload []byte
}

// appendFrame appends f's encoding to dst.
func appendFrame(dst []byte, f frame) []byte {
	var h [headerSize]byte
	binary.BigEndian.PutUint32(h[0:], uint32(headerSize-4+len(f.payload)))
	h[4] = byte(f.kind)
	binary.BigEndian.PutUint16(h[5:], f.kernel)
	binary.BigEndian.PutUint32(h[7:], f.boot)
	binary.BigEndian.PutUint32(h[11:], f.epoch)
	binary.BigEndian.PutUint64(h[15:], f.id)
	dst = append(dst, h[:]...)
	return append(dst, f.payload...)
}

// frameReader decodes frames; a payload is valid until the next call.
type frameReader struct {
	r     *bufio.Reader
	buf   []byte
	limit int // largest payload accepted: maxHello until the hello is read, then maxPayload
}

// maxHello bounds the first frame, read before the token is checked: an
// unauthenticated peer cannot make the coordinator allocate more.
const maxHello = 1 << 20

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), limit: maxPayload}
}

func (fr *frameReader) next() (frame, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(fr.r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return frame{}, fmt.Errorf("%w: connection closed inside a frame header", ErrProtocol)
		}
		return frame{}, err
	}
	size := int(binary.BigEndian.Uint32(h[0:]))
	if size < headerSize-4 || size-(headerSize-4) > fr.limit {
		return frame{}, fmt.Errorf("%w: frame size %d out of range", ErrProtocol, size)
	}
	f := frame{
		kind:   kind(h[4]),
		kernel: binary.BigEndian.Uint16(h[5:]),
		boot:   binary.BigEndian.Uint32(h[7:]),
		epoch:  binary.BigEndian.Uint32(h[11:]),
		id:     binary.BigEndian.Uint64(h[15:]),
	}
	if f.kind == kindInvalid || f.kind >= kindMax {
		return frame{}, fmt.Errorf("%w: unknown frame kind %d", ErrProtocol, h[4])
	}
	n := size - (headerSize - 4)
	if cap(fr.buf) < n {
		fr.buf = make([]byte, n)
	}
	f.payload = fr.buf[:n]
	if _, err := io.ReadFull(fr.r, f.payload); err != nil {
		return frame{}, fmt.Errorf("%w: connection closed inside a %s frame: %v", ErrProtocol, f.kind, err)
	}
	return f, nil
}

// hello is the agent's first frame.
type hello struct {
	Token    string `json:"token"`
	AgentID  string `json:"agentId"`
	RunID    string `json:"runId"` // random per agent process: kernels of another run are not the same kernels
	Host     string `json:"host"`
	Launcher string `json:"launcher"`
	JobID    string `json:"jobId,omitempty"`
	Kernels  int    `json:"kernels"`
	Python   string `json:"python"`
	Protocol int    `json:"protocol"`
	Root     string `json:"root"`
	// Running are the kernels ready now; a reconnecting agent's survivors.
	Running   []kernelInfo `json:"running"`
	LastEpoch uint32       `json:"lastEpoch"`
}

// kernelInfo describes one start of a kernel of the agent.
type kernelInfo struct {
	Index  int    `json:"index"`
	Boot   uint32 `json:"boot"`
	ID     string `json:"id"`
	PID    int    `json:"pid"`
	Python string `json:"python,omitempty"`
	// Reason and Died say why a kernel was replaced (kernelUp only).
	Reason string `json:"reason,omitempty"`
	Died   bool   `json:"died,omitempty"`
}

// welcome answers hello.
type welcome struct {
	Epoch       uint32 `json:"epoch"`
	LeaseMs     int64  `json:"leaseMs"`
	HeartbeatMs int64  `json:"heartbeatMs"`
	Slots       []int  `json:"slots"` // the slot (kernelId) of each kernel index
}

// errorMsg is the payload of refused, fenced and error frames.
type errorMsg struct {
	Error string `json:"error"`
	// IDInUse marks a refused hello whose agent id a connected agent of
	// another process holds (ErrIDInUse).
	IDInUse bool `json:"idInUse,omitempty"`
}

// heartbeatMsg is the payload of heartbeat.
type heartbeatMsg struct {
	Kernels []kernelState `json:"kernels"`
}

type kernelState struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	State string `json:"state"`
}

// failMsg is the payload of fail: why request id got no result.
type failMsg struct {
	// NotSent: the request never reached the kernel (it was gone).
	NotSent bool `json:"notSent,omitempty"`
	// Restarted: the kernel was killed after an unanswered interrupt.
	Restarted bool `json:"restarted,omitempty"`
	// Stopped: the agent is stopping its kernels.
	Stopped bool      `json:"stopped,omitempty"`
	Exit    *exitInfo `json:"exit,omitempty"` // the kernel died
	Message string    `json:"message"`
}

// exitInfo carries a kernel.ExitError.
type exitInfo struct {
	KernelID string `json:"kernelId"`
	PID      int    `json:"pid"`
	Code     int    `json:"code"`
	Signal   int    `json:"signal"`
	Killed   string `json:"killed,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	LogPath  string `json:"logPath,omitempty"`
}

// restartMsg is the payload of restart.
type restartMsg struct {
	Reason string `json:"reason"`
}
