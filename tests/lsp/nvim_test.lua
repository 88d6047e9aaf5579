-- nvim_test.lua drives `ripple lsp` from a real Neovim, headless:
--
--   RIPPLE_BIN=... PROJECT=... nvim --headless -u NONE -i NONE -n -c 'luafile nvim_test.lua'
--
-- Debian's Neovim (0.7.2 in bookworm) predates inlay hints (0.10), so the
-- hints are read with a raw textDocument/inlayHint request, as a plugin
-- would; diagnostics come through vim.diagnostic.get; code lens commands
-- run through workspace/executeCommand. It edits the buffer with
-- nvim_buf_set_text, so Neovim's own client sends the incremental
-- didChange. Neovim 0.7 offers no positionEncodings, so this is the utf-16
-- path. Each check prints one line; the first failure exits with status 1.
local bin, project = os.getenv("RIPPLE_BIN"), os.getenv("PROJECT")
local deadline_ms = 60000

local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

local client_id
local function finish(code)
  if client_id then
    vim.lsp.stop_client(client_id)
    vim.wait(10000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
  end
  vim.cmd((code == 0) and "qa!" or ("cquit " .. code))
end

-- check fails the test unless ok; quiet checks print nothing when they pass.
local function check(ok, what, detail, quiet)
  if not ok then
    out("FAIL nvim: " .. what .. (detail ~= nil and (": " .. vim.inspect(detail, { newline = " ", indent = "" })) or ""))
    finish(1)
    error("unreachable")
  end
  if not quiet then out("ok   nvim: " .. what) end
end

-- untilv polls f until it returns a value (not nil/false) or the deadline.
local function untilv(what, f)
  local stop = vim.loop.now() + deadline_ms
  local last
  while vim.loop.now() < stop do
    last = f()
    if last then return last end
    vim.wait(50)
  end
  check(false, "timed out waiting for " .. what, last)
end

local function request(buf, method, params)
  local res, err = vim.lsp.buf_request_sync(buf, method, params, 10000)
  check(res ~= nil, method .. " answered", err, true)
  local r = res[client_id]
  check(r ~= nil, method .. " answered by ripple", res, true)
  return r.result, r.error
end

local function uri(buf) return vim.uri_from_bufnr(buf) end

-- hints returns line (0-based) -> list of {label, character}.
local function hints(buf)
  local res = request(buf, "textDocument/inlayHint", {
    textDocument = { uri = uri(buf) },
    range = { start = { line = 0, character = 0 }, ["end"] = { line = 1000, character = 0 } },
  }) or {}
  local m = {}
  for _, h in ipairs(res) do
    local l = m[h.position.line] or {}
    table.insert(l, { label = type(h.label) == "string" and h.label or "(parts)", character = h.position.character })
    m[h.position.line] = l
  end
  return m
end

local function first(m, line) return m[line] and m[line][1] and m[line][1].label end

local function lenses(buf)
  return request(buf, "textDocument/codeLens", { textDocument = { uri = uri(buf) } }) or {}
end

local function find_lens(buf, pred)
  for _, l in ipairs(lenses(buf)) do
    if l.command and pred(l) then return l end
  end
end

local function run_command(buf, cmd)
  local _, err = request(buf, "workspace/executeCommand", { command = cmd.command, arguments = cmd.arguments })
  check(err == nil, "command " .. cmd.command .. " ran", err)
end

vim.cmd("edit " .. vim.fn.fnameescape(project .. "/main.py"))
local main = vim.api.nvim_get_current_buf()
client_id = vim.lsp.start_client({
  name = "ripple",
  cmd = { bin, "lsp", "--kernels", "1", project },
  root_dir = project,
  flags = { debounce_text_changes = 0 },
})
check(client_id ~= nil, "ripple lsp started")
vim.lsp.buf_attach_client(main, client_id)
untilv("initialize", function()
  local c = vim.lsp.get_client_by_id(client_id)
  return c and c.initialized
end)
local caps = vim.lsp.get_client_by_id(client_id).server_capabilities
check(caps.positionEncoding == "utf-16", "utf-16 negotiated (Neovim 0.7 offers no positionEncodings)", caps.positionEncoding)

-- First run's hints, the emoji line in utf-16.
local m = untilv("the first run's hints", function()
  local m = hints(main)
  return first(m, 8) == "= 24" and m
end)
check(first(m, 4) == "= 6" and first(m, 5) == "= 12" and first(m, 7) == "= 24", "a = 6, b = 12, d = 24", m)
check(#m[6] == 2 and m[6][1].label == "= '🎉'" and m[6][1].character == 12, "s's hint right after the emoji (utf-16 character 12)", m[6])
check(m[6][2].label == "= 7" and m[6][2].character == 23, "c's hint at the line's end (utf-16 character 23)", m[6])

-- Hover on b of b = double(a): value first, type and what the statement printed.
local hover = request(main, "textDocument/hover", { textDocument = { uri = uri(main) }, position = { line = 5, character = 4 } })
local text = hover and hover.contents and hover.contents.value or ""
check(text:find("^```python\n12\n```") and text:find("builtins.int") and text:find("doubling 6"), "hover shows value first, type and output", text)

-- Typing: d = b * 2 -> d = b * 3 (Neovim sends the incremental change).
vim.api.nvim_buf_set_text(main, 7, 12, 7, 13, { "3" })
m = untilv("d = 36", function()
  local m = hints(main)
  return first(m, 7) == "= 36" and first(m, 8) == "= 36" and m
end)
check(first(m, 4) == "≡ 6" and first(m, 5) == "≡ 12", "a and b from the cache: only d's dependents ran", m)

-- A Panic diagnostic appears and clears.
vim.api.nvim_buf_set_text(main, 7, 4, 7, 13, { "d = b // 0" })
local d = untilv("the ZeroDivisionError diagnostic", function()
  for _, d in ipairs(vim.diagnostic.get(main)) do
    if d.message:find("ZeroDivisionError") then return d end
  end
end)
check(d.lnum == 7 and d.severity == vim.diagnostic.severity.ERROR, "ZeroDivisionError at d's line", d)
vim.api.nvim_buf_set_text(main, 7, 4, 7, 14, { "d = b * 2" })
untilv("the diagnostic to clear", function() return #vim.diagnostic.get(main) == 0 end)
untilv("d = 24 again", function() return first(hints(main), 7) == "= 24" end)
check(true, "the diagnostic cleared, d = 24")

-- A code lens enters double() and goes back.
local enter = find_lens(main, function(l) return l.range.start.line == 5 and l.command.title:find("^enter") end)
check(enter ~= nil, "enter › lens on b = double(a)")
run_command(main, enter.command)
vim.cmd("edit " .. vim.fn.fnameescape(project .. "/helpers.py"))
local helpers = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(helpers, client_id)
untilv("double()'s hints", function()
  local h = first(hints(helpers), 5)
  return h and h:find("12$")
end)
local back = find_lens(helpers, function(l) return l.command.title == "‹ back" end)
check(back ~= nil and back.range.start.line == 3, "‹ back lens on double's def", back)
run_command(helpers, back.command)
untilv("main's hints after back", function()
  local h = first(hints(main), 5)
  return h and h:find("12$")
end)
check(next(hints(helpers)) == nil, "double's hints gone after back")

-- Run slow() from its lens and interrupt it.
local run = find_lens(main, function(l) return l.command.title == "▶ Run" and l.range.start.line == 11 end)
check(run ~= nil, "▶ Run lens on def slow()")
run_command(main, run.command)
local stop = untilv("■ Interrupt", function()
  return find_lens(main, function(l) return l.command.title == "■ Interrupt" end)
end)
run_command(main, stop.command)
untilv("■ Interrupt to go", function()
  return not find_lens(main, function(l) return l.command.title == "■ Interrupt" end)
end)
m = hints(main)
check(first(m, 12) == "= 1" and not (first(m, 13) or ""):find("^="), "x = 1 computed, y not: interrupted", m)

out("PASS nvim")
finish(0)
