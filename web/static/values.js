// How one expression update (PROTOCOL.md 2, ExpressionUpdate) looks beside
// its statement: value preview, type, time and state.

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

// state names what the update says about its statement: "pending",
// "unreached", "panic", "error" (DataflowError), "cached" or "computed".
export function state(u) {
  switch (u.payload.type) {
    case "Pending":
      return u.payload.message === "not reached" ? "unreached" : "pending";
    case "Panic":
      return "panic";
    case "DataflowError":
      return "error";
    default:
      return u.fromCache ? "cached" : "computed";
  }
}

function span(cls, text) {
  const el = document.createElement("span");
  el.className = cls;
  el.textContent = text;
  return el;
}

// fillAnnotation fills el for update u. actions: pick(u) selects the
// statement for the visualization pane; enter(u) enters the call of a
// statement that has methodCall. selected: whether u is the visualized one.
export function fillAnnotation(u, el, actions, selected) {
  const st = state(u);
  el.dataset.expr = u.expressionId;
  el.dataset.state = st;
  el.classList.add(`is-${st}`);
  if (selected) el.classList.add("is-selected");

  const main = document.createElement("span");
  main.className = "ann-main";
  const tip = [u.expressionId];
  switch (st) {
    case "pending":
      main.append(span("ann-dot", "◌"), span("ann-preview", "pending…"));
      tip.push("waiting to run");
      break;
    case "unreached":
      main.append(span("ann-dot", "◌"), span("ann-preview", "not reached"));
      tip.push("not reached: the function returned before it");
      break;
    case "panic":
    case "error": {
      const p = u.payload;
      // A dependent's trace names the statements that raised, not itself.
      const origin = p.trace && p.trace.length > 0 && p.trace[0] !== u.expressionId ? p.trace[0] : null;
      main.append(span("ann-dot", "✖"), span("ann-preview", p.message || "error"));
      if (origin) main.append(span("ann-from", `from ${label(origin)}`));
      tip.push(p.message || "", origin ? `raised by ${origin}` : "raised here");
      break;
    }
    default: {
      const preview = u.payload.preview ?? "";
      main.append(span("ann-dot", st === "cached" ? "○" : "●"), span("ann-preview", preview));
      // The class name only: the full name is in the tooltip.
      const type = shortType(u.type).split(".").pop();
      if (type) main.append(span("ann-type", type));
      const ns = executionTime(u);
      if (ns !== null) main.append(span("ann-time", st === "cached" ? "cached" : duration(ns)));
      tip.push(preview, u.type || "", st === "cached" ? "from the cache" : `computed in ${ns === null ? "?" : duration(ns)}`);
    }
  }
  main.title = tip.filter(Boolean).join("\n");
  main.addEventListener("click", (ev) => {
    ev.preventDefault();
    actions.pick(u);
  });
  el.append(main);

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
