// Package web is ripple's built-in web client: a page that shows a project
// live in a browser (files, an editor, each statement's value beside it,
// output, problems, visualizations), speaking PROTOCOL.md over the server's
// WebSocket like any other client. Everything it needs is embedded in the
// binary with go:embed; there is no build step (the one library, CodeMirror
// 5, is committed as its release files: see VENDOR.md).
//
// Plug it into the server and print its URL:
//
//	srv, err := server.New(eng, server.Config{Token: token, Web: web.Handler()})
//	...
//	page, err := web.PageURL(srv.URL()) // http://127.0.0.1:PORT/?token=TOKEN
//
// # The token
//
// The page's assets are served to anyone who can reach the port, without
// the token: they are the same for every ripple binary and hold nothing of
// the project. What needs the token is the WebSocket (/ws), where the
// project is: the page reads the token from its own URL (?token=) and puts
// it only into the WebSocket URL, which the server checks along with the
// Origin (the page is same-origin, so it passes). The responses carry a
// Content-Security-Policy that allows only the page's own scripts and
// connections to its own origin, forbid framing, and send no Referer, so
// the token in the address bar does not travel anywhere else. A rich HTML
// output is shown in a frame of frame.html, sandboxed without
// allow-same-origin, whose own policy lets the output's styles apply and
// runs only the frame's script (which takes the HTML by postMessage and
// reports its height).
//
// # Typing and runs
//
// The page sends each edit at once with execute:false and asks for the
// run (an empty edit with execute:true) once typing pauses (250 ms, a
// setting kept in localStorage), so runs caused by typing see whole
// words; those runs are automatic and the server holds their external
// effects (PROTOCOL.md 8.2). Running a held statement (its ▶,
// Ctrl/Cmd-Enter on its line) is a recompute naming it: an explicit run.
// The header's switch sets the session's run policy (runtime/setRunPolicy).
//
// The files: web.go (the handler and PageURL), static/ (the page:
// index.html, app.js wiring it together, rpc.js the JSON-RPC client,
// editor.js the buffers and the editor, text.js positions and diffs,
// sha3.js buffer versions and rebase (merging another client's edit into
// unsent typing), values.js and dataview.js rendering, cells.js the output
// and displays shown under each statement, term.js printed text as a
// terminal shows it, frame.html rich HTML outputs; vendor/ holds
// CodeMirror 5 with its addons, markdown-it and KaTeX, see VENDOR.md).
//
// # Concurrent edits
//
// The server's causal order (PROTOCOL.md 8.6) tells the page that another
// client's edit came before its own edits in flight: it merges that edit
// into what the user sees and sends its typing again on top (editor.js).
//
// # Output at speed
//
// Printed text is parsed as it arrives (O(the new text)) but reaches the
// DOM in animation frames, each bounded (term.js): at most 128 lines for
// all terminals together and 8 ms of script, the next paint after four
// times the last one's cost, its rendering included. A terminal further
// behind shows its newest lines first and fills its window upwards. No
// paint reads a size: cells.js watches its box with a ResizeObserver, so
// the editor re-measures an output's line widget only when its height
// changed. tests/web/stream.mjs holds the page to this while 1 MB/s
// streams (a Chromium trace names every forced layout).
package web
