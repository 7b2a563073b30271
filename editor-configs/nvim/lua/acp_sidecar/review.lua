-- Permission requests (acp/permission): asked with vim.ui.select (so a picker
-- plugin takes over), never blocking the sidecar. An edit is shown for review
-- first: for each file of its tool call, a diff tab of the file as it is now
-- (unsaved changes included) against what the sidecar says it becomes (the
-- request's `proposals`; asked again with acp.edit.proposals when the buffer
-- is newer than the one they were computed from). The review opens at the
-- first change, unchanged lines folded; ]c/[c move between changes, ]f/[f
-- between files, ga accepts, gx rejects. A proposal can be changed before
-- accepting it (do takes a hunk back, any edit is kept): the sidecar writes
-- it instead of the agent's text. Dismissing leaves the request pending: gp
-- in the chat, :AcpPermission or the code actions answer it later.
local client = require("acp_sidecar.client")
local util = require("acp_sidecar.util")

local M = {}

---@type table<string, table> requestId -> acp/permission params (pending)
M.pending = {}
local order = {} -- requestIds, oldest first
---@type {rid: string, files: table[]}|nil the open review: one {tab, bufs, path, proposed} per file
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

--- The request's proposals: one {path, uri, version, fit, text, reason} per file.
local function proposals_of(p)
  local out = {}
  for _, prop in ipairs(type(p.proposals) == "table" and p.proposals or {}) do
    if type(prop) == "table" and type(prop.path) == "string" then
      out[#out + 1] = prop
    end
  end
  return out
end

--- The agent's first diff of path in the tool call: shown alone when the
--- sidecar has no text for the file (a conflict, or too large).
local function agent_diff(tool_call, path)
  local content = type(tool_call) == "table" and tool_call.content or nil
  for _, c in ipairs(type(content) == "table" and content or {}) do
    if type(c) == "table" and c.type == "diff" and c.path == path then
      return c
    end
  end
  return {}
end

--- The loaded buffer of path, if any.
local function buffer_of(path)
  local b = vim.fn.bufnr(path)
  if b ~= -1 and vim.api.nvim_buf_is_loaded(b) then
    return b
  end
  return nil
end

--- The current text of path: its buffer when loaded (unsaved changes
--- included), else the file, else nil (no such file).
function M.current_text(path)
  local b = buffer_of(path)
  if b then
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

--- Whether a proposal was computed from an older text than the buffer the
--- sidecar has of the file now (the user typed since).
local function stale(prop)
  local b = buffer_of(prop.path)
  local c = b and client.get()
  if not (c and c.attached_buffers and c.attached_buffers[b]) then
    return false -- the sidecar reads the disk for it: nothing newer to ask for
  end
  return vim.lsp.util.buf_versions[b] ~= prop.version
end

--- cb(proposals) for request p: its own, or asked again when a buffer is newer.
local function fresh_proposals(p, cb)
  local props = proposals_of(p)
  local tc = type(p.toolCall) == "table" and p.toolCall or {}
  local any_stale = false
  for _, prop in ipairs(props) do
    any_stale = any_stale or stale(prop)
  end
  if not (any_stale and type(tc.toolCallId) == "string") then
    return cb(props)
  end
  client.exec("acp.edit.proposals", { sessionId = p.sessionId, toolCallId = tc.toolCallId }, function(err, result)
    vim.schedule(function()
      if err or type(result) ~= "table" then
        util.notify("acp.edit.proposals: " .. ((err and err.message) or "no answer"), vim.log.levels.WARN)
        return cb(props)
      end
      cb(proposals_of(result))
    end)
  end)
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
  for _, f in ipairs(r and r.files or {}) do
    if vim.api.nvim_tabpage_is_valid(f.tab) and #vim.api.nvim_list_tabpages() > 1 then
      vim.cmd("tabclose " .. vim.api.nvim_tabpage_get_number(f.tab))
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
-- acp.permission.respond (nil when every proposal is taken as it is).
local function reviewed_edits(rid)
  local r = M.review
  if not (r and r.rid == key(rid)) then
    return nil
  end
  local edits = {}
  for _, f in ipairs(r.files) do
    if f.proposed and vim.api.nvim_buf_is_valid(f.bufs[2]) then
      local text = table.concat(vim.api.nvim_buf_get_lines(f.bufs[2], 0, -1, false), "\n")
      if f.proposed:sub(-1) == "\n" then
        text = text .. "\n"
      end
      if text ~= f.proposed then
        edits[#edits + 1] = { path = f.path, text = text }
      end
    end
  end
  return #edits > 0 and edits or nil
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

--- The context lines diff mode keeps unfolded around a change ('diffopt').
local function diff_context()
  return tonumber(vim.o.diffopt:match("context:(%d+)")) or 6
end

--- In the current (diff) window: the cursor on the first change, the lines
--- before its context folded away, the change near the top of the window (a
--- picker at the bottom of the screen does not hide it).
local function show_first_change()
  vim.cmd("diffupdate")
  -- Diff mode makes its folds lazily: made now, in both windows, all closed.
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    vim.fn.win_execute(w, "normal! zX")
  end
  vim.cmd("normal! gg")

  if vim.fn.diff_hlID(1, 1) == 0 then
    pcall(vim.cmd, "normal! ]c")
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  -- From the fold above the change's context (the fold line says what is hidden).
  vim.fn.winrestview({ topline = math.max(1, row - diff_context() - 1) })
  vim.cmd("syncbind")
end

-- Go to the review tab of the next (step 1) or previous (-1) file.
local function other_file(step)
  local r = M.review
  if not r then
    return
  end
  local cur = vim.api.nvim_get_current_tabpage()
  for i, f in ipairs(r.files) do
    if f.tab == cur then
      local to = r.files[(i - 1 + step) % #r.files + 1]
      if vim.api.nvim_tabpage_is_valid(to.tab) then
        vim.api.nvim_set_current_tabpage(to.tab)
      end
      return
    end
  end
end

-- One diff tab: the file now against the proposal (index i of n files).
local function open_file(p, prop, i, n)
  local path = prop.path
  local ft = vim.filetype.match({ filename = path }) or ""
  local has_text = type(prop.text) == "string"
  local cur, new, note
  if has_text then
    cur, new = lines_of(M.current_text(path)), lines_of(prop.text)
    note = prop.fit == "applied" and " (the file already holds this edit)" or ""
  else
    -- No text for the file (its diff does not fit, or it is too large): the agent's change alone.
    local d = agent_diff(p.toolCall, path)
    cur = lines_of(type(d.oldText) == "string" and d.oldText or "")
    new = lines_of(type(d.newText) == "string" and d.newText or "")
    note = (" (%s: the agent's change alone)"):format(util.sanitize(prop.reason or prop.fit or "no text"))
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
  -- Diff mode's folds, whatever the window this tab was opened from had set.
  for _, w in ipairs(vim.api.nvim_tabpage_list_wins(tab)) do
    vim.wo[w].foldmethod, vim.wo[w].foldlevel, vim.wo[w].foldenable = "diff", 0, true
  end
  -- The proposal is the whole file after the edit: the user may change it
  -- (do takes a hunk back from the current text) before accepting it.
  local editable = has_text and prop.fit == "applies"
  vim.bo[right].modifiable = editable
  for _, b in ipairs({ left, right }) do
    local o = { buffer = b, nowait = true, silent = true }
    vim.keymap.set("n", "ga", function()
      M.respond(p.requestId, option_of(p, { "allow_once", "allow_always" }))
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: accept the edit (every file)" }))
    vim.keymap.set("n", "gx", function()
      M.respond(p.requestId, option_of(p, { "reject_once", "reject_always" }))
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: reject the edit (every file)" }))
    vim.keymap.set("n", "q", function()
      M.close_review()
    end, vim.tbl_extend("force", o, { desc = "ACP review: close (the request stays pending)" }))
    if n > 1 then
      vim.keymap.set("n", "]f", function()
        other_file(1)
      end, vim.tbl_extend("force", o, { desc = "ACP review: the next file" }))
      vim.keymap.set("n", "[f", function()
        other_file(-1)
      end, vim.tbl_extend("force", o, { desc = "ACP review: the previous file" }))
    end
  end
  local files = n > 1 and (" · file %d/%d ]f [f"):format(i, n) or ""
  vim.wo.winbar = ("%%#DiffAdd# proposed by the agent%s %%* ga accept · gx reject · q later%s"):format(
    editable and " (editable)" or "",
    files
  )
  vim.wo[vim.fn.win_getid(vim.fn.winnr("#"))].winbar = ("%%#DiffDelete# current %s %%*%s"):format(
    util.stl_escape(util.sanitize(rel)),
    util.stl_escape(note)
  )
  show_first_change()
  return { tab = tab, bufs = { left, right }, path = path, proposed = editable and prop.text or nil }
end

--- Open a diff tab per file the request's tool call changes (the first one
--- shown), from its proposals.
function M.open_review(p, proposals)
  if not proposals[1] then
    return false
  end
  M.close_review()
  vim.cmd("stopinsert")
  local files = {}
  for i, prop in ipairs(proposals) do
    files[i] = open_file(p, prop, i, #proposals)
  end
  M.review = { rid = key(p.requestId), files = files }
  vim.api.nvim_set_current_tabpage(files[1].tab)
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
  asking = rid
  fresh_proposals(p, function(proposals)
    if M.pending[rid] ~= p then
      asking = nil -- settled meanwhile
      return
    end
    M.open_review(p, proposals)
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
