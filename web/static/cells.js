// What a statement printed and displayed, shown under it like a notebook
// cell's output (PROTOCOL.md 7.2, 7.3): text of executionContext/output
// that names the statement (expressionId) and the mime bundles of
// executionContext/displayData.
//
// A Cell owns one DOM node for its whole life: text goes into a Term
// (term.js: O(new text), the last lines in the DOM), a display is built
// once. The editor puts the node under the statement's line and moves it
// only when the statement moves, so an HTML output's frame is loaded once
// and a render of the page never rebuilds an output.

import { Term, DEFAULT_KEEP } from "./term.js";

export class Cell {
  // resized(): called after the node's size changed.
  constructor(name = "output", keep = DEFAULT_KEEP) {
    this.keep = keep;
    this.box = document.createElement("div");
    this.box.className = "ripple-cell";
    this.items = []; // {kind: "text", term, node} | {kind: "display", data, node, frame?}
    this.spare = []; // display items with a frame, from before the last clear
    this.valueItem = null; // {data, node, frame?}: the statement's rich value (value())
    this.name = name;
    this.resized = null;
    // The box's size is watched, never read after a write: a
    // ResizeObserver is told after the browser's own layout, and only
    // when the size changed, so a terminal's paint forces no layout and
    // the editor re-measures the cell's line widget only when it grew.
    new ResizeObserver(() => this.resized && this.resized()).observe(this.box);
  }

  // clear empties the cell for a new run of its statement. Its HTML
  // frames stay (this.spare) until the run displays again, which reuses
  // them in order, updated in place, or until settle(): a statement that
  // shows a DataFrame shows it again as typing runs it, and its frame is
  // loaded once, not at every keystroke.
  clear() {
    if (this.items.length === 0) return; // the run's second Pending (running)
    this.settle();
    for (const it of this.items) {
      if (it.kind === "display" && it.frame) this.spare.push(it);
      else it.node.remove();
      if (it.kind === "text") it.term.dispose(); // no frames spent on it
    }
    this.items = [];
  }

  // settle drops the frames the statement's last run did not reuse.
  settle() {
    for (const it of this.spare) it.node.remove();
    this.spare = [];
  }

  // place puts a new item's node after the items so far and before the
  // frames still waiting to be reused.
  place(node) {
    const before = this.spare.length ? this.spare[0].node : this.valueItem ? this.valueItem.node : null;
    this.box.insertBefore(node, before);
  }

  // empty: nothing to show (frames waiting for reuse keep the cell in
  // place, so they are not taken out of the DOM and reloaded).
  get empty() {
    return this.items.length === 0 && this.spare.length === 0 && !this.valueItem;
  }

  text(stream, text) {
    const last = this.items[this.items.length - 1];
    if (last && last.kind === "text" && last.term.stream === stream) {
      last.term.write(text);
      return;
    }
    const term = new Term(stream, { keep: this.keep, name: this.name });
    this.items.push({ kind: "text", term, node: term.el });
    this.place(term.el);
    term.write(text);
  }

  display(data) {
    const html = data["text/html"];
    const richer = data["image/png"] || data["image/jpeg"] || data["image/svg+xml"];
    if (html && !richer && this.spare.length) {
      const it = this.spare.shift();
      if (it.data["text/html"] !== html) it.frame.update(html);
      it.data = data;
      this.items.push(it);
      return;
    }
    const node = bundleNode(data, () => this.resized && this.resized());
    const frame = node.querySelector("iframe.cell-html");
    this.items.push({ kind: "display", data, node, frame });
    this.place(node);
    if (this.resized) this.resized();
  }

  // value shows the statement's own rich value (a bare expression's
  // rendering, as a notebook cell's result) after what it printed and
  // displayed; a new value replaces it in place (an HTML one in the same
  // frame). clear() keeps it: it is the value's, not the run's.
  value(data) {
    const html = data["text/html"];
    const richer = data["image/png"] || data["image/jpeg"] || data["image/svg+xml"];
    if (this.valueItem && html && !richer && this.valueItem.frame) {
      if (this.valueItem.data["text/html"] !== html) this.valueItem.frame.update(html);
      this.valueItem.data = data;
      return;
    }
    const node = bundleNode(data, () => this.resized && this.resized());
    node.classList.add("cell-value");
    if (this.valueItem) this.valueItem.node.replaceWith(node);
    else this.box.append(node);
    this.valueItem = { data, node, frame: node.querySelector("iframe.cell-html") };
    if (this.resized) this.resized();
  }

  // element returns the cell's node (the same one for the cell's life).
  element() {
    return this.box;
  }
}

// ---- rich outputs ---------------------------------------------------------------

// Frames: an HTML output goes into a sandboxed frame (frame.html, served
// with a policy of its own that allows the output's styles). The page
// sends it the HTML when it says it is ready (again after the browser
// reloads it, which moving it in the DOM does) and sizes it to the
// height it reports.
// frames: every frame made, {iframe, html, resized}; one is found by its
// window, which changes when the browser reloads it, so it is looked up
// at each message. Frames that left the document for good are dropped.
const frames = new Set();

function frameOf(source) {
  for (const f of frames) {
    if (f.iframe.contentWindow === source) return f;
    if (!f.iframe.isConnected && f.detachedSince && Date.now() - f.detachedSince > 60_000) frames.delete(f);
    else if (!f.iframe.isConnected) f.detachedSince ||= Date.now();
    else f.detachedSince = 0;
  }
  return null;
}

