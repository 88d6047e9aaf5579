// client.mjs drives `ripple lsp` with vscode-languageserver-protocol, the
// library VS Code's own LSP client is built on, through the editor
// scenario (the one nvim_test.lua runs too): first run's hints, an edit that re-runs only its dependents, a
// Panic diagnostic that appears and clears, a code lens that enters a call
// and goes back, an interrupt (with work-done progress, leaving no
// statement ⏳), a kernel restart,
// bad commands, and an emoji before a statement on the same line.
//
//   node client.mjs RIPPLE_BINARY PROJECT_DIR ENCODING
//
// ENCODING is utf-32 (the client offers utf-32 and utf-16; the server must
// pick utf-32) or utf-16 (the client offers nothing; LSP's default). It
// prints one line per check and exits 1 at the first failure.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";
import rpc from "vscode-languageserver-protocol/node.js";

const [bin, project, encoding] = process.argv.slice(2);
if (!bin || !project || !["utf-16", "utf-32"].includes(encoding)) {
  console.error("usage: node client.mjs RIPPLE_BINARY PROJECT_DIR utf-16|utf-32");
  process.exit(2);
}
const deadline = 60_000;

const child = spawn(bin, ["lsp", "--kernels", "1", "--log-level", "debug", project], { stdio: ["pipe", "pipe", "inherit"] });
const conn = rpc.createProtocolConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));

// What the server sent us.
const seen = { refreshes: 0, lensRefreshes: 0, logs: [], shows: [], diagnostics: new Map(), progress: [], creates: [] };
conn.onRequest(rpc.InlayHintRefreshRequest.type, () => { seen.refreshes++; return null; });
conn.onRequest(rpc.CodeLensRefreshRequest.type, () => { seen.lensRefreshes++; return null; });
conn.onRequest(rpc.WorkDoneProgressCreateRequest.type, (p) => { seen.creates.push(p.token); return null; });
conn.onNotification(rpc.LogMessageNotification.type, (p) => seen.logs.push(p.message));
conn.onNotification(rpc.ShowMessageNotification.type, (p) => seen.shows.push(p.message));
conn.onNotification(rpc.PublishDiagnosticsNotification.type, (p) => seen.diagnostics.set(p.uri, p.diagnostics));
conn.onProgress(rpc.WorkDoneProgress.type, "*", () => {});
conn.onNotification("$/progress", (p) => seen.progress.push(p));
conn.listen();

