-- Options of require("acp_sidecar").setup(opts) and the initializationOptions built from them.
local M = {}

M.name = "acp_sidecar"

---@class acp_sidecar.Opts
M.defaults = {
  -- Command that starts the sidecar (a list, like vim.lsp.ClientConfig.cmd).
  cmd = { "acp-sidecar" },
  -- Extra environment for the sidecar process.
  cmd_env = nil,
  -- The agent: a command list ({"codex-acp"}), one string split like a shell
  -- would ("codex-acp --foo"), or a table {command = ..., env = {...}}.
  -- nil: the sidecar's own choice (ACP_SIDECAR_AGENT, else the embedded demo agent).
  agent = nil,
  -- Named agents, each one like `agent`: { claude = { "claude-agent-acp" }, codex = "codex-acp" }.
  -- Sent as initializationOptions.agents; :AcpNew [agent] picks one (the demo agent is "demo").
  agents = nil,
  -- The agent of a new session that names none (initializationOptions.defaultAgent).
  default_agent = nil,
  -- Merged into initializationOptions (see CONTRACT: permissions, rename, titles, notify).
  init_options = {},
  -- Files or directories that mark the workspace root (else the current directory).
  root_markers = { ".git", ".hg", ".jj", ".svn" },
  -- Milliseconds to wait for the sidecar to finish initializing before a command gives up.
  start_timeout = 30000,
  -- Milliseconds Neovim waits on exit for the sidecar to shut down before terminating it.
  exit_timeout = 2000,
  statusline = {
    -- Maximum number of characters of the title shown.
    max_length = 40,
    prefix = "ACP: ",
    -- Optional function(status) -> string that replaces the default text (it is
    -- sanitized and escaped afterwards).
    format = nil,
  },
  chat = {
    -- "split" or "float".
    layout = "split",
    -- The command that opens the split (the window gets the chat buffer).
    split_cmd = "botright vsplit",
    -- Width of the split: columns, or a fraction of the screen when below 1.
    width = 0.4,
    -- Size of the float (fractions of the screen) and its border.
    float = { width = 0.8, height = 0.8, border = "rounded" },
    -- Enter insert mode in the input area when the chat opens.
    start_insert = false,
    -- Tell (vim.notify) when an answer finishes while no chat window shows it.
    notify_hidden = true,
    -- 'completeopt' of the chat buffer, for the `/` and `@` completion of its input area: a
    -- menu even for one match, nothing inserted before <C-y> (false: your own 'completeopt').
    completeopt = "menu,menuone,noinsert,popup",
  },
  -- Permission requests: the plugin asks with vim.ui.select and shows an
  -- edit's diff for review (false: the sidecar's own dialog instead).
  review = true,
  -- Default key mappings (<leader>a...): see :help acp_sidecar-mappings.
  keymaps = false,
  log = {
    -- Lines of window/logMessage and window/showMessage kept for :AcpLog.
    max_lines = 2000,
  },
  -- Called as on_attach(client, bufnr) for every buffer the sidecar attaches to.
  on_attach = nil,
}

M.options = vim.deepcopy(M.defaults)

local function validate(opts)
  local checks = {
    { "cmd", opts.cmd, "table" },
    { "init_options", opts.init_options, "table" },
    { "root_markers", opts.root_markers, "table" },
    { "statusline", opts.statusline, "table" },
    { "log", opts.log, "table" },
    { "chat", opts.chat, "table" },
    { "start_timeout", opts.start_timeout, "number" },
    { "exit_timeout", opts.exit_timeout, "number" },
  }
  for _, c in ipairs(checks) do
    if type(c[2]) ~= c[3] then
      error(("acp_sidecar.setup: option %s must be a %s, got %s"):format(c[1], c[3], type(c[2])))
    end
  end
  if opts.agents ~= nil and type(opts.agents) ~= "table" then
    error("acp_sidecar.setup: option agents must be a table of agent names to commands")
  end
  if opts.default_agent ~= nil and type(opts.default_agent) ~= "string" then
    error("acp_sidecar.setup: option default_agent must be a string")
  end
  if opts.agent ~= nil and type(opts.agent) ~= "table" and type(opts.agent) ~= "string" then
    error("acp_sidecar.setup: option agent must be a command string, a command list or {command=..., env=...}")
  end
  if type(opts.agent) == "string" and vim.trim(opts.agent) == "" then
    error("acp_sidecar.setup: option agent must not be empty")
  end
  if opts.chat.layout ~= "split" and opts.chat.layout ~= "float" then
    error('acp_sidecar.setup: option chat.layout must be "split" or "float"')
  end
  if opts.chat.completeopt ~= false and type(opts.chat.completeopt) ~= "string" then
    error("acp_sidecar.setup: option chat.completeopt must be a 'completeopt' string or false")
  end
  if opts.cmd_env ~= nil and type(opts.cmd_env) ~= "table" then
    error("acp_sidecar.setup: option cmd_env must be a table")
  end
  if opts.on_attach ~= nil and type(opts.on_attach) ~= "function" then
    error("acp_sidecar.setup: option on_attach must be a function")
  end
  if #opts.cmd == 0 then
    error("acp_sidecar.setup: option cmd must not be empty")
  end
