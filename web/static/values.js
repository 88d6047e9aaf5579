// How one expression update (PROTOCOL.md 2, ExpressionUpdate) looks beside
// its statement: value preview, type, time and state, and for a statement
// that did not run, why (PROTOCOL.md 8.1, 8.2, 8.4).
//
// describe() is pure (node runs it in tests/web/valuescheck.mjs);
// fillAnnotation() builds the DOM from what it returns.

// label returns the statement part of an ExpressionId ("main:main/total"
// -> "total").
export function label(expressionId) {
  const slash = expressionId.indexOf("/");
  return slash < 0 ? expressionId : expressionId.slice(slash + 1);
}

// shortType drops the "builtins." of built-in types.
export function shortType(type) {
  return type && type.startsWith("builtins.") ? type.slice("builtins.".length) : type || "";
}

// executionTime returns the update's ExecutionTime in nanoseconds, or null.
export function executionTime(u) {
  const p = (u.profilingInfo || []).find((i) => i.type === "ExecutionTime");
  return p ? p.nanoTime : null;
}

// duration formats nanoseconds for a person.
export function duration(ns) {
  if (ns < 1e3) return `${ns} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(ns < 1e4 ? 1 : 0)} µs`;
  if (ns < 1e9) return `${(ns / 1e6).toFixed(ns < 1e7 ? 1 : 0)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

// elapsed formats the time a statement has been running, in steps a
// ticking display can show without flicker: tenths of a second up to a
// minute, then minutes and seconds.
export function elapsed(ms) {
  const s = Math.max(0, ms) / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.floor(s - m * 60)).padStart(2, "0")} s`;
}

// isHeld reports whether a Pending update is a held statement (8.2): the
// kernel refused an effect it tried in an automatic run.
function isHeld(p) {
  return p.type === "Pending" && typeof p.message === "string" && p.message.startsWith("held:") &&
    (!p.reason || p.reason.kind === "held");
}

// state names what the update says about its statement: "pending" (waiting
// to run), "running", "held", "unreached", "panic", "error"
// (DataflowError), "cached" or "computed".
export function state(u) {
  const p = u.payload;
  switch (p.type) {
    case "Pending":
      if (p.message === "running") return "running";
      if (isHeld(p)) return "held";
      return p.message === "not reached" ? "unreached" : "pending";
    case "Panic":
      return "panic";
    case "DataflowError":
      return "error";
    default:
      return u.fromCache ? "cached" : "computed";
  }
}

// exceptionName is the class of a Panic's message ("AssertionError: no
// rows" -> "AssertionError").
function exceptionName(message) {
  const m = /^([A-Za-z_][\w.]*)(?::|$)/.exec(message || "");
  return m ? m[1] : "an exception";
}

// lineOf names the line of the statement id in the frame, or its label
// when the page has no range for it.
function lineOf(id, lookup) {
  const u = id ? lookup(id) : null;
  if (u && u.range) return `line ${u.range.start.line + 1}`;
  return id ? label(id) : "an earlier statement";
}

// reasonText says why a statement was not reached, for a person: "not
// reached: line 4 raised AssertionError", "not reached: line 3 was held",
// "not reached: interrupted", "not reached: the kernel died". lookup(id)
// returns the frame's latest update of a statement.
export function reasonText(u, lookup) {
  const r = u.payload.reason;
  if (!r) return "not reached: the function returned before it";
  switch (r.kind) {
    case "exception": {
      const raiser = r.expressionId ? lookup(r.expressionId) : null;
      const what = raiser && raiser.payload.type === "Panic" ? exceptionName(raiser.payload.message) : "an exception";
      return `not reached: ${lineOf(r.expressionId, lookup)} raised ${what}`;
    }
    case "held":
      return `not reached: ${lineOf(r.expressionId, lookup)} was held`;
    case "interrupted":
      return "not reached: interrupted";
    case "kernelDied":
      return "not reached: the kernel died";
    default:
      return `not reached: ${r.kind}`;
  }
}

// startedAt returns when a running statement started, in the page's clock
// (ms): the kernel's startedAt, or the update's arrival when that is
// missing or ahead of the page's clock (another machine's clock).
export function startedAt(u) {
  const t = Date.parse(u.payload.startedAt || "");
  const arrived = u.arrived ?? Date.now();
  return Number.isNaN(t) || t > arrived ? arrived : t;
}

