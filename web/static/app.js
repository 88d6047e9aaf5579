// ripple's web client: a page that speaks PROTOCOL.md to the server it
// was loaded from, like any other client.
//
// The token comes from the page's own URL (?token=...) and goes only into
// the WebSocket URL. The client id, the execution context id, its stack and
// the visualization are kept in sessionStorage (one browser tab = one
// client), so a reload or a dropped connection comes back as the same
// client and gets its contexts back (PROTOCOL.md 1; the server keeps them
// for its grace period).

import { Rpc, DISCONNECTED } from "./rpc.js";
import { Editor, DEFAULT_RUN_DELAY } from "./editor.js";
import { fillAnnotation, innerUpdates, label, state as updateState, duration, tickElapsed } from "./values.js";
import { render as renderData } from "./dataview.js";
import { Cell, bundleNode, isBundle } from "./cells.js";
import { isNotebook } from "./notebook.js";

const $ = (id) => document.getElementById(id);

// Error codes the page acts on (PROTOCOL.md 6).
const FILE_NOT_FOUND = 1003;
const INVALID_STACK_ITEM = 2004;
const EMPTY_STACK = 2003;
const METHOD_NOT_FOUND = -32601;

// Run policies (PROTOCOL.md 8.2, runtime/setRunPolicy): what an automatic
// run (typing) does with an external effect.
const POLICIES = ["hold", "allow"];
const MAX_RUN_DELAY = 10_000; // ms: the setting's upper bound

// The visualization used when the expression box is empty: the value as
// JSON (what json cannot encode becomes its repr), DataFrames as records,
// so lists of dicts and frames show as tables.
const DEFAULT_VISUALIZATION =
  'lambda v: __import__("json").loads(__import__("json").dumps(' +
  'v.to_dict("records") if type(v).__name__ == "DataFrame" else v, default=repr))';

const store = {
  get(key, fallback) {
    try {
      const v = sessionStorage.getItem(`ripple.${key}`);
      return v === null ? fallback : JSON.parse(v);
    } catch (e) {
      return fallback; // unreadable: start afresh rather than not at all
    }
  },
  set(key, value) {
    sessionStorage.setItem(`ripple.${key}`, JSON.stringify(value));
  },
};

// uuid returns a random UUID (crypto.randomUUID exists only in secure
// contexts; a page served on a LAN address is not one).
function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function pointerText(mp) {
  return `${mp.module}:${mp.definedOnType ? mp.definedOnType + "." : ""}${mp.name}`;
}

// parsePointer reads "module:qualname" into a MethodPointer.
function parsePointer(text) {
  const m = /^\s*([A-Za-z_][\w.]*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*$/.exec(text);
  if (!m) return null;
  const dot = m[2].lastIndexOf(".");
  return {
    module: m[1],
    definedOnType: dot < 0 ? "" : m[2].slice(0, dot),
    name: dot < 0 ? m[2] : m[2].slice(dot + 1),
  };
}

// The page's state. Every field is only touched on the page's one thread;
// "frame" below means the top frame of the context's stack.
const session = {
  token: new URLSearchParams(location.search).get("token"),
  clientId: store.get("clientId", null),
  contextId: store.get("contextId", null),
  // stack: [{item: StackItem, pointer: "module:qualname" of the frame's
  // function}], bottom first; mirrors the server's.
  stack: store.get("stack", []),
  entry: store.get("entry", ""),
  connectedOnce: false,
  downSince: null, // when the connection was lost (null while connected)
  modules: [],
  modulePaths: new Map(), // module -> path of its file
  updates: new Map(), // ExpressionId -> latest update of the frame, with seq
  seq: 0, // arrival order of updates
  run: { state: "idle" }, // idle | running | complete | failed
  diagnostics: [],
  compileError: null, // the Diagnostic of the last compileError, until a run completes
  // settledText: the shown buffer's text when the last run completed on it
  // with no edit waiting, or null (see settled()).
  settledText: null,
  shown: [], // the updates shown beside the editor's lines, by render()
  // viz: {id, expressionId, code} of the attached visualization.
  viz: store.get("viz", null),
  vizPick: null, // the statement picked in the pane
  // cells: ExpressionId -> Cell, what each statement of the frame printed
  // and displayed (shown under it); a statement that runs again starts
  // with an empty cell.
  cells: new Map(),
  // richViz: ExpressionId -> visualization id, the ripple:display of a bare
  // expression's rich value shown in its cell (wantRichValues).
  richViz: new Map(),
  // saving: path -> "saving" | "failed" (absent: idle), for the file state.
  saving: new Map(),
  autosave: localStorage.getItem("ripple.autosave") !== "off",
  // effects: the run policy this tab's client asked for; sent on every
  // (re)connect, so the server's session default is what the switch
  // shows. Per tab like the client id (the server keeps it per client);
  // a new tab starts at "hold", the safe default.
  effects: POLICIES.includes(store.get("effects", "hold")) ? store.get("effects", "hold") : "hold",
  // policyState: "set" (the server has session.effects), "setting" (a
  // call is on its way), "unsupported" (the server has no
  // runtime/setRunPolicy) or "failed".
  policyState: "setting",
};
if (!session.clientId) {
  session.clientId = uuid();
  store.set("clientId", session.clientId);
}
if (!session.contextId) {
  session.contextId = uuid();
  store.set("contextId", session.contextId);
}

const wsURL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws?token=${encodeURIComponent(session.token || "")}`;
const rpc = new Rpc(wsURL, { open: onOpen, notify: onNotify, state: onConnState });

const editor = new Editor($("editor"), rpc, {
  notice: toast,
  changed: () => renderFileState(),
  typed: (buf) => scheduleAutosave(buf),
  save: () => save(),
  runHere: (line) => runLine(line),
  complete: (code, cursor) => rpc.call("executionContext/complete", { contextId: session.contextId, code, cursor }),
  inspect: (code, cursor) => rpc.call("executionContext/inspect", { contextId: session.contextId, code, cursor, detailLevel: 0 }),
  annotation: (u, el) =>
    fillAnnotation(
      u,
      el,
      { pick: (u) => (u.innerOf ? undefined : pickForViz(u)), enter: enterCall, run: (u) => runStatement(u.expressionId), lookup: (id) => session.updates.get(id) },
      session.viz && session.viz.expressionId === u.expressionId,
    ),
});
editor.runDelay = loadRunDelay();

// ---- connection -----------------------------------------------------------

function onConnState(name, info) {
  const conn = $("conn");
  conn.dataset.state = name;
  editor.setWritable(name === "open");
  $("reconnect").hidden = name !== "reconnecting";
  document.body.classList.toggle("offline", name !== "open");
  switch (name) {
    case "connecting":
      $("conn-text").textContent = "connecting…";
      break;
    case "open":
      $("conn-text").textContent = "connected";
      hideBanner("conn");
      hideBanner("gone");
      session.downSince = null;
      break;
    case "reconnecting": {
      session.downSince ??= Date.now();
      if (Date.now() - session.downSince >= GONE_AFTER) showGone();
      const wait = info.delay ? ` in ${Math.round(info.delay / 100) / 10} s` : "";
      $("conn-text").textContent = `disconnected · retrying${wait}`;
      showBanner("conn", "warn", "Disconnected from ripple. Reconnecting with the same client id; edits are paused until then.");
      if (info.attempt >= 1) probe();
      break;
    }
  }
}

// GONE_AFTER: a server not reachable for this long is taken for gone (it
// stopped, or was started again elsewhere); the page says so and where the
// unsaved text is, and keeps trying.
const GONE_AFTER = Number(localStorage.getItem("ripple.goneAfterMs")) || 20_000;

// showGone says that the server is gone and offers each buffer's unsaved
// text as a download (it is also in this tab and in localStorage).
function showGone() {
  const dirty = [...editor.buffers.values()].filter((b) => b.dirty);
  const since = new Date(session.downSince).toLocaleTimeString();
  const where = dirty.length
    ? ` Unsaved text of ${dirty.map((b) => b.path).join(", ")} is kept in this tab and in this browser's storage; download it, or start ripple serve on ${location.host} again and this page saves it.`
    : " Nothing typed here is unsaved.";
  showBanner("gone", "error", `The ripple server at ${location.host} has not answered since ${since}: it stopped or was started elsewhere (open the URL it printed).${where}`,
    dirty.map((b) => [`Download ${b.path.split("/").pop()}`, async () => download(b.path.split("/").pop(), b.doc.getValue())]));
}

