package jupyter

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"sync"
	"time"
)

// ProtocolVersion is the Jupyter messaging protocol version spoken.
const ProtocolVersion = "5.3"

// delimiter separates the routing identities of a message from its parts.
var delimiter = []byte("<IDS|MSG>")

var (
	// ErrBadSignature: a message whose HMAC does not match; it is dropped.
	ErrBadSignature = errors.New("jupyter: message signature does not match")
	// ErrBadMessage: a multipart message that is not a Jupyter message.
	ErrBadMessage = errors.New("jupyter: malformed message")
	// ErrConnectionFile: the connection file cannot be used.
	ErrConnectionFile = errors.New("jupyter: bad connection file")
)

// ConnectionInfo is a kernel's connection file, as Jupyter writes it.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	IOPubPort       int    `json:"iopub_port"`
	StdinPort       int    `json:"stdin_port"`
	ControlPort     int    `json:"control_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// ReadConnectionFile reads and checks a connection file.
func ReadConnectionFile(path string) (ConnectionInfo, error) {
	var ci ConnectionInfo
	b, err := os.ReadFile(path)
	if err != nil {
		return ci, fmt.Errorf("%w: %w", ErrConnectionFile, err)
	}
	if err := json.Unmarshal(b, &ci); err != nil {
		return ci, fmt.Errorf("%w: %s: %w", ErrConnectionFile, path, err)
	}
	return ci, ci.check(path)
}

func (ci ConnectionInfo) check(path string) error {
	if ci.Transport != "tcp" {
		return fmt.Errorf("%w: %s: transport %q: only tcp is supported", ErrConnectionFile, path, ci.Transport)
	}
	if ci.IP == "" {
		return fmt.Errorf("%w: %s: no ip", ErrConnectionFile, path)
	}
	for name, p := range map[string]int{"shell_port": ci.ShellPort, "iopub_port": ci.IOPubPort, "stdin_port": ci.StdinPort, "control_port": ci.ControlPort, "hb_port": ci.HBPort} {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("%w: %s: %s %d is not a port", ErrConnectionFile, path, name, p)
		}
	}
	if ci.Key != "" && ci.SignatureScheme != "hmac-sha256" {
		return fmt.Errorf("%w: %s: signature_scheme %q: only hmac-sha256 is supported", ErrConnectionFile, path, ci.SignatureScheme)
	}
	return nil
}

func (ci ConnectionInfo) endpoint(port int) string {
	return fmt.Sprintf("tcp://%s:%d", ci.IP, port)
}

// Header is a message header.
type Header struct {
	MsgID    string `json:"msg_id"`
	Session  string `json:"session"`
	Username string `json:"username"`
	Date     string `json:"date"`
	MsgType  string `json:"msg_type"`
	Version  string `json:"version"`
}

// Message is one Jupyter message. Content is kept as raw JSON: each
// handler decodes the fields it needs.
type Message struct {
	Identities [][]byte
	Header     Header
	Parent     json.RawMessage // the parent's header, {} when none
	Metadata   json.RawMessage
	Content    json.RawMessage
	Buffers    [][]byte
}

// signer signs and checks messages with the connection's key. Its hash is
// guarded by mu: iopub messages are signed from several goroutines.
type signer struct {
	mu  sync.Mutex
	mac hash.Hash // nil: no key, messages are not signed
}

func newSigner(key string) *signer {
	if key == "" {
		return &signer{}
	}
	return &signer{mac: hmac.New(sha256.New, []byte(key))}
}

func (s *signer) sign(parts ...[]byte) []byte {
	if s.mac == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mac.Reset()
	for _, p := range parts {
		s.mac.Write(p)
	}
	sum := s.mac.Sum(nil)
	out := make([]byte, hex.EncodedLen(len(sum)))
	hex.Encode(out, sum)
	return out
}

// decode parses the frames of a message received on a ROUTER socket
// (identities first) and checks its signature.
func (s *signer) decode(frames [][]byte) (*Message, error) {
	i := 0
	for i < len(frames) && !bytes.Equal(frames[i], delimiter) {
		i++
	}
	if i == len(frames) || len(frames) < i+6 {
		return nil, fmt.Errorf("%w: %d frames without a delimiter and 5 parts", ErrBadMessage, len(frames))
	}
	sig, parts := frames[i+1], frames[i+2:i+6]
	if s.mac != nil {
		want := s.sign(parts...)
		if !hmac.Equal(want, sig) {
			return nil, ErrBadSignature
		}
	}
	m := &Message{Identities: frames[:i], Parent: parts[1], Metadata: parts[2], Content: parts[3], Buffers: frames[i+6:]}
	if err := json.Unmarshal(parts[0], &m.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrBadMessage, err)
	}
	if len(m.Content) == 0 || m.Content[0] != '{' {
		return nil, fmt.Errorf("%w: content of %s is not an object", ErrBadMessage, m.Header.MsgType)
	}
	return m, nil
}

// encode builds the frames of a message: identities, delimiter,
// signature, header, parent, metadata, content.
func (s *signer) encode(identities [][]byte, header Header, parent json.RawMessage, metadata, content any) ([][]byte, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	if len(parent) == 0 {
		parent = json.RawMessage("{}")
	}
	md, err := marshalObject(metadata)
	if err != nil {
		return nil, err
	}
	c, err := marshalObject(content)
	if err != nil {
		return nil, fmt.Errorf("jupyter: %s content: %w", header.MsgType, err)
	}
	frames := make([][]byte, 0, len(identities)+6)
	frames = append(frames, identities...)
	frames = append(frames, delimiter, s.sign(h, parent, md, c), h, parent, md, c)
	return frames, nil
}

func marshalObject(v any) ([]byte, error) {
	if v == nil {
		return []byte("{}"), nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			return []byte("{}"), nil
		}
		return raw, nil
	}
	return json.Marshal(v)
}

// newHeader is the header of a message the kernel sends.
func newHeader(msgType, session string) Header {
	return Header{
		MsgID:    newID(),
		Session:  session,
		Username: "ripple",
		Date:     time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
		MsgType:  msgType,
		Version:  ProtocolVersion,
	}
}

// newID is a random UUID-like id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
