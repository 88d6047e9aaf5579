// A stream of printed text shown as a terminal would show it: "\r" goes
// back to the start of the line (progress bars redraw in place), "\b"
// steps back, ANSI SGR sequences colour the text (the 16 xterm colours,
// the 256-colour cube and 24-bit colour), "ESC[K" erases to the end of
// the line; other escape sequences are dropped.
//
// Cost. write() is O(the new text): it parses only what arrived and
// changes only the line being written. The DOM keeps the last `keep`
// lines (older ones are counted, "show all" puts them back, "download"
// saves the whole text); paint() runs in animation frames, bounded per
// frame (lines and script time), and touches only the lines added since
// the last one.
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

// A frame's paint is bounded, whatever arrived since the last one:
// LINES_PER_FRAME lines put into the DOM by all terminals together (the
// style, layout and painting that follow the script grow with them), and
// FRAME_BUDGET ms of script, after which the rest waits for the next
// frame. Between paints the page waits GAP_FACTOR times what the last one
// cost (its script and the rendering after it, measured up to the first
// task after the frame), at most MAX_GAP: a fast stream takes about a
// fifth of the main thread, so typing and scrolling stay responsive, and
// the lines still change several times a second. Once nothing more
// arrives, catching up (the window filled upwards) waits CATCH_UP_FACTOR
// times instead: half the main thread, the rest of a 10,000-line print
// shown soon after it ends.
export const LINES_PER_FRAME = 128;
const FRAME_BUDGET = 8; // ms
const GAP_FACTOR = 4;
const CATCH_UP_FACTOR = 1;
const MAX_GAP = 250; // ms
// A terminal further behind than its share of a frame starts again from
// its newest lines, if the share is at least MIN_JUMP lines (fewer would
// show too little); otherwise it waits for the next frame.
const MIN_JUMP = 32;
// BLOCK: lines per block element. A block is content-visibility: auto
// (app.css): out of view it costs no layout or paint. (One line each cost
// the browser a visibility check per line per frame.)
const BLOCK = 20;

const dirty = new Set(); // Terms whose DOM is behind their model, oldest first
let queued = false; // a paint is scheduled, or its cost still measured
let nextAt = 0; // performance.now() before which no paint starts
let written = false; // text arrived since the last paint's cost was measured

function schedulePaint(term) {
  written = true;
  dirty.add(term);
  if (!queued) queuePaint();
}

function queuePaint() {
  queued = true;
  const wait = nextAt - performance.now();
  if (wait > 0) setTimeout(() => requestAnimationFrame(paintFrame), wait);
  else requestAnimationFrame(paintFrame);
}

// paintFrame paints the dirty terminals, oldest first, within the frame's
// budgets; one still behind goes to the back of the queue.
function paintFrame() {
  const start = performance.now();
  let lines = LINES_PER_FRAME;
  for (const term of [...dirty]) {
    if (lines <= 0 || performance.now() - start > FRAME_BUDGET) break;
    dirty.delete(term);
    lines -= term.paint(lines);
    if (term.behind) dirty.add(term);
  }
  afterFrame(() => {
    const factor = written ? GAP_FACTOR : CATCH_UP_FACTOR;
    written = false;
    nextAt = performance.now() + Math.min(MAX_GAP, (performance.now() - start) * factor);
    queued = false;
    if (dirty.size) queuePaint();
  });
}

// afterFrame calls fn in the first task after this one: after the style,
// layout and paint of the frame whose callback calls it.
let channel = null;
let afterFrameFns = [];
function afterFrame(fn) {
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => {
      const fns = afterFrameFns;
      afterFrameFns = [];
      for (const f of fns) f();
    };
  }
  afterFrameFns.push(fn);
  if (afterFrameFns.length === 1) channel.port2.postMessage(0);
}

// Term is a TermModel with its DOM: a bar saying how many lines are not
// shown (with "show all" and "download") over a <pre> of blocks of line
// elements.
export class Term {
  // stream: "stdout" | "stderr"; keep: lines kept in the DOM. Nothing here
  // reads a size: whoever shows the node watches it (a ResizeObserver),
  // so a paint never forces a layout.
  constructor(stream, { keep = DEFAULT_KEEP, name = "output" } = {}) {
    this.model = new TermModel();
    this.stream = stream;
    this.keep = keep;
    this.all = false; // the user asked for every line
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
    // The DOM holds the model's finished lines [first, done), in blocks,
    // then the line being written (tailEl) if done is the last one.
    this.first = 0;
    this.done = 0;
    this.tailEl = null;
    this.behind = false; // the DOM is not yet what the model says
  }

