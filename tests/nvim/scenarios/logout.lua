-- Issue 25: :AcpLogout with an agent that offers logout (the demo agent under
-- ACP_DEMO_CAPS=auth): logged in, a session, :AcpLogout, then a new session asks for a login.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.setup()
  local notes = H.capture_notes()
  H.stub_ui()
  if not H.start("README.md") then
    return
  end
  local function note(text)
    for _, n in ipairs(notes) do
      if n:find(text, 1, true) then
        return n
      end
    end
    return nil
  end
  local acp = require("acp_sidecar")
  local login
  acp.exec("acp.authenticate", { methodId = "demo-login" }, function(err)
    login = err and err.message or "ok"
  end)
  H.wait("logged in", 30000, function()
    return login ~= nil
  end)
  H.set("login", login)
  vim.cmd("AcpNew")
  H.wait("a session", 30000, function()
    local s = H.status()
    return s and type(s.sessionId) == "string"
  end)
  vim.cmd("AcpLogout")
  H.wait("logged out", 20000, function()
    return note("logged out of") ~= nil
  end)
  H.set("logged_out", note("logged out of"))
  vim.cmd("AcpNew")
  H.wait("a new session refused until a login", 20000, function()
    return note("acp.session.new:") ~= nil
  end)
  H.set("refused", note("acp.session.new:"))
  H.set("notes", notes)
end)