window.addEventListener("message", (ev) => {
  const f = ev.data && ev.data.rippleFrame ? frameOf(ev.source) : null;
  if (!f) return;
  if (ev.data.rippleFrame === "ready" && ev.source) {
    f.iframe.dataset.loads = String(Number(f.iframe.dataset.loads || 0) + 1);
    ev.source.postMessage({ rippleFrame: "show", html: f.html, dark: matchMedia("(prefers-color-scheme: dark)").matches }, "*");
  } else if (ev.data.rippleFrame === "height" && Number.isFinite(ev.data.height)) {
    const h = Math.max(16, Math.min(ev.data.height, FRAME_MAX));
    f.iframe.style.height = `${h}px`;
    f.iframe.dataset.contentHeight = String(ev.data.height);
    if (f.resized) f.resized();
  }
});

const FRAME_MAX = 2000; // px: a taller output scrolls inside its frame

// htmlFrame returns a frame showing html; resized() after its height
// changes.
export function htmlFrame(html, resized) {
  const iframe = document.createElement("iframe");
  iframe.className = "cell-html";
  // Scripts run only in the frame's own origin (no allow-same-origin):
  // the frame's one script, which the frame's policy names by hash.
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("title", "rich output");
  iframe.src = "frame.html";
  const entry = { iframe, html, resized, detachedSince: 0 };
  frames.add(entry);
  iframe.update = (next) => {
    entry.html = next;
    if (iframe.contentWindow) iframe.contentWindow.postMessage({ rippleFrame: "show", html: next }, "*");
  };
  return iframe;
}

// markdownNode renders Markdown with the vendored markdown-it (raw HTML in
// the source is shown as text, never run), math between $$ or $ with
// KaTeX.
export function markdownNode(src) {
  const div = document.createElement("div");
  div.className = "cell-markdown";
  if (!window.markdownit) {
    div.textContent = src;
    return div;
  }
  const md = window.markdownit({ html: false, linkify: true, typographer: false });
  // Math first: each formula is replaced by a placeholder markdown-it
  // leaves alone, then rendered into it.
  const maths = [];
  const text = src.replace(/\$\$([\s\S]+?)\$\$|\$([^\s$](?:[^$\n]*[^\s$])?)\$/g, (_, display, inline) => {
    maths.push({ tex: display ?? inline, display: display !== undefined });
    return `RIPPLEMATH${maths.length - 1}X`;
  });
  const tpl = document.createElement("template");
  tpl.innerHTML = md.render(text);
  const walker = document.createTreeWalker(tpl.content, NodeFilter.SHOW_TEXT);
  const hits = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.data.includes("RIPPLEMATH")) hits.push(n);
  for (const n of hits) {
    const parts = n.data.split(/RIPPLEMATH(\d+)X/);
    const frag = document.createDocumentFragment();
    parts.forEach((p, i) => {
      if (i % 2 === 0) frag.append(p);
      else {
        const m = maths[Number(p)];
        frag.append(latexNode(m.tex, m.display));
      }
    });
    n.replaceWith(frag);
  }
  for (const a of tpl.content.querySelectorAll("a")) {
    a.target = "_blank";
    a.rel = "noopener noreferrer";
  }
  div.append(tpl.content);
  return div;
}

// latexNode renders TeX with the vendored KaTeX (into the DOM through
// CSSOM, which the page's policy allows; renderToString's style
// attributes it would not).
export function latexNode(tex, display = true) {
  const el = document.createElement(display ? "div" : "span");
  el.className = "cell-latex";
  if (!window.katex) {
    el.textContent = tex;
    return el;
  }
  try {
    window.katex.render(tex, el, { displayMode: display, throwOnError: false, output: "htmlAndMathml" });
  } catch (e) {
    el.textContent = tex;
  }
  return el;
}

// stripMath drops the delimiters around a text/latex bundle's formula
// ($$...$$, $...$, \[...\], \(...\)); text with none is used as is.
export function stripMath(src) {
  const s = src.trim();
  const m = /^\$\$([\s\S]*)\$\$$/.exec(s) || /^\$([\s\S]*)\$$/.exec(s) || /^\\\[([\s\S]*)\\\]$/.exec(s) || /^\\\(([\s\S]*)\\\)$/.exec(s);
  return m ? m[1] : s;
}

// bundleNode shows a mime bundle in its richest form: images inline, SVG
// as an image, HTML in a sandboxed frame of its own, Markdown and LaTeX
// rendered, JSON and text as text.
export function bundleNode(data, resized = null) {
  const wrap = document.createElement("div");
  wrap.className = "cell-display";
  if (data["image/png"] || data["image/jpeg"]) {
    const mime = data["image/png"] ? "image/png" : "image/jpeg";
    const img = document.createElement("img");
    img.alt = (data["text/plain"] || "").slice(0, 200);
    img.src = `data:${mime};base64,${data[mime]}`;
    if (resized) img.addEventListener("load", resized);
    wrap.append(img);
  } else if (data["image/svg+xml"]) {
    const img = document.createElement("img");
    img.alt = (data["text/plain"] || "").slice(0, 200);
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(data["image/svg+xml"])}`;
    if (resized) img.addEventListener("load", resized);
    wrap.append(img);
  } else if (data["text/html"]) {
    wrap.append(htmlFrame(data["text/html"], resized));
  } else if (data["text/markdown"]) {
    wrap.append(markdownNode(data["text/markdown"]));
  } else if (data["text/latex"]) {
    wrap.append(latexNode(stripMath(data["text/latex"])));
  } else {
    const pre = document.createElement("pre");
    pre.className = "cell-text";
    pre.textContent = data["application/json"] ? JSON.stringify(data["application/json"], null, 2) : data["text/plain"] || "";
    wrap.append(pre);
  }
  return wrap;
}

// isBundle tells a ripple:display result from another visualization's data.
export function isBundle(data) {
  return data && typeof data === "object" && !Array.isArray(data) && typeof data["text/plain"] === "string";
}
