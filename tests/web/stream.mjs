// Browser test of the page while output streams at 1 MB/s (issue 29),
// driven by stream_test.go's TestBrowserStream against `ripple serve` on
// streamProject:
//
//   node stream.mjs PAGE_URL ARTIFACTS_DIR
//
// Three runs: stream.py (1 MB/s for 6 s) watched with a PerformanceObserver
// for long tasks and a MutationObserver counting the lines each frame puts
// into the DOM; traced.py (the same stream) under a Chromium trace (CDP
// Tracing), which names every forced synchronous layout and the JS stack
// that caused it; big.py (10,000 lines printed at once). Long tasks and
// main-thread time are printed as "FIGURE name value" lines, never
// asserted: the machine is shared, and a task's wall time says as much
// about the other processes as about the page. What is asserted is the
// structure that keeps the page responsive at any load: a terminal's paint
// never forces a layout (it writes; the browser lays out once, at the
// frame's end), the DOM gains a bounded number of lines per frame (the
// paint is cut into chunks across frames), the CodeMirror line widget is
// re-measured only when its height changed, and the DOM holds a bounded
// window of lines.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { log, waitFor, waitConnected, inBrowser } from "./page.mjs";

const [pageURL, artifacts] = process.argv.slice(2);
if (!pageURL || !artifacts) {
  console.error("usage: node stream.mjs PAGE_URL ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

// Lines a frame may put into the DOM, all terminals together (term.js's
// LINES_PER_FRAME); the old page put up to a window of each (200 under a
// statement, 500 in the output pane) into one frame.
const LINES_PER_FRAME = 128;
// Lines one statement keeps in the DOM (term.js's DEFAULT_KEEP), and the
// output pane (app.js's OUTPUT_KEEP).
const KEEP = 200;
const PANE_KEEP = 500;
// Times the stream's line widget may be re-measured by CodeMirror: its
// cell appears, grows to its max-height and gains the "not shown" bar;
// after that its height does not change whatever is printed.
const REMEASURES = 6;

// failures: what failed; every step runs and prints its figures first,
// so that a failing run still shows all of them.
const failures = [];
function fail(msg) {
  log(`FAILED: ${msg}`);
  failures.push(msg);
}

function figure(name, value) {
  console.log(`FIGURE ${name} ${value}`);
}

// Long tasks (PerformanceObserver "longtask"), collected from the start.
const LONGTASKS = () => {
  window.__longtasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longtasks.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: "longtask", buffered: true });
};

// watchLines counts, per MutationObserver delivery (once per task that
// changed the DOM: a frame's paint is one), the terminal lines added, and
// the most elements the document had.
function watchLines(page) {
  return page.evaluate(() => {
    const w = { deliveries: 0, maxLines: 0, totalLines: 0, maxElements: 0 };
    window.__lines = w;
    const all = document.getElementsByTagName("*");
    w.observer = new MutationObserver((records) => {
      // A line is counted once: added itself, or inside an added element
      // (a block put in with its lines).
      const nodes = new Set();
      for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1) nodes.add(n);
      let added = 0;
      for (const n of nodes) {
        if (n.classList.contains("term-line")) added++;
        for (const l of n.getElementsByClassName("term-line")) if (!nodes.has(l)) added++;
      }
      if (added === 0) return;
      w.deliveries++;
      w.totalLines += added;
      w.maxLines = Math.max(w.maxLines, added);
      w.maxElements = Math.max(w.maxElements, all.length);
    });
    w.observer.observe(document.body, { childList: true, subtree: true });
  });
}

function stopWatching(page) {
  return page.evaluate(() => {
    const w = window.__lines;
    w.observer.disconnect();
    return { deliveries: w.deliveries, maxLines: w.maxLines, totalLines: w.totalLines, maxElements: w.maxElements };
  });
}

