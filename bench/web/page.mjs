// Drives the page for bench/web/run.sh: node page.mjs URL KEYS SIZE...
// (run from tests/web, whose node_modules has playwright-core). Prints a
// table; timings are measured in the page (performance.now()).

import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(join(process.cwd(), "package.json"));
const { chromium } = require("playwright-core");

const [url, keysArg, ...sizeArgs] = process.argv.slice(2);
const keys = Number(keysArg);
const sizes = sizeArgs.map(Number);
const TIMEOUT = 300_000;

const browser = await chromium.launch({
  executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--enable-precise-memory-info", "--js-flags=--expose-gc"],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
await page.addInitScript(() => {
  localStorage.setItem("ripple.runDelay", "0"); // keystroke-to-value: no typing pause
  window.__long = [];
  new PerformanceObserver((l) => l.getEntries().forEach((e) => window.__long.push(e.duration))).observe({ type: "longtask", buffered: true });
});
const cdp = await page.context().newCDPSession(page);
await cdp.send("Performance.enable");
const rows = [];
const row = (what, value, unit) => rows.push([what, value, unit]);

async function annotation(id, text) {
  await page.waitForFunction(([id, text]) => {
    const el = document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(id)}"]`);
    return !!el && el.dataset.state !== "pending" && el.dataset.state !== "running" && el.textContent.includes(text);
  }, [id, text], { timeout: TIMEOUT, polling: 20 });
}

async function run(entry) {
  await page.fill("#entry", entry);
  const t0 = await page.evaluate(() => performance.now());
  await page.press("#entry", "Enter");
  return t0;
}

await page.goto(url);
await annotation("main:__main__/value", "1000");

for (const n of sizes) {
  await page.evaluate(() => (window.__long = []));
  const t0 = await run(`out${n}:__main__`);
  await annotation(`out${n}:__main__/done`, String(n));
  const tDone = await page.evaluate(() => performance.now());
  // The last line shown under the loop (any page: its cell's text).
  const tShown = await page.evaluate(
    (lastLine) => new Promise((resolve) => {
      const last = new RegExp(`(^|\\n)${lastLine}(\\n|$)`);
      const check = () => {
        const cells = [...document.querySelectorAll(".CodeMirror .ripple-cell")];
        if (cells.some((c) => last.test(c.textContent))) resolve(performance.now());
        else requestAnimationFrame(check);
      };
      check();
    }),
    `line ${n - 1}`,
  );
  const long = await page.evaluate(() => window.__long);
  row(`print ${n} lines: run to last line shown`, (tShown - t0).toFixed(0), "ms");
  row(`print ${n} lines: kernel done to last line shown`, Math.max(0, tShown - tDone).toFixed(0), "ms");
  row(`print ${n} lines: long tasks (>50 ms), longest`, `${long.length}, ${Math.round(Math.max(0, ...long))}`, "count, ms");
  if (n === Math.max(...sizes)) {
    await page.evaluate(() => window.gc && window.gc());
    const m = Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((x) => [x.name, x.value]));
    row(`tab after ${n} lines: JS heap`, (m.JSHeapUsedSize / 1048576).toFixed(1), "MiB");
    row(`tab after ${n} lines: DOM nodes`, m.Nodes, "");
  }
}

// 1 MB/s for STREAM_SECONDS (run.sh's stream.py): the long tasks from the
// run's start until the last line is shown.
const streamSeconds = Number(process.env.STREAM_SECONDS || 0);
if (streamSeconds > 0) {
  const lines = streamSeconds * 50 * 200;
  await page.evaluate(() => (window.__long = []));
  await run("stream:__main__");
  await annotation("stream:__main__/streamed", String(lines));
  const tDone = await page.evaluate(() => performance.now());
  await page.waitForFunction((n) => [...document.querySelectorAll(".CodeMirror .ripple-cell .term")].some((t) => t.dataset.lines === String(n)), lines, { timeout: TIMEOUT, polling: 20 });
  const tShown = await page.evaluate(() => performance.now());
  const long = await page.evaluate(() => window.__long);
  row(`stream 1 MB/s for ${streamSeconds} s: long tasks > 100 ms, longest`, `${long.filter((d) => d > 100).length}, ${Math.round(Math.max(0, ...long))}`, "count, ms");
  row(`stream 1 MB/s for ${streamSeconds} s: long tasks > 50 ms`, long.length, "");
  row(`stream 1 MB/s for ${streamSeconds} s: kernel done to last line shown`, Math.max(0, tShown - tDone).toFixed(0), "ms");
}

// Keystroke to value: the last digit of "value = base + D" replaced, one
// key, until the annotation shows base + D.
await run("main:__main__");
await annotation("main:__main__/value", "1000");
await page.evaluate(() => {
  const cm = document.querySelector(".CodeMirror").CodeMirror;
  const i = cm.getValue().split("\n").findIndex((l) => l.startsWith("value ="));
  cm.setCursor({ line: i, ch: cm.getLine(i).length });
  cm.focus();
});
const lat = [];
for (let k = 0; k < keys; k++) {
  const d = String((k % 9) + 1 === 0 ? 1 : (k % 9) + 1);
  const want = String(1000 + Number(d));
  await page.keyboard.press("Shift+ArrowLeft");
  const t0 = await page.evaluate(() => performance.now());
  await page.keyboard.type(d);
  const t1 = await page.evaluate(
    (want) => new Promise((resolve) => {
      const check = () => {
        const el = document.querySelector('.CodeMirror-code .ripple-annotation[data-expr="main:__main__/value"]');
        if (el && el.dataset.state !== "pending" && el.dataset.state !== "running" && el.querySelector(".ann-preview")?.textContent === want) resolve(performance.now());
        else requestAnimationFrame(check);
      };
      check();
    }),
    want,
  );
  lat.push(t1 - t0);
}
// The first key comes right after the stream (STREAM_SECONDS > 0): what an
// edit costs after a big run, apart from the steady state below.
const first = lat[0];
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
row(`keystroke to value (${keys} keys): p50`, q(0.5).toFixed(1), "ms");
row(`keystroke to value (${keys} keys): p99`, q(0.99).toFixed(1), "ms");
row(`keystroke to value: first key${streamSeconds > 0 ? " after the stream" : ""}`, first.toFixed(1), "ms");

await browser.close();
const w = Math.max(...rows.map((r) => r[0].length));
console.log(`${"measure".padEnd(w)}  value`);
for (const [what, value, unit] of rows) console.log(`${what.padEnd(w)}  ${value} ${unit}`);