function download(name, text) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

// probe tells a refused token or origin from a server that is gone: the
// WebSocket API hides the HTTP status of a failed handshake, a plain GET of
// /ws does not (401 wrong token, 403 origin, 400 = would have upgraded).
async function probe() {
  try {
    const res = await fetch(`/ws?token=${encodeURIComponent(session.token || "")}`, { cache: "no-store" });
    if (res.status === 401) showBanner("conn", "error", "The token in this page's URL was refused. Open the URL that `ripple serve` printed.");
    else if (res.status === 403) explainOrigin();
  } catch (e) {
    showBanner("conn", "warn", "The ripple server is not reachable. Reconnecting when it is back…");
  }
}

// explainOrigin asks the server why it refused this page's origin (a
// POST carries the Origin header as the WebSocket handshake did).
async function explainOrigin() {
  let text = "The server refused this page's origin (see ripple serve --allow-origin).";
  try {
    const res = await fetch("/origin-check", { method: "POST", cache: "no-store" });
    const why = await res.json();
    if (!why.allowed && why.message) text = why.message;
  } catch (e) {
    // keep the generic text
  }
  showBanner("conn", "error", text);
}

// onOpen runs on every (re)connect before the connection's notifications
// are delivered: session, files, context and stack, buffers,
// visualization.
async function onOpen() {
  const init = await rpc.call("session/initProtocolConnection", { clientId: session.clientId });
  session.modules = init.modules;
  $("project").textContent = init.projectRoot;
  $("project").title = init.projectRoot;
  document.title = `ripple · ${init.projectRoot.split("/").filter(Boolean).pop() || init.projectRoot}`;
  if (init.python) {
    $("python").textContent = `python ${init.python.version} at ${init.python.path}`;
    $("python").title = "the interpreter ripple's kernels run";
  }
  $("empty").hidden = session.modules.length > 0;
  loadTree();
  // Before the context exists, so that its first run (a restore) already
  // has this tab's policy.
  await sendRunPolicy(session.effects);
  await rpc.call("executionContext/create", { contextId: session.contextId });
  const reconnect = session.connectedOnce;
  session.connectedOnce = true;
  await restoreStack(reconnect);
  await editor.reopen();
  await showFrameModule();
  if (session.viz) await attachViz(session.viz.expressionId, session.viz.code, true);
  render();
}

// restoreStack makes the server's stack the page's. A context the server
// kept answers the first push with 2004 (its stack is not empty): nothing
// to do, the server resends its values. Otherwise the context is new (first
// visit, or the server forgot it) and the stack is pushed again.
async function restoreStack(reconnect) {
  if (session.stack.length === 0) {
    if (!session.entry) session.entry = await defaultEntry();
    $("entry").value = session.entry;
    if (session.entry) await runEntry(session.entry, false);
    return;
  }
  $("entry").value = session.entry;
  const [bottom, ...rest] = session.stack;
  try {
    await rpc.call("executionContext/push", { contextId: session.contextId, stackItem: bottom.item });
  } catch (e) {
    if (e.code === INVALID_STACK_ITEM) {
      toast("info", `${reconnect ? "Reconnected" : "Welcome back"}: the server kept this page's context and its values.`);
      return;
    }
    toast("error", `Could not run ${bottom.pointer}: ${e.message}`);
    setStack([]);
    return;
  }
  clearFrame();
  const kept = [bottom];
  for (const frame of rest) {
    try {
      await rpc.call("executionContext/push", { contextId: session.contextId, stackItem: frame.item });
      kept.push(frame);
    } catch (e) {
      toast("warn", `Could not re-enter ${frame.pointer}: ${e.message}`);
      break;
    }
  }
  setStack(kept);
  toast("warn", "The server had forgotten this page's context (its grace period ended or it restarted); it was created again.");
}

// ---- notifications ---------------------------------------------------------

function onNotify(method, p) {
  switch (method) {
    case "executionContext/expressionUpdates":
      if (p.contextId !== session.contextId) return;
      onUpdates(p.updates);
      break;
    case "executionContext/executionComplete":
      if (p.contextId !== session.contextId) return;
      session.run = { state: "complete", started: session.run.started, ended: Date.now() };
      session.compileError = null;
      {
        const buf = editor.current;
        session.settledText = buf && !buf.unrun && buf.inflight === 0 ? buf.doc.getValue() : null;
      }
      scheduleRender();
      break;
    case "executionContext/executionFailed":
      if (p.contextId !== session.contextId) return;
      session.run = { state: "failed", result: p.result, started: session.run.started, ended: Date.now() };
      if (p.result.kind === "interrupted" || p.result.kind === "kernelDied") settleUnreached(p.result.kind);
      if (p.result.kind === "compileError") {
        // No run started, so the list still holds the last run's problems
        // and earlier compile errors: this one replaces them.
        session.compileError = p.result.diagnostic || { message: p.result.message };
        session.diagnostics = p.result.diagnostic ? [p.result.diagnostic] : [];
        renderProblems();
      }
      scheduleRender();
      break;
    case "executionContext/executionStatus":
      if (p.contextId !== session.contextId) return;
      // One notification per diagnostic as the run finds them; a new run
      // starts a new list (onUpdates).
      session.diagnostics.push(...(p.diagnostics || []));
      renderProblems();
      break;
    case "executionContext/output":
      if (p.contextId !== session.contextId) return;
      appendOutput(p.stream, p.text);
      if (p.expressionId) {
        // The cell paints itself; only a new one needs a render (to get
        // its place under the statement).
        const c = cellOf(p.expressionId);
        const was = c.empty;
        c.text(p.stream, p.text);
        if (was) scheduleRender();
      }
      break;
    case "executionContext/displayData":
      if (p.contextId !== session.contextId) return;
      if (p.expressionId) cellOf(p.expressionId).display(p.data);
      else writeOutput(() => runOutput().display(p.data));
      scheduleRender();
      break;
    case "executionContext/visualizationUpdate":
      if (showRichValue(p)) return;
      if (!session.viz || p.visualizationContext.visualizationId !== session.viz.id) return;
      showVizData(p.data);
      break;
    case "executionContext/visualizationEvaluationFailed":
      if (!session.viz || p.visualizationId !== session.viz.id) return;
      showVizError(p.message);
      break;
    case "runtime/kernelRestarted":
      if (!(p.contextIds || []).includes(session.contextId)) return;
      showBanner(
        "kernel",
        "warn",
        `The kernel was restarted (${p.reason || "no reason given"}). ${p.statePreserved ? "Its state was kept." : "Its state was lost: every value is computed again."}`,
      );
      break;
    case "file/event":
      onFileEvent(p);
      break;
    case "text/didChange":
      editor.didChange(p.edits || []);
      scheduleRender();
      break;
    case "text/fileModifiedOnDisk":
      toast("warn", `${p.path} changed on disk. Your unsaved edits are kept; saving overwrites the file.`);
      break;
  }
}

