-- The statusline component: active session title and state.
--
-- Two flavours, because Neovim treats an inserted string differently
-- depending on how it is inserted:
--   * M.component(): escaped (every % doubled). For places where the result is
--     parsed again as a statusline format: %{%...%}, %!, and lualine or any
--     other plugin that concatenates components into 'statusline'.
--   * M.text(): not escaped. For %{...}, whose result is shown literally.
local util = require("acp_sidecar.util")
local config = require("acp_sidecar.config")
local state = require("acp_sidecar.state")

local M = {}

M.SPINNER = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" }
local BUSY = { running = true, cancelling = true, waiting_permission = true }
local frame = 1
local timer = nil

--- Is a turn running (the spinner turns)?
function M.busy(status)
  return type(status) == "table" and BUSY[status.state] == true
end

--- The visible text for a status object (pure: no escaping for the statusline).
---@param status table|nil acp/status params
---@param opts table|nil statusline options (max_length, prefix, format)
---@return string
function M.render(status, opts)
  opts = opts or config.get().statusline or {}
  if type(status) ~= "table" then
    return ""
  end
  if type(opts.format) == "function" then
    local ok, s = pcall(opts.format, status)
    return ok and util.truncate(util.sanitize(s), 200) or ""
  end
  local title = status.title ~= vim.NIL and util.sanitize(status.title) or ""
  local st = status.state ~= vim.NIL and util.sanitize(status.state) or ""
  title = util.truncate(title, opts.max_length or 40)
  local prefix = util.sanitize(opts.prefix or "")
  if opts.prefix and opts.prefix:sub(-1) == " " then
    prefix = prefix .. " "
  end
  local out = prefix
  if M.busy(status) then
    out = out .. M.SPINNER[frame] .. " "
  end
  -- With several agents configured (setup's `agents`): whose session it is.
  local named = (config.get() or {}).agents
  local agent = type(status.agent) == "table" and status.agent.configured or nil
  if type(named) == "table" and not vim.tbl_isempty(named) and type(agent) == "string" and agent ~= "" then
    out = out .. util.truncate(util.sanitize(agent), 30) .. " · "
  end
  if title ~= "" then
    out = out .. title
  elseif type(status.sessionId) == "string" then
    out = out .. "untitled"
  else
    out = out .. "no session"
  end
  if st ~= "" then
    out = out .. " [" .. st .. "]"
  end
  return out
end

--- Unescaped text of the current status (for %{...}).
---@return string
function M.text()
  return M.render(state.status)
end

--- Escaped text of the current status (for %{%...%}, lualine, %!).
---@return string
function M.component()
  return util.stl_escape(M.text())
end

--- Redraw statuslines and tell listeners (User AcpStatus) that the status changed.
function M.changed(status)
  if M.busy(status) and not timer then
    timer = (vim.uv or vim.loop).new_timer()
    timer:start(
      100,
      100,
      vim.schedule_wrap(function()
        if not timer then
          return
        end
        if not M.busy(state.status) then
          timer:stop()
          timer:close()
          timer = nil
          frame = 1
        else
          frame = frame % #M.SPINNER + 1
        end
        pcall(vim.cmd, "redrawstatus!")
      end)
    )
  end
  pcall(vim.cmd, "redrawstatus!")
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "AcpStatus", modeline = false, data = status })
end

return M
