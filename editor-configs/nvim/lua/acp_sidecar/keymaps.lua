-- <Plug> mappings for every action, and the opt-in default keys
-- (setup({ keymaps = true })): see :help acp_sidecar-mappings.
local M = {}

-- { <Plug> name, modes, rhs, default lhs (none: no default key) }
M.PLUGS = {
  { "(AcpChat)", "n", "<Cmd>AcpChat<CR>", "<leader>aa" },
  { "(AcpChatContext)", "x", ":AcpChat<CR>", "<leader>aa" },
  { "(AcpPrompt)", "n", "<Cmd>AcpPrompt<CR>", "<leader>ap" },
  { "(AcpCancel)", "n", "<Cmd>AcpCancel<CR>", "<leader>ac" },
  { "(AcpSessions)", "n", "<Cmd>AcpSessions<CR>", "<leader>as" },
  { "(AcpSessionActions)", "n", "<Cmd>AcpSessionActions<CR>", "<leader>aS" },
  { "(AcpNew)", "n", "<Cmd>AcpNew<CR>", "<leader>an" },
  { "(AcpRename)", "n", "<Cmd>AcpRename<CR>", "<leader>ar" },
  { "(AcpFork)", "n", "<Cmd>AcpFork<CR>", "<leader>af" },
  { "(AcpDelete)", "n", "<Cmd>AcpDelete<CR>", "<leader>ad" },
  { "(AcpLogout)", "n", "<Cmd>AcpLogout<CR>" }, -- no default key: rare, and it logs you out
  { "(AcpMode)", "n", "<Cmd>AcpMode<CR>", "<leader>am" },
  { "(AcpModel)", "n", "<Cmd>AcpModel<CR>", "<leader>aM" },
  { "(AcpPermission)", "n", "<Cmd>AcpPermission<CR>", "<leader>aP" },
  { "(AcpLog)", "n", "<Cmd>AcpLog<CR>", "<leader>al" },
}

---@param defaults boolean also map the default keys (never over a user's mapping)
function M.setup(defaults)
  for _, p in ipairs(M.PLUGS) do
    vim.keymap.set(p[2], "<Plug>" .. p[1], p[3], { silent = true, desc = "ACP " .. p[1] })
  end
  if not defaults then
    return
  end
  for _, p in ipairs(M.PLUGS) do
    if p[4] and vim.fn.maparg(p[4], p[2]) == "" then
      vim.keymap.set(p[2], p[4], "<Plug>" .. p[1], { remap = true, desc = "ACP " .. p[1] })
    end
  end
end

return M
