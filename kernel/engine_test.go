package kernel

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// testEngine exercises the kernel API that engine.py relies on.
const testEngine = `
import os, signal

def register(kernel):
    def progress(params):
        kernel.emit_progress({"type": "x", "nan": float("nan"), "inf": [float("inf"), float("-inf")], "text": "é\ud800"})
        return {"root": kernel.root}

    def ordered(params):
        with kernel.user_code():
            print("before-progress")
        kernel.flush_output()
        kernel.emit_progress({"type": "after"})
        with kernel.user_code():
            print("after-progress")
        return {}

    def late(params):
        with kernel.user_code():
            x = sum(range(1000))
        os.kill(os.getpid(), signal.SIGINT)  # lands outside the region
        for _ in range(100000):
            pass  # bookkeeping: the handler runs in here
        return {"value": x}

    def recorded(params):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100000):
            pass
        with kernel.user_code():
            return {"reached": True}

    def nested(params):
        with kernel.user_code():
            with kernel.user_code():
                pass
        return {}

    def unserialisable(params):
        return {"obj": object()}

    def huge(params):
        return {"items": list(range(100000))}

    return {"progress": progress, "ordered": ordered, "late": late, "recorded": recorded,
            "nested": nested, "unserialisable": unserialisable, "huge": huge}
`

func TestEngineProgressIsValidJSON(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	rec := &recorder{}
	raw, err := k.Call(testCtx(t), "progress", nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Root string }
	if err := json.Unmarshal(raw, &v); err != nil || v.Root != k.cfg.Root {
		t.Errorf("value %s: kernel.root is not the project root %s", raw, k.cfg.Root)
	}
	if len(rec.progress) != 1 {
		t.Fatalf("got %d progress events, want 1", len(rec.progress))
	}
	ev := rec.progress[0]
	var got struct {
		NaN  any   `json:"nan"`
		Inf  []any `json:"inf"`
		Text string
	}
	if err := json.Unmarshal(ev, &got); err != nil {
		t.Fatalf("progress is not valid JSON: %v: %s", err, ev)
	}
	if got.NaN != "NaN" || len(got.Inf) != 2 || got.Inf[0] != "Infinity" || got.Inf[1] != "-Infinity" {
		t.Errorf("non-finite floats encoded as %v %v", got.NaN, got.Inf)
	}
	if !strings.HasPrefix(got.Text, "é") {
		t.Errorf("text = %q", got.Text)
	}
}

func TestEngineFlushOutputOrdersOutputBeforeProgress(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	for i := 0; i < 20; i++ {
		rec := &recorder{}
		if _, err := k.Call(testCtx(t), "ordered", nil, rec); err != nil {
			t.Fatal(err)
		}
		// print() may write its text and its newline separately.
		got := strings.ReplaceAll(strings.Join(rec.events, "|"), "|stdout:", "")
		want := "stdout:before-progress\n" + `|prog:{"type":"after"}` + "after-progress\n"
		if got != want {
			t.Fatalf("events %q, want output, then progress, then output", rec.events)
		}
	}
}

func TestEngineInterruptOutsideUserCode(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	ctx := testCtx(t)
	// SIGINT after the user code finished: the result stands.
	for i := 0; i < 5; i++ {
		raw, err := k.Call(ctx, "late", nil, nil)
		if err != nil || string(raw) != `{"value":499500}` {
			t.Fatalf("late interrupt: %s, %v", raw, err)
		}
	}
	// SIGINT before the user code: it raises on entering the region.
	_, err := k.Call(ctx, "recorded", nil, nil)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("recorded interrupt: err = %v, want ErrInterrupted", err)
	}
	// The record does not leak into the next request.
	if _, err := k.Call(ctx, "ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	evalOK(t, k, "x = 1")
}

func TestEngineMisuseIsAnError(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	cases := map[string]string{
		"nested":         "RuntimeError",
		"unserialisable": "TypeError",
		"huge":           "ResultTooLarge",
	}
	for method, typ := range cases {
		_, err := k.Call(testCtx(t), method, nil, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Type != typ {
			t.Errorf("%s: err = %v, want %s", method, err, typ)
		}
	}
	evalOK(t, k, "x = 1") // the regions are left cleanly
	if got := reprOK(t, k, "x"); got != "1" {
		t.Errorf("x = %s", got)
	}
}

func TestEngineBootFailureIsReported(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"import error": "raise ImportError('engine cannot load: missing piece')\n",
		"collision":    "def register(kernel):\n    return {'eval': lambda p: {}}\n",
		"not a dict":   "def register(kernel):\n    return None\n",
	}
	wants := map[string]string{
		"import error": "engine cannot load: missing piece",
		"collision":    "collides with a kernel method",
		"not a dict":   "want a dict of handlers",
	}
	for name, src := range cases {
		cfg := Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()}
		withEngine(t, src)(&cfg)
		_, err := Start(testCtx(t), cfg)
		var exit *ExitError
		if !errors.As(err, &exit) || !strings.Contains(err.Error(), wants[name]) {
			t.Errorf("%s: err = %v, want an ExitError quoting %q", name, err, wants[name])
		}
	}
}
