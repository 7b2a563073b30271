-- Issue 25: the session picker's actions. Delete a session from :AcpSessionActions (asked first):
-- it is gone from the next picker, its chat buffer is closed and its transcript file removed.
-- :AcpFork and the picker's "Fork session" call acp.session.fork; :AcpLogout shows the
-- sidecar's answer (the demo agent offers no logout without ACP_DEMO_CAPS=auth).
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.setup()
  local notes = H.capture_notes()
  local target, action = nil, nil
  H.stub_ui(function(items, opts)
    local kind = opts and opts.kind
    if kind == "acp_sidecar.session" then
      return H.find(items, "sessionId", target)
    elseif kind == "acp_sidecar.session_action" then
      return H.find(items, "id", action)
    elseif kind == "acp_sidecar.confirm" then
      return "Delete"
    end
    return items[1]
  end)
  -- Every command the plugin sends, with the sidecar's answer (the call still goes through).
  local calls = {}
  local client = require("acp_sidecar.client")
  local exec = client.exec
  client.exec = function(command, arg, cb)
    local call = { command = command, arg = arg }
    calls[#calls + 1] = call
    return exec(command, arg, function(err, result)
      call.error = err and err.message or nil
      call.done = true
      if cb then
        return cb(err, result)
      end
    end)
  end
  local function picker_shown(n)
    local count = 0
    for _, s in ipairs(H.selects) do
      if s.kind == "acp_sidecar.session" then
        count = count + 1
      end
    end
    return count >= n
  end
  local function answered(command)
    for _, c in ipairs(calls) do
      if c.command == command and c.done then
        return c
      end
    end
    return nil
  end
  if not H.start("README.md") then
    return
  end
  local chat = require("acp_sidecar.chat")
  -- Session A, shown in the chat, then session B (the active one).
  vim.cmd("AcpNew")
  H.wait("session A", 30000, function()
    local s = H.status()
    return s and type(s.sessionId) == "string" and type(s.transcriptUri) == "string"
  end)
  local a = H.status()
  chat.open()
  H.wait("A's chat", 20000, function()
    return chat.visible() and chat.buf_of_uri(a.transcriptUri) ~= nil
  end)
  local a_buf = chat.buf_of_uri(a.transcriptUri)
  vim.cmd("AcpNew")
  H.wait("session B", 30000, function()
    local s = H.status()
    return s and type(s.sessionId) == "string" and s.sessionId ~= a.sessionId
  end)
  local b = H.status()
  H.set("a", a.sessionId)
  H.set("b", b.sessionId)
  H.set("a_file", vim.uri_to_fname(a.transcriptUri))
  H.set("a_file_before", vim.fn.filereadable(vim.uri_to_fname(a.transcriptUri)))
  -- :AcpSessionActions, A, "Delete session…", "Delete".
  target, action = a.sessionId, "delete"
  vim.cmd("AcpSessionActions")
  H.wait("acp.session.delete answered", 30000, function()
    return answered("acp.session.delete") ~= nil
  end)
  H.wait("A's chat buffer closed", 10000, function()
    return not vim.api.nvim_buf_is_valid(a_buf) and chat.buf_of_uri(a.transcriptUri) == nil
  end)
  H.set("a_file_after", vim.fn.filereadable(vim.uri_to_fname(a.transcriptUri)))
  -- The next picker: B only. (Nothing chosen.)
  target, action = nil, nil
  vim.cmd("AcpSessions")
  H.wait("the picker again", 20000, function()
    return picker_shown(2)
  end)
  H.set("completion", vim.fn.getcompletion("AcpDelete ", "cmdline"))
  -- :AcpFork ID, then the picker's "Fork session" on B.
  vim.cmd("AcpFork " .. b.sessionId)
  target, action = b.sessionId, "fork"
  vim.cmd("AcpSessionActions")
  H.wait("two acp.session.fork answered", 20000, function()
    local n = 0
    for _, c in ipairs(calls) do
      if c.command == "acp.session.fork" and c.done then
        n = n + 1
      end
    end
    return n == 2
  end)
  H.set("after_fork", H.status())
  vim.cmd("AcpLogout demo")
  H.wait("acp.logout answered", 20000, function()
    return answered("acp.logout") ~= nil
  end)
  H.set("logout_completion", vim.fn.getcompletion("AcpLogout ", "cmdline"))
  H.set("calls", calls)
  H.set("pickers", H.selects)
  H.set("notes", notes)
end)
