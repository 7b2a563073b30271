-- What the plugin knows about the sidecar, fed by its notifications.
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

---@type table<string, {modes: string[], mode: string|nil, models: string[], model: string|nil, commands: string[]}>
M.meta = {}

function M.reset()
  M.status = nil
  M.status_client = nil
  M.sessions = {}
  M.turns = {}
  turn_order = {}
  M.meta = {}
end

---@return string|nil
function M.active_session()
  return M.status and M.status.sessionId ~= vim.NIL and M.status.sessionId or nil
end

---@param sid string|nil
function M.session_meta(sid)
  sid = sid or "_"
  local m = M.meta[sid]
  if not m then
    m = { modes = {}, models = {}, commands = {} }
    M.meta[sid] = m
  end
  return m
end

local function add_unique(list, v)
  if type(v) ~= "string" or v == "" then
    return
  end
  for _, x in ipairs(list) do
    if x == v then
      return
    end
  end
  list[#list + 1] = v
end

--- Values offered by a config option of type select (grouped or not).
local function option_values(opt)
  local out = {}
  for _, o in ipairs(type(opt.options) == "table" and opt.options or {}) do
    if type(o) == "table" then
      if o.value ~= nil then
        add_unique(out, o.value)
      elseif type(o.options) == "table" then
        for _, g in ipairs(o.options) do
          if type(g) == "table" then
            add_unique(out, g.value)
          end
        end
      end
    end
  end
  return out
end

--- Learn modes/models from acp/status fields. A plain string there is the
--- display name (not an id to send back), so only objects
--- ({currentModeId, availableModes} / {id, name} / a config option) add ids.
local function learn(m, kind, v)
  local list = kind == "mode" and m.modes or m.models
  if type(v) == "string" then
    m[kind .. "_name"] = v
  elseif type(v) == "table" then
    local cur = v.currentModeId or v.currentModelId or v.currentValue or v.id or v.value
    if type(cur) == "string" then
      m[kind] = cur
      add_unique(list, cur)
    end
    for _, key in ipairs({ "availableModes", "availableModels" }) do
      for _, x in ipairs(type(v[key]) == "table" and v[key] or {}) do
        if type(x) == "table" then
          add_unique(list, x.id or x.modelId)
        end
      end
    end
    for _, val in ipairs(option_values(v)) do
      add_unique(list, val)
    end
  end
end

---@param params table
function M.set_status(params, client_id)
  local prev = M.status
  M.status = params
  M.status_client = client_id
  local sid = M.active_session()
  if sid then
    local m = M.session_meta(sid)
    learn(m, "mode", params.mode)
    learn(m, "model", params.model)
  end
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

--- Learn from an ACP session/update object (modes, models, slash commands).
---@param sid string
---@param update table
---@return string|nil changed "mode" or "model" when the current value changed
---@return string|nil value the new value
function M.learn_update(sid, update)
  local m = M.session_meta(sid)
  local kind = update.sessionUpdate
  if kind == "current_mode_update" and type(update.currentModeId) == "string" then
    local changed = m.mode ~= update.currentModeId
    m.mode = update.currentModeId
    add_unique(m.modes, update.currentModeId)
    if changed then
      return "mode", update.currentModeId
    end
  elseif kind == "config_option_update" and type(update.configOptions) == "table" then
    local changed, value
    for _, opt in ipairs(update.configOptions) do
      if type(opt) == "table" and (opt.category == "mode" or opt.category == "model") then
        local key = opt.category
        local list = key == "mode" and m.modes or m.models
        for _, v in ipairs(option_values(opt)) do
          add_unique(list, v)
        end
        if type(opt.currentValue) == "string" then
          if m[key] ~= opt.currentValue and key == "model" then
            changed, value = "model", opt.currentValue
          end
          m[key] = opt.currentValue
          add_unique(list, opt.currentValue)
        end
      end
    end
    return changed, value
  elseif kind == "available_commands_update" and type(update.availableCommands) == "table" then
    m.commands = {}
    for _, c in ipairs(update.availableCommands) do
      if type(c) == "table" and type(c.name) == "string" then
        add_unique(m.commands, c.name)
      end
    end
  end
  return nil
end

return M
