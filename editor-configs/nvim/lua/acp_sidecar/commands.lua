-- User commands: :AcpPrompt :AcpCancel :AcpRename :AcpSessions :AcpSessionActions :AcpNew :AcpDelete
-- :AcpFork :AcpLogout :AcpMode :AcpModel :AcpLog :AcpChat :AcpPermission. Each maps to a CONTRACT command.
-- Modes, models and the agent's / commands are acp/status's.
local client = require("acp_sidecar.client")
local state = require("acp_sidecar.state")
local log = require("acp_sidecar.log")
local util = require("acp_sidecar.util")

local M = {}

local function notify_err(command)
  return function(err)
    if err then
      util.notify(("%s: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
  end
end

-- ---------------------------------------------------------------- context

--- LSP position character of byte column col (0-based) on a line, in the
--- client's position encoding.
local function char_offset(bufnr, row, col, encoding)
  local ok, res = pcall(vim.lsp.util.character_offset, bufnr, row, col, encoding)
  if ok and type(res) == "number" then
    return res
  end
  return col
end

--- uri + range of lines line1..line2 (1-based, inclusive) of bufnr; when the
--- range is the last characterwise visual selection, its exact columns.
---@return table context {uri=, range=}
function M.range_context(bufnr, line1, line2, encoding)
  encoding = encoding or "utf-16"
  local uri = vim.uri_from_bufnr(bufnr)
  local start_row, start_col = line1 - 1, 0
  local end_row = line2 - 1
  local end_line = vim.api.nvim_buf_get_lines(bufnr, end_row, end_row + 1, false)[1] or ""
  local end_col = #end_line
  local vs = vim.api.nvim_buf_get_mark(bufnr, "<")
  local ve = vim.api.nvim_buf_get_mark(bufnr, ">")
  if vim.fn.visualmode() == "v" and vs[1] == line1 and ve[1] == line2 then
    start_col = vs[2]
    -- '> is the first byte of the last selected character: include all of it.
    local last = vim.api.nvim_buf_get_lines(bufnr, ve[1] - 1, ve[1], false)[1] or ""
    if ve[2] < #last then
      local char_end = vim.str_utf_end and vim.str_utf_end(last, ve[2] + 1) or 0
      end_col = ve[2] + 1 + char_end
    end
  end
  return {
    uri = uri,
    range = {
      start = { line = start_row, character = char_offset(bufnr, start_row, start_col, encoding) },
      ["end"] = { line = end_row, character = char_offset(bufnr, end_row, end_col, encoding) },
    },
  }
end

-- ---------------------------------------------------------------- commands

--- Send a prompt; ctx may carry uri/range.
function M.prompt(text, ctx)
  text = vim.trim(text or "")
  if text == "" then
    return
  end
  local arg = { text = text }
  if ctx then
    -- (A uri alone would attach the whole document: only with a range.)
    arg.uri, arg.range = ctx.uri, ctx.range
  end
  client.exec("acp.prompt", arg, util.report_prompt)
end

local function cmd_prompt(o)
  local ctx
  local bufnr = vim.api.nvim_get_current_buf()
  if o.range and o.range > 0 then
    local c = client.get()
    local enc = c and c.offset_encoding or "utf-16"
    ctx = M.range_context(bufnr, o.line1, o.line2, enc)
  end
  if vim.trim(o.args) ~= "" then
    M.prompt(o.args, ctx)
    return
  end
  vim.ui.input({ prompt = ctx and "Ask agent about selection: " or "Ask agent: " }, function(input)
    if input and vim.trim(input) ~= "" then
      M.prompt(input, ctx)
    end
  end)
end

function M.cancel()
  client.exec("acp.cancel", {}, function(err, result)
    if err then
      return notify_err("acp.cancel")(err)
    end
    if type(result) == "table" and result.cancelled == false then
      util.notify("nothing is running")
    end
  end)
end

function M.rename(title)
  title = vim.trim(title or "")
  if title == "" then
    return
  end
  client.exec("acp.session.rename", { title = title }, notify_err("acp.session.rename"))
end

--- Ask for a new title of session sid (default: the active one) and rename it.
function M.rename_prompt(sid)
  local cur = state.status and state.status.title
  if sid and state.sessions[sid] then
    cur = state.sessions[sid].title
  end
  vim.ui.input({ prompt = "Rename session: ", default = type(cur) == "string" and cur or "" }, function(input)
    input = vim.trim(input or "")
    if input == "" then
      return
    end
    local arg = { title = input }
    if sid then
      arg.sessionId = sid
    end
    client.exec("acp.session.rename", arg, notify_err("acp.session.rename"))
  end)
end

local function cmd_rename(o)
  if vim.trim(o.args) ~= "" then
    return M.rename(o.args)
  end
  M.rename_prompt(nil)
end

--- One line describing a SessionEntry: title, cwd, source.
function M.format_session(e)
  local title = util.truncate(util.sanitize(e.title), 80)
  if title == "" then
    title = "(untitled)"
  end
  local cwd = util.sanitize(e.cwd)
  if cwd ~= "" then
    cwd = vim.fn.fnamemodify(cwd, ":~")
  end
  local parts = { (e.active == true and "● " or "  ") .. title }
  if e.pendingTitle ~= nil and e.pendingTitle ~= vim.NIL and e.pendingTitle ~= "" then
    parts[#parts + 1] = ("(renaming to %s)"):format(util.truncate(util.sanitize(e.pendingTitle), 40))
  end
  if type(e.agent) == "string" and e.agent ~= "" and M.several_agents then
    parts[#parts + 1] = "· " .. util.truncate(util.sanitize(e.agent), 30)
  end
  parts[#parts + 1] = "—"
  parts[#parts + 1] = cwd
  local when = util.sanitize(e.updatedAt):gsub("T", " "):gsub("%.%d+", ""):gsub("Z$", " UTC")
  if when ~= "" then
    parts[#parts + 1] = "— " .. when
  end
  return table.concat(parts, " ")
end

--- Pick a cached session (acp.session.list), load it (acp.session.load) and
--- show it in the chat.
---@param refresh boolean|nil reconcile with the agent's session/list first
--- Choosing a session opens it: the common case takes one choice.
function M.sessions(refresh)
  M.pick_session(refresh, "ACP sessions", function(entry)
    M.load(entry.sessionId)
  end)
end

--- Choosing a session asks what to do with it (open, fork, rename, delete).
function M.session_menu(refresh)
  M.pick_session(refresh, "ACP sessions: choose one, then what to do", M.session_actions)
end

--- A picker of the cached sessions (acp.session.list); on_choice(entry) with the chosen one.
function M.pick_session(refresh, prompt, on_choice)
  local arg = {}
  if refresh then
    arg.refresh = true
  end
  client.exec("acp.session.list", arg, function(err, result)
    if err then
      return notify_err("acp.session.list")(err)
    end
    local entries = type(result) == "table" and result.sessions or {}
    if type(entries) ~= "table" or #entries == 0 then
      util.notify("no sessions yet")
      return
    end
    -- The agent's name is shown when the list holds the sessions of more than one agent.
    local seen = {}
    for _, e in ipairs(entries) do
      if type(e) == "table" and type(e.agent) == "string" then
        seen[e.agent] = true
      end
    end
    M.several_agents = vim.tbl_count(seen) > 1
    -- (The sidecar lists them newest first, a bounded number: workspace symbols find older ones.)
    if result.more then
      prompt = prompt .. " (the newest " .. #entries .. "; older: :lua vim.lsp.buf.workspace_symbol())"
    end
    vim.ui.select(entries, {
      prompt = prompt,
      kind = "acp_sidecar.session",
      format_item = M.format_session,
    }, function(choice)
      if choice and choice.sessionId then
        on_choice(choice)
      end
    end)
  end)
end

--- What the session picker offers for the chosen session, in this order.
M.ACTIONS = {
  { id = "open", label = "Open" },
  { id = "fork", label = "Fork session" },
  { id = "rename", label = "Rename…" },
  { id = "delete", label = "Delete session…" },
}

local function title_of(e)
  local t = util.truncate(util.sanitize(type(e) == "table" and e.title or nil), 60)
  return t ~= "" and t or "(untitled)"
end

--- A second picker: what to do with the chosen session (a SessionEntry).
function M.session_actions(entry)
  vim.ui.select(M.ACTIONS, {
    prompt = ("Session %s"):format(title_of(entry)),
    kind = "acp_sidecar.session_action",
    format_item = function(a)
      return a.label
    end,
  }, function(action)
    if not action then
      return
    end
    local sid = entry.sessionId
    if action.id == "open" then
      M.load(sid)
    elseif action.id == "fork" then
      M.fork(sid)
    elseif action.id == "rename" then
      M.rename_prompt(sid)
    elseif action.id == "delete" then
      M.delete(sid, entry.title)
    end
  end)
end

--- Ask first, then delete session sid (acp.session.delete); its chat buffer goes too.
---@param title string|nil shown in the question
function M.delete(sid, title)
  local info = state.sessions[sid]
  if title == nil and info then
    title = info.title
  end
  local name = title_of({ title = title })
  vim.ui.select({ "Delete", "Cancel" }, {
    prompt = ("Delete session %s? The agent and the sidecar forget it and its conversation"
      .. " document is removed."):format(name),
    kind = "acp_sidecar.confirm",
  }, function(answer)
    if answer ~= "Delete" then
      return
    end
    client.exec("acp.session.delete", { sessionId = sid }, function(err)
      if err then
        return notify_err("acp.session.delete")(err)
      end
      state.sessions[sid] = nil
      require("acp_sidecar.chat").forget(sid)
      util.notify(("deleted session %s"):format(name))
    end)
  end)
end

--- Fork session sid (default: the active one) and show the new session in the chat.
function M.fork(sid)
  local arg = {}
  if sid and sid ~= "" then
    arg.sessionId = sid
  end
  client.exec("acp.session.fork", arg, function(err, result)
    if err then
      return notify_err("acp.session.fork")(err)
    end
    if type(result) ~= "table" or type(result.sessionId) ~= "string" then
      return
    end
    util.notify(("forked: %s"):format(title_of(result)))
    require("acp_sidecar.chat").open({ session_id = result.sessionId })
  end)
end

--- Log out of agent (default: the active session's, else the default agent).
function M.logout(agent)
  agent = vim.trim(agent or "")
  local arg = {}
  if agent ~= "" then
    arg.agent = agent
  end
  client.exec("acp.logout", arg, function(err)
    if err then
      return notify_err("acp.logout")(err)
    end
    util.notify(("logged out of %s"):format(agent ~= "" and util.sanitize(agent) or "the agent"))
  end)
end

--- :AcpDelete [id]: without an id, the session picker asks which one.
function M.delete_command(id)
  id = vim.trim(id or "")
  if id ~= "" then
    return M.delete(id)
  end
  M.pick_session(false, "Delete which session", function(choice)
    M.delete(choice.sessionId, choice.title)
  end)
end

function M.load(session_id)
  client.exec("acp.session.load", { sessionId = session_id }, function(err)
    if err then
      return notify_err("acp.session.load")(err)
    end
    require("acp_sidecar.chat").open({ session_id = session_id })
  end)
end

--- The string `key` of each table in the list `field` of a sidecar command's answer, asked
--- synchronously (completion cannot wait for a callback); {} without a client.
local function listed_sync(command, field, key)
  local out = {}
  local c = client.get and client.get() or nil
  if not c then
    return out
  end
  local params = { command = command, arguments = { vim.empty_dict() } }
  local ok, reply = pcall(c.request_sync, c, "workspace/executeCommand", params, 1000)
  local result = ok and reply and reply.result
  for _, e in ipairs(type(result) == "table" and result[field] or {}) do
    if type(e) == "table" and type(e[key]) == "string" then
      out[#out + 1] = e[key]
    end
  end
  return out
end

--- The configured agents' names (acp.agents), for completion: asked once, then kept.
function M.agent_names()
  if M._agent_names then
    return M._agent_names
  end
  local names = listed_sync("acp.agents", "agents", "name")
  if #names > 0 then
    M._agent_names = names
  end
  return names
end

local function new_in(arg)
  client.exec("acp.session.new", arg, notify_err("acp.session.new"))
end

--- :AcpNew [agent] [dir]: a new session of that agent (a word that is a directory is the dir).
--- Without an agent and with named agents configured (setup's `agents`): a picker of the agents.
function M.new_session(args)
  local arg = {}
  local words = vim.split(vim.trim(args or ""), "%s+", { trimempty = true })
  local agent, dir = words[1], words[2]
  if agent ~= nil and dir == nil and (agent:find("/") or vim.fn.isdirectory(vim.fn.expand(agent)) == 1) then
    agent, dir = nil, agent
  end
  if dir ~= nil then
    arg.cwd = vim.fn.fnamemodify(vim.fn.expand(dir), ":p"):gsub("[/\\]$", "")
    if arg.cwd == "" then
      arg.cwd = "/"
    end
  end
  if agent ~= nil then
    arg.agent = agent
    return new_in(arg)
  end
  local opts = require("acp_sidecar.config").get() or {}
  if type(opts.agents) ~= "table" or vim.tbl_isempty(opts.agents) then
    return new_in(arg)
  end
  client.exec("acp.agents", {}, function(err, result)
    if err then
      return notify_err("acp.agents")(err)
    end
    local agents = type(result) == "table" and result.agents or {}
    vim.ui.select(agents, {
      prompt = "New session with",
      kind = "acp_sidecar.agent",
      format_item = function(a)
        local title = type(a.title) == "string" and a.title ~= "" and (" — " .. util.sanitize(a.title)) or ""
        return ("%s%s%s [%s]"):format(a.default and "● " or "  ", util.sanitize(a.name), title, a.state)
      end,
    }, function(choice)
      if choice and type(choice.name) == "string" then
        arg.agent = choice.name
        new_in(arg)
      end
    end)
  end)
end

--- Choices {id, name} of acp/status "modes" or "models".
function M.choices(field)
  local list = state.status and state.status[field]
  local out = {}
  for _, c in ipairs(type(list) == "table" and list or {}) do
    if type(c) == "table" and type(c.id) == "string" then
      out[#out + 1] = c
    end
  end
  return out
end

--- vim.ui.select over the agent's modes or models; set applies the choice.
local function pick(field, current_key, what, set)
  local choices = M.choices(field)
  if #choices == 0 then
    util.notify(("the agent offers no %s choice"):format(what))
    return
  end
  local current = state.status and state.status[current_key]
  vim.ui.select(choices, {
    prompt = ("ACP %s"):format(what),
    kind = "acp_sidecar." .. what,
    format_item = function(c)
      local name = util.sanitize(c.name ~= vim.NIL and c.name or c.id)
      return (c.id == current and "● " or "  ") .. name .. (name ~= c.id and (" (" .. util.sanitize(c.id) .. ")") or "")
    end,
  }, function(choice)
    if choice then
      set(choice.id)
    end
  end)
end

function M.pick_mode()
  pick("modes", "modeId", "mode", M.set_mode)
end

function M.pick_model()
  pick("models", "modelId", "model", M.set_model)
end

function M.set_mode(mode_id)
  mode_id = vim.trim(mode_id or "")
  if mode_id == "" then
    return M.pick_mode()
  end
  client.exec("acp.session.setMode", { modeId = mode_id }, notify_err("acp.session.setMode"))
end

function M.set_model(model_id)
  model_id = vim.trim(model_id or "")
  if model_id == "" then
    return M.pick_model()
  end
  client.exec("acp.session.setModel", { modelId = model_id }, notify_err("acp.session.setModel"))
end

--- :AcpChat, with a range: the lines as context in the input area.
function M.chat(o)
  local chat = require("acp_sidecar.chat")
  local cur = vim.api.nvim_get_current_buf()
  if o and o.range and o.range > 0 and not chat.is_chat(cur) then
    return chat.open({ context = chat.context_lines(cur, o.line1, o.line2) })
  end
  chat.toggle()
end

-- ---------------------------------------------------------------- completion

local function complete_from(list, lead)
  local out = {}
  for _, v in ipairs(list or {}) do
    if vim.startswith(v, lead) then
      out[#out + 1] = v
    end
  end
  return out
end

function M.complete_agents(lead, line)
  local args = line:gsub("^%s*%S+%s*", "", 1)
  if args:find("%s") then
    return vim.fn.getcompletion(lead, "dir")
  end
  return complete_from(M.agent_names(), lead)
end

local function ids(field)
  local out = {}
  for _, c in ipairs(M.choices(field)) do
    out[#out + 1] = c.id
  end
  return out
end

function M.complete_modes(lead)
  return complete_from(ids("modes"), lead)
end

function M.complete_models(lead)
  return complete_from(ids("models"), lead)
end

function M.complete_prompt(lead, line)
  -- Only the first word completes: the agent's slash commands (acp/status "commands").
  local args = line:gsub("^%s*%S+%s*", "", 1)
  if args:find("%s") or not vim.startswith(lead, "/") then
    return {}
  end
  local out = {}
  local list = state.status and state.status.commands
  for _, c in ipairs(type(list) == "table" and list or {}) do
    if type(c) == "table" and type(c.name) == "string" then
      out[#out + 1] = "/" .. c.name
    end
  end
  return complete_from(out, lead)
end

--- Session ids the sidecar lists (acp.session.list), newest first, for :AcpDelete and :AcpFork.
function M.complete_sessions(lead)
  return complete_from(listed_sync("acp.session.list", "sessions", "sessionId"), lead)
end

function M.complete_agent_name(lead)
  return complete_from(M.agent_names(), lead)
end

function M.complete_rename(lead)
  local t = state.status and state.status.title
  if type(t) == "string" and t ~= "" then
    return complete_from({ t }, lead)
  end
  return {}
end

-- ---------------------------------------------------------------- register

function M.register()
  local c = vim.api.nvim_create_user_command
  c("AcpPrompt", cmd_prompt, {
    nargs = "*",
    range = true,
    complete = M.complete_prompt,
    desc = "ACP: send a prompt (with a range: the selected text as context)",
  })
  c("AcpCancel", M.cancel, { nargs = 0, desc = "ACP: cancel the running turn" })
  c("AcpRename", cmd_rename, { nargs = "*", complete = M.complete_rename, desc = "ACP: rename the active session" })
  c("AcpSessions", function(o)
    M.sessions(o.bang)
  end, { nargs = 0, bang = true, desc = "ACP: pick a session to open (! refreshes)" })
  c("AcpSessionActions", function(o)
    M.session_menu(o.bang)
  end, { nargs = 0, bang = true, desc = "ACP: pick a session to open, fork, rename or delete (! refreshes)" })
  c("AcpNew", function(o)
    M.new_session(o.args)
  end, {
    nargs = "*",
    complete = M.complete_agents,
    desc = "ACP: start a new session ([agent] [dir]; no agent: a picker when several are configured)",
  })
  c("AcpDelete", function(o)
    M.delete_command(o.args)
  end, {
    nargs = "?",
    complete = M.complete_sessions,
    desc = "ACP: delete a session, after asking (no id: a picker)",
  })
  c("AcpFork", function(o)
    M.fork(vim.trim(o.args))
  end, { nargs = "?", complete = M.complete_sessions, desc = "ACP: fork a session (default: the active one)" })
  c("AcpLogout", function(o)
    M.logout(o.args)
  end, { nargs = "?", complete = M.complete_agent_name, desc = "ACP: log out of an agent (default: the active one)" })
  c("AcpMode", function(o)
    M.set_mode(o.args)
  end, { nargs = "?", complete = M.complete_modes, desc = "ACP: set the session mode (no argument: a picker)" })
  c("AcpModel", function(o)
    M.set_model(o.args)
  end, { nargs = "?", complete = M.complete_models, desc = "ACP: set the session model (no argument: a picker)" })
  c("AcpLog", function(o)
    if o.bang then
      vim.cmd.edit(vim.fn.fnameescape(vim.lsp.get_log_path()))
    else
      log.open()
    end
  end, { nargs = 0, bang = true, desc = "ACP: sidecar messages (! opens the LSP log file)" })
  c("AcpChat", function(o)
    M.chat(o)
  end, { nargs = 0, range = true, desc = "ACP: toggle the chat (with a range: add the lines as context)" })
  c("AcpPermission", function()
    require("acp_sidecar.review").answer_pending()
  end, { nargs = 0, desc = "ACP: answer a waiting permission request" })
end

return M
