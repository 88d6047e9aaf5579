package jsonstr

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendRoundTrips(t *testing.T) {
	cases := []string{"", "plain", `quote " and \ backslash`, "ctl \x00\x01\n\r\t\x1f", "é ü 日本 🎉", "sep \u2028 \u2029", "<&>"}
	for _, s := range cases {
		out := Append(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil || back != s {
			t.Errorf("Append(%q) = %s: decodes to %q, %v", s, out, back, err)
		}
		if strings.ContainsRune(string(out), '\u2028') {
			t.Errorf("Append(%q) left U+2028 unescaped", s)
		}
	}
	// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
	out := Append(nil, "bad \xff byte")
	var back string
	if err := json.Unmarshal(out, &back); err != nil || back != "bad \ufffd byte" || !utf8.Valid(out) {
		t.Errorf("invalid UTF-8: %s -> %q, %v", out, back, err)
	}
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 256)
	s := strings.Repeat("x = 1\n", 20)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], s)
	}
}
