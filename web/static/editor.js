// The editor: one CodeMirror 5 instance showing one text buffer at a time,
// kept in step with the server's copy of every buffer the page opened
// (PROTOCOL.md 3, text buffers).
//
// Each buffer tracks three texts:
//   server: the server's content as far as the page knows it (after the
//           edits the server acknowledged and the didChange it sent);
//   sent:   server plus the page's edits still waiting for a reply;
//   the CodeMirror document, which is what the user sees.
// A local change is sent at once as one edit (the difference between sent
// and the document), with sent's version as oldVersion. The server answers
// a connection's calls in order, so edits can be pipelined.
//
// Typing runs the code only when it pauses (PROTOCOL.md 8.2): each edit
// goes with execute:false, so the server's text and versions stay in step
// with every keystroke, and once no key has been typed for runDelay ms the
// page sends an empty edit (no change, oldVersion = newVersion) with
// execute:true, which asks for the (automatic) run of everything typed
// since. Half-typed names and paths (`out / ""` on the way from "old" to
// "new") are never run.
//
// Conflicts: another client's edit that reaches the server before one of
// ours makes ours fail with 3003 InvalidVersion. The server's causal order
// (PROTOCOL.md 8.6: the reply to our edit comes before any didChange built
// on it) tells the page which: a didChange on the server text the page
// knows, while edits of its own are in flight, came first, so those edits
// will fail. The page merges (text.js rebase) the other edit into what the
// user sees, lets its own in-flight edits fail quietly ("rebasing"), and
// then sends what the user typed again as one edit on the merged server
// text: both clients' keystrokes are kept, as in a collaborative editor.
// Anything else unexpected (an edit refused for another reason, a
// didChange the page cannot place) reloads the buffer from the server
// (text/openFile), saying so.

import { applyEdits, diff, lineSeparator, rebase, utf16Column } from "./text.js";
import { version } from "./sha3.js";
import { DISCONNECTED } from "./rpc.js";
import { state } from "./values.js";
import { isNotebook, notebookScript } from "./notebook.js";

// KERNEL_UNAVAILABLE (PROTOCOL.md 6): every kernel is busy; BUSY_RETRY_MS
// is how long completion and docs keep asking.
const KERNEL_UNAVAILABLE = 5001;
// INVALID_VERSION (PROTOCOL.md 6, 3003): an edit's oldVersion is not the
// buffer's (another client's edit came first).
const INVALID_VERSION = 3003;
const BUSY_RETRY_MS = 8000;

