-- :checkhealth acp_sidecar
local M = {}

local health = vim.health

local function check_executable(opts)
  local cmd = opts.cmd or {}
  local exe = cmd[1]
  if not exe or vim.fn.executable(exe) ~= 1 then
    health.error(
      ("sidecar executable not found: %s"):format(tostring(exe)),
      {
        "Install it from a checkout: pipx install /path/to/acp-sidecar (or uv tool install; not on PyPI yet)",
        "Or set setup({ cmd = { '/path/to/acp-sidecar' } })",
      }
    )
    return
  end
  health.ok(("sidecar executable: %s"):format(vim.fn.exepath(exe)))
  local ok, res = pcall(function()
    return vim.system({ exe, "--version" }, { text = true }):wait(10000)
  end)
  if not ok then
    health.error(("`%s --version` failed: %s"):format(exe, tostring(res)))
  elseif res.code ~= 0 then
    health.error(
      ("`%s --version` exited with %s: %s"):format(exe, tostring(res.code), vim.trim(res.stderr or ""))
    )
  else
    health.ok(("version: %s"):format(vim.trim(res.stdout or "")))
  end
end

local GOOD = { idle = true, running = true, cancelling = true, waiting_permission = true }

local function check_client()
  local config = require("acp_sidecar.config")
  local state = require("acp_sidecar.state")
  local clients = vim.lsp.get_clients({ name = config.name, _uninitialized = true })
  if #clients == 0 then
    health.warn(
      "no sidecar client is running",
      { "Open a file (the client attaches to every file buffer) or run :AcpPrompt" }
    )
    return
  end
  for _, c in ipairs(clients) do
    local bufs = vim.tbl_count(c.attached_buffers or {})
    health.ok(
      ("client %d: %s, root %s, %d buffer(s) attached"):format(
        c.id,
        c.initialized and "initialized" or "initializing",
        tostring(c.root_dir or c.config.root_dir),
        bufs
      )
    )
  end
  local st = state.status
  if not st then
    health.warn("no acp/status received yet from the sidecar")
    return
  end
  local agent = type(st.agent) == "table" and st.agent or {}
  -- agent.title is the agent's name for display (agentInfo.title); agent.name its id.
  local shown = type(agent.title) == "string" and agent.title or agent.name
  local name = ("%s %s"):format(tostring(shown or "?"), tostring(agent.version or ""))
  if GOOD[st.state] then
    health.ok(("agent %s reachable, state: %s"):format(vim.trim(name), st.state))
  elseif st.state == "starting" then
    health.info(("agent %s is starting"):format(vim.trim(name)))
  else
    health.error(
      ("agent %s state: %s"):format(vim.trim(name), tostring(st.state)),
      { "See :AcpLog for the agent's stderr and the sidecar's diagnostics" }
    )
  end
  if type(st.text) == "string" and st.text ~= "" then
    health.info("status: " .. st.text)
  end
end

local function check_state_dir(opts)
  local config = require("acp_sidecar.config")
  local dir, source = config.state_dir(opts)
  local uv = vim.uv or vim.loop
  local stat = uv.fs_stat(dir)
  if stat and stat.type == "directory" then
    -- Write and remove a probe file.
    local probe = ("%s/.acp-sidecar-health-%d"):format(dir, uv.os_getpid())
    local fd = uv.fs_open(probe, "w", 384)
    if fd then
      uv.fs_close(fd)
      uv.fs_unlink(probe)
      health.ok(("state dir writable: %s (%s)"):format(dir, source))
    else
      health.error(("state dir not writable: %s (%s)"):format(dir, source))
    end
    return
  elseif stat then
    health.error(("state dir is not a directory: %s (%s)"):format(dir, source))
    return
  end
  -- Not created yet: the sidecar creates it; its nearest existing parent must be writable.
  local parent = dir
  while true do
    local next_parent = vim.fs.dirname(parent)
    if not next_parent or next_parent == parent then
      break
    end
    parent = next_parent
    local s = uv.fs_stat(parent)
    if s then
      break
    end
  end
  if vim.fn.filewritable(parent) == 2 then
    health.ok(("state dir %s (%s) does not exist yet; %s is writable"):format(dir, source, parent))
  else
    health.error(("state dir %s (%s) cannot be created: %s is not writable"):format(dir, source, parent))
  end
end

function M.check()
  local config = require("acp_sidecar.config")
  local opts = config.get()
  health.start("acp_sidecar: setup")
  if vim.g.acp_sidecar_setup then
    health.ok("setup() was called")
  else
    health.warn("setup() was not called", { "Add require('acp_sidecar').setup({}) to your config" })
  end
  if vim.fn.has("nvim-0.10") ~= 1 then
    health.error("Neovim 0.10 or newer is required")
  end
  health.start("acp_sidecar: executable")
  check_executable(opts)
  health.start("acp_sidecar: client and agent")
  check_client()
  health.start("acp_sidecar: state directory")
  check_state_dir(opts)
end

return M
