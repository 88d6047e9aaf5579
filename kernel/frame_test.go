package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{0, '\n', 0xff, 'x'}, 300_000) // larger than the read buffer
	frames := []frame{
		{kindReq, 1, []byte(`{"method":"ping","params":{}}`)},
		{kindOut, 7, []byte("line one\nline two\n")},
		{kindErr, 7, []byte("\x00\x01binary\r\n\xff")},
		{kindOut, 0, big},
		{kindProg, 18446744073709551615 >> 1, []byte(`{}`)},
		{kindRes, 3, nil},
		{kindReady, 0, []byte(`{"pid":1}`)},
	}
	var stream []byte
	for _, f := range frames {
		stream = appendFrame(stream, f.kind, f.id, f.payload)
	}
	fr := newFrameReader(bytes.NewReader(stream))
	for i, want := range frames {
		got, err := fr.next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.kind != want.kind || got.id != want.id || !bytes.Equal(got.payload, want.payload) {
			t.Fatalf("frame %d: got %s %d (%d bytes), want %s %d (%d bytes)",
				i, got.kind, got.id, len(got.payload), want.kind, want.id, len(want.payload))
		}
	}
	if _, err := fr.next(); err != io.EOF {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

func TestFrameReaderRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, input string
		want        error
	}{
		{"unknown kind", "bogus 1 2\nab", ErrProtocol},
		{"missing id", "out 2\nab", ErrProtocol},
		{"signed length", "out 1 +2\nab", ErrProtocol},
		{"negative length", "out 1 -2\nab", ErrProtocol},
		{"hex length", "out 1 0x2\nab", ErrProtocol},
		{"empty length", "out 1 \n", ErrProtocol},
		{"extra field", "out 1 2 3\nab", ErrProtocol},
		{"leading space", " out 1 2\nab", ErrProtocol},
		{"double space", "out  1 2\nab", ErrProtocol},
		{"long header", "out 1 " + strings.Repeat("0", 60) + "2\nab", ErrProtocol},
		{"length over limit", "out 1 99999999999\n", ErrProtocol},
		{"id overflow", "out 99999999999999999999 1\na", ErrProtocol},
		{"cut header", "out 1 2", io.ErrUnexpectedEOF},
		{"cut payload", "out 1 5\nab", io.ErrUnexpectedEOF},
		{"cut big payload", "out 1 100000\nab", io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		_, err := newFrameReader(strings.NewReader(c.input)).next()
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	// A header line without a newline in the whole buffer.
	_, err := newFrameReader(strings.NewReader(strings.Repeat("x", readBufferSize+10))).next()
	if !errors.Is(err, ErrProtocol) {
		t.Errorf("endless header: err = %v", err)
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr",
		"\x00\x01\x1f control", "unicode é ü 漢字 🎉", "invalid \xff\xfe utf8",
		"cut \xe6\xbc sequence", "\u2028 separators \u2029", "</script>&",
	}
	for _, s := range cases {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q: encoded %s is not JSON: %v", s, got, err)
			continue
		}
		ref, _ := json.Marshal(s)
		var want string
		json.Unmarshal(ref, &want)
		if back != want {
			t.Errorf("%q: decodes to %q, want %q", s, back, want)
		}
		if !utf8.Valid(got) {
			t.Errorf("%q: encoding is not valid UTF-8", s)
		}
	}
}

func TestAppendCallPayload(t *testing.T) {
	t.Parallel()
	cases := []struct {
		params any
		want   string
	}{
		{nil, `{"method":"m","params":{}}`},
		{json.RawMessage(nil), `{"method":"m","params":{}}`},
		{json.RawMessage(`{"a":1}`), `{"method":"m","params":{"a":1}}`},
		{map[string]int{"b": 2}, `{"method":"m","params":{"b":2}}`},
	}
	for _, c := range cases {
		got, err := appendCallPayload(nil, "m", c.params)
		if err != nil || string(got) != c.want {
			t.Errorf("params %v: %s, %v; want %s", c.params, got, err, c.want)
		}
	}
}

func BenchmarkFrameEncode(b *testing.B) {
	payload := []byte(`{"method":"eval","params":{"code":"x = 1"}}`)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		buf = appendFrame(buf[:0], kindReq, 123456, payload)
	}
}

// repeatReader serves the same bytes forever.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func benchmarkDecode(b *testing.B, payload []byte) {
	stream := appendFrame(nil, kindOut, 42, payload)
	fr := newFrameReader(&repeatReader{data: stream})
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		f, err := fr.next()
		if err != nil || len(f.payload) != len(payload) {
			b.Fatalf("next: %v", err)
		}
	}
}

func BenchmarkFrameDecodeSmall(b *testing.B) {
	benchmarkDecode(b, []byte(`{"status":"ok","value":{}}`))
}

func BenchmarkFrameDecode64KiB(b *testing.B) {
	benchmarkDecode(b, bytes.Repeat([]byte("y"), 64<<10-32))
}

func BenchmarkFrameDecode1MiB(b *testing.B) {
	benchmarkDecode(b, bytes.Repeat([]byte("y"), 1<<20))
}
