-- Per-client handlers for the sidecar's notifications (CONTRACT: "Notifications
-- from the sidecar"). window/showMessageRequest (permissions) and $/progress
-- use Neovim's built-in handlers: vim.ui.select and vim.lsp.status()/LspProgress.
local state = require("acp_sidecar.state")
local statusline = require("acp_sidecar.statusline")
local log = require("acp_sidecar.log")
local util = require("acp_sidecar.util")

local M = {}

local function user_event(pattern, data)
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, modeline = false, data = data })
end

function M.status(_, params, ctx)
  if type(params) ~= "table" then
    return
  end
  local prev = state.set_status(params, ctx and ctx.client_id)
  local sid = state.active_session()
  local prev_sid = prev and prev.sessionId ~= vim.NIL and prev.sessionId or nil
  if sid ~= prev_sid then
    util.safe(require("acp_sidecar.chat").on_active, sid)
  end
  statusline.changed(params)
end

function M.session_info(_, params)
  if type(params) ~= "table" then
    return
  end
  state.set_session_info(params)
  local rs = params.renameState
  if rs == "changed" then
    util.notify(("the agent chose another title: %s"):format(util.sanitize(params.title)))
  elseif rs == "unconfirmed" then
    util.notify(
      ("the agent did not confirm the rename; title is now: %s"):format(util.sanitize(params.title)),
      vim.log.levels.WARN
    )
  end
  user_event("AcpSessionInfo", params)
end

-- Agents that write files themselves (claude-agent-acp) change them behind
-- Neovim's back: look at the disk when a tool call ends and when a turn ends,
-- so unchanged buffers reload ('autoread') and a conflict with unsaved changes
-- is said the way Neovim always says it.
local function look_at_disk()
  vim.schedule(function()
    pcall(vim.cmd, "checktime")
  end)
end

function M.session_update(_, params)
  if type(params) ~= "table" then
    return
  end
  local u = type(params.update) == "table" and params.update or {}
  if u.status == "completed" or u.status == "failed" then
    look_at_disk()
  end
  user_event("AcpSessionUpdate", params)
end

function M.turn(_, params)
  if type(params) ~= "table" then
    return
  end
  if params.state == "ended" then
    look_at_disk()
  end
  state.set_turn(params)
  util.safe(require("acp_sidecar.chat").on_turn, params)
  user_event("AcpTurn", params)
end

function M.permission(_, params)
  if type(params) ~= "table" then
    return
  end
  util.safe(require("acp_sidecar.review").on_permission, params)
  user_event("AcpPermission", params)
end

function M.elicitation(_, params)
  if type(params) ~= "table" then
    return
  end
  util.safe(require("acp_sidecar.ask").on_elicitation, params)
  user_event("AcpElicitation", params)
end

--- workspace/applyEdit: the chat's own handling for its buffers (see
--- chat.apply_edit), Neovim's default for everything else.
function M.apply_edit(err, params, ctx)
  local ok, res = pcall(require("acp_sidecar.chat").apply_edit, params, ctx)
  if ok and res then
    return res
  elseif not ok then
    return { applied = false, failureReason = tostring(res) }
  end
  -- Neovim's default handler, without its print of the edit's label: right
  -- after a permission prompt that print stops at "Press ENTER" and the edit
  -- waits for the key.
  local c = vim.lsp.get_client_by_id(ctx.client_id)
  if err or type(params) ~= "table" or not c then
    return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx)
  end
  local applied, reason = pcall(vim.lsp.util.apply_workspace_edit, params.edit, c.offset_encoding)
  return { applied = applied, failureReason = not applied and tostring(reason) or nil }
end

function M.log_message(err, params, ctx)
  log.add("log", params)
  local default = vim.lsp.handlers["window/logMessage"]
  if default then
    return default(err, params, ctx)
  end
end

local LEVELS = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }

--- window/showMessage: one line (util.notify), the whole text in :AcpLog.
function M.show_message(err, params, ctx)
  log.add("show", params)
  if not err and type(params) == "table" and type(params.message) == "string" then
    util.notify(params.message, LEVELS[params.type] or vim.log.levels.INFO)
    return vim.NIL
  end
  local default = vim.lsp.handlers["window/showMessage"]
  if default then
    return default(err, params, ctx)
  end
end

--- The handlers table for the client config.
function M.build()
  return {
    ["acp/status"] = M.status,
    ["acp/sessionInfo"] = M.session_info,
    ["acp/sessionUpdate"] = M.session_update,
    ["acp/turn"] = M.turn,
    ["acp/permission"] = M.permission,
    ["acp/elicitation"] = M.elicitation,
    ["workspace/applyEdit"] = M.apply_edit,
    ["window/logMessage"] = M.log_message,
    ["window/showMessage"] = M.show_message,
  }
end

return M
