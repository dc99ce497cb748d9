-- The VS Code scenario through Neovim's built-in LSP client (Neovim 0.7, Debian's package), as a second,
-- independent client: open the example, wait for the finding's diagnostic, hover it (preconditions with
-- verdicts), list code actions (the fix with its verification state), resolve and apply the fix, save, and read
-- the server's `warpwise/status`. Every wait is `vim.wait` on client state, never a fixed sleep.
--
-- Run by scripts/e2e/nvim.sh, which sets:
--   WARPWISE_PYTHON   the interpreter with warpwise installed
--   WARPWISE_FILE     the example file (a copy in a temporary workspace)
--   WARPWISE_REPORT   where to write the JSON report
--   WARPWISE_LOG      where to write what the client saw (a transcript for the docs)

local python = assert(os.getenv("WARPWISE_PYTHON"))
local file = assert(os.getenv("WARPWISE_FILE"))
local report_path = assert(os.getenv("WARPWISE_REPORT"))
local log_path = assert(os.getenv("WARPWISE_LOG"))

local SCENARIO = {
  line = 26, -- 1-based, as in the VS Code test
  card = "double-literal-promotion",
  message = "`0.5` is a `double`",
  -- The quiet default (issue 18): no predicted gain of 1.1x or more, so the finding is a hint (LSP severity 4),
  -- and its hover says why.
  severity = 4,
  hover_why = "Shown as a hint",
  fix_title = "^Write `0%.5f` — ",
  fix_state = { "not yet verified", "verified [%d.]+x on .+", "unverified" },
  line_after_fix = "    x[i] = (x[i] - mean[0]) * 0.5f;",
}
local TIMEOUT = 60000

local steps = {}
local transcript = {}
local function note(text)
  for line in (text .. "\n"):gmatch("(.-)\n") do
    table.insert(transcript, line)
  end
end

local function step(name, body)
  local started = vim.loop.hrtime()
  local ok, detail = pcall(body)
  local status = ok and "pass" or "fail"
  detail = detail and tostring(detail) or ""
  table.insert(steps, { name = name, status = status, detail = detail, seconds = (vim.loop.hrtime() - started) / 1e9 })
  io.stdout:write(string.format("[e2e-nvim] %s %s: %s\n", ok and "PASS" or "FAIL", name, detail))
  return ok
end

local function waiting(name, why)
  table.insert(steps, { name = name, status = "waiting", detail = why, seconds = 0 })
  io.stdout:write(string.format("[e2e-nvim] WAIT %s: %s\n", name, why))
end

local function wait_for(what, predicate)
  if not vim.wait(TIMEOUT, predicate, 20) then
    error("timed out waiting for " .. what, 0)
  end
end

local status_payload = nil
local client_id = vim.lsp.start_client({
  name = "warpwise",
  cmd = { python, "-P", "-m", "warpwise", "serve" },
  root_dir = vim.fn.fnamemodify(file, ":h"),
  handlers = {
    ["warpwise/status"] = function(_, result)
      status_payload = result
    end,
  },
})
assert(client_id, "the client did not start")

-- Wait for `initialize` to finish (or the server to exit), to know what the server supports.
local client = vim.lsp.get_client_by_id(client_id)
vim.wait(TIMEOUT, function()
  client = vim.lsp.get_client_by_id(client_id)
  return client == nil or (client.server_capabilities ~= nil and next(client.server_capabilities) ~= nil)
end, 20)
local caps = client and client.server_capabilities or nil
local function has(capability)
  return caps ~= nil and caps[capability] ~= nil and caps[capability] ~= false
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(bufnr, client_id)
local uri = vim.uri_from_bufnr(bufnr)
local line0 = SCENARIO.line - 1

local function finding()
  for _, d in ipairs(vim.lsp.diagnostic.get_line_diagnostics(bufnr, line0, nil, client_id)) do
    if d.code == SCENARIO.card then
      return d
    end
  end
  return nil
end

local diagnostic
local ok_diag = false
if caps == nil then
  waiting("the finding is published as a diagnostic", "the language server did not start (`warpwise serve`)")
else
ok_diag = step("the finding is published as a diagnostic", function()
  wait_for("the " .. SCENARIO.card .. " diagnostic on line " .. SCENARIO.line, function()
    diagnostic = finding()
    return diagnostic ~= nil
  end)
  assert(diagnostic.message:find(SCENARIO.message, 1, true), "message: " .. diagnostic.message)
  assert(diagnostic.severity == SCENARIO.severity, "severity " .. tostring(diagnostic.severity) .. ", not a hint")
  note("## Diagnostics")
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    note(string.format("%d:%d %s [%s]", d.lnum + 1, d.col + 1, d.message, tostring(d.code)))
  end
  return string.format("%d:%d %s", diagnostic.range.start.line + 1, diagnostic.range.start.character + 1, diagnostic.code)
end)
end

