-- :AcpRename ends with the new title in the statusline (renameState confirmed), by a rename
-- prompt (ACP_DEMO_CAPS=no-set-title: pending first) or by session/set_title.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.begin("README.md")
  vim.cmd("AcpPrompt Prepare the rename test")
  H.wait("first turn ended", 60000, function()
    return H.ended() ~= nil
  end)
  local sid = H.status() and H.status().sessionId
  H.set("session_id", sid)
  local new_title = vim.env.ACP_TEST_TITLE or "New name"
  local mark = #H.events.info
  vim.cmd("AcpRename " .. new_title)
  -- A rename prompt (an agent without session/set_title) is pending first; set_title is not.
  if (vim.env.ACP_DEMO_CAPS or ""):find("no-set-title", 1, true) then
    H.wait("acp/sessionInfo renameState pending", 20000, function()
      for i = mark + 1, #H.events.info do
        if H.events.info[i].renameState == "pending" then
          return true
        end
      end
      return false
    end)
  end
  H.wait("acp/sessionInfo with a final renameState", 60000, function()
    for i = mark + 1, #H.events.info do
      local rs = H.events.info[i].renameState
      if rs == "confirmed" or rs == "changed" or rs == "unconfirmed" then
        return true
      end
    end
    return false
  end)
  H.wait("the new title in acp/status", 20000, function()
    local s = H.status()
    return s and s.title == new_title
  end)
  H.wait("rename turn ended", 30000, function()
    local s = H.status()
    return s and s.state == "idle"
  end)
  local infos = {}
  for i = mark + 1, #H.events.info do
    infos[#infos + 1] = H.events.info[i]
  end
  H.set("rename_infos", infos)
  H.set("status", H.status())
  H.set("statusline", H.statuslines())
  H.set("new_title", new_title)
end)
