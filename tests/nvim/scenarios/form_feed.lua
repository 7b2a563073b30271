-- A buffer holding a form feed (and U+2028, \x85, \v), edited in Neovim with its own
-- incremental didChange: the agent (the scripted test agent) reads the file through the
-- sidecar's copy of the buffer, and pytest compares that with nvim_buf_get_lines.
local H = dofile(vim.env.ACP_TEST_HELPER)

local function buffer_text(buf)
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.bo[buf].eol then
    text = text .. "\n"
  end
  return text
end

H.run(function()
  local path = vim.fn.getcwd() .. "/ff.c"
  vim.cmd.edit(vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  local chunks = {}
  local cmd = {
    vim.env.ACP_TEST_SIDECAR,
    "--state-dir",
    vim.env.ACP_TEST_STATE_DIR,
    "--agent",
    vim.env.ACP_TEST_AGENT,
  }
  local client_id = vim.lsp.start({
    name = "acp-sidecar-form-feed",
    cmd = cmd,
    root_dir = vim.fn.getcwd(),
    init_options = { transcript = { showOnPrompt = false } },
    handlers = {
      ["acp/sessionUpdate"] = function(_, params)
        local update = params.update
        if update.sessionUpdate == "agent_message_chunk" and type(update.content.text) == "string" then
          chunks[#chunks + 1] = { turnId = params.turnId, text = update.content.text }
        end
      end,
    },
  }, { bufnr = buf })
  local client = assert(vim.lsp.get_client_by_id(client_id))
  H.wait("client initialized", 30000, function()
    return client.initialized and vim.lsp.buf_is_attached(buf, client_id)
  end)
  H.set("sync", client.server_capabilities.textDocumentSync)

  local function exec(command, arg)
    local res = client:request_sync("workspace/executeCommand", { command = command, arguments = { arg } }, 30000)
    assert(res and not res.err, command .. ": " .. vim.inspect(res))
    return res.result
  end

  local function read_back()
    local admitted = exec("acp.prompt", { text = vim.json.encode({ { read = path } }) })
    local found
    H.wait("the agent's read of ff.c", 30000, function()
      for _, chunk in ipairs(chunks) do
        if chunk.turnId == admitted.turnId and chunk.text:find("^RESULT 0 ") then
          found = vim.json.decode(chunk.text:sub(#"RESULT 0 " + 1))
          return true
        end
      end
      return false
    end)
    return found
  end

  exec("acp.session.new", {})
  local samples = {}
  local function sample(what)
    samples[#samples + 1] = { what = what, buffer = buffer_text(buf), read = read_back() }
  end

  -- Each edit below is one incremental change Neovim computes and sends itself.
  local ff = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  H.set("opened", ff)
  vim.api.nvim_buf_set_lines(buf, 3, 3, false, { "inserted below the form feed" })
  vim.api.nvim_buf_set_text(buf, 5, 0, 5, 3, { "INT" })
  sample("a line inserted, a word replaced")
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "appended \u{2028} too" })
  vim.api.nvim_buf_set_text(buf, 1, 1, 1, 1, { "\f" })
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, {})
  sample("appended, another form feed, the first line deleted")
  H.set("samples", samples)
  client:stop()
  H.wait("the client stopped", 10000, function()
    return client:is_stopped()
  end)
end)
