package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// frameKind is the first word of a frame header (kernel/PROTOCOL.md, "Frames").
type frameKind uint8

const (
	kindInvalid frameKind = iota
	kindAuth              // kernel -> Go: the token, first frame only
	kindReady             // kernel -> Go: JSON, handshake done
	kindReq               // Go -> kernel: JSON {"method", "params"}
	kindOut               // kernel -> Go: bytes written to fd 1
	kindErr               // kernel -> Go: bytes written to fd 2
	kindProg              // kernel -> Go: JSON progress event
	kindRes               // kernel -> Go: JSON result, one per request
)

var kindNames = [...]string{
	kindInvalid: "invalid",
	kindAuth:    "auth",
	kindReady:   "ready",
	kindReq:     "req",
	kindOut:     "out",
	kindErr:     "err",
	kindProg:    "prog",
	kindRes:     "res",
}

func (k frameKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

func parseKind(word []byte) frameKind {
	switch string(word) { // no allocation: the compiler compares in place
	case "auth":
		return kindAuth
	case "ready":
		return kindReady
	case "req":
		return kindReq
	case "out":
		return kindOut
	case "err":
		return kindErr
	case "prog":
		return kindProg
	case "res":
		return kindRes
	}
	return kindInvalid
}

const (
	// maxHeader is the longest header line, newline included.
	maxHeader = 64
	// maxPayload bounds any one frame so that a broken peer cannot make
	// the server allocate without limit. Output frames are at most 1 MiB
	// and results 64 KiB; engine progress events stay far below this.
	maxPayload = 64 << 20
	// readBufferSize is the frame reader's buffer: payloads up to this
	// size are returned without copying.
	readBufferSize = 64 << 10
)

// ErrProtocol reports a frame that breaks kernel/PROTOCOL.md. The connection
// it came from cannot be trusted any more and is dropped.
var ErrProtocol = errors.New("kernel protocol error")

// frame is one decoded frame. payload aliases the reader's buffers and is
// valid only until the next call to frameReader.next.
type frame struct {
	kind    frameKind
	id      uint64
	payload []byte
}

// frameReader decodes frames from a stream. Not safe for concurrent use:
// each connection has exactly one reading goroutine.
type frameReader struct {
	r       *bufio.Reader
	limit   int    // largest payload accepted; maxPayload unless lowered
	discard int    // bytes of the previous payload still in r's buffer
	big     []byte // reused for payloads larger than r's buffer
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, readBufferSize), limit: maxPayload}
}

// next returns the next frame. It returns io.EOF only at a clean frame
// boundary; a stream cut inside a frame gives io.ErrUnexpectedEOF, and a
// malformed header an error wrapping ErrProtocol.
func (fr *frameReader) next() (frame, error) {
	if fr.discard > 0 {
		if _, err := fr.r.Discard(fr.discard); err != nil {
			return frame{}, err
		}
		fr.discard = 0
	}
	line, err := fr.r.ReadSlice('\n')
	if err != nil {
		switch {
		case err == io.EOF && len(line) == 0:
			return frame{}, io.EOF
		case err == io.EOF:
			return frame{}, io.ErrUnexpectedEOF
		case errors.Is(err, bufio.ErrBufferFull):
			return frame{}, fmt.Errorf("%w: header line longer than %d bytes", ErrProtocol, maxHeader)
		}
		return frame{}, err
	}
	if len(line) > maxHeader {
		return frame{}, fmt.Errorf("%w: header line longer than %d bytes", ErrProtocol, maxHeader)
	}
	f, n, err := parseHeader(line, fr.limit)
	if err != nil {
		return frame{}, err
	}
	switch {
	case n == 0:
		f.payload = nil
	case n <= fr.r.Size():
		// Peek returns the bytes in place; they are skipped on the next call.
		p, err := fr.r.Peek(n)
		if err != nil {
			return frame{}, unexpectedEOF(err)
		}
		f.payload = p
		fr.discard = n
	default:
		if cap(fr.big) < n {
			fr.big = make([]byte, n)
		}
		f.payload = fr.big[:n]
		if _, err := io.ReadFull(fr.r, f.payload); err != nil {
			return frame{}, unexpectedEOF(err)
		}
	}
	return f, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseHeader parses "<kind> <id> <length>\n" with length <= limit.
func parseHeader(line []byte, limit int) (frame, int, error) {
	body := line[:len(line)-1]
	sp1 := indexByte(body, ' ')
	if sp1 <= 0 {
		return frame{}, 0, fmt.Errorf("%w: malformed header %q", ErrProtocol, line)
	}
	kind := parseKind(body[:sp1])
	if kind == kindInvalid {
		return frame{}, 0, fmt.Errorf("%w: unknown frame kind %q", ErrProtocol, body[:sp1])
	}
	rest := body[sp1+1:]
	sp2 := indexByte(rest, ' ')
	if sp2 < 0 {
		return frame{}, 0, fmt.Errorf("%w: malformed header %q", ErrProtocol, line)
	}
	id, ok := parseDecimal(rest[:sp2], 1<<63)
	if !ok {
		return frame{}, 0, fmt.Errorf("%w: bad request id in header %q", ErrProtocol, line)
	}
	n, ok := parseDecimal(rest[sp2+1:], uint64(limit))
	if !ok {
		return frame{}, 0, fmt.Errorf("%w: bad or too large length in header %q (limit %d)", ErrProtocol, line, limit)
	}
	return frame{kind: kind, id: id}, int(n), nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// parseDecimal parses a non-empty run of ASCII digits no greater than limit.
func parseDecimal(b []byte, limit uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n <= limit
}

// appendFrame appends one encoded frame to dst.
func appendFrame(dst []byte, kind frameKind, id uint64, payload []byte) []byte {
	dst = append(dst, kindNames[kind]...)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(len(payload)), 10)
	dst = append(dst, '\n')
	return append(dst, payload...)
}
