// Text positions: the protocol's and the browser's.
//
// PROTOCOL.md 2 counts a Position's character in Unicode code points, and
// the server's buffers (workspace/edit.go) end a line at "\n", with a "\r"
// right before it belonging to the line end (so the place between "\r" and
// "\n" has no position). JavaScript strings and CodeMirror count UTF-16
// code units. Everything here converts between the two on whole texts, so
// the editor never has to know.

// lineStarts returns the UTF-16 offset where each line of text starts.
export function lineStarts(text) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) {
    starts.push(i + 1);
  }
  return starts;
}

// lineEnd returns the offset where line content ends (before "\r\n" or
// "\n", or the end of text).
function lineEnd(text, start) {
  let end = text.indexOf("\n", start);
  if (end < 0) return text.length;
  if (end > start && text.charCodeAt(end - 1) === 13) end--;
  return end;
}

// positionAt returns the protocol Position of a UTF-16 offset in text. An
// offset between "\r" and "\n", which has no position, maps to the end of
// its line.
export function positionAt(text, offset, starts = lineStarts(text)) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  const end = Math.min(offset, lineEnd(text, starts[lo]));
  return { line: lo, character: codePoints(text, starts[lo], end) };
}

// offsetAt returns the UTF-16 offset of a protocol Position in text, or
// throws naming the position when the text has no such place (as the
// server would refuse it).
export function offsetAt(text, pos, starts = lineStarts(text)) {
  if (pos.line < 0 || pos.line >= starts.length || pos.character < 0) {
    throw new Error(`position ${pos.line}:${pos.character} is outside the text (${starts.length} lines)`);
  }
  const start = starts[pos.line];
  const end = lineEnd(text, start);
  let at = start;
  for (let ch = 0; ch < pos.character; ch++) {
    if (at >= end) {
      throw new Error(`position ${pos.line}:${pos.character}: line ${pos.line} has only ${ch} characters`);
    }
    at += isHighSurrogate(text.charCodeAt(at)) && at + 1 < end ? 2 : 1;
  }
  return at;
}

// codePoints counts the code points in text[from:to].
export function codePoints(text, from, to) {
  let n = 0;
  for (let i = from; i < to; i++) {
    if (!(isLowSurrogate(text.charCodeAt(i)) && i > from && isHighSurrogate(text.charCodeAt(i - 1)))) n++;
  }
  return n;
}

// utf16Column returns the UTF-16 column of the code point column cp in a
// line of text (clamped to the line).
export function utf16Column(lineText, cp) {
  let at = 0;
  for (let ch = 0; ch < cp && at < lineText.length; ch++) {
    at += isHighSurrogate(lineText.charCodeAt(at)) && at + 1 < lineText.length ? 2 : 1;
  }
  return at;
}

function isHighSurrogate(c) {
  return c >= 0xd800 && c <= 0xdbff;
}

function isLowSurrogate(c) {
  return c >= 0xdc00 && c <= 0xdfff;
}

// diff returns the one TextEdit ({range, text}) that turns before into
// after, or null when they are equal. The edit spans from the first
// difference to the last; its ends are moved outwards so that they never
// split a surrogate pair or a "\r\n" (places the server cannot address).
export function diff(before, after) {
  if (before === after) return null;
  const max = Math.min(before.length, after.length);
  let prefix = 0;
  while (prefix < max && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
  let suffix = 0;
  while (
    suffix < max - prefix &&
    before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)
  ) {
    suffix++;
  }
  // Shrinking the common parts is always consistent: the edit grows by the
  // same characters on both sides.
  if (prefix > 0 && splitsPair(before, prefix)) prefix--;
  if (suffix > 0 && splitsPair(before, before.length - suffix)) suffix--;
  const starts = lineStarts(before);
  return {
    range: {
      start: positionAt(before, prefix, starts),
      end: positionAt(before, before.length - suffix, starts),
    },
    text: after.slice(prefix, after.length - suffix),
  };
}

// splitsPair reports whether offset i falls inside a surrogate pair or a
// "\r\n".
function splitsPair(text, i) {
  if (i <= 0 || i >= text.length) return false;
  const prev = text.charCodeAt(i - 1);
  const next = text.charCodeAt(i);
  return (isHighSurrogate(prev) && isLowSurrogate(next)) || (prev === 13 && next === 10);
}

// applyEdits applies protocol TextEdits in order, each on the result of the
// previous one (PROTOCOL.md 3, text/applyEdit), and returns the new text.
export function applyEdits(text, edits) {
  for (const edit of edits) {
    const starts = lineStarts(text);
    const from = offsetAt(text, edit.range.start, starts);
    const to = offsetAt(text, edit.range.end, starts);
    if (to < from) {
      throw new Error(`edit range ${edit.range.start.line}:${edit.range.start.character}-${edit.range.end.line}:${edit.range.end.character} ends before it starts`);
    }
    text = text.slice(0, from) + edit.text + text.slice(to);
  }
  return text;
}

// lineSeparator is the separator the editor should use for text so that
// its contents round-trip exactly: "\r\n" when every line ends with it,
// else "\n" (a lone "\r" then stays an ordinary character of its line).
export function lineSeparator(text) {
  const lf = (text.match(/\n/g) || []).length;
  const crlf = (text.match(/\r\n/g) || []).length;
  return lf > 0 && lf === crlf ? "\r\n" : "\n";
}

// rebase merges another client's edits (protocol TextEdits on base, in
// order, as text/didChange sends them) into mine, a text made from base by
// local edits the server has not accepted (they will fail: the other
// edits came first). It returns {base, text, splices}: base with their
// edits, mine with them too, and the UTF-16 splices [{from, to, text}]
// that turn mine into text, in order (for the editor, which keeps its
// cursor and marks through them).
//
// Our change is taken as the one span where base and mine differ (as
// diff() sends it). An edit of theirs before or after that span moves
// over it; one that overlaps it keeps ours: their deletion stops at our
// span and their text goes on the side of it where their edit started.
// Both clients' text is kept; neither's keystrokes are dropped.
export function rebase(base, edits, mine) {
  let tb = base;
  let m = mine;
  const splices = [];
  const splice = (from, to, text) => {
    if (from === to && text === "") return;
    m = m.slice(0, from) + text + m.slice(to);
    splices.push({ from, to, text });
  };
  for (const e of edits) {
    const starts = lineStarts(tb);
    const from = offsetAt(tb, e.range.start, starts);
    const to = offsetAt(tb, e.range.end, starts);
    if (to < from) throw new Error(`edit range ends before it starts`);
    // Our change relative to their text so far: tb[cs, ce) became m[cs, cs + ctLen).
    const max = Math.min(tb.length, m.length);
    let cs = 0;
    while (cs < max && tb.charCodeAt(cs) === m.charCodeAt(cs)) cs++;
    let suffix = 0;
    while (suffix < max - cs && tb.charCodeAt(tb.length - 1 - suffix) === m.charCodeAt(m.length - 1 - suffix)) suffix++;
    const ce = tb.length - suffix;
    const ctLen = m.length - suffix - cs;
    const shift = ctLen - (ce - cs);
    if (tb === m || to <= cs) splice(from, to, e.text);
    else if (from >= ce) splice(from + shift, to + shift, e.text);
    else {
      const left = from < cs;
      if (to > ce) splice(cs + ctLen, to + shift, left ? "" : e.text);
      else if (!left) splice(cs + ctLen, cs + ctLen, e.text);
      if (left) splice(from, cs, e.text);
    }
    tb = tb.slice(0, from) + e.text + tb.slice(to);
  }
  return { base: tb, text: m, splices };
}
