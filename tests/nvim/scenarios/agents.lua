-- Two agents: :AcpNew completes the configured agents, :AcpNew second starts a session of
-- the second agent, :AcpNew without an agent asks with a picker, and the session picker
-- names each session's agent.
local H = dofile(vim.env.ACP_TEST_HELPER)

H.run(function()
  local demo = { vim.env.ACP_TEST_PYTHON, "-m", "sidecar.demo_agent" }
  H.setup({
    agents = {
      second = {
        command = demo,
        env = { ACP_DEMO_NAME = "second-agent", ACP_DEMO_AGENT_STATE_DIR = vim.env.ACP_TEST_SECOND_STORE },
      },
    },
    default_agent = "demo",
  })
  H.stub_ui(function(items, opts)
    if opts and opts.kind == "acp_sidecar.agent" then
      for _, it in ipairs(items) do
        if it.name == "demo" then
          return it
        end
      end
    end
    return items[1]
  end)
  if not H.start("README.md") then
    return
  end
  H.set("completion", vim.fn.getcompletion("AcpNew ", "cmdline"))
  vim.cmd("AcpNew second")
  H.wait("a session of the second agent", 30000, function()
    local s = H.status()
    return s and type(s.sessionId) == "string" and s.agent and s.agent.configured == "second"
  end)
  H.set("second_status", H.status())
  H.set("second_statusline", require("acp_sidecar.statusline").text())
  vim.cmd("AcpNew")
  H.wait("the agent picker, then a session of demo", 30000, function()
    local s = H.status()
    return s and s.agent and s.agent.configured == "demo" and type(s.sessionId) == "string"
  end)
  H.set("demo_status", H.status())
  vim.cmd("AcpSessions")
  H.wait("session picker shown", 30000, function()
    for _, s in ipairs(H.selects) do
      if s.kind == "acp_sidecar.session" then
        return true
      end
    end
    return false
  end)
  local pickers = {}
  for _, s in ipairs(H.selects) do
    pickers[#pickers + 1] = s
  end
  H.set("pickers", pickers)
end)
