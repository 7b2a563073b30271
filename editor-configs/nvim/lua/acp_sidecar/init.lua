-- acp-sidecar for Neovim: drives an ACP coding agent through the acp-sidecar
-- language server. See :help acp_sidecar.
local M = {}

local group_name = "acp_sidecar"

--- Set the plugin up: register the LSP config, handlers and user commands.
---@param opts table|nil see :help acp_sidecar-options
function M.setup(opts)
  local config = require("acp_sidecar.config")
  local client = require("acp_sidecar.client")
  local util = require("acp_sidecar.util")
  config.set(opts)

  local group = vim.api.nvim_create_augroup(group_name, { clear = true })

  if util.has_011 and vim.lsp.config and vim.lsp.enable then
    -- Replace (not merge) an earlier setup's config.
    vim.lsp.config[config.name] = client.lsp_config()
    vim.lsp.enable(config.name)
  else
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      callback = function(args)
        if client.eligible(args.buf) then
          client.start(args.buf, true)
        end
      end,
    })
    if vim.v.vim_did_enter == 1 then
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(b) and vim.bo[b].filetype ~= "" and client.eligible(b) then
          client.start(b, true)
        end
      end
    end
  end

  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    desc = "acp_sidecar: shut the sidecar down before Neovim exits",
    callback = function()
      client.shutdown_all(config.get().exit_timeout)
    end,
  })

  require("acp_sidecar.commands").register()
  require("acp_sidecar.keymaps").setup(config.get().keymaps == true)
  vim.g.acp_sidecar_setup = true
end

--- Statusline component, escaped for statusline format strings: use it in
--- %{%v:lua.require'acp_sidecar'.statusline()%} and in lualine.
---@return string
function M.statusline()
  return require("acp_sidecar.statusline").component()
end

--- Statusline text, not escaped: use it in %{v:lua.require'acp_sidecar'.statusline_text()}.
---@return string
function M.statusline_text()
  return require("acp_sidecar.statusline").text()
end

--- The last acp/status (nil before the first one).
---@return table|nil
function M.status()
  return require("acp_sidecar.state").status
end

--- Run a sidecar command: require("acp_sidecar").exec("acp.session.list", {}, function(err, result) end)
function M.exec(command, arg, cb)
  return require("acp_sidecar.client").exec(command, arg, cb)
end

--- Send a prompt (ctx: {uri=, range=} or nil).
function M.prompt(text, ctx)
  return require("acp_sidecar.commands").prompt(text, ctx)
end

function M.cancel()
  return require("acp_sidecar.commands").cancel()
end

function M.rename(title)
  return require("acp_sidecar.commands").rename(title)
end

function M.sessions(refresh)
  return require("acp_sidecar.commands").sessions(refresh)
end

function M.delete(session_id)
  return require("acp_sidecar.commands").delete(session_id)
end

function M.fork(session_id)
  return require("acp_sidecar.commands").fork(session_id)
end

function M.logout(agent)
  return require("acp_sidecar.commands").logout(agent)
end

--- Toggle the chat (opts: {context = lines, session_id = id, focus = bool}).
function M.chat(opts)
  return require("acp_sidecar.chat").toggle(opts)
end

return M
