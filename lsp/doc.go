// Package lsp is `ripple lsp`: the Language Server Protocol (3.17) on a
// byte stream (stdio), so that any LSP editor shows ripple's live values
// with a few lines of configuration and no extension. It drives the same
// engine as serve, watch and run, in-process, through the engine's client
// API (one engine client per LSP connection); there is no second execution
// path.
//
// Start here:
//
//	eng, _ := engine.New(ctx, engine.Config{Root: dir, Watch: true})
//	_ = eng.Start(ctx)
//	err := lsp.Serve(ctx, eng, stdio, lsp.Config{}) // until exit or EOF
//
// or, as `ripple lsp` does, let the editor name the project (its first
// workspace folder, else rootUri; root.go): lsp.ServeProject(ctx, open,
// fallbackDir, stdio, cfg), where open starts that project's engine.
//
// # What the editor gets
//
//   - Documents: didOpen/didChange (incremental)/didSave/didClose map onto
//     ripple's text buffers (text/openFile, text/applyEdit, text/save,
//     text/closeFile), so the unsaved text is what runs; edits on disk are
//     picked up by the engine's watcher as in serve. A didChange is
//     applied at once without running; the run (automatic: effects held,
//     PROTOCOL.md 8.2) is asked when changes pause for runDelayMs
//     (initializationOptions {"ripple": {"runDelayMs": 250}},
//     debounce.go). didSave runs at once, and runs the file's held
//     statements explicitly (held.go).
//   - One execution context per entry the user runs. main:main (else
//     main:__main__, the script frame, when main.py has no main) starts at
//     `initialized`. Code lenses: ▶ Run on each top-level function without
//     parameters, ▶ Run as script on a module's first line, enter › on a
//     statement that calls a project function (a LocalCall), ‹ back (pop),
//     ■ Interrupt while a run goes, ▶ Run on a held statement.
//     workspace/executeCommand offers the same: ripple.run (an entry, or
//     a statement to run explicitly), ripple.enter, ripple.back,
//     ripple.interrupt, ripple.recompute, ripple.restartKernel, ripple.stop
//     (lenses.go has the arguments).
//   - Inlay hints, one per statement at its end, of the frames shown: "= value" for
//     a value the latest run computed, "≡ value" for one it took from the
//     cache, ⏳ waiting, ▶ running, ⏸ held: effect, ∅ not reached (with
//     why: the line that raised or was held, an interrupt, a kernel
//     death), ✗ for an exception (hints.go); the tooltip has the type,
//     time, why and the last value. None of an expression statement or
//     a compound header, and an assignment's own literal, get no hint
//     (stmtkind.go). workspace/inlayHint/refresh follows each coalesced
//     flush of updates (when the client supports it), and an inlayHint
//     request for lines a pending run will change waits for that run,
//     up to ripple.hintWaitMs, for the clients that ignore refresh
//     (wait.go).
//   - Diagnostics: compile errors at their range; a Panic at its
//     statement with the exception message and the traceback's project
//     frames as relatedInformation; cleared when the run that fixed it
//     ends (a syntax error when the fixed text runs).
//   - Hover on a statement's target or expression: the whole preview
//     first, then type, time, whether it was cached, and what it printed.
//   - Output as window/logMessage (type Info, ripple.output; output
//     replayed with a value restored from the journal is shown in the
//     hover only, PROTOCOL.md 8.3); window/
//     workDoneProgress for runs longer than 500 ms; deaths and failures as
//     window/showMessage, once per failure: an entry whose run killed the
//     kernel is parked until run again or its module edited (crash.go).
//   - Edits another client (the page of `ripple lsp --serve`) makes to a
//     buffer the editor has open reach it as workspace/applyEdit.
//
// Positions: ripple counts code points. The server takes utf-32 when the
// client offers it (general.positionEncodings) and converts from and to
// utf-16 otherwise (position.go), the LSP default every client supports.
//
// # The LSP library: go.lsp.dev/protocol + go.lsp.dev/jsonrpc2
//
// Evaluated from what the Go module proxy serves (November 2026):
//
//   - go.lsp.dev/protocol v1.0.1 with go.lsp.dev/jsonrpc2 v1.0.1 (both
//     June 2026, Go 1.26): types generated from the official LSP meta-model
//     (3.18, a superset of 3.17: InlayHint, PositionEncodingKind, code
//     lens and inlay hint refresh, work-done progress), typed Server and
//     Client dispatchers, and a JSON-RPC connection with Content-Length
//     framing, per-request contexts and a graceful Close. Dependencies:
//     go-json-experiment/json and go.lsp.dev/uri. Chosen.
//   - go.lsp.dev/protocol v0.12.0 (2022): LSP 3.16-era types (code lens
//     and work-done progress, but no inlay hints and no position
//     encodings); pulls in zap.
//   - github.com/tliron/glsp v0.2.2 (2024): protocol_3_16 only (code lens
//     and work-done progress; no inlay hints, no positionEncoding), its
//     own logging stack.
//   - github.com/sourcegraph/go-lsp (last commit 2024) types with
//     sourcegraph/jsonrpc2 v0.2.3 (maintained, framing only): 3.x subset,
//     no 3.17 features.
//   - gopls's protocol package: internal to golang.org/x/tools, not
//     importable.
//
// Serve wires the connection itself rather than with lsproto.NewServer,
// which releases every message to run concurrently (a didChange could
// overtake the one before it, an inlayHint request the edit it follows):
// here each message is handled on the read goroutine, in wire order, as
// LSP requires for document synchronization. So a handler must not wait
// for the client: everything the server sends on its own (diagnostics,
// messages, refresh requests, progress) goes out from the session's
// goroutines.
//
// # Concurrency
//
// session (server.go) says which lock guards what. In short: handlers run
// one at a time on the read goroutine and call the engine, whose API
// returns after the synchronous state change; the engine's notifications
// land in an inbox (Notify never blocks) that one loop goroutine applies to
// the session state under mu and then sends on; a refresher goroutine
// collapses refresh requests so at most one inlayHint/refresh is
// outstanding; a debouncer goroutine asks the run of edited documents
// once changes pause; progress goroutines create and begin work-done
// progress.
// Serve cancels them all and waits for them before it returns, then
// destroys its contexts, closes its buffers and disconnects from the
// engine.
//
// Bounds: run output waiting for the loop is capped (maxQueuedOutput; past
// it output is dropped and the editor told how much), output kept per
// statement for hover likewise.
package lsp
