// Values of statements in nested blocks (issue 29) in a real headless
// chromium, driven by inner_test.go (TestBrowserInnerValues):
//
//   node inner.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR
//
// main.py (a script) has a for loop, an if and a try at its top level. The
// statements inside them show their values beside their lines, in the
// value column, like the top-level ones: the loop body's with its last
// value and "×10", the if body's and the try body's with theirs. An edit of
// the loop's range shows the new last value and count, and the if body,
// no longer run, shows nothing. Screenshot: ARTIFACTS_DIR/inner-values.png;
// on a failure inner-failure.png.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { log, waitFor, waitConnected, replaceText, inBrowser } from "./page.mjs";

const [pageURL, projectDir, artifacts] = process.argv.slice(2);
if (!pageURL || !projectDir || !artifacts) {
  console.error("usage: node inner.mjs PAGE_URL PROJECT_DIR ARTIFACTS_DIR");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });

// lineAnnotation returns the annotation beside (or under) the first editor
// line whose code starts with `code` after its indentation: {expr, inner
// (the compound statement's id, for an inner value), count, state, text,
// left (its x in px)}; null when the line has none. Installed in the page
// as window.rippleInner (the page's CSP forbids building functions there).
function lineAnnotation(code) {
  for (const line of document.querySelectorAll(".CodeMirror-code .CodeMirror-line")) {
    const inside = line.querySelector(".ripple-annotation");
    const el = inside || line.parentElement.querySelector(".ripple-annotation-below .ripple-annotation");
    const text = inside ? line.textContent.slice(0, line.textContent.length - inside.textContent.length) : line.textContent;
    if (!text.trimStart().startsWith(code)) continue;
    if (!el) return null;
    return {
      expr: el.dataset.expr,
      inner: el.dataset.inner || "",
      count: el.dataset.count || "",
      state: el.dataset.state,
      text: el.textContent,
      left: Math.round(el.getBoundingClientRect().left),
    };
  }
  return null;
}

// waitLine waits until the line starting with code shows an annotation
// whose fields match want (text: contained; others: equal), or none when
// want is null.
async function waitLine(page, code, want) {
  await waitFor(
    page,
    `the annotation of ${JSON.stringify(code)} to be ${JSON.stringify(want)}`,
    ([code, want]) => {
      const a = window.rippleInner(code);
      if (want === null) return a === null;
      return !!a && Object.entries(want).every(([k, v]) => (k === "text" ? a.text.includes(v) : a[k] === v));
    },
    [code, want],
  );
  return page.evaluate((code) => window.rippleInner(code), code);
}

async function steps(page) {
  log("open the page on main.py: the explicit first run");
  await page.goto(pageURL);
  await waitConnected(page);
  await waitLine(page, "done = ", { state: "computed", text: "285" });

  log("the for loop's body: last values with the iteration count");
  const sq = await waitLine(page, "sq = i * i", { state: "computed", text: "81", count: "10" });
  if (!sq.text.includes("×10")) throw new Error(`sq = i * i shows ${JSON.stringify(sq.text)}, want its count ×10`);
  if (!sq.inner.endsWith("/#1")) throw new Error(`sq's value belongs to ${JSON.stringify(sq.inner)}, want the for statement (#1)`);
  const total = await waitLine(page, "total += sq", { text: "285", count: "10" });
  if (!total.text.includes("×10")) throw new Error(`total += sq shows ${JSON.stringify(total.text)}, want ×10`);

  log("the if body and the try body: their values, no count for one run");
  const big = await waitLine(page, "big = ", { text: "'big 285'", count: "1" });
  if (big.text.includes("×")) throw new Error(`big shows a count for one run: ${JSON.stringify(big.text)}`);
  await waitLine(page, "ratio = total / 3", { text: "95.0", count: "1" });
  await waitLine(page, "ratio = None", null);

  // In the value column, with the top-level values.
  const done = await waitLine(page, "done = ", { text: "285" });
  if (Math.abs(done.left - sq.left) > 2) throw new Error(`inner values at x=${sq.left}, top-level ones at x=${done.left}: not one column`);
  await page.screenshot({ path: join(artifacts, "inner-values.png") });

  log("edit the loop's range: new last values and counts; the if body no longer runs");
  await replaceText(page, "for i in range(10)", "10", "4", { paste: true });
  await waitLine(page, "sq = i * i", { text: "9", count: "4" });
  await waitLine(page, "total += sq", { text: "14", count: "4" });
  await waitLine(page, "big = ", null);
  await waitLine(page, "ratio = total / 3", { text: "4.66" });

  log("a try body whose statement raises: the except body's value shows");
  await replaceText(page, "ratio = total / 3", "3", "0", { paste: true });
  await waitLine(page, "ratio = None", { text: "None", count: "1" });
  await waitLine(page, "ratio = total / 0", null);
}

async function run() {
  await inBrowser("inner", artifacts, {
    viewport: { width: 1280, height: 800 },
    initScript: { content: `window.rippleInner = ${lineAnnotation.toString()};` },
  }, steps);
}

await run();
