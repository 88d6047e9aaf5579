// A stream of printed text shown as a terminal would show it: "\r" goes
// back to the start of the line (progress bars redraw in place), "\b"
// steps back, ANSI SGR sequences colour the text (the 16 xterm colours,
// the 256-colour cube and 24-bit colour), "ESC[K" erases to the end of
// the line; other escape sequences are dropped.
//
// Cost. write() is O(the new text): it parses only what arrived and
// changes only the line being written. The DOM keeps the last `keep`
// lines (older ones are counted, "show all" puts them back, "download"
// saves the whole text); paint() runs at most once per animation frame
// for all terminals and touches only the lines added since the last one.
//
// Term is pure of the page's other state; node runs its model in
// tests/web/termcheck.mjs (no DOM: model only).

const ESC = "\x1b";

// Style of a character run: an index into a shared table of style
// objects, so a line stores small integers.
const styles = [{}];
const styleIndex = new Map([["{}", 0]]);

function styleId(s) {
  const key = JSON.stringify(s);
  let id = styleIndex.get(key);
  if (id === undefined) {
    id = styles.length;
    styles.push(Object.freeze({ ...s }));
    styleIndex.set(key, id);
  }
  return id;
}

// applySGR returns the style after the SGR parameters params.
function applySGR(style, params) {
  const s = { ...style };
  const p = params.length ? params : [0];
  for (let i = 0; i < p.length; i++) {
    const n = p[i];
    if (n === 0) for (const k of Object.keys(s)) delete s[k];
    else if (n === 1) s.bold = true;
    else if (n === 2) s.dim = true;
    else if (n === 3) s.italic = true;
    else if (n === 4) s.underline = true;
    else if (n === 7) s.inverse = true;
    else if (n === 22) delete s.bold, delete s.dim;
    else if (n === 23) delete s.italic;
    else if (n === 24) delete s.underline;
    else if (n === 27) delete s.inverse;
    else if (n >= 30 && n <= 37) s.fg = n - 30;
    else if (n >= 90 && n <= 97) s.fg = n - 90 + 8;
    else if (n === 39) delete s.fg;
    else if (n >= 40 && n <= 47) s.bg = n - 40;
    else if (n >= 100 && n <= 107) s.bg = n - 100 + 8;
    else if (n === 49) delete s.bg;
    else if (n === 38 || n === 48) {
      const key = n === 38 ? "fg" : "bg";
      if (p[i + 1] === 5 && i + 2 < p.length) {
        s[key] = p[i + 2];
        i += 2;
      } else if (p[i + 1] === 2 && i + 4 < p.length) {
        s[key] = `rgb(${p[i + 2]},${p[i + 3]},${p[i + 4]})`;
        i += 4;
      }
    }
  }
  return s;
}

// sliceRuns returns the runs' characters [from, to) as runs.
function sliceRuns(runs, from, to) {
  const out = [];
  let at = 0;
  for (const [text, sid] of runs) {
    const end = at + text.length;
    if (end > from && at < to) out.push([text.slice(Math.max(0, from - at), Math.min(text.length, to - at)), sid]);
    at = end;
    if (at >= to) break;
  }
  return out;
}

// xterm256 is the CSS colour of a 256-colour index from 16 on.
function xterm256(n) {
  if (n >= 232) {
    const v = 8 + (n - 232) * 10;
    return `rgb(${v},${v},${v})`;
  }
  const c = n - 16;
  const level = (x) => (x === 0 ? 0 : 55 + x * 40);
  return `rgb(${level(Math.floor(c / 36))},${level(Math.floor(c / 6) % 6)},${level(c % 6)})`;
}

// TermModel is the text and its styles, without DOM.
export class TermModel {
  constructor() {
    // lines: the finished lines, each [[text, styleId], ...] runs.
    this.lines = [];
    // The line being written: its runs, its length and the cursor column
    // (a "\r" puts it at 0; what follows overwrites), in UTF-16 units.
    this.cur = [];
    this.len = 0;
    this.col = 0;
    this.style = {};
    this.sid = 0;
    this.pending = ""; // an escape sequence cut by the end of a chunk
    this.chars = 0; // characters written, for the size shown
  }

