// Browser test of what notebook users expect, driven by
// web_test.go's TestBrowserNotebook: `ripple serve --python
// /usr/bin/python3` on a script project (main.py without a main function,
// matplotlib and pandas), then
//
//   node notebook.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR
//
// It reads the page as a person would: the script's values, output under
// its statement, a plot inline, a DataFrame as a table, autosave writing
// the file, a click right of a line's end placing the cursor, a call with
// arguments in the Run box, 1024 px and 1440 px screenshots; then it leaves
// an unsaved edit, prints "RESTART" and reads the next page URL from stdin
// (the test restarted the server), and sees the recovered text offered.
// Steps wait for conditions with a deadline, never for a fixed time.

import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [pageURL, projectDir, artifacts] = process.argv.slice(2);
if (!pageURL || !projectDir || !artifacts) {
  console.error("usage: node notebook.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const STEP_TIMEOUT = 60_000;
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const stdinReader = createInterface({ input: process.stdin });
const stdinLines = stdinReader[Symbol.asyncIterator]();

function log(...args) {
  console.log(`[notebook ${new Date().toISOString().slice(11, 23)}]`, ...args);
}

async function waitFor(page, what, fn, arg) {
  try {
    await page.waitForFunction(fn, arg, { timeout: STEP_TIMEOUT, polling: 50 });
  } catch (err) {
    throw new Error(`waiting for ${what}: ${err.message.split("\n")[0]}`);
  }
}

async function waitAnnotation(page, id, text) {
  await waitFor(
    page,
    `the annotation of ${id} showing ${JSON.stringify(text)}`,
    ([id, text]) => {
      const el = document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(id)}"]`);
      return !!el && el.textContent.includes(text) && el.dataset.state !== "pending";
    },
    [id, text],
  );
}

// valueBox is the box of an expression's value on screen, once its
// annotation is settled (not pending: a re-run redraws it, and while it is
// redrawn the element can be detached or hidden, with no box).
async function valueBox(page, expr) {
  await waitFor(page, `the value of ${expr} settled`, (expr) => {
    const el = document.querySelector(`.CodeMirror-code .ripple-annotation[data-expr="${CSS.escape(expr)}"]`);
    return !!el && el.dataset.state !== "pending" && !!el.querySelector(".ann-main");
  }, expr);
  const loc = page.locator(`.CodeMirror-code .ripple-annotation[data-expr="${expr}"] .ann-main`);
  const deadline = Date.now() + STEP_TIMEOUT;
  for (;;) {
    const box = await loc.boundingBox();
    if (box) return box;
    if (Date.now() > deadline) throw new Error(`the value of ${expr} has no box on the page`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function cm(page, fn, arg) {
  return page.evaluate(([src, arg]) => new Function("cm", "arg", src)(document.querySelector(".CodeMirror").CodeMirror, arg), [fn, arg]);
}

// visible reports whether an element is shown inside the viewport's width.
async function visibleIn(page, selector, width) {
  const box = await page.locator(selector).first().boundingBox();
  return !!box && box.width > 0 && box.x >= 0 && box.x + box.width <= width + 1;
}

async function steps(page) {
  log("open the page: main.py has no main, so it runs as a script");
  await page.goto(pageURL);
  await waitAnnotation(page, "main:__main__/total", "10");
  const header = await page.textContent("#python");
  if (!/^python 3\.\d+\.\d+ at \/usr\/bin\/python3/.test(header)) throw new Error(`the header names ${JSON.stringify(header)}, want the interpreter`);
  log("header:", header);

  log("output under its statement (a print in a loop)");
  await waitFor(page, "the loop's output under it", () =>
    [...document.querySelectorAll(".ripple-cell .cell-text")].some((el) => el.textContent.includes("fruit apple\nfruit pear\nfruit plum")));
  const pane = await page.textContent("#output");
  if (!pane.includes("fruit plum")) throw new Error(`the output pane lacks the run's output: ${JSON.stringify(pane)}`);

  log("plt.show(): the plot inline, under its statement");
  await waitFor(page, "an inline PNG under plt.show()", () =>
    [...document.querySelectorAll(".ripple-cell .cell-display img")].some((img) => img.src.startsWith("data:image/png;base64,") && img.naturalWidth > 100));

  log("the DataFrame as a table (ripple:display in the visualization pane)");
  await page.locator('.CodeMirror-code .ripple-annotation[data-expr="main:__main__/df"] .ann-main').click();
  await waitFor(page, "a table in a sandboxed iframe", () => {
    const f = document.querySelector("#viz-view iframe.cell-html");
    return !!f && f.getAttribute("sandbox") === "allow-scripts" && f.dataset.loads === "1";
  });
  const vizFrame = await (await page.$("#viz-view iframe.cell-html")).contentFrame();
  await vizFrame.waitForFunction(() => !!document.querySelector("table") && document.body.textContent.includes("pear"), null, { timeout: STEP_TIMEOUT });

  log("a tuple holding a figure (fig, ax) shows the figure");
  await page.locator('.CodeMirror-code .ripple-annotation[data-expr="main:__main__/pair"] .ann-main').click();
  await waitFor(page, "the figure in the visualization pane", () =>
    [...document.querySelectorAll("#viz-view img")].some((img) => img.src.startsWith("data:image/png;base64,") && img.naturalWidth > 100));

  log("a click right of a line's end puts the cursor on that line");
  // A short line, and one whose value runs past the editor's right edge.
  for (const [start, expr] of [["total =", "main:__main__/total"], ["df =", "main:__main__/df"]]) {
    const line = await cm(page, `return cm.getValue().split('\\n').findIndex((l) => l.startsWith(${JSON.stringify(start)}))`);
    const box = await valueBox(page, expr);
    // The line's own row: a long line's value is under it (values stay in
    // view), a short one's beside it.
    const lineBox = await page.locator(".CodeMirror-line").filter({ hasText: start }).first().boundingBox();
    const y = lineBox.y + lineBox.height / 2;
    const editorBox = await page.locator(".CodeMirror").boundingBox();
    // Between the line's text and its value widget, and right of the widget.
    const right = editorBox.x + editorBox.width - 24; // left of the scrollbar
    const xs = [box.x - 12];
    if (box.x + box.width + 12 < right) xs.push((box.x + box.width + right) / 2);
    for (const x of xs) {
      await cm(page, "cm.setCursor({line: 0, ch: 0}); cm.scrollTo(0, null)");
      await page.mouse.click(x, y);
      const cur = await cm(page, "return cm.getCursor()");
      if (cur.line !== line) throw new Error(`a click at x=${Math.round(x)} right of line ${line + 1}'s end put the cursor on line ${cur.line + 1}`);
      // The cursor goes at the text's end, left of the value: the editor
      // does not scroll sideways to show it past the value widget.
      const scroll = await cm(page, "return cm.getScrollInfo()");
      if (scroll.left !== 0) throw new Error(`a click at x=${Math.round(x)} right of line ${line + 1}'s end scrolled the editor ${scroll.left}px sideways (width ${scroll.width}, client ${scroll.clientWidth})`);
    }
  }

  log("autosave: an edit is on disk a second after the last keystroke");
  if (!(await page.isChecked("#autosave"))) throw new Error("autosave is not on by default");
  await cm(page, "const i = cm.getValue().split('\\n').findIndex((l) => l.includes('[3, 5, 2]')); const t = cm.getLine(i); cm.setCursor({line: i, ch: t.indexOf('2]')}); cm.focus()");
  await page.keyboard.press("Delete");
  await page.keyboard.type("4", { delay: 20 });
  await waitAnnotation(page, "main:__main__/total", "12");
  await waitFor(page, "the file state to say saved", () => document.getElementById("file-state").textContent.includes("saved") && document.getElementById("file-state").dataset.state === "clean");
  const disk = readFileSync(join(projectDir, "main.py"), "utf8");
  if (!disk.includes("[3, 5, 4]")) throw new Error(`autosave did not write main.py: ${JSON.stringify(disk)}`);

  log("the Run box takes a call with arguments");
  await page.fill("#entry", "pricing:apply_discount(28.25, percent=10)");
  await page.press("#entry", "Enter");
  await waitAnnotation(page, "pricing:apply_discount/net", "25.425");
  await waitFor(page, "a ▶ beside every top-level def", () => document.querySelectorAll(".ripple-run-def").length === 2);

  for (const [w, h] of [[1440, 900], [1024, 768]]) {
    await page.setViewportSize({ width: w, height: h });
    await page.fill("#entry", "main:__main__");
    await page.press("#entry", "Enter");
    await waitAnnotation(page, "main:__main__/total", "12");
    await waitFor(page, "the plot again", () => !!document.querySelector(".ripple-cell .cell-display img"));
    // Clicked where a person can: the value's visible start. (Playwright's
    // click first scrolls the whole element into view, and at 1024 px
    // the value runs past the editor's edge: the screenshot would show
    // the editor scrolled sideways, which no real click does.)
    await cm(page, "const i = cm.getValue().split('\\n').findIndex((l) => l.startsWith('df =')); cm.scrollTo(0, null); cm.scrollIntoView({line: i, ch: 0}, 40)");
    const dfBox = await valueBox(page, "main:__main__/df");
    const before = await cm(page, "return cm.getScrollInfo().left");
    await page.mouse.click(dfBox.x + 20, dfBox.y + dfBox.height / 2);
    if ((await cm(page, "return cm.getScrollInfo().left")) !== before) throw new Error(`at ${w} px, a click on df's value scrolled the editor sideways`);
    await waitFor(page, "the table again", () => !!document.querySelector("#viz-view iframe.cell-html"));
    for (const sel of ["#entry", "#run-script", "#autosave", "#save", "#interrupt", "#recompute", "#viz-view", "#output", "#file-state"]) {
      if (!(await visibleIn(page, sel, w))) throw new Error(`at ${w} px, ${sel} is not visible`);
    }
    await page.screenshot({ path: join(artifacts, `notebook-${w}.png`) });
    log(`screenshot at ${w} px`);
  }

  log("an unsaved edit survives a server restart");
  await page.uncheck("#autosave");
  await cm(page, "const i = cm.getValue().split('\\n').findIndex((l) => l.startsWith('total =')); cm.replaceRange('unsaved = 1\\n', {line: i, ch: 0}); cm.focus()");
  await waitFor(page, "the file state to say unsaved", () => document.getElementById("file-state").dataset.state === "dirty");
  await waitAnnotation(page, "main:__main__/unsaved", "1");
  // The page goes before the server stops: left open, it would reconnect
  // to the new server (same address) and send its unsaved text there
  // before the new page asks, and nothing would be left to offer.
  await page.evaluate(() => window.addEventListener("beforeunload", (e) => e.stopImmediatePropagation(), { capture: true }));
  const page2 = await page.context().newPage();
  await page.close({ runBeforeUnload: false });
  console.log("RESTART");
  const next = await stdinLines.next();
  if (next.done) throw new Error("no page URL after the restart");
  await page2.goto(next.value.trim());
  await waitFor(page2, "the recovered text offered", () =>
    [...document.querySelectorAll(".banner")].some((b) => b.textContent.includes("unsaved changes") && b.textContent.includes("Restore")));
  const offered = readFileSync(join(projectDir, "main.py"), "utf8");
  if (offered.includes("unsaved = 1")) throw new Error("the unsaved edit was written to main.py");
  await page2.locator(".banner .banner-action", { hasText: "Restore" }).click();
  await waitAnnotation(page2, "main:__main__/unsaved", "1");
  // Taken once: the offer is gone, and a new page is not offered it again.
  await waitFor(page2, "the offer gone after Restore", () => ![...document.querySelectorAll(".banner")].some((b) => b.textContent.includes("Restore")));
  // The restored run imports pandas again from scratch: the values that
  // need it come back too (an import the restore cut short once left the
  // kernel unable to import pandas at all).
  await waitAnnotation(page2, "main:__main__/total", "12");
  await page2.screenshot({ path: join(artifacts, "notebook-recovered.png") });
  return page2;
}

async function run() {
  const profile = mkdtempSync(join(tmpdir(), "ripple-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  const problems = [];
  browser.on("page", (p) => p.on("pageerror", (e) => problems.push(`uncaught ${e.message}`)));
  let page = browser.pages()[0] || (await browser.newPage());
  page.on("pageerror", (e) => problems.push(`uncaught ${e.message}`));
  try {
    page = await steps(page);
    if (problems.length) throw new Error(`the page reported errors:\n  ${problems.join("\n  ")}`);
  } catch (err) {
    for (const p of browser.pages()) await p.screenshot({ path: join(artifacts, "notebook-failure.png") }).catch(() => {});
    console.error(`FAIL: ${err.stack || err}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
    stdinReader.close(); // stdin stays open: the test's pipe
  }
}

await run();
