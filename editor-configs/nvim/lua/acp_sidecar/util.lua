-- Small helpers shared by the plugin: text sanitizing and Neovim 0.10/0.11 compat.
local M = {}

M.has_011 = vim.fn.has("nvim-0.11") == 1

--- Turn untrusted text (titles, tool call titles, agent names) into one safe line:
--- escape sequences removed whole, newlines and tabs become spaces, every other
--- control character (C0, DEL, C1) and bidi override is dropped, runs of spaces
--- collapse. The sidecar already sanitizes what it sends in acp/status and
--- acp/sessionInfo; acp/sessionUpdate carries the agent's raw objects.
---@param s any
---@return string
function M.sanitize(s)
  if s == nil or s == vim.NIL then
    return ""
  end
  s = tostring(s)
  -- CSI sequences (ESC [ ... final byte), OSC/DCS/APC/PM/SOS strings, other ESC pairs.
  s = s:gsub("\27%[[0-?]*[ -/]*[@-~]?", "")
  s = s:gsub("\27[%]PX%^_][^\7\27]*\7?", "")
  s = s:gsub("\27\\", "")
  s = s:gsub("\27[ -/]*[0-~]?", "")
  -- C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) including the 8-bit CSI.
  s = s:gsub("\194[\128-\159]", "")
  -- Bidi embeddings/overrides/isolates: U+202A..U+202E, U+2066..U+2069.
  s = s:gsub("\226\128[\170-\174]", "")
  s = s:gsub("\226\129[\166-\169]", "")
  s = s:gsub("[\r\n\t\v\f]", " ")
  s = s:gsub("%c", "")
  s = s:gsub("  +", " ")
  return vim.trim(s)
end

--- Truncate to at most max characters (not bytes: never splits a code point),
--- ending with an ellipsis when cut.
---@param s string
---@param max integer|nil
---@return string
function M.truncate(s, max)
  if not max or max <= 0 then
    return s
  end
  local ok, len = pcall(vim.fn.strcharlen, s)
  if not ok or len <= max then
    return s
  end
  if max == 1 then
    return "…"
  end
  return vim.fn.strcharpart(s, 0, max - 1) .. "…"
end

--- Double every % so a string can be inserted into a statusline format string.
---@param s string
---@return string
function M.stl_escape(s)
  return (s:gsub("%%", "%%%%"))
end

---@param client vim.lsp.Client
---@return boolean
function M.is_stopped(client)
  if M.has_011 then
    return client:is_stopped()
  end
  ---@diagnostic disable-next-line: missing-parameter
  return client.is_stopped()
end

---@param client vim.lsp.Client
function M.request(client, method, params, handler, bufnr)
  if M.has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

---@param client vim.lsp.Client
function M.stop(client, force)
  if M.has_011 then
    return client:stop(force)
  end
  return client.stop(force)
end

--- vim.notify with the plugin's prefix.
local builtin_notify = vim.notify

-- One line for the message area: with Neovim's own vim.notify a message wider
-- than the screen stops everything at "Press ENTER" (the screen stops
-- following the answer until a key). The whole text stays in :AcpLog;
-- notification plugins (nvim-notify, noice, snacks) get it whole.
local function fit(text)
  if vim.notify ~= builtin_notify then
    return text
  end
  text = text:gsub("%s*\n%s*", " ")
  local room = vim.o.columns - 13 -- the ruler and showcmd share the line
  if vim.fn.strdisplaywidth(text) <= room then
    return text
  end
  local more = "… (:AcpLog)"
  return vim.fn.strcharpart(text, 0, math.max(room - vim.fn.strdisplaywidth(more), 10)) .. more
end

function M.notify(msg, level)
  vim.notify(fit("acp-sidecar: " .. msg), level or vim.log.levels.INFO)
end

--- Run fn, report errors with vim.notify instead of raising into a handler.
function M.safe(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    M.notify(tostring(err), vim.log.levels.ERROR)
  end
end

--- Says what an `acp.prompt` answer means to the user: its error, or its place in the queue.
--- Returns true when the prompt was taken.
function M.report_prompt(err, result)
  if err then
    M.notify("acp.prompt: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    return false
  end
  if type(result) == "table" and tonumber(result.position) and tonumber(result.position) > 0 then
    M.notify(("prompt queued (position %d)"):format(result.position))
  end
  return true
end

return M
