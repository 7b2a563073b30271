-- Run by bench/nvim_flush.py as `nvim --headless --clean --cmd "set rtp^=PLUGIN" -l bench/nvim_chat.lua`.
-- The plugin's chat (the transcript document in a window, kept live by the sidecar's
-- workspace/applyEdit) while the demo agent streams the answer of $BENCH_PROMPT. Every edit the
-- chat applies is timed (chat.apply_edit: the edit, Neovim's didChange bookkeeping, the chat's own
-- tidying) with the buffer's size after it; a 5 ms timer records the longest gap in the event
-- loop. Writes {edits = {{ms, bytes}, ...}, max_gap_ms, error} as JSON to $BENCH_OUT.
local out = { edits = {} }
local uv = vim.uv

local function finish(err)
  out.error = err
  local f = assert(io.open(vim.env.BENCH_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  require("acp_sidecar").setup({ cmd = vim.json.decode(vim.env.BENCH_SIDECAR), start_timeout = 60000 })
  local acp = require("acp_sidecar")
  local chat = require("acp_sidecar.chat")
  vim.cmd.edit("README.md")
  assert(vim.wait(60000, function()
    local s = acp.status()
    return s ~= nil and s.state == "idle"
  end, 10), "the sidecar did not get idle")

  local apply = chat.apply_edit
  chat.apply_edit = function(params, ctx)
    local started = uv.hrtime()
    local res = apply(params, ctx)
    local took = (uv.hrtime() - started) / 1e6
    local b = chat.current
    if res ~= nil and b and vim.api.nvim_buf_is_valid(b) then
      local bytes = vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b))
      out.edits[#out.edits + 1] = { took, bytes }
    end
    return res
  end

  local ended = false
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpTurn",
    callback = function(args)
      if type(args.data) == "table" and args.data.state == "ended" then
        ended = true
      end
    end,
  })
  vim.cmd("AcpChat")
  assert(vim.wait(30000, function()
    return chat.visible()
  end, 10), "the chat did not open")

  local timer = assert(uv.new_timer())
  local last_tick, max_gap = uv.hrtime(), 0
  timer:start(5, 5, function()
    local now = uv.hrtime()
    max_gap = math.max(max_gap, now - last_tick)
    last_tick = now
  end)
  vim.cmd("AcpPrompt " .. vim.env.BENCH_PROMPT)
  assert(vim.wait(600000, function()
    return ended
  end, 5), "the turn did not end")
  -- The last edits may land a moment after the turn's end.
  vim.wait(3000, function()
    local b = chat.current
    local lines = b and vim.api.nvim_buf_get_lines(b, -200, -1, false) or {}
    return table.concat(lines, "\n"):find("END OF ANSWER", 1, true) ~= nil
  end, 20)
  timer:stop()
  timer:close()
  out.max_gap_ms = max_gap / 1e6
  local b = chat.current
  out.buffer_bytes = b and vim.api.nvim_buf_get_offset(b, vim.api.nvim_buf_line_count(b)) or 0
  local tail = b and table.concat(vim.api.nvim_buf_get_lines(b, -200, -1, false), "\n") or ""
  out.complete = tail:find("END OF ANSWER", 1, true) ~= nil
end)
finish(not ok and tostring(err) or vim.NIL)
