-- After a restart (same state dir): :AcpSessions lists the renamed session and
-- loads the chosen one and shows it in the chat with its history.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  local want = assert(vim.env.ACP_TEST_SESSION, "ACP_TEST_SESSION not set")
  H.setup()
  H.stub_ui(function(items, opts)
    if opts and opts.kind == "acp_sidecar.session" then
      for _, it in ipairs(items) do
        if it.sessionId == want then
          return it
        end
      end
      return nil
    end
    return items[1]
  end)
  if not H.start("README.md") then
    return
  end
  vim.cmd("AcpSessions")
  H.wait("session picker shown", 30000, function()
    for _, s in ipairs(H.selects) do
      if s.kind == "acp_sidecar.session" then
        return true
      end
    end
    return false
  end)
  local picker
  for _, s in ipairs(H.selects) do
    if s.kind == "acp_sidecar.session" then
      picker = s
    end
  end
  H.set("picker", picker)
  H.wait("chosen session loaded and active", 60000, function()
    local s = H.status()
    return s and s.sessionId == want and s.state == "idle"
  end)
  H.wait("its title in acp/status", 20000, function()
    local s = H.status()
    return s and s.title == (vim.env.ACP_TEST_TITLE or "New name")
  end)
  H.set("status", H.status())
  H.set("statusline", H.statuslines())
  local chat = require("acp_sidecar.chat")
  H.wait("the chat shows the session's history", 20000, function()
    if not chat.visible() then
      return false
    end
    local b = vim.api.nvim_win_get_buf(chat.win)
    local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n")
    return text:find("Prepare the rename test", 1, true) ~= nil
  end)
  local b = vim.api.nvim_win_get_buf(chat.win)
  H.set("chat_lines", vim.api.nvim_buf_get_lines(b, 0, -1, false))
  H.set("chat_name", vim.api.nvim_buf_get_name(b))
  H.set("chat_attached", #vim.lsp.get_clients({ bufnr = b, name = "acp_sidecar" }))
end)
