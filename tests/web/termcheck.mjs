// Runs the page's terminal model (web/static/term.js, TermModel) and its
// merge of concurrent edits (web/static/text.js, rebase) in node, for
// web_test.go's TestPageTerminalAndMerge. Prints one line per check and
// exits 1 if any failed.

import { TermModel } from "../../web/static/term.js";
import { rebase, applyEdits, diff } from "../../web/static/text.js";

let failed = 0;
function check(name, got, want) {
  const ok = JSON.stringify(got) === JSON.stringify(want);
  if (!ok) failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`}`);
}

function term(...chunks) {
  const t = new TermModel();
  for (const c of chunks) t.write(c);
  return t;
}
const lines = (t) => [...Array(t.lineCount).keys()].map((k) => t.plain(k));

check("plain lines", lines(term("a\nb\n")), ["a", "b"]);
check("a line written in pieces", lines(term("ab", "c\nd")), ["abc", "d"]);
check("\\r overwrites from the line's start", lines(term("loading.....\rdone\n")), ["doneing....."]);
check("progress bar redrawn in place", lines(term("10%\r", "50%\r", "100%\n")), ["100%"]);
check("\\r\\n split across chunks is one line end", lines(term("a\r", "\nb\n")), ["a", "b"]);
check("\\b steps back", lines(term("abc\b\bX\n")), ["aXc"]);
check("ESC[K erases to the end", lines(term("abcdef\r\x1b[Kxy\n")), ["xy"]);
check("ESC[2K erases the line", lines(term("abcdef\x1b[2K\rz\n")), ["z"]);
check("escapes are not text", lines(term("\x1b[1;31mred\x1b[0m plain\n")), ["red plain"]);
check("an escape cut between chunks", lines(term("\x1b[3", "2mgreen\x1b[0m\n")), ["green"]);
check("OSC title dropped", lines(term("\x1b]0;title\x07text\n")), ["text"]);
{
  const t = term("\x1b[31mred\x1b[0m and \x1b[38;5;208morange\x1b[0m\n");
  const styles = t.lines[0].map((r) => r[1]);
  check("styled runs", [t.lines[0].length, styles[0] !== 0, styles[1] === 0, styles[2] !== 0 && styles[2] !== styles[0]], [3, true, true, true]);
}
check("overwrite keeps the style right of it", term("\x1b[31mabcdef\x1b[0m\rXY\n").lines[0].map((r) => r[0]), ["XY", "cdef"]);
{
  const t = new TermModel();
  let s = "";
  for (let i = 0; i < 10000; i++) s += `line ${i}\n`;
  t.write(s);
  check("10,000 lines counted", [t.lineCount, t.plain(9999)], [10000, "line 9999"]);
  check("text() is what was printed", t.text() === s, true);
}

// rebase: their edits and ours both survive, wherever they fall.
function edit(base, from, to, text) {
  const after = base.slice(0, from) + text + base.slice(to);
  return { after, e: diff(base, after) };
}
const base = "alpha\nbeta\ngamma\n";
for (const [name, theirs, mine, want] of [
  ["theirs before ours", [0, 0, "T"], [11, 11, "M"], "Talpha\nbeta\nMgamma\n"],
  ["theirs after ours", [17, 17, "T"], [0, 0, "M"], "Malpha\nbeta\ngamma\nT"],
  ["same place: theirs first", [6, 6, "T"], [6, 6, "M"], "alpha\nTMbeta\ngamma\n"],
  ["overlapping deletes keep both texts", [0, 10, "T"], [6, 11, "M"], "TMgamma\n"],
]) {
  const t = edit(base, ...theirs);
  const m = base.slice(0, mine[0]) + mine[2] + base.slice(mine[1]);
  const r = rebase(base, [t.e], m);
  let applied = m;
  for (const sp of r.splices) applied = applied.slice(0, sp.from) + sp.text + applied.slice(sp.to);
  check(`rebase: ${name}`, [r.text, applied, r.base], [want, want, t.after]);
}
{
  // Random: the merge holds every character either side inserted, and the
  // splices give the merged text.
  let seed = 29;
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  let bad = 0;
  for (let k = 0; k < 2000; k++) {
    const b = "0123456789\nabcdefghij\n".slice(0, 5 + rnd(17));
    const [i, j] = [rnd(b.length + 1), rnd(b.length + 1)].sort((x, y) => x - y);
    const [p, q] = [rnd(b.length + 1), rnd(b.length + 1)].sort((x, y) => x - y);
    const t = edit(b, i, j, "<T>");
    const m = b.slice(0, p) + "[M]" + b.slice(q);
    const r = rebase(b, t.e ? [t.e] : [], m);
    let applied = m;
    for (const sp of r.splices) applied = applied.slice(0, sp.from) + sp.text + applied.slice(sp.to);
    if (!r.text.includes("[M]") || (t.e && !r.text.includes("<T>")) || applied !== r.text || r.base !== applyEdits(b, t.e ? [t.e] : [])) bad++;
  }
  check("rebase: 2,000 random pairs keep both insertions", bad, 0);
}

process.exitCode = failed ? 1 : 0;