// innerUpdates returns the inner values of a compound statement's update
// (kernel/PROTOCOL.md "Inner values": u.inner, one per assignment or
// expression statement nested in its if/for/while/with/try bodies) as
// updates of their own, so that they show beside their lines as the
// frame's statements do: {expressionId "<parent>@line:character", innerOf
// (the parent's id), range, type, count, payload Value (or Panic for the
// inner statement that raised), fromCache (the parent's)}. While the
// parent waits or runs again, its last Value's inner values show, dimmed.
export function innerUpdates(u) {
  const src = u.inner ? u : u.last && u.last.inner ? u.last : null;
  if (!src) return [];
  return src.inner.map((v) => ({
    expressionId: `${u.expressionId}@${v.range.start.line}:${v.range.start.character}`,
    innerOf: u.expressionId,
    range: v.range,
    type: v.type || "",
    count: v.count,
    fromCache: !!src.fromCache,
    dim: src !== u,
    profilingInfo: [],
    payload: v.panic ? { type: "Panic", message: v.panic, trace: [] } : { type: "Value", preview: v.preview ?? "" },
  }));
}

// countText is the tag of an inner value that ran more than once ("×10").
export function countText(count) {
  return count > 1 ? `×${count.toLocaleString("en-US")}` : "";
}

// describe says how update u shows, without touching the DOM: {state,
// dot, preview, dim (the preview is an earlier value), tags [text,
// class], tip (the hover text), run (a ▶ is offered), started (ms, for a
// running statement)}. u.last is the statement's last Value, kept by the
// page when a later update has none. lookup(id) returns the frame's latest
// update of a statement; now is Date.now().
export function describe(u, lookup, now = Date.now()) {
  const st = state(u);
  const p = u.payload;
  const d = { state: st, dot: "", preview: "", dim: false, tags: [], tip: [u.expressionId], run: false, started: null };
  const last = u.last && u.last.payload.type === "Value" ? u.last : null;
  const lastValue = () => {
    d.preview = last.payload.preview ?? "";
    d.dim = true;
    const type = shortType(last.type).split(".").pop();
    if (type) d.tags.push([type, "ann-type"]);
    d.tip.push(`last value: ${d.preview}${last.type ? ` (${last.type})` : ""}`);
  };
  switch (st) {
    case "pending":
      d.dot = "◌";
      d.preview = "pending…";
      d.tip.push("waiting to run");
      break;
    case "running":
      d.dot = "⏳";
      d.preview = "running";
      d.started = startedAt(u);
      d.tags.push([elapsed(now - d.started), "ann-elapsed"]);
      d.tip.push(`running since ${new Date(d.started).toLocaleTimeString()}`);
      break;
    case "held": {
      d.dot = "⏸";
      d.preview = p.message;
      d.run = true;
      const r = p.reason || {};
      d.tip.push(
        p.message,
        r.event ? `audit event ${r.event}(${(r.args || []).join(", ")})` : "",
        "Typing runs your code with external effects held (the run-policy switch in the header).",
        "▶ or Ctrl/Cmd-Enter runs this statement now, with its effects.",
      );
      if (last) d.tip.push(`last value: ${last.payload.preview ?? ""}`);
      break;
    }
    case "unreached": {
      const why = reasonText(u, lookup);
      d.dot = "∅";
      if (last) {
        lastValue();
        d.tags.push(["not reached", "ann-why"]);
      } else d.preview = "not reached";
      d.tip.splice(1, 0, why);
      break;
    }
    case "panic":
    case "error": {
      // A dependent's trace names the statements that raised, not itself.
      const origin = p.trace && p.trace.length > 0 && p.trace[0] !== u.expressionId ? p.trace[0] : null;
      d.dot = "✖";
      d.preview = p.message || "error";
      if (origin) d.tags.push([`from ${label(origin)}`, "ann-from"]);
      d.tip.push(p.message || "", origin ? `raised by ${origin}` : "raised here");
      break;
    }
    default: {
      d.dot = st === "cached" ? "○" : "●";
      d.preview = p.preview ?? "";
      // The class name only: the full name is in the tooltip.
      const type = shortType(u.type).split(".").pop();
      if (type) d.tags.push([type, "ann-type"]);
      if (u.innerOf) break; // an inner value: its count is added below
      const ns = executionTime(u);
      if (ns !== null) d.tags.push([st === "cached" ? "cached" : duration(ns), "ann-time"]);
      d.tip.push(d.preview, u.type || "", st === "cached" ? "from the cache" : `computed in ${ns === null ? "?" : duration(ns)}`);
      const effects = p.effects || [];
      if (effects.length) {
        d.tags.push(["↯", "ann-effects"]);
        d.tip.push(`effects of its last run:\n  ${effects.join("\n  ")}`);
      }
    }
  }
  if (u.innerOf) {
    const n = countText(u.count);
    if (n) d.tags.push([n, "ann-count"]);
    if (u.dim) d.dim = true;
    d.tip.push(
      p.type === "Panic" ? `raised after ${u.count} completed run${u.count === 1 ? "" : "s"}` : d.preview,
      u.type || "",
      `the last value in ${u.count} run${u.count === 1 ? "" : "s"} of ${u.innerOf}`,
    );
  }
  d.tip = d.tip.filter(Boolean).join("\n");
  return d;
}

