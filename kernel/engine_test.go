package kernel

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// testEngine exercises the kernel API that engine.py relies on. It is
// installed as ripple_kernel/engine.py (withEngine), so it reaches the
// kernel's own modules relatively.
const testEngine = `
import os, signal, sys

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
        ran = []
        with kernel.user_code():
            ran.append("outer")
            with kernel.user_code():
                ran.append("inner")
            ran.append("outer again")
        return {"ran": ran}

    def nested_spin(params):
        # The engine's shape: a statement's region, and inside it the
        # region of a module the statement imports.
        with kernel.user_code():
            with kernel.user_code():
                print("spinning", flush=True)
                while True:
                    pass

    def region_state(params):
        s = kernel.state
        return {"in_user": s.in_user, "pending": s.pending, "request": s.request}

    def inject(params):
        # Runs nested regions with the SIGINT handler called at one
        # bytecode of one call of the region machinery (as if the signal
        # landed there): params where (which code), call (which call of
        # it, 0 = first), at (which bytecode of that call).
        from . import signals
        target = {
            "user_code": type(kernel).user_code.__code__,
            "enter": signals.UserCode.__enter__.__code__,
            "exit": signals.UserCode.__exit__.__code__,
            "nested_enter": signals.Nested.__enter__.__code__,
            "nested_exit": signals.Nested.__exit__.__code__,
        }[params["where"]]
        st = {"calls": 0, "ops": 0, "fired": False}

        def local(frame, event, arg):
            if event == "opcode":
                if st["ops"] == params["at"]:
                    st["fired"] = True
                    kernel.interrupts.on_sigint(signal.SIGINT, frame)
                st["ops"] += 1
            return local

        def start(frame, event, arg):
            if frame.f_code is not target:
                return None
            st["calls"] += 1
            if st["calls"] - 1 != params["call"]:
                return None
            frame.f_trace_opcodes = True
            return local

        ran = []
        sys.settrace(start)
        try:
            with kernel.user_code():
                ran.append("outer")
                with kernel.user_code():
                    ran.append("inner")
                ran.append("outer again")
        finally:
            sys.settrace(None)
        return {"fired": st["fired"], "ran": ran}

    def unserialisable(params):
        return {"obj": object()}

    def huge(params):
        return {"items": list(range(100000))}

    return {"progress": progress, "ordered": ordered, "late": late, "recorded": recorded,
            "nested": nested, "nested_spin": nested_spin, "region_state": region_state,
            "inject": inject, "unserialisable": unserialisable, "huge": huge}
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

// checkRegionsClean fails the test unless the kernel left its user-code
// region, serves the next request normally and still ignores a late
// interrupt.
func checkRegionsClean(t *testing.T, k *Kernel, what string) {
	t.Helper()
	raw, err := k.Call(testCtx(t), "region_state", nil, nil)
	if err != nil {
		t.Fatalf("%s: region_state: %v", what, err)
	}
	var st struct {
		InUser           bool   `json:"in_user"`
		Pending, Request uint64 // Request: region_state's own id
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%s: region_state %s: %v", what, raw, err)
	}
	if st.InUser || st.Pending == st.Request {
		t.Fatalf("%s: kernel region state %s, want out of user code and no interrupt pending", what, raw)
	}
	if raw, err := k.Call(testCtx(t), "late", nil, nil); err != nil || string(raw) != `{"value":499500}` {
		t.Fatalf("%s: then a late interrupt: %s, %v", what, raw, err)
	}
	evalOK(t, k, "x = 1")
}

func TestEngineRegionsNest(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	raw, err := k.Call(testCtx(t), "nested", nil, nil)
	if err != nil || string(raw) != `{"ran":["outer","inner","outer again"]}` {
		t.Fatalf("nested regions: %s, %v", raw, err)
	}
	checkRegionsClean(t, k, "after nested regions")
	for i := 0; i < 5; i++ {
		cause := errors.New("superseded")
		ctx, rec := cancelOn(t, "spinning", cause)
		_, err := k.Call(ctx, "nested_spin", nil, rec)
		if !errors.Is(err, ErrInterrupted) || !errors.Is(err, cause) {
			t.Fatalf("interrupt in an inner region: err = %v, want ErrInterrupted", err)
		}
		checkRegionsClean(t, k, "after an interrupt in an inner region")
	}
}

// An interrupt may land at any bytecode of the region machinery itself:
// in user_code(), in a region's __enter__ or __exit__, outer or inner.
// Wherever it lands, the request ends either interrupted or, when it
// landed in the outermost region's exit (the user code had finished), ok
// with all its user code run; and the kernel's region state is clean.
func TestEngineInterruptAnywhereInNestedRegions(t *testing.T) {
	t.Parallel()
	k := startKernel(t, withEngine(t, testEngine))
	targets := []struct {
		where string
		call  int
	}{
		{"user_code", 0}, {"user_code", 1}, // the outer region's, the inner's
		{"enter", 0}, {"exit", 0}, // the outer region: inner ones are _Nested
		{"nested_enter", 0}, {"nested_exit", 0},
	}
	for _, tg := range targets {
		fired, late := 0, 0
		for at := 0; ; at++ {
			what := tg.where + "#" + strconv.Itoa(tg.call) + " at bytecode " + strconv.Itoa(at)
			params := map[string]any{"where": tg.where, "call": tg.call, "at": at}
			raw, err := k.Call(testCtx(t), "inject", params, nil)
			var v struct {
				Fired bool
				Ran   []string
			}
			if err == nil {
				if jerr := json.Unmarshal(raw, &v); jerr != nil {
					t.Fatalf("%s: %s: %v", what, raw, jerr)
				}
				if !v.Fired {
					break // past the last bytecode
				}
			}
			fired++
			switch {
			case errors.Is(err, ErrInterrupted):
			case err == nil && tg.where == "exit" && len(v.Ran) == 3:
				late++ // a late interrupt: the user code had finished
			default:
				t.Fatalf("%s: %s, %v; want interrupted", what, raw, err)
			}
			checkRegionsClean(t, k, what)
		}
		if fired == 0 {
			t.Fatalf("%s#%d: the handler never ran there", tg.where, tg.call)
		}
		t.Logf("%s#%d: interrupted at %d bytecodes, late (result kept) at %d", tg.where, tg.call, fired-late, late)
	}
}
