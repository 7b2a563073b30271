"""The Neovim plugin in a real headless Neovim, without a sidecar: loading,
setup, statusline escaping, transcript rendering from synthetic
notifications, init options, health check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from nvim_harness import PLUGIN, run_lua

pytestmark = [pytest.mark.nvim, pytest.mark.editors]


def test_plugin_is_lazy_and_setup_registers_commands(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        """
        local before = vim.fn.exists(":AcpPrompt")
        local loaded = vim.g.loaded_acp_sidecar
        local lsp_before = vim.lsp.config and vim.lsp.is_enabled and vim.lsp.is_enabled("acp_sidecar")
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        vim.cmd.edit("x.md")
        vim.wait(100)
        local names = {}
        for _, n in ipairs({ "AcpPrompt", "AcpCancel", "AcpRename", "AcpSessions", "AcpNew",
                             "AcpMode", "AcpModel", "AcpLog", "AcpTranscript" }) do
          names[n] = vim.fn.exists(":" .. n)
        end
        local bad = { pcall(require("acp_sidecar").setup, { cmd = "acp-sidecar" }) }
        return {
          before = before, loaded = loaded, lsp_before = lsp_before or false,
          names = names, enabled = vim.lsp.is_enabled("acp_sidecar"),
          statusline = require("acp_sidecar").statusline(),
          bad_ok = bad[1], bad_err = tostring(bad[2]),
        }
        """,
        tmp_path,
    )
    assert res["loaded"] == 1
    assert res["before"] == 0 and res["lsp_before"] is False
    assert all(v == 2 for v in res["names"].values()), res["names"]
    assert res["enabled"] is True
    assert res["statusline"] == ""
    assert res["bad_ok"] is False and "cmd" in res["bad_err"]


def test_statusline_escaping(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local sl = require("acp_sidecar.statusline")
        local out = {}
        local cases = {
          { title = "100% \27[31mred\27[0m", state = "idle" },
          { title = "a%b%%c %= %#Error# %{x} %!", state = "running" },
          { title = "line1\nline2\tx\r\7bell", state = "idle" },
          { title = "\226\128\174rtl\194\155x", state = "idle" },
          { title = string.rep("é", 100), state = "idle" },
          { title = vim.NIL, state = "starting" },
          { sessionId = "s1", title = vim.NIL, state = "idle" },
        }
        for i, c in ipairs(cases) do
          local text = sl.render(c, { max_length = 40, prefix = "ACP: " })
          local esc = text:gsub("%%", "%%%%")
          local ev = vim.api.nvim_eval_statusline(esc, {})
          local plain = vim.api.nvim_eval_statusline("%{v:lua.vim.g.acp_t}", {})
          vim.g.acp_t = text
          plain = vim.api.nvim_eval_statusline("%{g:acp_t}", {})
          out[i] = { text = text, shown = ev.str, width = ev.width, plain = plain.str }
        end
        return out
        """,
        tmp_path,
    )
    texts = [r["text"] for r in res]
    assert texts[0] == "ACP: 100% red [idle]"
    # While a turn runs a spinner turns before the title.
    assert texts[1] == "ACP: ⠋ a%b%%c %= %#Error# %{x} %! [running]"
    assert texts[2] == "ACP: line1 line2 x bell [idle]"
    assert texts[3] == "ACP: rtlx [idle]"
    assert texts[4] == "ACP: " + "é" * 39 + "… [idle]"
    assert texts[5] == "ACP: no session [starting]"
    # A session without a title yet (right after :AcpNew).
    assert texts[6] == "ACP: untitled [idle]"
    for r in res:
        # Escaped and re-parsed, or shown literally: the same visible text.
        assert r["shown"] == r["text"], r
        assert r["plain"] == r["text"], r


