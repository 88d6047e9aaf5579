// Checks how the web client describes expression updates
// (web/static/values.js describe, reasonText, state) on crafted updates of
// PROTOCOL.md 8: held, running, not reached for each reason, effects.
// web_test.go runs it; it exits non-zero naming the first case that fails.

import assert from "node:assert/strict";
import { describe, innerUpdates, reasonText, state, elapsed } from "../../web/static/values.js";

const at = (line) => ({ start: { line, character: 4 }, end: { line, character: 20 } });
const value = (id, line, preview, extra = {}) => ({
  expressionId: id,
  type: "builtins.str",
  profilingInfo: [{ type: "ExecutionTime", nanoTime: 1200 }],
  fromCache: false,
  range: at(line),
  payload: { type: "Value", preview, ...extra },
});
const pending = (id, line, payload, last = null) => ({ expressionId: id, profilingInfo: [], fromCache: false, range: at(line), payload: { type: "Pending", ...payload }, last });

const frame = new Map();
const put = (u) => frame.set(u.expressionId, u);
put({ expressionId: "publish:__main__/#3", profilingInfo: [], fromCache: false, range: at(3), payload: { type: "Panic", message: "AssertionError: no rows", trace: ["publish:__main__/#3"] } });
put(pending("main:__main__/#2", 2, { message: "held: shutil.rmtree('/p/out')", reason: { kind: "held", event: "shutil.rmtree", args: ["'/p/out'", "None"] } }));
const lookup = (id) => frame.get(id);

const cases = [
  {
    name: "a held statement offers ▶ and says what was held",
    u: frame.get("main:__main__/#2"),
    want: { state: "held", dot: "⏸", preview: "held: shutil.rmtree('/p/out')", run: true, tip: /audit event shutil\.rmtree\('\/p\/out', None\)/ },
  },
  {
    name: "a held message without a reason is held too",
    u: pending("m:f/x", 1, { message: "held: open('a.txt', 'w')" }),
    want: { state: "held", run: true },
  },
  {
    name: "not reached after an exception keeps the last value, dimmed, with the line and exception",
    u: pending("publish:__main__/summary", 5, { message: "not reached", reason: { kind: "exception", expressionId: "publish:__main__/#3" } }, value("publish:__main__/summary", 5, "'published 2 rows'")),
    want: { state: "unreached", dim: true, preview: "'published 2 rows'", run: false, tip: /not reached: line 4 raised AssertionError[^]*last value: 'published 2 rows'/ },
    reason: "not reached: line 4 raised AssertionError",
  },
  {
    name: "not reached after a held statement names its line",
    u: pending("main:__main__/n", 6, { message: "not reached", reason: { kind: "held", expressionId: "main:__main__/#2" } }),
    want: { state: "unreached", dim: false, preview: "not reached" },
    reason: "not reached: line 3 was held",
  },
  {
    name: "not reached after an interrupt",
    u: pending("slow:__main__/b", 3, { message: "not reached", reason: { kind: "interrupted" } }),
    want: { state: "unreached" },
    reason: "not reached: interrupted",
  },
  {
    name: "not reached after the kernel died",
    u: pending("slow:__main__/b", 3, { message: "not reached", reason: { kind: "kernelDied" } }),
    want: { state: "unreached" },
    reason: "not reached: the kernel died",
  },
  {
    name: "not reached after a return (no reason)",
    u: pending("m:f/y", 3, { message: "not reached" }),
    want: { state: "unreached" },
    reason: "not reached: the function returned before it",
  },
  {
    name: "a raiser the page has not seen is named by its label",
    u: pending("m:f/y", 3, { message: "not reached", reason: { kind: "exception", expressionId: "m:f/#9" } }),
    want: { state: "unreached" },
    reason: "not reached: #9 raised an exception",
  },
  {
    name: "a running statement shows the time since startedAt",
    u: { ...pending("slow:__main__/#2", 2, { message: "running", startedAt: "2026-11-29T01:02:03.456Z" }), arrived: Date.parse("2026-11-29T01:02:04Z") },
    now: Date.parse("2026-11-29T01:02:05.956Z"),
    want: { state: "running", dot: "⏳", tags: [["2.5 s", "ann-elapsed"]], started: Date.parse("2026-11-29T01:02:03.456Z") },
  },
  {
    name: "a startedAt ahead of the page's clock counts from the update's arrival",
    u: { ...pending("slow:__main__/#2", 2, { message: "running", startedAt: "2026-11-29T01:09:00.000Z" }), arrived: Date.parse("2026-11-29T01:02:04Z") },
    now: Date.parse("2026-11-29T01:02:05Z"),
    want: { state: "running", tags: [["1.0 s", "ann-elapsed"]] },
  },
  {
    name: "plain Pending is waiting",
    u: pending("m:f/z", 1, {}),
    want: { state: "pending", preview: "pending…" },
  },
  {
    name: "a value with effects is marked",
    u: value("m:f/w", 2, "None", { effects: ["open('out.csv', 'w')"] }),
    want: { state: "computed", tags: [["str", "ann-type"], ["1.2 µs", "ann-time"], ["↯", "ann-effects"]], tip: /effects of its last run:\n  open\('out.csv', 'w'\)/ },
  },
];

for (const c of cases) {
  const d = describe(c.u, lookup, c.now);
  for (const [k, want] of Object.entries(c.want)) {
    if (want instanceof RegExp) assert.match(d[k], want, `${c.name}: ${k}`);
    else assert.deepEqual(d[k], want, `${c.name}: ${k}`);
  }
  assert.equal(state(c.u), d.state, `${c.name}: state()`);
  if (c.reason) assert.equal(reasonText(c.u, lookup), c.reason, `${c.name}: reasonText`);
}
assert.equal(elapsed(61_500), "1 min 01 s");
assert.equal(elapsed(-5), "0.0 s");
// Inner values (kernel/PROTOCOL.md "Inner values") show as updates of
// their own: the last value, its count when over 1, the Panic of the one
// that raised; the parent's last Value's, dimmed, while it runs again.
const loop = {
  ...value("m:f/#1", 2, "None"),
  inner: [
    { range: at(3), type: "builtins.int", preview: "81", count: 10 },
    { range: at(5), type: "builtins.str", preview: "'four'", count: 1 },
    { range: at(6), count: 0, panic: "ZeroDivisionError: division by zero" },
  ],
};
const [sq, label, bad] = innerUpdates(loop);
assert.equal(sq.expressionId, "m:f/#1@3:4");
assert.equal(sq.innerOf, "m:f/#1");
assert.deepEqual(describe(sq, lookup).tags, [["int", "ann-type"], ["×10", "ann-count"]]);
assert.equal(describe(sq, lookup).preview, "81");
assert.match(describe(sq, lookup).tip, /the last value in 10 runs of m:f\/#1/);
assert.deepEqual(describe(label, lookup).tags, [["str", "ann-type"]]);
assert.equal(describe(bad, lookup).state, "panic");
assert.equal(describe(bad, lookup).preview, "ZeroDivisionError: division by zero");
const rerun = pending("m:f/#1", 2, { message: "running", startedAt: "2026-11-29T01:02:03.000Z" }, loop);
const dimmed = innerUpdates(rerun);
assert.equal(dimmed.length, 3);
assert.equal(describe(dimmed[0], lookup).dim, true);
assert.deepEqual(innerUpdates(value("m:f/x", 1, "1")), []);
console.log(`valuescheck: ${cases.length} cases passed`);
