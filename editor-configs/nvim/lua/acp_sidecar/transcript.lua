-- The transcript: a markdown buffer (acp://transcript) showing the active
-- session's acp/sessionUpdate stream. Each session has its own bounded
-- document in memory; the buffer shows the document of the active session.
local util = require("acp_sidecar.util")
local config = require("acp_sidecar.config")
local state = require("acp_sidecar.state")

local M = {}

M.bufname = "acp://transcript"

---@type integer|nil
M.bufnr = nil
---@type table<string, table> sessionId -> Doc
M.docs = {}
local doc_order = {}
---@type string|nil session whose document the buffer shows
M.shown = nil

local HEADERS = {
  user = "### You",
  agent = "### Agent",
  thought = "### Thinking",
}

-- ---------------------------------------------------------------- buffer

local function buf_valid()
  return M.bufnr ~= nil and vim.api.nvim_buf_is_valid(M.bufnr)
end

--- The transcript buffer, created on first use.
---@return integer
function M.buf()
  if buf_valid() then
    return M.bufnr --[[@as integer]]
  end
  local existing = vim.fn.bufnr("^" .. M.bufname .. "$")
  local b = existing
  if b == -1 or not vim.api.nvim_buf_is_valid(b) then
    b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(b, M.bufname)
  end
  vim.bo[b].buftype = "nofile"
  vim.bo[b].bufhidden = "hide"
  vim.bo[b].swapfile = false
  vim.bo[b].undolevels = -1
  vim.bo[b].filetype = "markdown"
  vim.bo[b].modifiable = false
  M.bufnr = b
  -- Show whatever the active session already has.
  local sid = M.shown or state.active_session()
  M.shown = nil
  M.show(sid)
  return b
end

--- Windows showing the buffer whose cursor is on the last line: they follow
--- the stream.
local function following_windows(b)
  local out = {}
  local count = vim.api.nvim_buf_line_count(b)
  for _, win in ipairs(vim.fn.win_findbuf(b)) do
    local ok, cur = pcall(vim.api.nvim_win_get_cursor, win)
    if ok and cur[1] >= count then
      out[#out + 1] = win
    end
  end
  return out
end

--- Replace buffer lines [first, last) (0-based, end-exclusive) with lines.
local function buf_set(first, last, lines)
  if not buf_valid() then
    return
  end
  local b = M.bufnr --[[@as integer]]
  local follow = following_windows(b)
  vim.bo[b].modifiable = true
  pcall(vim.api.nvim_buf_set_lines, b, first, last, false, lines)
  vim.bo[b].modifiable = false
  if #follow > 0 then
    local count = vim.api.nvim_buf_line_count(b)
    for _, win in ipairs(follow) do
      pcall(vim.api.nvim_win_set_cursor, win, { count, 0 })
    end
  end
end

-- ---------------------------------------------------------------- document

---@class acp_sidecar.Doc
local Doc = {}
Doc.__index = Doc

function Doc.new(sid)
  return setmetatable({
    sid = sid,
    lines = {}, -- lines[i] is absolute line dropped + i
    dropped = 0,
    tools = {}, -- toolCallId -> {abs=, kind=, title=, status=}
    plan = nil, -- {abs=, len=, turn=}
    cur = nil, -- open text block: {kind=, key=}
    last_header = nil,
    replaying = false,
  }, Doc)
end

function Doc:shown()
  return M.shown == self.sid and buf_valid()
end

--- Replace lines [first, last] (1-based array indexes, last may be first-1 for
--- an insertion) with new lines, keeping the buffer and tracked positions in sync.
function Doc:replace(first, last, new)
  local old_n = last - first + 1
  local delta = #new - old_n
  local out = {}
  for i = 1, first - 1 do
    out[#out + 1] = self.lines[i]
  end
  for _, l in ipairs(new) do
    out[#out + 1] = l
  end
  for i = last + 1, #self.lines do
    out[#out + 1] = self.lines[i]
  end
  local was_empty = #self.lines == 0
  self.lines = out
  if delta ~= 0 then
    local after = self.dropped + last
    for _, t in pairs(self.tools) do
      if t.abs and t.abs > after then
        t.abs = t.abs + delta
      end
    end
    if self.plan and self.plan.abs > after then
      self.plan.abs = self.plan.abs + delta
    end
  end
  if self:shown() then
    if was_empty then
      buf_set(0, -1, new)
    else
      buf_set(first - 1, last, new)
    end
  end
end

function Doc:append(new)
  if #new == 0 then
    return
  end
  self:replace(#self.lines + 1, #self.lines, new)
  self:trim()
end

--- Drop the oldest lines beyond max_lines (in batches, so trimming is rare).
function Doc:trim()
  local max = config.get().transcript.max_lines or 5000
  local n = #self.lines
  if n <= max then
    return
  end
  local k = n - max + math.floor(max / 10)
  if k >= n then
    k = n - 1
  end
  local out = {}
  for i = k + 1, n do
    out[#out + 1] = self.lines[i]
  end
  self.lines = out
  self.dropped = self.dropped + k
  -- Tool calls scrolled out keep their record (later updates are not shown
  -- as new calls) but no line; past a bound the records go too.
  local n_tools = 0
  for _, t in pairs(self.tools) do
    if t.abs and t.abs <= self.dropped then
      t.abs = nil
    end
    n_tools = n_tools + 1
  end
  if n_tools > 2000 then
    for id, t in pairs(self.tools) do
      if not t.abs then
        self.tools[id] = nil
      end
    end
  end
  if self.plan and self.plan.abs <= self.dropped then
    self.plan = nil
  end
  if self:shown() then
    buf_set(0, k, {})
  end
end

function Doc:clear()
  self.lines = {}
  self.dropped = 0
  self.tools = {}
  self.plan = nil
  self.cur = nil
  self.last_header = nil
  if self:shown() then
    buf_set(0, -1, {})
  end
end

function Doc:last_line()
  return self.lines[#self.lines]
end

--- Start a new block: a blank separator line unless the document is empty or
--- already ends with one.
function Doc:separate()
  local last = self:last_line()
  if last ~= nil and last ~= "" then
    self:append({ "" })
  end
end

--- Close the open text block (a tool call, plan or note follows).
function Doc:close_text()
  if self.cur then
    self.cur = nil
    self:separate()
  end
end

--- Append streamed text of a message of kind (user, agent, thought); chunks of
--- one message (same key) are concatenated.
function Doc:add_text(kind, key, text)
  if text == "" then
    return
  end
  local prefix = kind == "thought" and "> " or ""
  if not (self.cur and self.cur.kind == kind and self.cur.key == key) then
    self:separate()
    local head = {}
    if kind == "user" or self.last_header ~= kind then
      head[#head + 1] = HEADERS[kind] or ("### " .. kind)
      head[#head + 1] = ""
      self.last_header = kind
    end
    if kind == "user" then
      -- A new prompt: the next agent text gets its own header again.
      self.last_header = "user"
    end
    head[#head + 1] = prefix
    self:append(head)
    self.cur = { kind = kind, key = key }
  end
  text = text:gsub("\r\n", "\n"):gsub("\r", "\n")
  local parts = vim.split(text, "\n", { plain = true })
  local n = #self.lines
  local new = { self.lines[n] .. parts[1] }
  for i = 2, #parts do
    new[#new + 1] = prefix .. parts[i]
  end
  self:replace(n, n, new)
  self:trim()
end

local function tool_line(t)
  local title = util.sanitize(t.title)
  if title == "" then
    title = "tool call"
  end
  local line = ("- [%s] %s"):format(util.sanitize(t.kind or "other"), title)
  if t.status and t.status ~= "" then
    line = line .. (" (%s)"):format(util.sanitize(t.status))
  end
  if t.detail and t.detail ~= "" then
    line = line .. " " .. t.detail
  end
  return line
end

local function diff_paths(content)
  local paths = {}
  for _, c in ipairs(type(content) == "table" and content or {}) do
    if type(c) == "table" and c.type == "diff" and type(c.path) == "string" then
      paths[#paths + 1] = vim.fn.fnamemodify(c.path, ":~:.")
    end
  end
  if #paths == 0 then
    return nil
  end
  return "→ " .. util.sanitize(table.concat(paths, ", "))
end

function Doc:tool(update)
  local id = update.toolCallId
  if id == nil or id == vim.NIL then
    return
  end
  id = tostring(id)
  local t = self.tools[id]
  local fresh = t == nil
  t = t or { kind = "other", title = "", status = "pending" }
  for _, key in ipairs({ "kind", "title", "status" }) do
    local v = update[key]
    if type(v) == "string" then
      t[key] = v
    end
  end
  local d = diff_paths(update.content)
  if d then
    t.detail = d
  end
  if fresh then
    self:close_text()
    local last = self:last_line()
    if last ~= nil and last ~= "" and not last:match("^%- %[") then
      self:append({ "" })
    end
    self:append({ tool_line(t) })
    t.abs = self.dropped + #self.lines
    self.tools[id] = t
  elseif t.abs then
    local i = t.abs - self.dropped
    if i >= 1 and i <= #self.lines then
      self:replace(i, i, { tool_line(t) })
    end
  end
end

function Doc:set_plan(update, turn)
  local lines = { "**Plan**" }
  for _, e in ipairs(type(update.entries) == "table" and update.entries or {}) do
    if type(e) == "table" then
      local box = e.status == "completed" and "[x]" or "[ ]"
      local line = ("- %s %s"):format(box, util.sanitize(e.content))
      if e.status == "in_progress" then
        line = line .. " (in progress)"
      end
      lines[#lines + 1] = line
    end
  end
  local p = self.plan
  if p and p.turn == turn then
    local i = p.abs - self.dropped
    if i >= 1 and i + p.len - 1 <= #self.lines then
      self:replace(i, i + p.len - 1, lines)
      p.len = #lines
      return
    end
  end
  self:close_text()
  self:separate()
  self:append(lines)
  self.plan = { abs = self.dropped + #self.lines - #lines + 1, len = #lines, turn = turn }
  self:append({ "" })
end

function Doc:note(text)
  self:close_text()
  self:separate()
  self:append({ "_" .. util.sanitize(text) .. "_", "" })
end

-- ---------------------------------------------------------------- sessions

local function doc_for(sid)
  local d = M.docs[sid]
  if d then
    return d
  end
  d = Doc.new(sid)
  M.docs[sid] = d
  doc_order[#doc_order + 1] = sid
  local max = config.get().transcript.max_sessions or 20
  while #doc_order > max do
    local victim
    for i, s in ipairs(doc_order) do
      if s ~= M.shown and s ~= state.active_session() and s ~= sid then
        victim = i
        break
      end
    end
    if not victim then
      break
    end
    M.docs[table.remove(doc_order, victim)] = nil
  end
  return d
end

M.doc = doc_for

--- Show the document of session sid in the buffer (nil: an empty buffer).
---@param sid string|nil
function M.show(sid)
  if sid == M.shown then
    return
  end
  M.shown = sid
  if not buf_valid() then
    return
  end
  local lines = sid and M.docs[sid] and M.docs[sid].lines or {}
  buf_set(0, -1, lines)
end

-- ---------------------------------------------------------------- local echo
-- The sidecar forwards the agent's stream; most agents do not echo the user's
-- prompt during a live turn, so the plugin writes the prompt itself when the
-- turn starts running, and skips live user_message_chunk updates of turns it
-- echoed (an agent that does echo would otherwise show the prompt twice).

local prompts = {} -- turnId -> {sid=, text=, echoed=}
local inflight = 0 -- acp.prompt requests sent, not yet answered

function M.prompt_sent()
  inflight = inflight + 1
end

--- The acp.prompt request was answered (result nil on error).
function M.prompt_answered(text, result)
  inflight = math.max(0, inflight - 1)
  if type(result) ~= "table" or result.turnId == nil then
    return
  end
  local id = tostring(result.turnId)
  local p = { sid = result.sessionId, text = text, echoed = false }
  prompts[id] = p
  local t = state.turns[id]
  if t and (t.state == "running" or t.state == "ended") then
    M.echo(id)
  end
end

function M.echo(turn_id)
  local p = prompts[turn_id]
  if not p or p.echoed or type(p.sid) ~= "string" then
    return
  end
  p.echoed = true
  local d = doc_for(p.sid)
  d:add_text("user", "prompt:" .. turn_id, p.text)
  d:close_text()
end

-- ---------------------------------------------------------------- handlers

local function chunk_text(content)
  if type(content) ~= "table" then
    return ""
  end
  if content.type == "text" and type(content.text) == "string" then
    return content.text
  elseif content.type == "resource_link" then
    return ("[%s](%s)"):format(util.sanitize(content.name or content.uri), util.sanitize(content.uri))
  elseif content.type == "resource" and type(content.resource) == "table" then
    return ("[resource: %s]"):format(util.sanitize(content.resource.uri))
  elseif content.type == "image" then
    return "[image]"
  elseif content.type == "audio" then
    return "[audio]"
  end
  return ""
end

local CHUNK_KIND = {
  user_message_chunk = "user",
  agent_message_chunk = "agent",
  agent_thought_chunk = "thought",
}

--- acp/sessionUpdate: {sessionId, turnId, replay, update}
function M.on_update(params)
  local sid = params.sessionId
  local update = params.update
  if type(sid) ~= "string" or type(update) ~= "table" then
    return
  end
  local d = doc_for(sid)
  local replay = params.replay == true
  if replay and not d.replaying then
    -- A load replays the whole history: start from a clean document.
    d:clear()
  end
  d.replaying = replay
  local turn = params.turnId ~= nil and params.turnId ~= vim.NIL and tostring(params.turnId) or nil
  local kind = update.sessionUpdate
  local changed, value = state.learn_update(sid, update)
  local ck = CHUNK_KIND[kind]
  if ck then
    if ck == "user" and not replay then
      if (turn and prompts[turn]) or (not turn and inflight > 0) then
        return
      end
    end
    local key = update.messageId
    if key == nil or key == vim.NIL then
      key = (replay and "replay:" or "turn:") .. tostring(turn)
    end
    d:add_text(ck, ck .. ":" .. tostring(key), chunk_text(update.content))
  elseif kind == "tool_call" or kind == "tool_call_update" then
    d:tool(update)
  elseif kind == "plan" then
    d:set_plan(update, turn or "replay")
  elseif kind == "current_mode_update" then
    if changed then
      d:note("mode: " .. tostring(value))
    end
  elseif kind == "config_option_update" then
    if changed then
      d:note("model: " .. tostring(value))
    end
  elseif kind == "session_info_update" then
    if type(update.title) == "string" then
      d:note("title: " .. update.title)
    end
  end
end

--- acp/turn: {sessionId, turnId, state, stopReason, error, answered}
function M.on_turn(params)
  local id = params.turnId ~= nil and params.turnId ~= vim.NIL and tostring(params.turnId) or nil
  if not id then
    return
  end
  if params.state == "running" or params.state == "ended" then
    M.echo(id)
  end
  if params.state == "ended" then
    local sid = params.sessionId
    if type(sid) == "string" then
      local d = doc_for(sid)
      local err = params.error
      if err ~= nil and err ~= vim.NIL then
        local msg = type(err) == "table" and (err.message or vim.inspect(err)) or tostring(err)
        d:note("turn failed: " .. msg)
      elseif params.stopReason ~= nil and params.stopReason ~= vim.NIL and params.stopReason ~= "end_turn" then
        d:note("turn ended: " .. tostring(params.stopReason))
      elseif params.answered == false then
        d:note("no answer: the agent ended the turn without a reply")
      else
        d:close_text()
      end
    end
    prompts[id] = nil
  end
end

--- A load of session sid is coming: its replay (if any) replaces the document.
function M.expect_replay(sid)
  local d = sid and M.docs[sid]
  if d then
    d.replaying = false
  end
end

--- The active session changed (from acp/status).
function M.on_active(sid)
  M.expect_replay(sid)
  M.show(sid)
end

--- Lines of the active session's transcript.
---@return string[]
function M.lines(sid)
  sid = sid or state.active_session()
  local d = sid and M.docs[sid]
  return d and vim.deepcopy(d.lines) or {}
end

--- Open the transcript in a window (reuse one that shows it).
function M.open()
  local b = M.buf()
  local wins = vim.fn.win_findbuf(b)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    vim.cmd(config.get().transcript.open_cmd or "botright split")
    vim.api.nvim_win_set_buf(0, b)
  end
  pcall(vim.api.nvim_win_set_cursor, 0, { vim.api.nvim_buf_line_count(b), 0 })
  return b
end

function M.reset()
  M.docs = {}
  doc_order = {}
  prompts = {}
  inflight = 0
  M.shown = nil
  if buf_valid() then
    buf_set(0, -1, {})
  end
end

M.Doc = Doc

return M
