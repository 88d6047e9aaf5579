// Debian's classic Notebook (python3-notebook) in Debian's chromium, as a
// person uses it with ripple, driven by tests/jupyter_notebook_test.go:
//
//   node notebook_ui.mjs NOTEBOOK_URL ARTIFACTS_DIR
//
// NOTEBOOK_URL opens demo.ipynb (written by the test; its cells are in
// CELLS below). Steps: pick "Python 3 (ripple)" in Kernel > Change kernel,
// Cell > Run All, see each cell's output (text, a result, a plot), interrupt
// the long last cell with the toolbar's button, Kernel > Restart, then run
// a new cell that prints the values made before the restart and
// %ripple_status: they came back from the journal, not by running the
// cells again (the first cell appends to a log file each time it runs; the
// test reads it). Screenshots of each step go to ARTIFACTS_DIR. Every wait
// is for a condition, with a deadline.
//
// playwright-core is tests/web's (npm ci there; .ci/run does it).

import { chromium } from "../web/node_modules/playwright-core/index.mjs";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [url, artifacts] = process.argv.slice(2);
if (!url || !artifacts) {
  console.error("usage: node notebook_ui.mjs NOTEBOOK_URL ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const STEP = 90_000;
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

function log(...args) {
  console.log(`[notebook-ui ${new Date().toISOString().slice(11, 23)}]`, ...args);
}

async function waitFor(page, what, fn, arg) {
  try {
    await page.waitForFunction(fn, arg, { timeout: STEP, polling: 100 });
  } catch (err) {
    await page.screenshot({ path: join(artifacts, "jupyter-notebook-failed.png") }).catch(() => {});
    throw new Error(`waiting for ${what}: ${err.message.split("\n")[0]}`);
  }
}

// outputOf is the text of cell i's output area.
const outputOf = (i) => {
  const cell = document.querySelectorAll("#notebook-container .cell")[i];
  return cell ? cell.querySelector(".output_wrapper").innerText : "";
};

async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, `jupyter-notebook-${name}.png`), fullPage: true });
  log("screenshot", name);
}

async function menu(page, top, item) {
  await page.click(top);
  await page.click(item);
}

async function kernelIdle(page, what) {
  await waitFor(page, what, () => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&
    Jupyter.notebook.kernel.is_connected() && document.querySelector("#kernel_indicator_icon.kernel_idle_icon") !== null);
}

const browser = await chromium.launch({ executablePath: process.env.RIPPLE_CHROMIUM || "/usr/bin/chromium", args: FLAGS });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => log("page error:", e.message));
  await page.goto(url);
  await kernelIdle(page, "the notebook's first kernel to be idle");
  log("opened with kernel", await page.evaluate(() => Jupyter.notebook.kernel.name));

  // Pick ripple's kernel from the menu.
  await page.click("#kernellink");
  await page.hover("#menu-change-kernel");
  await page.click("#kernel-submenu-ripple");
  await waitFor(page, "the ripple kernel", () => Jupyter.notebook.kernel && Jupyter.notebook.kernel.name === "ripple" &&
    document.querySelector("#kernel_indicator .kernel_indicator_name").textContent.includes("ripple"));
  await kernelIdle(page, "the ripple kernel to be idle");
  await shot(page, "1-kernel-picked");

  // Run all: the last cell runs until interrupted.
  await menu(page, "#celllink", "#run_all_cells");
  await waitFor(page, "the first cells' output", (outputOf) => {
    const out = (i) => eval(outputOf)(i);
    return out(0).includes("made 10 values") && out(1).includes("285") &&
      document.querySelectorAll("#notebook-container .cell")[2].querySelector(".output_png img") !== null &&
      out(3).includes("tick 0");
  }, outputOf.toString());
  await shot(page, "2-run-all");
  log("run all: outputs shown, the long cell runs");

  // Interrupt the long cell with the toolbar button.
  await page.click('button[data-jupyter-action="jupyter-notebook:interrupt-kernel"]');
  await waitFor(page, "KeyboardInterrupt under the long cell", (outputOf) => eval(outputOf)(3).includes("KeyboardInterrupt"),
    outputOf.toString());
  await kernelIdle(page, "the kernel to be idle after the interrupt");
  await shot(page, "3-interrupted");
  log("interrupted");

  // Restart the kernel (Kernel > Restart, confirm).
  await menu(page, "#kernellink", "#restart_kernel");
  await page.click('.modal-dialog button:has-text("Restart")');
  await waitFor(page, "the restart's notice", () => document.querySelector("#notification_kernel") !== null);
  await kernelIdle(page, "the restarted kernel to be idle");
  log("restarted");

  // A new cell reads the values made before the restart.
  await page.evaluate(() => {
    const cell = Jupyter.notebook.insert_cell_at_bottom("code");
    cell.set_text("print('after restart:', total, values[:3])\n%ripple_status");
    Jupyter.notebook.select(Jupyter.notebook.ncells() - 1);
  });
  await page.click('button[data-jupyter-action="jupyter-notebook:run-cell-and-select-next"]');
  const last = await page.evaluate(() => Jupyter.notebook.ncells() - 2);
  await waitFor(page, "the values back after the restart", ([outputOf, i]) => eval(outputOf)(i).includes("restored from the value journal"),
    [outputOf.toString(), last]);
  const text = await page.evaluate(([outputOf, i]) => eval(outputOf)(i), [outputOf.toString(), last]);
  await shot(page, "4-restarted-values-back");
  console.log("AFTER-RESTART " + JSON.stringify(text));
  await page.evaluate(() => Jupyter.notebook.save_checkpoint());
} finally {
  await browser.close();
}