  // write parses text (a chunk of the stream) into lines.
  write(text) {
    this.chars += text.length;
    let s = this.pending + text;
    this.pending = "";
    let i = 0;
    const n = s.length;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c === 10) {
        this.commit();
        i++;
      } else if (c === 13) {
        // "\r\n" is one line end; a lone "\r" returns to the line start.
        if (i + 1 < n && s.charCodeAt(i + 1) === 10) {
          this.commit();
          i += 2;
        } else if (i + 1 === n) {
          this.pending = "\r"; // the "\n" may be in the next chunk
          i++;
        } else {
          this.col = 0;
          i++;
        }
      } else if (c === 8) {
        if (this.col > 0) this.col--;
        i++;
      } else if (c === 27) {
        const end = this.escape(s, i);
        if (end < 0) {
          this.pending = s.slice(i);
          break;
        }
        i = end;
      } else {
        // A run of plain characters up to the next control character.
        let j = i + 1;
        while (j < n) {
          const d = s.charCodeAt(j);
          if (d === 10 || d === 13 || d === 8 || d === 27) break;
          j++;
        }
        this.put(s.slice(i, j));
        i = j;
      }
    }
  }

  // escape handles the escape sequence at s[i] and returns the index after
  // it, or -1 if s ends inside it.
  escape(s, i) {
    if (i + 1 >= s.length) return -1;
    if (s[i + 1] !== "[") {
      // ESC ] ... BEL or ESC \ (a title): skip it; any other: two chars.
      if (s[i + 1] === "]") {
        const bel = s.indexOf("\x07", i);
        const st = s.indexOf(ESC + "\\", i);
        const ends = [bel < 0 ? -1 : bel + 1, st < 0 ? -1 : st + 2].filter((x) => x > 0);
        return ends.length ? Math.min(...ends) : -1;
      }
      return i + 2;
    }
    let j = i + 2;
    while (j < s.length && !/[\x40-\x7e]/.test(s[j])) j++;
    if (j >= s.length) return -1;
    const body = s.slice(i + 2, j);
    const params = body === "" ? [] : body.replace(/^\?/, "").split(";").map((x) => (x === "" ? 0 : Number(x)));
    switch (s[j]) {
      case "m":
        this.style = applySGR(this.style, params);
        this.sid = styleId(this.style);
        break;
      case "K":
        this.erase(params[0] || 0);
        break;
      case "G": // cursor to column n (1-based)
        this.col = Math.max(0, (params[0] || 1) - 1);
        break;
      default:
      // cursor movement across lines, screen erases: not a log's business
    }
    return j + 1;
  }

  // put writes plain characters at the cursor, overwriting. The line
  // being written is kept as runs ([[text, styleId]]) and its length;
  // appending at its end (the common case: no "\r" before) extends the
  // last run, so a long print costs no per-character work. Overwriting
  // after a "\r" splits the runs at the cursor.
  put(text) {
    if (this.col > this.len) {
      this.cur.push([" ".repeat(this.col - this.len), 0]);
      this.len = this.col;
    }
    if (this.col === this.len) {
      const last = this.cur[this.cur.length - 1];
      if (last && last[1] === this.sid) last[0] += text;
      else this.cur.push([text, this.sid]);
      this.len += text.length;
      this.col = this.len;
      return;
    }
    // Overwrite [col, col + n) and keep what is right of it.
    const n = text.length;
    const before = sliceRuns(this.cur, 0, this.col);
    const after = sliceRuns(this.cur, this.col + n, this.len);
    this.cur = [...before, [text, this.sid], ...after].filter((r) => r[0] !== "");
    this.len = Math.max(this.len, this.col + n);
    this.col += n;
  }

  // erase applies "ESC[K" (mode 0: to the line's end, 1: from its start,
  // 2: all of it).
  erase(mode) {
    if (mode === 0) {
      this.cur = sliceRuns(this.cur, 0, this.col);
      this.len = Math.min(this.len, this.col);
    } else if (mode === 1) {
      const n = Math.min(this.col, this.len);
      this.cur = [[" ".repeat(n), 0], ...sliceRuns(this.cur, n, this.len)].filter((r) => r[0] !== "");
    } else {
      this.cur = [];
      this.len = 0;
    }
  }

  commit() {
    this.lines.push(this.cur);
    this.cur = [];
    this.len = 0;
    this.col = 0;
  }

  // runs returns the line being written as [[text, styleId]] runs.
  runs() {
    return this.cur;
  }

  // tail reports whether a line is being written (text after the last
  // line end).
  get tail() {
    return this.len > 0;
  }

  // lineCount counts the lines shown, the one being written included.
  get lineCount() {
    return this.lines.length + (this.tail ? 1 : 0);
  }

  // plain returns line k (the one being written for k = lines.length) as
  // text.
  plain(k) {
    const runs = k < this.lines.length ? this.lines[k] : this.runs();
    return runs.map((r) => r[0]).join("");
  }

  // text is everything as a terminal shows it, escapes applied.
  text() {
    const parts = this.lines.map((l) => l.map((r) => r[0]).join(""));
    if (this.tail) parts.push(this.plain(this.lines.length));
    return parts.join("\n") + (this.tail ? "" : "\n");
  }
}

