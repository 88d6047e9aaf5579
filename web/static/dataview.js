// Views of visualization data (the JSON a visualization returned): a
// table for a list of objects, else a foldable JSON tree.

const MAX_ROWS = 1000;
const MAX_ITEMS = 500;

// render returns an element showing data.
export function render(data) {
  if (isRecordList(data)) return table(data);
  const root = document.createElement("div");
  root.className = "json";
  root.append(node(data, 0));
  return root;
}

function isPlainObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// isRecordList: a non-empty list whose items are all objects.
function isRecordList(v) {
  return Array.isArray(v) && v.length > 0 && v.every(isPlainObject);
}

function table(rows) {
  const columns = [];
  const seen = new Set();
  for (const row of rows.slice(0, MAX_ROWS)) {
    for (const k of Object.keys(row)) {
      if (!seen.has(k)) {
        seen.add(k);
        columns.push(k);
      }
    }
  }
  const t = document.createElement("table");
  t.className = "records";
  const head = t.createTHead().insertRow();
  for (const c of columns) {
    const th = document.createElement("th");
    th.textContent = c;
    head.append(th);
  }
  const body = t.createTBody();
  for (const row of rows.slice(0, MAX_ROWS)) {
    const tr = body.insertRow();
    for (const c of columns) {
      const td = tr.insertCell();
      const v = row[c];
      if (v === undefined) continue;
      td.textContent = typeof v === "string" ? v : JSON.stringify(v);
      if (typeof v === "number") td.className = "num";
    }
  }
  const wrap = document.createElement("div");
  wrap.className = "records-wrap";
  const caption = document.createElement("div");
  caption.className = "records-caption";
  caption.textContent = `${rows.length} row${rows.length === 1 ? "" : "s"} × ${columns.length} column${columns.length === 1 ? "" : "s"}`;
  if (rows.length > MAX_ROWS) caption.textContent += ` (first ${MAX_ROWS} shown)`;
  wrap.append(caption, t);
  return wrap;
}

function scalar(v) {
  const el = document.createElement("span");
  if (v === null) {
    el.className = "j-null";
    el.textContent = "null";
  } else if (typeof v === "string") {
    el.className = "j-str";
    el.textContent = JSON.stringify(v);
  } else if (typeof v === "number") {
    el.className = "j-num";
    el.textContent = String(v);
  } else if (typeof v === "boolean") {
    el.className = "j-bool";
    el.textContent = String(v);
  } else {
    el.textContent = String(v);
  }
  return el;
}

function node(v, depth) {
  if (v === null || typeof v !== "object") return scalar(v);
  const isArray = Array.isArray(v);
  const entries = isArray ? v.map((x, i) => [i, x]) : Object.entries(v);
  const details = document.createElement("details");
  details.open = depth < 2;
  const summary = document.createElement("summary");
  summary.textContent = isArray ? `[ ${entries.length} item${entries.length === 1 ? "" : "s"} ]` : `{ ${entries.length} key${entries.length === 1 ? "" : "s"} }`;
  details.append(summary);
  const list = document.createElement("div");
  list.className = "j-children";
  for (const [k, x] of entries.slice(0, MAX_ITEMS)) {
    const row = document.createElement("div");
    row.className = "j-row";
    const key = document.createElement("span");
    key.className = isArray ? "j-index" : "j-key";
    key.textContent = isArray ? `${k}` : `${k}`;
    row.append(key, node(x, depth + 1));
    list.append(row);
  }
  if (entries.length > MAX_ITEMS) {
    const more = document.createElement("div");
    more.className = "j-more";
    more.textContent = `… ${entries.length - MAX_ITEMS} more`;
    list.append(more);
  }
  details.append(list);
  return details;
}