// onUpdates records a frame's expression updates. A run starts with
// Pending for exactly the statements that will run (PROTOCOL.md 5.4); the
// others are not sent again: their values come from the cache this run, so
// the page marks them so.
function onUpdates(updates) {
  const top = topPointer();
  const mine = updates.filter((u) => top && u.expressionId.startsWith(`${top}/`)); // not an older frame's
  const starts = mine.some((u) => u.payload.type === "Pending" && (!u.payload.message || u.payload.message === "running"));
  if (starts && session.run.state !== "running") {
    session.run = { state: "running", started: Date.now() };
    session.settledText = null;
    session.diagnostics = [];
    renderProblems();
    // The output pane holds the latest run only.
    clearOutput();
    for (const [id, u] of session.updates) {
      if (u.payload.type === "Value" && !u.fromCache) session.updates.set(id, { ...u, fromCache: true });
    }
  }
  const now = Date.now();
  for (const u of mine) {
    // A statement without a value now (pending, running, held, not
    // reached) keeps its last one, shown dimmed (PROTOCOL.md 8.1).
    const prev = session.updates.get(u.expressionId);
    const last = u.payload.type !== "Pending" || !prev ? null : prev.payload.type === "Value" ? prev : prev.last || null;
    session.updates.set(u.expressionId, { ...u, seq: ++session.seq, last, arrived: now });
    // It runs again: what it printed before is not its output any more.
    if (u.payload.type === "Pending" && (!u.payload.message || u.payload.message === "running")) session.cells.get(u.expressionId)?.clear();
    else if (u.payload.type !== "Pending") session.cells.get(u.expressionId)?.settle();
  }
  scheduleRender();
}

// settleUnreached makes every statement of the frame still waiting or
// running "not reached" with the run's end as its reason, once the run has
// ended (interrupted, the kernel died). The server says so itself
// (PROTOCOL.md 8.4); this covers a server that did not, so that no
// statement stays "pending" for good. Such updates are marked local.
function settleUnreached(kind) {
  for (const [id, u] of session.updates) {
    const st = updateState(u);
    if (st !== "pending" && st !== "running") continue;
    session.updates.set(id, { ...u, payload: { type: "Pending", message: "not reached", reason: { kind } }, local: true, last: u.last });
  }
}

function cellOf(expressionId) {
  let c = session.cells.get(expressionId);
  if (!c) {
    c = new Cell(label(expressionId).replace(/[^\w.-]+/g, "_"));
    c.resized = () => editor.cellResized(c.box);
    session.cells.set(expressionId, c);
  }
  return c;
}