// runModule runs module:__main__ and waits until its statement doneExpr
// has its value and the cell under the loop shows all `lines` lines.
async function runModule(page, module, doneExpr, lines) {
  await page.fill("#entry", `${module}:__main__`);
  const t0 = await page.evaluate(() => performance.now());
  await page.press("#entry", "Enter");
  await waitFor(page, `the run of ${module} done`, (id) => {
    const el = document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(id)}"]`);
    return !!el && el.dataset.state !== "pending" && el.dataset.state !== "running";
  }, doneExpr);
  const tDone = await page.evaluate(() => performance.now());
  await waitFor(page, `${lines} lines under the loop`, (n) =>
    [...document.querySelectorAll(".CodeMirror .ripple-cell .term")].some((t) => t.dataset.lines === String(n)), lines);
  const tShown = await page.evaluate(() => performance.now());
  const tasks = await page.evaluate(([a, b]) => window.__longtasks.filter((e) => e.start >= a && e.start <= b), [t0, tShown]);
  const dom = await page.evaluate(() => ({
    cell: Math.max(...[...document.querySelectorAll(".CodeMirror .ripple-cell .term")].map((t) => t.querySelectorAll(".term-line").length)),
    pane: Math.max(0, ...[...document.querySelectorAll("#output .term")].map((t) => t.querySelectorAll(".term-line").length)),
  }));
  return { total: tShown - t0, afterEnd: Math.max(0, tShown - tDone), tasks, dom };
}

function taskFigures(prefix, tasks) {
  figure(`${prefix}_longtasks_over_50ms`, tasks.length);
  figure(`${prefix}_longtasks_over_100ms`, tasks.filter((t) => t.duration > 100).length);
  figure(`${prefix}_longest_task_ms`, Math.round(Math.max(0, ...tasks.map((t) => t.duration))));
}

function checkWindow(what, dom) {
  if (dom.cell > KEEP + 1) fail(`${dom.cell} line elements under ${what}; want the last ${KEEP}`);
  if (dom.pane > PANE_KEEP + 1) fail(`${dom.pane} line elements in the output pane after ${what}; want the last ${PANE_KEEP}`);
}

function checkPerFrame(what, w) {
  figure(`${what}_lines_per_frame_max`, w.maxLines);
  figure(`${what}_dom_elements_max`, w.maxElements);
  if (w.maxLines > LINES_PER_FRAME) {
    fail(`one frame put ${w.maxLines} lines into the DOM during ${what}; want at most ${LINES_PER_FRAME} (the paint cut into chunks)`);
  }
  // The page's own elements and the two windows of lines (a few hundred
  // spans of colour among them): a bound, so that a paint that leaves
  // lines behind shows.
  const bound = 3000;
  if (w.maxElements > bound) fail(`the document had ${w.maxElements} elements during ${what}; want at most ${bound}`);
}

// ---- the trace -------------------------------------------------------------

const CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "disabled-by-default-devtools.timeline.stack", "toplevel"].join(",");

async function traced(page, fn) {
  const cdp = await page.context().newCDPSession(page);
  const events = [];
  cdp.on("Tracing.dataCollected", (e) => events.push(...e.value));
  const complete = new Promise((resolve) => cdp.once("Tracing.tracingComplete", resolve));
  await cdp.send("Tracing.start", { categories: CATEGORIES, transferMode: "ReportEvents" });
  let result;
  try {
    result = await fn();
  } finally {
    await cdp.send("Tracing.end");
    await complete;
    await cdp.detach();
  }
  return { result, events };
}

