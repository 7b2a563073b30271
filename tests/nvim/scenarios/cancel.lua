-- :AcpCancel stops a running turn: acp/turn ends with stopReason cancelled.
local H = dofile(vim.env.ACP_TEST_HELPER)
local uv = vim.uv or vim.loop

H.run(function()
  H.begin("README.md")
  vim.cmd("AcpPrompt #slow=300 Tell me a long story")
  H.wait("turn running", 30000, function()
    return H.turn_with_state("running") ~= nil
  end)
  H.wait("first streamed update", 30000, function()
    return #H.events.update > 0
  end)
  local t_cancel = uv.hrtime()
  vim.cmd("AcpCancel")
  H.wait("turn ended after cancel", 30000, function()
    return H.ended() ~= nil
  end)
  H.set("cancel_to_end_s", (uv.hrtime() - t_cancel) / 1e9)
  H.wait("state idle after cancel", 30000, function()
    local s = H.status()
    return s and s.state == "idle"
  end)
  local states = {}
  for _, s in ipairs(H.events.status) do
    states[#states + 1] = s.state
  end
  H.set("states", states)
  H.set("turn_ended", H.ended())
  H.set("turns", H.events.turn)
  H.set("status", H.status())
  H.set("transcript", H.document_with("Cancelled"))
end)
