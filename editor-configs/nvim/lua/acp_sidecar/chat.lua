-- The chat: a window on the session's conversation document, the Markdown
-- file the sidecar keeps for every session (docs/protocol.md, "Conversation
-- documents"). The sidecar grows it while it is open (workspace/applyEdit);
-- what the user writes below its marker line (the input area) is the next
-- prompt, sent with acp.prompt {uri}. The plugin keeps no conversation of its
-- own: a session loaded from the history shows all of it.
local client = require("acp_sidecar.client")
local config = require("acp_sidecar.config")
local state = require("acp_sidecar.state")
local util = require("acp_sidecar.util")

local M = {}

local MARKER = "^<!%-%- acp%-sidecar: write your prompt below this line"

---@type table<integer, {uri: string, sid: string}> chat buffers
M.bufs = {}
---@type integer|nil the chat window
M.win = nil
---@type integer|nil buffer of the active session's chat
M.current = nil

local ns = vim.api.nvim_create_namespace("acp_sidecar_chat")

local function win_valid()
  return M.win ~= nil and vim.api.nvim_win_is_valid(M.win)
end

--- Is buffer b a chat buffer?
function M.is_chat(b)
  return M.bufs[b] ~= nil and vim.api.nvim_buf_is_valid(b)
end

--- The chat buffer of a conversation document's URI, if one is open.
function M.buf_of_uri(uri)
  for b, c in pairs(M.bufs) do
    if c.uri == uri and vim.api.nvim_buf_is_valid(b) then
      return b
    end
  end
  return nil
end

--- 0-based index of the marker line of the input area (the last one), or nil.
--- Searched from the end, a few lines at a time: it is near the end, and a long
--- conversation above it must not make every edit read the whole buffer.
function M.marker_row(b)
  local last = vim.api.nvim_buf_line_count(b)
  local step = 64
  while last > 0 do
    local first = math.max(0, last - step)
    local lines = vim.api.nvim_buf_get_lines(b, first, last, false)
    for i = #lines, 1, -1 do
      if lines[i]:match(MARKER) then
        return first + i - 1
      end
    end
    last = first
    step = step * 4
  end
  return nil
end

--- What the user wrote in the input area.
function M.input_text(b)
  local row = M.marker_row(b)
  if not row then
    return ""
  end
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(b, row + 1, -1, false), "\n"))
end

--- Keep one line to type on below the marker, and a hint next to it.
local function tidy(b)
  local row = M.marker_row(b)
  if not row then
    return
  end
  if row == vim.api.nvim_buf_line_count(b) - 1 then
    vim.api.nvim_buf_set_lines(b, -1, -1, false, { "" })
  end
  vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
  local hint = "<C-s> send · <C-c> cancel · gs sessions · grn rename · q close"
  local pending = require("acp_sidecar.review").pending_count()
  local chunks = { { hint, "Comment" } }
  if pending > 0 then
    chunks = { { ("⚠ %d permission request(s) waiting: gp to answer"):format(pending), "WarningMsg" } }
  end
  pcall(vim.api.nvim_buf_set_extmark, b, ns, row, 0, { virt_lines = { chunks } })
  vim.bo[b].modified = false
end

M.tidy = tidy

function M.refresh_hints()
  for b in pairs(M.bufs) do
    if vim.api.nvim_buf_is_valid(b) then
      pcall(tidy, b)
    end
  end
end

-- ---------------------------------------------------------------- edits