def test_transcript_renders_stream(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        local h = require("acp_sidecar.handlers")
        local tr = require("acp_sidecar.transcript")
        local ctx = { client_id = 1 }
        local function upd(u, extra)
          local p = vim.tbl_extend("force",
            { sessionId = "s1", turnId = "t1", replay = false, update = u }, extra or {})
          h.session_update(nil, p, ctx)
        end
        local function chunk(kind, text, extra)
          upd({ sessionUpdate = kind, content = { type = "text", text = text } }, extra)
        end
        h.status(nil, { sessionId = "s1", title = "T", state = "idle" }, ctx)
        local win_before = vim.api.nvim_get_current_win()
        tr.open()
        local twin = vim.api.nvim_get_current_win()
        -- The plugin echoes the prompt once the turn runs, and skips the agent's echo.
        tr.prompt_sent()
        tr.prompt_answered("Explain X", { sessionId = "s1", turnId = "t1", position = 0 })
        h.turn(nil, { sessionId = "s1", turnId = "t1", state = "running" }, ctx)
        chunk("user_message_chunk", "Explain X")
        chunk("agent_thought_chunk", "thinking\nmore")
        chunk("agent_message_chunk", "Hel")
        chunk("agent_message_chunk", "lo\nworld")
        upd({ sessionUpdate = "tool_call", toolCallId = "c1", title = "Read README.md", kind = "read",
              status = "pending" })
        upd({ sessionUpdate = "tool_call", toolCallId = "c2", title = "Edit \27[31mx", kind = "edit",
              status = "pending" })
        upd({ sessionUpdate = "plan", entries = {
          { content = "step one", status = "in_progress", priority = "high" },
          { content = "step two", status = "pending", priority = "low" } } })
        upd({ sessionUpdate = "tool_call_update", toolCallId = "c1", status = "completed" })
        upd({ sessionUpdate = "plan", entries = {
          { content = "step one", status = "completed", priority = "high" },
          { content = "step two", status = "in_progress", priority = "low" },
          { content = "step three", status = "pending", priority = "low" } } })
        upd({ sessionUpdate = "tool_call_update", toolCallId = "c2", status = "failed",
              content = { { type = "diff", path = "/tmp/x.txt", oldText = "a", newText = "b" } } })
        chunk("agent_message_chunk", " done.")
        upd({ sessionUpdate = "current_mode_update", currentModeId = "code" })
        upd({ sessionUpdate = "future_kind_xyz", someField = { nested = { 1, 2 } } })
        h.turn(nil, { sessionId = "s1", turnId = "t1", state = "ended", stopReason = "cancelled",
                      error = vim.NIL }, ctx)
        local lines = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        local cursor = vim.api.nvim_win_get_cursor(twin)[1]
        local count = vim.api.nvim_buf_line_count(tr.buf())
        -- Another session becomes active: the buffer switches; a load replays.
        h.status(nil, { sessionId = "s2", title = "Other", state = "idle" }, ctx)
        local other = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        upd({ sessionUpdate = "user_message_chunk", content = { type = "text", text = "old question" } },
            { sessionId = "s2", turnId = vim.NIL, replay = true })
        upd({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = "old answer" } },
            { sessionId = "s2", turnId = vim.NIL, replay = true })
        local replayed = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        -- Loading it again replays again: no duplicate.
        tr.expect_replay("s2")
        upd({ sessionUpdate = "user_message_chunk", content = { type = "text", text = "old question" } },
            { sessionId = "s2", turnId = vim.NIL, replay = true })
        upd({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = "old answer" } },
            { sessionId = "s2", turnId = vim.NIL, replay = true })
        upd({ sessionUpdate = "agent_message_chunk", content = { type = "text", text = "new" } },
            { sessionId = "s2", turnId = "t9", replay = false })
        local replayed2 = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        h.status(nil, { sessionId = "s1", title = "T", state = "idle" }, ctx)
        local back = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        local meta = require("acp_sidecar.state").session_meta("s1")
        return {
          lines = lines, cursor = cursor, count = count, other = other, replayed = replayed,
          replayed2 = replayed2, back_same = vim.deep_equal(back, lines),
          modes = meta.modes, name = vim.api.nvim_buf_get_name(tr.buf()),
          ft = vim.bo[tr.buf()].filetype, bt = vim.bo[tr.buf()].buftype,
          modifiable = vim.bo[tr.buf()].modifiable, moved = win_before ~= twin,
        }
        """,
        tmp_path,
    )
    assert res["lines"] == [
        "### You",
        "",
        "Explain X",
        "",
        "### Thinking",
        "",
        "> thinking",
        "> more",
        "",
        "### Agent",
        "",
        "Hello",
        "world",
        "",
        "- [read] Read README.md (completed)",
        "- [edit] Edit x (failed) → /tmp/x.txt",
        "",
        "**Plan**",
        "- [x] step one",
        "- [ ] step two (in progress)",
        "- [ ] step three",
        "",
        " done.",
        "",
        "_mode: code_",
        "",
        "_turn ended: cancelled_",
        "",
    ], res["lines"]
    assert res["cursor"] == res["count"], "the transcript window follows the stream"
    assert res["other"] in ([], [""])
    assert res["replayed"] == ["### You", "", "old question", "", "### Agent", "", "old answer"]
    assert res["replayed2"] == [
        "### You",
        "",
        "old question",
        "",
        "### Agent",
        "",
        "old answer",
        "",
        "new",
    ]
    assert res["back_same"] is True
    assert res["modes"] == ["code"]
    assert res["name"] == "acp://transcript"
    assert (res["ft"], res["bt"], res["modifiable"]) == ("markdown", "nofile", False)


def test_a_turn_without_an_answer_says_so(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        local h = require("acp_sidecar.handlers")
        local tr = require("acp_sidecar.transcript")
        local notes = {}
        vim.notify = function(msg) table.insert(notes, msg) end
        local ctx = { client_id = 1 }
        h.status(nil, { sessionId = "s1", title = "T", state = "idle" }, ctx)
        tr.open()
        for i, answered in ipairs({ false, true }) do
          local id = "t" .. i
          h.turn(nil, { sessionId = "s1", turnId = id, state = "running" }, ctx)
          if answered then
            h.session_update(nil, { sessionId = "s1", turnId = id, replay = false, update = {
              sessionUpdate = "agent_message_chunk", content = { type = "text", text = "here" } } }, ctx)
          end
          h.turn(nil, { sessionId = "s1", turnId = id, state = "ended", stopReason = "end_turn",
                        error = vim.NIL, answered = answered }, ctx)
        end
        return { lines = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false), notes = notes }
        """,
        tmp_path,
    )
    assert "_no answer: the agent ended the turn without a reply_" in res["lines"], res["lines"]
    assert sum("no answer" in line for line in res["lines"]) == 1, res["lines"]
    gave = [n for n in res["notes"] if "the agent gave no answer" in n]
    answered = [n for n in res["notes"] if "the agent answered" in n]
    assert len(gave) == 1 and len(answered) == 1, res["notes"]


