-- The agent's questions (acp/elicitation): each field asked with vim.ui.select
-- (choices, yes/no) or vim.ui.input (text, numbers), one after the other, then
-- answered with acp.elicitation.respond. The sidecar read the form and checks
-- and converts the answers (typed text such as "4" or "yes" is fine); when it
-- refuses one, the message names the field and the question is asked again.
-- Escape (or an empty choice) at any field declines the whole question.
local client = require("acp_sidecar.client")
local util = require("acp_sidecar.util")

local M = {}

---@type table<string, table> elicitationId -> acp/elicitation params (pending)
M.pending = {}

local function respond(id, args, on_refused)
  args.elicitationId = id
  client.exec("acp.elicitation.respond", args, function(err)
    if err then
      util.notify("The agent's question: " .. (err.message or ""), vim.log.levels.WARN)
      if on_refused and M.pending[id] then
        vim.schedule(on_refused)
      end
    end
  end)
end

local function label(q, f)
  local text = q.message .. " — " .. f.title
  if f.description and f.description ~= vim.NIL then
    text = text .. " (" .. f.description .. ")"
  end
  if f.kind == "multiselect" then
    text = text .. " [comma separated]"
  end
  return text
end

local function ask_field(q, f, done)
  if f.kind == "enum" or f.kind == "boolean" then
    local items = f.kind == "boolean" and { { title = "Yes", value = true }, { title = "No", value = false } }
      or f.options
    if not f.required then
      items = vim.list_extend({ { title = "(no answer)", value = vim.NIL } }, items)
    end
    vim.ui.select(items, {
      prompt = label(q, f),
      format_item = function(item)
        return item.title
      end,
    }, function(item)
      if item == nil then
        return done(nil)
      end
      done(true, item.value)
    end)
    return
  end
  local default = f.default
  if type(default) == "table" then
    default = table.concat(default, ", ")
  end
  vim.ui.input({
    prompt = label(q, f) .. ": ",
    default = default ~= nil and default ~= vim.NIL and tostring(default) or nil,
  }, function(text)
    if text == nil then
      return done(nil)
    end
    done(true, text)
  end)
end

--- Ask every field of question id in turn; Escape declines.
function M.ask(id)
  local q = M.pending[id]
  if not q then
    return
  end
  if q.mode == "url" then
    local prompt = "The agent asks you to open " .. q.url .. ": " .. q.message
    vim.ui.select({ "Open", "Decline" }, { prompt = prompt }, function(choice)
      if not M.pending[id] then
        return
      end
      if choice ~= "Open" then
        return respond(id, { action = "decline" })
      end
      if vim.ui.open then
        pcall(vim.ui.open, q.url)
      end
      respond(id, { action = "accept" })
    end)
    return
  end
  local content, i = vim.empty_dict(), 0
  local function next_field()
    if not M.pending[id] then
      return -- answered elsewhere, or cancelled
    end
    i = i + 1
    local f = q.fields[i]
    if f == nil then
      return respond(id, { action = "accept", content = content }, function()
        M.ask(id)
      end)
    end
    ask_field(q, f, function(answered, value)
      if not answered then
        return respond(id, { action = "decline" })
      end
      if value ~= vim.NIL and value ~= "" then
        content[f.name] = value
      end
      vim.schedule(next_field)
    end)
  end
  next_field()
end

--- acp/elicitation
function M.on_elicitation(params)
  if type(params) ~= "table" or type(params.elicitationId) ~= "string" then
    return
  end
  local id = params.elicitationId
  if params.state == "pending" then
    M.pending[id] = params
    vim.schedule(function()
      M.ask(id)
    end)
  elseif params.state == "resolved" then
    M.pending[id] = nil
  end
end

return M
