-- :AcpPrompt streams into the chat (the transcript document); the statusline shows the auto title;
-- the sidecar and agent processes are recorded so pytest can check that
-- quitting Neovim leaves none behind.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.begin("README.md")
  local file_win = vim.api.nvim_get_current_win()
  local chat = require("acp_sidecar.chat")
  vim.cmd("AcpChat")
  H.wait("the chat window", 30000, function()
    return chat.visible()
  end)
  local twin = chat.win
  H.set("transcript_window_opened", twin ~= file_win)
  vim.api.nvim_set_current_win(file_win)

  local prompt = vim.env.ACP_TEST_PROMPT or "Hello from the Neovim test"
  vim.cmd("AcpPrompt " .. prompt)
  H.wait("turn running", 30000, function()
    return H.turn_with_state("running") ~= nil
  end)
  H.wait("turn ended", 60000, function()
    return H.ended() ~= nil
  end)
  local sid = (H.ended() or {}).sessionId
  -- The whole answer: its first and last lines as the test checks them (the last edits may land
  -- a moment after the turn's end).
  H.wait("agent text in the transcript buffer", 10000, function()
    local text = H.agent_text(sid)
    if text == "" then
      return false
    end
    local lines = vim.split(vim.trim(text), "\n")
    local first = vim.trim(lines[1]):sub(1, 60)
    local last = vim.trim(lines[#lines]):sub(1, 60)
    local buf = vim.api.nvim_win_get_buf(twin)
    local joined = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    return joined:find(first, 1, true) ~= nil and joined:find(last, 1, true) ~= nil
  end)
  local first_word = vim.split(prompt, " ")[1]
  H.wait("auto title in acp/status", 30000, function()
    local s = H.status()
    return s and type(s.title) == "string" and s.title:find(first_word, 1, true) ~= nil
  end)
  H.wait("state idle after the turn", 30000, function()
    local s = H.status()
    return s and s.state == "idle"
  end)

  local buf = vim.api.nvim_win_get_buf(twin)
  H.set("session_id", sid)
  H.set("turn_ended", H.ended())
  H.set("agent_text", H.agent_text(sid))
  H.set("transcript", vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  H.set("transcript_name", vim.api.nvim_buf_get_name(buf))
  H.set("transcript_filetype", vim.bo[buf].filetype)
  H.set("transcript_buftype", vim.bo[buf].buftype)
  H.set("transcript_line_count", vim.api.nvim_buf_line_count(buf))
  H.set("transcript_cursor", vim.api.nvim_win_get_cursor(twin))
  H.set("transcript_attached_clients", #vim.lsp.get_clients({ bufnr = buf, name = "acp_sidecar" }))
  H.set("status", H.status())
  H.set("statusline", H.statuslines())
  H.set("prompt", prompt)

  -- A prompt with a line range sends the document and range as context.
  vim.api.nvim_set_current_win(file_win)
  local mark = #H.events.turn
  vim.cmd("1,2AcpPrompt Explain these lines")
  local range_turn
  H.wait("range prompt ended", 60000, function()
    for i = mark + 1, #H.events.turn do
      if H.events.turn[i].state == "ended" then
        range_turn = H.events.turn[i]
        return true
      end
    end
    return false
  end)
  H.set("range_turn", range_turn)
  H.wait("state idle after the range prompt", 30000, function()
    local s = H.status()
    return s and s.state == "idle"
  end)
  H.set("log", require("acp_sidecar.log").lines)

  -- Processes to check after Neovim quits.
  local pids = H.descendants()
  local procs = {}
  for _, pid in ipairs(pids) do
    procs[#procs + 1] = { pid = pid, cmdline = H.cmdline(pid) }
  end
  H.set("nvim_pid", vim.fn.getpid())
  H.set("processes", procs)
end)