def test_transcript_is_bounded(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" },
                                       transcript = { max_lines = 100 } })
        local h = require("acp_sidecar.handlers")
        local tr = require("acp_sidecar.transcript")
        h.status(nil, { sessionId = "s1", title = "T", state = "running" }, {})
        tr.buf()
        local function upd(u)
          h.session_update(nil, { sessionId = "s1", turnId = "t1", replay = false, update = u }, {})
        end
        upd({ sessionUpdate = "tool_call", toolCallId = "early", title = "early", kind = "read",
              status = "pending" })
        for i = 1, 1000 do
          upd({ sessionUpdate = "agent_message_chunk",
                content = { type = "text", text = "line " .. i .. "\n" } })
        end
        upd({ sessionUpdate = "tool_call", toolCallId = "late", title = "late", kind = "read",
              status = "pending" })
        upd({ sessionUpdate = "tool_call_update", toolCallId = "early", status = "completed" })
        upd({ sessionUpdate = "tool_call_update", toolCallId = "late", status = "completed" })
        local lines = vim.api.nvim_buf_get_lines(tr.buf(), 0, -1, false)
        return { n = #lines, doc_n = #tr.lines("s1"), last = lines[#lines],
                 same = vim.deep_equal(lines, tr.lines("s1")) }
        """,
        tmp_path,
    )
    assert res["n"] <= 100, res
    assert res["same"] is True
    assert res["last"] == "- [read] late (completed)"


def test_init_options_and_state_dir(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local config = require("acp_sidecar.config")
        local out = {}
        config.set({ agent = { "codex-acp", "--flag" }, init_options = { permissions = "allow_reads",
          rename = { timeoutMs = 5000 }, notify = { statusDiagnostic = true } } })
        out.a = config.init_options()
        config.set({ agent = { command = { "claude-code-acp" }, env = { K = "V" } } })
        out.b = config.init_options()
        config.set({})
        out.c = config.init_options()
        -- A command string, split by the sidecar like its --agent (a traceback before).
        config.set({ agent = "codex-acp --foo", review = false,
          init_options = { transcript = { showOnPrompt = true } } })
        out.d = config.init_options()
        out.bad = { pcall(config.set, { agent = 42 }) }
        config.set({ cmd = { "acp-sidecar", "--state-dir", "/tmp/sd" } })
        out.sd1 = { config.state_dir() }
        config.set({ cmd_env = { ACP_SIDECAR_STATE_DIR = "/tmp/env-sd" } })
        out.sd2 = { config.state_dir() }
        vim.env.ACP_SIDECAR_STATE_DIR = nil
        vim.env.XDG_STATE_HOME = "/tmp/xdg"
        config.set({})
        out.sd3 = { config.state_dir() }
        return out
        """,
        tmp_path,
    )
    # The plugin shows the conversation and asks permissions itself: the sidecar
    # neither opens the transcript document nor shows its own permission dialog.
    plugin_owns = {"transcript": {"showOnPrompt": False}, "notify": {"permissionDialog": False}}
    assert res["a"] == {
        "agent": {"command": ["codex-acp", "--flag"]},
        "permissions": "allow_reads",
        "rename": {"timeoutMs": 5000},
        "notify": {"statusDiagnostic": True, "permissionDialog": False},
        "transcript": {"showOnPrompt": False},
    }
    assert res["b"] == {"agent": {"command": ["claude-code-acp"], "env": {"K": "V"}}, **plugin_owns}
    assert res["c"] == plugin_owns
    # review = false leaves the dialog to the sidecar; the user's own options win.
    assert res["d"] == {"agent": {"command": "codex-acp --foo"}, "transcript": {"showOnPrompt": True}}
    assert res["bad"][0] is False and "option agent must be" in res["bad"][1]
    assert res["sd1"] == ["/tmp/sd", "--state-dir"]
    assert res["sd2"] == ["/tmp/env-sd", "ACP_SIDECAR_STATE_DIR"]
    assert res["sd3"] == ["/tmp/xdg/acp-sidecar", "platform default"]