local function request(method, params)
  local responses, err = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT)
  assert(responses, method .. ": " .. tostring(err))
  local response = responses[client_id]
  assert(response, method .. ": no answer from warpwise")
  assert(not response.err, method .. ": " .. vim.inspect(response.err))
  return response.result
end

if ok_diag and not has("hoverProvider") then
  waiting("the hover shows the card's preconditions with verdicts", "the server does not advertise hoverProvider")
elseif ok_diag then
  step("the hover shows the card's preconditions with verdicts", function()
    local result = request("textDocument/hover", { textDocument = { uri = uri }, position = diagnostic.range.start })
    assert(result and result.contents, "no hover")
    local text = type(result.contents) == "table" and (result.contents.value or vim.inspect(result.contents)) or result.contents
    note("\n## Hover\n" .. text)
    for _, needed in ipairs({ SCENARIO.card, SCENARIO.hover_why, "Preconditions for this code", "holds", "Verification" }) do
      assert(text:find(needed, 1, true), "hover lacks " .. needed)
    end
    local verdicts = {}
    for v in text:gmatch("(%a+) —") do
      if v == "holds" or v == "violated" or v == "unknown" then
        table.insert(verdicts, v)
      end
    end
    assert(#verdicts >= 2, "fewer than two verdicts in the hover")
    return "verdicts: " .. table.concat(verdicts, ", ")
  end)

end

if ok_diag and not has("codeActionProvider") then
  waiting("the quick fix is listed with its verification state", "the server does not advertise codeActionProvider")
  waiting("the applied fix changes the text as the card's rewrite does", "the server does not advertise codeActionProvider")
elseif ok_diag then
  local action
  local ok_action = step("the quick fix is listed with its verification state", function()
    local actions = request("textDocument/codeAction", {
      textDocument = { uri = uri },
      range = diagnostic.range,
      context = { diagnostics = { diagnostic }, only = { "quickfix" } },
    }) or {}
    note("\n## Code actions")
    local titles = {}
    for _, a in ipairs(actions) do
      note("- " .. a.title)
      table.insert(titles, a.title)
      if a.title:find(SCENARIO.fix_title) then
        for _, state in ipairs(SCENARIO.fix_state) do
          if a.title:find(state) then
            action = a
          end
        end
      end
    end
    assert(action, "no fix titled like " .. SCENARIO.fix_title .. " with a verification state; got: " .. table.concat(titles, " | "))
    return action.title
  end)

  if ok_action then
    step("the applied fix changes the text as the card's rewrite does", function()
      if not action.edit then
        action = request("codeAction/resolve", action)
      end
      assert(action.edit, "the resolved action has no edit")
      vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
      local text = vim.api.nvim_buf_get_lines(bufnr, line0, line0 + 1, false)[1]
      assert(text == SCENARIO.line_after_fix, "line " .. SCENARIO.line .. " reads: " .. text)
      vim.cmd("silent write")
      wait_for("the diagnostic to go away after the fix", function()
        return finding() == nil
      end)
      note("\n## After the fix\n" .. text)
      return "line " .. SCENARIO.line .. ": " .. vim.trim(text)
    end)
  end
end

if caps == nil then
  waiting("the server reports its backend state (warpwise/status)", "the language server did not start")
else
step("the server reports its backend state (warpwise/status)", function()
  wait_for("warpwise/status", function()
    return status_payload ~= nil
  end)
  local gpu = status_payload.gpu or {}
  local queue = status_payload.queue or {}
  local state = (gpu.found and gpu.name) or "no GPU: compile-only"
  note("\n## warpwise/status\n" .. vim.inspect(status_payload))
  assert(type(queue.length) == "number", "no queue length")
  return string.format("%s; queue %d%s", state, queue.length, queue.running and (", running " .. tostring(queue.running.title)) or "")
end)
end

local failed = false
local strict = os.getenv("WARPWISE_E2E_STRICT") == "1"
for _, s in ipairs(steps) do
  failed = failed or s.status == "fail" or (strict and s.status == "waiting")
end
local f = assert(io.open(report_path, "w"))
f:write(vim.fn.json_encode({ title = "Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. " built-in LSP client", steps = steps }))
f:close()
local l = assert(io.open(log_path, "w"))
l:write("# What Neovim's built-in LSP client saw (written by `make e2e-nvim`)\n\n" .. table.concat(transcript, "\n") .. "\n")
l:close()

if vim.lsp.get_client_by_id(client_id) then
  vim.lsp.stop_client(client_id)
end
vim.wait(5000, function()
  return vim.lsp.get_client_by_id(client_id) == nil
end, 20)
vim.cmd(failed and "cquit 1" or "qall!")