--- workspace/applyEdit for chat buffers. The sidecar ties each edit to the
--- buffer version it saw; Neovim's default handler drops an edit to a newer
--- buffer (and prints a message) whenever the user typed meanwhile. Text
--- above the input area is the sidecar's alone, so an edit there is applied
--- whatever the user typed below it. Returns nil when the edit is not for a
--- chat buffer (the default handler takes it).
function M.apply_edit(params, ctx)
  local edit = type(params) == "table" and params.edit or nil
  if type(edit) ~= "table" then
    return nil
  end
  local uri, version, edits
  if type(edit.documentChanges) == "table" and #edit.documentChanges == 1 then
    local dc = edit.documentChanges[1]
    if type(dc) == "table" and type(dc.textDocument) == "table" then
      uri, version, edits = dc.textDocument.uri, dc.textDocument.version, dc.edits
    end
  elseif type(edit.changes) == "table" and edit.documentChanges == nil then
    local n = 0
    for k, v in pairs(edit.changes) do
      uri, edits, n = k, v, n + 1
    end
    if n ~= 1 then
      return nil
    end
  end
  local b = uri and M.buf_of_uri(uri) or nil
  if not b or type(edits) ~= "table" then
    return nil
  end
  local c = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = c and c.offset_encoding or "utf-16"
  local row = M.marker_row(b)
  local current = vim.lsp.util.buf_versions[b] or 0
  if type(version) == "number" and version > 0 and current > version then
    -- Typed since: only edits wholly above the input area still fit.
    for _, e in ipairs(edits) do
      if not row or e.range["end"].line > row then
        return { applied = false, failureReason = "the input area changed meanwhile" }
      end
    end
  end
  -- Windows whose cursor is in the input area stay there, at the same place
  -- counted from the end (the conversation grows above it).
  local count = vim.api.nvim_buf_line_count(b)
  local keep = {}
  for _, w in ipairs(vim.fn.win_findbuf(b)) do
    local cur = vim.api.nvim_win_get_cursor(w)
    if row and cur[1] - 1 > row then
      keep[w] = { count - cur[1], cur[2] }
    end
  end
  local ok, err = pcall(vim.lsp.util.apply_text_edits, edits, b, encoding)
  if not ok then
    return { applied = false, failureReason = tostring(err) }
  end
  pcall(tidy, b)
  count = vim.api.nvim_buf_line_count(b)
  for w, k in pairs(keep) do
    if vim.api.nvim_win_is_valid(w) and vim.api.nvim_win_get_buf(w) == b then
      local line = math.max(1, count - k[1])
      local text = vim.api.nvim_buf_get_lines(b, line - 1, line, false)[1] or ""
      pcall(vim.api.nvim_win_set_cursor, w, { line, math.min(k[2], #text) })
    end
  end
  return { applied = true }
end

-- ---------------------------------------------------------------- buffer

local function map(b, modes, lhs, fn, desc)
  vim.keymap.set(modes, lhs, fn, { buffer = b, nowait = true, silent = true, desc = "ACP chat: " .. desc })
end

local function setup_buffer(b)
  vim.bo[b].buftype = "acwrite" -- no "file changed on disk" checks: the sidecar writes it
  vim.bo[b].bufhidden = "hide"
  vim.bo[b].swapfile = false
  vim.bo[b].undofile = false
  vim.bo[b].filetype = "markdown"
  local group = vim.api.nvim_create_augroup("acp_sidecar_chat_" .. b, { clear = true })
  -- The sidecar saves the conversation; :w has nothing to do.
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    group = group,
    buffer = b,
    callback = function()
      vim.bo[b].modified = false
    end,
  })
  -- Never "No write since last change": the file is the sidecar's.
  vim.api.nvim_create_autocmd({ "BufModifiedSet", "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = b,
    callback = function()
      if vim.bo[b].modified then
        vim.bo[b].modified = false
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "BufWipeout" }, {
    group = group,
    buffer = b,
    callback = function()
      M.bufs[b] = nil
    end,
  })
  map(b, { "n", "i" }, "<C-s>", function()
    M.send(b)
  end, "send the input area")
  map(b, "n", "<CR>", function()
    local row = M.marker_row(b)
    if row and vim.api.nvim_win_get_cursor(0)[1] - 1 > row then
      M.send(b)
    else
      vim.cmd("normal! \r")
    end
  end, "send (in the input area)")
  map(b, { "n", "i" }, "<C-c>", function()
    M.cancel(b)
  end, "cancel the running turn")
  map(b, "n", "q", M.close, "close the window")
  map(b, "n", "grn", function()
    require("acp_sidecar.commands").rename_prompt(M.bufs[b] and M.bufs[b].sid)
  end, "rename the session")
  map(b, "n", "gs", function()
    require("acp_sidecar.commands").sessions()
  end, "open the session picker")
  map(b, "n", "gS", function()
    require("acp_sidecar.commands").session_menu()
  end, "pick a session to open, fork, rename or delete")
  map(b, "n", "gp", function()
    require("acp_sidecar.review").answer_pending()
  end, "answer a waiting permission request")
end

--- The buffer of the conversation document at uri (session sid), loaded and
--- attached to the sidecar.
local function chat_buffer(uri, sid, lsp_client)
  local b = M.buf_of_uri(uri)
  if not b then
    local path = vim.uri_to_fname(uri)
    b = vim.fn.bufadd(path)
    vim.bo[b].swapfile = false
    vim.fn.bufload(b)
    M.bufs[b] = { uri = uri, sid = sid }
    setup_buffer(b)
  end
  if lsp_client and not vim.lsp.buf_is_attached(b, lsp_client.id) then
    vim.lsp.buf_attach_client(b, lsp_client.id)
  end
  -- `/` commands and `@` files as the sidecar completes them in the input area (0.11's
  -- built-in LSP completion, opened by the trigger characters as you type).
  if lsp_client and vim.lsp.completion and vim.lsp.completion.enable then
    pcall(vim.lsp.completion.enable, true, lsp_client.id, b, { autotrigger = true })
    local completeopt = config.get().chat.completeopt
    if completeopt then
      pcall(function() -- global-local since 0.11: your global value stays
        vim.bo[b].completeopt = completeopt
      end)
    end
  end
  pcall(tidy, b)
  return b
end

local function open_window(b)
  local opts = config.get().chat
  if win_valid() then
    vim.api.nvim_win_set_buf(M.win, b)
    return M.win
  end
  if opts.layout == "float" then
    local f = opts.float or {}
    local w = math.floor(vim.o.columns * (f.width or 0.8))
    local h = math.floor((vim.o.lines - 2) * (f.height or 0.8))
    M.win = vim.api.nvim_open_win(b, true, {
      relative = "editor",
      width = w,
      height = h,
      row = math.floor((vim.o.lines - 2 - h) / 2),
      col = math.floor((vim.o.columns - w) / 2),
      border = f.border or "rounded",
      title = " ACP chat ",
      title_pos = "center",
    })
  else
    vim.cmd(opts.split_cmd or "botright vsplit")
    M.win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(M.win, b)
    local width = opts.width or 0.4
    if width < 1 then
      width = math.floor(vim.o.columns * width)
    end
    if opts.split_cmd == nil or opts.split_cmd:find("vsplit") or opts.split_cmd:find("vert") then
      pcall(vim.api.nvim_win_set_width, M.win, math.max(30, width))
    end
  end
  local wo = vim.wo[M.win]
  wo.wrap = true
  wo.smoothscroll = true -- a long paragraph streaming in still shows its end
  wo.linebreak = true
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
  wo.conceallevel = 2
  wo.foldmethod = "expr"
  wo.foldexpr = "v:lua.require'acp_sidecar.chat'.foldexpr(v:lnum)"
  wo.foldlevel = 0
  wo.foldenable = true
  wo.winfixwidth = true
  return M.win
end

--- Folds: the diffs of tool calls (```diff fences) fold, the rest is open.
function M.foldexpr(lnum)
  local line = vim.fn.getline(lnum)
  if line:match("^```diff") then
    return ">1"
  end
  if line:match("^```%s*$") and vim.fn.foldlevel(lnum - 1) > 0 then
    return "<1"
  end
  -- A line no diff holds (a diff's lines start with a space, +, -, @, \ or are
  -- cut with "…"): outside any fold, a level known outright. After a change,
  -- Neovim looks back for such a line before it recomputes; with "=" on every
  -- line it would look back to the top, and a growing answer would cost the
  -- whole chat on every edit.
  if line:match("^[%w#*_>|%[]") then
    return "0"
  end
  return "="
end

local function to_input(win, b)
  local count = vim.api.nvim_buf_line_count(b)
  local last = vim.api.nvim_buf_get_lines(b, count - 1, count, false)[1] or ""
  pcall(vim.api.nvim_win_set_cursor, win, { count, #last })
end

--- Show session sid's conversation in the chat window.
---@param sid string
---@param opts {focus: boolean|nil, context: string[]|nil}|nil
function M.show(sid, opts)
  opts = opts or {}
  client.exec("acp.session.transcript", { sessionId = sid }, function(err, result)
    if err or type(result) ~= "table" or type(result.uri) ~= "string" then
      util.notify("acp.session.transcript: " .. (err and err.message or "no document"), vim.log.levels.ERROR)
      return
    end
    local c = client.get()
    local prev = vim.api.nvim_get_current_win()
    local b = chat_buffer(result.uri, result.sessionId or sid, c)
    M.current = b
    local win = open_window(b)
    if opts.context and #opts.context > 0 then
      M.add_context(b, opts.context)
    end
    to_input(win, b)
    if opts.focus == false then
      pcall(vim.api.nvim_set_current_win, prev)
    else
      vim.api.nvim_set_current_win(win)
      if config.get().chat.start_insert then
        vim.cmd("startinsert!")
      end
    end
  end)
end

--- Open the chat on the active session (a new session when there is none).
---@param opts {focus: boolean|nil, context: string[]|nil, session_id: string|nil}|nil
function M.open(opts)
  opts = opts or {}
  local sid = opts.session_id or state.active_session()
  if sid then
    return M.show(sid, opts)
  end
  client.exec("acp.session.new", {}, function(err, result)
    if err or type(result) ~= "table" then
      util.notify("acp.session.new: " .. (err and err.message or "no session"), vim.log.levels.ERROR)
      return
    end
    M.show(result.sessionId, opts)
  end)
end

--- A deleted session: its chat buffers go (the sidecar no longer writes them, the file is gone).
function M.forget(sid)
  for b, c in pairs(M.bufs) do
    if c.sid == sid then
      M.bufs[b] = nil
      if M.current == b then
        M.current = nil
      end
      if vim.api.nvim_buf_is_valid(b) then
        pcall(vim.api.nvim_buf_delete, b, { force = true })
      end
    end
  end
end

function M.visible()
  return win_valid() and M.is_chat(vim.api.nvim_win_get_buf(M.win))
end

function M.close()
  if win_valid() then
    if #vim.api.nvim_tabpage_list_wins(0) == 1 and vim.fn.tabpagenr("$") == 1 then
      vim.cmd("enew")
    else
      pcall(vim.api.nvim_win_close, M.win, false)
    end
  end
  M.win = nil
end

--- :AcpChat: close a visible chat, else open it. With context lines (a
--- visual selection) it always opens and adds them to the input area.
function M.toggle(opts)
  opts = opts or {}
  if not opts.context and M.visible() then
    M.close()
    return
  end
  M.open(opts)
end

--- Append text to the input area (context from a selection).
function M.add_context(b, lines)
  local row = M.marker_row(b)
  if not row then
    return
  end
  local have = vim.api.nvim_buf_get_lines(b, row + 1, -1, false)
  while #have > 0 and vim.trim(have[#have]) == "" do
    table.remove(have)
  end
  local new = vim.list_extend(vim.deepcopy(have), #have > 0 and { "" } or {})
  vim.list_extend(new, lines)
  new[#new + 1] = ""
  vim.api.nvim_buf_set_lines(b, row + 1, -1, false, new)
end

--- Context lines for lines line1..line2 of buffer src: the file name and range,
--- then the text in a fence.
function M.context_lines(src, line1, line2)
  local name = vim.api.nvim_buf_get_name(src)
  name = name ~= "" and vim.fn.fnamemodify(name, ":~:.") or "[No Name]"
  local ft = vim.bo[src].filetype or ""
  local text = vim.api.nvim_buf_get_lines(src, line1 - 1, line2, false)
  local fence = "```"
  for _, l in ipairs(text) do
    while l:find(fence, 1, true) do
      fence = fence .. "`"
    end
  end
  local out = { ("From `%s`, lines %d-%d:"):format(name, line1, line2), fence .. ft }
  vim.list_extend(out, text)
  out[#out + 1] = fence
  return out
end

-- ---------------------------------------------------------------- actions

function M.send(b)
  local c = M.bufs[b]
  if not c then
    return
  end
  if M.input_text(b) == "" then
    util.notify("write your prompt below the line, then <C-s>")
    return
  end
  client.exec("acp.prompt", { uri = c.uri }, util.report_prompt)
end

function M.cancel(b)
  local c = b and M.bufs[b]
  local arg = {}
  if c and c.sid then
    arg.sessionId = c.sid
  end
  client.exec("acp.cancel", arg, function(err, result)
    if err then
      util.notify("acp.cancel: " .. (err.message or ""), vim.log.levels.ERROR)
    elseif type(result) == "table" and result.cancelled == false then
      util.notify("nothing is running")
    end
  end)
end

-- ---------------------------------------------------------------- events

--- The active session changed: a visible chat follows it.
function M.on_active(sid)
  if not sid or not M.visible() then
    return
  end
  local shown = M.bufs[vim.api.nvim_win_get_buf(M.win)]
  if shown and shown.sid == sid then
    return
  end
  M.show(sid, { focus = vim.api.nvim_get_current_win() == M.win })
end

--- A turn ended: tell the user when the chat does not show it.
function M.on_turn(params)
  if params.state ~= "ended" or not config.get().chat.notify_hidden then
    return
  end
  local sid = params.sessionId
  if M.visible() then
    local shown = M.bufs[vim.api.nvim_win_get_buf(M.win)]
    if shown and shown.sid == sid then
      return
    end
  end
  local info = state.sessions[sid]
  local title = info and type(info.title) == "string" and info.title or nil
  if not title and state.status and state.status.sessionId == sid and type(state.status.title) == "string" then
    title = state.status.title
  end
  local reason = params.stopReason
  local how = "answered"
  if reason ~= nil and reason ~= vim.NIL and reason ~= "end_turn" then
    how = "stopped (" .. tostring(reason) .. ")"
  elseif params.answered == false then
    how = "gave no answer"
  end
  util.notify(("the agent %s%s: :AcpChat shows it"):format(how, title and (" in " .. util.sanitize(title)) or ""))
end

return M
