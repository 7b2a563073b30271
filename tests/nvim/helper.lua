-- Helper for the Neovim end-to-end scenarios (tests/nvim/scenarios/*.lua).
--
-- A scenario runs inside a real headless Neovim (`nvim --headless --clean -l`),
-- drives the plugin with its user commands, waits with bounded vim.wait() calls
-- and records what it saw into a JSON file that pytest asserts on. Every wait
-- is bounded; a failed wait is recorded (not raised) so that the rest of the
-- result still reaches pytest.
local H = {}

local uv = vim.uv or vim.loop
local t0 = uv.hrtime()

H.result = { steps = {}, errors = {}, done = false }
H.events = { status = {}, info = {}, turn = {}, update = {} }

local function now()
  return (uv.hrtime() - t0) / 1e9
end

function H.log(msg)
  H.result.steps[#H.result.steps + 1] = ("%.3f %s"):format(now(), msg)
end

function H.error(msg)
  H.result.errors[#H.result.errors + 1] = msg
  H.log("ERROR " .. msg)
end

function H.set(key, value)
  H.result[key] = value
end

H.FAILED = "acp_test: a wait failed"

--- vim.wait with a timeout; records the outcome. When pred does not hold in
--- time the scenario stops (the result so far is still written), unless soft.
function H.wait(what, timeout_ms, pred, soft)
  local ok = vim.wait(timeout_ms, function()
    local okp, v = pcall(pred)
    return okp and v and true or false
  end, 20)
  if ok then
    H.log("ok " .. what)
  else
    H.error("timeout after " .. timeout_ms .. " ms: " .. what)
    if not soft then
      error(H.FAILED, 0)
    end
  end
  return ok
end

--- Plain sleep that keeps the event loop running.
function H.sleep(ms)
  vim.wait(ms, function()
    return false
  end, 10)
end

local function sanitize_for_json(v, depth)
  depth = depth or 0
  if depth > 20 then
    return "<deep>"
  end
  local t = type(v)
  if t == "table" then
    if v == vim.NIL then
      return v
    end
    local out = {}
    for k, x in pairs(v) do
      if type(k) == "string" or type(k) == "number" then
        out[k] = sanitize_for_json(x, depth + 1)
      end
    end
    return out
  elseif t == "function" or t == "userdata" or t == "thread" then
    return tostring(v)
  end
  return v
end

function H.write()
  local path = assert(vim.env.ACP_TEST_RESULT, "ACP_TEST_RESULT not set")
  local ok, data = pcall(vim.json.encode, sanitize_for_json(H.result))
  if not ok then
    data = vim.json.encode({ errors = { "could not encode result: " .. tostring(data) }, steps = H.result.steps })
  end
  local f = assert(io.open(path .. ".tmp", "w"))
  f:write(data)
  f:close()
  assert(os.rename(path .. ".tmp", path))
end

--- Run the scenario body, record any error, write the result, quit Neovim.
function H.run(fn)
  local ok, err = xpcall(fn, function(e)
    if e == H.FAILED then
      return e
    end
    return debug.traceback(e)
  end)
  if not ok and err ~= H.FAILED then
    H.error("scenario raised: " .. tostring(err))
  end
  H.result.final_status = H.status()
  H.result.log = require("acp_sidecar.log").lines
  H.result.done = ok
  H.result.events = H.events
  H.log("quitting")
  H.write()
  vim.cmd("qa!")
end

-- ------------------------------------------------------------ setup

--- Call the plugin's setup with the sidecar from the environment.
function H.setup(extra)
  local sidecar = assert(vim.env.ACP_TEST_SIDECAR, "ACP_TEST_SIDECAR not set")
  local state_dir = assert(vim.env.ACP_TEST_STATE_DIR, "ACP_TEST_STATE_DIR not set")
  local cmd = { sidecar, "--state-dir", state_dir }
  if vim.env.ACP_TEST_SIDECAR_LOG and vim.env.ACP_TEST_SIDECAR_LOG ~= "" then
    vim.list_extend(cmd, { "--log-file", vim.env.ACP_TEST_SIDECAR_LOG })
  end
  local opts = vim.tbl_deep_extend("force", { cmd = cmd, start_timeout = 60000, exit_timeout = 5000 }, extra or {})
  require("acp_sidecar").setup(opts)
  H.track()
end

--- Record the plugin's User events.
function H.track()
  local group = vim.api.nvim_create_augroup("acp_test_track", { clear = true })
  local map = { AcpStatus = "status", AcpSessionInfo = "info", AcpTurn = "turn", AcpSessionUpdate = "update" }
  for pattern, key in pairs(map) do
    vim.api.nvim_create_autocmd("User", {
      group = group,
      pattern = pattern,
      callback = function(args)
        local list = H.events[key]
        if #list < 5000 then
          list[#list + 1] = args.data
        end
      end,
    })
  end
end

function H.client()
  local c = vim.lsp.get_clients({ name = "acp_sidecar" })
  return c[1]
end

function H.status()
  return require("acp_sidecar").status()
end

--- Open a file of the workspace and wait until the sidecar is attached,
--- initialized and its agent idle.
function H.start(file)
  vim.cmd.edit(file or "README.md")
  H.wait("client attached and initialized", 30000, function()
    local c = vim.lsp.get_clients({ name = "acp_sidecar", bufnr = 0 })[1]
    return c ~= nil and c.initialized
  end)
  H.wait("acp/status idle", 30000, function()
    local s = H.status()
    return s ~= nil and s.state == "idle"
  end)
  return true
end

--- The usual start of a scenario: setup, a scripted vim.ui, a file open with the sidecar idle.
function H.begin(file)
  H.setup()
  H.stub_ui()
  return H.start(file)
end

--- The last acp/turn of a turn with state ended (or nil).
function H.ended(turn_id)
  for i = #H.events.turn, 1, -1 do
    local t = H.events.turn[i]
    if t.state == "ended" and (turn_id == nil or t.turnId == turn_id) then
      return t
    end
  end
  return nil
end

function H.turn_with_state(st, after)
  for i = (after or 0) + 1, #H.events.turn do
    local t = H.events.turn[i]
    if t.state == st then
      return t, i
    end
  end
  return nil
end

--- Concatenated text of agent_message_chunk updates of a session.
function H.agent_text(sid)
  local parts = {}
  for _, p in ipairs(H.events.update) do
    local u = p.update or {}
    if (sid == nil or p.sessionId == sid) and u.sessionUpdate == "agent_message_chunk" then
      local c = u.content or {}
      if c.type == "text" and type(c.text) == "string" then
        parts[#parts + 1] = c.text
      end
    end
  end
  return table.concat(parts)
end

--- The lines of the active session's transcript document: its chat buffer when one is open,
--- else the file the sidecar writes.
function H.document_lines()
  local s = H.status()
  local uri = s and s.transcriptUri
  if type(uri) ~= "string" then
    return {}
  end
  local b = require("acp_sidecar.chat").buf_of_uri(uri)
  if b then
    return vim.api.nvim_buf_get_lines(b, 0, -1, false)
  end
  local ok, lines = pcall(vim.fn.readfile, vim.uri_to_fname(uri))
  return ok and lines or {}
end

--- The document's lines once one of them contains `text` (soft: the test's assertion says what
--- it holds otherwise).
function H.document_with(text, timeout_ms)
  H.wait(("%q in the transcript document"):format(text), timeout_ms or 10000, function()
    for _, line in ipairs(H.document_lines()) do
      if line:find(text, 1, true) then
        return true
      end
    end
    return false
  end, true)
  return H.document_lines()
end

-- ------------------------------------------------------------ statusline

--- Evaluate statusline expressions the way users write them.
function H.statuslines()
  local out = {}
  local function eval(name, fmt)
    local ok, res = pcall(vim.api.nvim_eval_statusline, fmt, { maxwidth = 400 })
    if ok then
      out[name] = { str = res.str, width = res.width, fmt = fmt }
    else
      out[name] = { error = tostring(res), fmt = fmt }
    end
  end
  -- %{%...%}: the result is parsed again, so the component is escaped.
  eval("expr_format", "%{%v:lua.require'acp_sidecar'.statusline()%}")
  -- %{...}: the result is shown literally: the unescaped variant.
  eval("expr_plain", "%{v:lua.require'acp_sidecar'.statusline_text()}")
  -- lualine-style: the component's string concatenated into 'statusline'.
  eval("concat", "[%n] " .. require("acp_sidecar").statusline() .. " |%=end")
  -- As the 'statusline' option, redrawn for real.
  local ok, err = pcall(function()
    vim.o.statusline = "%{%v:lua.require'acp_sidecar'.statusline()%}"
    vim.cmd("redrawstatus!")
  end)
  out.option_ok = ok
  if not ok then
    out.option_error = tostring(err)
  end
  out.text = require("acp_sidecar").statusline_text()
  return out
end

-- ------------------------------------------------------------ ui stubs

H.selects = {}
H.inputs = {}

--- Replace vim.ui.select: record every call; choose(items, opts) returns the
--- item to pick (default: the first, which answers permission requests).
function H.stub_ui(choose)
  vim.ui.select = function(items, opts, on_choice)
    local formatted = {}
    for i, it in ipairs(items) do
      formatted[i] = opts and opts.format_item and opts.format_item(it) or tostring(it)
    end
    H.selects[#H.selects + 1] = {
      prompt = opts and opts.prompt,
      kind = opts and opts.kind,
      items = items,
      formatted = formatted,
    }
    local pick = choose and choose(items, opts) or items[1]
    local idx
    for i, it in ipairs(items) do
      if it == pick then
        idx = i
      end
    end
    vim.schedule(function()
      on_choice(pick, idx)
    end)
  end
  vim.ui.input = function(opts, on_confirm)
    H.inputs[#H.inputs + 1] = opts
    vim.schedule(function()
      on_confirm(nil)
    end)
  end
end

--- Record vim.notify messages (the plugin's notifications) into the returned list.
function H.capture_notes()
  local notes = {}
  vim.notify = function(msg)
    notes[#notes + 1] = msg
  end
  return notes
end

--- The first of items whose `key` equals value (nil when none).
function H.find(items, key, value)
  for _, it in ipairs(items) do
    if type(it) == "table" and it[key] == value then
      return it
    end
  end
  return nil
end

-- ------------------------------------------------------------ processes

--- Live descendants of pid (default: this Neovim), from /proc.
function H.descendants(pid)
  pid = pid or vim.fn.getpid()
  local children = {}
  local handle = uv.fs_scandir("/proc")
  if not handle then
    return {}
  end
  while true do
    local name = uv.fs_scandir_next(handle)
    if not name then
      break
    end
    if name:match("^%d+$") then
      local f = io.open("/proc/" .. name .. "/stat", "r")
      if f then
        local data = f:read("*a") or ""
        f:close()
        local rest = data:match("^.*%)%s+(.*)$")
        if rest then
          local st, ppid = rest:match("^(%S+)%s+(%d+)")
          if st and st ~= "Z" then
            local p = tonumber(ppid)
            children[p] = children[p] or {}
            table.insert(children[p], tonumber(name))
          end
        end
      end
    end
  end
  local out, stack, seen = {}, { pid }, {}
  while #stack > 0 do
    local p = table.remove(stack)
    for _, c in ipairs(children[p] or {}) do
      if not seen[c] then
        seen[c] = true
        out[#out + 1] = c
        stack[#stack + 1] = c
      end
    end
  end
  return out
end

function H.cmdline(pid)
  local f = io.open("/proc/" .. pid .. "/cmdline", "r")
  if not f then
    return nil
  end
  local s = (f:read("*a") or ""):gsub("%z", " ")
  f:close()
  return vim.trim(s)
end

return H
