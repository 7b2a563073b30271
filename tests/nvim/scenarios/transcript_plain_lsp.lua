-- The transcript document in Neovim's plain LSP client (vim.lsp.start, no plugin set up): the
-- document is opened, attached to the sidecar, and the answer grows in the buffer as it streams
-- (workspace/applyEdit). Samples of the buffer are recorded for pytest.
local H = dofile(vim.env.ACP_TEST_HELPER)

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

local function joined(buf)
  return table.concat(lines(buf), "\n")
end

H.run(function()
  vim.cmd.edit("README.md")
  local cmd = { vim.env.ACP_TEST_SIDECAR, "--state-dir", vim.env.ACP_TEST_STATE_DIR }
  local client_id = vim.lsp.start({
    name = "acp-sidecar-plain",
    cmd = cmd,
    root_dir = vim.fn.getcwd(),
    -- The document is opened below by hand (a plugin would pass false too).
    init_options = { transcript = { showOnPrompt = false } },
  })
  H.set("client_started", client_id ~= nil)
  local client = assert(vim.lsp.get_client_by_id(client_id))
  H.wait("client initialized", 30000, function()
    return client.initialized
  end)

  local function exec(command, arg)
    local res = client:request_sync("workspace/executeCommand", { command = command, arguments = { arg } }, 30000)
    assert(res and not res.err, command .. ": " .. vim.inspect(res))
    return res.result
  end

  local session = exec("acp.session.new", {})
  local transcript = exec("acp.session.transcript", { sessionId = session.sessionId })
  H.set("transcript", transcript)
  H.set("offset_encoding", client.offset_encoding)

  -- Open the document like a user would, and attach the sidecar to it.
  vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(transcript.uri)))
  local buf = vim.api.nvim_get_current_buf()
  H.wait("the sidecar attached to the transcript", 10000, function()
    vim.lsp.buf_attach_client(buf, client_id)
    return vim.lsp.buf_is_attached(buf, client_id)
  end)
  H.set("opened_lines", lines(buf))

  local admitted = exec("acp.prompt", { text = "#chunks=40 #slow=100 stream please" })
  H.set("admitted", admitted)
  H.wait("the first chunks in the buffer", 30000, function()
    return joined(buf):find("c5 c6 ", 1, true) ~= nil
  end)
  H.set("early_lines", lines(buf))
  H.wait("the last chunk and the turn's end in the buffer", 30000, function()
    local text = joined(buf)
    return text:find("c39", 1, true) ~= nil and text:find("_Turn ended (end_turn)", 1, true) ~= nil
  end)
  -- The user writes a next prompt in the prompt area; the buffer keeps it.
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "my next question" })
  H.sleep(600)
  H.set("final_lines", lines(buf))
  H.set("modified", vim.bo[buf].modified)
  client:stop()
  H.wait("the client stopped", 10000, function()
    return client:is_stopped()
  end)
end)