// staleUpdates returns the ids of updates that belong to statements that
// were deleted. The server never says so: a statement whose range is
// unchanged and whose value is cached is not sent again, so absence from a
// run means nothing. But a statement that moved is sent again with its new
// range, and live statements' ranges never overlap; so an older update
// whose lines overlap a newer one's belongs to a statement that is gone.
// So does one whose first line in the shown text is now blank or a
// comment.
//
// That holds only once a run has completed on the text shown: while typed
// edits wait for their run, or after a run that ended early (interrupted,
// not reached), ranges are of an older text and a live statement may look
// gone. The server will not send it again if its range is back where it
// was, so such updates are only hidden until then (see settled).
function staleUpdates(lineText) {
  const newestFirst = [...session.updates.values()].sort((a, b) => b.seq - a.seq);
  const taken = [];
  const stale = new Set();
  for (const u of newestFirst) {
    if (!u.range) continue;
    const from = u.range.start.line;
    const to = u.range.end.line;
    const text = lineText ? lineText(from) : null;
    const overlaps = taken.some(([a, b]) => from <= b && a <= to);
    if (overlaps || (text !== null && /^\s*(#.*)?$/.test(text))) {
      stale.add(u.expressionId);
      continue;
    }
    taken.push([from, to]);
  }
  return stale;
}

// settled reports whether the updates' ranges are those of the text shown:
// the last run completed on exactly that text.
function settled() {
  const buf = editor.current;
  return !!buf && session.settledText !== null && !buf.unrun && buf.inflight === 0 && buf.doc.getValue() === session.settledText;
}

// ---- stack -----------------------------------------------------------------

function topPointer() {
  const top = session.stack[session.stack.length - 1];
  return top ? top.pointer : null;
}

function setStack(stack) {
  session.stack = stack;
  store.set("stack", stack);
}

// ---- rich values of bare expressions ---------------------------------------------

// A statement that is a bare expression (`df`, `df.describe()`, `fig`) with
// a rich value (PROTOCOL.md 7.2: mimeTypes) shows its rendering under the
// line, as a notebook cell shows its result: the page attaches a
// ripple:display visualization to it (one per statement, kept while the
// frame is shown) and puts the bundle in the statement's cell, updated in
// place when the value changes.
const RICH = ["text/html", "image/png", "image/jpeg", "image/svg+xml", "text/markdown", "text/latex"];

// isBareExpression reports whether a statement's first line is an
// expression statement: no keyword statement, no assignment at bracket
// depth 0.
export function isBareExpression(line) {
  const t = line.trim();
  if (!t || /^(def|class|import|from|for|while|if|elif|else|try|except|finally|with|return|raise|assert|del|pass|break|continue|global|nonlocal|async|yield|print|display|@)\b/.test(t)) return false;
  let depth = 0;
  let quote = null;
  for (let i = 0; i < t.length; i++) {
    const c = t[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === "#") break;
    else if ("([{".includes(c)) depth++;
    else if (")]}".includes(c)) depth--;
    else if (depth === 0 && c === "=" && t[i + 1] !== "=" && !"=!<>".includes(t[i - 1] || "")) return false;
    else if (depth === 0 && c === ":" && t[i + 1] !== "=" && !/lambda/.test(t.slice(0, i))) return false; // x: int = …
  }
  return true;
}

function wantRichValues(updates) {
  for (const u of updates) {
    if (!u.range || u.payload.type !== "Value" || !(u.payload.mimeTypes || []).some((m) => RICH.includes(m))) continue;
    if (session.richViz.has(u.expressionId)) continue;
    const line = editor.lineText(u.range.start.line);
    if (line === null || !isBareExpression(line)) continue;
    const id = uuid();
    session.richViz.set(u.expressionId, id);
    rpc.call("executionContext/attachVisualization", {
      visualizationId: id,
      expressionId: u.expressionId,
      visualizationConfig: { executionContextId: session.contextId, expression: "ripple:display" },
    }).catch(() => session.richViz.delete(u.expressionId));
  }
}

// showRichValue puts a visualizationUpdate of a rich value in its
// statement's cell; false when it is not one of those.
function showRichValue(p) {
  const vid = p.visualizationContext.visualizationId;
  for (const [expressionId, id] of session.richViz) {
    if (id !== vid) continue;
    if (isBundle(p.data)) {
      const c = cellOf(expressionId);
      const was = c.empty;
      c.value(p.data);
      if (was) scheduleRender();
    }
    return true;
  }
  return false;
}

function dropRichValues() {
  for (const [expressionId, id] of session.richViz) {
    rpc.call("executionContext/detachVisualization", { executionContextId: session.contextId, visualizationId: id, expressionId }).catch(() => {});
  }
  session.richViz.clear();
}

function clearFrame() {
  dropRichValues();
  session.settledText = null;
  session.shown = [];
  session.updates.clear();
  session.cells.clear();
  session.run = { state: "idle" };
}

// runEntry replaces the stack with a call of the entry point
// ("module:function", no arguments).
async function runEntry(text, popFirst = true) {
  const call = parseCall(text);
  if (!call) {
    toast("error", `"${text}" is not a function: write module:function or module:function(args), e.g. main:main`);
    return;
  }
  const mp = call.pointer;
  let args;
  try {
    args = await bindArguments(mp, call.args);
  } catch (e) {
    toast("error", `Cannot run ${text}: ${e.message}`);
    return;
  }
  if (mp.definedOnType) {
    toast("error", `${text} is a method; the page runs module functions (module:function)`);
    return;
  }
  // The same call again: a recompute keeps its frame, its values and what
  // its statements printed (a pop and a push of the same call would leave
  // the kernel's frame and its cache as they are, and send nothing).
  if (popFirst && session.stack.length === 1 && JSON.stringify(session.stack[0].item.methodPointer) === JSON.stringify(mp) &&
      JSON.stringify(session.stack[0].item.positionalArgumentsExpressions) === JSON.stringify(args)) {
    await rpc.call("executionContext/recompute", { contextId: session.contextId });
    return;
  }
  await detachViz();
  if (popFirst) {
    for (;;) {
      try {
        await rpc.call("executionContext/pop", { contextId: session.contextId });
      } catch (e) {
        if (e.code === EMPTY_STACK) break;
        throw e;
      }
    }
  }
  setStack([]);
  clearFrame();
  const item = { type: "ExplicitCall", methodPointer: mp, positionalArgumentsExpressions: args };
  try {
    await rpc.call("executionContext/push", { contextId: session.contextId, stackItem: item });
  } catch (e) {
    toast("error", `Cannot run ${text}: ${e.message}`);
    render();
    return;
  }
  session.entry = text.trim();
  store.set("entry", session.entry);
  setStack([{ item, pointer: pointerText(mp) }]);
  await showFrameModule();
  render();
}

// enterCall pushes the LocalCall of a statement with methodCall.
async function enterCall(u) {
  const item = { type: "LocalCall", expressionId: u.expressionId };
  await detachViz();
  try {
    await rpc.call("executionContext/push", { contextId: session.contextId, stackItem: item });
  } catch (e) {
    toast("error", `Cannot enter ${label(u.expressionId)}: ${e.message}`);
    return;
  }
  clearFrame();
  setStack([...session.stack, { item, pointer: pointerText(u.methodCall.methodPointer) }]);
  await showFrameModule();
  render();
}

// popTo pops frames until depth frames are left.
async function popTo(depth) {
  await detachViz();
  while (session.stack.length > depth) {
    try {
      await rpc.call("executionContext/pop", { contextId: session.contextId });
    } catch (e) {
      toast("error", `Cannot leave ${topPointer()}: ${e.message}`);
      break;
    }
    setStack(session.stack.slice(0, -1));
    clearFrame();
  }
  await showFrameModule();
  render();
}

// ---- files -----------------------------------------------------------------

// modulePath finds the file of a module: pkg/mod.py or pkg/mod/__init__.py.
async function openModule(module) {
  const known = session.modulePaths.get(module);
  const base = module.replaceAll(".", "/");
  const candidates = known ? [known] : [`${base}.py`, `${base}/__init__.py`, `${base}.ipynb`];
  for (const path of candidates) {
    try {
      await editor.open(path);
      session.modulePaths.set(module, path);
      return path;
    } catch (e) {
      if (e.code !== FILE_NOT_FOUND) throw e;
    }
  }
  return null;
}

async function showFrameModule() {
  const top = topPointer();
  try {
    if (top) await openModule(top.split(":")[0]);
    else if (!editor.current && session.modules.includes("main")) await openModule("main");
  } catch (e) {
    if (e.code !== DISCONNECTED) toast("error", e.message);
  }
  renderFileState();
  markTree();
}

async function openFile(path) {
  try {
    await editor.open(path);
  } catch (e) {
    toast("error", `Cannot open ${path}: ${e.message}`);
  }
  renderFileState();
  markTree();
  render();
}

async function save(auto = false, buf = editor.current) {
  if (!buf) return;
  const path = buf.path;
  clearTimeout(buf.autosaveTimer);
  session.saving.set(path, "saving");
  renderFileState();
  try {
    await editor.save(buf);
    session.saving.delete(path);
    if (!buf.dirty) forgetUnsaved(buf);
    if (!auto) toast("info", `Saved ${buf.path}`);
  } catch (e) {
    session.saving.set(path, "failed");
    if (auto && /being merged/.test(e.message)) scheduleAutosave(buf);
    else toast("error", `Save failed: ${e.message}`);
  }
  renderFileState();
}

// Autosave: each buffer is saved 1 s after its last keystroke, whichever
// file is shown by then (the toggle in the file bar turns it off; the
// choice is remembered). Until then its text is also kept in this
// browser (keepUnsaved), so a server that is gone for good loses none.
const AUTOSAVE_DELAY = 1000;
function scheduleAutosave(buf) {
  clearTimeout(buf.autosaveTimer);
  keepUnsaved(buf);
  renderFileState();
  if (!session.autosave) return;
  buf.autosaveTimer = setTimeout(() => {
    if (buf.dirty && editor.buffers.get(buf.path) === buf) save(true, buf);
  }, AUTOSAVE_DELAY);
}

// keepUnsaved keeps a dirty buffer's text in localStorage (at most every
// 300 ms per buffer), keyed by the project and path; forgetUnsaved drops it
// once saved.
function unsavedKey(path) {
  return `ripple.unsaved.${$("project").textContent}:${path}`;
}
function keepUnsaved(buf) {
  if (buf.keepTimer) return;
  buf.keepTimer = setTimeout(() => {
    buf.keepTimer = null;
    try {
      if (buf.dirty) localStorage.setItem(unsavedKey(buf.path), JSON.stringify({ text: buf.doc.getValue(), at: Date.now() }));
      else localStorage.removeItem(unsavedKey(buf.path));
    } catch (e) {
      // storage full or denied: the server still has the buffer
    }
  }, 300);
}
function forgetUnsaved(buf) {
  try {
    localStorage.removeItem(unsavedKey(buf.path));
  } catch (e) {
    // nothing kept
  }
}

// replaceChanged makes doc's text `text` by replacing only the span that
// differs (common prefix and suffix kept), so the server sees the edit a
// person would have made: a run keeps the statements before it instead of
// being interrupted by a whole-document replace.
function replaceChanged(doc, text) {
  const old = doc.getValue();
  const n = Math.min(old.length, text.length);
  let p = 0;
  while (p < n && old.charCodeAt(p) === text.charCodeAt(p)) p++;
  // Never split a surrogate pair.
  if (p > 0 && p < n && isHighSurrogate(old.charCodeAt(p - 1))) p--;
  let s = 0;
  while (s < n - p && old.charCodeAt(old.length - 1 - s) === text.charCodeAt(text.length - 1 - s)) s++;
  if (s > 0 && s < n - p && isHighSurrogate(old.charCodeAt(old.length - 1 - s))) s--;
  if (p === old.length && p === text.length) return;
  doc.replaceRange(text.slice(p, text.length - s), doc.posFromIndex(p), doc.posFromIndex(old.length - s));
}

function isHighSurrogate(c) {
  return c >= 0xd800 && c <= 0xdbff;
}

// offerRecovered shows unsaved text a stopped server kept for the shown
// buffer, with Restore and Discard (PROTOCOL.md 7.4).
function offerRecovered() {
  const buf = editor.current;
  if (!buf || !buf.recovered || buf.recoveredOffered) return;
  buf.recoveredOffered = true;
  const r = buf.recovered;
  showBanner(`recovered:${buf.path}`, "info",
    `${buf.path} has unsaved changes from ${new Date(r.savedAt).toLocaleString()} that ripple kept when it stopped.`, [
      ["Restore", async () => {
        // Taken once: the offer goes, and so does the kept copy, so a
        // later page never offers (and reverts to) it again.
        buf.recovered = null;
        hideBanner(`recovered:${buf.path}`);
        await editor.open(buf.path);
        replaceChanged(buf.doc, r.content);
        await rpc.call("file/delete", { path: r.path }).catch(() => {});
      }],
      ["Discard", async () => {
        await call("file/delete", { path: r.path }, "Discard");
        buf.recovered = null;
        hideBanner(`recovered:${buf.path}`);
      }],
    ]);
}

// defaultEntry: main:main when main.py defines main, else main.py run as
// a script (main:__main__), else nothing.
async function defaultEntry() {
  if (!session.modules.includes("main")) return "";
  try {
    const res = await rpc.call("file/read", { path: "main.py" });
    return /^(async\s+)?def\s+main\s*\(/m.test(res.contents) ? "main:main" : "main:__main__";
  } catch (e) {
    return "main:main";
  }
}

// moduleOf is the dotted module of a project path ("pkg/mod.py" ->
// "pkg.mod"), or null.
function moduleOf(path) {
  if (isNotebook(path)) return path.slice(0, -6).replaceAll("/", "."); // a notebook is a module (notebook.js)
  if (!path || !path.endsWith(".py")) return null;
  return path.slice(0, -3).replace(/\/__init__$/, "").replaceAll("/", ".");
}

// parseCall reads "module:function" or "module:function(args)" into its
// pointer and the argument source texts (positional ones, and name=value).
function parseCall(text) {
  const m = /^\s*([A-Za-z_][\w.]*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\s*(?:\((.*)\))?\s*$/s.exec(text);
  if (!m) return null;
  const pointer = parsePointer(m[1]);
  if (!pointer) return null;
  return { pointer, args: m[2] === undefined ? [] : splitTopLevel(m[2]) };
}

// splitTopLevel splits source at the commas outside brackets and strings.
function splitTopLevel(src) {
  const out = [];
  let depth = 0;
  let quote = null;
  let cur = "";
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    if (quote) {
      cur += ch;
      if (ch === "\\") cur += src[++i] ?? "";
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) depth--;
    if (ch === "," && depth === 0) {
      if (cur.trim()) out.push(cur.trim());
      cur = "";
      continue;
    }
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

// bindArguments turns positional and keyword argument texts into the
// positional expressions an ExplicitCall takes (PROTOCOL.md 2), reading
// the function's parameters from its def in the module's text: keywords
// go to their parameter's place, parameters skipped in between get their
// default's text.
async function bindArguments(mp, args) {
  const positional = [];
  const keywords = new Map();
  for (const a of args) {
    const kw = /^([A-Za-z_]\w*)\s*=(?!=)\s*(.+)$/s.exec(a);
    if (kw) keywords.set(kw[1], kw[2]);
    else if (keywords.size) throw new Error(`positional argument ${a} after keyword arguments`);
    else positional.push(a);
  }
  if (mp.name === "__main__" && args.length) throw new Error("a module run as a script takes no arguments");
  if (!keywords.size) return positional;
  const params = await parameters(mp);
  const out = [...positional];
  let last = -1;
  for (const name of keywords.keys()) {
    const i = params.findIndex((p) => p.name === name);
    if (i < 0) throw new Error(`${pointerText(mp)} has no parameter ${name}`);
    if (i < positional.length) throw new Error(`${name} is given twice`);
    last = Math.max(last, i);
  }
  for (let i = positional.length; i <= last; i++) {
    const p = params[i];
    if (keywords.has(p.name)) out.push(keywords.get(p.name));
    else if (p.default !== null) out.push(p.default);
    else throw new Error(`missing an argument for ${p.name}`);
  }
  return out;
}

// parameters reads the parameters of a module function's def: [{name,
// default (source text or null)}], self and * parameters excluded.
async function parameters(mp) {
  const path = session.modulePaths.get(mp.module) || `${mp.module.replaceAll(".", "/")}.py`;
  const res = await rpc.call("file/read", { path });
  const re = new RegExp(`^[ \\t]*(?:async\\s+)?def\\s+${mp.name}\\s*\\(`, "m");
  const m = re.exec(res.contents);
  if (!m) throw new Error(`no def ${mp.name} in ${path}`);
  let depth = 1;
  let i = m.index + m[0].length;
  const start = i;
  for (; i < res.contents.length && depth > 0; i++) {
    if ("([{".includes(res.contents[i])) depth++;
    else if (")]}".includes(res.contents[i])) depth--;
  }
  const out = [];
  for (const part of splitTopLevel(res.contents.slice(start, i - 1))) {
    if (part === "/" || part.startsWith("*")) continue;
    const [head, ...rest] = part.split("=");
    const name = head.split(":")[0].trim();
    if (name === "self" || name === "cls") continue;
    out.push({ name, default: rest.length ? rest.join("=").trim() : null });
  }
  return out;
}

function onFileEvent(p) {
  if (p.kind !== "Modified") loadTree();
  const buf = editor.buffers.get(p.path);
  if (buf) buf.readDisk(rpc).then(renderFileState);
}

const HIDDEN = /(^|\/)(\.[^/]*|__pycache__|node_modules|venv)$/;

async function loadTree() {
  const root = $("tree");
  const open = new Set([...root.querySelectorAll("li.dir.open")].map((li) => li.dataset.path));
  if (open.size === 0) for (const path of editor.buffers.keys()) for (const d of parents(path)) open.add(d);
  const list = await listDir("", open);
  root.replaceChildren(...list);
  markTree();
}

function parents(path) {
  const parts = path.split("/");
  return parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
}

async function listDir(path, open) {
  let res;
  try {
    res = await rpc.call("file/list", { path });
  } catch (e) {
    return [];
  }
  const entries = res.entries.filter((e) => !HIDDEN.test(e.path));
  entries.sort((a, b) => (a.kind === b.kind ? a.path.localeCompare(b.path) : a.kind === "directory" ? -1 : 1));
  const items = [];
  for (const e of entries) {
    const li = document.createElement("li");
    li.dataset.path = e.path;
    const name = e.path.split("/").pop();
    const row = document.createElement("button");
    row.type = "button";
    row.className = "tree-row";
    row.textContent = name;
    li.append(row);
    if (e.kind === "directory") {
      li.className = "dir";
      const children = document.createElement("ul");
      li.append(children);
      const expand = async () => {
        li.classList.add("open");
        children.replaceChildren(...(await listDir(e.path, open)));
        markTree();
      };
      row.addEventListener("click", () => (li.classList.contains("open") ? li.classList.remove("open") : expand()));
      if (open.has(e.path) || (path === "" && entries.length < 12 && /^[a-z]/.test(name))) await expand();
    } else {
      li.className = "file";
      row.addEventListener("click", () => openFile(e.path));
    }
    items.push(li);
  }
  return items;
}

function markTree() {
  for (const li of $("tree").querySelectorAll("li.file")) {
    const buf = editor.buffers.get(li.dataset.path);
    li.classList.toggle("current", editor.current !== null && editor.current.path === li.dataset.path);
    li.classList.toggle("dirty", !!buf && buf.dirty);
  }
}

// ---- visualization -----------------------------------------------------------

function pickForViz(u) {
  session.vizPick = u.expressionId;
  $("viz-expr").value = u.expressionId;
  attachViz(u.expressionId, $("viz-code").value.trim());
}

// attachViz attaches the pane's visualization to expressionId, or modifies
// the attached one when only its code changed. again: re-attach after a
// reconnect (the server may or may not still have it).
async function attachViz(expressionId, code, again = false) {
  if (!expressionId) return;
  // A value with rich representations (PROTOCOL.md 7.2) shows them.
  const u = session.updates.get(expressionId);
  const rich = u && u.payload && (u.payload.mimeTypes || []).length > 0;
  const config = { executionContextId: session.contextId, expression: code || (rich ? "ripple:display" : DEFAULT_VISUALIZATION) };
  const cur = session.viz;
  // mine is the pane's visualization this call stands for. A detach or
  // another attach while the call is out replaces session.viz: the late
  // reply must not bring back a visualization the server has forgotten.
  let mine = cur;
  try {
    if (cur && !again && cur.expressionId === expressionId) {
      await rpc.call("executionContext/modifyVisualization", { visualizationId: cur.id, visualizationConfig: config });
      if (session.viz !== cur) return;
      session.viz = mine = { ...cur, code };
    } else {
      if (cur) await detachViz();
      const id = uuid();
      session.viz = mine = { id, expressionId, code };
      await rpc.call("executionContext/attachVisualization", { visualizationId: id, expressionId, visualizationConfig: config });
      if (session.viz !== mine) return;
    }
    store.set("viz", session.viz);
    setVizStatus("waiting", `${label(expressionId)}: waiting for a value…`);
  } catch (e) {
    if (session.viz !== mine) return;
    if (!cur || cur.expressionId !== expressionId) session.viz = null;
    store.set("viz", session.viz);
    showVizError(e.message);
  }
  $("viz-code").value = code;
  scheduleRender();
}

async function detachViz() {
  const cur = session.viz;
  if (!cur) return;
  session.viz = null;
  store.set("viz", null);
  try {
    await rpc.call("executionContext/detachVisualization", {
      executionContextId: session.contextId,
      visualizationId: cur.id,
      expressionId: cur.expressionId,
    });
  } catch (e) {
    // Already gone (the frame was left or the server forgot it).
  }
  $("viz-view").replaceChildren();
  setVizStatus("idle", "Pick a statement: click its value in the editor or choose it above.");
  scheduleRender();
}

function setVizStatus(state, text) {
  const el = $("viz-status");
  el.dataset.state = state;
  el.textContent = text;
}

function showVizData(data) {
  setVizStatus("ok", `${label(session.viz.expressionId)} · updated ${new Date().toLocaleTimeString()}`);
  // An HTML value shown again (the statement ran again) goes into the
  // frame already there: no reload, no flash.
  const frame = $("viz-view").querySelector(":scope > .cell-display > iframe.cell-html");
  const rich = isBundle(data) && (data["image/png"] || data["image/jpeg"] || data["image/svg+xml"]);
  if (frame && isBundle(data) && data["text/html"] && !rich) {
    frame.update(data["text/html"]);
    return;
  }
  $("viz-view").replaceChildren(isBundle(data) ? bundleNode(data) : renderData(data));
}

function showVizError(message) {
  setVizStatus("error", message);
}

// ---- output and problems -------------------------------------------------------

// The output pane: everything the run printed, as one Cell (its terminals
// keep the last OUTPUT_KEEP lines of each stream in the DOM).
const OUTPUT_KEEP = 500;
let runCell = null;

function runOutput() {
  if (!runCell) {
    runCell = new Cell("run", OUTPUT_KEEP);
    runCell.resized = () => {
      const out = $("output");
      if (out.dataset.pinned !== "false") out.scrollTop = out.scrollHeight;
    };
    $("output").replaceChildren(runCell.element());
  }
  return runCell;
}

function clearOutput() {
  runCell = null;
  $("output").replaceChildren();
}

// writeOutput changes the output pane with change(out), keeping it
// scrolled to the end if it was there.
function writeOutput(change) {
  const out = $("output");
  change(out);
  if (out.dataset.pinned !== "false") out.scrollTop = out.scrollHeight;
}

function appendOutput(stream, text) {
  runOutput().text(stream, text);
}

function renderProblems() {
  const list = $("problems");
  const diags = session.diagnostics;
  $("problems-count").textContent = diags.length ? String(diags.length) : "";
  list.replaceChildren(
    ...diags.map((d) => {
      const li = document.createElement("li");
      li.className = d.kind === "Error" ? "error" : "warning";
      const where = d.path ? `${d.path}${d.location ? `:${d.location.start.line + 1}:${d.location.start.character + 1}` : ""}` : "";
      const head = document.createElement("button");
      head.type = "button";
      head.className = "problem";
      head.textContent = `${where ? where + "  " : ""}${d.message}`;
      head.addEventListener("click", () => revealDiagnostic(d));
      li.append(head);
      if (d.stack && d.stack.length) li.append(traceback(d.stack));
      return li;
    }),
  );
}

// traceback shows a diagnostic's stack as a traceback does: each frame
// with its source line, a click on it showing that line in the editor.
function traceback(stack) {
  const ol = document.createElement("ol");
  ol.className = "problem-stack";
  for (const f of stack) {
    const li = document.createElement("li");
    const where = document.createElement("button");
    where.type = "button";
    where.className = "frame-link";
    const line = f.location ? f.location.start.line : null;
    where.textContent = `${f.functionName}${f.path ? `  ${f.path}${line !== null ? `:${line + 1}` : ""}` : ""}`;
    where.disabled = !f.path;
    where.addEventListener("click", () => revealDiagnostic({ path: f.path, location: f.location }));
    li.append(where);
    if (f.path && line !== null) {
      const src = document.createElement("code");
      src.className = "frame-source";
      li.append(src);
      sourceLine(f.path, line).then((text) => (src.textContent = text === null ? "" : text.trim()));
    }
    ol.append(li);
  }
  return ol;
}

// sourceLine returns a line of a project file: from its open buffer (what
// ran), else from disk.
async function sourceLine(path, line) {
  const buf = editor.buffers.get(path);
  if (buf) return line < buf.doc.lineCount() ? buf.doc.getLine(line) : null;
  try {
    const res = await rpc.call("file/read", { path });
    return res.contents.split("\n")[line] ?? null;
  } catch (e) {
    return null;
  }
}

async function revealDiagnostic(d) {
  if (!d.path) return;
  await openFile(d.path);
  if (d.location) editor.reveal(d.location.start);
}

// ---- rendering ---------------------------------------------------------------

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

// frameUpdates returns the frame's updates in source order.
function frameUpdates() {
  return [...session.updates.values()].sort((a, b) => {
    const la = a.range ? a.range.start.line : 1e9;
    const lb = b.range ? b.range.start.line : 1e9;
    return la - lb || a.expressionId.localeCompare(b.expressionId);
  });
}

function render() {
  const top = topPointer();
  const frameModule = top ? top.split(":")[0] : null;
  const showing = editor.current && frameModule && session.modulePaths.get(frameModule) === editor.current.path;
  let updates = frameUpdates();
  if (showing) {
    const stale = staleUpdates((line) => editor.lineText(line));
    if (settled()) for (const id of stale) session.updates.delete(id);
    updates = updates.filter((u) => !stale.has(u.expressionId));
  }
  session.shown = showing ? updates : [];
  if (showing) wantRichValues(updates);
  // Inner values (of statements in if/for/with/try bodies) show beside
  // their lines like the frame's statements.
  if (showing) editor.showAnnotations(updates.flatMap((u) => [u, ...innerUpdates(u)]));
  else editor.clearAnnotations();
  if (showing) {
    const cells = [];
    for (const u of updates) {
      const c = session.cells.get(u.expressionId);
      if (c && !c.empty && u.range) cells.push({ id: u.expressionId, line: u.range.end.line, node: c.element() });
    }
    editor.showCells(cells, settled());
  } else editor.clearCells();
  const module = editor.current ? moduleOf(editor.current.path) : null;
  editor.showRunMarks((name) => runDef(module, name).catch((e) => toast("error", e.message)));
  $("run-script").hidden = !module;
  $("run-script").title = module ? `Run ${editor.current.path} as a script (${module}:__main__)` : "";
  offerRecovered();
  editor.markError(session.compileError);
  renderCrumbs();
  renderRunState(updates);
  renderVizChoices(updates);
}

function renderCrumbs() {
  const crumbs = $("crumbs");
  crumbs.replaceChildren(
    ...session.stack.map((frame, i) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "crumb";
      const last = i === session.stack.length - 1;
      b.textContent = frame.item.type === "LocalCall" ? `${label(frame.item.expressionId)} → ${frame.pointer}` : frame.pointer;
      b.title = last ? "the function shown" : `back to ${frame.pointer}`;
      b.disabled = last;
      b.addEventListener("click", () => popTo(i + 1));
      return b;
    }),
  );
}

function renderRunState(updates) {
  const el = $("run-state");
  const run = session.run;
  let text = "";
  let st = run.state;
  switch (run.state) {
    case "running": {
      const pending = updates.filter((u) => updateState(u) === "pending").length;
      const now = updates.find((u) => updateState(u) === "running");
      const where = now ? ` · ${now.range ? `line ${now.range.start.line + 1}` : label(now.expressionId)}` : "";
      text = `running ${duration((Date.now() - run.started) * 1e6)}${where}${pending ? ` · ${pending} pending` : ""}`;
      break;
    }
    case "complete": {
      const count = (s) => updates.filter((u) => updateState(u) === s).length;
      const panics = count("panic");
      const held = count("held");
      const parts = ["done"];
      if (panics) parts.push(`${panics} panic${panics > 1 ? "s" : ""}`);
      if (held) parts.push(`${held} held`);
      text = parts.join(" · ");
      if (panics) st = "panic";
      else if (held) st = "held";
      break;
    }
    case "failed": {
      const r = run.result;
      st = r.kind;
      if (r.kind === "compileError") {
        const d = r.diagnostic;
        const where = d && d.path ? `${d.path}${d.location ? `:${d.location.start.line + 1}` : ""}: ` : "";
        text = `compile error · ${where}${d ? d.message : r.message}`;
      } else if (r.kind === "interrupted") text = "interrupted";
      else if (r.kind === "kernelDied") text = `kernel died · ${r.message}`;
      else text = `${r.kind} · ${r.message}`;
      break;
    }
    default:
      text = topPointer() ? "" : "nothing running";
  }
  el.dataset.state = st;
  el.textContent = text;
  el.title = st === "held" ? `${text}: typing held an effect; ▶ beside the statement (or Ctrl/Cmd-Enter on its line) runs it` : text;
  // Always usable: the page may not have seen a run start (it reconnected
  // in the middle of one); it only stands out while a run is going.
  $("interrupt").classList.toggle("active", run.state === "running");
}

function renderVizChoices(updates) {
  const sel = $("viz-expr");
  const want = session.viz ? session.viz.expressionId : session.vizPick || sel.value;
  const ids = updates.map((u) => u.expressionId);
  if (want && !ids.includes(want)) ids.push(want);
  const same = sel.options.length === ids.length + 1 && ids.every((id, i) => sel.options[i + 1].value === id);
  if (!same) {
    const none = new Option("— choose a statement —", "");
    sel.replaceChildren(none, ...ids.map((id) => new Option(label(id), id)));
  }
  sel.value = want || "";
  $("viz-detach").disabled = !session.viz;
}

function renderFileState() {
  const buf = editor.current;
  $("file-name").textContent = buf ? buf.path : "no file open";
  const st = $("file-state");
  const saving = buf ? session.saving.get(buf.path) : null;
  let state = "clean";
  if (!buf) st.textContent = "";
  else if (saving === "saving") [state, st.textContent] = ["saving", "saving…"];
  else if (saving === "failed") [state, st.textContent] = ["failed", "✖ save failed (Ctrl-S retries)"];
  else if (buf.dirty) [state, st.textContent] = ["dirty", session.autosave ? "● unsaved (saves in 1 s)" : "● unsaved (Ctrl-S saves)"];
  else st.textContent = "✓ saved";
  st.dataset.state = state;
  $("autosave").checked = session.autosave;
  markTree();
}

// ---- banners and toasts --------------------------------------------------------

const banners = new Map(); // key -> {kind, text}

function showBanner(key, kind, text, actions = []) {
  banners.set(key, { kind, text, actions });
  renderBanners();
}

function hideBanner(key) {
  banners.delete(key);
  renderBanners();
}

function renderBanners() {
  const host = $("banners");
  host.replaceChildren(
    ...[...banners].map(([key, b]) => {
      const div = document.createElement("div");
      div.className = `banner ${b.kind}`;
      div.dataset.key = key;
      div.textContent = b.text;
      for (const [name, fn] of b.actions || []) {
        const a = document.createElement("button");
        a.type = "button";
        a.className = "banner-action";
        a.textContent = name;
        a.addEventListener("click", () => fn().catch((e) => toast("error", `${name}: ${e.message}`)));
        div.append(a);
      }
      const close = document.createElement("button");
      close.type = "button";
      close.className = "banner-close";
      close.textContent = "×";
      close.title = "dismiss";
      close.addEventListener("click", () => hideBanner(key));
      div.append(close);
      return div;
    }),
  );
}

function toast(kind, text) {
  const t = document.createElement("div");
  t.className = `toast ${kind}`;
  t.textContent = text;
  $("toasts").append(t);
  setTimeout(() => t.remove(), kind === "error" ? 12000 : 6000);
}

// ---- explicit runs and the run policy ------------------------------------------

// runDef runs a module's function from its ▶: one without parameters that
// need a value at once, else after asking for their arguments (prefilled
// from its last call from this browser, else its defaults). Cancelling
// leaves the view as it was.
async function runDef(module, name) {
  const mp = { module, definedOnType: "", name };
  let params = [];
  try {
    params = await parameters(mp);
  } catch (e) {
    // Not found in the text (e.g. defined by an assignment): run it as is.
  }
  const key = `ripple.args.${module}:${name}`;
  let last = {};
  try {
    last = JSON.parse(localStorage.getItem(key) || "{}");
  } catch (e) {
    last = {};
  }
  let text = `${module}:${name}`;
  if (params.some((p) => p.default === null)) {
    const args = await askArguments(`${module}:${name}`, params, last);
    if (!args) return;
    localStorage.setItem(key, JSON.stringify(args));
    text += `(${params.filter((p) => args[p.name] !== "").map((p) => `${p.name}=${args[p.name]}`).join(", ")})`;
  }
  $("entry").value = text;
  await runEntry(text);
}

// askArguments shows the arguments dialog; it resolves to {name: source}
// or null when cancelled.
function askArguments(title, params, last) {
  const dialog = $("args-dialog");
  $("args-title").textContent = `Run ${title}`;
  const fields = params.map((p) => {
    const label = document.createElement("label");
    label.textContent = p.name;
    const input = document.createElement("input");
    input.name = p.name;
    input.spellcheck = false;
    input.value = last[p.name] ?? p.default ?? "";
    input.placeholder = p.default === null ? "required" : `default ${p.default}`;
    input.required = p.default === null;
    label.append(input);
    return label;
  });
  $("args-fields").replaceChildren(...fields);
  return new Promise((resolve) => {
    const done = (value) => {
      $("args-form").onsubmit = null;
      $("args-cancel").onclick = null;
      dialog.onclose = null;
      if (dialog.open) dialog.close();
      resolve(value);
    };
    $("args-form").onsubmit = (ev) => {
      ev.preventDefault();
      done(Object.fromEntries(params.map((p) => [p.name, $("args-fields").querySelector(`input[name="${CSS.escape(p.name)}"]`).value.trim()])));
    };
    $("args-cancel").onclick = () => done(null);
    dialog.onclose = () => done(null);
    dialog.showModal();
    fields[0]?.querySelector("input").select();
  });
}

// runStatement runs one statement of the frame explicitly (PROTOCOL.md
// 8.2): a recompute naming it, so its effects are allowed. Typed edits
// still waiting for their run go with it.
async function runStatement(expressionId) {
  editor.cancelRun();
  try {
    await rpc.call("executionContext/recompute", { contextId: session.contextId, invalidatedExpressions: [expressionId] });
  } catch (e) {
    toast("error", `Run ${label(expressionId)}: ${e.message}`);
  }
}

// runLine runs the statement of the frame on a line of the shown buffer
// (Ctrl/Cmd-Enter): the one whose range holds the line, the innermost
// (latest starting) if several do.
function runLine(line) {
  const top = topPointer();
  const frameModule = top ? top.split(":")[0] : null;
  if (!frameModule || !editor.current || session.modulePaths.get(frameModule) !== editor.current.path) {
    toast("info", "Ctrl/Cmd-Enter runs a statement of the function shown; this file is not it (run it from the Run box).");
    return;
  }
  let best = null;
  for (const u of session.shown) {
    if (!u.range || u.range.start.line > line || u.range.end.line < line) continue;
    if (!best || u.range.start.line > best.range.start.line) best = u;
  }
  if (!best) {
    toast("info", `Line ${line + 1} has no statement of ${top} to run.`);
    return;
  }
  runStatement(best.expressionId);
}

// sendRunPolicy asks the server for a policy for this client's contexts.
// A server without runtime/setRunPolicy (older than PROTOCOL.md 8) runs
// everything as before: the switch says so.
async function sendRunPolicy(effects) {
  session.policyState = "setting";
  renderPolicy();
  try {
    await rpc.call("runtime/setRunPolicy", { effects });
    session.effects = effects;
    store.set("effects", effects);
    session.policyState = "set";
  } catch (e) {
    if (e.code === METHOD_NOT_FOUND) session.policyState = "unsupported";
    else {
      session.policyState = "failed";
      if (e.code !== DISCONNECTED) toast("error", `Run policy: ${e.message}`);
    }
  }
  renderPolicy();
}

function setRunPolicy(effects) {
  if (!POLICIES.includes(effects) || (effects === session.effects && session.policyState === "set")) return;
  sendRunPolicy(effects);
}

const POLICY_TITLE =
  "What typing does with effects. As you type, ripple runs your code again. " +
  "hold: a statement that would write or delete files outside the temp and cache dirs, start a process or open a network connection " +
  "stops before it and shows ⏸ held, with a ▶ (or Ctrl/Cmd-Enter on its line) that runs it. " +
  "allow: it runs as you type (fully live). Run, Recompute and ▶ always run with effects.";

function renderPolicy() {
  const host = $("policy");
  host.dataset.state = session.policyState;
  host.dataset.effects = session.effects;
  for (const b of host.querySelectorAll("button")) {
    const on = b.dataset.effects === session.effects;
    b.setAttribute("aria-pressed", String(on));
    b.disabled = session.policyState === "unsupported";
  }
  host.title =
    session.policyState === "unsupported"
      ? "This ripple server has no run policy (runtime/setRunPolicy): typing runs everything, effects included."
      : session.policyState === "failed"
        ? `The run policy could not be set; the page asked for ${session.effects}.\n\n${POLICY_TITLE}`
        : POLICY_TITLE;
}

// loadRunDelay reads the typing pause setting (ms), DEFAULT_RUN_DELAY when
// unset or unreadable.
function loadRunDelay() {
  const v = Number(localStorage.getItem("ripple.runDelay"));
  return localStorage.getItem("ripple.runDelay") !== null && Number.isInteger(v) && v >= 0 && v <= MAX_RUN_DELAY ? v : DEFAULT_RUN_DELAY;
}

// ---- controls ----------------------------------------------------------------

function call(method, params, what) {
  return rpc.call(method, params).catch((e) => toast("error", `${what}: ${e.message}`));
}

$("entry-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  runEntry($("entry").value).catch((e) => toast("error", e.message));
});
$("recompute").addEventListener("click", () =>
  call("executionContext/recompute", { contextId: session.contextId, invalidatedExpressions: "all" }, "Recompute"),
);
$("interrupt").addEventListener("click", () => call("executionContext/interrupt", { contextId: session.contextId }, "Interrupt"));
$("restart").addEventListener("click", () => call("runtime/restartKernel", { contextId: session.contextId }, "Restart kernel"));
$("save").addEventListener("click", () => save());
$("autosave").addEventListener("change", () => {
  session.autosave = $("autosave").checked;
  localStorage.setItem("ripple.autosave", session.autosave ? "on" : "off");
  renderFileState();
  if (session.autosave && editor.current && editor.current.dirty) save(true);
});
for (const b of document.querySelectorAll("#policy button")) {
  b.addEventListener("click", () => setRunPolicy(b.dataset.effects));
}
$("run-delay").addEventListener("change", () => {
  const input = $("run-delay");
  const ms = Number(input.value);
  if (input.value.trim() === "" || !Number.isInteger(ms) || ms < 0 || ms > MAX_RUN_DELAY) {
    input.setCustomValidity(`the run delay must be a whole number of milliseconds from 0 to ${MAX_RUN_DELAY}; it stays ${editor.runDelay} ms`);
    input.reportValidity();
    return;
  }
  input.setCustomValidity("");
  editor.runDelay = ms;
  localStorage.setItem("ripple.runDelay", String(ms));
});
$("run-delay").addEventListener("input", () => $("run-delay").setCustomValidity(""));
$("run-delay").value = String(editor.runDelay);
renderPolicy();
$("run-script").addEventListener("click", () => {
  const module = editor.current && moduleOf(editor.current.path);
  if (!module) return;
  $("entry").value = `${module}:__main__`;
  runEntry(`${module}:__main__`).catch((e) => toast("error", e.message));
});
$("create-main").addEventListener("click", async () => {
  await call("file/write", { path: "main.py", contents: 'print("hello from ripple")\nx = 6 * 7\n' }, "Create main.py");
  session.modules = ["main"];
  $("empty").hidden = true;
  loadTree();
  $("entry").value = "main:__main__";
  await runEntry("main:__main__");
});
// CodeMirror measures its box: a resized window (panes collapsing at
// narrow widths) needs a new size (editor.resized), then the annotations are placed again.
window.addEventListener("resize", () => {
  editor.resized();
  scheduleRender();
});
// Leaving with unsaved edits asks first.
window.addEventListener("beforeunload", (ev) => {
  if ([...editor.buffers.values()].some((b) => b.dirty)) {
    ev.preventDefault();
    ev.returnValue = "";
  }
});
$("reconnect").addEventListener("click", () => rpc.reconnectNow());
$("clear-output").addEventListener("click", () => clearOutput());
// The pane follows new output while it is scrolled to the end.
$("output").addEventListener("scroll", () => {
  const out = $("output");
  out.dataset.pinned = String(out.scrollTop + out.clientHeight >= out.scrollHeight - 8);
});
$("viz-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  attachViz($("viz-expr").value, $("viz-code").value.trim());
});
$("viz-expr").addEventListener("change", () => {
  session.vizPick = $("viz-expr").value;
  if (session.vizPick) attachViz(session.vizPick, $("viz-code").value.trim());
});
$("viz-code").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
    ev.preventDefault();
    $("viz-form").requestSubmit();
  }
});
$("viz-detach").addEventListener("click", () => detachViz());
// The visualization pane's width: dragged by its left edge, kept.
{
  const layout = document.querySelector(".layout");
  const apply = (px) => {
    if (px) layout.style.setProperty("--viz-width", `${px}px`);
    else layout.style.removeProperty("--viz-width");
    editor.resized();
    scheduleRender();
  };
  const saved = Number(localStorage.getItem("ripple.vizWidth"));
  if (saved >= 200) apply(saved);
  const handle = $("viz-resize");
  handle.addEventListener("pointerdown", (ev) => {
    ev.preventDefault();
    handle.setPointerCapture(ev.pointerId);
    handle.classList.add("dragging");
    const right = layout.getBoundingClientRect().right;
    const move = (e) => {
      const px = Math.round(Math.min(Math.max(right - e.clientX, 200), window.innerWidth * 0.7));
      layout.style.setProperty("--viz-width", `${px}px`);
    };
    const up = (e) => {
      move(e);
      handle.classList.remove("dragging");
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      const px = parseInt(layout.style.getPropertyValue("--viz-width"), 10);
      localStorage.setItem("ripple.vizWidth", String(px));
      apply(px);
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
  });
  handle.addEventListener("dblclick", () => {
    localStorage.removeItem("ripple.vizWidth");
    apply(0);
  });
}
window.addEventListener("keydown", (ev) => {
  // The editor handles its own Ctrl-S (and prevents the default).
  if ((ev.ctrlKey || ev.metaKey) && ev.key === "s" && !ev.defaultPrevented) {
    ev.preventDefault();
    save();
  }
});
setInterval(() => {
  if (session.run.state === "running") renderRunState(frameUpdates());
}, 500);
// The running statement's elapsed time ticks in place.
setInterval(() => {
  if (session.run.state === "running") tickElapsed($("editor"));
}, 100);

if (!session.token) {
  showBanner("conn", "error", "This page's URL has no ?token=. Open the http:// URL that `ripple serve` printed.");
  $("conn").dataset.state = "reconnecting";
  $("conn-text").textContent = "no token";
} else {
  setVizStatus("idle", "Pick a statement: click its value in the editor or choose it above.");
  rpc.start();
}
window.addEventListener("pagehide", () => rpc.stop());
// A page restored from the back-forward cache connects again.
window.addEventListener("pageshow", (ev) => {
  if (ev.persisted && session.token) rpc.start();
});