function span(cls, text) {
  const el = document.createElement("span");
  el.className = cls;
  el.textContent = text;
  return el;
}

// fillAnnotation fills el for update u. actions: pick(u) selects the
// statement for the visualization pane; enter(u) enters the call of a
// statement that has methodCall; run(u) runs a held statement explicitly;
// lookup(id) returns the frame's latest update of a statement. selected:
// whether u is the visualized one.
export function fillAnnotation(u, el, actions, selected) {
  const d = describe(u, actions.lookup);
  el.dataset.expr = u.expressionId;
  el.dataset.state = d.state;
  if (u.innerOf) {
    el.dataset.inner = u.innerOf;
    el.dataset.count = String(u.count);
  }
  if (u.payload.reason) el.dataset.reason = u.payload.reason.kind;
  if (u.local) el.dataset.local = "true"; // the page's own conclusion, not the server's
  el.classList.add(`is-${d.state}`);
  if (d.dim) el.classList.add("is-dim");
  if (selected) el.classList.add("is-selected");

  const main = document.createElement("span");
  main.className = "ann-main";
  main.append(span("ann-dot", d.dot), span("ann-preview", d.preview));
  for (const [text, cls] of d.tags) {
    const t = span(cls, text);
    if (cls === "ann-elapsed") t.dataset.started = String(d.started);
    main.append(t);
  }
  main.title = d.tip;
  main.addEventListener("click", (ev) => {
    ev.preventDefault();
    actions.pick(u);
  });
  el.append(main);

  if (d.run) {
    const run = document.createElement("button");
    run.className = "ann-run";
    run.type = "button";
    run.textContent = "▶";
    run.title = `Run ${label(u.expressionId)} now, with its effects (Ctrl/Cmd-Enter on its line)`;
    run.addEventListener("mousedown", (ev) => ev.preventDefault());
    run.addEventListener("click", (ev) => {
      ev.preventDefault();
      actions.run(u);
    });
    el.append(run);
  }

  if (u.methodCall) {
    const mp = u.methodCall.methodPointer;
    const target = `${mp.module}:${mp.definedOnType ? mp.definedOnType + "." : ""}${mp.name}`;
    const enter = document.createElement("button");
    enter.className = "ann-enter";
    enter.type = "button";
    enter.textContent = "enter ›";
    enter.title = `step into ${target} with the arguments of this call`;
    enter.addEventListener("mousedown", (ev) => ev.preventDefault());
    enter.addEventListener("click", (ev) => {
      ev.preventDefault();
      actions.enter(u);
    });
    el.append(enter);
  }
}

// tickElapsed brings the elapsed times of running statements under root up
// to now, in place (a render per tick would rebuild every annotation).
export function tickElapsed(root, now = Date.now()) {
  for (const t of root.querySelectorAll(".ann-elapsed[data-started]")) {
    const text = elapsed(now - Number(t.dataset.started));
    if (t.textContent !== text) t.textContent = text;
  }
}
