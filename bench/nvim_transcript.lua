-- Run by bench/transcript.py as `nvim --headless --clean -l bench/nvim_transcript.lua`.
-- Neovim's plain LSP client starts the sidecar ($BENCH_SIDECAR, JSON list), opens a session's
-- transcript document and sends the prompts of $BENCH_PROMPTS (JSON list). For every stamp
-- (a number of 10 or more digits: CLOCK_MONOTONIC ns, written by the agent) it records when it
-- first appeared in the buffer (vim.uv.hrtime, the same clock); a 5 ms timer records the longest
-- gap in Neovim's event loop per prompt. Writes the result as JSON to $BENCH_OUT.
local out = {}

local function finish(err)
  out.error = err
  local f = assert(io.open(vim.env.BENCH_OUT, "w"))
  f:write(vim.json.encode(out))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local cmd = vim.json.decode(vim.env.BENCH_SIDECAR)
  local prompts = vim.json.decode(vim.env.BENCH_PROMPTS)
  local client_id = vim.lsp.start({
    name = "acp-sidecar-bench",
    cmd = cmd,
    root_dir = vim.fn.getcwd(),
    init_options = { transcript = { showOnPrompt = false } },
  })
  local client = assert(vim.lsp.get_client_by_id(client_id))
  assert(vim.wait(60000, function()
    return client.initialized
  end, 10), "the client did not initialize")

  local function exec(command, arg)
    local res = client:request_sync("workspace/executeCommand", { command = command, arguments = { arg } }, 60000)
    assert(res and not res.err, command .. ": " .. vim.inspect(res))
    return res.result
  end

  local session = exec("acp.session.new", {})
  local transcript = exec("acp.session.transcript", { sessionId = session.sessionId })
  vim.cmd.edit(vim.fn.fnameescape(vim.uri_to_fname(transcript.uri)))
  local buf = vim.api.nvim_get_current_buf()
  assert(vim.wait(20000, function()
    vim.lsp.buf_attach_client(buf, client_id)
    return vim.lsp.buf_is_attached(buf, client_id)
  end, 20), "the sidecar did not attach")

  local seen = {} -- stamp (string) -> first hrtime in the buffer, for stamps after `since`
  local since = 0
  local stamp_line = -1 -- the line of the newest stamp of this run
  local turn_end_at = nil
  local edits = 0
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b, _, first, _, last_new)
      local now = vim.uv.hrtime()
      edits = edits + 1
      for offset, line in ipairs(vim.api.nvim_buf_get_lines(b, first, last_new, false)) do
        for stamp in line:gmatch("%d%d%d%d%d%d%d%d%d%d+") do
          if seen[stamp] == nil and tonumber(stamp) > since then
            seen[stamp] = now
            stamp_line = math.max(stamp_line, first + offset - 1)
          end
        end
        -- This run's turn end: below its stamps (older turns' lines may be rewritten too).
        if stamp_line >= 0 and first + offset - 1 > stamp_line and line:find("_Turn ended", 1, true) then
          turn_end_at = turn_end_at or now
        end
      end
    end,
  })

  local timer = assert(vim.uv.new_timer())
  local last_tick, max_gap = vim.uv.hrtime(), 0
  timer:start(5, 5, function()
    local now = vim.uv.hrtime()
    max_gap = math.max(max_gap, now - last_tick)
    last_tick = now
  end)

  out.runs = {}
  for index, prompt in ipairs(prompts) do
    seen, edits, stamp_line, turn_end_at = {}, 0, -1, nil
    last_tick, max_gap = vim.uv.hrtime(), 0
    local sent = vim.uv.hrtime()
    since = sent
    exec("acp.prompt", { text = prompt })
    assert(vim.wait(300000, function()
      return turn_end_at ~= nil
    end, 5), "prompt " .. index .. ": the turn's end never reached the buffer")
    local run = { prompt = prompt, sent = sent, ended_in_buffer = turn_end_at, edits = edits }
    run.max_gap_ms = max_gap / 1e6
    run.seen = {}
    for stamp, at in pairs(seen) do
      table.insert(run.seen, { stamp, at })
    end
    run.buffer_chars = #table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    table.insert(out.runs, run)
  end
  timer:stop()
  timer:close()
  client:stop()
  vim.wait(10000, function()
    return client:is_stopped()
  end, 20)
end)
finish(not ok and tostring(err) or vim.NIL)
