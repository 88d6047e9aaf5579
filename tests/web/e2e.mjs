// End-to-end test of ripple's web client in a real headless chromium,
// driven by web_test.go: it starts `ripple serve` on a copy of
// examples/shop and runs
//
//   node e2e.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR
//
// Every step types, clicks and reads the page as a person would; steps wait
// for a condition with a deadline, never for a fixed time. Exit status 0
// means every step passed; on a failure the page is saved as
// ARTIFACTS_DIR/web-failure.png.

import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STEP_TIMEOUT, FLAGS, log, editorText, waitFor, waitAnnotation, waitRunState, waitEditorContains, waitConnected, placeCursor, replaceText, deleteLine } from "./page.mjs";

const [pageURL, projectDir, artifacts] = process.argv.slice(2);
if (!pageURL || !projectDir || !artifacts) {
  console.error("usage: node e2e.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

// ---- the steps ---------------------------------------------------------------

async function run() {
  const profile = mkdtempSync(join(tmpdir(), "ripple-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: FLAGS,
    viewport: { width: 1440, height: 900 },
  });
  const problems = [];
  const watch = (p, name) => {
    p.on("pageerror", (e) => problems.push(`${name}: uncaught ${e.message}`));
    p.on("console", (m) => {
      // The browser's own reports of refused connections are expected in
      // the token and network steps; anything else is the page's fault.
      const network = /^(Failed to load resource|WebSocket connection to)/.test(m.text());
      if (m.type() === "error" && !network) problems.push(`${name}: console error: ${m.text()}`);
    });
  };

  // Every WebSocket of the page goes through this route, which forwards it
  // to the real server untouched and lets the test cut it as a network
  // failure would.
  const sockets = [];
  await browser.routeWebSocket(/\/ws\?token=/, (ws) => {
    const server = ws.connectToServer();
    sockets.push({ ws, server });
  });

  const page = browser.pages()[0] || (await browser.newPage());
  watch(page, "page");
  try {
    await steps(browser, page, sockets);
    if (problems.length) throw new Error(`the page reported errors:\n  ${problems.join("\n  ")}`);
  } catch (err) {
    await page.screenshot({ path: join(artifacts, "web-failure.png") }).catch(() => {});
    const dump = await page
      .evaluate(() => [...document.querySelectorAll(".CodeMirror-code .ripple-annotation")].map((el) => `${el.dataset.expr} ${el.dataset.state} ${el.textContent}`))
      .catch((e) => [e.message]);
    console.error(`annotations shown:\n  ${dump.join("\n  ")}`);
    if (problems.length) console.error(`page errors:\n  ${problems.join("\n  ")}`);
    throw err;
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

async function steps(browser, page, sockets) {
  log("without the token, or with a wrong one, the page says what is wrong");
  const base = pageURL.split("?")[0];
  await page.goto(base);
  await waitFor(page, "the missing-token banner", () => document.getElementById("banners").textContent.includes("has no ?token="));
  await page.goto(`${base}?token=wrong`);
  await waitFor(page, "the refused-token banner", () => document.getElementById("banners").textContent.includes("token in this page's URL was refused"));

  log("open the page");
  await page.goto(pageURL);
  await waitConnected(page);
  const total = await waitAnnotation(page, "main:main/total", { state: "computed", text: "25.1" });
  log("main:main/total shows", JSON.stringify(total));
  await waitRunState(page, "complete");
  const fileList = await page.textContent("#tree");
  for (const f of ["main.py", "shop", "cart.py", "pricing.py"]) {
    if (!fileList.includes(f)) throw new Error(`the file list ${JSON.stringify(fileList)} lacks ${f}`);
  }
  const output = await page.textContent("#output");
  if (!output.includes("total due: 25.1")) throw new Error(`output ${JSON.stringify(output)} lacks the print`);

  log("type an edit: 6 apples -> 16");
  await replaceText(page, 'cart.add(catalog["apple"], 6)', "6", "16");
  await waitAnnotation(page, "main:main/subtotal", { state: "computed", text: "28.25" });

  log("type text after a character outside the BMP (positions count code points)");
  await replaceText(page, 'print(f"total due', 'f"', 'f"🍐 ');
  await placeCursor(page, 'print(f"🍐 total due', "🍐 ");
  await page.keyboard.type("pear-shaped ", { delay: 15 });
  await waitFor(page, "the output to show the edited print", () => document.getElementById("output").textContent.includes("🍐 pear-shaped total due:"));

  log("save with Ctrl-S");
  await page.keyboard.press("Control+s");
  await waitFor(page, "the file to be saved", () => document.getElementById("file-state").dataset.state === "clean");
  const disk = readFileSync(join(projectDir, "main.py"), "utf8");
  if (!disk.includes('cart.add(catalog["apple"], 16)') || !disk.includes('print(f"🍐 pear-shaped total due: {total}")')) {
    throw new Error(`main.py on disk lacks the saved edits:\n${disk}`);
  }

  log("trigger a Panic: percent=1/0");
  await replaceText(page, "apply_discount(subtotal, percent=10)", "10", "1/0", { paste: true });
  const panic = await waitAnnotation(page, "main:main/discounted", { state: "panic", text: "ZeroDivisionError" });
  // The exception ends main's run (PROTOCOL.md 8.1): the statements after
  // it keep their last value, dimmed, saying why.
  const dependent = await waitAnnotation(page, "main:main/total", { state: "unreached", text: "not reached" });
  await waitFor(page, "the reason on the statement after the exception", () => {
    const el = document.querySelector('.CodeMirror-code .ripple-annotation[data-expr="main:main/total"]');
    return el.dataset.reason === "exception" && el.classList.contains("is-dim") && /raised ZeroDivisionError/.test(el.querySelector(".ann-main").title);
  });
  await waitAnnotation(page, "main:main/lines", { state: "cached" });
  await waitRunState(page, "panic");
  await waitFor(page, "the traceback in Problems", () => document.getElementById("problems").textContent.includes("ZeroDivisionError"));
  log("panic:", JSON.stringify(panic), "after it:", JSON.stringify(dependent));
  await replaceText(page, "apply_discount(subtotal, percent=1/0)", "1/0", "10", { paste: true });
  await waitAnnotation(page, "main:main/total", { state: "computed" });

  log("a compile error shows with its location");
  await placeCursor(page, "return total");
  await page.keyboard.press("Enter");
  await page.keyboard.type("oops = (", { delay: 15 });
  const compile = await waitRunState(page, "compileError", "main.py:");
  log("compile error:", JSON.stringify(compile));
  await waitFor(page, "the error line marked in the editor", () => document.querySelector(".ripple-error-line") !== null);
  await deleteLine(page, "oops = (");
  await waitEditorContains(page, "    return total\n");
  await waitRunState(page, "complete");
  if ((await editorText(page)).includes("oops")) throw new Error("the compile error line was not removed");

  log("interrupt a long statement");
  // Inserted after lines = cart.lines(): the statement before it stays
  // cached. (Inserted above the cart.add calls it would renumber them, and a
  // renumbered call that may mutate the catalog's products re-runs the
  // catalog's creation too: the caching rules' conservative side.)
  await placeCursor(page, "lines = cart.lines()");
  await page.keyboard.press("Enter");
  await page.keyboard.insertText('__import__("time").sleep(600)');
  await waitFor(page, "the sleep to be pending or running", () => {
    const el = document.querySelector('.CodeMirror-code .ripple-annotation[data-expr="main:main/#4"]');
    return !!el && (el.dataset.state === "pending" || el.dataset.state === "running");
  });
  await waitRunState(page, "running");
  await waitFor(page, "Interrupt to stand out", () => document.getElementById("interrupt").classList.contains("active"));
  await page.click("#interrupt");
  await waitRunState(page, "interrupted");
  await waitAnnotation(page, "main:main/lines", { state: "cached" });
  await deleteLine(page, '__import__("time").sleep(600)');
  await waitEditorContains(page, "    lines = cart.lines()\n    subtotal = order_total(lines)");
  await waitAnnotation(page, "main:main/total", { text: "30.5" });
  // The statement is gone; "#4" is the print again: 12 statements.
  await waitFor(page, "the 12 statements of main, none pending", () => {
    const shown = [...document.querySelectorAll(".CodeMirror-code .ripple-annotation")];
    return shown.length === 12 && shown.every((el) => el.dataset.state !== "pending");
  });

  log("a second client edits main.py; the first sees the change (text/didChange)");
  const other = await browser.newPage();
  await other.goto(pageURL);
  await waitConnected(other);
  // Its new context's frame is known to the value journal (the first
  // page's run wrote it): the values come back from it, cached.
  await waitAnnotation(other, "main:main/total", { text: "30.5" });
  await replaceText(other, 'cart.add(catalog["coffee"], 1)', "1", "2");
  await waitEditorContains(page, 'cart.add(catalog["coffee"], 2)');
  await waitAnnotation(page, "main:main/subtotal", { state: "computed", text: "46.25" });
  await other.close();

  log("enter a call (LocalCall) and come back through the breadcrumb");
  await page.click('.CodeMirror-code .ripple-annotation[data-expr="main:main/discounted"] .ann-enter');
  await waitAnnotation(page, "shop.pricing:apply_discount/rate", { text: "0.1" });
  await waitAnnotation(page, "shop.pricing:apply_discount/return", { text: "41.63" });
  const crumbs = await page.textContent("#crumbs");
  if (!crumbs.includes("main:main") || !crumbs.includes("shop.pricing:apply_discount")) throw new Error(`breadcrumb ${JSON.stringify(crumbs)}`);
  const shown = await page.textContent("#file-name");
  if (shown !== "shop/pricing.py") throw new Error(`entering apply_discount shows ${shown}, want shop/pricing.py`);
  await page.click(".crumb >> nth=0");
  await waitAnnotation(page, "main:main/total", { text: "49.96" });
  if ((await page.textContent("#file-name")) !== "main.py") throw new Error("popping did not come back to main.py");

  log("attach a visualization: the default shows a list of dicts as a table");
  await page.click('.CodeMirror-code .ripple-annotation[data-expr="main:main/lines"] .ann-main');
  await waitFor(page, "a table of 3 cart lines", () => document.querySelectorAll("#viz-view table.records tbody tr").length === 3);
  const header = await page.textContent("#viz-view table.records thead");
  if (!["sku", "name", "quantity", "amount"].every((c) => header.includes(c))) throw new Error(`table header ${JSON.stringify(header)}`);

  log("modify the visualization expression");
  await page.fill("#viz-code", 'lambda v: [l for l in v if l["quantity"] > 2]');
  await page.click("#viz-attach");
  await waitFor(page, "2 rows after the filter", () => document.querySelectorAll("#viz-view table.records tbody tr").length === 2);

  log("the visualization follows an edit");
  await replaceText(page, 'cart.add(catalog["coffee"], 2)', "2", "3");
  await waitFor(page, "3 rows after the edit", () => document.querySelectorAll("#viz-view table.records tbody tr").length === 3);
  await waitAnnotation(page, "main:main/total", { state: "computed" });
  // catalog re-runs too: the edited call hands one of its products to
  // Cart.add, which keeps it, so the conservative caching rules (PROTOCOL.md
  // 5.3) cannot serve the catalog from the cache. Its value is unchanged.
  await waitAnnotation(page, "main:main/catalog", { text: "Coffee beans" });
  await page.waitForFunction(() => document.getElementById("toasts").children.length === 0, null, { timeout: STEP_TIMEOUT });
  await page.evaluate(() => {
    const cm = document.querySelector(".CodeMirror").CodeMirror;
    cm.scrollTo(0, cm.heightAtLine(12, "local"));
  });
  await page.screenshot({ path: join(artifacts, "web.png") });

  log("Recompute runs every statement again");
  await page.click("#recompute");
  await waitAnnotation(page, "main:main/catalog", { state: "computed" });
  await waitRunState(page, "complete");

  log("a visualization that raises says so");
  await page.fill("#viz-code", "lambda v: v[99]");
  await page.click("#viz-attach");
  await waitFor(page, "the visualization error", () => {
    const s = document.getElementById("viz-status");
    return s.dataset.state === "error" && s.textContent.includes("IndexError");
  });
  await page.fill("#viz-code", "");
  await page.click("#viz-attach");
  // The error leaves the last table in the pane: the modify's answer is
  // the status leaving "error" (a detach before it came was undone by it).
  await waitFor(page, "the table again", () =>
    document.getElementById("viz-status").dataset.state !== "error" &&
    document.querySelectorAll("#viz-view table.records tbody tr").length === 3);

  log("detach the visualization");
  await page.click("#viz-detach");
  await waitFor(page, "the pane to empty", () => document.querySelector("#viz-view").children.length === 0);
  await replaceText(page, 'cart.add(catalog["coffee"], 3)', "3", "5", { paste: true });
  await waitAnnotation(page, "main:main/subtotal", { state: "computed", text: "100.25" });
  if (await page.evaluate(() => document.querySelector("#viz-view").children.length !== 0)) throw new Error("a detached visualization was updated");
  await replaceText(page, 'cart.add(catalog["coffee"], 5)', "5", "3", { paste: true });
  await waitAnnotation(page, "main:main/subtotal", { state: "computed", text: "64.25" });
  await page.click('.CodeMirror-code .ripple-annotation[data-expr="main:main/lines"] .ann-main');
  await waitFor(page, "the table after re-attaching", () => document.querySelectorAll("#viz-view table.records tbody tr").length === 3);

  log("restart the kernel: a banner says so and the values come back");
  await page.click("#restart");
  await waitFor(page, "the kernel banner", () => {
    const b = document.querySelector('.banner[data-key="kernel"]');
    return b && b.textContent.includes("kernel was restarted");
  });
  await waitRunState(page, "complete");
  await waitAnnotation(page, "main:main/total", { state: "computed" });
  await page.click('.banner[data-key="kernel"] .banner-close');
  await waitFor(page, "the kernel banner dismissed", () => !document.querySelector('.banner[data-key="kernel"]'));

  log("the connection drops: the page says so and reconnects with its context");
  const clientId = await page.evaluate(() => sessionStorage.getItem("ripple.clientId"));
  const before = sockets.length;
  for (const s of sockets.splice(0)) {
    s.server.close({ code: 1006 });
    s.ws.close({ code: 1006, reason: "network test" });
  }
  await waitFor(page, "the disconnected state", () => document.getElementById("conn").dataset.state !== "open");
  await waitFor(page, "the disconnected banner", () => !!document.querySelector('.banner[data-key="conn"]'));
  await waitConnected(page);
  if (sockets.length < 1 || before < 1) throw new Error("the page did not open a new WebSocket");
  await waitFor(page, "the context-kept notice", () => document.getElementById("toasts").textContent.includes("the server kept this page's context"));
  await waitAnnotation(page, "main:main/total", { state: "cached" });
  if ((await page.evaluate(() => sessionStorage.getItem("ripple.clientId"))) !== clientId) throw new Error("the client id changed");

  log("edits work after the reconnect");
  await replaceText(page, 'cart.add(catalog["pear"], 3)', "3", "4");
  await waitAnnotation(page, "main:main/subtotal", { state: "computed", text: "65.0" });

  log("a reload comes back as the same client, with its stack and values");
  await page.reload();
  await waitConnected(page);
  await waitAnnotation(page, "main:main/total", {});
  if ((await page.evaluate(() => sessionStorage.getItem("ripple.clientId"))) !== clientId) throw new Error("the client id changed on reload");
  await waitFor(page, "the table after the reload", () => document.querySelectorAll("#viz-view table.records tbody tr").length === 3);

  await page.waitForFunction(() => document.getElementById("toasts").children.length === 0, null, { timeout: STEP_TIMEOUT });
  await page.screenshot({ path: join(artifacts, "web-after-reload.png") });
  log("all steps passed");
}

run().then(
  () => process.exit(0),
  (err) => {
    console.error(`FAIL: ${err.stack || err}`);
    process.exit(1);
  },
);
