-- A self-contained init for trying acp-sidecar in Neovim (used by `make demo`):
--
--   nvim --clean -u editor-configs/nvim/demo.lua README.md
--
-- It puts this plugin on 'runtimepath', starts the sidecar from the
-- repository's .venv (else from PATH, or $ACP_SIDECAR_DEMO_CMD) with its
-- embedded demo agent, shows the session in the statusline and opens the
-- chat: write below its last line, then <C-s> (try "Where is the README?").
local here = vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2)))
vim.opt.runtimepath:prepend(here)

local repo = vim.fs.dirname(vim.fs.dirname(here))
local cmd = { "acp-sidecar" }
local venv = repo .. "/.venv/bin/acp-sidecar"
if vim.env.ACP_SIDECAR_DEMO_CMD and vim.env.ACP_SIDECAR_DEMO_CMD ~= "" then
  cmd = { vim.env.ACP_SIDECAR_DEMO_CMD }
elseif vim.fn.executable(venv) == 1 then
  cmd = { venv }
end

vim.o.laststatus = 2
vim.o.statusline = "%f %m%=%{%v:lua.require'acp_sidecar'.statusline()%} %l:%c "

require("acp_sidecar").setup({
  cmd = cmd,
  keymaps = true,
})

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    if #vim.api.nvim_list_uis() == 0 then
      return
    end
    require("acp_sidecar").chat()
    vim.api.nvim_echo({
      { "acp-sidecar demo: ", "Title" },
      { "type below the chat's last line, <C-s> sends · :AcpSessions · :AcpMode · :help acp_sidecar" },
    }, false, {})
  end,
})
