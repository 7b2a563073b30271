-- :AcpNew starts a session; :AcpMode and :AcpModel change it; the models the
-- agent reports (config_option_update) complete :AcpModel.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.begin("README.md")
  vim.cmd("AcpNew")
  H.wait("a new active session", 30000, function()
    local s = H.status()
    return s and type(s.sessionId) == "string" and s.state == "idle"
  end)
  local first = H.status()
  H.set("first_status", first)
  vim.cmd("AcpMode code")
  H.wait("mode changed in acp/status", 30000, function()
    local s = H.status()
    return s and s.sessionId == first.sessionId and s.mode ~= first.mode
  end)
  H.set("after_mode", H.status())
  vim.cmd("AcpModel demo-smart")
  H.wait("model changed in acp/status", 30000, function()
    local s = H.status()
    return s and s.model ~= first.model
  end)
  H.set("after_model", H.status())
  H.wait("config_option_update seen", 10000, function()
    for _, u in ipairs(H.events.update) do
      if u.update and u.update.sessionUpdate == "config_option_update" then
        return true
      end
    end
    return false
  end, true)
  H.set("model_completion", vim.fn.getcompletion("AcpModel ", "cmdline"))
  H.set("transcript", H.document_with("_Model: Demo Smart_"))
end)
