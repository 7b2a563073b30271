-- Starting the sidecar client and running its workspace/executeCommand commands.
local config = require("acp_sidecar.config")
local state = require("acp_sidecar.state")
local statusline = require("acp_sidecar.statusline")
local util = require("acp_sidecar.util")

local M = {}

local uv = vim.uv or vim.loop

--- Buffers the sidecar attaches to: real files and unnamed scratch, not
--- special buffers (terminals, help, the chat's conversation document, which
--- chat.lua attaches itself, plugin URIs like oil://).
---@param bufnr integer
---@return boolean
function M.eligible(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return false
  end
  if vim.bo[bufnr].buftype ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name:match("^%a[%w+.-]*://") and not name:match("^file://") then
    return false
  end
  return true
end

--- Workspace root of a buffer: nearest root marker, else the current directory.
---@param bufnr integer
---@return string
function M.root_dir(bufnr)
  local markers = config.get().root_markers
  local root = (#markers > 0 and vim.fs.root) and vim.fs.root(bufnr, markers) or nil
  return root or vim.fn.getcwd()
end

local function on_exit(code, signal, client_id)
  vim.schedule(function()
    if state.status_client == client_id and state.status then
      local st = vim.deepcopy(state.status)
      st.state = "disconnected"
      state.status = st
      statusline.changed(st)
    end
    if code ~= 0 and vim.v.exiting == vim.NIL then
      util.notify(("sidecar exited (code %s, signal %s); see :AcpLog"):format(code, signal), vim.log.levels.WARN)
    end
  end)
end

--- The client configuration (without root_dir: see lsp_config/start).
function M.base_config()
  local opts = config.get()
  local handlers = require("acp_sidecar.handlers").build()
  return {
    name = config.name,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    init_options = config.init_options(opts),
    handlers = handlers,
    reuse_client = function(client, conf)
      return client.name == conf.name and not util.is_stopped(client)
    end,
    on_attach = opts.on_attach,
    on_exit = on_exit,
  }
end

--- Configuration for vim.lsp.config (0.11): root_dir is a function so that
--- special buffers never get the client.
function M.lsp_config()
  local c = M.base_config()
  c.root_dir = function(bufnr, on_dir)
    if M.eligible(bufnr) then
      on_dir(M.root_dir(bufnr))
    end
  end
  return c
end

--- Start (or reuse) the client for a buffer; with attach = false (or an
--- ineligible buffer) the client runs without attaching to it.
---@param bufnr integer|nil
---@param attach boolean|nil
---@return integer|nil client_id
function M.start(bufnr, attach)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if attach == nil then
    attach = M.eligible(bufnr)
  end
  local conf
  if util.has_011 and vim.lsp.config then
    conf = vim.deepcopy(vim.lsp.config[config.name] or M.lsp_config())
  else
    conf = M.base_config()
  end
  conf.root_dir = M.root_dir(bufnr)
  if vim.fn.executable(conf.cmd[1]) ~= 1 then
    util.notify(("%s is not executable (see :checkhealth acp_sidecar)"):format(conf.cmd[1]), vim.log.levels.ERROR)
    return nil
  end
  if attach then
    return vim.lsp.start(conf, { bufnr = bufnr, reuse_client = conf.reuse_client })
  end
  local existing = M.get()
  if existing then
    return existing.id
  end
  if util.has_011 then
    return vim.lsp.start(conf, { bufnr = bufnr, reuse_client = conf.reuse_client, attach = false })
  end
  ---@diagnostic disable-next-line: deprecated
  return vim.lsp.start_client(conf)
end

--- The running sidecar client (initialized or not), preferring one attached
--- to the current buffer.
---@return vim.lsp.Client|nil
function M.get()
  local all = vim.lsp.get_clients({ name = config.name, _uninitialized = true })
  local cur = vim.api.nvim_get_current_buf()
  local best
  for _, c in ipairs(all) do
    if not util.is_stopped(c) then
      if c.attached_buffers and c.attached_buffers[cur] then
        return c
      end
      best = best or c
    end
  end
  return best
end

--- Call cb(client) once a sidecar client is initialized (starting one if
--- needed), or cb(nil, err).
---@param cb fun(client: vim.lsp.Client|nil, err: string|nil)
function M.with_client(cb)
  local client = M.get()
  if not client then
    local id = M.start(vim.api.nvim_get_current_buf())
    client = id and vim.lsp.get_client_by_id(id) or nil
    if not client then
      cb(nil, "the sidecar is not running and could not be started (see :checkhealth acp_sidecar)")
      return
    end
  end
  if client.initialized then
    cb(client)
    return
  end
  local timeout = config.get().start_timeout or 30000
  local waited = 0
  local timer = uv.new_timer()
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      waited = waited + 50
      local stopped = util.is_stopped(client)
      if client.initialized or stopped or waited >= timeout then
        if timer:is_active() then
          timer:stop()
        end
        if not timer:is_closing() then
          timer:close()
        end
        if client.initialized and not stopped then
          cb(client)
        elseif waited >= timeout then
          cb(nil, ("the sidecar did not initialize within %d ms"):format(timeout))
        else
          cb(nil, "the sidecar stopped before it initialized (see :AcpLog)")
        end
      end
    end)
  )
end

--- Run a sidecar command (workspace/executeCommand) with one JSON object argument.
---@param command string e.g. "acp.prompt"
---@param arg table|nil
---@param cb fun(err: table|nil, result: any)|nil called with the response; default: errors are notified
function M.exec(command, arg, cb)
  cb = cb
    or function(err)
      if err then
        util.notify(("%s: %s"):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
    end
  M.with_client(function(client, start_err)
    if not client then
      cb({ message = start_err or "no client" }, nil)
      return
    end
    -- One JSON object argument; {} would encode as an array.
    local params = { command = command, arguments = { config.json_objects(arg or {}) } }
    -- No buffer: Neovim then sends the pending (debounced) changes of every buffer first, so an
    -- agent prompted now reads what the user typed a moment ago in any buffer, not the last sync.
    local ok, sent = pcall(util.request, client, "workspace/executeCommand", params, function(err, result)
      cb(err, result)
    end)
    if not ok or sent == false then
      cb({ message = "could not send the request: " .. tostring(ok and "client stopped" or sent) }, nil)
    end
  end)
end

--- Stop the sidecar clients gracefully and wait (bounded) until they exit;
--- used on VimLeavePre so that quitting Neovim leaves no process behind.
function M.shutdown_all(timeout)
  local clients = vim.lsp.get_clients({ name = config.name, _uninitialized = true })
  if #clients == 0 then
    return
  end
  for _, c in ipairs(clients) do
    pcall(util.stop, c)
  end
  local done = vim.wait(timeout or 2000, function()
    for _, c in ipairs(clients) do
      if c.rpc and c.rpc.is_closing and not c.rpc.is_closing() then
        return false
      end
    end
    return true
  end, 20)
  if not done then
    for _, c in ipairs(clients) do
      pcall(util.stop, c, true)
    end
  end
end

return M
