-- What the plugin knows about the sidecar, fed by its notifications (modes,
-- models and the agent's / commands are acp/status's: M.status).
local M = {}

---@type table|nil last acp/status params
M.status = nil
---@type integer|nil client id the last acp/status came from
M.status_client = nil
---@type table<string, table> sessionId -> last acp/sessionInfo params
M.sessions = {}
---@type table<string, table> turnId -> last acp/turn params
M.turns = {}
local turn_order = {}
local MAX_TURNS = 200

function M.reset()
  M.status = nil
  M.status_client = nil
  M.sessions = {}
  M.turns = {}
  turn_order = {}
end

---@return string|nil
function M.active_session()
  return M.status and M.status.sessionId ~= vim.NIL and M.status.sessionId or nil
end

---@param params table
function M.set_status(params, client_id)
  local prev = M.status
  M.status = params
  M.status_client = client_id
  return prev
end

---@param params table acp/sessionInfo
function M.set_session_info(params)
  if type(params.sessionId) ~= "string" then
    return
  end
  M.sessions[params.sessionId] = params
end

---@param params table acp/turn
function M.set_turn(params)
  local id = params.turnId
  if id == nil or id == vim.NIL then
    return
  end
  id = tostring(id)
  if not M.turns[id] then
    turn_order[#turn_order + 1] = id
    if #turn_order > MAX_TURNS then
      local old = table.remove(turn_order, 1)
      M.turns[old] = nil
    end
  end
  M.turns[id] = params
end

return M
