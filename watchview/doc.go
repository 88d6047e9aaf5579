// Package watchview is the terminal view of `ripple watch`: it turns the
// notifications of one execution context into a compact table of the
// watched function's expressions, printed at the end of every run, with
// the run's output streamed in between; or, for scripts, into JSON lines.
//
// Start here: a View is an engine.Client.
//
//	v := watchview.New(watchview.Options{Out: os.Stdout, Color: isTTY, Entry: "main:main"})
//	v.Start(ctx)
//	defer v.Stop(ctx)
//	e.Connect(ctx, "watch", v)
//
// Model keeps the frame's expressions as the updates report them and says
// what each run changed; it is usable on its own.
//
// # The text form
//
// The first run prints every expression, later runs only those whose
// shown state changed (computed again, or now an error, or not reached):
//
//	── main:main · run 2 · 2 recomputed, 1 cached, 1 held · 3.1ms ──
//	  * y       int  60   3.0ms
//	  * z       int  65   2µs
//	  ! w       ZeroDivisionError: division by zero  line 9
//	  ⏸ #2      held: shutil.rmtree('out')  line 10
//	  · total   not reached: held at #2 (line 10)
//
// The mark says how the value came: * computed in this run, = from the
// cache, ! an error (Panic; the line is the statement's, "from x" names
// the statement that raised when it is another one), ⏸ held (the run was
// automatic and the statement tried an external effect, PROTOCOL.md 8.2;
// ripple watch's own runs are explicit, so this is rare), · not reached
// with why: "exception in x (line 5)", "held at #2 (line 10)",
// "interrupted", "the kernel died", or nothing after a return; - not
// computed (a run that did not end normally left it waiting). A run that
// fails (compile error, interrupt, kernel death, a missing function)
// ends its table with the reason. Changed files are noted in one dimmed
// line ("· helper.py modified, data.csv added") before the run they cause.
// Colours only when Options.Color is set.
//
// # The JSON form
//
// One object per line, each with "event" naming its kind; "run" is the
// number of the run (from 1) the event belongs to, where it has one.
// Optional fields are left out when empty.
//
//	{"event":"watching","root":"/abs/project","entry":"main:main","python":"/usr/bin/python3","pythonVersion":"3.11.7"}
//	{"event":"file","path":"helper.py","kind":"Modified"}           kind: Added | Removed | Modified
//	{"event":"update","run":2,"expressionId":"main:main/y","label":"y","line":6,
//	 "type":"builtins.int","fromCache":false,"nanoTime":1200,"methodCall":"helper:foo",
//	 "payload":{"type":"Value","preview":"60"}}
//	{"event":"output","run":2,"stream":"stdout","text":"hello\n"}
//	{"event":"diagnostic","run":2,"diagnostic":{Diagnostic}}
//	{"event":"complete","run":2,"recomputed":2,"cached":1,"held":1,"nanoTime":3100000}  held only when > 0
//	{"event":"failed","run":3,"kind":"compileError","message":"...","diagnostic":{Diagnostic}}
//	{"event":"kernelRestarted","run":4,"reason":"..."}
//	{"event":"interrupt","run":5}                                    Ctrl-C interrupted the run
//	{"event":"stopped"}                                              the last line
//
// An update is one expression's new state, as the engine reports it
// (PROTOCOL.md's ExpressionUpdate, flattened): "line" is 1-based,
// "payload" is the protocol's Payload:
//
//	{"type":"Value","preview":"60","mimeTypes":["text/html"],"effects":["open('out.csv', 'w')"]}
//	{"type":"Panic","message":"AssertionError","trace":["main:main/x"]}
//	{"type":"Pending"}                                                   will run
//	{"type":"Pending","message":"running","startedAt":"2026-11-29T01:02:03.456Z"}
//	{"type":"Pending","message":"held: open('a.txt', 'w')","reason":{"kind":"held","event":"open","args":["'a.txt'","'w'"]}}
//	{"type":"Pending","message":"not reached","reason":{"kind":"exception","expressionId":"main:main/x"}}
//	{"type":"Pending","message":"not reached"}                           after a return
//
// A reason's kind is exception or held (expressionId names the statement
// that raised or was held), interrupted or kernelDied. mimeTypes and
// effects are left out when empty.
// A run starts with a Pending update for every statement it will compute;
// updates of statements served from the cache come only when something
// about them changed (their position). failed's kind is the protocol's
// ExecutionResult kind: interrupted, failure, kernelDied, timeout,
// compileError. Diagnostic is the protocol's Diagnostic.
package watchview
