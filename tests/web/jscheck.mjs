// Runs the web client's text and version code (web/static/text.js and
// sha3.js) on inputs from web_test.go, which checks the answers against
// Go's crypto/sha3 and the server's own buffer code.
//
// stdin:  {"hash": [string], "pairs": [[before, after]]}
// stdout: {"hash": [hex], "pairs": [{"edit": TextEdit|null, "version": hex,
//          "applied": string}]}

import { version } from "../../web/static/sha3.js";
import { applyEdits, diff } from "../../web/static/text.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = {
  hash: input.hash.map((s) => version(s)),
  pairs: input.pairs.map(([before, after]) => {
    const edit = diff(before, after);
    return { edit, version: version(after), applied: edit ? applyEdits(before, [edit]) : before };
  }),
};
process.stdout.write(JSON.stringify(out));
