// The web client and PROTOCOL.md 8 in a real headless chromium, driven by
// web_test.go (TestBrowserEffects) on a project it wrote:
//
//   node effects.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR
//
// (a) main.py removes out/old with shutil.rmtree; the test deletes "old"
//     with Backspaces, which passes through shutil.rmtree(out / ""), the
//     whole of out/: typing holds it (out/ and out/keep.txt stay), the
//     statement shows ⏸ held with a ▶, and a click on ▶ (then
//     Ctrl-Enter) runs the name typed next. The typing is debounced: the
//     edits go with execute:false, one run after the pause.
// (b) publish.py asserts, then writes published.txt: with effects allowed
//     while typing, an edit that makes the assert fail writes nothing and
//     the later statements keep their last values, dimmed, with the reason.
// (c) slow.py sleeps: the running statement's time ticks; after an
//     interrupt no statement is left pending.
// Screenshots: ARTIFACTS_DIR/effects-held.png (also -1440), effects-
// unreached.png, effects-interrupted.png; on a failure effects-failure.png.

import { chromium } from "playwright-core";
import { existsSync, mkdtempSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STEP_TIMEOUT, FLAGS, log, waitFor, waitRunState, waitConnected, placeCursor, replaceText } from "./page.mjs";

const [pageURL, projectDir, artifacts] = process.argv.slice(2);
if (!pageURL || !projectDir || !artifacts) {
  console.error("usage: node effects.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

const at = (...p) => join(projectDir, ...p);

// lineAnnotation finds the annotation shown on the first editor line whose
// code starts with `code` (after its indentation); null when none. It runs
// in the page, installed as window.rippleLine by an init script (the
// page's CSP forbids building functions from strings there).
function lineAnnotation(code) {
  for (const line of document.querySelectorAll(".CodeMirror-code .CodeMirror-line")) {
    // Beside the line, or under it (a line too long for the value column).
    const inside = line.querySelector(".ripple-annotation");
    const el = inside || line.parentElement.querySelector(".ripple-annotation-below .ripple-annotation");
    if (!el) continue;
    const text = inside ? line.textContent.slice(0, line.textContent.length - el.textContent.length) : line.textContent;
    if (text.trimStart().startsWith(code)) {
      return { expr: el.dataset.expr, state: el.dataset.state, reason: el.dataset.reason || "", local: el.dataset.local || "", text: el.textContent, title: el.querySelector(".ann-main").title, dim: el.classList.contains("is-dim") };
    }
  }
  return null;
}

// waitLine waits until the annotation on the line starting with code
// matches want: {state, text (contained), title (contained), reason}.
async function waitLine(page, code, want) {
  await waitFor(
    page,
    `the annotation of ${JSON.stringify(code)} to be ${JSON.stringify(want)}`,
    ([code, want]) => {
      const a = window.rippleLine(code);
      return !!a && Object.entries(want).every(([k, v]) => (k === "text" || k === "title" ? a[k].includes(v) : a[k] === v));
    },
    [code, want],
  );
  return readLine(page, code);
}

function readLine(page, code) {
  return page.evaluate((code) => window.rippleLine(code), code);
}

// allAnnotations returns every annotation shown: {expr, state, reason, local}.
function allAnnotations(page) {
  return page.evaluate(() =>
    [...document.querySelectorAll(".CodeMirror-code .ripple-annotation")].map((el) => ({
      expr: el.dataset.expr,
      state: el.dataset.state,
      reason: el.dataset.reason || "",
      local: el.dataset.local || "",
      text: el.textContent,
    })),
  );
}

async function setRunDelay(page, ms) {
  await page.fill("#run-delay", String(ms));
  await page.dispatchEvent("#run-delay", "change");
  await waitFor(page, `the run delay ${ms} ms stored`, (ms) => localStorage.getItem("ripple.runDelay") === String(ms), ms);
}

async function setPolicy(page, effects) {
  await page.click(`#policy button[data-effects="${effects}"]`);
  await waitFor(
    page,
    `the run policy switch to show ${effects}`,
    (effects) => {
      const p = document.getElementById("policy");
      return p.dataset.state === "set" && p.querySelector(`button[data-effects="${effects}"]`).getAttribute("aria-pressed") === "true";
    },
    effects,
  );
}

// runEntry runs module:function from the Run box.
async function runEntry(page, entry) {
  await page.fill("#entry", entry);
  await page.click("#entry-form button[type=submit]");
  await waitFor(page, `the stack to be ${entry}`, (entry) => document.getElementById("crumbs").textContent.includes(entry), entry);
}

// applyEdits returns the text/applyEdit calls the page sent from index on:
// [{execute, empty}].
function applyEdits(sent, from = 0) {
  return sent
    .slice(from)
    .map((m) => JSON.parse(m))
    .flatMap((m) => (Array.isArray(m) ? m : [m]))
    .filter((m) => m.method === "text/applyEdit")
    .map((m) => ({ execute: m.params.execute !== false, empty: m.params.edit.edits.length === 0 }));
}

async function steps(browser, page, sent) {
  log("open the page on main.py: its first run is explicit and removes out/old");
  await page.goto(pageURL);
  await waitConnected(page);
  await waitFor(page, "the run policy hold", () => document.getElementById("policy").dataset.state === "set" && document.getElementById("policy").dataset.effects === "hold");
  await waitLine(page, "after = ", { state: "computed", text: "['again', 'keep.txt', 'scratch']" });
  if (existsSync(at("out", "old"))) throw new Error("the explicit first run did not remove out/old");

  log("(a) delete \"old\" with Backspaces: no run until typing pauses, and the run holds rmtree(out)");
  await setRunDelay(page, 1500);
  const from = sent.length;
  await placeCursor(page, 'shutil.rmtree(out / "old")', '"old');
  for (let i = 0; i < 3; i++) await page.keyboard.press("Backspace");
  const held = await waitLine(page, "shutil.rmtree(", { state: "held", text: "'out'" });
  log("held:", JSON.stringify(held.text));
  if (!held.text.startsWith("⏸held: shutil.rmtree(")) throw new Error(`the held statement shows ${JSON.stringify(held.text)}`);
  if (!existsSync(at("out", "keep.txt"))) throw new Error("out/keep.txt is gone: typing ran shutil.rmtree(out)");
  const edits = applyEdits(sent, from);
  const typed = edits.filter((e) => !e.empty);
  const runs = edits.filter((e) => e.execute);
  if (typed.length !== 3 || typed.some((e) => e.execute)) throw new Error(`the Backspaces sent ${JSON.stringify(typed)}, want 3 edits with execute:false`);
  if (runs.length !== 1 || !runs[0].empty) throw new Error(`typing asked for runs ${JSON.stringify(runs)}, want one (an empty edit with execute:true) after the pause`);
  await waitLine(page, "after = ", { state: "unreached", reason: "held", dim: true, text: "keep.txt", title: "not reached: line 6 was held" });
  await setRunDelay(page, 250);
  await page.screenshot({ path: join(artifacts, "effects-held.png") });
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.screenshot({ path: join(artifacts, "effects-held-1440.png") });
  await page.setViewportSize({ width: 1280, height: 800 });

  log("type a new name: held too; one click on ▶ runs it");
  await placeCursor(page, 'shutil.rmtree(out / "")', 'out / "');
  await page.keyboard.type("scratch", { delay: 15 });
  await waitLine(page, "shutil.rmtree(", { state: "held", text: "scratch" });
  if (!existsSync(at("out", "scratch"))) throw new Error("typing removed out/scratch");
  const buttons = await page.locator(".CodeMirror-code .ripple-annotation .ann-run").count();
  if (buttons !== 1) throw new Error(`${buttons} ▶ buttons shown, want 1 (on the held statement)`);
  await page.click(".CodeMirror-code .ripple-annotation.is-held .ann-run");
  await waitLine(page, "shutil.rmtree(", { state: "computed" });
  await waitFor(page, "the run to complete", () => document.getElementById("run-state").dataset.state === "complete");
  if (existsSync(at("out", "scratch"))) throw new Error("▶ did not remove out/scratch");
  if (!existsSync(at("out", "keep.txt"))) throw new Error("▶ removed out/keep.txt");
  // The statements after it run again (or come from the cache: the
  // kernel's caching does not see through the file system).
  await waitFor(page, "the statement after it to be reached", () => {
    const a = window.rippleLine("after = ");
    return !!a && (a.state === "computed" || a.state === "cached");
  });

  log("Ctrl-Enter on a held statement runs it");
  await replaceText(page, 'shutil.rmtree(out / "scratch")', "scratch", "again");
  await waitLine(page, "shutil.rmtree(", { state: "held", text: "again" });
  if (!existsSync(at("out", "again"))) throw new Error("typing removed out/again");
  await placeCursor(page, 'shutil.rmtree(out / "again")', "shutil");
  await page.keyboard.press("Control+Enter");
  await waitLine(page, "shutil.rmtree(", { state: "computed" });
  if (existsSync(at("out", "again"))) throw new Error("Ctrl-Enter did not remove out/again");
  if (!existsSync(at("out", "keep.txt"))) throw new Error("Ctrl-Enter removed out/keep.txt");

  log("(b) a failing assert ends the run: nothing is written, later values stay dimmed with the reason");
  await runEntry(page, "publish:__main__");
  await waitLine(page, "summary = ", { state: "computed", text: "published 2 rows" });
  if (readFileSync(at("published.txt"), "utf8") !== "2 rows\n") throw new Error("the explicit run did not write published.txt");
  rmSync(at("published.txt"));
  // With effects allowed while typing, only 8.1 keeps the write from running.
  await setPolicy(page, "allow");
  await replaceText(page, "assert count > 0", "0", "5");
  await waitLine(page, "assert count", { state: "panic", text: "AssertionError" });
  await waitRunState(page, "panic");
  const summary = await waitLine(page, "summary = ", { state: "unreached", reason: "exception", dim: true, text: "published 2 rows", title: "not reached: line 5 raised AssertionError" });
  log("summary:", JSON.stringify(summary.text), JSON.stringify(summary.title));
  await waitLine(page, "Path(\"published.txt\")", { state: "unreached", reason: "exception" });
  if (existsSync(at("published.txt"))) throw new Error("the statement after the failed assert wrote published.txt");
  await page.screenshot({ path: join(artifacts, "effects-unreached.png") });
  await setPolicy(page, "hold");
  await page.reload();
  await waitConnected(page);
  await waitFor(page, "the policy kept across a reload", () => document.getElementById("policy").dataset.effects === "hold" && document.getElementById("policy").dataset.state === "set");

  log("(c) the running statement ticks; after an interrupt nothing is left pending");
  await runEntry(page, "slow:__main__");
  await waitLine(page, "time.sleep(600)", { state: "running" });
  const first = (await readLine(page, "time.sleep(600)")).text;
  await waitFor(
    page,
    "the elapsed time to tick",
    (first) => {
      const a = window.rippleLine("time.sleep(600)");
      return a && a.state === "running" && a.text !== first;
    },
    first,
  );
  await page.click("#interrupt");
  await waitRunState(page, "interrupted");
  await waitLine(page, "b = a + 1", { state: "unreached", reason: "interrupted", title: "not reached: interrupted" });
  await waitLine(page, "c = b * 2", { state: "unreached", reason: "interrupted" });
  const shown = await allAnnotations(page);
  const left = shown.filter((a) => a.state === "pending" || a.state === "running");
  if (left.length) throw new Error(`after the interrupt, still pending: ${JSON.stringify(left)}`);
  const guessed = shown.filter((a) => a.local);
  if (guessed.length) throw new Error(`the server left statements pending (the page settled them): ${JSON.stringify(guessed)}`);
  log("after the interrupt:", JSON.stringify(shown.map((a) => `${a.expr} ${a.state} ${a.reason}`)));
  await page.mouse.move(600, 700);
  await page.screenshot({ path: join(artifacts, "effects-interrupted.png") });
  log("all steps passed");
}

async function run() {
  const profile = mkdtempSync(join(tmpdir(), "ripple-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 800 },
  });
  const problems = [];
  // Every message the page sends, to count its edits and runs.
  const sent = [];
  await browser.addInitScript({ content: `window.rippleLine = ${lineAnnotation.toString()};` });
  await browser.routeWebSocket(/\/ws\?token=/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      sent.push(String(m));
      server.send(m);
    });
  });
  const page = browser.pages()[0] || (await browser.newPage());
  page.on("pageerror", (e) => problems.push(`uncaught ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/^(Failed to load resource|WebSocket connection to)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  try {
    await steps(browser, page, sent);
    if (problems.length) throw new Error(`the page reported errors:\n  ${problems.join("\n  ")}`);
  } catch (err) {
    await page.screenshot({ path: join(artifacts, "effects-failure.png") }).catch(() => {});
    const dump = await allAnnotations(page).catch((e) => [e.message]);
    console.error(`annotations shown:\n  ${dump.map((a) => JSON.stringify(a)).join("\n  ")}`);
    if (problems.length) console.error(`page errors:\n  ${problems.join("\n  ")}`);
    throw err;
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

run().then(
  () => process.exit(0),
  (err) => {
    console.error(`FAIL: ${err.stack || err}`);
    process.exit(1);
  },
);
