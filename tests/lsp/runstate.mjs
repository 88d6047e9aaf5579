// runstate.mjs drives `ripple lsp` with vscode-languageserver-protocol
// through what PROTOCOL.md 8 shows in an editor (testdata/runstate):
// statements after one that raised are not reached, naming its line; a
// typed file write is held (⏸ held: …, the statements after it not
// reached) and written only when the ▶ Run lens on it runs; a save runs a
// held statement too; the running statement is marked (▶ running) and an
// interrupt leaves no statement ⏳.
//
//   node runstate.mjs RIPPLE_BINARY PROJECT_DIR
//
// The kernels must not see PROJECT_DIR as temp (run it with a TMPDIR of
// its own: lsp_test.go does). It prints one line per check and exits 1 at
// the first failure.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";
import rpc from "vscode-languageserver-protocol/node.js";

const [bin, project] = process.argv.slice(2);
if (!bin || !project) {
  console.error("usage: node runstate.mjs RIPPLE_BINARY PROJECT_DIR");
  process.exit(2);
}
const deadline = 60_000;

const child = spawn(bin, ["lsp", "--kernels", "1", "--log-level", "debug", project], { stdio: ["pipe", "pipe", "inherit"] });
const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
const seen = { logs: [] };
conn.onRequest(rpc.InlayHintRefreshRequest.type, () => null);
conn.onRequest(rpc.CodeLensRefreshRequest.type, () => null);
conn.onNotification(rpc.LogMessageNotification.type, (p) => seen.logs.push(p.message));
conn.onNotification(rpc.ShowMessageNotification.type, () => {});
conn.onNotification(rpc.PublishDiagnosticsNotification.type, () => {});
conn.listen();

