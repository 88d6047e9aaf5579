package jupyter

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSignedMessageRoundTrip(t *testing.T) {
	s := newSigner("secret")
	ids := [][]byte{[]byte("peer-1")}
	h := newHeader("execute_request", "sess")
	frames, err := s.encode(ids, h, nil, map[string]any{"cellId": "c1"}, map[string]any{"code": "x = 1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.decode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Identities[0]) != "peer-1" || m.Header != h || string(m.Parent) != "{}" {
		t.Fatalf("decoded %+v", m)
	}
	var c struct{ Code string }
	if err := json.Unmarshal(m.Content, &c); err != nil || c.Code != "x = 1" {
		t.Fatalf("content %s", m.Content)
	}
	// A frame changed after signing, or another key: dropped.
	frames[len(frames)-1] = []byte(`{"code":"rm -rf /"}`)
	if _, err := s.decode(frames); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered content: %v, want ErrBadSignature", err)
	}
	frames, _ = newSigner("other").encode(ids, h, nil, nil, map[string]any{})
	if _, err := s.decode(frames); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other key: %v, want ErrBadSignature", err)
	}
	// Without a key nothing is signed or checked.
	frames, _ = newSigner("").encode(nil, h, nil, nil, map[string]any{})
	if len(frames[1]) != 0 {
		t.Fatalf("unsigned message has signature %q", frames[1])
	}
	if _, err := newSigner("").decode(frames); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedMessages(t *testing.T) {
	s := newSigner("")
	for name, frames := range map[string][][]byte{
		"no delimiter":   {[]byte("a"), []byte("b")},
		"too few parts":  {delimiter, []byte(""), []byte("{}")},
		"bad header":     {delimiter, nil, []byte("not json"), []byte("{}"), []byte("{}"), []byte("{}")},
		"content no obj": {delimiter, nil, []byte(`{"msg_type":"x"}`), []byte("{}"), []byte("{}"), []byte("[]")},
	} {
		if _, err := s.decode(frames); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: %v, want ErrBadMessage", name, err)
		}
	}
}

func TestConnectionFileErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "k.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"transport":"tcp","ip":"127.0.0.1","shell_port":1,"iopub_port":2,"stdin_port":3,"control_port":4,"hb_port":5,"key":"k","signature_scheme":"hmac-sha256"}`
	if _, err := ReadConnectionFile(write(good)); err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		strings.Replace(good, `"hb_port":5`, `"hb_port":0`, 1):  "hb_port 0 is not a port",
		strings.Replace(good, `"hmac-sha256"`, `"hmac-md5"`, 1): `signature_scheme "hmac-md5"`,
		strings.Replace(good, `"tcp"`, `"ipc"`, 1):              `transport "ipc"`,
		strings.Replace(good, `"ip":"127.0.0.1"`, `"ip":""`, 1): "no ip",
		`{"transport": 3}`: "cannot unmarshal",
		strings.Replace(good, `"shell_port":1`, `"shell_port":70000`, 1): "shell_port 70000 is not a port",
	} {
		_, err := ReadConnectionFile(write(body))
		if !errors.Is(err, ErrConnectionFile) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

func TestHistoryGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, text string
		want          bool
	}{
		{"1?2*", "1+2+3", true},
		{"1?2*", "[n*n for n in range(1, 4)]", false},
		{"*", "a\nb/c", true},
		{"a.b", "axb", false},
		{"*sleep*", "import time\ntime.sleep(1)", true},
		{"[xy] = *", "x = 1", true},
		{"[^xy] = *", "x = 1", false},
		{"[]] *", "] a", true},
		{"A*", "a", false}, // GLOB is case-sensitive
		{"[ab", "[ab", true},
	} {
		re := globRegexp(c.pattern)
		if got := re != nil && re.MatchString(c.text); got != c.want {
			t.Errorf("globRegexp(%q) matches %q: %v", c.pattern, c.text, got)
		}
	}
}

func TestSplitException(t *testing.T) {
	for msg, want := range map[string][2]string{
		"ZeroDivisionError: division by zero":                     {"ZeroDivisionError", "division by zero"},
		"ripple_kernel.jupyter_boot.StdinNotImplementedError: no": {"StdinNotImplementedError", "no"},
		"KeyboardInterrupt":                                       {"KeyboardInterrupt", ""},
		"something went wrong: badly":                             {"Exception", "something went wrong: badly"},
	} {
		if n, v := splitException(msg); n != want[0] || v != want[1] {
			t.Errorf("splitException(%q) = %q, %q", msg, n, v)
		}
	}
}