def test_prompt_range_context_and_session_format(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        local cmds = require("acp_sidecar.commands")
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { "héllo wörld", "second line", "x😀yz" })
        -- A characterwise visual selection from "llo" on line 1 to the emoji on line 3.
        vim.api.nvim_win_set_cursor(0, { 1, 3 })
        vim.cmd("normal! v")
        vim.api.nvim_win_set_cursor(0, { 3, 1 })
        vim.cmd("normal! \27")
        local v = cmds.range_context(0, 1, 3, "utf-16")
        local v8 = cmds.range_context(0, 1, 3, "utf-8")
        -- A plain line range (no visual selection on those lines).
        vim.cmd("normal! \27")
        local l = cmds.range_context(0, 2, 2, "utf-16")
        local line = cmds.format_session({ sessionId = "x", title = "My \27[1mtitle", cwd = "/tmp/p",
          titleSource = "user", active = true, pendingTitle = vim.NIL })
        return { v = v.range, v8 = v8.range, l = l.range, line = line }
        """,
        tmp_path,
    )
    # "hé" = 2 UTF-16 units (3 bytes): the selection starts at the first "l".
    assert res["v"]["start"] == {"line": 0, "character": 2}
    # The emoji is 2 UTF-16 units (4 bytes) and fully included.
    assert res["v"]["end"] == {"line": 2, "character": 3}
    assert res["v8"]["start"] == {"line": 0, "character": 3}
    assert res["v8"]["end"] == {"line": 2, "character": 5}
    assert res["l"] == {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 11}}
    assert res["line"] == "● My title — /tmp/p"


def test_checkhealth_runs(nvim_bin: str, tmp_path: Path) -> None:
    res = run_lua(
        nvim_bin,
        r"""
        require("acp_sidecar").setup({ cmd = { "/nonexistent/acp-sidecar" } })
        vim.cmd("checkhealth acp_sidecar")
        return { lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }
        """,
        tmp_path,
    )
    text = "\n".join(res["lines"])
    assert "setup() was called" in text
    assert "sidecar executable not found" in text
    assert "state dir" in text
    assert "Traceback" not in text and "failed to run" not in text.lower(), text


def test_help_tags_and_demo_init(nvim_bin: str, tmp_path: Path) -> None:
    copy = tmp_path / "plugin"
    shutil.copytree(PLUGIN, copy)
    res = run_lua(
        nvim_bin,
        f"""
        vim.v.errmsg = ""
        vim.cmd("helptags {copy / "doc"}")
        local err = vim.v.errmsg
        -- The demo init: plugin on the runtimepath, setup done, statusline set.
        vim.env.ACP_SIDECAR_DEMO_CMD = "/nonexistent/acp-sidecar"
        vim.cmd("source {PLUGIN / "demo.lua"}")
        return {{ err = err, tags = vim.fn.readfile("{copy / "doc" / "tags"}"),
                 setup = vim.g.acp_sidecar_setup, stl = vim.o.statusline }}
        """,
        tmp_path,
    )
    assert res["err"] == ""
    tags = {line.split("\t", 1)[0] for line in res["tags"]}
    for want in (
        "acp_sidecar.setup()",
        ":AcpPrompt",
        ":AcpSessions",
        "acp_sidecar-options",
        "acp_sidecar.statusline()",
        "acp_sidecar-transcript",
    ):
        assert want in tags, want
    assert res["setup"] is True
    assert "acp_sidecar" in res["stl"]


def test_messages_fit_one_line_unless_a_notification_plugin_shows_them(nvim_bin: str, tmp_path: Path) -> None:
    """Neovim's own vim.notify stops at "Press ENTER" for a message wider than the screen: the
    plugin shortens it to one line (the whole text is in :AcpLog); a notification plugin gets it whole."""
    res = run_lua(
        nvim_bin,
        r"""
        local util = require("acp_sidecar.util")
        local shown = {}
        vim.o.columns = 60
        local real = vim.api.nvim_echo
        vim.api.nvim_echo = function(chunks, ...)
          shown[#shown + 1] = chunks[1][1]
          return real(chunks, ...)
        end
        util.notify("short one")
        util.notify(string.rep("long words ", 20) .. "\nsecond line")
        vim.api.nvim_echo = real
        local plugin = {}
        vim.notify = function(msg) plugin[#plugin + 1] = msg end
        util.notify(string.rep("long words ", 20))
        return { shown = shown, plugin = plugin }
        """,
        tmp_path,
    )
    assert res["shown"][0] == "acp-sidecar: short one"
    long = res["shown"][1]
    assert long.endswith("… (:AcpLog)") and "\n" not in long and len(long) <= 60 - 13, long
    assert res["plugin"] == ["acp-sidecar: " + "long words " * 20]
