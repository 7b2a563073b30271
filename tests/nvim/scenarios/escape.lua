-- A title with % and an escape sequence does not break the statusline.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  H.begin("README.md")
  -- The demo agent's #title keyword sends exactly the rest of the prompt as title.
  vim.cmd("AcpPrompt #title 100% \27[31mred")
  H.wait("turn ended", 60000, function()
    return H.ended() ~= nil
  end)
  H.wait("the agent's title in acp/status", 30000, function()
    local s = H.status()
    return s and type(s.title) == "string" and s.title:find("red", 1, true) ~= nil
      and s.title:find("#title", 1, true) == nil
  end)
  H.wait("state idle", 30000, function()
    local s = H.status()
    return s and s.state == "idle"
  end)
  H.set("status", H.status())
  H.set("infos", H.events.info)
  H.set("statusline", H.statuslines())
end)