function check(ok, what, detail) {
  if (!ok) {
    console.log(`FAIL ${encoding}: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    child.kill("SIGKILL");
    process.exit(1);
  }
  console.log(`ok   ${encoding}: ${what}`);
}

// until polls an async condition until it returns a truthy value or the
// deadline passes; the value (or the last one seen) is returned.
async function until(what, f) {
  const end = Date.now() + deadline;
  let last;
  for (;;) {
    last = await f();
    if (last) return last;
    if (Date.now() > end) check(false, `timed out waiting for ${what}`, last);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const uriOf = (rel) => pathToFileURL(path.join(project, rel)).href;
const mainURI = uriOf("main.py");
const helpersURI = uriOf("helpers.py");
const everything = { start: { line: 0, character: 0 }, end: { line: 1000, character: 0 } };
const hints = (uri) => conn.sendRequest(rpc.InlayHintRequest.type, { textDocument: { uri }, range: everything });
const lenses = (uri) => conn.sendRequest(rpc.CodeLensRequest.type, { textDocument: { uri } });
const label = (h) => (typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join(""));
// byLine maps a line to the labels of its hints, left to right.
async function byLine(uri) {
  const m = new Map();
  for (const h of await hints(uri)) {
    const l = m.get(h.position.line) ?? [];
    l.push({ label: label(h), character: h.position.character });
    m.set(h.position.line, l);
  }
  return m;
}
const command = (c) => conn.sendRequest(rpc.ExecuteCommandRequest.type, { command: c.command, arguments: c.arguments });

// utf-16 counts the emoji as two units; utf-32 as one code point.
const wide = encoding === "utf-16" ? 1 : 0;

// 1. initialize: the encoding negotiated.
const offered = encoding === "utf-32" ? ["utf-32", "utf-16"] : undefined;
const init = await conn.sendRequest(rpc.InitializeRequest.type, {
  processId: process.pid,
  rootUri: pathToFileURL(project).href,
  capabilities: {
    general: offered ? { positionEncodings: offered } : {},
    workspace: { inlayHint: { refreshSupport: true }, codeLens: { refreshSupport: true } },
    window: { workDoneProgress: true },
  },
});
check(init.capabilities.positionEncoding === encoding, `positionEncoding negotiated is ${encoding}`, init.capabilities.positionEncoding);
check(init.capabilities.inlayHintProvider && init.capabilities.codeLensProvider && init.capabilities.hoverProvider, "hints, lenses and hover offered");
check(init.capabilities.textDocumentSync.change === 2, "incremental sync offered");
await conn.sendNotification(rpc.InitializedNotification.type, {});

let text = readFileSync(path.join(project, "main.py"), "utf8");
let version = 1;
await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, {
  textDocument: { uri: mainURI, languageId: "python", version, text },
});

// 2. First run: main:main starts when the project opens.
let lines = await until("the first run's hints", async () => {
  const m = await byLine(mainURI);
  return m.get(8)?.[0]?.label === "= 24" ? m : null;
});
check(lines.get(4)[0].label === "= 6", "a = 6", lines.get(4));
check(lines.get(5)[0].label === "= 12", "b = 12", lines.get(5));
check(lines.get(7)[0].label === "= 24", "d = 24", lines.get(7));
// Line 6 is `    s = "🎉"; c = a + 1`: two statements, an emoji before the second.
const emojiLine = lines.get(6);
check(emojiLine.length === 2, "two hints on the emoji line", emojiLine);
check(emojiLine[0].label === "= '🎉'" && emojiLine[0].character === 11 + wide, `s's hint right after "🎉" (character ${11 + wide})`, emojiLine[0]);
check(emojiLine[1].label === "= 7" && emojiLine[1].character === 22 + wide, `c's hint at the line's end (character ${22 + wide})`, emojiLine[1]);
await until("workspace/inlayHint/refresh", async () => seen.refreshes > 0);
check(true, "workspace/inlayHint/refresh sent");
// The output goes its own way (batched): it may come after the values.
await until("the run's output", async () => seen.logs.some((l) => l.includes("doubling 6")));
check(seen.logs.filter((l) => l.includes("doubling 6")).length === 1, "the run's output as window/logMessage", seen.logs);

// Hover on b (the target of b = double(a)): the value first, then type and output.
const hover = await conn.sendRequest(rpc.HoverRequest.type, { textDocument: { uri: mainURI }, position: { line: 5, character: 4 } });
const hoverText = hover?.contents?.value ?? "";
check(hoverText.startsWith("```python\n12\n```") && hoverText.includes("builtins.int") && hoverText.includes("doubling 6"), "hover: preview first, type and output", hoverText);
// On double (a name of the right-hand side) another server answers: ripple does not.
const onName = await conn.sendRequest(rpc.HoverRequest.type, { textDocument: { uri: mainURI }, position: { line: 5, character: 9 } });
check(onName === null, "no hover on a name of the right-hand side", onName);

// change sends one incremental change at (line, from..to) in the
// editor's encoding (positions here are left of the emoji or on other
// lines, so they are the same in both).
async function change(line, from, to, newText) {
  const lines = text.split("\n");
  lines[line] = lines[line].slice(0, from) + newText + lines[line].slice(to);
  text = lines.join("\n");
  version++;
  await conn.sendNotification(rpc.DidChangeTextDocumentNotification.type, {
    textDocument: { uri: mainURI, version },
    contentChanges: [{ range: { start: { line, character: from }, end: { line, character: to } }, text: newText }],
  });
}

// 3. An edit re-runs only its dependents: d (and return) computed, the rest cached.
await change(7, 12, 13, "3"); // d = b * 3
lines = await until("d = 36 after the edit", async () => {
  const m = await byLine(mainURI);
  return m.get(7)?.[0]?.label === "= 36" && m.get(8)?.[0]?.label === "= 36" ? m : null;
});
check(lines.get(4)[0].label === "≡ 6" && lines.get(5)[0].label === "≡ 12", "a and b from the cache", [lines.get(4), lines.get(5)]);
check(lines.get(6)[0].label === "≡ '🎉'" && lines.get(6)[1].label === "≡ 7", "s and c from the cache", lines.get(6));
check(lines.get(6)[1].character === 22 + wide, "c's hint still right of the emoji", lines.get(6));
check(seen.logs.filter((l) => l.includes("doubling 6")).length === 1, "double(a) did not run again (no second output)", seen.logs);

// 3b. ripple.recompute runs everything again: double(a) prints again and
// every value is computed, none cached.
await conn.sendRequest(rpc.ExecuteCommandRequest.type, { command: "ripple.recompute", arguments: [] });
await until("double(a) to run again", async () => seen.logs.filter((l) => l.includes("doubling 6")).length === 2);
lines = await until("every value computed", async () => {
  const m = await byLine(mainURI);
  return m.get(4)?.[0]?.label === "= 6" && m.get(7)?.[0]?.label === "= 36" ? m : null;
});
check(true, "ripple.recompute ran every statement again");

// 4. A Panic diagnostic appears, then clears when fixed.
await change(7, 4, 13, "d = b // 0");
const diag = await until("the ZeroDivisionError diagnostic", async () => {
  const ds = seen.diagnostics.get(mainURI) ?? [];
  return ds.find((d) => d.message.includes("ZeroDivisionError"));
});
check(diag.range.start.line === 7 && diag.severity === 1, "the Panic is an error at d's line", diag);
check((diag.relatedInformation ?? []).some((r) => r.location.uri === mainURI && r.location.range.start.line === 7), "its traceback points at the line in the project", diag.relatedInformation);
lines = await byLine(mainURI);
check(lines.get(7)[0].label.startsWith("✗ ZeroDivisionError"), "d's hint shows the exception", lines.get(7));
await change(7, 4, 14, "d = b * 2");
await until("the diagnostic to clear", async () => (seen.diagnostics.get(mainURI) ?? [1]).length === 0);
lines = await until("d = 24 again", async () => {
  const m = await byLine(mainURI);
  return m.get(7)?.[0]?.label === "= 24" ? m : null;
});
check(true, "the diagnostic cleared and d = 24");

// 4a. An exception raised inside a project function the statement calls:
// the diagnostic is at the statement, its traceback's project frames are
// related locations (here the line in helpers.py that raised).
await change(5, 15, 16, "None"); // b = double(None)
const deep = await until("the TypeError diagnostic", async () => {
  const ds = seen.diagnostics.get(mainURI) ?? [];
  return ds.find((d) => d.message.includes("TypeError"));
});
check(deep.range.start.line === 5, "the TypeError is at b's line in main.py", deep.range);
check((deep.relatedInformation ?? []).some((r) => r.location.uri === helpersURI && r.location.range.start.line === 5),
  "its traceback points at the line of helpers.py that raised", deep.relatedInformation);
await change(5, 15, 19, "a");
await until("the TypeError to clear", async () => (seen.diagnostics.get(mainURI) ?? [1]).length === 0);
await until("b = 12 again", async () => (await byLine(mainURI)).get(5)?.[0]?.label.endsWith(" 12"));
check(true, "the TypeError cleared");

// 4b. A compile error is a diagnostic at its line, cleared when fixed.
await change(7, 4, 13, "d = b *");
const syntax = await until("the SyntaxError diagnostic", async () => {
  const ds = seen.diagnostics.get(mainURI) ?? [];
  return ds.find((d) => d.range.start.line === 7);
});
check(syntax.severity === 1, "the compile error is an error at d's line", syntax);
await change(7, 4, 11, "d = b * 2");
await until("the compile error to clear", async () => (seen.diagnostics.get(mainURI) ?? [1]).length === 0);
await until("d = 24 after the fix", async () => (await byLine(mainURI)).get(7)?.[0]?.label.endsWith(" 24"));
check(true, "the compile error cleared");

// 4c. Hints move with the lines at once: a line inserted above (that does
// not compile, so no run follows) pushes them down, removing it brings
// them back.
async function changeRange(l1, c1, l2, c2, newText) {
  const offset = (l, c) => text.split("\n").slice(0, l).reduce((n, s) => n + s.length + 1, 0) + c;
  text = text.slice(0, offset(l1, c1)) + newText + text.slice(offset(l2, c2));
  version++;
  await conn.sendNotification(rpc.DidChangeTextDocumentNotification.type, {
    textDocument: { uri: mainURI, version },
    contentChanges: [{ range: { start: { line: l1, character: c1 }, end: { line: l2, character: c2 } }, text: newText }],
  });
}
await changeRange(4, 0, 4, 0, "    (\n");
lines = await until("the hints one line down", async () => {
  const m = await byLine(mainURI);
  return m.get(5)?.[0]?.label.endsWith(" 6") && m.get(6)?.[0]?.label.endsWith(" 12") ? m : null;
});
check(lines.get(7)?.[1]?.character === 22 + wide, "the emoji line's second hint moved down with it", lines.get(7));
await changeRange(4, 0, 5, 0, "");
await until("the hints back in place", async () => (await byLine(mainURI)).get(4)?.[0]?.label.endsWith(" 6"));
check(true, "hints back in place after the line is removed");

// 5. A code lens enters the call of double() and goes back.
const enter = (await lenses(mainURI)).find((l) => l.command?.title.startsWith("enter ›") && l.range.start.line === 5);
check(enter && enter.command.command === "ripple.enter", "enter › lens on b = double(a)", enter);
await command(enter.command);
await conn.sendNotification(rpc.DidOpenTextDocumentNotification.type, {
  textDocument: { uri: helpersURI, languageId: "python", version: 1, text: readFileSync(path.join(project, "helpers.py"), "utf8") },
});
const inner = await until("double()'s hints", async () => {
  const m = await byLine(helpersURI);
  return m.get(5)?.[0]?.label.endsWith("12") ? m : null;
});
check(inner.get(6)?.[0]?.label.endsWith("12"), "return m = 12 inside double", inner.get(6));
check((await hints(mainURI)).length === 0, "main's hints are gone while inside double");
const back = (await lenses(helpersURI)).find((l) => l.command?.title === "‹ back");
check(back && back.range.start.line === 3, "‹ back lens on double's def line", back);
await command(back.command);
await until("main's hints after back", async () => (await byLine(mainURI)).get(5)?.[0]?.label.endsWith("12"));
check((await hints(helpersURI)).length === 0, "double's hints are gone after back");

// 6. Run slow() from its lens, see progress, interrupt it.
const run = (await lenses(mainURI)).find((l) => l.command?.title === "▶ Run" && l.range.start.line === 11);
check(run && run.command.arguments[0] === "main:slow", "▶ Run lens on def slow()", run);
await command(run.command);
const stop = await until("the ■ Interrupt lens", async () => (await lenses(mainURI)).find((l) => l.command?.title === "■ Interrupt"));
check(stop.range.start.line === 11, "■ Interrupt on slow's def line", stop);
await until("work-done progress to begin", async () => seen.progress.some((p) => p.value?.kind === "begin"));
await command(stop.command);
await until("the interrupted run's end", async () => seen.logs.some((l) => l.includes("main:slow") && l.includes("interrupted")));
await until("work-done progress to end", async () => seen.progress.some((p) => p.value?.kind === "end"));
check(seen.creates.length > 0, "window/workDoneProgress/create requested", seen.creates);
const slowHints = await byLine(mainURI);
check(slowHints.get(12)?.[0]?.label === "= 1", "x = 1 computed before the interrupt", slowHints.get(12));
check(!slowHints.get(13)?.[0]?.label.startsWith("="), "y has no value", slowHints.get(13));
const waiting = [12, 13, 14].flatMap((l) => slowHints.get(l) ?? []).filter((h) => /^[⏳▶]/.test(h.label));
check(waiting.length === 0, "no statement of slow() left ⏳ or running after the interrupt", waiting);
check(slowHints.get(14)?.[0]?.label === "∅ not reached (interrupted)", "return y not reached (interrupted)", slowHints.get(14));
await until("■ Interrupt to go", async () => !(await lenses(mainURI)).some((l) => l.command?.title === "■ Interrupt"));

// 6b. ▶ Run as script runs the module's top level (its defs and imports,
// whose values are None, get no hint).
const script = (await lenses(mainURI)).find((l) => l.command?.title === "▶ Run as script");
check(script && script.range.start.line === 0 && script.command.arguments[0] === "main:__main__", "▶ Run as script lens on line 0", script);
await command(script.command);
const top = await until("the script's hints", async () => {
  const m = await byLine(mainURI);
  return m.get(17)?.[0]?.label === "= 42" ? m : null;
});
check(!top.get(0) && !top.get(3)?.some((h) => h.label === "= None"), "no hint on the import and def lines", [top.get(0), top.get(3)]);
check(top.get(5)?.[0]?.label.endsWith("12"), "main's own hints are still shown", top.get(5));

// 6c. A run that kills its kernel is shown as an error message.
const crash = (await lenses(mainURI)).find((l) => l.command?.title === "▶ Run" && l.command.arguments[0] === "main:crash");
check(crash && crash.range.start.line === 20, "▶ Run lens on def crash()", crash);
await command(crash.command);
const died = await until("the kernel death message", async () => seen.shows.find((m) => m.includes("main:crash") && m.includes("kernelDied")));
check(/exit|status|3/.test(died), "the message names how the kernel died", died);

// 6d. The crashed entry is parked: one pop-up, a lens saying why.
check(seen.shows.filter((m) => m.includes("main:crash")).length === 1, "one pop-up for the crash", seen.shows);
// The entry is parked (its context destroyed) right after the pop-up,
// then lenses are refreshed: ask until the lens is there.
const parked = await until("the ⚠ stopped lens", async () => (await lenses(mainURI)).find((l) => l.command?.title.startsWith("⚠ stopped")));
check(parked && parked.range.start.line === 20, "⚠ stopped lens on def crash()", parked);

// 7. Restarting the kernels is logged (the pop-ups are for failures).
await conn.sendRequest(rpc.ExecuteCommandRequest.type, { command: "ripple.restartKernel", arguments: [] });
await until("the kernel restart message", async () => seen.logs.some((m) => m.includes("restarted")));
check(true, "kernel restart logged as window/logMessage");

// 8. Bad input: precise errors, and the server keeps serving.
async function refused(params, code, words) {
  try {
    await conn.sendRequest(rpc.ExecuteCommandRequest.type, params);
  } catch (e) {
    check(e.code === code && words.every((w) => e.message.includes(w)), `${params.command} refused with ${code} naming ${words}`, { code: e.code, message: e.message });
    return;
  }
  check(false, `${params.command} ${JSON.stringify(params.arguments)} should fail`);
}
await refused({ command: "ripple.nope", arguments: [] }, -32602, ["ripple.nope"]);
await refused({ command: "ripple.enter", arguments: ["x"] }, -32602, ["ripple.enter", "two arguments"]);
await refused({ command: "ripple.back", arguments: ["no-such-context"] }, -32602, ["no-such-context"]);
await refused({ command: "ripple.run", arguments: [7] }, -32602, ["argument 1"]);
await refused({ command: "ripple.run", arguments: ["nosuchmodule:main"] }, 2005, ["nosuchmodule"]);
await until("hints still served", async () => (await byLine(mainURI)).get(5)?.[0]?.label.endsWith("12"));

// 9. Shutdown and exit: status 0.
await conn.sendRequest(rpc.ShutdownRequest.type);
await conn.sendNotification(rpc.ExitNotification.type);
const code = await new Promise((r) => child.on("exit", (c) => r(c)));
check(code === 0, "ripple lsp exits 0 after shutdown and exit", code);
conn.dispose();
console.log(`PASS ${encoding}`);