// analyse reads the renderer's main thread in a trace: the forced layouts
// (a Layout or style recalculation that JS asked for by reading a size
// after a write; Chromium records the JS stack of those only) sorted by
// who caused them, and the CPU time of its tasks.
function analyse(events) {
  const mains = new Set(events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
  const main = events.filter((e) => e.ph === "X" && mains.has(`${e.pid}:${e.tid}`));
  const where = (stack) => stack.map((f) => `${f.functionName || "(anonymous)"}@${f.url.split("/").pop()}:${f.lineNumber}`);
  const forced = main
    .filter((e) => (e.name === "Layout" || e.name === "UpdateLayoutTree") && (e.args?.beginData?.stackTrace || []).length)
    .map((e) => ({ name: e.name, ms: e.dur / 1000, stack: where(e.args.beginData.stackTrace) }));
  const inFile = (f, file) => f.stack.some((s) => s.split("@")[1].startsWith(`${file}:`));
  const tasks = main.filter((e) => e.name === "RunTask");
  return {
    byPaint: forced.filter((f) => inFile(f, "term.js")),
    remeasures: forced.filter((f) => f.stack.some((s) => s.startsWith("updateHeightsInViewport@codemirror.js")) && inFile(f, "cells.js")),
    forced,
    cpuMs: tasks.reduce((a, t) => a + (t.tdur || 0), 0) / 1000,
    maxTaskCpuMs: Math.max(0, ...tasks.map((t) => (t.tdur || 0) / 1000)),
  };
}

// ---- the steps ---------------------------------------------------------------

async function stream(page) {
  log("1 MB/s for 6 s: long tasks, lines per frame, the DOM's size");
  await watchLines(page);
  const r = await runModule(page, "stream", "stream:__main__/streamed", 60000);
  const w = await stopWatching(page);
  taskFigures("stream1mb", r.tasks);
  figure("stream1mb_shown_after_end_ms", Math.round(r.afterEnd));
  figure("stream1mb_frames_with_new_lines", w.deliveries);
  checkWindow("the stream", r.dom);
  checkPerFrame("stream1mb", w);
  await lastLinesInOrder(page, 60000);
}

// lastLinesInOrder checks that, once caught up, the cell under the loop
// shows exactly the last KEEP of the n numbered lines and the output pane
// the last PANE_KEEP, in order (painted newest first, then filled upwards
// and trimmed from the top, frame by frame).
async function lastLinesInOrder(page, n) {
  await waitFor(page, `the output pane showing ${n} lines`, (n) => document.querySelector("#output .term")?.dataset.lines === String(n), n);
  const got = await page.evaluate((n) => {
    const numbers = (t) => [...t.querySelectorAll(".term-line")].map((l) => Number(l.textContent.slice(0, 8)));
    const cell = [...document.querySelectorAll(".CodeMirror .ripple-cell .term")].find((t) => t.dataset.lines === String(n));
    return { cell: numbers(cell), pane: numbers(document.querySelector("#output .term")), bar: cell.querySelector(".term-bar").textContent };
  }, n);
  const want = (k) => Array.from({ length: k }, (_, i) => n - k + i);
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  if (!same(got.cell, want(KEEP))) fail(`the cell shows lines ${got.cell.slice(0, 3)}…${got.cell.slice(-3)} (${got.cell.length}); want ${n - KEEP}…${n - 1} in order`);
  if (!same(got.pane, want(PANE_KEEP))) fail(`the output pane shows lines ${got.pane.slice(0, 3)}…${got.pane.slice(-3)} (${got.pane.length}); want ${n - PANE_KEEP}…${n - 1} in order`);
  if (!got.bar.includes(`${n - KEEP} earlier lines not shown`)) fail(`the cell's bar says ${JSON.stringify(got.bar)}`);
}

async function streamTraced(page) {
  log("the same stream under a Chromium trace: who forces layouts");
  const { result: r, events } = await traced(page, () => runModule(page, "traced", "traced:__main__/streamed", 60000));
  const a = analyse(events);
  figure("traced_longtasks_over_100ms", r.tasks.filter((t) => t.duration > 100).length);
  figure("traced_main_thread_cpu_ms", Math.round(a.cpuMs));
  figure("traced_longest_task_cpu_ms", Math.round(a.maxTaskCpuMs));
  figure("traced_forced_layouts", a.forced.length);
  figure("traced_forced_layouts_by_paint", a.byPaint.length);
  figure("traced_widget_remeasures", a.remeasures.length);
  const show = (list) => list.slice(0, 5).map((f) => `${f.name} ${f.ms.toFixed(1)} ms from ${f.stack.slice(0, 4).join(" < ")}`).join("\n  ");
  if (a.forced.length) log(`forced layouts (first 5):\n  ${show(a.forced)}`);
  if (a.byPaint.length) fail(`${a.byPaint.length} forced layouts caused by a terminal's paint (a size read after a write), e.g.\n  ${show(a.byPaint)}`);
  if (a.remeasures.length > REMEASURES) {
    fail(`CodeMirror re-measured the stream's line widget ${a.remeasures.length} times; want at most ${REMEASURES} (only when its height changes), e.g.\n  ${show(a.remeasures)}`);
  }
}

async function big(page) {
  log("10,000 lines printed at once");
  await watchLines(page);
  const r = await runModule(page, "big", "big:__main__/done", 10000);
  const w = await stopWatching(page);
  taskFigures("print10k", r.tasks);
  figure("print10k_total_ms", Math.round(r.total));
  figure("print10k_shown_after_end_ms", Math.round(r.afterEnd));
  checkWindow("the 10,000-line print", r.dom);
  checkPerFrame("print10k", w);
}

async function run() {
  await inBrowser("stream", artifacts, { viewport: { width: 1440, height: 900 }, initScript: LONGTASKS }, async (page, browser, problems) => {
    await page.goto(pageURL);
    await waitConnected(page);
    await stream(page);
    await streamTraced(page);
    await big(page);
    if (problems.length) fail(`the page reported errors:\n  ${problems.join("\n  ")}`);
    if (failures.length) throw new Error(`${failures.length} checks failed:\n- ${failures.join("\n- ")}`);
    log("PASS");
  });
}

await run();
