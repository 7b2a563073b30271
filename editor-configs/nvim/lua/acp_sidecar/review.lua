-- Permission requests (acp/permission): asked with vim.ui.select (so a picker
-- plugin takes over), never blocking the sidecar. An edit's diff is shown for
-- review first: the file as it is now (unsaved changes included) against the
-- agent's proposed text, side by side in a diff tab, with ga (accept) and gx
-- (reject). The proposal can be changed before accepting it (do takes a hunk
-- back, any edit is kept): the sidecar writes it instead of the agent's text.
-- Dismissing leaves the request pending: gp in the chat, :AcpPermission or
-- the code actions answer it later.
local client = require("acp_sidecar.client")
local util = require("acp_sidecar.util")

local M = {}

---@type table<string, table> requestId -> acp/permission params (pending)
M.pending = {}
local order = {} -- requestIds, oldest first
---@type {tab: integer, rid: string, bufs: integer[]}|nil the open review
M.review = nil
local asking = nil -- requestId whose vim.ui.select is open

function M.pending_count()
  local n = 0
  for _ in pairs(M.pending) do
    n = n + 1
  end
  return n
end

local function key(rid)
  return type(rid) == "string" and rid or vim.json.encode(rid)
end

--- The diffs of a tool call: {path=, oldText=, newText=}.
function M.diffs(tool_call)
  local out = {}
  local content = type(tool_call) == "table" and tool_call.content or nil
  for _, c in ipairs(type(content) == "table" and content or {}) do
    if type(c) == "table" and c.type == "diff" and type(c.path) == "string" and type(c.newText) == "string" then
      out[#out + 1] = c
    end
  end
  return out
end

--- The current text of path: its buffer when loaded (unsaved changes
--- included), else the file, else nil (no such file).
function M.current_text(path)
  local b = vim.fn.bufnr(path)
  if b ~= -1 and vim.api.nvim_buf_is_loaded(b) then
    local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
    return vim.bo[b].eol and text .. "\n" or text
  end
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local data = f:read("*a")
  f:close()
  return data
end

local function count(text, part)
  local n, from = 0, 1
  while true do
    local _, last = text:find(part, from, true)
    if not last then
      return n
    end
    n, from = n + 1, last + 1
  end
end

-- One diff against the text; the rules of sidecar/core/diff_apply.py (an
-- agent's diff is the whole file, or only the part that changes).
local function apply_one(current, old, new)
  if current == new then
    return current, "applied"
  end
  if type(old) ~= "string" then
    return new, "applies" -- a new file, or the whole file rewritten
  end
  if current == nil or old == "" then
    if old == "" and (current == nil or current == "") then
      return new, "applies"
    end
    return nil, "conflict"
  end
  if new ~= "" and new:find(old, 1, true) and current:find(new, 1, true) then
    return current, "applied"
  end
  local olds = count(current, old)
  if olds == 1 then
    local first, last = current:find(old, 1, true)
    return current:sub(1, first - 1) .. new .. current:sub(last + 1), "applies"
  end
  if olds == 0 and new ~= "" and current:find(new, 1, true) then
    return current, "applied"
  end
  return nil, "conflict"
end

--- What the file becomes under its diffs (in order): text, and "applies",
--- "applied" (the file holds them already) or "conflict" (text nil).
function M.apply_diffs(current, diffs)
  local text, applied = current, true
  for _, d in ipairs(diffs) do
    local fit
    text, fit = apply_one(text, d.oldText, d.newText)
    if fit == "conflict" then
      return nil, fit
    end
    applied = applied and fit == "applied"
  end
  if applied then
    return current, "applied"
  end
  return text, "applies"
end

local function lines_of(text)
  return vim.split((text or ""):gsub("\n$", ""), "\n", { plain = true })
end

local function scratch(name, lines, ft)
  local b = vim.api.nvim_create_buf(false, true)
  vim.bo[b].bufhidden = "wipe"
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  pcall(vim.api.nvim_buf_set_name, b, name)
  vim.bo[b].modifiable = false
  if ft and ft ~= "" then
    vim.bo[b].filetype = ft
  end
  return b
end

function M.close_review()
  local r = M.review
  M.review = nil
  if r and vim.api.nvim_tabpage_is_valid(r.tab) then
    local tabs = vim.api.nvim_list_tabpages()
    if #tabs > 1 then
      vim.cmd("tabclose " .. vim.api.nvim_tabpage_get_number(r.tab))
    end
  end
end

local function option_of(p, kinds)
  for _, want in ipairs(kinds) do
    for _, o in ipairs(type(p.options) == "table" and p.options or {}) do
      if type(o) == "table" and o.kind == want then
        return o
      end
    end
  end
  return nil
end

-- What the user changed in the open review of request rid: the edits for
-- acp.permission.respond (nil when the proposal is taken as it is).
local function reviewed_edits(rid)
  local r = M.review
  if not (r and r.rid == key(rid) and r.proposed and vim.api.nvim_buf_is_valid(r.bufs[2])) then
    return nil
  end
  local text = table.concat(vim.api.nvim_buf_get_lines(r.bufs[2], 0, -1, false), "\n")
  if r.proposed:sub(-1) == "\n" then
    text = text .. "\n"
  end
  if text == r.proposed then
    return nil
  end
  return { { path = r.path, text = text } }
end

--- Answer request rid with option o (with what the user changed in its
--- review when o allows the edit).
function M.respond(rid, o)
  if not o or not o.optionId then
    return
  end
  local args = { requestId = rid, optionId = o.optionId }
  if o.kind == "allow_once" or o.kind == "allow_always" then
    args.edits = reviewed_edits(rid)
  end
  client.exec("acp.permission.respond", args, function(err)
    if err then
      util.notify("acp.permission.respond: " .. (err.message or ""), vim.log.levels.ERROR)
    end
  end)
end

--- Open a diff tab for the request's edit (the first file its tool call
--- changes): the file now against the file after the agent's diffs.
function M.open_review(p)
  local diffs = M.diffs(p.toolCall)
  if not diffs[1] then
    return false
  end
  local path = diffs[1].path
  local mine = vim.tbl_filter(function(d)
    return d.path == path
  end, diffs)
  M.close_review()
  vim.cmd("stopinsert")
  local ft = vim.filetype.match({ filename = path }) or ""
  local current = M.current_text(path)
  local proposed, fit = M.apply_diffs(current, mine)
  local cur, new, note = lines_of(current), lines_of(proposed), ""
  if fit == "conflict" then
    -- The file no longer holds what the agent changes: show its change alone.
    cur = lines_of(type(mine[1].oldText) == "string" and mine[1].oldText or "")
    new = lines_of(mine[1].newText)
    note = " (the file no longer has the agent's old text: its change alone)"
  elseif fit == "applied" then
    note = " (the file already holds this edit)"
  end
  local rel = vim.fn.fnamemodify(path, ":~:.")
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local left = scratch("acp-review://current/" .. rel, cur, ft)
  vim.api.nvim_win_set_buf(0, left)
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  local right = scratch("acp-review://proposed/" .. rel, new, ft)
  vim.api.nvim_win_set_buf(0, right)
  vim.cmd("diffthis")
  -- The proposal is the whole file after the edit: the user may change it
  -- (do takes a hunk back from the current text) before accepting it.
  local editable = fit == "applies"
  vim.bo[right].modifiable = editable
  M.review = {
    tab = tab,
    rid = key(p.requestId),
    bufs = { left, right },
    path = path,
    proposed = editable and proposed or nil,
  }
  for _, b in ipairs({ left, right }) do
    local o = { buffer = b, nowait = true, silent = true }
    vim.keymap.set("n", "ga", function()
      M.respond(p.requestId, option_of(p, { "allow_once", "allow_always" }))
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: accept the edit" }))
    vim.keymap.set("n", "gx", function()
      M.respond(p.requestId, option_of(p, { "reject_once", "reject_always" }))
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: reject the edit" }))
    vim.keymap.set("n", "q", function()
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: close (the request stays pending)" }))
  end
  vim.wo.winbar = ("%%#DiffAdd# proposed by the agent%s %%* ga accept · gx reject · q later"):format(
    editable and " (editable)" or ""
  )
  vim.wo[vim.fn.win_getid(vim.fn.winnr("#"))].winbar = ("%%#DiffDelete# current %s %%*%s"):format(
    util.stl_escape(util.sanitize(rel)),
    util.stl_escape(note)
  )
  return true
end

local function title_of(p)
  local tc = type(p.toolCall) == "table" and p.toolCall or {}
  local t = util.sanitize(tc.title)
  if t == "" then
    t = "a tool call"
  end
  return t
end

--- Ask for request rid: the review (for an edit), then vim.ui.select.
function M.ask(rid)
  local p = M.pending[rid]
  if not p or asking == rid then
    return
  end
  local has_diff = #M.diffs(p.toolCall) > 0
  if has_diff then
    M.open_review(p)
  end
  asking = rid
  vim.cmd("redraw")
  local options = type(p.options) == "table" and p.options or {}
  vim.ui.select(options, {
    prompt = ("The agent asks: %s"):format(title_of(p)),
    kind = "acp_sidecar.permission",
    format_item = function(o)
      return util.sanitize(o.name or o.optionId)
    end,
  }, function(choice)
    asking = nil
    -- Out of the picker's callback: a window change right after the default
    -- inputlist would stop at a "Press ENTER" prompt.
    vim.schedule(function()
      vim.cmd("redraw")
      if choice then
        M.respond(p.requestId, choice)
        if M.review and M.review.rid == rid then
          M.close_review()
        end
      elseif M.pending[rid] then
        util.notify("the permission request is still waiting: gp in the chat, :AcpPermission or a code action")
      end
    end)
  end)
end

--- gp / :AcpPermission: ask again for the oldest waiting request.
function M.answer_pending()
  for _, rid in ipairs(order) do
    if M.pending[rid] then
      asking = nil
      return M.ask(rid)
    end
  end
  util.notify("no permission request is waiting")
end

--- acp/permission
function M.on_permission(params)
  if type(params) ~= "table" or params.requestId == nil then
    return
  end
  if require("acp_sidecar.config").get().review == false then
    return -- the sidecar's own dialog asks
  end
  local rid = key(params.requestId)
  if params.state == "pending" then
    if not M.pending[rid] then
      order[#order + 1] = rid
    end
    M.pending[rid] = params
    require("acp_sidecar.chat").refresh_hints()
    vim.schedule(function()
      M.ask(rid)
    end)
  else
    M.pending[rid] = nil
    for i, r in ipairs(order) do
      if r == rid then
        table.remove(order, i)
        break
      end
    end
    if M.review and M.review.rid == rid then
      M.close_review()
    end
    require("acp_sidecar.chat").refresh_hints()
  end
end

return M
