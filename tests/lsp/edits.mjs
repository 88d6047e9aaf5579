// edits.mjs: 50 edits on a 200-statement main, keystroke to final hint,
// with vscode-languageserver-protocol, in one of two modes:
//
//   node edits.mjs RIPPLE_BINARY PROJECT_DIR refresh|norefresh
//
// refresh: the client honours workspace/inlayHint/refresh (VS Code): it asks
// for hints after each change and again on each refresh. norefresh: it never
// does (Neovim 0.10, Eglot): it asks once after each change and shows that
// answer. PROJECT_DIR is empty; main.py is written here: statement i is
// `x{i} = x{i-1} + k_i`, so an edit of k_j changes x_j .. x_199.
//
// Each edit changes one k_j (a seeded choice) and is timed from the
// didChange to the first answer showing the final values of x_j and of
// x_199 (on the lines where they end). An answer must never show an old
// value as current: in norefresh mode the one answer is either final or,
// past the server's budget, ⏳ on what the run changes. The next edit waits
// for the final values. It prints one line per edit and then
//   RESULT mode=M edits=50 final=F stale=S p50=Xms p99=Yms
// and exits 1 when an answer was stale or an edit never got its values.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";
import rpc from "vscode-languageserver-protocol/node.js";

const [bin, project, mode] = process.argv.slice(2);
if (!bin || !project || !["refresh", "norefresh"].includes(mode)) {
  console.error("usage: node edits.mjs RIPPLE_BINARY PROJECT_DIR refresh|norefresh");
  process.exit(2);
}
const N = 200, EDITS = 50, deadline = 60_000;
const k = Array.from({ length: N }, (_, i) => (i % 7) + 1);
const line = (i) => (i === 0 ? `    x0 = 1 * ${k[0]}` : `    x${i} = x${i - 1} + ${k[i]}`);
let text = ["def main():", ...k.map((_, i) => line(i)), `    return x${N - 1}`, ""].join("\n");
writeFileSync(path.join(project, "main.py"), text);
const values = () => {
  const v = [];
  k.forEach((ki, i) => v.push(i === 0 ? ki : v[i - 1] + ki));
  return v;
};

const child = spawn(bin, ["lsp", project], { stdio: ["pipe", "pipe", "inherit"] });
const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
let onRefresh = () => {};
conn.onRequest(rpc.InlayHintRefreshRequest.type, () => { onRefresh(); return null; });
conn.onRequest(rpc.CodeLensRefreshRequest.type, () => null);
conn.onNotification(rpc.LogMessageNotification.type, () => {});
conn.onNotification(rpc.ShowMessageNotification.type, (p) => console.log(`message: ${p.message}`));
conn.onNotification(rpc.PublishDiagnosticsNotification.type, () => {});
conn.listen();

const uri = pathToFileURL(path.join(project, "main.py")).href;
const everything = { start: { line: 0, character: 0 }, end: { line: N + 2, character: 0 } };
const label = (h) => (typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join(""));
async function hints() {
  const m = new Map();
  for (const h of await conn.sendRequest(rpc.InlayHintRequest.type, { textDocument: { uri }, range: everything })) m.set(h.position.line, label(h));
  return m;
}
const shows = (l, v) => l === `= ${v}` || l === `≡ ${v}`;
// judge says whether an answer is final for edit j, or stale (an old value
// shown as current on x_j or x_199).
function judge(m, j, v = values()) {
  const lj = m.get(j + 1), last = m.get(N);
  const final = shows(lj, v[j]) && shows(last, v[N - 1]);
  const stale = [[lj, v[j]], [last, v[N - 1]]].some(([l, want]) => l !== undefined && /^[=≡] /.test(l) && !shows(l, want));
  return { final, stale, seen: [lj, last] };
}

await conn.sendRequest(rpc.InitializeRequest.type, {
  processId: process.pid,
  rootUri: pathToFileURL(project).href,
  capabilities: { workspace: { inlayHint: { refreshSupport: mode === "refresh" } } },
});
await conn.sendNotification(rpc.InitializedNotification.type, {});
let version = 1;
await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: "python", version, text } });
async function settle(j, what) {
  const end = Date.now() + deadline;
  for (;;) {
    const r = judge(await hints(), j);
    if (r.final) return;
    if (Date.now() > end) {
      console.log(`FAIL ${mode}: timed out waiting for ${what}: ${JSON.stringify(r.seen)}`);
      child.kill("SIGKILL");
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
await settle(0, "the first run");

let seed = 25;
const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const times = [];
let finals = 0, stales = 0;
let current = -1; // the edit being timed
for (let e = 0; e < EDITS; e++) {
  current = e;
  const j = rand(N);
  const old = `${k[j]}`;
  const at = line(j).length - old.length; // the old text's line
  k[j] = k[j] + 1 + rand(5);
  const start = performance.now();
  version++;
  await conn.sendNotification(rpc.DidChangeTextDocumentNotification.type, {
    textDocument: { uri, version },
    contentChanges: [{ range: { start: { line: j + 1, character: at }, end: { line: j + 1, character: at + old.length } }, text: `${k[j]}` }],
  });
  let got;
  if (mode === "norefresh") {
    const r = judge(await hints(), j); // the one request an editor without refresh makes
    got = r.final ? performance.now() - start : undefined;
    if (r.stale) { stales++; console.log(`STALE edit ${e} (x${j}): ${JSON.stringify(r.seen)}`); }
  } else {
    got = await new Promise((resolve) => {
      let done = false;
      const want = values(); // this edit's: a late answer is judged against it
      const ask = async () => {
        if (done) return;
        const m = await hints();
        // An answer that comes after the next edit is for a newer text
        // (its request waited across that change): editors drop it.
        if (current !== e) return;
        const r = judge(m, j, want);
        if (r.stale) { stales++; console.log(`STALE edit ${e} (x${j}): ${JSON.stringify(r.seen)}`); }
        if (r.final && !done) { done = true; onRefresh = () => {}; resolve(performance.now() - start); }
      };
      onRefresh = () => { ask(); };
      ask();
      setTimeout(() => { if (!done) { done = true; resolve(undefined); } }, deadline);
    });
  }
  if (got !== undefined) { finals++; times.push(got); }
  console.log(`edit ${e}: x${j} -> ${values()[j]}: ${got === undefined ? "not final in the answer" : got.toFixed(1) + " ms"}`);
  await settle(j, `edit ${e}'s values`);
}
times.sort((a, b) => a - b);
const pct = (p) => (times.length ? times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)].toFixed(1) : "NaN");
console.log(`RESULT mode=${mode} edits=${EDITS} final=${finals} stale=${stales} p50=${pct(50)}ms p99=${pct(99)}ms`);
await conn.sendRequest(rpc.ShutdownRequest.type);
await conn.sendNotification(rpc.ExitNotification.type);
await new Promise((r) => child.on("exit", r));
conn.dispose();
process.exit(stales > 0 ? 1 : 0);