// askKernel makes a completion or inspection call (ask) of the kernel
// holding the frame shown. A kernel busy with the run typing started
// answers soon: the call is made again while doc's text is still text, for
// up to BUSY_RETRY_MS; any other error, or a changed text, ends it.
async function askKernel(doc, text, ask) {
  for (let waited = 0; ; waited += 150) {
    try {
      return await ask();
    } catch (e) {
      if (e.code !== KERNEL_UNAVAILABLE || waited >= BUSY_RETRY_MS || doc.getValue() !== text) throw e;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}

// HOVER_MS: how long the mouse rests on a name before its docs show.
const HOVER_MS = 700;

// BIG_FILE: from this many lines on, CodeMirror renders only the lines
// near the view.
const BIG_FILE = 2000;

// DEFAULT_RUN_DELAY is how long typing must pause before it runs (ms).
export const DEFAULT_RUN_DELAY = 250;

export class Editor {
  // host: the element to put the editor in. rpc: the Rpc. events:
  //   notice(kind, text)        something the user should read
  //   changed(buffer)           a buffer's dirty or conflict state changed
  //   save()                    the user asked to save (Ctrl-S)
  //   annotation(update, el)    fill el for an expression update
  //   runHere(line)             the user asked to run the statement on a
  //                             line of the shown buffer (Ctrl/Cmd-Enter)
  constructor(host, rpc, events) {
    this.rpc = rpc;
    this.events = events;
    this.buffers = new Map(); // path -> Buffer
    this.current = null; // the Buffer shown
    this.annotations = []; // {id, host, bookmark | below, handle, cls} on the current doc (showAnnotations)
    this.cellWidgets = new Map(); // ExpressionId -> {widget, node, height}: statements' output (showCells)
    this.runMarks = []; // line handles with a ▶ (showRunMarks)
    this.errorMarks = []; // line handles marked with a compile error
    // runDelay: ms without typing before the typed edits run (the page's
    // setting); runTimer: the pending run of the buffer in runTimerBuf.
    this.runDelay = DEFAULT_RUN_DELAY;
    this.runTimer = null;
    this.runTimerBuf = null;
    this.cm = window.CodeMirror(host, {
      value: "",
      mode: "python",
      lineNumbers: true,
      indentUnit: 4,
      tabSize: 4,
      readOnly: "nocursor",
      matchBrackets: true,
      // Every line is rendered while files are small: an output under a
      // line is then never taken out of the DOM by scrolling (a frame
      // would reload). Big files keep CodeMirror's window (show()).
      viewportMargin: Infinity,
      gutters: ["ripple-run", "CodeMirror-linenumbers", "ripple-gutter"],
      // A lone or trailing "\r" is part of the text the server has; it
      // should not show as a special character.
      specialChars: /[\u0000-\u0008\u000a-\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028\u2029\u202d\u202e\u2066\u2067\u2069\ufeff\ufff9-\ufffc]/,
      extraKeys: {
        "Ctrl-S": () => this.events.save(),
        "Cmd-S": () => this.events.save(),
        Tab: (cm) => cm.execCommand(cm.somethingSelected() ? "indentMore" : "insertSoftTab"),
        "Shift-Tab": (cm) => cm.execCommand("indentLess"),
        "Ctrl-Enter": (cm) => this.runHere(cm),
        "Cmd-Enter": (cm) => this.runHere(cm),
        "Ctrl-/": (cm) => cm.toggleComment({ indent: true }),
        "Cmd-/": (cm) => cm.toggleComment({ indent: true }),
        "Ctrl-H": "replace",
        "Ctrl-Space": (cm) => this.complete(cm),
        "Ctrl-I": (cm) => this.inspect(cm),
        "Cmd-I": (cm) => this.inspect(cm),
      },
    });
    this.cm.on("changes", () => this.localChange());
    this.hoverDocs();
    // Completion opens by itself after "." and inside ["…", as a notebook's
    // does; Ctrl-Space asks anywhere.
    this.cm.on("inputRead", (cm, change) => {
      const typed = change.text.join("");
      // Signature help: "(" after a name shows what it takes.
      if (change.origin === "+input" && typed === "(" && /[\w)\]]\($/.test(cm.getLine(change.from.line).slice(0, change.from.ch + 1))) {
        this.inspect(cm, { line: change.from.line, ch: change.from.ch }, true);
        return;
      }
      if (change.origin !== "+input" || !/^[.\["']$/.test(typed)) return;
      const line = cm.getLine(change.from.line).slice(0, change.from.ch + 1);
      if (typed === "." ? /[\w)\]]\.$/.test(line) : /\w\[["']?$/.test(line)) this.complete(cm);
    });
  }

  // setWritable makes the editor editable (connected) or not.
  setWritable(on) {
    this.cm.setOption("readOnly", on && this.current && !this.current.notebook ? false : "nocursor");
    this.cm.getWrapperElement().classList.toggle("ripple-readonly", !on);
  }

  // open shows path, opening its buffer on the server if the page has not
  // yet; returns the Buffer.
  async open(path) {
    let buf = this.buffers.get(path);
    if (!buf) {
      const res = await this.rpc.call("text/openFile", { path });
      buf = new Buffer(path, res.content, res.currentVersion);
      // Unsaved text a stopped server kept (PROTOCOL.md 7.4): offered, not applied.
      buf.recovered = res.recovered || null;
      this.buffers.set(path, buf);
      await buf.readDisk(this.rpc);
      // A buffer another page left unsaved on the server is saved like
      // one typed here (autosave), unless it is only a recovery offer.
      if (buf.dirty && this.events.typed) this.events.typed(buf);
    }
    this.show(buf);
    return buf;
  }

  show(buf) {
    if (this.current === buf) return;
    this.clearAnnotations();
    this.clearCells();
    this.current = buf;
    this.cm.swapDoc(buf.doc);
    this.cm.setOption("viewportMargin", buf.doc.lineCount() < BIG_FILE ? Infinity : 10);
    this.setWritable(this.rpc.connected);
  }

  // reopen brings every buffer the page had back after a reconnect. The
  // server kept them (within the grace period) or reopens them from disk;
  // a buffer with unsaved edits the server no longer has gets them back,
  // so a dropped connection never loses the user's work.
  async reopen() {
    for (const buf of this.buffers.values()) {
      const res = await this.rpc.call("text/openFile", { path: buf.path });
      if (res.currentVersion !== buf.sentVersion) {
        const lost = buf.dirty && (await buf.serverIsDisk(this.rpc, res.currentVersion));
        if (lost) {
          buf.server = res.content;
          buf.serverVersion = res.currentVersion;
          buf.sent = res.content;
          buf.sentVersion = res.currentVersion;
          this.events.notice("info", `${buf.path}: your unsaved edits were restored on the server`);
        } else {
          // Someone else's text (or an edit of ours that landed just
          // before the drop) is the server's: it wins.
          this.replaceFromServer(buf, res.content, res.currentVersion);
        }
      }
      // Whatever the document has beyond the server's text (typed as the
      // connection dropped) goes now, and runs as typing does.
      if (this.sendDiff(buf, buf.doc.getValue()) || buf.unrun) this.scheduleRun(buf);
    }
  }

  // localChange sends what the user typed, and runs it once typing pauses.
  localChange() {
    const buf = this.current;
    if (!buf || buf.applyingRemote) return;
    if (buf.rebasing || buf.resyncing) {
      // Sent once the edits in flight have failed (settleRebase), or the
      // server's text is back (resync).
      buf.unrun = true;
      if (this.events.typed) this.events.typed(buf);
      return;
    }
    if (this.sendDiff(buf, buf.doc.getValue())) this.scheduleRun(buf);
    if (this.events.typed) this.events.typed(buf);
  }

  // scheduleRun (re)starts the wait before buf's typed edits run. A pending
  // run of another buffer goes at once: the user moved on.
  scheduleRun(buf) {
    buf.unrun = true;
    if (this.runTimerBuf && this.runTimerBuf !== buf) this.flushRun();
    clearTimeout(this.runTimer);
    this.runTimerBuf = buf;
    this.runTimer = setTimeout(() => this.flushRun(), this.runDelay);
  }

  // flushRun sends the pending run now, if there is one.
  flushRun() {
    const buf = this.runTimerBuf;
    clearTimeout(this.runTimer);
    this.runTimer = null;
    this.runTimerBuf = null;
    if (buf && buf.unrun) this.sendRun(buf);
  }

  // cancelRun drops the pending run of the shown buffer: an explicit run
  // (Ctrl/Cmd-Enter, ▶) is about to take the typed edits with it (a
  // recompute compiles what execute:false left waiting).
  cancelRun() {
    clearTimeout(this.runTimer);
    this.runTimer = null;
    if (this.runTimerBuf) this.runTimerBuf.unrun = false;
    this.runTimerBuf = null;
  }

  // sendRun asks the server to run buf's edits: an edit that changes
  // nothing, with execute:true. It is ordered after the edits it runs (one
  // connection's calls are answered in order) and versioned like them, so
  // a conflict is handled the same way.
  sendRun(buf) {
    buf.unrun = false;
    if (!this.rpc.connected || buf.rebasing || buf.resyncing) {
      buf.unrun = true; // reopen() runs it after the reconnect
      return;
    }
    this.call(buf, "text/applyEdit", {
      edit: { path: buf.path, edits: [], oldVersion: buf.sentVersion, newVersion: buf.sentVersion },
      execute: true,
    });
  }

  // complete shows completions from the running kernel at the cursor
  // (executionContext/complete through events.complete): the live
  // namespace of the frame shown, so a DataFrame's columns complete in
  // df[". Offsets are code points both ways.
  async complete(cm) {
    if (!this.current || !this.events.complete) return;
    const doc = cm.getDoc();
    const text = doc.getValue();
    const at = doc.indexFromPos(doc.getCursor());
    let res;
    try {
      res = await askKernel(doc, text, () => this.events.complete(text, codePoints(text, at)));
    } catch (e) {
      if (doc.getValue() === text) this.events.notice("warn", `Completion: ${e.message}`);
      return;
    }
    if (!res || !res.matches || res.matches.length === 0 || doc.getValue() !== text) return;
    const from = doc.posFromIndex(utf16Index(text, res.cursorStart));
    const to = doc.posFromIndex(utf16Index(text, res.cursorEnd));
    cm.showHint({
      completeSingle: false,
      hint: () => ({
        from,
        to,
        list: res.matches.map((m) => ({
          text: m.text,
          displayText: `${m.text}${m.signature ? "  " + m.signature : ""}`,
          className: `ripple-hint ripple-hint-${m.type}`,
        })),
      }),
    });
  }

  // inspect shows what the name under the cursor is (signature and
  // docstring from the kernel), in a box under the cursor.
  // at: where the name ends (default the cursor); quiet: say nothing when
  // nothing is known (signature help while typing).
  async inspect(cm, at = null, quiet = false) {
    if (!this.current || !this.events.inspect) return;
    const doc = cm.getDoc();
    const text = doc.getValue();
    const pos = at || doc.getCursor();
    let res;
    try {
      res = await askKernel(doc, text, () => this.events.inspect(text, codePoints(text, doc.indexFromPos(pos))));
    } catch (e) {
      if (!quiet) this.events.notice("warn", `Docs: ${e.message}`);
      return;
    }
    if (quiet && (!res || !res.found || doc.getValue() !== text)) return;
    this.showDoc(cm, doc.getCursor(), res && res.found ? res.text : "Nothing known here.", quiet);
  }

  // hoverDocs shows a name's docs when the mouse rests on it (HOVER_MS):
  // the same answer as Ctrl-I, asked once per resting place.
  hoverDocs() {
    let timer = null;
    let asked = null;
    const wrap = this.cm.getWrapperElement();
    wrap.addEventListener("mousemove", (ev) => {
      clearTimeout(timer);
      const pos = this.cm.coordsChar({ left: ev.clientX, top: ev.clientY }, "window");
      const tok = this.cm.getTokenAt(pos, true);
      if (!tok || !/^(variable|variable-2|property|builtin|def)$/.test(tok.type || "") || pos.ch >= tok.end) return;
      const key = `${pos.line}:${tok.start}`;
      if (key === asked) return;
      timer = setTimeout(async () => {
        asked = key;
        if (!this.current || !this.events.inspect) return;
        const doc = this.cm.getDoc();
        const text = doc.getValue();
        const at = { line: pos.line, ch: tok.end };
        try {
          const res = await this.events.inspect(text, codePoints(text, doc.indexFromPos(at)));
          if (res && res.found && doc.getValue() === text) this.showDoc(this.cm, { line: pos.line, ch: tok.start }, res.text, true);
        } catch (e) {
          // a busy kernel: no hover this time
        }
      }, HOVER_MS);
    });
    wrap.addEventListener("mouseleave", () => {
      clearTimeout(timer);
      asked = null;
      if (this.docHover) this.hideDoc();
    });
  }

  // showDoc puts text in a box under pos until the next key or click.
  showDoc(cm, pos, text, hover = false) {
    this.hideDoc();
    this.docHover = hover;
    const box = document.createElement("div");
    box.className = "ripple-doc";
    box.textContent = text;
    cm.addWidget(pos, box, true);
    this.docBox = box;
    const hide = () => {
      this.hideDoc();
      cm.off("cursorActivity", hide);
      cm.off("blur", hide);
    };
    cm.on("cursorActivity", hide);
    cm.on("blur", hide);
  }

  hideDoc() {
    if (this.docBox) this.docBox.remove();
    this.docBox = null;
  }

  // runHere asks the page to run the statement under the cursor.
  runHere(cm) {
    if (!this.current || !this.events.runHere) return;
    this.events.runHere(cm.getCursor().line);
  }

  // showCells puts each statement's output under its last line: cells is
  // [{id, line, node}] on the shown buffer. A cell already shown keeps its
  // widget (its node, an HTML output's frame included, is never taken out
  // of the DOM) unless its statement moved; while the ranges are of an
  // older text (settled false: edits wait for their run) a shown cell stays
  // where CodeMirror keeps it, on its line as lines are typed around it.
  showCells(cells, settled = true) {
    const doc = this.cm.getDoc();
    const want = new Map(cells.filter((c) => c.line >= 0 && c.line < doc.lineCount()).map((c) => [c.id, c]));
    this.cm.operation(() => {
      for (const [id, w] of this.cellWidgets) {
        const c = want.get(id);
        const at = w.widget.line ? doc.getLineNumber(w.widget.line) : null;
        if (c && c.node === w.node && at !== null && (at === c.line || !settled)) continue;
        w.widget.clear();
        this.cellWidgets.delete(id);
      }
      for (const [id, c] of want) {
        if (this.cellWidgets.has(id)) continue;
        // noHScroll off: CodeMirror re-inserts a noHScroll widget at every
        // width change (setSize), which would reload a frame in it.
        const widget = doc.addLineWidget(c.line, c.node, { coverGutter: false, noHScroll: false });
        this.cellWidgets.set(id, { widget, node: c.node });
      }
    });
  }

  // cellResized tells CodeMirror that a cell's height may have changed (at
  // most once per frame: the terminal paints once per frame).
  cellResized(node) {
    for (const w of this.cellWidgets.values()) {
      if (w.node !== node) continue;
      const h = node.offsetHeight;
      if (h !== w.height) {
        w.height = h;
        w.widget.changed();
      }
    }
  }

  clearCells() {
    this.cm.operation(() => {
      for (const w of this.cellWidgets.values()) w.widget.clear();
    });
    this.cellWidgets.clear();
  }

  // showRunMarks puts a ▶ in the gutter of every top-level def of the
  // shown buffer; run(name, line) is called on a click.
  showRunMarks(run) {
    const doc = this.cm.getDoc();
    this.cm.operation(() => {
      for (const h of this.runMarks) doc.setGutterMarker(h, "ripple-run", null);
      this.runMarks = [];
      if (!this.current || !this.current.path.endsWith(".py")) return;
      doc.eachLine((handle) => {
        const m = /^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(/.exec(handle.text);
        if (!m) return;
        const b = document.createElement("button");
        b.type = "button";
        b.className = "ripple-run-def";
        b.textContent = "▶";
        b.title = `Run ${m[1]}`;
        b.dataset.name = m[1];
        b.addEventListener("mousedown", (ev) => ev.preventDefault());
        b.addEventListener("click", () => run(m[1], doc.getLineNumber(handle)));
        doc.setGutterMarker(handle, "ripple-run", b);
        this.runMarks.push(handle);
      });
    });
  }

  // sendDiff sends the edit that takes the server from buf.sent to text,
  // without running it; it reports whether there was one.
  sendDiff(buf, text) {
    if (buf.notebook) return false; // shown as its script: never edited here (notebook.js)
    const edit = diff(buf.sent, text);
    if (!edit) return false;
    const oldVersion = buf.sentVersion;
    const newVersion = version(text);
    buf.sent = text;
    buf.sentVersion = newVersion;
    this.call(buf, "text/applyEdit", { edit: { path: buf.path, edits: [edit], oldVersion, newVersion }, execute: false }, () => {
      if (buf.rebasing) return; // cannot have landed (see the file's doc): resent after
      buf.server = text;
      buf.serverVersion = newVersion;
    });
    return true;
  }

  // call makes one of buf's versioned calls, counted in flight until its
  // reply; a failure makes the buffer resync once nothing is in flight.
  call(buf, method, params, ok = () => {}) {
    buf.inflight++;
    this.events.changed(buf);
    this.rpc
      .call(method, params)
      .then(ok, (err) => {
        // An edit refused after one that failed says nothing new; one
        // refused because another client's edit came first is expected
        // while rebasing.
        if (!buf.rebasing || err.code === DISCONNECTED) buf.failed = buf.failed || err;
      })
      .finally(() => {
        buf.inflight--;
        if (buf.inflight === 0 && buf.rebasing) this.settleRebase(buf);
        else if (buf.inflight === 0 && (buf.failed || buf.stale)) this.resync(buf);
        this.events.changed(buf);
      });
  }

  // resync replaces a buffer's text with the server's after a conflict or
  // a failed edit.
  async resync(buf) {
    const err = buf.failed;
    buf.failed = null;
    buf.stale = false;
    if (err && err.code === DISCONNECTED) {
      // The edit may or may not have landed: reopen() after the reconnect
      // compares versions and settles it.
      buf.sent = buf.server;
      buf.sentVersion = buf.serverVersion;
      return;
    }
    buf.resyncing = true;
    let res;
    try {
      res = await this.rpc.call("text/openFile", { path: buf.path });
    } catch (e) {
      this.events.notice("error", `${buf.path}: could not reload the buffer: ${e.message}`);
      return;
    } finally {
      buf.resyncing = false;
    }
    {
      const typed = buf.doc.getValue();
      if (!buf.notebook && (!err || err.code === INVALID_VERSION)) {
        // Out of step with the server (an edit of another client came
        // first, or a didChange could not be placed): its text is merged
        // with what the user typed, as a didChange is (rebase), and the
        // user's part sent again. Nothing typed is dropped.
        const theirs = diff(buf.server, res.content);
        const merged = rebase(buf.server, theirs ? [theirs] : [], typed);
        buf.server = res.content;
        buf.serverVersion = res.currentVersion;
        buf.sent = res.content;
        buf.sentVersion = res.currentVersion;
        buf.applySplices(merged.splices);
        if (this.sendDiff(buf, buf.doc.getValue()) || buf.unrun) this.scheduleRun(buf);
        this.events.changed(buf);
        return;
      }
      this.replaceFromServer(buf, res.content, res.currentVersion);
      if (err && typed !== res.content && !buf.notebook) {
        this.events.notice("warn", `${buf.path}: an edit was refused (${err.message}); the editor now shows the server's text`);
      }
    }
  }

  // replaceFromServer makes the server's content the buffer's, changing
  // only what differs so the cursor and scroll stay where they were.
  replaceFromServer(buf, content, ver) {
    buf.server = content;
    buf.serverVersion = ver;
    buf.sent = content;
    buf.sentVersion = ver;
    buf.setDocText(content);
    this.events.changed(buf);
  }

  // didChange applies text/didChange edits from other clients and from
  // files changed on disk.
  didChange(fileEdits) {
    for (const fe of fileEdits) {
      const buf = this.buffers.get(fe.path);
      if (!buf) continue;
      // Another client's request to run its typing (an edit that changes
      // nothing): no text to apply, and no reason to think ours is stale.
      if ((fe.edits || []).length === 0 && fe.oldVersion === fe.newVersion) continue;
      if (fe.oldVersion !== buf.serverVersion) {
        if (fe.newVersion !== buf.serverVersion) this.markStale(buf);
        continue;
      }
      let text;
      try {
        text = applyEdits(buf.server, fe.edits);
      } catch (e) {
        this.markStale(buf);
        continue;
      }
      const local = buf.doc.getValue();
      // (A notebook's document is its script, never edited here: it just
      // follows the server, below.)
      if (!buf.notebook && (buf.inflight > 0 || buf.rebasing || buf.resyncing || local !== buf.server)) {
        // Another client's edit came before ours in flight (8.6: had ours
        // landed first, its reply would be here already), or the user has
        // typed what is not sent yet: merge it into what the user sees;
        // ours in flight fail and are sent again, merged.
        const merged = rebase(buf.server, fe.edits, local);
        buf.server = text;
        buf.serverVersion = fe.newVersion;
        buf.applySplices(merged.splices);
        if (buf.inflight > 0) buf.rebasing = true;
        else if (!buf.rebasing && !buf.resyncing) {
          buf.sent = text;
          buf.sentVersion = fe.newVersion;
          if (this.sendDiff(buf, buf.doc.getValue())) this.scheduleRun(buf);
        }
        this.events.changed(buf);
        continue;
      }
      buf.server = text;
      buf.serverVersion = fe.newVersion;
      buf.sent = text;
      buf.sentVersion = fe.newVersion;
      buf.setDocText(text);
      this.events.changed(buf);
    }
  }

  // settleRebase ends a rebase once the page's own edits that the other
  // client's came before have all failed: what the user sees goes to the
  // server as one edit on its text, and runs.
  settleRebase(buf) {
    buf.rebasing = false;
    if (buf.failed || buf.stale) {
      this.resync(buf);
      return;
    }
    buf.sent = buf.server;
    buf.sentVersion = buf.serverVersion;
    if (this.sendDiff(buf, buf.doc.getValue()) || buf.unrun) this.scheduleRun(buf);
  }

  markStale(buf) {
    buf.stale = true;
    if (buf.inflight === 0) this.resync(buf);
  }

  // save writes the shown buffer (text/save). Edits still in flight go
  // first: the server answers in order.
  async save(buf = this.current) {
    if (!buf) return null;
    if (buf.rebasing) throw new Error("another client's edit is being merged; saving in a moment");
    const ver = buf.sentVersion;
    await this.rpc.call("text/save", { path: buf.path, currentVersion: ver });
    buf.diskVersion = ver;
    this.events.changed(buf);
    return buf;
  }

  // showAnnotations puts one annotation per update beside the statement's
  // first line, in a column right of the longest of those lines but never
  // further right than the editor's visible width allows (VALUE_ROOM
  // characters are kept for the value): the values follow the window, not
  // the longest line. A line that reaches past the column has its value
  // under it, in the column.
  //
  // An annotation already shown on the same line keeps its widget and only
  // its content is replaced: CodeMirror rebuilds a line whose widget is
  // added or cleared, and with it the outputs under that line (an HTML
  // output's frame would load again at every render).
  showAnnotations(updates) {
    const doc = this.cm.getDoc();
    const placed = [];
    for (const u of updates) {
      if (!u.range) continue;
      const line = u.range.start.line;
      if (line < 0 || line >= doc.lineCount()) continue;
      placed.push({ u, line });
    }
    const tab = this.cm.getOption("tabSize");
    const width = (line) => this.displayWidth(doc.getLine(line), tab);
    // In pixels of the editor's font: the annotation's own font is smaller.
    const charWidth = this.cm.defaultCharWidth();
    const visible = this.visibleColumns(charWidth);
    const column = valueColumn(placed.map((p) => width(p.line)), visible);
    // What is left right of the column: a longer value is cut there (its
    // preview ends in "…"; the whole is in its tooltip and the pane).
    const room = `${Math.max(120, (visible - column) * charWidth - 6)}px`;
    const old = new Map(this.annotations.map((a) => [a.id, a]));
    const next = [];
    this.cm.operation(() => {
      for (const { u, line } of placed) {
        const el = document.createElement("span");
        el.className = "ripple-annotation";
        this.events.annotation(u, el);
        el.style.maxWidth = room;
        const w = width(line);
        const inline = w + 2 <= column;
        let a = old.get(u.expressionId);
        old.delete(u.expressionId);
        if (a && (a.inline !== inline || a.lineNo() !== line)) {
          this.clearAnnotation(a);
          a = null;
        }
        if (!a) a = this.addAnnotation(u.expressionId, line, inline);
        a.host.replaceChildren(el);
        if (inline) a.host.style.marginLeft = `${(column - w) * charWidth}px`;
        else a.host.style.paddingLeft = `${column * charWidth + 4}px`;
        const cls = lineClass(u);
        if (cls !== a.cls) {
          if (a.cls) doc.removeLineClass(a.handle, "background", a.cls);
          if (cls) doc.addLineClass(a.handle, "background", cls);
          a.cls = cls;
        }
        next.push(a);
      }
      for (const a of old.values()) this.clearAnnotation(a);
    });
    this.annotations = next;
  }

  // addAnnotation makes the widget an annotation lives in: a bookmark at
  // the line's end, or (not inline) a line widget under the line.
  addAnnotation(id, line, inline) {
    const doc = this.cm.getDoc();
    const host = document.createElement(inline ? "span" : "div");
    host.className = inline ? "ripple-annotation-host" : "ripple-annotation-below";
    const handle = doc.getLineHandle(line);
    const a = { id, host, inline, handle, cls: null, bookmark: null, below: null };
    if (inline) a.bookmark = doc.setBookmark({ line, ch: doc.getLine(line).length }, { widget: host, insertLeft: true });
    else a.below = doc.addLineWidget(line, host, { coverGutter: false, noHScroll: true, insertAt: 0 });
    // The line it is on now (edits move it), or -1 once its line is gone.
    a.lineNo = () => {
      if (a.bookmark) {
        const at = a.bookmark.find();
        return at && at.ch === doc.getLine(at.line).length ? at.line : -1;
      }
      const n = doc.getLineNumber(a.handle);
      return n === null ? -1 : n;
    };
    return a;
  }

  clearAnnotation(a) {
    const doc = this.cm.getDoc();
    if (a.bookmark) a.bookmark.clear();
    if (a.below) a.below.clear();
    if (a.cls && doc.getLineNumber(a.handle) !== null) doc.removeLineClass(a.handle, "background", a.cls);
  }

  // visibleColumns is how many characters of the editor's font fit in its
  // text area as shown now.
  visibleColumns(charWidth) {
    const info = this.cm.getScrollInfo();
    const gutters = this.cm.getGutterElement().offsetWidth;
    const px = info.clientWidth - gutters - 12;
    // Outputs under lines are as wide as the view, not as the longest line.
    this.cm.getWrapperElement().style.setProperty("--cell-width", `${Math.max(200, px - 8)}px`);
    return Math.max(0, Math.floor(px / charWidth));
  }

  // lineText returns a line of the shown buffer, or null past its end.
  lineText(line) {
    const doc = this.cm.getDoc();
    return line >= 0 && line < doc.lineCount() ? doc.getLine(line) : null;
  }

  clearAnnotations() {
    this.cm.operation(() => {
      for (const a of this.annotations) this.clearAnnotation(a);
    });
    this.annotations = [];
  }

  displayWidth(text, tab) {
    let w = 0;
    for (const ch of text) w = ch === "\t" ? w + tab - (w % tab) : w + 1;
    return w;
  }

  // markError marks a compile error (Diagnostic location) in the shown
  // buffer, or clears the marks when diagnostic is null.
  markError(diagnostic) {
    const doc = this.cm.getDoc();
    for (const h of this.errorMarks) {
      doc.removeLineClass(h, "wrap", "ripple-error-line");
      doc.setGutterMarker(h, "ripple-gutter", null);
    }
    this.errorMarks = [];
    if (!diagnostic || !this.current || diagnostic.path !== this.current.path || !diagnostic.location) return;
    const line = diagnostic.location.start.line;
    if (line < 0 || line >= doc.lineCount()) return;
    const marker = document.createElement("span");
    marker.className = "ripple-error-marker";
    marker.textContent = "●";
    marker.title = diagnostic.message;
    const h = doc.addLineClass(line, "wrap", "ripple-error-line");
    doc.setGutterMarker(h, "ripple-gutter", marker);
    this.errorMarks.push(h);
  }

  // reveal scrolls to a protocol Position in the shown buffer and puts the
  // cursor there.
  reveal(pos) {
    const doc = this.cm.getDoc();
    if (pos.line >= doc.lineCount()) return;
    const ch = utf16Column(doc.getLine(pos.line), pos.character);
    doc.setCursor({ line: pos.line, ch });
    this.cm.scrollIntoView({ line: pos.line, ch }, 80);
    this.cm.focus();
  }

  // resized tells CodeMirror its box changed size. Not refresh(): that
  // rebuilds every line, and with them the outputs under them (a frame
  // would load again).
  resized() {
    this.cm.setSize();
  }

  refresh() {
    this.cm.refresh();
  }
}

// VALUE_ROOM is how many characters the value column keeps at the right
// edge for a value: its dot and the start of its preview (at most 30
// characters; its type and time follow and may run past the edge).
export const VALUE_ROOM = 30;

// valueColumn returns the column of the values: right of the longest of
// the lines (widths, in characters) by 3, at least 36, but no further
// right than visible - VALUE_ROOM (at least 24), so the values are in
// view whatever the longest line.
export function valueColumn(widths, visible) {
  const want = Math.max(36, ...widths.map((w) => w + 3));
  const most = Math.max(24, visible - VALUE_ROOM);
  return Math.min(want, most);
}

// codePoints converts a UTF-16 index into text to a code point offset.
export function codePoints(text, index) {
  let n = 0;
  for (let i = 0; i < index; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < index) i++;
    n++;
  }
  return n;
}

// utf16Index converts a code point offset into text to a UTF-16 index.
export function utf16Index(text, points) {
  let i = 0;
  for (let n = 0; n < points && i < text.length; n++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff ? 2 : 1;
  }
  return i;
}

function lineClass(u) {
  switch (state(u)) {
    case "panic":
      return "ripple-line-panic";
    case "pending":
      return "ripple-line-pending";
    case "running":
      return "ripple-line-running";
    case "held":
      return "ripple-line-held";
    default:
      return null;
  }
}

// Buffer is one text buffer the page has open on the server.
class Buffer {
  constructor(path, content, ver) {
    this.path = path;
    this.server = content;
    this.serverVersion = ver;
    this.sent = content;
    this.sentVersion = ver;
    this.diskVersion = ver; // set by readDisk
    this.inflight = 0; // edits sent and not answered
    this.failed = null; // the first error of those edits
    this.stale = false; // another client's edit raced ours: resync after replies
    this.applyingRemote = false; // the doc is being changed to match the server
    this.unrun = false; // edits sent with execute:false and not yet run
    // rebasing: another client's edit came before the edits in flight;
    // they fail, and what the user typed is sent again once they have
    // (Editor.settleRebase).
    this.rebasing = false;
    this.resyncing = false; // resync is reloading the server's text
    this.notebook = isNotebook(path); // the doc shows its script, read-only (notebook.js)
    // The separator the file uses, so that the document's text is the
    // server's byte for byte.
    this.doc = this.notebook ? new window.CodeMirror.Doc(notebookScript(content), "python", 0, "\n")
      : new window.CodeMirror.Doc(content, "python", 0, lineSeparator(content));
  }

  // dirty: the buffer has edits not written to disk.
  get dirty() {
    return this.sentVersion !== this.diskVersion;
  }

  // readDisk learns whether the buffer has unsaved edits (a buffer the
  // server kept from an earlier page may have).
  async readDisk(rpc) {
    try {
      const res = await rpc.call("file/read", { path: this.path });
      this.diskVersion = version(res.contents);
    } catch (e) {
      this.diskVersion = null; // not on disk (deleted): everything is unsaved
    }
  }

  // serverIsDisk reports whether the server's buffer (at ver) is just the
  // file on disk, i.e. the server dropped the unsaved edits it had.
  async serverIsDisk(rpc, ver) {
    try {
      const res = await rpc.call("file/read", { path: this.path });
      const disk = version(res.contents);
      this.diskVersion = disk;
      return disk === ver;
    } catch (e) {
      return false;
    }
  }

  // applySplices applies UTF-16 splices ({from, to, text}, in order) to
  // the document as remote changes (the cursor moves with the text).
  applySplices(splices) {
    this.applyingRemote = true;
    try {
      for (const sp of splices) {
        this.doc.replaceRange(sp.text, this.doc.posFromIndex(sp.from), this.doc.posFromIndex(sp.to), "+remote");
      }
    } finally {
      this.applyingRemote = false;
    }
  }

  // setDocText changes the document to text, touching only the span that
  // differs.
  setDocText(text) {
    if (this.notebook) text = notebookScript(text);
    const cur = this.doc.getValue();
    if (cur === text) return;
    // CodeMirror indexes UTF-16 code units, so the differing span is found
    // on the strings directly.
    let prefix = 0;
    const max = Math.min(cur.length, text.length);
    while (prefix < max && cur.charCodeAt(prefix) === text.charCodeAt(prefix)) prefix++;
    let suffix = 0;
    while (suffix < max - prefix && cur.charCodeAt(cur.length - 1 - suffix) === text.charCodeAt(text.length - 1 - suffix)) suffix++;
    this.applyingRemote = true;
    try {
      this.doc.replaceRange(
        text.slice(prefix, text.length - suffix),
        this.doc.posFromIndex(prefix),
        this.doc.posFromIndex(cur.length - suffix),
        "+remote",
      );
    } finally {
      this.applyingRemote = false;
    }
  }
}