end

---@param opts table|nil
---@return table
function M.set(opts)
  opts = opts or {}
  if type(opts) ~= "table" then
    error("acp_sidecar.setup: expected a table of options")
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists are replaced, not merged index by index.
  for _, key in ipairs({ "cmd", "root_markers" }) do
    if opts[key] ~= nil then
      merged[key] = opts[key]
    end
  end
  if opts.agent ~= nil then
    merged.agent = opts.agent
  end
  if opts.agents ~= nil then
    merged.agents = opts.agents
  end
  validate(merged)
  M.options = merged
  return merged
end

---@return table
function M.get()
  return M.options
end

--- initializationOptions sent to the sidecar: init_options with agent merged in.
---@param opts table|nil
---@return table
function M.init_options(opts)
  opts = opts or M.options
  local init = vim.deepcopy(opts.init_options or {})
  local function agent_entry(agent)
    if type(agent) == "string" then
      -- The sidecar splits a command string like a shell would (as its --agent does).
      return { command = agent }
    elseif vim.islist(agent) then
      return { command = vim.deepcopy(agent) }
    end
    return vim.deepcopy(agent)
  end
  if type(opts.agents) == "table" then
    init.agents = init.agents or {}
    for name, agent in pairs(opts.agents) do
      init.agents[name] = agent_entry(agent)
    end
  end
  if opts.default_agent ~= nil then
    init.defaultAgent = opts.default_agent
  end
  local agent = opts.agent
  if agent ~= nil then
    local a = agent_entry(agent)
    init.agent = vim.tbl_deep_extend("force", init.agent or {}, a)
    if a.command then
      init.agent.command = a.command
    end
  end
  -- The plugin shows the conversation (the chat) and asks permissions itself
  -- (with a diff review): the sidecar must not open the document or a dialog.
  init.transcript = init.transcript or {}
  if init.transcript.showOnPrompt == nil then
    init.transcript.showOnPrompt = false
  end
  -- The agent's questions are asked field by field here (ask.lua).
  init.notify = init.notify or {}
  if init.notify.elicitationDialog == nil then
    init.notify.elicitationDialog = false
  end
  -- The chat shows a loaded session's history from its document: no update per replayed one.
  if init.notify.replayUpdates == nil then
    init.notify.replayUpdates = false
  end
  if opts.review ~= false then
    init.notify = init.notify or {}
    if init.notify.permissionDialog == nil then
      init.notify.permissionDialog = false
    end
  end
  return M.json_objects(init)
end

--- Empty Lua tables encode as JSON arrays; turn every empty table that is not
--- a list in use into vim.empty_dict() so that objects stay objects.
---@param t table
---@return table
function M.json_objects(t)
  if next(t) == nil then
    return vim.empty_dict()
  end
  for k, v in pairs(t) do
    if type(v) == "table" and v ~= vim.NIL then
      t[k] = M.json_objects(v)
    end
  end
  return t
end

--- The state directory the sidecar uses: --state-dir in cmd, else
--- ACP_SIDECAR_STATE_DIR (from cmd_env or the environment), else the
--- platformdirs user_state_dir of "acp-sidecar".
---@param opts table|nil
---@return string path, string source
function M.state_dir(opts)
  opts = opts or M.options
  local cmd = opts.cmd or {}
  for i, arg in ipairs(cmd) do
    if arg == "--state-dir" and cmd[i + 1] then
      return cmd[i + 1], "--state-dir"
    end
    local v = type(arg) == "string" and arg:match("^%-%-state%-dir=(.+)$")
    if v then
      return v, "--state-dir"
    end
  end
  local env = (opts.cmd_env or {}).ACP_SIDECAR_STATE_DIR or vim.env.ACP_SIDECAR_STATE_DIR
  if env and env ~= "" then
    return env, "ACP_SIDECAR_STATE_DIR"
  end
  local sysname = (vim.uv or vim.loop).os_uname().sysname
  local home = vim.env.HOME or ""
  if sysname == "Darwin" then
    return home .. "/Library/Application Support/acp-sidecar", "platform default"
  elseif sysname:match("Windows") then
    local base = vim.env.LOCALAPPDATA or (home .. "\\AppData\\Local")
    return base .. "\\acp-sidecar", "platform default"
  end
  local xdg = vim.env.XDG_STATE_HOME
  if not xdg or xdg == "" then
    xdg = home .. "/.local/state"
  end
  return xdg .. "/acp-sidecar", "platform default"
end

return M
