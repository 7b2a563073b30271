-- Permission requests (acp/permission): asked with vim.ui.select (so a picker
-- plugin takes over), never blocking the sidecar. An edit's diff is shown for
-- review first: the file as it is now (unsaved changes included) against the
-- agent's proposed text, side by side in a diff tab, with ga (accept) and gx
-- (reject). Dismissing leaves the request pending: gp in the chat,
-- :AcpPermission or the code actions answer it later.
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
--- included), else the file, else the agent's oldText (or nothing).
function M.current_lines(path, old_text)
  local b = vim.fn.bufnr(path)
  if b ~= -1 and vim.api.nvim_buf_is_loaded(b) then
    return vim.api.nvim_buf_get_lines(b, 0, -1, false)
  end
  local f = io.open(path, "rb")
  if f then
    local data = f:read("*a")
    f:close()
    return vim.split(data:gsub("\n$", ""), "\n", { plain = true })
  end
  if type(old_text) == "string" then
    return vim.split(old_text:gsub("\n$", ""), "\n", { plain = true })
  end
  return {}
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

--- Answer request rid with option o.
function M.respond(rid, o)
  if not o or not o.optionId then
    return
  end
  client.exec("acp.permission.respond", { requestId = rid, optionId = o.optionId }, function(err)
    if err then
      util.notify("acp.permission.respond: " .. (err.message or ""), vim.log.levels.ERROR)
    end
  end)
end

--- Open a diff tab for the request's edit (the first diff of its tool call).
function M.open_review(p)
  local d = M.diffs(p.toolCall)[1]
  if not d then
    return false
  end
  M.close_review()
  vim.cmd("stopinsert")
  local ft = vim.filetype.match({ filename = d.path }) or ""
  local cur = M.current_lines(d.path, d.oldText)
  local new = vim.split(d.newText:gsub("\n$", ""), "\n", { plain = true })
  local rel = vim.fn.fnamemodify(d.path, ":~:.")
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local left = scratch("acp-review://current/" .. rel, cur, ft)
  vim.api.nvim_win_set_buf(0, left)
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  local right = scratch("acp-review://proposed/" .. rel, new, ft)
  vim.api.nvim_win_set_buf(0, right)
  vim.cmd("diffthis")
  M.review = { tab = tab, rid = key(p.requestId), bufs = { left, right } }
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
  vim.wo.winbar = "%#DiffAdd# proposed by the agent %* ga accept · gx reject · q later"
  vim.wo[vim.fn.win_getid(vim.fn.winnr("#"))].winbar = ("%%#DiffDelete# current %s %%*"):format(
    util.stl_escape(util.sanitize(rel))
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
