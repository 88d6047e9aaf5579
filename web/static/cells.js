// What a statement printed and displayed, shown under it like a notebook
// cell's output (PROTOCOL.md 7.2, 7.3): text of executionContext/output
// that names the statement (expressionId) and the mime bundles of
// executionContext/displayData.
//
// A Cell keeps one statement's items and builds their DOM node once per
// change (images are not decoded again on every render).

const FOLD_LINES = 12; // longer text output is folded
const MAX_TEXT = 100_000; // characters of text kept per statement

export class Cell {
  constructor() {
    this.items = []; // {kind: "text", stream, text} | {kind: "display", data}
    this.node = null; // built on demand, dropped on change
    this.open = false; // the user unfolded it
  }

  clear() {
    this.items = [];
    this.node = null;
  }

  get empty() {
    return this.items.length === 0;
  }

  text(stream, text) {
    const last = this.items[this.items.length - 1];
    if (last && last.kind === "text" && last.stream === stream) {
      last.text = (last.text + text).slice(-MAX_TEXT);
    } else {
      this.items.push({ kind: "text", stream, text });
    }
    this.node = null;
  }

  display(data) {
    this.items.push({ kind: "display", data });
    this.node = null;
  }

  // element returns the cell's node (built when it changed).
  element() {
    if (this.node) return this.node;
    const box = document.createElement("div");
    box.className = "ripple-cell";
    for (const it of this.items) box.append(it.kind === "text" ? this.textNode(it) : bundleNode(it.data));
    this.node = box;
    return box;
  }

  textNode(it) {
    const pre = document.createElement("pre");
    pre.className = `cell-text ${it.stream}`;
    const lines = it.text.replace(/\n$/, "").split("\n");
    if (lines.length <= FOLD_LINES) {
      pre.textContent = it.text.replace(/\n$/, "");
      return pre;
    }
    const details = document.createElement("details");
    details.className = "cell-fold";
    details.open = this.open;
    details.addEventListener("toggle", () => (this.open = details.open));
    const summary = document.createElement("summary");
    summary.textContent = `${lines.length} lines of ${it.stream} (${lines[0].slice(0, 60)}…)`;
    pre.textContent = it.text.replace(/\n$/, "");
    details.append(summary, pre);
    return details;
  }
}

// bundleNode shows a mime bundle in its richest form: images inline, SVG
// as an image, HTML (a DataFrame's table too) in a sandboxed iframe that
// runs no script, Markdown and JSON as text, else text/plain.
export function bundleNode(data) {
  const wrap = document.createElement("div");
  wrap.className = "cell-display";
  if (data["image/png"] || data["image/jpeg"]) {
    const mime = data["image/png"] ? "image/png" : "image/jpeg";
    const img = document.createElement("img");
    img.alt = (data["text/plain"] || "").slice(0, 200);
    img.src = `data:${mime};base64,${data[mime]}`;
    wrap.append(img);
  } else if (data["image/svg+xml"]) {
    const img = document.createElement("img");
    img.alt = (data["text/plain"] || "").slice(0, 200);
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(data["image/svg+xml"])}`;
    wrap.append(img);
  } else if (data["text/html"]) {
    const frame = document.createElement("iframe");
    frame.className = "cell-html";
    frame.setAttribute("sandbox", ""); // no scripts, no same origin
    frame.srcdoc =
      '<!doctype html><meta charset="utf-8"><style>body{margin:4px;font:12px system-ui,sans-serif}' +
      "table{border-collapse:collapse;font:12px ui-monospace,monospace}th,td{border:1px solid #e5e7eb;padding:2px 6px;text-align:right}" +
      "thead th{position:sticky;top:0;background:#f3f5f8}</style>" +
      data["text/html"];
    wrap.append(frame);
  } else {
    const pre = document.createElement("pre");
    pre.className = "cell-text";
    const rich = data["text/markdown"] || data["text/latex"];
    pre.textContent = rich || (data["application/json"] ? JSON.stringify(data["application/json"], null, 2) : data["text/plain"] || "");
    wrap.append(pre);
  }
  return wrap;
}

// isBundle tells a ripple:display result from another visualization's data.
export function isBundle(data) {
  return data && typeof data === "object" && !Array.isArray(data) && typeof data["text/plain"] === "string";
}
