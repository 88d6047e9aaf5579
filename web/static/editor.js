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
// ours makes ours fail with 3003 InvalidVersion. The page then reloads the
// buffer from the server (text/openFile) and drops its own edits that did
// not land, saying so: the server's buffer is the one all clients share.

import { applyEdits, diff, lineSeparator, utf16Column } from "./text.js";
import { version } from "./sha3.js";
import { DISCONNECTED } from "./rpc.js";
import { state } from "./values.js";
import { isNotebook, notebookScript } from "./notebook.js";

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
    this.annotations = []; // {bookmark, lineHandle} on the current doc
    this.cellWidgets = []; // line widgets of statements' output (showCells)
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
      },
    });
    this.cm.on("changes", () => this.localChange());
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
    if (!this.rpc.connected) {
      buf.unrun = true; // reopen() runs it after the reconnect
      return;
    }
    this.call(buf, "text/applyEdit", {
      edit: { path: buf.path, edits: [], oldVersion: buf.sentVersion, newVersion: buf.sentVersion },
      execute: true,
    });
  }

  // runHere asks the page to run the statement under the cursor.
  runHere(cm) {
    if (!this.current || !this.events.runHere) return;
    this.events.runHere(cm.getCursor().line);
  }

  // showCells puts each statement's output under its last line:
  // cells is [{line, node}] on the shown buffer.
  showCells(cells) {
    this.clearCells();
    const doc = this.cm.getDoc();
    this.cm.operation(() => {
      for (const { line, node } of cells) {
        if (line < 0 || line >= doc.lineCount()) continue;
        this.cellWidgets.push(doc.addLineWidget(line, node, { coverGutter: false, noHScroll: true }));
      }
    });
  }

  clearCells() {
    this.cm.operation(() => {
      for (const w of this.cellWidgets) w.clear();
    });
    this.cellWidgets = [];
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
        // An edit refused after one that failed says nothing new.
        buf.failed = buf.failed || err;
      })
      .finally(() => {
        buf.inflight--;
        if (buf.inflight === 0 && (buf.failed || buf.stale)) this.resync(buf);
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
    try {
      const res = await this.rpc.call("text/openFile", { path: buf.path });
      const typed = buf.doc.getValue();
      this.replaceFromServer(buf, res.content, res.currentVersion);
      if (typed !== res.content && !buf.notebook) {
        this.events.notice(
          "warn",
          err ? `${buf.path}: an edit was refused (${err.message}); the editor now shows the server's text`
            : `${buf.path}: another client changed the file while you typed; your last keystrokes were dropped`,
        );
      }
    } catch (e) {
      this.events.notice("error", `${buf.path}: could not reload the buffer: ${e.message}`);
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
      buf.server = text;
      buf.serverVersion = fe.newVersion;
      if (buf.inflight > 0) {
        // Our edits in flight were based on the old text: they fail, and
        // resync follows their replies.
        buf.stale = true;
        continue;
      }
      buf.sent = text;
      buf.sentVersion = fe.newVersion;
      buf.setDocText(text);
      this.events.changed(buf);
    }
  }

  markStale(buf) {
    buf.stale = true;
    if (buf.inflight === 0) this.resync(buf);
  }

  // save writes the shown buffer (text/save). Edits still in flight go
  // first: the server answers in order.
  async save() {
    const buf = this.current;
    if (!buf) return null;
    const ver = buf.sentVersion;
    await this.rpc.call("text/save", { path: buf.path, currentVersion: ver });
    buf.diskVersion = ver;
    this.events.changed(buf);
    return buf;
  }

  // showAnnotations puts one annotation per update beside the statement's
  // first line, in a column right of the longest of those lines.
  showAnnotations(updates) {
    this.clearAnnotations();
    const doc = this.cm.getDoc();
    const placed = [];
    for (const u of updates) {
      if (!u.range) continue;
      const line = u.range.start.line;
      if (line < 0 || line >= doc.lineCount()) continue;
      placed.push({ u, line });
    }
    if (placed.length === 0) return;
    const tab = this.cm.getOption("tabSize");
    const width = (line) => this.displayWidth(doc.getLine(line), tab);
    const column = Math.max(36, ...placed.map((p) => width(p.line) + 3));
    // In pixels of the editor's font: the annotation's own font is smaller.
    const charWidth = this.cm.defaultCharWidth();
    this.cm.operation(() => {
      for (const { u, line } of placed) {
        const el = document.createElement("span");
        el.className = "ripple-annotation";
        el.style.marginLeft = `${(column - width(line)) * charWidth}px`;
        this.events.annotation(u, el);
        const text = doc.getLine(line);
        const bookmark = doc.setBookmark({ line, ch: text.length }, { widget: el, insertLeft: true });
        const cls = lineClass(u);
        const handle = cls ? doc.addLineClass(line, "background", cls) : null;
        this.annotations.push({ bookmark, handle, cls });
      }
    });
  }

  // lineText returns a line of the shown buffer, or null past its end.
  lineText(line) {
    const doc = this.cm.getDoc();
    return line >= 0 && line < doc.lineCount() ? doc.getLine(line) : null;
  }

  clearAnnotations() {
    const doc = this.cm.getDoc();
    this.cm.operation(() => {
      for (const a of this.annotations) {
        a.bookmark.clear();
        if (a.handle) doc.removeLineClass(a.handle, "background", a.cls);
      }
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

  refresh() {
    this.cm.refresh();
  }
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
