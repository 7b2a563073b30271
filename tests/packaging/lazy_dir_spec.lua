-- Sets Neovim up with the lazy.nvim spec that `acp-sidecar editor-config nvim --lazy` printed,
-- the way lazy.nvim loads a `dir` spec at startup (lazy.nvim itself is not reachable here, so
-- its own loader does not run): `dir` goes on 'runtimepath', the plugin/ files under it are
-- sourced in sorted order, then `config(plugin, opts)` runs. Then it opens a file, waits for
-- the sidecar, runs `acp.status` through the plugin and `:checkhealth acp_sidecar`.
--
--   nvim --headless --clean -l lazy_dir_spec.lua SPEC_FILE DOCUMENT RESULT_JSON
local spec_file, document, result_file = arg[1], arg[2], arg[3]
local result = { errors = {} }

local function fail(message)
  table.insert(result.errors, message)
end

local function run()
  local spec = dofile(spec_file)
  result.dir = spec.dir
  result.name = spec.name
  vim.opt.runtimepath:prepend(spec.dir)
  local sourced = {}
  for _, file in ipairs(vim.fn.sort(vim.fn.globpath(spec.dir, "plugin/**/*.{lua,vim}", false, true))) do
    vim.cmd.source(vim.fn.fnameescape(file))
    table.insert(sourced, file)
  end
  result.sourced = sourced
  result.loaded_flag = vim.g.loaded_acp_sidecar
  spec.config(spec, {})
  result.setup = vim.g.acp_sidecar_setup == true
  result.module = vim.api.nvim_get_runtime_file("lua/acp_sidecar/init.lua", false)[1]

  vim.cmd.edit(vim.fn.fnameescape(document))
  local acp = require("acp_sidecar")
  local idle = vim.wait(60000, function()
    local status = acp.status()
    return status ~= nil and status.state == "idle"
  end, 50)
  if not idle then
    fail("no idle acp/status within 60 s; last: " .. vim.inspect(acp.status()))
    return
  end
  local client = vim.lsp.get_clients({ name = "acp_sidecar" })[1]
  result.cmd = client and client.config.cmd or nil

  -- Agents start on first use: a new session starts the demo agent, then its status names it.
  local answer
  acp.exec("acp.session.new", {}, function(new_err)
    if new_err then
      answer = { err = tostring(new_err.message or new_err) }
      return
    end
    acp.exec("acp.status", {}, function(err, status)
      answer = { err = err and tostring(err.message or err) or nil, status = status }
    end)
  end)
  if not vim.wait(30000, function()
    return answer ~= nil
  end, 50) then
    fail("acp.session.new and acp.status were not answered within 30 s")
    return
  end
  result.exec = answer

  vim.cmd("checkhealth acp_sidecar")
  result.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end

local ok, err = pcall(run)
if not ok then
  fail(tostring(err))
end
vim.fn.writefile({ vim.json.encode(result) }, result_file)
