-- The chat's logic, headless: a range given to :AcpChat lands in the input area as context;
-- :AcpMode and :AcpModel without an argument open pickers from acp/status; their completion
-- comes from the same choices; an answer that finishes while the chat is hidden is notified;
-- <Plug> mappings exist and setup({ keymaps = true }) maps the default keys.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.setup({ keymaps = true })
  local notes = {}
  vim.notify = function(msg)
    notes[#notes + 1] = msg
  end
  H.stub_ui(function(items, opts)
    if opts and (opts.kind == "acp_sidecar.mode" or opts.kind == "acp_sidecar.model") then
      return items[#items]
    end
    return items[1]
  end)
  vim.keymap.set("n", "<leader>as", "<Cmd>echo 'mine'<CR>") -- a user's mapping stays
  H.setup({ keymaps = true })
  H.set("plug_chat", vim.fn.maparg("<Plug>(AcpChat)", "n"))
  H.set("plug_context", vim.fn.maparg("<Plug>(AcpChatContext)", "x"))
  H.set("default_chat", vim.fn.maparg("<leader>aa", "n"))
  H.set("user_sessions", vim.fn.maparg("<leader>as", "n"))
  H.set("default_fork", vim.fn.maparg("<leader>af", "n"))
  H.set("plug_logout", vim.fn.maparg("<Plug>(AcpLogout)", "n"))
  if not H.start("README.md") then
    return
  end
  local chat = require("acp_sidecar.chat")
  vim.cmd("1,2AcpChat")
  H.wait("the chat open with the context", 30000, function()
    return chat.visible() and chat.input_text(vim.api.nvim_win_get_buf(chat.win)):find("Practice", 1, true) ~= nil
  end)
  local b = vim.api.nvim_win_get_buf(chat.win)
  H.set("input", chat.input_text(b))
  H.set("in_chat", vim.api.nvim_get_current_win() == chat.win)
  H.set("status_after_open", H.status())

  vim.cmd("AcpMode")
  H.wait("the mode picked", 30000, function()
    local s = H.status()
    return s and s.modeId == "plan"
  end)
  vim.cmd("AcpModel")
  H.wait("the model picked", 30000, function()
    local s = H.status()
    return s and s.modelId == "demo-smart"
  end)
  local pickers = {}
  for _, s in ipairs(H.selects) do
    pickers[#pickers + 1] = { kind = s.kind, formatted = s.formatted }
  end
  H.set("pickers", pickers)
  H.set("mode_completion", vim.fn.getcompletion("AcpMode ", "cmdline"))
  H.set("model_completion", vim.fn.getcompletion("AcpModel demo-", "cmdline"))

  -- Send the input area, then hide the chat: the end of the answer is notified.
  vim.api.nvim_set_current_win(chat.win)
  chat.send(b)
  H.wait("the turn running", 30000, function()
    local s = H.status()
    return s and s.state == "running"
  end)
  chat.close()
  H.set("visible_after_close", chat.visible())
  H.wait("the answer notified", 30000, function()
    for _, n in ipairs(notes) do
      if n:find("the agent answered", 1, true) then
        return true
      end
    end
    return false
  end)
  H.set("notes", notes)
  H.wait("the hidden chat buffer grown to the turn's end", 20000, function()
    return table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n"):find("Turn ended", 1, true) ~= nil
  end)
  H.set("chat_lines", vim.api.nvim_buf_get_lines(b, 0, -1, false))
end)
