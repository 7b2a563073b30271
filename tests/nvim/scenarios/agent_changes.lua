-- The agent's change after it landed: vim.diagnostic shows it on the agent's line;
-- vim.lsp.buf.code_action "Revert this agent change" puts the buffer back as it was.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.begin("README.md")
  local buf = vim.api.nvim_get_current_buf()
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  H.set("before", before)
  vim.cmd("AcpPrompt Add a line #edit")
  H.wait("turn ended", 60000, function()
    return H.ended() ~= nil
  end)
  H.wait("the agent's line in the buffer", 30000, function()
    return #vim.api.nvim_buf_get_lines(buf, 0, -1, false) > #before
  end)
  H.set("edited", vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  local ours
  H.wait("the agent's change as a diagnostic", 30000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "acp-sidecar" then
        ours = d
        return true
      end
    end
    return false
  end)
  H.set("diagnostic", { message = ours.message, lnum = ours.lnum, severity = ours.severity })
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { ours.lnum + 1, 0 })
  vim.lsp.buf.code_action({
    filter = function(action)
      return action.title == "Revert this agent change"
    end,
    apply = true,
  })
  H.wait("the buffer as it was", 30000, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before)
  end)
  H.wait("the diagnostic gone", 30000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "acp-sidecar" then
        return false
      end
    end
    return true
  end)
  H.set("after", vim.api.nvim_buf_get_lines(buf, 0, -1, false))
end)