  write(text) {
    this.model.write(text);
    this.behind = true;
    schedulePaint(this);
  }

  // paint brings the DOM towards the model, putting at most budget lines
  // into it, and returns how many it put. The window is the last `keep`
  // lines (every line after "show all"). Lines that left it go from the
  // top; new ones go in at the end. A terminal further behind than the
  // budget (a fast stream) starts again from its newest lines, the ones a
  // reader following the end sees, and the next frames fill the window
  // upwards; after "show all" it fills from the first line down.
  paint(budget = Infinity) {
    const m = this.model;
    const total = m.lineCount;
    const finished = m.lines.length;
    const start = this.all ? 0 : Math.max(0, total - this.keep);
    if (!this.all && finished - this.done > budget && budget < MIN_JUMP) return 0;
    if (this.tailEl) {
      this.tailEl.remove();
      this.tailEl = null;
    }
    let used = 0;
    if (this.done <= start || (!this.all && finished - this.done > budget)) {
      this.pre.replaceChildren();
      this.first = this.done = this.all ? start : Math.max(start, finished - budget);
    } else if (this.first < start) {
      this.dropTop(start - this.first);
      this.first = start;
    }
    const end = Math.min(finished, this.done + budget);
    this.appendLines(this.done, end);
    used += end - this.done;
    this.done = end;
    if (this.done === finished && m.tail && used < budget) {
      this.tailEl = lineNode(m.runs());
      this.lastBlock().append(this.tailEl);
      used++;
    }
    if (this.first > start && budget > used) {
      const from = Math.max(start, this.first - (budget - used));
      this.prependLines(from, this.first);
      used += this.first - from;
      this.first = from;
    }
    this.behind = this.done < finished || this.first > start || (m.tail && !this.tailEl);
    this.bar.hidden = this.first === 0 && !this.all;
    if (!this.bar.hidden) {
      this.barText.textContent = this.all ? `${total} lines` : `${this.first} earlier line${this.first === 1 ? "" : "s"} not shown · ${total} in all`;
    }
    // data-lines: how many lines the terminal shows in all, once its DOM
    // has caught up with them.
    if (!this.behind) this.el.dataset.lines = String(total);
    return used;
  }

  // lastBlock returns the block the next line goes into.
  lastBlock() {
    let block = this.pre.lastElementChild;
    if (!block || block.childElementCount >= BLOCK) {
      block = newBlock();
      this.pre.append(block);
    }
    return block;
  }

  // appendLines puts the model's lines [from, to) at the end.
  appendLines(from, to) {
    for (let k = from; k < to; ) {
      const block = this.lastBlock();
      const n = Math.min(to - k, BLOCK - block.childElementCount);
      block.append(linesFragment(this.model.lines, k, k + n));
      k += n;
    }
  }

  // prependLines puts the model's lines [from, to) at the top.
  prependLines(from, to) {
    for (let k = to; k > from; ) {
      let block = this.pre.firstElementChild;
      if (!block || block.childElementCount >= BLOCK) {
        block = newBlock();
        this.pre.prepend(block);
      }
      const n = Math.min(k - from, BLOCK - block.childElementCount);
      block.prepend(linesFragment(this.model.lines, k - n, k));
      k -= n;
    }
  }

  // dropTop removes the first n lines: whole blocks, then the start of one.
  dropTop(n) {
    while (n > 0) {
      const block = this.pre.firstElementChild;
      const c = block.childElementCount;
      if (c <= n) {
        block.remove();
        n -= c;
        continue;
      }
      const range = document.createRange();
      range.setStartBefore(block.firstChild);
      range.setEndBefore(block.children[n]);
      range.deleteContents();
      n = 0;
    }
  }

  // dispose stops painting: the terminal's node left the page for good.
  dispose() {
    dirty.delete(this);
  }

  // repaint rebuilds the DOM (the window changed size), over the next
  // frames.
  repaint() {
    this.pre.replaceChildren();
    this.tailEl = null;
    this.first = this.done = this.all ? 0 : Math.max(0, this.model.lineCount - this.keep);
    this.behind = true;
    schedulePaint(this);
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

function newBlock() {
  const block = document.createElement("div");
  block.className = "term-block";
  return block;
}

// linesFragment returns the elements of lines [from, to).
function linesFragment(lines, from, to) {
  const frag = document.createDocumentFragment();
  for (let k = from; k < to; k++) frag.append(lineNode(lines[k]));
  return frag;
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