function check(ok, what, detail) {
  if (!ok) {
    console.log(`FAIL runstate: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    child.kill("SIGKILL");
    process.exit(1);
  }
  console.log(`ok   runstate: ${what}`);
}

// until polls an async condition until it returns a truthy value or the
// deadline passes; the value (or the last one seen) is returned.
async function until(what, f) {
  const end = Date.now() + deadline;
  let last;
  for (;;) {
    last = await f();
    if (last) return last;
    if (Date.now() > end) check(false, `timed out waiting for ${what}`, await byLine());
    await new Promise((r) => setTimeout(r, 25));
  }
}

const mainURI = pathToFileURL(path.join(project, "main.py")).href;
const everything = { start: { line: 0, character: 0 }, end: { line: 1000, character: 0 } };
const label = (h) => (typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join(""));
// byLine maps a line of main.py (0-based) to the labels of its hints.
async function byLine() {
  const m = {};
  for (const h of await conn.sendRequest(rpc.InlayHintRequest.type, { textDocument: { uri: mainURI }, range: everything })) {
    (m[h.position.line] ??= []).push(label(h));
  }
  return m;
}
const hintAt = async (line) => (await byLine())[line]?.[0];
// shows: a hint is the value v, computed (=) or from the cache (≡).
const shows = (l, v) => l === `= ${v}` || l === `≡ ${v}`;
const lenses = () => conn.sendRequest(rpc.CodeLensRequest.type, { textDocument: { uri: mainURI } });
const command = (c) => conn.sendRequest(rpc.ExecuteCommandRequest.type, { command: c.command, arguments: c.arguments });

// 1. initialize with a debounce of its own; ripple.run offered.
const init = await conn.sendRequest(rpc.InitializeRequest.type, {
  processId: process.pid,
  rootUri: pathToFileURL(project).href,
  initializationOptions: { ripple: { runDelayMs: 100 } },
  capabilities: { general: { positionEncodings: ["utf-32"] }, workspace: { inlayHint: { refreshSupport: true }, codeLens: { refreshSupport: true } } },
});
check(init.capabilities.executeCommandProvider?.commands?.includes("ripple.run"), "ripple.run offered", init.capabilities.executeCommandProvider);
await conn.sendNotification(rpc.InitializedNotification.type, {});

let text = readFileSync(path.join(project, "main.py"), "utf8");
let version = 1;
await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, { textDocument: { uri: mainURI, languageId: "python", version, text } });
await until("total = 4", async () => (await hintAt(5)) === "= 4");
check(true, "main's first run");

// change replaces (l1, c1)..(l2, c2) with newText, one incremental change.
async function change(l1, c1, l2, c2, newText) {
  const offset = (l, c) => text.split("\n").slice(0, l).reduce((n, s) => n + s.length + 1, 0) + c;
  text = text.slice(0, offset(l1, c1)) + newText + text.slice(offset(l2, c2));
  version++;
  await conn.sendNotification(rpc.DidChangeTextDocumentNotification.type, {
    textDocument: { uri: mainURI, version },
    contentChanges: [{ range: { start: { line: l1, character: c1 }, end: { line: l2, character: c2 } }, text: newText }],
  });
}

// 2. An exception ends the run: the statements after it are not reached,
// naming its line (1-based, as the editor shows it).
await change(4, 9, 4, 9, " // 0"); // n = 3 // 0
await until("n raised", async () => (await hintAt(4))?.startsWith("✗ ZeroDivisionError"));
let lines = await until("total not reached", async () => {
  const m = await byLine();
  return m[5]?.[0] === "∅ not reached: line 5 raised" ? m : null;
});
check(lines[6]?.[0] === "∅ not reached: line 5 raised", "return not reached, naming line 5", lines[6]);
check(!Object.values(lines).flat().some((l) => l.startsWith("⏳")), "no statement left ⏳ after the exception", lines);
await change(4, 9, 4, 14, "");
await until("total = 4 again", async () => shows(await hintAt(5), "4"));
check(true, "fixed: total = 4 again");

// 3. A typed file write is held: the file is not written, the statements
// after it are not reached; the ▶ Run lens on it writes it.
const published = path.join(project, "published.txt");
await change(5, 0, 5, 0, "    open('published.txt', 'w').write(str(n))\n");
lines = await until("the write held", async () => {
  const m = await byLine();
  return m[5]?.[0] === "⏸ held: open('published.txt', 'w')" ? m : null;
});
check(lines[6]?.[0] === "∅ not reached (held at line 6)" && lines[7]?.[0] === "∅ not reached (held at line 6)",
  "total and return not reached (held at line 6)", [lines[6], lines[7]]);
check(!existsSync(published), "published.txt not written by typing");
const run = await until("the ▶ Run lens on the held line", async () =>
  (await lenses()).find((l) => l.range.start.line === 5 && l.command?.title === "▶ Run"));
check(run.command.command === "ripple.run" && /^main:main\//.test(run.command.arguments[0]), "the lens runs ripple.run on the held statement", run.command);
check(!existsSync(published), "published.txt still absent before the lens's command");
await command(run.command);
await until("published.txt written", async () => existsSync(published));
check(true, "published.txt written by the lens's command");
await until("total = 4 after the explicit run", async () => shows(await hintAt(6), "4"));
check(!(await lenses()).some((l) => l.command?.title === "▶ Run" && l.range.start.line === 5), "the ▶ Run lens on the write is gone");

// 4. A save runs a held statement: a typed write is held (or the one
// above it, when the kernel runs that again), the save runs it explicitly
// and the rest of the function after it.
const saved = path.join(project, "saved.txt");
await change(6, 0, 6, 0, "    open('saved.txt', 'w').write('x')\n");
await until("a typed-in run held", async () => {
  const m = await byLine();
  return m[5]?.[0]?.startsWith("⏸ held: ") || m[6]?.[0] === "⏸ held: open('saved.txt', 'w')";
});
check(!existsSync(saved), "saved.txt not written by typing");
await conn.sendNotification(rpc.DidSaveTextDocumentNotification.type, { textDocument: { uri: mainURI } });
await until("saved.txt written after the save", async () => existsSync(saved));
await until("total = 4 after the save", async () => shows(await hintAt(7), "4"));
check(true, "didSave ran the held statement");

// 5. The running statement is marked; an interrupt leaves none ⏳.
// slow() is now at lines 11-15 (def at 11).
const slow = (await lenses()).find((l) => l.command?.title === "▶ Run" && l.command.arguments[0] === "main:slow");
check(slow && slow.range.start.line === 11, "▶ Run lens on def slow()", slow);
await command(slow.command);
lines = await until("the sleep marked running", async () => {
  const m = await byLine();
  return m[13]?.includes("▶ running") ? m : null;
});
check(lines[14]?.includes("⏳"), "b waits (⏳) while the sleep runs", lines[14]);
const stop = await until("the ■ Interrupt lens", async () => (await lenses()).find((l) => l.command?.title === "■ Interrupt"));
await command(stop.command);
lines = await until("b not reached (interrupted)", async () => {
  const m = await byLine();
  return m[14]?.includes("∅ not reached (interrupted)") ? m : null;
});
const left = Object.entries(lines).filter(([, ls]) => ls.some((l) => l.startsWith("⏳") || l.startsWith("▶")));
check(left.length === 0, "no statement left ⏳ or running after the interrupt", left);

// 6. Shutdown and exit.
await conn.sendRequest(rpc.ShutdownRequest.type);
await conn.sendNotification(rpc.ExitNotification.type);
const code = await new Promise((r) => child.on("exit", (c) => r(c)));
check(code === 0, "ripple lsp exits 0 after shutdown and exit", code);
conn.dispose();
console.log("PASS runstate");