// ---- DOM ---------------------------------------------------------------------

// DEFAULT_KEEP is how many lines of one stream stay in the DOM.
export const DEFAULT_KEEP = 200;

const dirty = new Set(); // Terms to paint at the next frame
let frameQueued = false;
// gap: ms to leave between paints. A paint (with the layout it causes)
// that took long spaces out the next ones, so a fast stream never takes
// more than about a fifth of the main thread: typing and scrolling stay
// responsive, and the lines still arrive several times a second.
let gap = 0;
let lastPaint = 0;

function schedulePaint(t) {
  dirty.add(t);
  if (frameQueued) return;
  frameQueued = true;
  const wait = Math.max(0, lastPaint + gap - performance.now());
  const paint = () =>
    requestAnimationFrame(() => {
      frameQueued = false;
      const start = performance.now();
      const all = [...dirty];
      dirty.clear();
      for (const term of all) term.paint();
      // The layout the paint causes comes after this callback, about as
      // long again: a gap of 8 times the paint keeps both near a fifth.
      const took = performance.now() - start;
      lastPaint = performance.now();
      gap = Math.min(MAX_GAP, took * 8);
    });
  if (wait > 0) setTimeout(paint, wait);
  else paint();
}

const MAX_GAP = 250; // ms

// Term is a TermModel with its DOM: a bar saying how many lines are not
// shown (with "show all" and "download") over a <pre> of line elements.
export class Term {
  // stream: "stdout" | "stderr"; keep: lines kept in the DOM;
  // painted(term): called after a paint that changed the node's size.
  constructor(stream, { keep = DEFAULT_KEEP, painted = null, name = "output" } = {}) {
    this.model = new TermModel();
    this.stream = stream;
    this.keep = keep;
    this.all = false; // the user asked for every line
    this.painted = painted;
    this.name = name;
    this.el = document.createElement("div");
    this.el.className = `term ${stream}`;
    this.bar = document.createElement("div");
    this.bar.className = "term-bar";
    this.bar.hidden = true;
    this.barText = document.createElement("span");
    const showAll = document.createElement("button");
    showAll.type = "button";
    showAll.className = "term-all quiet small";
    showAll.textContent = "show all";
    showAll.addEventListener("click", () => {
      this.all = !this.all;
      showAll.textContent = this.all ? `show the last ${this.keep}` : "show all";
      this.repaint();
    });
    const download = document.createElement("button");
    download.type = "button";
    download.className = "term-download quiet small";
    download.textContent = "download";
    download.addEventListener("click", () => this.download());
    this.bar.append(this.barText, showAll, download);
    this.pre = document.createElement("pre");
    this.pre.className = `term-lines cell-text ${stream}`;
    this.el.append(this.bar, this.pre);
    this.first = 0; // index of the line in pre's first child
    this.done = 0; // finished lines already in the DOM (from first)
    this.tailEl = null; // the element of the line being written
  }

