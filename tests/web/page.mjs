// Helpers shared by the browser tests (e2e.mjs, effects.mjs): they read
// the page and type into it as a person would, and wait for conditions
// with a deadline, never for a fixed time.

import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const STEP_TIMEOUT = 60_000; // ms: a deadline, not an expectation

export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

const script = (process.argv[1] || "e2e").split("/").pop().replace(/\.mjs$/, "");

// inBrowser runs body(page, browser, problems) in Debian's chromium (or
// $RIPPLE_CHROMIUM) with a fresh profile, options given to
// launchPersistentContext (viewport, acceptDownloads...) and initScript
// added to every page. Uncaught errors of any page and console errors of
// the first (unless ignoreConsole() says so) go into problems, which fail
// the run if body returns while there are any. A failure is printed as
// FAIL, exits 1 and leaves <artifacts>/<name>-failure.png.
export async function inBrowser(name, artifacts, { initScript, ignoreConsole = () => false, ...launch }, body) {
  const profile = mkdtempSync(join(tmpdir(), "ripple-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    ...launch,
  });
  if (initScript) await browser.addInitScript(initScript);
  const problems = [];
  browser.on("page", (p) => p.on("pageerror", (e) => problems.push(`uncaught ${e.message}`)));
  const page = browser.pages()[0] || (await browser.newPage());
  page.on("pageerror", (e) => problems.push(`uncaught ${e.message}`));
  page.on("console", (m) => m.type() === "error" && !ignoreConsole() && problems.push(`console: ${m.text()}`));
  try {
    await body(page, browser, problems);
    if (problems.length) throw new Error(`the page reported errors:\n  ${problems.join("\n  ")}`);
  } catch (err) {
    await page.screenshot({ path: join(artifacts, `${name}-failure.png`) }).catch(() => {});
    console.error(`FAIL: ${err.stack || err}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

export function log(...args) {
  console.log(`[${script} ${new Date().toISOString().slice(11, 23)}]`, ...args);
}

// ---- helpers that read the page -------------------------------------------

// editorText returns the text of the editor shown (read-only access to the
// CodeMirror instance, to find lines and check results).
export function editorText(page) {
  return page.evaluate(() => document.querySelector(".CodeMirror").CodeMirror.getValue());
}

export async function waitFor(page, what, fn, arg) {
  try {
    await page.waitForFunction(fn, arg, { timeout: STEP_TIMEOUT, polling: 50 });
  } catch (err) {
    throw new Error(`waiting for ${what}: ${err.message.split("\n")[0]}`);
  }
}

// waitAnnotation waits until the annotation of expression id has state
// (if given) and contains text (if given).
export async function waitAnnotation(page, id, { state, text, absent } = {}) {
  const what = `the annotation of ${id}${state ? ` in state ${state}` : ""}${text ? ` showing ${JSON.stringify(text)}` : ""}${absent ? " to go away" : ""}`;
  await waitFor(
    page,
    what,
    ([id, state, text, absent]) => {
      const el = document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(id)}"]`);
      if (absent) return !el;
      return !!el && (!state || el.dataset.state === state) && (!text || el.textContent.includes(text));
    },
    [id, state, text, absent],
  );
  return page.evaluate((id) => document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(id)}"]`).textContent, id);
}

export async function waitRunState(page, state, text) {
  await waitFor(
    page,
    `the run state ${state}${text ? ` mentioning ${JSON.stringify(text)}` : ""}`,
    ([state, text]) => {
      const el = document.getElementById("run-state");
      return el.dataset.state === state && (!text || el.textContent.includes(text));
    },
    [state, text],
  );
  return page.textContent("#run-state");
}

export async function waitEditorContains(page, text) {
  await waitFor(
    page,
    `the editor to contain ${JSON.stringify(text)}`,
    (t) => document.querySelector(".CodeMirror").CodeMirror.getValue().includes(t),
    text,
  );
}

export async function waitConnected(page) {
  await waitFor(page, "the page to be connected", () => document.getElementById("conn").dataset.state === "open");
}

// ---- helpers that type -----------------------------------------------------

// placeCursor clicks at the start of the first line containing `contains`
// and moves the cursor with the keyboard to just after `after` in it.
export async function placeCursor(page, contains, after) {
  const lines = (await editorText(page)).split("\n");
  const index = lines.findIndex((l) => l.includes(contains));
  if (index < 0) throw new Error(`no line contains ${JSON.stringify(contains)}`);
  const line = lines[index];
  // Scrolling only moves the view; the text is changed by typing below.
  await page.evaluate((i) => document.querySelector(".CodeMirror").CodeMirror.scrollIntoView({ line: i, ch: 0 }, 120), index);
  const el = page.locator(".CodeMirror-line").filter({ hasText: contains }).first();
  await el.click({ position: { x: 3, y: 5 } });
  await page.keyboard.press("End");
  const at = after === undefined ? line.length : line.indexOf(after) + after.length;
  if (after !== undefined && line.indexOf(after) < 0) throw new Error(`line ${JSON.stringify(line)} has no ${JSON.stringify(after)}`);
  for (let i = [...line.slice(at)].length; i > 0; i--) await page.keyboard.press("ArrowLeft");
  // A value arriving between finding the line and clicking it can move
  // the lines (a long line's value takes a row under it): the click then
  // lands on another line. Put the cursor where it was meant to go.
  await page.evaluate(([i, ch]) => {
    const cm = document.querySelector(".CodeMirror").CodeMirror;
    const cur = cm.getCursor();
    if (cur.line !== i || cur.ch !== ch || !cm.hasFocus()) {
      cm.focus();
      cm.setCursor({ line: i, ch });
    }
  }, [index, at]);
}

// replaceText selects `from` (the first one in the line containing
// `contains`) with Shift+arrows and types `to` over it, key by key, or
// pastes it in one go (one edit, no half-typed states in between).
export async function replaceText(page, contains, from, to, { paste = false } = {}) {
  await placeCursor(page, contains, from);
  for (let i = [...from].length; i > 0; i--) await page.keyboard.press("Shift+ArrowLeft");
  if (paste) await page.keyboard.insertText(to);
  else await page.keyboard.type(to, { delay: 15 });
}

// deleteLine deletes the line containing `contains` with Backspace.
export async function deleteLine(page, contains) {
  const line = (await editorText(page)).split("\n").find((l) => l.includes(contains));
  await placeCursor(page, contains);
  for (let i = [...line].length + 1; i > 0; i--) await page.keyboard.press("Backspace");
}
