-- window/logMessage and window/showMessage lines of the sidecar, for :AcpLog.
local config = require("acp_sidecar.config")

local M = {}

M.bufname = "acp://log"
M.lines = {}
---@type integer|nil
M.bufnr = nil

local LEVELS = { "ERROR", "WARN", "INFO", "LOG", "DEBUG" }

local function buf_valid()
  return M.bufnr ~= nil and vim.api.nvim_buf_is_valid(M.bufnr)
end

local function set_lines(first, last, lines)
  if not buf_valid() then
    return
  end
  local b = M.bufnr --[[@as integer]]
  vim.bo[b].modifiable = true
  pcall(vim.api.nvim_buf_set_lines, b, first, last, false, lines)
  vim.bo[b].modifiable = false
end

--- Record a message: {type = MessageType, message = string}.
---@param kind string "log" or "show"
---@param params table
function M.add(kind, params)
  if type(params) ~= "table" then
    return
  end
  local level = LEVELS[tonumber(params.type) or 4] or "LOG"
  local msg = tostring(params.message or "")
  local stamp = os.date("%H:%M:%S")
  local new = {}
  for i, l in ipairs(vim.split(msg, "\n", { plain = true })) do
    -- Drop control characters (agent stderr may carry terminal escapes).
    l = l:gsub("\27%[[0-?]*[ -/]*[@-~]?", ""):gsub("%c", "")
    if i == 1 then
      new[#new + 1] = ("%s %-5s %s%s"):format(stamp, level, kind == "show" and "[message] " or "", l)
    else
      new[#new + 1] = "    " .. l
    end
  end
  local was_empty = #M.lines == 0
  vim.list_extend(M.lines, new)
  if was_empty then
    set_lines(0, -1, new)
  else
    set_lines(-1, -1, new)
  end
  local max = config.get().log.max_lines or 2000
  if #M.lines > max then
    local k = #M.lines - max
    M.lines = vim.list_slice(M.lines, k + 1)
    set_lines(0, k, {})
  end
end

--- Open the log buffer.
function M.open()
  if not buf_valid() then
    local b = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(b, M.bufname)
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "hide"
    vim.bo[b].swapfile = false
    vim.bo[b].filetype = "log"
    M.bufnr = b
    vim.bo[b].modifiable = true
    vim.api.nvim_buf_set_lines(b, 0, -1, false, M.lines)
    vim.bo[b].modifiable = false
  end
  local b = M.bufnr --[[@as integer]]
  local wins = vim.fn.win_findbuf(b)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, b)
  end
  pcall(vim.api.nvim_win_set_cursor, 0, { vim.api.nvim_buf_line_count(b), 0 })
  return b
end

return M