  write(text) {
    this.model.write(text);
    schedulePaint(this);
  }

  // paint brings the DOM up to the model, touching only what changed.
  paint() {
    const m = this.model;
    const total = m.lineCount;
    const start = this.all ? 0 : Math.max(0, total - this.keep);
    if (this.tailEl) {
      this.tailEl.remove();
      this.tailEl = null;
    }
    // Lines that fell out of the window go from the top, in one DOM
    // operation; if the window moved past everything shown, start over.
    if (start >= this.first + this.pre.childElementCount) {
      this.pre.replaceChildren();
      this.first = start;
      this.done = start;
    } else if (this.first < start) {
      const range = document.createRange();
      range.setStartBefore(this.pre.firstChild);
      range.setEndBefore(this.pre.children[start - this.first]);
      range.deleteContents();
      this.first = start;
    }
    const frag = document.createDocumentFragment();
    for (let k = this.done; k < m.lines.length; k++) frag.append(lineNode(m.lines[k]));
    this.done = m.lines.length;
    if (m.tail) {
      this.tailEl = lineNode(m.runs());
      frag.append(this.tailEl);
    }
    this.pre.append(frag);
    const hidden = start;
    this.bar.hidden = hidden === 0 && !this.all;
    if (!this.bar.hidden) {
      this.barText.textContent = this.all ? `${total} lines` : `${hidden} earlier line${hidden === 1 ? "" : "s"} not shown · ${total} in all`;
    }
    this.el.dataset.lines = String(total);
    if (this.painted) this.painted(this);
  }

  // repaint rebuilds the DOM (the window changed size).
  repaint() {
    this.pre.replaceChildren();
    this.tailEl = null;
    const start = this.all ? 0 : Math.max(0, this.model.lineCount - this.keep);
    this.first = start;
    this.done = start;
    this.paint();
  }

  // download saves the whole text as a file.
  download() {
    const blob = new Blob([this.model.text()], { type: "text/plain;charset=utf-8" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = `${this.name}-${this.stream}.txt`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }
}

// lineNode is one line's element; it ends with "\n" (not shown: a block
// ignores its last line break) so that the text copied or read is the
// printed text.
function lineNode(runs) {
  const div = document.createElement("div");
  div.className = "term-line";
  if (runs.length === 0 || (runs.length === 1 && runs[0][1] === 0)) {
    div.textContent = (runs.length ? runs[0][0] : "") + "\n";
    return div;
  }
  for (const [text, sid] of runs) {
    if (sid === 0) {
      div.append(text);
      continue;
    }
    const span = document.createElement("span");
    const s = styles[sid];
    span.textContent = text;
    let fg = s.fg;
    let bg = s.bg;
    if (s.inverse) [fg, bg] = [bg === undefined ? "bg" : bg, fg === undefined ? "fg" : fg];
    const cls = [];
    if (s.bold) cls.push("ansi-bold");
    if (s.dim) cls.push("ansi-dim");
    if (s.italic) cls.push("ansi-italic");
    if (s.underline) cls.push("ansi-underline");
    colour(span, cls, "fg", fg);
    colour(span, cls, "bg", bg);
    span.className = cls.join(" ");
    div.append(span);
  }
  div.append("\n");
  return div;
}

// colour gives span a foreground or background colour: a class for the
// 16 theme colours (app.css, light and dark), CSSOM for the others (the
// page's CSP allows no style attributes; CSSOM is not one).
function colour(span, cls, which, c) {
  if (c === undefined) return;
  if (c === "fg" || c === "bg") cls.push(`ansi-${which}-${c === "fg" ? "default" : "bgdefault"}`);
  else if (typeof c === "number" && c < 16) cls.push(`ansi-${which}-${c}`);
  else {
    const css = typeof c === "number" ? xterm256(c) : c;
    if (which === "fg") span.style.color = css;
    else span.style.backgroundColor = css;
  }
}
